#!/usr/bin/env bash
# bench/run.sh — measures kernelindexd side by side with its peers (nginx for
# reads, etcd for durable writes) in one run on this machine, prints a table
# of figures and ratios (medians of 3 runs) and writes bench/results.md.
#
# usage: bench/run.sh            (as root: installs wrk, nginx, etcd-server,
#                                 python3 and valgrind with apt-get if missing)
#
# Environment:
#   KI_DAEMON        the kernelindexd to measure (default: build the release
#                    daemon in build/release); KI_CLI the kernelindex CLI
#                    (default: next to KI_DAEMON)
#   KI_DATA_DIR      where seed/ and liger/ are (default: tests/data)
#   KI_BENCH_RUNS    runs in the large list store (default 10000000)
#   KI_BENCH_OUT     the results file (default bench/results.md)
#   KI_BENCH_KEEP=1  keep the temporary directory
#   KI_BENCH_QUICK=1 one short run of everything, to check the suite itself
#                    (its figures mean nothing; writes no results file
#                    unless KI_BENCH_OUT is set)
#
# All traffic goes to 127.0.0.1. Every server gets its own free port and its
# own directory under one temporary directory; a trap stops them all.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
DATA=${KI_DATA_DIR:-$TOP/tests/data}
SEED=$DATA/seed/embedding-full-huggingface-a100.json
CSV=$DATA/liger/all_benchmark_data.csv
TARGET_RUNS=${KI_BENCH_RUNS:-10000000}
OUTFILE=${KI_BENCH_OUT:-$HERE/results.md}
API=/apis/kernelindex.dev/v1alpha1
REPS=3            # runs of each measurement; the table shows the median
GET_D=10          # seconds of each wrk run for GETs and POSTs
LAT_D=5           # seconds of each single-connection latency run
LIST_D=5          # seconds of each list latency run (both stores)
WATCH_D=6         # seconds of writing in each watch round
WATCH_RATE=1000   # runs/s offered while watchers listen
if [ "${KI_BENCH_QUICK:-0}" = 1 ]; then
	REPS=1 GET_D=2 LAT_D=1 LIST_D=1 WATCH_D=2
	TARGET_RUNS=${KI_BENCH_RUNS:-20000}
	OUTFILE=${KI_BENCH_OUT:-/dev/null}
fi

START_S=$(date +%s)
say() { printf '%s\n' "$*" >&2; }
die() { say "run.sh: $*"; exit 1; }

# ---- what the suite needs ----
need=""
command -v wrk >/dev/null || need="$need wrk"
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need="$need nginx"
command -v etcd >/dev/null || need="$need etcd-server"
command -v python3 >/dev/null || need="$need python3"
command -v curl >/dev/null || need="$need curl"
command -v cc >/dev/null || need="$need gcc"
command -v valgrind >/dev/null || need="$need valgrind"
if [ -n "$need" ]; then
	[ "$(id -u)" = 0 ] || die "missing:$need (run as root to install them)"
	say "installing:$need"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $need >&2
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
PY="python3 $HERE/bench.py"

if [ -z "${KI_DAEMON:-}" ]; then
	say "building the release daemon in build/release"
	mkdir -p "$TOP/build/release"
	(cd "$TOP/build/release" &&
	    { [ -f Makefile ] || ../../configure -q CFLAGS="-O2 -g"; } &&
	    make -j"$(nproc)" kernelindexd kernelindex bench/kernelindex-gen >&2) ||
	    die "the release build failed"
	KI_DAEMON=$TOP/build/release/kernelindexd
fi
KI_CLI=${KI_CLI:-$(dirname "$KI_DAEMON")/kernelindex}
GEN=${KI_GEN:-$(dirname "$KI_DAEMON")/bench/kernelindex-gen}
[ -x "$KI_DAEMON" ] || die "no daemon at $KI_DAEMON"
[ -x "$KI_CLI" ] || die "no CLI at $KI_CLI"
[ -x "$GEN" ] || die "no store generator at $GEN"
[ -r "$SEED" ] && [ -r "$CSV" ] || die "no seed or CSV under $DATA"

