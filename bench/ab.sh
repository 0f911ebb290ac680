#!/usr/bin/env bash
# bench/ab.sh — durable POST load (bench/run.sh's: seed bundles, wrk -t2
# -c64) on two or more kernelindexd binaries in turn, round after round, so
# that a change is judged side by side on a noisy machine. Prints, per round
# and binary, bundles/s, the server's CPU per POST (utime + stime over the
# requests wrk counted) and wrk's p50 and p99, then the medians.
#
# usage: bench/ab.sh ROUNDS SECONDS LABEL=DAEMON [LABEL=DAEMON ...]
#   KI_DATA_DIR    where seed/ is (default: tests/data)
#   KI_AB_CONNS    connections (default 64)
#   KI_AB_STORE    a store directory (its daemon stopped) copied afresh for
#                  each round and binary, instead of an empty store
set -eu

[ $# -ge 3 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${KI_DATA_DIR:-$HERE/../tests/data}
SEED=$DATA/seed/embedding-full-huggingface-a100.json
CONNS=${KI_AB_CONNS:-64}
THREADS=2
[ "$CONNS" -ge 2 ] || THREADS=1
ROUNDS=$1 DUR=$2
shift 2
command -v wrk >/dev/null || { echo "ab.sh: wrk is needed (apt-get install wrk)" >&2; exit 1; }
T=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
python3 "$HERE/bench.py" template "$SEED" "$T/bundle.tpl"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

for r in $(seq "$ROUNDS"); do
	for spec in "$@"; do
		label=${spec%%=*} bin=${spec#*=}
		rm -rf "$T/data"
		if [ -n "${KI_AB_STORE:-}" ]; then
			cp -r "$KI_AB_STORE" "$T/data"
		else
			mkdir -p "$T/data"
		fi
		"$bin" --listen "127.0.0.1:$port" --data-dir "$T/data" \
		    --log-level warn >"$T/log" 2>&1 &
		PID=$!
		U=http://127.0.0.1:$port/apis/kernelindex.dev/v1alpha1/benchmarkruns
		for _ in $(seq 100); do
			curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && break
			sleep 0.1
		done
		curl -sSf -o /dev/null -H 'Content-Type: application/json' \
		    --data-binary @"$SEED" "$U"
		t0=$(awk '{print $14 + $15}' "/proc/$PID/stat")
		out=$(wrk -t$THREADS -c"$CONNS" -d"${DUR}s" -s "$HERE/post.lua" "$U" -- \
		    "ab$r$label" "$T/bundle.tpl" 201 | grep KIRESULT)
		t1=$(awk '{print $14 + $15}' "/proc/$PID/stat")
		kill "$PID"
		wait "$PID" 2>/dev/null || true
		PID=
		n=$(echo "$out" | sed 's/.*requests=\([0-9]*\).*/\1/')
		bad=$(echo "$out" | sed 's/.*bad=\([0-9]*\).*/\1/')
		[ "$bad" = 0 ] || { echo "ab.sh: $label: $bad answers were not 201" >&2; exit 1; }
		echo "$r $label $(echo "$out" | sed 's/.*rps=\([0-9.]*\).*/\1/') \
$(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$(getconf CLK_TCK)" \
		    'BEGIN { printf "%.0f", (b - a) / hz * 1e6 / n }') \
$(echo "$out" | sed 's/.*p50_us=\([0-9]*\).*/\1/') \
$(echo "$out" | sed 's/.*p99_us=\([0-9]*\).*/\1/')"
	done
done | tee "$T/rows" | awk '{ printf "round %s  %-12s %9.0f bundles/s  %5d us CPU/POST  p50 %6.2f ms  p99 %6.2f ms\n", $1, $2, $3, $4, $5 / 1000, $6 / 1000 }'
echo "medians of $ROUNDS rounds:"
python3 - "$T/rows" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r, label, rps, cpu, p50, p99 = line.split()
    rows.setdefault(label, []).append(
        (float(rps), float(cpu), float(p50), float(p99)))
for label, v in rows.items():
    print("  %-12s %9.0f bundles/s  %5.0f us CPU/POST  p50 %6.2f ms  "
        "p99 %6.2f ms" % (label, statistics.median(x[0] for x in v),
        statistics.median(x[1] for x in v),
        statistics.median(x[2] for x in v) / 1000,
        statistics.median(x[3] for x in v) / 1000))
EOF
