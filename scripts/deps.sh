#!/bin/sh
# scripts/deps.sh — installs the Debian 12 packages kernelindex needs.
#   scripts/deps.sh          to build and run
#   scripts/deps.sh --test   also what the test suite needs
set -eu
pkgs="build-essential autoconf automake libtool pkg-config
libmicrohttpd-dev libjson-c-dev liblmdb-dev lmdb-utils libssl-dev zlib1g-dev
libmimalloc-dev libjemalloc-dev
libcunit1-dev libcurl4-openssl-dev python3 curl ca-certificates openssl"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ "${1:-}" = "--test" ]; then
	# Tools that may come from elsewhere than Debian count when present.
	command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
	command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
	command -v node >/dev/null 2>&1 || missing="$missing nodejs"
	command -v npm >/dev/null 2>&1 || missing="$missing npm"
	# tests/e2e/test_http.py reads YAML answers back.
	dpkg-query -W -f='${Status}\n' python3-yaml 2>/dev/null |
		grep -q "ok installed" || missing="$missing python3-yaml"
fi
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
