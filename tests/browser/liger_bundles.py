#!/usr/bin/env python3
"""Test data for the browser tests: Liger-Kernel CSV rows as kernelindex bundles.

Turns each row of Liger's all_benchmark_data.csv into a bundle
{"run", "protocol", "environment", "workload", "implementation"} in the
seed's form, with the run's digests computed the way the server computes
them (SHA-256 of the RFC 8785 canonical form of apiVersion, kind and spec),
and either writes the bundles as NDJSON or posts them to a daemon.

    liger_bundles.py CSV [-o FILE]            write NDJSON
    liger_bundles.py CSV --post URL           post in batches
    liger_bundles.py CSV --synthetic N --post URL   N runs made from the rows (scale tests)

The shapes follow the project's design contract and the importer's docs; the
CLI importer (`kernelindex import liger`) is used instead where it is built.
"""
import argparse
import csv
import hashlib
import json
import math
import re
import sys
import urllib.request

API = "kernelindex.dev/v1alpha1"

PARAMS = {
    "fused_moe": {"T": "tokens", "K": "topk"},
    "multi_token_attention": {"K": "kernel_size"},
    "sparse_multi_token_attention": {"K": "kernel_size"},
    "group_norm": {"M": "batch"},
    "sparsemax": {"V": "hidden"},
    None: {
        "B": "batch", "bsz": "batch", "batch_size": "batch", "T": "seq",
        "S": "seq", "L": "seq", "seq_len": "seq", "BT": "tokens",
        "H": "hidden", "N": "hidden", "D": "hidden", "hidden_size": "hidden",
        "V": "vocab", "vocab_size": "vocab", "M": "rows",
        "intermediate_size": "intermediate", "intermediate_dim": "intermediate",
        "ffn_local": "intermediate", "num_heads": "heads",
        "num_q_heads": "q_heads", "num_kv_heads": "kv_heads", "E": "experts",
        "num_experts": "experts", "top_k": "topk", "C": "channels",
        "num_channels": "channels", "C_in": "in_channels",
        "C_out": "out_channels",
    },
}
DTYPES = {
    "torch.float32": ("float32", "fp32"), "torch.float": ("float32", "fp32"),
    "torch.bfloat16": ("bfloat16", "bf16"), "torch.float16": ("float16", "fp16"),
    "torch.half": ("float16", "fp16"), "torch.float64": ("float64", "fp64"),
}
DEFAULT_DTYPE = {"megatron_rms_norm": "torch.bfloat16",
                 "megatron_swiglu": "torch.bfloat16"}
GPUS = {
    "NVIDIA A100-SXM4-80GB": ("nvidia-a100-sxm4-80gb", "NVIDIA A100", "SXM4-80GB", "sm_80"),
    "NVIDIA H100 80GB HBM3": ("nvidia-h100-80gb-hbm3", "NVIDIA H100", "SXM5-80GB", "sm_90"),
    "NVIDIA H100 PCIe": ("nvidia-h100-pcie", "NVIDIA H100", "PCIe-80GB", "sm_90"),
    "NVIDIA GeForce RTX 3090": ("nvidia-geforce-rtx-3090", "NVIDIA GeForce RTX 3090", "PCIe-24GB", "sm_86"),
    "NVIDIA GeForce RTX 4090": ("nvidia-geforce-rtx-4090", "NVIDIA GeForce RTX 4090", "PCIe-24GB", "sm_89"),
    "NVIDIA B200": ("nvidia-b200", "NVIDIA B200", "SXM-180GB", "sm_100"),
}


