/* physics/gpu.c — datasheet peaks of the GPUs runs are measured on, and the
 * matchers from environment documents and device names to them. */
#include "physics/gpu.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)
#define T12 1e12
#define G9 1e9

/*
 * Sources, one per figure (dense rates, i.e. the datasheets' "with
 * sparsity" figures halved where only those are printed):
 *  [A100-DS]  NVIDIA A100 Tensor Core GPU datasheet (A100 40GB/80GB, PCIe
 *             and SXM columns).
 *  [A100-WP]  NVIDIA A100 Tensor Core GPU Architecture whitepaper
 *             (108 SMs, 40 MB L2).
 *  [H100-DS]  NVIDIA H100 Tensor Core GPU datasheet (SXM and PCIe columns).
 *  [H100-WP]  NVIDIA H100 Tensor Core GPU Architecture whitepaper
 *             (132 SMs SXM5, 114 SMs PCIe, 50 MB L2).
 *  [H200-DS]  NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column).
 *  [B200-DS]  NVIDIA HGX B200 / DGX B200 datasheets (eight-GPU totals:
 *             FP32 600 TFLOPS, TF32 18 PFLOPS and FP16/BF16 36 PFLOPS with
 *             sparsity, 1,440 GB HBM3e at 64 TB/s; divided by eight).
 *  [GA102-WP] NVIDIA Ampere GA102 GPU Architecture whitepaper, GeForce RTX
 *             3090 column (82 SMs, 6 MB L2).
 *  [ADA-WP]   NVIDIA Ada GPU Architecture whitepaper, GeForce RTX 4090 and
 *             L4 (AD104) columns (128 SMs / 72 MB L2; 58 SMs / 48 MB L2).
 *  [L4-DS]    NVIDIA L4 Tensor Core GPU datasheet.
 *  [L40S-DS]  NVIDIA L40S GPU datasheet (142 SMs, 96 MB L2 from [ADA-WP]'s
 *             AD102 figures as configured on L40S).
 *  [MI300-DS] AMD Instinct MI300X accelerator data sheet (304 CUs, 256 MB
 *             AMD Infinity Cache as the last-level cache).
 *  [QUERY]    cudaGetDeviceProperties on the part (l2CacheSize,
 *             multiProcessorCount), where the datasheet is silent.
 */
