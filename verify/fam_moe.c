/* verify/fam_moe.c — fused_moe as a reference family (verify/family.h):
 * x (T, H), each token routed to K of E experts (top_k_index, and
 * top_k_weights in the dtype), expert e computing
 * down[e] · (silu(gate) · up) with (gate, up) = gate_up[e] · x, the K
 * outputs summed with the routing weights, as Liger's
 * LigerFusedMoEFunction and benchmark_fused_moe.py's inputs
 * (_make_moe_inputs). backward computes the gradients of x, both expert
 * weight tensors (dense: experts no token chose get zeros) and the
 * routing weights, as y.backward(dy) does there. The whole batch is one
 * "row": the experts' weights are shared by every token.
 *
 * Timing contract (utils.run_speed_benchmark): do_bench(rep=10) with
 * grad_to_none [x, gate_up, down, top_k_weights]; forward is the call;
 * backward is y.backward(dy, retain_graph=True), dy = randn_like(y) made
 * once; full is the call then y.backward(randn_like(y)), the upstream
 * gradient drawn inside the timed region (harness work the reference
 * leaves out: it reads a dy made before). Every gradient is written
 * afresh each repetition, as the reference does. */
#include "verify/family.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify/ref.h"

enum { MO_X, MO_W, MO_IDX, MO_RW, MO_Y, MO_SV, MO_DY, MO_DX, MO_DRW, MO_DW };

#define MOE_MAX_EXPERTS 4096

#define A double
#define R float
#define FN(x) x##_f
#define EXP expf
#include "verify/fam_moe.inc"
#undef R
#undef FN
#undef EXP
#define R double
#define FN(x) x##_d
#define EXP exp
#include "verify/fam_moe.inc"
#undef R
#undef FN
#undef EXP
#undef A

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Shape: rows 1, a = T, b = E, c = H, dim[0] = I, dim[1] = K; n is the
 * scratch the row needs (see fam_moe.inc). */
static int
parse_moe(struct json_object *p, struct fam_shape *s, char *err,
	size_t errlen)
{
	int64_t t, e, h, in, k;

	if (fam_x_get(p, NAMES("tokens", "T", "BT"), 0, &t, err, errlen) ||
	    fam_x_get(p, NAMES("experts", "E", "num_experts"), 0, &e, err,
	    errlen) ||
	    fam_x_get(p, NAMES("hidden", "H", "hidden_size"), 0, &h, err,
	    errlen) ||
	    fam_x_get(p, NAMES("intermediate", "intermediate_dim",
	    "intermediate_size", "I"), 0, &in, err, errlen) ||
	    fam_x_get(p, NAMES("topk", "K", "top_k"), 0, &k, err, errlen))
		return -1;
	if (k > e || e > MOE_MAX_EXPERTS) {
		snprintf(err, errlen, "workload.parameters: topk must not exceed "
		    "experts, experts at most %d", MOE_MAX_EXPERTS);
		return -1;
	}
	if (t > (1 << 24) || h > 65536 || in > 65536) {
		snprintf(err, errlen, "workload.parameters: tokens, hidden or "
		    "intermediate too large");
		return -1;
	}
	s->rows = 1;
	s->a = t;
	s->b = e;
	s->c = h;
	s->dim[0] = in;
	s->dim[1] = k;
	return 0;
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
layout_moe(struct fam_shape *s)
{
	int64_t t = s->a, e = s->b, h = s->c, in = s->dim[0], k = s->dim[1];

	s->n = 2 * in * h + t * k + e + 1 + t * (4 * h + 6 * in);
	s->nslots = 0;
	slot(s, MO_X, "x", FK_ROW, FIO_IN0 | FIO_IN1, t * h);
	slot(s, MO_W, "gate_up_down", FK_PARAM, FIO_IN0 | FIO_IN1,
	    3 * e * in * h);
	slot(s, MO_IDX, "top_k_index", FK_TARGET, FIO_IN0 | FIO_IN1, t * k);
	slot(s, MO_RW, "top_k_weights", FK_ROW, FIO_IN0 | FIO_IN1, t * k);
	slot(s, MO_Y, "y", FK_ROW, FIO_OUT0, t * h);
	slot(s, MO_SV, "gate_up", FK_ROW32, FIO_OUT0 | FIO_IN1, t * k * 2 * in);
	slot(s, MO_DY, "dy", FK_ROW, FIO_IN1, t * h);
	slot(s, MO_DX, "dx", FK_ROW, FIO_OUT1, t * h);
	slot(s, MO_DRW, "dtop_k_weights", FK_ROW, FIO_OUT1, t * k);
	slot(s, MO_DW, "dgate_up_ddown", FK_ACC, FIO_OUT1, 3 * e * in * h);
}

/* Halves the dimension furthest above its floor (tokens 16, hidden 32,
 * intermediate 16, experts topk): the shape keeps its proportions, and
 * with them how many tokens each expert sees. */
static int
shrink_moe(struct fam_shape *s)
{
	int64_t *d[4] = { &s->a, &s->c, &s->dim[0], &s->b };
	int64_t lo[4] = { 16, 32, 16, s->dim[1] };
	double best = 1;
	int i, pick = -1;

	for (i = 0; i < 4; i++) {
		double r = (double)*d[i] / (double)lo[i];

		if (r > best && (i != 3 || (*d[i] + 1) / 2 >= lo[i])) {
			best = r;
			pick = i;
		}
	}
	if (pick < 0)
		return 0;
	*d[pick] = (*d[pick] + 1) / 2;
	return 1;
}

static struct json_object *
params_moe(const struct fam_shape *s)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "tokens", json_object_new_int64(s->a));
	json_object_object_add(o, "experts", json_object_new_int64(s->b));
	json_object_object_add(o, "hidden", json_object_new_int64(s->c));
	json_object_object_add(o, "intermediate",
	    json_object_new_int64(s->dim[0]));
	json_object_object_add(o, "topk", json_object_new_int64(s->dim[1]));
	return o;
}

