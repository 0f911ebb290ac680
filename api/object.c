/* api/object.c — parsing, validating, digesting and rendering documents. */
#include "api/object.h"

#include <errno.h>
#include <math.h>
#include <openssl/rand.h>
#include <sys/random.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/validate.h"
#include "lib/jsonlex.h"

#define MAX_LABELS 64
#define MAX_TITLE 256
#define MAX_ANNOTATION_BYTES (256 * 1024)

void
api_prerender_free(api_prerender *p)
{
	if (p == NULL)
		return;
	ki_buf_free(&p->json);
	ki_buf_free(&p->labels);
	free(p);
}

void
api_doc_free(api_doc *d)
{
	api_prerender_free(d->pre);
	if (d->obj != NULL)
		json_object_put(d->obj);
	ki_buf_free(&d->canon);
	ki_buf_free(&d->natkey);
	ki_buf_free(&d->raw);
	free(d->own_name);
	free(d->stored_name);
	free(d->scope_source);
	memset(d, 0, sizeof(*d));
}

struct json_object *
api_doc_obj(api_doc *d)
{
	if (d->obj == NULL && d->raw.len > 0)
		d->obj = api_json_parse_len(d->raw.data, d->raw.len);
	return d->obj;
}

/* Checks what json-c 0.16 lets through: UTF-8 must be well formed (RFC
 * 3629: no overlong forms, no surrogates, nothing above U+10FFFF), strings
 * must not hold raw control characters, and outside strings there may be
 * no single quotes and no NaN or Infinity. Returns NULL, or why, with the
 * byte offset in *at. */
static const char *
check_text(const char *text, size_t len, size_t *at)
{
	const unsigned char *s = (const unsigned char *)text;
	int in_str = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned c = s[i];

		*at = i;
		if (c >= 0x80) {
			size_t n = ki_utf8_len(s + i, len - i);

			if (n == 0)
				return "invalid UTF-8 (a malformed, overlong or surrogate "
				    "sequence, or one beyond U+10FFFF)";
			i += n - 1;
			continue;
		}
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
			else if (c < 0x20)
				return "a control character inside a string must be "
				    "escaped";
			continue;
		}
		if (c == '"') {
			in_str = 1;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			/* json-c's strict mode reads "00", "5." and "1.e2" (as
			 * 0, 5 and 100): RFC 8259's grammar, and nothing
			 * that continues a number after it. */
			jsonlex_num num;

			if (jsonlex_number(s, len, i, &num) != KI_OK ||
			    (num.end < len &&
			    memchr("0123456789.eE+-", s[num.end], 15) != NULL))
				return "a number not written as JSON writes one "
				    "(a leading zero, a sign other than a leading "
				    "'-', or a '.' or an exponent with no digit "
				    "after it)";
			i = num.end - 1;
		} else if (c == '\'') {
			return "strings are quoted with \", not '";
		} else if (c == 'N' || c == 'I') {
			return "NaN and Infinity are not JSON numbers";
		}
	}
	return NULL;
}

/* Is the double in [2^63, 10^21) in magnitude: written by RFC 8785 as an
 * integer literal beyond what json-c reads back exactly? */
static int
is_inexact(double d)
{
	d = fabs(d);
	return d >= 9223372036854775808.0 && d < 1e21;
}

/* Does the tree hold an inexact number anywhere? The walk builds no path:
 * nearly every document has none, and find_inexact names the first. */
static int
has_inexact(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_double:
		return is_inexact(json_object_get_double(v));
	case json_type_object: {
		json_object_object_foreach(v, key, val) {
			(void)key;
			if (val != NULL && has_inexact(val))
				return 1;
		}
		return 0;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			struct json_object *item = json_object_array_get_idx(v, i);

			if (item != NULL && has_inexact(item))
				return 1;
		}
		return 0;
	default:
		return 0;
	}
}

/* Finds a number that RFC 8785 would write as an integer literal beyond
 * what json-c reads back exactly (magnitude in [2^63, 10^21)); appends its
 * path to path and returns 1, else 0. */
static int
find_inexact(struct json_object *v, ki_buf *path)
{
	size_t base = path->len;

	switch (json_object_get_type(v)) {
	case json_type_double:
		return is_inexact(json_object_get_double(v));
	case json_type_object: {
		/* Braced: the foreach macro declares variables. */
		json_object_object_foreach(v, key, val) {
			ki_buf_printf(path, "%s%s", base ? "." : "", key);
			if (val != NULL && find_inexact(val, path))
				return 1;
			path->len = base;
			if (path->data)
				path->data[base] = '\0';
		}
		return 0;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			struct json_object *item = json_object_array_get_idx(v, i);

			ki_buf_printf(path, "[%zu]", i);
			if (item != NULL && find_inexact(item, path))
				return 1;
			path->len = base;
			if (path->data)
				path->data[base] = '\0';
		}
		return 0;
	default:
		return 0;
	}
}

/* ---- the fast parser ----
 *
 * json-c's tokener and the text checks around it (check_text, the duplicate
 * and lossy scans, find_inexact) read an upload five times. Nearly every
 * upload is plain: one pass can parse it and prove that every check would
 * pass. fast_parse builds the tree json-c would build (the same kinds of
 * objects in the same order: int64 for integer literals, doubles keeping
 * their text as json-c's _s doubles do) and gives up, leaving the decision
 * to the full path, on anything it does not prove: a grammar error, a raw
 * control character or malformed UTF-8, a \u0000 or lone surrogate escape,
 * an integer of 19 digits or more, a double out of range or in [2^63,
 * 10^21), a duplicate key, deep nesting, a top level that is not an
 * object. So it accepts a subset of what the full path accepts, with the
 * same tree. */

