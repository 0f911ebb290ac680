/* verify/lin_defs.c — the families over linear layers: their slots, how
 * their shape and loss settings are read from a workload, how their
 * inputs are made (as Liger's benchmark scripts make them), and their
 * arithmetic in float and double (verify/lin_math.inc). */
#include "verify/lin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verify/ref.h"

/* Slot numbers: the MLPs, and the losses over one or two heads. */
enum { ML_X, ML_WG, ML_WU, ML_WD, ML_Y, ML_DY, ML_DX, ML_DWG, ML_DWU,
	ML_DWD, ML_G, ML_U };
enum { LL_X, LL_W, LL_B, LL_X2, LL_W2, LL_B2, LL_T, LL_T2, LL_AUX, LL_LOSS,
	LL_DX, LL_DW, LL_DB, LL_Z, LL_Z2, LL_ST,
	/* GRPO's backward alone: the upstream scalar, the head's gradient
	 * from the earlier repetitions, the gradients its forward stored */
	LL_DO, LL_ACC, LL_GX, LL_GW };
/* Per-row values a loss keeps: lse, the second head's lse, the two
 * coefficients, the log-probabilities of the targets and the reference's. */
#define ST_W 8

#define A double
#define R float
#define FN(x) x##_f
#define EXP expf
#define LOG logf
#define LOG1P log1pf
#define TANH tanhf
#define SQRT sqrtf
#include "verify/lin_math.inc"
#undef R
#undef FN
#undef EXP
#undef LOG
#undef LOG1P
#undef TANH
#undef SQRT
#define R double
#define FN(x) x##_d
#define EXP exp
#define LOG log
#define LOG1P log1p
#define TANH tanh
#define SQRT sqrt
#include "verify/lin_math.inc"
#undef R
#undef FN
#undef EXP
#undef LOG
#undef LOG1P
#undef TANH
#undef SQRT
#undef A

/* ---- parameters ---- */

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* The first of names in p as a number: 1, 0 when absent, -1 when present
 * but not a number (a boolean counts as 0 or 1). */
static int
number(struct json_object *p, const char *const *names, double *v)
{
	size_t i;

	for (i = 0; names[i] != NULL; i++) {
		struct json_object *o;

		if (!json_object_object_get_ex(p, names[i], &o) || o == NULL)
			continue;
		if (json_object_is_type(o, json_type_boolean)) {
			*v = json_object_get_boolean(o) ? 1 : 0;
		} else if (json_object_is_type(o, json_type_int) ||
		    json_object_is_type(o, json_type_double)) {
			*v = json_object_get_double(o);
		} else if (json_object_is_type(o, json_type_string)) {
			const char *str = json_object_get_string(o);
			char *end;

			if (strcmp(str, "true") == 0 ||
			    strcmp(str, "false") == 0) {
				*v = str[0] == 't';
				return 1;
			}
			*v = strtod(str, &end);
			if (end == str || *end != '\0')
				return -1;
		} else {
			return -1;
		}
		return isfinite(*v) ? 1 : -1;
	}
	return 0;
}

/* A positive integer dimension; 0 absent, -1 bad. */
static int
dim(struct json_object *p, const char *const *names, int64_t *v)
{
	double d;
	int rc = number(p, names, &d);

	if (rc <= 0)
		return rc;
	if (!(d >= 1 && d <= 9.0e15 && d == floor(d)))
		return -1;
	*v = (int64_t)d;
	return 1;
}

static int
need(struct json_object *p, const char *const *names, int64_t *v, char *err,
	size_t errlen)
{
	if (dim(p, names, v) == 1)
		return 0;
	snprintf(err, errlen, "workload.parameters.%s: a positive integer is "
	    "required", names[0]);
	return -1;
}

/* A setting with a default; -1 when present but not a number. */
static int
setting(struct json_object *p, const char *name, double dflt, double *v,
	char *err, size_t errlen)
{
	int rc = number(p, NAMES(name), v);

	if (rc == 0)
		*v = dflt;
	if (rc >= 0)
		return 0;
	snprintf(err, errlen, "workload.parameters.%s: a number is required",
	    name);
	return -1;
}

