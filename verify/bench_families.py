"""verify/bench_families.py — one table of the row-wise families on a GPU:
the reference program's CUDA backend (checked in float64 by the program
itself) against PyTorch eager, torch.compile and Liger's Triton kernels,
and the floor (the cost model's bytes at the device-to-device copy rate
measured in the same run).

Timing contract of the PyTorch/Liger columns: Liger's benchmark scripts
(benchmark/scripts/utils.py run_speed_benchmark): triton.testing.do_bench,
quantiles 0.5/0.2/0.8; forward = the call; backward = y.backward(dy,
retain_graph=True) on a made graph; full = y = f(); y.backward(
torch.randn_like(y)) (the randn_like inside the timed region, as Liger's
"full"); grad_to_none the input, except where the script resets nothing
(NO_RESET: its gradients accumulate over the repetitions). The reference's
contract (verify/NOTES.md, "Gradient accumulation"): the same do_bench
procedure inside the program, adding to the gradients the script
accumulates (the CPU backend; the CUDA backend still writes them anew),
no randn in the timed region.

torch.compile column: each shape compiled once (dynamic=False; the
compiled function is kept per family and shape and shared by its passes),
warmed up by one untimed call of the pass before do_bench, the compile
time recorded; once KI_COMPILE_SECONDS (default 240) of compiling is
spent, later shapes get no compile column.

Usage: python3 verify/bench_families.py REF [--no-compile] [--only a,b]
       python3 verify/bench_families.py --table families.jsonl
  (KI_BENCH_SECONDS: start no new case after that many seconds)
  (Liger's source importable on PYTHONPATH for the liger column).
Prints a markdown table last; JSON lines to $OUT/families.jsonl.
"""
import json
import os
import subprocess
import sys
import time
import traceback

try:
    import torch
    import torch.nn.functional as F
    import triton
    DT = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
except ImportError:  # --table needs neither
    torch = F = triton = None
    DT = {}

Q = [0.5, 0.2, 0.8]
DEV = "cuda"

# family, dtype, reference parameters, passes
CASES = [
    ("rms_norm", "bfloat16", {"rows": 2048, "hidden": 8192}, "fbF"),
    ("rms_norm", "bfloat16", {"rows": 2048, "hidden": 32768}, "fbF"),
    ("megatron_rms_norm", "bfloat16", {"seq": 4096, "batch": 1, "hidden": 8192}, "fbF"),
    ("fused_add_rms_norm", "float32", {"rows": 2048, "hidden": 8192}, "fbF"),
    ("layer_norm", "float32", {"rows": 4096, "hidden": 8192}, "fbF"),
    ("layer_norm", "float32", {"rows": 4096, "hidden": 16384}, "fbF"),
    ("softmax", "float32", {"rows": 2048, "hidden": 4096}, "fbF"),
    ("softmax", "bfloat16", {"rows": 2048, "hidden": 4096}, "fbF"),
    ("relu_squared", "bfloat16", {"rows": 4096, "hidden": 16384}, "fbF"),
    ("megatron_swiglu", "bfloat16", {"seq": 2048, "batch": 4, "intermediate": 16384}, "fbF"),
    ("cross_entropy", "float32", {"batch": 8, "seq": 2048, "vocab": 32768}, "fF"),
    ("cross_entropy", "float32", {"batch": 8, "seq": 2048, "vocab": 131072}, "fF"),
    ("megatron_cross_entropy", "bfloat16", {"seq": 2048, "batch": 4, "vocab": 131072}, "fbF"),
    ("kl_div", "float32", {"batch": 8, "seq": 2048, "vocab": 32768}, "fF"),
    ("jsd", "float32", {"tokens": 4096, "vocab": 128256}, "fF"),
    ("tvd", "float32", {"batch": 8, "seq": 2048, "vocab": 32768}, "fF"),
    ("group_norm", "float32", {"batch": 128, "channels": 1024, "hidden": 512,
                               "channels_per_group": 4}, "fbF"),
    ("sparsemax", "float32", {"batch": 4, "seq": 512, "hidden": 4096}, "fbF"),
    ("rope", "bfloat16", {"seq": 2048, "hidden": 8192, "q_heads": 32, "kv_heads": 8}, "fbF"),
    ("llama4_rope", "bfloat16", {"seq": 2048, "hidden": 8192, "q_heads": 32, "kv_heads": 8}, "fbF"),
]
PASS = {"f": "forward", "b": "backward", "F": "full"}


