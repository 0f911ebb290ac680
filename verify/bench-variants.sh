#!/bin/sh
# verify/bench-variants.sh — times kernel variants of the CUDA backend
# side by side on one device (medians in ms from the program's own
# do_bench), for choosing defaults: blocks a multiprocessor for the norms
# (KIREF_BPSM), and the vector path against the register-held one
# (KIREF_SCALAR).
# Usage: verify/bench-variants.sh REF
set -u
REF=$1
one() {	# env kernel pass dtype params
	printf '{"workload":{"kernel":"%s","pass":"%s","dtype":"%s","parameters":%s},"backend":"cuda","maxSeconds":30}\n' \
	    "$2" "$3" "$4" "$5" | env $1 "$REF" | python3 -c '
import json, sys
r = json.load(sys.stdin)
if "error" in r:
    print("error", r["error"][:100])
else:
    f = r.get("floor", {})
    print("%.4f ms  %.2fx floor  %s" % (r["latencyNs"]["median"] / 1e6,
          1 / f["fractionOfFloor"] if f else 0, "ok" if r["correct"] else "FAIL"))'
}
# Blocks a multiprocessor for the norms (run 2 on an H100: 2 to 8 within
# 1%, 1 slower): KIREF_BPSM=1 against the default.
for v in KIREF_BPSM=1 KIREF_BPSM=0; do
	for c in 'rms_norm backward bfloat16 {"rows":2048,"hidden":8192}' \
	    'rms_norm forward bfloat16 {"rows":2048,"hidden":8192}'; do
		set -- $c
		printf '%-14s %-10s %-9s %-9s %-32s ' "$v" "$1" "$2" "$3" "$4"
		one "$v" "$1" "$2" "$3" "$4"
	done
done
# cross_entropy: the cluster kernel (KIREF_CE_CS, KIREF_CE_KB) against
# two reads of the row (KIREF_CE=0).
for v in KIREF_CE=0 KIREF_CE=1 "KIREF_CE_CS=4 KIREF_CE_KB=128" \
    "KIREF_CE_CS=8 KIREF_CE_KB=64"; do
	for c in 'cross_entropy forward float32 {"batch":8,"seq":2048,"vocab":131072}' \
	    'cross_entropy full float32 {"batch":8,"seq":2048,"vocab":131072}' \
	    'cross_entropy full float32 {"batch":8,"seq":2048,"vocab":32768}'; do
		set -- $c
		printf '%-30s %-10s %-9s %-9s %-32s ' "$v" "$1" "$2" "$3" "$4"
		one "$v" "$1" "$2" "$3" "$4"
	done
done
# The vector path against the version-1 kernels.
for c in 'rms_norm forward bfloat16 {"rows":2048,"hidden":8192}' \
    'softmax forward bfloat16 {"rows":2048,"hidden":4096}'; do
	set -- $c
	printf '%-14s %-10s %-9s %-9s %-32s ' KIREF_SCALAR=1 "$1" "$2" "$3" "$4"
	one KIREF_SCALAR=1 "$1" "$2" "$3" "$4"
done
