/* harness/liger_tables.c — what the Liger importer knows: its columns, the
 * parameter-name, kernel, dtype, GPU and protocol tables, and the helpers
 * that format numbers and names. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jcs.h"
#include "harness/liger_int.h"

/* ====================================================================== */
/* Columns                                                                 */

const char *const lg_column_names[LIGER_NCOLUMNS] = {
	"kernel_name", "kernel_provider", "kernel_operation_mode",
	"metric_name", "metric_unit", "x_name", "x_label", "x_value",
	"y_value_50", "y_value_20", "y_value_80",
	"extra_benchmark_config_str", "gpu_name", "timestamp", "liger_version",
};

const char *
liger_column_name(enum liger_column c)
{
	if ((int)c < 0 || c >= LIGER_NCOLUMNS)
		return "?";
	return lg_column_names[c];
}

/* ====================================================================== */
/* Tables                                                                  */

/*
 * Liger key → canonical workload parameter name. Kernel rows come before
 * the generic (NULL) rows and win over them. A key with no row keeps its
 * Liger spelling. Keys whose canonical name is their own spelling are
 * listed too, so that the table names every shape parameter the cost model
 * may read.
 */
static const liger_param_map param_table[] = {
	/* fused_moe: x of shape (T, H), top-K routing over E experts. */
	{ "fused_moe", "T", "tokens" },
	{ "fused_moe", "K", "topk" },
	/* multi_token_attention: a conv over the attention scores. */
	{ "multi_token_attention", "K", "kernel_size" },
	{ "sparse_multi_token_attention", "K", "kernel_size" },
	/* group_norm: x of shape (M, C, H), M the batch. */
	{ "group_norm", "M", "batch" },
	/* sparsemax: x of shape (B, T, V), V a feature size, not a vocabulary. */
	{ "sparsemax", "V", "hidden" },

	{ NULL, "B", "batch" },
	{ NULL, "bsz", "batch" },
	{ NULL, "batch_size", "batch" },
	{ NULL, "T", "seq" },
	{ NULL, "S", "seq" },
	{ NULL, "L", "seq" },
	{ NULL, "seq_len", "seq" },
	{ NULL, "BT", "tokens" },
	{ NULL, "H", "hidden" },
	{ NULL, "N", "hidden" },
	{ NULL, "D", "hidden" },
	{ NULL, "hidden_size", "hidden" },
	{ NULL, "V", "vocab" },
	{ NULL, "vocab_size", "vocab" },
	{ NULL, "M", "rows" },
	{ NULL, "intermediate_size", "intermediate" },
	{ NULL, "intermediate_dim", "intermediate" },
	{ NULL, "ffn_local", "intermediate" },
	{ NULL, "num_heads", "heads" },
	{ NULL, "num_q_heads", "q_heads" },
	{ NULL, "num_kv_heads", "kv_heads" },
	{ NULL, "E", "experts" },
	{ NULL, "num_experts", "experts" },
	{ NULL, "topk", "topk" },
	{ NULL, "top_k", "topk" },
	{ NULL, "C", "channels" },
	{ NULL, "num_channels", "channels" },
	{ NULL, "channels_per_group", "channels_per_group" },
	{ NULL, "kernel_size", "kernel_size" },
	{ NULL, "dilation", "dilation" },
	{ NULL, "groups", "groups" },
	{ NULL, "C_in", "in_channels" },
	{ NULL, "C_out", "out_channels" },
	{ NULL, "eps", "eps" },
};

const liger_param_map *
liger_param_table(size_t *n)
{
	*n = sizeof(param_table) / sizeof(param_table[0]);
	return param_table;
}

