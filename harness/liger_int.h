/* harness/liger_int.h — what the files of the Liger importer share: the
 * tables' row types, the normalized row, and the helpers for numbers,
 * names and JSON. Not an interface: harness/liger.h is. */
#ifndef HARNESS_LIGER_INT_H
#define HARNESS_LIGER_INT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/liger.h"
#include "lib/ki.h"

#define LG_API_VER "kernelindex.dev/v1alpha1"

/* The longest GPU slug (a label-friendly part of names and ids). */
#define LG_GPU_SLUG_MAX 63

/* The header names of the columns, in enum liger_column order. */
extern const char *const lg_column_names[LIGER_NCOLUMNS];

/* What the importer knows of each kernel's benchmark script. */
typedef struct kernel_info {
	const char *name;
	const char *title;
	/* the dtype the script uses when its config names none (NULL: not
	 * known, the workload's dtype is then "unknown") */
	const char *default_dtype;
	/* 1: the script's "backward" reruns the forward in every repetition */
	int backward_refwd;
} kernel_info;

/* torch dtype spellings → the workload's dtype and the externalId's short
 * form. */
typedef struct dtype_info {
	const char *torch;
	const char *name;
	const char *short_name;
} dtype_info;

enum proto_kind { PROTO_SPEED, PROTO_SPEED_REFWD, PROTO_MEMORY };

typedef struct proto_info {
	enum proto_kind kind;
	const char *pass;   /* Liger's kernel_operation_mode */
	const char *name;
	const char *title;
	const char *notes;
} proto_info;

const kernel_info *lg_kernel_by_name(const char *name);
const dtype_info *lg_dtype_by_torch(const char *s);

/* The schema's name of a dtype Liger spells "torch.<name>" that the dtype
 * table does not list (int64, int8, bool, …); NULL when the index has no
 * such dtype. */
const char *lg_dtype_schema_name(const char *torch_name);

/* The protocol of a known mode ("forward", "backward", "full",
 * "no-grad-forward"); NULL for other modes. */
const proto_info *lg_proto_for(enum proto_kind kind, const char *mode);

/* One data row, checked and normalized. */
typedef struct row {
	size_t line;
	const char *col[LIGER_NCOLUMNS];
	const kernel_info *kinfo;
	liger_gpu gpu;               /* the table's row, or one made up for
	                                an unknown GPU (strings in gpu_text) */
	int gpu_known;
	ki_buf gpu_text;
	const char *pass;            /* the workload's pass (static) */
	int mode_known;              /* a mode the importer has a protocol for */
	const char *dtype;           /* the workload's dtype (static) */
	ki_buf dtype_short;          /* its form in the workload slug */
	int memory;
	double y50, y20, y80;
	struct json_object *xval;    /* owned */
	struct json_object *params;  /* owned: canonical name → value */
	ki_buf sweep;                /* canonical name of x */
	char observed[32];           /* "2024-09-03T15:33:28.000Z" */
	char ts_slug[24];            /* "2024-09-03-15-33-28" */
	ki_buf kernel;               /* the workload's kernel (an identifier) */
	ki_buf provider;             /* the implementation's provider */
	ki_buf slug;                 /* the workload slug */
	ki_buf eid;                  /* the externalId */
	ki_buf name;                 /* the run's full (uncut) name */
	ki_buf unknown;              /* what the index does not know, "; "
	                                separated (empty: everything known) */
	int version_label;           /* liger_version is a label value */
} row;

void lg_row_init(row *r);
void lg_row_free(row *r);

/* Checks and normalizes one record into r (initialized). Returns 0,
 * KI_EINVAL with "line N: column C: …" in err (when non-NULL), or
 * KI_ENOMEM. hdr_idx maps each column to its field; nheader is the
 * header's field count. */
int lg_row_parse(const int hdr_idx[LIGER_NCOLUMNS], size_t nheader,
	const liger_record *rec, row *r, ki_buf *err);

/* ---- helpers (harness/liger_tables.c) -------------------------------- */

/* Appends s as a DNS-1123 subdomain fragment: lower-cased, every character
 * other than [a-z0-9.-] turned into '-', and no '.' next to a '-', a '.'
 * or an end. */
void lg_name_append(ki_buf *b, const char *s);

/* Cuts b to at most max bytes and drops trailing '-' and '.'. */
void lg_name_cut(ki_buf *b, size_t max);

/* Appends "-" and 8 hex digits of SHA-256(s). */
int lg_name_hash_suffix(ki_buf *b, const char *s, size_t n);

/* Fits a name into max bytes: kept whole when it fits, else cut to
 * max - 9 and given the hash suffix of its whole form. */
int lg_name_fit(ki_buf *b, size_t max);

/* Appends raw as a name fragment of at most max bytes that no other raw
 * text gives: raw itself when it is already one, else its
 * lg_name_append() form cut to max - 9 and "-" + 8 hex digits of
 * SHA-256(raw). Returns 0 or KI_ENOMEM. */
int lg_name_unique(ki_buf *b, const char *raw, size_t max);

/* Appends s as an externalId segment: '%', '/' and control characters
 * written as %XX, so that a segment never holds '/'. */
int lg_seg_escape(ki_buf *b, const char *s);

/* Decodes an externalId segment in place (the inverse of
 * lg_seg_escape). */
void lg_seg_unescape(char *s);

/* A label value in Kubernetes syntax (or empty). */
int lg_label_value_ok(const char *s);

/* Whole-string parses: a finite double, a decimal int64. Return 0 or
 * KI_EINVAL. */
int lg_parse_double(const char *s, double *out);
int lg_parse_int(const char *s, int64_t *out);

/* A json-c double that serializes as Python's repr() of it; NULL when out
 * of memory or not finite. */
struct json_object *lg_new_double(double v);

/* Adds val under key to o, consuming val. Returns 0 or KI_ENOMEM (val is
 * freed then; a NULL val is KI_ENOMEM). */
int lg_put(struct json_object *o, const char *key, struct json_object *val);
int lg_put_str(struct json_object *o, const char *key, const char *s);

/* Appends the text a parameter value takes in a workload slug. */
int lg_slug_value(ki_buf *b, struct json_object *v);

int lg_cmp_str(const void *a, const void *b);

#endif