static const api_gpu gpu_table[] = {
	{
		.id = "a100-sxm4-40gb", .name = "NVIDIA A100 SXM4 40GB",
		.vendor = "nvidia", .arch = "sm_80",
		.dram_bw = 1555 * G9,       /* [A100-DS] 1,555 GB/s */
		.fp32 = 19.5 * T12,         /* [A100-DS] */
		.tf32 = 156 * T12,          /* [A100-DS] 156 (312 sparse) */
		.bf16 = 312 * T12,          /* [A100-DS] 312 (624 sparse) */
		.fp16 = 312 * T12,          /* [A100-DS] */
		.l2_bytes = (uint64_t)(40 * MIB),  /* [A100-WP] */
		.mem_bytes = (uint64_t)(40 * GIB), /* [A100-DS] */
		.sm_count = 108,            /* [A100-WP] */
	},
	{
		.id = "a100-sxm4-80gb", .name = "NVIDIA A100 SXM4 80GB",
		.vendor = "nvidia", .arch = "sm_80",
		.dram_bw = 2039 * G9,       /* [A100-DS] 2,039 GB/s */
		.fp32 = 19.5 * T12,         /* [A100-DS] */
		.tf32 = 156 * T12,          /* [A100-DS] */
		.bf16 = 312 * T12,          /* [A100-DS] */
		.fp16 = 312 * T12,          /* [A100-DS] */
		.l2_bytes = (uint64_t)(40 * MIB),  /* [A100-WP] */
		.mem_bytes = (uint64_t)(80 * GIB), /* [A100-DS] */
		.sm_count = 108,            /* [A100-WP] */
	},
	{
		.id = "a100-pcie-40gb", .name = "NVIDIA A100 PCIe 40GB",
		.vendor = "nvidia", .arch = "sm_80",
		.dram_bw = 1555 * G9,       /* [A100-DS] 1,555 GB/s */
		.fp32 = 19.5 * T12,         /* [A100-DS] */
		.tf32 = 156 * T12,          /* [A100-DS] */
		.bf16 = 312 * T12,          /* [A100-DS] */
		.fp16 = 312 * T12,          /* [A100-DS] */
		.l2_bytes = (uint64_t)(40 * MIB),  /* [A100-WP] */
		.mem_bytes = (uint64_t)(40 * GIB), /* [A100-DS] */
		.sm_count = 108,            /* [A100-WP] */
	},
	{
		.id = "a100-pcie-80gb", .name = "NVIDIA A100 PCIe 80GB",
		.vendor = "nvidia", .arch = "sm_80",
		.dram_bw = 1935 * G9,       /* [A100-DS] 1,935 GB/s */
		.fp32 = 19.5 * T12,         /* [A100-DS] */
		.tf32 = 156 * T12,          /* [A100-DS] */
		.bf16 = 312 * T12,          /* [A100-DS] */
		.fp16 = 312 * T12,          /* [A100-DS] */
		.l2_bytes = (uint64_t)(40 * MIB),  /* [A100-WP] */
		.mem_bytes = (uint64_t)(80 * GIB), /* [A100-DS] */
		.sm_count = 108,            /* [A100-WP] */
	},
	{
		.id = "h100-sxm5-80gb", .name = "NVIDIA H100 SXM5 80GB",
		.vendor = "nvidia", .arch = "sm_90",
		.dram_bw = 3.35 * T12,      /* [H100-DS] 3.35 TB/s */
		.fp32 = 67 * T12,           /* [H100-DS] */
		.tf32 = 494.7 * T12,        /* [H100-DS] 989 with sparsity */
		.bf16 = 989.4 * T12,        /* [H100-DS] 1,979 with sparsity */
		.fp16 = 989.4 * T12,        /* [H100-DS] 1,979 with sparsity */
		.l2_bytes = (uint64_t)(50 * MIB),  /* [H100-WP] */
		.mem_bytes = (uint64_t)(80 * GIB), /* [H100-DS] */
		.sm_count = 132,            /* [H100-WP] */
	},
	{
		.id = "h100-pcie-80gb", .name = "NVIDIA H100 PCIe 80GB",
		.vendor = "nvidia", .arch = "sm_90",
		.dram_bw = 2.0 * T12,       /* [H100-DS] 2 TB/s */
		.fp32 = 51 * T12,           /* [H100-DS] */
		.tf32 = 378 * T12,          /* [H100-DS] 756 with sparsity */
		.bf16 = 756.5 * T12,        /* [H100-DS] 1,513 with sparsity */
		.fp16 = 756.5 * T12,        /* [H100-DS] 1,513 with sparsity */
		.l2_bytes = (uint64_t)(50 * MIB),  /* [H100-WP] */
		.mem_bytes = (uint64_t)(80 * GIB), /* [H100-DS] */
		.sm_count = 114,            /* [H100-WP] */
	},
	{
		.id = "h200-sxm-141gb", .name = "NVIDIA H200 SXM 141GB",
		.vendor = "nvidia", .arch = "sm_90",
		.dram_bw = 4.8 * T12,       /* [H200-DS] 4.8 TB/s */
		.fp32 = 67 * T12,           /* [H200-DS] */
		.tf32 = 494.7 * T12,        /* [H200-DS] 989 with sparsity */
		.bf16 = 989.4 * T12,        /* [H200-DS] 1,979 with sparsity */
		.fp16 = 989.4 * T12,        /* [H200-DS] 1,979 with sparsity */
		.l2_bytes = (uint64_t)(60 * MIB),   /* [QUERY] l2CacheSize */
		.mem_bytes = (uint64_t)(141 * GIB), /* [H200-DS] */
		.sm_count = 132,            /* [QUERY] multiProcessorCount */
	},
	{
		.id = "b200-180gb", .name = "NVIDIA B200 180GB",
		.vendor = "nvidia", .arch = "sm_100",
		.dram_bw = 8.0 * T12,       /* [B200-DS] 64 TB/s / 8 */
		.fp32 = 75 * T12,           /* [B200-DS] 600 TFLOPS / 8 */
		.tf32 = 1125 * T12,         /* [B200-DS] 18 PFLOPS sparse / 16 */
		.bf16 = 2250 * T12,         /* [B200-DS] 36 PFLOPS sparse / 16 */
		.fp16 = 2250 * T12,         /* [B200-DS] 36 PFLOPS sparse / 16 */
		.l2_bytes = (uint64_t)(126 * MIB),  /* [QUERY] l2CacheSize */
		.mem_bytes = (uint64_t)(180 * GIB), /* [B200-DS] 1,440 GB / 8 */
		.sm_count = 148,            /* [QUERY] multiProcessorCount */
	},
	{
		.id = "rtx-3090", .name = "NVIDIA GeForce RTX 3090",
		.vendor = "nvidia", .arch = "sm_86",
		.dram_bw = 936 * G9,        /* [GA102-WP] 936 GB/s */
		.fp32 = 35.6 * T12,         /* [GA102-WP] */
		.tf32 = 35.6 * T12,         /* [GA102-WP] 35.6/71 */
		.bf16 = 71 * T12,           /* [GA102-WP] FP32 accumulate, 71/142 */
		.fp16 = 142 * T12,          /* [GA102-WP] FP16 accumulate, 142/284 */
		.l2_bytes = (uint64_t)(6 * MIB),   /* [GA102-WP] 6144 KB */
		.mem_bytes = (uint64_t)(24 * GIB), /* [GA102-WP] */
		.sm_count = 82,             /* [GA102-WP] */
	},
	{
		.id = "rtx-4090", .name = "NVIDIA GeForce RTX 4090",
		.vendor = "nvidia", .arch = "sm_89",
		.dram_bw = 1008 * G9,       /* [ADA-WP] 1,008 GB/s */
		.fp32 = 82.6 * T12,         /* [ADA-WP] */
		.tf32 = 82.6 * T12,         /* [ADA-WP] 82.6/165.2 */
		.bf16 = 165.2 * T12,        /* [ADA-WP] FP32 accumulate */
		.fp16 = 330.3 * T12,        /* [ADA-WP] FP16 accumulate */
		.l2_bytes = (uint64_t)(72 * MIB),  /* [ADA-WP] 73,728 KB */
		.mem_bytes = (uint64_t)(24 * GIB), /* [ADA-WP] */
		.sm_count = 128,            /* [ADA-WP] */
	},
	{
		.id = "l4", .name = "NVIDIA L4",
		.vendor = "nvidia", .arch = "sm_89",
		.dram_bw = 300 * G9,        /* [L4-DS] 300 GB/s */
		.fp32 = 30.3 * T12,         /* [L4-DS] */
		.tf32 = 60 * T12,           /* [L4-DS] 120 with sparsity */
		.bf16 = 121 * T12,          /* [L4-DS] 242 with sparsity */
		.fp16 = 121 * T12,          /* [L4-DS] 242 with sparsity */
		.l2_bytes = (uint64_t)(48 * MIB),  /* [ADA-WP] AD104 */
		.mem_bytes = (uint64_t)(24 * GIB), /* [L4-DS] */
		.sm_count = 58,             /* [ADA-WP] */
	},
	{
		.id = "l40s", .name = "NVIDIA L40S",
		.vendor = "nvidia", .arch = "sm_89",
		.dram_bw = 864 * G9,        /* [L40S-DS] 864 GB/s */
		.fp32 = 91.6 * T12,         /* [L40S-DS] */
		.tf32 = 183 * T12,          /* [L40S-DS] 366 with sparsity */
		.bf16 = 362.05 * T12,       /* [L40S-DS] 733 with sparsity */
		.fp16 = 362.05 * T12,       /* [L40S-DS] 733 with sparsity */
		.l2_bytes = (uint64_t)(96 * MIB),  /* [L40S-DS]/[ADA-WP] */
		.mem_bytes = (uint64_t)(48 * GIB), /* [L40S-DS] */
		.sm_count = 142,            /* [L40S-DS] */
	},
	{
		.id = "mi300x", .name = "AMD Instinct MI300X",
		.vendor = "amd", .arch = "gfx942",
		.dram_bw = 5.3 * T12,       /* [MI300-DS] 5.3 TB/s */
		.fp32 = 163.4 * T12,        /* [MI300-DS] FP32 vector */
		.tf32 = 653.7 * T12,        /* [MI300-DS] */
		.bf16 = 1307.4 * T12,       /* [MI300-DS] */
		.fp16 = 1307.4 * T12,       /* [MI300-DS] */
		.l2_bytes = (uint64_t)(256 * MIB),  /* [MI300-DS] Infinity Cache */
		.mem_bytes = (uint64_t)(192 * GIB), /* [MI300-DS] */
		.sm_count = 304,            /* [MI300-DS] CUs */
	},
};

