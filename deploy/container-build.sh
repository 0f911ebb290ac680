#!/bin/sh
# deploy/container-build.sh — the container image's build steps, in one
# place: deploy/Containerfile's build stage runs "build", and the tests run
# "ci" on the host (no container engine needed), which builds the same way
# into a temporary directory, checks the installed tree and runs the
# installed daemon as a user other than root.
#   container-build.sh build SRC DESTDIR   configure, make, make install
#   container-build.sh check DESTDIR       the installed tree is complete
#   container-build.sh run DESTDIR         it serves, as a non-root user
#   container-build.sh ci [SRC]            the three in a temporary directory
#   container-build.sh packages build|runtime   each stage's Debian packages
#   container-build.sh uid                 the image's user and group id
set -eu

# What the image is built with (deploy/Containerfile repeats the package
# lists and the user id; tests/deploy/test_container.py compares them).
PREFIX=/usr
SYSCONFDIR=/etc
LOCALSTATEDIR=/var
IMAGE_UID=10001
BUILD_PACKAGES="build-essential autoconf automake libtool pkg-config
libmicrohttpd-dev libjson-c-dev liblmdb-dev libssl-dev zlib1g-dev
libmimalloc-dev libsystemd-dev libcunit1-dev libcurl4-openssl-dev python3"
RUNTIME_PACKAGES="libmicrohttpd12 libjson-c5 liblmdb0 libssl3 zlib1g
libmimalloc2.0 libsystemd0 libcurl4 ca-certificates"
# In every debian:12 image already.
BASE_PACKAGES="libc6 libgcc-s1 libstdc++6"

die() {
	echo "container-build.sh: $*" >&2
	exit 1
}

# build SRC DESTDIR: the image's configure, make and make install, out of
# the source tree (autoreconf first where SRC has no configure: a git
# checkout).
build() {
	src=$(cd "$1" && pwd)
	dest=$2
	[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi)
	obj=${BUILD_DIR:-$src/build/image}
	mkdir -p "$obj"
	(cd "$obj" &&
		"$src/configure" -q --prefix="$PREFIX" --sysconfdir="$SYSCONFDIR" \
			--localstatedir="$LOCALSTATEDIR" --with-systemd=yes \
			--with-allocator=mimalloc CFLAGS="-O2 -g" &&
		make -s -j"$(nproc)" &&
		make -s install DESTDIR="$dest" >/dev/null)
}

# check DESTDIR: every part of the installed tree the image needs.
check() {
	d=$1
	for f in bin/kernelindexd bin/kernelindex bin/kernelindex-ref; do
		[ -x "$d$PREFIX/$f" ] || die "missing $PREFIX/$f"
	done
	for f in share/kernelindex/static/index.html \
	    share/kernelindex/static/js/app.js \
	    share/man/man8/kernelindexd.8 share/man/man1/kernelindex.1 \
	    lib/systemd/system/kernelindexd.service \
	    lib/sysusers.d/kernelindex.conf; do
		[ -s "$d$PREFIX/$f" ] || die "missing $PREFIX/$f"
	done
	conf=$d$SYSCONFDIR/kernelindex/kernelindexd.conf
	[ -s "$conf" ] || die "missing $SYSCONFDIR/kernelindex/kernelindexd.conf"
	# The installed unit and configuration name this prefix's paths.
	grep -q "^ExecStart=$PREFIX/bin/kernelindexd --config $SYSCONFDIR/kernelindex/kernelindexd.conf" \
	    "$d$PREFIX/lib/systemd/system/kernelindexd.service" ||
		die "the installed unit does not run $PREFIX/bin/kernelindexd"
	"$d$PREFIX/bin/kernelindexd" --config "$conf" --check >/dev/null ||
		die "the installed configuration fails --check"
	"$d$PREFIX/bin/kernelindexd" --help | grep -q "(default $PREFIX/share/kernelindex/static)" ||
		die "the daemon does not look for the page in $PREFIX/share/kernelindex/static"
	# Every shared library the programs link comes from a runtime package
	# (or from debian:12 itself: libc6 and the like); apt brings what those
	# libraries need in turn.
	if command -v dpkg >/dev/null 2>&1; then
		for prog in kernelindexd kernelindex kernelindex-ref; do
			bin=$d$PREFIX/bin/$prog
			for so in $(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}'); do
				ldd "$bin" | awk -v so="$so" '$1 == so && $3 ~ /^\// {print $3}'
			done
		done | sort -u > "$d.libs"
		for lib in $(cat "$d.libs"); do
			pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null ||
				dpkg -S "$lib" 2>/dev/null) || die "$lib: in no Debian package"
			pkg=${pkg%%:*}
			case " $(echo $RUNTIME_PACKAGES $BASE_PACKAGES) " in
			*" $pkg "*) ;;
			*) die "$lib ($pkg) is neither a runtime package nor in debian:12" ;;
			esac
		done
		rm -f "$d.libs"
	fi
	echo "installed tree complete: $d"
}

