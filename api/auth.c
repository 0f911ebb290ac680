/* api/auth.c — tokens stored as SHA-256, roles, and what a token may
 * write. */
#include "api/auth.h"

#include <json-c/json.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "api/jcs.h"
#include "api/object.h"

#define TOKEN_PREFIX "kix_"

int
api_role_parse(const char *s)
{
	if (s == NULL)
		return API_ROLE_NONE;
	if (strcmp(s, "reader") == 0)
		return API_ROLE_READER;
	if (strcmp(s, "writer") == 0)
		return API_ROLE_WRITER;
	if (strcmp(s, "admin") == 0)
		return API_ROLE_ADMIN;
	return API_ROLE_NONE;
}

const char *
api_role_name(int role)
{
	switch (role) {
	case API_ROLE_READER: return "reader";
	case API_ROLE_WRITER: return "writer";
	case API_ROLE_ADMIN: return "admin";
	default: return "anonymous";
	}
}

static void
hex(const uint8_t *p, size_t n, char *out)
{
	static const char h[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = h[p[i] >> 4];
		out[2 * i + 1] = h[p[i] & 15];
	}
	out[2 * n] = '\0';
}

int
api_authenticate(store *s, const char *authorization, int loopback,
	api_principal *out, api_status *st)
{
	store_txn *t;
	uint8_t hash[API_DIGEST_LEN];
	const char *tok, *val;
	size_t vlen, tlen;
	uint64_t n = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	out->loopback = loopback;
	if ((rc = store_begin(s, 0, &t)) != KI_OK) {
		api_status_from_rc(st, rc, "checking the token");
		return rc;
	}
	store_token_count(t, &n);
	out->tokens_exist = n > 0;
	if (authorization == NULL || *authorization == '\0') {
		store_abort(t);
		return KI_OK;
	}
	if (strncasecmp(authorization, "Bearer ", 7) != 0) {
		store_abort(t);
		api_status_fail(st, 401, "Unauthorized", "the Authorization header "
		    "must be \"Bearer <token>\"");
		return KI_EINVAL;
	}
	tok = authorization + 7;
	while (*tok == ' ')
		tok++;
	tlen = strlen(tok);
	api_sha256(tok, tlen, hash);
	rc = store_token_get(t, hash, &val, &vlen);
	if (rc != KI_OK) {
		store_abort(t);
		api_status_fail(st, 401, "Unauthorized", "the token is not valid "
		    "(unknown or revoked)");
		return KI_EINVAL;
	}
	{
		struct json_object *o = api_json_parse_len(val, vlen);
		const char *src, *pre, *role;
		uint8_t again[API_DIGEST_LEN];

		/* Belt and braces: the key matched; compare it in constant time
		 * with the hash recomputed, as a secret comparison should be. */
		api_sha256(tok, tlen, again);
		if (o == NULL || CRYPTO_memcmp(again, hash, sizeof(hash)) != 0) {
			if (o != NULL)
				json_object_put(o);
			store_abort(t);
			api_status_fail(st, 401, "Unauthorized", "the token is not valid");
			return KI_EINVAL;
		}
		role = json_object_get_string(json_object_object_get(o, "role"));
		src = json_object_get_string(json_object_object_get(o, "source"));
		pre = json_object_get_string(json_object_object_get(o, "prefix"));
		out->role = api_role_parse(role);
		out->token = 1;
		snprintf(out->source, sizeof(out->source), "%s", src ? src : "");
		snprintf(out->prefix, sizeof(out->prefix), "%s", pre ? pre : "");
		hex(hash, 6, out->id);
		json_object_put(o);
	}
	OPENSSL_cleanse(hash, sizeof(hash));
	store_abort(t);
	return KI_OK;
}

int
api_may_write(const api_principal *p, api_status *st)
{
	if (p->role >= API_ROLE_WRITER)
		return 1;
	if (!p->tokens_exist && p->loopback && !p->token)
		return 1;
	if (p->token) {
		api_status_fail(st, 403, "Forbidden", "a %s token may not write",
		    api_role_name(p->role));
		return 0;
	}
	if (!p->tokens_exist) {
		api_status_fail(st, 403, "Forbidden", "writes are accepted from "
		    "loopback clients only while no token is configured");
		return 0;
	}
	api_status_fail(st, 401, "Unauthorized", "writes need a bearer token "
	    "with the writer or admin role");
	return 0;
}

