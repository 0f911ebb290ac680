/* verify/ref_cuda.cu — the CUDA backend of the reference program: the
 * embedding forward (a 16-byte-vector row gather) and backward (a sort by
 * row, then one pass writing every row of the dense gradient once),
 * timed as triton.testing.do_bench times, checked against float64. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verify/ref.h"
#include "verify/fam_cuda.cuh"

#define CK_LAUNCH() CK(cudaGetLastError())

/* ---- kernels ---- */

/* out[i] = w[idx[i]] for rows of nv 16-byte vectors; 4 loads in flight
 * per thread before the stores. */
__global__ void
emb_fwd_vec(const int64_t *__restrict__ idx, const uint4 *__restrict__ w,
	uint4 *__restrict__ out, int64_t bt, int64_t nv)
{
	for (int64_t i = blockIdx.x; i < bt; i += gridDim.x) {
		const uint4 *src = w + idx[i] * nv;
		uint4 *dst = out + i * nv;
		int64_t c = threadIdx.x;

		for (; c + 3 * blockDim.x < nv; c += 4 * blockDim.x) {
			uint4 a = __ldg(src + c);
			uint4 b = __ldg(src + c + blockDim.x);
			uint4 d = __ldg(src + c + 2 * blockDim.x);
			uint4 e = __ldg(src + c + 3 * blockDim.x);

			dst[c] = a;
			dst[c + blockDim.x] = b;
			dst[c + 2 * blockDim.x] = d;
			dst[c + 3 * blockDim.x] = e;
		}
		for (; c < nv; c += blockDim.x)
			dst[c] = __ldg(src + c);
	}
}

/* The same for rows whose size is not a multiple of 16 bytes. */
template <typename T>
__global__ void
emb_fwd_scalar(const int64_t *__restrict__ idx, const T *__restrict__ w,
	T *__restrict__ out, int64_t bt, int64_t d)
{
	for (int64_t i = blockIdx.x; i < bt; i += gridDim.x)
		for (int64_t c = threadIdx.x; c < d; c += blockDim.x)
			out[i * d + c] = w[idx[i] * d + c];
}

/* Warp-per-row gather: each warp copies whole rows, lanes striding over
 * 16-byte vectors, 4 in flight; STREAM selects evict-first stores. */
template <bool STREAM>
__global__ void
emb_fwd_warp(const int64_t *__restrict__ idx, const uint4 *__restrict__ w,
	uint4 *__restrict__ out, int64_t bt, int64_t nv)
{
	int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
	int64_t nwarps = (int64_t)gridDim.x * blockDim.x / 32;
	int lane = threadIdx.x % 32;

	for (int64_t i = warp; i < bt; i += nwarps) {
		const uint4 *src = w + idx[i] * nv;
		uint4 *dst = out + i * nv;
		int64_t c = lane;

		for (; c + 96 < nv; c += 128) {
			uint4 a = __ldg(src + c), b = __ldg(src + c + 32);
			uint4 d = __ldg(src + c + 64), e = __ldg(src + c + 96);

			if (STREAM) {
				__stcs(dst + c, a);
				__stcs(dst + c + 32, b);
				__stcs(dst + c + 64, d);
				__stcs(dst + c + 96, e);
			} else {
				dst[c] = a;
				dst[c + 32] = b;
				dst[c + 64] = d;
				dst[c + 96] = e;
			}
		}
		for (; c < nv; c += 32)
			dst[c] = __ldg(src + c);
	}
}

/* start[v] = first position of the sorted keys holding a key >= v, for
 * v in [0, vocab]: position p fills the rows between its predecessor's
 * key and its own, so every entry is written exactly once. */
__global__ void
segment_starts(const int64_t *__restrict__ sorted, int32_t *__restrict__ start,
	int64_t bt, int64_t v)
{
	for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	    p <= bt; p += (int64_t)gridDim.x * blockDim.x) {
		int64_t prev = p > 0 ? sorted[p - 1] : -1;
		int64_t key = p < bt ? sorted[p] : v;

		for (int64_t r = prev + 1; r <= key; r++)
			start[r] = (int32_t)p;
	}
}

