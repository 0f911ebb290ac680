/* store/etcd.c — the etcd backend of store/store.h: records, the name,
 * natural-key, digest, label and reference indexes, facet counts, events
 * and tokens as keys (store/etcd_int.h has the layout), over the
 * transactions of etcd_txn.c. */
#include <stdlib.h>
#include <string.h>

#include "store/etcd_int.h"

#define KEY_MAX (STORE_MAX_NATKEY + 600)

static et_store *
es(store_txn *t)
{
	return (et_store *)(void *)t->s;
}

/* P n/ kind name, P k/ kind natkey. */
static size_t
kind_key(et_store *e, char *buf, char part, int kind, const char *s, size_t n)
{
	char tmp[KEY_MAX];

	tmp[0] = (char)kind;
	memcpy(tmp + 1, s, n);
	return et_key(e, buf, part, tmp, n + 1);
}

/* P d/ digest id, P r/ digest id. */
static size_t
digest_id_key(et_store *e, char *buf, char part, const uint8_t *d,
	uint64_t id)
{
	uint8_t b[STORE_DIGEST_LEN + 8];

	memcpy(b, d, STORE_DIGEST_LEN);
	et_put_be64(b + STORE_DIGEST_LEN, id);
	return et_key(e, buf, part, b, sizeof(b));
}

/* P l/ kind key NUL value NUL id (id 0 and no id: the label's prefix). */
static size_t
label_key(et_store *e, char *buf, int kind, const char *k, size_t klen,
	const char *v, size_t vlen, const uint64_t *id)
{
	char tmp[STORE_MAX_INDEXED + 16];
	size_t n = 0;

	tmp[n++] = (char)kind;
	memcpy(tmp + n, k, klen);
	n += klen;
	tmp[n++] = '\0';
	memcpy(tmp + n, v, vlen);
	n += vlen;
	tmp[n++] = '\0';
	if (id != NULL) {
		et_put_be64((uint8_t *)tmp + n, *id);
		n += 8;
	}
	return et_key(e, buf, 'l', tmp, n);
}

static int
get_id(store_txn *t, const char *key, size_t klen, uint64_t *id)
{
	const char *v;
	size_t vl;
	int rc = et_get(t, key, klen, &v, &vl);

	if (rc == KI_OK && vl != 8)
		rc = KI_ECORRUPT;
	if (rc == KI_OK)
		*id = et_get_be64(v);
	return rc;
}

static int
get_via(store_txn *t, char part, int kind, const char *name, size_t len,
	store_obj *out)
{
	char key[KEY_MAX];
	uint64_t id;
	int rc;

	if (len > STORE_MAX_NATKEY)
		return KI_ENOTFOUND;
	rc = get_id(t, key, kind_key(es(t), key, part, kind, name, len), &id);
	if (rc == KI_OK)
		rc = et_get_by_seq(t, id, out);
	return rc;
}

/* A lookup that found nothing in a transaction the watch cache serves is
 * asked again once the cache has what etcd has (et_confirm): what
 * another daemon wrote is found at once. */
static int
recheck(store_txn *t, int fresh, int rc)
{
	if (rc != KI_ENOTFOUND)
		return 0;
	return et_confirm(t, fresh);
}

static int
et_get_by_name(store_txn *t, int kind, const char *name, size_t len,
	store_obj *out)
{
	int fresh = !t->top->observed, c;
	int rc = get_via(t, 'n', kind, name, len, out);

	if ((c = recheck(t, fresh, rc)) == 1)
		rc = get_via(t, 'n', kind, name, len, out);
	return c < 0 ? c : rc;
}

static int
et_get_by_natkey(store_txn *t, int kind, const char *key, size_t len,
	store_obj *out)
{
	int fresh = !t->top->observed, c;
	int rc = get_via(t, 'k', kind, key, len, out);

	if ((c = recheck(t, fresh, rc)) == 1)
		rc = get_via(t, 'k', kind, key, len, out);
	return c < 0 ? c : rc;
}