def es_number(v):
    """A double as ECMAScript's Number.prototype.toString writes it."""
    if v == 0:
        return "0"
    if v < 0:
        return "-" + es_number(-v)
    m, _, e = repr(v).partition("e")
    ip, _, fp = m.partition(".")
    digits = (ip + fp).lstrip("0")
    n = len(ip.lstrip("0")) + int(e or 0) if ip.strip("0") else int(e or 0) - (len(fp) - len(fp.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    exp = n - 1
    mant = digits[0] + ("." + digits[1:] if k > 1 else "")
    return mant + "e" + ("+" if exp > 0 else "-") + str(abs(exp))


def jcs(v):
    """RFC 8785 canonical JSON for the values this script produces."""
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return es_number(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    keys = sorted(v.keys(), key=lambda k: k.encode("utf-16-be"))
    return "{" + ",".join(jcs(k) + ":" + jcs(v[k]) for k in keys) + "}"


def digest(obj):
    body = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "spec": obj["spec"]}
    return "sha256:" + hashlib.sha256(jcs(body).encode()).hexdigest()


def dns(s, limit=253):
    s = re.sub(r"[^a-z0-9.-]+", "-", s.lower()).strip("-.")
    s = re.sub(r"-+", "-", s)
    if len(s) > limit:
        h = hashlib.sha256(s.encode()).hexdigest()[:8]
        s = s[: limit - 9].rstrip("-.") + "-" + h
    return s


def obj(kind, name, title, spec):
    return {"apiVersion": API, "kind": kind,
            "metadata": {"name": name, "title": title}, "spec": spec}


def canon(kernel, key):
    return PARAMS.get(kernel, {}).get(key) or PARAMS[None].get(key) or key


def number(s):
    f = float(s)
    return int(f) if f == int(f) else f


def bundle(row, suffix=""):
    kernel, prov, mode = row["kernel_name"], row["kernel_provider"], row["kernel_operation_mode"]
    memory = row["metric_name"] == "memory"
    cfg = json.loads(row["extra_benchmark_config_str"] or "{}") or {}
    torch_dtype = cfg.get("dtype") or DEFAULT_DTYPE.get(kernel, "torch.float32")
    dtype, dshort = DTYPES[torch_dtype]
    params = {}
    for k, v in cfg.items():
        if k in ("dtype", "sweep_dim") or v is None or isinstance(v, (dict, list)):
            continue
        params[canon(kernel, k)] = v
    sweep = canon(kernel, row["x_name"])
    params[sweep] = number(row["x_value"])
    slug = "-".join(f"{k}{str(params[k]).lower()}" for k in sorted(params)) + "-" + dshort
    gslug, product, form, arch = GPUS[row["gpu_name"]]
    ts = row["timestamp"]
    observed = ts.replace(" ", "T") + ".000Z"
    eid = f"{kernel}/{mode}/{'memory/' if memory else ''}{prov}/{gslug}/{slug}/{ts.replace(' ', '-').replace(':', '-')}{suffix}"
    workload = obj("Workload", dns(f"{kernel}-{mode}-{slug}-sweep-{sweep}"),
                   f"{kernel} · {mode} · {slug}",
                   {"kernel": kernel, "pass": mode, "dtype": dtype,
                    "parameters": params, "sweep": sweep})
    ver = row["liger_version"]
    is_liger = prov == "liger" or prov.startswith(("liger_", "liger-"))
    ispec = {"provider": prov, "framework": "torch"}
    if is_liger and ver:
        ispec["version"] = ver
    impl = obj("Implementation", dns(f"{prov}-torch" + (f"-{ver}" if is_liger and ver else "")),
               f"{prov} · torch", ispec)
    env = obj("ExecutionEnvironment", f"liger-bench-{gslug}",
              f"Liger benchmark host · {row['gpu_name'].replace('NVIDIA ', '')}",
              {"hardware": {"vendor": "nvidia", "product": product,
                            "formFactor": form, "architecture": arch},
               "software": {}})
    proto = protocol(mode, memory)
    y50, y20, y80 = (float(row[k]) for k in ("y_value_50", "y_value_20", "y_value_80"))
    y20, y80 = min(y20, y50), max(y80, y50)
    spec = {"status": "passed", "observedAt": observed}
    if memory:
        mib = 1048576.0
        spec["measurements"] = [
            {"unit": "bytes", "value": round(y * mib), "metric": "peak_memory", "statistic": s}
            for s, y in (("median", y50), ("p20", y20), ("p80", y80))]
        metrics = {"mb_20": y20, "mb_50": y50, "mb_80": y80}
    else:
        spec["timing"] = {"latencyNs": {"median": round(y50 * 1e6)}, "primaryStatistic": "median"}
        spec["measurements"] = [
            {"unit": "ns", "value": round(y20 * 1e6), "metric": "latency", "statistic": "p20"},
            {"unit": "ns", "value": round(y80 * 1e6), "metric": "latency", "statistic": "p80"}]
        metrics = {"ms_20": y20, "ms_50": y50, "ms_80": y80}
    spec["sourceNative"] = {"source": "liger-kernel-bench", "metrics": metrics,
                            "benchmark": f"{kernel}/{mode}", "externalId": eid}
    spec["protocolDigest"] = digest(proto)
    spec["workloadDigest"] = digest(workload)
    spec["environmentDigest"] = digest(env)
    spec["implementationDigest"] = digest(impl)
    run = {"apiVersion": API, "kind": "BenchmarkRun",
           "metadata": {"name": dns("liger-" + eid, 100),
                        "title": f"{kernel} · {prov} · {mode}",
                        "labels": {"liger_version": ver} if ver else {}},
           "spec": spec}
    return {"run": run, "protocol": proto, "environment": env,
            "workload": workload, "implementation": impl}


TAIL = (" The upstream CSV records no CUDA, driver, or torch version; the Liger release"
        " rides each run's labels. Comparable only within one kernel, workload, ")
DO_BENCH = " via triton.testing.do_bench with quantiles 0.5/0.2/0.8 (median with p20/p80 spread)."
MAX_MEM = ("Measured: the peak of torch.cuda.max_memory_allocated (after reset_peak_memory_stats)"
           " in each of 10 repetitions, ")
MAX_MEM_Q = (", quantiles 0.5/0.2/0.8 of the peaks (median with p20/p80 spread); Liger's MB are"
             " 2^20 bytes, stored here in bytes.")
SPEED_NOTES = {
    "full": "Timed: the forward pass plus the backward pass,",
    "forward": "Timed: the forward pass alone,",
    "backward": ("Timed: the backward pass alone (the forward pass runs once before timing, outside"
                 " the timed region, and its graph is kept with retain_graph=True),"),
}
MEM_NOTES = {
    "full": "each running the forward pass plus the backward pass",
    "forward": "each running the forward pass alone",
    "backward": ("each running the backward pass alone, after a forward pass outside the measured"
                 " region whose tensors stay allocated and count toward the peak"),
}


def protocol(mode, memory):
    if memory:
        name, title = f"liger-bench-max-memory-{mode}", f"Liger peak-memory harness · {mode} pass"
        meas = {"method": "torch.cuda.max_memory_allocated", "primaryStatistic": "median", "repetitions": 10}
        notes = MAX_MEM + MEM_NOTES[mode] + MAX_MEM_Q + TAIL + "measured pass, and GPU."
    else:
        name, title = f"liger-bench-do-bench-{mode}", f"Liger benchmark harness · {mode} pass"
        meas = {"timer": "cuda_events", "primaryStatistic": "median"}
        notes = SPEED_NOTES[mode] + DO_BENCH + TAIL + "timed pass, and GPU."
    return obj("BenchmarkProtocol", name, title,
               {"harness": {"name": "Liger-Kernel benchmark scripts",
                            "repository": "https://github.com/linkedin/Liger-Kernel"},
                "measurement": meas,
                "comparability": {"notes": notes, "family": "liger_kernel_bench"}})


def rows_of(path):
    with open(path, newline="") as f:
        yield from csv.DictReader(f)


def synthetic(n, rows):
    """n bundles: the CSV's rows again and again, each copy a new source row
    (another externalId and name) with its figures scaled a little."""
    base = list(rows)
    i = 0
    while i < n:
        r = dict(base[i % len(base)])
        k = 1.0 + ((i * 7919) % 200 - 100) / 1000.0
        for c in ("y_value_50", "y_value_20", "y_value_80"):
            r[c] = repr(float(r[c]) * k)
        yield bundle(r, suffix=f"-s{i}")
        i += 1


def post(url, lines):
    req = urllib.request.Request(url, data="".join(lines).encode(), method="POST",
                                 headers={"Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(req, timeout=300) as r:
        body = json.loads(r.read())
    failed = body.get("summary", {}).get("failed", 0)
    if failed:
        bad = [it for it in body.get("items", []) if it.get("result") not in ("created", "unchanged")]
        sys.exit(f"upload failed for {failed} object(s): {json.dumps(bad[:3])[:2000]}")
    return body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("-o", "--output")
    ap.add_argument("--post", help="benchmarkruns collection URL")
    ap.add_argument("--synthetic", type=int, default=0)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--skip-seed", metavar="FILE",
                    help="leave out the CSV row that this seed bundle already holds")
    a = ap.parse_args()
    skip = None
    if a.skip_seed:
        with open(a.skip_seed) as f:
            skip = json.load(f)["run"]["spec"]["sourceNative"]["externalId"]
    if a.synthetic:
        it = synthetic(a.synthetic, rows_of(a.csv))
    else:
        it = (b for b in (bundle(r) for r in rows_of(a.csv))
              if b["run"]["spec"]["sourceNative"]["externalId"] != skip)
    out = open(a.output, "w") if a.output else None
    batch, n = [], 0
    for b in it:
        line = json.dumps(b, separators=(",", ":"), ensure_ascii=False) + "\n"
        n += 1
        if out:
            out.write(line)
            continue
        batch.append(line)
        if len(batch) >= a.batch:
            post(a.post, batch)
            batch = []
    if batch and a.post:
        post(a.post, batch)
    print(f"{n} bundles", file=sys.stderr)


if __name__ == "__main__":
    main()
