/* verify/fam_attn.c — the attention families as the reference program's
 * families (verify/family.h): multi_token_attention and
 * sparse_multi_token_attention (a causally masked softmax or sparsemax
 * over attention scores, then a K×K convolution over the (L, L) map, as
 * Liger's LigerMultiTokenAttention), and fused_neighborhood_attention
 * (q/k/v/out projections around attention restricted to a window of K
 * keys, as LigerFusedNeighborhoodAttention). A "row" is one batch
 * element. The shapes, inputs and passes are those Liger's benchmark
 * scripts time (benchmark_multi_token_attention.py,
 * benchmark_sparse_multi_token_attention.py,
 * benchmark_fused_neighborhood_attention.py): backward computes the
 * input's and the parameters' gradients, as y.backward(dy) does there.
 *
 * Timing contract (those scripts): do_bench(rep=100) with grad_to_none
 * [x]; forward is the module's call; backward is y.backward(dy,
 * retain_graph=True) on one forward's graph, dy = randn_like(x) made
 * once before; full is the call then y.backward(dy). The parameters'
 * gradients are not in grad_to_none, so on the GPU they accumulate over
 * the repetitions (read and written; the cost model counts it); the
 * reference writes them afresh each repetition, as its check needs. */
#include "verify/family.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verify/ref.h"

enum { MT_X, MT_W, MT_Y, MT_P, MT_DY, MT_DX, MT_DW, MT_WK };
enum { NA_X, NA_W, NA_Y, NA_SV, NA_DY, NA_DX, NA_DW, NA_WK };

static int
desc_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x < y) - (x > y);
}

static int
desc_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y) - (x > y);
}

#define A double
#define R float
#define FN(x) x##_f
#define EXP expf
#define SQRT sqrtf
#define QSORT_DESC desc_f
#include "verify/fam_attn.inc"
#undef R
#undef FN
#undef EXP
#undef SQRT
#undef QSORT_DESC
#define R double
#define FN(x) x##_d
#define EXP exp
#define SQRT sqrt
#define QSORT_DESC desc_d
#include "verify/fam_attn.inc"
#undef R
#undef FN
#undef EXP
#undef SQRT
#undef QSORT_DESC
#undef A

/* ---- shapes ---- */

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

int
fam_x_dim(struct json_object *p, const char *const *names, int64_t *v)
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

int
fam_x_get(struct json_object *p, const char *const *names, int64_t dflt,
	int64_t *v, char *err, size_t errlen)
{
	int rc = fam_x_dim(p, names, v);

	if (rc == 0 && dflt > 0) {
		*v = dflt;
		return 0;
	}
	if (rc == 1)
		return 0;
	snprintf(err, errlen, "workload.parameters.%s: a positive integer is "
	    "required", names[0]);
	return -1;
}

/* Liger's scripts build every attention module with bias=True; a shape
 * without biases is refused rather than measured as if it had them. */
static int
bias_true(struct json_object *p, char *err, size_t errlen)
{
	struct json_object *o;

	if (!json_object_object_get_ex(p, "bias", &o) || o == NULL ||
	    (json_object_is_type(o, json_type_boolean) &&
	    json_object_get_boolean(o)))
		return 0;
	snprintf(err, errlen, "workload.parameters.bias: only true (the "
	    "modules Liger's scripts build) is implemented");
	return -1;
}

static void
slot(struct fam_shape *s, int i, const char *name, enum fam_kind k,
	unsigned io, int64_t len)
{
	s->slot[i] = (struct fam_slot){ name, k, io, len };
	if (i + 1 > s->nslots)
		s->nslots = i + 1;
}

