/* verify/lin_gradcheck.c — checks the families over linear layers' float64
 * backward against central differences of their float64 forward: the
 * reference's check compares the fp32 kernel with the same arithmetic in
 * double, so a wrong derivation would pass it; this does not. For each
 * family at a small shape: the loss (or, for the MLPs, Σ y·dy), each
 * gradient's elements at sampled positions against
 * (L(θ + h) − L(θ − h)) / 2h. Exit 0 when every one agrees to 1e-6
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
	  "{\"batch\":3,\"seq\":4,\"hidden\":10,\"vocab\":70}" },
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

/* The scalar the gradients are of: the loss, or Σ y·dy. */
static double
objective(struct gc *g)
{
	int i, y = -1, dy = -1;
	double acc = 0;

	g->f->run_d(&g->s, 0, g->v, g->scratch);
	for (i = 0; i < g->s.nslots; i++) {
		if (g->s.slot[i].kind == LK_LOSS)
			return ((double *)g->v[i])[0];
		if (g->s.slot[i].kind == LK_OUT0)
			y = i;
		if (g->s.slot[i].kind == LK_IN1)
			dy = i;
	}
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

static int
check_family(const char *kernel, const char *params, uint64_t *rng)
{
	struct json_object *p = json_tokener_parse(params);
	struct gc g;
	float *host[LIN_MAX_SLOTS] = { NULL };
	double *grad[LIN_MAX_SLOTS] = { NULL };
	char err[256];
	int i, bad = 0, checked = 0;

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
	/* GRPO's old policy: this point's log-probabilities, held fixed
	 * while the differences move θ. */
	g.s.old_fixed = 1;
	g.f->run_d(&g.s, 1, g.v, g.scratch);
	for (i = 0; i < g.s.nslots; i++)
		if (g.s.slot[i].kind == LK_OUT1 && g.s.slot[i].n > 0) {
			grad[i] = malloc((size_t)g.s.slot[i].n * sizeof(double));
			memcpy(grad[i], g.v[i], (size_t)g.s.slot[i].n *
			    sizeof(double));
		}
	for (i = 0; i < g.s.nslots; i++) {
		int k = grad[i] != NULL ? param_of(&g.s, i) : -1;
		double scale = 0;

		if (grad[i] == NULL)
			continue;
		if (k < 0) {
			printf("FAIL %s: no input for %s\n", kernel,
			    g.s.slot[i].name);
			bad++;
			continue;
		}
		for (int64_t j = 0; j < g.s.slot[i].n; j++)
			scale = fmax(scale, fabs(grad[i][j]));
		for (int t = 0; t < SAMPLES; t++) {
			int64_t j = (int64_t)(ref_rand(rng) %
			    (uint64_t)g.s.slot[i].n);
			double *x = (double *)g.v[k] + j, x0 = *x, h = 1e-5, lp, lm,
			    num;

			*x = x0 + h;
			lp = objective(&g);
			*x = x0 - h;
			lm = objective(&g);
			*x = x0;
			num = (lp - lm) / (2 * h);
			checked++;
			if (!(fabs(num - grad[i][j]) <= 1e-6 * fmax(scale, 1e-12))) {
				printf("FAIL %s %s[%lld]: analytic %.10g, central "
				    "difference %.10g\n", kernel, g.s.slot[i].name,
				    (long long)j, grad[i][j], num);
				bad++;
			}
		}
	}
	if (bad == 0)
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
