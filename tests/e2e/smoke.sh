#!/bin/sh
# smoke.sh — runs the shared seed check (checks/smoke.py) against kernelindexd.
#
# Environment: PYTHON3 (default python3), KI_DAEMON (default: the ASan build
# of this repository), KI_SHARED_DIR (default: ../shared next to the
# repository).
set -u
here=$(cd "$(dirname "$0")" && pwd)
PYTHON3=${PYTHON3:-python3}
KI_SHARED_DIR=${KI_SHARED_DIR:-$here/../../../shared}
KI_DAEMON=${KI_DAEMON:-$here/../../build/asan/kernelindexd}
check=$KI_SHARED_DIR/checks/smoke.py
if [ ! -f "$check" ]; then
	echo "smoke.sh: $check is missing (set KI_SHARED_DIR)" >&2
	exit 1
fi
if [ ! -x "$KI_DAEMON" ]; then
	echo "smoke.sh: no daemon at $KI_DAEMON (set KI_DAEMON)" >&2
	exit 1
fi
"$PYTHON3" "$check" "$KI_DAEMON" || exit 1
