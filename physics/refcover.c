/* physics/refcover.c — the reference program's coverage table. */
#include "physics/refcover.h"

#include <string.h>

#define ALL (REF_PASS_FORWARD | REF_PASS_BACKWARD | REF_PASS_FULL)
#define FWD_FULL (REF_PASS_FORWARD | REF_PASS_FULL)

/* Liger computes a loss's input gradient during the forward pass; its
 * "backward" scales the stored gradients by the upstream gradient (a random
 * scalar in Liger's scripts) and, where the script made the input through
 * a softmax or log_softmax, runs that operation's backward: work the
 * reference program implements for jsd and tvd, and for GRPO (its input a
 * leaf: the stored gradients handed over, the head's added to its
 * accumulated gradient), the only losses whose backward rows are in
 * Liger's data. */
static const char LOSS_BWD[] = "the reference program does not implement "
	"the backward of a loss whose gradient is computed in its forward pass "
	"(scaling the stored gradients by the upstream gradient, and the "
	"backward of how the script made the input)";

static const struct ref_cover table[] = {
	{ "embedding", ALL, NULL },
	{ "rms_norm", ALL, NULL },
	{ "megatron_rms_norm", ALL, NULL },
	{ "fused_add_rms_norm", ALL, NULL },
	{ "layer_norm", ALL, NULL },
	{ "group_norm", ALL, NULL },
	{ "softmax", ALL, NULL },
	{ "sparsemax", ALL, NULL },
	{ "relu_squared", ALL, NULL },
	{ "megatron_swiglu", ALL, NULL },
	{ "megatron_cross_entropy", ALL, NULL },
	{ "cross_entropy", FWD_FULL, LOSS_BWD },
	{ "kl_div", FWD_FULL, LOSS_BWD },
	{ "jsd", ALL, NULL },
	{ "tvd", ALL, NULL },
	{ "rope", ALL, NULL },
	{ "llama4_rope", ALL, NULL },
	/* attention and mixture-of-experts (verify/fam_attn.c, fam_moe.c) */
	{ "multi_token_attention", ALL, NULL },
	{ "sparse_multi_token_attention", ALL, NULL },
	{ "fused_neighborhood_attention", ALL, NULL },
	{ "fused_moe", ALL, NULL },
	/* The families over linear layers (verify/lin_defs.c), CPU only. */
	{ "swiglu", ALL, NULL },
	{ "geglu", ALL, NULL },
	{ "tiled_swiglu", ALL, NULL },
	{ "tiled_geglu", ALL, NULL },
	{ "fused_linear_cross_entropy", FWD_FULL, LOSS_BWD },
	{ "fused_linear_jsd", FWD_FULL, LOSS_BWD },
	{ "fused_linear_orpo_loss", FWD_FULL, LOSS_BWD },
	{ "fused_linear_cpo_loss", FWD_FULL, LOSS_BWD },
	{ "fused_linear_simpo_loss", FWD_FULL, LOSS_BWD },
	{ "kto_loss", FWD_FULL, LOSS_BWD },
	{ "fused_linear_grpo_loss_token", ALL, NULL },
	{ "fused_linear_grpo_loss_sequence", ALL, NULL },
	{ "distill_jsd_loss", FWD_FULL, LOSS_BWD },
	{ "distill_cosine_loss", FWD_FULL, LOSS_BWD },
};

unsigned
ref_pass_bit(const char *pass)
{
	if (pass == NULL)
		return 0;
	if (strcmp(pass, "forward") == 0)
		return REF_PASS_FORWARD;
	if (strcmp(pass, "backward") == 0)
		return REF_PASS_BACKWARD;
	if (strcmp(pass, "full") == 0)
		return REF_PASS_FULL;
	return 0;
}

int
ref_covers(const char *kernel, const char *pass, const char **why)
{
	size_t i;

	if (why != NULL)
		*why = "the reference program has no implementation of this "
		    "kernel family";
	if (kernel == NULL)
		return 0;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(table[i].kernel, kernel) != 0)
			continue;
		if (pass == NULL || (table[i].passes & ref_pass_bit(pass)))
			return 1;
		if (why != NULL)
			*why = table[i].why_not != NULL ? table[i].why_not :
			    "the reference program does not measure this pass";
		return 0;
	}
	return 0;
}

const struct ref_cover *
ref_coverage(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}
