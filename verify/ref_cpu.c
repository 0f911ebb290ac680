/* verify/ref_cpu.c — the CPU backend of the reference program (embedding
 * forward, backward, full on shapes scaled to fit), and the helpers both
 * backends share: element conversions, random inputs, statistics and the
 * float64 checks of sampled outputs. */
#include "verify/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

float
ref_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

uint16_t
ref_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return 0x7fc0;
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

float
ref_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
	float f;

	if (exp == 0) {
		if (man == 0) {
			u = sign;
		} else {
			int e = 1;

			while (!(man & 0x400u)) {
				man <<= 1;
				e--;
			}
			man &= 0x3ffu;
			u = sign | ((uint32_t)(e + 112) << 23) | (man << 13);
		}
	} else if (exp == 31) {
		u = sign | 0x7f800000u | (man << 13);
	} else {
		u = sign | ((exp + 112) << 23) | (man << 13);
	}
	memcpy(&f, &u, sizeof(f));
	return f;
}

uint16_t
ref_f32_to_f16(float f)
{
	uint32_t x, sign, exp, man, half, rem;
	int e;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000u;
	exp = (x >> 23) & 0xffu;
	man = x & 0x7fffffu;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
	e = (int)exp - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {
		uint32_t shift, mid;

		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		shift = (uint32_t)(14 - e);
		half = man >> shift;
		rem = man & ((1u << shift) - 1);
		mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1u)))
			half++;
		return (uint16_t)(sign | half);
	}
	half = sign | ((uint32_t)e << 10) | (man >> 13);
	rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
		half++;
	return (uint16_t)half;
}

uint64_t
ref_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

float
ref_randn(uint64_t *state)
{
	double u1 = ((double)(ref_rand(state) >> 11) + 0.5) * 0x1p-53;
	double u2 = (double)(ref_rand(state) >> 11) * 0x1p-53;

	return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void
ref_fill_randn(void *p, size_t n, enum api_dtype dt, uint64_t *rng)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float f = ref_randn(rng);

		if (dt == API_DT_F32)
			((float *)p)[i] = f;
		else if (dt == API_DT_BF16)
			((uint16_t *)p)[i] = ref_f32_to_bf16(f);
		else
			((uint16_t *)p)[i] = ref_f32_to_f16(f);
	}
}

void
ref_fill_indices(int64_t *idx, size_t n, int64_t v, uint64_t *rng)
{
	size_t i;

	for (i = 0; i < n; i++)
		idx[i] = (int64_t)(ref_rand(rng) % (uint64_t)v);
}