#define GPU_N (sizeof(gpu_table) / sizeof(gpu_table[0]))

enum api_dtype
api_dtype_parse(const char *s)
{
	static const struct {
		const char *name;
		enum api_dtype dt;
	} names[] = {
		{ "float32", API_DT_F32 }, { "fp32", API_DT_F32 },
		{ "float", API_DT_F32 }, { "f32", API_DT_F32 },
		{ "bfloat16", API_DT_BF16 }, { "bf16", API_DT_BF16 },
		{ "float16", API_DT_F16 }, { "fp16", API_DT_F16 },
		{ "half", API_DT_F16 }, { "f16", API_DT_F16 },
		{ "float64", API_DT_F64 }, { "fp64", API_DT_F64 },
		{ "double", API_DT_F64 },
	};
	size_t i;

	if (s == NULL)
		return API_DT_UNKNOWN;
	if (strncasecmp(s, "torch.", 6) == 0)
		s += 6;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(s, names[i].name) == 0)
			return names[i].dt;
	return API_DT_UNKNOWN;
}

size_t
api_dtype_size(enum api_dtype dt)
{
	switch (dt) {
	case API_DT_F32: return 4;
	case API_DT_BF16: return 2;
	case API_DT_F16: return 2;
	case API_DT_F64: return 8;
	default: return 0;
	}
}

