/* verify/fam_cuda.cu — the row-wise families on a CUDA device: norms with
 * the row held in registers and parameter gradients summed per block in
 * registers, then over blocks in a fixed order (deterministic); softmax;
 * elementwise activations; losses over a vocabulary (an online max/sum
 * pass, then the gradient). Inputs are made on the device; outputs are
 * poisoned with NaN, counted on the device, and checked in float64 on the
 * host by the same code as the CPU backend's (fam_check). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verify/ref.h"

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

/* Slot numbers: the same layouts as verify/fam_defs.c. */
enum { RMS_X, RMS_W, RMS_Y, RMS_DY, RMS_DX, RMS_DW };
enum { FA_X, FA_RES, FA_W, FA_Y, FA_S, FA_DY, FA_DS, FA_DX, FA_DW };
enum { LN_X, LN_W, LN_B, LN_Y, LN_DY, LN_DX, LN_DW, LN_DB };
enum { EW_X, EW_Y, EW_DY, EW_DX };
enum { LS_X, LS_T, LS_L, LS_DX };

enum fkind { K_RMS, K_FADD, K_LN, K_SOFTMAX, K_RELU2, K_SWIGLU, K_CE, K_KL,
	K_JSD, K_TVD, K_NONE };

static enum fkind
kind_of(const char *name)
{
	static const struct { const char *n; enum fkind k; } t[] = {
		{ "rms_norm", K_RMS }, { "megatron_rms_norm", K_RMS },
		{ "fused_add_rms_norm", K_FADD }, { "layer_norm", K_LN },
		{ "softmax", K_SOFTMAX }, { "relu_squared", K_RELU2 },
		{ "megatron_swiglu", K_SWIGLU }, { "cross_entropy", K_CE },
		{ "megatron_cross_entropy", K_CE }, { "kl_div", K_KL },
		{ "jsd", K_JSD }, { "tvd", K_TVD },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(t[i].n, name) == 0)
			return t[i].k;
	return K_NONE;
}

/* ---- element access ---- */

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

/* Sum (or max) over the block; every thread gets the result. */
template <bool MAX>
__device__ float
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

/* ---- inputs ---- */

__device__ __forceinline__ uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

template <typename T>
__global__ void
k_randn(T *p, int64_t n, uint64_t seed)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	    i += (int64_t)gridDim.x * blockDim.x) {
		uint64_t a = mix64(seed + 0x9e3779b97f4a7c15ull * (2 * i + 1));
		uint64_t b = mix64(seed + 0x9e3779b97f4a7c15ull * (2 * i + 2));
		float u1 = ((float)(a >> 40) + 0.5f) * 0x1p-24f;
		float u2 = (float)(b >> 40) * 0x1p-24f;

		st(p, i, sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
	}
}

__global__ void
k_targets(int64_t *p, int64_t n, int64_t v, uint64_t seed)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	    i += (int64_t)gridDim.x * blockDim.x)
		p[i] = (int64_t)(mix64(seed + 0x9e3779b97f4a7c15ull * (i + 1)) %
		    (uint64_t)v);
}

/* Row-wise softmax (as_log: log_softmax) in place, as the scripts make
 * their distributions. */
template <typename T>
__global__ void
k_normalize(T *p, int64_t rows, int64_t n, int as_log)
{
	__shared__ float sh[32];

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		T *x = p + r * n;
		float m = -INFINITY, s = 0, lse;

		for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
			m = fmaxf(m, ld(x, j));
		m = block_reduce<true>(m, sh);
		for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
			s += __expf(ld(x, j) - m);
		lse = m + logf(block_reduce<false>(s, sh));
		for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
			float v = ld(x, j) - lse;
			st(x, j, as_log ? v : __expf(v));
		}
	}
}

/* Counts NaNs (the poison) among n elements of es bytes. */
__global__ void
k_nans(const void *p, int64_t n, int es, int bf16, unsigned long long *count)
{
	unsigned long long c = 0;

	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	    i += (int64_t)gridDim.x * blockDim.x) {
		if (es == 4)
			c += isnan(((const float *)p)[i]);
		else if (es == 2) {
			uint16_t u = ((const uint16_t *)p)[i] & 0x7fff;
			c += u > (bf16 ? 0x7f80 : 0x7c00) ? 1 : 0;
		}
	}
	if (c)
		atomicAdd(count, c);
}