# ---- one temporary directory, every server stopped on exit ----
T=$(mktemp -d "${TMPDIR:-/tmp}/kibench.XXXXXX")
RES=$T/results.txt
: >"$RES"
: >"$T/pids"
cleanup() {
	for p in $(cat "$T/pids" 2>/dev/null); do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in $(cat "$T/pids" 2>/dev/null); do
		for _ in $(seq 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null || true
	done
	if [ "${KI_BENCH_KEEP:-0}" = 1 ]; then
		say "kept $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Watchers need a descriptor each, on both sides.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

rec() { echo "$1 $2" >>"$RES"; }
info() { echo "info $1 $2" >>"$RES"; }
note() { echo "note $*" >>"$RES"; say "  note: $*"; }
port() { $PY freeport; }
TCK=$(getconf CLK_TCK)

# The process and its children (nginx's workers).
tree() { echo "$1"; ps -o pid= --ppid "$1" 2>/dev/null || true; }
# User + system clock ticks in a /proc stat file (0 if it is gone).
stat_ticks() {
	sed 's/.*) //' "$1" 2>/dev/null |
	    awk '{print $12 + $13} END {if (!NR) print 0}'
}
# CPU time (clock ticks, every thread) of a process tree.
ticks() {
	local t=0 p
	for p in $(tree "$1"); do
		t=$((t + $(stat_ticks "/proc/$p/stat")))
	done
	echo "$t"
}
# CPU time (clock ticks) of a process's threads named $2 (kernelindexd's:
# MHD-worker, ki-committer, ki-checkpoint, ...).
thread_ticks() {
	local t=0 d
	for d in /proc/"$1"/task/*; do
		[ "$(cat "$d/comm" 2>/dev/null)" = "$2" ] || continue
		t=$((t + $(stat_ticks "$d/stat")))
	done
	echo "$t"
}
# The thread groups whose CPU a kernelindexd run records (wrk_run).
KI_THREADS="http:MHD-worker commit:ki-committer ckpt:ki-checkpoint"
# Bytes the disk holding the temporary directory has been sent (its
# sectors written, /sys/class/block/DEV/stat), or empty when that disk has
# no such counters. Device-wide: during a run the server under test is the
# only writer of note. (write_bytes in /proc/PID/io is no measure of this:
# with large page-cache folios one dirtied 4 KB page can count as a folio
# many times its size.)
dev_wbytes() {
	local f
	f=$(df --output=source "$T" 2>/dev/null | tail -1)
	f=/sys/class/block/$(basename "$f")/stat
	[ -r "$f" ] && awk '{printf "%.0f\n", $7 * 512}' "$f"
}
# Bytes a process tree passed to write calls (wchar, /proc/PID/io): its
# storage writes and its answers.
wbytes() {
	local p
	for p in $(tree "$1"); do
		cat "/proc/$p/io" 2>/dev/null || true
	done | awk '$1 == "wchar:" {s += $2} END {printf "%.0f\n", s}'
}
# Sum of a /proc/PID/status field (kB) over a process tree, in MB.
status_mb() {
	local p
	for p in $(tree "$1"); do
		grep "^$2:" "/proc/$p/status" 2>/dev/null || true
	done | awk '{s += $2} END {printf "%.1f\n", s / 1024}'
}
rss() {
	rec "rss_$1" "$(status_mb "$2" VmRSS)"
	rec "anon_$1" "$(status_mb "$2" RssAnon)"
}

# Counting a process's sync calls while wrk runs: perf's syscall
# tracepoints, when perf and they are there.
SYNC_EVENTS=syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync,syscalls:sys_enter_msync,syscalls:sys_enter_sync_file_range
HAVE_SYNCS=0
if command -v perf >/dev/null &&
    perf stat -e "$SYNC_EVENTS" -x, -o /dev/null true 2>/dev/null; then
	HAVE_SYNCS=1
fi
syncs_start() {
	[ $HAVE_SYNCS = 1 ] || return 0
	perf stat -e "$SYNC_EVENTS" -x, -o "$T/syncs.csv" -p "$1" 2>/dev/null &
	SYNC_PERF=$!
	sleep 0.2
}
# syncs_stop KEY — records KEY_syncs_per_req over the last wrk_run.
syncs_stop() {
	[ $HAVE_SYNCS = 1 ] || return 0
	kill -INT "$SYNC_PERF" 2>/dev/null || true
	wait "$SYNC_PERF" 2>/dev/null || true
	rec "$1_syncs_per_req" "$(awk -F, -v n="$W_requests" \
	    '$1 ~ /^[0-9]+$/ {s += $1} END {printf "%.4f", n ? s / n : 0}' \
	    "$T/syncs.csv")"
}

# stop PID: SIGTERM, then wait until it is gone.
stop() {
	kill -TERM "$1" 2>/dev/null || return 0
	for _ in $(seq 300); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
}

# start_ki DIR [OPTION VALUE]... — starts kernelindexd (behind the command
# in the array KI_WRAP, if any) on DIR; sets KI_PID, KI_PORT, KI (the API
# URL) and KI_READY_S (seconds from exec to the first 200 from /readyz).
KI_WRAP=()
start_ki() {
	local dir=$1 out
	shift
	mkdir -p "$dir"
	KI_PORT=$(port)
	out=$($PY spawn "$T/kernelindexd.log" \
	    "http://127.0.0.1:$KI_PORT/readyz" 120 "${KI_WRAP[@]}" "$KI_DAEMON" \
	    --listen "127.0.0.1:$KI_PORT" --data-dir "$dir" --log-level warn \
	    "$@") ||
	    die "kernelindexd did not start (see the log below)
$(tail -5 "$T/kernelindexd.log")"
	KI_PID=${out% *}
	KI_READY_S=${out#* }
	echo "$KI_PID" >>"$T/pids"
	KI=http://127.0.0.1:$KI_PORT$API
}

# wrk_run KEY PID WRK-ARGS... — runs wrk (whose script prints a KIRESULT
# line) and records KEY_rps, KEY_p50_us, KEY_p99_us, KEY_cpu_us (the
# server's CPU time per request, PID's process tree), KEY_wbytes (the
# bytes it passed to write calls per request) and KEY_dbytes (the bytes the
# disk was sent per request).
wrk_run() {
	local key=$1 pid=$2 t0 t1 b0 b1 d0 d1 out line g ki=
	local -A g0
	shift 2
	# kernelindexd (the one server with a ki-committer thread): its CPU by
	# thread group too.
	if grep -qx ki-committer /proc/"$pid"/task/*/comm 2>/dev/null; then
		ki=1
		for g in $KI_THREADS; do
			g0[${g%%:*}]=$(thread_ticks "$pid" "${g#*:}")
		done
	fi
	t0=$(ticks "$pid")
	b0=$(wbytes "$pid")
	d0=$(dev_wbytes)
	out=$(wrk "$@" 2>&1) || die "wrk failed: $out"
	kill -0 "$pid" 2>/dev/null || die "the server (pid $pid) exited during $key
$(tail -5 "$T/kernelindexd.log" 2>/dev/null)"
	t1=$(ticks "$pid")
	b1=$(wbytes "$pid")
	d1=$(dev_wbytes)
	line=$(printf '%s\n' "$out" | grep '^KIRESULT' | tail -1)
	[ -n "$line" ] || die "wrk printed no result: $out"
	W_rps= W_requests= W_p50_us= W_p99_us= W_errors=0 W_status_errors=0
	W_bad=0
	eval "$(printf '%s\n' "${line#KIRESULT }" | tr ' ' '\n' |
	    grep -E '^[a-z0-9_]+=[0-9.]+$' | sed 's/^/W_/')"
	rec "${key}_rps" "$W_rps"
	rec "${key}_p50_us" "$W_p50_us"
	rec "${key}_p99_us" "$W_p99_us"
	if [ "${W_requests:-0}" -gt 0 ]; then
		rec "${key}_cpu_us" "$(awk -v d=$((t1 - t0)) -v n="$W_requests" \
		    -v h="$TCK" 'BEGIN {printf "%.1f", d / h * 1e6 / n}')"
		rec "${key}_wbytes" "$(awk -v d=$((b1 - b0)) -v n="$W_requests" \
		    'BEGIN {printf "%.0f", d / n}')"
		for g in ${ki:+$KI_THREADS}; do
			rec "${key}_cpu_${g%%:*}_us" "$(awk -v n="$W_requests" \
			    -v d=$(($(thread_ticks "$pid" "${g#*:}") - g0[${g%%:*}])) \
			    -v h="$TCK" 'BEGIN {printf "%.1f", d / h * 1e6 / n}')"
		done
		if [ -n "$d0" ] && [ -n "$d1" ]; then
			rec "${key}_dbytes" "$(awk -v d=$((d1 - d0)) \
			    -v n="$W_requests" 'BEGIN {printf "%.0f", d / n}')"
		fi
	fi
	if [ "$W_errors" != 0 ] || [ "$W_status_errors" != 0 ] ||
	    [ "$W_bad" != 0 ] ||
	    printf '%s\n' "$out" | grep -q 'Non-2xx'; then
		note "$key: $W_errors socket errors (connect, read, write," \
		    "timeout), $W_status_errors answers" \
		    "≥ 400, $W_bad with an unexpected status in $W_requests" \
		    "requests"
	fi
	say "  $key: $W_rps req/s, p50 ${W_p50_us} µs, p99 ${W_p99_us} µs"
}

# runs_total API — the runs the daemon at API holds (its facets' total, a
# counter the store keeps).
runs_total() {
	curl -sf "$1/facets" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])' ||
	    die "no run count from $1/facets"
}
# created_check KEY API BEFORE — after a wrk_run of POSTs that each name a
# new run: every answered request must have created one. This stands for
# post.lua's per-answer status check, whose Lua callback cost wrk 3-7% of
# the POSTs a second on the CPUs it shares with the daemon (three
# alternating 10-second rounds).
created_check() {
	local key=$1 made
	made=$(($(runs_total "$2") - $3))
	info "${key}_created" "$made"
	if [ "$made" -lt "${W_requests:-0}" ]; then
		note "$key: $made runs created for $W_requests answered requests"
	fi
}

