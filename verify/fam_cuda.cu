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
#include "verify/fam_cuda.cuh"
#include "verify/fam_cuda_rows.cuh"

/* Slot numbers: the same layouts as verify/fam_defs.c. */
enum { RMS_X, RMS_W, RMS_Y, RMS_DY, RMS_DX, RMS_DW };
enum { FA_X, FA_RES, FA_W, FA_Y, FA_S, FA_DY, FA_DS, FA_DX, FA_DW };
enum { LN_X, LN_W, LN_B, LN_Y, LN_DY, LN_DX, LN_DW, LN_DB };
enum { EW_X, EW_Y, EW_DY, EW_DX };
enum { LS_X, LS_T, LS_L, LS_DX };
enum { RO_Q, RO_K, RO_TAB, RO_QO, RO_KO, RO_DQ, RO_DK, RO_DQI, RO_DKI };

enum fkind { K_RMS, K_FADD, K_LN, K_SOFTMAX, K_RELU2, K_SWIGLU, K_CE, K_KL,
	K_JSD, K_TVD, K_GN, K_SPARSEMAX, K_ROPE, K_ROPE4, K_NONE };

static enum fkind
kind_of(const char *name)
{
	static const struct { const char *n; enum fkind k; } t[] = {
		{ "rms_norm", K_RMS }, { "megatron_rms_norm", K_RMS },
		{ "fused_add_rms_norm", K_FADD }, { "layer_norm", K_LN },
		{ "softmax", K_SOFTMAX }, { "relu_squared", K_RELU2 },
		{ "megatron_swiglu", K_SWIGLU }, { "cross_entropy", K_CE },
		{ "megatron_cross_entropy", K_CE }, { "kl_div", K_KL },
		{ "jsd", K_JSD }, { "tvd", K_TVD }, { "group_norm", K_GN },
		{ "sparsemax", K_SPARSEMAX }, { "rope", K_ROPE },
		{ "llama4_rope", K_ROPE4 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(t[i].n, name) == 0)
			return t[i].k;
	return K_NONE;
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

/* ---- fallbacks for rows that are not whole 16-byte vectors:
 * group_norm and sparsemax, a block a row, reading global memory ---- */

template <typename T, int KIND>
__global__ void __launch_bounds__(1024)
k_rowgen(row_args a)
{
	__shared__ float red[64];
	__shared__ double redd[KIND == V_GN ? 1 : 64];
	const T *x = (const T *)a.x, *w = (const T *)a.w, *b = (const T *)a.b;
	const int64_t n = a.n;
	const float inv_n = 1.f / (float)n;

	for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
		const int64_t o = r * n;

		if (KIND == V_GN) {
			const T *dy = (const T *)a.dy;
			int64_t ch0 = (r % a.groups) * a.cpg;
			float s1 = 0.f, s2 = 0.f, mean, rstd, c1, c2;
			float2 t;

			for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
				s1 += ld(x, o + j);
			mean = block_reduce<false>(s1, red) * inv_n;
			for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
				float d = ld(x, o + j) - mean;
				s2 += d * d;
			}
			rstd = rsqrtf(block_reduce<false>(s2, red) * inv_n + a.eps);
			if (a.fwd)
				for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
					int64_t ch = ch0 + j / a.h;

					st((T *)a.y, o + j, (ld(x, o + j) - mean) * rstd *
					    ld(w, ch) + ld(b, ch));
				}
			if (!a.bwd)
				continue;
			s1 = s2 = 0.f;
			for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
				float gw = ld(dy, o + j) * ld(w, ch0 + j / a.h);

				s1 += gw;
				s2 += gw * (ld(x, o + j) - mean) * rstd;
			}
			t = block_sum2(s1, s2, red);
			c1 = t.x * inv_n;
			c2 = t.y * inv_n;
			for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
				float xh = (ld(x, o + j) - mean) * rstd;

				st((T *)a.dx, o + j, rstd * (ld(dy, o + j) *
				    ld(w, ch0 + j / a.h) - c1 - xh * c2));
			}
			for (int64_t cl = 0; cl < a.cpg; cl++) {
				float pdw = 0.f, pdb = 0.f;

				for (int64_t j = cl * a.h + threadIdx.x;
				    j < (cl + 1) * a.h; j += blockDim.x) {
					float d = ld(dy, o + j);

					pdw += d * (ld(x, o + j) - mean) * rstd;
					pdb += d;
				}
				t = block_sum2(pdw, pdb, red);
				if (threadIdx.x == 0) {
					a.part_w[r * a.cpg + cl] = t.x;
					a.part_b[r * a.cpg + cl] = t.y;
				}
			}
		} else {
			const T *y = (const T *)a.y, *dy = (const T *)a.dy;

			if (a.fwd) {
				float m = -INFINITY, tau, cnt_prev = 3.0e38f;

				for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
					m = fmaxf(m, ld(x, o + j));
				tau = block_reduce<true>(m, red) - 1.f;
				for (;;) {
					float sum = 0.f, cnt = 0.f;
					float2 t;

					for (int64_t j = threadIdx.x; j < n;
					    j += blockDim.x) {
						float v = ld(x, o + j);

						if (v > tau) {
							sum += v;
							cnt += 1.f;
						}
					}
					t = block_sum2(sum, cnt, red);
					if (t.y >= cnt_prev)
						break;
					cnt_prev = t.y;
					tau = (t.x - 1.f) / t.y;
				}
				for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
					st((T *)a.y, o + j, fmaxf(ld(x, o + j) - tau,
					    0.f));
				__syncthreads();   /* y is re-read below */
			}
			if (a.bwd) {
				double sum = 0.0, cnt = 0.0, mean;
				double2 t;

				for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
					if (ld(y, o + j) > 0.f) {
						sum += ld(dy, o + j);
						cnt += 1.0;
					}
				t = block_sum2d(sum, cnt, redd);
				mean = t.y > 0.0 ? t.x / t.y : 0.0;
				for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
					st((T *)a.dx, o + j, ld(y, o + j) > 0.f ?
					    (float)((double)ld(dy, o + j) - mean) :
					    0.f);
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
	/* The 16-byte-vector path (vfn non-NULL): the kernel, its block,
	 * vectors a thread and a row, shared memory a block. */
	const void *vfn;
	int threads, kv, nv;
	size_t smem;
	/* cross_entropy's cluster kernel (cefn non-NULL): blocks a cluster,
	 * the grid, shared memory a block. */
	const void *cefn;
	int ce_cs;
	unsigned ce_grid;
	size_t ce_smem;
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

#define KV_SWITCH(kv, ...) do {                                         \
	switch (kv) {                                                   \
	case 1: { const int KV = 1; __VA_ARGS__; } break;                      \
	case 2: { const int KV = 2; __VA_ARGS__; } break;                      \
	case 4: { const int KV = 4; __VA_ARGS__; } break;                      \
	default: { const int KV = 8; __VA_ARGS__; } break;                     \
	}                                                               \
} while (0)

/* The vector kernel of a row family for kv vectors a thread. */
template <typename T>
static const void *
vec_kernel(enum fkind k, int kv)
{
	const void *fn = NULL;

	switch (k) {
	case K_RMS:
		KV_SWITCH(kv, fn = (const void *)k_norm_v<T, KV, V_RMS>);
		break;
	case K_FADD:
		KV_SWITCH(kv, fn = (const void *)k_norm_v<T, KV, V_FADD>);
		break;
	case K_LN:
		KV_SWITCH(kv, fn = (const void *)k_norm_v<T, KV, V_LN>);
		break;
	case K_GN:
		KV_SWITCH(kv, fn = (const void *)k_norm_v<T, KV, V_GN>);
		break;
	case K_SOFTMAX:
		KV_SWITCH(kv, fn = (const void *)k_softmax_v<T, KV, V_SOFTMAX>);
		break;
	case K_SPARSEMAX:
		KV_SWITCH(kv, fn = (const void *)k_softmax_v<T, KV, V_SPARSEMAX>);
		break;
	default:
		break;
	}
	return fn;
}

static const void *
vec_kernel_dt(enum api_dtype dt, enum fkind k, int kv)
{
	if (dt == API_DT_F32)
		return vec_kernel<float>(k, kv);
	if (dt == API_DT_BF16)
		return vec_kernel<__nv_bfloat16>(k, kv);
	return vec_kernel<__half>(k, kv);
}

static int
is_norm(enum fkind k)
{
	return k == K_RMS || k == K_FADD || k == K_LN || k == K_GN;
}

/* Chooses the row kernel and its grid for the job's pass: the vector
 * path where the row (and group_norm's channel) is whole 16-byte
 * vectors and fits 8 a thread of 512 threads; the grid as many blocks as
 * fit on the device (KIREF_BPSM caps blocks a multiprocessor; a norm's
 * backward keeps 2 a multiprocessor by default, each adding a row of
 * weight-gradient partial sums). */
static cudaError_t
plan_rows(struct fdev *g, int bwd, const cudaDeviceProp *prop)
{
	const struct fam_shape *s = &g->s;
	size_t es = api_dtype_size(g->dt);
	int64_t nv, t;
	int occ = 0, cap;
	cudaError_t e;
	const char *env = getenv("KIREF_BPSM");

	g->vfn = NULL;
	if (!is_norm(g->kind) && g->kind != K_SOFTMAX && g->kind != K_SPARSEMAX)
		return cudaSuccess;
	if ((s->n * (int64_t)es) % 16 != 0 || getenv("KIREF_SCALAR") != NULL ||
	    (g->kind == K_GN && (s->a * (int64_t)es) % 16 != 0))
		return cudaSuccess;
	nv = s->n * (int64_t)es / 16;
	t = ((nv + 3) / 4 + 31) / 32 * 32;
	t = t < 32 ? 32 : t > 512 ? 512 : t;
	g->kv = (int)((nv + t - 1) / t);
	g->kv = g->kv <= 1 ? 1 : g->kv <= 2 ? 2 : g->kv <= 4 ? 4 : g->kv <= 8 ?
	    8 : 0;
	if (g->kv == 0)
		return cudaSuccess;
	g->threads = (int)t;
	g->nv = (int)nv;
	g->smem = is_norm(g->kind) ? (size_t)nv * 16 * (bwd ? 2 : 1) : 0;
	if (g->smem > prop->sharedMemPerBlockOptin)
		return cudaSuccess;
	g->vfn = vec_kernel_dt(g->dt, g->kind, g->kv);
	if (g->vfn == NULL)
		return cudaSuccess;
	if (g->smem > 0 && (e = cudaFuncSetAttribute(g->vfn,
	    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)g->smem)) !=
	    cudaSuccess)
		return e;
	if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, g->vfn,
	    g->threads, g->smem)) != cudaSuccess)
		return e;
	cap = env != NULL ? atoi(env) : bwd && g->kind != K_GN &&
	    is_norm(g->kind) ? 2 : occ;
	occ = occ < 1 ? 1 : occ > cap && cap > 0 ? cap : occ;
	g->nb = (int)(s->rows < (int64_t)g->sms * occ ? s->rows :
	    (int64_t)g->sms * occ);
	return cudaSuccess;
}

