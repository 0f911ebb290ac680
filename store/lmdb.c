/* store/lmdb.c — the embedded LMDB backend of store/store.h.
 *
 * Layout (named databases):
 *   meta     "rv" -> u64 store-wide resourceVersion, "seq" -> u64 last seq
 *   objects  seq (u64 big-endian, ascending: appends stay cheap) -> record
 *   names    kind byte + name -> seq
 *   digests  32-byte digest -> seq (the first object with that content)
 *   natkeys  kind byte + natural key -> seq
 *   refs     32-byte digest -> seq of each object referencing it (dupsort)
 *   events   rv (u64 big-endian) -> event type byte + record
 *   labels   kind byte + key NUL value NUL name -> seq (label index)
 *   facets   kind byte + facet text -> u64 count
 *   tokens   SHA-256 of a token -> its JSON description
 * The big values live under ascending keys; the random 32-byte digests only
 * key small tables, which keeps inserts fast (digest keys on big values
 * were measured 4-6x slower).
 *
 * A record is a fixed header, then name, natural key, refs and the JSON:
 *   0 u32 magic | 4 u8 kind | 5 u8 nrefs | 6 u16 name_len | 8 u16 natkey_len
 *   10 u16 0 | 12 u32 json_len | 16 u64 seq | 24 u64 rv | 32 digest[32]
 *   64 u32 meta_off, meta_len, spec_off, spec_len, status_off, status_len
 *   88 u32 labels_len, facets_len
 *   96 name | natkey | refs | labels | facets | json
 * Integers in records are host order: the file is not portable across
 * endianness, like LMDB's own.
 */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np: growth must not starve */
#include "store/store.h"

#include <errno.h>
#include <pthread.h>
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REC_MAGIC 0x324f494bu /* "KIO2" */
#define REC_HDR 96

struct store {
	MDB_env *env;
	/* Every transaction holds it shared; growing the map takes it
	 * exclusively (LMDB resizes only with no transaction active). */
	pthread_rwlock_t resize;
	uint64_t map_max;
	MDB_dbi meta, objects, names, digests, natkeys, refs, events, labels,
	    facets, tokens;
	uint64_t history;
	int nosync;
};

struct store_txn {
	store *s;
	MDB_txn *txn;
	struct store_txn *parent;
	int write;
	uint64_t rv;      /* store-wide rv including this txn's puts */
	int dirty;
};

static int
map_rc(int rc)
{
	switch (rc) {
	case MDB_SUCCESS: return KI_OK;
	case MDB_NOTFOUND: return KI_ENOTFOUND;
	case MDB_KEYEXIST: return KI_EEXIST;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
	case MDB_PAGE_FULL: return KI_EFULL;
	case ENOMEM: return KI_ENOMEM;
	default: return KI_ESTORE;
	}
}

