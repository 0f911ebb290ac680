/* api/jsonpatch.c — JSON Patch (RFC 6902): add, remove, replace, move,
 * copy and test, applied in order to a copy of a document, all or none. */
#include "api/jsonpatch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ki.h"

/* Why an operation failed: filled by the helpers, rendered once by the
 * caller with the operation's index. */
typedef struct jp_err {
	int code;                  /* 400 or 422; 0: none */
	const char *what;          /* static text */
} jp_err;

/* Unescapes the reference token at *p (up to the next '/' or the end) into
 * tok (as large as the pointer) and advances *p past it. Returns 0, or -1
 * for a '~' not followed by 0 or 1 (RFC 6901, section 3). */
static int
next_token(const char **p, char *tok)
{
	const char *s = *p;
	size_t n = 0;

	for (; *s != '\0' && *s != '/'; s++) {
		if (*s == '~') {
			if (s[1] == '0')
				tok[n++] = '~';
			else if (s[1] == '1')
				tok[n++] = '/';
			else
				return -1;
			s++;
		} else {
			tok[n++] = *s;
		}
	}
	tok[n] = '\0';
	*p = s;
	return 0;
}

/* An array index token: digits without a leading zero. Returns the index,
 * or -1 when tok is not one. */
static long
array_index(const char *tok)
{
	long v = 0;

	if (tok[0] == '\0' || (tok[0] == '0' && tok[1] != '\0'))
		return -1;
	for (const char *s = tok; *s; s++) {
		if (*s < '0' || *s > '9' || v > 100000000)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/* Resolves pointer ptr (not "") against root: *parent is the container of
 * its last token (borrowed), copied into last (as large as ptr). Returns 0,
 * or -1 with e filled. */
static int
resolve_parent(struct json_object *root, const char *ptr,
	struct json_object **parent, char *last, jp_err *e)
{
	struct json_object *cur = root;
	const char *p = ptr;

	if (*p != '/') {
		e->code = 400;
		e->what = "a path must be empty or start with '/'";
		return -1;
	}
	for (;;) {
		p++;
		if (next_token(&p, last) != 0) {
			e->code = 400;
			e->what = "'~' in a path must be followed by 0 or 1";
			return -1;
		}
		if (*p == '\0')
			break;
		if (json_object_is_type(cur, json_type_object)) {
			if (!json_object_object_get_ex(cur, last, &cur))
				cur = NULL;
		} else if (json_object_is_type(cur, json_type_array)) {
			long i = array_index(last);

			cur = i < 0 || (size_t)i >= json_object_array_length(cur) ?
			    NULL : json_object_array_get_idx(cur, (size_t)i);
		} else {
			cur = NULL;
		}
		if (cur == NULL) {
			e->code = 422;
			e->what = "the path does not exist in the object";
			return -1;
		}
	}
	if (!json_object_is_type(cur, json_type_object) &&
	    !json_object_is_type(cur, json_type_array)) {
		e->code = 422;
		e->what = "the path's parent is neither an object nor an array";
		return -1;
	}
	*parent = cur;
	return 0;
}

/* The value at ptr in root (borrowed), or NULL with e filled. A JSON null
 * member is found: *found tells it apart from a missing one. */
static struct json_object *
lookup(struct json_object *root, const char *ptr, char *tok, int *found,
	jp_err *e)
{
	struct json_object *parent, *v = NULL;

	*found = 0;
	if (*ptr == '\0') {
		*found = 1;
		return root;
	}
	if (resolve_parent(root, ptr, &parent, tok, e) != 0)
		return NULL;
	if (json_object_is_type(parent, json_type_object)) {
		*found = json_object_object_get_ex(parent, tok, &v);
	} else {
		long i = array_index(tok);

		if (i >= 0 && (size_t)i < json_object_array_length(parent)) {
			v = json_object_array_get_idx(parent, (size_t)i);
			*found = 1;
		}
	}
	if (!*found) {
		e->code = 422;
		e->what = "the path does not exist in the object";
	}
	return v;
}

/* Inserts v (consumed) at index i of array a, shifting the rest up. */
static int
array_insert(struct json_object *a, size_t i, struct json_object *v)
{
	size_t n = json_object_array_length(a);

	if (i == n)
		return json_object_array_add(a, v) == 0 ? 0 : -1;
	if (json_object_array_add(a, json_object_get(
	    json_object_array_get_idx(a, n - 1))) != 0) {
		json_object_put(json_object_array_get_idx(a, n - 1));
		json_object_put(v);
		return -1;
	}
	for (size_t j = n - 1; j > i; j--)
		json_object_array_put_idx(a, j, json_object_get(
		    json_object_array_get_idx(a, j - 1)));
	json_object_array_put_idx(a, i, v);
	return 0;
}

/* RFC 6902 "add" of v (consumed) at ptr in *root; replace when replace is
 * set (the target must exist). */
static int
put_at(struct json_object **root, const char *ptr, char *tok,
	struct json_object *v, int replace, jp_err *e)
{
	struct json_object *parent;

	if (*ptr == '\0') {
		json_object_put(*root);
		*root = v;
		return 0;
	}
	if (resolve_parent(*root, ptr, &parent, tok, e) != 0)
		goto fail;
	if (json_object_is_type(parent, json_type_object)) {
		if (replace && !json_object_object_get_ex(parent, tok, NULL)) {
			e->code = 422;
			e->what = "the path does not exist in the object";
			goto fail;
		}
		if (json_object_object_add(parent, tok, v) != 0) {
			e->code = 503;
			goto fail;
		}
		return 0;
	}
	{
		size_t n = json_object_array_length(parent);
		long i = strcmp(tok, "-") == 0 && !replace ? (long)n :
		    array_index(tok);

		if (i < 0 || (size_t)i > n || (replace && (size_t)i == n)) {
			e->code = 422;
			e->what = "the array index is out of range";
			goto fail;
		}
		if (replace) {
			json_object_array_put_idx(parent, (size_t)i, v);
			return 0;
		}
		if (array_insert(parent, (size_t)i, v) != 0) {
			e->code = 503;
			return -1;
		}
		return 0;
	}
fail:
	json_object_put(v);
	return -1;
}

static int
remove_at(struct json_object *root, const char *ptr, char *tok, jp_err *e)
{
	struct json_object *parent;

	if (*ptr == '\0') {
		e->code = 422;
		e->what = "the whole object cannot be removed";
		return -1;
	}
	if (resolve_parent(root, ptr, &parent, tok, e) != 0)
		return -1;
	if (json_object_is_type(parent, json_type_object)) {
		if (!json_object_object_get_ex(parent, tok, NULL))
			goto missing;
		json_object_object_del(parent, tok);
		return 0;
	}
	{
		long i = array_index(tok);

		if (i < 0 || (size_t)i >= json_object_array_length(parent))
			goto missing;
		json_object_array_del_idx(parent, (size_t)i, 1);
		return 0;
	}
missing:
	e->code = 422;
	e->what = "the path does not exist in the object";
	return -1;
}

static int
is_number(struct json_object *v)
{
	return json_object_is_type(v, json_type_int) ||
	    json_object_is_type(v, json_type_double);
}

/* JSON equality (RFC 6902, section 4.6): numbers by value, objects
 * whatever their members' order. */
static int
json_equal(struct json_object *a, struct json_object *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	if (is_number(a) && is_number(b)) {
		if (json_object_is_type(a, json_type_int) &&
		    json_object_is_type(b, json_type_int))
			return json_object_get_int64(a) == json_object_get_int64(b);
		return json_object_get_double(a) == json_object_get_double(b);
	}
	if (json_object_get_type(a) != json_object_get_type(b))
		return 0;
	if (json_object_is_type(a, json_type_array)) {
		size_t n = json_object_array_length(a);

		if (n != json_object_array_length(b))
			return 0;
		for (size_t i = 0; i < n; i++) {
			if (!json_equal(json_object_array_get_idx(a, i),
			    json_object_array_get_idx(b, i)))
				return 0;
		}
		return 1;
	}
	if (json_object_is_type(a, json_type_object)) {
		if (json_object_object_length(a) != json_object_object_length(b))
			return 0;
		json_object_object_foreach(a, key, va) {
			struct json_object *vb;

			if (!json_object_object_get_ex(b, key, &vb) ||
			    !json_equal(va, vb))
				return 0;
		}
		return 1;
	}
	return json_object_equal(a, b);
}

static const char *
member_str(struct json_object *op, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(op, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Adds the JSON values of v to *n, stopping once *n passes cap, and
 * raises *deep to the deepest level reached (v at level depth). */
static void
count_values(struct json_object *v, size_t cap, int depth, size_t *n,
	int *deep)
{
	if (++*n > cap)
		return;
	if (depth > *deep)
		*deep = depth;
	if (json_object_is_type(v, json_type_object)) {
		json_object_object_foreach(v, key, m) {
			(void)key;
			count_values(m, cap, depth + 1, n, deep);
			if (*n > cap)
				return;
		}
	} else if (json_object_is_type(v, json_type_array)) {
		size_t len = json_object_array_length(v);

		for (size_t i = 0; i < len && *n <= cap; i++)
			count_values(json_object_array_get_idx(v, i), cap, depth + 1,
			    n, deep);
	}
}

/* Does copying v to path keep the patch within its limits? *copied counts
 * the values copied so far. Returns 0, or -1 with e filled (422). */
static int
copy_fits(struct json_object *v, const char *path, size_t *copied,
	jp_err *e)
{
	int levels = 0, deep = 0;

	for (const char *p = path; *p != '\0'; p++)
		levels += *p == '/';
	count_values(v, API_JSONPATCH_MAX_COPIED, levels, copied, &deep);
	if (*copied > API_JSONPATCH_MAX_COPIED) {
		e->code = 422;
		e->what = "the patch copies more than 100000 JSON values";
		return -1;
	}
	if (deep > API_JSONPATCH_MAX_DEPTH) {
		e->code = 422;
		e->what = "the copy would nest values deeper than 64 levels";
		return -1;
	}
	return 0;
}

/* Does the string member key of op hold a NUL byte? */
static int
holds_nul(struct json_object *op, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(op, key, &v) &&
	    json_object_is_type(v, json_type_string) &&
	    strlen(json_object_get_string(v)) !=
	    (size_t)json_object_get_string_len(v);
}

/* Applies one operation to *root. tok is scratch as large as any pointer
 * of the patch. */
static int
apply_op(struct json_object **root, struct json_object *op, char *tok,
	size_t *copied, jp_err *e)
{
	const char *name = member_str(op, "op");
	const char *path = member_str(op, "path");
	const char *from = member_str(op, "from");
	struct json_object *value = NULL, *v, *cp = NULL;
	int has_value = json_object_object_get_ex(op, "value", &value);
	int found;

	e->code = 400;
	if (name == NULL) {
		e->what = "\"op\" is missing or not a string";
		return -1;
	}
	if (path == NULL) {
		e->what = "\"path\" is missing or not a string";
		return -1;
	}
	if (holds_nul(op, "path") || holds_nul(op, "from")) {
		/* Read as a C string, "/a\u0000b" would name "/a". */
		e->what = "a pointer may not hold U+0000";
		return -1;
	}
	if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0 ||
	    strcmp(name, "test") == 0) {
		if (!has_value) {
			e->what = "\"value\" is missing";
			return -1;
		}
		if (strcmp(name, "test") == 0) {
			v = lookup(*root, path, tok, &found, e);
			if (!found)
				return -1;
			if (!json_equal(v, value)) {
				e->code = 422;
				e->what = "the test failed: the value at the path differs";
				return -1;
			}
			return 0;
		}
		if (value != NULL && json_object_deep_copy(value, &cp, NULL) != 0) {
			e->code = 503;
			return -1;
		}
		return put_at(root, path, tok, cp, strcmp(name, "replace") == 0,
		    e);
	}
	if (strcmp(name, "remove") == 0)
		return remove_at(*root, path, tok, e);
	if (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) {
		size_t fl;

		if (from == NULL) {
			e->what = "\"from\" is missing or not a string";
			return -1;
		}
		fl = strlen(from);
		if (strcmp(name, "move") == 0 && strncmp(path, from, fl) == 0 &&
		    path[fl] == '/') {
			e->code = 422;
			e->what = "a value cannot be moved into one of its children";
			return -1;
		}
		v = lookup(*root, from, tok, &found, e);
		if (!found)
			return -1;
		/* Moved onto itself, a value stays where it is (an add at an
		 * array index would insert a second copy). */
		if (strcmp(name, "move") == 0 && strcmp(from, path) == 0)
			return 0;
		if (strcmp(name, "copy") == 0 && copy_fits(v, path, copied, e) != 0)
			return -1;
		if (v != NULL && json_object_deep_copy(v, &cp, NULL) != 0) {
			e->code = 503;
			return -1;
		}
		if (strcmp(name, "move") == 0 && strcmp(from, path) != 0 &&
		    remove_at(*root, from, tok, e) != 0) {
			json_object_put(cp);
			return -1;
		}
		return put_at(root, path, tok, cp, 0, e);
	}
	e->what = "\"op\" must be add, remove, replace, move, copy or test";
	return -1;
}

int
api_jsonpatch_apply(struct json_object *doc, struct json_object *patch,
	struct json_object **out, api_status *st)
{
	struct json_object *root = NULL;
	char *tok = NULL;
	size_t n, longest = 0, copied = 0;
	int rc = KI_EINVAL;

	*out = NULL;
	if (!json_object_is_type(patch, json_type_array)) {
		api_status_fail(st, 400, "BadRequest", "a JSON patch must be an "
		    "array of operations");
		goto out;
	}
	n = json_object_array_length(patch);
	if (n > API_JSONPATCH_MAX_OPS) {
		api_status_fail(st, 413, "RequestEntityTooLarge", "a JSON patch "
		    "may hold at most %d operations, this one has %zu",
		    API_JSONPATCH_MAX_OPS, n);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *op = json_object_array_get_idx(patch, i);
		const char *keys[2] = { "path", "from" };

		if (!json_object_is_type(op, json_type_object)) {
			api_status_fail(st, 400, "BadRequest", "the JSON patch's "
			    "operation %zu is not an object", i);
			goto out;
		}
		for (int k = 0; k < 2; k++) {
			const char *s = member_str(op, keys[k]);

			if (s != NULL && strlen(s) > longest)
				longest = strlen(s);
		}
	}
	if ((tok = malloc(longest + 1)) == NULL ||
	    json_object_deep_copy(doc, &root, NULL) != 0) {
		rc = KI_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *op = json_object_array_get_idx(patch, i);
		jp_err e = { 0, NULL };

		if (apply_op(&root, op, tok, &copied, &e) == 0)
			continue;
		if (e.code == 503) {
			rc = KI_ENOMEM;
			goto out;
		}
		api_status_fail(st, e.code, e.code == 400 ? "BadRequest" :
		    "Invalid", "the JSON patch's operation %zu (%.16s %.200s) "
		    "cannot apply: %s", i, member_str(op, "op") ?
		    member_str(op, "op") : "?", member_str(op, "path") ?
		    member_str(op, "path") : "?", e.what);
		/* kubectl prints a 422's causes, not its message. */
		api_status_cause(st, "FieldValueInvalid", "patch", "%s",
		    st->message ? st->message : e.what);
		goto out;
	}
	*out = root;
	root = NULL;
	rc = KI_OK;
out:
	json_object_put(root);
	free(tok);
	return rc;
}
