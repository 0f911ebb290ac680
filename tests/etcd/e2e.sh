#!/bin/sh
# tests/etcd/e2e.sh — end-to-end suites with every daemon over etcd: starts
# a loopback etcd (start.sh), runs each test named (a path under
# tests/e2e; default: two daemons over one etcd, test_replicas.py, and
# the e2e suites that start the daemon through tests/e2e/kitest.py) with
# KI_ETCD_ENDPOINTS set, so that kitest adds --store etcd, and stops etcd
# by its PID. Takes the environment make check gives the e2e tests
# (KI_DAEMON, KI_DATA_DIR, KI_SRCDIR). Exit status: the number of suites
# that failed (77 when etcd is not installed).
set -u
# Not by default: test_api_server.py (a 100,000-line upload, too slow
# over etcd), test_restart.py, test_backup.py, test_crash.py and
# test_integrity.py (they damage, fill or copy LMDB's own files).
tests=${*:-../etcd/test_replicas.py test_api.py test_features.py \
test_http.py test_kubectl.py}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
line=$("$here/start.sh")
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
set -- $line
endpoint=$1 pid=$2 dir=$3
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
failed=0
for t in $tests; do
	if KI_ETCD_ENDPOINTS=$endpoint ${PYTHON3:-python3} "$top/tests/e2e/$t" \
	    >"$dir/$t.log" 2>&1; then
		echo "PASS $t (store etcd)"
	else
		echo "FAIL $t (store etcd):"
		tail -n 30 "$dir/$t.log"
		failed=$((failed + 1))
	fi
done
exit "$failed"
