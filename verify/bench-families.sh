#!/bin/sh
# verify/bench-families.sh — one device run for the row-wise families: the
# reference program's checks (every family, pass and dtype on the CUDA
# backend too), then the table of bench_families.py (reference, PyTorch
# eager, torch.compile, Liger's Triton kernels, the floor). Output under
# $OUT (or ./out).
# Usage: verify/bench-families.sh REF [LIGER_SRC] [bench_families.py args]
#   REF: a kernelindex-ref built with CUDA (verify/build-cuda.sh);
#   LIGER_SRC: a folder holding Liger-Kernel's liger_kernel package, for
#   the Liger column (not part of this project).
set -u
cd "$(dirname "$0")/.."
REF=$1
LIGER=${2:-}
[ $# -ge 2 ] && shift 2 || shift 1
O=${OUT:-out}
mkdir -p "$O"
nvidia-smi >"$O/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit \
    --format=csv >>"$O/nvidia-smi.txt" 2>&1
sh verify/test-ref.sh "$REF" >"$O/test-ref.txt" 2>&1
echo "test-ref: $(grep -c '^ok' "$O/test-ref.txt") ok, $(tail -1 "$O/test-ref.txt")"
grep '^FAIL' "$O/test-ref.txt" | cut -c1-300
PYTHONPATH=${LIGER}${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 \
    python3 verify/bench_families.py "$REF" "$@" >"$O/bench.txt" 2>"$O/bench.err"
echo "bench exit $?"
grep -A100 '^| family' "$O/bench.txt"
tail -5 "$O/bench.err"