/* rows: tokens, else batch (default 1) × seq. */
static int
rows_of(struct json_object *p, struct lin_shape *s, char *err, size_t errlen)
{
	int64_t bt;

	s->b = 1;
	if (dim(p, NAMES("tokens", "BT"), &bt) == 1) {
		s->t = bt;
		return 0;
	}
	if (dim(p, NAMES("batch", "B", "bsz"), &s->b) < 0 ||
	    need(p, NAMES("seq", "T", "seq_len"), &s->t, err, errlen))
		return -1;
	return 0;
}

static int
parse_mlp(struct json_object *p, struct lin_shape *s, char *err,
	size_t errlen)
{
	if (rows_of(p, s, err, errlen) ||
	    need(p, NAMES("hidden", "H", "hidden_size"), &s->h, err, errlen) ||
	    need(p, NAMES("intermediate", "intermediate_size"), &s->v, err,
	    errlen))
		return -1;
	return 0;
}

static int
parse_head(struct json_object *p, struct lin_shape *s, char *err,
	size_t errlen)
{
	s->ignore = -100;
	s->beta = 0.1;
	if (rows_of(p, s, err, errlen) ||
	    need(p, NAMES("hidden", "H", "hidden_size"), &s->h, err, errlen) ||
	    need(p, NAMES("vocab", "V", "vocab_size"), &s->v, err, errlen))
		return -1;
	return 0;
}

/* Chosen and rejected halves of a batch: batch even. */
static int
parse_paired(struct json_object *p, struct lin_shape *s, char *err,
	size_t errlen)
{
	if (parse_head(p, s, err, errlen))
		return -1;
	if (s->b % 2 != 0) {
		snprintf(err, errlen, "workload.parameters.batch: an even "
		    "number is required (chosen and rejected halves)");
		return -1;
	}
	s->gamma = 0.5;
	return 0;
}

static int
parse_kto(struct json_object *p, struct lin_shape *s, char *err,
	size_t errlen)
{
	double bias, beta, ign;

	if (parse_head(p, s, err, errlen) ||
	    setting(p, "bias", 1, &bias, err, errlen) ||
	    setting(p, "beta", 0.1, &beta, err, errlen) ||
	    setting(p, "ignore_index", 42, &ign, err, errlen))
		return -1;
	s->bias = bias != 0;
	s->beta = beta;
	s->ignore = (int64_t)ign;
	return 0;
}

static int
parse_grpo(struct json_object *p, struct lin_shape *s, char *err,
	size_t errlen, int seq_level)
{
	if (parse_head(p, s, err, errlen))
		return -1;
	s->seq_level = seq_level;
	s->eps_low = s->eps_high = 0.2;
	return 0;
}

static int
parse_grpo_token(struct json_object *p, struct lin_shape *s, char *err,
	size_t errlen)
{
	return parse_grpo(p, s, err, errlen, 0);
}

static int
parse_grpo_seq(struct json_object *p, struct lin_shape *s, char *err,
	size_t errlen)
{
	return parse_grpo(p, s, err, errlen, 1);
}

static int
parse_distill(struct json_object *p, struct lin_shape *s, char *err,
	size_t errlen)
{
	double bias, ign;

	if (parse_head(p, s, err, errlen) ||
	    setting(p, "bias", 0, &bias, err, errlen) ||
	    setting(p, "weight_hard_loss", 0.5, &s->w_hard, err, errlen) ||
	    setting(p, "weight_soft_loss", 0.5, &s->w_soft, err, errlen) ||
	    setting(p, "ignore_index", -100, &ign, err, errlen))
		return -1;
	if (s->h % 2 != 0) {
		snprintf(err, errlen, "workload.parameters.hidden: even (the "
		    "student's hidden size is half the teacher's)");
		return -1;
	}
	s->bias = bias != 0;
	s->ignore = (int64_t)ign;
	s->beta = 0.5;
	return 0;
}

static int
parse_fljsd(struct json_object *p, struct lin_shape *s, char *err,
	size_t errlen)
{
	if (parse_head(p, s, err, errlen))
		return -1;
	s->beta = 0.5;
	return 0;
}

/* ---- layouts ---- */

static void
slot(struct lin_shape *s, int i, const char *name, enum lin_kind k,
	int64_t n)
{
	s->slot[i] = (struct lin_slot){ name, k, n, 0, 0 };
	if (i + 1 > s->nslots)
		s->nslots = i + 1;
}