/* ---- norms: rms_norm, fused_add_rms_norm, layer_norm ----
 * A block takes rows blockIdx.x, + gridDim.x, …; thread t holds elements
 * t + k·blockDim.x (k < NPT) of the row in registers. Parameter gradients
 * are summed in registers over the block's rows and written to
 * part[blockIdx.x]; k_colsum adds the blocks' rows in order. */

struct norm_args {
	const void *x, *res, *w, *b, *dy, *ds;
	void *y, *s, *dx;
	float *part_w, *part_b;
	int64_t rows, n;
	float eps;
	int fwd, bwd;
};

template <typename T, int NPT, int KIND>
__global__ void __launch_bounds__(1024)
k_norm(norm_args a)
{
	__shared__ float sh[32];
	const T *x = (const T *)a.x, *res = (const T *)a.res, *w = (const T *)a.w,
	    *b = (const T *)a.b, *dy = (const T *)a.dy, *ds = (const T *)a.ds;
	T *y = (T *)a.y, *s = (T *)a.s, *dx = (T *)a.dx;
	float xr[NPT], aw[NPT], ab[NPT];
	int64_t n = a.n;
	float inv_n = 1.f / (float)n;

#pragma unroll
	for (int k = 0; k < NPT; k++)
		aw[k] = ab[k] = 0.f;
	for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
		int64_t o = r * n;
		float mean = 0, rstd, acc = 0;

#pragma unroll
		for (int k = 0; k < NPT; k++) {
			int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
			float v = 0;

			if (j < n) {
				if (KIND == K_FADD)
					v = a.fwd ? ld(x, o + j) + ld(res, o + j) :
					    ld((const T *)s, o + j);
				else
					v = ld(x, o + j);
			}
			xr[k] = v;
			acc += v;
		}
		if (KIND == K_LN) {
			mean = block_reduce<false>(acc, sh) * inv_n;
			acc = 0;
#pragma unroll
			for (int k = 0; k < NPT; k++) {
				int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
				float d = j < n ? xr[k] - mean : 0.f;
				acc += d * d;
			}
		} else {
			acc = 0;
#pragma unroll
			for (int k = 0; k < NPT; k++)
				acc += xr[k] * xr[k];
		}
		rstd = rsqrtf(block_reduce<false>(acc, sh) * inv_n + a.eps);
		if (a.fwd) {
#pragma unroll
			for (int k = 0; k < NPT; k++) {
				int64_t j = threadIdx.x + (int64_t)k * blockDim.x;

				if (j >= n)
					continue;
				if (KIND == K_LN)
					st(y, o + j, (xr[k] - mean) * rstd * ld(w, j) +
					    ld(b, j));
				else
					st(y, o + j, xr[k] * rstd * ld(w, j));
				if (KIND == K_FADD)
					st(s, o + j, xr[k]);
			}
		}
		if (!a.bwd)
			continue;
		{
			/* dy·w is formed twice rather than held: NPT more
			 * registers would spill the longest rows. The second
			 * read of the row of dy hits L1. */
			float s1 = 0, s2 = 0, c1, c2;

#pragma unroll
			for (int k = 0; k < NPT; k++) {
				int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
				float xh = KIND == K_LN ? (xr[k] - mean) * rstd :
				    xr[k] * rstd;
				float d = j < n ? ld(dy, o + j) : 0.f;
				float g = j < n ? d * ld(w, j) : 0.f;

				s1 += g;
				s2 += g * xh;
				aw[k] += d * xh;
				if (KIND == K_LN)
					ab[k] += d;
			}
			c2 = block_reduce<false>(s2, sh) * inv_n;
			c1 = KIND == K_LN ? block_reduce<false>(s1, sh) * inv_n : 0.f;
#pragma unroll
			for (int k = 0; k < NPT; k++) {
				int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
				float xh = KIND == K_LN ? (xr[k] - mean) * rstd :
				    xr[k] * rstd;
				float v;

				if (j >= n)
					continue;
				v = rstd * (ld(dy, o + j) * ld(w, j) - c1 - xh * c2);
				if (KIND == K_FADD)
					v += ld(ds, o + j);
				st(dx, o + j, v);
			}
		}
	}
	if (!a.bwd)
		return;