/* dw[row] = Σ dy[perm[p]] for p in [start[row], start[row + 1]), a warp
 * per row, every row written once (zeros where no token names it), the
 * sums in fp32 and rounded once. */
template <typename T>
__global__ void
emb_bwd_warp(const int32_t *__restrict__ start,
	const int32_t *__restrict__ perm, const uint4 *__restrict__ dy,
	uint4 *__restrict__ dw, int64_t v, int64_t nv)
{
	int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
	int64_t nwarps = (int64_t)gridDim.x * blockDim.x / 32;
	int lane = threadIdx.x % 32;
	const uint4 zero = make_uint4(0, 0, 0, 0);

	for (int64_t row = warp; row < v; row += nwarps) {
		int32_t lo = start[row], hi = start[row + 1];
		uint4 *dst = dw + row * nv;

		if (lo == hi) {
			int64_t c = lane;

			for (; c + 96 < nv; c += 128) {
				dst[c] = zero;
				dst[c + 32] = zero;
				dst[c + 64] = zero;
				dst[c + 96] = zero;
			}
			for (; c < nv; c += 32)
				dst[c] = zero;
			continue;
		}
		for (int64_t c = lane; c < nv; c += 32) {
			float acc[vec<T>::N], f[vec<T>::N];

#pragma unroll
			for (int k = 0; k < vec<T>::N; k++)
				acc[k] = 0.f;
			for (int32_t p = lo; p < hi; p++) {
				vec<T>::load(__ldg(dy + (int64_t)perm[p] * nv + c),
				    f);
#pragma unroll
				for (int k = 0; k < vec<T>::N; k++)
					acc[k] += f[k];
			}
			dst[c] = vec<T>::store(acc);
		}
	}
}

/* The same sums with a block per row, threads striding over the row's
 * 16-byte vectors: more parallelism for rows many tokens name. */
template <typename T>
__global__ void
emb_bwd_block(const int32_t *__restrict__ start,
	const int32_t *__restrict__ perm, const uint4 *__restrict__ dy,
	uint4 *__restrict__ dw, int64_t v, int64_t nv)
{
	for (int64_t row = blockIdx.x; row < v; row += gridDim.x) {
		int32_t lo = start[row], hi = start[row + 1];

		for (int64_t c = threadIdx.x; c < nv; c += blockDim.x) {
			float acc[vec<T>::N], f[vec<T>::N];

#pragma unroll
			for (int k = 0; k < vec<T>::N; k++)
				acc[k] = 0.f;
			for (int32_t p = lo; p < hi; p++) {
				vec<T>::load(__ldg(dy + (int64_t)perm[p] * nv + c),
				    f);
#pragma unroll
				for (int k = 0; k < vec<T>::N; k++)
					acc[k] += f[k];
			}
			dw[row * nv + c] = vec<T>::store(acc);
		}
	}
}

template <typename T>
__device__ __forceinline__ float
to_float(T x)
{
	return (float)x;
}
template <>
__device__ __forceinline__ float
to_float<__nv_bfloat16>(__nv_bfloat16 x)
{
	return __bfloat162float(x);
}
template <>
__device__ __forceinline__ float
to_float<__half>(__half x)
{
	return __half2float(x);
}

/* The block-per-row sums for rows that are not a multiple of 16 bytes. */
template <typename T>
__global__ void
emb_bwd_rows_scalar(const int32_t *__restrict__ start,
	const int32_t *__restrict__ perm, const T *__restrict__ dy,
	T *__restrict__ dw, int64_t v, int64_t d)
{
	for (int64_t row = blockIdx.x; row < v; row += gridDim.x) {
		int32_t lo = start[row], hi = start[row + 1];

		for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
			float acc = 0.f;

			for (int32_t p = lo; p < hi; p++)
				acc += to_float(dy[(int64_t)perm[p] * d + c]);
			dw[row * d + c] = vec<T>::from_float(acc);
		}
	}
}

__global__ void
iota32(int32_t *p, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	    i += (int64_t)gridDim.x * blockDim.x)
		p[i] = (int32_t)i;
}

