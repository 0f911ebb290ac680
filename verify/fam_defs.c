/* verify/fam_defs.c — the row-wise families: their slots, how their shape
 * is read from a workload, how their inputs are made (as Liger's
 * benchmark scripts make them), and their row arithmetic in float and
 * double (verify/fam_math.inc). */
#include "verify/family.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify/ref.h"

/* Slot numbers, per family layout. */
enum { RMS_X, RMS_W, RMS_Y, RMS_DY, RMS_DX, RMS_DW };
enum { FA_X, FA_RES, FA_W, FA_Y, FA_S, FA_DY, FA_DS, FA_DX, FA_DW };
enum { LN_X, LN_W, LN_B, LN_Y, LN_DY, LN_DX, LN_DW, LN_DB };
enum { EW_X, EW_Y, EW_DY, EW_DX };
enum { LS_X, LS_T, LS_L, LS_DX };
enum { DB_G, DB_Y, DB_DO, DB_DX };
enum { RO_Q, RO_K, RO_TAB, RO_QO, RO_KO, RO_DQ, RO_DK, RO_DQI, RO_DKI };

#define A double
#define R float
#define FN(x) x##_f
#define EXP expf
#define LOG logf
#define SQRT sqrtf
#include "verify/fam_math.inc"
#undef R
#undef FN
#undef EXP
#undef LOG
#undef SQRT
#define R double
#define FN(x) x##_d
#define EXP exp
#define LOG log
#define SQRT sqrt
#include "verify/fam_math.inc"
#undef R
#undef FN
#undef EXP
#undef LOG
#undef SQRT
#undef A

/* ---- shapes ---- */

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* The first of names in p as a positive integer: 1, 0 when absent, -1
 * when present but not one. */
static int
dim(struct json_object *p, const char *const *names, int64_t *v)
{
	size_t i;

	for (i = 0; names[i] != NULL; i++) {
		struct json_object *o;
		double d;

		if (!json_object_object_get_ex(p, names[i], &o) || o == NULL)
			continue;
		if (json_object_is_type(o, json_type_string)) {
			char *end;

			d = strtod(json_object_get_string(o), &end);
			if (*end != '\0')
				return -1;
		} else if (json_object_is_type(o, json_type_int) ||
		    json_object_is_type(o, json_type_double)) {
			d = json_object_get_double(o);
		} else {
			return -1;
		}
		if (!(d >= 1 && d <= 9.0e15 && d == floor(d)))
			return -1;
		*v = (int64_t)d;
		return 1;
	}
	return 0;
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

/* B·T: tokens, else batch (default 1) × seq. */
static int
tokens(struct json_object *p, int64_t *bt, char *err, size_t errlen)
{
	int64_t b = 1, t;

	if (dim(p, NAMES("tokens", "BT"), bt) == 1)
		return 0;
	if (dim(p, NAMES("batch", "B", "bsz"), &b) < 0 ||
	    need(p, NAMES("seq", "T", "S", "seq_len"), &t, err, errlen))
		return -1;
	*bt = b * t;
	return 0;
}

static double
eps_of(struct json_object *p)
{
	struct json_object *o;

	if (json_object_object_get_ex(p, "eps", &o) && o != NULL &&
	    (json_object_is_type(o, json_type_double) ||
	    json_object_is_type(o, json_type_int)) &&
	    json_object_get_double(o) > 0 && json_object_get_double(o) < 1)
		return json_object_get_double(o);
	return 1e-6;
}

static void
slot(struct fam_shape *s, int i, const char *name, enum fam_kind k,
	unsigned io, int64_t len)
{
	s->slot[i] = (struct fam_slot){ name, k, io, len };
	if (i + 1 > s->nslots)
		s->nslots = i + 1;
}

static struct json_object *
obj2(const char *k1, int64_t v1, const char *k2, int64_t v2)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, k1, json_object_new_int64(v1));
	json_object_object_add(o, k2, json_object_new_int64(v2));
	return o;
}

/* ---- norms ---- */

static int
parse_rows(struct json_object *p, struct fam_shape *s, char *err,
	size_t errlen)
{
	s->eps = eps_of(p);
	if (need(p, NAMES("rows", "M"), &s->rows, err, errlen) ||
	    need(p, NAMES("hidden", "H", "N", "hidden_size"), &s->n, err,
	    errlen))
		return -1;
	return 0;
}

