#!/bin/sh
# verify/build-cuda.sh — builds kernelindex-ref with its CUDA backend
# (nvcc, sm_90 by default) and runs the reference program's checks.
# Usage: verify/build-cuda.sh [build-dir]   (default build-ref)
# Environment: NVCC, CC, CUDA_ARCH (sm_90), JSONC_DIR (a prefix holding
# include/json-c and lib/libjson-c.a, for hosts without libjson-c-dev).
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-ref}
NVCC=${NVCC:-nvcc}
CC=${CC:-cc}
ARCH=${CUDA_ARCH:-sm_90}
mkdir -p "$B"

if [ -n "${JSONC_DIR:-}" ]; then
	JCFLAGS="-I$JSONC_DIR/include"
	JLIBS="$JSONC_DIR/lib/libjson-c.a"
elif pkg-config --exists json-c 2>/dev/null; then
	JCFLAGS=$(pkg-config --cflags json-c)
	JLIBS=$(pkg-config --libs json-c)
else
	JCFLAGS=
	JLIBS=-ljson-c
fi

CFLAGS="-std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra -Werror \
-Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
-Wmissing-declarations -Wformat=2 -Wcast-qual -Wpointer-arith -Wvla \
-Wundef -Wwrite-strings -I. $JCFLAGS"

for f in verify/ref_main.c verify/ref_json.c verify/ref_cpu.c \
    physics/costmodel.c physics/gpu.c lib/buf.c; do
	o="$B/$(basename "$f" .c).o"
	$CC $CFLAGS -c "$f" -o "$o"
done
$NVCC -arch="$ARCH" -O3 -std=c++17 -I. $JCFLAGS -Xptxas -v \
    -c verify/ref_cuda.cu -o "$B/ref_cuda.o" 2>"$B/ptxas.txt"
$NVCC -arch="$ARCH" -o "$B/kernelindex-ref" "$B/ref_main.o" \
    "$B/ref_json.o" "$B/ref_cpu.o" "$B/costmodel.o" "$B/gpu.o" \
    "$B/buf.o" "$B/ref_cuda.o" $JLIBS -lm -ldl
# The CPU-only program, for the same checks without a device.
$CC $CFLAGS verify/ref_main.c verify/ref_json.c verify/ref_cpu.c \
    verify/ref_nocuda.c physics/costmodel.c physics/gpu.c lib/buf.c \
    -o "$B/kernelindex-ref-cpu" $JLIBS -lm
echo "built $B/kernelindex-ref ($ARCH) and $B/kernelindex-ref-cpu"
verify/test-ref.sh "$B/kernelindex-ref"
