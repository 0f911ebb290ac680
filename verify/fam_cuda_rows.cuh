/* verify/fam_cuda_rows.cuh — the 16-byte-vector kernels of the row-wise
 * families (included by verify/fam_cuda.cu): a row staged in shared
 * memory (norms, group_norm, softmax, sparsemax), elementwise activations,
 * losses over a vocabulary, rotary embeddings. A row is nv 16-byte
 * vectors; thread t owns vectors t + k·blockDim (k < KV), loads all of
 * them before using any (KV loads in flight), and keeps its share of a
 * parameter gradient in registers across the rows its block takes. */
#ifndef VERIFY_FAM_CUDA_ROWS_CUH
#define VERIFY_FAM_CUDA_ROWS_CUH

#include <cooperative_groups.h>

#include "verify/fam_cuda.cuh"

enum vkind { V_RMS, V_FADD, V_LN, V_GN, V_SOFTMAX, V_SPARSEMAX };

struct row_args {
	const void *x, *res, *w, *b, *dy, *ds;
	void *y, *s, *dx;
	float *part_w, *part_b;  /* norms: [grid][n]; group_norm: [rows][cpg] */
	int64_t rows, n;
	int nv;                  /* 16-byte vectors a row */
	int64_t h, groups, cpg;  /* group_norm: elements a channel, groups,
	                          * channels a group */
	float eps;
	int fwd, bwd;
};

/* Loads the KV vectors this thread owns of row vector offset o of src
 * into u (all loads issued before any use). */
template <int KV>
__device__ __forceinline__ void
load_row(const uint4 *__restrict__ src, int64_t o, int nv, uint4 *u)
{
#pragma unroll
	for (int k = 0; k < KV; k++) {
		int c = threadIdx.x + k * blockDim.x;

		if (c < nv)
			u[k] = __ldg(src + o + c);
	}
}

/* The weight of element j of a row (group_norm: its channel's). */
template <typename T, int KIND>
__device__ __forceinline__ void
load_w(const T *__restrict__ w, int c, int64_t ch0, int64_t h, float *f)
{
	constexpr int V = vec<T>::N;

	if (KIND == V_GN) {
		float v = ld(w, ch0 + (int64_t)c * V / h);
#pragma unroll
		for (int e = 0; e < V; e++)
			f[e] = v;
	} else {
		vec<T>::load(__ldg((const uint4 *)w + c), f);
	}
}

/* rms_norm, fused_add_rms_norm, layer_norm, group_norm: forward, backward
 * (reading the saved input: x, or the residual sum s) or both in one
 * pass. Shared memory: the row (nv vectors), and dy's row in a backward. */
