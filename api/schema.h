/* api/schema.h — the spec schemas of every kind, and the validator that
 * walks a document against them. One table drives validation, pruning of
 * unknown fields and the OpenAPI document. */
#ifndef API_SCHEMA_H
#define API_SCHEMA_H

#include <json-c/json.h>
#include <stddef.h>

#include "api/status.h"
#include "lib/ki.h"

enum api_type {
	API_T_OBJECT = 1, /* fields: NULL-name-terminated array */
	API_T_MAP,        /* free-form keys; fields[0]: the value schema */
	API_T_ARRAY,      /* fields[0]: the item schema */
	API_T_STRING,
	API_T_NUMBER,     /* finite */
	API_T_INTEGER,
	API_T_BOOL,
	API_T_SCALAR,     /* string, number or bool */
};

enum api_field_flags {
	API_F_REQUIRED = 1u << 0,
	API_F_NONNEG = 1u << 1,   /* numbers: >= 0 */
	API_F_DIGEST = 1u << 2,   /* strings: sha256:<64 lowercase hex> */
	API_F_TIME = 1u << 3,     /* strings: RFC 3339 date-time */
	API_F_DNSNAME = 1u << 4,  /* strings: DNS-1123 subdomain */
	API_F_IDENT = 1u << 5,    /* strings: [a-z0-9]([a-z0-9_.-]*[a-z0-9])? */
	API_F_NONEMPTY = 1u << 6, /* strings, arrays, maps: at least one */
	API_F_NOCTL = 1u << 7,    /* strings: no U+0001..U+001F, U+007F */
};

typedef struct api_field {
	const char *name;
	int type;
	unsigned flags;
	const char *const *enums;        /* NULL-terminated, strings only */
	const struct api_field *fields;
	size_t max_len;                  /* strings/arrays/maps; 0 = default */
	const char *doc;
} api_field;

extern const api_field api_schema_run[];
extern const api_field api_schema_protocol[];
extern const api_field api_schema_environment[];
extern const api_field api_schema_workload[];
extern const api_field api_schema_implementation[];
extern const api_field api_schema_verification[];
extern const api_field api_schema_threshold[];
/* A Comparison's spec, for the OpenAPI document only (api/compare.c
 * checks a Comparison). */
extern const api_field api_schema_comparison[];

/* How unknown fields are treated: the fieldValidation query parameter. */
enum api_field_validation {
	API_FV_WARN = 0,   /* the default, as kube-apiserver's */
	API_FV_STRICT,
	API_FV_IGNORE,
};

/* Collects unknown-field paths found while validating. */
typedef struct api_unknown {
	char **paths;
	size_t n, cap;
} api_unknown;

void api_unknown_free(api_unknown *u);

/* Validates value (borrowed; unknown members are removed from it) against
 * the object schema fields at JSON path `path`. Problems become causes on
 * st; unknown fields are appended to unk. */
void api_schema_validate_object(struct json_object *value,
	const api_field *fields, const char *path, api_status *st,
	api_unknown *unk);

/* Validators shared with metadata and other checks. Each returns 1 when s
 * (n bytes) is well formed. */
int api_is_dns_subdomain(const char *s, size_t n);
int api_is_label_key(const char *s, size_t n);
int api_is_label_value(const char *s, size_t n);
/* Parses an RFC 3339 date-time; returns 1 and sets *secs (Unix) if valid. */
int api_parse_time(const char *s, double *secs);

/* A finite number from a json-c value (int or double); 0 if not a number. */
int api_json_number(struct json_object *v, double *out);

#endif