# ---- the machine ----
MODEL=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
MEM=$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
OS=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")
say "machine: $(nproc) CPUs, $MODEL, $MEM, $(uname -r)"
say "temporary directory: $T"
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
CPU_AT_START=$(head -1 /proc/stat)
# A first write to a page of memory new to the process: on a virtual
# machine whose host backs guest memory only once it is touched (and takes
# freed memory back), this is far more than zeroing a page, and a store's
# page cache pays it for every page the store grows by.
TOUCH_AT_START=$($PY touch 512)

$PY template "$SEED" "$T/bundle.tpl"
SEED_NAME=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["metadata"]["name"])' "$SEED")
base64 -w0 "$SEED" >"$T/seed.b64"
"$KI_CLI" import liger "$CSV" --dry-run -o ndjson >"$T/liger.ndjson" ||
    die "the CLI could not convert the Liger CSV"
CSV_ROWS=$(wc -l <"$T/liger.ndjson")
cc -O2 -Wall -o "$T/fanout" "$HERE/fanout.c" || die "fanout.c did not build"
cc -O2 -Wall -o "$T/pair" "$HERE/pair.c" -lcurl || die "pair.c did not build"

# =====================================================================
say "== 1. GET one object by name and by digest, against nginx"
# The daemons that take many writes start with a map large enough for the
# whole run (the default map starts at 1G and doubles at 3/4 full): no
# measurement then includes the map's growth.
start_ki "$T/get" --map-size 16G
GET_PID=$KI_PID
GET=$KI
code=$(curl -sS -o "$T/post.json" -w '%{http_code}' \
    -H 'Content-Type: application/json' --data-binary @"$SEED" \
    "$GET/benchmarkruns")