static void
put_be64(uint8_t out[8], uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		out[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

static uint64_t
get_be64(const void *p)
{
	const uint8_t *b = p;
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | b[i];
	return v;
}

int
store_open(store **out, const char *dir, const store_options *opt)
{
	store *s;
	MDB_txn *txn = NULL;
	int rc, dead;

	*out = NULL;
	if (mkdir(dir, 0750) != 0 && errno != EEXIST)
		return KI_EIO;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return KI_ENOMEM;
	s->history = opt->history ? opt->history : 100000;
	s->nosync = opt->nosync;
	s->map_max = opt->map_max > opt->map_size ? opt->map_max : opt->map_size;
	{
		pthread_rwlockattr_t a;

		pthread_rwlockattr_init(&a);
		pthread_rwlockattr_setkind_np(&a,
		    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&s->resize, &a);
		pthread_rwlockattr_destroy(&a);
	}
	if ((rc = mdb_env_create(&s->env)) != 0)
		goto fail;
	if ((rc = mdb_env_set_maxdbs(s->env, 12)) != 0 ||
	    (rc = mdb_env_set_mapsize(s->env, (size_t)opt->map_size)) != 0 ||
	    (rc = mdb_env_set_maxreaders(s->env, 512)) != 0)
		goto fail;
	rc = mdb_env_open(s->env, dir, MDB_NOTLS | (s->nosync ? MDB_NOSYNC : 0),
	    0640);
	if (rc != 0)
		goto fail;
	mdb_reader_check(s->env, &dead);
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
		goto fail;
	if ((rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &s->meta)) != 0 ||
	    (rc = mdb_dbi_open(txn, "objects", MDB_CREATE, &s->objects)) != 0 ||
	    (rc = mdb_dbi_open(txn, "names", MDB_CREATE, &s->names)) != 0 ||
	    (rc = mdb_dbi_open(txn, "digests", MDB_CREATE, &s->digests)) != 0 ||
	    (rc = mdb_dbi_open(txn, "natkeys", MDB_CREATE, &s->natkeys)) != 0 ||
	    (rc = mdb_dbi_open(txn, "refs",
	         MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &s->refs)) != 0 ||
	    (rc = mdb_dbi_open(txn, "events", MDB_CREATE, &s->events)) != 0 ||
	    (rc = mdb_dbi_open(txn, "labels", MDB_CREATE, &s->labels)) != 0 ||
	    (rc = mdb_dbi_open(txn, "facets", MDB_CREATE, &s->facets)) != 0 ||
	    (rc = mdb_dbi_open(txn, "tokens", MDB_CREATE, &s->tokens)) != 0)
		goto fail;
	if ((rc = mdb_txn_commit(txn)) != 0) {
		txn = NULL;
		goto fail;
	}
	*out = s;
	return KI_OK;
fail:
	if (txn != NULL)
		mdb_txn_abort(txn);
	if (s->env != NULL)
		mdb_env_close(s->env);
	pthread_rwlock_destroy(&s->resize);
	free(s);
	return rc == ENOENT || rc == EACCES ? KI_EIO : map_rc(rc);
}

void
store_close(store *s)
{
	if (s == NULL)
		return;
	mdb_env_close(s->env);
	pthread_rwlock_destroy(&s->resize);
	free(s);
}

static int
meta_get_u64(store_txn *t, const char *key, uint64_t *out)
{
	MDB_val k = { strlen(key), (void *)(uintptr_t)key }, v;
	int rc = mdb_get(t->txn, t->s->meta, &k, &v);

	*out = 0;
	if (rc == MDB_NOTFOUND)
		return KI_OK;
	if (rc != 0)
		return map_rc(rc);
	if (v.mv_size != 8)
		return KI_ESTORE;
	*out = get_be64(v.mv_data);
	return KI_OK;
}

static int
meta_put_u64(store_txn *t, const char *key, uint64_t val)
{
	uint8_t b[8];
	MDB_val k = { strlen(key), (void *)(uintptr_t)key }, v = { 8, b };

	put_be64(b, val);
	return map_rc(mdb_put(t->txn, t->s->meta, &k, &v, 0));
}

/* Doubles the map (up to map_max) when it is 3/4 used. Called with no
 * transaction held by this thread. */
static void
maybe_grow(store *s)
{
	MDB_envinfo info;
	MDB_stat st;
	uint64_t used, size, want;

	/* The map may be replaced under a reader of it: look under the lock. */
	pthread_rwlock_rdlock(&s->resize);
	if (mdb_env_info(s->env, &info) != 0 || mdb_env_stat(s->env, &st) != 0) {
		pthread_rwlock_unlock(&s->resize);
		return;
	}
	pthread_rwlock_unlock(&s->resize);
	used = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
	size = info.me_mapsize;
	if (used < size / 4 * 3 || size >= s->map_max)
		return;
	pthread_rwlock_wrlock(&s->resize);
	if (mdb_env_info(s->env, &info) == 0 && info.me_mapsize == size) {
		want = size * 2 < s->map_max ? size * 2 : s->map_max;
		mdb_env_set_mapsize(s->env, (size_t)want);
	}
	pthread_rwlock_unlock(&s->resize);
}

int
store_begin(store *s, int write, store_txn **out)
{
	store_txn *t;
	int rc;

	*out = NULL;
	if (write)
		maybe_grow(s);
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return KI_ENOMEM;
	t->s = s;
	t->write = write;
	pthread_rwlock_rdlock(&s->resize);
	rc = mdb_txn_begin(s->env, NULL, write ? 0 : MDB_RDONLY, &t->txn);
	if (rc != 0) {
		pthread_rwlock_unlock(&s->resize);
		free(t);
		return map_rc(rc);
	}
	if ((rc = meta_get_u64(t, "rv", &t->rv)) != KI_OK) {
		mdb_txn_abort(t->txn);
		pthread_rwlock_unlock(&s->resize);
		free(t);
		return rc;
	}
	*out = t;
	return KI_OK;
}

int
store_begin_child(store_txn *parent, store_txn **out)
{
	store_txn *t;
	int rc;

	*out = NULL;
	if (!parent->write)
		return KI_EINVAL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return KI_ENOMEM;
	t->s = parent->s;
	t->parent = parent;
	t->write = 1;
	t->rv = parent->rv;
	rc = mdb_txn_begin(parent->s->env, parent->txn, 0, &t->txn);
	if (rc != 0) {
		free(t);
		return map_rc(rc);
	}
	*out = t;
	return KI_OK;
}

int
store_commit(store_txn *t)
{
	int rc = KI_OK;

	if (t->parent != NULL) {
		rc = map_rc(mdb_txn_commit(t->txn));
		if (rc == KI_OK) {
			t->parent->rv = t->rv;
			t->parent->dirty |= t->dirty;
		}
		free(t);
		return rc;
	}
	if (t->write && t->dirty)
		rc = meta_put_u64(t, "rv", t->rv);
	if (rc != KI_OK) {
		mdb_txn_abort(t->txn);
	} else {
		/* Without MDB_NOSYNC, LMDB's commit is itself durable: it syncs
		 * the data pages, then writes the meta page synchronously. */
		rc = map_rc(mdb_txn_commit(t->txn));
	}
	pthread_rwlock_unlock(&t->s->resize);
	free(t);
	return rc;
}

void
store_abort(store_txn *t)
{
	if (t == NULL)
		return;
	mdb_txn_abort(t->txn);
	if (t->parent == NULL)
		pthread_rwlock_unlock(&t->s->resize);
	free(t);
}

uint64_t
store_rv(store_txn *t)
{
	return t->rv;
}

uint64_t
store_next_rv(store_txn *t)
{
	return t->rv + 1;
}

uint64_t
store_oldest_event(store_txn *t)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t rv = 0;

	if (mdb_cursor_open(t->txn, t->s->events, &c) != 0)
		return 0;
	if (mdb_cursor_get(c, &k, &v, MDB_FIRST) == 0 && k.mv_size == 8)
		rv = get_be64(k.mv_data);
	mdb_cursor_close(c);
	return rv;
}