template <typename T, int KV, int KIND>
__global__ void __launch_bounds__(512)
k_norm_v(row_args a)
{
	constexpr int V = vec<T>::N;
	extern __shared__ uint4 sm[];
	__shared__ float red[64];
	const T *w = (const T *)a.w, *bias = (const T *)a.b;
	const uint4 *xg = (const uint4 *)a.x, *dyg = (const uint4 *)a.dy;
	const int nv = a.nv, tid = threadIdx.x, bd = blockDim.x;
	uint4 *xs = sm, *gs = sm + nv;
	const float inv_n = 1.f / (float)a.n;
	constexpr bool PART = KIND == V_RMS || KIND == V_FADD || KIND == V_LN;
	constexpr int CH = KV < 4 ? KV : 4;
	/* The weight (and bias) vectors a thread owns are the same for every
	 * row: held in registers where they fit, not re-read a row. */
	constexpr bool HOLDW = KIND != V_GN && KV <= 4;
	uint4 wr[HOLDW ? KV : 1], br[HOLDW && KIND == V_LN ? KV : 1];
	float pw[PART ? KV * V : 1], pb[KIND == V_LN ? KV * V : 1];

#pragma unroll
	for (int i = 0; i < (PART ? KV * V : 1); i++)
		pw[i] = 0.f;
#pragma unroll
	for (int i = 0; i < (KIND == V_LN ? KV * V : 1); i++)
		pb[i] = 0.f;
	if (HOLDW)
#pragma unroll
		for (int k = 0; k < KV; k++) {
			int c = tid + k * bd;

			if (c < nv) {
				wr[HOLDW ? k : 0] = __ldg((const uint4 *)w + c);
				if (KIND == V_LN)
					br[HOLDW && KIND == V_LN ? k : 0] =
					    __ldg((const uint4 *)bias + c);
			}
		}
	for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
		const int64_t o = r * nv;
		const int64_t ch0 = KIND == V_GN ? (r % a.groups) * a.cpg : 0;
		float s1 = 0.f, s2 = 0.f, mean = 0.f, rstd;

		/* Load the row (and dy's), stage it, sum it: CH vectors in
		 * flight at a time, so that the loads do not take the
		 * registers the weight-gradient sums hold. */
#pragma unroll
		for (int k0 = 0; k0 < KV; k0 += CH) {
			uint4 u[CH];

			if (KIND == V_FADD && a.fwd) {
				uint4 q[CH];

				load_row<CH>(xg, o + k0 * bd, nv - k0 * bd, u);
				load_row<CH>((const uint4 *)a.res, o + k0 * bd,
				    nv - k0 * bd, q);
#pragma unroll
				for (int k = 0; k < CH; k++) {
					int c = tid + (k0 + k) * bd;
					float f[V], e2[V];

					if (c >= nv)
						continue;
					vec<T>::load(u[k], f);
					vec<T>::load(q[k], e2);
#pragma unroll
					for (int e = 0; e < V; e++)
						f[e] += e2[e];
					u[k] = vec<T>::store(f);
					((uint4 *)a.s)[o + c] = u[k];
				}
			} else {
				load_row<CH>(KIND == V_FADD ? (const uint4 *)a.s : xg,
				    o + k0 * bd, nv - k0 * bd, u);
			}
#pragma unroll
			for (int k = 0; k < CH; k++) {
				int c = tid + (k0 + k) * bd;
				float f[V];

				if (c >= nv)
					continue;
				xs[c] = u[k];
				vec<T>::load(u[k], f);
#pragma unroll
				for (int e = 0; e < V; e++) {
					s1 += f[e];
					s2 += f[e] * f[e];
				}
			}
		}
		if (a.bwd) {
#pragma unroll
			for (int k0 = 0; k0 < KV; k0 += CH) {
				uint4 g[CH];

				load_row<CH>(dyg, o + k0 * bd, nv - k0 * bd, g);
#pragma unroll
				for (int k = 0; k < CH; k++) {
					int c = tid + (k0 + k) * bd;

					if (c < nv)
						gs[c] = g[k];
				}
			}
		}
		if (KIND == V_LN || KIND == V_GN) {
			/* Two passes: the mean, then the squares about it. */
			mean = block_reduce<false>(s1, red) * inv_n;
			s2 = 0.f;
#pragma unroll
			for (int k = 0; k < KV; k++) {
				int c = tid + k * bd;
				float f[V];

				if (c >= nv)
					continue;
				vec<T>::load(xs[c], f);
#pragma unroll
				for (int e = 0; e < V; e++)
					s2 += (f[e] - mean) * (f[e] - mean);
			}
		}
		rstd = rsqrtf(block_reduce<false>(s2, red) * inv_n + a.eps);
		if (a.fwd) {
#pragma unroll
			for (int k = 0; k < KV; k++) {
				int c = tid + k * bd;
				float f[V], wf[V], bf[V];

				if (c >= nv)
					continue;
				vec<T>::load(xs[c], f);
				if (HOLDW)
					vec<T>::load(wr[HOLDW ? k : 0], wf);
				else
					load_w<T, KIND>(w, c, ch0, a.h, wf);
				if (HOLDW && KIND == V_LN)
					vec<T>::load(br[HOLDW && KIND == V_LN ? k : 0], bf);
				else if (KIND == V_LN || KIND == V_GN)
					load_w<T, KIND>(bias, c, ch0, a.h, bf);
#pragma unroll
				for (int e = 0; e < V; e++)
					f[e] = KIND == V_LN || KIND == V_GN ?
					    (f[e] - mean) * rstd * wf[e] + bf[e] :
					    f[e] * rstd * wf[e];
				((uint4 *)a.y)[o + c] = vec<T>::store(f);
			}
		}
		if (!a.bwd)
			continue;
		{
			float sg = 0.f, sgx = 0.f, c1, c2;

#pragma unroll
			for (int k = 0; k < KV; k++) {
				int c = tid + k * bd;
				float f[V], d[V], wf[V];

				if (c >= nv)
					continue;
				vec<T>::load(xs[c], f);
				vec<T>::load(gs[c], d);
				if (HOLDW)
					vec<T>::load(wr[HOLDW ? k : 0], wf);
				else
					load_w<T, KIND>(w, c, ch0, a.h, wf);
#pragma unroll
				for (int e = 0; e < V; e++) {
					float xh = (f[e] - mean) * rstd;
					float gw = d[e] * wf[e];

					sg += gw;
					sgx += gw * xh;
					if (PART)
						pw[k * V + e] += d[e] * xh;
					if (KIND == V_LN)
						pb[k * V + e] += d[e];
				}
			}
			if (KIND == V_GN) {
				/* Per channel of the group: Σ dy·x̂ and Σ dy,
				 * written per row, summed over samples later. */
				for (int64_t cl = 0; cl < a.cpg; cl++) {
					float pdw = 0.f, pdb = 0.f;
					float2 t;

#pragma unroll
					for (int k = 0; k < KV; k++) {
						int c = tid + k * bd;
						float f[V], d[V];

						if (c >= nv ||
						    (int64_t)c * V / a.h != cl)
							continue;
						vec<T>::load(xs[c], f);
						vec<T>::load(gs[c], d);
#pragma unroll
						for (int e = 0; e < V; e++) {
							pdw += d[e] * (f[e] - mean) *
							    rstd;
							pdb += d[e];
						}
					}
					t = block_sum2(pdw, pdb, red);
					if (tid == 0) {
						a.part_w[r * a.cpg + cl] = t.x;
						a.part_b[r * a.cpg + cl] = t.y;
					}
				}
			}
			{
				float2 t = block_sum2(sg, sgx, red);

				c1 = KIND == V_LN || KIND == V_GN ? t.x * inv_n : 0.f;
				c2 = t.y * inv_n;
			}
#pragma unroll
			for (int k = 0; k < KV; k++) {
				int c = tid + k * bd;
				float f[V], d[V], wf[V], ds[V];

				if (c >= nv)
					continue;
				vec<T>::load(xs[c], f);
				vec<T>::load(gs[c], d);
				if (HOLDW)
					vec<T>::load(wr[HOLDW ? k : 0], wf);
				else
					load_w<T, KIND>(w, c, ch0, a.h, wf);
				if (KIND == V_FADD)
					vec<T>::load(__ldg((const uint4 *)a.ds + o + c),
					    ds);
#pragma unroll
				for (int e = 0; e < V; e++) {
					float xh = (f[e] - mean) * rstd;

					f[e] = rstd * (d[e] * wf[e] - c1 - xh * c2);
					if (KIND == V_FADD)
						f[e] += ds[e];
				}
				((uint4 *)a.dx)[o + c] = vec<T>::store(f);
			}
		}
	}
	if (PART && a.bwd)
