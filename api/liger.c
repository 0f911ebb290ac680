/* api/liger.c — Liger-Kernel benchmark CSV rows turned into kernelindex bundles
 * (run, protocol, environment, workload, implementation), and back; holds
 * the Liger → canonical parameter-name table the cost model reads. */
#include "api/liger.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jcs.h"

#define API_VER "kernelindex.dev/v1alpha1"
#define JSON_OUT (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* ====================================================================== */
/* Columns                                                                 */

static const char *const column_names[LIGER_NCOLUMNS] = {
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
	return column_names[c];
}

/* ====================================================================== */
/* RFC 4180 CSV                                                            */

void
liger_record_init(liger_record *r)
{
	memset(r, 0, sizeof(*r));
	ki_buf_init(&r->store);
}

void
liger_record_free(liger_record *r)
{
	ki_buf_free(&r->store);
	liger_record_init(r);
}

void
liger_csv_init(liger_csv *c, const char *text, size_t len)
{
	c->text = text;
	c->len = len;
	c->pos = 0;
	c->line = 1;
}

/* Skips to the start of the next line after a malformed record. */
static void
csv_skip_line(liger_csv *c)
{
	while (c->pos < c->len && c->text[c->pos] != '\n')
		c->pos++;
	if (c->pos < c->len) {
		c->pos++;
		c->line++;
	}
}

/* Reads one record without skipping blank lines. Returns as
 * liger_csv_next(). */
static int
csv_read(liger_csv *c, liger_record *r, ki_buf *err)
{
	size_t off[LIGER_CSV_MAX_FIELDS];
	size_t start = c->pos, i;
	const char *t = c->text;
	int rc = KI_OK;

	ki_buf_reset(&r->store);
	if (r->store.oom)
		return KI_ENOMEM;
	r->nfields = 0;
	r->line = c->line;
	for (;;) {
		if (r->nfields == LIGER_CSV_MAX_FIELDS) {
			if (err != NULL)
				ki_buf_printf(err, "line %zu: more than %d fields",
				    r->line, LIGER_CSV_MAX_FIELDS);
			rc = KI_ELIMIT;
			goto bad;
		}
		off[r->nfields] = r->store.len;
		if (c->pos < c->len && t[c->pos] == '"') {
			size_t qline = c->line;

			c->pos++;
			for (;;) {
				if (c->pos >= c->len) {
					if (err != NULL)
						ki_buf_printf(err, "line %zu: a quoted "
						    "field is not closed before the end "
						    "of the input", qline);
					c->pos = c->len;
					return KI_EINVAL;
				}
				if (t[c->pos] == '"') {
					if (c->pos + 1 < c->len &&
					    t[c->pos + 1] == '"') {
						ki_buf_putc(&r->store, '"');
						c->pos += 2;
						continue;
					}
					c->pos++;
					break;
				}
				if (t[c->pos] == '\n')
					c->line++;
				ki_buf_putc(&r->store, t[c->pos]);
				c->pos++;
			}
			if (c->pos < c->len && t[c->pos] != ',' &&
			    t[c->pos] != '\n' && !(t[c->pos] == '\r' &&
			    c->pos + 1 < c->len && t[c->pos + 1] == '\n')) {
				if (err != NULL)
					ki_buf_printf(err, "line %zu: field %zu: "
					    "text after the closing quote",
					    c->line, r->nfields + 1);
				rc = KI_EINVAL;
				goto bad;
			}
		} else {
			size_t s = c->pos;

			while (c->pos < c->len && t[c->pos] != ',' &&
			    t[c->pos] != '\n') {
				if (t[c->pos] == '"') {
					if (err != NULL)
						ki_buf_printf(err, "line %zu: field "
						    "%zu: a quote inside an unquoted "
						    "field", c->line, r->nfields + 1);
					rc = KI_EINVAL;
					goto bad;
				}
				if (t[c->pos] == '\r' && !(c->pos + 1 < c->len &&
				    t[c->pos + 1] == '\n')) {
					if (err != NULL)
						ki_buf_printf(err, "line %zu: field "
						    "%zu: a carriage return outside "
						    "quotes", c->line, r->nfields + 1);
					rc = KI_EINVAL;
					goto bad;
				}
				if (t[c->pos] == '\r')
					break;
				c->pos++;
			}
			ki_buf_append(&r->store, t + s, c->pos - s);
		}
		ki_buf_putc(&r->store, '\0');
		r->nfields++;
		if (c->pos - start > LIGER_CSV_MAX_RECORD) {
			if (err != NULL)
				ki_buf_printf(err, "line %zu: the record is longer "
				    "than %u bytes", r->line,
				    (unsigned)LIGER_CSV_MAX_RECORD);
			rc = KI_ELIMIT;
			goto bad;
		}
		if (c->pos >= c->len)
			break;
		if (t[c->pos] == ',') {
			c->pos++;
			continue;
		}
		if (t[c->pos] == '\r')
			c->pos++;
		c->pos++; /* the LF */
		c->line++;
		break;
	}
	if (r->store.oom)
		return KI_ENOMEM;
	for (i = 0; i < r->nfields; i++) {
		r->field[i] = r->store.data + off[i];
		r->len[i] = (i + 1 < r->nfields ? off[i + 1] : r->store.len) -
		    off[i] - 1;
	}
	return 1;
bad:
	csv_skip_line(c);
	return rc;
}

int
liger_csv_next(liger_csv *c, liger_record *r, ki_buf *err)
{
	for (;;) {
		if (c->pos >= c->len)
			return 0;
		/* Blank lines are no records (as Python's csv reader has it). */
		if (c->text[c->pos] == '\n') {
			c->pos++;
			c->line++;
			continue;
		}
		if (c->text[c->pos] == '\r' && c->pos + 1 < c->len &&
		    c->text[c->pos + 1] == '\n') {
			c->pos += 2;
			c->line++;
			continue;
		}
		return csv_read(c, r, err);
	}
}

int
liger_csv_put_field(ki_buf *out, const char *s, size_t n)
{
	size_t i;

	if (memchr(s, ',', n) == NULL && memchr(s, '"', n) == NULL &&
	    memchr(s, '\r', n) == NULL && memchr(s, '\n', n) == NULL)
		return ki_buf_append(out, s, n);
	ki_buf_putc(out, '"');
	for (i = 0; i < n; i++) {
		if (s[i] == '"')
			ki_buf_putc(out, '"');
		ki_buf_putc(out, s[i]);
	}
	return ki_buf_putc(out, '"');
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

/* What the importer knows of each kernel's benchmark script. */
typedef struct kernel_info {
	const char *name;
	const char *title;
	/* the dtype the script uses when its config names none (NULL: the
	 * config must name one) */
	const char *default_dtype;
	/* 1: the script's "backward" reruns the forward in every repetition */
	int backward_refwd;
} kernel_info;

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

static const kernel_info *
kernel_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(kernel_table) / sizeof(kernel_table[0]); i++)
		if (strcmp(kernel_table[i].name, name) == 0)
			return &kernel_table[i];
	return NULL;
}

/* torch dtype spellings → the workload's dtype and the externalId's short
 * form. */
typedef struct dtype_info {
	const char *torch;
	const char *name;
	const char *short_name;
} dtype_info;

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

