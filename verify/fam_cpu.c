/* verify/fam_cpu.c — the row-wise families on the CPU: inputs, the fp32
 * kernel (a row at a time through the family's float arithmetic), its
 * do_bench-style timing, and the float64 check every backend's outputs go
 * through. */
#include "verify/family.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verify/ref.h"

/* Rows of fp32 sums of a parameter gradient before they go to float64. */
#define ACC_BLOCK 64

static int
is_row(enum fam_kind k)
{
	return k == FK_ROW || k == FK_ROW32 || k == FK_TARGET;
}

int64_t
fam_slot_elems(const struct fam_shape *s, int i)
{
	return is_row(s->slot[i].kind) ? s->rows * s->slot[i].len :
	    s->slot[i].len;
}

size_t
fam_slot_esize(const struct fam_shape *s, int i, enum api_dtype dt)
{
	switch (s->slot[i].kind) {
	case FK_ROW32:
	case FK_PARAM32:
		return 4;
	case FK_TARGET:
		return 8;
	default:
		return api_dtype_size(dt);
	}
}

/* The element type slot i is stored in (targets: API_DT_UNKNOWN). */
static enum api_dtype
slot_dt(const struct fam_shape *s, int i, enum api_dtype dt)
{
	switch (s->slot[i].kind) {
	case FK_ROW32:
	case FK_PARAM32:
		return API_DT_F32;
	case FK_TARGET:
		return API_DT_UNKNOWN;
	default:
		return dt;
	}
}

/* An input the forward does not make. */
static int
is_input(const struct fam_slot *sl)
{
	return (sl->io & (FIO_IN0 | FIO_IN1)) && !(sl->io & FIO_OUT0) &&
	    sl->kind != FK_ACC;
}

void
fam_fill_inputs(const struct family *f, const struct fam_shape *s,
	void *const *host, enum api_dtype dt, uint64_t *rng)
{
	int i;

	for (i = 0; i < s->nslots; i++) {
		size_t n = (size_t)fam_slot_elems(s, i);

		if (!is_input(&s->slot[i]))
			continue;
		if (s->slot[i].kind == FK_TARGET)
			ref_fill_indices(host[i], n, s->n, rng);
		else
			ref_fill_randn(host[i], n, slot_dt(s, i, dt), rng);
	}
	if (f->prepare != NULL)
		f->prepare(s, host, dt, rng);
}

/* n elements of slot i from element off, as floats or doubles. */
static void
load_f(const struct fam_shape *s, int i, const void *p, size_t off,
	int64_t n, enum api_dtype dt, float *dst)
{
	enum api_dtype t = slot_dt(s, i, dt);
	int64_t j;

	if (t == API_DT_UNKNOWN) {
		for (j = 0; j < n; j++)
			dst[j] = (float)((const int64_t *)p)[off + (size_t)j];
	} else if (t == API_DT_F32) {
		memcpy(dst, (const float *)p + off, (size_t)n * sizeof(float));
	} else {
		for (j = 0; j < n; j++)
			dst[j] = (float)ref_elem(p, off + (size_t)j, t);
	}
}

static void
load_d(const struct fam_shape *s, int i, const void *p, size_t off,
	int64_t n, enum api_dtype dt, double *dst)
{
	enum api_dtype t = slot_dt(s, i, dt);
	int64_t j;

	for (j = 0; j < n; j++)
		dst[j] = t == API_DT_UNKNOWN ?
		    (double)((const int64_t *)p)[off + (size_t)j] :
		    ref_elem(p, off + (size_t)j, t);
}

static void
store_f(const struct fam_shape *s, int i, void *p, size_t off, int64_t n,
	enum api_dtype dt, const float *src)
{
	enum api_dtype t = slot_dt(s, i, dt);
	int64_t j;