[ "$code" = 201 ] || die "POST of the seed answered $code"
"$KI_CLI" --server "http://127.0.0.1:$KI_PORT" import liger "$CSV" \
    >/dev/null || die "the Liger import failed"
RUN_DIGEST=$(python3 -c 'import json,sys; print([i["digest"] for i in json.load(open(sys.argv[1]))["items"] if i["kind"] == "BenchmarkRun"][0])' "$T/post.json")
P_NAME=$API/benchmarkruns/$SEED_NAME
P_DIGEST=$API/objects/$RUN_DIGEST

# nginx serves the same bytes under the same paths from files.
mkdir -p "$T/nginx/www$API/benchmarkruns" "$T/nginx/www$API/objects" \
    "$T/nginx/tmp"
curl -sSf -o "$T/nginx/www$P_NAME" "http://127.0.0.1:$KI_PORT$P_NAME"
curl -sSf -o "$T/nginx/www$P_DIGEST" "http://127.0.0.1:$KI_PORT$P_DIGEST"
NG_PORT=$(port)
cat >"$T/nginx/nginx.conf" <<EOF
# nginx as a static file server for the same bytes: one worker per CPU,
# keep-alive without a request limit, no access log (kernelindexd runs with
# --log-level warn, which logs no requests either).
worker_processes $(nproc);
daemon off;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	default_type application/json;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
	client_body_temp_path $T/nginx/tmp/body;
	proxy_temp_path $T/nginx/tmp/proxy;
	fastcgi_temp_path $T/nginx/tmp/fastcgi;
	uwsgi_temp_path $T/nginx/tmp/uwsgi;
	scgi_temp_path $T/nginx/tmp/scgi;
	server {
		listen 127.0.0.1:$NG_PORT;
		root $T/nginx/www;
	}
}
EOF
# nginx's workers drop root: let them read the files.
chmod -R a+rX "$T/nginx"
chmod a+x "$T"
out=$($PY spawn "$T/nginx/error.log" "http://127.0.0.1:$NG_PORT$P_NAME" 30 \
    "$NGINX" -e "$T/nginx/error.log" -p "$T/nginx" -c "$T/nginx/nginx.conf") ||
    die "nginx did not start: $(tail -3 "$T/nginx/error.log")"
NG_PID=${out% *}
echo "$NG_PID" >>"$T/pids"
for p in "$P_NAME" "$P_DIGEST"; do
	curl -sS "http://127.0.0.1:$NG_PORT$p" | cmp -s - "$T/nginx/www$p" ||
	    die "nginx does not serve the bytes of $p"
done
for i in $(seq $REPS); do
	for what in name digest; do
		[ $what = name ] && p=$P_NAME || p=$P_DIGEST
		wrk_run "get_${what}_ki" "$GET_PID" -t2 -c32 -d${GET_D}s \
		    -s "$HERE/stats.lua" "http://127.0.0.1:$KI_PORT$p"
		wrk_run "get_${what}_nginx" "$NG_PID" -t2 -c32 -d${GET_D}s \
		    -s "$HERE/stats.lua" "http://127.0.0.1:$NG_PORT$p"
	done
done
rss get_kernelindexd "$GET_PID"
rss get_nginx "$NG_PID"
stop "$NG_PID"

# =====================================================================
say "== 6. POST with dryRun=All: parse + validation + digest, no commit"
for i in $(seq $REPS); do
	wrk_run dryrun "$GET_PID" -t2 -c32 -d${GET_D}s -s "$HERE/post.lua" \
	    "$GET/benchmarkruns?dryRun=All" -- "dry$i" "$T/bundle.tpl"
done
rss dryrun_kernelindexd "$GET_PID"

# =====================================================================
say "== 2. durable POST of seed bundles, against etcd v3 puts"
mkdir -p "$T/etcd"
E_PORT=$(port)
E_PEER=$(port)
out=$($PY spawn "$T/etcd/log" "http://127.0.0.1:$E_PORT/health" 60 \
    etcd --name bench --data-dir "$T/etcd/data" \
    --listen-client-urls "http://127.0.0.1:$E_PORT" \
    --advertise-client-urls "http://127.0.0.1:$E_PORT" \
    --listen-peer-urls "http://127.0.0.1:$E_PEER" \
    --initial-advertise-peer-urls "http://127.0.0.1:$E_PEER" \
    --initial-cluster "bench=http://127.0.0.1:$E_PEER" \
    --log-level warn) || die "etcd did not start: $(tail -3 "$T/etcd/log")"