int
api_may_write_object(const api_principal *p, const char *name,
	const char *source, api_status *st)
{
	if (p->prefix[0] != '\0' && (name == NULL ||
	    strncmp(name, p->prefix, strlen(p->prefix)) != 0)) {
		api_status_fail(st, 403, "Forbidden", "this token may write only "
		    "names starting with \"%s\", not \"%s\"", p->prefix,
		    name ? name : "");
		return 0;
	}
	if (p->source[0] != '\0' && source != NULL &&
	    strcmp(source, p->source) != 0) {
		api_status_fail(st, 403, "Forbidden", "this token may write only "
		    "runs whose sourceNative.source is \"%s\", not \"%s\"",
		    p->source, source);
		return 0;
	}
	if (p->source[0] != '\0' && source == NULL && name == NULL) {
		api_status_fail(st, 403, "Forbidden", "this token may write only "
		    "runs from \"%s\"", p->source);
		return 0;
	}
	return 1;
}

int
api_may_change_stored(const api_principal *p, const char *kind, int is_run,
	const char *name, const char *source, size_t source_len,
	api_status *st)
{
	if (p->prefix[0] != '\0' && (name == NULL ||
	    strncmp(name, p->prefix, strlen(p->prefix)) != 0)) {
		api_status_fail(st, 403, "Forbidden", "this token may write only "
		    "names starting with \"%s\", not \"%s\"", p->prefix,
		    name ? name : "");
		return 0;
	}
	if (p->source[0] == '\0')
		return 1;
	if (!is_run) {
		/* Protocols, environments, workloads and implementations are
		 * shared by every source's runs, and a Verification belongs to
		 * its run's history: a source's token may add them, not change
		 * or remove them. */
		api_status_fail(st, 403, "Forbidden", "this token is limited to "
		    "runs whose sourceNative.source is \"%s\": it may create a "
		    "%s but not change or delete one, which runs of other sources "
		    "may reference", p->source, kind ? kind : "shared object");
		return 0;
	}
	if (source == NULL || source_len != strlen(p->source) ||
	    memcmp(source, p->source, source_len) != 0) {
		api_status_fail(st, 403, "Forbidden", "this token may change only "
		    "runs whose sourceNative.source is \"%s\", not \"%.*s\"",
		    p->source, source ? (int)(source_len > 256 ? 256 : source_len) :
		    0, source ? source : "");
		return 0;
	}
	return 1;
}

int
api_may_change_verification(const api_principal *p, const char *run_name,
	api_status *st)
{
	if (p->prefix[0] == '\0' || (run_name != NULL &&
	    strncmp(run_name, p->prefix, strlen(p->prefix)) == 0))
		return 1;
	api_status_fail(st, 403, "Forbidden", "this token may write only "
	    "names starting with \"%s\", and this Verification's outcome is "
	    "written onto the run \"%.253s\", which does not start so",
	    p->prefix, run_name ? run_name : "");
	return 0;
}