	if (t == API_DT_F32) {
		memcpy((float *)p + off, src, (size_t)n * sizeof(float));
		return;
	}
	for (j = 0; j < n; j++)
		((uint16_t *)p)[off + (size_t)j] = t == API_DT_BF16 ?
		    ref_f32_to_bf16(src[j]) : ref_f32_to_f16(src[j]);
}

/* ---- the CPU kernel ---- */

struct fcpu {
	const struct family *f;
	const struct fam_shape *s;
	enum api_dtype dt;
	void *host[FAM_MAX_SLOTS];
	float *buf[FAM_MAX_SLOTS];    /* a row, a parameter or a sum */
	double *acc[FAM_MAX_SLOTS];   /* FK_ACC: the float64 totals */
	float *scratch;
	float *prior;                 /* a row gradient as stored before */
	int acc_params, acc_rows;     /* this job's pass adds to the FK_ACC
	                               * gradients, to the row gradients
	                               * (family.h, FAM_ACC_*) */
	int reps;                     /* backward parts run since the
	                               * gradients were last reset: the first
	                               * writes them (grad is None before
	                               * do_bench's first call), later ones add
	                               * to them where the script accumulates */
	int fault;                    /* KIREF_FAULT, for testing the check:
	                               * 1 leaves the last row unwritten,
	                               * 2 makes the first row's outputs
	                               * 3% too large, 3 writes the gradients
	                               * anew where the script adds to them */
};

/* Whether slot i's gradient adds to the stored one now. */
static int
fcpu_adds(const struct fcpu *c, int i)
{
	const struct fam_slot *sl = &c->s->slot[i];

	if (c->reps == 0 || c->fault == 3 || !(sl->io & FIO_OUT1))
		return 0;
	return sl->kind == FK_ACC ? c->acc_params :
	    sl->kind == FK_ROW && c->acc_rows;
}

/* Folds the fp32 partial sums into the float64 totals. */
static void
fold(struct fcpu *c)
{
	int i;
	int64_t j;

	for (i = 0; i < c->s->nslots; i++) {
		if (c->s->slot[i].kind != FK_ACC)
			continue;
		for (j = 0; j < c->s->slot[i].len; j++) {
			c->acc[i][j] += c->buf[i][j];
			c->buf[i][j] = 0;
		}
	}
}

/* One pass: the forward (fwd), the backward (bwd) or both, a row at a
 * time (so "full" keeps each row in cache between its two parts). */
static void
fcpu_pass(struct fcpu *c, int fwd, int bwd)
{
	const struct fam_shape *s = c->s;
	int64_t r, j;
	int i;

	for (i = 0; i < s->nslots; i++) {
		const struct fam_slot *sl = &s->slot[i];

		if (sl->kind == FK_PARAM || sl->kind == FK_PARAM32)
			load_f(s, i, c->host[i], 0, sl->len, c->dt, c->buf[i]);
		if (sl->kind == FK_ACC) {
			memset(c->buf[i], 0, (size_t)sl->len * sizeof(float));
			memset(c->acc[i], 0, (size_t)sl->len * sizeof(double));
		}
	}
	for (r = 0; r < s->rows; r++) {
		for (i = 0; i < s->nslots; i++) {
			const struct fam_slot *sl = &s->slot[i];
			unsigned want = (fwd ? FIO_IN0 : 0) | (bwd ? FIO_IN1 : 0);

			if (!is_row(sl->kind) || !(sl->io & want) ||
			    (fwd && (sl->io & FIO_OUT0)))
				continue;
			load_f(s, i, c->host[i], (size_t)(r * sl->len), sl->len,
			    c->dt, c->buf[i]);
		}
		for (int part = fwd ? 0 : 1; part <= (bwd ? 1 : 0); part++) {
			unsigned out = part == 0 ? FIO_OUT0 : FIO_OUT1;

			c->f->row_f(s, part, r, c->buf, c->scratch);
			if (c->fault == 1 && r == s->rows - 1)
				continue;
			for (i = 0; i < s->nslots; i++) {
				const struct fam_slot *sl = &s->slot[i];

				if (c->fault == 2 && r == 0 && (sl->io & out))
					for (j = 0; j < sl->len; j++)
						c->buf[i][j] *= 1.03f;
				if (is_row(sl->kind) && (sl->io & out) &&
				    fcpu_adds(c, i)) {
					size_t off = (size_t)(r * sl->len);

					load_f(s, i, c->host[i], off, sl->len,
					    c->dt, c->prior);
					for (j = 0; j < sl->len; j++)
						c->buf[i][j] += c->prior[j];
				}
				if (is_row(sl->kind) && (sl->io & out))
					store_f(s, i, c->host[i],
					    (size_t)(r * sl->len), sl->len, c->dt,
					    c->buf[i]);
			}
		}
		if (bwd && (r + 1) % ACC_BLOCK == 0)
			fold(c);
	}
	if (!bwd)
		return;
	fold(c);
	for (i = 0; i < s->nslots; i++) {
		const struct fam_slot *sl = &s->slot[i];

		if (sl->kind != FK_ACC)
			continue;
		if (fcpu_adds(c, i))
			for (j = 0; j < sl->len; j++)
				c->acc[i][j] += ref_elem(c->host[i], (size_t)j,
				    c->dt);
		for (j = 0; j < sl->len; j++)
			c->buf[i][j] = (float)c->acc[i][j];
		store_f(s, i, c->host[i], 0, sl->len, c->dt, c->buf[i]);
	}
	c->reps++;
}