#pragma unroll
	for (int k = 0; k < NPT; k++) {
		int64_t j = threadIdx.x + (int64_t)k * blockDim.x;

		if (j < n) {
			a.part_w[blockIdx.x * n + j] = aw[k];
			if (KIND == K_LN)
				a.part_b[blockIdx.x * n + j] = ab[k];
		}
	}
}

/* out[j] = Σ over nb blocks of part[b][j], in block order. */
template <typename T>
__global__ void
k_colsum(const float *part, int nb, int64_t n, T *out)
{
	for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < n;
	    j += (int64_t)gridDim.x * blockDim.x) {
		float acc = 0;

		for (int b = 0; b < nb; b++)
			acc += part[(int64_t)b * n + j];
		st(out, j, acc);
	}
}

/* ---- softmax (row in registers) ---- */

template <typename T, int NPT>
__global__ void __launch_bounds__(1024)
k_softmax(const T *x, T *y, const T *dy, T *dx, int64_t rows, int64_t n,
	int fwd, int bwd)
{
	__shared__ float sh[32];
	float yr[NPT];

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t o = r * n;
		float m = -INFINITY, sum = 0, dot = 0;

		if (fwd) {
#pragma unroll
			for (int k = 0; k < NPT; k++) {
				int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
				yr[k] = j < n ? ld(x, o + j) : -INFINITY;
				m = fmaxf(m, yr[k]);
			}
			m = block_reduce<true>(m, sh);
#pragma unroll
			for (int k = 0; k < NPT; k++) {
				yr[k] = __expf(yr[k] - m);
				sum += yr[k];
			}
			sum = 1.f / block_reduce<false>(sum, sh);
#pragma unroll
			for (int k = 0; k < NPT; k++) {
				int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
				yr[k] *= sum;
				if (j < n)
					st(y, o + j, yr[k]);
			}
		} else {
#pragma unroll
			for (int k = 0; k < NPT; k++) {
				int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
				yr[k] = j < n ? ld(y, o + j) : 0.f;
			}
		}
		if (!bwd)
			continue;
		{
			float g[NPT];

#pragma unroll
			for (int k = 0; k < NPT; k++) {
				int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
				g[k] = j < n ? ld(dy, o + j) : 0.f;
				dot += g[k] * yr[k];
			}
			dot = block_reduce<false>(dot, sh);
#pragma unroll
			for (int k = 0; k < NPT; k++) {
				int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
				if (j < n)
					st(dx, o + j, yr[k] * (g[k] - dot));
			}
		}
	}
}

/* ---- elementwise: relu_squared, megatron_swiglu ---- */

template <typename T, int KIND>
__global__ void
k_elementwise(const T *x, T *y, const T *dy, T *dx, int64_t rows, int64_t n,
	int fwd, int bwd)
{
	int64_t total = rows * n;

	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	    i < total; i += (int64_t)gridDim.x * blockDim.x) {
		if (KIND == K_RELU2) {
			float v = fmaxf(ld(x, i), 0.f);

			if (fwd)
				st(y, i, v * v);
			if (bwd)
				st(dx, i, 2.f * v * ld(dy, i));
		} else {
			int64_t r = i / n, j = i - r * n;
			float a = ld(x, r * 2 * n + j), b = ld(x, r * 2 * n + n + j);
			float sg = 1.f / (1.f + __expf(-a)), silu = a * sg;

			if (fwd)
				st(y, i, silu * b);
			if (bwd) {
				float d = ld(dy, i);
				st(dx, r * 2 * n + j, d * b * sg * (1.f + a * (1.f - sg)));
				st(dx, r * 2 * n + n + j, d * silu);
			}
		}
	}
}

/* ---- losses over a vocabulary: a block per row ---- */

