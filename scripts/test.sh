#!/bin/sh
# scripts/test.sh — the whole test suite: an optimized build with warnings as
# errors; an ASan+UBSan build (warnings as errors) that runs the unit,
# fuzz-corpus and end-to-end tests; the web page in headless Chromium; the
# unit and end-to-end tests again under valgrind on the optimized build; and
# `make distcheck` (the tarball builds out of its read-only source tree and
# passes the unit tests, the fuzz corpora and the seed check). Every build is
# out of the source tree, under build/. Exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
./scripts/deps.sh --test
# A tree configured in place (by hand) keeps VPATH builds from configuring.
if [ -f config.status ]; then
	echo "== cleaning the build configured in the source tree"
	if [ -f Makefile ]; then make -s distclean; else rm -f config.status; fi
fi
autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
jobs=$(nproc)

# configure_in DIR OPTION...: configures DIR (made if missing) out of tree.
# When DIR was configured before with other options, its objects are removed
# so that every one is compiled with the options asked for.
configure_in() {
	dir=$1
	shift
	mkdir -p "$dir"
	old=
	[ -f "$dir/config.status" ] && old=$("$dir/config.status" --config)
	(cd "$dir" && "$top/configure" -q "$@")
	if [ -n "$old" ] && [ "$old" != "$("$dir/config.status" --config)" ]; then
		(cd "$dir" && make -s clean)
	fi
}

echo "== optimized build (-O2, warnings are errors)"
configure_in build/release --enable-werror CFLAGS="-O2 -g"
(cd build/release && make -s -j"$jobs")

echo "== ASan+UBSan build and tests"
configure_in build/asan --enable-werror --enable-sanitizers CFLAGS="-O1 -g"
cd build/asan
make -s -j"$jobs"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=23"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
if ! make -s check -j1; then
	for f in $(find tests -name '*.log' 2>/dev/null); do
		echo "---- $f"; tail -n 60 "$f"
	done
	exit 1
fi
for f in tests/unit/unit_tests.log tests/fuzz/*.log tests/e2e/*.log \
	tests/etcd/e2e.sh.log; do
	[ -f "$f" ] && grep -E "passed, [0-9]+ failed|Run Summary|asserts" "$f" || true
done
cd "$top"

echo "== the web page in headless Chromium"
KI_DAEMON="$top/build/asan/kernelindexd" KI_SRCDIR="$top" \
	KI_CLI="$top/build/asan/kernelindex" KI_DATA_DIR="$top/tests/data" \
	KI_BROWSER_STRICT=1 tests/browser/run.sh > build/asan/browser.log 2>&1 ||
	{ tail -n 80 build/asan/browser.log; exit 1; }
tail -n 1 build/asan/browser.log

echo "== valgrind: unit and end-to-end tests on the optimized build"
(cd build/release && make -s -j"$jobs" tests/unit/unit_tests)
export KI_DATA_DIR="$top/tests/data"
valgrind -q --error-exitcode=1 --leak-check=full \
	--errors-for-leak-kinds=definite --show-leak-kinds=definite \
	--suppressions=tests/e2e/valgrind.supp \
	build/release/tests/unit/unit_tests > build/release/valgrind-unit.log 2>&1 ||
	{ tail -n 80 build/release/valgrind-unit.log; exit 1; }
grep -E "asserts" build/release/valgrind-unit.log
export KI_REAL_DAEMON="$top/build/release/kernelindexd"
export KI_DAEMON="$top/tests/e2e/valgrind-daemon.sh"
export KI_CLI="$top/build/release/kernelindex"
export KI_REF="$top/build/release/kernelindex-ref"
for t in test_api test_api_server test_features test_auth test_backup \
	test_kubectl; do
	python3 "tests/e2e/$t.py" > "build/release/valgrind-$t.log" 2>&1 ||
		{ tail -n 80 "build/release/valgrind-$t.log"; exit 1; }
	tail -n 1 "build/release/valgrind-$t.log"
done
unset KI_REAL_DAEMON KI_DAEMON KI_CLI KI_REF KI_DATA_DIR

echo "== make distcheck (unit tests, fuzz corpora and the seed check)"
(cd build/release && make -s distcheck-quick) > build/release/distcheck.log 2>&1 ||
	{ tail -n 80 build/release/distcheck.log; exit 1; }
grep -E "^(PASS|FAIL|ERROR|# TOTAL)|archives ready" build/release/distcheck.log
echo "all tests passed"