/* Decodes a record (borrowed memory) into o. */
static int
rec_decode(const void *data, size_t size, store_obj *o)
{
	const uint8_t *p = data;
	uint32_t magic, json_len, offs[6], lf[2];
	uint16_t name_len, natkey_len;
	size_t need;

	if (size < REC_HDR)
		return KI_ESTORE;
	memcpy(&magic, p, 4);
	if (magic != REC_MAGIC)
		return KI_ESTORE;
	memset(o, 0, sizeof(*o));
	o->kind = p[4];
	o->nrefs = p[5];
	memcpy(&name_len, p + 6, 2);
	memcpy(&natkey_len, p + 8, 2);
	memcpy(&json_len, p + 12, 4);
	memcpy(&o->seq, p + 16, 8);
	memcpy(&o->rv, p + 24, 8);
	memcpy(o->digest, p + 32, STORE_DIGEST_LEN);
	memcpy(offs, p + 64, sizeof(offs));
	memcpy(lf, p + 88, sizeof(lf));
	need = REC_HDR + (size_t)name_len + natkey_len +
	    o->nrefs * STORE_DIGEST_LEN + lf[0] + lf[1] + json_len;
	if (need != size)
		return KI_ESTORE;
	p += REC_HDR;
	o->name = (const char *)p;
	o->name_len = name_len;
	p += name_len;
	o->natkey = natkey_len ? (const char *)p : NULL;
	o->natkey_len = natkey_len;
	p += natkey_len;
	o->refs = o->nrefs ? p : NULL;
	p += o->nrefs * STORE_DIGEST_LEN;
	o->labels = lf[0] ? (const char *)p : NULL;
	o->labels_len = lf[0];
	p += lf[0];
	o->facets = lf[1] ? (const char *)p : NULL;
	o->facets_len = lf[1];
	p += lf[1];
	o->json = (const char *)p;
	o->json_len = json_len;
	o->meta_off = offs[0];
	o->meta_len = offs[1];
	o->spec_off = offs[2];
	o->spec_len = offs[3];
	o->status_off = offs[4];
	o->status_len = offs[5];
	if ((uint64_t)o->meta_off + o->meta_len > json_len ||
	    (uint64_t)o->spec_off + o->spec_len > json_len ||
	    (uint64_t)o->status_off + o->status_len > json_len)
		return KI_ESTORE;
	return KI_OK;
}

static size_t
rec_size(const store_obj *o)
{
	return REC_HDR + o->name_len + o->natkey_len +
	    o->nrefs * STORE_DIGEST_LEN + o->labels_len + o->facets_len +
	    o->json_len;
}