static const dtype_info *
dtype_by_torch(const char *s)
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
	    "SXM4-80GB", "sm_80", "A100-SXM4-80GB" },
	{ "NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3", "NVIDIA H100",
	    "SXM5-80GB", "sm_90", "H100 80GB HBM3" },
	{ "NVIDIA H100 PCIe", "nvidia-h100-pcie", "NVIDIA H100",
	    "PCIe-80GB", "sm_90", "H100 PCIe" },
	{ "NVIDIA GeForce RTX 3090", "nvidia-geforce-rtx-3090",
	    "NVIDIA GeForce RTX 3090", "PCIe-24GB", "sm_86",
	    "GeForce RTX 3090" },
	{ "NVIDIA GeForce RTX 4090", "nvidia-geforce-rtx-4090",
	    "NVIDIA GeForce RTX 4090", "PCIe-24GB", "sm_89",
	    "GeForce RTX 4090" },
	{ "NVIDIA B200", "nvidia-b200", "NVIDIA B200", "SXM-180GB", "sm_100",
	    "B200" },
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

enum proto_kind { PROTO_SPEED, PROTO_SPEED_REFWD, PROTO_MEMORY };

#define NOTES_TAIL " The upstream CSV records no CUDA, driver, or torch " \
	"version; the Liger release rides each run's labels. Comparable " \
	"only within one kernel, workload, "
#define DO_BENCH " via triton.testing.do_bench with quantiles 0.5/0.2/0.8 " \
	"(median with p20/p80 spread)."
#define MAX_MEM "Measured: the peak of torch.cuda.max_memory_allocated " \
	"(after reset_peak_memory_stats) in each of 10 repetitions, "
#define MAX_MEM_Q ", quantiles 0.5/0.2/0.8 of the peaks (median with " \
	"p20/p80 spread); Liger's MB are 2^20 bytes, stored here in bytes."

typedef struct proto_info {
	enum proto_kind kind;
	const char *pass;
	const char *name;
	const char *title;
	const char *notes;
} proto_info;

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
};

static const proto_info *
proto_for(enum proto_kind kind, const char *pass)
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
static void
name_append(ki_buf *b, const char *s)
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
static void
name_cut(ki_buf *b, size_t max)
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
static int
name_hash_suffix(ki_buf *b, const char *s, size_t n)
{
	uint8_t d[API_DIGEST_LEN];
	int rc = api_sha256(s, n, d);

	if (rc != KI_OK)
		return rc;
	return ki_buf_printf(b, "-%02x%02x%02x%02x", d[0], d[1], d[2], d[3]);
}

/* Fits a name into max bytes: kept whole when it fits, else cut to
 * max - 9 and given the hash suffix of its whole form. */
static int
name_fit(ki_buf *b, size_t max)
{
	ki_buf whole;
	int rc;

	if (b->oom)
		return KI_ENOMEM;
	if (b->len <= max) {
		name_cut(b, max);
		return KI_OK;
	}
	ki_buf_init(&whole);
	ki_buf_append(&whole, b->data, b->len);
	if (whole.oom)
		return KI_ENOMEM;
	name_cut(b, max - 9);
	rc = name_hash_suffix(b, whole.data, whole.len);
	ki_buf_free(&whole);
	return rc;
}

/* A label value in Kubernetes syntax: at most 63 of [A-Za-z0-9._-],
 * beginning and ending with a letter or digit (or empty). */
static int
label_value_ok(const char *s)
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
static int
parse_double(const char *s, double *out)
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
static int
parse_int(const char *s, int64_t *out)
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
static struct json_object *
new_double(double v)
{
	char s[32];

	if (liger_format_double(v, s) < 0)
		return NULL;
	return json_object_new_double_s(v, s);
}

/* Adds val under key to o, consuming val. Returns 0 or KI_ENOMEM (val is
 * freed then). */
static int
put(struct json_object *o, const char *key, struct json_object *val)
{
	if (val == NULL)
		return KI_ENOMEM;
	if (json_object_object_add(o, key, val) != 0) {
		json_object_put(val);
		return KI_ENOMEM;
	}
	return KI_OK;
}

static int
put_str(struct json_object *o, const char *key, const char *s)
{
	return put(o, key, json_object_new_string(s));
}

/* Appends the text a parameter value takes in a workload slug. */
static int
slug_value(ki_buf *b, struct json_object *v)
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
		return ki_buf_puts(b, json_object_get_string(v));
	default:
		return KI_EINVAL;
	}
}

/* ====================================================================== */
/* The converter                                                           */

struct liger_conv {
	int idx[LIGER_NCOLUMNS];
	size_t nheader;
	int have_header;
	/* run names, cut in their timestamp, of the rows of the pre-pass */
	char **reserved;
	size_t nreserved, cap;
	int sorted;
};

int
liger_conv_new(liger_conv **out)
{
	liger_conv *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return KI_ENOMEM;
	*out = c;
	return KI_OK;
}

void
liger_conv_free(liger_conv *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nreserved; i++)
		free(c->reserved[i]);
	free(c->reserved);
	free(c);
}

int
liger_conv_header(liger_conv *c, const liger_record *hdr, ki_buf *err)
{
	size_t i;
	int k;

	for (k = 0; k < LIGER_NCOLUMNS; k++)
		c->idx[k] = -1;
	for (i = 0; i < hdr->nfields; i++) {
		const char *f = hdr->field[i];

		/* A UTF-8 byte-order mark may precede the first name. */
		if (i == 0 && strncmp(f, "\xef\xbb\xbf", 3) == 0)
			f += 3;
		for (k = 0; k < LIGER_NCOLUMNS; k++)
			if (strcmp(f, column_names[k]) == 0 && c->idx[k] < 0)
				c->idx[k] = (int)i;
	}
	for (k = 0; k < LIGER_NCOLUMNS; k++) {
		if (c->idx[k] < 0) {
			if (err != NULL)
				ki_buf_printf(err, "line %zu: the header has no "
				    "column %s", hdr->line, column_names[k]);
			return KI_EINVAL;
		}
	}
	c->nheader = hdr->nfields;
	c->have_header = 1;
	return KI_OK;
}

/* One data row, checked and normalized. */
typedef struct row {
	size_t line;
	const char *col[LIGER_NCOLUMNS];
	const kernel_info *kinfo;
	const liger_gpu *gpu;
	const dtype_info *dtype;
	int memory;
	double y50, y20, y80;
	struct json_object *xval;    /* owned */
	struct json_object *params;  /* owned: canonical name → value */
	const char *sweep;           /* canonical name of x (static or col) */
	char observed[32];           /* "2024-09-03T15:33:28.000Z" */
	char ts_slug[24];            /* "2024-09-03-15-33-28" */
	ki_buf slug;                 /* the workload slug */
	ki_buf eid;                  /* the externalId */
	ki_buf name;                 /* the run's full (uncut) name */
} row;

static void
row_init(row *r)
{
	memset(r, 0, sizeof(*r));
	ki_buf_init(&r->slug);
	ki_buf_init(&r->eid);
	ki_buf_init(&r->name);
}

static void
row_free(row *r)
{
	json_object_put(r->xval);
	json_object_put(r->params);
	ki_buf_free(&r->slug);
	ki_buf_free(&r->eid);
	ki_buf_free(&r->name);
}

/* Reports a row problem into err as "line N: column C: …". Returns
 * KI_EINVAL. */
static int row_fail(ki_buf *err, const row *r, int col, const char *fmt,
	...) __attribute__((format(printf, 4, 5)));

