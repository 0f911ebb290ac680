/* verify/lin_gradcheck.c — checks the families over linear layers' float64
 * backward against central differences of their float64 forward: the
 * reference's check compares the fp32 kernel with the same arithmetic in
 * double, so a wrong derivation would pass it; this does not. For each
 * family at a small shape: the loss (times the upstream scalar where the
 * backward reads one; for the MLPs Σ y·dy), each gradient's elements at
 * sampled positions against (L(θ + h) − L(θ − h)) / 2h. GRPO is checked
 * at a point where its importance ratios lie inside the clip range and
 * outside it on both sides (lin_grpo_checkpoint), through both of its
 * backward paths: the gradients of the full pass, and the stored
 * gradients its backward alone applies (the upstream scalar 0.5 there,
 * the accumulated gradient 0); and its forward's clipping itself: the
 * loss's derivative by each advantage A_b (no gradient slot: the
 * difference alone) must be −Σ_t min-term's ratio / N, the ratio where
 * Liger's is_clipped is false and the clip range's end where it is true.
 * Exit 0 when every one agrees to 1e-6
 * relative (of the gradient's largest element), 1 otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify/lin.h"
#include "verify/ref.h"

#define SAMPLES 8

static const char *const cases[][2] = {
	{ "swiglu", "{\"batch\":2,\"seq\":3,\"hidden\":10,\"intermediate\":14}" },
	{ "geglu", "{\"batch\":2,\"seq\":3,\"hidden\":10,\"intermediate\":14}" },
	{ "fused_linear_cross_entropy",
	  "{\"tokens\":6,\"hidden\":10,\"vocab\":70}" },
	{ "fused_linear_jsd", "{\"tokens\":6,\"hidden\":10,\"vocab\":70}" },
	{ "fused_linear_orpo_loss",
	  "{\"batch\":4,\"seq\":3,\"hidden\":10,\"vocab\":70}" },
	{ "fused_linear_cpo_loss",
	  "{\"batch\":4,\"seq\":3,\"hidden\":10,\"vocab\":70}" },
	{ "fused_linear_simpo_loss",
	  "{\"batch\":4,\"seq\":3,\"hidden\":10,\"vocab\":70}" },
	{ "kto_loss", "{\"batch\":3,\"seq\":4,\"hidden\":10,\"vocab\":70}" },
	{ "fused_linear_grpo_loss_token",
	  "{\"batch\":3,\"seq\":4,\"hidden\":10,\"vocab\":70}" },
	{ "fused_linear_grpo_loss_sequence",
	  "{\"batch\":6,\"seq\":3,\"hidden\":10,\"vocab\":70}" },
	{ "distill_jsd_loss",
	  "{\"tokens\":6,\"hidden\":10,\"vocab\":70,\"bias\":true}" },
	{ "distill_cosine_loss",
	  "{\"tokens\":6,\"hidden\":10,\"vocab\":70,\"bias\":true}" },
};

struct gc {
	const struct lin_family *f;
	struct lin_shape s;
	void *v[LIN_MAX_SLOTS];
	double *scratch;
};

/* The scalar the gradients are of: the loss (times the upstream scalar,
 * a 1-element LK_IN1, where there is one), or Σ y·dy. */
static double
objective(struct gc *g)
{
	int i, y = -1, dy = -1, loss = -1;
	double acc = 0;

	g->f->run_d(&g->s, LP_FORWARD, g->v, g->scratch);
	for (i = 0; i < g->s.nslots; i++) {
		if (g->s.slot[i].kind == LK_LOSS)
			loss = i;
		if (g->s.slot[i].kind == LK_OUT0)
			y = i;
		if (g->s.slot[i].kind == LK_IN1)
			dy = i;
	}
	if (loss >= 0)
		return ((double *)g->v[loss])[0] * (dy >= 0 &&
		    g->s.slot[dy].n == 1 ? ((double *)g->v[dy])[0] : 1);
	for (int64_t j = 0; y >= 0 && dy >= 0 && j < g->s.slot[y].n; j++)
		acc += ((double *)g->v[y])[j] * ((double *)g->v[dy])[j];
	return acc;
}

/* The input slot whose gradient slot i is ("dweight" → "weight"). */
static int
param_of(const struct lin_shape *s, int i)
{
	const char *n = s->slot[i].name;
	int k;

	for (k = 0; k < s->nslots; k++)
		if (s->slot[k].kind == LK_IN && n[0] == 'd' &&
		    strcmp(s->slot[k].name, n + 1) == 0)
			return k;
	return -1;
}

