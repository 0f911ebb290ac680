#!/bin/sh
# tests/fuzz/run.sh — fuzzes one target (built by tests/fuzz/build.sh).
#
#   tests/fuzz/run.sh TARGET SECONDS [LIBFUZZER-OPTION...]
#       fuzzes TARGET for SECONDS in one process, growing the working corpus
#       build/fuzz/work/TARGET from the committed one (and from
#       build/fuzz/seeds/TARGET where make_seeds.py wrote it); crashes and
#       leaks land in build/fuzz/artifacts/TARGET/.
#   tests/fuzz/run.sh --merge TARGET
#       merges the working corpus into tests/fuzz/corpus/TARGET, keeping
#       only inputs that add edge coverage (libFuzzer -merge=1 with
#       -use_counters=0: hit counts would keep thousands of files).
#
# FUZZ_BUILD_DIR overrides build/fuzz. Leaks are checked (-detect_leaks=1).
# UBSAN_OPTIONS and ASAN_OPTIONS given in the environment are kept (a
# suppressions= file there sets a known finding aside); by default every
# UBSan report stops the run. FUZZ_KNOWN (see fuzz.h) tolerates the known
# broken properties it names, to look past them before they are fixed.
set -eu
: "${UBSAN_OPTIONS:=halt_on_error=1:print_stacktrace=1}"
export UBSAN_OPTIONS

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${FUZZ_BUILD_DIR:-$top/build/fuzz}

usage() {
	echo "usage: $0 TARGET SECONDS [OPTION...] | $0 --merge TARGET" >&2
	exit 2
}

[ $# -ge 2 ] || usage
if [ "$1" = "--merge" ]; then
	t=$2
	[ -x "$out/$t" ] || { echo "run.sh: build $t first (build.sh)" >&2; exit 2; }
	mkdir -p "$here/corpus/$t"
	exec "$out/$t" -merge=1 -use_counters=0 -rss_limit_mb=4096 -max_len="$(
		case $t in fuzz_selector) echo 1024;; *) echo 24576;; esac)" \
		"$here/corpus/$t" "$out/work/$t"
fi

t=$1
secs=$2
shift 2
[ -x "$out/$t" ] || { echo "run.sh: build $t first (build.sh)" >&2; exit 2; }
case $t in
fuzz_selector) max_len=1024 ;;
*) max_len=24576 ;;
esac
work="$out/work/$t"
art="$out/artifacts/$t"
mkdir -p "$work" "$art"
set -- -max_total_time="$secs" -max_len="$max_len" -rss_limit_mb=4096 \
	-timeout=25 -detect_leaks=1 -print_final_stats=1 -artifact_prefix="$art/" "$@"
[ -f "$here/$t.dict" ] && set -- -dict="$here/$t.dict" "$@"
seeds=""
[ -d "$out/seeds/$t" ] && seeds="$out/seeds/$t"
# One process in the foreground (what -jobs=1 amounts to, with the log on
# this command's output). New inputs go to the working corpus only.
exec "$out/$t" "$@" "$work" "$here/corpus/$t" $seeds
