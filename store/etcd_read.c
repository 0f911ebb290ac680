/* store/etcd_read.c — the etcd backend's reads by id, lists and walks:
 * objects of a kind, lists driven by label and reference postings, facet
 * counts, referrers, events and tokens; each a range read
 * (store/etcd_int.h). */
#include <stdlib.h>
#include <string.h>

#include "store/etcd_int.h"

static et_store *
es(store_txn *t)
{
	return (et_store *)(void *)t->s;
}


int
et_get_by_seq(store_txn *t, uint64_t id, store_obj *out)
{
	char key[64];
	const char *v;
	size_t vl;
	int rc = et_get(t, key, et_id_key(es(t), key, id), &v, &vl);

	if (rc == KI_OK)
		rc = et_rec_read(t, v, vl, out);
	return rc;
}

typedef struct each {
	store_txn *t;
	store_each_fn fn;
	void *arg;
	int rc;
} each;

static int
on_obj(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
	each *c = arg;
	store_obj o;
	int rc;

	(void)key;
	(void)klen;
	if ((rc = et_rec_read(c->t, val, vlen, &o)) != KI_OK) {
		c->rc = rc;
		return 1;
	}
	if ((rc = c->fn(c->arg, &o)) != 0) {
		c->rc = rc;
		return 1;
	}
	return 0;
}

/* The range of kind's records after id `after`. */
static void
kind_range(et_store *e, int kind, uint64_t after, char *from, size_t *flen,
	char *to, size_t *tlen)
{
	uint8_t b[8];
	uint64_t first = store_id(kind, 0);

	et_put_be64(b, after >= first && store_id_kind(after) == kind ?
	    after + 1 : first);
	*flen = et_key(e, from, 'o', b, 8);
	et_put_be64(b, store_id(kind + 1, 0));
	*tlen = et_key(e, to, 'o', b, 8);
	if (kind >= 255) {
		/* The last kind runs to the end of the records. */
		*tlen = et_key(e, to, 'o', NULL, 0);
		to[*tlen - 1]++;
	}
}

int
et_list(store_txn *t, int kind, uint64_t after, store_each_fn fn, void *arg)
{
	char from[128], to[128];
	size_t fl, tl;
	each c = { t, fn, arg, 0 };
	int rc;

	if (after != 0 && store_id_kind(after) > kind)
		return KI_OK;
	kind_range(es(t), kind, after, from, &fl, to, &tl);
	rc = et_scan(t, from, fl, to, tl, on_obj, &c);
	return rc == 1 ? c.rc : rc;
}

static int
on_count(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen)
{
	(void)key;
	(void)klen;
	(void)val;
	(void)vlen;
	(*(uint64_t *)arg)++;
	return 0;
}

int
et_count(store_txn *t, int kind, uint64_t *out)
{
	char from[128], to[128];
	size_t fl, tl;

	*out = 0;
	kind_range(es(t), kind, 0, from, &fl, to, &tl);
	return et_scan(t, from, fl, to, tl, on_count, out);
}

/* The object of id when it satisfies every term (its labels and refs). */
static int
satisfies(const store_obj *o, const store_term *terms, size_t nterms)
{
	for (size_t i = 0; i < nterms; i++) {
		int any = 0;

		for (size_t j = 0; j < terms[i].nalts && !any; j++) {
			const store_alt *a = &terms[i].alts[j];

			if (a->digest != NULL) {
				for (size_t r = 0; r < o->nrefs && !any; r++)
					any = memcmp(o->refs + r * STORE_DIGEST_LEN,
					    a->digest, STORE_DIGEST_LEN) == 0;
				continue;
			}
			for (const char *p = o->labels, *end = o->labels +
			    o->labels_len; p != NULL && p < end && !any;) {
				size_t kl = strnlen(p, (size_t)(end - p));
				const char *v = p + kl + 1;
				size_t vl;

				if (v >= end)
					break;
				vl = strnlen(v, (size_t)(end - v));
				any = strlen(a->key) == kl && memcmp(p, a->key, kl) == 0 &&
				    strlen(a->value) == vl && memcmp(v, a->value, vl) == 0;
				p = v + vl + 1;
			}
		}
		if (!any)
			return 0;
	}
	return 1;
}