static void
add(struct json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

/* Uniform values in (-bound, bound), in dt, over n elements of p from
 * element off (nn.Linear's and nn.Conv2d's initialization). */
static void
fill_uniform(void *p, int64_t off, int64_t n, double bound,
	enum api_dtype dt, uint64_t *rng)
{
	int64_t i;

	for (i = off; i < off + n; i++) {
		float f = (float)(bound * (2.0 * (double)(ref_rand(rng) >> 11) *
		    0x1p-53 - 1.0));

		if (dt == API_DT_F32)
			((float *)p)[i] = f;
		else if (dt == API_DT_BF16)
			((uint16_t *)p)[i] = ref_f32_to_bf16(f);
		else
			((uint16_t *)p)[i] = ref_f32_to_f16(f);
	}
}

/* ---- multi_token_attention ---- */

static int
parse_mta(struct json_object *p, struct fam_shape *s, char *err,
	size_t errlen)
{
	int64_t b, ci, co, l, k, g;

	if (fam_x_get(p, NAMES("batch", "B"), 2, &b, err, errlen) ||
	    fam_x_get(p, NAMES("in_channels", "C_in"), 0, &ci, err, errlen) ||
	    fam_x_get(p, NAMES("out_channels", "C_out"), ci, &co, err,
	    errlen) ||
	    fam_x_get(p, NAMES("seq", "L", "T", "seq_len"), 0, &l, err,
	    errlen) ||
	    fam_x_get(p, NAMES("kernel_size", "K"), 0, &k, err, errlen) ||
	    fam_x_get(p, NAMES("groups"), 1, &g, err, errlen) ||
	    bias_true(p, err, errlen))
		return -1;
	if (ci % g != 0 || co % g != 0) {
		snprintf(err, errlen, "workload.parameters.groups: must divide "
		    "in_channels and out_channels");
		return -1;
	}
	if (k % 2 == 0 || k > 63) {
		snprintf(err, errlen, "workload.parameters.kernel_size: an odd "
		    "size up to 63 (padding K/2 keeps the (L, L) shape)");
		return -1;
	}
	if (l > 65536 || ci > 4096 || co > 4096) {
		snprintf(err, errlen, "workload.parameters: seq, in_channels "
		    "or out_channels too large");
		return -1;
	}
	s->rows = b;
	s->a = ci;
	s->b = co;
	s->c = l;
	s->dim[0] = k;
	s->dim[1] = g;
	return 0;
}

static void
layout_mta(struct fam_shape *s)
{
	int64_t ll = s->c * s->c, nw = s->b * (s->a / s->dim[1]) *
	    s->dim[0] * s->dim[0] + s->b;

	s->n = s->a * ll;
	s->nslots = 0;
	slot(s, MT_X, "scores", FK_ROW, FIO_IN0, s->a * ll);
	slot(s, MT_W, "weight_bias", FK_PARAM, FIO_IN0 | FIO_IN1, nw);
	slot(s, MT_Y, "y", FK_ROW, FIO_OUT0, s->b * ll);
	slot(s, MT_P, "probs", FK_ROW32, FIO_OUT0 | FIO_IN1, s->a * ll);
	slot(s, MT_DY, "dy", FK_ROW, FIO_IN1, s->b * ll);
	slot(s, MT_DX, "dscores", FK_ROW, FIO_OUT1, s->a * ll);
	slot(s, MT_DW, "dweight_dbias", FK_ACC, FIO_OUT1, nw);
	slot(s, MT_WK, "work", FK_ROW32, 0, s->a * ll + s->c);
}

/* The sequence halves first (the (L, L) maps hold the elements), then
 * the batch. */
static int
shrink_mta(struct fam_shape *s)
{
	if (s->c > 8)
		s->c = (s->c + 1) / 2;
	else if (s->rows > 1)
		s->rows = (s->rows + 1) / 2;
	else
		return 0;
	return 1;
}

static struct json_object *
params_mta(const struct fam_shape *s)
{
	struct json_object *o = json_object_new_object();

	add(o, "batch", s->rows);
	add(o, "in_channels", s->a);
	add(o, "out_channels", s->b);
	add(o, "seq", s->c);
	add(o, "kernel_size", s->dim[0]);
	add(o, "groups", s->dim[1]);
	return o;
}

/* The scores are standard normal (torch.randn); the convolution's
 * weights as nn.Conv2d makes them (kaiming_uniform, a = √5: bound
 * 1/√fan_in). Liger's module zeroes the bias; it is drawn from the same
 * bound here so that its path is checked too (the work is the same). */
static void
prep_mta(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	int64_t fan = s->a / s->dim[1] * s->dim[0] * s->dim[0];

	fill_uniform(h[MT_W], 0, s->slot[MT_W].len, 1 / sqrt((double)fan), dt,
	    rng);
}

static double
flops_mta(const struct fam_shape *s)
{
	double tri = (double)s->c * (double)(s->c + 1) / 2;

	return 3 * 2 * (double)s->rows * (double)s->b * tri *
	    (double)(s->a / s->dim[1]) * (double)(s->dim[0] * s->dim[0]);
}

/* ---- fused_neighborhood_attention ---- */

static int
parse_na(struct json_object *p, struct fam_shape *s, char *err,
	size_t errlen)
{
	int64_t b, l, d, heads, k, dil;

	if (fam_x_get(p, NAMES("batch", "batch_size", "B"), 2, &b, err,
	    errlen) ||
	    fam_x_get(p, NAMES("seq", "seq_len", "T", "L"), 0, &l, err,
	    errlen) ||
	    fam_x_get(p, NAMES("hidden", "hidden_size", "D"), 0, &d, err,
	    errlen) ||
	    fam_x_get(p, NAMES("heads", "num_heads"), 1, &heads, err,
	    errlen) ||
	    fam_x_get(p, NAMES("kernel_size"), 7, &k, err, errlen) ||
	    fam_x_get(p, NAMES("dilation"), 1, &dil, err, errlen) ||
	    bias_true(p, err, errlen))
		return -1;
	if (d % heads != 0) {
		snprintf(err, errlen, "workload.parameters.heads: must divide "
		    "hidden");
		return -1;
	}
	if (k % 2 == 0 || k > 255 || dil > 65536) {
		snprintf(err, errlen, "workload.parameters.kernel_size: an odd "
		    "size up to 255 (Liger's module requires it odd)");
		return -1;
	}
	if (l > (1 << 24) || d > 65536) {
		snprintf(err, errlen, "workload.parameters: seq or hidden too "
		    "large");
		return -1;
	}
	s->rows = b;
	s->c = l;
	s->n = l * d;
	s->a = heads;
	s->b = k;
	s->dim[0] = dil;
	return 0;
}

static void
layout_na(struct fam_shape *s)
{
	int64_t l = s->c, d = s->n / s->c, ld = s->n;
	int64_t wn = 4 * d * d + 4 * d;
	int64_t work = d * d > 4 * ld ? d * d : 4 * ld;

	s->nslots = 0;
	slot(s, NA_X, "x", FK_ROW, FIO_IN0 | FIO_IN1, ld);
	slot(s, NA_W, "qkvo_weight_bias", FK_PARAM, FIO_IN0 | FIO_IN1, wn);
	slot(s, NA_Y, "y", FK_ROW, FIO_OUT0, ld);
	slot(s, NA_SV, "qkvo_probs", FK_ROW32, FIO_OUT0 | FIO_IN1,
	    4 * ld + s->a * l * s->b);
	slot(s, NA_DY, "dy", FK_ROW, FIO_IN1, ld);
	slot(s, NA_DX, "dx", FK_ROW, FIO_OUT1, ld);
	slot(s, NA_DW, "dweight_dbias", FK_ACC, FIO_OUT1, wn);
	slot(s, NA_WK, "work", FK_ROW32, 0, work + s->b);
}

/* The batch halves first, then the sequence (while the window of K keys
 * still fits twice), then the head dimension (heads kept), then the
 * sequence again. */
static int
shrink_na(struct fam_shape *s)
{
	int64_t l = s->c, d = s->n / s->c, hd = d / s->a;
	int64_t span = 2 * (s->b / 2) * s->dim[0] + 2;

	if (s->rows > 1)
		s->rows = (s->rows + 1) / 2;
	else if (l > 16 && l > span)
		l = (l + 1) / 2;
	else if (hd > 8)
		d = (hd + 1) / 2 * s->a;
	else if (l > 1)
		l = (l + 1) / 2;
	else
		return 0;
	s->c = l;
	s->n = l * d;
	return 1;
}

static struct json_object *
params_na(const struct fam_shape *s)
{
	struct json_object *o = json_object_new_object();

	add(o, "batch", s->rows);
	add(o, "seq", s->c);
	add(o, "hidden", s->n / s->c);
	add(o, "heads", s->a);
	add(o, "kernel_size", s->b);
	add(o, "dilation", s->dim[0]);
	return o;
}

/* x is standard normal; the four projections' weights and biases as
 * nn.Linear makes them (uniform, bound 1/√D). */
static void
prep_na(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	int64_t d = s->n / s->c;

	fill_uniform(h[NA_W], 0, s->slot[NA_W].len, 1 / sqrt((double)d), dt,
	    rng);
}

static double
flops_na(const struct fam_shape *s)
{
	double d = (double)(s->n / s->c), bl = (double)s->rows * (double)s->c;

	return 3 * (8 * bl * d * d + 4 * bl * d * (double)s->b);
}

/* ---- the table ---- */

/* Each script's grad_to_none names x alone: the weights' and biases'
 * gradients add up over the repetitions. */
static const struct family attn[] = {
	{ "multi_token_attention", 0, parse_mta, layout_mta, shrink_mta,
	  params_mta, prep_mta, mta_dense_row_f, mta_dense_row_d,
	  FAM_ACC_PARAMS },
	{ "sparse_multi_token_attention", 0, parse_mta, layout_mta,
	  shrink_mta, params_mta, prep_mta, mta_sparse_row_f,
	  mta_sparse_row_d, FAM_ACC_PARAMS },
	{ "fused_neighborhood_attention", 0, parse_na, layout_na, shrink_na,
	  params_na, prep_na, na_row_f, na_row_d, FAM_ACC_PARAMS },
};

const struct family *
fam_attn_find(const char *kernel)
{
	size_t i;

	for (i = 0; kernel != NULL && i < sizeof(attn) / sizeof(attn[0]); i++)
		if (strcmp(attn[i].name, kernel) == 0)
			return &attn[i];
	return NULL;
}

double
fam_attn_flops(const struct family *f, const struct fam_shape *s)
{
	if (f == &attn[0] || f == &attn[1])
		return flops_mta(s);
	if (f == &attn[2])
		return flops_na(s);
	return 0;
}

/* The rate of the attention and MoE kernels' matrix product (mm_nn_f,
 * blocked, fp32) on a 128 × 128 × 128 product, the median of seven:
 * what their FLOP floor is measured against, as the copy rate is for
 * their bytes. 0 when it cannot be measured. */
double
fam_x_matmul_rate(void)
{
	const int64_t n = 128;
	float *m = malloc((size_t)(3 * n * n) * sizeof(float));
	double t[7], p50 = 0, p20, p80;
	struct timespec t0, t1;
	int64_t i;
	int k;

	if (m == NULL)
		return 0;
	for (i = 0; i < 3 * n * n; i++)
		m[i] = (float)(i % 7) * 0.25f;
	for (k = 0; k < 7; k++) {
		memset(m + 2 * n * n, 0, (size_t)(n * n) * sizeof(float));
		clock_gettime(CLOCK_MONOTONIC, &t0);
		mm_nn_f(n, n, n, m, n, m + n * n, n, m + 2 * n * n, n);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		t[k] = (double)(t1.tv_sec - t0.tv_sec) +
		    (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	}
	ref_stats(t, 7, &p50, &p20, &p80);
	free(m);
	return p50 > 0 ? 2.0 * (double)(n * n * n) / p50 : 0;
}