/* Member names the schemas know, interned: the fast parser adds them to
 * json-c objects as constant keys (no copy made and freed per member). A
 * name not here is copied as before; the table only saves work. */
#define INTERN_SLOTS 1024u   /* a power of two, over twice the names */

static const char *intern_slot[INTERN_SLOTS];
static pthread_once_t intern_once = PTHREAD_ONCE_INIT;

static uint32_t
intern_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;   /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static void
intern_add(const char *name)
{
	size_t n = strlen(name);
	uint32_t i = intern_hash(name, n) & (INTERN_SLOTS - 1);
	size_t probes = 0;

	while (intern_slot[i] != NULL) {
		if (strcmp(intern_slot[i], name) == 0)
			return;
		/* Never full: keep a quarter free so that lookups end. */
		if (++probes >= INTERN_SLOTS / 4 * 3)
			return;
		i = (i + 1) & (INTERN_SLOTS - 1);
	}
	intern_slot[i] = name;
}

static void intern_fields(const api_field *f, int level);

/* The names under one value's schema: an object's members, or those of a
 * map's values or an array's items (their one schema, fields[0]). */
static void
intern_value(const api_field *f, int level)
{
	if (f->fields == NULL || level >= 16)
		return;
	if (f->type == API_T_OBJECT)
		intern_fields(f->fields, level + 1);
	else if (f->type == API_T_MAP || f->type == API_T_ARRAY)
		intern_value(&f->fields[0], level + 1);
}

static void
intern_fields(const api_field *f, int level)
{
	for (; f->name != NULL; f++) {
		intern_add(f->name);
		intern_value(f, level);
	}
}

static void
intern_init(void)
{
	static const char *const envelope[] = { "apiVersion", "kind",
		"metadata", "spec", "status", "name", "labels", "annotations",
		"title", "uid", "resourceVersion", "creationTimestamp",
		"generation", "run", "protocol", "environment", "workload",
		"implementation", "items", NULL };
	static const api_field *const kinds[] = { api_schema_run,
		api_schema_protocol, api_schema_environment, api_schema_workload,
		api_schema_implementation, api_schema_verification };

	for (size_t i = 0; envelope[i] != NULL; i++)
		intern_add(envelope[i]);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		intern_fields(kinds[i], 0);
}

/* The interned copy of s (n bytes, no NUL among them), or NULL. */
static const char *
intern_find(const char *s, size_t n)
{
	uint32_t i = intern_hash(s, n) & (INTERN_SLOTS - 1);

	while (intern_slot[i] != NULL) {
		if (strncmp(intern_slot[i], s, n) == 0 &&
		    intern_slot[i][n] == '\0')
			return intern_slot[i];
		i = (i + 1) & (INTERN_SLOTS - 1);
	}
	return NULL;
}

typedef struct fast_parser {
	const unsigned char *t;
	size_t n, i;
	int max_level;   /* containers deeper than this give up */
	ki_buf scratch;  /* decoded keys and strings with escapes */
} fast_parser;

static void
fast_ws(fast_parser *p)
{
	p->i = jsonlex_ws(p->t, p->n, p->i);
}

/* Reads the string whose quote is at p->i (strictly: see lib/jsonlex.h).
 * Its bytes are in the text (*s, *len) when it has no escape, else
 * decoded into p->scratch; with to_scratch they are always copied there,
 * NUL-terminated (keys). Returns 0, or -1 to give up. */
static int
fast_string(fast_parser *p, int to_scratch, const char **s, size_t *len)
{
	jsonlex_str js;

	ki_buf_reset(&p->scratch);
	if (jsonlex_string(p->t, p->n, p->i, JSONLEX_STRICT, &p->scratch,
	    &js) != KI_OK)
		return -1;
	if (!js.decoded && !to_scratch) {
		*s = (const char *)p->t + p->i + 1;
		*len = js.end - p->i - 2;
		p->i = js.end;
		return 0;
	}
	if ((!js.decoded && ki_buf_append(&p->scratch, p->t + p->i + 1,
	    js.end - p->i - 2) != KI_OK) ||
	    ki_buf_reserve(&p->scratch, 0) != KI_OK)
		return -1;
	p->i = js.end;
	*s = p->scratch.data;
	*len = p->scratch.len;
	return 0;
}

/* Reads a number literal at p->i into *out. Returns 0, or -1 to give
 * up. */
static int
fast_number(fast_parser *p, struct json_object **out)
{
	const unsigned char *t = p->t;
	size_t start = p->i, i;
	jsonlex_num num;
	char lit[64];

	if (jsonlex_number(t, p->n, start, &num) != KI_OK)
		return -1;
	p->i = i = num.end;
	if (num.is_int) {
		int64_t v = 0;

		/* 19 digits may leave the int64 range: the lossy check
		 * decides. */
		if (num.digits > 18)
			return -1;
		for (size_t k = start + (size_t)num.neg; k < i; k++)
			v = v * 10 + (t[k] - '0');
		*out = json_object_new_int64(num.neg ? -v : v);
	} else {
		char *end;
		double d;

		if (i - start >= sizeof(lit))
			return -1;
		memcpy(lit, t + start, i - start);
		lit[i - start] = '\0';
		errno = 0;
		d = strtod(lit, &end);
		if (end != lit + (i - start) || errno != 0 || !isfinite(d) ||
		    is_inexact(d))
			return -1;
		*out = json_object_new_double_s(d, lit);
	}
	return *out != NULL ? 0 : -1;
}

