"""verify/bench_torch.py — times PyTorch's embedding forward, backward and
full on the GPU with triton.testing.do_bench, on the shapes kernelindex-ref
is run on, and measures the device-to-device copy ceiling.

Each shape is timed two ways:
  kernel  the work alone: a pre-made upstream gradient, weight.grad reset
          to None before every repetition (so backward writes a fresh dense
          gradient, as kernelindex-ref's does);
  liger   as Liger's benchmark_embedding.py times it: torch.randn_like
          inside the timed call, weight.grad accumulating across calls.
Prints one JSON object per line.

Usage: python3 verify/bench_torch.py B T D V[,V...] DTYPE[,DTYPE...]
"""
import json
import sys

import torch
import triton

Q = [0.5, 0.2, 0.8]
DT = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def bench(fn, grad_to_none=None):
    return triton.testing.do_bench(fn, quantiles=Q, rep=100, grad_to_none=grad_to_none)


def one(B, T, D, V, dtype):
    dev = "cuda"
    emb = torch.nn.Embedding(V, D).to(dev).to(DT[dtype])
    ids = torch.randint(0, V, (B, T), device=dev)
    out = emb(ids)
    g = torch.randn_like(out)
    w = [emb.weight]
    res = {}
    res["forward", "kernel"] = bench(lambda: emb(ids), w)
    res["forward", "liger"] = bench(lambda: emb(ids))
    res["backward", "kernel"] = bench(lambda: out.backward(g, retain_graph=True), w)
    res["backward", "liger"] = bench(
        lambda: out.backward(torch.randn_like(out), retain_graph=True), [ids])

    def full_kernel():
        emb(ids).backward(g)

    def full_liger():
        o = emb(ids)
        o.backward(torch.randn_like(o))

    res["full", "kernel"] = bench(full_kernel, w)
    res["full", "liger"] = bench(full_liger)
    for (p, how), (m, p20, p80) in res.items():
        print(json.dumps({"impl": "torch", "timing": how, "pass": p, "dtype": dtype,
                          "batch": B, "seq": T, "hidden": D, "vocab": V,
                          "medianMs": m, "p20Ms": p20, "p80Ms": p80}), flush=True)
    del emb, ids, out, g
    torch.cuda.empty_cache()


def copy_ceiling():
    n = 1 << 29  # 2 GiB of float32
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    m, p20, p80 = bench(lambda: y.copy_(x))
    print(json.dumps({"impl": "copy", "bytes": 8 * n, "medianMs": m,
                      "GBps": 8 * n / (m * 1e-3) / 1e9}), flush=True)


def main():
    B, T, D = (int(a) for a in sys.argv[1:4])
    vs = [int(v) for v in sys.argv[4].split(",")]
    dts = sys.argv[5].split(",")
    print(json.dumps({"impl": "env", "torch": torch.__version__, "triton": triton.__version__,
                      "device": torch.cuda.get_device_name(0),
                      "l2": torch.cuda.get_device_properties(0).L2_cache_size,
                      "sms": torch.cuda.get_device_properties(0).multi_processor_count}), flush=True)
    copy_ceiling()
    for dt in dts:
        for v in vs:
            one(B, T, D, v, dt)


if __name__ == "__main__":
    main()
