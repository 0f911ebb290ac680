#!/bin/sh
# verify/bench-h200.sh — one device run: build kernelindex-ref for sm_90,
# run its checks, then time it and PyTorch on the seed's embedding shape
# (B=8, T=2048, D=4096) over a sweep of V; JSON lines go to $OUT (or ./out).
set -u
cd "$(dirname "$0")/.."
O=${OUT:-out}
mkdir -p "$O"
VS=${VS:-1024,4096,16384,32768,65536,131072}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit --format=csv >"$O/nvidia-smi.txt" 2>&1
verify/build-cuda.sh build-ref >"$O/build-and-test.txt" 2>&1
echo "build+test exit $?"; tail -5 "$O/build-and-test.txt"
cp build-ref/ptxas.txt "$O/" 2>/dev/null
REF=build-ref/kernelindex-ref
[ -x "$REF" ] || REF=${PREBUILT_REF:-}
: >"$O/ref.jsonl"
for dt in float32 bfloat16 float16; do
	for v in $(echo "$VS" | tr , ' '); do
		[ "$dt" != float32 ] && [ "$v" != 131072 ] && continue
		for p in forward backward full; do
			printf '{"workload":{"kernel":"embedding","pass":"%s","dtype":"%s","parameters":{"batch":8,"seq":2048,"hidden":4096,"vocab":%s}},"protocol":{},"backend":"cuda","maxSeconds":30}\n' "$p" "$dt" "$v" |
			    "$REF" >>"$O/ref.jsonl" || echo "ref failed: $p $dt $v"
		done
	done
done
# The other backward variant (a warp per row) on the same shapes.
: >"$O/ref-bwd-warp.jsonl"
for v in $(echo "$VS" | tr , ' '); do
	for dt in float32 bfloat16; do
		[ "$dt" != float32 ] && [ "$v" != 131072 ] && continue
		printf '{"workload":{"kernel":"embedding","pass":"backward","dtype":"%s","parameters":{"batch":8,"seq":2048,"hidden":4096,"vocab":%s}},"backend":"cuda","maxSeconds":30}\n' "$dt" "$v" |
		    KIREF_BWD=1 "$REF" >>"$O/ref-bwd-warp.jsonl"
	done
done
PYTHONUNBUFFERED=1 python3 verify/bench_torch.py 8 2048 4096 "$VS" float32 >"$O/torch.jsonl" 2>"$O/torch.err"
PYTHONUNBUFFERED=1 python3 verify/bench_torch.py 8 2048 4096 131072 bfloat16,float16 >>"$O/torch.jsonl" 2>>"$O/torch.err"
echo "torch exit $?"
wc -l "$O/ref.jsonl" "$O/torch.jsonl"