static int fast_value(fast_parser *p, int level, struct json_object **out);

/* Objects with fewer members than this look for a duplicate key by
 * walking them, not through json-c's hashed lookup. */
#define SCAN_KEYS 16

/* Whether o (built by fast_object) has the member key; ikey is key's
 * interned copy or NULL. Every key fast_object adds that the intern table
 * holds is that copy, so an interned key is found by its address. */
static int
fast_has_key(struct json_object *o, size_t members, const char *key,
	const char *ikey)
{
	struct lh_entry *e;

	if (members >= SCAN_KEYS)
		return json_object_object_get_ex(o, key, NULL);
	for (e = lh_table_head(json_object_get_object(o)); e != NULL;
	    e = lh_entry_next(e)) {
		const char *k = lh_entry_k(e);

		if (ikey != NULL ? k == ikey : strcmp(k, key) == 0)
			return 1;
	}
	return 0;
}

/* Reads the object whose brace is at p->i. */
static int
fast_object(fast_parser *p, int level, struct json_object **out)
{
	struct json_object *o, *v = NULL;
	char small[128], *key = small;
	const char *k, *ikey;
	size_t klen, members = 0;
	int rc = -1;

	if (level > p->max_level || (o = json_object_new_object()) == NULL)
		return -1;
	p->i++;
	fast_ws(p);
	if (p->i < p->n && p->t[p->i] == '}') {
		p->i++;
		*out = o;
		return 0;
	}
	for (;;) {
		if (p->i >= p->n || p->t[p->i] != '"' ||
		    fast_string(p, 1, &k, &klen) != 0)
			goto out;
		/* The value reuses the scratch: the key moves out first,
		 * unless it is a name the schemas know (fast_string gave up
		 * on any NUL). */
		ikey = intern_find(k, klen);
		if (ikey == NULL) {
			if (klen >= sizeof(small)) {
				if ((key = malloc(klen + 1)) == NULL)
					goto out;
			}
			memcpy(key, k, klen + 1);
		}
		fast_ws(p);
		if (p->i >= p->n || p->t[p->i] != ':')
			goto out;
		p->i++;
		fast_ws(p);
		/* A duplicate: the full path names it. */
		if (fast_has_key(o, members, ikey != NULL ? ikey : key, ikey) ||
		    fast_value(p, level, &v) != 0)
			goto out;
		/* Checked just above: no second lookup. */
		if (json_object_object_add_ex(o, ikey != NULL ? ikey : key, v,
		    ikey != NULL ? JSON_C_OBJECT_ADD_KEY_IS_NEW |
		    JSON_C_OBJECT_ADD_CONSTANT_KEY :
		    JSON_C_OBJECT_ADD_KEY_IS_NEW) != 0) {
			json_object_put(v);
			goto out;
		}
		members++;
		if (key != small) {
			free(key);
			key = small;
		}
		fast_ws(p);
		if (p->i >= p->n)
			goto out;
		if (p->t[p->i] == ',') {
			p->i++;
			fast_ws(p);
			continue;
		}
		if (p->t[p->i] != '}')
			goto out;
		p->i++;
		rc = 0;
		break;
	}
out:
	if (key != small)
		free(key);
	if (rc == 0)
		*out = o;
	else
		json_object_put(o);
	return rc;
}

/* Reads the array whose bracket is at p->i. */
static int
fast_array(fast_parser *p, int level, struct json_object **out)
{
	struct json_object *a, *v;

	if (level > p->max_level || (a = json_object_new_array()) == NULL)
		return -1;
	p->i++;
	fast_ws(p);
	if (p->i < p->n && p->t[p->i] == ']') {
		p->i++;
		*out = a;
		return 0;
	}
	for (;;) {
		if (fast_value(p, level, &v) != 0)
			goto fail;
		if (json_object_array_add(a, v) != 0) {
			json_object_put(v);
			goto fail;
		}
		fast_ws(p);
		if (p->i >= p->n)
			goto fail;
		if (p->t[p->i] == ',') {
			p->i++;
			fast_ws(p);
			continue;
		}
		if (p->t[p->i] != ']')
			goto fail;
		p->i++;
		*out = a;
		return 0;
	}
fail:
	json_object_put(a);
	return -1;
}

/* Reads the value at p->i, inside level containers, into *out (NULL for
 * null, as json-c has it). Returns 0, or -1 to give up. */
static int
fast_value(fast_parser *p, int level, struct json_object **out)
{
	const char *s;
	size_t len;

	*out = NULL;
	if (p->i >= p->n)
		return -1;
	switch (p->t[p->i]) {
	case '{':
		return fast_object(p, level + 1, out);
	case '[':
		return fast_array(p, level + 1, out);
	case '"':
		if (fast_string(p, 0, &s, &len) != 0 || len > INT32_MAX)
			return -1;
		*out = json_object_new_string_len(s, (int)len);
		return *out != NULL ? 0 : -1;
	case 't':
		if (p->n - p->i < 4 || memcmp(p->t + p->i, "true", 4) != 0)
			return -1;
		p->i += 4;
		*out = json_object_new_boolean(1);
		return *out != NULL ? 0 : -1;
	case 'f':
		if (p->n - p->i < 5 || memcmp(p->t + p->i, "false", 5) != 0)
			return -1;
		p->i += 5;
		*out = json_object_new_boolean(0);
		return *out != NULL ? 0 : -1;
	case 'n':
		if (p->n - p->i < 4 || memcmp(p->t + p->i, "null", 4) != 0)
			return -1;
		p->i += 4;
		return 0;
	default:
		return fast_number(p, out);
	}
}