#pragma unroll
	for (int k = 0; k < KV; k++) {
		int c = tid + k * bd;

		if (c >= nv)
			continue;
#pragma unroll
		for (int e = 0; e < V; e += 4) {
			int64_t j = (int64_t)blockIdx.x * a.n + (int64_t)c * V + e;

			*(float4 *)(a.part_w + j) = make_float4(pw[k * V + e],
			    pw[k * V + e + 1], pw[k * V + e + 2], pw[k * V + e + 3]);
			if (KIND == V_LN)
				*(float4 *)(a.part_b + j) = make_float4(pb[k * V + e],
				    pb[k * V + e + 1], pb[k * V + e + 2],
				    pb[k * V + e + 3]);
		}
	}
}

/* group_norm's weight and bias gradients: out[g·cpg + cl] = Σ over
 * samples m of part[(m·groups + g)·cpg + cl], in sample order. */
template <typename T>
__global__ void
k_gn_colsum(const float *part, int64_t samples, int64_t channels, T *out)
{
	for (int64_t ch = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	    ch < channels; ch += (int64_t)gridDim.x * blockDim.x) {
		float acc = 0.f;

		for (int64_t m = 0; m < samples; m++)
			acc += part[m * channels + ch];
		st(out, ch, acc);
	}
}

/* softmax (y = exp(x - max) / Σ) and sparsemax (y = max(x - τ, 0), τ by
 * Michelot's fixed point from the support {x > max − 1}: τ ← (Σ_S x − 1)
 * / |S| over S = {x > τ} until S stops shrinking; the result is the
 * sorted algorithm's τ). Backward reads the saved y. */
