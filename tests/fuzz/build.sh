#!/bin/sh
# tests/fuzz/build.sh — builds the libFuzzer targets with clang into
# build/fuzz/ (or $FUZZ_BUILD_DIR): fuzz_document, fuzz_selector,
# fuzz_router, each with ASan, UBSan and libFuzzer. The library sources are
# compiled here with clang too (coverage-instrumented), rather than linking
# the gcc-built libkernelindex.a. Usage: tests/fuzz/build.sh [TARGET...]
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${FUZZ_BUILD_DIR:-$top/build/fuzz}
CC=${CLANG:-clang}
jobs=${JOBS:-2}

if ! command -v "$CC" >/dev/null 2>&1; then
	echo "build.sh: $CC not found (apt-get install -y clang)" >&2
	exit 2
fi
version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' \
	"$top/configure.ac")
pkgs="json-c libmicrohttpd lmdb libcrypto zlib libcurl"
pkg_cflags=$(pkg-config --cflags $pkgs 2>/dev/null || echo "-I/usr/include/json-c")
pkg_libs=$(pkg-config --libs $pkgs 2>/dev/null ||
	echo "-ljson-c -lmicrohttpd -llmdb -lcrypto -lz -lcurl")

# UBSan stays recoverable so that a UBSAN_OPTIONS suppressions file can set
# a known finding aside; run.sh sets halt_on_error=1, so any other report
# still stops the run as a crash.
san="-fsanitize=address,undefined"
common="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 \
	-fno-omit-frame-pointer -Wall -Wextra -Wno-unused-parameter \
	-I$top $pkg_cflags -DPACKAGE_VERSION=\"$version\""
# The library: instrumented for coverage, not linked with libFuzzer's main.
libflags="$common $san -fsanitize=fuzzer-no-link"

srcs=$(cd "$top" && ls lib/*.c physics/*.c api/*.c store/*.c server/*.c |
	grep -v -e '^server/main\.c$' -e '^server/http\.c$')

# FUZZ_OVERRIDE_DIR: a file there (same relative path, e.g. api/patch.c)
# is compiled instead of the repository's, to look past a known bug with a
# local fix before the fix lands. Its objects go to their own folder.
override=${FUZZ_OVERRIDE_DIR:-}
if [ -n "$override" ]; then
	override=$(cd "$override" && pwd)
	objdir="$out/obj-override"
else
	objdir="$out/obj"
fi
mkdir -p "$objdir"

# Compile the library objects that are older than their sources or headers
# (a simple rule: any header newer than the object rebuilds it).
newest_h=$(cd "$top" && ls -t lib/*.h physics/*.h api/*.h store/*.h server/*.h | head -1)
objs=""
pids=""
n=0
for s in $srcs; do
	o="$objdir/$(echo "$s" | tr / _ | sed 's/\.c$/.o/')"
	src="$top/$s"
	[ -n "$override" ] && [ -f "$override/$s" ] && src="$override/$s"
	objs="$objs $o"
	if [ ! -f "$o" ] || [ "$src" -nt "$o" ] || [ "$top/$newest_h" -nt "$o" ]
	then
		$CC $libflags -c "$src" -o "$o" &
		pids="$pids $!"
		n=$((n + 1))
		if [ "$n" -ge "$jobs" ]; then
			for p in $pids; do wait "$p"; done
			pids=""
			n=0
		fi
	fi
done
for p in $pids; do wait "$p"; done

targets=${*:-fuzz_document fuzz_selector fuzz_router}
for t in $targets; do
	$CC $common $san -fsanitize=fuzzer \
		"$here/$t.c" "$here/fuzz_common.c" $objs \
		$pkg_libs -lpthread -lm -o "$out/$t"
	echo "built $out/$t"
done
