#!/bin/sh
# tests/clients/node.sh — runs test_node_client.mjs, the JavaScript
# Kubernetes client against the real daemon. Installs the client pinned in
# package-lock.json (npm ci) when it is missing or older than the lock.
#
# Environment: KI_DAEMON (required), KI_SRCDIR, PYTHON3; KI_SEED (default:
# the seed bundle the end-to-end tests use).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
: "${KI_DAEMON:?set KI_DAEMON to the kernelindexd binary}"
KI_SRCDIR=${KI_SRCDIR:-$(cd "$here/../.." && pwd)}
PYTHON3=${PYTHON3:-python3}
if [ ! -d "$here/node_modules/@kubernetes/client-node" ] ||
	[ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
	(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ -z "${KI_SEED:-}" ]; then
	KI_SEED=$(cd "$here/../e2e" && "$PYTHON3" -c 'import kitest; print(kitest.SEED_PATH)')
fi
export KI_DAEMON KI_SRCDIR KI_SEED
exec node "$here/test_node_client.mjs" "$@"
