/* physics/costmodel.h — the physical floor of a workload: the fewest bytes
 * that must cross DRAM, the arithmetic it needs, and the memory its tensors
 * must occupy, for every kernel family of Liger-Kernel's benchmark data. */
#ifndef PHYSICS_COSTMODEL_H
#define PHYSICS_COSTMODEL_H

#include <json-c/json.h>
#include <stddef.h>

#include "physics/gpu.h"
#include "lib/ki.h"

/* What one pass of one workload must cost at least. */
typedef struct api_cost {
	double bytes;          /* fewest bytes that must cross DRAM */
	double flops;          /* matrix-product FLOPs (matrix-unit eligible) */
	double vector_flops;   /* other arithmetic, at the plain fp32 rate */
	double resident_bytes; /* bytes the tensors must occupy at once */
	double accumulated_bytes; /* of bytes: the earlier gradients read
	                        * where the script accumulates them (0 when
	                        * it resets every gradient of the pass) */
	enum api_dtype dtype;  /* the dtype used: given, or the kernel's */
	const char *model;     /* short text naming the formula; static */
	const char *missing;   /* on KI_EINVAL, what was missing; static */
} api_cost;

/* Computes the cost of kernel (a Liger kernel_name such as "embedding")
 * for pass "forward", "backward" or "full" in dtype ("float32",
 * "bfloat16", "torch.float16"…; NULL or "" takes the dtype Liger's script
 * uses for that kernel). parameters (borrowed) is the Workload spec's
 * parameters object: canonical names (batch, seq, tokens, hidden, vocab,
 * rows, intermediate, heads, q_heads, kv_heads, experts, topk, channels,
 * channels_per_group, kernel_size, dilation, groups, in_channels,
 * out_channels) or, as a fallback, Liger's own spellings (B, T, BT, H, D,
 * V, M, N, …); numbers as JSON numbers or numeric strings; null counts as
 * absent.
 * Returns 0 and fills *out; KI_ENOTFOUND for an unknown kernel;
 * KI_EINVAL for an unknown pass or dtype or a missing or non-positive
 * parameter, out->missing then naming it ("pass", "dtype", "vocab"…). */
int api_cost_estimate(const char *kernel, const char *pass,
	const char *dtype, struct json_object *parameters, api_cost *out);

/* floor = max(bytes / DRAM bandwidth, flops / matrix rate of dtype,
 * vector_flops / fp32 rate), in seconds. dtype NULL takes c->dtype.
 * Returns 0 when g is NULL. */
double api_cost_floor_seconds(const api_cost *c, const api_gpu *g,
	const char *dtype);

/* The dtype Liger's benchmark script uses for kernel when its config
 * names none ("float32" for cross_entropy…), or NULL for an unknown
 * kernel. Static storage. */
const char *api_cost_default_dtype(const char *kernel);

/* The kernel names the model knows, NULL-terminated; *n receives the
 * count. Static storage. */
const char *const *api_cost_kernels(size_t *n);

#endif