static void
layout_mlp(struct lin_shape *s)
{
	int64_t rows = s->b * s->t, h = s->h, n = s->v;

	s->nslots = 0;
	slot(s, ML_X, "x", LK_IN, rows * h);
	slot(s, ML_WG, "gate_proj", LK_IN, n * h);
	slot(s, ML_WU, "up_proj", LK_IN, n * h);
	slot(s, ML_WD, "down_proj", LK_IN, h * n);
	slot(s, ML_Y, "y", LK_OUT0, rows * h);
	slot(s, ML_DY, "dy", LK_IN1, rows * h);
	slot(s, ML_DX, "dx", LK_OUT1, rows * h);
	slot(s, ML_DWG, "dgate_proj", LK_OUT1, n * h);
	slot(s, ML_DWU, "dup_proj", LK_OUT1, n * h);
	slot(s, ML_DWD, "ddown_proj", LK_OUT1, h * n);
	/* The scripts' grad_to_none names x alone: the projections'
	 * gradients add to the earlier repetitions' in backward and full. */
	s->slot[ML_DWG].acc = s->slot[ML_DWU].acc = s->slot[ML_DWD].acc =
	    LIN_ACC_BWD | LIN_ACC_FULL;
	slot(s, ML_G, "gate", LK_SAVED, rows * n);
	slot(s, ML_U, "up", LK_SAVED, rows * n);
	s->scratch = h * n + 3 * rows * n + rows * (h > n ? h : n);
}

/* The losses: a policy (student) head of hidden size hs; a second head
 * (reference or teacher) of s->h when two; which extra inputs. */
static void
layout_loss(struct lin_shape *s, int64_t hs, int two, int t2_len,
	int aux_len, int dx)
{
	int64_t rows = s->b * s->t, nv = s->v;

	s->nslots = 0;
	slot(s, LL_X, "input", LK_IN, rows * hs);
	slot(s, LL_W, "weight", LK_IN, nv * hs);
	slot(s, LL_B, "bias", LK_IN, s->bias ? nv : 0);
	slot(s, LL_X2, "ref_input", LK_IN, two ? rows * s->h : 0);
	slot(s, LL_W2, "ref_weight", LK_IN, two ? nv * s->h : 0);
	slot(s, LL_B2, "ref_bias", LK_IN, two && s->bias ? nv : 0);
	slot(s, LL_T, "target", LK_TARGET, rows);
	slot(s, LL_T2, "target2", LK_TARGET, t2_len);
	slot(s, LL_AUX, "aux", LK_IN, aux_len);
	slot(s, LL_LOSS, "loss", LK_LOSS, 1);
	slot(s, LL_DX, "dinput", LK_OUT1, dx ? rows * hs : 0);
	slot(s, LL_DW, "dweight", LK_OUT1, nv * hs);
	slot(s, LL_DB, "dbias", LK_OUT1, s->bias ? nv : 0);
	/* Every script's full pass is do_bench(full) with no grad_to_none:
	 * each gradient adds to the earlier repetitions'. */
	s->slot[LL_DX].acc = s->slot[LL_DW].acc = s->slot[LL_DB].acc =
	    LIN_ACC_FULL;
	slot(s, LL_Z, "logits", LK_SAVED, rows * nv);
	slot(s, LL_Z2, "ref_logits", LK_SAVED, two ? rows * nv : 0);
	slot(s, LL_ST, "row_stats", LK_SAVED, rows * ST_W);
	s->scratch = s->h * nv + 2 * rows * nv;
}

static void
layout_flce(struct lin_shape *s)
{
	layout_loss(s, s->h, 0, 0, 0, 1);
}

static void
layout_orpo(struct lin_shape *s)
{
	layout_loss(s, s->h, 0, 0, 0, 1);
	s->slot[LL_T2] = (struct lin_slot){ "nll_target", LK_TARGET,
	    s->b * s->t, 0, 0 };
}

static void
layout_kto(struct lin_shape *s)
{
	layout_loss(s, s->h, 1, 0, 1, 0);
	s->slot[LL_T2] = (struct lin_slot){ "preference_labels", LK_TARGET,
	    s->b, 0, 0 };
	s->slot[LL_AUX].name = "kl";
}