const char *
liger_canonical_param(const char *kernel, const char *key)
{
	size_t i, n = sizeof(param_table) / sizeof(param_table[0]);

	for (i = 0; i < n; i++)
		if (param_table[i].kernel != NULL && kernel != NULL &&
		    strcmp(param_table[i].kernel, kernel) == 0 &&
		    strcmp(param_table[i].liger, key) == 0)
			return param_table[i].canonical;
	for (i = 0; i < n; i++)
		if (param_table[i].kernel == NULL &&
		    strcmp(param_table[i].liger, key) == 0)
			return param_table[i].canonical;
	return key;
}


static const kernel_info kernel_table[] = {
	{ "cross_entropy", "Cross-entropy loss", "torch.float32", 0 },
	{ "distill_cosine_loss", "Distillation cosine loss", NULL, 0 },
	{ "distill_jsd_loss", "Distillation JSD loss", NULL, 0 },
	{ "embedding", "Embedding lookup", NULL, 0 },
	{ "fused_add_rms_norm", "Fused residual add + RMSNorm", NULL, 0 },
	{ "fused_linear_cpo_loss", "Fused linear CPO loss", NULL, 0 },
	{ "fused_linear_cross_entropy", "Fused linear cross-entropy", NULL, 0 },
	{ "fused_linear_grpo_loss_sequence",
	    "Fused linear GRPO loss (sequence level)", NULL, 0 },
	{ "fused_linear_grpo_loss_token",
	    "Fused linear GRPO loss (token level)", NULL, 0 },
	{ "fused_linear_jsd", "Fused linear JSD", NULL, 0 },
	{ "fused_linear_orpo_loss", "Fused linear ORPO loss", NULL, 0 },
	{ "fused_linear_simpo_loss", "Fused linear SimPO loss", NULL, 0 },
	{ "fused_moe", "Fused mixture of experts", NULL, 0 },
	{ "fused_neighborhood_attention", "Fused neighborhood attention", NULL,
	    0 },
	{ "geglu", "GEGLU MLP", NULL, 0 },
	{ "group_norm", "GroupNorm", NULL, 0 },
	{ "jsd", "Jensen-Shannon divergence", "torch.float32", 0 },
	{ "kl_div", "KL divergence", "torch.float32", 0 },
	{ "kto_loss", "KTO loss", NULL, 0 },
	{ "layer_norm", "LayerNorm", NULL, 0 },
	{ "llama4_rope", "Llama 4 rotary position embedding", NULL, 0 },
	{ "megatron_cross_entropy", "Megatron cross-entropy",
	    "torch.bfloat16", 1 },
	{ "megatron_cross_entropy_tp2",
	    "Megatron cross-entropy (tensor parallel 2)", "torch.bfloat16", 1 },
	{ "megatron_rms_norm", "Megatron RMSNorm", "torch.bfloat16", 1 },
	{ "megatron_swiglu", "Megatron SwiGLU", "torch.bfloat16", 1 },
	{ "multi_token_attention", "Multi-token attention", NULL, 0 },
	{ "relu_squared", "Squared ReLU", NULL, 0 },
	{ "rms_norm", "RMSNorm", NULL, 0 },
	{ "rope", "Rotary position embedding", NULL, 0 },
	{ "softmax", "Softmax", NULL, 0 },
	{ "sparse_multi_token_attention", "Sparse multi-token attention", NULL,
	    0 },
	{ "sparsemax", "Sparsemax", NULL, 0 },
	{ "swiglu", "SwiGLU MLP", NULL, 0 },
	{ "tiled_geglu", "Tiled GEGLU MLP", NULL, 0 },
	{ "tiled_swiglu", "Tiled SwiGLU MLP", NULL, 0 },
	{ "tvd", "Total variation distance", "torch.float32", 0 },
};

const kernel_info *
lg_kernel_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(kernel_table) / sizeof(kernel_table[0]); i++)
		if (strcmp(kernel_table[i].name, name) == 0)
			return &kernel_table[i];
	return NULL;
}