static int
parse_tokens_hidden(struct json_object *p, struct fam_shape *s, char *err,
	size_t errlen)
{
	s->eps = eps_of(p);
	if (tokens(p, &s->rows, err, errlen) ||
	    need(p, NAMES("hidden", "H", "hidden_size"), &s->n, err, errlen))
		return -1;
	return 0;
}

static void
layout_rms(struct fam_shape *s)
{
	s->nslots = 0;
	slot(s, RMS_X, "x", FK_ROW, FIO_IN0 | FIO_IN1, s->n);
	slot(s, RMS_W, "weight", FK_PARAM, FIO_IN0 | FIO_IN1, s->n);
	slot(s, RMS_Y, "y", FK_ROW, FIO_OUT0, s->n);
	slot(s, RMS_DY, "dy", FK_ROW, FIO_IN1, s->n);
	slot(s, RMS_DX, "dx", FK_ROW, FIO_OUT1, s->n);
	slot(s, RMS_DW, "dweight", FK_ACC, FIO_OUT1, s->n);
}

static struct json_object *
params_rows(const struct fam_shape *s)
{
	return obj2("rows", s->rows, "hidden", s->n);
}

static struct json_object *
params_tokens(const struct fam_shape *s)
{
	return obj2("tokens", s->rows, "hidden", s->n);
}

static void
layout_farms(struct fam_shape *s)
{
	s->nslots = 0;
	slot(s, FA_X, "x", FK_ROW, FIO_IN0, s->n);
	slot(s, FA_RES, "residual", FK_ROW, FIO_IN0, s->n);
	slot(s, FA_W, "weight", FK_PARAM, FIO_IN0 | FIO_IN1, s->n);
	slot(s, FA_Y, "y", FK_ROW, FIO_OUT0, s->n);
	slot(s, FA_S, "residual_out", FK_ROW, FIO_OUT0 | FIO_IN1, s->n);
	slot(s, FA_DY, "dy", FK_ROW, FIO_IN1, s->n);
	slot(s, FA_DS, "dresidual_out", FK_ROW, FIO_IN1, s->n);
	slot(s, FA_DX, "dx", FK_ROW, FIO_OUT1, s->n);
	slot(s, FA_DW, "dweight", FK_ACC, FIO_OUT1, s->n);
}

static void
layout_ln(struct fam_shape *s)
{
	int64_t c = s->b * s->c;   /* channels (layer_norm: n) */

	s->nslots = 0;
	slot(s, LN_X, "x", FK_ROW, FIO_IN0 | FIO_IN1, s->n);
	slot(s, LN_W, "weight", FK_PARAM, FIO_IN0 | FIO_IN1, c);
	slot(s, LN_B, "bias", FK_PARAM, FIO_IN0, c);
	slot(s, LN_Y, "y", FK_ROW, FIO_OUT0, s->n);
	slot(s, LN_DY, "dy", FK_ROW, FIO_IN1, s->n);
	slot(s, LN_DX, "dx", FK_ROW, FIO_OUT1, s->n);
	slot(s, LN_DW, "dweight", FK_ACC, FIO_OUT1, c);
	slot(s, LN_DB, "dbias", FK_ACC, FIO_OUT1, c);
}

static int
parse_ln(struct json_object *p, struct fam_shape *s, char *err, size_t errlen)
{
	if (parse_rows(p, s, err, errlen))
		return -1;
	s->eps = eps_of(p);
	s->a = 1;      /* one channel per element, one group */
	s->b = 1;
	s->c = s->n;
	return 0;
}

/* group_norm: x (M, C, H), C / cpg groups; a row is one group. */
static int
parse_gn(struct json_object *p, struct fam_shape *s, char *err, size_t errlen)
{
	int64_t m, c, h, cpg;

	s->eps = eps_of(p);
	if (need(p, NAMES("batch", "rows", "M", "B"), &m, err, errlen) ||
	    need(p, NAMES("channels", "C", "num_channels"), &c, err, errlen) ||
	    need(p, NAMES("hidden", "H", "hidden_size"), &h, err, errlen) ||
	    need(p, NAMES("channels_per_group"), &cpg, err, errlen))
		return -1;
	if (c % cpg != 0) {
		snprintf(err, errlen, "workload.parameters.channels: not a "
		    "multiple of channels_per_group");
		return -1;
	}
	s->a = h;
	s->b = c / cpg;
	s->c = cpg;
	s->rows = m * s->b;
	s->n = cpg * h;
	return 0;
}