template <typename T, int KV, int KIND>
__global__ void __launch_bounds__(512)
k_softmax_v(row_args a)
{
	constexpr int V = vec<T>::N;
	__shared__ float red[64];
	__shared__ double redd[KIND == V_SOFTMAX ? 1 : 64];
	const int nv = a.nv, tid = threadIdx.x, bd = blockDim.x;

	for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
		const int64_t o = r * nv;
		uint4 u[KV], g[KV];
		float yv[KV][V];

		load_row<KV>((const uint4 *)(a.fwd ? a.x : a.y), o, nv, u);
		if (a.bwd)
			load_row<KV>((const uint4 *)a.dy, o, nv, g);
		if (a.fwd) {
			float m = -INFINITY;

#pragma unroll
			for (int k = 0; k < KV; k++) {
				int c = tid + k * bd;

				if (c < nv)
					vec<T>::load(u[k], yv[k]);
				else
#pragma unroll
					for (int e = 0; e < V; e++)
						yv[k][e] = -INFINITY;
#pragma unroll
				for (int e = 0; e < V; e++)
					m = fmaxf(m, yv[k][e]);
			}
			m = block_reduce<true>(m, red);
			if (KIND == V_SOFTMAX) {
				float sum = 0.f;

#pragma unroll
				for (int k = 0; k < KV; k++)
#pragma unroll
					for (int e = 0; e < V; e++) {
						yv[k][e] = __expf(yv[k][e] - m);
						sum += yv[k][e];
					}
				sum = 1.f / block_reduce<false>(sum, red);
#pragma unroll
				for (int k = 0; k < KV; k++)
#pragma unroll
					for (int e = 0; e < V; e++)
						yv[k][e] *= sum;
			} else {
				float tau = m - 1.f, cnt_prev = 3.0e38f;

				for (;;) {
					float s = 0.f, cnt = 0.f;
					float2 t;

#pragma unroll
					for (int k = 0; k < KV; k++)
#pragma unroll
						for (int e = 0; e < V; e++)
							if (yv[k][e] > tau) {
								s += yv[k][e];
								cnt += 1.f;
							}
					t = block_sum2(s, cnt, red);
					if (t.y >= cnt_prev)
						break;
					cnt_prev = t.y;
					tau = (t.x - 1.f) / t.y;
				}
#pragma unroll
				for (int k = 0; k < KV; k++)
#pragma unroll
					for (int e = 0; e < V; e++)
						yv[k][e] = fmaxf(yv[k][e] - tau, 0.f);
			}
#pragma unroll
			for (int k = 0; k < KV; k++) {
				int c = tid + k * bd;

				if (c < nv)
					((uint4 *)a.y)[o + c] = vec<T>::store(yv[k]);
			}
		} else {
#pragma unroll
			for (int k = 0; k < KV; k++) {
				int c = tid + k * bd;

				if (c < nv)
					vec<T>::load(u[k], yv[k]);
				else
#pragma unroll
					for (int e = 0; e < V; e++)
						yv[k][e] = 0.f;
			}
		}
		if (!a.bwd)
			continue;
		{
			float d[KV][V], s = 0.f, cnt = 0.f, dot = 0.f;
			double ds = 0.0, dmean = 0.0;

#pragma unroll
			for (int k = 0; k < KV; k++) {
				int c = tid + k * bd;

				if (c < nv)
					vec<T>::load(g[k], d[k]);
				else
#pragma unroll
					for (int e = 0; e < V; e++)
						d[k][e] = 0.f;
#pragma unroll
				for (int e = 0; e < V; e++) {
					if (KIND == V_SOFTMAX) {
						s += d[k][e] * yv[k][e];
					} else if (yv[k][e] > 0.f) {
						ds += d[k][e];
						cnt += 1.f;
					}
				}
			}
			if (KIND == V_SOFTMAX) {
				dot = block_reduce<false>(s, red);
			} else {
				double2 t = block_sum2d(ds, cnt, redd);

				dmean = t.y > 0.0 ? t.x / t.y : 0.0;
			}
#pragma unroll
			for (int k = 0; k < KV; k++) {
				int c = tid + k * bd;

				if (c >= nv)
					continue;
#pragma unroll
				for (int e = 0; e < V; e++)
					d[k][e] = KIND == V_SOFTMAX ?
					    yv[k][e] * (d[k][e] - dot) :
					    yv[k][e] > 0.f ?
					    (float)((double)d[k][e] - dmean) : 0.f;
				((uint4 *)a.dx)[o + c] = vec<T>::store(d[k]);
			}
		}
	}
}

