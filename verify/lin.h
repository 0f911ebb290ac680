/* verify/lin.h — the families over linear layers: the gated MLPs (swiglu,
 * geglu and their tiled variants: gate, up and down projections around
 * the activation) and the losses over a language-model head
 * (fused_linear_cross_entropy, fused_linear_jsd, the preference losses
 * ORPO, CPO, SimPO, KTO and GRPO, the distillation losses). Each is a set
 * of tensor slots and one computation written once (verify/lin_math.inc)
 * and compiled twice: in float for the CPU kernel and in double for the
 * check. The CPU engine is verify/lin_cpu.c; there is no CUDA kernel for
 * these families yet. */
#ifndef VERIFY_LIN_H
#define VERIFY_LIN_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "physics/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a slot is. */
enum lin_kind {
	LK_IN,        /* an input in the workload's dtype */
	LK_IN1,       /* an input of the backward alone (the upstream
	               * gradient), in the workload's dtype */
	LK_TARGET,    /* int64 class indices (also a boolean as 0/1) */
	LK_OUT0,      /* written by the forward, in the workload's dtype */
	LK_LOSS,      /* written by the forward: float32 scalars */
	LK_OUT1,      /* written by the backward, in the workload's dtype */
	LK_SAVED,     /* kept from the forward for the backward, fp32 */
	LK_ACC,       /* an input of the backward alone, in the workload's
	               * dtype: a parameter's gradient left by the earlier
	               * repetitions of the timing loop, which the backward
	               * adds to (the script resets only the input's) */
};

#define LIN_MAX_SLOTS 20

struct lin_slot {
	const char *name;
	enum lin_kind kind;
	int64_t n;            /* elements */
	int from;             /* LK_ACC: the saved slot whose value, rounded
	                       * to the dtype, it starts from (the gradient one
	                       * earlier repetition added) */
	unsigned acc;         /* LK_OUT1: the passes (LIN_ACC_*) in which the
	                       * script's autograd adds this gradient to what
	                       * the earlier repetitions left (do_bench's
	                       * grad_to_none does not name its tensor), as
	                       * the reference then does; else written anew */
};

#define LIN_ACC_BWD 1u    /* in the backward pass */
#define LIN_ACC_FULL 2u   /* in the full pass */

/* The parts of a computation. A loss whose gradients Liger's forward
 * makes (stored_bwd) has two more: LP_STORE is that forward (the loss,
 * and the gradients into saved slots), LP_APPLY the script's backward
 * after it (the stored gradients times the upstream scalar, written to
 * the input's gradient and added to the accumulators). */
enum lin_part { LP_FORWARD, LP_BACKWARD, LP_STORE, LP_APPLY };

/* One workload's shape and loss settings. */
struct lin_shape {
	int64_t b, t;         /* batch and sequence: rows = b·t */
	int64_t h, v;         /* hidden; vocabulary (MLP: intermediate) */
	int bias;             /* the heads have a bias */
	double beta, gamma;   /* the loss's settings (as Liger's defaults) */
	double eps_low, eps_high; /* GRPO: the ratio's clip range */
	double w_hard, w_soft;
	int64_t ignore;       /* ignore_index */
	int seq_level;        /* GRPO: importance ratio per sequence */
	int old_fixed;        /* GRPO: the old policy's log-probabilities are
	                       * those a previous forward saved (a gradient
	                       * check), not this forward's own (the script's
	                       * case: old = current, detached) */
	int nslots;
	struct lin_slot slot[LIN_MAX_SLOTS];
	int64_t scratch;      /* scratch elements a computation needs */
};

struct lin_family;

/* The computation of a part (enum lin_part; LP_BACKWARD after an
 * LP_FORWARD on the same slots, LP_APPLY after an LP_STORE) in float or
 * double; v[i] is slot i as an array of the type (targets: int64_t). */
typedef void lin_run_f(const struct lin_shape *s, int part, void *const *v,
	float *scratch);
typedef void lin_run_d(const struct lin_shape *s, int part, void *const *v,
	double *scratch);

struct lin_family {
	const char *name;
	/* Reads the shape from the workload's parameters (borrowed); 0 or -1
	 * with the field in err. */
	int (*parse)(struct json_object *p, struct lin_shape *s, char *err,
		size_t errlen);
	/* Fills the slots from the shape. */
	void (*layout)(struct lin_shape *s);
	/* The shape as canonical workload parameters (for the cost model). */
	struct json_object *(*params)(const struct lin_shape *s);
	/* Makes the inputs as Liger's script does; h[i] holds each input
	 * slot's storage (the dtype, or int64 for targets). */
	void (*prepare)(const struct lin_shape *s, void *const *h,
		enum api_dtype dt, uint64_t *rng);
	lin_run_f *run_f;
	lin_run_d *run_d;
	int paired;           /* batch halves are chosen and rejected */
	int stored_bwd;       /* the backward pass is LP_APPLY: the script's
	                       * backward of a loss whose gradients its
	                       * forward made */
};

/* The family named kernel, or NULL. */
const struct lin_family *lin_find(const char *kernel);

/* Matrix products of the shape's forward pass (2 per multiply-add). */
double lin_forward_flops(const struct lin_family *f,
	const struct lin_shape *s);

/* For a gradient check of GRPO away from the script's point (where the
 * importance ratio is 1): after a float64 forward on v (the double
 * slots), sets the advantages to alternate in sign (|A| ≥ 0.5) and the
 * old policy's log-probabilities to this point's less an offset d, held
 * fixed from now on (s->old_fixed), so that the ratios are e^d: e^±0.1
 * inside the clip range, e^±0.5 outside it on both sides, each far from
 * the range's ends. Writes each token's ratio into ratio (b·t
 * elements). */
void lin_grpo_checkpoint(struct lin_shape *s, void *const *v, double *ratio);

/* The CPU backend's budget for a forward's matrix products (with the
 * tensors' REF_CPU_MAX_ELEMS): a shape past it is halved and the result
 * says "scaled". */
#define LIN_CPU_MAX_FLOPS 8e6

/* Halves the shape (sequence, then batch, hidden, vocabulary: the
 * largest first) until its tensors hold at most max_elems elements and its
 * forward at most max_flops; 1 when it was reduced. Lays it out. */
int lin_fit(const struct lin_family *f, struct lin_shape *s,
	double max_elems, double max_flops);

struct ref_job;
struct ref_result;

/* Runs a family's job on the CPU, as ref_cpu_run (verify/lin_cpu.c). */
int lin_cpu_run(const struct ref_job *job, struct ref_result *r,
	char *err, size_t errlen);

/* The CPU matmul rate (FLOPs per second) of the fp32 engine on a
 * 128 × 128 × 128 product (the median of seven); 0 when it cannot be
 * measured. */
double lin_cpu_matmul_rate(void);

#ifdef __cplusplus
}
#endif

#endif