template <typename T>
static const void *
ce_kernel(int cs)
{
	switch (cs) {
	case 1: return (const void *)k_ce_cluster<T, 1>;
	case 2: return (const void *)k_ce_cluster<T, 2>;
	case 4: return (const void *)k_ce_cluster<T, 4>;
	default: return (const void *)k_ce_cluster<T, 8>;
	}
}

/* cross_entropy on sm_90 and later, rows of whole 16-byte vectors: the
 * fewest blocks a cluster (1, 2, 4, 8) whose slices of the row fit 100 KiB
 * of shared memory each. KIREF_CE=0 keeps the two-read kernel. */
static cudaError_t
plan_ce(struct fdev *g, const cudaDeviceProp *prop)
{
	size_t es = api_dtype_size(g->dt);
	int64_t bytes = g->s.n * (int64_t)es;
	int cs, occ = 0, maxcs, kb;
	cudaError_t e;

	g->cefn = NULL;
	if (g->kind != K_CE || prop->major < 9 || bytes % 16 != 0 ||
	    (getenv("KIREF_CE") != NULL && atoi(getenv("KIREF_CE")) == 0))
		return cudaSuccess;
	/* Clusters of 4 and 8 measured slower than two reads of the row
	 * (H100, 2026-12-06: V = 131072 fp32 forward 1.91x its floor with 8
	 * blocks of 64 KiB; clusters of 2 at V = 32768: 1.05x); KIREF_CE_CS
	 * raises the largest cluster tried, KIREF_CE_KB the slice. */
	maxcs = getenv("KIREF_CE_CS") != NULL ? atoi(getenv("KIREF_CE_CS")) : 2;
	kb = getenv("KIREF_CE_KB") != NULL ? atoi(getenv("KIREF_CE_KB")) : 100;
	for (cs = 1; cs <= maxcs && cs <= 8; cs *= 2)
		if ((bytes / 16) % cs == 0 && bytes / cs <= (int64_t)kb * 1024)
			break;
	if (cs > maxcs || cs > 8 || bytes / cs > 200 * 1024)
		return cudaSuccess;
	g->ce_cs = cs;
	g->ce_smem = (size_t)(bytes / cs);
	g->cefn = g->dt == API_DT_F32 ? ce_kernel<float>(cs) :
	    g->dt == API_DT_BF16 ? ce_kernel<__nv_bfloat16>(cs) :
	    ce_kernel<__half>(cs);
	if ((e = cudaFuncSetAttribute(g->cefn,
	    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)g->ce_smem)) !=
	    cudaSuccess ||
	    (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, g->cefn,
	    1024, g->ce_smem)) != cudaSuccess)
		return e;
	occ = occ < 1 ? 1 : occ;
	g->ce_grid = (unsigned)((int64_t)g->sms * occ / cs * cs);
	if ((int64_t)g->ce_grid > g->s.rows * cs)
		g->ce_grid = (unsigned)(g->s.rows * cs);
	if (g->ce_grid < (unsigned)cs)
		g->ce_grid = (unsigned)cs;
	return cudaSuccess;
}