static int
shrink_gn(struct fam_shape *s)
{
	if (s->rows / s->b <= 1)
		return 0;
	s->rows = (s->rows / s->b + 1) / 2 * s->b;
	return 1;
}

static struct json_object *
params_gn(const struct fam_shape *s)
{
	struct json_object *o = obj2("batch", s->rows / s->b, "hidden", s->a);

	json_object_object_add(o, "channels",
	    json_object_new_int64(s->b * s->c));
	json_object_object_add(o, "channels_per_group",
	    json_object_new_int64(s->c));
	return o;
}

/* ---- activations ---- */

static void
layout_ew(struct fam_shape *s)
{
	s->nslots = 0;
	slot(s, EW_X, "x", FK_ROW, FIO_IN0 | FIO_IN1, s->n);
	slot(s, EW_Y, "y", FK_ROW, FIO_OUT0, s->n);
	slot(s, EW_DY, "dy", FK_ROW, FIO_IN1, s->n);
	slot(s, EW_DX, "dx", FK_ROW, FIO_OUT1, s->n);
}

/* softmax and sparsemax read the saved y, not x, in the backward. */
static void
layout_ew_y(struct fam_shape *s)
{
	layout_ew(s);
	s->slot[EW_X].io = FIO_IN0;
	s->slot[EW_Y].io = FIO_OUT0 | FIO_IN1;
}

static int
parse_sparsemax(struct json_object *p, struct fam_shape *s, char *err,
	size_t errlen)
{
	if (tokens(p, &s->rows, err, errlen) ||
	    need(p, NAMES("hidden", "vocab", "V", "H"), &s->n, err, errlen))
		return -1;
	return 0;
}

static int
parse_swiglu(struct json_object *p, struct fam_shape *s, char *err,
	size_t errlen)
{
	if (tokens(p, &s->rows, err, errlen) ||
	    need(p, NAMES("intermediate", "ffn_local", "intermediate_size"),
	    &s->n, err, errlen))
		return -1;
	return 0;
}

static void
layout_swiglu(struct fam_shape *s)
{
	layout_ew(s);
	s->slot[EW_X].len = 2 * s->n;
	s->slot[EW_DX].len = 2 * s->n;
}

static struct json_object *
params_swiglu(const struct fam_shape *s)
{
	return obj2("tokens", s->rows, "intermediate", s->n);
}

static void put(void *p, int64_t k, double v, enum api_dtype dt);

/* ---- losses ---- */

static int
parse_vocab(struct json_object *p, struct fam_shape *s, char *err,
	size_t errlen)
{
	if (tokens(p, &s->rows, err, errlen) ||
	    need(p, NAMES("vocab", "V", "vocab_size"), &s->n, err, errlen))
		return -1;
	s->scale = 1.0 / (double)s->rows;
	return 0;
}

static int
parse_vocab_sum(struct json_object *p, struct fam_shape *s, char *err,
	size_t errlen)
{
	int rc = parse_vocab(p, s, err, errlen);

	s->scale = 1;
	return rc;
}

static int
shrink_loss(struct fam_shape *s)
{
	if (s->rows <= 1)
		return 0;
	s->rows = (s->rows + 1) / 2;
	if (s->scale != 1)
		s->scale = 1.0 / (double)s->rows;
	return 1;
}

static void
layout_ce(struct fam_shape *s)
{
	s->nslots = 0;
	slot(s, LS_X, "logits", FK_ROW, FIO_IN0 | FIO_IN1, s->n);
	slot(s, LS_T, "target", FK_TARGET, FIO_IN0 | FIO_IN1, 1);
	slot(s, LS_L, "loss", FK_ROW32, FIO_OUT0, 1);
	slot(s, LS_DX, "dlogits", FK_ROW, FIO_OUT1, s->n);
}

static void
layout_div(struct fam_shape *s)
{
	layout_ce(s);
	s->slot[LS_X].name = "input";
	s->slot[LS_T] = (struct fam_slot){ "target", FK_ROW,
	    FIO_IN0 | FIO_IN1, s->n };
	s->slot[LS_DX].name = "dinput";
}

static struct json_object *
params_vocab(const struct fam_shape *s)
{
	return obj2("tokens", s->rows, "vocab", s->n);
}

/* Row-wise log_softmax (as_log) or softmax of a row in place, in
 * float64, rounded to dt. */