static void
fcpu_free(struct fcpu *c)
{
	int i;

	for (i = 0; i < FAM_MAX_SLOTS; i++) {
		free(c->host[i]);
		free(c->buf[i]);
		free(c->acc[i]);
	}
	free(c->scratch);
	free(c->prior);
	memset(c, 0, sizeof(*c));
}

static int
fcpu_alloc(struct fcpu *c, const struct family *f, const struct fam_shape *s,
	enum api_dtype dt)
{
	int64_t maxlen = s->n;
	int i;

	memset(c, 0, sizeof(*c));
	c->f = f;
	c->s = s;
	c->dt = dt;
	for (i = 0; i < s->nslots; i++) {
		size_t b = (size_t)fam_slot_elems(s, i) * fam_slot_esize(s, i, dt);

		c->host[i] = malloc(b > 0 ? b : 1);
		c->buf[i] = malloc((size_t)s->slot[i].len * sizeof(float) + 4);
		if (s->slot[i].kind == FK_ACC)
			c->acc[i] = malloc((size_t)s->slot[i].len *
			    sizeof(double));
		if (c->host[i] == NULL || c->buf[i] == NULL ||
		    (s->slot[i].kind == FK_ACC && c->acc[i] == NULL)) {
			fcpu_free(c);
			return KI_ENOMEM;
		}
		if (s->slot[i].len > maxlen)
			maxlen = s->slot[i].len;
	}
	c->scratch = malloc((size_t)maxlen * sizeof(float));
	c->prior = malloc((size_t)maxlen * sizeof(float));
	if (c->scratch == NULL || c->prior == NULL) {
		fcpu_free(c);
		return KI_ENOMEM;
	}
	return KI_OK;
}

/* Total elements of every slot. */
static double
total_elems(const struct fam_shape *s)
{
	double t = 0;
	int i;

	for (i = 0; i < s->nslots; i++)
		t += (double)fam_slot_elems(s, i);
	return t;
}

double
fam_flops(const struct family *f, const struct fam_shape *s)
{
	return fam_attn_flops(f, s) + fam_moe_flops(f, s);
}

