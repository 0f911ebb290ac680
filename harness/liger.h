/* harness/liger.h — Liger-Kernel benchmark CSV rows turned into kernelindex
 * bundles (run, protocol, environment, workload, implementation), and back.
 * Linked by the CLI and the tests; the daemon does not need it. */
#ifndef HARNESS_LIGER_H
#define HARNESS_LIGER_H

#include <json-c/json.h>
#include <stddef.h>

#include "lib/ki.h"

/* The value of every Liger run's sourceNative.source. */
#define LIGER_SOURCE "liger-kernel-bench"

/* The longest run name the importer produces: the readable part cut to
 * 91 characters, "-" and 8 hex digits of SHA-256 of the externalId. */
#define LIGER_RUN_NAME_MAX 100

/* The longest name of any other object (a DNS-1123 subdomain). */
#define LIGER_NAME_MAX 253

/* The most fields one CSV record may have. */
#define LIGER_CSV_MAX_FIELDS 64

/* The longest CSV record, in bytes. */
#define LIGER_CSV_MAX_RECORD (1u << 20)

/* Annotations on each run that keep what the normalized form cannot say,
 * so that `export liger` writes the row back as it was. */
#define LIGER_ANN_X_NAME "liger.kernelindex.dev/x-name"
#define LIGER_ANN_X_LABEL "liger.kernelindex.dev/x-label"
#define LIGER_ANN_X_VALUE "liger.kernelindex.dev/x-value"
#define LIGER_ANN_CONFIG "liger.kernelindex.dev/extra-benchmark-config"
#define LIGER_ANN_GPU_NAME "liger.kernelindex.dev/gpu-name"
/* liger_version as written, where it is no label value. */
#define LIGER_ANN_VERSION "liger.kernelindex.dev/liger-version"
/* The timestamp as written, where it is not "YYYY-MM-DD HH:MM:SS". */
#define LIGER_ANN_TIMESTAMP "liger.kernelindex.dev/timestamp"
/* What the importer did not know about the row ("GPU 'NVIDIA L40S'; dtype
 * (the row names none)"): those parts were imported as written, and the
 * index's verdict on them is unknown. */
#define LIGER_ANN_UNKNOWN "liger.kernelindex.dev/unknown"

/* The columns of Liger's all_benchmark_data.csv, in Liger's order. */
enum liger_column {
	LIGER_COL_KERNEL_NAME,
	LIGER_COL_KERNEL_PROVIDER,
	LIGER_COL_KERNEL_OPERATION_MODE,
	LIGER_COL_METRIC_NAME,
	LIGER_COL_METRIC_UNIT,
	LIGER_COL_X_NAME,
	LIGER_COL_X_LABEL,
	LIGER_COL_X_VALUE,
	LIGER_COL_Y_VALUE_50,
	LIGER_COL_Y_VALUE_20,
	LIGER_COL_Y_VALUE_80,
	LIGER_COL_EXTRA_BENCHMARK_CONFIG_STR,
	LIGER_COL_GPU_NAME,
	LIGER_COL_TIMESTAMP,
	LIGER_COL_LIGER_VERSION,
	LIGER_NCOLUMNS
};

/* The header name of a column ("kernel_name" …); static storage. */
const char *liger_column_name(enum liger_column c);

/* ---- RFC 4180 CSV ---------------------------------------------------- */

/* One CSV record. field[i] points into the record's own storage and stays
 * valid until the next liger_csv_next() on the same record or
 * liger_record_free(). */
typedef struct liger_record {
	const char *field[LIGER_CSV_MAX_FIELDS];
	size_t len[LIGER_CSV_MAX_FIELDS];
	size_t nfields;
	size_t line;   /* 1-based line on which the record starts */
	ki_buf store;  /* the fields' bytes, each NUL-terminated */
} liger_record;

void liger_record_init(liger_record *r);
void liger_record_free(liger_record *r);

/* A reader over a borrowed text (valid while the reader is used). Records
 * end with CRLF or LF; a field is either unquoted (no '"' in it) or wholly
 * quoted, with "" for a quote, and may then hold commas, CR and LF. */
typedef struct liger_csv {
	const char *text;
	size_t len;
	size_t pos;
	size_t line;
} liger_csv;

void liger_csv_init(liger_csv *c, const char *text, size_t len);

/* Reads the next record into r. Returns 1 when a record was read, 0 at the
 * end of the text, KI_EINVAL for malformed CSV (err, if non-NULL, receives
 * "line N: …"; the reader then skips to the next line, so the caller may go
 * on), KI_ELIMIT for a record over the limits, or KI_ENOMEM. */
int liger_csv_next(liger_csv *c, liger_record *r, ki_buf *err);

/* Appends s (n bytes) as a CSV field, quoted only when it holds a comma, a
 * quote, CR or LF (Python's csv.QUOTE_MINIMAL). */
int liger_csv_put_field(ki_buf *out, const char *s, size_t n);

/* ---- Tables ---------------------------------------------------------- */