static const dtype_info dtype_table[] = {
	{ "torch.float32", "float32", "fp32" },
	{ "torch.float", "float32", "fp32" },
	{ "torch.bfloat16", "bfloat16", "bf16" },
	{ "torch.float16", "float16", "fp16" },
	{ "torch.half", "float16", "fp16" },
	{ "torch.float64", "float64", "fp64" },
	{ "torch.double", "float64", "fp64" },
	{ "torch.float8_e4m3fn", "float8_e4m3fn", "fp8e4m3" },
	{ "torch.float8_e5m2", "float8_e5m2", "fp8e5m2" },
};

const dtype_info *
lg_dtype_by_torch(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(dtype_table) / sizeof(dtype_table[0]); i++)
		if (strcmp(dtype_table[i].torch, s) == 0)
			return &dtype_table[i];
	return NULL;
}

/*
 * The GPUs of the Liger CSV. "NVIDIA H100 80GB HBM3" is the SXM5 board (the
 * PCIe card reports itself as "NVIDIA H100 PCIe"); the B200 is the 180 GB
 * HGX/DGX part; the GeForce cards are 24 GB PCIe boards.
 */
static const liger_gpu gpu_table[] = {
	{ "NVIDIA A100-SXM4-80GB", "nvidia-a100-sxm4-80gb", "NVIDIA A100",
	    "SXM4-80GB", "sm_80", "A100-SXM4-80GB", "nvidia" },
	{ "NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3", "NVIDIA H100",
	    "SXM5-80GB", "sm_90", "H100 80GB HBM3", "nvidia" },
	{ "NVIDIA H100 PCIe", "nvidia-h100-pcie", "NVIDIA H100",
	    "PCIe-80GB", "sm_90", "H100 PCIe", "nvidia" },
	{ "NVIDIA GeForce RTX 3090", "nvidia-geforce-rtx-3090",
	    "NVIDIA GeForce RTX 3090", "PCIe-24GB", "sm_86",
	    "GeForce RTX 3090", "nvidia" },
	{ "NVIDIA GeForce RTX 4090", "nvidia-geforce-rtx-4090",
	    "NVIDIA GeForce RTX 4090", "PCIe-24GB", "sm_89",
	    "GeForce RTX 4090", "nvidia" },
	{ "NVIDIA B200", "nvidia-b200", "NVIDIA B200", "SXM-180GB", "sm_100",
	    "B200", "nvidia" },
};

const liger_gpu *
liger_gpu_table(size_t *n)
{
	*n = sizeof(gpu_table) / sizeof(gpu_table[0]);
	return gpu_table;
}

const liger_gpu *
liger_gpu_by_name(const char *gpu_name)
{
	size_t i;

	for (i = 0; i < sizeof(gpu_table) / sizeof(gpu_table[0]); i++)
		if (strcmp(gpu_table[i].gpu_name, gpu_name) == 0)
			return &gpu_table[i];
	return NULL;
}

const liger_gpu *
liger_gpu_by_slug(const char *slug)
{
	size_t i;

	for (i = 0; i < sizeof(gpu_table) / sizeof(gpu_table[0]); i++)
		if (strcmp(gpu_table[i].slug, slug) == 0)
			return &gpu_table[i];
	return NULL;
}

/* ====================================================================== */
/* Protocols                                                               */


#define NOTES_TAIL " The upstream CSV records no CUDA, driver, or torch " \
	"version; the Liger release rides each run's labels. Comparable " \
	"only within one kernel, workload, "
#define DO_BENCH " via triton.testing.do_bench with quantiles 0.5/0.2/0.8 " \
	"(median with p20/p80 spread)."
#define MAX_MEM "Measured: the peak of torch.cuda.max_memory_allocated " \
	"(after reset_peak_memory_stats) in each of 10 repetitions, "
#define MAX_MEM_Q ", quantiles 0.5/0.2/0.8 of the peaks (median with " \
	"p20/p80 spread); Liger's MB are 2^20 bytes, stored here in bytes."