static int
row_fail(ki_buf *err, const row *r, int col, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return KI_EINVAL;
	ki_buf_printf(err, "line %zu: ", r->line);
	if (col >= 0)
		ki_buf_printf(err, "column %s: ", column_names[col]);
	va_start(ap, fmt);
	ki_buf_vprintf(err, fmt, ap);
	va_end(ap);
	return KI_EINVAL;
}

/* An externalId segment: non-empty, no '/', no control characters. */
static int
segment_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (*s == '/' || (unsigned char)*s < 0x20)
			return 0;
	return 1;
}

/* "YYYY-MM-DD HH:MM:SS" → observedAt and the externalId's slug. */
static int
parse_timestamp(const char *s, char observed[32], char slug[24])
{
	static const char shape[] = "dddd-dd-dd dd:dd:dd";
	int y, mo, d, h, mi, se;
	size_t i;

	if (strlen(s) != sizeof(shape) - 1)
		return KI_EINVAL;
	for (i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) :
		    s[i] != shape[i])
			return KI_EINVAL;
	}
	y = atoi(s);
	mo = atoi(s + 5);
	d = atoi(s + 8);
	h = atoi(s + 11);
	mi = atoi(s + 14);
	se = atoi(s + 17);
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || se > 60)
		return KI_EINVAL;
	/* Liger writes local time without a zone; it is taken as UTC. */
	memcpy(observed, s, 19);
	observed[10] = 'T';
	memcpy(observed + 19, ".000Z", 6);
	for (i = 0; i < 19; i++)
		slug[i] = s[i] == ' ' || s[i] == ':' ? '-' : s[i];
	slug[19] = '\0';
	return KI_OK;
}

/* Adds parameter `canon` = v (consumed) to r->params, where `what` names
 * its origin for an error. Returns 0, KI_EINVAL or KI_ENOMEM. */
static int
row_add_param(row *r, const char *canon, const char *what,
	struct json_object *v, ki_buf *err)
{
	struct json_object *old;

	if (json_object_object_get_ex(r->params, canon, &old)) {
		int same = json_object_equal(old, v);

		json_object_put(v);
		if (!same)
			return row_fail(err, r, -1, "%s and another key both "
			    "name the workload parameter '%s' with different "
			    "values", what, canon);
		return KI_OK;
	}
	return put(r->params, canon, v);
}

static int
only_space(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	return *s == '\0';
}