__device__ __forceinline__ uint64_t
mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Standard-normal values, a counter-based stream keyed by seed. */
template <typename T>
__global__ void
fill_randn(T *p, int64_t n, uint64_t seed)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	    i += (int64_t)gridDim.x * blockDim.x) {
		uint64_t a = mix(seed + 0x9e3779b97f4a7c15ull * (2 * i + 1));
		uint64_t b = mix(seed + 0x9e3779b97f4a7c15ull * (2 * i + 2));
		float u1 = ((float)(a >> 40) + 0.5f) * 0x1p-24f;
		float u2 = (float)(b >> 40) * 0x1p-24f;
		float z = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);

		p[i] = vec<T>::from_float(z);
	}
}

__global__ void
fill_indices(int64_t *p, int64_t n, int64_t v, uint64_t seed)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	    i += (int64_t)gridDim.x * blockDim.x)
		p[i] = (int64_t)(mix(seed + 0x9e3779b97f4a7c15ull * (i + 1)) %
		    (uint64_t)v);
}

/* ---- NVML, loaded at run time so that the program runs without it ---- */

typedef struct nvml_dev *nvml_dev_t;
struct nvml {
	void *lib;
	nvml_dev_t dev;
	int (*clock)(nvml_dev_t, int, unsigned *);
	int (*shutdown)(void);
};

static void
nvml_open(struct nvml *n, char *driver, size_t driver_len)
{
	int (*init)(void);
	int (*by_index)(unsigned, nvml_dev_t *);
	int (*by_uuid)(const char *, nvml_dev_t *);
	int (*drv)(char *, unsigned);
	/* NVML numbers every GPU of the host, whatever CUDA_VISIBLE_DEVICES
	 * says: a child pinned to a GPU by its UUID reads that GPU's clocks. */
	const char *pin = getenv("CUDA_VISIBLE_DEVICES");

	memset(n, 0, sizeof(*n));
	n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (n->lib == NULL)
		return;
	init = (int (*)(void))dlsym(n->lib, "nvmlInit_v2");
	by_index = (int (*)(unsigned, nvml_dev_t *))dlsym(n->lib,
	    "nvmlDeviceGetHandleByIndex_v2");
	drv = (int (*)(char *, unsigned))dlsym(n->lib,
	    "nvmlSystemGetDriverVersion");
	n->clock = (int (*)(nvml_dev_t, int, unsigned *))dlsym(n->lib,
	    "nvmlDeviceGetClockInfo");
	n->shutdown = (int (*)(void))dlsym(n->lib, "nvmlShutdown");
	by_uuid = (int (*)(const char *, nvml_dev_t *))dlsym(n->lib,
	    "nvmlDeviceGetHandleByUUID");
	if (pin != NULL && (strncmp(pin, "GPU-", 4) != 0 ||
	    strchr(pin, ',') != NULL))
		pin = NULL;
	if (init == NULL || by_index == NULL || n->clock == NULL ||
	    init() != 0 || (pin != NULL && by_uuid != NULL ?
	    by_uuid(pin, &n->dev) : by_index(0, &n->dev)) != 0) {
		dlclose(n->lib);
		memset(n, 0, sizeof(*n));
		return;
	}
	if (drv != NULL)
		drv(driver, (unsigned)driver_len);
}

/* SM and memory clocks in MHz, -1 when unknown. */
static void
nvml_clocks(const struct nvml *n, int *sm, int *mem)
{
	unsigned v;

	*sm = *mem = -1;
	if (n->lib == NULL)
		return;
	if (n->clock(n->dev, 1, &v) == 0)
		*sm = (int)v;
	if (n->clock(n->dev, 2, &v) == 0)
		*mem = (int)v;
}

static void
nvml_close(struct nvml *n)
{
	if (n->lib == NULL)
		return;
	if (n->shutdown != NULL)
		n->shutdown();
	dlclose(n->lib);
	memset(n, 0, sizeof(*n));
}

/* ---- the backend ---- */

struct dev {
	enum api_dtype dt;
	size_t es;
	int64_t bt, d, v, nv;     /* nv: 16-byte vectors per row, 0 if none */
	int end_bit;
	void *w, *out, *dy, *dw;
	int64_t *idx, *sorted;
	int32_t *iota, *perm, *start;
	void *temp;
	size_t temp_bytes;
	int sms;
	int fwd_variant;          /* 0 block per row, 1 warp, 2 warp+stream */
	int bwd_variant;          /* 1 warp per row, 2 block per row */
};