/* Parses text when it is a plain object (see above): 0 and *out (the
 * caller puts it), or -1 and nothing when the full path must decide. */
static int
fast_parse(const char *text, size_t len, int max_depth,
	struct json_object **out)
{
	fast_parser p;
	int rc;

	memset(&p, 0, sizeof(p));
	p.t = (const unsigned char *)text;
	p.n = len;
	/* json-c counts every value's level against max_depth; staying
	 * three below keeps clear of its exact boundary. */
	p.max_level = max_depth - 3;
	ki_buf_init(&p.scratch);
	*out = NULL;
	pthread_once(&intern_once, intern_init);
	fast_ws(&p);
	if (len > INT32_MAX || p.i >= p.n || p.t[p.i] != '{') {
		rc = -1;
		goto out;
	}
	rc = fast_object(&p, 1, out);
	if (rc == 0) {
		fast_ws(&p);
		if (p.i != p.n) {
			json_object_put(*out);
			*out = NULL;
			rc = -1;
		}
	}
out:
	ki_buf_free(&p.scratch);
	return rc;
}

int
api_json_parse(const char *text, size_t len, int max_depth,
	struct json_object **out, api_status *st)
{
	json_tokener *tok;
	struct json_object *obj;
	enum json_tokener_error err;
	size_t end;
	ki_buf path;
	int rc;

	if (fast_parse(text, len, max_depth, out) == 0)
		return KI_OK;
	if (len == 0) {
		api_status_fail(st, 400, "BadRequest", "the request body is empty; "
		    "send a JSON document");
		return KI_EINVAL;
	}
	if (len > INT32_MAX) {
		api_status_fail(st, 413, "RequestEntityTooLarge",
		    "the request body is too large");
		return KI_EINVAL;
	}
	{
		size_t at = 0;
		const char *why = check_text(text, len, &at);

		if (why != NULL) {
			api_status_fail(st, 400, "BadRequest", "the body is not valid "
			    "JSON: %s at byte %zu", why, at);
			return KI_EINVAL;
		}
	}
	tok = json_tokener_new_ex(max_depth);
	if (tok == NULL) {
		api_status_from_rc(st, KI_ENOMEM, "parsing the body");
		return KI_ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, text, (int)len);
	err = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (obj == NULL && err == json_tokener_continue) {
		/* A bare number at the very end ends only with the input: json-c
		 * needs to see the terminating NUL. */
		size_t before = end;

		obj = json_tokener_parse_ex(tok, "", 1);
		err = json_tokener_get_error(tok);
		if (err != json_tokener_success) {
			/* Truly truncated: say so. */
			if (obj != NULL)
				json_object_put(obj);
			obj = NULL;
			err = json_tokener_continue;
		}
		end = before;
	}
	json_tokener_free(tok);
	if (err == json_tokener_continue) {
		api_status_fail(st, 400, "BadRequest", "the body is not valid JSON: "
		    "unexpected end of input after %zu bytes", len);
		goto fail;
	}
	if (err == json_tokener_error_depth) {
		api_status_fail(st, 400, "BadRequest", "the body is not accepted: "
		    "JSON nested deeper than %d levels", max_depth);
		goto fail;
	}
	if (err != json_tokener_success) {
		api_status_fail(st, 400, "BadRequest", "the body is not valid JSON: "
		    "%s at byte %zu", json_tokener_error_desc(err), end);
		goto fail;
	}
	while (end < len && (text[end] == ' ' || text[end] == '\n' ||
	    text[end] == '\r' || text[end] == '\t'))
		end++;
	if (end < len) {
		api_status_fail(st, 400, "BadRequest", "the body is not valid JSON: "
		    "unexpected data after the document at byte %zu", end);
		goto fail;
	}
	ki_buf_init(&path);
	rc = api_json_find_duplicate_key(text, len, &path);
	if (rc == 1) {
		api_status_fail(st, 400, "BadRequest", "the body is not accepted: "
		    "duplicate field \"%s\"", path.data ? path.data : "");
		api_status_cause(st, "FieldValueDuplicate",
		    path.data ? path.data : "", "Duplicate value: the key appears "
		    "more than once in one object");
		ki_buf_free(&path);
		goto fail;
	}
	if (rc < 0) {
		ki_buf_free(&path);
		if (rc == KI_EINVAL)
			api_status_fail(st, 400, "BadRequest", "the body is not valid "
			    "JSON");
		else
			api_status_from_rc(st, rc, "parsing the body");
		goto fail;
	}
	ki_buf_reset(&path);
	{
		const char *why = NULL;

		/* json-c clamps out-of-range integers and replaces lone
		 * surrogates: such a document would not read back as sent, and two
		 * different documents could share a digest. */
		rc = api_json_find_lossy(text, len, &path, &why);
		if (rc == 1) {
			api_status_fail(st, 400, "BadRequest", "the body is not "
			    "accepted: %s at \"%s\"", why ? why : "a lossy value",
			    path.data ? path.data : "");
			api_status_cause(st, "FieldValueInvalid",
			    path.data ? path.data : "", "Invalid value: %s",
			    why ? why : "cannot be represented exactly");
			ki_buf_free(&path);
			goto fail;
		}
	}
	if (rc == 0) {
		ki_buf_reset(&path);
		if (has_inexact(obj) && find_inexact(obj, &path)) {
			api_status_fail(st, 400, "BadRequest", "the body is not "
			    "accepted: a number at \"%s\" is 2^63 or more in magnitude "
			    "and below 10^21, which the canonical form would write as an "
			    "integer that cannot be read back exactly",
			    path.data ? path.data : "");
			api_status_cause(st, "FieldValueInvalid",
			    path.data ? path.data : "", "Invalid value: must be below "
			    "2^63 in magnitude");
			ki_buf_free(&path);
			goto fail;
		}
	}
	ki_buf_free(&path);
	if (rc < 0) {
		if (rc == KI_EINVAL)
			api_status_fail(st, 400, "BadRequest", "the body is not valid "
			    "JSON");
		else
			api_status_from_rc(st, rc, "parsing the body");
		goto fail;
	}
	rc = api_json_mend_astral(text, len, max_depth, &obj);
	if (rc != KI_OK) {
		api_status_from_rc(st, rc, "parsing the body");
		goto fail;
	}
	*out = obj;
	return KI_OK;
fail:
	if (obj != NULL)
		json_object_put(obj);
	return KI_EINVAL;
}