# run DESTDIR: the installed daemon, as nobody when run as root (as the
# image's user otherwise), serves the API and the page from the installed
# tree, and stops cleanly on SIGTERM.
run() {
	d=$1
	work=$(mktemp -d)
	chmod 0755 "$work"
	mkdir "$work/data"
	as=""
	if [ "$(id -u)" -eq 0 ]; then
		chown nobody "$work/data"
		as="setpriv --reuid=nobody --regid=nogroup --clear-groups --"
	fi
	$as "$d$PREFIX/bin/kernelindexd" --config "$d$SYSCONFDIR/kernelindex/kernelindexd.conf" \
	    --listen 127.0.0.1:0 --data-dir "$work/data" \
	    --static-dir "$d$PREFIX/share/kernelindex/static" \
	    --ref-program "$d$PREFIX/bin/kernelindex-ref" >"$work/log" 2>&1 &
	pid=$!
	port=""
	i=0
	while [ -z "$port" ] && [ $i -lt 100 ]; do
		port=$(sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$work/log")
		kill -0 $pid 2>/dev/null || break
		[ -n "$port" ] || sleep 0.1
		i=$((i + 1))
	done
	rc=0
	if [ -z "$port" ]; then
		echo "the installed daemon did not start:" >&2
		cat "$work/log" >&2
		rc=1
	else
		uid=$(ps -o uid= -p $pid | tr -d ' ')
		[ "$uid" != 0 ] || { echo "the daemon runs as root" >&2; rc=1; }
		url=http://127.0.0.1:$port
		[ "$(curl -s -o /dev/null -w '%{http_code}' $url/readyz)" = 200 ] ||
			{ echo "GET /readyz is not 200" >&2; rc=1; }
		curl -s $url/ | grep -qi '<!doctype html' ||
			{ echo "GET / is not the page" >&2; rc=1; }
		"$d$PREFIX/bin/kernelindex" --server $url list benchmarkruns >/dev/null 2>&1 ||
			{ echo "the installed CLI cannot list" >&2; rc=1; }
		[ "$(stat -c %u "$work/data/data.mdb")" = "$uid" ] ||
			{ echo "the store is not the daemon user's" >&2; rc=1; }
	fi
	kill -TERM $pid 2>/dev/null || true
	wait $pid || { echo "the daemon exited with $? on SIGTERM" >&2; rc=1; }
	[ $rc -eq 0 ] && echo "installed daemon served as uid $uid on port $port"
	rm -rf "$work"
	return $rc
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
build) [ $# -eq 2 ] || die "usage: build SRC DESTDIR"; build "$1" "$2" ;;
check) [ $# -eq 1 ] || die "usage: check DESTDIR"; check "$1" ;;
run) [ $# -eq 1 ] || die "usage: run DESTDIR"; run "$1" ;;
ci)
	src=${1:-$(dirname "$0")/..}
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	chmod 0755 "$tmp"
	BUILD_DIR=$tmp/build build "$src" "$tmp/root"
	check "$tmp/root"
	run "$tmp/root"
	;;
packages)
	case ${1:-} in
	build) echo $BUILD_PACKAGES ;;
	runtime) echo $RUNTIME_PACKAGES ;;
	*) die "usage: packages build|runtime" ;;
	esac ;;
uid) echo $IMAGE_UID ;;
*) die "usage: build SRC DESTDIR | check DESTDIR | run DESTDIR | ci [SRC] | packages build|runtime | uid" ;;
esac