static void
normalize_rows(void *p, int64_t rows, int64_t n, enum api_dtype dt,
	int as_log)
{
	double *tmp = malloc((size_t)n * sizeof(*tmp));
	int64_t i, j;

	if (tmp == NULL)
		return;
	for (i = 0; i < rows; i++) {
		double lse;

		for (j = 0; j < n; j++)
			tmp[j] = ref_elem(p, (size_t)(i * n + j), dt);
		lse = lse_d(tmp, n);
		for (j = 0; j < n; j++) {
			float f = (float)(as_log ? tmp[j] - lse :
			    exp(tmp[j] - lse));

			if (dt == API_DT_F32)
				((float *)p)[i * n + j] = f;
			else if (dt == API_DT_BF16)
				((uint16_t *)p)[i * n + j] = ref_f32_to_bf16(f);
			else
				((uint16_t *)p)[i * n + j] = ref_f32_to_f16(f);
		}
	}
	free(tmp);
}

static void
prep_kl(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	(void)rng;
	normalize_rows(h[LS_X], s->rows, s->n, dt, 1);
	normalize_rows(h[LS_T], s->rows, s->n, dt, 0);
}

static void
prep_jsd(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	(void)rng;
	normalize_rows(h[LS_X], s->rows, s->n, dt, 1);
	normalize_rows(h[LS_T], s->rows, s->n, dt, 1);
}

static void
prep_tvd(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	(void)rng;
	normalize_rows(h[LS_X], s->rows, s->n, dt, 0);
	normalize_rows(h[LS_T], s->rows, s->n, dt, 0);
}

/* The backward of tvd and jsd (fam_find_pass): the stored gradient G,
 * the script's input y, the upstream scalar; the leaf's gradient. */
static void
layout_div_bwd(struct fam_shape *s)
{
	s->nslots = 0;
	slot(s, DB_G, "grad", FK_ROW, FIO_IN1, s->n);
	slot(s, DB_Y, "input", FK_ROW, FIO_IN1, s->n);
	slot(s, DB_DO, "grad_output", FK_PARAM, FIO_IN1, 1);
	slot(s, DB_DX, "dleaf", FK_ROW, FIO_OUT1, s->n);
}

/* y as the script makes it (softmax for tvd, log_softmax for jsd, of
 * standard normals); G as Liger's forward leaves it for y and a target
 * made the same way; the upstream scalar stays standard normal. */
static void
prep_div_bwd(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng, int as_log)
{
	double *t = malloc((size_t)s->n * sizeof(*t));
	int64_t i, j;

	normalize_rows(h[DB_Y], s->rows, s->n, dt, as_log);
	if (t == NULL)
		return;
	for (i = 0; i < s->rows; i++) {
		double lse;

		for (j = 0; j < s->n; j++)
			t[j] = ref_randn(rng);
		lse = lse_d(t, s->n);
		for (j = 0; j < s->n; j++) {
			double y = ref_elem(h[DB_Y], (size_t)(i * s->n + j), dt);
			double g;

			if (as_log) {   /* jsd, beta 1/2: y = log q, t = log p */
				double q = exp(y), lp = t[j] - lse;
				double lm = log(0.5 * exp(lp) + 0.5 * q);

				g = 0.5 * q * (y - lm);
			} else {        /* tvd: y = p, t = q */
				g = y > exp(t[j] - lse) ? 0.5 : -0.5;
			}
			put(h[DB_G], i * s->n + j, g * s->scale, dt);
		}
	}
	free(t);
}

static void
prep_tvd_bwd(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	prep_div_bwd(s, h, dt, rng, 0);
}

static void
prep_jsd_bwd(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	prep_div_bwd(s, h, dt, rng, 1);
}

/* ---- rotary embeddings ---- */

static int
parse_rope(struct json_object *p, struct fam_shape *s, char *err,
	size_t errlen)
{
	int64_t b = 1, t, hid;

	if (dim(p, NAMES("batch", "B"), &b) < 0 ||
	    need(p, NAMES("seq", "T", "seq_len"), &t, err, errlen) ||
	    need(p, NAMES("hidden", "H", "hidden_size"), &hid, err, errlen) ||
	    need(p, NAMES("q_heads", "num_q_heads"), &s->a, err, errlen) ||
	    need(p, NAMES("kv_heads", "num_kv_heads"), &s->b, err, errlen))
		return -1;
	if (hid % s->a != 0 || (hid / s->a) % 2 != 0) {
		snprintf(err, errlen, "workload.parameters.hidden: not an even "
		    "head dimension times q_heads");
		return -1;
	}
	s->n = hid / s->a;
	s->c = t;
	s->rows = b * t;
	return 0;
}