E_PID=${out% *}
echo "$E_PID" >>"$T/pids"
for i in $(seq $REPS); do
	n0=$(runs_total "$GET")
	syncs_start "$GET_PID"
	wrk_run post64_ki "$GET_PID" -t2 -c64 -d${GET_D}s -s "$HERE/post.lua" \
	    "$GET/benchmarkruns" -- "p64r$i" "$T/bundle.tpl"
	syncs_stop post64_ki
	created_check post64_ki "$GET" "$n0"
	syncs_start "$E_PID"
	wrk_run post64_etcd "$E_PID" -t2 -c64 -d${GET_D}s \
	    -s "$HERE/etcd_put.lua" "http://127.0.0.1:$E_PORT/v3/kv/put" -- \
	    "p64r$i" "$T/seed.b64"
	syncs_stop post64_etcd
done
for i in $(seq $REPS); do
	n0=$(runs_total "$GET")
	syncs_start "$GET_PID"
	wrk_run post1_ki "$GET_PID" -t1 -c1 -d${LAT_D}s --latency \
	    -s "$HERE/post.lua" "$GET/benchmarkruns" -- "p1r$i" \
	    "$T/bundle.tpl"
	syncs_stop post1_ki
	created_check post1_ki "$GET" "$n0"
	syncs_start "$E_PID"
	wrk_run post1_etcd "$E_PID" -t1 -c1 -d${LAT_D}s --latency \
	    -s "$HERE/etcd_put.lua" "http://127.0.0.1:$E_PORT/v3/kv/put" -- \
	    "p1r$i" "$T/seed.b64"
	syncs_stop post1_etcd
done
rss post_kernelindexd "$GET_PID"
rss post_etcd "$E_PID"
stop "$E_PID"

# =====================================================================
say "== 6b. instructions per request (callgrind)"
stop "$GET_PID"
if command -v valgrind >/dev/null && command -v callgrind_control >/dev/null
then
	mkdir -p "$T/cg"
	KI_WRAP=(valgrind --tool=callgrind --callgrind-out-file="$T/cg/cg.out")
	start_ki "$T/cg/data"
	KI_WRAP=()
	CG_PID=$KI_PID
	curl -sS -o /dev/null -H 'Content-Type: application/json' \
	    --data-binary @"$SEED" "$KI/benchmarkruns"
	CG_DIGEST=$(curl -sS "$KI/benchmarkruns/$SEED_NAME" |
	    python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["digest"])')
	$PY calls "$KI/benchmarkruns/$SEED_NAME" 20 GET
	# Each dump holds what happened since the one before: dump 1 is the
	# start and the warm-up, dumps 2..5 one operation each.
	callgrind_control -d "$CG_PID" >/dev/null 2>&1
	n=1
	for op in get_name get_digest post dryrun; do
		case $op in
		get_name) $PY calls "$KI/benchmarkruns/$SEED_NAME" 200 GET ;;
		get_digest) $PY calls "$KI/objects/$CG_DIGEST" 200 GET ;;
		post) $PY calls "$KI/benchmarkruns" 200 POST "$T/bundle.tpl" ;;
		dryrun) $PY calls "$KI/benchmarkruns?dryRun=All" 200 POST \
		    "$T/bundle.tpl" ;;
		esac
		callgrind_control -d "$CG_PID" >/dev/null 2>&1
		n=$((n + 1))
		f=$T/cg/cg.out.$n
		for _ in $(seq 100); do
			grep -q '^totals:' "$f" 2>/dev/null && break
			sleep 0.1
		done
		ir=$(sed -n 's/^summary: //p' "$f")
		[ -n "$ir" ] || die "no callgrind dump $f"
		rec "ir_$op" "$((ir / 200))"
		hot=$($PY hot "$f")
		info "hot_$op" "$hot"
		say "  $op: $((ir / 200)) instructions a request; hottest: $hot"
	done
	stop "$CG_PID"
else
	note "valgrind is missing: no instruction counts"
fi

# =====================================================================
say "== 3. the Liger CSV through the CLI, fresh store each time"
for i in $(seq $REPS); do
	start_ki "$T/import$i"
	t0=$(date +%s%N)
	out=$("$KI_CLI" --server "http://127.0.0.1:$KI_PORT" import liger \
	    "$CSV" 2>&1) || die "import failed: $out"
	t1=$(date +%s%N)
	printf '%s\n' "$out" | grep -q "$CSV_ROWS created, 0 unchanged, 0 failed" ||
	    note "import $i: $(printf '%s\n' "$out" | tail -1)"
	rec import_s "$(awk -v d=$((t1 - t0)) 'BEGIN {printf "%.3f", d / 1e9}')"
	say "  import $i: $(awk -v d=$((t1 - t0)) 'BEGIN {printf "%.2f", d / 1e9}') s"
	rss import_kernelindexd "$KI_PID"
	stop "$KI_PID"
	rm -rf "$T/import$i"
done