/* Reduces the shape until its tensors fit max_elems; 1 when reduced. */
int
fam_fit(const struct family *f, struct fam_shape *s, double max_elems)
{
	int scaled = 0;

	f->layout(s);
	while (total_elems(s) > max_elems ||
	    fam_flops(f, s) > REF_CPU_MAX_FLOPS) {
		if (f->shrink != NULL ? !f->shrink(s) : s->rows <= 1)
			break;
		if (f->shrink == NULL)
			s->rows = (s->rows + 1) / 2;
		f->layout(s);
		scaled = 1;
	}
	return scaled;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Writes the NaN poison over the outputs of the parts that will run. */
void
fam_poison(const struct fam_shape *s, void *const *host, enum api_dtype dt,
	int fwd, int bwd)
{
	int i;

	for (i = 0; i < s->nslots; i++) {
		unsigned io = s->slot[i].io;

		if ((fwd && (io & FIO_OUT0)) || (bwd && (io & FIO_OUT1)))
			memset(host[i], 0xff, (size_t)fam_slot_elems(s, i) *
			    fam_slot_esize(s, i, dt));
	}
}

/* A family's passes of a job, for ref_cpu_bench. */
struct fcpu_job {
	struct fcpu *c;
	int fwd, bwd;
};

static void
fcpu_pass_job(void *arg)
{
	const struct fcpu_job *j = arg;

	fcpu_pass(j->c, j->fwd, j->bwd);
}

int
fam_cpu_run(const struct ref_job *job, struct ref_result *r, char *err,
	size_t errlen)
{
	struct fam_shape s = job->shape;
	uint64_t rng = job->seed != 0 ? job->seed :
	    (uint64_t)(now_ms() * 1e6) ^ 0x5eedull;
	int rc;
	int fwd = job->pass != REF_BACKWARD, bwd = job->pass != REF_FORWARD;
	struct fcpu c;
	struct fcpu_job cj = { &c, fwd, bwd };
	void *prior[FAM_MAX_SLOTS] = { NULL };
	int i, nacc = 0;

	memset(&c, 0, sizeof(c));
	memset(r, 0, sizeof(*r));
	r->backend = "cpu";
	r->clocks_sm_before = r->clocks_mem_before = -1;
	r->clocks_sm_after = r->clocks_mem_after = -1;
	r->scaled = fam_fit(job->fam, &s, REF_CPU_MAX_ELEMS);
	r->ran = job->fam->params(&s);
	rc = fcpu_alloc(&c, job->fam, &s, job->dtype);
	if (rc != KI_OK) {
		snprintf(err, errlen, "cannot allocate the CPU workload");
		return rc;
	}
	/* The pass as the script named it (megatron's "backward" runs the
	 * forward too, but resets x's gradient; its full does not). */
	c.acc_params = (job->fam->acc & FAM_ACC_PARAMS) &&
	    job->asked != REF_FORWARD;
	c.acc_rows = ((job->fam->acc & FAM_ACC_ROWS_BWD) &&
	    job->asked == REF_BACKWARD) || ((job->fam->acc &
	    FAM_ACC_ROWS_FULL) && job->asked == REF_FULL);
	if (ref_cpu_write_anew())
		c.acc_params = c.acc_rows = 0;
	fam_fill_inputs(job->fam, &s, c.host, job->dtype, &rng);
	/* The backward alone reads what a forward saved. */
	if (!fwd)
		fcpu_pass(&c, 1, 0);
	/* The timed repetitions add to the gradients the script accumulates,
	 * from the first call's (which writes them). */
	c.reps = 0;
	rc = ref_cpu_bench(job, fcpu_pass_job, &cj, r, err, errlen);
	if (rc != KI_OK)
		goto out;
	/* Matrix-bound families: their floor may be FLOPs at this rate. */
	if (fam_flops(job->fam, &s) > 0)
		r->matmul_rate = fam_x_matmul_rate();

	/* Correctness on fresh inputs, outputs poisoned with NaN. */
	fam_fill_inputs(job->fam, &s, c.host, job->dtype, &rng);
	if (!fwd)
		fcpu_pass(&c, 1, 0);
	fam_poison(&s, c.host, job->dtype, fwd, bwd);
	if (getenv("KIREF_FAULT") != NULL)
		c.fault = atoi(getenv("KIREF_FAULT"));
	/* The first repetition writes every gradient (each element, from
	 * the poison); where the script accumulates, a second one adds to
	 * what the first stored, checked against that plus float64's. */
	c.reps = 0;
	fcpu_pass(&c, fwd, bwd);
	r->complete = 1;
	rc = fam_check(job->fam, &s, c.host, job->dtype, job->pass, &rng, r);
	for (i = 0; rc == KI_OK && i < s.nslots; i++) {
		size_t b = (size_t)fam_slot_elems(&s, i) *
		    fam_slot_esize(&s, i, job->dtype);
		int adds = s.slot[i].kind == FK_ACC ? c.acc_params :
		    s.slot[i].kind == FK_ROW && c.acc_rows;

		if (!(s.slot[i].io & FIO_OUT1) || !adds || b == 0)
			continue;
		prior[i] = malloc(b);
		if (prior[i] == NULL)
			rc = KI_ENOMEM;
		else
			memcpy(prior[i], c.host[i], b);
		nacc++;
	}
	if (rc == KI_OK && nacc > 0) {
		fcpu_pass(&c, fwd, bwd);
		rc = fam_check_prior(job->fam, &s, c.host, prior, job->dtype,
		    job->pass, &rng, r);
		r->accumulated_outputs = nacc;
	}
	if (rc != KI_OK)
		snprintf(err, errlen, "cannot allocate the check");
out:
	for (i = 0; i < FAM_MAX_SLOTS; i++)
		free(prior[i]);
	fcpu_free(&c);
	return rc;
}

/* ---- the float64 check ---- */

/* 1 when any of n elements of type t is NaN. */
static int
has_nan(const void *p, size_t n, enum api_dtype t)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (isnan(ref_elem(p, i, t)))
			return 1;
	return 0;
}