/* relu_squared (KIND 0) and megatron_swiglu (KIND 1) over 16-byte
 * vectors, two in flight per thread; f vectors a row of y (swiglu: x's
 * row holds the gate's f vectors, then the up projection's). */
template <typename T, int KIND>
__global__ void
k_elementwise_v(const uint4 *__restrict__ x, uint4 *__restrict__ y,
	const uint4 *__restrict__ dy, uint4 *__restrict__ dx, int64_t total,
	int64_t f, int fwd, int bwd)
{
	constexpr int V = vec<T>::N;
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;

	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	    i < total; i += stride) {
		if (KIND == 0) {
			float a[V], d[V];
			uint4 ua = __ldg(x + i), ud = make_uint4(0, 0, 0, 0);

			if (bwd)
				ud = __ldg(dy + i);
			vec<T>::load(ua, a);
			vec<T>::load(ud, d);
#pragma unroll
			for (int e = 0; e < V; e++) {
				a[e] = fmaxf(a[e], 0.f);
				d[e] = 2.f * a[e] * d[e];
				a[e] = a[e] * a[e];
			}
			if (fwd)
				__stcs(y + i, vec<T>::store(a));
			if (bwd)
				__stcs(dx + i, vec<T>::store(d));
		} else {
			int64_t r = i / f, c = i - r * f;
			int64_t ia = r * 2 * f + c, ib = ia + f;
			float a[V], b[V], d[V], o[V];
			uint4 ua = __ldg(x + ia), ub = __ldg(x + ib);
			uint4 ud = make_uint4(0, 0, 0, 0);

			if (bwd)
				ud = __ldg(dy + i);
			vec<T>::load(ua, a);
			vec<T>::load(ub, b);
			vec<T>::load(ud, d);
#pragma unroll
			for (int e = 0; e < V; e++) {
				float sg = 1.f / (1.f + __expf(-a[e])), silu = a[e] * sg;

				o[e] = silu * b[e];
				a[e] = d[e] * b[e] * sg * (1.f + a[e] * (1.f - sg));
				b[e] = d[e] * silu;
			}
			if (fwd)
				__stcs(y + i, vec<T>::store(o));
			if (bwd) {
				__stcs(dx + ia, vec<T>::store(a));
				__stcs(dx + ib, vec<T>::store(b));
			}
		}
	}
}

/* ---- rotary embeddings: a unit is V elements of one head of one token
 * (rope: V of the first half and the V they pair with in the second) ---- */

struct rope_args {
	const void *q, *k, *tab;  /* inputs (forward: q, k; backward: dq, dk) */
	void *qo, *ko;
	int64_t rows, t, hq, hk, d;
	int inv;                  /* the backward: the inverse rotation */
};

/* rope (HF rotate_half; tab = [cos (T, d); sin (T, d)] in the dtype) and
 * llama4_rope (L4: interleaved pairs, tab (T, d/2) complex64). */