COMPILED = {}
COMPILE_SPENT = [0.0]


def compiled(key, fn):
    """torch.compile(fn) once per family and shape (key)."""
    if key not in COMPILED:
        COMPILED[key] = torch.compile(fn, dynamic=False)
    return COMPILED[key]


def torch_sparsemax(x, dim=-1):
    """Liger's benchmark_sparsemax.py torch reference."""
    xs, _ = torch.sort(x, dim=dim, descending=True)
    cs = torch.cumsum(xs, dim=dim)
    rng = torch.arange(1, x.size(dim) + 1, device=x.device, dtype=x.dtype)
    support = 1 + rng * xs > cs
    k = support.sum(dim=dim, keepdim=True).clamp(min=1)
    tau = ((xs * support).sum(dim=dim, keepdim=True) - 1) / k
    return torch.clamp(x - tau, min=0)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def hf_rope(q, k, cos, sin):
    """transformers' apply_rotary_pos_emb (unsqueeze_dim=1)."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def hf_llama4_rope(xq, xk, freqs_cis):
    """transformers' Llama4 apply_rotary_emb."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    xq_out = torch.view_as_real(xq_ * freqs_cis[:, :, None, :]).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis[:, :, None, :]).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def bench(fn, grad_to_none=None):
    return triton.testing.do_bench(fn, quantiles=Q, rep=100, grad_to_none=grad_to_none)


def run_ref(ref, kernel, pas, dtype, params):
    req = {"workload": {"kernel": kernel, "pass": pas, "dtype": dtype, "parameters": params},
           "protocol": {}, "backend": "cuda", "maxSeconds": 60}
    t0 = time.time()
    p = subprocess.run([ref], input=json.dumps(req), capture_output=True, text=True, timeout=300)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        out = {"error": "exit %d: %s %s" % (p.returncode, p.stdout[-300:], p.stderr[-300:])}
    out["wall_s"] = time.time() - t0
    return out


# ---- the PyTorch workloads: (inputs needing grad, forward fn) ----

def rows_tokens(p):
    return p.get("tokens") or p.get("batch", 1) * p["seq"]


