/* physics/gpu.h — the table of GPUs' datasheet peaks and the matchers from an
 * ExecutionEnvironment's hardware or a CUDA device name to one of its rows. */
#ifndef PHYSICS_GPU_H
#define PHYSICS_GPU_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types the cost model and the peak rates know. */
enum api_dtype {
	API_DT_UNKNOWN = 0,
	API_DT_F32,
	API_DT_BF16,
	API_DT_F16,
	API_DT_F64,
};

/* Parses a dtype spelling: "float32", "fp32", "float", "torch.float32",
 * "bfloat16", "bf16", "float16", "fp16", "half", "float64", "double"
 * (case-insensitive, an optional "torch." prefix). Returns API_DT_UNKNOWN
 * for NULL or anything else. */
enum api_dtype api_dtype_parse(const char *s);

/* Bytes per element of a dtype; 0 for API_DT_UNKNOWN. */
size_t api_dtype_size(enum api_dtype dt);

/* Canonical spelling ("float32", "bfloat16", "float16", "float64"), or
 * "unknown". Static storage. */
const char *api_dtype_name(enum api_dtype dt);

/* One GPU model. Rates are dense (no structured sparsity), in FLOP/s, at
 * the boost clock the datasheet quotes; bandwidth is the datasheet's peak
 * DRAM bandwidth in bytes/s (1 TB/s = 1e12 B/s). Every figure's source is
 * given beside it in gpu.c. */
typedef struct api_gpu {
	const char *id;       /* stable key, e.g. "h100-sxm5-80gb" */
	const char *name;     /* display name */
	const char *vendor;   /* "nvidia" or "amd" */
	const char *arch;     /* "sm_90", "gfx942" */
	double dram_bw;       /* bytes/s */
	double fp32;          /* FLOP/s, plain fp32 on the vector units */
	double tf32;          /* FLOP/s, fp32 inputs on the matrix units */
	double bf16;          /* FLOP/s, matrix units, fp32 accumulate */
	double fp16;          /* FLOP/s, matrix units, fastest accumulate */
	uint64_t l2_bytes;    /* last-level on-chip cache */
	uint64_t mem_bytes;   /* device memory (vendor "GB" are GiB here) */
	int sm_count;         /* SMs (NVIDIA) or CUs (AMD) */
} api_gpu;

/* The whole table; *n receives its length. Static storage. */
const api_gpu *api_gpu_table(size_t *n);

/* The row with this id, or NULL. */
const api_gpu *api_gpu_by_id(const char *id);

/* Matches free text naming a GPU — a CUDA device name such as
 * "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3",
 * "NVIDIA GeForce RTX 4090", or a product and form factor joined by a
 * space — case-insensitively, by its tokens. Where the text leaves the
 * variant open ("NVIDIA A100", "H100"), the fastest variant of that
 * product is returned, so that a floor computed from it stays a lower
 * bound. Returns NULL when no row matches. s is borrowed. */
const api_gpu *api_gpu_match_name(const char *s);

/* Matches an ExecutionEnvironment spec's hardware object
 * {"vendor", "product", "formFactor", "architecture"} (any may be absent;
 * hardware is borrowed). product and formFactor are joined and matched as
 * in api_gpu_match_name; a vendor that contradicts the row (e.g. "amd" for
 * an NVIDIA part) makes the match fail. Returns NULL when nothing
 * matches. */
const api_gpu *api_gpu_match_hardware(struct json_object *hardware);

/* The matrix-unit peak for work in this dtype: tf32 for float32 (an fp32
 * matrix product may legally run on the matrix units, as Triton's and
 * cuBLAS's TF32 modes do, so this is the lower bound), bf16, fp16; fp32
 * for float64 and unknown types (a conservative high rate is not needed
 * there: no Liger kernel is float64). */
double api_gpu_matrix_rate(const api_gpu *g, enum api_dtype dt);

#ifdef __cplusplus
}
#endif

#endif
