#!/bin/sh
# verify/build-cuda.sh — builds kernelindex-ref with its CUDA backend
# (nvcc; sm_80, sm_90 and sm_100 where the toolkit has them) and runs the
# reference program's checks.
# Usage: verify/build-cuda.sh [build-dir]   (default build-ref)
# Environment: NVCC, CC, CUDA_ARCHS ("80 90 100"), JSONC_DIR (a prefix holding
# include/json-c and lib/libjson-c.a, for hosts without libjson-c-dev),
# KI_BUILD_ONLY (skip the checks).
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-ref}
NVCC=${NVCC:-nvcc}
CC=${CC:-cc}
# sm_80 (A100), sm_90 (H100, H200) and sm_100 (B200) where nvcc knows it.
ARCHS=${CUDA_ARCHS:-"80 90 100"}
GENCODE=
for a in $ARCHS; do
	if $NVCC --list-gpu-arch 2>/dev/null | grep -q "compute_$a\$"; then
		GENCODE="$GENCODE -gencode=arch=compute_$a,code=sm_$a"
	fi
done
[ -n "$GENCODE" ] || GENCODE=-arch=sm_90
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

CSRC="verify/ref_main.c verify/ref_json.c verify/ref_cpu.c verify/fam_defs.c
    verify/fam_cpu.c verify/fam_attn.c verify/fam_moe.c verify/lin_defs.c
    verify/lin_cpu.c verify/devices.c
    physics/refcover.c physics/costmodel.c physics/gpu.c lib/buf.c"
objs=
for f in $CSRC; do
	o="$B/$(basename "$f" .c).o"
	$CC $CFLAGS -c "$f" -o "$o"
	objs="$objs $o"
done
: >"$B/ptxas.txt"
for cu in ref_cuda fam_cuda; do
	$NVCC $GENCODE -O3 -std=c++17 -I. $JCFLAGS -Xptxas -v \
	    -c verify/$cu.cu -o "$B/$cu.o" 2>>"$B/ptxas.txt"
	objs="$objs $B/$cu.o"
done
$NVCC $GENCODE -o "$B/kernelindex-ref" $objs $JLIBS -lm -ldl
# The CPU-only program, for the same checks without a device.
$CC $CFLAGS $CSRC verify/ref_nocuda.c -o "$B/kernelindex-ref-cpu" $JLIBS -lm
echo "built $B/kernelindex-ref ($GENCODE) and $B/kernelindex-ref-cpu"
# KI_BUILD_ONLY: build, check nothing (a build for another machine).
[ -n "${KI_BUILD_ONLY:-}" ] && exit 0
verify/test-ref.sh "$B/kernelindex-ref"