# =====================================================================
say "== 4. lists at 10,000 runs and at a large store"
LD=$T/list
SMALL=10000
# Per scale (small, large): the daemon (URL, port, pid), its store and the
# query parameters list_prep finds in it.
declare -A L_KI L_PORT L_PID L_DIR L_TOK L_LTOK L_ENV L_NOTIN L_TOTAL
# Objects lists have read so far (the daemon's /metrics) at scale $1.
examined() {
	curl -sS "http://127.0.0.1:${L_PORT[$1]}/metrics" |
	    awk '$1 == "kernelindex_list_objects_examined_total" {print $2}'
}
# list_prep SCALE — what the queries need from the store at SCALE.
list_prep() {
	local sc=$1 ki=${L_KI[$1]} total emb off loff
	curl -sS "$ki/facets" >"$T/facets.json"
	total=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$T/facets.json")
	emb=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["labels"]["kernel"]["embedding"])' "$T/facets.json")
	L_TOTAL[$sc]=$total
	info "list_${sc}_runs" "$total"
	info "list_${sc}_embedding" "$emb"
	# Every kernel but swiglu, as notin: a requirement no index serves, so
	# the daemon reads runs in order until 100 swiglu runs (0.65%) match.
	L_NOTIN[$sc]=$(python3 -c 'import json,sys,urllib.parse; ks=sorted(k for k in json.load(open(sys.argv[1]))["labels"]["kernel"] if k != "swiglu"); print(urllib.parse.quote("kernel notin (%s)" % ",".join(ks), safe=""))' "$T/facets.json")
	# The seed's environment (an A100 SXM4): every run measured there.
	L_ENV[$sc]=$(curl -sS "$ki/benchmarkruns/$SEED_NAME" | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["environmentDigest"])')
	# 90% of the way into the list, but at most page 10,000.
	off=$((total * 9 / 10 / 100 * 100))
	[ "$off" -le 999900 ] || off=999900
	loff=$((emb * 9 / 10 / 100 * 100))
	[ "$loff" -le 999900 ] || loff=999900
	L_TOK[$sc]=$($PY walk "$ki/benchmarkruns" "" "$off")
	L_LTOK[$sc]=$($PY walk "$ki/benchmarkruns" \
	    "labelSelector=kernel%3Dembedding" "$loff")
	info "list_${sc}_deep_page" "$((off / 100 + 1))"
	info "list_${sc}_labeldeep_page" "$((loff / 100 + 1))"
}
# list_url SCALE QUERY — the query string of QUERY at SCALE.
list_url() {
	case $2 in
	label) echo "limit=100&labelSelector=kernel%3Dembedding" ;;
	field) echo "limit=100&fieldSelector=metadata.name%3D$SEED_NAME" ;;
	fieldref) echo "limit=100&fieldSelector=spec.environmentDigest%3D${L_ENV[$1]}" ;;
	first) echo "limit=100" ;;
	deep) echo "limit=100&continue=${L_TOK[$1]}" ;;
	labeldeep) echo "limit=100&labelSelector=kernel%3Dembedding&continue=${L_LTOK[$1]}" ;;
	scan) echo "limit=100&labelSelector=${L_NOTIN[$1]}" ;;
	esac
}
# kipair LINE KEY — the number after KEY= in pair's KIPAIR line.
kipair() { printf '%s\n' "$1" | sed -n "s/.* $2=\([0-9]*\).*/\1/p"; }
# list_round — the seven queries, each on both stores side by side: the
# pair client alternates its requests between them (one connection each),
# so that a moment when the machine is busy elsewhere weighs on both.
list_round() {
	local q sc e0 out line n
	declare -A url t0
	for q in label field fieldref first deep labeldeep scan; do
		for sc in small large; do
			url[$sc]="${L_KI[$sc]}/benchmarkruns?$(list_url $sc $q)"
			[ "$(curl -s -o /dev/null -w '%{http_code}' "${url[$sc]}")" = 200 ] ||
			    die "list $q at $sc answered non-200"
			# How the daemon served it: objects it read for the page
			# (/metrics counts them), against the 100 it answers.
			e0=$(examined "$sc")
			curl -s -o /dev/null "${url[$sc]}"
			rec "list_${sc}_${q}_examined" "$(($(examined "$sc") - e0))"
			t0[$sc]=$(ticks "${L_PID[$sc]}")
		done
		out=$("${L_CLIENT_PIN[@]}" "$T/pair" "${url[small]}" "${url[large]}" \
		    100000 "$LIST_D") ||
		    die "list $q: pair failed: $out"
		line=$(printf '%s\n' "$out" | grep '^KIPAIR' | tail -1)
		n=$(printf '%s\n' "$line" | sed -n 's/.* n=\([0-9]*\).*/\1/p')
		for sc in small large; do
			local k=a
			[ "$sc" = large ] && k=b
			rec "list_${sc}_${q}_p50_us" \
			    "$(kipair "$line" "${k}_p50_us")"
			rec "list_${sc}_${q}_p99_us" \
			    "$(kipair "$line" "${k}_p99_us")"
			# Server CPU per request: its ticks over the pair's requests
			# (with the 50 warm-up ones).
			rec "list_${sc}_${q}_cpu_us" "$(awk -v d=$(($(ticks "${L_PID[$sc]}") - t0[$sc])) \
			    -v n=$((n + 50)) -v h="$TCK" 'BEGIN {printf "%.1f", d / h * 1e6 / n}')"
		done
		info "list_${q}_pair_requests" "$n"
	done
}
# continue_round — page 1 and the deep page of the large store, alternated
# request by request on the one daemon: the continue goal compares them, and
# measured in separate rounds a busy moment on the machine weighed on one
# and not the other (1.07x and 1.96x in two runs reading the same pages).
continue_round() {
	local ki=${L_KI[large]} out line
	out=$("${L_CLIENT_PIN[@]}" "$T/pair" "$ki/benchmarkruns?$(list_url large first)" \
	    "$ki/benchmarkruns?$(list_url large deep)" 100000 "$LIST_D") ||
	    die "continue: pair failed: $out"
	line=$(printf '%s\n' "$out" | grep '^KIPAIR' | tail -1)
	rec list_large_cpair_first_p99_us "$(kipair "$line" a_p99_us)"
	rec list_large_cpair_deep_p99_us "$(kipair "$line" b_p99_us)"
	rec list_large_cpair_first_p50_us "$(kipair "$line" a_p50_us)"
	rec list_large_cpair_deep_p50_us "$(kipair "$line" b_p50_us)"
}
# list_done SCALE — memory and size after the lists.
list_done() {
	local sc=$1
	rec "rssanon_${sc}_mb" "$(status_mb "${L_PID[$sc]}" RssAnon)"
	rss "list_${sc}_kernelindexd" "${L_PID[$sc]}"
	rec "store_${sc}_bytes_per_run" \
	    "$(($(stat -c %s "${L_DIR[$sc]}/data.mdb") / ${L_TOTAL[$sc]}))"
	info "store_${sc}_bytes" "$(stat -c %s "${L_DIR[$sc]}/data.mdb")"
}