/* The spacing of 16-bit dtype t's values near w (its subnormals'
 * spacing below the smallest normal); 0 for float32, which is held to
 * the tolerance alone. */
static double
ulp(double w, enum api_dtype t)
{
	int e;

	if (t != API_DT_F16 && t != API_DT_BF16)
		return 0;
	frexp(w, &e);   /* |w| in [2^(e-1), 2^e) */
	if (t == API_DT_F16)
		return e - 1 < -14 ? ldexp(1, -24) : ldexp(1, e - 1 - 10);
	return ldexp(1, e - 1 - 7);
}

/* ‖got − want‖/‖want‖ over n elements, each difference less the spacing
 * of a 16-bit output's values there (the rounding no kernel can avoid:
 * a gradient of 1e-6 in float16 is a subnormal of 6e-8 steps); 0 when
 * both are zero. */
static double
rel_error(const struct fam_shape *s, int i, const void *p, size_t off,
	const double *want, int64_t n, enum api_dtype dt)
{
	enum api_dtype t = slot_dt(s, i, dt);
	double num = 0, den = 0;
	int64_t j;

	for (j = 0; j < n; j++) {
		double x = ref_elem(p, off + (size_t)j, t);
		double d = fmax(0, fabs(x - want[j]) - ulp(want[j], t));

		if (isnan(x))
			return INFINITY;
		num += d * d;
		den += want[j] * want[j];
	}
	if (den == 0)
		return num == 0 ? 0 : INFINITY;
	return sqrt(num / den);
}

static void
note(struct ref_result *r, double e, int64_t n)
{
	if (!(e <= r->max_rel_error))
		r->max_rel_error = e;
	r->checked_outputs += n;
}

int
fam_check(const struct family *f, const struct fam_shape *s,
	void *const *host, enum api_dtype dt, int pass, uint64_t *rng,
	struct ref_result *r)
{
	return fam_check_prior(f, s, host, NULL, dt, pass, rng, r);
}