static void
rec_encode(uint8_t *p, const store_obj *o)
{
	uint32_t magic = REC_MAGIC, json_len = (uint32_t)o->json_len;
	uint16_t name_len = (uint16_t)o->name_len;
	uint16_t natkey_len = (uint16_t)o->natkey_len;
	uint32_t offs[6] = { o->meta_off, o->meta_len, o->spec_off,
		o->spec_len, o->status_off, o->status_len };
	uint32_t lf[2] = { (uint32_t)o->labels_len, (uint32_t)o->facets_len };

	memset(p, 0, REC_HDR);
	memcpy(p, &magic, 4);
	p[4] = (uint8_t)o->kind;
	p[5] = (uint8_t)o->nrefs;
	memcpy(p + 6, &name_len, 2);
	memcpy(p + 8, &natkey_len, 2);
	memcpy(p + 12, &json_len, 4);
	memcpy(p + 16, &o->seq, 8);
	memcpy(p + 24, &o->rv, 8);
	memcpy(p + 32, o->digest, STORE_DIGEST_LEN);
	memcpy(p + 64, offs, sizeof(offs));
	memcpy(p + 88, lf, sizeof(lf));
	p += REC_HDR;
	memcpy(p, o->name, o->name_len);
	p += o->name_len;
	if (o->natkey_len)
		memcpy(p, o->natkey, o->natkey_len);
	p += o->natkey_len;
	if (o->nrefs)
		memcpy(p, o->refs, o->nrefs * STORE_DIGEST_LEN);
	p += o->nrefs * STORE_DIGEST_LEN;
	if (o->labels_len)
		memcpy(p, o->labels, o->labels_len);
	p += o->labels_len;
	if (o->facets_len)
		memcpy(p, o->facets, o->facets_len);
	p += o->facets_len;
	memcpy(p, o->json, o->json_len);
}

/* Builds kind byte + bytes into buf (at least 1 + STORE_MAX_NATKEY). */
static MDB_val
kind_key(uint8_t *buf, int kind, const char *s, size_t n)
{
	MDB_val k;

	buf[0] = (uint8_t)kind;
	memcpy(buf + 1, s, n);
	k.mv_size = n + 1;
	k.mv_data = buf;
	return k;
}

static int
seq_lookup(store_txn *t, MDB_dbi dbi, MDB_val *key, uint64_t *seq)
{
	MDB_val v;
	int rc = mdb_get(t->txn, dbi, key, &v);

	if (rc != 0)
		return map_rc(rc);
	if (v.mv_size != 8)
		return KI_ESTORE;
	*seq = get_be64(v.mv_data);
	return KI_OK;
}

int
store_get_by_seq(store_txn *t, uint64_t seq, store_obj *out)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	put_be64(kb, seq);
	if ((rc = mdb_get(t->txn, t->s->objects, &k, &v)) != 0)
		return map_rc(rc);
	return rec_decode(v.mv_data, v.mv_size, out);
}

int
store_get_by_name(store_txn *t, int kind, const char *name, size_t len,
	store_obj *out)
{
	uint8_t kb[1 + STORE_MAX_NAME];
	MDB_val k;
	uint64_t seq;
	int rc;

	if (len == 0 || len > STORE_MAX_NAME)
		return KI_ENOTFOUND;
	k = kind_key(kb, kind, name, len);
	if ((rc = seq_lookup(t, t->s->names, &k, &seq)) != KI_OK)
		return rc;
	return store_get_by_seq(t, seq, out);
}

int
store_get_by_digest(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_obj *out)
{
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)digest };
	uint64_t seq;
	int rc;

	if ((rc = seq_lookup(t, t->s->digests, &k, &seq)) != KI_OK)
		return rc;
	return store_get_by_seq(t, seq, out);
}

int
store_get_by_natkey(store_txn *t, int kind, const char *key, size_t len,
	store_obj *out)
{
	uint8_t kb[1 + STORE_MAX_NATKEY];
	MDB_val k;
	uint64_t seq;
	int rc;

	if (len == 0 || len > STORE_MAX_NATKEY)
		return KI_ENOTFOUND;
	k = kind_key(kb, kind, key, len);
	if ((rc = seq_lookup(t, t->s->natkeys, &k, &seq)) != KI_OK)
		return rc;
	return store_get_by_seq(t, seq, out);
}

/* Builds the label-index key kind + key NUL value NUL name into buf
 * (1 + STORE_MAX_INDEXED + 2 + STORE_MAX_NAME bytes). Returns 0 when the
 * pair is too long to be indexed. */
static size_t
label_key(uint8_t *buf, int kind, const char *k, size_t klen, const char *v,
	size_t vlen, const char *name, size_t nlen)
{
	if (klen + vlen > STORE_MAX_INDEXED || nlen > STORE_MAX_NAME)
		return 0;
	buf[0] = (uint8_t)kind;
	memcpy(buf + 1, k, klen);
	buf[1 + klen] = 0;
	memcpy(buf + 2 + klen, v, vlen);
	buf[2 + klen + vlen] = 0;
	memcpy(buf + 3 + klen + vlen, name, nlen);
	return 3 + klen + vlen + nlen;
}

/* Adds (dir 1) or removes (dir -1) o's label-index entries and facet
 * counts. */