static int
shrink_rope(struct fam_shape *s)
{
	int64_t b = s->rows / s->c;

	if (b > 1) {
		s->rows = (b + 1) / 2 * s->c;
		return 1;
	}
	if (s->c <= 1)
		return 0;
	s->c = (s->c + 1) / 2;
	s->rows = s->c;
	return 1;
}

static void
layout_rope(struct fam_shape *s, enum fam_kind tab, int64_t tab_len)
{
	int64_t q = s->a * s->n, k = s->b * s->n;

	s->nslots = 0;
	slot(s, RO_Q, "q", FK_ROW, FIO_IN0, q);
	slot(s, RO_K, "k", FK_ROW, FIO_IN0, k);
	slot(s, RO_TAB, "cos_sin", tab, FIO_IN0 | FIO_IN1, tab_len);
	slot(s, RO_QO, "q_rotated", FK_ROW, FIO_OUT0, q);
	slot(s, RO_KO, "k_rotated", FK_ROW, FIO_OUT0, k);
	slot(s, RO_DQ, "dq_rotated", FK_ROW, FIO_IN1, q);
	slot(s, RO_DK, "dk_rotated", FK_ROW, FIO_IN1, k);
	slot(s, RO_DQI, "dq", FK_ROW, FIO_OUT1, q);
	slot(s, RO_DKI, "dk", FK_ROW, FIO_OUT1, k);
}

static void
layout_rope_hf(struct fam_shape *s)
{
	layout_rope(s, FK_PARAM, 2 * s->c * s->n);
}

static void
layout_rope4(struct fam_shape *s)
{
	layout_rope(s, FK_PARAM32, s->c * s->n);
	s->slot[RO_TAB].name = "freqs_cis";
}

static struct json_object *
params_rope(const struct fam_shape *s)
{
	struct json_object *o = obj2("batch", s->rows / s->c, "seq", s->c);

	json_object_object_add(o, "hidden", json_object_new_int64(s->a * s->n));
	json_object_object_add(o, "q_heads", json_object_new_int64(s->a));
	json_object_object_add(o, "kv_heads", json_object_new_int64(s->b));
	return o;
}

/* The rotary angle of position t, frequency i of d/2 (base 10000). */
static double
angle(int64_t t, int64_t i, int64_t d)
{
	return (double)t * pow(10000.0, -2.0 * (double)i / (double)d);
}

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

/* cos and sin (T, d), each frequency twice (HF's rotate_half layout). */
static void
prep_rope(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	int64_t t, i, d = s->n;

	(void)rng;
	for (t = 0; t < s->c; t++)
		for (i = 0; i < d; i++) {
			double a = angle(t, i % (d / 2), d);

			put(h[RO_TAB], t * d + i, cos(a), dt);
			put(h[RO_TAB], (s->c + t) * d + i, sin(a), dt);
		}
}

/* freqs_cis (T, d/2) complex64: cos and sin interleaved, float32. */
static void
prep_rope4(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	int64_t t, i, d = s->n;
	float *f = h[RO_TAB];

	(void)rng;
	(void)dt;
	for (t = 0; t < s->c; t++)
		for (i = 0; i < d / 2; i++) {
			double a = angle(t, i, d);

			f[t * d + 2 * i] = (float)cos(a);
			f[t * d + 2 * i + 1] = (float)sin(a);
		}
}

/* ---- the table ---- */

