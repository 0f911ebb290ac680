#!/bin/sh
# tests/etcd/e2e.sh — the end-to-end suites with every daemon over etcd:
# starts a loopback etcd (start.sh), runs each suite named with
# KI_ETCD_ENDPOINTS set, so that tests/e2e/kitest.py (and smoke.py, the
# Node client's test) starts every daemon, and every daemon command
# (token, backup, fsck), with --store etcd under a key prefix of its own,
# and stops etcd by its PID.
#
# Usage: tests/etcd/e2e.sh [SUITE...]. A suite is a path under the source
# tree (tests/e2e/test_api.py) or under tests/e2e (test_api.py); *.py runs
# with $PYTHON3, *.sh with /bin/sh. Default: every end-to-end suite that
# starts daemons, below. Cases of a suite that test LMDB's own files (bytes
# flipped in data.mdb, its map filling up, a full disk under the data
# directory, restoring data.mdb) skip themselves over etcd and say why
# (kitest.lmdb_only). Not here: tests/etcd/test_migrate.py and
# test_cluster.py (they choose their stores and start their own etcd),
# test_store_config.py (--check only) and client/test_kernelindex_client.py
# (no daemon).
#
# Takes the environment make check gives the end-to-end tests (KI_DAEMON,
# KI_CLI, KI_REF, KI_DATA_DIR, KI_SRCDIR). Prints one line per suite and
# the whole log of a suite that failed. Exit status: 0, 1 when a suite
# failed, 77 (skip) when etcd is not installed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
suites=${*:-tests/etcd/test_replicas.py tests/etcd/test_cache_lists.py \
tests/e2e/smoke.py \
tests/e2e/test_api.py tests/e2e/test_api_server.py \
tests/e2e/test_features.py tests/e2e/test_kubectl.py tests/e2e/test_auth.py \
tests/e2e/test_backup.py tests/e2e/test_crash.py tests/e2e/test_restart.py \
tests/e2e/test_integrity.py tests/e2e/test_adversary.py \
tests/e2e/test_docs.py tests/e2e/test_http.py tests/e2e/test_regress.py \
tests/e2e/test_harness.py tests/e2e/test_verifier_pool.py \
tests/e2e/test_verify.py tests/e2e/test_verify_linear.py \
tests/e2e/test_verify_attn.py tests/clients/test_python_client.py \
tests/clients/node.sh tests/clients/test_kubectl_client.py \
tests/clients/test_conventions.py}
# etcd's directory in memory where there is one (/dev/shm): these suites
# test the daemons, not etcd's disk, and an fsync per commit on a busy
# disk would make them slow and their time vary with the machine's load.
etcd_tmp=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && etcd_tmp=/dev/shm
line=$(TMPDIR=$etcd_tmp "$here/start.sh")
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
set -- $line
endpoint=$1 pid=$2 dir=$3
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
trap 'exit 1' HUP INT PIPE TERM
failed=0
for t in $suites; do
	path=$top/$t
	[ -f "$path" ] || path=$top/tests/e2e/$t
	# One log per suite in etcd's directory, named after the whole path.
	log=$dir/$(printf '%s' "$t" | tr '/' '_').log
	case $t in
	*.sh) run=/bin/sh ;;
	*) run=${PYTHON3:-python3} ;;
	esac
	start=$(date +%s)
	if KI_ETCD_ENDPOINTS=$endpoint $run "$path" >"$log" 2>&1; then
		echo "PASS $t (store etcd, $(($(date +%s) - start)) s):" \
			"$(grep -E 'passed, [0-9]+ failed' "$log" | tail -n 1)"
		grep '^skip ' "$log"
	else
		echo "FAIL $t (store etcd, $(($(date +%s) - start)) s):"
		cat "$log"
		failed=$((failed + 1))
	fi
done
if ! kill -0 "$pid" 2>/dev/null; then
	echo "FAIL etcd exited during the suites:"
	tail -n 30 "$dir/etcd.log"
	failed=$((failed + 1))
fi
echo "$failed of $(echo $suites | wc -w) suites failed over etcd"
[ "$failed" -eq 0 ]
