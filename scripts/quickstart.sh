#!/bin/sh
# scripts/quickstart.sh — installs what is needed, builds in build/release
# (out of the source tree, so that scripts/test.sh can build beside it), and
# runs kernelindexd in the foreground on an embedded LMDB store under ./data,
# listening on 127.0.0.1:8080. Ctrl-C (SIGINT) or SIGTERM stops it. Extra
# arguments go to kernelindexd (e.g. --listen 0.0.0.0:8080).
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
./scripts/deps.sh
# A tree configured in place (by hand) keeps VPATH builds from configuring.
if [ -f config.status ]; then
	echo "quickstart: cleaning the build configured in the source tree"
	if [ -f Makefile ]; then make -s distclean; else rm -f config.status; fi
fi
[ -x configure ] || autoreconf -fi
mkdir -p build/release
cd build/release
[ -f Makefile ] || "$top/configure" -q CFLAGS="-O2 -g"
make -s -j"$(nproc)" kernelindexd kernelindex kernelindex-ref
cd "$top"
mkdir -p data
exec build/release/kernelindexd --listen 127.0.0.1:8080 --data-dir ./data \
	--static-dir ./static --ref-program "$top/build/release/kernelindex-ref" "$@"
