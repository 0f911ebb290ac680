#!/bin/sh
# tests/e2e/valgrind-daemon.sh — runs kernelindexd (KI_REAL_DAEMON) under
# valgrind for the end-to-end tests: memory errors and definite leaks are
# printed to stderr, where the tests look for them. The daemon may be linked
# with mimalloc or jemalloc: valgrind replaces their malloc as it does
# glibc's.
exec valgrind -q --leak-check=full --errors-for-leak-kinds=definite \
	--soname-synonyms=somalloc='*malloc.so*' \
	--show-leak-kinds=definite --num-callers=30 \
	--suppressions="$(dirname "$0")/valgrind.supp" \
	"$KI_REAL_DAEMON" "$@"