/* Launches one pass on the default stream. */
static cudaError_t
dev_pass(struct dev *g, enum ref_pass pass)
{
	int threads;
	cudaError_t e;

	if (pass != REF_BACKWARD) {
		int64_t blocks = g->bt < 65535 * 8 ? g->bt : 65535 * 8;

		if (g->nv > 0 && g->fwd_variant > 0) {
			int64_t wb = (g->bt + 7) / 8;
			unsigned grid = (unsigned)(wb < (int64_t)g->sms * 32 ? wb :
			    (int64_t)g->sms * 32);

			if (g->fwd_variant == 2)
				emb_fwd_warp<true><<<grid, 256>>>(g->idx,
				    (const uint4 *)g->w, (uint4 *)g->out, g->bt,
				    g->nv);
			else
				emb_fwd_warp<false><<<grid, 256>>>(g->idx,
				    (const uint4 *)g->w, (uint4 *)g->out, g->bt,
				    g->nv);
		} else if (g->nv > 0) {
			threads = g->nv >= 1024 ? 256 : g->nv >= 128 ? 128 : 32;
			emb_fwd_vec<<<(unsigned)blocks, threads>>>(g->idx,
			    (const uint4 *)g->w, (uint4 *)g->out, g->bt, g->nv);
		} else if (g->dt == API_DT_F32) {
			emb_fwd_scalar<float><<<(unsigned)blocks, 256>>>(g->idx,
			    (const float *)g->w, (float *)g->out, g->bt, g->d);
		} else {
			emb_fwd_scalar<uint16_t><<<(unsigned)blocks, 256>>>(
			    g->idx, (const uint16_t *)g->w,
			    (uint16_t *)g->out, g->bt, g->d);
		}
		if ((e = cudaGetLastError()) != cudaSuccess)
			return e;
	}
	if (pass == REF_FORWARD)
		return cudaSuccess;
	e = cub::DeviceRadixSort::SortPairs(g->temp, g->temp_bytes, g->idx,
	    g->sorted, g->iota, g->perm, g->bt, 0, g->end_bit);
	if (e != cudaSuccess)
		return e;
	segment_starts<<<(unsigned)g->sms * 4, 256>>>(g->sorted, g->start,
	    g->bt, g->v);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	{
		/* Persistent grids: enough resident threads to cover latency,
		 * rows taken in grid-stride order. */
		int64_t wb = (g->v + 7) / 8, cap = (int64_t)g->sms * 32;
		unsigned wgrid = (unsigned)(wb < cap ? wb : cap);
		unsigned bgrid = (unsigned)(g->v < cap ? g->v : cap);
		int bthreads = g->nv >= 256 || g->nv == 0 ? 256 :
		    (int)((g->nv + 31) / 32 * 32);

#define BWD(T) do {                                                     \
		if (g->nv == 0)                                         \
			emb_bwd_rows_scalar<T><<<bgrid, 256>>>(g->start, \
			    g->perm, (const T *)g->dy, (T *)g->dw, g->v, \
			    g->d);                                      \
		else if (g->bwd_variant == 1)                           \
			emb_bwd_warp<T><<<wgrid, 256>>>(g->start, g->perm, \
			    (const uint4 *)g->dy, (uint4 *)g->dw, g->v,  \
			    g->nv);                                     \
		else                                                    \
			emb_bwd_block<T><<<bgrid, bthreads>>>(g->start,  \
			    g->perm, (const uint4 *)g->dy, (uint4 *)g->dw, \
			    g->v, g->nv);                               \
	} while (0)
		if (g->dt == API_DT_F32)
			BWD(float);
		else if (g->dt == API_DT_BF16)
			BWD(__nv_bfloat16);
		else
			BWD(__half);
#undef BWD
	}
	return cudaGetLastError();
}

