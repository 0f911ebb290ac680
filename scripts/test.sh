#!/bin/sh
# scripts/test.sh — the whole test suite: an ASan+UBSan build with warnings
# as errors runs the unit, end-to-end and browser tests; an optimized build
# must compile without warnings too. Exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
./scripts/deps.sh --test
autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
jobs=$(nproc)

echo "== optimized build (-O2, warnings are errors)"
mkdir -p build/release
(cd build/release && "$top/configure" -q --enable-werror CFLAGS="-O2 -g" &&
	make -s -j"$jobs")

echo "== ASan+UBSan build and tests"
mkdir -p build/asan
cd build/asan
"$top/configure" -q --enable-werror --enable-sanitizers CFLAGS="-O1 -g"
make -s -j"$jobs"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=23"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
if ! make -s check -j1; then
	for f in $(find tests -name '*.log' 2>/dev/null); do
		echo "---- $f"; tail -n 60 "$f"
	done
	exit 1
fi
for f in tests/unit/unit_tests.log tests/fuzz/*.log tests/e2e/*.log; do
	[ -f "$f" ] && grep -E "passed, [0-9]+ failed|Run Summary|asserts" "$f" || true
done
cd "$top"

echo "== the web page in headless Chromium"
KI_DAEMON="$top/build/asan/kernelindexd" KI_SRCDIR="$top" \
	KI_CLI="$top/build/asan/kernelindex" KI_SHARED_DIR="$top/../shared" \
	KI_BROWSER_STRICT=1 tests/browser/run.sh > build/asan/browser.log 2>&1 ||
	{ tail -n 80 build/asan/browser.log; exit 1; }
tail -n 1 build/asan/browser.log

echo "== valgrind: unit and end-to-end tests on the optimized build"
(cd build/release && make -s -j"$jobs" tests/unit/unit_tests)
export KI_SHARED_DIR="$top/../shared"
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
echo "all tests passed"