const char *
api_dtype_name(enum api_dtype dt)
{
	switch (dt) {
	case API_DT_F32: return "float32";
	case API_DT_BF16: return "bfloat16";
	case API_DT_F16: return "float16";
	case API_DT_F64: return "float64";
	default: return "unknown";
	}
}

const api_gpu *
api_gpu_table(size_t *n)
{
	if (n != NULL)
		*n = GPU_N;
	return gpu_table;
}

const api_gpu *
api_gpu_by_id(const char *id)
{
	size_t i;

	if (id == NULL)
		return NULL;
	for (i = 0; i < GPU_N; i++)
		if (strcmp(gpu_table[i].id, id) == 0)
			return &gpu_table[i];
	return NULL;
}

#define MAX_TOKENS 24
#define TOKEN_LEN 24

/* The lowercase alphanumeric tokens of a text, at most MAX_TOKENS. */
struct tokens {
	char t[MAX_TOKENS][TOKEN_LEN];
	size_t n;
};

static void
tokenize(const char *s, struct tokens *tk)
{
	size_t len = 0;

	tk->n = 0;
	for (;; s++) {
		int c = (unsigned char)*s;

		if (c != '\0' && isalnum(c)) {
			if (len + 1 < TOKEN_LEN && tk->n < MAX_TOKENS)
				tk->t[tk->n][len++] = (char)tolower(c);
			continue;
		}
		if (len > 0 && tk->n < MAX_TOKENS) {
			tk->t[tk->n][len] = '\0';
			tk->n++;
		}
		len = 0;
		if (c == '\0')
			break;
	}
}

static int
has(const struct tokens *tk, const char *w)
{
	size_t i;

	for (i = 0; i < tk->n; i++)
		if (strcmp(tk->t[i], w) == 0)
			return 1;
	return 0;
}

/* True when the text states a memory size of gb GB, as "40gb" or "40 gb". */
static int
has_size(const struct tokens *tk, const char *gb)
{
	char both[TOKEN_LEN];
	size_t i;

	if (snprintf(both, sizeof(both), "%sgb", gb) >= (int)sizeof(both))
		return 0;
	for (i = 0; i < tk->n; i++) {
		if (strcmp(tk->t[i], both) == 0)
			return 1;
		if (strcmp(tk->t[i], gb) == 0 && i + 1 < tk->n &&
		    strcmp(tk->t[i + 1], "gb") == 0)
			return 1;
	}
	return 0;
}