/* GRPO: x requires grad and the head has no bias (the script's module);
 * the backward alone reads the upstream scalar, the stored gradients and
 * the head's accumulated gradient (LL_ACC, starting from one repetition's
 * gradient), and writes dinput and dweight. */
static void
layout_grpo(struct lin_shape *s)
{
	int64_t rows = s->b * s->t, nw = s->v * s->h;

	layout_loss(s, s->h, 1, 0, 0, 1);
	s->slot[LL_AUX] = (struct lin_slot){ "advantages", LK_IN, s->b, 0,
	    0 };
	slot(s, LL_DO, "dloss", LK_IN1, 1);
	slot(s, LL_ACC, "weight.grad", LK_ACC, nw);
	s->slot[LL_ACC].from = LL_GW;
	slot(s, LL_GX, "stored_dinput", LK_SAVED, rows * s->h);
	slot(s, LL_GW, "stored_dweight", LK_SAVED, nw);
}

static void
layout_fljsd(struct lin_shape *s)
{
	layout_loss(s, s->h, 1, 0, 0, 1);
	s->slot[LL_X2].name = "teacher_input";
	s->slot[LL_W2].name = "teacher_weight";
}

static void
layout_distill(struct lin_shape *s)
{
	layout_loss(s, s->h / 2, 1, 0, 0, 1);
	s->slot[LL_X2].name = "teacher_input";
	s->slot[LL_W2].name = "teacher_weight";
	s->slot[LL_B2].name = "teacher_bias";
}

/* ---- canonical parameters ---- */

static struct json_object *
params3(const char *k1, int64_t v1, const char *k2, int64_t v2,
	const char *k3, int64_t v3)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, k1, json_object_new_int64(v1));
	json_object_object_add(o, k2, json_object_new_int64(v2));
	json_object_object_add(o, k3, json_object_new_int64(v3));
	return o;
}

static struct json_object *
params_mlp(const struct lin_shape *s)
{
	return params3("tokens", s->b * s->t, "hidden", s->h, "intermediate",
	    s->v);
}

static struct json_object *
params_tokens(const struct lin_shape *s)
{
	return params3("tokens", s->b * s->t, "hidden", s->h, "vocab", s->v);
}

static struct json_object *
params_batch(const struct lin_shape *s)
{
	struct json_object *o = params3("batch", s->b, "seq", s->t, "hidden",
	    s->h);

	json_object_object_add(o, "vocab", json_object_new_int64(s->v));
	return o;
}

/* ---- inputs ---- */

static void
put(void *p, int64_t k, double v, enum api_dtype dt)
{
	if (dt == API_DT_F32)
		((float *)p)[k] = (float)v;
	else if (dt == API_DT_BF16)
		((uint16_t *)p)[k] = ref_f32_to_bf16((float)v);
	else
		((uint16_t *)p)[k] = ref_f32_to_f16((float)v);
}

static double
unif(uint64_t *rng)
{
	return (double)(ref_rand(rng) >> 11) * 0x1p-53;
}

/* nn.Linear's initialisation: uniform in ±1/√fan_in. */
static void
linear_init(void *p, int64_t n, int64_t fan_in, enum api_dtype dt,
	uint64_t *rng)
{
	double k = 1 / sqrt((double)fan_in);
	int64_t i;

	for (i = 0; i < n; i++)
		put(p, i, (2 * unif(rng) - 1) * k, dt);
}

/* torch.rand: uniform in [0, 1). */
static void
rand01(void *p, int64_t n, enum api_dtype dt, uint64_t *rng)
{
	int64_t i;

	for (i = 0; i < n; i++)
		put(p, i, unif(rng), dt);
}

static void
prep_mlp(const struct lin_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	linear_init(h[ML_WG], s->v * s->h, s->h, dt, rng);
	linear_init(h[ML_WU], s->v * s->h, s->h, dt, rng);
	linear_init(h[ML_WD], s->v * s->h, s->v, dt, rng);
}

static void
prep_head(const struct lin_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	linear_init(h[LL_W], s->slot[LL_W].n, s->h, dt, rng);
	linear_init(h[LL_B], s->slot[LL_B].n, s->h, dt, rng);
	linear_init(h[LL_W2], s->slot[LL_W2].n, s->h, dt, rng);
	linear_init(h[LL_B2], s->slot[LL_B2].n, s->h, dt, rng);
}