template <typename T, int KIND>
__global__ void __launch_bounds__(1024)
k_loss(const T *x, const void *tgt, float *loss, T *dx, int64_t rows,
	int64_t n, float scale, int fwd, int bwd)
{
	__shared__ float sh[32];

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		const T *xr = x + r * n;
		T *dr = dx + r * n;

		if (KIND == K_CE) {
			int64_t t = ((const int64_t *)tgt)[r];
			float m = -INFINITY, s = 0, lse;

			/* Online max and sum in one read. */
			for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
				float v = ld(xr, j);
				if (v > m) {
					s = s * __expf(m - v) + 1.f;
					m = v;
				} else {
					s += __expf(v - m);
				}
			}
			{
				float mm = block_reduce<true>(m, sh);
				s = m == -INFINITY ? 0.f : s * __expf(m - mm);
				lse = mm + logf(block_reduce<false>(s, sh));
			}
			if (fwd && threadIdx.x == 0)
				loss[r] = (lse - ld(xr, t)) * scale;
			if (bwd)
				for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
					st(dr, j, (__expf(ld(xr, j) - lse) -
					    (j == t ? 1.f : 0.f)) * scale);
		} else {
			const T *p = (const T *)tgt + r * n;
			float acc = 0;

			for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
				float a = ld(xr, j), b = ld(p, j), g;

				if (KIND == K_KL) {
					acc += b > 0 ? b * (logf(b) - a) : 0.f;
					g = -b;
				} else if (KIND == K_JSD) {
					float q = __expf(a), pp = __expf(b);
					float lm = logf(0.5f * pp + 0.5f * q);
					acc += 0.5f * pp * (b - lm) + 0.5f * q * (a - lm);
					g = 0.5f * q * (a - lm);
				} else {
					acc += fabsf(a - b);
					g = a > b ? 0.5f : -0.5f;
				}
				if (bwd)
					st(dr, j, g * scale);
			}
			if (fwd) {
				acc = block_reduce<false>(acc, sh);
				if (threadIdx.x == 0)
					loss[r] = (KIND == K_TVD ? 0.5f : 1.f) * acc *
					    scale;
			}
		}
	}
}

/* ---- launching ---- */

struct fdev {
	const struct family *f;
	struct fam_shape s;
	enum api_dtype dt;
	enum fkind kind;
	void *d[FAM_MAX_SLOTS];
	float *part_w, *part_b;
	int sms, nb;
};

/* Threads and elements a thread for a row of n held in registers. */
static int
row_threads(int64_t n, int *npt)
{
	int64_t t = ((n + 7) / 8 + 31) / 32 * 32;
	int64_t e;

	t = t < 32 ? 32 : t > 1024 ? 1024 : t;
	e = (n + t - 1) / t;

	*npt = e <= 1 ? 1 : e <= 2 ? 2 : e <= 4 ? 4 : e <= 8 ? 8 : e <= 16 ?
	    16 : e <= 32 ? 32 : 0;
	return (int)t;
}

#define NPT_SWITCH(npt, CALL) do {                                      \
	switch (npt) {                                                  \
	case 1: { const int P = 1; CALL; } break;                       \
	case 2: { const int P = 2; CALL; } break;                       \
	case 4: { const int P = 4; CALL; } break;                       \
	case 8: { const int P = 8; CALL; } break;                       \
	case 16: { const int P = 16; CALL; } break;                     \
	default: { const int P = 32; CALL; } break;                     \
	}                                                               \
} while (0)

