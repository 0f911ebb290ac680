# verify/Makefile.frag — how kernelindex-ref joins the autotools build.
# Paste into Makefile.am (it uses configure.ac's HAVE_NVCC / NVCC).
#
# Sources: verify/ref.h ref_main.c ref_json.c ref_cpu.c, plus
# ref_cuda.cu (nvcc) or ref_nocuda.c (no CUDA). It links the cost model
# and GPU table (physics/: libkiphysics.a) and lib/buf.c (libki.a), not
# api/, and json-c; the CUDA build adds -ldl (NVML is
# loaded at run time) and links with nvcc (static cudart, libstdc++).

bin_PROGRAMS += kernelindex-ref
kernelindex_ref_SOURCES = verify/ref.h verify/ref_main.c \
	verify/ref_json.c verify/ref_cpu.c verify/lin.h verify/lin_defs.c \
	verify/lin_cpu.c verify/lin_math.inc verify/fam_attn.c \
	verify/fam_attn.inc verify/fam_moe.c verify/fam_moe.inc \
	verify/fam_gemm.inc
if HAVE_NVCC
kernelindex_ref_SOURCES += verify/ref_cuda.cu
kernelindex_ref_LINK = $(NVCC) $(NVCC_ARCH) -o $@
kernelindex_ref_LDADD = libkiphysics.a libki.a $(JSONC_LIBS) -lm -ldl
NVCC_ARCH = -gencode=arch=compute_80,code=sm_80 \
	-gencode=arch=compute_90,code=sm_90
NVCCFLAGS = -O3 -std=c++17
SUFFIXES = .cu
.cu.o:
	$(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) -I$(top_srcdir) $(JSONC_CFLAGS) \
	    -c $< -o $@
else
kernelindex_ref_SOURCES += verify/ref_nocuda.c
kernelindex_ref_LDADD = libkiphysics.a libki.a $(JSONC_LIBS) -lm
endif

# End-to-end checks of the program (CPU backend always; CUDA when a
# device is present):
TESTS += verify/test-ref.sh
SH_LOG_COMPILER = /bin/sh      # already set
AM_TESTS_ENVIRONMENT += KI_REF='$(abs_builddir)/kernelindex-ref'; export KI_REF;
# verify/test-ref.sh takes the binary as its argument; as an automake
# test, give it a one-line wrapper that runs "$KI_REF" or call it as
# `verify/test-ref.sh ./kernelindex-ref` from check-local.
EXTRA_DIST += verify/test-ref.sh verify/build-cuda.sh verify/bench-h200.sh \
	verify/bench_torch.py verify/Makefile.frag