template <typename T, bool L4>
__global__ void
k_rope_v(rope_args a)
{
	constexpr int V = vec<T>::N;
	const int64_t per = L4 ? a.d / V : a.d / 2 / V;
	const int64_t nq = a.rows * a.hq * per, nk = a.rows * a.hk * per;

	for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	    u < nq + nk; u += (int64_t)gridDim.x * blockDim.x) {
		int isq = u < nq;
		int64_t v = isq ? u : u - nq, heads = isq ? a.hq : a.hk;
		int64_t p = v % per, rh = v / per, row = rh / heads;
		int64_t t = row % a.t, base = rh * a.d;
		const uint4 *src = (const uint4 *)(isq ? a.q : a.k);
		uint4 *dst = (uint4 *)(isq ? a.qo : a.ko);

		if (L4) {
			const float4 *fc = (const float4 *)a.tab +
			    (t * a.d + p * V) / 4;
			float x[V], tb[V], y[V];

			vec<T>::load(__ldg(src + base / V + p), x);
#pragma unroll
			for (int e = 0; e < V / 4; e++) {
				float4 f4 = __ldg(fc + e);

				tb[4 * e] = f4.x;
				tb[4 * e + 1] = f4.y;
				tb[4 * e + 2] = f4.z;
				tb[4 * e + 3] = f4.w;
			}
#pragma unroll
			for (int e = 0; e < V; e += 2) {
				float c = tb[e], s = a.inv ? -tb[e + 1] : tb[e + 1];

				y[e] = x[e] * c - x[e + 1] * s;
				y[e + 1] = x[e] * s + x[e + 1] * c;
			}
			dst[base / V + p] = vec<T>::store(y);
		} else {
			const int64_t hv = a.d / 2 / V;
			const uint4 *cs = (const uint4 *)a.tab + t * (a.d / V);
			const uint4 *sn = (const uint4 *)a.tab +
			    (a.t + t) * (a.d / V);
			float x1[V], x2[V], c1[V], c2[V], s1[V], s2[V], y1[V], y2[V];

			vec<T>::load(__ldg(src + base / V + p), x1);
			vec<T>::load(__ldg(src + base / V + hv + p), x2);
			vec<T>::load(__ldg(cs + p), c1);
			vec<T>::load(__ldg(cs + hv + p), c2);
			vec<T>::load(__ldg(sn + p), s1);
			vec<T>::load(__ldg(sn + hv + p), s2);
#pragma unroll
			for (int e = 0; e < V; e++) {
				if (!a.inv) {
					y1[e] = x1[e] * c1[e] - x2[e] * s1[e];
					y2[e] = x2[e] * c2[e] + x1[e] * s2[e];
				} else {
					y1[e] = x1[e] * c1[e] + x2[e] * s2[e];
					y2[e] = x2[e] * c2[e] - x1[e] * s1[e];
				}
			}
			dst[base / V + p] = vec<T>::store(y1);
			dst[base / V + hv + p] = vec<T>::store(y2);
		}
	}
}

/* The same, one element (rope: one pair) a thread, for head dimensions
 * that are not whole vectors. */
template <typename T, bool L4>
__global__ void
k_rope_s(rope_args a)
{
	const int64_t per = a.d / 2;
	const int64_t nq = a.rows * a.hq * per, nk = a.rows * a.hk * per;
	const T *tab = (const T *)a.tab;
	const float *fc = (const float *)a.tab;

	for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	    u < nq + nk; u += (int64_t)gridDim.x * blockDim.x) {
		int isq = u < nq;
		int64_t v = isq ? u : u - nq, heads = isq ? a.hq : a.hk;
		int64_t i = v % per, rh = v / per, row = rh / heads;
		int64_t t = row % a.t, base = rh * a.d;
		const T *x = (const T *)(isq ? a.q : a.k) + base;
		T *y = (T *)(isq ? a.qo : a.ko) + base;

		if (L4) {
			float c = fc[t * a.d + 2 * i], s = fc[t * a.d + 2 * i + 1];
			float x0 = ld(x, 2 * i), x1 = ld(x, 2 * i + 1);

			s = a.inv ? -s : s;
			st(y, 2 * i, x0 * c - x1 * s);
			st(y, 2 * i + 1, x0 * s + x1 * c);
		} else {
			int64_t h = per;
			float x1 = ld(x, i), x2 = ld(x, i + h);
			float c1 = ld(tab, t * a.d + i), c2 = ld(tab, t * a.d + i + h);
			float s1 = ld(tab, (a.t + t) * a.d + i);
			float s2 = ld(tab, (a.t + t) * a.d + i + h);

			if (!a.inv) {
				st(y, i, x1 * c1 - x2 * s1);
				st(y, i + h, x2 * c2 + x1 * s2);
			} else {
				st(y, i, x1 * c1 + x2 * s2);
				st(y, i + h, x2 * c2 - x1 * s1);
			}
		}
	}
}

/* The rotary tables on the device: rope's cos and sin (T, d), each
 * frequency twice; llama4_rope's (T, d/2) complex64. */
template <typename T>
__global__ void
k_rope_table(void *tab, int64_t t_len, int64_t d, int l4)
{
	int64_t n = l4 ? t_len * (d / 2) : t_len * d;

	for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < n;
	    u += (int64_t)gridDim.x * blockDim.x) {
		if (l4) {
			int64_t t = u / (d / 2), i = u % (d / 2);
			double ang = (double)t * pow(10000.0, -2.0 * (double)i /
			    (double)d);

			((float *)tab)[t * d + 2 * i] = (float)cos(ang);
			((float *)tab)[t * d + 2 * i + 1] = (float)sin(ang);
		} else {
			int64_t t = u / d, i = u % d;
			double ang = (double)t * pow(10000.0, -2.0 *
			    (double)(i % (d / 2)) / (double)d);

			st((T *)tab, u, (float)cos(ang));
			st((T *)tab, t_len * d + u, (float)sin(ang));
		}
	}
}