def rms_eager(x, w, eps=1e-6):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def setup(kernel, dtype, p, provider):
    """Returns (fn, grad_to_none list); fn() gives the output to time."""
    dt = DT[dtype]
    g = torch.Generator(device=DEV).manual_seed(0)
    key = (kernel, dtype, json.dumps(p, sort_keys=True))

    def rn(*shape, grad=True):
        return torch.randn(*shape, device=DEV, dtype=dt, generator=g, requires_grad=grad)

    if kernel in ("rms_norm", "megatron_rms_norm"):
        m = p["rows"] if "rows" in p else rows_tokens(p)
        h = p["hidden"]
        x = rn(m, h)
        if provider == "liger":
            from liger_kernel.transformers.rms_norm import LigerRMSNorm
            layer = LigerRMSNorm(hidden_size=h, eps=1e-6).to(DEV)
            return (lambda: layer(x)), [x]
        w = torch.ones(h, device=DEV, dtype=dt, requires_grad=True)
        f = rms_eager
        if provider == "compile":
            f = compiled(key, rms_eager)
        return (lambda: f(x, w)), [x]
    if kernel == "fused_add_rms_norm":
        m, h = p["rows"], p["hidden"]
        x, r = rn(m, h), rn(m, h)
        if provider == "liger":
            from liger_kernel.transformers.fused_add_rms_norm import LigerFusedAddRMSNorm
            layer = LigerFusedAddRMSNorm(hidden_size=h, eps=1e-6).to(DEV)
            return (lambda: layer(x, r)[0]), [x]
        w = torch.ones(h, device=DEV, dtype=dt, requires_grad=True)

        def fadd(x, r, w):
            s = x + r
            return rms_eager(s, w)
        f = compiled(key, fadd) if provider == "compile" else fadd
        return (lambda: f(x, r, w)), [x]
    if kernel == "layer_norm":
        m, n = p["rows"], p["hidden"]
        x = rn(m, n)
        if provider == "liger":
            from liger_kernel.transformers.layer_norm import LigerLayerNorm
            layer = LigerLayerNorm(hidden_size=n, eps=1e-6).to(DEV).to(dt)
        else:
            layer = torch.nn.LayerNorm(n, eps=1e-6).to(DEV).to(dt)
            if provider == "compile":
                lf = compiled(key, lambda x, w, b: F.layer_norm(x, (n,), w, b, 1e-6))
                return (lambda: lf(x, layer.weight, layer.bias)), [x]
        return (lambda: layer(x)), [x]
    if kernel in ("softmax", "relu_squared"):
        m, n = p["rows"], p["hidden"]
        x = rn(m, n)
        if provider == "liger":
            if kernel == "softmax":
                from liger_kernel.transformers.softmax import LigerSoftmax
                mod = LigerSoftmax().to(DEV)
            else:
                from liger_kernel.transformers.relu_squared import LigerReLUSquared
                mod = LigerReLUSquared().to(DEV)
            return (lambda: mod(x)), [x]
        f = (lambda x: torch.softmax(x, -1)) if kernel == "softmax" else \
            (lambda x: torch.square(F.relu(x)))
        if provider == "compile":
            f = compiled(key, f)
        return (lambda: f(x)), [x]
    if kernel == "megatron_swiglu":
        t, ff = rows_tokens(p), p["intermediate"]
        x = rn(p["seq"], p["batch"], 2 * ff)
        if provider == "liger":
            from liger_kernel.ops.swiglu import LigerSiLUMulFunction

            def lig(x):
                a, b = torch.chunk(x, 2, -1)
                return LigerSiLUMulFunction.apply(a.contiguous(), b.contiguous())
            return (lambda: lig(x)), [x]

        def sw(x):
            a, b = torch.chunk(x, 2, -1)
            return F.silu(a) * b
        f = compiled(key, sw) if provider == "compile" else sw
        del t
        return (lambda: f(x)), [x]
    if kernel == "group_norm":
        m, c, h, cpg = p["batch"], p["channels"], p["hidden"], p["channels_per_group"]
        x = rn(m, c, h)
        if provider == "liger":
            from liger_kernel.transformers.group_norm import LigerGroupNorm
            layer = LigerGroupNorm(num_channels=c, num_groups=c // cpg, eps=1e-6).to(DEV).to(dt)
            return (lambda: layer(x)), [x]
        layer = torch.nn.GroupNorm(c // cpg, c, eps=1e-6).to(DEV).to(dt)
        if provider == "compile":
            gf = compiled(key, lambda x, w, b: F.group_norm(x, c // cpg, w, b, 1e-6))
            return (lambda: gf(x, layer.weight, layer.bias)), [x]
        return (lambda: layer(x)), [x]
    if kernel == "sparsemax":
        x = rn(rows_tokens(p), p["hidden"])
        if provider == "liger":
            from liger_kernel.transformers.sparsemax import LigerSparsemax
            mod = LigerSparsemax(dim=-1).to(DEV)
            return (lambda: mod(x)), [x]
        f = compiled(key, torch_sparsemax) if provider == "compile" else torch_sparsemax
        return (lambda: f(x)), [x]
    if kernel in ("rope", "llama4_rope"):
        t, hq, hk = p["seq"], p["q_heads"], p["kv_heads"]
        d = p["hidden"] // hq
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=DEV, dtype=torch.float32) / d))
        ang = torch.outer(torch.arange(t, device=DEV, dtype=torch.float32), inv)
        if kernel == "rope":
            # (1, H, T, d) views of (1, T, H, d), as Liger's script makes them
            q = rn(1, t, hq, d).transpose(1, 2)
            k = rn(1, t, hk, d).transpose(1, 2)
            emb = torch.cat((ang, ang), dim=-1)
            cos, sin = emb.cos()[None].to(dt), emb.sin()[None].to(dt)
            if provider == "liger":
                from liger_kernel.transformers.rope import liger_rotary_pos_emb
                pos = torch.arange(t, device=DEV).unsqueeze(0)
                return (lambda: liger_rotary_pos_emb(q, k, cos, sin, pos)[0]), [q]
            f = compiled(key, hf_rope) if provider == "compile" else hf_rope
            return (lambda: f(q, k, cos, sin)[0]), [q]
        q, k = rn(1, t, hq, d), rn(1, t, hk, d)
        fc = torch.polar(torch.ones_like(ang), ang)[None]
        if provider == "liger":
            from liger_kernel.transformers.llama4_rope import liger_llama4_text_rotary_pos_emb
            return (lambda: liger_llama4_text_rotary_pos_emb(q, k, fc)[0]), [q]
        f = compiled(key, hf_llama4_rope) if provider == "compile" else hf_llama4_rope
        return (lambda: f(q, k, fc)[0]), [q]
    # losses over a vocabulary
    bt, v = rows_tokens(p), p["vocab"]
    if kernel in ("cross_entropy", "megatron_cross_entropy"):
        x = rn(bt, v)
        tgt = torch.randint(v, (bt,), device=DEV, generator=g)
        red = "mean" if kernel == "cross_entropy" else "none"
        if provider == "liger":
            if kernel != "cross_entropy":
                raise RuntimeError("Liger's Megatron wrapper needs megatron-core")
            from liger_kernel.transformers.cross_entropy import LigerCrossEntropyLoss
            lf = LigerCrossEntropyLoss()
            return (lambda: lf(x, tgt)), [x]

        def ce(x, t):
            return F.cross_entropy(x.float() if red == "none" else x, t, reduction=red)
        f = compiled(key, ce) if provider == "compile" else ce
        return (lambda: f(x, tgt)), [x]
    leaf = torch.randn(bt, v, device=DEV, dtype=dt, generator=g, requires_grad=True)
    if kernel == "kl_div":
        inp = leaf.log_softmax(-1)
        tgt = torch.randn(bt, v, device=DEV, dtype=dt, generator=g).softmax(-1)
        if provider == "liger":
            from liger_kernel.transformers.kl_div import LigerKLDIVLoss
            lf = LigerKLDIVLoss(reduction="batchmean")
        else:
            lf = torch.nn.KLDivLoss(reduction="batchmean")
    elif kernel == "jsd":
        inp = leaf.log_softmax(-1)
        tgt = torch.randn(bt, v, device=DEV, dtype=dt, generator=g).log_softmax(-1)
        if provider == "liger":
            from liger_kernel.transformers.jsd import LigerJSD
            lf = LigerJSD()
        else:
            def lf(lq, lp):
                q, pp = lq.exp(), lp.exp()
                m = 0.5 * (q + pp)
                lm = m.log()
                return 0.5 * ((pp * (lp - lm)).sum() + (q * (lq - lm)).sum()) / lq.shape[0]
    else:  # tvd
        inp = leaf.softmax(-1)
        tgt = torch.randn(bt, v, device=DEV, dtype=dt, generator=g).softmax(-1)
        if provider == "liger":
            from liger_kernel.transformers.tvd import LigerTVDLoss
            lf = LigerTVDLoss(reduction="batchmean")
        else:
            def lf(pp, q):
                return 0.5 * (pp - q).abs().sum() / pp.shape[0]
    if provider == "compile":
        lf = compiled(key, lf)
    return (lambda: lf(inp, tgt)), [leaf]


# (kernel, pass) whose Liger script resets no gradient of the input: the
# full pass names nothing in grad_to_none (cross_entropy, kl_div, tvd,
# megatron_rms_norm), or the script names the softmax's output, not the
# leaf behind it (jsd; jsd's and tvd's backward).
NO_RESET = {("cross_entropy", "full"), ("kl_div", "full"), ("jsd", "full"),
            ("tvd", "full"), ("megatron_rms_norm", "full"),
            ("jsd", "backward"), ("tvd", "backward")}


def time_provider(kernel, dtype, p, pas, provider):
    fn, gtn = setup(kernel, dtype, p, provider)
    if pas == "forward":
        run = fn
    elif pas == "backward" and kernel not in ("megatron_rms_norm", "megatron_swiglu",
                                              "megatron_cross_entropy"):
        y = fn()
        dy = torch.randn_like(y)

        def run():
            y.backward(dy, retain_graph=True)
    else:
        def run():
            y = fn()
            y.backward(torch.randn_like(y), retain_graph=True)
    if provider == "compile":
        # the compilation (once per shape), outside the timing
        t0 = time.time()
        run()
        torch.cuda.synchronize()
        COMPILE_SPENT[0] += time.time() - t0
    return bench(run, None if (kernel, pas) in NO_RESET else gtn)


def main():
    if sys.argv[1] == "--table":
        table_from(sys.argv[2])
        return
    ref = sys.argv[1]
    no_compile = "--no-compile" in sys.argv
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    out_dir = os.environ.get("OUT", "out")
    os.makedirs(out_dir, exist_ok=True)
    log = open(os.path.join(out_dir, "families.jsonl"), "a")
    props = torch.cuda.get_device_properties(0)
    env = {"impl": "env", "device": torch.cuda.get_device_name(0), "sms": props.multi_processor_count,
           "torch": torch.__version__, "triton": triton.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    try:
        env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                       capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    x = torch.empty(1 << 29, device=DEV)
    y = torch.empty_like(x)
    m = bench(lambda: y.copy_(x))[0]
    env["copyGBps"] = 8 * (1 << 29) / (m * 1e-3) / 1e9
    torch._dynamo.config.cache_size_limit = 256
    torch._dynamo.config.automatic_dynamic_shapes = False
    del x, y
    print(json.dumps(env), flush=True)
    log.write(json.dumps(env) + "\n")
    rows = []
    deadline = time.time() + float(os.environ.get("KI_BENCH_SECONDS", "1e9"))
    for kernel, dtype, p, passes in CASES:
        if only and kernel not in only:
            continue
        if time.time() > deadline:
            print(json.dumps({"skipped": kernel, "why": "KI_BENCH_SECONDS"}), flush=True)
            continue
        for c in passes:
            pas = PASS[c]
            row = {"kernel": kernel, "dtype": dtype, "params": p, "pass": pas}
            r = run_ref(ref, kernel, pas, dtype, p)
            row["ref"] = r
            compile_ok = not no_compile and COMPILE_SPENT[0] < float(
                os.environ.get("KI_COMPILE_SECONDS", "240"))
            if not no_compile and not compile_ok:
                row["compile"] = "skipped: KI_COMPILE_SECONDS spent"
            for prov in ["eager", "liger"] + (["compile"] if compile_ok else []):
                try:
                    row[prov] = time_provider(kernel, dtype, p, pas, prov)
                except Exception as e:  # recorded, not fatal
                    row[prov] = "error: " + (str(e).splitlines() or [repr(e)])[0][:160]
                    if os.environ.get("KI_BENCH_TRACE"):
                        traceback.print_exc()
                torch.cuda.empty_cache()
            print(json.dumps(row), flush=True)
            log.write(json.dumps(row) + "\n")
            log.flush()
            rows.append(row)
    print_table(rows)


def ms(v):
    return "%.4g" % v[0] if isinstance(v, (list, tuple)) else ("n/a" if v is None else str(v)[:40])


def print_table(rows):
    """The markdown table: each row's reference against the floor and the
    three others; "limit" is the floor factor met (forward <= 1.10,
    backward/full <= 1.20), "fastest" the reference faster than every one
    of eager, torch.compile and Liger that ran."""
    print("\n| family | dtype | shape | pass | reference ms (p20-p80) | floor ms | ref/floor "
          "| eager ms | compile ms | Liger ms | check | limit | fastest |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        r = row["ref"]
        shape = ",".join("%s=%s" % kv for kv in row["params"].items())
        lim = fast = "—"
        if "error" in r:
            refc = "error: " + r["error"][:60]
            fl = rat = chk = "—"
        else:
            lat = r["latencyNs"]
            med = lat["median"] / 1e6
            refc = "%.4g (%.4g-%.4g)" % (med, lat["p20"] / 1e6, lat["p80"] / 1e6)
            f = r.get("floor", {})
            fl = "%.4g" % (f["seconds"] * 1e3) if f else "—"
            rat = "%.2f" % (1 / f["fractionOfFloor"]) if f else "—"
            chk = "%s %.1e" % ("ok" if r["correct"] else "FAIL", r["maxRelError"])
            if f:
                lim = "yes" if 1 / f["fractionOfFloor"] <= (1.10 if row["pass"] == "forward" else 1.20) else "no"
            others = [row.get(k) for k in ("eager", "compile", "liger")]
            timed = [o[0] for o in others if isinstance(o, (list, tuple))]
            if timed:
                fast = ("yes" if med < min(timed) else "no") + (
                    "" if len(timed) == 3 else " (%d of 3 ran)" % len(timed))
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["kernel"], row["dtype"], shape, row["pass"], refc, fl, rat,
            ms(row.get("eager")), ms(row.get("compile")), ms(row.get("liger")), chk, lim, fast))


def table_from(path):
    """Re-renders the table from a families.jsonl (the env line first)."""
    rows = []
    for line in open(path):
        o = json.loads(line)
        if o.get("impl") == "env":
            print(json.dumps(o))
        elif "ref" in o:
            rows.append(o)
    print_table(rows)


if __name__ == "__main__":
    main()
