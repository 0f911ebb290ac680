/* store/etcd_txn.c — the etcd backend's transactions: the revision a
 * transaction reads at, the writes a write transaction buffers (read
 * back by its own reads), child transactions as marks in the buffer's
 * undo log, and the commit as one etcd Txn conditional on m/rv's
 * mod_revision (see store/etcd_int.h). */
#include <stdlib.h>
#include <string.h>

#include "store/etcd_int.h"

static int
keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* The index of the first entry of the sorted a (n entries) >= key. */
static size_t
arr_find(et_ent *const *a, size_t n, const char *key, size_t klen)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const et_ent *x = a[mid];

		if (keycmp(x->key, x->klen, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The index of the first buffered entry >= key. */
static size_t
ent_find(const et_top *w, const char *key, size_t klen)
{
	return arr_find(w->ents, w->nents, key, klen);
}

/* What the transaction's revision holds at key, as read before (a
 * remote read's answer, or absence: del), or NULL when not read yet. The
 * revision is fixed, so an answer stays true for the transaction. */
static const et_ent *
cache_find(const et_top *w, const char *key, size_t klen)
{
	size_t i = arr_find(w->cache, w->ncache, key, klen);

	if (i < w->ncache && keycmp(w->cache[i]->key, w->cache[i]->klen, key,
	    klen) == 0)
		return w->cache[i];
	return NULL;
}

int
et_local_only(store_txn *t, const char *key, size_t klen)
{
	et_store *e = (et_store *)(void *)t->s;
	uint8_t kind;

	if (klen < e->prefix_len + 3 || key[e->prefix_len] != 'f' ||
	    memcmp(key, e->prefix, e->prefix_len) != 0)
		return 0;
	kind = (uint8_t)key[e->prefix_len + 2];
	return (t->top->facets_read[kind / 8] >> (kind % 8)) & 1;
}

/* Notes a remote read's answer (val NULL: absent); consumes val. */
static int
cache_add(et_top *w, const char *key, size_t klen, char *val, size_t vlen)
{
	size_t i = arr_find(w->cache, w->ncache, key, klen);
	et_ent *x;

	if (w->ncache == w->capcache) {
		size_t cap = w->capcache ? w->capcache * 2 : 64;
		et_ent **g = realloc(w->cache, cap * sizeof(*g));

		if (g == NULL) {
			free(val);
			return KI_ENOMEM;
		}
		w->cache = g;
		w->capcache = cap;
	}
	if ((x = calloc(1, sizeof(*x))) == NULL ||
	    (x->key = malloc(klen + 1)) == NULL) {
		free(x);
		free(val);
		return KI_ENOMEM;
	}
	memcpy(x->key, key, klen);
	x->klen = klen;
	x->val = val;
	x->vlen = vlen;
	x->del = val == NULL;
	memmove(w->cache + i + 1, w->cache + i,
	    (w->ncache - i) * sizeof(*w->cache));
	w->cache[i] = x;
	w->ncache++;
	return KI_OK;
}

int
et_cache_get(store_txn *t, const char *key, size_t klen, const char **val,
	size_t *vlen)
{
	const et_ent *c = cache_find(t->top, key, klen);

	if (c == NULL)
		return 1;
	if (c->del)
		return KI_ENOTFOUND;
	*val = c->val;
	*vlen = c->vlen;
	return KI_OK;
}

int
et_buf_first(store_txn *t, const char *start, size_t slen, const char *end,
	size_t elen, const char **key, size_t *klen)
{
	const et_top *w = t->top;

	for (size_t i = ent_find(w, start, slen); i < w->nents &&
	    keycmp(w->ents[i]->key, w->ents[i]->klen, end, elen) < 0; i++) {
		if (!w->ents[i]->del) {
			*key = w->ents[i]->key;
			*klen = w->ents[i]->klen;
			return 1;
		}
	}
	return 0;
}

int
et_buf_deleted(store_txn *t, const char *key, size_t klen)
{
	const et_top *w = t->top;
	size_t i = ent_find(w, key, klen);

	return i < w->nents && keycmp(w->ents[i]->key, w->ents[i]->klen, key,
	    klen) == 0 && w->ents[i]->del;
}

int
et_cache_put(store_txn *t, const char *key, size_t klen, const char *val,
	size_t vlen)
{
	char *v = NULL;

	if (cache_find(t->top, key, klen) != NULL)
		return KI_OK;
	if (val != NULL) {
		if ((v = malloc(vlen + 1)) == NULL)
			return KI_ENOMEM;
		memcpy(v, val, vlen);
		v[vlen] = '\0';
	}
	return cache_add(t->top, key, klen, v, vlen);
}

static int
range_body(ki_buf *b, const et_top *w, const char *key, size_t klen,
	const char *end, size_t elen, long limit)
{
	ki_buf_puts(b, "{\"key\":");
	et_b64(b, key, klen);
	if (end != NULL) {
		ki_buf_puts(b, ",\"range_end\":");
		et_b64(b, end, elen);
	}
	if (limit > 0)
		ki_buf_printf(b, ",\"limit\":\"%ld\"", limit);
	if (w->rev > 0)
		ki_buf_printf(b, ",\"revision\":\"%lld\"", (long long)w->rev);
	ki_buf_putc(b, '}');
	return b->oom ? KI_ENOMEM : KI_OK;
}

/* One range request at the transaction's revision; *kvs borrowed from
 * *resp (caller puts). */
static int
remote_range(store_txn *t, const char *key, size_t klen, const char *end,
	size_t elen, long limit, json_object **resp, json_object **kvs,
	int *more)
{
	et_store *e = (et_store *)(void *)t->s;
	ki_buf b;
	json_object *m;
	int rc;

	*kvs = NULL;
	*more = 0;
	ki_buf_init(&b);
	if ((rc = range_body(&b, t->top, key, klen, end, elen, limit)) == KI_OK)
		rc = et_post_read(e, t->top->conn, "/v3/kv/range", b.data,
		    b.len, resp);
	ki_buf_free(&b);
	if (rc != KI_OK)
		return rc;
	json_object_object_get_ex(*resp, "kvs", kvs);
	if (json_object_object_get_ex(*resp, "more", &m))
		*more = json_object_get_boolean(m);
	return KI_OK;
}

int
et_get(store_txn *t, const char *key, size_t klen, const char **val,
	size_t *vlen)
{
	et_top *w = t->top;
	json_object *resp = NULL, *kvs;
	size_t i = ent_find(w, key, klen);
	char *v = NULL;
	int rc, more;

	w->observed = 1;
	if (i < w->nents && keycmp(w->ents[i]->key, w->ents[i]->klen, key,
	    klen) == 0) {
		if (w->ents[i]->del)
			return KI_ENOTFOUND;
		*val = w->ents[i]->val;
		*vlen = w->ents[i]->vlen;
		return KI_OK;
	}
	{
		const et_ent *c = cache_find(w, key, klen);

		if (c != NULL) {
			if (c->del)
				return KI_ENOTFOUND;
			*val = c->val;
			*vlen = c->vlen;
			return KI_OK;
		}
	}
	if (et_local_only(t, key, klen))
		return KI_ENOTFOUND;
	if (w->cached) {
		/* Borrowed from the cache: it keeps the version while the
		 * transaction is registered there. */
		rc = et_wc_get((et_store *)(void *)t->s, w->gen, w->rev, key, klen,
		    val, vlen, NULL);
		if (rc != 1)
			return rc;
		w->cached = 0;   /* the cache reloaded: read etcd */
	}
	if ((rc = remote_range(t, key, klen, NULL, 0, 0, &resp, &kvs, &more)) !=
	    KI_OK)
		return rc;
	if (kvs == NULL || json_object_array_length(kvs) == 0) {
		rc = cache_add(w, key, klen, NULL, 0);
		if (rc == KI_OK)
			rc = KI_ENOTFOUND;
		goto out;
	}
	if ((rc = et_unb64(json_object_array_get_idx(kvs, 0), "value", &v,
	    vlen)) != KI_OK)
		goto out;
	if (v == NULL && (v = calloc(1, 1)) == NULL) {
		rc = KI_ENOMEM;
		goto out;
	}
	/* The cache owns it now; it lives as long as the transaction. */
	*val = v;
	rc = cache_add(w, key, klen, v, *vlen);
	v = NULL;
out:
	free(v);
	json_object_put(resp);
	return rc;
}

int
et_prefetch(store_txn *t, const uint64_t *ids, size_t n)
{
	et_store *e = (et_store *)(void *)t->s;
	et_top *w = t->top;
	size_t at = 0;
	int rc = KI_OK;

	if (w->cached) {
		for (; at < n && rc == KI_OK; at++) {
			char key[64];
			const char *v;
			size_t vl;

			rc = et_get(t, key, et_id_key(e, key, ids[at]), &v, &vl);
			if (rc == KI_ENOTFOUND)
				rc = KI_OK;
		}
		return rc;
	}
	while (at < n && rc == KI_OK) {
		json_object *resp = NULL, *rs;
		char keys[ET_BATCH][64];
		size_t klen[ET_BATCH], m = 0;
		ki_buf b;

		ki_buf_init(&b);
		ki_buf_puts(&b, "{\"success\":[");
		for (; at < n && m < ET_BATCH; at++) {
			size_t kl = et_id_key(e, keys[m], ids[at]), bi;

			bi = ent_find(w, keys[m], kl);
			if ((bi < w->nents && keycmp(w->ents[bi]->key,
			    w->ents[bi]->klen, keys[m], kl) == 0) ||
			    cache_find(w, keys[m], kl) != NULL)
				continue;
			if (m > 0)
				ki_buf_putc(&b, ',');
			ki_buf_puts(&b, "{\"request_range\":{\"key\":");
			et_b64(&b, keys[m], kl);
			ki_buf_printf(&b, ",\"revision\":\"%lld\"}}",
			    (long long)w->rev);
			klen[m++] = kl;
		}
		ki_buf_puts(&b, "]}");
		if (m == 0) {
			ki_buf_free(&b);
			continue;
		}
		rc = b.oom ? KI_ENOMEM :
		    et_post_read(e, w->conn, "/v3/kv/txn", b.data, b.len, &resp);
		ki_buf_free(&b);
		if (rc == KI_OK && (!json_object_object_get_ex(resp, "responses",
		    &rs) || json_object_array_length(rs) != m))
			rc = KI_ESTORE;
		for (size_t i = 0; i < m && rc == KI_OK; i++) {
			json_object *rr, *kvs = NULL;
			char *v = NULL;
			size_t vl = 0;

			if (json_object_object_get_ex(json_object_array_get_idx(rs, i),
			    "response_range", &rr))
				json_object_object_get_ex(rr, "kvs", &kvs);
			if (kvs != NULL && json_object_array_length(kvs) > 0) {
				rc = et_unb64(json_object_array_get_idx(kvs, 0), "value", &v,
				    &vl);
				if (rc == KI_OK && v == NULL && (v = calloc(1, 1)) == NULL)
					rc = KI_ENOMEM;
			}
			if (rc == KI_OK)
				rc = cache_add(w, keys[i], klen[i], v, vl);
			else
				free(v);
		}
		json_object_put(resp);
	}
	return rc;
}

/* Records how to undo a change of entry i (absent: had 0) while a child
 * is open. */
static int
undo_note(et_top *w, const char *key, size_t klen, const et_ent *old)
{
	et_undo *u;

	if (w->depth == 0)
		return KI_OK;
	if (w->nundo == w->capundo) {
		size_t cap = w->capundo ? w->capundo * 2 : 64;
		et_undo *g = realloc(w->undo, cap * sizeof(*g));

		if (g == NULL)
			return KI_ENOMEM;
		w->undo = g;
		w->capundo = cap;
	}
	u = &w->undo[w->nundo];
	memset(u, 0, sizeof(*u));
	if ((u->key = malloc(klen + 1)) == NULL)
		return KI_ENOMEM;
	memcpy(u->key, key, klen);
	u->klen = klen;
	if (old != NULL) {
		u->had = 1;
		u->del = old->del;
		if (!old->del) {
			if ((u->val = malloc(old->vlen + 1)) == NULL) {
				free(u->key);
				return KI_ENOMEM;
			}
			memcpy(u->val, old->val, old->vlen);
			u->vlen = old->vlen;
		}
	}
	w->nundo++;
	return KI_OK;
}

/* Sets key to val (del: deleted) in the buffer; consumes val. */
static int
ent_set(et_top *w, const char *key, size_t klen, char *val, size_t vlen,
	int del)
{
	size_t i = ent_find(w, key, klen);
	et_ent *x;
	int rc;

	if (i < w->nents && keycmp(w->ents[i]->key, w->ents[i]->klen, key,
	    klen) == 0) {
		x = w->ents[i];
		if ((rc = undo_note(w, key, klen, x)) != KI_OK) {
			free(val);
			return rc;
		}
		free(x->val);
		x->val = val;
		x->vlen = vlen;
		x->del = del;
		return KI_OK;
	}
	if ((rc = undo_note(w, key, klen, NULL)) != KI_OK) {
		free(val);
		return rc;
	}
	if (w->nents == w->capents) {
		size_t cap = w->capents ? w->capents * 2 : 64;
		et_ent **g = realloc(w->ents, cap * sizeof(*g));

		if (g == NULL) {
			free(val);
			return KI_ENOMEM;
		}
		w->ents = g;
		w->capents = cap;
	}
	if ((x = calloc(1, sizeof(*x))) == NULL ||
	    (x->key = malloc(klen + 1)) == NULL) {
		free(x);
		free(val);
		return KI_ENOMEM;
	}
	memcpy(x->key, key, klen);
	x->klen = klen;
	x->val = val;
	x->vlen = vlen;
	x->del = del;
	memmove(w->ents + i + 1, w->ents + i, (w->nents - i) * sizeof(*w->ents));
	w->ents[i] = x;
	w->nents++;
	return KI_OK;
}

int
et_set(store_txn *t, const char *key, size_t klen, const void *val,
	size_t vlen)
{
	char *v = malloc(vlen + 1);

	if (v == NULL)
		return KI_ENOMEM;
	if (vlen > 0)
		memcpy(v, val, vlen);
	v[vlen] = '\0';
	return ent_set(t->top, key, klen, v, vlen, 0);
}

int
et_del(store_txn *t, const char *key, size_t klen)
{
	return ent_set(t->top, key, klen, NULL, 0, 1);
}

/* Removes the buffered entry of key (an undo of its first write). */
static void
ent_remove(et_top *w, const char *key, size_t klen)
{
	size_t i = ent_find(w, key, klen);

	if (i < w->nents && keycmp(w->ents[i]->key, w->ents[i]->klen, key,
	    klen) == 0) {
		free(w->ents[i]->key);
		free(w->ents[i]->val);
		free(w->ents[i]);
		memmove(w->ents + i, w->ents + i + 1,
		    (w->nents - i - 1) * sizeof(*w->ents));
		w->nents--;
	}
}

/* The index of the first buffered key of a scan not yet emitted: after
 * last (the last key emitted; none yet: from start). Found again at each
 * step, since the scan's callback may write (a referrer re-rendered while
 * the referrers are walked), which moves the buffer's entries. */
static size_t
buf_next(const et_top *w, const ki_buf *last, const char *start, size_t slen)
{
	size_t i;

	if (last->data == NULL)
		return ent_find(w, start, slen);
	i = ent_find(w, last->data, last->len);
	if (i < w->nents && keycmp(w->ents[i]->key, w->ents[i]->klen,
	    last->data, last->len) == 0)
		i++;
	return i;
}

static int
set_last(ki_buf *last, const char *key, size_t klen)
{
	ki_buf_reset(last);
	return ki_buf_append(last, key, klen);
}

/* Emits the buffered keys below (k, kl) (every one left: k NULL). */
static int
buf_emit_below(const et_top *w, ki_buf *last, const char *start, size_t slen,
	const char *k, size_t kl, et_scan_fn fn, void *arg)
{
	int rc = KI_OK;

	for (;;) {
		size_t bi = buf_next(w, last, start, slen);
		const et_ent *x;

		if (bi >= w->nents || keycmp(w->ents[bi]->key, w->ents[bi]->klen,
		    k, kl) >= 0)
			return rc;
		x = w->ents[bi];
		if (set_last(last, x->key, x->klen) != KI_OK)
			return KI_ENOMEM;
		if (!x->del && (rc = fn(arg, x->key, x->klen, x->val, x->vlen)) !=
		    KI_OK)
			return rc;
	}
}

/* One page of a scan: keys and values in order, borrowed from the watch
 * cache (valid while the transaction is registered there) or copies of a
 * range request's answer (own). */
typedef struct et_page {
	const char **k, **v;
	size_t *kl, *vl;
	size_t n, cap;
	char **own;             /* the copies, 2 per key of a remote page */
	size_t nown;
} et_page;

static void
page_clear(et_page *p)
{
	for (size_t i = 0; i < p->nown; i++)
		free(p->own[i]);
	p->nown = 0;
	p->n = 0;
}

static void
page_free(et_page *p)
{
	page_clear(p);
	free(p->k);
	free(p->v);
	free(p->kl);
	free(p->vl);
	free(p->own);
}

static int
page_grow(et_page *p)
{
	size_t cap = p->cap ? p->cap * 2 : 64;
	const char **a, **b;
	size_t *c, *d;
	char **o;

	if ((a = realloc(p->k, cap * sizeof(*a))) == NULL)
		return KI_ENOMEM;
	p->k = a;
	if ((b = realloc(p->v, cap * sizeof(*b))) == NULL)
		return KI_ENOMEM;
	p->v = b;
	if ((c = realloc(p->kl, cap * sizeof(*c))) == NULL)
		return KI_ENOMEM;
	p->kl = c;
	if ((d = realloc(p->vl, cap * sizeof(*d))) == NULL)
		return KI_ENOMEM;
	p->vl = d;
	if ((o = realloc(p->own, 2 * cap * sizeof(*o))) == NULL)
		return KI_ENOMEM;
	p->own = o;
	p->cap = cap;
	return KI_OK;
}

/* Appends a key and its value (v NULL: the empty value): borrowed, or
 * copied (copy). */
static int
page_add(et_page *p, const char *k, size_t kl, const char *v, size_t vl,
	int copy)
{
	if (p->n == p->cap && page_grow(p) != KI_OK)
		return KI_ENOMEM;
	if (v == NULL) {
		v = "";
		vl = 0;
	}
	if (copy) {
		char *kc = malloc(kl + 1), *vc = malloc(vl + 1);

		if (kc == NULL || vc == NULL) {
			free(kc);
			free(vc);
			return KI_ENOMEM;
		}
		memcpy(kc, k, kl);
		kc[kl] = '\0';
		if (vl > 0)
			memcpy(vc, v, vl);
		vc[vl] = '\0';
		p->own[p->nown++] = kc;
		p->own[p->nown++] = vc;
		k = kc;
		v = vc;
	}
	p->k[p->n] = k;
	p->v[p->n] = v;
	p->kl[p->n] = kl;
	p->vl[p->n] = vl;
	p->n++;
	return KI_OK;
}

static int
on_wc_page(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen, int64_t mod)
{
	(void)mod;
	return page_add(arg, key, klen, val, vlen, 0);
}

/* The next page of [from, end) at the transaction's revision: from the
 * watch cache, or one range request. */
static int
page_fetch(store_txn *t, const ki_buf *from, const char *end, size_t elen,
	et_page *p, int *more)
{
	et_top *w = t->top;
	json_object *resp = NULL, *kvs = NULL;
	size_t n;
	int rc;

	page_clear(p);
	w->observed = 1;
	if (w->cached) {
		rc = et_wc_range((et_store *)(void *)t->s, w->gen, w->rev,
		    from->data, from->len, end, elen, ET_WC_PAGE, on_wc_page, p,
		    more);
		if (rc != 1)
			return rc;
		page_clear(p);
		w->cached = 0;   /* the cache reloaded: read etcd */
	}
	rc = remote_range(t, from->data, from->len, end, elen, ET_PAGE, &resp,
	    &kvs, more);
	n = kvs != NULL ? json_object_array_length(kvs) : 0;
	for (size_t i = 0; i < n && rc == KI_OK; i++) {
		json_object *kv = json_object_array_get_idx(kvs, i);
		char *k = NULL, *v = NULL;
		size_t kl, vl;

		if ((rc = et_unb64(kv, "key", &k, &kl)) == KI_OK &&
		    (rc = et_unb64(kv, "value", &v, &vl)) == KI_OK)
			rc = page_add(p, k, kl, v, vl, 1);
		free(k);
		free(v);
	}
	json_object_put(resp);
	return rc;
}

/* et_scan, or (merge 0) what etcd holds alone, without the buffer. */
static int
scan(store_txn *t, const char *start, size_t slen, const char *end,
	size_t elen, et_scan_fn fn, void *arg, int merge)
{
	et_top *w = t->top;
	ki_buf from, last;
	et_page p;
	int rc = KI_OK, more = 1;

	memset(&p, 0, sizeof(p));
	ki_buf_init(&from);
	ki_buf_init(&last);
	if (ki_buf_append(&from, start, slen) != KI_OK)
		return KI_ENOMEM;
	while (more && rc == KI_OK) {
		size_t n;

		rc = page_fetch(t, &from, end, elen, &p, &more);
		n = rc == KI_OK ? p.n : 0;
		for (size_t i = 0; i < n && rc == KI_OK; i++) {
			const char *k = p.k[i], *v = p.v[i];
			size_t kl = p.kl[i], vl = p.vl[i], bi;

			/* Buffered keys before this one come first. */
			if (merge)
				rc = buf_emit_below(w, &last, start, slen, k, kl, fn, arg);
			if (rc == KI_OK && set_last(&last, k, kl) != KI_OK)
				rc = KI_ENOMEM;
			bi = merge ? ent_find(w, k, kl) : w->nents;
			if (rc != KI_OK)
				;
			else if (bi < w->nents && keycmp(w->ents[bi]->key,
			    w->ents[bi]->klen, k, kl) == 0) {
				if (!w->ents[bi]->del)
					rc = fn(arg, k, kl, w->ents[bi]->val,
					    w->ents[bi]->vlen);
			} else
				rc = fn(arg, k, kl, v, vl);
			if (i + 1 == n) {
				/* The next page starts just after this key. */
				ki_buf_reset(&from);
				ki_buf_append(&from, k, kl);
				if (ki_buf_putc(&from, '\0') != KI_OK)
					rc = KI_ENOMEM;
			}
		}
		if (n == 0)
			more = 0;
	}
	/* Buffered keys after the last stored one. */
	if (rc == KI_OK && merge)
		rc = buf_emit_below(w, &last, start, slen, end, elen, fn, arg);
	page_free(&p);
	ki_buf_free(&from);
	ki_buf_free(&last);
	return rc;
}

int
et_scan(store_txn *t, const char *start, size_t slen, const char *end,
	size_t elen, et_scan_fn fn, void *arg)
{
	return scan(t, start, slen, end, elen, fn, arg, 1);
}

int
et_scan_remote(store_txn *t, const char *start, size_t slen, const char *end,
	size_t elen, et_scan_fn fn, void *arg)
{
	return scan(t, start, slen, end, elen, fn, arg, 0);
}

/* Notes one m/ key's value. */
static int
meta_note(et_top *w, size_t n, const char *k, size_t kl, const char *v,
	size_t vl, int64_t mod)
{
	uint64_t x;

	if (vl != 8)
		return KI_ECORRUPT;
	x = et_get_be64(v);
	if (kl == n + 2 && memcmp(k + n, "rv", 2) == 0) {
		w->rv = x;
		w->rv_mod = mod;
	} else if (kl == n + 3 && memcmp(k + n, "seq", 3) == 0)
		w->seq = x;
	else if (kl == n + 7 && memcmp(k + n, "changes", 7) == 0)
		w->changes = x;
	else if (kl == n + 4 && memcmp(k + n, "trim", 4) == 0)
		w->trim = x;
	return KI_OK;
}

typedef struct meta_arg {
	et_top *w;
	size_t n;
} meta_arg;

static int
on_wc_meta(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen, int64_t mod)
{
	meta_arg *m = arg;

	return meta_note(m->w, m->n, key, klen, val, vlen, mod);
}

/* Takes the watch cache's revision as the transaction's, and reads the
 * m/ keys there: 1 when the cache is not ready (read etcd). */
static int
read_meta_cached(store_txn *t)
{
	et_store *e = (et_store *)(void *)t->s;
	et_top *w = t->top;
	char key[512], end[512];
	meta_arg m;
	int rc, more;

	if (!et_wc_begin(e, &w->rev, &w->gen))
		return 1;
	w->cached = 1;
	w->reg = 1;
	m.w = w;
	m.n = et_key(e, key, 'm', NULL, 0);
	memcpy(end, key, m.n);
	end[m.n - 1]++;
	w->rv = w->seq = w->changes = w->trim = 0;
	w->rv_mod = 0;
	rc = et_wc_range(e, w->gen, w->rev, key, m.n, end, m.n, 0, on_wc_meta,
	    &m, &more);
	if (rc == 1) {
		/* Reloaded meanwhile: read etcd. */
		et_wc_end(e, w->rev, w->gen);
		w->cached = w->reg = 0;
		w->rev = 0;
	}
	return rc;
}

/* Reads the m/ keys (one range request) and takes their revision as the
 * transaction's. */
static int
read_meta(store_txn *t)
{
	et_store *e = (et_store *)(void *)t->s;
	et_top *w = t->top;
	json_object *resp = NULL, *kvs, *hdr;
	char key[512], end[512];
	size_t n;
	int rc, more;

	if ((rc = read_meta_cached(t)) != 1)
		return rc;
	n = et_key(e, key, 'm', NULL, 0);
	memcpy(end, key, n);
	end[n - 1]++;
	w->rev = 0;
	if ((rc = remote_range(t, key, n, end, n, 0, &resp, &kvs, &more)) !=
	    KI_OK)
		return rc;
	if (json_object_object_get_ex(resp, "header", &hdr))
		w->rev = et_int(hdr, "revision");
	for (size_t i = 0; kvs != NULL && i < json_object_array_length(kvs);
	    i++) {
		json_object *kv = json_object_array_get_idx(kvs, i);
		char *k = NULL, *v = NULL;
		size_t kl, vl;

		if ((rc = et_unb64(kv, "key", &k, &kl)) != KI_OK ||
		    (rc = et_unb64(kv, "value", &v, &vl)) != KI_OK) {
			free(k);
			break;
		}
		rc = meta_note(w, n, k, kl, v, vl, et_int(kv, "mod_revision"));
		free(k);
		free(v);
	}
	json_object_put(resp);
	return rc;
}

/* Forgets what the transaction read (not what it wrote). */
static void
reads_free(et_top *w)
{
	for (size_t i = 0; i < w->ncache; i++) {
		free(w->cache[i]->key);
		free(w->cache[i]->val);
		free(w->cache[i]);
	}
	w->ncache = 0;
	memset(w->facets_read, 0, sizeof(w->facets_read));
}

static void
top_free(store_txn *t)
{
	et_store *e = (et_store *)(void *)t->s;
	et_top *w = t->top;

	reads_free(w);
	if (w->reg)
		et_wc_end(e, w->rev, w->gen);

	for (size_t i = 0; i < w->nents; i++) {
		free(w->ents[i]->key);
		free(w->ents[i]->val);
		free(w->ents[i]);
	}
	free(w->ents);
	free(w->cache);
	for (size_t i = 0; i < w->nundo; i++) {
		free(w->undo[i].key);
		free(w->undo[i].val);
	}
	free(w->undo);
	et_conn_put(e, w->conn);
	if (t->write)
		pthread_mutex_unlock(&e->wmu);
	free(w);
	free(t);
}

/* A write transaction served by the watch cache begins at etcd's latest
 * state: one range request reads m/rv's revision there, and when the
 * cache is behind it the transaction waits for the cache and reads again,
 * so that its commit conflicts only with a commit made while it ran. */
static int
write_fresh(store_txn *t)
{
	et_store *e = (et_store *)(void *)t->s;
	et_top *w = t->top;
	int64_t mod;
	int rc;

	if ((rc = et_wc_fresh(e, w->conn, &mod)) != KI_OK || mod <= w->rv_mod)
		return rc;
	(void)et_wc_wait(e, mod, ET_WAIT_MS);
	et_wc_end(e, w->rev, w->gen);
	w->cached = w->reg = 0;
	reads_free(w);
	return read_meta(t);
}

int
et_begin(store *s, int write, store_txn **out)
{
	et_store *e = (et_store *)(void *)s;
	store_txn *t;
	int rc;

	*out = NULL;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return KI_ENOMEM;
	if ((t->top = calloc(1, sizeof(*t->top))) == NULL) {
		free(t);
		return KI_ENOMEM;
	}
	t->s = s;
	t->write = write;
	if (write)
		pthread_mutex_lock(&e->wmu);
	if ((t->top->conn = et_conn_get(e)) == NULL)
		rc = KI_ENOMEM;
	else
		rc = read_meta(t);
	if (rc == KI_OK && write && t->top->cached)
		rc = write_fresh(t);
	if (rc != KI_OK) {
		top_free(t);
		return rc;
	}
	*out = t;
	return KI_OK;
}

int
et_confirm(store_txn *t, int fresh)
{
	et_store *e = (et_store *)(void *)t->s;
	et_top *w = t->top;
	int64_t mod;
	int rc;

	if (!w->cached || t->write || w->confirmed || !fresh)
		return 0;
	w->confirmed = 1;
	if ((rc = et_wc_fresh(e, w->conn, &mod)) != KI_OK)
		return rc;
	if (mod <= w->rv_mod)
		return 0;
	/* Another daemon committed since: wait for the cache to have it
	 * (or read etcd, when the cache is not ready), and read again. */
	(void)et_wc_wait(e, mod, ET_WAIT_MS);
	et_wc_end(e, w->rev, w->gen);
	w->cached = w->reg = 0;
	reads_free(w);
	if ((rc = read_meta(t)) != KI_OK)
		return rc;
	return 1;
}

int
et_begin_ahead(store *s, store_txn **out)
{
	int rc = et_begin(s, 0, out);

	if (rc == KI_OK)
		(*out)->top->confirmed = 1;   /* no confirmation: see store.h */
	return rc;
}

int
et_begin_child(store_txn *parent, store_txn **out)
{
	store_txn *t;

	*out = NULL;
	if (!parent->write)
		return KI_EINVAL;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return KI_ENOMEM;
	t->s = parent->s;
	t->top = parent->top;
	t->parent = parent;
	t->write = 1;
	t->undo_mark = t->top->nundo;
	t->rv = t->top->rv;
	t->seq = t->top->seq;
	t->changes = t->top->changes;
	t->top->depth++;
	*out = t;
	return KI_OK;
}

/* Appends one put or delete of the commit's Txn. */
static void
commit_op(ki_buf *b, const et_ent *x, int *first)
{
	if (!*first)
		ki_buf_putc(b, ',');
	*first = 0;
	if (x->del) {
		ki_buf_puts(b, "{\"request_delete_range\":{\"key\":");
		et_b64(b, x->key, x->klen);
		ki_buf_puts(b, "}}");
		return;
	}
	ki_buf_puts(b, "{\"request_put\":{\"key\":");
	et_b64(b, x->key, x->klen);
	ki_buf_puts(b, ",\"value\":");
	/* Compressed when it pays (etcd_codec.c); an allocation that fails
	 * shows in b->oom. */
	if (et_codec_put(b, x->val, x->vlen) == KI_ENOMEM)
		b->oom = 1;
	ki_buf_puts(b, "}}");
}

static int
meta_set(store_txn *t, const char *name, uint64_t v)
{
	et_store *e = (et_store *)(void *)t->s;
	char key[512];
	uint8_t val[8];

	et_put_be64(val, v);
	return et_set(t, key, et_key(e, key, 'm', name, strlen(name)), val, 8);
}

/* The mod_revision of m/rv that a failed commit's answer shows (its
 * failure branch reads it): what the watch cache must reach before the
 * batch runs again. */
static int64_t
conflict_rev(json_object *resp)
{
	json_object *rs, *rr, *kvs;

	if (!json_object_object_get_ex(resp, "responses", &rs) ||
	    json_object_array_length(rs) == 0 ||
	    !json_object_object_get_ex(json_object_array_get_idx(rs, 0),
	    "response_range", &rr) ||
	    !json_object_object_get_ex(rr, "kvs", &kvs) ||
	    json_object_array_length(kvs) == 0)
		return 0;
	return et_int(json_object_array_get_idx(kvs, 0), "mod_revision");
}

/* The top-level commit: one Txn (see store/etcd_int.h). Events at or
 * below the new trim point are dropped, not written. */
static int
commit_top(store_txn *t)
{
	et_store *e = (et_store *)(void *)t->s;
	et_top *w = t->top;
	json_object *resp = NULL, *ok, *hdr;
	char key[512], ev[512], evend[512];
	size_t klen, evlen;
	uint64_t trim = w->trim;
	ki_buf b;
	int rc, first = 1;

	if (w->nents == 0)
		return KI_OK;
	if (e->history > 0 && w->rv > e->history && w->rv - e->history > trim)
		trim = w->rv - e->history;
	if ((rc = meta_set(t, "rv", w->rv)) != KI_OK ||
	    (rc = meta_set(t, "seq", w->seq)) != KI_OK ||
	    (rc = meta_set(t, "changes", w->changes)) != KI_OK ||
	    (rc = meta_set(t, "trim", trim)) != KI_OK)
		return rc;
	klen = et_key(e, key, 'm', "rv", 2);
	evlen = et_key(e, ev, 'e', NULL, 0);
	ki_buf_init(&b);
	ki_buf_puts(&b, "{\"compare\":[{\"key\":");
	et_b64(&b, key, klen);
	ki_buf_printf(&b, ",\"target\":\"MOD\",\"result\":\"EQUAL\","
	    "\"mod_revision\":\"%lld\"}],\"success\":[", (long long)w->rv_mod);
	for (size_t i = 0; i < w->nents; i++) {
		const et_ent *x = w->ents[i];

		if (x->klen == evlen + 8 && memcmp(x->key, ev, evlen) == 0 &&
		    et_get_be64(x->key + evlen) <= trim)
			continue;
		commit_op(&b, x, &first);
	}
	if (trim > w->trim) {
		uint8_t at[8];

		memcpy(evend, ev, evlen);
		et_put_be64(at, trim + 1);
		memcpy(evend + evlen, at, 8);
		ki_buf_puts(&b, ",{\"request_delete_range\":{\"key\":");
		et_b64(&b, ev, evlen);
		ki_buf_puts(&b, ",\"range_end\":");
		et_b64(&b, evend, evlen + 8);
		ki_buf_puts(&b, "}}");
	}
	/* When the compare fails, m/rv tells which revision to wait for. */
	ki_buf_puts(&b, "],\"failure\":[{\"request_range\":{\"key\":");
	et_b64(&b, key, klen);
	ki_buf_puts(&b, "}}]}");
	/* A large Txn (a bulk upload's thousands of keys) may take etcd a
	 * while: its outcome unknown after a timeout is worse than a wait. */
	et_conn_timeout(e, w->conn, e->timeout_ms * ET_TXN_TIMEOUTS);
	if (b.oom)
		rc = KI_ENOMEM;
	else
		rc = et_post(e, w->conn, "/v3/kv/txn", b.data, b.len, &resp);
	/* Unavailable: the Txn may or may not have applied. It is sent
	 * again only while m/rv's mod_revision shows it did not (then its
	 * compare still guards the retry); otherwise its outcome stays
	 * unknown and the caller hears KI_EUNAVAIL. */
	for (int i = 0; rc == KI_EUNAVAIL && i + 1 < ET_TRIES; i++) {
		int64_t mod;

		et_backoff(i);
		if (et_rv_mod_now(e, w->conn, key, klen, &mod) != KI_OK ||
		    mod != w->rv_mod)
			break;
		rc = et_post(e, w->conn, "/v3/kv/txn", b.data, b.len, &resp);
	}
	ki_buf_free(&b);
	et_conn_timeout(e, w->conn, 0);
	if (rc == KI_OK && (!json_object_object_get_ex(resp, "succeeded", &ok) ||
	    !json_object_get_boolean(ok)))
		rc = KI_ECONFLICT;
	if (rc == KI_OK && json_object_object_get_ex(resp, "header", &hdr))
		/* Read your writes: the next transaction's reads (from the
		 * cache) must see this one. */
		(void)et_wc_wait(e, et_int(hdr, "revision"), ET_WAIT_MS);
	else if (rc == KI_ECONFLICT)
		/* Another daemon's commit: a rerun must read it. */
		(void)et_wc_wait(e, conflict_rev(resp), ET_WAIT_MS);
	if (rc == KI_OK)
		et_quota_wrote(e);
	json_object_put(resp);
	return rc;
}

/* Undoes the buffer's changes back to mark. */
static void
undo_to(et_top *w, size_t mark)
{
	while (w->nundo > mark) {
		et_undo *u = &w->undo[--w->nundo];

		if (!u->had)
			ent_remove(w, u->key, u->klen);
		else {
			size_t i = ent_find(w, u->key, u->klen);
			et_ent *x = w->ents[i];

			free(x->val);
			x->val = u->val;
			x->vlen = u->vlen;
			x->del = u->del;
			u->val = NULL;
		}
		free(u->key);
		free(u->val);
	}
}

int
et_commit(store_txn *t)
{
	int rc = KI_OK;

	if (t->parent != NULL) {
		if (--t->top->depth == 0) {
			/* No savepoint left to roll back to. */
			for (size_t i = 0; i < t->top->nundo; i++) {
				free(t->top->undo[i].key);
				free(t->top->undo[i].val);
			}
			t->top->nundo = 0;
		}
		free(t);
		return KI_OK;
	}
	if (t->write)
		rc = commit_top(t);
	top_free(t);
	return rc;
}

void
et_abort(store_txn *t)
{
	if (t->parent != NULL) {
		et_top *w = t->top;

		undo_to(w, t->undo_mark);
		w->rv = t->rv;
		w->seq = t->seq;
		w->changes = t->changes;
		w->depth--;
		free(t);
		return;
	}
	top_free(t);
}