/* ---- losses over a vocabulary: a block per row, 16-byte vectors, two
 * in flight per thread ---- */

enum lkind { L_CE, L_KL, L_JSD, L_TVD };

/* The loss terms of V elements (KL, JSD, TVD): acc += the loss, g = the
 * gradient of each element before the scale. */
template <int KIND, int V>
__device__ __forceinline__ void
div_terms(const float *x, const float *p, float *acc, float *g)
{
#pragma unroll
	for (int e = 0; e < V; e++) {
		float a = x[e], b = p[e];

		if (KIND == L_KL) {
			*acc += b > 0.f ? b * (__logf(b) - a) : 0.f;
			g[e] = -b;
		} else if (KIND == L_JSD) {
			float q = __expf(a), pp = __expf(b);
			float lm = __logf(0.5f * pp + 0.5f * q);

			*acc += 0.5f * pp * (b - lm) + 0.5f * q * (a - lm);
			g[e] = 0.5f * q * (a - lm);
		} else {
			*acc += fabsf(a - b);
			g[e] = a > b ? 0.5f : -0.5f;
		}
	}
}

template <typename T, int KIND>
__global__ void __launch_bounds__(1024)
k_loss_v(const uint4 *__restrict__ x, const void *tgt, float *loss,
	uint4 *__restrict__ dx, int64_t rows, int64_t n, int nv, float scale,
	int fwd, int bwd)
{
	constexpr int V = vec<T>::N;
	__shared__ float sh[64];
	const int tid = threadIdx.x, bd = blockDim.x;

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		const uint4 *xr = x + r * nv;
		uint4 *dr = dx + r * nv;

		if (KIND == L_CE) {
			int64_t t = ((const int64_t *)tgt)[r];
			float m = -INFINITY, s = 0.f, lse;
			int c = tid;

			/* Online max and sum: one rescale a vector. */
			for (; c < nv; c += 2 * bd) {
				float f[2][V];
				uint4 u0 = __ldg(xr + c), u1 = make_uint4(0, 0, 0, 0);
				int two = c + bd < nv;

				if (two)
					u1 = __ldg(xr + c + bd);
				vec<T>::load(u0, f[0]);
				vec<T>::load(u1, f[1]);
#pragma unroll
				for (int h = 0; h < 2; h++) {
					float vm = f[h][0], ns = 0.f;

					if (h == 1 && !two)
						break;
#pragma unroll
					for (int e = 1; e < V; e++)
						vm = fmaxf(vm, f[h][e]);
					vm = fmaxf(vm, m);
#pragma unroll
					for (int e = 0; e < V; e++)
						ns += __expf(f[h][e] - vm);
					s = s * __expf(m - vm) + ns;
					m = vm;
				}
			}
			{
				float mm = block_reduce<true>(m, sh);

				s = m == -INFINITY ? 0.f : s * __expf(m - mm);
				lse = mm + __logf(block_reduce<false>(s, sh));
			}
			if (fwd && tid == 0)
				loss[r] = (lse - ld((const T *)xr, t)) * scale;
			if (bwd)
				for (c = tid; c < nv; c += bd) {
					float f[V];

					vec<T>::load(__ldg(xr + c), f);
#pragma unroll
					for (int e = 0; e < V; e++)
						f[e] = (__expf(f[e] - lse) -
						    ((int64_t)c * V + e == t ? 1.f : 0.f)) *
						    scale;
					__stcs(dr + c, vec<T>::store(f));
				}
		} else {
			const uint4 *pr = (const uint4 *)tgt + r * nv;
			float acc = 0.f;

			for (int c = tid; c < nv; c += bd) {
				float f[V], p[V], g[V];

				vec<T>::load(__ldg(xr + c), f);
				vec<T>::load(__ldg(pr + c), p);
				div_terms<KIND, V>(f, p, &acc, g);
				if (bwd) {
#pragma unroll
					for (int e = 0; e < V; e++)
						g[e] *= scale;
					__stcs(dr + c, vec<T>::store(g));
				}
			}
			if (fwd) {
				acc = block_reduce<false>(acc, sh);
				if (tid == 0)
					loss[r] = (KIND == L_TVD ? 0.5f : 1.f) * acc *
					    scale;
			}
		}
	}
}