/* Compares the gradients in grad (copies of the LK_OUT1 slots, NULL
 * where none) with central differences of the objective at SAMPLES
 * elements of each; counts them into *checked. Returns the failures. */
static int
compare(struct gc *g, const char *kernel, const char *path,
	double *const *grad, uint64_t *rng, int *checked)
{
	int i, bad = 0;

	for (i = 0; i < g->s.nslots; i++) {
		int k = grad[i] != NULL ? param_of(&g->s, i) : -1;
		double scale = 0;

		if (grad[i] == NULL)
			continue;
		if (k < 0) {
			printf("FAIL %s: no input for %s\n", kernel,
			    g->s.slot[i].name);
			bad++;
			continue;
		}
		for (int64_t j = 0; j < g->s.slot[i].n; j++)
			scale = fmax(scale, fabs(grad[i][j]));
		for (int t = 0; t < SAMPLES; t++) {
			int64_t j = (int64_t)(ref_rand(rng) %
			    (uint64_t)g->s.slot[i].n);
			double *x = (double *)g->v[k] + j, x0 = *x, h = 1e-5;
			double lp, lm, num;

			*x = x0 + h;
			lp = objective(g);
			*x = x0 - h;
			lm = objective(g);
			*x = x0;
			num = (lp - lm) / (2 * h);
			(*checked)++;
			if (!(fabs(num - grad[i][j]) <= 1e-6 *
			    fmax(scale, 1e-12))) {
				printf("FAIL %s%s %s[%lld]: analytic %.10g, "
				    "central difference %.10g\n", kernel, path,
				    g->s.slot[i].name, (long long)j, grad[i][j],
				    num);
				bad++;
			}
		}
	}
	return bad;
}

/* Runs the parts in order and copies each LK_OUT1 slot into grad
 * (caller frees). */
static void
gradients(struct gc *g, const enum lin_part *parts, int nparts,
	double **grad)
{
	int i;

	for (i = 0; i < nparts; i++)
		g->f->run_d(&g->s, parts[i], g->v, g->scratch);
	for (i = 0; i < g->s.nslots; i++)
		if (g->s.slot[i].kind == LK_OUT1 && g->s.slot[i].n > 0) {
			size_t n = (size_t)g->s.slot[i].n * sizeof(double);

			free(grad[i]);
			grad[i] = malloc(n);
			if (grad[i] != NULL)
				memcpy(grad[i], g->v[i], n);
		}
}

/* A stored_bwd family's backward alone: the upstream scalar 0.5 (the
 * script's is 1: a scaling left out would show), the accumulators 0 (the
 * gradient of the objective is then exactly what is written). */
static void
stored_point(struct gc *g)
{
	int i;

	for (i = 0; i < g->s.nslots; i++) {
		double *x = g->v[i];

		if (g->s.slot[i].kind == LK_IN1 && g->s.slot[i].n == 1)
			x[0] = 0.5;
		if (g->s.slot[i].kind == LK_ACC)
			memset(x, 0, (size_t)g->s.slot[i].n * sizeof(double));
	}
}

/* GRPO's forward at the checkpoint: ∂L/∂A_b by central differences
 * against −Σ_t c_bt / N, c the ratio or, where clipped, the end of the
 * clip range it passed; counts the tokens inside the range (count[0]),
 * clipped (count[1]) and outside but not clipped (count[2]). Returns the
 * failures. */
static int
grpo_clip_check(struct gc *g, const char *kernel, const double *ratio,
	int count[3])
{
	double lo = 1 - g->s.eps_low, hi = 1 + g->s.eps_high, *adv = NULL;
	double n = (double)(g->s.b * g->s.t);
	int i, bad = 0;

	for (i = 0; i < g->s.nslots; i++)
		if (strcmp(g->s.slot[i].name, "advantages") == 0)
			adv = g->v[i];
	if (adv == NULL) {
		printf("FAIL %s: no advantages\n", kernel);
		return 1;
	}
	for (int64_t b = 0; b < g->s.b; b++) {
		double want = 0, a0 = adv[b], h = 1e-5, lp, lm, num;

		for (int64_t t = 0; t < g->s.t; t++) {
			double r = ratio[b * g->s.t + t];
			int clipped = (r > hi && a0 > 0) || (r < lo && a0 < 0);

			count[r >= lo && r <= hi ? 0 : clipped ? 1 : 2]++;
			want -= (clipped ? (r > hi ? hi : lo) : r) / n;
		}
		adv[b] = a0 + h;
		lp = objective(g);
		adv[b] = a0 - h;
		lm = objective(g);
		adv[b] = a0;
		num = (lp - lm) / (2 * h);
		if (!(fabs(num - want) <= 1e-6 * fabs(want))) {
			printf("FAIL %s: dL/dA[%lld] %.10g, the clipped "
			    "objective's %.10g\n", kernel, (long long)b, num,
			    want);
			bad++;
		}
	}
	objective(g);
	return bad;
}