/* The postings of one alt as a key range: its prefix, and where to start
 * after id `after`. */
static size_t
alt_prefix(et_store *e, char *buf, int kind, const store_alt *a)
{
	char tmp[STORE_MAX_INDEXED + 16];
	size_t n = 0;

	if (a->digest != NULL)
		return et_key(e, buf, 'r', a->digest, STORE_DIGEST_LEN);
	tmp[n++] = (char)kind;
	memcpy(tmp + n, a->key, strlen(a->key));
	n += strlen(a->key);
	tmp[n++] = '\0';
	memcpy(tmp + n, a->value, strlen(a->value));
	n += strlen(a->value);
	tmp[n++] = '\0';
	return et_key(e, buf, 'l', tmp, n);
}

typedef struct ids {
	uint64_t *v;
	size_t n, cap;
	int kind;
	size_t want;
} ids;

static int
on_posting(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen)
{
	ids *c = arg;
	uint64_t id = et_get_be64(key + klen - 8);

	(void)val;
	(void)vlen;
	if (c->kind != 0 && store_id_kind(id) != c->kind)
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		uint64_t *g = realloc(c->v, cap * sizeof(*g));

		if (g == NULL)
			return KI_ENOMEM;
		c->v = g;
		c->cap = cap;
	}
	c->v[c->n++] = id;
	return c->n >= c->want ? 1 : 0;
}

static int
cmp_id(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Drives the list by the first term's postings (a union of its alts, a
 * page of each at a time, merged in id order); each candidate's record
 * is read and checked against every term. */
int
et_list_index(store_txn *t, int kind, const store_term *terms,
	size_t nterms, uint64_t after, store_each_fn fn, void *arg)
{
	et_store *e = es(t);
	const store_term *drv;
	uint64_t cursor = after;
	int rc = KI_OK;

	if (nterms == 0)
		return et_list(t, kind, after, fn, arg);
	for (size_t i = 0; i < nterms; i++)
		for (size_t j = 0; j < terms[i].nalts; j++)
			if (terms[i].alts[j].digest == NULL &&
			    strlen(terms[i].alts[j].key) +
			    strlen(terms[i].alts[j].value) > STORE_MAX_INDEXED)
				return KI_EINVAL;
	drv = &terms[0];
	for (;;) {
		ids c = { NULL, 0, 0, kind, ET_PAGE };
		uint64_t page_last = UINT64_MAX;
		int full = 0;

		/* Each alt's next page after cursor: the ids up to the least
		 * of the full pages' last ids are complete. */
		for (size_t j = 0; j < drv->nalts && rc == KI_OK; j++) {
			char from[STORE_MAX_INDEXED + 128], to[STORE_MAX_INDEXED + 128];
			size_t pl = alt_prefix(e, from, kind, &drv->alts[j]), fl = pl;
			size_t tl;
			uint8_t b[8];

			memcpy(to, from, pl);
			tl = et_prefix_end(to, pl);
			et_put_be64(b, cursor + 1);
			if (cursor != 0) {
				memcpy(from + pl, b, 8);
				fl = pl + 8;
			}
			c.want = c.n + ET_PAGE;
			rc = et_scan(t, from, fl, to, tl, on_posting, &c);
			if (rc == 1) {
				rc = KI_OK;
				full = 1;
				if (c.v[c.n - 1] < page_last)
					page_last = c.v[c.n - 1];
			}
		}
		if (rc != KI_OK) {
			free(c.v);
			return rc;
		}
		if (c.n > 1)
			qsort(c.v, c.n, sizeof(*c.v), cmp_id);
		rc = et_prefetch(t, c.v, c.n);
		for (size_t i = 0; i < c.n && rc == KI_OK; i++) {
			store_obj o;

			if ((i > 0 && c.v[i] == c.v[i - 1]) || c.v[i] <= cursor)
				continue;
			if (full && c.v[i] > page_last)
				break;
			/* A posting without its record would be an index fault:
			 * skip it rather than serve a half-written state. */
			rc = et_get_by_seq(t, c.v[i], &o);
			if (rc == KI_ENOTFOUND) {
				rc = KI_OK;
				continue;
			}
			if (rc == KI_OK && satisfies(&o, terms, nterms))
				rc = fn(arg, &o);
		}
		free(c.v);
		if (rc != KI_OK || !full)
			return rc;
		cursor = page_last;
	}
}