static int
index_labels(store_txn *t, const store_obj *o, int dir)
{
	uint8_t kb[3 + STORE_MAX_NATKEY + STORE_MAX_NAME], sb[8];
	const char *p = o->labels, *end = o->labels ? o->labels + o->labels_len :
	    NULL;
	MDB_val k, v;
	int rc;

	put_be64(sb, o->seq);
	while (p != NULL && p < end) {
		const char *key = p, *val;
		size_t klen = strnlen(key, (size_t)(end - key)), vlen, n;

		if (key + klen >= end)
			break;
		val = key + klen + 1;
		vlen = strnlen(val, (size_t)(end - val));
		if (val + vlen >= end)
			break;
		p = val + vlen + 1;
		n = label_key(kb, o->kind, key, klen, val, vlen, o->name,
		    o->name_len);
		if (n == 0)
			continue;
		k.mv_size = n;
		k.mv_data = kb;
		v.mv_size = 8;
		v.mv_data = sb;
		rc = dir > 0 ? mdb_put(t->txn, t->s->labels, &k, &v, 0) :
		    mdb_del(t->txn, t->s->labels, &k, NULL);
		if (rc != 0 && rc != MDB_NOTFOUND)
			return map_rc(rc);
	}
	p = o->facets;
	end = o->facets ? o->facets + o->facets_len : NULL;
	while (p != NULL && p < end) {
		size_t flen = strnlen(p, (size_t)(end - p));
		uint64_t count = 0;

		if (flen == 0 || flen > STORE_MAX_NATKEY) {
			p += flen + 1;
			continue;
		}
		k = kind_key(kb, o->kind, p, flen);
		rc = mdb_get(t->txn, t->s->facets, &k, &v);
		if (rc == 0 && v.mv_size == 8)
			count = get_be64(v.mv_data);
		else if (rc != 0 && rc != MDB_NOTFOUND)
			return map_rc(rc);
		if (dir > 0)
			count++;
		else if (count > 0)
			count--;
		if (count == 0) {
			rc = mdb_del(t->txn, t->s->facets, &k, NULL);
		} else {
			put_be64(sb, count);
			v.mv_size = 8;
			v.mv_data = sb;
			rc = mdb_put(t->txn, t->s->facets, &k, &v, 0);
			put_be64(sb, o->seq);
		}
		if (rc != 0 && rc != MDB_NOTFOUND)
			return map_rc(rc);
		p += flen + 1;
	}
	return KI_OK;
}

/* Removes the secondary-index entries of a stored record old. */
static int
unindex(store_txn *t, const store_obj *old)
{
	uint8_t kb[1 + STORE_MAX_NATKEY], sb[8];
	MDB_val k, v = { 8, sb };
	uint64_t seq;
	int rc;

	if ((rc = index_labels(t, old, -1)) != KI_OK)
		return rc;
	put_be64(sb, old->seq);
	k.mv_size = STORE_DIGEST_LEN;
	k.mv_data = (void *)(uintptr_t)old->digest;
	rc = seq_lookup(t, t->s->digests, &k, &seq);
	if (rc == KI_OK && seq == old->seq)
		rc = map_rc(mdb_del(t->txn, t->s->digests, &k, NULL));
	if (rc != KI_OK && rc != KI_ENOTFOUND)
		return rc;
	if (old->natkey_len) {
		k = kind_key(kb, old->kind, old->natkey, old->natkey_len);
		rc = seq_lookup(t, t->s->natkeys, &k, &seq);
		if (rc == KI_OK && seq == old->seq)
			rc = map_rc(mdb_del(t->txn, t->s->natkeys, &k, NULL));
		if (rc != KI_OK && rc != KI_ENOTFOUND)
			return rc;
	}
	for (size_t i = 0; i < old->nrefs; i++) {
		k.mv_size = STORE_DIGEST_LEN;
		k.mv_data = (void *)(uintptr_t)(old->refs + i * STORE_DIGEST_LEN);
		rc = map_rc(mdb_del(t->txn, t->s->refs, &k, &v));
		if (rc != KI_OK && rc != KI_ENOTFOUND)
			return rc;
	}
	return KI_OK;
}

static int
put_event(store_txn *t, int type, const store_obj *o)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	MDB_cursor *c;
	uint64_t cutoff;
	int rc;

	put_be64(kb, o->rv);
	v.mv_size = 1 + rec_size(o);
	rc = mdb_put(t->txn, t->s->events, &k, &v, MDB_RESERVE | MDB_APPEND);
	if (rc != 0)
		return map_rc(rc);
	((uint8_t *)v.mv_data)[0] = (uint8_t)type;
	rec_encode((uint8_t *)v.mv_data + 1, o);
	if (o->rv <= t->s->history)
		return KI_OK;
	/* Trim the history: at most one or two entries per write, so the cost
	 * stays constant. */
	cutoff = o->rv - t->s->history;
	if ((rc = mdb_cursor_open(t->txn, t->s->events, &c)) != 0)
		return map_rc(rc);
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) == 0 &&
	    get_be64(k.mv_data) <= cutoff) {
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
	}
	mdb_cursor_close(c);
	return rc == 0 || rc == MDB_NOTFOUND ? KI_OK : map_rc(rc);
}