struct json_object *
api_json_parse_len(const char *s, size_t n)
{
	json_tokener *tok;
	struct json_object *o;

	if (n > INT32_MAX || (tok = json_tokener_new()) == NULL)
		return NULL;
	o = json_tokener_parse_ex(tok, s, (int)n);
	if (json_tokener_get_error(tok) != json_tokener_success && o != NULL) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

const char *
api_json_str_at(struct json_object *o, const char *a, const char *b)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, a, &v))
		return NULL;
	if (b != NULL && !json_object_object_get_ex(v, b, &v))
		return NULL;
	return json_object_is_type(v, json_type_string) ?
	    json_object_get_string(v) : NULL;
}

struct json_object *
api_ref_spec(store_txn *txn, const uint8_t *d, int kind)
{
	store_obj o;

	if (store_get_by_digest(txn, d, &o) != KI_OK || o.kind != kind)
		return NULL;
	return api_json_parse_len(o.json + o.spec_off, o.spec_len);
}

/* Parsed specs of referenced objects. A digest names one content for
 * ever, so a spec parsed once serves every later run that references it
 * (harnesses upload thousands of runs of one environment, workload and
 * implementation); whether an object with that digest is stored is still
 * read from the store each time. One cache per thread: json-c's reference
 * counts are not atomic. */
#define SPEC_CACHE 8

typedef struct spec_cache {
	size_t next;
	struct {
		uint8_t digest[API_DIGEST_LEN];
		struct json_object *spec;
	} e[SPEC_CACHE];
} spec_cache;

static pthread_key_t spec_key;
static pthread_once_t spec_once = PTHREAD_ONCE_INIT;
static int spec_key_ok;

static void
spec_cache_free(void *arg)
{
	spec_cache *c = arg;

	for (size_t i = 0; i < SPEC_CACHE; i++)
		if (c->e[i].spec != NULL)
			json_object_put(c->e[i].spec);
	free(c);
}

static void
spec_key_make(void)
{
	spec_key_ok = pthread_key_create(&spec_key, spec_cache_free) == 0;
}

/* o's spec (o stored under digest) as a tree the caller puts, or NULL. */
static struct json_object *
cached_spec(const uint8_t *digest, const store_obj *o)
{
	spec_cache *c = NULL;
	struct json_object *spec;

	pthread_once(&spec_once, spec_key_make);
	if (spec_key_ok && (c = pthread_getspecific(spec_key)) == NULL &&
	    (c = calloc(1, sizeof(*c))) != NULL &&
	    pthread_setspecific(spec_key, c) != 0) {
		free(c);
		c = NULL;
	}
	for (size_t i = 0; c != NULL && i < SPEC_CACHE; i++)
		if (c->e[i].spec != NULL &&
		    memcmp(c->e[i].digest, digest, API_DIGEST_LEN) == 0)
			return json_object_get(c->e[i].spec);
	spec = api_json_parse_len(o->json + o->spec_off, o->spec_len);
	if (c != NULL && spec != NULL) {
		size_t i = c->next++ % SPEC_CACHE;

		if (c->e[i].spec != NULL)
			json_object_put(c->e[i].spec);
		memcpy(c->e[i].digest, digest, API_DIGEST_LEN);
		c->e[i].spec = json_object_get(spec);
	}
	return spec;
}

void
api_run_refs_load(store_txn *txn, const uint8_t *refs, size_t nrefs,
	api_run_refs *out)
{
	static const int kinds[API_NREFS] = { API_PROTOCOL, API_WORKLOAD,
		API_ENVIRONMENT, API_IMPLEMENTATION };

	memset(out, 0, sizeof(*out));
	if (nrefs != API_NREFS)
		return;
	out->loaded = 1;
	for (int i = 0; i < API_NREFS; i++) {
		store_obj o;
		int rc = store_get_by_digest(txn, refs + i * API_DIGEST_LEN, &o);

		if (rc != KI_OK) {
			if (rc != KI_ENOTFOUND && out->rc == KI_OK)
				out->rc = rc;
			continue;
		}
		if (o.kind != kinds[i])
			continue;
		out->resolved[i] = 1;
		out->seq[i] = o.seq;
		if ((out->name[i] = strndup(o.name, o.name_len)) == NULL &&
		    out->rc == KI_OK)
			out->rc = KI_ENOMEM;
		/* The protocol's spec is read by neither labels nor
		 * plausibility. */
		if (i != API_REF_PROTOCOL)
			out->spec[i] = cached_spec(refs + i * API_DIGEST_LEN, &o);
	}
}

void
api_run_refs_free(api_run_refs *rr)
{
	for (int i = 0; i < API_NREFS; i++) {
		if (rr->spec[i] != NULL)
			json_object_put(rr->spec[i]);
		free(rr->name[i]);
		rr->spec[i] = NULL;
		rr->name[i] = NULL;
	}
}

