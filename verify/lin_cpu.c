/* verify/lin_cpu.c — the families over linear layers on the CPU: inputs
 * in the workload's dtype, the fp32 kernel (each timed pass converts its
 * inputs, computes with the blocked matmul engine of lin_math.inc and
 * rounds its outputs to the dtype), its do_bench-style timing, and the
 * float64 check of every output element. */
#include "verify/lin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verify/ref.h"

static int
stored(enum lin_kind k)
{
	return k != LK_SAVED;
}

static int
is_input(enum lin_kind k)
{
	return k == LK_IN || k == LK_IN1 || k == LK_TARGET || k == LK_ACC;
}

/* Bytes of one stored element of slot kind k. */
static size_t
esize(enum lin_kind k, enum api_dtype dt)
{
	if (k == LK_TARGET)
		return 8;
	if (k == LK_LOSS)
		return 4;
	return api_dtype_size(dt);
}

static enum api_dtype
sdt(enum lin_kind k, enum api_dtype dt)
{
	return k == LK_LOSS ? API_DT_F32 : dt;
}

struct lcpu {
	const struct lin_family *f;
	const struct lin_shape *s;
	enum api_dtype dt;
	void *host[LIN_MAX_SLOTS];    /* storage (NULL for saved slots) */
	float *work[LIN_MAX_SLOTS];   /* fp32 arrays (NULL for targets) */
	void *v[LIN_MAX_SLOTS];       /* what the computation sees */
	float *scratch;
	unsigned acc_pass;            /* LIN_ACC_BWD or _FULL: this job's
	                               * pass, for the slots' acc; 0 forward */
	int reps;                     /* backward parts run since the
	                               * gradients were last reset: the first
	                               * writes them (grad is None before
	                               * do_bench's first call), later ones add
	                               * to them where the script accumulates */
	int fault;                    /* KIREF_FAULT, for testing the check:
	                               * 1 leaves the last element of the
	                               * first output unwritten, 2 makes that
	                               * output 3% too large, 3 writes the
	                               * gradients anew where the script adds
	                               * to them */
};

static void
load_f(float *dst, const void *src, int64_t n, enum api_dtype t)
{
	int64_t i;

	if (t == API_DT_F32) {
		memcpy(dst, src, (size_t)n * sizeof(float));
		return;
	}
	for (i = 0; i < n; i++)
		dst[i] = (float)ref_elem(src, (size_t)i, t);
}

static void
store_f(void *dst, const float *src, int64_t n, enum api_dtype t)
{
	int64_t i;

	if (t == API_DT_F32) {
		memcpy(dst, src, (size_t)n * sizeof(float));
		return;
	}
	for (i = 0; i < n; i++)
		((uint16_t *)dst)[i] = t == API_DT_BF16 ?
		    ref_f32_to_bf16(src[i]) : ref_f32_to_f16(src[i]);
}

/* Whether slot i's gradient adds to the earlier repetitions' now. */
static int
accumulates(const struct lcpu *c, int i)
{
	const struct lin_slot *sl = &c->s->slot[i];

	return sl->kind == LK_OUT1 && (sl->acc & c->acc_pass) && c->reps > 0 &&
	    c->fault != 3;
}

/* Stores the outputs of kind k (and the losses with the forward's),
 * applying the test fault to the first of them; a gradient the script
 * accumulates is added to the stored one (read in the dtype, summed in
 * fp32, rounded once), as autograd's in-place add does. */
static void
store_outputs(struct lcpu *c, enum lin_kind k)
{
	const struct lin_shape *s = c->s;
	int i, first = 1;

	for (i = 0; i < s->nslots; i++) {
		const struct lin_slot *sl = &s->slot[i];
		int64_t n = sl->n;

		if (n == 0 || !(sl->kind == k ||
		    (k == LK_OUT0 && sl->kind == LK_LOSS)))
			continue;
		if (first && c->fault == 2)
			for (int64_t j = 0; j < n; j++)
				c->work[i][j] *= 1.03f;
		if (first && c->fault == 1)
			n--;
		first = 0;
		if (accumulates(c, i))
			for (int64_t j = 0; j < n; j++)
				c->work[i][j] += (float)ref_elem(c->host[i],
				    (size_t)j, c->dt);
		store_f(c->host[i], c->work[i], n, sdt(sl->kind, c->dt));
	}
}