static int
first_id(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen)
{
	(void)val;
	(void)vlen;
	*(uint64_t *)arg = et_get_be64(key + klen - 8);
	return 1;
}

/* The first id etcd holds for the digest at the transaction's revision
 * (0: none), read once per transaction: the answer is kept in the cache
 * under the digest's prefix, a key no entry has (entries add the id). */
static int
remote_first(store_txn *t, const char *key, size_t n, const char *end,
	size_t elen, uint64_t *id)
{
	const char *v;
	size_t vl;
	uint8_t b[8];
	int rc = et_cache_get(t, key, n, &v, &vl);

	*id = 0;
	if (rc == KI_OK && vl == 8)
		*id = et_get_be64(v);
	if (rc != 1)
		return KI_OK;
	rc = et_scan_remote(t, key, n, end, elen, first_id, id);
	if (rc != KI_OK && rc != 1)
		return rc;
	et_put_be64(b, *id);
	return et_cache_put(t, key, n, *id != 0 ? (const char *)b : NULL, 8);
}

static int
get_by_digest(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_obj *out)
{
	char key[128], end[128], rkey[128];
	size_t n = et_key(es(t), key, 'd', digest, STORE_DIGEST_LEN), elen, bl;
	const char *bk;
	uint64_t id = 0, rid;
	int rc;

	memcpy(end, key, n);
	elen = et_prefix_end(end, n);
	if ((rc = remote_first(t, key, n, end, elen, &rid)) != KI_OK)
		return rc;
	if (rid != 0) {
		uint8_t b[STORE_DIGEST_LEN + 8];

		memcpy(b, digest, STORE_DIGEST_LEN);
		et_put_be64(b + STORE_DIGEST_LEN, rid);
		if (et_buf_deleted(t, rkey, et_key(es(t), rkey, 'd', b,
		    sizeof(b)))) {
			/* Deleted here: the next one may be anywhere. */
			rc = et_scan(t, key, n, end, elen, first_id, &id);
			if (rc == 1)
				return et_get_by_seq(t, id, out);
			return rc == KI_OK ? KI_ENOTFOUND : rc;
		}
		id = rid;
	}
	if (et_buf_first(t, key, n, end, elen, &bk, &bl) &&
	    (id == 0 || et_get_be64(bk + bl - 8) < id))
		id = et_get_be64(bk + bl - 8);
	if (id == 0)
		return KI_ENOTFOUND;
	return et_get_by_seq(t, id, out);
}

static int
et_get_by_digest(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_obj *out)
{
	int fresh = !t->top->observed, c;
	int rc = get_by_digest(t, digest, out);

	if ((c = recheck(t, fresh, rc)) == 1)
		rc = get_by_digest(t, digest, out);
	return c < 0 ? c : rc;
}

static uint64_t
et_rv(store_txn *t)
{
	t->top->observed = 1;
	return t->top->rv;
}

static uint64_t
et_next_rv(store_txn *t)
{
	return t->top->rv + 1;
}

static uint64_t
et_writes(store_txn *t)
{
	return t->top->writes;
}

static int
et_changes(store_txn *t, uint64_t *out)
{
	t->top->observed = 1;
	*out = t->top->changes;
	return KI_OK;
}

static uint64_t
et_oldest_event(store_txn *t)
{
	t->top->observed = 1;
	return t->top->rv > t->top->trim ? t->top->trim + 1 : 0;
}

static int
on_facet_read(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen)
{
	int rc = et_cache_put(arg, key, klen, val, vlen);

	return rc == KI_OK ? 0 : rc;
}

/* Reads every facet count of kind at once (one range request): a put
 * changes several, and a batch many objects' (see et_local_only). */
static int
facets_read(store_txn *t, int kind)
{
	uint8_t k = (uint8_t)kind;
	char from[64], to[64];
	size_t n;
	int rc;

	if ((t->top->facets_read[k / 8] >> (k % 8)) & 1)
		return KI_OK;
	n = et_key(es(t), from, 'f', &k, 1);
	memcpy(to, from, n);
	rc = et_scan_remote(t, from, n, to, et_prefix_end(to, n), on_facet_read,
	    t);
	if (rc == KI_OK)
		t->top->facets_read[k / 8] |= (uint8_t)(1u << (k % 8));
	return rc;
}