/* Joins a prefix and a field path: ("run", "spec.x") -> "run.spec.x". */
static void
join(char *out, size_t n, const char *prefix, const char *field)
{
	size_t k = 0;

	/* What snprintf wrote, cut at n - 1 bytes, without its cost: every
	 * key of every metadata passes here. */
	for (; *prefix != '\0' && k + 1 < n; prefix++)
		out[k++] = *prefix;
	if (k > 0 && k + 1 < n)
		out[k++] = '.';
	for (; *field != '\0' && k + 1 < n; field++)
		out[k++] = *field;
	out[k] = '\0';
}

static void
check_string_map(struct json_object *m, const char *path, int labels,
	api_status *st)
{
	char p[512];
	size_t n = 0, bytes = 0;

	if (!json_object_is_type(m, json_type_object)) {
		api_status_cause(st, "FieldValueInvalid", path,
		    "Invalid value: must be an object of string values");
		return;
	}
	json_object_object_foreach(m, key, val) {
		size_t klen = strlen(key);

		snprintf(p, sizeof(p), "%s.%s", path, key);
		n++;
		if (!api_is_label_key(key, klen))
			api_status_cause(st, "FieldValueInvalid", path,
			    "Invalid value: \"%.200s\": a key must be a qualified name: "
			    "an optional DNS subdomain prefix and '/', then 1 to 63 "
			    "alphanumeric characters, '-', '_' or '.', starting and "
			    "ending with an alphanumeric character", key);
		if (!json_object_is_type(val, json_type_string)) {
			api_status_cause(st, "FieldValueInvalid", p,
			    "Invalid value: must be of type string");
			continue;
		}
		bytes += klen + (size_t)json_object_get_string_len(val);
		if (labels && !api_is_label_value(json_object_get_string(val),
		    (size_t)json_object_get_string_len(val)))
			api_status_cause(st, "FieldValueInvalid", p,
			    "Invalid value: \"%.100s\": a label value must be empty "
			    "or 1 to 63 alphanumeric characters, '-', '_' or '.', "
			    "starting and ending with an alphanumeric character",
			    json_object_get_string(val));
	}
	if (labels && n > MAX_LABELS)
		api_status_cause(st, "FieldValueTooMany", path,
		    "Too many: %zu: must have at most %d labels", n, MAX_LABELS);
	if (!labels && bytes > MAX_ANNOTATION_BYTES)
		api_status_cause(st, "FieldValueTooLong", path,
		    "Too long: must have at most %d bytes", MAX_ANNOTATION_BYTES);
}

static int
is_server_managed(const char *key)
{
	static const char *const keys[] = { "uid", "resourceVersion",
		"creationTimestamp", "generation", "managedFields", "selfLink",
		"deletionTimestamp", "deletionGracePeriodSeconds", NULL };

	for (const char *const *k = keys; *k != NULL; k++) {
		if (strcmp(*k, key) == 0)
			return 1;
	}
	return 0;
}

static void
check_metadata(struct json_object *meta, const char *prefix, api_status *st,
	api_unknown *unk)
{
	const char *drop[32];
	size_t ndrop = 0;
	char p[256];

	json_object_object_foreach(meta, key, val) {
		join(p, sizeof(p), prefix, "metadata.");
		strncat(p, key, sizeof(p) - strlen(p) - 1);
		if (strcmp(key, "name") == 0) {
			if (!json_object_is_type(val, json_type_string)) {
				api_status_cause(st, "FieldValueInvalid", p,
				    "Invalid value: must be of type string");
			} else if (!api_is_dns_subdomain(json_object_get_string(val),
			    (size_t)json_object_get_string_len(val))) {
				api_status_cause(st, "FieldValueInvalid", p,
				    "Invalid value: \"%.253s\": a lowercase RFC 1123 "
				    "subdomain must consist of lower case alphanumeric "
				    "characters, '-' or '.', must start and end with an "
				    "alphanumeric character, and be at most 253 characters",
				    json_object_get_string(val));
			}
		} else if (strcmp(key, "title") == 0) {
			if (!json_object_is_type(val, json_type_string))
				api_status_cause(st, "FieldValueInvalid", p,
				    "Invalid value: must be of type string");
			else if (json_object_get_string_len(val) > MAX_TITLE)
				api_status_cause(st, "FieldValueTooLong", p,
				    "Too long: may not be more than %d bytes", MAX_TITLE);
		} else if (strcmp(key, "labels") == 0) {
			if (val != NULL)
				check_string_map(val, p, 1, st);
		} else if (strcmp(key, "annotations") == 0) {
			if (val != NULL)
				check_string_map(val, p, 0, st);
		} else if (is_server_managed(key)) {
			if (ndrop < sizeof(drop) / sizeof(drop[0]))
				drop[ndrop++] = key;
		} else {
			if (unk != NULL && unk->n < API_MAX_CAUSES) {
				char **np = unk->n == unk->cap ? realloc(unk->paths,
				    (unk->cap ? unk->cap * 2 : 8) * sizeof(char *)) :
				    unk->paths;

				if (np != NULL) {
					if (unk->n == unk->cap)
						unk->cap = unk->cap ? unk->cap * 2 : 8;
					unk->paths = np;
					if ((unk->paths[unk->n] = strdup(p)) != NULL)
						unk->n++;
				}
			}
			if (ndrop < sizeof(drop) / sizeof(drop[0]))
				drop[ndrop++] = key;
		}
	}
	for (size_t i = 0; i < ndrop; i++)
		json_object_object_del(meta, drop[i]);
	join(p, sizeof(p), prefix, "metadata.name");
	if (!json_object_object_get_ex(meta, "name", NULL))
		api_status_cause(st, "FieldValueRequired", p,
		    "Required value: name is required");
}