/* One pass: the forward (fwd), the backward (bwd, after a forward on the
 * same slots, or for a stored_bwd family after lcpu_prepare_bwd) or both.
 * Each converts the inputs it reads from the dtype: the backward alone of
 * a stored_bwd family reads only its own (the upstream scalar and the
 * accumulated gradients), as the script's backward reads nothing else. */
static void
lcpu_pass(struct lcpu *c, int fwd, int bwd)
{
	const struct lin_shape *s = c->s;
	int i, apply = bwd && !fwd && c->f->stored_bwd;

	for (i = 0; i < s->nslots; i++) {
		const struct lin_slot *sl = &s->slot[i];

		if (sl->n > 0 && ((sl->kind == LK_IN && !apply) ||
		    (sl->kind == LK_IN1 && bwd) || (sl->kind == LK_ACC &&
		    apply)))
			load_f(c->work[i], c->host[i], sl->n, c->dt);
	}
	if (fwd) {
		c->f->run_f(s, LP_FORWARD, c->v, c->scratch);
		store_outputs(c, LK_OUT0);
	}
	if (bwd) {
		c->f->run_f(s, apply ? LP_APPLY : LP_BACKWARD, c->v,
		    c->scratch);
		store_outputs(c, LK_OUT1);
		c->reps++;
	}
}

/* What the backward alone reads, made before it is timed or checked: a
 * forward; for a stored_bwd family the forward that stores the gradients
 * (LP_STORE), and each accumulator as one earlier repetition left it (its
 * source slot rounded to the dtype). */
static void
lcpu_prepare_bwd(struct lcpu *c)
{
	const struct lin_shape *s = c->s;
	int i;

	if (!c->f->stored_bwd) {
		lcpu_pass(c, 1, 0);
		return;
	}
	for (i = 0; i < s->nslots; i++)
		if (s->slot[i].n > 0 && s->slot[i].kind == LK_IN)
			load_f(c->work[i], c->host[i], s->slot[i].n, c->dt);
	c->f->run_f(s, LP_STORE, c->v, c->scratch);
	for (i = 0; i < s->nslots; i++)
		if (s->slot[i].kind == LK_ACC)
			store_f(c->host[i], c->work[s->slot[i].from],
			    s->slot[i].n, c->dt);
}

static void
lcpu_free(struct lcpu *c)
{
	int i;

	for (i = 0; i < LIN_MAX_SLOTS; i++) {
		free(c->host[i]);
		free(c->work[i]);
	}
	free(c->scratch);
	memset(c, 0, sizeof(*c));
}

/* Allocates c's buffers for the shape s (borrowed: it must outlive c) in
 * dtype dt. Returns KI_OK, or KI_ENOMEM with nothing held; free with
 * lcpu_free(). */
static int
lcpu_alloc(struct lcpu *c, const struct lin_family *f,
	const struct lin_shape *s, enum api_dtype dt)
{
	int i, rc = KI_ENOMEM;

	memset(c, 0, sizeof(*c));
	c->f = f;
	c->s = s;
	c->dt = dt;
	for (i = 0; i < s->nslots; i++) {
		const struct lin_slot *sl = &s->slot[i];
		size_t n = (size_t)sl->n;

		if (stored(sl->kind)) {
			c->host[i] = malloc(n > 0 ? n * esize(sl->kind, dt) :
			    1);
			if (c->host[i] == NULL)
				goto out;
		}
		if (sl->kind == LK_TARGET) {
			c->v[i] = c->host[i];
			continue;
		}
		c->work[i] = malloc(n > 0 ? n * sizeof(float) : 1);
		if (c->work[i] == NULL)
			goto out;
		c->v[i] = c->work[i];
	}
	c->scratch = malloc((size_t)(s->scratch > 0 ? s->scratch : 1) *
	    sizeof(float));
	if (c->scratch == NULL)
		goto out;
	rc = KI_OK;
out:
	if (rc != KI_OK)
		lcpu_free(c);
	return rc;
}

/* Standard-normal inputs, uniform targets, then the family's own. */
static void
fill_inputs(struct lcpu *c, uint64_t *rng)
{
	const struct lin_shape *s = c->s;
	int i;

	for (i = 0; i < s->nslots; i++) {
		const struct lin_slot *sl = &s->slot[i];

		if (sl->n == 0 || !is_input(sl->kind))
			continue;
		if (sl->kind == LK_TARGET)
			ref_fill_indices(c->host[i], (size_t)sl->n, s->v, rng);
		else
			ref_fill_randn(c->host[i], (size_t)sl->n, c->dt, rng);
	}
	if (c->f->prepare != NULL)
		c->f->prepare(s, c->host, c->dt, rng);
}

