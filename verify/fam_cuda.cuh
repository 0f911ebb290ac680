/* verify/fam_cuda.cuh — what the CUDA sources of the reference program
 * share: error checks, 16-byte vector element access, block reductions,
 * and the one do_bench timing loop (ref_cuda.cu) every CUDA pass is timed
 * by. */
#ifndef VERIFY_FAM_CUDA_CUH
#define VERIFY_FAM_CUDA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

#include "verify/ref.h"

/* Records the first failing CUDA call in err and jumps to out (needs rc,
 * err and errlen in scope). */
#define CK(call)                                                        \
	do {                                                            \
		cudaError_t e_ = (call);                                \
		if (e_ != cudaSuccess) {                                \
			snprintf(err, errlen, "%s: %s (line %d)", #call, \
			    cudaGetErrorString(e_), __LINE__);          \
			rc = KI_EIO;                                    \
			goto out;                                       \
		}                                                       \
	} while (0)

/* ---- 16-byte vectors of 4 floats or 8 halves ---- */

template <typename T> struct vec;
template <> struct vec<float> {
	enum { N = 4 };
	static __device__ __forceinline__ void load(const uint4 &u, float *f)
	{
		f[0] = __uint_as_float(u.x);
		f[1] = __uint_as_float(u.y);
		f[2] = __uint_as_float(u.z);
		f[3] = __uint_as_float(u.w);
	}
	static __device__ __forceinline__ uint4 store(const float *f)
	{
		return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]),
		    __float_as_uint(f[2]), __float_as_uint(f[3]));
	}
	static __device__ __forceinline__ float from_float(float f)
	{
		return f;
	}
};
template <> struct vec<__nv_bfloat16> {
	enum { N = 8 };
	static __device__ __forceinline__ void load(const uint4 &u, float *f)
	{
		const __nv_bfloat162 *h = (const __nv_bfloat162 *)&u;
#pragma unroll
		for (int k = 0; k < 4; k++) {
			float2 t = __bfloat1622float2(h[k]);
			f[2 * k] = t.x;
			f[2 * k + 1] = t.y;
		}
	}
	static __device__ __forceinline__ uint4 store(const float *f)
	{
		uint4 u;
		__nv_bfloat162 *h = (__nv_bfloat162 *)&u;
#pragma unroll
		for (int k = 0; k < 4; k++)
			h[k] = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
		return u;
	}
	static __device__ __forceinline__ __nv_bfloat16 from_float(float f)
	{
		return __float2bfloat16_rn(f);
	}
};
template <> struct vec<__half> {
	enum { N = 8 };
	static __device__ __forceinline__ void load(const uint4 &u, float *f)
	{
		const __half2 *h = (const __half2 *)&u;
#pragma unroll
		for (int k = 0; k < 4; k++) {
			float2 t = __half22float2(h[k]);
			f[2 * k] = t.x;
			f[2 * k + 1] = t.y;
		}
	}
	static __device__ __forceinline__ uint4 store(const float *f)
	{
		uint4 u;
		__half2 *h = (__half2 *)&u;
#pragma unroll
		for (int k = 0; k < 4; k++)
			h[k] = __floats2half2_rn(f[2 * k], f[2 * k + 1]);
		return u;
	}
	static __device__ __forceinline__ __half from_float(float f)
	{
		return __float2half_rn(f);
	}
};

/* ---- scalar element access ---- */

__device__ __forceinline__ float ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __nv_bfloat16 *p, int64_t i)
{ return __bfloat162float(p[i]); }
__device__ __forceinline__ float ld(const __half *p, int64_t i)
{ return __half2float(p[i]); }
__device__ __forceinline__ void st(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__nv_bfloat16 *p, int64_t i, float v)
{ p[i] = __float2bfloat16_rn(v); }
__device__ __forceinline__ void st(__half *p, int64_t i, float v)
{ p[i] = __float2half_rn(v); }

/* Sum (or max) over the block; every thread gets the result. sh holds 32
 * floats; the leading barrier lets a caller reuse sh back to back. */
template <bool MAX>
__device__ __forceinline__ float
block_reduce(float v, float *sh)
{
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
	int nw = (blockDim.x + 31) >> 5;

	for (int o = 16; o > 0; o >>= 1) {
		float u = __shfl_xor_sync(0xffffffffu, v, o);
		v = MAX ? fmaxf(v, u) : v + u;
	}
	__syncthreads();
	if (lane == 0)
		sh[w] = v;
	__syncthreads();
	v = lane < nw ? sh[lane] : (MAX ? -INFINITY : 0.f);
	for (int o = 16; o > 0; o >>= 1) {
		float u = __shfl_xor_sync(0xffffffffu, v, o);
		v = MAX ? fmaxf(v, u) : v + u;
	}
	return v;
}

/* Two sums over the block at once (one pair of barriers); sh holds 64
 * values of T; T2 is T's pair (float2, double2). */
template <typename T, typename T2>
__device__ __forceinline__ T2
block_sum2_of(T a, T b, T *sh)
{
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
	int nw = (blockDim.x + 31) >> 5;

	for (int o = 16; o > 0; o >>= 1) {
		a += __shfl_xor_sync(0xffffffffu, a, o);
		b += __shfl_xor_sync(0xffffffffu, b, o);
	}
	__syncthreads();
	if (lane == 0) {
		sh[w] = a;
		sh[32 + w] = b;
	}
	__syncthreads();
	a = lane < nw ? sh[lane] : (T)0;
	b = lane < nw ? sh[32 + lane] : (T)0;
	for (int o = 16; o > 0; o >>= 1) {
		a += __shfl_xor_sync(0xffffffffu, a, o);
		b += __shfl_xor_sync(0xffffffffu, b, o);
	}
	return T2{ a, b };
}

__device__ __forceinline__ float2
block_sum2(float a, float b, float *sh)
{
	return block_sum2_of<float, float2>(a, b, sh);
}

/* block_sum2 at double precision: sparsemax's backward takes dy less the
 * support's mean, which on a support of nearly equal dy is far smaller
 * than dy; a mean summed and rounded in float would leave that
 * difference with dy's rounding error (1.3e-5 relative, seen on the CPU
 * before it summed in double). */
__device__ __forceinline__ double2
block_sum2d(double a, double b, double *sh)
{
	return block_sum2_of<double, double2>(a, b, sh);
}

/* One pass on the default stream, for ref_cuda_bench. */
typedef cudaError_t (*ref_cuda_pass_fn)(void *arg);

/* Times pass(arg) as triton.testing.do_bench does: one call, five
 * (flush + call) to estimate, warm-up and repetitions sized from the
 * estimate (job's warmup_ms and rep_ms, capped by half of max_seconds),
 * each repetition preceded by a write of a flush buffer of
 * job->flush_bytes and timed by its own pair of events; median, p20 and
 * p80 by linear interpolation. Fills r->median_ns, p20_ns, p80_ns and
 * repetitions. Returns 0, or KI_EIO / KI_ENOMEM with err set. */
int ref_cuda_bench(const struct ref_job *job, ref_cuda_pass_fn pass,
	void *arg, double t_start_ms, struct ref_result *r, char *err,
	size_t errlen);

/* Monotonic wall-clock milliseconds. */
double ref_wall_ms(void);

#endif