/* One row of the parameter-name mapping: the Liger config or x_name key
 * `liger`, in rows of `kernel` (NULL: any kernel without a row of its
 * own), is the workload parameter `canonical`. */
typedef struct liger_param_map {
	const char *kernel;
	const char *liger;
	const char *canonical;
} liger_param_map;

/* The whole mapping table (the single source of truth for the workload
 * parameter names); *n receives its length. Static storage. */
const liger_param_map *liger_param_table(size_t *n);

/* The canonical parameter name of Liger key `key` in rows of `kernel`: the
 * kernel's own row, else the generic row, else key itself (returned as
 * is). Static storage or the key. */
const char *liger_canonical_param(const char *kernel, const char *key);

/* One GPU as Liger names it (torch.cuda.get_device_name()). */
typedef struct liger_gpu {
	const char *gpu_name;     /* "NVIDIA A100-SXM4-80GB" */
	const char *slug;         /* "nvidia-a100-sxm4-80gb" */
	const char *product;      /* "NVIDIA A100" */
	const char *form_factor;  /* "SXM4-80GB" */
	const char *architecture; /* "sm_80" */
	const char *short_name;   /* "A100-SXM4-80GB", for titles */
	const char *vendor;       /* NULL: "nvidia" */
} liger_gpu;

/* The GPU table; *n receives its length. Static storage. */
const liger_gpu *liger_gpu_table(size_t *n);

/* The row for a Liger gpu_name or for a slug; NULL when unknown. */
const liger_gpu *liger_gpu_by_name(const char *gpu_name);
const liger_gpu *liger_gpu_by_slug(const char *slug);

/* ---- Formatting helpers ---------------------------------------------- */

/* Writes v in Python's repr() form ("7.484294414520264", "1e-06", "2.0"):
 * the shortest digits that read back as v. Returns the length, or KI_EINVAL
 * when v is not finite. */
int liger_format_double(double v, char out[32]);

/* ---- Row → bundle ---------------------------------------------------- */

/* A converter for the rows of one file: it knows the header. */
typedef struct liger_conv liger_conv;

/* Returns a new converter in *out (caller frees with liger_conv_free()),
 * or KI_ENOMEM. */
int liger_conv_new(liger_conv **out);
void liger_conv_free(liger_conv *c);

/* Takes the header record: every column of liger_column must be present
 * (in any order; other columns are ignored). Returns 0 or KI_EINVAL with a
 * message in err. */
int liger_conv_header(liger_conv *c, const liger_record *hdr, ki_buf *err);

/* Converts one data row into a bundle
 *   {"run", "protocol", "environment", "workload", "implementation"},
 * the run's digests computed from the other four. *out is owned by the
 * caller (json_object_put). A row is refused (KI_EINVAL, the reason in err:
 * "line N: column y_value_50: …") only when its field count differs from
 * the header's, a field holds a NUL byte, its figures are not finite
 * non-negative numbers in order (p20 <= median <= p80) in a metric the
 * index knows (speed in ms, memory in MB), or its timestamp is not one;
 * what the importer does not know (kernel, mode, dtype, GPU, config) is
 * kept as written and named in the LIGER_ANN_UNKNOWN annotation.
 * KI_ENOMEM otherwise. */
int liger_conv_row(liger_conv *c, const liger_record *row,
	struct json_object **out, ki_buf *err);

/* Called by liger_convert_text() for each data row: line is the CSV line,
 * bundle the converted row (borrowed, valid during the call; take a
 * reference to keep it) or NULL with the reason in msg. Returns 0 to go
 * on, anything else to stop (liger_convert_text() then returns it). */
typedef int (*liger_row_fn)(void *arg, size_t line,
	struct json_object *bundle, const char *msg);

/* Converts a whole CSV text: reads the header, makes the pre-pass, then
 * calls fn for each data row in order. Returns 0 when every row was handed
 * to fn (rows that failed included), KI_EINVAL when the header or the CSV
 * itself is unusable (err says why), KI_ENOMEM, or what fn returned. */
int liger_convert_text(const char *text, size_t len, liger_row_fn fn,
	void *arg, ki_buf *err);

/* ---- Run → CSV row (export) ------------------------------------------ */

/* Appends the CSV header line (CRLF-terminated) to out. */
int liger_csv_header(ki_buf *out);

/* Appends the CSV row (CRLF-terminated) a Liger run came from. run is a
 * BenchmarkRun (borrowed) as the importer wrote it: the figures come from
 * spec.sourceNative, the kernel, pass, provider, GPU and time from the
 * externalId, the Liger version from the label, and x_name, x_label,
 * x_value, extra_benchmark_config_str and gpu_name from the annotations;
 * `hint`, if non-NULL, is another run of the same sweep (same benchmark,
 * provider, GPU and timestamp) whose annotations stand in for missing
 * ones. Returns 0, KI_EINVAL when run is not a Liger run or misses
 * something that cannot be recovered (err says what), or KI_ENOMEM. */
int liger_run_to_csv(struct json_object *run, struct json_object *hint,
	ki_buf *out, ki_buf *err);

#endif
