#!/bin/sh
# scripts/quickstart.sh — installs what is needed, builds, and runs
# kernelindexd on an embedded LMDB store under ./data, on 127.0.0.1:8080.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure CFLAGS="-O2 -g"
make -j"$(nproc)"
mkdir -p data
exec ./kernelindexd --listen 127.0.0.1:8080 --data-dir ./data --static-dir ./static "$@"