start_ki "$LD" --sync false --map-size 64G
"$KI_CLI" --server "http://127.0.0.1:$KI_PORT" import liger "$CSV" \
    >/dev/null || die "the Liger import failed"
out=$($PY load "$KI_PORT" "$T/liger.ndjson" 0 $((SMALL - CSV_ROWS)) 600)
say "  loaded to $SMALL runs: $out"
stop "$KI_PID"
# The small store stays as it is; the large one grows from a copy of it.
cp -a "$LD" "$T/small"
start_ki "$T/small" --map-size 64G
rec ready_small_ms "$(awk -v s="$KI_READY_S" 'BEGIN {printf "%.1f", s * 1000}')"
stop "$KI_PID"

# The large store: kernelindex-gen copies the small store's runs (each copy
# renamed, its externalId and digest new, everything else as the daemon
# rendered it; checkgen below compares copies with real uploads), within
# 85% of the free disk at the bytes per run of a 200,000-run store.
avail=$(df -B1 --output=avail "$T" | tail -1)
per=${KI_BENCH_BYTES_PER_RUN:-6000}
fit=$((avail * 85 / 100 / per))
LARGE=$TARGET_RUNS
if [ "$fit" -lt "$LARGE" ]; then
	note "the disk holds about $fit runs (at $per bytes a run in 85% of" \
	    "$avail free bytes): aiming for $fit, not $LARGE"
	LARGE=$fit
fi
info list_target_runs "$LARGE"
t0=$(date +%s%N)
out=$("$GEN" "$LD" "$LARGE") || die "kernelindex-gen failed: $out"
t1=$(date +%s%N)
say "  generated: $out"
made=$(printf '%s\n' "$out" | sed -n 's/.*made=\([0-9]*\).*/\1/p')
rec gen_rps "$(awk -v n="$made" -v d=$((t1 - t0)) 'BEGIN {printf "%.0f", n / (d / 1e9)}')"
# Drop the page cache's copy of the store, so that the open is timed cold.
sync
echo 1 >/proc/sys/vm/drop_caches 2>/dev/null || note "page cache not dropped"
# The two list daemons share CPU 1 and the client runs on CPU 0 (on a
# machine of two or more CPUs): otherwise where the scheduler happens to
# place each daemon's threads against the client's changed a small query's
# time by up to 2.6x between two daemons serving the same store.
L_PIN=() L_CLIENT_PIN=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	L_PIN=(taskset -c 1) L_CLIENT_PIN=(taskset -c 0)
	info list_pinning "daemons on CPU 1, client on CPU 0"
fi
KI_WRAP=("${L_PIN[@]}")
start_ki "$LD" --map-size 256G
KI_WRAP=()
rec ready_large_ms "$(awk -v s="$KI_READY_S" 'BEGIN {printf "%.1f", s * 1000}')"
L_KI[large]=$KI L_PORT[large]=$KI_PORT L_PID[large]=$KI_PID L_DIR[large]=$LD
start_ki "$T/fresh"
out=$($PY checkgen "${L_KI[large]}" "$KI" "$T/liger.ndjson" "$SMALL" 1) ||
    die "generated runs differ from uploads: $out"
say "  generated runs are what uploads make: $out"
stop "$KI_PID"
KI_WRAP=("${L_PIN[@]}")
start_ki "$T/small" --map-size 64G
KI_WRAP=()
L_KI[small]=$KI L_PORT[small]=$KI_PORT L_PID[small]=$KI_PID
L_DIR[small]=$T/small
list_prep small
list_prep large
# Both stores are measured side by side, request by request (list_round).
for i in $(seq $REPS); do
	list_round
	continue_round