int
store_put(store_txn *t, store_obj *o)
{
	uint8_t kb[1 + STORE_MAX_NATKEY], sb[8], okb[8];
	MDB_val k, v, ok = { 8, okb };
	store_obj old;
	uint64_t seq, last;
	int rc, exists;

	if (!t->write || o->rv != t->rv + 1 || o->name_len == 0 ||
	    o->name_len > STORE_MAX_NAME || o->natkey_len > STORE_MAX_NATKEY ||
	    o->nrefs > STORE_MAX_REFS || o->json_len > UINT32_MAX ||
	    o->labels_len > UINT32_MAX || o->facets_len > UINT32_MAX)
		return KI_EINVAL;
	k = kind_key(kb, o->kind, o->name, o->name_len);
	rc = seq_lookup(t, t->s->names, &k, &seq);
	if (rc != KI_OK && rc != KI_ENOTFOUND)
		return rc;
	exists = rc == KI_OK;
	if (exists) {
		if ((rc = store_get_by_seq(t, seq, &old)) != KI_OK)
			return rc;
		if ((rc = unindex(t, &old)) != KI_OK)
			return rc;
	} else {
		if ((rc = meta_get_u64(t, "seq", &last)) != KI_OK)
			return rc;
		seq = last + 1;
		if ((rc = meta_put_u64(t, "seq", seq)) != KI_OK)
			return rc;
		put_be64(sb, seq);
		v.mv_size = 8;
		v.mv_data = sb;
		if ((rc = mdb_put(t->txn, t->s->names, &k, &v, 0)) != 0)
			return map_rc(rc);
	}
	o->seq = seq;
	put_be64(okb, seq);
	put_be64(sb, seq);
	v.mv_size = rec_size(o);
	rc = mdb_put(t->txn, t->s->objects, &ok, &v,
	    MDB_RESERVE | (exists ? 0 : MDB_APPEND));
	if (rc != 0)
		return map_rc(rc);
	rec_encode(v.mv_data, o);
	k.mv_size = STORE_DIGEST_LEN;
	k.mv_data = o->digest;
	v.mv_size = 8;
	v.mv_data = sb;
	rc = mdb_put(t->txn, t->s->digests, &k, &v, MDB_NOOVERWRITE);
	if (rc != 0 && rc != MDB_KEYEXIST)
		return map_rc(rc);
	if (o->natkey_len) {
		k = kind_key(kb, o->kind, o->natkey, o->natkey_len);
		v.mv_size = 8;
		v.mv_data = sb;
		if ((rc = mdb_put(t->txn, t->s->natkeys, &k, &v, 0)) != 0)
			return map_rc(rc);
	}
	for (size_t i = 0; i < o->nrefs; i++) {
		k.mv_size = STORE_DIGEST_LEN;
		k.mv_data = (void *)(uintptr_t)(o->refs + i * STORE_DIGEST_LEN);
		v.mv_size = 8;
		v.mv_data = sb;
		rc = mdb_put(t->txn, t->s->refs, &k, &v, MDB_NODUPDATA);
		if (rc != 0 && rc != MDB_KEYEXIST)
			return map_rc(rc);
	}
	if ((rc = index_labels(t, o, 1)) != KI_OK)
		return rc;
	if ((rc = put_event(t, exists ? STORE_MODIFIED : STORE_ADDED, o)) !=
	    KI_OK)
		return rc;
	t->rv = o->rv;
	t->dirty = 1;
	return KI_OK;
}

int
store_delete(store_txn *t, int kind, const char *name, size_t len,
	const store_obj *final)
{
	uint8_t kb[1 + STORE_MAX_NAME], okb[8];
	MDB_val k, ok = { 8, okb };
	store_obj old, ev;
	uint64_t seq;
	int rc;

	if (!t->write || len == 0 || len > STORE_MAX_NAME)
		return KI_EINVAL;
	k = kind_key(kb, kind, name, len);
	if ((rc = seq_lookup(t, t->s->names, &k, &seq)) != KI_OK)
		return rc;
	if ((rc = store_get_by_seq(t, seq, &old)) != KI_OK)
		return rc;
	/* The event keeps the final state; build it before the record goes. */
	ev = old;
	ev.rv = t->rv + 1;
	ev.json = final->json;
	ev.json_len = final->json_len;
	ev.meta_off = final->meta_off;
	ev.meta_len = final->meta_len;
	ev.spec_off = final->spec_off;
	ev.spec_len = final->spec_len;
	ev.status_off = final->status_off;
	ev.status_len = final->status_len;
	if ((rc = put_event(t, STORE_DELETED, &ev)) != KI_OK)
		return rc;
	if ((rc = unindex(t, &old)) != KI_OK)
		return rc;
	if ((rc = mdb_del(t->txn, t->s->names, &k, NULL)) != 0)
		return map_rc(rc);
	put_be64(okb, seq);
	if ((rc = mdb_del(t->txn, t->s->objects, &ok, NULL)) != 0)
		return map_rc(rc);
	t->rv = ev.rv;
	t->dirty = 1;
	return KI_OK;
}