/* cross_entropy with the row read once: a cluster of CS blocks holds a
 * row in their shared memory (a slice of nv / CS vectors each), each block
 * finds its slice's max and sum, the cluster combines them through
 * distributed shared memory, and each block writes its slice's gradient
 * from shared memory. Clusters need sm_90; the launcher picks this kernel
 * only there. */
template <typename T, int CS>
__global__ void __launch_bounds__(1024)
k_ce_cluster(const uint4 *__restrict__ x, const int64_t *__restrict__ tgt,
	float *loss, uint4 *__restrict__ dx, int64_t rows, int nv, float scale,
	int fwd, int bwd)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	namespace cg = cooperative_groups;
	constexpr int V = vec<T>::N;
	cg::cluster_group cl = cg::this_cluster();
	extern __shared__ uint4 sm[];
	__shared__ float red[64];
	__shared__ float2 part;
	const int rank = (int)cl.block_rank(), tid = threadIdx.x, bd = blockDim.x;
	const int sv = nv / CS;
	const int64_t ncl = gridDim.x / CS;

	for (int64_t r = blockIdx.x / CS; r < rows; r += ncl) {
		const uint4 *xr = x + r * nv + (int64_t)rank * sv;
		const int64_t t = tgt[r], lo = (int64_t)rank * sv * V;
		float m = -INFINITY, s = 0.f, lse;

		for (int c = tid; c < sv; c += 2 * bd) {
			float f[2][V];
			uint4 u0 = __ldg(xr + c), u1 = make_uint4(0, 0, 0, 0);
			int two = c + bd < sv;

			if (two)
				u1 = __ldg(xr + c + bd);
			sm[c] = u0;
			if (two)
				sm[c + bd] = u1;
			vec<T>::load(u0, f[0]);
			vec<T>::load(u1, f[1]);
#pragma unroll
			for (int h = 0; h < 2; h++) {
				float vm = f[h][0], ns = 0.f;

				if (h == 1 && !two)
					break;
#pragma unroll
				for (int e = 1; e < V; e++)
					vm = fmaxf(vm, f[h][e]);
				vm = fmaxf(vm, m);
#pragma unroll
				for (int e = 0; e < V; e++)
					ns += __expf(f[h][e] - vm);
				s = s * __expf(m - vm) + ns;
				m = vm;
			}
		}
		{
			float mm = block_reduce<true>(m, red);

			s = m == -INFINITY ? 0.f : s * __expf(m - mm);
			s = block_reduce<false>(s, red);
			if (tid == 0)
				part = make_float2(mm, s);
		}
		cl.sync();
		{
			float M = -INFINITY, S = 0.f;
			float2 o[CS];

#pragma unroll
			for (int q = 0; q < CS; q++) {
				o[q] = *cl.map_shared_rank(&part, q);
				M = fmaxf(M, o[q].x);
			}
#pragma unroll
			for (int q = 0; q < CS; q++)
				S += o[q].y * __expf(o[q].x - M);
			lse = M + __logf(S);
		}
		/* No block may overwrite its part (next row) before every
		 * block of the cluster has read it. */
		cl.sync();
		if (fwd && tid == 0 && t >= lo && t < lo + (int64_t)sv * V) {
			float f[V];

			vec<T>::load(sm[(t - lo) / V], f);
			loss[r] = (lse - f[(t - lo) % V]) * scale;
		}
		if (bwd)
			for (int c = tid; c < sv; c += bd) {
				float f[V];

				vec<T>::load(sm[c], f);
#pragma unroll
				for (int e = 0; e < V; e++)
					f[e] = (__expf(f[e] - lse) -
					    (lo + (int64_t)c * V + e == t ? 1.f : 0.f)) *
					    scale;
				__stcs(dx + r * nv + (int64_t)rank * sv + c,
				    vec<T>::store(f));
			}
	}
#else
	(void)x; (void)tgt; (void)loss; (void)dx; (void)rows; (void)nv;
	(void)scale; (void)fwd; (void)bwd;
	__trap();
#endif
}

#endif
