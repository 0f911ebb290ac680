#!/bin/sh
# tests/browser/run.sh — drives the web page in headless Chromium against a
# real kernelindexd filled with Liger-Kernel's benchmark results.
#
# Environment:
#   KI_DAEMON      the kernelindexd binary (required)
#   KI_SRCDIR      the source tree (default: two folders up); the page is
#                  served from $KI_SRCDIR/static
#   KI_DATA_DIR    the test data (default: $KI_SRCDIR/tests/data)
#   KI_REF         the reference-kernel program (default: kernelindex-ref
#                  beside KI_DAEMON, where it exists)
#   KI_CLI         the kernelindex CLI; when set, `import liger` loads the
#                  CSV, else liger_bundles.py does
#   KI_BROWSER_STRICT=1  count tests that wait on a missing endpoint as
#                  failures instead of skipping them
#   KI_SCREENSHOT_DIR    where screenshots go (default: a temp folder)
# Prints "N passed, M failed" last; exits 1 when any test failed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
: "${KI_DAEMON:?set KI_DAEMON to the kernelindexd binary}"
KI_SRCDIR=${KI_SRCDIR:-$(cd "$here/../.." && pwd)}
KI_DATA_DIR=${KI_DATA_DIR:-$KI_SRCDIR/tests/data}
PYTHON3=${PYTHON3:-python3}
export KI_SRCDIR KI_DATA_DIR

if [ ! -x /usr/bin/chromium ]; then
	echo "installing chromium" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if [ ! -d "$here/node_modules/playwright-core" ] || [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
	(cd "$here" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ki-browser.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

port=$("$PYTHON3" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/data"
KI_REF=${KI_REF:-$(dirname "$KI_DAEMON")/kernelindex-ref}
set -- --listen "127.0.0.1:$port" --data-dir "$tmp/data" --static-dir "$KI_SRCDIR/static" --sync false
if [ -x "$KI_REF" ]; then
	set -- "$@" --ref-program "$KI_REF"
fi
"$KI_DAEMON" "$@" >"$tmp/daemon.log" 2>&1 &
pid=$!
url="http://127.0.0.1:$port"
i=0
until curl -fsS "$url/readyz" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "kernelindexd did not start:" >&2
		cat "$tmp/daemon.log" >&2
		echo "0 passed, 1 failed"
		exit 1
	fi
	sleep 0.1
done

runs="$url/apis/kernelindex.dev/v1alpha1/benchmarkruns"
seed="$KI_DATA_DIR/seed/embedding-full-huggingface-a100.json"
csv="$KI_DATA_DIR/liger/all_benchmark_data.csv"
# The seed first: it is the CSV's embedding row in its own form (its
# workload and implementation digests name documents it does not carry), so
# the importer then finds that source row stored and counts it as indexed.
code=$(curl -sS -o "$tmp/seed.out" -w '%{http_code}' -H 'Content-Type: application/json' \
	--data-binary "@$seed" "$runs")
case $code in
200 | 201) ;;
*)
	echo "uploading the seed failed with $code:" >&2
	cat "$tmp/seed.out" >&2
	echo "0 passed, 1 failed"
	exit 1
	;;
esac
if [ -n "${KI_CLI:-}" ]; then
	"$KI_CLI" --server "$url" import liger "$csv" >"$tmp/import.log" 2>&1 || {
		cat "$tmp/import.log" >&2
		echo "0 passed, 1 failed"
		exit 1
	}
else
	"$PYTHON3" "$here/liger_bundles.py" "$csv" --skip-seed "$seed" --post "$runs"
fi
# A made-up release beside the real data, for the regressions view: the
# 0.2.1 rows of geglu and rms_norm re-versioned 9.9.0, Liger's larger sizes
# 1.25x slower and its smaller ones 0.9x.
"$PYTHON3" "$here/made_up_release.py" "$csv" "$tmp/made-up.csv"
if [ -n "${KI_CLI:-}" ]; then
	"$KI_CLI" --server "$url" import liger "$tmp/made-up.csv" >"$tmp/import-made-up.log" 2>&1 || {
		cat "$tmp/import-made-up.log" >&2
		echo "0 passed, 1 failed"
		exit 1
	}
else
	"$PYTHON3" "$here/liger_bundles.py" "$tmp/made-up.csv" --post "$runs"
fi

status=0
KI_URL=$url KI_SEED="$seed" KI_CSV="$csv" KI_DAEMON="$KI_DAEMON" node "$here/run.mjs" || status=$?
if [ "$status" -ne 0 ] && [ -s "$tmp/daemon.log" ]; then
	echo "--- daemon log (last lines) ---" >&2
	tail -n 20 "$tmp/daemon.log" >&2
fi
exit "$status"