void
api_doc_prepare(api_doc *d, struct json_object *obj, const char *path,
	const api_kind *expect, api_status *st, api_unknown *unk)
{
	struct json_object *meta = NULL, *spec = NULL;
	const char *apiv, *kind;
	size_t before = st->ncauses;
	const char *drop[32];
	size_t ndrop = 0;
	char p[256];
	int rc;

	memset(d, 0, sizeof(*d));
	ki_buf_init(&d->canon);
	ki_buf_init(&d->natkey);
	d->obj = obj;
	join(d->path, sizeof(d->path), "", path);
	if (!json_object_is_type(obj, json_type_object)) {
		api_status_cause(st, "FieldValueInvalid", *path ? path : "<root>",
		    "Invalid value: a document must be a JSON object");
		return;
	}
	apiv = api_json_str_at(obj, "apiVersion", NULL);
	kind = api_json_str_at(obj, "kind", NULL);
	if (kind == NULL) {
		api_status_fail(st, 400, "BadRequest", "%s%sObject 'Kind' is "
		    "missing: every document needs \"apiVersion\": \""
		    API_GROUP_VERSION "\" and a \"kind\"", path, *path ? ": " : "");
		return;
	}
	d->kind = api_kind_by_kind(kind);
	if (d->kind == NULL) {
		api_status_fail(st, 400, "BadRequest", "%s%sno kind \"%.64s\" is "
		    "registered for version \"" API_GROUP_VERSION "\"; the kinds are "
		    "BenchmarkRun, BenchmarkProtocol, ExecutionEnvironment, Workload, "
		    "Implementation and Verification", path, *path ? ": " : "", kind);
		return;
	}
	if (apiv == NULL || strcmp(apiv, API_GROUP_VERSION) != 0) {
		api_status_fail(st, 400, "BadRequest", "%s%sthe API version \"%.64s\" "
		    "is not served: use \"" API_GROUP_VERSION "\"", path,
		    *path ? ": " : "", apiv ? apiv : "");
		return;
	}
	if (expect != NULL && expect != d->kind) {
		if (*path != '\0' && expect->bundle_part != NULL &&
		    strcmp(path + (strrchr(path, '.') ? (size_t)(strrchr(path, '.') -
		    path) + 1 : 0), expect->bundle_part) == 0) {
			join(p, sizeof(p), path, "kind");
			api_status_cause(st, "FieldValueInvalid", p, "Invalid value: "
			    "\"%.64s\": the %s of a bundle must be a %s", kind,
			    expect->bundle_part, expect->kind);
			return;
		}
		api_status_fail(st, 400, "BadRequest", "%s%s%s %s cannot be created "
		    "in the %s collection; POST it to " API_PREFIX "/%s", path,
		    *path ? ": " : "", strchr("AEIOU", d->kind->kind[0]) ? "an" : "a",
		    d->kind->kind, expect->plural, d->kind->plural);
		return;
	}
	json_object_object_foreach(obj, key, val) {
		(void)val;
		if (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0 ||
		    strcmp(key, "metadata") == 0 || strcmp(key, "spec") == 0)
			continue;
		if (strcmp(key, "status") != 0 && unk != NULL &&
		    unk->n < API_MAX_CAUSES) {
			char **np = realloc(unk->paths, (unk->n + 1) * sizeof(char *));

			if (np != NULL) {
				unk->paths = np;
				unk->cap = unk->n + 1;
				join(p, sizeof(p), path, key);
				if ((unk->paths[unk->n] = strdup(p)) != NULL)
					unk->n++;
			}
		}
		/* status is the server's: what a client sends there is dropped. */
		if (ndrop < sizeof(drop) / sizeof(drop[0]))
			drop[ndrop++] = key;
	}
	for (size_t i = 0; i < ndrop; i++)
		json_object_object_del(obj, drop[i]);

	join(p, sizeof(p), path, "metadata");
	if (!json_object_object_get_ex(obj, "metadata", &meta) || meta == NULL)
		api_status_cause(st, "FieldValueRequired", p, "Required value");
	else if (!json_object_is_type(meta, json_type_object))
		api_status_cause(st, "FieldValueInvalid", p,
		    "Invalid value: must be of type object");
	else
		check_metadata(meta, path, st, unk);
	d->name = api_json_str_at(meta, "name", NULL);

	join(p, sizeof(p), path, "spec");
	if (!json_object_object_get_ex(obj, "spec", &spec) || spec == NULL) {
		api_status_cause(st, "FieldValueRequired", p, "Required value");
		spec = NULL;
	} else if (!json_object_is_type(spec, json_type_object)) {
		api_status_cause(st, "FieldValueInvalid", p,
		    "Invalid value: must be of type object");
		spec = NULL;
	} else {
		api_schema_validate_object(spec, d->kind->spec, p, st, unk);
		if (d->kind->id == API_RUN)
			api_validate_run(spec, p, st);
		else if (d->kind->id == API_WORKLOAD)
			api_validate_workload(spec, p, st);
		else if (d->kind->id == API_PROTOCOL)
			api_validate_protocol(spec, p, st);
	}
	if (st->ncauses != before || spec == NULL || st->code != 0)
		return;

	rc = api_digest(obj, d->digest, &d->canon);
	if (rc != KI_OK) {
		api_status_from_rc(st, rc, "computing the digest");
		return;
	}
	api_digest_format(d->digest, d->digest_str);
	/* JCS puts spec last: {"apiVersion":"…","kind":"…","spec":{…}}. */
	d->spec_off = strlen("{\"apiVersion\":\"" API_GROUP_VERSION
	    "\",\"kind\":\"\",\"spec\":") + strlen(d->kind->kind);
	d->spec_len = d->canon.len - d->spec_off - 1;

	if (d->kind->id == API_RUN) {
		static const char *const fields[API_NREFS] = { "protocolDigest",
			"workloadDigest", "environmentDigest",
			"implementationDigest" };
		struct json_object *sn = NULL;
		const char *src, *ext;

		for (int i = 0; i < API_NREFS; i++) {
			const char *s = api_json_str_at(spec, fields[i], NULL);

			if (s == NULL || api_digest_parse(s, strlen(s),
			    d->refs[i]) != KI_OK)
				return; /* schema validation already reported it */
		}
		d->nrefs = API_NREFS;
		json_object_object_get_ex(spec, "sourceNative", &sn);
		src = api_json_str_at(sn, "source", NULL);
		ext = api_json_str_at(sn, "externalId", NULL);
		if (src != NULL && ext != NULL) {
			ki_buf_puts(&d->natkey, src);
			ki_buf_putc(&d->natkey, '\x1f');
			ki_buf_puts(&d->natkey, ext);
		}
	}
}

