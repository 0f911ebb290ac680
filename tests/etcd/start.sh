#!/bin/sh
# tests/etcd/start.sh [SNAPSHOT] — starts a one-member etcd on loopback in
# a new temporary directory, waits until it answers, and prints one line:
#   ENDPOINT PID DIR
# The caller stops it by PID and removes DIR (see conformance.sh). The
# limits are raised for the store: a write transaction is one etcd Txn
# holding every key it changes (--max-txn-ops, --max-request-bytes). With
# SNAPSHOT (a backup, `kernelindexd backup` over etcd), etcd starts on
# that snapshot restored (`etcdctl snapshot restore`).
set -eu
command -v etcd >/dev/null 2>&1 || { echo "etcd not found (scripts/deps.sh --test)" >&2; exit 77; }
if [ $# -gt 0 ] && ! command -v etcdctl >/dev/null 2>&1; then
	echo "etcdctl not found (scripts/deps.sh --test)" >&2
	exit 77
fi
snapshot=${1:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/ki-etcd.XXXXXX")
ports=$(python3 -c 'import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
set -- $ports
client="http://127.0.0.1:$1"
peer="http://127.0.0.1:$2"
if [ -n "$snapshot" ] && ! ETCDCTL_API=3 etcdctl snapshot restore "$snapshot" \
	--data-dir "$dir/data" --name ki --initial-cluster "ki=$peer" \
	--initial-advertise-peer-urls "$peer" >"$dir/restore.log" 2>&1; then
	echo "etcdctl snapshot restore $snapshot failed:" >&2
	cat "$dir/restore.log" >&2
	rm -rf "$dir"
	exit 1
fi
etcd --name ki --data-dir "$dir/data" \
	--listen-client-urls "$client" --advertise-client-urls "$client" \
	--listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
	--initial-cluster "ki=$peer" --initial-cluster-state new \
	--max-txn-ops 1000000 --max-request-bytes 67108864 \
	--quota-backend-bytes 8589934592 --log-level error \
	>"$dir/etcd.log" 2>&1 </dev/null &
pid=$!
i=0
until curl -fsS "$client/health" 2>/dev/null | grep -q '"health":"true"'; do
	i=$((i + 1))
	if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "etcd did not start:" >&2
		cat "$dir/etcd.log" >&2
		kill "$pid" 2>/dev/null || true
		rm -rf "$dir"
		exit 1
	fi
	sleep 0.1
done
echo "$client $pid $dir"