/* Reads extra_benchmark_config_str into r->params and r->dtype. */
static int
row_config(row *r, ki_buf *err)
{
	const int col = LIGER_COL_EXTRA_BENCHMARK_CONFIG_STR;
	const char *text = r->col[col];
	struct json_object *cfg = NULL;
	struct json_tokener *tok = NULL;
	enum json_tokener_error jerr;
	ki_buf dup;
	int rc = KI_OK, d;

	ki_buf_init(&dup);
	if (*text == '\0' || strcmp(text, "null") == 0)
		return KI_OK;
	tok = json_tokener_new();
	if (tok == NULL)
		return KI_ENOMEM;
	cfg = json_tokener_parse_ex(tok, text, (int)strlen(text));
	jerr = json_tokener_get_error(tok);
	if (cfg == NULL || jerr != json_tokener_success ||
	    !only_space(text + json_tokener_get_parse_end(tok))) {
		rc = row_fail(err, r, col, "not JSON (%s)",
		    jerr == json_tokener_success ? "trailing text" :
		    json_tokener_error_desc(jerr));
		goto out;
	}
	if (!json_object_is_type(cfg, json_type_object)) {
		rc = row_fail(err, r, col, "not a JSON object");
		goto out;
	}
	d = api_json_find_duplicate_key(text, strlen(text), &dup);
	if (d < 0) {
		rc = d;
		goto out;
	}
	if (d == 1) {
		rc = row_fail(err, r, col, "the key %s appears twice",
		    dup.data != NULL ? dup.data : "?");
		goto out;
	}
	json_object_object_foreach(cfg, key, val) {
		enum json_type t = json_object_get_type(val);
		const char *canon;

		if (strcmp(key, "dtype") == 0) {
			if (t == json_type_null)
				continue;
			if (t != json_type_string) {
				rc = row_fail(err, r, col, "dtype is not a "
				    "string");
				goto out;
			}
			r->dtype = dtype_by_torch(json_object_get_string(val));
			if (r->dtype == NULL) {
				rc = row_fail(err, r, col, "unknown dtype '%s'",
				    json_object_get_string(val));
				goto out;
			}
			continue;
		}
		/* Liger's name of the swept key: spec.sweep says it. */
		if (strcmp(key, "sweep_dim") == 0)
			continue;
		if (t == json_type_null)
			continue;
		if (t == json_type_object || t == json_type_array) {
			rc = row_fail(err, r, col, "the value of %s is a JSON "
			    "%s, not a number, boolean or string", key,
			    t == json_type_object ? "object" : "array");
			goto out;
		}
		if (t == json_type_double &&
		    !isfinite(json_object_get_double(val))) {
			rc = row_fail(err, r, col, "the value of %s is not "
			    "finite", key);
			goto out;
		}
		if (t == json_type_string &&
		    !segment_ok(json_object_get_string(val))) {
			rc = row_fail(err, r, col, "the value of %s is empty "
			    "or holds '/' or a control character", key);
			goto out;
		}
		canon = liger_canonical_param(r->col[LIGER_COL_KERNEL_NAME],
		    key);
		rc = row_add_param(r, canon, key, json_object_get(val), err);
		if (rc != KI_OK)
			goto out;
	}
out:
	ki_buf_free(&dup);
	json_object_put(cfg);
	json_tokener_free(tok);
	return rc;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Builds the workload slug, the externalId and the run's full name. */
static int
row_ids(row *r, ki_buf *err)
{
	const char *keys[LIGER_CSV_MAX_FIELDS + 1];
	size_t n = 0, i;
	int rc;

	json_object_object_foreach(r->params, key, val) {
		(void)val;
		if (n == sizeof(keys) / sizeof(keys[0]))
			return row_fail(err, r, LIGER_COL_EXTRA_BENCHMARK_CONFIG_STR,
			    "too many parameters");
		keys[n++] = key;
	}
	qsort(keys, n, sizeof(keys[0]), cmp_str);
	for (i = 0; i < n; i++) {
		struct json_object *v = NULL;

		json_object_object_get_ex(r->params, keys[i], &v);
		ki_buf_puts(&r->slug, keys[i]);
		rc = slug_value(&r->slug, v);
		if (rc != KI_OK)
			return rc;
		ki_buf_putc(&r->slug, '-');
	}
	ki_buf_puts(&r->slug, r->dtype->short_name);

	ki_buf_printf(&r->eid, "%s/%s/%s%s/%s/%s/%s",
	    r->col[LIGER_COL_KERNEL_NAME],
	    r->col[LIGER_COL_KERNEL_OPERATION_MODE],
	    r->memory ? "memory/" : "", r->col[LIGER_COL_KERNEL_PROVIDER],
	    r->gpu->slug, r->slug.data, r->ts_slug);
	ki_buf_puts(&r->name, "liger-");
	name_append(&r->name, r->eid.data);
	if (r->slug.oom || r->eid.oom || r->name.oom)
		return KI_ENOMEM;
	return KI_OK;
}

/* Checks and normalizes one record into r. */
static int
row_parse(const liger_conv *c, const liger_record *rec, row *r, ki_buf *err)
{
	const char *pass, *metric, *unit, *xs;
	const char *cols_y[3];
	double *ys[3];
	int64_t xi;
	double xd;
	int k, rc;

	r->line = rec->line;
	if (!c->have_header)
		return row_fail(err, r, -1, "no header was read");
	if (rec->nfields != c->nheader)
		return row_fail(err, r, -1, "the row has %zu fields, the header "
		    "%zu", rec->nfields, c->nheader);
	for (k = 0; k < LIGER_NCOLUMNS; k++) {
		r->col[k] = rec->field[c->idx[k]];
		if (strlen(r->col[k]) != rec->len[c->idx[k]])
			return row_fail(err, r, k, "holds a NUL byte");
	}

	if (!segment_ok(r->col[LIGER_COL_KERNEL_NAME]))
		return row_fail(err, r, LIGER_COL_KERNEL_NAME, "empty or holds "
		    "'/' or a control character");
	if (!segment_ok(r->col[LIGER_COL_KERNEL_PROVIDER]))
		return row_fail(err, r, LIGER_COL_KERNEL_PROVIDER, "empty or "
		    "holds '/' or a control character");
	r->kinfo = kernel_by_name(r->col[LIGER_COL_KERNEL_NAME]);

	pass = r->col[LIGER_COL_KERNEL_OPERATION_MODE];
	if (strcmp(pass, "forward") != 0 && strcmp(pass, "backward") != 0 &&
	    strcmp(pass, "full") != 0)
		return row_fail(err, r, LIGER_COL_KERNEL_OPERATION_MODE, "'%s' "
		    "is not forward, backward or full", pass);

	metric = r->col[LIGER_COL_METRIC_NAME];
	unit = r->col[LIGER_COL_METRIC_UNIT];
	if (strcmp(metric, "speed") == 0 && strcmp(unit, "ms") == 0)
		r->memory = 0;
	else if (strcmp(metric, "memory") == 0 && strcmp(unit, "MB") == 0)
		r->memory = 1;
	else
		return row_fail(err, r, LIGER_COL_METRIC_NAME, "'%s' in '%s' is "
		    "neither speed in ms nor memory in MB", metric, unit);

	cols_y[0] = r->col[LIGER_COL_Y_VALUE_50];
	cols_y[1] = r->col[LIGER_COL_Y_VALUE_20];
	cols_y[2] = r->col[LIGER_COL_Y_VALUE_80];
	ys[0] = &r->y50;
	ys[1] = &r->y20;
	ys[2] = &r->y80;
	for (k = 0; k < 3; k++) {
		if (parse_double(cols_y[k], ys[k]) != KI_OK || *ys[k] < 0)
			return row_fail(err, r, LIGER_COL_Y_VALUE_50 + k, "'%s' "
			    "is not a finite non-negative number", cols_y[k]);
	}
	if (!(r->y20 <= r->y50 && r->y50 <= r->y80))
		return row_fail(err, r, LIGER_COL_Y_VALUE_50, "the quantiles "
		    "are out of order (p20 %s, median %s, p80 %s)", cols_y[1],
		    cols_y[0], cols_y[2]);

	xs = r->col[LIGER_COL_X_VALUE];
	if (parse_int(xs, &xi) == KI_OK)
		r->xval = json_object_new_int64(xi);
	else if (parse_double(xs, &xd) == KI_OK)
		r->xval = new_double(xd);
	else if (segment_ok(xs))
		r->xval = json_object_new_string(xs);
	else
		return row_fail(err, r, LIGER_COL_X_VALUE, "empty or holds '/' "
		    "or a control character");
	if (r->xval == NULL)
		return KI_ENOMEM;
	if (*r->col[LIGER_COL_X_NAME] == '\0')
		return row_fail(err, r, LIGER_COL_X_NAME, "empty");

	r->gpu = liger_gpu_by_name(r->col[LIGER_COL_GPU_NAME]);
	if (r->gpu == NULL)
		return row_fail(err, r, LIGER_COL_GPU_NAME, "unknown GPU '%s'",
		    r->col[LIGER_COL_GPU_NAME]);
	if (parse_timestamp(r->col[LIGER_COL_TIMESTAMP], r->observed,
	    r->ts_slug) != KI_OK)
		return row_fail(err, r, LIGER_COL_TIMESTAMP, "'%s' is not "
		    "YYYY-MM-DD HH:MM:SS", r->col[LIGER_COL_TIMESTAMP]);
	if (!label_value_ok(r->col[LIGER_COL_LIGER_VERSION]))
		return row_fail(err, r, LIGER_COL_LIGER_VERSION, "'%s' is not a "
		    "label value", r->col[LIGER_COL_LIGER_VERSION]);

	r->params = json_object_new_object();
	if (r->params == NULL)
		return KI_ENOMEM;
	rc = row_config(r, err);
	if (rc != KI_OK)
		return rc;
	r->sweep = liger_canonical_param(r->col[LIGER_COL_KERNEL_NAME],
	    r->col[LIGER_COL_X_NAME]);
	rc = row_add_param(r, r->sweep, "x_name", json_object_get(r->xval),
	    err);
	if (rc != KI_OK)
		return rc;
	if (r->dtype == NULL) {
		if (r->kinfo == NULL || r->kinfo->default_dtype == NULL)
			return row_fail(err, r,
			    LIGER_COL_EXTRA_BENCHMARK_CONFIG_STR, "names no "
			    "dtype, and kernel %s has no known default",
			    r->col[LIGER_COL_KERNEL_NAME]);
		r->dtype = dtype_by_torch(r->kinfo->default_dtype);
	}
	return row_ids(r, err);
}

/* Whether the run's name, cut at LIGER_RUN_NAME_MAX, falls inside the
 * timestamp (all before it fits), so that the cut name is still the row's
 * unless another row of the file shares it. */
static int
row_cut_in_timestamp(const row *r)
{
	return r->name.len > LIGER_RUN_NAME_MAX &&
	    r->name.len - strlen(r->ts_slug) <= LIGER_RUN_NAME_MAX;
}

int
liger_conv_reserve(liger_conv *c, const liger_record *rec)
{
	row r;
	ki_buf cut;
	int rc = KI_OK;

	row_init(&r);
	ki_buf_init(&cut);
	if (row_parse(c, rec, &r, NULL) != KI_OK || !row_cut_in_timestamp(&r))
		goto out;
	ki_buf_append(&cut, r.name.data, r.name.len);
	name_cut(&cut, LIGER_RUN_NAME_MAX);
	if (cut.oom) {
		rc = KI_ENOMEM;
		goto out;
	}
	if (c->nreserved == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 256;
		char **p = realloc(c->reserved, ncap * sizeof(*p));

		if (p == NULL) {
			rc = KI_ENOMEM;
			goto out;
		}
		c->reserved = p;
		c->cap = ncap;
	}
	c->reserved[c->nreserved++] = ki_buf_steal(&cut, NULL);
	c->sorted = 0;
out:
	ki_buf_free(&cut);
	row_free(&r);
	return rc;
}

/* Whether two or more rows of the pre-pass share this cut name. */
static int
conv_shared(liger_conv *c, const char *cut)
{
	const char *key = cut;
	char **hit;
	size_t i;

	if (c == NULL || c->nreserved == 0)
		return 0;
	if (!c->sorted) {
		qsort(c->reserved, c->nreserved, sizeof(char *), cmp_str);
		c->sorted = 1;
	}
	hit = bsearch(&key, c->reserved, c->nreserved, sizeof(char *),
	    cmp_str);
	if (hit == NULL)
		return 0;
	i = (size_t)(hit - c->reserved);
	return (i > 0 && strcmp(c->reserved[i - 1], cut) == 0) ||
	    (i + 1 < c->nreserved && strcmp(c->reserved[i + 1], cut) == 0);
}

/* The run's name (see docs/liger.md, "Names"). */
static int
run_name(liger_conv *c, const row *r, ki_buf *out)
{
	ki_buf_append(out, r->name.data, r->name.len);
	if (out->oom)
		return KI_ENOMEM;
	if (r->name.len <= LIGER_RUN_NAME_MAX)
		return KI_OK;
	name_cut(out, LIGER_RUN_NAME_MAX);
	if (row_cut_in_timestamp(r) && !conv_shared(c, out->data))
		return KI_OK;
	ki_buf_reset(out);
	ki_buf_append(out, r->name.data, r->name.len);
	name_cut(out, LIGER_RUN_NAME_MAX - 9);
	return name_hash_suffix(out, r->eid.data, r->eid.len);
}

/* {"apiVersion", "kind", "metadata": {"name", "title"}, "spec": spec};
 * consumes spec. */
static struct json_object *
new_object(const char *kind, const char *name, const char *title,
	struct json_object *spec)
{
	struct json_object *o = json_object_new_object();
	struct json_object *meta = json_object_new_object();

	if (o == NULL || meta == NULL || spec == NULL)
		goto fail;
	if (put_str(o, "apiVersion", API_VER) != KI_OK ||
	    put_str(o, "kind", kind) != KI_OK ||
	    put_str(meta, "name", name) != KI_OK ||
	    put_str(meta, "title", title) != KI_OK)
		goto fail;
	if (put(o, "metadata", meta) != KI_OK) {
		meta = NULL;
		goto fail;
	}
	meta = NULL;
	if (put(o, "spec", spec) != KI_OK)
		spec = NULL;
	else
		return o;
fail:
	json_object_put(o);
	json_object_put(meta);
	json_object_put(spec);
	return NULL;
}

static struct json_object *
build_protocol(const proto_info *p)
{
	struct json_object *spec = json_object_new_object();
	struct json_object *harness = json_object_new_object();
	struct json_object *meas = json_object_new_object();
	struct json_object *comp = json_object_new_object();
	int rc = KI_OK;

	if (spec == NULL || harness == NULL || meas == NULL || comp == NULL)
		goto fail;
	rc |= put_str(harness, "name", "Liger-Kernel benchmark scripts");
	rc |= put_str(harness, "repository",
	    "https://github.com/linkedin/Liger-Kernel");
	if (p->kind == PROTO_MEMORY) {
		/* No clock: a counter read after each of _test_memory's 10
		 * repetitions. */
		rc |= put_str(meas, "method", "torch.cuda.max_memory_allocated");
		rc |= put_str(meas, "primaryStatistic", "median");
		rc |= put(meas, "repetitions", json_object_new_int(10));
	} else {
		rc |= put_str(meas, "timer", "cuda_events");
		rc |= put_str(meas, "primaryStatistic", "median");
	}
	rc |= put_str(comp, "notes", p->notes);
	rc |= put_str(comp, "family", "liger_kernel_bench");
	if (rc != KI_OK)
		goto fail;
	rc = put(spec, "harness", harness);
	harness = NULL;
	rc |= put(spec, "measurement", meas);
	meas = NULL;
	rc |= put(spec, "comparability", comp);
	comp = NULL;
	if (rc != KI_OK)
		goto fail;
	return new_object("BenchmarkProtocol", p->name, p->title, spec);
fail:
	json_object_put(spec);
	json_object_put(harness);
	json_object_put(meas);
	json_object_put(comp);
	return NULL;
}

static struct json_object *
build_environment(const liger_gpu *g)
{
	struct json_object *spec = json_object_new_object();
	struct json_object *hw = json_object_new_object();
	struct json_object *obj = NULL;
	ki_buf name, title;
	int rc = KI_OK;

	ki_buf_init(&name);
	ki_buf_init(&title);
	if (spec == NULL || hw == NULL)
		goto out;
	rc |= put_str(hw, "vendor", "nvidia");
	rc |= put_str(hw, "product", g->product);
	rc |= put_str(hw, "formFactor", g->form_factor);
	rc |= put_str(hw, "architecture", g->architecture);
	if (rc != KI_OK)
		goto out;
	rc = put(spec, "hardware", hw);
	hw = NULL;
	if (rc != KI_OK || put(spec, "software", json_object_new_object()) !=
	    KI_OK)
		goto out;
	ki_buf_printf(&name, "liger-bench-%s", g->slug);
	ki_buf_printf(&title, "Liger benchmark host · %s", g->short_name);
	if (name.oom || title.oom)
		goto out;
	obj = new_object("ExecutionEnvironment", name.data, title.data, spec);
	spec = NULL;
out:
	json_object_put(spec);
	json_object_put(hw);
	ki_buf_free(&name);
	ki_buf_free(&title);
	return obj;
}

static const char *
kernel_title(const row *r)
{
	return r->kinfo != NULL ? r->kinfo->title :
	    r->col[LIGER_COL_KERNEL_NAME];
}

static struct json_object *
build_workload(const row *r)
{
	struct json_object *spec = json_object_new_object();
	struct json_object *obj = NULL;
	ki_buf name, title;
	int rc = KI_OK;

	ki_buf_init(&name);
	ki_buf_init(&title);
	if (spec == NULL)
		goto out;
	rc |= put_str(spec, "kernel", r->col[LIGER_COL_KERNEL_NAME]);
	rc |= put_str(spec, "pass", r->col[LIGER_COL_KERNEL_OPERATION_MODE]);
	rc |= put_str(spec, "dtype", r->dtype->name);
	rc |= put(spec, "parameters", json_object_get(r->params));
	rc |= put_str(spec, "sweep", r->sweep);
	if (rc != KI_OK)
		goto out;
	ki_buf_printf(&name, "%s-%s-%s-sweep-%s",
	    r->col[LIGER_COL_KERNEL_NAME],
	    r->col[LIGER_COL_KERNEL_OPERATION_MODE], r->slug.data, r->sweep);
	if (name.oom)
		goto out;
	{
		ki_buf clean;

		ki_buf_init(&clean);
		name_append(&clean, name.data);
		ki_buf_free(&name);
		name = clean;
	}
	if (name_fit(&name, LIGER_NAME_MAX) != KI_OK)
		goto out;
	ki_buf_printf(&title, "%s · %s · %s", kernel_title(r),
	    r->col[LIGER_COL_KERNEL_OPERATION_MODE], r->slug.data);
	if (title.oom)
		goto out;
	obj = new_object("Workload", name.data, title.data, spec);
	spec = NULL;
out:
	json_object_put(spec);
	ki_buf_free(&name);
	ki_buf_free(&title);
	return obj;
}

/* Providers whose rows measure Liger's own code, hence carry its version. */
static int
provider_is_liger(const char *p)
{
	return strncmp(p, "liger", 5) == 0 &&
	    (p[5] == '\0' || p[5] == '_' || p[5] == '-');
}

static struct json_object *
build_implementation(const row *r)
{
	const char *prov = r->col[LIGER_COL_KERNEL_PROVIDER];
	const char *ver = r->col[LIGER_COL_LIGER_VERSION];
	int versioned = provider_is_liger(prov) && *ver != '\0';
	struct json_object *spec = json_object_new_object();
	struct json_object *obj = NULL;
	ki_buf raw, name, title;
	int rc = KI_OK;

	ki_buf_init(&raw);
	ki_buf_init(&name);
	ki_buf_init(&title);
	if (spec == NULL)
		goto out;
	rc |= put_str(spec, "provider", prov);
	rc |= put_str(spec, "framework", "torch");
	if (versioned)
		rc |= put_str(spec, "version", ver);
	if (rc != KI_OK)
		goto out;
	if (strcmp(prov, "torch") == 0)
		ki_buf_puts(&raw, prov);
	else
		ki_buf_printf(&raw, "%s-torch", prov);
	if (versioned)
		ki_buf_printf(&raw, "-%s", ver);
	if (raw.oom)
		goto out;
	name_append(&name, raw.data);
	if (name_fit(&name, LIGER_NAME_MAX) != KI_OK)
		goto out;
	if (versioned)
		ki_buf_printf(&title, "%s %s · torch", prov, ver);
	else
		ki_buf_printf(&title, "%s · torch", prov);
	if (title.oom)
		goto out;
	obj = new_object("Implementation", name.data, title.data, spec);
	spec = NULL;
out:
	json_object_put(spec);
	ki_buf_free(&raw);
	ki_buf_free(&name);
	ki_buf_free(&title);
	return obj;
}

/* {"unit", "value", "metric", "statistic"} */
static struct json_object *
measurement(const char *metric, const char *unit, const char *stat,
	int64_t value)
{
	struct json_object *m = json_object_new_object();

	if (m == NULL)
		return NULL;
	if (put_str(m, "unit", unit) != KI_OK ||
	    put(m, "value", json_object_new_int64(value)) != KI_OK ||
	    put_str(m, "metric", metric) != KI_OK ||
	    put_str(m, "statistic", stat) != KI_OK) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

/* Puts "<field>": digest(obj) into spec. */
static int
put_digest(struct json_object *spec, const char *field,
	struct json_object *obj)
{
	uint8_t d[API_DIGEST_LEN];
	char s[API_DIGEST_STRLEN + 1];
	int rc = api_digest(obj, d, NULL);

	if (rc != KI_OK)
		return rc;
	api_digest_format(d, s);
	return put_str(spec, field, s);
}

static int
build_run_spec(const row *r, struct json_object *spec)
{
	struct json_object *meas = json_object_new_array();
	struct json_object *native = json_object_new_object();
	struct json_object *metrics = json_object_new_object();
	int rc = KI_OK;
	ki_buf bench;

	ki_buf_init(&bench);
	if (meas == NULL || native == NULL || metrics == NULL) {
		rc = KI_ENOMEM;
		goto out;
	}
	rc = put_str(spec, "status", "passed");
	if (rc != KI_OK)
		goto out;
	if (!r->memory) {
		struct json_object *timing = json_object_new_object();
		struct json_object *lat = json_object_new_object();

		if (timing == NULL || lat == NULL ||
		    put(lat, "median", json_object_new_int64(
		    llround(r->y50 * 1e6))) != KI_OK ||
		    put(timing, "latencyNs", json_object_get(lat)) != KI_OK ||
		    put_str(timing, "primaryStatistic", "median") != KI_OK ||
		    put(spec, "timing", json_object_get(timing)) != KI_OK)
			rc = KI_ENOMEM;
		json_object_put(lat);
		json_object_put(timing);
		if (rc != KI_OK)
			goto out;
	}
	rc = put_str(spec, "observedAt", r->observed);
	if (rc != KI_OK)
		goto out;
	if (r->memory) {
		const double mib = 1048576.0;

		rc |= json_object_array_add(meas, measurement("peak_memory",
		    "bytes", "median", llround(r->y50 * mib)));
		rc |= json_object_array_add(meas, measurement("peak_memory",
		    "bytes", "p20", llround(r->y20 * mib)));
		rc |= json_object_array_add(meas, measurement("peak_memory",
		    "bytes", "p80", llround(r->y80 * mib)));
		rc |= put(metrics, "mb_20", new_double(r->y20));
		rc |= put(metrics, "mb_50", new_double(r->y50));
		rc |= put(metrics, "mb_80", new_double(r->y80));
	} else {
		rc |= json_object_array_add(meas, measurement("latency", "ns",
		    "p20", llround(r->y20 * 1e6)));
		rc |= json_object_array_add(meas, measurement("latency", "ns",
		    "p80", llround(r->y80 * 1e6)));
		rc |= put(metrics, "ms_20", new_double(r->y20));
		rc |= put(metrics, "ms_50", new_double(r->y50));
		rc |= put(metrics, "ms_80", new_double(r->y80));
	}
	if (rc != KI_OK || json_object_array_length(meas) != (r->memory ? 3u : 2u)) {
		rc = KI_ENOMEM;
		goto out;
	}
	{
		size_t i;

		for (i = 0; i < json_object_array_length(meas); i++)
			if (json_object_array_get_idx(meas, i) == NULL)
				rc = KI_ENOMEM;
		if (rc != KI_OK)
			goto out;
	}
	rc = put(spec, "measurements", json_object_get(meas));
	if (rc != KI_OK)
		goto out;
	ki_buf_printf(&bench, "%s/%s", r->col[LIGER_COL_KERNEL_NAME],
	    r->col[LIGER_COL_KERNEL_OPERATION_MODE]);
	if (bench.oom) {
		rc = KI_ENOMEM;
		goto out;
	}
	rc |= put_str(native, "source", LIGER_SOURCE);
	rc |= put(native, "metrics", json_object_get(metrics));
	rc |= put_str(native, "benchmark", bench.data);
	rc |= put_str(native, "externalId", r->eid.data);
	rc |= put(spec, "sourceNative", json_object_get(native));
	if (rc != KI_OK)
		rc = KI_ENOMEM;
out:
	json_object_put(meas);
	json_object_put(native);
	json_object_put(metrics);
	ki_buf_free(&bench);
	return rc;
}

static struct json_object *
build_run_metadata(liger_conv *c, const row *r)
{
	struct json_object *meta = json_object_new_object();
	struct json_object *labels = json_object_new_object();
	struct json_object *ann = json_object_new_object();
	ki_buf name, title;
	int rc = KI_OK;

	ki_buf_init(&name);
	ki_buf_init(&title);
	if (meta == NULL || labels == NULL || ann == NULL)
		goto fail;
	if (run_name(c, r, &name) != KI_OK)
		goto fail;
	ki_buf_printf(&title, "%s · %s · %s%s", kernel_title(r),
	    r->col[LIGER_COL_KERNEL_PROVIDER],
	    r->col[LIGER_COL_KERNEL_OPERATION_MODE],
	    r->memory ? " · peak memory" : "");
	if (title.oom)
		goto fail;
	rc |= put_str(meta, "name", name.data);
	rc |= put_str(meta, "title", title.data);
	if (*r->col[LIGER_COL_LIGER_VERSION] != '\0')
		rc |= put_str(labels, "liger_version",
		    r->col[LIGER_COL_LIGER_VERSION]);
	rc |= put_str(ann, LIGER_ANN_X_NAME, r->col[LIGER_COL_X_NAME]);
	rc |= put_str(ann, LIGER_ANN_X_LABEL, r->col[LIGER_COL_X_LABEL]);
	rc |= put_str(ann, LIGER_ANN_X_VALUE, r->col[LIGER_COL_X_VALUE]);
	rc |= put_str(ann, LIGER_ANN_CONFIG,
	    r->col[LIGER_COL_EXTRA_BENCHMARK_CONFIG_STR]);
	rc |= put_str(ann, LIGER_ANN_GPU_NAME, r->col[LIGER_COL_GPU_NAME]);
	if (rc != KI_OK)
		goto fail;
	rc = put(meta, "labels", labels);
	labels = NULL;
	rc |= put(meta, "annotations", ann);
	ann = NULL;
	if (rc != KI_OK)
		goto fail;
	ki_buf_free(&name);
	ki_buf_free(&title);
	return meta;
fail:
	json_object_put(meta);
	json_object_put(labels);
	json_object_put(ann);
	ki_buf_free(&name);
	ki_buf_free(&title);
	return NULL;
}

int
liger_conv_row(liger_conv *c, const liger_record *rec,
	struct json_object **out, ki_buf *err)
{
	struct json_object *proto = NULL, *env = NULL, *wl = NULL;
	struct json_object *impl = NULL, *run = NULL, *spec = NULL;
	struct json_object *meta = NULL, *bundle = NULL;
	const proto_info *pi;
	enum proto_kind pk;
	row r;
	int rc;

	*out = NULL;
	row_init(&r);
	rc = row_parse(c, rec, &r, err);
	if (rc != KI_OK)
		goto out;
	rc = KI_ENOMEM;
	pk = r.memory ? PROTO_MEMORY : PROTO_SPEED;
	if (pk == PROTO_SPEED && r.kinfo != NULL && r.kinfo->backward_refwd &&
	    strcmp(r.col[LIGER_COL_KERNEL_OPERATION_MODE], "backward") == 0)
		pk = PROTO_SPEED_REFWD;
	pi = proto_for(pk, r.col[LIGER_COL_KERNEL_OPERATION_MODE]);
	if (pi == NULL) {
		rc = KI_EINVAL;
		goto out;
	}
	proto = build_protocol(pi);
	env = build_environment(r.gpu);
	wl = build_workload(&r);
	impl = build_implementation(&r);
	spec = json_object_new_object();
	if (proto == NULL || env == NULL || wl == NULL || impl == NULL ||
	    spec == NULL)
		goto out;
	rc = build_run_spec(&r, spec);
	if (rc == KI_OK)
		rc = put_digest(spec, "protocolDigest", proto);
	if (rc == KI_OK)
		rc = put_digest(spec, "workloadDigest", wl);
	if (rc == KI_OK)
		rc = put_digest(spec, "environmentDigest", env);
	if (rc == KI_OK)
		rc = put_digest(spec, "implementationDigest", impl);
	if (rc != KI_OK)
		goto out;
	rc = KI_ENOMEM;
	meta = build_run_metadata(c, &r);
	run = json_object_new_object();
	if (meta == NULL || run == NULL)
		goto out;
	if (put_str(run, "apiVersion", API_VER) != KI_OK ||
	    put_str(run, "kind", "BenchmarkRun") != KI_OK)
		goto out;
	rc = put(run, "metadata", meta);
	meta = NULL;
	if (rc != KI_OK)
		goto out;
	rc = put(run, "spec", spec);
	spec = NULL;
	if (rc != KI_OK)
		goto out;
	rc = KI_ENOMEM;
	bundle = json_object_new_object();
	if (bundle == NULL)
		goto out;
	rc = put(bundle, "run", run);
	run = NULL;
	rc |= put(bundle, "protocol", proto);
	proto = NULL;
	rc |= put(bundle, "environment", env);
	env = NULL;
	rc |= put(bundle, "workload", wl);
	wl = NULL;
	rc |= put(bundle, "implementation", impl);
	impl = NULL;
	if (rc != KI_OK) {
		rc = KI_ENOMEM;
		goto out;
	}
	*out = bundle;
	bundle = NULL;
out:
	json_object_put(bundle);
	json_object_put(run);
	json_object_put(meta);
	json_object_put(spec);
	json_object_put(proto);
	json_object_put(env);
	json_object_put(wl);
	json_object_put(impl);
	row_free(&r);
	return rc;
}

int
liger_convert_text(const char *text, size_t len, liger_row_fn fn, void *arg,
	ki_buf *err)
{
	liger_conv *c = NULL;
	liger_record rec;
	liger_csv csv;
	ki_buf msg;
	int rc, got;

	liger_record_init(&rec);
	ki_buf_init(&msg);
	rc = liger_conv_new(&c);
	if (rc != KI_OK)
		goto out;
	liger_csv_init(&csv, text, len);
	got = liger_csv_next(&csv, &rec, err);
	if (got == 0) {
		if (err != NULL)
			ki_buf_puts(err, "line 1: no header: the input is empty");
		rc = KI_EINVAL;
		goto out;
	}
	if (got < 0) {
		rc = got == KI_ENOMEM ? KI_ENOMEM : KI_EINVAL;
		goto out;
	}
	rc = liger_conv_header(c, &rec, err);
	if (rc != KI_OK)
		goto out;

	/* Pre-pass: the run names the rows of this file would share. */
	while ((got = liger_csv_next(&csv, &rec, NULL)) != 0) {
		if (got == KI_ENOMEM) {
			rc = KI_ENOMEM;
			goto out;
		}
		if (got == 1 && (rc = liger_conv_reserve(c, &rec)) != KI_OK)
			goto out;
	}

	liger_csv_init(&csv, text, len);
	got = liger_csv_next(&csv, &rec, NULL);
	while ((got = liger_csv_next(&csv, &rec, &msg)) != 0) {
		struct json_object *bundle = NULL;

		if (got == KI_ENOMEM) {
			rc = KI_ENOMEM;
			goto out;
		}
		if (got < 0) {
			rc = fn(arg, csv.line, NULL, msg.data != NULL ?
			    msg.data : "malformed CSV");
		} else {
			rc = liger_conv_row(c, &rec, &bundle, &msg);
			if (rc == KI_ENOMEM)
				goto out;
			if (rc == KI_OK)
				rc = fn(arg, rec.line, bundle, NULL);
			else
				rc = fn(arg, rec.line, NULL, msg.data != NULL ?
				    msg.data : ki_strerror(rc));
			json_object_put(bundle);
		}
		ki_buf_reset(&msg);
		if (rc != 0)
			goto out;
	}
	rc = KI_OK;
out:
	liger_conv_free(c);
	liger_record_free(&rec);
	ki_buf_free(&msg);
	return rc;
}

/* ====================================================================== */
/* Run → CSV row                                                           */

int
liger_csv_header(ki_buf *out)
{
	int k;

	for (k = 0; k < LIGER_NCOLUMNS; k++) {
		if (k > 0)
			ki_buf_putc(out, ',');
		ki_buf_puts(out, column_names[k]);
	}
	return ki_buf_puts(out, "\r\n");
}

/* A string member at a dotted path of o (borrowed), or NULL. */
static const char *
get_path_str(struct json_object *o, const char *a, const char *b,
	const char *c)
{
	const char *keys[3];
	int i;

	keys[0] = a;
	keys[1] = b;
	keys[2] = c;
	for (i = 0; i < 3 && keys[i] != NULL; i++)
		if (o == NULL || !json_object_object_get_ex(o, keys[i], &o))
			return NULL;
	if (o == NULL || !json_object_is_type(o, json_type_string))
		return NULL;
	return json_object_get_string(o);
}

static const char *
annotation(struct json_object *run, struct json_object *hint,
	const char *key)
{
	const char *s = get_path_str(run, "metadata", "annotations", key);

	if (s == NULL && hint != NULL)
		s = get_path_str(hint, "metadata", "annotations", key);
	return s;
}

/* Finds the integer that follows parameter `canon` in a workload slug
 * ("batch8-hidden4096-…"), where it begins a '-'-separated segment.
 * Writes its text into out. Returns 0 or KI_ENOTFOUND. */
static int
slug_find(const char *slug, const char *canon, char out[32])
{
	size_t n = strlen(canon);
	const char *p = slug;

	while ((p = strstr(p, canon)) != NULL) {
		if ((p == slug || p[-1] == '-') &&
		    (isdigit((unsigned char)p[n]) ||
		    (p[n] == '-' && isdigit((unsigned char)p[n + 1])))) {
			size_t k = p[n] == '-' ? 1 : 0;

			while (isdigit((unsigned char)p[n + k]) && k < 30)
				k++;
			if (p[n + k] != '\0' && p[n + k] != '-')
				return KI_ENOTFOUND;
			memcpy(out, p + n, k);
			out[k] = '\0';
			return KI_OK;
		}
		p += n;
	}
	return KI_ENOTFOUND;
}

int
liger_run_to_csv(struct json_object *run, struct json_object *hint,
	ki_buf *out, ki_buf *err)
{
	const char *src, *eid, *version, *xname, *xlabel, *xvalue, *config;
	const char *gpu_name;
	struct json_object *metrics = NULL;
	const char *cols[LIGER_NCOLUMNS];
	char *seg[8], *copy = NULL, *p;
	char ys[3][32], xbuf[32], ts[20];
	int nseg = 0, memory, k, rc = KI_EINVAL;
	const char *keys_ms[3] = { "ms_50", "ms_20", "ms_80" };
	const char *keys_mb[3] = { "mb_50", "mb_20", "mb_80" };

	src = get_path_str(run, "spec", "sourceNative", "source");
	eid = get_path_str(run, "spec", "sourceNative", "externalId");
	if (src == NULL || strcmp(src, LIGER_SOURCE) != 0 || eid == NULL) {
		if (err != NULL)
			ki_buf_puts(err, "not a run from " LIGER_SOURCE);
		return KI_EINVAL;
	}
	copy = strdup(eid);
	if (copy == NULL)
		return KI_ENOMEM;
	for (p = copy; nseg < 8;) {
		seg[nseg++] = p;
		p = strchr(p, '/');
		if (p == NULL)
			break;
		*p++ = '\0';
	}
	memory = nseg == 7 && strcmp(seg[2], "memory") == 0;
	if (p != NULL || (nseg != 6 && !memory)) {
		if (err != NULL)
			ki_buf_printf(err, "externalId '%s' is not in the "
			    "importer's form", eid);
		goto out;
	}
	if (memory)
		memmove(&seg[2], &seg[3], 4 * sizeof(seg[0]));
	/* seg: kernel, pass, provider, gpu slug, workload slug, timestamp */
	if (!json_object_object_get_ex(run, "spec", &metrics) ||
	    !json_object_object_get_ex(metrics, "sourceNative", &metrics) ||
	    !json_object_object_get_ex(metrics, "metrics", &metrics)) {
		if (err != NULL)
			ki_buf_puts(err, "no sourceNative.metrics");
		goto out;
	}
	for (k = 0; k < 3; k++) {
		struct json_object *v;

		if (!json_object_object_get_ex(metrics,
		    memory ? keys_mb[k] : keys_ms[k], &v) ||
		    (!json_object_is_type(v, json_type_double) &&
		    !json_object_is_type(v, json_type_int)) ||
		    liger_format_double(json_object_get_double(v), ys[k]) < 0) {
			if (err != NULL)
				ki_buf_printf(err, "sourceNative.metrics.%s is "
				    "missing or not a number",
				    memory ? keys_mb[k] : keys_ms[k]);
			goto out;
		}
	}
	if (strlen(seg[5]) != 19) {
		if (err != NULL)
			ki_buf_printf(err, "timestamp '%s' in the externalId is "
			    "not YYYY-MM-DD-HH-MM-SS", seg[5]);
		goto out;
	}
	snprintf(ts, sizeof(ts), "%.10s %.2s:%.2s:%.2s", seg[5], seg[5] + 11,
	    seg[5] + 14, seg[5] + 17);

	gpu_name = annotation(run, hint, LIGER_ANN_GPU_NAME);
	if (gpu_name == NULL) {
		const liger_gpu *g = liger_gpu_by_slug(seg[3]);

		gpu_name = g != NULL ? g->gpu_name : NULL;
	}
	xname = annotation(run, hint, LIGER_ANN_X_NAME);
	xlabel = annotation(run, hint, LIGER_ANN_X_LABEL);
	config = annotation(run, hint, LIGER_ANN_CONFIG);
	xvalue = get_path_str(run, "metadata", "annotations",
	    LIGER_ANN_X_VALUE);
	if (xvalue == NULL && xname != NULL && slug_find(seg[4],
	    liger_canonical_param(seg[0], xname), xbuf) == KI_OK)
		xvalue = xbuf;
	if (gpu_name == NULL || xname == NULL || xlabel == NULL ||
	    config == NULL || xvalue == NULL) {
		if (err != NULL)
			ki_buf_printf(err, "cannot recover the %s of externalId "
			    "'%s' (no annotations, and no run of the same sweep "
			    "has them)", gpu_name == NULL ? "gpu_name" :
			    xname == NULL ? "x_name" : xlabel == NULL ?
			    "x_label" : config == NULL ?
			    "extra_benchmark_config_str" : "x_value", eid);
		goto out;
	}
	version = get_path_str(run, "metadata", "labels", "liger_version");

	cols[LIGER_COL_KERNEL_NAME] = seg[0];
	cols[LIGER_COL_KERNEL_PROVIDER] = seg[2];
	cols[LIGER_COL_KERNEL_OPERATION_MODE] = seg[1];
	cols[LIGER_COL_METRIC_NAME] = memory ? "memory" : "speed";
	cols[LIGER_COL_METRIC_UNIT] = memory ? "MB" : "ms";
	cols[LIGER_COL_X_NAME] = xname;
	cols[LIGER_COL_X_LABEL] = xlabel;
	cols[LIGER_COL_X_VALUE] = xvalue;
	cols[LIGER_COL_Y_VALUE_50] = ys[0];
	cols[LIGER_COL_Y_VALUE_20] = ys[1];
	cols[LIGER_COL_Y_VALUE_80] = ys[2];
	cols[LIGER_COL_EXTRA_BENCHMARK_CONFIG_STR] = config;
	cols[LIGER_COL_GPU_NAME] = gpu_name;
	cols[LIGER_COL_TIMESTAMP] = ts;
	cols[LIGER_COL_LIGER_VERSION] = version != NULL ? version : "";
	for (k = 0; k < LIGER_NCOLUMNS; k++) {
		if (k > 0)
			ki_buf_putc(out, ',');
		liger_csv_put_field(out, cols[k], strlen(cols[k]));
	}
	ki_buf_puts(out, "\r\n");
	rc = out->oom ? KI_ENOMEM : KI_OK;
out:
	free(copy);
	return rc;
}
