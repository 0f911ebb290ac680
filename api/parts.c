/* api/parts.c — bundle parts remembered by their bytes (see api/parts.h). */
#include "api/parts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonlex.h"

#define PARTS 8        /* per thread */
#define PART_MAX 65536 /* bytes of a part worth remembering, at most */
#define ROLE_MAX 16

int
api_members(const char *text, size_t len, int max_depth, api_member *m,
	size_t *n)
{
	const unsigned char *t = (const unsigned char *)text;
	size_t i;

	*n = 0;
	i = jsonlex_ws(t, len, 0);
	if (i >= len || t[i] != '{')
		return -1;
	i = jsonlex_ws(t, len, i + 1);
	if (i < len && t[i] == '}')
		return jsonlex_ws(t, len, i + 1) == len ? 0 : -1;
	for (;;) {
		api_member *x;
		size_t k;

		if (*n == API_MAX_MEMBERS || i >= len || t[i] != '"')
			return -1;
		x = &m[(*n)++];
		x->start = text + i;
		if ((k = jsonlex_string_end(t, len, i)) == JSONLEX_NONE)
			return -1;
		x->key = text + i + 1;
		x->key_len = k - i - 2;
		if (memchr(x->key, '\\', x->key_len) != NULL)
			return -1;   /* an escaped key could repeat another */
		for (size_t j = 0; j + 1 < *n; j++)
			if (m[j].key_len == x->key_len &&
			    memcmp(m[j].key, x->key, x->key_len) == 0)
				return -1;
		i = jsonlex_ws(t, len, k);
		if (i >= len || t[i] != ':')
			return -1;
		i = jsonlex_ws(t, len, i + 1);
		x->val = text + i;
		if ((k = jsonlex_value_end(t, len, i, max_depth)) == JSONLEX_NONE)
			return -1;
		x->val_len = k - i;
		i = jsonlex_ws(t, len, k);
		if (i < len && t[i] == ',') {
			i = jsonlex_ws(t, len, i + 1);
			continue;
		}
		if (i < len && t[i] == '}')
			return jsonlex_ws(t, len, i + 1) == len ? 0 : -1;
		return -1;
	}
}

/* ---- the per-thread memory ---- */

typedef struct part {
	char role[ROLE_MAX];
	char *val;                   /* NULL: empty slot */
	size_t len;
	const api_kind *kind;
	char *name;
	uint8_t digest[API_DIGEST_LEN];
	char digest_str[API_DIGEST_STRLEN + 1];
	ki_buf canon, natkey;
	size_t spec_off, spec_len;
	uint8_t refs[API_NREFS][API_DIGEST_LEN];
	size_t nrefs;
} part;

typedef struct parts {
	part e[PARTS];
	size_t next;
} parts;

static uint64_t hits;   /* atomic */

static pthread_key_t parts_key;
static pthread_once_t parts_once = PTHREAD_ONCE_INIT;
static int parts_key_ok;

static void
part_clear(part *x)
{
	free(x->val);
	free(x->name);
	ki_buf_free(&x->canon);
	ki_buf_free(&x->natkey);
	memset(x, 0, sizeof(*x));
}

static void
parts_free(void *arg)
{
	parts *c = arg;

	for (size_t i = 0; i < PARTS; i++)
		part_clear(&c->e[i]);
	free(c);
}

static void
parts_key_make(void)
{
	parts_key_ok = pthread_key_create(&parts_key, parts_free) == 0;
}

static parts *
mine(void)
{
	parts *c;

	pthread_once(&parts_once, parts_key_make);
	if (!parts_key_ok)
		return NULL;
	if ((c = pthread_getspecific(parts_key)) == NULL &&
	    (c = calloc(1, sizeof(*c))) != NULL &&
	    pthread_setspecific(parts_key, c) != 0) {
		free(c);
		c = NULL;
	}
	return c;
}

static part *
find(parts *c, const char *role, const char *val, size_t len)
{
	for (size_t i = 0; i < PARTS; i++) {
		part *x = &c->e[i];

		if (x->val != NULL && x->len == len &&
		    strcmp(x->role, role) == 0 && memcmp(x->val, val, len) == 0)
			return x;
	}
	return NULL;
}

int
api_part_get(const char *role, const char *val, size_t len,
	const char *path, api_doc *d)
{
	parts *c = mine();
	part *x;

	memset(d, 0, sizeof(*d));
	if (c == NULL || (x = find(c, role, val, len)) == NULL)
		return 0;
	ki_buf_init(&d->canon);
	ki_buf_init(&d->natkey);
	ki_buf_init(&d->raw);
	if ((d->own_name = strdup(x->name)) == NULL ||
	    ki_buf_append(&d->canon, x->canon.data, x->canon.len) != KI_OK ||
	    (x->natkey.len > 0 &&
	    ki_buf_append(&d->natkey, x->natkey.data, x->natkey.len) != KI_OK) ||
	    ki_buf_append(&d->raw, val, len) != KI_OK) {
		api_doc_free(d);
		return 0;
	}
	d->kind = x->kind;
	d->name = d->own_name;
	snprintf(d->path, sizeof(d->path), "%s", path);
	memcpy(d->digest, x->digest, sizeof(d->digest));
	memcpy(d->digest_str, x->digest_str, sizeof(d->digest_str));
	d->spec_off = x->spec_off;
	d->spec_len = x->spec_len;
	memcpy(d->refs, x->refs, sizeof(d->refs));
	d->nrefs = x->nrefs;
	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
	return 1;
}

uint64_t
api_part_hits(void)
{
	return __atomic_load_n(&hits, __ATOMIC_RELAXED);
}

void
api_part_put(const char *role, const char *val, size_t len,
	const api_doc *d)
{
	parts *c = mine();
	part *x;

	if (c == NULL || d->kind == NULL || d->name == NULL ||
	    len > PART_MAX || strlen(role) >= ROLE_MAX ||
	    find(c, role, val, len) != NULL)
		return;
	x = &c->e[c->next++ % PARTS];
	part_clear(x);
	ki_buf_init(&x->canon);
	ki_buf_init(&x->natkey);
	if ((x->val = malloc(len ? len : 1)) == NULL ||
	    (x->name = strdup(d->name)) == NULL ||
	    ki_buf_append(&x->canon, d->canon.data, d->canon.len) != KI_OK ||
	    (d->natkey.len > 0 &&
	    ki_buf_append(&x->natkey, d->natkey.data, d->natkey.len) != KI_OK)) {
		part_clear(x);
		return;
	}
	memcpy(x->val, val, len);
	x->len = len;
	snprintf(x->role, sizeof(x->role), "%s", role);
	x->kind = d->kind;
	memcpy(x->digest, d->digest, sizeof(x->digest));
	memcpy(x->digest_str, d->digest_str, sizeof(x->digest_str));
	x->spec_off = d->spec_off;
	x->spec_len = d->spec_len;
	memcpy(x->refs, d->refs, sizeof(x->refs));
	x->nrefs = d->nrefs;
}