template <typename T>
static cudaError_t
launch_t(struct fdev *g, int fwd, int bwd)
{
	const struct fam_shape *s = &g->s;
	int npt, th = row_threads(s->n, &npt);
	unsigned grid = (unsigned)(s->rows < (int64_t)g->nb ? s->rows : g->nb);
	void *const *d = g->d;
	size_t es = sizeof(T);
	int vecok = (s->n * (int64_t)es) % 16 == 0 &&
	    getenv("KIREF_SCALAR") == NULL;

	switch (g->kind) {
	case K_RMS:
	case K_FADD:
	case K_LN:
	case K_GN:
	case K_SOFTMAX:
	case K_SPARSEMAX: {
		row_args a;
		void *args[1] = { &a };

		memset(&a, 0, sizeof(a));
		a.rows = s->rows;
		a.n = s->n;
		a.nv = g->nv;
		a.eps = (float)s->eps;
		a.fwd = fwd;
		a.bwd = bwd;
		a.part_w = g->part_w;
		a.part_b = g->part_b;
		a.h = s->a;
		a.groups = s->b;
		a.cpg = s->c;
		if (g->kind == K_FADD) {
			a.x = d[FA_X]; a.res = d[FA_RES]; a.w = d[FA_W];
			a.y = d[FA_Y]; a.s = d[FA_S]; a.dy = d[FA_DY];
			a.ds = d[FA_DS]; a.dx = d[FA_DX];
		} else if (g->kind == K_LN || g->kind == K_GN) {
			a.x = d[LN_X]; a.w = d[LN_W]; a.b = d[LN_B]; a.y = d[LN_Y];
			a.dy = d[LN_DY]; a.dx = d[LN_DX];
		} else if (g->kind == K_RMS) {
			a.x = d[RMS_X]; a.w = d[RMS_W]; a.y = d[RMS_Y];
			a.dy = d[RMS_DY]; a.dx = d[RMS_DX];
		} else {
			a.x = d[EW_X]; a.y = d[EW_Y]; a.dy = d[EW_DY];
			a.dx = d[EW_DX];
		}
		if (g->vfn != NULL) {
			cudaError_t e = cudaLaunchKernel(g->vfn, dim3(grid),
			    dim3((unsigned)g->threads), args, g->smem, 0);

			if (e != cudaSuccess)
				return e;
		} else if (g->kind == K_GN) {
			k_rowgen<T, V_GN><<<grid, 1024>>>(a);
		} else if (g->kind == K_SPARSEMAX) {
			k_rowgen<T, V_SPARSEMAX><<<grid, 1024>>>(a);
		} else if (g->kind == K_SOFTMAX) {
			NPT_SWITCH(npt, (k_softmax<T, P><<<grid, th>>>(
			    (const T *)d[EW_X], (T *)d[EW_Y], (const T *)d[EW_DY],
			    (T *)d[EW_DX], s->rows, s->n, fwd, bwd)));
		} else {
			norm_args b;

			memset(&b, 0, sizeof(b));
			b.x = a.x; b.res = a.res; b.w = a.w; b.b = a.b; b.dy = a.dy;
			b.ds = a.ds; b.y = a.y; b.s = a.s; b.dx = a.dx;
			b.part_w = a.part_w; b.part_b = a.part_b;
			b.rows = a.rows; b.n = a.n; b.eps = a.eps; b.fwd = fwd;
			b.bwd = bwd;
			if (g->kind == K_FADD)
				NPT_SWITCH(npt, (k_norm<T, P, K_FADD><<<grid, th>>>(b)));
			else if (g->kind == K_LN)
				NPT_SWITCH(npt, (k_norm<T, P, K_LN><<<grid, th>>>(b)));
			else
				NPT_SWITCH(npt, (k_norm<T, P, K_RMS><<<grid, th>>>(b)));
		}
		if (bwd && g->kind == K_GN) {
			int64_t ch = s->b * s->c, m = s->rows / s->b;
			unsigned cg = (unsigned)((ch + 255) / 256);

			k_gn_colsum<T><<<cg, 256>>>(g->part_w, m, ch,
			    (T *)d[LN_DW]);
			k_gn_colsum<T><<<cg, 256>>>(g->part_b, m, ch,
			    (T *)d[LN_DB]);
		} else if (bwd && is_norm(g->kind)) {
			int wslot = g->kind == K_FADD ? (int)FA_DW :
			    g->kind == K_LN ? (int)LN_DW : (int)RMS_DW;
			unsigned cg = (unsigned)((s->n + 255) / 256);

			k_colsum<T><<<cg, 256>>>(g->part_w, (int)grid, s->n,
			    (T *)d[wslot]);
			if (g->kind == K_LN)
				k_colsum<T><<<cg, 256>>>(g->part_b, (int)grid, s->n,
				    (T *)d[LN_DB]);
		}
		break;
	}
	case K_RELU2:
	case K_SWIGLU: {
		unsigned eg = (unsigned)g->sms * 16;

		if (vecok && g->kind == K_RELU2)
			k_elementwise_v<T, 0><<<eg, 512>>>((const uint4 *)d[EW_X],
			    (uint4 *)d[EW_Y], (const uint4 *)d[EW_DY],
			    (uint4 *)d[EW_DX], s->rows * s->n * (int64_t)es / 16,
			    0, fwd, bwd);
		else if (vecok)
			k_elementwise_v<T, 1><<<eg, 512>>>((const uint4 *)d[EW_X],
			    (uint4 *)d[EW_Y], (const uint4 *)d[EW_DY],
			    (uint4 *)d[EW_DX], s->rows * s->n * (int64_t)es / 16,
			    s->n * (int64_t)es / 16, fwd, bwd);
		else if (g->kind == K_RELU2)
			k_elementwise<T, K_RELU2><<<eg, 512>>>(
			    (const T *)d[EW_X], (T *)d[EW_Y], (const T *)d[EW_DY],
			    (T *)d[EW_DX], s->rows, s->n, fwd, bwd);
		else
			k_elementwise<T, K_SWIGLU><<<eg, 512>>>(
			    (const T *)d[EW_X], (T *)d[EW_Y], (const T *)d[EW_DY],
			    (T *)d[EW_DX], s->rows, s->n, fwd, bwd);
		break;
	}
	case K_ROPE:
	case K_ROPE4: {
		rope_args a;
		int l4 = g->kind == K_ROPE4;
		int64_t d2 = l4 ? s->n : s->n / 2;
		unsigned rg = (unsigned)g->sms * 16;

		a.q = d[fwd ? RO_Q : RO_DQ];
		a.k = d[fwd ? RO_K : RO_DK];
		a.qo = d[fwd ? RO_QO : RO_DQI];
		a.ko = d[fwd ? RO_KO : RO_DKI];
		a.tab = d[RO_TAB];
		a.rows = s->rows;
		a.t = s->c;
		a.hq = s->a;
		a.hk = s->b;
		a.d = s->n;
		a.inv = 0;
		/* Forward rotates q and k; backward rotates dq and dk back;
		 * full does both. */
		for (int part = 0; part < 2; part++) {
			if ((part == 0 && !fwd) || (part == 1 && !bwd))
				continue;
			a.inv = part;
			a.q = d[part == 0 ? RO_Q : RO_DQ];
			a.k = d[part == 0 ? RO_K : RO_DK];
			a.qo = d[part == 0 ? RO_QO : RO_DQI];
			a.ko = d[part == 0 ? RO_KO : RO_DKI];
			if ((d2 * (int64_t)es) % 16 == 0 &&
			    getenv("KIREF_SCALAR") == NULL) {
				if (l4)
					k_rope_v<T, true><<<rg, 256>>>(a);
				else
					k_rope_v<T, false><<<rg, 256>>>(a);
			} else if (l4) {
				k_rope_s<T, true><<<rg, 256>>>(a);
			} else {
				k_rope_s<T, false><<<rg, 256>>>(a);
			}
		}
		break;
	}
	default: {
		unsigned lg = (unsigned)(s->rows < (int64_t)g->sms * 8 ? s->rows :
		    (int64_t)g->sms * 8);
		float sc = (float)s->scale;
		int lnv = (int)(s->n * (int64_t)es / 16);
#define LOSS(K, LK) do {                                                \
	if (vecok)                                                      \
		k_loss_v<T, LK><<<lg, 1024>>>((const uint4 *)d[LS_X], d[LS_T], \
		    (float *)d[LS_L], (uint4 *)d[LS_DX], s->rows, s->n, lnv, sc, \
		    fwd, bwd);                                          \
	else                                                            \
		k_loss<T, K><<<lg, 1024>>>((const T *)d[LS_X], d[LS_T],  \
		    (float *)d[LS_L], (T *)d[LS_DX], s->rows, s->n, sc, fwd, \
		    bwd);                                               \
} while (0)
		if (g->kind == K_CE && g->cefn != NULL) {
			const void *xp = d[LS_X], *tp = d[LS_T];
			void *lp = d[LS_L], *dp = d[LS_DX];
			int64_t rows = s->rows;
			int cnv = lnv;
			void *args[] = { &xp, &tp, &lp, &dp, &rows, &cnv, &sc, &fwd,
			    &bwd };
			cudaLaunchConfig_t cfg;
			cudaLaunchAttribute at[1];

			memset(&cfg, 0, sizeof(cfg));
			memset(at, 0, sizeof(at));
			at[0].id = cudaLaunchAttributeClusterDimension;
			at[0].val.clusterDim.x = (unsigned)g->ce_cs;
			at[0].val.clusterDim.y = 1;
			at[0].val.clusterDim.z = 1;
			cfg.gridDim = dim3(g->ce_grid);
			cfg.blockDim = dim3(1024);
			cfg.dynamicSmemBytes = g->ce_smem;
			cfg.attrs = at;
			cfg.numAttrs = 1;
			cudaError_t e = cudaLaunchKernelExC(&cfg, g->cefn, args);

			if (e != cudaSuccess)
				return e;
		} else if (g->kind == K_CE) {
			LOSS(K_CE, L_CE);
		}
		else if (g->kind == K_KL)
			LOSS(K_KL, L_KL);
		else if (g->kind == K_JSD)
			LOSS(K_JSD, L_JSD);
		else
			LOSS(K_TVD, L_TVD);
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
	if (g->kind == K_ROPE || g->kind == K_ROPE4) {
		int l4 = g->kind == K_ROPE4;

		if (g->dt == API_DT_F32 || l4)
			k_rope_table<float><<<grid, 256>>>(g->d[RO_TAB], s->c, s->n,
			    l4);
		else if (g->dt == API_DT_BF16)
			k_rope_table<__nv_bfloat16><<<grid, 256>>>(g->d[RO_TAB],
			    s->c, s->n, 0);
		else
			k_rope_table<__half><<<grid, 256>>>(g->d[RO_TAB], s->c,
			    s->n, 0);
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

/* One pass of a job, for ref_cuda_bench. */
struct fam_job {
	struct fdev *g;
	int fwd, bwd;
};

static cudaError_t
fam_pass_job(void *arg)
{
	struct fam_job *j = (struct fam_job *)arg;

	return launch(j->g, j->fwd, j->bwd);
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
	/* Not for the norms (their weight gradients need every row), nor
	 * for group_norm and the rotary families (a row's arithmetic
	 * depends on its index). */
	compact = bytes > (1u << 30) && g->kind != K_RMS && g->kind != K_FADD &&
	    g->kind != K_LN && g->kind != K_GN && g->kind != K_ROPE &&
	    g->kind != K_ROPE4 && s->rows > REF_SAMPLE_ROWS;
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
	void *host[FAM_MAX_SLOTS] = { NULL };
	unsigned long long *nans = NULL, h_nans = 0;
	double t_start = ref_wall_ms(), need = 0, part;
	size_t free_b = 0, total_b = 0;
	uint64_t seed = job->seed != 0 ? job->seed :
	    (uint64_t)(t_start * 1e6) ^ 0xfeedull;
	int fwd = job->pass != REF_BACKWARD, bwd = job->pass != REF_FORWARD;
	int i, rc = KI_OK, drv = 0, npt;
	struct fam_shape hs;
	struct fam_job fj = { &g, fwd, bwd };

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
	/* Row blocks for the register-held fallback: enough resident to
	 * fill the device, no more (each adds a row of parameter-gradient
	 * partial sums); the vector path sizes its own (plan_rows). */
	g.nb = g.sms * (g.s.n <= 1024 ? 8 : g.s.n <= 4096 ? 4 : 2);
	CK(plan_rows(&g, bwd, &prop));
	CK(plan_ce(&g, &prop));
	if (g.vfn == NULL && (g.kind == K_RMS || g.kind == K_FADD ||
	    g.kind == K_LN || g.kind == K_SOFTMAX) &&
	    (row_threads(g.s.n, &npt), npt == 0)) {
		snprintf(err, errlen, "rows of more than 32768 elements that are "
		    "not whole 16-byte vectors are not implemented on the CUDA "
		    "backend");
		rc = KI_ELIMIT;
		goto out;
	}
	for (i = 0; i < g.s.nslots; i++)
		need += (double)fam_slot_elems(&g.s, i) *
		    (double)fam_slot_esize(&g.s, i, g.dt);
	/* Partial sums: a row a block (norms), cpg a row (group_norm). */
	part = (double)g.nb * (double)g.s.n;
	if (g.kind == K_GN && (double)g.s.rows * (double)g.s.c > part)
		part = (double)g.s.rows * (double)g.s.c;
	need += 2.0 * part * 4 + (double)job->flush_bytes;
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
	CK(cudaMalloc((void **)&g.part_w, (size_t)part * 4 + 16));
	CK(cudaMalloc((void **)&g.part_b, (size_t)part * 4 + 16));
	CK(cudaMalloc((void **)&nans, sizeof(*nans)));
	CK(fill(&g, NULL, 0, seed));
	if (!fwd)
		CK(launch(&g, 1, 0));

	/* do_bench (ref_cuda_bench, as the embedding is timed). */
	rc = ref_cuda_bench(job, fam_pass_job, &fj, t_start, r, err, errlen);
	if (rc != KI_OK)
		goto out;
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
	for (i = 0; i < FAM_MAX_SLOTS; i++) {
		cudaFree(g.d[i]);
		free(host[i]);
	}
	cudaFree(g.part_w);
	cudaFree(g.part_b);
	cudaFree(nans);
	return rc;
}