int
store_list(store_txn *t, int kind, const char *after, size_t after_len,
	store_each_fn fn, void *arg)
{
	uint8_t kb[1 + STORE_MAX_NAME];
	MDB_cursor *c;
	MDB_val k, v;
	store_obj o;
	int rc, op;

	if (after_len > STORE_MAX_NAME)
		return KI_EINVAL;
	if ((rc = mdb_cursor_open(t->txn, t->s->names, &c)) != 0)
		return map_rc(rc);
	k = kind_key(kb, kind, after ? after : "", after ? after_len : 0);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	/* Exclusive start: skip the exact `after` key itself. */
	if (rc == 0 && after_len > 0 && k.mv_size == after_len + 1 &&
	    memcmp((uint8_t *)k.mv_data + 1, after, after_len) == 0 &&
	    ((uint8_t *)k.mv_data)[0] == (uint8_t)kind)
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	op = MDB_NEXT;
	while (rc == 0) {
		if (k.mv_size < 1 || ((uint8_t *)k.mv_data)[0] != (uint8_t)kind)
			break;
		if (v.mv_size != 8) {
			rc = KI_ESTORE;
			goto out;
		}
		if ((rc = store_get_by_seq(t, get_be64(v.mv_data), &o)) != KI_OK)
			goto out;
		if ((rc = fn(arg, &o)) != 0)
			goto out;
		rc = mdb_cursor_get(c, &k, &v, (MDB_cursor_op)op);
	}
	rc = rc == MDB_NOTFOUND || rc == 0 ? KI_OK : map_rc(rc);
out:
	mdb_cursor_close(c);
	return rc;
}

static int
count_one(void *arg, const store_obj *o)
{
	(void)o;
	(*(uint64_t *)arg)++;
	return 0;
}

int
store_count(store_txn *t, int kind, uint64_t *out)
{
	*out = 0;
	return store_list(t, kind, NULL, 0, count_one, out);
}

int
store_each_referrer(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_each_fn fn, void *arg)
{
	MDB_cursor *c;
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)digest }, v;
	uint64_t *seqs = NULL, *grown;
	size_t n = 0, cap = 0;
	store_obj o;
	int rc;

	/* Collect first: fn may write (re-render a referrer), which would
	 * invalidate the cursor. */
	if ((rc = mdb_cursor_open(t->txn, t->s->refs, &c)) != 0)
		return map_rc(rc);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY);
	while (rc == 0 && v.mv_size == 8) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(seqs, cap * sizeof(*seqs));
			if (grown == NULL) {
				rc = ENOMEM;
				break;
			}
			seqs = grown;
		}
		seqs[n++] = get_be64(v.mv_data);
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP);
	}
	mdb_cursor_close(c);
	rc = rc == MDB_NOTFOUND || rc == 0 ? KI_OK : map_rc(rc);
	for (size_t i = 0; rc == KI_OK && i < n; i++) {
		if ((rc = store_get_by_seq(t, seqs[i], &o)) == KI_OK)
			rc = fn(arg, &o);
	}
	free(seqs);
	return rc;
}

int
store_events_since(store_txn *t, uint64_t rv, store_event_fn fn, void *arg)
{
	uint8_t kb[8];
	MDB_cursor *c;
	MDB_val k = { 8, kb }, v;
	store_obj o;
	uint64_t oldest;
	int rc;

	oldest = store_oldest_event(t);
	if (rv < t->rv && (oldest == 0 || oldest > rv + 1))
		return KI_EGONE;
	if ((rc = mdb_cursor_open(t->txn, t->s->events, &c)) != 0)
		return map_rc(rc);
	put_be64(kb, rv + 1);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		if (v.mv_size < 1 ||
		    rec_decode((uint8_t *)v.mv_data + 1, v.mv_size - 1, &o) != KI_OK) {
			rc = KI_ESTORE;
			goto out;
		}
		if ((rc = fn(arg, ((uint8_t *)v.mv_data)[0], &o)) != 0)
			goto out;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	rc = rc == MDB_NOTFOUND ? KI_OK : map_rc(rc);
out:
	mdb_cursor_close(c);
	return rc;
}