/* Adds delta to the count of each facet in the blob. */
static int
facets_add(store_txn *t, int kind, const char *f, size_t len, int delta)
{
	const char *p = f, *end = f + len;
	int rc = facets_read(t, kind);

	while (p < end && rc == KI_OK) {
		size_t n = strnlen(p, (size_t)(end - p));
		char key[KEY_MAX];
		const char *v;
		size_t kl, vl;
		uint64_t c = 0;

		if (n > STORE_MAX_NATKEY)
			return KI_EINVAL;
		kl = kind_key(es(t), key, 'f', kind, p, n);
		rc = et_get(t, key, kl, &v, &vl);
		if (rc == KI_OK && vl == 8)
			c = et_get_be64(v);
		if (rc == KI_OK || rc == KI_ENOTFOUND) {
			uint8_t b[8];

			c = delta > 0 ? c + 1 : c > 0 ? c - 1 : 0;
			et_put_be64(b, c);
			rc = c > 0 ? et_set(t, key, kl, b, 8) : et_del(t, key, kl);
		}
		p += n + 1;
	}
	return rc;
}

/* Adds (dir 1) or removes (dir -1) every index entry of o but its name;
 * facets: o's own or, when it has none, computed from its labels. */
static int
index_obj(store_txn *t, const store_obj *o, int dir, const char *facets,
	size_t facets_len)
{
	et_store *e = es(t);
	char key[KEY_MAX];
	size_t n;
	int rc = KI_OK;

	n = digest_id_key(e, key, 'd', o->digest, o->seq);
	rc = dir > 0 ? et_set(t, key, n, "", 0) : et_del(t, key, n);
	if (o->natkey_len > 0 && rc == KI_OK) {
		n = kind_key(e, key, 'k', o->kind, o->natkey, o->natkey_len);
		if (dir > 0) {
			uint8_t b[8];

			et_put_be64(b, o->seq);
			rc = et_set(t, key, n, b, 8);
		} else {
			uint64_t id = 0;

			/* Only its own: another object may hold it now. */
			if (get_id(t, key, n, &id) == KI_OK && id == o->seq)
				rc = et_del(t, key, n);
		}
	}
	for (size_t i = 0; i < o->nrefs && rc == KI_OK; i++) {
		n = digest_id_key(e, key, 'r', o->refs + i * STORE_DIGEST_LEN,
		    o->seq);
		rc = dir > 0 ? et_set(t, key, n, "", 0) : et_del(t, key, n);
	}
	for (const char *p = o->labels, *end = o->labels + o->labels_len;
	    o->labels != NULL && p < end && rc == KI_OK;) {
		size_t kl = strnlen(p, (size_t)(end - p));
		const char *v = p + kl + 1;
		size_t vl = v < end ? strnlen(v, (size_t)(end - v)) : 0;

		if (v >= end)
			break;
		if (kl + vl <= STORE_MAX_INDEXED) {
			n = label_key(e, key, o->kind, p, kl, v, vl, &o->seq);
			rc = dir > 0 ? et_set(t, key, n, "", 0) : et_del(t, key, n);
		}
		p = v + vl + 1;
	}
	if (rc == KI_OK && facets_len > 0)
		rc = facets_add(t, o->kind, facets, facets_len, dir);
	return rc;
}

/* The facets of o: its own, or computed (into buf) from its labels. */
static int
facets_of(store_txn *t, const store_obj *o, ki_buf *buf, const char **f,
	size_t *len)
{
	*f = o->facets;
	*len = o->facets_len;
	if (*len > 0 || es(t)->facets == NULL)
		return KI_OK;
	if (es(t)->facets(o->kind, o->labels, o->labels_len, buf) != KI_OK ||
	    buf->oom)
		return KI_ENOMEM;
	*f = buf->data;
	*len = buf->len;
	return KI_OK;
}