static const proto_info proto_table[] = {
	{ PROTO_SPEED, "full", "liger-bench-do-bench-full",
	    "Liger benchmark harness · full pass",
	    "Timed: the forward pass plus the backward pass," DO_BENCH
	    NOTES_TAIL "timed pass, and GPU." },
	{ PROTO_SPEED, "forward", "liger-bench-do-bench-forward",
	    "Liger benchmark harness · forward pass",
	    "Timed: the forward pass alone," DO_BENCH NOTES_TAIL
	    "timed pass, and GPU." },
	{ PROTO_SPEED, "backward", "liger-bench-do-bench-backward",
	    "Liger benchmark harness · backward pass",
	    "Timed: the backward pass alone (the forward pass runs once "
	    "before timing, outside the timed region, and its graph is kept "
	    "with retain_graph=True)," DO_BENCH NOTES_TAIL
	    "timed pass, and GPU." },
	{ PROTO_SPEED_REFWD, "backward",
	    "liger-bench-do-bench-backward-with-forward",
	    "Liger benchmark harness · backward pass (forward rerun)",
	    "Timed: a fresh forward pass plus the backward pass in every "
	    "repetition, reported by Liger as the backward pass (the "
	    "Megatron-wrapped kernels' backward consumes the saved buffers, "
	    "so their scripts rerun the forward; subtract the forward row "
	    "for the backward alone)," DO_BENCH NOTES_TAIL
	    "timed pass, and GPU." },
	{ PROTO_MEMORY, "full", "liger-bench-max-memory-full",
	    "Liger peak-memory harness · full pass",
	    MAX_MEM "each running the forward pass plus the backward pass"
	    MAX_MEM_Q NOTES_TAIL "measured pass, and GPU." },
	{ PROTO_MEMORY, "forward", "liger-bench-max-memory-forward",
	    "Liger peak-memory harness · forward pass",
	    MAX_MEM "each running the forward pass alone" MAX_MEM_Q
	    NOTES_TAIL "measured pass, and GPU." },
	{ PROTO_MEMORY, "backward", "liger-bench-max-memory-backward",
	    "Liger peak-memory harness · backward pass",
	    MAX_MEM "each running the backward pass alone, after a forward "
	    "pass outside the measured region whose tensors stay allocated "
	    "and count toward the peak" MAX_MEM_Q NOTES_TAIL
	    "measured pass, and GPU." },
	/* utils.run_speed_benchmark's "no-grad-forward": the forward pass
	 * under torch.no_grad(), so no graph is recorded. A forward pass,
	 * timed under its own protocol. */
	{ PROTO_SPEED, "no-grad-forward", "liger-bench-do-bench-no-grad-forward",
	    "Liger benchmark harness · forward pass without autograd",
	    "Timed: the forward pass alone under torch.no_grad() (no "
	    "autograd graph is recorded)," DO_BENCH NOTES_TAIL
	    "timed pass, and GPU." },
};

const char *
lg_dtype_schema_name(const char *torch_name)
{
	/* The schema's dtypes that the dtype table does not map. */
	static const char *const names[] = { "tfloat32", "int64", "int32",
		"int16", "int8", "uint8", "bool", "float8_e4m3fn", "float8_e5m2",
		"bfloat16", "float16", "float32", "float64" };
	size_t i;

	if (strncmp(torch_name, "torch.", 6) != 0)
		return NULL;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(torch_name + 6, names[i]) == 0)
			return names[i];
	return NULL;
}

const proto_info *
lg_proto_for(enum proto_kind kind, const char *pass)
{
	size_t i;

	for (i = 0; i < sizeof(proto_table) / sizeof(proto_table[0]); i++)
		if (proto_table[i].kind == kind &&
		    strcmp(proto_table[i].pass, pass) == 0)
			return &proto_table[i];
	return NULL;
}

/* ====================================================================== */
/* Formatting helpers                                                      */