const char *
api_token_limits_bad(const char *source, const char *prefix)
{
	if (source != NULL) {
		if (strlen(source) > 256)
			return "source: must be at most 256 bytes, as a run's is";
		for (const char *c = source; *c != '\0'; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return "source: must not hold a control character, as "
				    "no run's does";
	}
	if (prefix != NULL) {
		if (strlen(prefix) > 253)
			return "prefix: must be at most 253 bytes, as a name is";
		if (strspn(prefix, "abcdefghijklmnopqrstuvwxyz0123456789-.") !=
		    strlen(prefix) || prefix[0] == '-' || prefix[0] == '.')
			return "prefix: must be the start of a lowercase RFC 1123 "
			    "name (a-z, 0-9, '-', '.', starting with a letter or a "
			    "digit), as every object's name is";
	}
	return NULL;
}

int
api_token_create(store *s, int role, const char *source, const char *prefix,
	const char *description, double now, char secret[64], char id[16])
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char r[32];
	uint8_t hash[API_DIGEST_LEN];
	struct json_object *o;
	store_txn *t;
	ki_buf v, ts;
	size_t n = strlen(TOKEN_PREFIX);
	int rc;

	if (role == API_ROLE_NONE)
		return KI_EINVAL;
	if (RAND_bytes(r, sizeof(r)) != 1)
		return KI_EIO;
	memcpy(secret, TOKEN_PREFIX, n);
	for (size_t i = 0; i < sizeof(r); i++)
		secret[n++] = b64[r[i] & 63];
	secret[n] = '\0';
	OPENSSL_cleanse(r, sizeof(r));
	api_sha256(secret, n, hash);
	hex(hash, 6, id);
	o = json_object_new_object();
	if (o == NULL)
		return KI_ENOMEM;
	ki_buf_init(&ts);
	api_format_time(now, &ts);
	json_object_object_add(o, "role", json_object_new_string(
	    api_role_name(role)));
	if (source != NULL && *source)
		json_object_object_add(o, "source", json_object_new_string(source));
	if (prefix != NULL && *prefix)
		json_object_object_add(o, "prefix", json_object_new_string(prefix));
	if (description != NULL && *description)
		json_object_object_add(o, "description",
		    json_object_new_string(description));
	json_object_object_add(o, "created", json_object_new_string(
	    ts.data ? ts.data : ""));
	ki_buf_free(&ts);
	ki_buf_init(&v);
	rc = api_jcs_serialize(o, &v);
	json_object_put(o);
	if (rc == KI_OK && (rc = store_begin(s, 1, &t)) == KI_OK) {
		rc = store_token_put(t, hash, v.data, v.len);
		if (rc == KI_OK)
			rc = store_commit(t);
		else
			store_abort(t);
	}
	ki_buf_free(&v);
	return rc;
}

typedef struct find_arg {
	const char *id;
	uint8_t hash[API_DIGEST_LEN];
	int found;
	ki_buf *out;
	int n;
} find_arg;

static int
find_one(void *arg, const uint8_t *hash, const char *value, size_t len)
{
	find_arg *a = arg;
	char id[16];

	(void)value;
	(void)len;
	hex(hash, 6, id);
	if (strcmp(id, a->id) == 0) {
		memcpy(a->hash, hash, API_DIGEST_LEN);
		a->found = 1;
	}
	return 0;
}

int
api_token_revoke(store *s, const char *id)
{
	find_arg a;
	store_txn *t;
	int rc;

	memset(&a, 0, sizeof(a));
	a.id = id;
	if ((rc = store_begin(s, 1, &t)) != KI_OK)
		return rc;
	rc = store_token_list(t, find_one, &a);
	if (rc == KI_OK && !a.found)
		rc = KI_ENOTFOUND;
	if (rc == KI_OK)
		rc = store_token_delete(t, a.hash);
	if (rc == KI_OK)
		return store_commit(t);
	store_abort(t);
	return rc;
}

static int
list_one(void *arg, const uint8_t *hash, const char *value, size_t len)
{
	find_arg *a = arg;
	char id[16];

	hex(hash, 6, id);
	ki_buf_printf(a->out, "%s{\"id\":\"%s\",\"spec\":", a->n++ ? "," : "",
	    id);
	ki_buf_append(a->out, value, len);
	ki_buf_putc(a->out, '}');
	return 0;
}

int
api_token_list(store *s, ki_buf *out)
{
	find_arg a;
	store_txn *t;
	int rc;

	memset(&a, 0, sizeof(a));
	a.out = out;
	if ((rc = store_begin(s, 0, &t)) != KI_OK)
		return rc;
	ki_buf_puts(out, "{\"kind\":\"TokenList\",\"apiVersion\":\""
	    "kernelindex.dev/v1alpha1\",\"items\":[");
	rc = store_token_list(t, list_one, &a);
	ki_buf_puts(out, "]}");
	store_abort(t);
	return rc != KI_OK ? rc : out->oom ? KI_ENOMEM : KI_OK;
}