/* Records the event of rv: type and the record rec. */
static int
put_event(store_txn *t, uint64_t rv, int type, const ki_buf *rec)
{
	char key[64];
	uint8_t b[8];
	char *v = malloc(rec->len + 1);
	int rc;

	if (v == NULL)
		return KI_ENOMEM;
	v[0] = (char)type;
	memcpy(v + 1, rec->data, rec->len);
	et_put_be64(b, rv);
	rc = et_set(t, key, et_key(es(t), key, 'e', b, 8), v, rec->len + 1);
	free(v);
	return rc;
}

static int
et_put(store_txn *t, store_obj *o)
{
	et_store *e = es(t);
	et_top *w = t->top;
	char key[KEY_MAX];
	size_t n;
	store_obj old;
	ki_buf fb, ofb, rec;
	const char *f, *of;
	size_t flen, oflen;
	uint64_t id = 0;
	int rc, replaced = 0;

	w->writes++;
	if (o->rv != w->rv + 1 || o->name_len == 0 ||
	    o->name_len > STORE_MAX_NAME || o->natkey_len > STORE_MAX_NATKEY ||
	    o->nrefs > STORE_MAX_REFS || o->kind <= 0 || o->kind > 255)
		return KI_EINVAL;
	ki_buf_init(&fb);
	ki_buf_init(&ofb);
	ki_buf_init(&rec);
	n = kind_key(e, key, 'n', o->kind, o->name, o->name_len);
	rc = get_id(t, key, n, &id);
	if (rc == KI_OK) {
		replaced = 1;
		if ((rc = et_get_by_seq(t, id, &old)) != KI_OK ||
		    (rc = facets_of(t, &old, &ofb, &of, &oflen)) != KI_OK ||
		    (rc = index_obj(t, &old, -1, of, oflen)) != KI_OK)
			goto out;
	} else if (rc == KI_ENOTFOUND) {
		id = store_id(o->kind, ++w->seq);
		rc = KI_OK;
	} else
		goto out;
	o->seq = id;
	if ((rc = facets_of(t, o, &fb, &f, &flen)) != KI_OK ||
	    (rc = index_obj(t, o, 1, f, flen)) != KI_OK ||
	    (rc = et_rec_encode(&rec, o, f, flen)) != KI_OK)
		goto out;
	{
		uint8_t b[8];

		et_put_be64(b, id);
		if ((rc = et_set(t, key, n, b, 8)) != KI_OK)
			goto out;
	}
	if ((rc = et_set(t, key, et_id_key(e, key, id), rec.data, rec.len)) !=
	    KI_OK ||
	    (rc = put_event(t, o->rv, replaced ? STORE_MODIFIED : STORE_ADDED,
	    &rec)) != KI_OK)
		goto out;
	w->rv++;
	if (replaced)
		w->changes++;
out:
	ki_buf_free(&fb);
	ki_buf_free(&ofb);
	ki_buf_free(&rec);
	return rc;
}