/* A product token may also be glued to its brand ("rtx4090"). */
static int
has_product(const struct tokens *tk, const char *w)
{
	size_t i, wl = strlen(w);

	for (i = 0; i < tk->n; i++) {
		size_t tl = strlen(tk->t[i]);

		if (strcmp(tk->t[i], w) == 0)
			return 1;
		if (tl > wl && strcmp(tk->t[i] + tl - wl, w) == 0 &&
		    (strncmp(tk->t[i], "rtx", 3) == 0 ||
		    strncmp(tk->t[i], "nvidia", 6) == 0))
			return 1;
	}
	return 0;
}

static const api_gpu *
match_tokens(const struct tokens *tk)
{
	if (has_product(tk, "mi300x"))
		return api_gpu_by_id("mi300x");
	if (has_product(tk, "b200"))
		return api_gpu_by_id("b200-180gb");
	if (has_product(tk, "h200"))
		return has(tk, "nvl") ? NULL : api_gpu_by_id("h200-sxm-141gb");
	if (has_product(tk, "h100")) {
		/* H100 NVL has more bandwidth than the SXM5 part: unknown
		 * rather than a floor that is too high. */
		if (has(tk, "nvl"))
			return NULL;
		if (has(tk, "pcie"))
			return api_gpu_by_id("h100-pcie-80gb");
		return api_gpu_by_id("h100-sxm5-80gb");
	}
	if (has_product(tk, "a100")) {
		int forty = has_size(tk, "40");

		if (has(tk, "pcie"))
			return api_gpu_by_id(forty ? "a100-pcie-40gb" :
			    "a100-pcie-80gb");
		return api_gpu_by_id(forty ? "a100-sxm4-40gb" :
		    "a100-sxm4-80gb");
	}
	if (has_product(tk, "3090"))
		return has(tk, "ti") ? NULL : api_gpu_by_id("rtx-3090");
	if (has_product(tk, "4090"))
		return has(tk, "ti") ? NULL : api_gpu_by_id("rtx-4090");
	if (has(tk, "l40s"))
		return api_gpu_by_id("l40s");
	if (has(tk, "l4"))
		return api_gpu_by_id("l4");
	return NULL;
}

const api_gpu *
api_gpu_match_name(const char *s)
{
	struct tokens tk;

	if (s == NULL)
		return NULL;
	tokenize(s, &tk);
	return match_tokens(&tk);
}

/* Returns the string member key of o, or NULL (borrowed from o). */
static const char *
member_string(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

const api_gpu *
api_gpu_match_hardware(struct json_object *hardware)
{
	const char *vendor, *product, *form;
	const api_gpu *g;
	char text[256];

	if (hardware == NULL || !json_object_is_type(hardware,
	    json_type_object))
		return NULL;
	vendor = member_string(hardware, "vendor");
	product = member_string(hardware, "product");
	form = member_string(hardware, "formFactor");
	if (product == NULL)
		return NULL;
	if (snprintf(text, sizeof(text), "%s %s", product,
	    form != NULL ? form : "") >= (int)sizeof(text))
		return NULL;
	g = api_gpu_match_name(text);
	if (g == NULL)
		return NULL;
	if (vendor != NULL && vendor[0] != '\0') {
		struct tokens tk;

		tokenize(vendor, &tk);
		if (tk.n > 0 && !has(&tk, g->vendor) &&
		    !(strcmp(g->vendor, "amd") == 0 && has(&tk, "advanced")))
			return NULL;
	}
	return g;
}

double
api_gpu_matrix_rate(const api_gpu *g, enum api_dtype dt)
{
	switch (dt) {
	case API_DT_F32: return g->tf32 > g->fp32 ? g->tf32 : g->fp32;
	case API_DT_BF16: return g->bf16;
	case API_DT_F16: return g->fp16;
	default: return g->fp32;
	}
}