double
ref_elem(const void *p, size_t i, enum api_dtype dt)
{
	if (dt == API_DT_F32)
		return ((const float *)p)[i];
	if (dt == API_DT_BF16)
		return ref_bf16_to_f32(((const uint16_t *)p)[i]);
	return ref_f16_to_f32(((const uint16_t *)p)[i]);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double
ref_quantile(const double *sorted, int n, double q)
{
	double pos, frac;
	int lo;

	if (n <= 0)
		return 0;
	pos = q * (n - 1);
	lo = (int)floor(pos);
	if (lo >= n - 1)
		return sorted[n - 1];
	frac = pos - lo;
	return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

void
ref_stats(double *v, int n, double *p50, double *p20, double *p80)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	*p50 = ref_quantile(v, n, 0.5);
	*p20 = ref_quantile(v, n, 0.2);
	*p80 = ref_quantile(v, n, 0.8);
}

/* ‖a − b‖/‖b‖ over one row, a in dt, b in float64; 0 when both are zero. */
static double
row_error(const void *a, size_t off, const double *b, int64_t d,
	enum api_dtype dt)
{
	double num = 0, den = 0;
	int64_t j;

	for (j = 0; j < d; j++) {
		double x = ref_elem(a, off + (size_t)j, dt), diff = x - b[j];

		if (isnan(x))
			return INFINITY;
		num += diff * diff;
		den += b[j] * b[j];
	}
	if (den == 0)
		return num == 0 ? 0 : INFINITY;
	return sqrt(num / den);
}

/* 1 when any element is NaN: the poison written before the run. */
static int
any_nan(const void *p, size_t n, enum api_dtype dt)
{
	size_t i;

	if (dt == API_DT_F32) {
		const uint32_t *u = p;

		for (i = 0; i < n; i++)
			if ((u[i] & 0x7fffffffu) > 0x7f800000u)
				return 1;
	} else {
		const uint16_t *u = p;
		uint16_t expmask = dt == API_DT_BF16 ? 0x7f80 : 0x7c00;
		uint16_t manmask = dt == API_DT_BF16 ? 0x007f : 0x03ff;

		for (i = 0; i < n; i++)
			if ((u[i] & expmask) == expmask && (u[i] & manmask))
				return 1;
	}
	return 0;
}

static void
note_error(struct ref_result *r, double e, int64_t d)
{
	if (!(e <= r->max_rel_error))
		r->max_rel_error = e;
	r->checked_outputs += d;
}

void
ref_check_forward(const void *w, const int64_t *idx, const void *out,
	int64_t bt, int64_t d, enum api_dtype dt, uint64_t *rng,
	struct ref_result *r)
{
	double *ref = malloc((size_t)d * sizeof(*ref));
	int k;

	if (ref == NULL) {
		r->complete = 0;
		return;
	}
	if (any_nan(out, (size_t)(bt * d), dt))
		r->complete = 0;
	for (k = 0; k < REF_SAMPLE_ROWS; k++) {
		int64_t i = (int64_t)(ref_rand(rng) % (uint64_t)bt), j;

		for (j = 0; j < d; j++)
			ref[j] = ref_elem(w, (size_t)(idx[i] * d + j), dt);
		note_error(r, row_error(out, (size_t)(i * d), ref, d, dt), d);
	}
	free(ref);
}

int
ref_check_backward(const int64_t *idx, const void *dy, const void *dw,
	int64_t bt, int64_t d, int64_t v, enum api_dtype dt, uint64_t *rng,
	struct ref_result *r)
{
	return ref_check_backward_prior(idx, dy, dw, NULL, bt, d, v, dt, rng,
	    r);
}

int
ref_check_backward_prior(const int64_t *idx, const void *dy, const void *dw,
	const void *prior, int64_t bt, int64_t d, int64_t v, enum api_dtype dt,
	uint64_t *rng, struct ref_result *r)
{
	int32_t *slot = malloc((size_t)v * sizeof(*slot));
	int64_t rows[REF_SAMPLE_ROWS], i, j;
	double *acc = NULL;
	int k, n = 0, rc = KI_ENOMEM;

	if (slot == NULL)
		goto out;
	acc = calloc((size_t)REF_SAMPLE_ROWS * (size_t)d, sizeof(*acc));
	if (acc == NULL)
		goto out;
	for (i = 0; i < v; i++)
		slot[i] = -1;
	/* Half the sample from rows some token names, half uniform. */
	for (k = 0; k < REF_SAMPLE_ROWS; k++) {
		int64_t row = k % 2 == 0 ?
		    idx[ref_rand(rng) % (uint64_t)bt] :
		    (int64_t)(ref_rand(rng) % (uint64_t)v);

		if (slot[row] >= 0)
			continue;
		slot[row] = n;
		rows[n] = row;
		for (j = 0; prior != NULL && j < d; j++)
			acc[(size_t)n * (size_t)d + (size_t)j] = ref_elem(prior,
			    (size_t)(row * d + j), dt);
		n++;
	}
	for (i = 0; i < bt; i++) {
		int32_t s = slot[idx[i]];

		if (s < 0)
			continue;
		for (j = 0; j < d; j++)
			acc[(size_t)s * (size_t)d + (size_t)j] +=
			    ref_elem(dy, (size_t)(i * d + j), dt);
	}
	if (any_nan(dw, (size_t)(v * d), dt))
		r->complete = 0;
	for (k = 0; k < n; k++)
		note_error(r, row_error(dw, (size_t)(rows[k] * d),
		    acc + (size_t)k * (size_t)d, d, dt), d);
	rc = KI_OK;
out:
	free(acc);
	free(slot);
	return rc;
}

double
ref_cpu_copy_rate(void)
{
	size_t n = 64u << 20;
	char *a = malloc(n), *b = malloc(n);
	double t[7], p50 = 0, p20, p80;
	struct timespec t0, t1;
	int i;

	if (a != NULL && b != NULL) {
		memset(a, 1, n);
		memset(b, 2, n);
		for (i = 0; i < 7; i++) {
			clock_gettime(CLOCK_MONOTONIC, &t0);
			memcpy(i % 2 ? a : b, i % 2 ? b : a, n);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			t[i] = (double)(t1.tv_sec - t0.tv_sec) +
			    (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
		}
		ref_stats(t, 7, &p50, &p20, &p80);
	}
	free(a);
	free(b);
	return p50 > 0 ? 2.0 * (double)n / p50 : 0;
}

/* ---- the CPU kernels ---- */

struct cpu {
	enum api_dtype dt;
	size_t es;
	int64_t bt, d, v;
	void *w, *out, *dy, *dw;
	float *acc;               /* fp32 accumulator for 16-bit gradients */
	int64_t *idx;
	int adds;                 /* the pass adds to the weight's gradient
	                           * (the script's full pass resets nothing) */
	int reps;                 /* backward parts run since it was reset:
	                           * the first writes it, later ones add */
	int fault;                /* KIREF_FAULT 3: written anew anyway */
};

static void
cpu_forward(const struct cpu *c)
{
	size_t row = (size_t)c->d * c->es;
	int64_t i;

	for (i = 0; i < c->bt; i++)
		memcpy((char *)c->out + (size_t)i * row,
		    (const char *)c->w + (size_t)c->idx[i] * row, row);
}

/* The dense gradient: every row written, sums kept in fp32 and rounded
 * once to the dtype; where the script accumulates it, the sums start from
 * the stored gradient (autograd's in-place add), else from 0. */
static void
cpu_backward(struct cpu *c)
{
	size_t n = (size_t)(c->v * c->d), k;
	float *acc = c->dt == API_DT_F32 ? (float *)c->dw : c->acc;
	int64_t i, j;

	if (!c->adds || c->reps == 0 || c->fault == 3)
		memset(acc, 0, n * sizeof(float));
	else if (c->dt != API_DT_F32)
		for (k = 0; k < n; k++)
			acc[k] = (float)ref_elem(c->dw, k, c->dt);
	c->reps++;
	for (i = 0; i < c->bt; i++) {
		float *dst = acc + (size_t)c->idx[i] * (size_t)c->d;

		for (j = 0; j < c->d; j++)
			dst[j] += (float)ref_elem(c->dy, (size_t)(i * c->d + j),
			    c->dt);
	}
	if (c->dt == API_DT_F32)
		return;
	for (k = 0; k < n; k++)
		((uint16_t *)c->dw)[k] = c->dt == API_DT_BF16 ?
		    ref_f32_to_bf16(acc[k]) : ref_f32_to_f16(acc[k]);
}

static void
cpu_pass(struct cpu *c, enum ref_pass p)
{
	if (p != REF_BACKWARD)
		cpu_forward(c);
	if (p != REF_FORWARD)
		cpu_backward(c);
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Halves the largest dimension until weight, gradient and activations
 * fit REF_CPU_MAX_ELEMS. */
static void
scale_shape(struct ref_result *r)
{
	for (;;) {
		double bt = (double)r->batch * (double)r->seq;
		double elems = 2.0 * (double)r->vocab * (double)r->hidden +
		    2.0 * bt * (double)r->hidden;

		if (elems <= REF_CPU_MAX_ELEMS)
			break;
		r->scaled = 1;
		if (bt >= (double)r->vocab && bt >= (double)r->hidden && bt > 1) {
			if (r->seq > 1)
				r->seq = (r->seq + 1) / 2;
			else
				r->batch = (r->batch + 1) / 2;
		} else if (r->vocab >= r->hidden && r->vocab > 1) {
			r->vocab = (r->vocab + 1) / 2;
		} else if (r->hidden > 1) {
			r->hidden = (r->hidden + 1) / 2;
		} else {
			break;
		}
	}
}

static void
cpu_free(struct cpu *c)
{
	free(c->w);
	free(c->out);
	free(c->dy);
	free(c->dw);
	free(c->acc);
	free(c->idx);
	memset(c, 0, sizeof(*c));
}

static int
cpu_alloc(struct cpu *c, const struct ref_result *r, enum api_dtype dt)
{
	memset(c, 0, sizeof(*c));
	c->dt = dt;
	c->es = api_dtype_size(dt);
	c->bt = r->batch * r->seq;
	c->d = r->hidden;
	c->v = r->vocab;
	c->w = malloc((size_t)(c->v * c->d) * c->es);
	c->out = malloc((size_t)(c->bt * c->d) * c->es);
	c->dy = malloc((size_t)(c->bt * c->d) * c->es);
	c->dw = malloc((size_t)(c->v * c->d) * c->es);
	c->acc = malloc((size_t)(c->v * c->d) * sizeof(float));
	c->idx = malloc((size_t)c->bt * sizeof(int64_t));
	if (c->w == NULL || c->out == NULL || c->dy == NULL || c->dw == NULL ||
	    c->acc == NULL || c->idx == NULL) {
		cpu_free(c);
		return KI_ENOMEM;
	}
	return KI_OK;
}

static void
cpu_fill(struct cpu *c, uint64_t *rng)
{
	ref_fill_randn(c->w, (size_t)(c->v * c->d), c->dt, rng);
	ref_fill_randn(c->dy, (size_t)(c->bt * c->d), c->dt, rng);
	ref_fill_indices(c->idx, (size_t)c->bt, c->v, rng);
}

/* One do_bench timing, the same for every CPU reference: one call, five
 * timed with the cache flush to estimate, then warm-up and repetitions
 * sized from the estimate (within half of job->max_seconds), each timed
 * after a flush. Fills r's median, p20, p80, repetitions and copy rate. */
int
ref_cpu_write_anew(void)
{
	const char *v = getenv("KIREF_WRITE_ANEW");

	return v != NULL && strcmp(v, "1") == 0;
}

int
ref_cpu_bench(const struct ref_job *job, void (*pass)(void *), void *arg,
	struct ref_result *r, char *err, size_t errlen)
{
	size_t flush_n = job->flush_bytes < REF_CPU_FLUSH ? job->flush_bytes :
	    REF_CPU_FLUSH;
	unsigned char *flush;
	double *times = NULL, est, t0, budget_ms;
	int n_warm, n_rep, i, rc = KI_OK;

	flush = malloc(flush_n > 0 ? flush_n : 1);
	if (flush == NULL) {
		snprintf(err, errlen, "cannot allocate the flush buffer");
		return KI_ENOMEM;
	}
	pass(arg);
	t0 = now_ms();
	for (i = 0; i < 5; i++) {
		memset(flush, i, flush_n);
		pass(arg);
	}
	est = (now_ms() - t0) / 5;
	if (est <= 0)
		est = 1e-6;
	n_warm = (int)fmax(1, job->warmup_ms / est);
	n_rep = (int)fmax(1, job->rep_ms / est);
	budget_ms = job->max_seconds * 1e3 * 0.5;
	if ((n_warm + n_rep) * est > budget_ms) {
		n_warm = (int)fmax(1, budget_ms * 0.2 / est);
		n_rep = (int)fmax(1, budget_ms * 0.8 / est);
	}
	if (n_rep > 100000)
		n_rep = 100000;
	times = malloc((size_t)n_rep * sizeof(*times));
	if (times == NULL) {
		rc = KI_ENOMEM;
		snprintf(err, errlen, "cannot allocate timings");
		goto out;
	}
	for (i = 0; i < n_warm; i++)
		pass(arg);
	for (i = 0; i < n_rep; i++) {
		memset(flush, i, flush_n);
		t0 = now_ms();
		pass(arg);
		times[i] = (now_ms() - t0) * 1e6;
	}
	ref_stats(times, n_rep, &r->median_ns, &r->p20_ns, &r->p80_ns);
	r->repetitions = n_rep;
	r->copy_bw = ref_cpu_copy_rate();
out:
	free(times);
	free(flush);
	return rc;
}

/* The embedding's pass of a job, for ref_cpu_bench. */
struct cpu_job {
	struct cpu *c;
	enum ref_pass pass;
};

static void
cpu_pass_job(void *arg)
{
	const struct cpu_job *j = arg;

	cpu_pass(j->c, j->pass);
}

int
ref_cpu_run(const struct ref_job *job, struct ref_result *r, char *err,
	size_t errlen)
{
	uint64_t rng = job->seed != 0 ? job->seed :
	    (uint64_t)(now_ms() * 1e6) ^ 0x5eedull;
	int rc;
	struct cpu c;
	struct cpu_job cj = { &c, job->pass };
	void *prior = NULL;

	memset(r, 0, sizeof(*r));
	r->backend = "cpu";
	r->batch = job->batch;
	r->seq = job->seq;
	r->hidden = job->hidden;
	r->vocab = job->vocab;
	r->clocks_sm_before = r->clocks_mem_before = -1;
	r->clocks_sm_after = r->clocks_mem_after = -1;
	scale_shape(r);
	rc = cpu_alloc(&c, r, job->dtype);
	if (rc != KI_OK) {
		snprintf(err, errlen, "cannot allocate the CPU workload");
		return rc;
	}
	cpu_fill(&c, &rng);
	/* Liger's embedding script times full as do_bench(full) with no
	 * grad_to_none: the weight's gradient adds up over the repetitions
	 * (it has no backward mode). */
	c.adds = job->pass == REF_FULL && !ref_cpu_write_anew();
	c.reps = 0;
	rc = ref_cpu_bench(job, cpu_pass_job, &cj, r, err, errlen);
	if (rc != KI_OK)
		goto out;

	/* Correctness on fresh inputs, outputs poisoned with NaN. */
	cpu_fill(&c, &rng);
	memset(c.out, 0xff, (size_t)(c.bt * c.d) * c.es);
	memset(c.dw, 0xff, (size_t)(c.v * c.d) * c.es);
	if (getenv("KIREF_FAULT") != NULL)
		c.fault = atoi(getenv("KIREF_FAULT"));
	c.reps = 0;
	cpu_pass(&c, job->pass);
	r->complete = 1;
	if (job->pass != REF_BACKWARD)
		ref_check_forward(c.w, c.idx, c.out, c.bt, c.d, c.dt, &rng, r);
	if (job->pass != REF_FORWARD &&
	    ref_check_backward(c.idx, c.dy, c.dw, c.bt, c.d, c.v, c.dt, &rng,
	    r) != KI_OK) {
		rc = KI_ENOMEM;
		snprintf(err, errlen, "cannot allocate the check");
		goto out;
	}
	/* A second repetition adds to what the first stored. */
	if (c.adds) {
		size_t b = (size_t)(c.v * c.d) * c.es;

		prior = malloc(b);
		if (prior == NULL) {
			rc = KI_ENOMEM;
			snprintf(err, errlen, "cannot allocate the check");
			goto out;
		}
		memcpy(prior, c.dw, b);
		cpu_pass(&c, job->pass);
		if (ref_check_backward_prior(c.idx, c.dy, c.dw, prior, c.bt,
		    c.d, c.v, c.dt, &rng, r) != KI_OK) {
			rc = KI_ENOMEM;
			snprintf(err, errlen, "cannot allocate the check");
			goto out;
		}
		r->accumulated_outputs = 1;
	}
	rc = KI_OK;
out:
	free(prior);
	cpu_free(&c);
	return rc;
}