static int
et_delete(store_txn *t, int kind, const char *name, size_t len,
	const store_obj *final)
{
	et_store *e = es(t);
	et_top *w = t->top;
	char key[KEY_MAX];
	size_t n;
	store_obj old;
	ki_buf ofb, rec;
	const char *of;
	size_t oflen;
	uint64_t id = 0;
	int rc;

	w->writes++;
	if (len == 0 || len > STORE_MAX_NAME)
		return KI_ENOTFOUND;
	ki_buf_init(&ofb);
	ki_buf_init(&rec);
	n = kind_key(e, key, 'n', kind, name, len);
	if ((rc = get_id(t, key, n, &id)) != KI_OK ||
	    (rc = et_get_by_seq(t, id, &old)) != KI_OK ||
	    (rc = facets_of(t, &old, &ofb, &of, &oflen)) != KI_OK ||
	    (rc = index_obj(t, &old, -1, of, oflen)) != KI_OK)
		goto out;
	{
		store_obj fin = old;

		fin.rv = w->rv + 1;
		fin.json = final->json;
		fin.json_len = final->json_len;
		fin.meta_off = final->meta_off;
		fin.meta_len = final->meta_len;
		fin.spec_off = final->spec_off;
		fin.spec_len = final->spec_len;
		fin.status_off = final->status_off;
		fin.status_len = final->status_len;
		if ((rc = et_rec_encode(&rec, &fin, old.facets,
		    old.facets_len)) != KI_OK)
			goto out;
	}
	if ((rc = et_del(t, key, n)) != KI_OK ||
	    (rc = et_del(t, key, et_id_key(e, key, id))) != KI_OK ||
	    (rc = put_event(t, w->rv + 1, STORE_DELETED, &rec)) != KI_OK)
		goto out;
	w->rv++;
	w->changes++;
out:
	ki_buf_free(&ofb);
	ki_buf_free(&rec);
	return rc;
}

static int
et_token_put(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char *value, size_t len)
{
	char key[128];

	t->top->writes++;
	return et_set(t, key, et_key(es(t), key, 't', hash, STORE_DIGEST_LEN),
	    value, len);
}

static int
et_token_get(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char **value, size_t *len)
{
	char key[128];
	size_t n = et_key(es(t), key, 't', hash, STORE_DIGEST_LEN);
	int c, rc = et_get(t, key, n, value, len);

	/* A token made through another daemon works at once, even after
	 * other reads of the transaction (an authentication reads the
	 * token count first, which says only whether any exists). */
	if ((c = recheck(t, 1, rc)) == 1)
		rc = et_get(t, key, n, value, len);
	return c < 0 ? c : rc;
}

static int
et_token_delete(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN])
{
	char key[128];
	const char *v;
	size_t n, vl;
	int rc;

	t->top->writes++;
	n = et_key(es(t), key, 't', hash, STORE_DIGEST_LEN);
	if ((rc = et_get(t, key, n, &v, &vl)) != KI_OK)
		return rc;
	return et_del(t, key, n);
}

typedef struct tok_c {
	store_token_fn fn;
	void *arg;
	size_t skip;
	uint64_t n;
	int rc;
} tok_c;

static int
on_token(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen)
{
	tok_c *c = arg;
	int rc;

	if (klen != c->skip + STORE_DIGEST_LEN)
		return 0;
	c->n++;
	if (c->fn != NULL &&
	    (rc = c->fn(c->arg, (const uint8_t *)key + c->skip, val, vlen)) !=
	    0) {
		c->rc = rc;
		return 1;
	}
	return 0;
}

static int
scan_tokens(store_txn *t, tok_c *c)
{
	char from[64], to[64];
	size_t n = et_key(es(t), from, 't', NULL, 0);
	int rc;

	memcpy(to, from, n);
	to[n - 1]++;
	c->skip = n;
	rc = et_scan(t, from, n, to, n, on_token, c);
	return rc == 1 ? c->rc : rc;
}

static int
et_token_list(store_txn *t, store_token_fn fn, void *arg)
{
	tok_c c = { fn, arg, 0, 0, 0 };

	return scan_tokens(t, &c);
}

static int
et_token_count(store_txn *t, uint64_t *out)
{
	tok_c c = { NULL, NULL, 0, 0, 0 };
	int rc = scan_tokens(t, &c);

	*out = c.n;
	return rc;
}

typedef struct ver_c {
	store_txn *t;
	store_check_fn check;
	store_problem_fn problem;
	void *arg;
	store_verify_stats *st;
} ver_c;

static void
problem(ver_c *c, uint64_t id, const char *what)
{
	c->st->problems++;
	if (c->problem != NULL)
		c->problem(c->arg, id, what);
}

