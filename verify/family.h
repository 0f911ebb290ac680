/* verify/family.h — the row-wise kernel families of the reference program
 * (norms, activations, softmaxes, losses over a vocabulary, rotary
 * embeddings): each is a set of tensor slots and the arithmetic of one row,
 * written once for float (the CPU kernel) and once for double (the check),
 * from one template (verify/fam_math.inc). The CPU engine (fam_cpu.c) runs
 * them; the CUDA backend (fam_cuda.cu) has its own kernels and shares the
 * slots, the inputs and the float64 check. */
#ifndef VERIFY_FAMILY_H
#define VERIFY_FAMILY_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "physics/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a slot's elements live and in what type. */
enum fam_kind {
	FK_ROW,       /* len elements a row, in the workload's dtype */
	FK_ROW32,     /* len float32 elements a row (a per-row loss) */
	FK_TARGET,    /* one int64 a row (a class index) */
	FK_PARAM,     /* len elements in all, the workload's dtype */
	FK_PARAM32,   /* len float32 elements in all (a complex64 table) */
	FK_ACC,       /* a parameter's gradient: len elements in the dtype,
	               * summed over rows in fp32 (float64 in the check) */
};

/* Which part reads or writes a slot. */
#define FIO_IN0 1u    /* read by the forward */
#define FIO_OUT0 2u   /* written by the forward */
#define FIO_IN1 4u    /* read by the backward */
#define FIO_OUT1 8u   /* written by the backward */

#define FAM_MAX_SLOTS 10

struct fam_slot {
	const char *name;
	enum fam_kind kind;
	unsigned io;
	int64_t len;
};

/* One workload's shape. */
struct fam_shape {
	int64_t rows;            /* independent rows */
	int64_t n;               /* the main row length */
	int64_t a, b, c;         /* family-specific (heads, T, groups…) */
	double eps, scale;       /* norm epsilon; loss scale (1/rows or 1) */
	int64_t dim[2];          /* more family-specific sizes (attention's
	                          * kernel and dilation or groups, MoE's) */
	int nslots;
	struct fam_slot slot[FAM_MAX_SLOTS];
};

/* The arithmetic of one row: part 0 the forward, 1 the backward. v[i] is
 * slot i's row (row slots), the whole tensor (parameters) or the running
 * sum (FK_ACC); scratch holds n elements. */
typedef void fam_row_f(const struct fam_shape *s, int part, int64_t row,
	float *const *v, float *scratch);
typedef void fam_row_d(const struct fam_shape *s, int part, int64_t row,
	double *const *v, double *scratch);

struct family {
	const char *name;
	int bwd_is_full;         /* the script's "backward" is fwd + bwd */
	/* Reads the shape from the workload's parameters (borrowed). Returns
	 * 0, or -1 with what is missing in err. */
	int (*parse)(struct json_object *params, struct fam_shape *s,
		char *err, size_t errlen);
	/* Fills the slots from rows, n, a, b, c (after parse and after any
	 * reduction of rows). */
	void (*layout)(struct fam_shape *s);
	/* Halves the shape once to fit a budget; 0 when it cannot. NULL:
	 * rows halve. */
	int (*shrink)(struct fam_shape *s);
	/* The shape as canonical workload parameters (for the cost model). */
	struct json_object *(*params)(const struct fam_shape *s);
	/* Makes the inputs: host[i] of each IN0/IN1 slot (not written by the
	 * forward) already holds standard-normal values in its type; this
	 * turns them into what the family takes (probabilities, targets,
	 * rotary tables). NULL: none. */
	void (*prepare)(const struct fam_shape *s, void *const *host,
		enum api_dtype dt, uint64_t *rng);
	fam_row_f *row_f;
	fam_row_d *row_d;
	/* Which gradients the script's autograd adds to what its earlier
	 * repetitions left (do_bench's grad_to_none does not name their
	 * tensor, or its full pass names nothing): FAM_ACC_*; 0 when every
	 * gradient is reset (or a leaf's lies behind the harness's own op,
	 * outside the kernel). */
	unsigned acc;
};