int
liger_format_double(double v, char out[32])
{
	char tmp[40], digits[24];
	int prec, exp10, nd = 0, n;
	const char *p;
	char *end;
	size_t o = 0;

	if (!isfinite(v))
		return KI_EINVAL;
	if (v == 0) {
		n = snprintf(out, 32, "%s", signbit(v) ? "-0.0" : "0.0");
		return n;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	/* tmp is "-d.ddde±XX": collect the digits and the exponent. */
	p = tmp;
	if (*p == '-') {
		out[o++] = '-';
		p++;
	}
	for (; *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	exp10 = (int)strtol(p + 1, &end, 10);
	if (exp10 < -4 || exp10 >= 16) {
		out[o++] = digits[0];
		if (nd > 1) {
			out[o++] = '.';
			memcpy(out + o, digits + 1, (size_t)nd - 1);
			o += (size_t)nd - 1;
		}
		n = snprintf(out + o, 32 - o, "e%c%02d", exp10 < 0 ? '-' : '+',
		    exp10 < 0 ? -exp10 : exp10);
		return (int)o + n;
	}
	if (exp10 < 0) {
		int i;

		out[o++] = '0';
		out[o++] = '.';
		for (i = -1; i > exp10; i--)
			out[o++] = '0';
		memcpy(out + o, digits, (size_t)nd);
		o += (size_t)nd;
	} else {
		int i;

		for (i = 0; i <= exp10; i++)
			out[o++] = i < nd ? digits[i] : '0';
		out[o++] = '.';
		if (nd > exp10 + 1) {
			memcpy(out + o, digits + exp10 + 1,
			    (size_t)(nd - exp10 - 1));
			o += (size_t)(nd - exp10 - 1);
		} else {
			out[o++] = '0';
		}
	}
	out[o] = '\0';
	return (int)o;
}

/* Appends s as a DNS-1123 subdomain fragment: lower-cased, every character
 * other than [a-z0-9.-] turned into '-', and no '.' next to a '-', a '.'
 * or an end. */
void
lg_name_append(ki_buf *b, const char *s)
{
	size_t start = b->len, i;

	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)tolower((unsigned char)*s);

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '.' || ch == '-'))
			ch = '-';
		ki_buf_putc(b, (char)ch);
	}
	if (b->oom)
		return;
	for (i = start; i < b->len; i++) {
		if (b->data[i] != '.')
			continue;
		if (i == 0 || b->data[i - 1] == '-' || b->data[i - 1] == '.' ||
		    i + 1 == b->len || b->data[i + 1] == '-' ||
		    b->data[i + 1] == '.')
			b->data[i] = '-';
	}
}

/* Cuts b to at most max bytes and then drops trailing '-' and '.', so that
 * the name ends with a letter or digit. */
void
lg_name_cut(ki_buf *b, size_t max)
{
	if (b->oom)
		return;
	if (b->len > max)
		b->len = max;
	while (b->len > 0 && (b->data[b->len - 1] == '-' ||
	    b->data[b->len - 1] == '.'))
		b->len--;
	b->data[b->len] = '\0';
}

/* Appends "-" and 8 hex digits of SHA-256(s). */
int
lg_name_hash_suffix(ki_buf *b, const char *s, size_t n)
{
	uint8_t d[API_DIGEST_LEN];
	int rc = api_sha256(s, n, d);

	if (rc != KI_OK)
		return rc;
	return ki_buf_printf(b, "-%02x%02x%02x%02x", d[0], d[1], d[2], d[3]);
}

/* Fits a name into max bytes: kept whole when it fits, else cut to
 * max - 9 and given the hash suffix of its whole form. */