static const struct family families[] = {
	/* The norms' scripts name x (and r) in grad_to_none, not the
	 * module's weight (and bias). megatron_rms_norm's resets x's
	 * gradient before each "backward" (forward+backward) but not in
	 * full. */
	{ "rms_norm", 0, parse_rows, layout_rms, NULL, params_rows, NULL,
	  rms_row_f, rms_row_d, FAM_ACC_PARAMS },
	{ "megatron_rms_norm", 1, parse_tokens_hidden, layout_rms, NULL,
	  params_tokens, NULL, rms_row_f, rms_row_d,
	  FAM_ACC_PARAMS | FAM_ACC_ROWS_FULL },
	{ "fused_add_rms_norm", 0, parse_rows, layout_farms, NULL,
	  params_rows, NULL, farms_row_f, farms_row_d, FAM_ACC_PARAMS },
	{ "layer_norm", 0, parse_ln, layout_ln, NULL, params_rows, NULL,
	  ln_row_f, ln_row_d, FAM_ACC_PARAMS },
	{ "group_norm", 0, parse_gn, layout_ln, shrink_gn, params_gn, NULL,
	  ln_row_f, ln_row_d, FAM_ACC_PARAMS },
	{ "softmax", 0, parse_rows, layout_ew_y, NULL, params_rows, NULL,
	  softmax_row_f, softmax_row_d, 0 },
	{ "sparsemax", 0, parse_sparsemax, layout_ew_y, NULL, params_tokens,
	  NULL, sparsemax_row_f, sparsemax_row_d, 0 },
	{ "relu_squared", 0, parse_rows, layout_ew, NULL, params_rows, NULL,
	  relu2_row_f, relu2_row_d, 0 },
	{ "megatron_swiglu", 1, parse_swiglu, layout_swiglu, NULL,
	  params_swiglu, NULL, swiglu_row_f, swiglu_row_d, 0 },
	/* Its full pass is do_bench(full) with no grad_to_none: the
	 * logits' gradient adds up. */
	{ "cross_entropy", 0, parse_vocab, layout_ce, shrink_loss,
	  params_vocab, NULL, ce_row_f, ce_row_d, FAM_ACC_ROWS_FULL },
	{ "megatron_cross_entropy", 1, parse_vocab_sum, layout_ce, shrink_loss,
	  params_vocab, NULL, ce_row_f, ce_row_d, 0 },
	{ "kl_div", 0, parse_vocab, layout_div, shrink_loss, params_vocab,
	  prep_kl, kl_row_f, kl_row_d, 0 },
	{ "jsd", 0, parse_vocab, layout_div, shrink_loss, params_vocab,
	  prep_jsd, jsd_row_f, jsd_row_d, 0 },
	{ "tvd", 0, parse_vocab, layout_div, shrink_loss, params_vocab,
	  prep_tvd, tvd_row_f, tvd_row_d, 0 },
	{ "rope", 0, parse_rope, layout_rope_hf, shrink_rope, params_rope,
	  prep_rope, rope_row_f, rope_row_d, 0 },
	{ "llama4_rope", 0, parse_rope, layout_rope4, shrink_rope, params_rope,
	  prep_rope4, rope4_row_f, rope4_row_d, 0 },
};

/* Families whose backward is a pass of its own, unlike their forward and
 * full: tvd and jsd (Liger's forward computes the input gradient). Their
 * scripts' grad_to_none names the softmax's (log_softmax's) output, not
 * the leaf whose gradient this pass writes: that gradient adds up. */
static const struct family backward_families[] = {
	{ "jsd", 0, parse_vocab, layout_div_bwd, shrink_loss, params_vocab,
	  prep_jsd_bwd, jsd_bwd_row_f, jsd_bwd_row_d, FAM_ACC_ROWS_BWD },
	{ "tvd", 0, parse_vocab, layout_div_bwd, shrink_loss, params_vocab,
	  prep_tvd_bwd, tvd_bwd_row_f, tvd_bwd_row_d, FAM_ACC_ROWS_BWD },
};

const struct family *
fam_find_pass(const char *kernel, int pass)
{
	size_t i;

	for (i = 0; pass == REF_BACKWARD && kernel != NULL &&
	    i < sizeof(backward_families) / sizeof(backward_families[0]); i++)
		if (strcmp(backward_families[i].name, kernel) == 0)
			return &backward_families[i];
	return fam_find(kernel);
}

int
fam_cpu_only_pass(const struct family *f)
{
	size_t i;

	for (i = 0; i < sizeof(backward_families) /
	    sizeof(backward_families[0]); i++)
		if (f == &backward_families[i])
			return 1;
	return 0;
}

const struct family *
fam_find(const char *kernel)
{
	size_t i;

	for (i = 0; kernel != NULL &&
	    i < sizeof(families) / sizeof(families[0]); i++)
		if (strcmp(families[i].name, kernel) == 0)
			return &families[i];
	if (fam_attn_find(kernel) != NULL)
		return fam_attn_find(kernel);
	return fam_moe_find(kernel);
}