int
store_stat(store *s, store_stats *out)
{
	MDB_envinfo info;
	MDB_stat st;
	int rc;

	pthread_rwlock_rdlock(&s->resize);
	rc = mdb_env_info(s->env, &info) != 0 || mdb_env_stat(s->env, &st) != 0;
	pthread_rwlock_unlock(&s->resize);
	if (rc)
		return KI_ESTORE;
	out->map_size = info.me_mapsize;
	out->page_size = st.ms_psize;
	out->map_used = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
	out->entries = st.ms_entries;
	return KI_OK;
}

int
store_list_label(store_txn *t, int kind, const char *key, const char *value,
	const char *after, size_t after_len, store_each_fn fn, void *arg)
{
	uint8_t kb[3 + STORE_MAX_INDEXED + STORE_MAX_NAME];
	size_t klen = strlen(key), vlen = strlen(value), plen, n;
	MDB_cursor *c;
	MDB_val k, v;
	store_obj o;
	int rc;

	n = label_key(kb, kind, key, klen, value, vlen, after ? after : "",
	    after ? after_len : 0);
	if (n == 0)
		return KI_EINVAL;
	plen = 3 + klen + vlen;
	if ((rc = mdb_cursor_open(t->txn, t->s->labels, &c)) != 0)
		return map_rc(rc);
	k.mv_size = n;
	k.mv_data = kb;
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	if (rc == 0 && after_len > 0 && k.mv_size == n &&
	    memcmp(k.mv_data, kb, n) == 0)
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	while (rc == 0) {
		if (k.mv_size < plen || memcmp(k.mv_data, kb, plen) != 0)
			break;
		if (v.mv_size != 8) {
			rc = KI_ESTORE;
			goto out;
		}
		if ((rc = store_get_by_seq(t, get_be64(v.mv_data), &o)) != KI_OK)
			goto out;
		if ((rc = fn(arg, &o)) != 0)
			goto out;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	rc = rc == MDB_NOTFOUND || rc == 0 ? KI_OK : map_rc(rc);
out:
	mdb_cursor_close(c);
	return rc;
}

int
store_facets(store_txn *t, int kind, store_facet_fn fn, void *arg)
{
	uint8_t kb[1];
	MDB_cursor *c;
	MDB_val k = { 1, kb }, v;
	int rc;

	kb[0] = (uint8_t)kind;
	if ((rc = mdb_cursor_open(t->txn, t->s->facets, &c)) != 0)
		return map_rc(rc);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		if (k.mv_size < 1 || ((uint8_t *)k.mv_data)[0] != (uint8_t)kind)
			break;
		if (v.mv_size == 8 && (rc = fn(arg, (const char *)k.mv_data + 1,
		    k.mv_size - 1, get_be64(v.mv_data))) != 0)
			goto out;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	rc = rc == MDB_NOTFOUND || rc == 0 ? KI_OK : map_rc(rc);
out:
	mdb_cursor_close(c);
	return rc;
}

int
store_token_put(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char *value, size_t len)
{
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)hash };
	MDB_val v = { len, (void *)(uintptr_t)value };

	if (!t->write)
		return KI_EINVAL;
	t->dirty = 1;
	return map_rc(mdb_put(t->txn, t->s->tokens, &k, &v, 0));
}

int
store_token_get(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char **value, size_t *len)
{
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)hash }, v;
	int rc = mdb_get(t->txn, t->s->tokens, &k, &v);

	if (rc != 0)
		return map_rc(rc);
	*value = v.mv_data;
	*len = v.mv_size;
	return KI_OK;
}

int
store_token_delete(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN])
{
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)hash };

	if (!t->write)
		return KI_EINVAL;
	t->dirty = 1;
	return map_rc(mdb_del(t->txn, t->s->tokens, &k, NULL));
}

int
store_token_list(store_txn *t, store_token_fn fn, void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if ((rc = mdb_cursor_open(t->txn, t->s->tokens, &c)) != 0)
		return map_rc(rc);
	rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	while (rc == 0) {
		if (k.mv_size == STORE_DIGEST_LEN &&
		    (rc = fn(arg, k.mv_data, v.mv_data, v.mv_size)) != 0)
			break;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND || rc == 0 ? KI_OK : rc > 0 ? map_rc(rc) : rc;
}

int
store_token_count(store_txn *t, uint64_t *out)
{
	MDB_stat st;
	int rc = mdb_stat(t->txn, t->s->tokens, &st);

	*out = rc == 0 ? st.ms_entries : 0;
	return map_rc(rc);
}

int
store_backup_fd(store *s, int fd)
{
	return map_rc(mdb_env_copyfd2(s->env, fd, MDB_CP_COMPACT));
}