static cudaError_t
dev_fill(struct dev *g, uint64_t seed)
{
	unsigned blocks = (unsigned)g->sms * 8;

	if (g->dt == API_DT_F32) {
		fill_randn<float><<<blocks, 256>>>((float *)g->w, g->v * g->d,
		    seed);
		fill_randn<float><<<blocks, 256>>>((float *)g->dy, g->bt * g->d,
		    seed ^ 0xd1ull);
	} else if (g->dt == API_DT_BF16) {
		fill_randn<__nv_bfloat16><<<blocks, 256>>>(
		    (__nv_bfloat16 *)g->w, g->v * g->d, seed);
		fill_randn<__nv_bfloat16><<<blocks, 256>>>(
		    (__nv_bfloat16 *)g->dy, g->bt * g->d, seed ^ 0xd1ull);
	} else {
		fill_randn<__half><<<blocks, 256>>>((__half *)g->w, g->v * g->d,
		    seed);
		fill_randn<__half><<<blocks, 256>>>((__half *)g->dy,
		    g->bt * g->d, seed ^ 0xd1ull);
	}
	fill_indices<<<blocks, 256>>>(g->idx, g->bt, g->v, seed ^ 0x1dull);
	return cudaGetLastError();
}

/* The device-to-device copy rate (bytes read + written per second) over
 * buffers of up to 512 MiB each (far past the L2), the median of nine
 * event-timed copies; 0 when it cannot be measured. */
double
ref_cuda_copy_rate(void)
{
	size_t free_b = 0, total_b = 0, n = 512u << 20;
	void *a = NULL, *b = NULL;
	cudaEvent_t e0 = NULL, e1 = NULL;
	double t[9], p50 = 0, p20, p80;
	float ms = 0;
	int i, ok = 1;

	if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
		return 0;
	while (n > (16u << 20) && 2 * n > free_b / 2)
		n /= 2;
	if (cudaMalloc(&a, n) != cudaSuccess || cudaMalloc(&b, n) !=
	    cudaSuccess || cudaEventCreate(&e0) != cudaSuccess ||
	    cudaEventCreate(&e1) != cudaSuccess ||
	    cudaMemset(a, 1, n) != cudaSuccess)
		ok = 0;
	for (i = 0; ok && i < 10; i++) {
		ok = cudaEventRecord(e0) == cudaSuccess &&
		    cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice) ==
		    cudaSuccess && cudaEventRecord(e1) == cudaSuccess &&
		    cudaEventSynchronize(e1) == cudaSuccess &&
		    cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
		if (i > 0)
			t[i - 1] = (double)ms * 1e-3;
	}
	if (ok)
		ref_stats(t, 9, &p50, &p20, &p80);
	if (e0 != NULL)
		cudaEventDestroy(e0);
	if (e1 != NULL)
		cudaEventDestroy(e1);
	cudaFree(a);
	cudaFree(b);
	return ok && p50 > 0 ? 2.0 * (double)n / p50 : 0;
}