typedef struct facet_c {
	store_facet_fn fn;
	void *arg;
	size_t skip;
	int rc;
} facet_c;

static int
on_facet(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen)
{
	facet_c *c = arg;
	int rc;

	if (vlen != 8)
		return 0;
	if ((rc = c->fn(c->arg, key + c->skip, klen - c->skip,
	    et_get_be64(val))) != 0) {
		c->rc = rc;
		return 1;
	}
	return 0;
}

int
et_facets(store_txn *t, int kind, store_facet_fn fn, void *arg)
{
	char from[64], to[64];
	char k = (char)kind;
	size_t n = et_key(es(t), from, 'f', &k, 1);
	facet_c c = { fn, arg, n, 0 };
	int rc;

	memcpy(to, from, n);
	to[n - 1]++;
	rc = et_scan(t, from, n, to, n, on_facet, &c);
	return rc == 1 ? c.rc : rc;
}

typedef struct ref_c {
	store_txn *t;
	store_each_fn fn;
	void *arg;
	int rc;
} ref_c;

static int
on_referrer(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen)
{
	ref_c *c = arg;
	store_obj o;
	int rc;

	(void)val;
	(void)vlen;
	rc = et_get_by_seq(c->t, et_get_be64(key + klen - 8), &o);
	if (rc == KI_ENOTFOUND)
		return 0;
	if (rc == KI_OK)
		rc = c->fn(c->arg, &o);
	if (rc != 0) {
		c->rc = rc;
		return 1;
	}
	return 0;
}

/* The postings of the digest, every kind, in id order. */
int
et_each_referrer(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_each_fn fn, void *arg)
{
	char from[128], to[128];
	size_t n = et_key(es(t), from, 'r', digest, STORE_DIGEST_LEN);
	ref_c c = { t, fn, arg, 0 };
	int rc;

	memcpy(to, from, n);
	rc = et_scan(t, from, n, to, et_prefix_end(to, n), on_referrer, &c);
	return rc == 1 ? c.rc : rc;
}

typedef struct ev_c {
	store_txn *t;
	store_event_fn fn;
	void *arg;
	int rc;
} ev_c;

static int
on_event(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen)
{
	ev_c *c = arg;
	store_obj o;
	int rc;

	(void)key;
	(void)klen;
	if (vlen < 1 || (rc = et_rec_read(c->t, val + 1, vlen - 1, &o)) !=
	    KI_OK) {
		c->rc = KI_ECORRUPT;
		return 1;
	}
	if ((rc = c->fn(c->arg, (uint8_t)val[0], &o)) != 0) {
		c->rc = rc;
		return 1;
	}
	return 0;
}

int
et_events_since(store_txn *t, uint64_t rv, store_event_fn fn, void *arg)
{
	char from[64], to[64];
	uint8_t b[8];
	size_t n, fl;
	ev_c c = { t, fn, arg, 0 };
	int rc;

	if (rv < t->top->trim)
		return KI_EGONE;
	n = et_key(es(t), to, 'e', NULL, 0);
	to[n - 1]++;
	et_put_be64(b, rv + 1);
	fl = et_key(es(t), from, 'e', b, 8);
	rc = et_scan(t, from, fl, to, n, on_event, &c);
	return rc == 1 ? c.rc : rc;
}