int
lg_name_fit(ki_buf *b, size_t max)
{
	ki_buf whole;
	int rc;

	if (b->oom)
		return KI_ENOMEM;
	if (b->len <= max) {
		lg_name_cut(b, max);
		return KI_OK;
	}
	ki_buf_init(&whole);
	ki_buf_append(&whole, b->data, b->len);
	if (whole.oom)
		return KI_ENOMEM;
	lg_name_cut(b, max - 9);
	rc = lg_name_hash_suffix(b, whole.data, whole.len);
	ki_buf_free(&whole);
	return rc;
}

int
lg_name_unique(ki_buf *b, const char *raw, size_t max)
{
	size_t start = b->len;

	lg_name_append(b, raw);
	if (b->oom)
		return KI_ENOMEM;
	if (b->len - start <= max && strcmp(b->data + start, raw) == 0)
		return KI_OK;
	b->len = start + (b->len - start > max - 9 ? max - 9 : b->len - start);
	b->data[b->len] = '\0';
	while (b->len > start && (b->data[b->len - 1] == '-' ||
	    b->data[b->len - 1] == '.'))
		b->data[--b->len] = '\0';
	return lg_name_hash_suffix(b, raw, strlen(raw));
}

/* A label value in Kubernetes syntax: at most 63 of [A-Za-z0-9._-],
 * beginning and ending with a letter or digit (or empty). */
int
lg_label_value_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0)
		return 1;
	if (n > 63 || !isalnum((unsigned char)s[0]) ||
	    !isalnum((unsigned char)s[n - 1]))
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

/* Parses a whole string as a finite double. Returns 0 or KI_EINVAL. */
int
lg_parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (*s == '\0' || isspace((unsigned char)*s))
		return KI_EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end != '\0' || !isfinite(v) || errno == ERANGE)
		return KI_EINVAL;
	*out = v;
	return KI_OK;
}

/* Parses a whole string as a decimal int64. Returns 0 or KI_EINVAL. */
int
lg_parse_int(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (*s == '\0' || isspace((unsigned char)*s) || *s == '+')
		return KI_EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0' || errno == ERANGE)
		return KI_EINVAL;
	*out = (int64_t)v;
	return KI_OK;
}

/* A json-c double that serializes as Python's repr() of it. */
struct json_object *
lg_new_double(double v)
{
	char s[32];

	if (liger_format_double(v, s) < 0)
		return NULL;
	return json_object_new_double_s(v, s);
}

/* Adds val under key to o, consuming val. Returns 0 or KI_ENOMEM (val is
 * freed then). */
int
lg_put(struct json_object *o, const char *key, struct json_object *val)
{
	if (val == NULL)
		return KI_ENOMEM;
	if (json_object_object_add(o, key, val) != 0) {
		json_object_put(val);
		return KI_ENOMEM;
	}
	return KI_OK;
}

int
lg_put_str(struct json_object *o, const char *key, const char *s)
{
	return lg_put(o, key, json_object_new_string(s));
}

/* Appends the text a parameter value takes in a workload slug. */
int
lg_slug_value(ki_buf *b, struct json_object *v)
{
	char d[32];

	switch (json_object_get_type(v)) {
	case json_type_int:
		return ki_buf_printf(b, "%lld",
		    (long long)json_object_get_int64(v));
	case json_type_double:
		if (liger_format_double(json_object_get_double(v), d) < 0)
			return KI_EINVAL;
		return ki_buf_puts(b, d);
	case json_type_boolean:
		return ki_buf_puts(b, json_object_get_boolean(v) ?
		    "true" : "false");
	case json_type_string:
		return lg_seg_escape(b, json_object_get_string(v));
	default:
		return KI_EINVAL;
	}
}

int
lg_seg_escape(ki_buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '%' || ch == '/' || ch < 0x20 || ch == 0x7f)
			ki_buf_printf(b, "%%%02X", ch);
		else
			ki_buf_putc(b, (char)ch);
	}
	return b->oom ? KI_ENOMEM : KI_OK;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

void
lg_seg_unescape(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++) {
		if (*s == '%' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
			*o++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

int
lg_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