#define FAM_ACC_PARAMS 1u    /* the FK_ACC gradients, in backward and full */
#define FAM_ACC_ROWS_BWD 2u  /* the row gradients, in the backward pass */
#define FAM_ACC_ROWS_FULL 4u /* the row gradients, in the full pass */

/* The family named kernel, or NULL. */
const struct family *fam_find(const char *kernel);

/* The family that runs pass (REF_FORWARD, REF_BACKWARD, REF_FULL) of
 * kernel: where a family's backward alone is other work than its full
 * pass's second half (tvd, jsd: the backward of the script's softmax or
 * log_softmax after scaling the gradient Liger's forward stored), a
 * family of its own; else fam_find's. */
const struct family *fam_find_pass(const char *kernel, int pass);

/* Whether f is such a pass-only family (the CUDA backend has no kernel
 * for it: the CPU measures it). */
int fam_cpu_only_pass(const struct family *f);

/* The attention families (verify/fam_attn.c: multi_token_attention,
 * sparse_multi_token_attention, fused_neighborhood_attention) and
 * mixture-of-experts (verify/fam_moe.c: fused_moe), or NULL; fam_find
 * asks them after its own table. */
const struct family *fam_attn_find(const char *kernel);
const struct family *fam_moe_find(const char *kernel);

/* The matrix FLOPs of the full pass (forward + backward) of shape s of
 * family f where the family is bound by them (attention, MoE), else 0:
 * fam_fit also halves a shape while they exceed REF_CPU_MAX_FLOPS.
 * (fam_cpu.c: fam_attn_flops answers for the attention families,
 * fam_moe_flops for fused_moe, each 0 for any other.) */
double fam_flops(const struct family *f, const struct fam_shape *s);
double fam_attn_flops(const struct family *f, const struct fam_shape *s);
double fam_moe_flops(const struct family *f, const struct fam_shape *s);
/* The FLOPs per second of those families' fp32 matrix product on the
 * CPU, measured now (fam_attn.c); 0 when it cannot be measured. */
double fam_x_matmul_rate(void);

/* The first of names (NULL-terminated) in p as a positive integer: 1,
 * 0 when absent, -1 when present but not one (fam_attn.c). */
int fam_x_dim(struct json_object *p, const char *const *names, int64_t *v);
/* The same, dflt when absent (dflt 0: required); -1 with err naming
 * names[0] when missing or not a positive integer. */
int fam_x_get(struct json_object *p, const char *const *names, int64_t dflt,
	int64_t *v, char *err, size_t errlen);

/* Elements of slot i in all (rows × len for row slots). */
int64_t fam_slot_elems(const struct fam_shape *s, int i);

/* Bytes of one element of slot i's kind in dtype dt. */
size_t fam_slot_esize(const struct fam_shape *s, int i, enum api_dtype dt);

/* Fills the inputs of a job's tensors on the host: every IN slot gets
 * standard-normal values (targets: uniform indices), then the family's
 * prepare. host[i] has fam_slot_elems × fam_slot_esize bytes. */
void fam_fill_inputs(const struct family *f, const struct fam_shape *s,
	void *const *host, enum api_dtype dt, uint64_t *rng);

struct ref_result;

/* Checks the outputs in host (what a backend computed for pass p on the
 * inputs also in host) against float64: sampled rows' outputs, every
 * parameter gradient in full, and that no output element is the NaN
 * poison. Updates r->max_rel_error, r->checked_outputs, r->complete.
 * Returns 0 or KI_ENOMEM. */
int fam_check(const struct family *f, const struct fam_shape *s,
	void *const *host, enum api_dtype dt, int pass, uint64_t *rng,
	struct ref_result *r);

/* fam_check for a repetition that added to the gradients the script
 * accumulates: prior[i] (NULL for the others) holds slot i as the earlier
 * repetition left it, in host's layout, and the expected value is that
 * plus float64's. prior NULL: fam_check. */
int fam_check_prior(const struct family *f, const struct fam_shape *s,
	void *const *host, void *const *prior, enum api_dtype dt, int pass,
	uint64_t *rng, struct ref_result *r);

#ifdef __cplusplus
}
#endif

#endif