static void
put(void *p, int64_t i, double v, enum api_dtype dt)
{
	if (dt == API_DT_F32)
		((float *)p)[i] = (float)v;
	else if (dt == API_DT_BF16)
		((uint16_t *)p)[i] = ref_f32_to_bf16((float)v);
	else
		((uint16_t *)p)[i] = ref_f32_to_f16((float)v);
}

/* As _make_moe_inputs: x standard normal, the experts' weights standard
 * normal times 0.02 (rounded to the dtype), router logits standard normal
 * (T, E) in float32, top_k_index the K largest of a token's logits (a
 * tie goes to the lower expert index, as a stable sort would put it),
 * top_k_weights the softmax of those K logits, in the dtype. */
static void
prep_moe(const struct fam_shape *s, void *const *h, enum api_dtype dt,
	uint64_t *rng)
{
	int64_t t, e, k, i, nw = s->slot[MO_W].len, kk = s->dim[1];
	float lg[MOE_MAX_EXPERTS];
	unsigned char taken[MOE_MAX_EXPERTS];
	int64_t *idx = h[MO_IDX];

	for (i = 0; i < nw; i++)
		put(h[MO_W], i, (float)ref_elem(h[MO_W], (size_t)i, dt) * 0.02f,
		    dt);
	for (t = 0; t < s->a; t++) {
		double mx = 0, sum = 0;

		for (e = 0; e < s->b; e++) {
			lg[e] = ref_randn(rng);
			taken[e] = 0;
		}
		for (k = 0; k < kk; k++) {
			int64_t best = -1;

			for (e = 0; e < s->b; e++)
				if (!taken[e] && (best < 0 || lg[e] > lg[best]))
					best = e;
			taken[best] = 1;
			idx[t * kk + k] = best;
		}
		for (k = 0; k < kk; k++)
			if (k == 0 || lg[idx[t * kk + k]] > mx)
				mx = lg[idx[t * kk + k]];
		for (k = 0; k < kk; k++)
			sum += exp(lg[idx[t * kk + k]] - mx);
		for (k = 0; k < kk; k++)
			put(h[MO_RW], t * kk + k,
			    (float)(exp(lg[idx[t * kk + k]] - mx) / sum), dt);
	}
}

double
fam_moe_flops(const struct family *f, const struct fam_shape *s)
{
	if (f == NULL || strcmp(f->name, "fused_moe") != 0)
		return 0;
	return 18 * (double)s->a * (double)s->dim[1] * (double)s->c *
	    (double)s->dim[0];
}

/* The script resets x and the routing weights (grad_to_none); its expert
 * tensors are torch.randn(...) * 0.02, not leaves: the leaves behind the
 * scaling accumulate, outside the kernel (as the divergences' leaves
 * behind log_softmax). */
static const struct family moe = {
	"fused_moe", 0, parse_moe, layout_moe, shrink_moe, params_moe,
	prep_moe, moe_row_f, moe_row_d, 0
};

const struct family *
fam_moe_find(const char *kernel)
{
	return kernel != NULL && strcmp(kernel, moe.name) == 0 ? &moe : NULL;
}
