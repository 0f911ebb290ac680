#!/usr/bin/env bash
# bench/grow.sh — the durable POST load (bench/run.sh's: seed bundles, wrk
# -t2 -c64) as consecutive runs on one daemon from an empty store, so that
# the store grows under the load as it does in the suite; binaries take
# turns, round after round. Prints, per run: bundles/s, the server's CPU
# per POST, bytes passed to write calls per POST (/proc/PID/io wchar),
# requests per committed batch and ms per batch in the commit (/metrics),
# and the store's used bytes after the run; then the medians of each run
# number across rounds.
#
# usage: bench/grow.sh ROUNDS RUNS SECONDS LABEL=DAEMON [LABEL=DAEMON ...]
#   KI_DATA_DIR    where seed/ is (default: tests/data)
set -eu

[ $# -ge 4 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${KI_DATA_DIR:-$HERE/../tests/data}
SEED=$DATA/seed/embedding-full-huggingface-a100.json
ROUNDS=$1 RUNS=$2 DUR=$3
shift 3
command -v wrk >/dev/null || { echo "grow.sh: wrk is needed (apt-get install wrk)" >&2; exit 1; }
T=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
python3 "$HERE/bench.py" template "$SEED" "$T/bundle.tpl"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
U=http://127.0.0.1:$port/apis/kernelindex.dev/v1alpha1/benchmarkruns
M=http://127.0.0.1:$port/metrics
metric() { curl -sf "$M" | awk -v k="$1" '$1 == k {print $2}'; }
: >"$T/rows"

for r in $(seq "$ROUNDS"); do
	for spec in "$@"; do
		label=${spec%%=*} bin=${spec#*=}
		rm -rf "$T/data"
		mkdir -p "$T/data"
		"$bin" --listen "127.0.0.1:$port" --data-dir "$T/data" \
		    --log-level warn --map-size 16G >"$T/log" 2>&1 &
		PID=$!
		for _ in $(seq 100); do
			curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && break
			sleep 0.1
		done
		curl -sSf -o /dev/null -H 'Content-Type: application/json' \
		    --data-binary @"$SEED" "$U"
		for i in $(seq "$RUNS"); do
			b0=$(metric kernelindex_commit_batches_total)
			q0=$(metric kernelindex_commit_requests_total)
			s0=$(metric kernelindex_commit_seconds_total)
			w0=$(awk '/^wchar/ {print $2}' "/proc/$PID/io")
			t0=$(awk '{print $14 + $15}' "/proc/$PID/stat")
			out=$(wrk -t2 -c64 -d"${DUR}s" -s "$HERE/post.lua" "$U" -- \
			    "g$r$label$i" "$T/bundle.tpl" 201 | grep KIRESULT)
			w1=$(awk '/^wchar/ {print $2}' "/proc/$PID/io")
			t1=$(awk '{print $14 + $15}' "/proc/$PID/stat")
			b1=$(metric kernelindex_commit_batches_total)
			q1=$(metric kernelindex_commit_requests_total)
			s1=$(metric kernelindex_commit_seconds_total)
			used=$(metric kernelindex_store_used_bytes)
			n=$(echo "$out" | sed 's/.*requests=\([0-9]*\).*/\1/')
			rps=$(echo "$out" | sed 's/.*rps=\([0-9.]*\).*/\1/')
			bad=$(echo "$out" | sed 's/.*bad=\([0-9]*\).*/\1/')
			[ "$bad" = 0 ] || { echo "grow.sh: $label: $bad answers were not 201" >&2; exit 1; }
			awk -v l="$label" -v r="$r" -v i="$i" -v rps="$rps" -v n="$n" \
			    -v w=$((w1 - w0)) -v t=$((t1 - t0)) -v h="$(getconf CLK_TCK)" \
			    -v b=$((b1 - b0)) -v q=$((q1 - q0)) -v s0="$s0" -v s1="$s1" \
			    -v u="$used" 'BEGIN {
				printf "%s %s %s %.0f %.1f %.0f %.1f %.2f %.0f\n", l, r, i,
				    rps, t / h * 1e6 / n, w / n, q / b, (s1 - s0) * 1000 / b,
				    u / 1e6 }' | tee -a "$T/rows" |
			    awk '{printf "round %s  %-8s run %s  %6d bundles/s  %5.1f us CPU/POST  %6d B written/POST  %4.1f req/batch  %5.2f ms/batch  %5d MB used\n", $2, $1, $3, $4, $5, $6, $7, $8, $9}'
		done
		kill "$PID"
		wait "$PID" 2>/dev/null || true
		PID=
	done
done
echo "medians of $ROUNDS rounds:"
for spec in "$@"; do
	label=${spec%%=*}
	for i in $(seq "$RUNS"); do
		awk -v l="$label" -v i="$i" '$1 == l && $3 == i' "$T/rows" |
		    python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin]
med = lambda k: statistics.median(float(r[k]) for r in rows)
print("  %-8s run %s  %6d bundles/s  %5.1f us CPU/POST  %6d B written/POST  %4.1f req/batch  %5.2f ms/batch  %5d MB used" % (
    rows[0][0], rows[0][2], med(3), med(4), med(5), med(6), med(7), med(8)))'
	done
done