template <typename T>
static cudaError_t
launch_t(struct fdev *g, int fwd, int bwd)
{
	const struct fam_shape *s = &g->s;
	int npt, th = row_threads(s->n, &npt);
	unsigned grid = (unsigned)(s->rows < (int64_t)g->nb ? s->rows : g->nb);
	void *const *d = g->d;

	switch (g->kind) {
	case K_RMS:
	case K_FADD:
	case K_LN: {
		norm_args a;

		memset(&a, 0, sizeof(a));
		a.rows = s->rows;
		a.n = s->n;
		a.eps = (float)s->eps;
		a.fwd = fwd;
		a.bwd = bwd;
		a.part_w = g->part_w;
		a.part_b = g->part_b;
		if (g->kind == K_FADD) {
			a.x = d[FA_X]; a.res = d[FA_RES]; a.w = d[FA_W];
			a.y = d[FA_Y]; a.s = d[FA_S]; a.dy = d[FA_DY];
			a.ds = d[FA_DS]; a.dx = d[FA_DX];
			NPT_SWITCH(npt, (k_norm<T, P, K_FADD><<<grid, th>>>(a)));
		} else if (g->kind == K_LN) {
			a.x = d[LN_X]; a.w = d[LN_W]; a.b = d[LN_B]; a.y = d[LN_Y];
			a.dy = d[LN_DY]; a.dx = d[LN_DX];
			NPT_SWITCH(npt, (k_norm<T, P, K_LN><<<grid, th>>>(a)));
		} else {
			a.x = d[RMS_X]; a.w = d[RMS_W]; a.y = d[RMS_Y];
			a.dy = d[RMS_DY]; a.dx = d[RMS_DX];
			NPT_SWITCH(npt, (k_norm<T, P, K_RMS><<<grid, th>>>(a)));
		}
		if (bwd) {
			int wslot = g->kind == K_FADD ? FA_DW : g->kind == K_LN ?
			    LN_DW : RMS_DW;
			unsigned cg = (unsigned)((s->n + 255) / 256);

			k_colsum<T><<<cg, 256>>>(g->part_w, (int)grid, s->n,
			    (T *)d[wslot]);
			if (g->kind == K_LN)
				k_colsum<T><<<cg, 256>>>(g->part_b, (int)grid, s->n,
				    (T *)d[LN_DB]);
		}
		break;
	}
	case K_SOFTMAX:
		NPT_SWITCH(npt, (k_softmax<T, P><<<grid, th>>>((const T *)d[EW_X],
		    (T *)d[EW_Y], (const T *)d[EW_DY], (T *)d[EW_DX], s->rows,
		    s->n, fwd, bwd)));
		break;
	case K_RELU2:
		k_elementwise<T, K_RELU2><<<(unsigned)g->sms * 16, 512>>>(
		    (const T *)d[EW_X], (T *)d[EW_Y], (const T *)d[EW_DY],
		    (T *)d[EW_DX], s->rows, s->n, fwd, bwd);
		break;
	case K_SWIGLU:
		k_elementwise<T, K_SWIGLU><<<(unsigned)g->sms * 16, 512>>>(
		    (const T *)d[EW_X], (T *)d[EW_Y], (const T *)d[EW_DY],
		    (T *)d[EW_DX], s->rows, s->n, fwd, bwd);
		break;
	default: {
		unsigned lg = (unsigned)(s->rows < (int64_t)g->sms * 8 ? s->rows :
		    (int64_t)g->sms * 8);
		float sc = (float)s->scale;
#define LOSS(K) k_loss<T, K><<<lg, 1024>>>((const T *)d[LS_X], d[LS_T], \
	(float *)d[LS_L], (T *)d[LS_DX], s->rows, s->n, sc, fwd, bwd)
		if (g->kind == K_CE)
			LOSS(K_CE);
		else if (g->kind == K_KL)
			LOSS(K_KL);
		else if (g->kind == K_JSD)
			LOSS(K_JSD);
		else
			LOSS(K_TVD);
#undef LOSS
	}
	}
	return cudaGetLastError();
}

static cudaError_t
launch(struct fdev *g, int fwd, int bwd)
{
	if (g->dt == API_DT_F32)
		return launch_t<float>(g, fwd, bwd);
	if (g->dt == API_DT_BF16)
		return launch_t<__nv_bfloat16>(g, fwd, bwd);
	return launch_t<__half>(g, fwd, bwd);
}