/* NaN over the outputs of the parts that will run. */
static void
poison(struct lcpu *c, int fwd, int bwd)
{
	const struct lin_shape *s = c->s;
	int i;

	for (i = 0; i < s->nslots; i++) {
		enum lin_kind k = s->slot[i].kind;

		if ((fwd && (k == LK_OUT0 || k == LK_LOSS)) ||
		    (bwd && k == LK_OUT1))
			memset(c->host[i], 0xff, (size_t)s->slot[i].n *
			    esize(k, c->dt));
	}
}

/* ---- the float64 check ---- */

/* The spacing of a 16-bit dtype's values near w (0 for float32), as
 * fam_cpu.c's check reduces each difference by it. */
static double
ulp(double w, enum api_dtype t)
{
	int e;

	if (t != API_DT_F16 && t != API_DT_BF16)
		return 0;
	frexp(w, &e);
	if (t == API_DT_F16)
		return e - 1 < -14 ? ldexp(1, -24) : ldexp(1, e - 1 - 10);
	return ldexp(1, e - 1 - 7);
}

/* ‖got − want‖/‖want‖ over n elements (each difference less the
 * rounding of a 16-bit output there); infinite on a NaN. */
static double
rel_error(const void *got, const double *want, int64_t n, enum api_dtype t,
	int *nan)
{
	double num = 0, den = 0;
	int64_t j;

	for (j = 0; j < n; j++) {
		double x = ref_elem(got, (size_t)j, t);
		double d = fmax(0, fabs(x - want[j]) - ulp(want[j], t));

		if (isnan(x)) {
			*nan = 1;
			return INFINITY;
		}
		num += d * d;
		den += want[j] * want[j];
	}
	if (den == 0)
		return num == 0 ? 0 : INFINITY;
	return sqrt(num / den);
}

/* Recomputes the pass in float64 from the inputs in c->host and compares
 * every element of its outputs (a stored_bwd family's backward alone:
 * its storing forward and the backward, from the same inputs and
 * accumulators). prior: NULL, or per slot the gradient a pass that
 * accumulates found stored (in the dtype; NULL for the others), which
 * the expected value then adds. */
static int
check(struct lcpu *c, int fwd, int bwd, void *const *prior,
	struct ref_result *r)
{
	const struct lin_shape *s = c->s;
	double *work[LIN_MAX_SLOTS] = { NULL }, *scratch = NULL;
	void *v[LIN_MAX_SLOTS];
	int i, rc = KI_ENOMEM;

	for (i = 0; i < s->nslots; i++) {
		const struct lin_slot *sl = &s->slot[i];

		if (sl->kind == LK_TARGET) {
			v[i] = c->host[i];
			continue;
		}
		work[i] = calloc(sl->n > 0 ? (size_t)sl->n : 1, sizeof(double));
		if (work[i] == NULL)
			goto out;
		v[i] = work[i];
		if (sl->kind == LK_IN || sl->kind == LK_IN1 ||
		    sl->kind == LK_ACC)
			for (int64_t j = 0; j < sl->n; j++)
				work[i][j] = ref_elem(c->host[i], (size_t)j,
				    c->dt);
	}
	scratch = malloc((size_t)(s->scratch > 0 ? s->scratch : 1) *
	    sizeof(double));
	if (scratch == NULL)
		goto out;
	if (bwd && !fwd && c->f->stored_bwd) {
		c->f->run_d(s, LP_STORE, v, scratch);
		c->f->run_d(s, LP_APPLY, v, scratch);
	} else {
		c->f->run_d(s, LP_FORWARD, v, scratch);
		if (bwd)
			c->f->run_d(s, LP_BACKWARD, v, scratch);
	}
	for (i = 0; i < s->nslots; i++) {
		enum lin_kind k = s->slot[i].kind;
		int nan = 0;
		double e;

		if (s->slot[i].n == 0 || !((fwd && (k == LK_OUT0 ||
		    k == LK_LOSS)) || (bwd && k == LK_OUT1)))
			continue;
		if (prior != NULL && prior[i] != NULL)
			for (int64_t j = 0; j < s->slot[i].n; j++)
				work[i][j] += ref_elem(prior[i], (size_t)j,
				    c->dt);
		e = rel_error(c->host[i], work[i], s->slot[i].n, sdt(k, c->dt),
		    &nan);
		if (nan)
			r->complete = 0;
		if (!(e <= r->max_rel_error))
			r->max_rel_error = e;
		r->checked_outputs += s->slot[i].n;
	}
	rc = KI_OK;
out:
	for (i = 0; i < LIN_MAX_SLOTS; i++)
		free(work[i]);
	free(scratch);
	return rc;
}