int
api_render(const api_kind *k, const char *meta, size_t meta_len,
	const char *spec, size_t spec_len, const char *status, size_t status_len,
	ki_buf *out, store_obj *o)
{
	size_t start = out->len;

	ki_buf_puts(out, "{\"apiVersion\":\"" API_GROUP_VERSION "\",\"kind\":\"");
	ki_buf_puts(out, k->kind);
	ki_buf_puts(out, "\",\"metadata\":");
	o->meta_off = (uint32_t)(out->len - start);
	o->meta_len = (uint32_t)meta_len;
	ki_buf_append(out, meta, meta_len);
	ki_buf_puts(out, ",\"spec\":");
	o->spec_off = (uint32_t)(out->len - start);
	o->spec_len = (uint32_t)spec_len;
	ki_buf_append(out, spec, spec_len);
	ki_buf_puts(out, ",\"status\":");
	o->status_off = (uint32_t)(out->len - start);
	o->status_len = (uint32_t)status_len;
	ki_buf_append(out, status, status_len);
	ki_buf_putc(out, '}');
	if (out->oom)
		return KI_ENOMEM;
	o->json = out->data + start;
	o->json_len = out->len - start;
	return KI_OK;
}

void
api_format_time(double secs, ki_buf *out)
{
	/* Writes come many a second: each thread keeps its last second's
	 * text. */
	static _Thread_local time_t last = (time_t)-1;
	static _Thread_local char text[32];
	time_t t = (time_t)floor(secs);

	if (t != last || t == (time_t)-1) {
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
		last = t;
	}
	ki_buf_puts(out, text);
}

/* A deep copy (labels and annotations are edited later; a shared
 * reference would edit the upload's tree too). */
static struct json_object *
copy_value(struct json_object *v)
{
	struct json_object *c = NULL;

	if (json_object_deep_copy(v, &c, NULL) != 0)
		return NULL;
	return c;
}

/* Fills r with n (at most 16) random bytes from this thread's pool, which
 * getrandom(2) refills 4 KB at a time: one system call for 256 uids.
 * Returns 0, or -1 when the kernel gives none. */
static int
uid_bytes(unsigned char *r, size_t n)
{
	static _Thread_local struct {
		unsigned char b[4096];
		size_t left;
	} pool;

	if (pool.left < n) {
		ssize_t got = getrandom(pool.b, sizeof(pool.b), 0);

		if (got < (ssize_t)n)
			return -1;
		pool.left = (size_t)got;
	}
	pool.left -= n;
	memcpy(r, pool.b + pool.left, n);
	/* Not handed out twice. */
	memset(pool.b + pool.left, 0, n);
	return 0;
}

void
api_new_uid(char out[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[16];
	int j = 0;

	if (uid_bytes(r, sizeof(r)) != 0 && RAND_bytes(r, sizeof(r)) != 1) {
		/* Not a secret: uniqueness only. Fall back to the clock. */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		for (size_t i = 0; i < sizeof(r); i++)
			r[i] = (unsigned char)((ts.tv_nsec >> (i % 4 * 8)) ^
			    (ts.tv_sec >> (i % 8)) ^ (long)i * 131);
	}
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[j++] = '-';
		out[j++] = hex[r[i] >> 4];
		out[j++] = hex[r[i] & 15];
	}
	out[j] = '\0';
}

struct json_object *
api_new_metadata(struct json_object *doc_meta, double now)
{
	static const char *const keep[] = { "name", "title", "labels",
		"annotations", NULL };
	struct json_object *m = json_object_new_object(), *v;
	char uid[37];
	ki_buf ts;

	if (m == NULL)
		return NULL;
	for (const char *const *k = keep; *k != NULL; k++) {
		if (json_object_object_get_ex(doc_meta, *k, &v) && v != NULL)
			json_object_object_add(m, *k, copy_value(v));
	}
	api_new_uid(uid);
	ki_buf_init(&ts);
	api_format_time(now, &ts);
	json_object_object_add(m, "uid", json_object_new_string(uid));
	json_object_object_add(m, "generation", json_object_new_int(1));
	json_object_object_add(m, "creationTimestamp",
	    json_object_new_string(ts.data ? ts.data : ""));
	ki_buf_free(&ts);
	return m;
}