int
ref_cuda_available(void)
{
	int n = 0;

	return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

double
ref_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int
ref_cuda_bench(const struct ref_job *job, ref_cuda_pass_fn pass, void *arg,
	double t_start_ms, struct ref_result *r, char *err, size_t errlen)
{
	cudaEvent_t e0 = NULL, e1 = NULL, *ev = NULL;
	void *flush = NULL;
	double *times = NULL, est, budget_ms;
	int n_warm = 0, n_rep = 0, i, rc = KI_OK;
	float ms = 0;

	CK(cudaMalloc(&flush, job->flush_bytes > 0 ? job->flush_bytes : 1));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(pass(arg));
	CK(cudaDeviceSynchronize());
	CK(cudaEventRecord(e0));
	for (i = 0; i < 5; i++) {
		CK(cudaMemsetAsync(flush, 0, job->flush_bytes));
		CK(pass(arg));
	}
	CK(cudaEventRecord(e1));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	est = ms / 5 > 1e-4 ? ms / 5 : 1e-4;
	n_warm = (int)fmax(1, job->warmup_ms / est);
	n_rep = (int)fmax(1, job->rep_ms / est);
	budget_ms = job->max_seconds * 1e3 * 0.5 - (ref_wall_ms() - t_start_ms);
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
		CK(pass(arg));
	for (i = 0; i < n_rep; i++) {
		CK(cudaMemsetAsync(flush, 0, job->flush_bytes));
		CK(cudaEventRecord(ev[2 * i]));
		CK(pass(arg));
		CK(cudaEventRecord(ev[2 * i + 1]));
	}
	CK(cudaDeviceSynchronize());
	for (i = 0; i < n_rep; i++) {
		CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
		times[i] = (double)ms * 1e6;
	}
	ref_stats(times, n_rep, &r->median_ns, &r->p20_ns, &r->p80_ns);
	r->repetitions = n_rep;
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
	cudaFree(flush);
	return rc;
}

/* The embedding's pass of a job, for ref_cuda_bench. */
struct emb_job {
	struct dev *g;
	enum ref_pass pass;
};

static cudaError_t
emb_pass_job(void *arg)
{
	const struct emb_job *j = (const struct emb_job *)arg;

	return dev_pass(j->g, j->pass);
}

int
ref_cuda_run(const struct ref_job *job, struct ref_result *r, char *err,
	size_t errlen)
{
	struct dev g;
	struct nvml nv;
	cudaDeviceProp prop;
	void *h_w = NULL, *h_out = NULL, *h_dy = NULL, *h_dw = NULL;
	int64_t *h_idx = NULL;
	double t_start = ref_wall_ms();
	size_t free_b = 0, total_b = 0, need, wbytes, abytes;
	uint64_t seed = job->seed != 0 ? job->seed :
	    (uint64_t)(t_start * 1e6) ^ 0xc0ffeeull;
	int rc = KI_OK, drv = 0;
	struct emb_job ej = { &g, job->pass };

	memset(&g, 0, sizeof(g));
	memset(r, 0, sizeof(*r));
	memset(&nv, 0, sizeof(nv));
	r->backend = "cuda";
	r->batch = job->batch;
	r->seq = job->seq;
	r->hidden = job->hidden;
	r->vocab = job->vocab;
	CK(cudaSetDevice(0));
	CK(cudaGetDeviceProperties(&prop, 0));
	snprintf(r->gpu_name, sizeof(r->gpu_name), "%s", prop.name);
	snprintf(r->sm, sizeof(r->sm), "sm_%d%d", prop.major, prop.minor);
	nvml_open(&nv, r->driver, sizeof(r->driver));
	if (r->driver[0] == '\0' && cudaDriverGetVersion(&drv) == cudaSuccess)
		snprintf(r->driver, sizeof(r->driver), "cuda %d.%d",
		    drv / 1000, drv % 1000 / 10);
	nvml_clocks(&nv, &r->clocks_sm_before, &r->clocks_mem_before);

	g.dt = job->dtype;
	g.es = api_dtype_size(job->dtype);
	g.bt = job->batch * job->seq;
	g.d = job->hidden;
	g.v = job->vocab;
	g.nv = (g.d * (int64_t)g.es) % 16 == 0 ? g.d * (int64_t)g.es / 16 : 0;
	g.sms = prop.multiProcessorCount;
	/* Kernel variants, for comparing them on a device: KIREF_FWD 0|1|2,
	 * KIREF_BWD 1|2; the defaults are the faster ones measured on an
	 * H200 (bench/results-ref-h200.md). */
	g.fwd_variant = getenv("KIREF_FWD") != NULL ? atoi(getenv("KIREF_FWD")) :
	    2;
	g.bwd_variant = getenv("KIREF_BWD") != NULL ? atoi(getenv("KIREF_BWD")) :
	    2;
	for (g.end_bit = 1; g.end_bit < 63 && ((int64_t)1 << g.end_bit) < g.v;
	    g.end_bit++)
		;
	if (g.bt > INT32_MAX) {
		snprintf(err, errlen, "more than 2^31 tokens");
		rc = KI_ELIMIT;
		goto out;
	}
	wbytes = (size_t)(g.v * g.d) * g.es;
	abytes = (size_t)(g.bt * g.d) * g.es;
	CK(cub::DeviceRadixSort::SortPairs(NULL, g.temp_bytes, g.idx, g.sorted,
	    g.iota, g.perm, g.bt, 0, g.end_bit));
	need = 2 * wbytes + 2 * abytes + (size_t)g.bt * 24 +
	    (size_t)(g.v + 1) * 4 + g.temp_bytes +
	    job->flush_bytes;
	CK(cudaMemGetInfo(&free_b, &total_b));
	if ((double)need > 0.95 * (double)free_b) {
		snprintf(err, errlen, "workload needs %zu bytes of device memory, "
		    "%zu are free", need, free_b);
		rc = KI_ELIMIT;
		goto out;
	}
	CK(cudaMalloc(&g.w, wbytes));
	CK(cudaMalloc(&g.dw, wbytes));
	CK(cudaMalloc(&g.out, abytes));
	CK(cudaMalloc(&g.dy, abytes));
	CK(cudaMalloc((void **)&g.idx, (size_t)g.bt * 8));
	CK(cudaMalloc((void **)&g.sorted, (size_t)g.bt * 8));
	CK(cudaMalloc((void **)&g.iota, (size_t)g.bt * 4));
	CK(cudaMalloc((void **)&g.perm, (size_t)g.bt * 4));
	CK(cudaMalloc((void **)&g.start, (size_t)(g.v + 1) * 4));
	CK(cudaMalloc(&g.temp, g.temp_bytes > 0 ? g.temp_bytes : 1));
	iota32<<<(unsigned)g.sms * 4, 256>>>(g.iota, g.bt);
	CK_LAUNCH();
	CK(dev_fill(&g, seed));
	/* do_bench (ref_cuda_bench). */
	rc = ref_cuda_bench(job, emb_pass_job, &ej, t_start, r, err, errlen);
	if (rc != KI_OK)
		goto out;
	nvml_clocks(&nv, &r->clocks_sm_after, &r->clocks_mem_after);
	r->copy_bw = ref_cuda_copy_rate();

	/* Correctness: fresh inputs, outputs poisoned with NaN, one pass,
	 * sampled rows against float64 on the host. */
	CK(dev_fill(&g, seed * 0x2545f4914f6cdd1dull + 1));
	CK(cudaMemset(g.out, 0xff, abytes));
	CK(cudaMemset(g.dw, 0xff, wbytes));
	CK(dev_pass(&g, job->pass));
	CK(cudaDeviceSynchronize());
	h_idx = (int64_t *)malloc((size_t)g.bt * 8);
	h_w = malloc(wbytes);
	h_out = malloc(abytes);
	h_dy = malloc(abytes);
	h_dw = malloc(wbytes);
	if (h_idx == NULL || h_w == NULL || h_out == NULL || h_dy == NULL ||
	    h_dw == NULL) {
		snprintf(err, errlen, "out of host memory for the check");
		rc = KI_ENOMEM;
		goto out;
	}
	CK(cudaMemcpy(h_idx, g.idx, (size_t)g.bt * 8, cudaMemcpyDeviceToHost));
	r->complete = 1;
	if (job->pass != REF_BACKWARD) {
		CK(cudaMemcpy(h_w, g.w, wbytes, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(h_out, g.out, abytes, cudaMemcpyDeviceToHost));
		ref_check_forward(h_w, h_idx, h_out, g.bt, g.d, g.dt, &seed, r);
	}
	if (job->pass != REF_FORWARD) {
		CK(cudaMemcpy(h_dy, g.dy, abytes, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(h_dw, g.dw, wbytes, cudaMemcpyDeviceToHost));
		if (ref_check_backward(h_idx, h_dy, h_dw, g.bt, g.d, g.v, g.dt,
		    &seed, r) != KI_OK) {
			snprintf(err, errlen, "out of host memory for the check");
			rc = KI_ENOMEM;
			goto out;
		}
	}
out:
	cudaFree(g.w);
	cudaFree(g.dw);
	cudaFree(g.out);
	cudaFree(g.dy);
	cudaFree(g.idx);
	cudaFree(g.sorted);
	cudaFree(g.iota);
	cudaFree(g.perm);
	cudaFree(g.start);
	cudaFree(g.temp);
	free(h_idx);
	free(h_w);
	free(h_out);
	free(h_dy);
	free(h_dw);
	nvml_close(&nv);
	return rc;
}