/* Fresh inputs on the device from seed. */
static cudaError_t
fill(struct fdev *g, const void *table, size_t table_bytes, uint64_t seed)
{
	const struct fam_shape *s = &g->s;
	unsigned grid = (unsigned)g->sms * 8;
	int i;

	for (i = 0; i < s->nslots; i++) {
		const struct fam_slot *sl = &s->slot[i];
		int64_t n = fam_slot_elems(s, i);
		uint64_t k = seed + 0x1000193ull * (uint64_t)(i + 1);

		if (!(sl->io & (FIO_IN0 | FIO_IN1)) || (sl->io & FIO_OUT0) ||
		    sl->kind == FK_ACC)
			continue;
		if (sl->kind == FK_TARGET)
			k_targets<<<grid, 256>>>((int64_t *)g->d[i], n, s->n, k);
		else if (sl->kind == FK_ROW32 || sl->kind == FK_PARAM32 ||
		    g->dt == API_DT_F32)
			k_randn<float><<<grid, 256>>>((float *)g->d[i], n, k);
		else if (g->dt == API_DT_BF16)
			k_randn<__nv_bfloat16><<<grid, 256>>>(
			    (__nv_bfloat16 *)g->d[i], n, k);
		else
			k_randn<__half><<<grid, 256>>>((__half *)g->d[i], n, k);
	}
	if (g->kind == K_KL || g->kind == K_JSD || g->kind == K_TVD) {
		unsigned rg = (unsigned)(s->rows < (int64_t)grid ? s->rows : grid);
		int lx = g->kind != K_TVD, lt = g->kind == K_JSD;

#define NORM(T) do {                                                    \
		k_normalize<T><<<rg, 1024>>>((T *)g->d[LS_X], s->rows, s->n, lx); \
		k_normalize<T><<<rg, 1024>>>((T *)g->d[LS_T], s->rows, s->n, lt); \
	} while (0)
		if (g->dt == API_DT_F32)
			NORM(float);
		else if (g->dt == API_DT_BF16)
			NORM(__nv_bfloat16);
		else
			NORM(__half);
#undef NORM
	}
	(void)table;
	(void)table_bytes;
	return cudaGetLastError();
}

int
fam_cuda_has(const struct family *f)
{
	return f != NULL && kind_of(f->name) != K_NONE;
}

static double
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Copies the tensors to host memory for fam_check: every row, or, for a
 * family whose rows do not depend on their index and whose tensors are
 * large, REF_SAMPLE_ROWS rows drawn at random into a shape of that many
 * rows (hs receives the shape the host copies have). */
static int
to_host(struct fdev *g, void **host, struct fam_shape *hs, uint64_t *rng,
	char *err, size_t errlen)
{
	const struct fam_shape *s = &g->s;
	double bytes = 0;
	int i, rc = KI_OK, compact;
	int64_t k, *pick = NULL;

	for (i = 0; i < s->nslots; i++)
		bytes += (double)fam_slot_elems(s, i) *
		    (double)fam_slot_esize(s, i, g->dt);
	*hs = *s;
	compact = bytes > (1u << 30) && g->kind != K_RMS && g->kind != K_FADD &&
	    g->kind != K_LN && s->rows > REF_SAMPLE_ROWS;
	if (compact) {
		hs->rows = REF_SAMPLE_ROWS;
		pick = (int64_t *)malloc(REF_SAMPLE_ROWS * sizeof(*pick));
		if (pick == NULL)
			return KI_ENOMEM;
		for (k = 0; k < REF_SAMPLE_ROWS; k++)
			pick[k] = (int64_t)(ref_rand(rng) % (uint64_t)s->rows);
	}
	for (i = 0; i < s->nslots; i++) {
		size_t es = fam_slot_esize(s, i, g->dt);
		size_t row = (size_t)s->slot[i].len * es;
		int rowslot = s->slot[i].kind == FK_ROW ||
		    s->slot[i].kind == FK_ROW32 || s->slot[i].kind == FK_TARGET;
		size_t nb = (size_t)fam_slot_elems(hs, i) * es;

		host[i] = malloc(nb > 0 ? nb : 1);
		if (host[i] == NULL) {
			rc = KI_ENOMEM;
			snprintf(err, errlen, "out of host memory for the check");
			break;
		}
		if (compact && rowslot) {
			for (k = 0; k < REF_SAMPLE_ROWS; k++)
				if (cudaMemcpy((char *)host[i] + (size_t)k * row,
				    (const char *)g->d[i] + (size_t)pick[k] * row, row,
				    cudaMemcpyDeviceToHost) != cudaSuccess)
					rc = KI_EIO;
		} else if (cudaMemcpy(host[i], g->d[i], nb,
		    cudaMemcpyDeviceToHost) != cudaSuccess) {
			rc = KI_EIO;
		}
		if (rc != KI_OK) {
			snprintf(err, errlen, "copying the outputs back failed");
			break;
		}
	}
	free(pick);
	return rc;
}