static int
check_family(const char *kernel, const char *params, uint64_t *rng)
{
	static const enum lin_part full_bwd[] = { LP_BACKWARD };
	static const enum lin_part stored_bwd[] = { LP_STORE, LP_APPLY };
	struct json_object *p = json_tokener_parse(params);
	struct gc g;
	float *host[LIN_MAX_SLOTS] = { NULL };
	double *grad[LIN_MAX_SLOTS] = { NULL };
	char err[256];
	int i, bad = 0, checked = 0, count[3] = { 0, 0, 0 };
	int grpo = strncmp(kernel, "fused_linear_grpo", 17) == 0;

	memset(&g, 0, sizeof(g));
	g.f = lin_find(kernel);
	if (g.f == NULL || p == NULL || g.f->parse(p, &g.s, err,
	    sizeof(err)) != 0) {
		printf("FAIL %s: cannot set up\n", kernel);
		json_object_put(p);
		return 1;
	}
	json_object_put(p);
	g.f->layout(&g.s);
	for (i = 0; i < g.s.nslots; i++) {
		size_t n = (size_t)g.s.slot[i].n + 1;

		host[i] = calloc(n, 8);
		g.v[i] = calloc(n, sizeof(double));
		if (g.s.slot[i].kind == LK_TARGET)
			ref_fill_indices((int64_t *)(void *)host[i], n - 1, g.s.v,
			    rng);
		else if (g.s.slot[i].kind == LK_IN || g.s.slot[i].kind == LK_IN1)
			ref_fill_randn(host[i], n - 1, API_DT_F32, rng);
	}
	g.f->prepare(&g.s, (void *const *)host, API_DT_F32, rng);
	for (i = 0; i < g.s.nslots; i++) {
		if (g.s.slot[i].kind == LK_TARGET) {
			free(g.v[i]);
			g.v[i] = host[i];
			host[i] = NULL;
			continue;
		}
		for (int64_t j = 0; j < g.s.slot[i].n; j++)
			((double *)g.v[i])[j] = host[i][j];
	}
	g.scratch = calloc((size_t)g.s.scratch + 1, sizeof(double));
	objective(&g);
	/* GRPO's old policy: this point's log-probabilities less the
	 * checkpoint's offsets, held fixed while the differences move θ;
	 * the forward again for the coefficients at that point. */
	g.s.old_fixed = 1;
	if (grpo) {
		double *ratio = calloc((size_t)(g.s.b * g.s.t), sizeof(double));

		if (ratio == NULL) {
			printf("FAIL %s: out of memory\n", kernel);
			bad++;
		} else {
			lin_grpo_checkpoint(&g.s, g.v, ratio);
			objective(&g);
			bad += grpo_clip_check(&g, kernel, ratio, count);
		}
		free(ratio);
		if (count[0] == 0 || count[1] == 0 || count[2] == 0) {
			printf("FAIL %s: ratios inside %d, clipped %d, outside "
			    "unclipped %d: not every branch\n", kernel,
			    count[0], count[1], count[2]);
			bad++;
		}
	}
	gradients(&g, full_bwd, 1, grad);
	bad += compare(&g, kernel, "", grad, rng, &checked);
	if (g.f->stored_bwd) {
		stored_point(&g);
		gradients(&g, stored_bwd, 2, grad);
		bad += compare(&g, kernel, " (backward alone)", grad, rng,
		    &checked);
	}
	if (bad == 0 && grpo)
		printf("ok   %s: %d gradient elements (tokens: ratio inside "
		    "the clip range %d, clipped %d, outside unclipped %d)\n",
		    kernel, checked, count[0], count[1], count[2]);
	else if (bad == 0)
		printf("ok   %s: %d gradient elements\n", kernel, checked);
	for (i = 0; i < LIN_MAX_SLOTS; i++) {
		free(host[i]);
		free(grad[i]);
		free(g.v[i]);
	}
	free(g.scratch);
	return bad != 0;
}

int
main(void)
{
	uint64_t rng = 0x6ad5eedull;
	size_t i;
	int fails = 0;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		fails += check_family(cases[i][0], cases[i][1], &rng);
	printf("%d failure(s)\n", fails);
	return fails != 0;
}