static int
on_verify(void *arg, const char *key, size_t klen, const char *val,
	size_t vlen)
{
	ver_c *c = arg;
	store_obj o, by;
	uint64_t id = et_get_be64(key + klen - 8);

	c->st->objects++;
	if (et_rec_decode(val, vlen, &o) != KI_OK) {
		problem(c, id, "the record fails its checksum");
		return 0;
	}
	if (o.seq != id)
		problem(c, id, "the record holds another id");
	if (et_get_by_name(c->t, o.kind, o.name, o.name_len, &by) != KI_OK ||
	    by.seq != id)
		problem(c, id, "its name does not find it");
	if (o.natkey_len > 0 && (et_get_by_natkey(c->t, o.kind, o.natkey,
	    o.natkey_len, &by) != KI_OK || by.seq != id))
		problem(c, id, "its natural key does not find it");
	if (et_get_by_digest(c->t, o.digest, &by) != KI_OK ||
	    memcmp(by.digest, o.digest, STORE_DIGEST_LEN) != 0)
		problem(c, id, "its digest does not find it");
	if (c->check != NULL && c->check(c->arg, &o) != 0)
		problem(c, id, "its content does not match its digest");
	return 0;
}

/* Walks every record; the index entries are written with their records in
 * one etcd transaction, so there is nothing to repair. */
static int
et_verify(store *s, int repair, store_check_fn check,
	store_problem_fn prob, void *arg, store_verify_stats *out)
{
	et_store *e = (et_store *)(void *)s;
	store_verify_stats st = { 0, 0, 0 };
	store_txn *t;
	char from[64], to[64];
	size_t n;
	int rc;

	(void)repair;
	if ((rc = et_begin(s, 0, &t)) != KI_OK)
		return rc;
	{
		ver_c c = { t, check, prob, arg, &st };

		n = et_key(e, from, 'o', NULL, 0);
		memcpy(to, from, n);
		to[n - 1]++;
		rc = et_scan(t, from, n, to, n, on_verify, &c);
	}
	et_abort(t);
	if (out != NULL)
		*out = st;
	return rc;
}

static int
et_idle(store *s)
{
	(void)s;
	return KI_OK;
}

static int
et_sync(store *s, uint64_t rv, long timeout_ms)
{
	et_store *e = (et_store *)(void *)s;
	et_conn *c;
	int64_t mod = 0;
	int rc;

	if (e->wc == NULL)
		return KI_OK;
	if (rv > 0)
		return et_wc_wait_rv(e, rv, timeout_ms);
	/* Everything committed so far: m/rv's revision in etcd, from a Range
	 * that begins after this call (shared by the calls waiting for it). */
	if ((c = et_conn_get(e)) == NULL)
		return KI_ENOMEM;
	rc = et_wc_fresh(e, c, &mod);
	et_conn_put(e, c);
	if (rc == KI_OK && et_wc_wait(e, mod, timeout_ms) != KI_OK)
		rc = KI_ELIMIT;
	return rc;
}

static void
et_logline(const store *s, int level, const char *line)
{
	const et_store *e = (const et_store *)(const void *)s;

	if (e->log != NULL)
		e->log(e->log_arg, level, line);
}

static void
et_close(store *s)
{
	et_store *e = (et_store *)(void *)s;

	et_follow_stop(e);
	if (e->wc != NULL)
		et_wc_stop(e);
	et_http_close(e);
	free(e->prefix);
	pthread_mutex_destroy(&e->mu);
	pthread_mutex_destroy(&e->wmu);
	free(e);
}

static const store_ops et_ops = {
	.name = "etcd",
	.close = et_close,
	.begin = et_begin,
	.begin_child = et_begin_child,
	.begin_ahead = et_begin_ahead,
	.commit = et_commit,
	.abort = et_abort,
	.writes = et_writes,
	.changes = et_changes,
	.rv = et_rv,
	.oldest_event = et_oldest_event,
	.get_by_name = et_get_by_name,
	.get_by_digest = et_get_by_digest,
	.get_by_natkey = et_get_by_natkey,
	.get_by_seq = et_get_by_seq,
	.next_rv = et_next_rv,
	.put = et_put,
	.del = et_delete,
	.list = et_list,
	.count = et_count,
	.list_index = et_list_index,
	.facets = et_facets,
	.each_referrer = et_each_referrer,
	.events_since = et_events_since,
	.token_put = et_token_put,
	.token_get = et_token_get,
	.token_delete = et_token_delete,
	.token_list = et_token_list,
	.token_count = et_token_count,
	.verify = et_verify,
	.idle = et_idle,
	.sync = et_sync,
	.logline = et_logline,
};