int
fam_cuda_run(const struct ref_job *job, struct ref_result *r, char *err,
	size_t errlen)
{
	struct fdev g;
	cudaDeviceProp prop;
	cudaEvent_t e0 = NULL, e1 = NULL, *ev = NULL;
	void *flush = NULL, *host[FAM_MAX_SLOTS] = { NULL };
	unsigned long long *nans = NULL, h_nans = 0;
	double *times = NULL, est, budget_ms, t_start = wall_ms(), need = 0;
	size_t free_b = 0, total_b = 0;
	uint64_t seed = job->seed != 0 ? job->seed :
	    (uint64_t)(t_start * 1e6) ^ 0xfeedull;
	int fwd = job->pass != REF_BACKWARD, bwd = job->pass != REF_FORWARD;
	int n_warm = 0, n_rep = 0, i, rc = KI_OK, drv = 0, npt;
	struct fam_shape hs;
	float ms = 0;

	memset(&g, 0, sizeof(g));
	memset(r, 0, sizeof(*r));
	r->backend = "cuda";
	r->clocks_sm_before = r->clocks_mem_before = -1;
	r->clocks_sm_after = r->clocks_mem_after = -1;
	g.f = job->fam;
	g.s = job->shape;
	g.f->layout(&g.s);
	g.dt = job->dtype;
	g.kind = kind_of(g.f->name);
	r->ran = g.f->params(&g.s);
	CK(cudaSetDevice(0));
	CK(cudaGetDeviceProperties(&prop, 0));
	snprintf(r->gpu_name, sizeof(r->gpu_name), "%s", prop.name);
	snprintf(r->sm, sizeof(r->sm), "sm_%d%d", prop.major, prop.minor);
	if (cudaDriverGetVersion(&drv) == cudaSuccess)
		snprintf(r->driver, sizeof(r->driver), "cuda %d.%d", drv / 1000,
		    drv % 1000 / 10);
	g.sms = prop.multiProcessorCount;
	if ((g.kind == K_RMS || g.kind == K_FADD || g.kind == K_LN ||
	    g.kind == K_SOFTMAX) && (row_threads(g.s.n, &npt), npt == 0)) {
		snprintf(err, errlen, "rows of more than 32768 elements are not "
		    "implemented on the CUDA backend");
		rc = KI_ELIMIT;
		goto out;
	}
	/* Row blocks: enough resident to fill the device, no more (each
	 * adds a row of parameter-gradient partial sums). */
	g.nb = g.sms * (g.s.n <= 1024 ? 8 : g.s.n <= 4096 ? 4 : 2);
	for (i = 0; i < g.s.nslots; i++)
		need += (double)fam_slot_elems(&g.s, i) *
		    (double)fam_slot_esize(&g.s, i, g.dt);
	need += 2.0 * g.nb * (double)g.s.n * 4 + (double)job->flush_bytes;
	CK(cudaMemGetInfo(&free_b, &total_b));
	if (need > 0.9 * (double)free_b) {
		snprintf(err, errlen, "workload needs %.0f bytes of device "
		    "memory, %zu are free", need, free_b);
		rc = KI_ELIMIT;
		goto out;
	}
	for (i = 0; i < g.s.nslots; i++)
		CK(cudaMalloc(&g.d[i], (size_t)fam_slot_elems(&g.s, i) *
		    fam_slot_esize(&g.s, i, g.dt) + 16));
	CK(cudaMalloc((void **)&g.part_w, (size_t)g.nb * (size_t)g.s.n * 4));
	CK(cudaMalloc((void **)&g.part_b, (size_t)g.nb * (size_t)g.s.n * 4));
	CK(cudaMalloc(&flush, job->flush_bytes > 0 ? job->flush_bytes : 1));
	CK(cudaMalloc((void **)&nans, sizeof(*nans)));
	CK(fill(&g, NULL, 0, seed));
	if (!fwd)
		CK(launch(&g, 1, 0));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));

	/* do_bench, as ref_cuda_run times it. */
	CK(launch(&g, fwd, bwd));
	CK(cudaDeviceSynchronize());
	CK(cudaEventRecord(e0));
	for (i = 0; i < 5; i++) {
		CK(cudaMemsetAsync(flush, 0, job->flush_bytes));
		CK(launch(&g, fwd, bwd));
	}
	CK(cudaEventRecord(e1));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	est = ms / 5 > 1e-4 ? ms / 5 : 1e-4;
	n_warm = (int)fmax(1, job->warmup_ms / est);
	n_rep = (int)fmax(1, job->rep_ms / est);
	budget_ms = job->max_seconds * 1e3 * 0.5 - (wall_ms() - t_start);
	if ((n_warm + n_rep) * est > budget_ms) {
		n_warm = (int)fmax(1, budget_ms * 0.2 / est);
		n_rep = (int)fmax(1, budget_ms * 0.8 / est);
	}
	if (n_rep > 100000)
		n_rep = 100000;
	ev = (cudaEvent_t *)calloc((size_t)n_rep * 2, sizeof(*ev));
	times = (double *)malloc((size_t)n_rep * sizeof(*times));
	if (ev == NULL || times == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = KI_ENOMEM;
		goto out;
	}
	for (i = 0; i < 2 * n_rep; i++)
		CK(cudaEventCreate(&ev[i]));
	for (i = 0; i < n_warm; i++)
		CK(launch(&g, fwd, bwd));
	for (i = 0; i < n_rep; i++) {
		CK(cudaMemsetAsync(flush, 0, job->flush_bytes));
		CK(cudaEventRecord(ev[2 * i]));
		CK(launch(&g, fwd, bwd));
		CK(cudaEventRecord(ev[2 * i + 1]));
	}
	CK(cudaDeviceSynchronize());
	for (i = 0; i < n_rep; i++) {
		CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
		times[i] = (double)ms * 1e6;
	}
	ref_stats(times, n_rep, &r->median_ns, &r->p20_ns, &r->p80_ns);
	r->repetitions = n_rep;
	cudaFree(flush);
	flush = NULL;
	r->copy_bw = ref_cuda_copy_rate();

	/* Correctness: fresh inputs, outputs poisoned, one pass, NaNs
	 * counted on the device, rows checked in float64 on the host. */
	CK(fill(&g, NULL, 0, seed * 0x2545f4914f6cdd1dull + 7));
	if (!fwd)
		CK(launch(&g, 1, 0));
	for (i = 0; i < g.s.nslots; i++) {
		unsigned io = g.s.slot[i].io;

		if ((fwd && (io & FIO_OUT0)) || (bwd && (io & FIO_OUT1)))
			CK(cudaMemset(g.d[i], 0xff, (size_t)fam_slot_elems(&g.s, i) *
			    fam_slot_esize(&g.s, i, g.dt)));
	}
	CK(launch(&g, fwd, bwd));
	CK(cudaMemset(nans, 0, sizeof(*nans)));
	for (i = 0; i < g.s.nslots; i++) {
		unsigned io = g.s.slot[i].io;

		if ((fwd && (io & FIO_OUT0)) || (bwd && (io & FIO_OUT1)))
			k_nans<<<(unsigned)g.sms * 8, 256>>>(g.d[i],
			    fam_slot_elems(&g.s, i), (int)fam_slot_esize(&g.s, i,
			    g.dt), g.dt == API_DT_BF16, nans);
	}
	CK(cudaGetLastError());
	CK(cudaMemcpy(&h_nans, nans, sizeof(h_nans), cudaMemcpyDeviceToHost));
	rc = to_host(&g, host, &hs, &seed, err, errlen);
	if (rc != KI_OK)
		goto out;
	r->complete = h_nans == 0;
	rc = fam_check(g.f, &hs, host, g.dt, job->pass, &seed, r);
	if (rc != KI_OK)
		snprintf(err, errlen, "out of host memory for the check");
out:
	if (ev != NULL)
		for (i = 0; i < 2 * n_rep; i++)
			if (ev[i] != NULL)
				cudaEventDestroy(ev[i]);
	free(ev);
	free(times);
	if (e0 != NULL)
		cudaEventDestroy(e0);
	if (e1 != NULL)
		cudaEventDestroy(e1);
	for (i = 0; i < FAM_MAX_SLOTS; i++) {
		cudaFree(g.d[i]);
		free(host[i]);
	}
	cudaFree(g.part_w);
	cudaFree(g.part_b);
	cudaFree(flush);
	cudaFree(nans);
	return rc;
}