/* GRPO: the heads as nn.Linear's; advantages standard normal (the
 * default fill); the upstream scalar 1, as `y.backward()` on the scalar
 * loss gives it. */
static void
prep_grpo(const struct lin_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	prep_head(s, h, dt, rng);
	put(h[LL_DO], 0, 1, dt);
}

/* KTO: a random number of targets in [1, B·T/2) set to ignore_index;
 * preference labels 0 or 1. */
static void
prep_kto(const struct lin_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	int64_t rows = s->b * s->t, k, i, *t = h[LL_T], *lab = h[LL_T2];

	prep_head(s, h, dt, rng);
	k = rows / 2 > 1 ? 1 + (int64_t)(ref_rand(rng) %
	    (uint64_t)(rows / 2 - 1)) : 1;
	for (i = 0; i < k; i++)
		t[ref_rand(rng) % (uint64_t)rows] = s->ignore;
	for (i = 0; i < s->b; i++)
		lab[i] = (int64_t)(ref_rand(rng) & 1);
}

/* fused_linear_jsd: inputs and both heads torch.rand. */
static void
prep_fljsd(const struct lin_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	rand01(h[LL_X], s->slot[LL_X].n, dt, rng);
	rand01(h[LL_W], s->slot[LL_W].n, dt, rng);
	rand01(h[LL_X2], s->slot[LL_X2].n, dt, rng);
	rand01(h[LL_W2], s->slot[LL_W2].n, dt, rng);
}

/* distillation: inputs torch.rand, heads nn.Linear's (student H/2). */
static void
prep_distill(const struct lin_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	rand01(h[LL_X], s->slot[LL_X].n, dt, rng);
	rand01(h[LL_X2], s->slot[LL_X2].n, dt, rng);
	linear_init(h[LL_W], s->slot[LL_W].n, s->h / 2, dt, rng);
	linear_init(h[LL_B], s->slot[LL_B].n, s->h / 2, dt, rng);
	linear_init(h[LL_W2], s->slot[LL_W2].n, s->h, dt, rng);
	linear_init(h[LL_B2], s->slot[LL_B2].n, s->h, dt, rng);
}

/* ---- the table ---- */

#define RUN(x) x##_f, x##_d

static const struct lin_family families[] = {
	{ "swiglu", parse_mlp, layout_mlp, params_mlp, prep_mlp,
	  RUN(swiglu_run), 0, 0 },
	{ "tiled_swiglu", parse_mlp, layout_mlp, params_mlp, prep_mlp,
	  RUN(swiglu_run), 0, 0 },
	{ "geglu", parse_mlp, layout_mlp, params_mlp, prep_mlp,
	  RUN(geglu_run), 0, 0 },
	{ "tiled_geglu", parse_mlp, layout_mlp, params_mlp, prep_mlp,
	  RUN(geglu_run), 0, 0 },
	{ "fused_linear_cross_entropy", parse_head, layout_flce, params_tokens,
	  prep_head, RUN(flce_run), 0, 0 },
	{ "fused_linear_orpo_loss", parse_paired, layout_orpo, params_batch,
	  prep_head, RUN(orpo_run), 1, 0 },
	{ "fused_linear_cpo_loss", parse_paired, layout_flce, params_batch,
	  prep_head, RUN(cpo_run), 1, 0 },
	{ "fused_linear_simpo_loss", parse_paired, layout_flce, params_batch,
	  prep_head, RUN(simpo_run), 1, 0 },
	{ "kto_loss", parse_kto, layout_kto, params_batch, prep_kto,
	  RUN(kto_run), 0, 0 },
	{ "fused_linear_grpo_loss_token", parse_grpo_token, layout_grpo,
	  params_batch, prep_grpo, RUN(grpo_run), 0, 1 },
	{ "fused_linear_grpo_loss_sequence", parse_grpo_seq, layout_grpo,
	  params_batch, prep_grpo, RUN(grpo_run), 0, 1 },
	{ "fused_linear_jsd", parse_fljsd, layout_fljsd, params_tokens,
	  prep_fljsd, RUN(fljsd_run), 0, 0 },
	{ "distill_jsd_loss", parse_distill, layout_distill, params_tokens,
	  prep_distill, RUN(djsd_run), 0, 0 },
	{ "distill_cosine_loss", parse_distill, layout_distill, params_tokens,
	  prep_distill, RUN(dcos_run), 0, 0 },
};

