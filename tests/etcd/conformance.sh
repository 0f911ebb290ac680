#!/bin/sh
# tests/etcd/conformance.sh — the store's conformance suites (store/ and
# store_model/, tests/unit/test_store*.c) against the etcd backend, and
# what only that backend has (store_etcd, test_store_etcd.c): starts
# a loopback etcd in a temporary directory (start.sh), runs the suites
# with KI_ETCD_ENDPOINTS set, and stops etcd by its PID. Exit 77 (skip)
# when etcd is not installed. Usage: tests/etcd/conformance.sh [UNIT_TESTS]
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-tests/unit/unit_tests}
line=$("$here/start.sh")
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
set -- $line
endpoint=$1 pid=$2 dir=$3
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
KI_ETCD_ENDPOINTS=$endpoint "$bin" store/etcd store_model/etcd store_etcd