/* ---- the job ---- */

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

struct lcpu_job {
	struct lcpu *c;
	int fwd, bwd;
};

static void
lcpu_pass_job(void *arg)
{
	const struct lcpu_job *j = arg;

	lcpu_pass(j->c, j->fwd, j->bwd);
}

int
lin_cpu_run(const struct ref_job *job, struct ref_result *r, char *err,
	size_t errlen)
{
	struct lin_shape s = job->lshape;
	uint64_t rng = job->seed != 0 ? job->seed :
	    (uint64_t)now_ns() ^ 0x5eedull;
	int fwd = job->pass != REF_BACKWARD, bwd = job->pass != REF_FORWARD;
	struct lcpu c;
	struct lcpu_job cj = { &c, fwd, bwd };
	void *prior[LIN_MAX_SLOTS] = { NULL };
	int rc, i, nacc = 0;

	memset(r, 0, sizeof(*r));
	r->backend = "cpu";
	r->clocks_sm_before = r->clocks_mem_before = -1;
	r->clocks_sm_after = r->clocks_mem_after = -1;
	r->scaled = lin_fit(job->lin, &s, REF_CPU_MAX_ELEMS,
	    LIN_CPU_MAX_FLOPS);
	r->ran = job->lin->params(&s);
	rc = lcpu_alloc(&c, job->lin, &s, job->dtype);
	if (rc != KI_OK) {
		snprintf(err, errlen, "cannot allocate the CPU workload");
		return rc;
	}
	c.acc_pass = job->pass == REF_FULL ? LIN_ACC_FULL :
	    job->pass == REF_BACKWARD ? LIN_ACC_BWD : 0;
	if (ref_cpu_write_anew())
		c.acc_pass = 0;
	fill_inputs(&c, &rng);
	/* The backward alone reads what a forward saved. */
	if (!fwd)
		lcpu_prepare_bwd(&c);
	/* The timed repetitions add to the gradients the script accumulates,
	 * from the first call's (which writes them). */
	c.reps = 0;
	rc = ref_cpu_bench(job, lcpu_pass_job, &cj, r, err, errlen);
	if (rc != KI_OK)
		goto out;
	r->matmul_rate = lin_cpu_matmul_rate();

	/* Correctness on fresh inputs, outputs poisoned with NaN. */
	fill_inputs(&c, &rng);
	if (!fwd)
		lcpu_prepare_bwd(&c);
	poison(&c, fwd, bwd);
	if (getenv("KIREF_FAULT") != NULL)
		c.fault = atoi(getenv("KIREF_FAULT"));
	/* The first repetition writes every gradient (each element, from
	 * the poison); where the script accumulates, a second one adds to
	 * what the first stored, checked against that plus float64's. */
	c.reps = 0;
	lcpu_pass(&c, fwd, bwd);
	r->complete = 1;
	rc = check(&c, fwd, bwd, NULL, r);
	for (i = 0; rc == KI_OK && i < s.nslots; i++) {
		size_t b = (size_t)s.slot[i].n * esize(LK_OUT1, c.dt);

		if (s.slot[i].kind != LK_OUT1 || s.slot[i].n == 0 ||
		    !(s.slot[i].acc & c.acc_pass))
			continue;
		prior[i] = malloc(b);
		if (prior[i] == NULL)
			rc = KI_ENOMEM;
		else
			memcpy(prior[i], c.host[i], b);
		nacc++;
	}
	if (rc == KI_OK && nacc > 0) {
		lcpu_pass(&c, fwd, bwd);
		rc = check(&c, fwd, bwd, prior, r);
		r->accumulated_outputs = nacc;
	}
	if (rc != KI_OK)
		snprintf(err, errlen, "cannot allocate the check");
out:
	for (i = 0; i < LIN_MAX_SLOTS; i++)
		free(prior[i]);
	lcpu_free(&c);
	return rc;
}
