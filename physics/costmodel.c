/* physics/costmodel.c — byte, FLOP and resident-memory floors of
 * Liger-Kernel's benchmark workloads, derived from each kernel's math and
 * the tensor shapes its benchmark script builds. */
#include "physics/costmodel.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Conventions shared by every model below.
 *
 * Bytes. The fewest bytes that must cross DRAM: each input tensor read
 * once, each output tensor written once; intermediates never (a fused
 * kernel keeps them on chip or recomputes them). do_bench flushes the L2
 * between repetitions by writing a buffer larger than it, so inputs are
 * not cache-resident when the timed call starts.
 *
 * Passes, as Liger's scripts time them:
 *  forward   the forward call alone.
 *  backward  y.backward(dy) on a retained graph: reads the upstream
 *            gradient and what the input gradients need, writes the input
 *            and parameter gradients. For a loss with a scalar output the
 *            input gradient can be (and in Liger is) computed during the
 *            forward pass, and backward with an upstream gradient of 1 may
 *            then touch nothing: its floor is 0. The megatron_* scripts
 *            time forward+backward under "backward": there it equals full.
 *  full      forward then backward. Inputs read by both passes count once
 *            (the "shared" term), as do outputs of the forward re-read by
 *            the backward. Upstream gradients the harness generates inside
 *            the timed region (torch.randn_like) are not counted: that is
 *            harness work, and leaving it out keeps the floor a lower
 *            bound. y.sum().backward() supplies an expanded (stride 0)
 *            gradient, which costs no bytes.
 *  accumulation  a leaf's gradient that the script does not reset
 *            (do_bench's grad_to_none does not name it, or the full pass
 *            names nothing) is added to over the repetitions: autograd
 *            reads the earlier gradient before writing the sum, so that
 *            pass also reads the gradient's bytes (terms ab, af). Leaves
 *            behind a differentiable op of the harness (the divergences'
 *            log_softmax of a leaf, fused_moe's experts scaled by 0.02)
 *            are outside the kernel and are not counted.
 *
 * FLOPs. flops counts matrix products (2 per multiply-add), eligible for
 * the matrix units; vector_flops counts the other arithmetic roughly, at
 * the plain fp32 rate; both only as far as the math requires (the
 * minimal window of neighbourhood attention, the experts a token routes
 * to), never what an implementation may add (recomputation, masked full
 * attention).
 *
 * Resident memory, for "memory" rows (torch.cuda.max_memory_allocated
 * after reset_peak_memory_stats, which counts the tensors already
 * allocated): the tensors the harness itself holds during the measured
 * call (inputs, parameters, upstream gradients it created beforehand), the
 * forward outputs it holds while calling backward, and parameter
 * gradients (distinct from the parameters, which the caller keeps).
 * Input gradients are not counted where an implementation may write them
 * over a buffer it was given (Liger's cross entropy writes the gradient
 * into the logits, its RMSNorm into dy, megatron_swiglu in place into x).
 *
 * Shapes: s is the element size of the workload's dtype, BT = B·T tokens;
 * indices and targets are int64 (torch.randint's default).
 */

enum pass { PASS_FWD, PASS_BWD, PASS_FULL };

/* The terms each kernel fills; finish() combines them per pass. */
struct terms {
	double fb, ff, fv;     /* forward: bytes, matrix FLOPs, vector FLOPs */
	double bb, bf, bv;     /* backward */
	double shared;         /* bytes counted by both passes, once in full */
	double xb, xf, xv;     /* full only: work a loss's backward can skip */
	double rf, rb, rfull;  /* resident bytes per pass */
	double ab, af;         /* gradients the script accumulates (not in
	                        * its grad_to_none): the earlier value read
	                        * before the add, in backward and in full */
};

struct cm {
	struct json_object *p;
	enum pass pass;
	double s;              /* element size */
	api_cost *out;
};

/* Parameter spellings: canonical name first, Liger's after. */
#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define P_BATCH NAMES("batch", "B", "bsz", "batch_size")
#define P_SEQ NAMES("seq", "T", "seq_len", "S")
#define P_TOKENS NAMES("tokens", "BT")
#define P_HIDDEN NAMES("hidden", "H", "hidden_size", "D")
#define P_VOCAB NAMES("vocab", "V", "vocab_size")
#define P_ROWS NAMES("rows", "M")
#define P_INTER NAMES("intermediate", "intermediate_size", \
	"intermediate_dim", "ffn_local", "ffn", "I")
#define P_HEADS NAMES("heads", "num_heads")
#define P_QHEADS NAMES("q_heads", "num_q_heads")
#define P_KVHEADS NAMES("kv_heads", "num_kv_heads")

/* Reads a positive finite number from the first name present. Returns 1
 * when found, 0 when absent, KI_EINVAL when present but not a positive
 * number. */
static int
lookup(const struct cm *c, const char *const *names, double *v)
{
	size_t i;

	if (c->p == NULL || !json_object_is_type(c->p, json_type_object))
		return 0;
	for (i = 0; names[i] != NULL; i++) {
		struct json_object *o;
		double d;

		if (!json_object_object_get_ex(c->p, names[i], &o) ||
		    o == NULL)
			continue;
		if (json_object_is_type(o, json_type_int) ||
		    json_object_is_type(o, json_type_double)) {
			d = json_object_get_double(o);
		} else if (json_object_is_type(o, json_type_string)) {
			const char *str = json_object_get_string(o);
			char *end;

			errno = 0;
			d = strtod(str, &end);
			if (end == str || *end != '\0' || errno != 0)
				return KI_EINVAL;
		} else {
			return KI_EINVAL;
		}
		if (!isfinite(d) || d <= 0)
			return KI_EINVAL;
		*v = d;
		return 1;
	}
	return 0;
}

/* A required parameter; on failure names it in out->missing. */
static int
need(struct cm *c, const char *const *names, double *v)
{
	int rc = lookup(c, names, v);

	if (rc == 1)
		return KI_OK;
	c->out->missing = names[0];
	return KI_EINVAL;
}

/* An optional parameter with a default. */
static int
opt(struct cm *c, const char *const *names, double dflt, double *v)
{
	int rc = lookup(c, names, v);

	if (rc == 1)
		return KI_OK;
	if (rc == 0) {
		*v = dflt;
		return KI_OK;
	}
	c->out->missing = names[0];
	return KI_EINVAL;
}

/* B·T: "tokens" when given (some sweeps set it apart from batch and seq),
 * else batch × seq with batch defaulting to 1. */
static int
tokens(struct cm *c, double *bt)
{
	double b, t;
	int rc = lookup(c, P_TOKENS, bt);

	if (rc == 1)
		return KI_OK;
	if (rc < 0) {
		c->out->missing = "tokens";
		return KI_EINVAL;
	}
	if (opt(c, P_BATCH, 1, &b) != KI_OK)
		return KI_EINVAL;
	if (lookup(c, P_SEQ, &t) != 1) {
		c->out->missing = "tokens";
		return KI_EINVAL;
	}
	*bt = b * t;
	return KI_OK;
}

/* Expected number of distinct values among n uniform draws from k. */
static double
distinct(double k, double n)
{
	if (k <= 1)
		return k;
	return -k * expm1(n * log1p(-1.0 / k));
}

/*
 * embedding — nn.Embedding(V, D), indices (B, T) from torch.randint(0, V).
 * forward: read the B·T indices (8·BT), gather the rows they name (each
 *   distinct row once: R = V·(1-(1-1/V)^BT) expected distinct rows of D
 *   elements) and write the B·T·D output.
 * backward: read the indices and dy (BT·D·s) and write the dense V×D
 *   weight gradient nn.Embedding returns (every row, zero or not); the
 *   scatter-add of BT·D values is the only arithmetic.
 * full: the two, the indices read once; the script's full pass resets
 *   nothing (no grad_to_none), so the weight's gradient is added to the
 *   earlier repetitions': + read it (V·D·s).
 * resident: weight V·D·s, indices, output BT·D·s; backward/full add dy
 *   (torch.randn_like(output) is alive while backward runs) and the V×D
 *   gradient.
 */
static int
k_embedding(struct cm *c, struct terms *t)
{
	double bt, d, v, s = c->s, idx, out, w;

	if (tokens(c, &bt) || need(c, P_HIDDEN, &d) || need(c, P_VOCAB, &v))
		return KI_EINVAL;
	idx = 8 * bt;
	out = bt * d * s;
	w = v * d * s;
	t->fb = idx + distinct(v, bt) * d * s + out;
	t->bb = idx + out + w;
	t->bv = bt * d;
	t->shared = idx;
	t->af = w;
	t->rf = w + idx + out;
	t->rb = t->rfull = w + idx + 2 * out + w;
	c->out->model = "embedding: 8BT + R·D·s + BT·D·s | 8BT + BT·D·s + "
	    "V·D·s (R distinct rows) | full + V·D·s read (accumulated)";
	return KI_OK;
}

/* A loss over an (N, V) input read once with a scalar result: forward
 * reads the inputs; backward can be free (gradient computed in forward);
 * full also writes the input gradient. */
static void
loss_terms(struct terms *t, double in_bytes, double grad_bytes,
	double vflops)
{
	t->fb = in_bytes;
	t->fv = vflops;
	t->xb = grad_bytes;
}

/*
 * cross_entropy — logits (BT, V) from torch.randn (float32), targets (BT).
 * forward: read logits and targets; max, exp-sum and the target's logit
 *   (about 3 operations an element). backward: 0 (see conventions).
 * full: + write the (BT, V) logit gradient, which the script's full pass
 *   (no grad_to_none) accumulates: + read it (BT·V·s).
 * resident: logits + targets (Liger writes the gradient over the logits).
 */
static int
k_cross_entropy(struct cm *c, struct terms *t)
{
	double bt, v, x;

	if (tokens(c, &bt) || need(c, P_VOCAB, &v))
		return KI_EINVAL;
	x = bt * v * c->s;
	loss_terms(t, x + 8 * bt, x, 3 * bt * v);
	t->af = x;
	t->rf = t->rb = t->rfull = x + 8 * bt;
	c->out->model = "cross_entropy: BT·V·s + 8BT | full + 2·BT·V·s";
	return KI_OK;
}

/*
 * kl_div, jsd, tvd — two (BT, V) distributions: input (log-)probabilities
 * made by log_softmax/softmax of a leaf torch.randn(BT, V,
 * requires_grad=True), and a target of the same shape; float32.
 * forward: read both (2·BT·V·s); a few vector operations per element
 *   (KL: 3; JSD: exp, exp, log, mix ~ 8; TVD: 3). backward: kl_div 0;
 *   jsd and tvd (in_bwd): Liger's forward stores the input gradient G and
 *   the backward scales it by the upstream scalar, then autograd runs the
 *   backward of the script's log_softmax (jsd) or softmax (tvd): read G
 *   and y, write the leaf's gradient (3·BT·V·s); grad_to_none names the
 *   input made from the leaf, not the leaf, so the leaf's gradient
 *   accumulates: + read it (BT·V·s).
 * full: + write the input gradient BT·V·s (a fused full pass reads y and
 *   the target once and writes the leaf's gradient: the backward's reads
 *   of G and y are shared with the forward, its write is the full's).
 *   The reference's full times the loss, not the script's log_softmax or
 *   softmax behind it, so the leaf's accumulation is not counted there.
 * resident: the leaf, the input made from it and the target (3·BT·V·s);
 *   the leaf stays alive through the autograd graph.
 */
static int
k_divergence(struct cm *c, struct terms *t, double per_elem, int in_bwd,
	const char *model)
{
	double bt, v, x;

	if (tokens(c, &bt) || need(c, P_VOCAB, &v))
		return KI_EINVAL;
	x = bt * v * c->s;
	loss_terms(t, 2 * x, x, per_elem * bt * v);
	if (in_bwd) {
		t->bb = 3 * x;
		t->ab = x;
		t->shared = 2 * x;
		t->xb = 0;
	}
	t->rf = t->rb = t->rfull = 3 * x;
	c->out->model = model;
	return KI_OK;
}

static int
k_kl_div(struct cm *c, struct terms *t)
{
	return k_divergence(c, t, 3, 0, "kl_div: 2·BT·V·s | full + BT·V·s");
}

static int
k_jsd(struct cm *c, struct terms *t)
{
	return k_divergence(c, t, 8, 1,
	    "jsd: 2·BT·V·s | bwd 3·BT·V·s | full + BT·V·s");
}

static int
k_tvd(struct cm *c, struct terms *t)
{
	return k_divergence(c, t, 3, 1,
	    "tvd: 2·BT·V·s | bwd 3·BT·V·s | full + BT·V·s");
}

/*
 * megatron_cross_entropy — logits (S, B, V) bfloat16, targets (S, B),
 * reduction "none" (a float32 loss per token).
 * forward: read logits and targets, write the BT losses (4 bytes each).
 * backward and full (the script times forward+backward as "backward";
 *   out.sum().backward() gives a stride-0 upstream gradient): + write the
 *   (S, B, V) logit gradient.
 * resident: logits, targets and the per-token losses (the gradient may be
 *   written over the logits, as Megatron's fused path does).
 */
static int
k_megatron_cross_entropy(struct cm *c, struct terms *t)
{
	double bt, v, x;

	if (tokens(c, &bt) || need(c, P_VOCAB, &v))
		return KI_EINVAL;
	x = bt * v * c->s;
	t->fb = x + 8 * bt + 4 * bt;
	t->fv = 3 * bt * v;
	t->bb = t->fb + x;
	t->bv = t->fv + bt * v;
	t->shared = t->fb;
	t->rf = t->rb = t->rfull = x + 12 * bt;
	c->out->model = "megatron_cross_entropy: BT·V·s + 12BT | + BT·V·s";
	return KI_OK;
}

/*
 * fused_linear_cross_entropy — hidden states x (BT, H), lm_head weight W
 * (V, H), targets (BT); logits never need to exist.
 * forward: read x, W, targets; the logits product 2·BT·H·V.
 * backward: 0 (Liger computes both gradients during forward).
 * full: + write dx (BT·H·s) and dW (V·H·s); + 4·BT·H·V for them. The
 *   script's full pass resets nothing (no grad_to_none): both gradients
 *   accumulate, + read them (BT·H·s + V·H·s).
 * resident: x, W, targets; full adds dW.
 *
 * The preference losses (fused_linear_orpo_loss, _cpo_loss, _simpo_loss)
 * build x (B, T, H) and the same (V, H) head: the same floor with
 * BT = B·T.
 */
static int
lm_head(struct cm *c, struct terms *t, double extra_input_bytes)
{
	double bt, h, v, s = c->s, x, w;

	if (tokens(c, &bt) || need(c, P_HIDDEN, &h) || need(c, P_VOCAB, &v))
		return KI_EINVAL;
	x = bt * h * s;
	w = v * h * s;
	t->fb = x + w + 8 * bt;
	t->ff = 2 * bt * h * v;
	t->xb = x + w;
	t->xf = 4 * bt * h * v;
	t->af = x + w;
	t->rf = t->rb = x + w + 8 * bt + extra_input_bytes * bt * h * s;
	t->rfull = t->rf + w;
	return KI_OK;
}

static int
k_flce(struct cm *c, struct terms *t)
{
	c->out->model = "fused_linear_cross_entropy: BT·H·s + V·H·s + 8BT, "
	    "2·BT·H·V FLOPs | full + 2·(BT·H·s + V·H·s), 6·BT·H·V";
	return lm_head(c, t, 0);
}

/*
 * fused_linear_grpo_loss_token, _sequence — policy input x and reference
 * input ref_x (B, T, H), policy and reference heads W, W_ref (V, H),
 * selected tokens (B, T), advantages (B). The script's loss has β = 0.1,
 * so its KL term needs the reference model's log-probabilities: both
 * heads' logits are computed.
 * forward: read x, ref_x, W, W_ref, the tokens; 2 × 2·BT·H·V.
 * backward: the script's `y.backward(retain_graph=True)` after a forward
 *   that made the gradients (Liger's design) hands them over: its
 *   grad_to_none names x alone, so x's gradient is written anew (read the
 *   stored one, write dx: 2·BT·H·s) and W's is added to what the earlier
 *   repetitions left (read both, write: 3·V·H·s). The upstream scalar is
 *   1 (backward() on the scalar loss); no FLOPs.
 * full: + write dx and dW; + 4·BT·H·V. A full pass makes the gradients
 *   where it writes them: the backward's hand-over bytes are not added
 *   (shared). The script's full pass resets nothing: dx and dW both
 *   accumulate, + read them (BT·H·s + V·H·s).
 * resident: x, ref_x, W, W_ref, tokens; full adds dW.
 */
static int
k_grpo(struct cm *c, struct terms *t)
{
	double bt, h, v, s = c->s, x, w;

	if (tokens(c, &bt) || need(c, P_HIDDEN, &h) || need(c, P_VOCAB, &v))
		return KI_EINVAL;
	x = bt * h * s;
	w = v * h * s;
	t->fb = 2 * x + 2 * w + 8 * bt;
	t->ff = 4 * bt * h * v;
	t->bb = 2 * x + 3 * w;
	t->shared = t->bb;
	t->xb = x + w;
	t->xf = 4 * bt * h * v;
	t->af = x + w;
	t->rf = t->rb = 2 * x + 2 * w + 8 * bt;
	t->rfull = t->rf + w;
	c->out->model = "fused_linear_grpo_loss: 2·BT·H·s + 2·V·H·s + 8BT, "
	    "4·BT·H·V | bwd 2·BT·H·s + 3·V·H·s | full + 2·(BT·H·s + V·H·s), "
	    "8·BT·H·V";
	return KI_OK;
}

/*
 * kto_loss — policy input x and reference input ref_x (B, T, H), policy
 * and reference heads W, W_ref (V, H) with biases (V), targets (B, T); x
 * does not require grad. The loss needs both models' log-probabilities.
 * forward: read x, ref_x, W, W_ref, biases, targets; 2 × 2·BT·H·V.
 * backward: 0. full: + write dW and db; + 2·BT·H·V (dW only); both
 *   accumulate (no grad_to_none): + read them.
 * resident: x, ref_x, W, W_ref, targets; full adds dW.
 */
static int
k_kto(struct cm *c, struct terms *t)
{
	double bt, h, v, s = c->s, x, w;

	if (tokens(c, &bt) || need(c, P_HIDDEN, &h) || need(c, P_VOCAB, &v))
		return KI_EINVAL;
	x = bt * h * s;
	w = v * h * s;
	t->fb = 2 * x + 2 * w + 2 * v * s + 8 * bt;
	t->ff = 4 * bt * h * v;
	t->xb = w + v * s;
	t->xf = 2 * bt * h * v;
	t->af = w + v * s;
	t->rf = t->rb = 2 * x + 2 * w + 8 * bt;
	t->rfull = t->rf + w;
	c->out->model = "kto_loss: 2·BT·H·s + 2·V·H·s, 4·BT·H·V | "
	    "full + 2·(V·H·s + V·s), 6·BT·H·V";
	return KI_OK;
}

/*
 * fused_linear_jsd — student and teacher inputs (BT, H), student and
 * teacher heads (V, H); only the student input and head get gradients.
 * forward: read both inputs and heads; 2 × 2·BT·H·V.
 * backward: 0. full: + write d(student input) and d(student head);
 *   + 4·BT·H·V; both accumulate (no grad_to_none): + read them.
 * resident: both inputs and heads; full adds the student head gradient.
 */
static int
k_fused_linear_jsd(struct cm *c, struct terms *t)
{
	double bt, h, v, s = c->s, x, w;

	if (tokens(c, &bt) || need(c, P_HIDDEN, &h) || need(c, P_VOCAB, &v))
		return KI_EINVAL;
	x = bt * h * s;
	w = v * h * s;
	t->fb = 2 * x + 2 * w;
	t->ff = 4 * bt * h * v;
	t->xb = x + w;
	t->xf = 4 * bt * h * v;
	t->af = x + w;
	t->rf = t->rb = 2 * x + 2 * w;
	t->rfull = t->rf + w;
	c->out->model = "fused_linear_jsd: 2·BT·H·s + 2·V·H·s, 4·BT·H·V | "
	    "full + 2·(BT·H·s + V·H·s), 8·BT·H·V";
	return KI_OK;
}

/*
 * distill_jsd_loss, distill_cosine_loss — student input (BT, H/2) with
 * head (V, H/2), teacher input (BT, H) with head (V, H), targets (BT).
 * forward: read all four and the targets; student logits 2·BT·V·H/2 and
 *   teacher logits 2·BT·V·H: 3·BT·V·H.
 * backward: 0. full: + write d(student input) and d(student head),
 *   2 × 2·BT·V·H/2 = 2·BT·V·H more; both accumulate (no grad_to_none):
 *   + read them.
 * resident: inputs, heads, targets; full adds the student head gradient.
 */
static int
k_distill(struct cm *c, struct terms *t)
{
	double bt, h, v, s = c->s, xs, xt, ws, wt;

	if (tokens(c, &bt) || need(c, P_HIDDEN, &h) || need(c, P_VOCAB, &v))
		return KI_EINVAL;
	xs = bt * (h / 2) * s;
	xt = bt * h * s;
	ws = v * (h / 2) * s;
	wt = v * h * s;
	t->fb = xs + xt + ws + wt + 8 * bt;
	t->ff = 3 * bt * v * h;
	t->xb = xs + ws;
	t->xf = 2 * bt * v * h;
	t->af = xs + ws;
	t->rf = t->rb = xs + xt + ws + wt + 8 * bt;
	t->rfull = t->rf + ws;
	c->out->model = "distill: BT·1.5H·s + V·1.5H·s + 8BT, 3·BT·V·H | "
	    "full + 2·(BT·H/2·s + V·H/2·s), 5·BT·V·H";
	return KI_OK;
}

/*
 * geglu, swiglu, tiled_geglu, tiled_swiglu — LlamaMLP: x (B, T, H),
 * gate and up projections (I, H), down projection (H, I), no bias.
 * forward: read x and the three weights (3·H·I·s), write y (BT·H·s);
 *   three products, 3 × 2·BT·H·I; the activation ~10 operations per
 *   intermediate element.
 * backward: read dy, x and the weights, write dx and the three weight
 *   gradients; each product's two gradient products: 12·BT·H·I.
 * The scripts' grad_to_none names x alone: the three weight gradients
 *   accumulate over the repetitions, so backward and full also read them
 *   (3·H·I·s).
 * full: x and the weights read once. resident: x, weights, y; backward
 *   and full add dy and the weight gradients. (A tiled variant that
 *   recomputes the forward in backward does more, never less.)
 */
static int
k_mlp(struct cm *c, struct terms *t)
{
	double bt, h, i, s = c->s, x, w;

	if (tokens(c, &bt) || need(c, P_HIDDEN, &h) || need(c, P_INTER, &i))
		return KI_EINVAL;
	x = bt * h * s;
	w = 3 * h * i * s;
	t->fb = x + w + x;
	t->ff = 6 * bt * h * i;
	t->fv = 10 * bt * i;
	t->bb = x + x + w + x + w;
	t->bf = 12 * bt * h * i;
	t->bv = 10 * bt * i;
	t->shared = x + w;
	t->ab = t->af = w;
	t->rf = x + w + x;
	t->rb = t->rfull = x + w + x + x + w;
	c->out->model = "gated MLP: 2·BT·H·s + 3·H·I·s, 6·BT·H·I | backward "
	    "3·BT·H·s + 9·H·I·s, 12·BT·H·I";
	return KI_OK;
}

/*
 * megatron_swiglu — x (S, B, 2F) bfloat16 (gate and up concatenated),
 * y = silu(x1)·x2 (S, B, F).
 * forward: read x, write y: S·B·3F·s.
 * backward and full (timed as forward+backward; stride-0 upstream
 *   gradient): + write dx (S, B, 2F).
 * resident: x and y (the in-place variant writes dx over x).
 */
static int
k_megatron_swiglu(struct cm *c, struct terms *t)
{
	double bt, f, s = c->s, x, y;

	if (tokens(c, &bt) || need(c, P_INTER, &f))
		return KI_EINVAL;
	x = bt * 2 * f * s;
	y = bt * f * s;
	t->fb = x + y;
	t->fv = 5 * bt * f;
	t->bb = x + y + x;
	t->bv = 10 * bt * f;
	t->shared = t->fb;
	t->rf = t->rb = t->rfull = x + y;
	c->out->model = "megatron_swiglu: S·B·3F·s | + S·B·2F·s";
	return KI_OK;
}

/*
 * layer_norm — x (M, N) with weight and bias (N).
 * forward: read x, weight, bias, write y: 2·M·N·s + 2·N·s.
 * backward: read dy, x, weight; write dx, dweight, dbias (mean and rstd
 *   may be recomputed): 3·M·N·s + 3·N·s.
 * The weight and bias gradients accumulate (grad_to_none names x
 *   alone): backward and full read them too (2·N·s).
 * full: x and weight read once. resident: x and dy (the harness makes
 *   both before timing), weight, bias, y; + their gradients.
 */
static int
k_layer_norm(struct cm *c, struct terms *t)
{
	double m, n, s = c->s, x, p;

	if (need(c, P_ROWS, &m) ||
	    need(c, NAMES("hidden", "N", "H", "hidden_size"), &n))
		return KI_EINVAL;
	x = m * n * s;
	p = n * s;
	t->fb = x + 2 * p + x;
	t->fv = 8 * m * n;
	t->bb = x + x + p + x + 2 * p;
	t->bv = 10 * m * n;
	t->shared = x + p;
	t->ab = t->af = 2 * p;
	t->rf = x + x + 2 * p + x;
	t->rb = t->rfull = t->rf + 2 * p;
	c->out->model = "layer_norm: 2·M·N·s | backward 3·M·N·s";
	return KI_OK;
}

/*
 * rms_norm — x (M, H), weight (H).
 * forward: read x and weight, write y: 2·M·H·s. backward: read dy, x,
 *   weight, write dx and dweight: 3·M·H·s. full: x read once, 4·M·H·s.
 *   dweight accumulates (grad_to_none names x alone): + read it (H·s).
 * resident: x, dy, y (Liger writes dx over dy).
 */
static int
k_rms_norm(struct cm *c, struct terms *t)
{
	double m, h, s = c->s, x, p;

	if (need(c, P_ROWS, &m) ||
	    need(c, NAMES("hidden", "H", "N", "hidden_size"), &h))
		return KI_EINVAL;
	x = m * h * s;
	p = h * s;
	t->fb = x + p + x;
	t->fv = 4 * m * h;
	t->bb = x + x + p + x + p;
	t->bv = 6 * m * h;
	t->shared = x + p;
	t->ab = t->af = p;
	t->rf = t->rb = t->rfull = 3 * x + p;
	c->out->model = "rms_norm: 2·M·H·s | backward 3·M·H·s";
	return KI_OK;
}

/*
 * fused_add_rms_norm — x and residual r (M, H); outputs y = rms(x + r)·w
 * and the new residual s = x + r.
 * forward: read x, r, w; write y and s: 4·M·H·s.
 * backward: read dy, ds and the saved s; write dx (= dr, one buffer at
 *   least): 4·M·H·s. full: s is re-read, so one M·H term is shared: 7.
 *   dweight accumulates (grad_to_none names x and r): + read it (H·s).
 * resident: x, r, dy, ds (made by the harness) and y, s.
 */
static int
k_fused_add_rms_norm(struct cm *c, struct terms *t)
{
	double m, h, s = c->s, x, p;

	if (need(c, P_ROWS, &m) ||
	    need(c, NAMES("hidden", "H", "N", "hidden_size"), &h))
		return KI_EINVAL;
	x = m * h * s;
	p = h * s;
	t->fb = 4 * x + p;
	t->fv = 5 * m * h;
	t->bb = 4 * x + 2 * p;
	t->bv = 8 * m * h;
	t->shared = x + p;
	t->ab = t->af = p;
	t->rf = t->rb = t->rfull = 6 * x + p;
	c->out->model = "fused_add_rms_norm: 4·M·H·s | backward 4·M·H·s, "
	    "full 7·M·H·s";
	return KI_OK;
}

/*
 * megatron_rms_norm — x (S, B, H) bfloat16, weight (H).
 * forward: read x, write y: 2·S·B·H·s.
 * backward and full (forward+backward, stride-0 upstream gradient):
 *   read x, write y and dx: 3·S·B·H·s. The weight's gradient is never
 *   reset (+ read it, H·s); x's is reset before each "backward" but not
 *   in the full pass, where it accumulates (+ read it, S·B·H·s).
 * resident: x and y.
 */
static int
k_megatron_rms_norm(struct cm *c, struct terms *t)
{
	double bt, h, s = c->s, x, p;

	if (tokens(c, &bt) ||
	    need(c, NAMES("hidden", "H", "hidden_size"), &h))
		return KI_EINVAL;
	x = bt * h * s;
	p = h * s;
	t->fb = x + p + x;
	t->fv = 4 * bt * h;
	t->bb = t->fb + x + p;
	t->bv = t->fv + 6 * bt * h;
	t->shared = t->fb;
	t->ab = p;
	t->af = x + p;
	t->rf = t->rb = t->rfull = 2 * x + p;
	c->out->model = "megatron_rms_norm: 2·S·B·H·s | + S·B·H·s, full "
	    "+ 2·S·B·H·s";
	return KI_OK;
}

/*
 * rope, llama4_rope — q (1, T, Hq, d) and k (1, T, Hkv, d) with
 * d = hidden / Hq; rope reads cos and sin (T, d) in the input dtype,
 * llama4_rope a complex64 table freqs_cis (T, d/2), 4·T·d bytes.
 * forward: read q, k and the table, write the rotated q and k.
 * backward: read dq, dk and the table, write the gradients (the same
 *   rotation, inverted). full: the table read once.
 * resident: q, k, dq, dk (made by the harness) and the table (the
 *   rotated outputs may be written in place).
 */
static int
rope_common(struct cm *c, struct terms *t, int complex_table)
{
	double seq, hid, hq, hkv, b, d, qk, tab, s = c->s;

	if (need(c, P_SEQ, &seq) || need(c, P_HIDDEN, &hid) ||
	    need(c, P_QHEADS, &hq) || need(c, P_KVHEADS, &hkv) ||
	    opt(c, P_BATCH, 1, &b))
		return KI_EINVAL;
	d = hid / hq;
	qk = b * seq * (hq + hkv) * d * s;
	tab = complex_table ? 4 * seq * d : 2 * seq * d * s;
	t->fb = 2 * qk + tab;
	t->fv = 3 * qk / s;
	t->bb = 2 * qk + tab;
	t->bv = 3 * qk / s;
	t->shared = tab;
	t->rf = t->rb = t->rfull = 2 * qk + tab;
	return KI_OK;
}

static int
k_rope(struct cm *c, struct terms *t)
{
	c->out->model = "rope: 2·T·(Hq+Hkv)·d·s + cos/sin, each pass";
	return rope_common(c, t, 0);
}

static int
k_llama4_rope(struct cm *c, struct terms *t)
{
	c->out->model = "llama4_rope: 2·T·(Hq+Hkv)·d·s + complex64 table";
	return rope_common(c, t, 1);
}

/*
 * Row-wise elementwise kernels over X (rows, cols):
 * softmax (x (M, N)), sparsemax (x (BT, V)), relu_squared (x (M, N)).
 * forward: read x, write y: 2X. backward: read dy and the saved y
 *   (softmax, sparsemax) or x (relu²), write dx: 3X. full: 4X (the saved
 *   tensor re-read counts once). resident: x, dy (the harness's), y.
 */
static void
rowwise_terms(struct terms *t, double x, double n, double fv, double bv)
{
	t->fb = 2 * x;
	t->fv = fv * n;
	t->bb = 3 * x;
	t->bv = bv * n;
	t->shared = x;
	t->rf = t->rb = t->rfull = 3 * x;
}

static int
k_softmax(struct cm *c, struct terms *t)
{
	double m, n;

	if (need(c, P_ROWS, &m) ||
	    need(c, NAMES("hidden", "N", "cols", "H", "hidden_size"), &n))
		return KI_EINVAL;
	rowwise_terms(t, m * n * c->s, m * n, 4, 3);
	c->out->model = "softmax: 2·M·N·s | backward 3·M·N·s, full 4";
	return KI_OK;
}

static int
k_relu_squared(struct cm *c, struct terms *t)
{
	double m, n;

	if (need(c, P_ROWS, &m) ||
	    need(c, NAMES("hidden", "N", "cols", "H", "hidden_size"), &n))
		return KI_EINVAL;
	rowwise_terms(t, m * n * c->s, m * n, 2, 2);
	c->out->model = "relu_squared: 2·M·N·s | backward 3·M·N·s, full 4";
	return KI_OK;
}

static int
k_sparsemax(struct cm *c, struct terms *t)
{
	double bt, v;

	if (tokens(c, &bt) ||
	    need(c, NAMES("vocab", "V", "hidden", "hidden_size"), &v))
		return KI_EINVAL;
	rowwise_terms(t, bt * v * c->s, bt * v, 4, 3);
	c->out->model = "sparsemax: 2·BT·V·s | backward 3·BT·V·s, full 4";
	return KI_OK;
}

/*
 * group_norm — x (M, C, H) (batch M, C channels, H elements each),
 * weight and bias (C), C / channels_per_group groups.
 * forward: read x, write y: 2·M·C·H·s. backward: read dy, x, weight,
 *   write dx, dweight, dbias: 3·M·C·H·s. full: 4. dweight and dbias
 *   accumulate (grad_to_none names x alone): + read them (2·C·s).
 * resident: forward x, parameters, y; backward and full add dy (made by
 *   the harness before the measured call, or inside it) and the
 *   parameter gradients.
 */
static int
k_group_norm(struct cm *c, struct terms *t)
{
	double m, ch, h, s = c->s, x, p;

	if (need(c, NAMES("rows", "M", "batch", "B"), &m) ||
	    need(c, NAMES("channels", "C", "num_channels"), &ch) ||
	    need(c, NAMES("hidden", "H", "hidden_size"), &h))
		return KI_EINVAL;
	x = m * ch * h * s;
	p = ch * s;
	t->fb = x + 2 * p + x;
	t->fv = 8 * m * ch * h;
	t->bb = x + x + p + x + 2 * p;
	t->bv = 10 * m * ch * h;
	t->shared = x + p;
	t->ab = t->af = 2 * p;
	t->rf = x + 2 * p + x;
	t->rb = t->rfull = t->rf + x + 2 * p;
	c->out->model = "group_norm: 2·M·C·H·s | backward 3·M·C·H·s";
	return KI_OK;
}

/*
 * multi_token_attention, sparse_multi_token_attention — scores x
 * (B, C_in, L, L), causally masked, softmax (or sparsemax) over the last
 * axis, a K×K convolution to C_out channels, masked again.
 * Only the lower triangle, L(L+1)/2 of L² entries, influences the
 * result, and only it needs reading; the output and the input gradient
 * are dense (L, L) tensors and are written in full.
 * forward: read x's lower triangle and the weights, write y;
 *   convolution 2·B·C_out·L(L+1)/2·(C_in/groups)·K².
 * backward: read dy's and the saved probabilities' lower triangles,
 *   write dx; twice the convolution's FLOPs. The weight and bias
 *   gradients accumulate over do_bench's repetitions (grad_to_none names
 *   x alone): read and written, with the weights read.
 *   (C_out·C_in/groups·K² + C_out elements, wb bytes.)
 * full: the lower triangle of x read once.
 * resident: x, dy (made by the harness), y.
 */
static int
k_mta(struct cm *c, struct terms *t)
{
	double b, cin, cout, l, k, g, s = c->s, tri, xl, y, xfull, fl, wb;

	if (opt(c, P_BATCH, 2, &b) ||
	    need(c, NAMES("in_channels", "C_in", "channels"), &cin) ||
	    opt(c, NAMES("out_channels", "C_out"), cin, &cout) ||
	    need(c, NAMES("seq", "L", "T", "seq_len"), &l) ||
	    need(c, NAMES("kernel_size", "K"), &k) ||
	    opt(c, NAMES("groups"), 1, &g))
		return KI_EINVAL;
	tri = l * (l + 1) / 2;
	xl = b * cin * tri * s;
	xfull = b * cin * l * l * s;
	y = b * cout * l * l * s;
	fl = 2 * b * cout * tri * (cin / g) * k * k;
	wb = (cout * (cin / g) * k * k + cout) * s;
	t->fb = xl + y;
	t->ff = fl;
	t->fv = 4 * b * cin * tri;
	t->bb = b * cout * tri * s + xl + xfull + 3 * wb;
	t->bf = 2 * fl;
	t->bv = 4 * b * cin * tri;
	t->shared = xl;
	t->rf = t->rb = t->rfull = xfull + xfull + y;
	c->out->model = "multi_token_attention: lower-triangle reads, dense "
	    "(L, L) writes";
	return KI_OK;
}

/*
 * fused_neighborhood_attention — x (B, L, D), q/k/v/out projections
 * (D, D) with biases; query i attends to the keys i + m·dilation,
 * |m| ≤ kernel_size/2, that lie in [0, L) (Liger's mask): P query-key
 * pairs in all, L·kernel_size less those cut off at the ends.
 * forward: read x and the four projections (4·D²·s + 4·D·s), write the
 *   output; four projections 4 × 2·B·L·D² and the windowed attention
 *   2 × 2·B·D·P (scores and the weighted sum).
 * backward: read dy, x and the weights, write dx and the weight and bias
 *   gradients; twice the forward FLOPs. The script's do_bench names x
 *   alone in grad_to_none, so the projections' gradients accumulate over
 *   the repetitions: each backward also reads the gradient it adds to.
 * full: x and weights read once. resident: x, dy (the harness's), the
 *   weights, y; full adds the weight gradients.
 */
static int
k_neighborhood_attention(struct cm *c, struct terms *t)
{
	double b, l, d, heads, k, dil, s = c->s, x, w, m, pairs, fl;

	if (opt(c, P_BATCH, 2, &b) || need(c, P_SEQ, &l) ||
	    need(c, P_HIDDEN, &d) || opt(c, P_HEADS, 1, &heads) ||
	    opt(c, NAMES("kernel_size", "K"), 7, &k) ||
	    opt(c, NAMES("dilation"), 1, &dil))
		return KI_EINVAL;
	x = b * l * d * s;
	w = 4 * d * d * s + 4 * d * s;
	/* Offsets m = 1…M on each side reach l - m·dil queries. */
	m = fmin(floor(k / 2), ceil(l / dil) - 1);
	pairs = l + 2 * (m * l - dil * m * (m + 1) / 2);
	fl = 8 * b * l * d * d + 4 * b * d * pairs;
	t->fb = x + w + x;
	t->ff = fl;
	t->fv = 5 * b * heads * pairs;
	t->bb = x + x + w + x + w + w;
	t->bf = 2 * fl;
	t->bv = 5 * b * heads * pairs;
	t->shared = x + w;
	t->rf = t->rb = x + x + w + x;
	t->rfull = t->rf + w;
	c->out->model = "fused_neighborhood_attention: 2·B·L·D·s + 4·D²·s, "
	    "8·B·L·D² + 4·B·D·P FLOPs (P query-key pairs)";
	return KI_OK;
}

/*
 * fused_moe — x (T, H), gate_up (E, 2I, H), down (E, H, I), each token
 * routed to K of the E experts (top_k_index int32 and top_k_weights in
 * the dtype, (T, K)).
 * Only experts some token routes to need their weights read: with random
 * routing that is hit = E·(1-(1-K/E)^T) experts of 3·I·H·s bytes.
 * forward: read x, the hit experts' weights and the routing, write y;
 *   per token and chosen expert 2·H·2I + 2·I·H = 6·H·I FLOPs.
 * backward: read dy, x, hit weights and routing, write dx, the dense
 *   weight gradients of all E experts (zeros included) and the routing
 *   weights' gradient; 12·T·K·H·I.
 * full: x, hit weights and routing read once.
 * resident: x, all weights, routing, y; backward and full add dy and the
 *   weight gradients.
 */
static int
k_fused_moe(struct cm *c, struct terms *t)
{
	double tk, e, h, i, k, s = c->s, x, we, r, hit;

	if (need(c, NAMES("tokens", "seq", "T", "BT"), &tk) ||
	    need(c, NAMES("experts", "E", "num_experts"), &e) ||
	    need(c, P_HIDDEN, &h) || need(c, P_INTER, &i) ||
	    need(c, NAMES("topk", "K", "top_k"), &k))
		return KI_EINVAL;
	x = tk * h * s;
	we = 3 * i * h * s;
	r = tk * k * (4 + s);
	hit = k >= e ? e : e * -expm1(tk * log1p(-k / e));
	t->fb = x + hit * we + r + x;
	t->ff = 6 * tk * k * h * i;
	t->fv = 4 * tk * k * i;
	t->bb = x + x + hit * we + r + x + e * we + tk * k * s;
	t->bf = 12 * tk * k * h * i;
	t->bv = 6 * tk * k * i;
	t->shared = x + hit * we + r;
	t->rf = x + e * we + r + x;
	t->rb = t->rfull = t->rf + x + e * we;
	c->out->model = "fused_moe: 2·T·H·s + hit·3·I·H·s, 6·T·K·H·I | "
	    "backward + E·3·I·H·s, 12·T·K·H·I";
	return KI_OK;
}

struct kernel {
	const char *name;
	const char *dtype;   /* Liger's dtype where the config names none */
	int (*fn)(struct cm *, struct terms *);
	int bwd_is_full;     /* the script times forward+backward as backward */
};

static const struct kernel kernels[] = {
	{ "embedding", "float32", k_embedding, 0 },
	{ "cross_entropy", "float32", k_cross_entropy, 0 },
	{ "kl_div", "float32", k_kl_div, 0 },
	{ "jsd", "float32", k_jsd, 0 },
	{ "tvd", "float32", k_tvd, 0 },
	{ "megatron_cross_entropy", "bfloat16", k_megatron_cross_entropy, 1 },
	{ "fused_linear_cross_entropy", "bfloat16", k_flce, 0 },
	{ "fused_linear_orpo_loss", "bfloat16", k_flce, 0 },
	{ "fused_linear_cpo_loss", "bfloat16", k_flce, 0 },
	{ "fused_linear_simpo_loss", "bfloat16", k_flce, 0 },
	{ "fused_linear_grpo_loss_token", "bfloat16", k_grpo, 0 },
	{ "fused_linear_grpo_loss_sequence", "bfloat16", k_grpo, 0 },
	{ "kto_loss", "bfloat16", k_kto, 0 },
	{ "fused_linear_jsd", "bfloat16", k_fused_linear_jsd, 0 },
	{ "distill_jsd_loss", "bfloat16", k_distill, 0 },
	{ "distill_cosine_loss", "bfloat16", k_distill, 0 },
	{ "geglu", "bfloat16", k_mlp, 0 },
	{ "swiglu", "bfloat16", k_mlp, 0 },
	{ "tiled_geglu", "bfloat16", k_mlp, 0 },
	{ "tiled_swiglu", "bfloat16", k_mlp, 0 },
	{ "megatron_swiglu", "bfloat16", k_megatron_swiglu, 1 },
	{ "layer_norm", "float32", k_layer_norm, 0 },
	{ "rms_norm", "bfloat16", k_rms_norm, 0 },
	{ "fused_add_rms_norm", "float32", k_fused_add_rms_norm, 0 },
	{ "megatron_rms_norm", "bfloat16", k_megatron_rms_norm, 1 },
	{ "rope", "bfloat16", k_rope, 0 },
	{ "llama4_rope", "bfloat16", k_llama4_rope, 0 },
	{ "softmax", "float32", k_softmax, 0 },
	{ "sparsemax", "float32", k_sparsemax, 0 },
	{ "relu_squared", "bfloat16", k_relu_squared, 0 },
	{ "group_norm", "float32", k_group_norm, 0 },
	{ "multi_token_attention", "bfloat16", k_mta, 0 },
	{ "sparse_multi_token_attention", "float32", k_mta, 0 },
	{ "fused_neighborhood_attention", "float32",
	    k_neighborhood_attention, 0 },
	{ "fused_moe", "bfloat16", k_fused_moe, 0 },
};

#define KERNELS_N (sizeof(kernels) / sizeof(kernels[0]))

static const struct kernel *
find_kernel(const char *name)
{
	size_t i;

	if (name == NULL)
		return NULL;
	for (i = 0; i < KERNELS_N; i++)
		if (strcmp(kernels[i].name, name) == 0)
			return &kernels[i];
	return NULL;
}

const char *
api_cost_default_dtype(const char *kernel)
{
	const struct kernel *k = find_kernel(kernel);

	return k != NULL ? k->dtype : NULL;
}

const char *const *
api_cost_kernels(size_t *n)
{
	static const char *names[KERNELS_N + 1];
	size_t i;

	for (i = 0; i < KERNELS_N; i++)
		names[i] = kernels[i].name;
	names[KERNELS_N] = NULL;
	if (n != NULL)
		*n = KERNELS_N;
	return names;
}

static int
parse_pass(const char *s, enum pass *p)
{
	if (s == NULL)
		return KI_EINVAL;
	if (strcasecmp(s, "forward") == 0 || strcasecmp(s, "fwd") == 0)
		*p = PASS_FWD;
	else if (strcasecmp(s, "backward") == 0 || strcasecmp(s, "bwd") == 0)
		*p = PASS_BWD;
	else if (strcasecmp(s, "full") == 0)
		*p = PASS_FULL;
	else
		return KI_EINVAL;
	return KI_OK;
}

static void
finish(const struct terms *t, enum pass p, int bwd_is_full, api_cost *out)
{
	double full_b = t->fb + t->bb - t->shared + t->xb;
	double full_f = t->ff + t->bf + t->xf;
	double full_v = t->fv + t->bv + t->xv;

	if (p == PASS_BWD && bwd_is_full) {
		/* forward+backward timed as one: the backward terms of these
		 * models already include the forward's. */
		out->bytes = t->bb + t->ab;
		out->accumulated_bytes = t->ab;
		out->flops = t->bf;
		out->vector_flops = t->bv;
		out->resident_bytes = t->rb;
		return;
	}
	switch (p) {
	case PASS_FWD:
		out->bytes = t->fb;
		out->flops = t->ff;
		out->vector_flops = t->fv;
		out->resident_bytes = t->rf;
		break;
	case PASS_BWD:
		out->bytes = t->bb + t->ab;
		out->accumulated_bytes = t->ab;
		out->flops = t->bf;
		out->vector_flops = t->bv;
		out->resident_bytes = t->rb;
		break;
	case PASS_FULL:
		if (bwd_is_full) {
			full_b = t->bb;
			full_f = t->bf;
			full_v = t->bv;
		}
		out->bytes = full_b + t->af;
		out->accumulated_bytes = t->af;
		out->flops = full_f;
		out->vector_flops = full_v;
		out->resident_bytes = t->rfull;
		break;
	}
}

int
api_cost_estimate(const char *kernel, const char *pass, const char *dtype,
	struct json_object *parameters, api_cost *out)
{
	const struct kernel *k;
	struct terms t;
	struct cm c;
	enum pass p;
	int rc;

	memset(out, 0, sizeof(*out));
	k = find_kernel(kernel);
	if (k == NULL)
		return KI_ENOTFOUND;
	if (parse_pass(pass, &p) != KI_OK) {
		out->missing = "pass";
		return KI_EINVAL;
	}
	out->dtype = api_dtype_parse(dtype != NULL && dtype[0] != '\0' ?
	    dtype : k->dtype);
	if (out->dtype == API_DT_UNKNOWN) {
		out->missing = "dtype";
		return KI_EINVAL;
	}
	memset(&t, 0, sizeof(t));
	c.p = parameters;
	c.pass = p;
	c.s = (double)api_dtype_size(out->dtype);
	c.out = out;
	rc = k->fn(&c, &t);
	if (rc != KI_OK) {
		enum api_dtype dt = out->dtype;
		const char *missing = out->missing;

		memset(out, 0, sizeof(*out));
		out->dtype = dt;
		out->missing = missing;
		return rc;
	}
	finish(&t, p, k->bwd_is_full, out);
	return KI_OK;
}

double
api_cost_floor_seconds(const api_cost *c, const api_gpu *g,
	const char *dtype)
{
	enum api_dtype dt = dtype != NULL ? api_dtype_parse(dtype) : c->dtype;
	double f = 0, x;

	if (g == NULL)
		return 0;
	if (g->dram_bw > 0)
		f = c->bytes / g->dram_bw;
	x = api_gpu_matrix_rate(g, dt);
	if (x > 0 && c->flops / x > f)
		f = c->flops / x;
	if (g->fp32 > 0 && c->vector_flops / g->fp32 > f)
		f = c->vector_flops / g->fp32;
	return f;
}