int
store_etcd_open(store **out, const store_etcd_options *eo,
	const store_options *opt)
{
	const char *prefix = eo->prefix != NULL ? eo->prefix : "/kernelindex/";
	et_store *e;
	store_txn *t;
	int rc;

	*out = NULL;
	if (strlen(prefix) > 400)
		return KI_EINVAL;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return KI_ENOMEM;
	e->head.ops = &et_ops;
	pthread_mutex_init(&e->mu, NULL);
	pthread_mutex_init(&e->wmu, NULL);
	e->history = opt->history ? opt->history : 100000;
	e->facets = opt->facets;
	e->log = opt->log;
	e->log_arg = opt->log_arg;
	if ((e->prefix = strdup(prefix)) == NULL) {
		rc = KI_ENOMEM;
		goto fail;
	}
	e->prefix_len = strlen(prefix);
	if ((rc = et_http_open(e, eo)) != KI_OK)
		goto fail;
	/* One read: the cluster answers and the meta keys are whole. */
	if ((rc = et_begin((store *)(void *)e, 0, &t)) != KI_OK)
		goto fail;
	et_abort(t);
	if (!eo->nocache && (rc = et_wc_start(e)) != KI_OK)
		goto fail;
	*out = (store *)(void *)e;
	return KI_OK;
fail:
	et_close((store *)(void *)e);
	return rc;
}

int
store_etcd_backup_fd(store *s, int fd)
{
	et_store *e = (et_store *)(void *)s;

	if (e->head.ops != &et_ops)
		return KI_EINVAL;
	return et_snapshot(e, fd);
}

int
store_etcd_follow(store *s, void (*fn)(void *arg, uint64_t rv), void *arg)
{
	et_store *e = (et_store *)(void *)s;
	char key[512];
	int rc;

	if (e->head.ops != &et_ops || e->following)
		return KI_EINVAL;
	if (e->wc != NULL) {
		/* The cache's thread tells, once it applied the events. */
		et_wc_follow(e, fn, arg);
		e->following = 1;
		return KI_OK;
	}
	if ((rc = et_follow_start(e, key, et_key(e, key, 'm', "rv", 2), fn,
	    arg)) == KI_OK)
		e->following = 1;
	return rc;
}

int
store_etcd_stats_get(store *s, store_etcd_stats *out)
{
	et_store *e = (et_store *)(void *)s;
	et_wc_info wi;

	memset(out, 0, sizeof(*out));
	if (e->head.ops != &et_ops)
		return KI_EINVAL;
	out->ranges = __atomic_load_n(&e->nranges, __ATOMIC_RELAXED);
	out->txns = __atomic_load_n(&e->ntxns, __ATOMIC_RELAXED);
	et_wc_stats(e, &wi);
	out->cache_ready = wi.ready;
	out->cache_rev = wi.rev;
	out->cache_rv = wi.rv;
	out->cache_loads = wi.gen;
	out->cache_keys = wi.keys;
	return KI_OK;
}

void
store_etcd_cache_hold(store *s, int hold)
{
	et_store *e = (et_store *)(void *)s;

	if (e->head.ops == &et_ops)
		et_wc_hold(e, hold);
}

void
store_etcd_unfollow(store *s)
{
	et_store *e = (et_store *)(void *)s;

	if (e->head.ops != &et_ops)
		return;
	if (e->wc != NULL)
		et_wc_follow(e, NULL, NULL);
	et_follow_stop(e);
	e->following = 0;
}
