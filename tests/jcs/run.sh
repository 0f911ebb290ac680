#!/bin/sh
# tests/jcs/run.sh — the differential JCS test: installs the canonicalize
# package (tests/jcs/package-lock.json), starts kernelindexd on a free port
# with a temporary data folder, and runs diff.mjs over the daemon's parser
# and canonicalizer (tests/jcs/jcs_digest) and over the daemon itself.
#
# Environment:
#   KI_DAEMON      the kernelindexd binary (required); jcs_digest is looked
#                  for beside it, under tests/jcs/, unless KI_JCS_DIGEST is set
#   KI_SRCDIR      the source tree (default: two folders up)
# Prints "N passed, M failed" last; exits 1 on any difference.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
: "${KI_DAEMON:?set KI_DAEMON to the kernelindexd binary}"
KI_SRCDIR=${KI_SRCDIR:-$(cd "$here/../.." && pwd)}
PYTHON3=${PYTHON3:-python3}
bin=${KI_JCS_DIGEST:-$(dirname "$KI_DAEMON")/tests/jcs/jcs_digest}
[ -x "$bin" ] || { echo "no $bin: build it with make tests/jcs/jcs_digest" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ki-jcs.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# The package goes beside diff.mjs; where the source tree is read-only (make
# distcheck), both go to the temporary folder instead.
run=$here
if [ ! -w "$here" ]; then
	run=$tmp/node
	mkdir -p "$run"
	cp "$here/diff.mjs" "$here/package.json" "$here/package-lock.json" "$run/"
fi
if [ ! -d "$run/node_modules/canonicalize" ] ||
    [ "$run/package-lock.json" -nt "$run/node_modules/.package-lock.json" ]; then
	(cd "$run" && npm ci --no-audit --no-fund --loglevel=error)
fi

port=$("$PYTHON3" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/data"
"$KI_DAEMON" --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
	--static-dir "$KI_SRCDIR/static" --sync false >"$tmp/daemon.log" 2>&1 &
pid=$!
url="http://127.0.0.1:$port"
i=0
until curl -fsS "$url/readyz" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ "$i" -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "the daemon did not start:" >&2
		cat "$tmp/daemon.log" >&2
		exit 1
	fi
	sleep 0.1
done
rc=0
(cd "$run" && node diff.mjs "$bin" "$url") || rc=$?
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=
if grep -q 'ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer' "$tmp/daemon.log"; then
	echo "FAIL  sanitizer report in the daemon log:" >&2
	cat "$tmp/daemon.log" >&2
	rc=1
fi
exit "$rc"