/* want (n elements) plus prior's n elements of slot i from off. */
static void
add_prior(const struct fam_shape *s, int i, const void *prior, size_t off,
	int64_t n, enum api_dtype dt, double *want, double *tmp)
{
	int64_t j;

	load_d(s, i, prior, off, n, dt, tmp);
	for (j = 0; j < n; j++)
		want[j] += tmp[j];
}

int
fam_check_prior(const struct family *f, const struct fam_shape *s,
	void *const *host, void *const *prior, enum api_dtype dt, int pass,
	uint64_t *rng, struct ref_result *r)
{
	double *buf[FAM_MAX_SLOTS] = { NULL }, *scratch = NULL, *tmp = NULL;
	int fwd = pass != REF_BACKWARD, bwd = pass != REF_FORWARD;
	int has_acc = 0, rc = KI_ENOMEM, i;
	int64_t maxlen = s->n, k, nrows;

	for (i = 0; i < s->nslots; i++) {
		const struct fam_slot *sl = &s->slot[i];

		if (((fwd && (sl->io & FIO_OUT0)) || (bwd && (sl->io & FIO_OUT1)))
		    && sl->kind != FK_TARGET && has_nan(host[i],
		    (size_t)fam_slot_elems(s, i), slot_dt(s, i, dt)))
			r->complete = 0;
		if (sl->kind == FK_ACC)
			has_acc = 1;
		buf[i] = calloc((size_t)sl->len + 1, sizeof(double));
		if (buf[i] == NULL)
			goto out;
		if (sl->len > maxlen)
			maxlen = sl->len;
		if (sl->kind == FK_PARAM || sl->kind == FK_PARAM32)
			load_d(s, i, host[i], 0, sl->len, dt, buf[i]);
	}
	scratch = malloc((size_t)maxlen * sizeof(double));
	tmp = malloc((size_t)maxlen * sizeof(double));
	if (scratch == NULL || tmp == NULL)
		goto out;
	/* Every row when a parameter gradient sums over them all, else a
	 * sample. */
	nrows = bwd && has_acc ? s->rows : s->rows < REF_SAMPLE_ROWS ? s->rows :
	    REF_SAMPLE_ROWS;
	for (k = 0; k < nrows; k++) {
		int64_t row = nrows == s->rows ? k :
		    (int64_t)(ref_rand(rng) % (uint64_t)s->rows);

		for (i = 0; i < s->nslots; i++)
			if (is_row(s->slot[i].kind) && is_input(&s->slot[i]))
				load_d(s, i, host[i], (size_t)(row * s->slot[i].len),
				    s->slot[i].len, dt, buf[i]);
		for (int part = 0; part <= (bwd ? 1 : 0); part++) {
			unsigned out = part == 0 ? FIO_OUT0 : FIO_OUT1;

			f->row_d(s, part, row, buf, scratch);
			if (part == 0 && !fwd)
				continue;
			for (i = 0; i < s->nslots; i++) {
				const struct fam_slot *sl = &s->slot[i];

				if (is_row(sl->kind) && (sl->io & out) &&
				    prior != NULL && prior[i] != NULL)
					add_prior(s, i, prior[i],
					    (size_t)(row * sl->len), sl->len,
					    dt, buf[i], tmp);
				if (is_row(sl->kind) && (sl->io & out))
					note(r, rel_error(s, i, host[i],
					    (size_t)(row * sl->len), buf[i], sl->len,
					    dt), sl->len);
			}
		}
	}
	for (i = 0; bwd && i < s->nslots; i++) {
		if (s->slot[i].kind != FK_ACC)
			continue;
		if (prior != NULL && prior[i] != NULL)
			add_prior(s, i, prior[i], 0, s->slot[i].len, dt, buf[i],
			    tmp);
		note(r, rel_error(s, i, host[i], 0, buf[i], s->slot[i].len,
		    dt), s->slot[i].len);
	}
	rc = KI_OK;
out:
	for (i = 0; i < FAM_MAX_SLOTS; i++)
		free(buf[i]);
	free(scratch);
	free(tmp);
	return rc;
}
