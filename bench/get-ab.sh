#!/usr/bin/env bash
# bench/get-ab.sh — GET of the seed run by name and by digest (wrk -t2 -c32,
# SECONDS each) on two or more kernelindexd binaries in turn, round after
# round, so that a change is judged side by side on a noisy machine.
#
# usage: bench/get-ab.sh ROUNDS SECONDS LABEL=DAEMON [LABEL=DAEMON ...]
#   KI_DATA_DIR    where seed/ is (default: tests/data)
#   KI_BENCH_QUERY a query string for both GETs (e.g. resourceVersion=0)
set -eu
[ $# -ge 3 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
SEED=${KI_DATA_DIR:-$HERE/../tests/data}/seed/embedding-full-huggingface-a100.json
ROUNDS=$1 DUR=$2
shift 2
command -v wrk >/dev/null || { echo "get-ab.sh: wrk is needed (apt-get install wrk)" >&2; exit 1; }
API=/apis/kernelindex.dev/v1alpha1
name=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run']['metadata']['name'])" "$SEED")
T=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
Q=${KI_BENCH_QUERY:+?$KI_BENCH_QUERY}
rps() { wrk -t2 -c32 -d"${DUR}s" "$1$Q" | awk '/Requests\/sec/ { print $2 }'; }
for r in $(seq "$ROUNDS"); do
	for spec in "$@"; do
		label=${spec%%=*} bin=${spec#*=}
		rm -rf "$T/data" && mkdir -p "$T/data"
		port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
		"$bin" --listen "127.0.0.1:$port" --data-dir "$T/data" --log-level warn >/dev/null 2>&1 &
		PID=$!
		for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
		base="http://127.0.0.1:$port$API"
		digest=$(curl -sS -H 'Content-Type: application/json' --data-binary "@$SEED" "$base/benchmarkruns" |
			python3 -c "import json,sys; d=json.load(sys.stdin); print([i for i in d['items'] if i['kind']=='BenchmarkRun'][0]['digest'])")
		printf 'round %s  %-8s GET by name %10s req/s   GET by digest %10s req/s\n' "$r" "$label" \
			"$(rps "$base/benchmarkruns/$name")" "$(rps "$base/objects/$digest")"
		kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
	done
done