done
list_done small
list_done large
stop "${L_PID[small]}"
stop "${L_PID[large]}"
rm -rf "$LD" "$T/small"

# =====================================================================
say "== 5. watch fan-out while runs are written"
start_ki "$T/watch" --max-connections 4096 --max-per-ip 0 --map-size 16G
curl -sS -o /dev/null -H 'Content-Type: application/json' \
    --data-binary @"$SEED" "$KI/benchmarkruns"
info watch_rate "$WATCH_RATE"
for n in 0 100 1000; do
	if [ "$n" = 1000 ] && [ "${watch_ok:-0}" != 1 ]; then
		note "1,000 watchers skipped: 100 watchers did not all get every event"
		break
	fi
	out=$("$T/fanout" 127.0.0.1 "$KI_PORT" "$n" "$API/benchmarkruns" \
	    "$T/bundle.tpl" "w$n" "$WATCH_RATE" 16 "$WATCH_D" "$REPS") ||
	    die "fanout failed: $out"
	printf '%s\n' "$out" | sed 's/^/  /' >&2
	streaming=$(printf '%s\n' "$out" | sed -n 's/^KIWATCHERS .*streaming=\([0-9]*\).*/\1/p')
	[ "$streaming" = "$n" ] || note "$n watchers: only $streaming streaming"
	watch_ok=1
	while read -r line; do
		W_rps= W_p50_us= W_p99_us= W_complete= W_drain_ms= W_failed=0
		eval "$(printf '%s\n' "${line#KIWATCH }" | tr ' ' '\n' |
		    grep -E '^[a-z0-9_]+=[0-9.]+$' | sed 's/^/W_/')"
		rec "watch_${n}_rps" "$W_rps"
		rec "watch_${n}_p50_us" "$W_p50_us"
		rec "watch_${n}_p99_us" "$W_p99_us"
		if [ "$n" != 0 ]; then
			rec "watch_${n}_complete" "$W_complete"
			rec "watch_${n}_drain_ms" "$W_drain_ms"
			[ "$W_complete" = "$n" ] || watch_ok=0
		fi
		[ "$W_failed" = 0 ] || note "watch $n: $W_failed writes failed"
	done <<EOF
$(printf '%s\n' "$out" | grep '^KIWATCH ')
EOF
	rss "watch_${n}_kernelindexd" "$KI_PID"
done
stop "$KI_PID"

# =====================================================================
TOUCH_AT_END=$($PY touch 512)
WALL=$(($(date +%s) - START_S))
GIT=$(cd "$TOP" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(cd "$TOP" && git status --porcelain -- . ':!bench' 2>/dev/null)" ]
then
	GIT="$GIT + uncommitted changes"
fi
{
	echo "# kernelindexd side by side with its peers"
	echo
	echo "Written by \`bench/run.sh\`; bench/README.md says what each row"
	echo "measures. Client and servers share the machine's CPUs."
	echo
	echo "- machine: $(nproc) CPUs ($MODEL), $MEM, Linux $(uname -r), $OS"
	echo "- load average when the suite started: $LOAD_AT_START"
	# CPU time the hypervisor gave to others over the suite (steal), of
	# all CPU time: what the machine took away from the measurements.
	echo "- CPU time stolen by the hypervisor during the suite: $(printf '%s\n%s\n' \
	    "$CPU_AT_START" "$(head -1 /proc/stat)" | awk '
		{ t = 0; for (i = 2; i <= NF; i++) t += $i; tot[NR] = t; st[NR] = $9 }
		END { d = tot[2] - tot[1]; printf "%.1f%%", (d > 0 ? (st[2] - st[1]) * 100 / d : 0) }')"
	echo "- first write to a 4 KB page of new memory (512 MB of them):" \
	    "$TOUCH_AT_START µs at the start of the suite, $TOUCH_AT_END µs at its end"
	echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "- command: \`bench/run.sh\` (KI_BENCH_RUNS=$TARGET_RUNS)"
	echo "- kernelindexd: $("$KI_DAEMON" --version 2>&1 | head -1)," \
	    "source $GIT, allocator" \
	    "$(ldd "$KI_DAEMON" 2>/dev/null | awk '/libmimalloc|libjemalloc/ {sub(/\.so.*/, "", $1); sub(/^lib/, "", $1); print $1; f = 1} END {if (!f) print "glibc"}')"
	echo "- peers: $("$NGINX" -v 2>&1 | sed 's/.*version: //'), etcd" \
	    "$(etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p')," \
	    "$(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
	echo "- wall time of the suite: ${WALL} s"
	echo "- medians of $REPS runs"
	echo
} >"$T/header.md"
cp "$T/header.md" "$OUTFILE"
$PY table "$RES" "$T/table.md" >/dev/null
cat "$T/table.md" >>"$OUTFILE"
# Every figure of every run, for a later look or another table.
[ "$OUTFILE" = /dev/null ] || cp "$RES" "${OUTFILE%.md}-raw.txt"
echo
cat "$T/table.md"
say
say "wrote $OUTFILE (wall time ${WALL} s)"