const struct lin_family *
lin_find(const char *kernel)
{
	size_t i;

	for (i = 0; kernel != NULL &&
	    i < sizeof(families) / sizeof(families[0]); i++)
		if (strcmp(families[i].name, kernel) == 0)
			return &families[i];
	return NULL;
}

double
lin_forward_flops(const struct lin_family *f, const struct lin_shape *s)
{
	double rows = (double)(s->b * s->t), hv = (double)s->h * (double)s->v;

	if (f->layout == layout_mlp)
		return 6 * rows * hv;
	if (f->layout == layout_distill)
		return 3 * rows * hv;
	if (f->layout == layout_kto || f->layout == layout_grpo ||
	    f->layout == layout_fljsd)
		return 4 * rows * hv;
	return 2 * rows * hv;
}

static double
total_elems(const struct lin_shape *s)
{
	double t = (double)s->scratch;
	int i;

	for (i = 0; i < s->nslots; i++)
		t += (double)s->slot[i].n;
	return t;
}

/* Halves the largest of rows, hidden and vocabulary once; 0 when none
 * can shrink. Rows halve through the sequence first, then the batch (a
 * paired batch stays even); hidden stays even and at least 16, the
 * vocabulary at least 64 (above KTO's ignore_index). */
static int
halve(const struct lin_family *f, struct lin_shape *s)
{
	int64_t rows = s->b * s->t;
	int can_rows = s->t > 1 || (f->paired ? s->b % 4 == 0 : s->b > 1);
	int can_h = s->h >= 32, can_v = s->v >= 128;

	if (can_rows && (!can_h || rows >= s->h) && (!can_v || rows >= s->v)) {
		if (s->t > 1)
			s->t = (s->t + 1) / 2;
		else
			s->b /= 2;
		return 1;
	}
	if (can_v && (!can_h || s->v >= s->h)) {
		s->v /= 2;
		return 1;
	}
	if (can_h) {
		s->h = s->h / 2 + (s->h / 2) % 2;
		return 1;
	}
	return 0;
}

int
lin_fit(const struct lin_family *f, struct lin_shape *s, double max_elems,
	double max_flops)
{
	int scaled = 0;

	f->layout(s);
	while ((total_elems(s) > max_elems ||
	    lin_forward_flops(f, s) > max_flops) && halve(f, s)) {
		f->layout(s);
		scaled = 1;
	}
	return scaled;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double
lin_cpu_matmul_rate(void)
{
	const int64_t n = 128;
	float *a = malloc((size_t)(3 * n * n) * sizeof(float));
	double t[7], p50 = 0, p20, p80;
	int64_t i;
	int k;

	if (a == NULL)
		return 0;
	for (i = 0; i < 3 * n * n; i++)
		a[i] = (float)(i % 7) * 0.25f;
	for (k = 0; k < 7; k++) {
		double t0 = now_s();

		mm_f(a + 2 * n * n, a, a + n * n, n, n, n, 0);
		t[k] = now_s() - t0;
	}
	ref_stats(t, 7, &p50, &p20, &p80);
	free(a);
	return p50 > 0 ? 2.0 * (double)(n * n * n) / p50 : 0;
}

void
lin_grpo_checkpoint(struct lin_shape *s, void *const *v, double *ratio)
{
	static const double tok[4] = { 0.5, -0.1, -0.5, 0.1 };
	static const double seq[6] = { 0.5, 0.5, -0.5, -0.5, 0.1, -0.1 };
	double *st = v[LL_ST], *adv = v[LL_AUX];
	int64_t b, t;

	for (b = 0; b < s->b; b++) {
		adv[b] = (b % 2 ? -1 : 1) * (0.5 + fabs(adv[b]));
		for (t = 0; t < s->t; t++) {
			int64_t r = b * s->t + t;
			double d = s->seq_level ? seq[b % 6] : tok[(b + t) % 4];

			st[r * ST_W + 7] = st[r * ST_W + 4] - d;
			ratio[r] = exp(d);
		}
	}
	s->old_fixed = 1;
}
