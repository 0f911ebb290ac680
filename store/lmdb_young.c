/* store/lmdb_young.c — the LMDB backend: reads by id, name and digest,
 * and the digest index with its young part. */
#define _GNU_SOURCE /* memmem, pthread_rwlockattr_setkind_np, sync_file_range */
#include "store/lmdb_int.h"

/* ---- reads ---- */


/* Decodes an object-table record into o, attaching its natural key and
 * refs from the aux table when it keeps them there (borrowed, valid until
 * the transaction ends or writes). aux: a cursor on the aux table to look
 * them up with (a list walks ids in order, and a positioned cursor finds
 * the next one without descending from the root), or NULL. */
int
lm_obj_decode(store_txn *t, MDB_cursor *aux, const void *data, size_t size,
	store_obj *o)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	const uint8_t *a;
	uint16_t nl;
	int flags, rc;

	if ((rc = lm_rec_decode_flags(data, size, o, &flags)) != KI_OK)
		return rc;
	if (!(flags & REC_AUX))
		return KI_OK;
	lm_put_be64(kb, o->seq);
	rc = aux != NULL ? mdb_cursor_get(aux, &k, &v, MDB_SET_KEY) :
	    mdb_get(t->txn, t->s->aux, &k, &v);
	if (rc != 0)
		return rc == MDB_NOTFOUND ? KI_ESTORE : lm_map_rc(rc);
	a = v.mv_data;
	if (v.mv_size < 3)
		return KI_ESTORE;
	memcpy(&nl, a + 1, 2);
	if (v.mv_size != 3 + (size_t)a[0] * STORE_DIGEST_LEN + nl)
		return KI_ESTORE;
	o->nrefs = a[0];
	o->refs = o->nrefs ? a + 3 : NULL;
	o->natkey_len = nl;
	o->natkey = nl ? (const char *)a + 3 + o->nrefs * STORE_DIGEST_LEN : NULL;
	return KI_OK;
}

/* Writes o (o->seq set) as the record of its id: the record without its
 * natural key and refs, and those in the aux table. */
int
lm_write_record(store_txn *t, const store_obj *o)
{
	uint8_t kb[8], *a;
	MDB_val k = { 8, kb }, v;
	store_obj rec = *o;
	uint16_t nl = (uint16_t)o->natkey_len;
	int rc;

	lm_put_be64(kb, o->seq);
	rec.natkey = NULL;
	rec.natkey_len = 0;
	rec.refs = NULL;
	rec.nrefs = 0;
	if (t->s->facets != NULL) {
		rec.facets = NULL;   /* recomputed from the labels when needed */
		rec.facets_len = 0;
	}
	v.mv_size = lm_rec_size(&rec);
	if ((rc = mdb_put(t->txn, t->s->obj, &k, &v, MDB_RESERVE)) != 0)
		return lm_map_rc(rc);
	lm_rec_encode_flags(v.mv_data, &rec, REC_AUX);
	v.mv_size = 3 + o->nrefs * STORE_DIGEST_LEN + o->natkey_len;
	if ((rc = mdb_put(t->txn, t->s->aux, &k, &v, MDB_RESERVE)) != 0)
		return lm_map_rc(rc);
	a = v.mv_data;
	a[0] = (uint8_t)o->nrefs;
	memcpy(a + 1, &nl, 2);
	if (o->nrefs)
		memcpy(a + 3, o->refs, o->nrefs * STORE_DIGEST_LEN);
	if (o->natkey_len)
		memcpy(a + 3 + o->nrefs * STORE_DIGEST_LEN, o->natkey, o->natkey_len);
	return KI_OK;
}

int
lm_get_by_seq(store_txn *t, uint64_t id, store_obj *out)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	lm_put_be64(kb, id);
	if ((rc = mdb_get(t->txn, t->s->obj, &k, &v)) != 0)
		return lm_map_rc(rc);
	if ((rc = lm_obj_decode(t, NULL, v.mv_data, v.mv_size, out)) == KI_OK &&
	    out->seq != id)
		rc = KI_ECORRUPT;   /* a damaged key found another record */
	return rc;
}

/* store_get_by_seq() through cursors on the object and aux tables, for a
 * walk in ascending id order. */
int
lm_get_by_cursor(store_txn *t, MDB_cursor *obj, MDB_cursor *aux, uint64_t id,
	store_obj *out)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	lm_put_be64(kb, id);
	if ((rc = mdb_cursor_get(obj, &k, &v, MDB_SET_KEY)) != 0)
		return lm_map_rc(rc);
	if ((rc = lm_obj_decode(t, aux, v.mv_data, v.mv_size, out)) == KI_OK &&
	    out->seq != id)
		rc = KI_ECORRUPT;
	return rc;
}

int
lm_get_by_name(store_txn *t, int kind, const char *name, size_t len,
	store_obj *out)
{
	uint8_t kb[1 + STORE_MAX_NAME];
	MDB_val k;
	uint64_t id;
	int rc;

	if (len == 0 || len > STORE_MAX_NAME)
		return KI_ENOTFOUND;
	k = lm_kind_key(kb, kind, name, len);
	if ((rc = lm_get_u64(t->txn, t->s->name, &k, &id)) != KI_OK)
		return rc;
	return store_get_by_seq(t, id, out);
}

/* KI_OK if object id's record holds digest, KI_ENOTFOUND if it holds
 * another. */
static int
rec_has_digest(store_txn *t, uint64_t id, const uint8_t *digest)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	store_obj o;
	int rc, flags;

	lm_put_be64(kb, id);
	if ((rc = mdb_get(t->txn, t->s->obj, &k, &v)) != 0)
		return rc == MDB_NOTFOUND ? KI_ESTORE : lm_map_rc(rc);
	if ((rc = lm_rec_decode_flags(v.mv_data, v.mv_size, &o, &flags)) != KI_OK)
		return rc;
	return memcmp(o.digest, digest, STORE_DIGEST_LEN) == 0 ? KI_OK :
	    KI_ENOTFOUND;
}

/* ---- the digest index ----
 *
 * A new object's digest is random, so in one B-tree every new object
 * copies a leaf of its own and the branch pages above it: at 64
 * connections, a large share of the bytes a POST wrote and of its rate on
 * a grown store (docs/storage.md has the figures). So the index has two parts. The main one ("digest8")
 * as before. The young one: digests of new objects, written in the order
 * of their ids into one of two tables ("young0", "young1", id -> the
 * digest's first 8 bytes), so that a batch of new objects appends to the
 * same page, and held in memory by the owner of the store. Once the
 * filling table (meta "dgen" & 1) holds young_max digests, it stops
 * filling ("dgen" moves on) and its digests merge into the main index in
 * their order, a few for each one the other table takes ("dlast": the last
 * one merged), so that the digests one commit merges are neighbours and
 * share the main index's leaves; when the last is merged the table is
 * emptied. A lookup takes the main index's ids, then the young ones, and
 * keeps one whose record holds the whole digest (a young id may be from a
 * transaction that aborted, or of an object since deleted: its record then
 * says so). Only a reader whose snapshot is older than the commit that
 * emptied a table after its merge may find the memory without that
 * table's digests; it reads its snapshot's tables instead. A process that
 * does not own the store (an admin command) always reads the tables. */

static int
dent_cmp(const void *a, const void *b)
{
	const dent *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Adds to the filling generation's hash (the caller holds dm.lk for
 * writing). */
static int
dm_add_locked(dmem *m, uint64_t key, uint64_t id)
{
	size_t i;

	if (2 * (m->an + 1) > m->acap) {
		size_t cap = m->acap ? m->acap * 2 : 1024;
		dent *na = calloc(cap, sizeof(*na));

		if (na == NULL)
			return KI_ENOMEM;
		for (size_t j = 0; j < m->acap; j++) {
			if (m->a[j].id == 0)
				continue;
			for (i = (size_t)m->a[j].key & (cap - 1); na[i].id != 0;
			    i = (i + 1) & (cap - 1))
				;
			na[i] = m->a[j];
		}
		free(m->a);
		m->a = na;
		m->acap = cap;
	}
	for (i = (size_t)key & (m->acap - 1); m->a[i].id != 0;
	    i = (i + 1) & (m->acap - 1))
		if (m->a[i].key == key && m->a[i].id == id)
			return KI_OK;
	m->a[i].key = key;
	m->a[i].id = id;
	m->an++;
	return KI_OK;
}

static int
dm_add(store *s, uint64_t key, uint64_t id)
{
	int rc;

	pthread_rwlock_wrlock(&s->dm.lk);
	rc = dm_add_locked(&s->dm, key, id);
	pthread_rwlock_unlock(&s->dm.lk);
	return rc;
}

/* Sorts young digests by key, stably: entries read in id order come out
 * in (key, id) order. An LSD radix sort, 8 bits a pass: qsort's merge sort
 * was the largest item of a warm open's CPU profile; this sorts 140,000
 * in 4-6 ms. The committer sorts a generation each time one fills. */
static int
dent_sort(dent *d, size_t n)
{
	dent *tmp, *src = d, *dst;
	size_t cnt[256];

	if (n < 2)
		return KI_OK;
	if ((tmp = malloc(n * sizeof(*tmp))) == NULL)
		return KI_ENOMEM;
	dst = tmp;
	for (int shift = 0; shift < 64; shift += 8) {
		size_t sum = 0;

		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(src[i].key >> shift) & 0xff]++;
		if (cnt[(src[0].key >> shift) & 0xff] == n)
			continue;   /* every key has this byte: nothing moves */
		for (int b = 0; b < 256; b++) {
			size_t c = cnt[b];

			cnt[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[(src[i].key >> shift) & 0xff]++] = src[i];
		dst = src;
		src = src == d ? tmp : d;
	}
	if (src != d)
		memcpy(d, src, n * sizeof(*d));
	free(tmp);
	return KI_OK;
}

/* Appends the entries of a young table with ids in [lo, hi] to *d. */
static int
young_scan(MDB_txn *txn, MDB_dbi dbi, uint64_t lo, uint64_t hi, dent **d,
    size_t *n, size_t *cap)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint8_t kb[8];
	int rc;

	if ((rc = mdb_cursor_open(txn, dbi, &c)) != 0)
		return lm_map_rc(rc);
	lm_put_be64(kb, lo);
	k.mv_size = sizeof(kb);
	k.mv_data = kb;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		uint64_t id;

		if (k.mv_size != 8 || v.mv_size != DIGEST_KEY) {
			rc = MDB_CORRUPTED;
			break;
		}
		if ((id = lm_get_be64(k.mv_data)) > hi)
			break;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 1024;
			dent *nd = realloc(*d, nc * sizeof(*nd));

			if (nd == NULL) {
				mdb_cursor_close(c);
				return KI_ENOMEM;
			}
			*d = nd;
			*cap = nc;
		}
		(*d)[*n].id = id;
		(*d)[*n].key = lm_get_be64(v.mv_data);
		(*n)++;
	}
	mdb_cursor_close(c);
	return rc == 0 || rc == MDB_NOTFOUND ? KI_OK : lm_map_rc(rc);
}

/* One of the threads that read a young table's id ranges side by side. */
typedef struct yread {
	MDB_env *env;
	MDB_dbi dbi;
	size_t txnid;        /* the snapshot that the reader must see */
	uint64_t lo, hi;
	dent *d;
	size_t n, cap;
	int rc, started;
	pthread_t th;
} yread;

static void *
yread_run(void *arg)
{
	yread *r = arg;
	MDB_txn *txn;

	ki_thread_name("ki-young-read");
	if ((r->rc = lm_map_rc(mdb_txn_begin(r->env, NULL, MDB_RDONLY, &txn))) !=
	    KI_OK)
		return NULL;
	if (mdb_txn_id(txn) != r->txnid)
		r->rc = KI_ECONFLICT;   /* a commit came between */
	else if ((r->d = malloc(r->cap * sizeof(*r->d))) == NULL)
		r->rc = KI_ENOMEM;
	else
		r->rc = young_scan(txn, r->dbi, r->lo, r->hi, &r->d, &r->n,
		    &r->cap);
	mdb_txn_abort(txn);
	return NULL;
}

/* Reads the young table dbi of txn's snapshot, of entries entries, as
 * YREAD_THREADS ranges of ids side by side (a range whose thread does not
 * start is read here), into one array in id order. KI_ECONFLICT: a reader
 * saw a later snapshot. */
static int
young_read_ranges(MDB_txn *txn, MDB_dbi dbi, size_t entries, dent **out,
    size_t *n)
{
	yread r[YREAD_THREADS];
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t first = 0, last = 0, span;
	size_t total = 0, off = 0;
	dent *all = NULL;
	int rc;

	if ((rc = mdb_cursor_open(txn, dbi, &c)) != 0)
		return lm_map_rc(rc);
	if ((rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) == 0 &&
	    k.mv_size == 8) {
		first = lm_get_be64(k.mv_data);
		if ((rc = mdb_cursor_get(c, &k, &v, MDB_LAST)) == 0 &&
		    k.mv_size == 8)
			last = lm_get_be64(k.mv_data);
	}
	if (rc == 0 && k.mv_size != 8)
		rc = MDB_CORRUPTED;
	mdb_cursor_close(c);
	if (rc != 0)
		return lm_map_rc(rc);
	span = last >= first ? (last - first) / YREAD_THREADS + 1 : 1;
	memset(r, 0, sizeof(r));
	for (int j = 0; j < YREAD_THREADS; j++) {
		r[j].env = mdb_txn_env(txn);
		r[j].dbi = dbi;
		r[j].txnid = mdb_txn_id(txn);
		r[j].lo = first + (uint64_t)j * span;
		r[j].hi = j == YREAD_THREADS - 1 ? UINT64_MAX :
		    r[j].lo + span - 1;
		/* Its share and a margin: ids are dense in a table. */
		r[j].cap = entries / YREAD_THREADS +
		    entries / (4 * YREAD_THREADS) + 64;
		r[j].started = pthread_create(&r[j].th, NULL, yread_run,
		    &r[j]) == 0;
		if (!r[j].started)
			yread_run(&r[j]);
	}
	for (int j = 0; j < YREAD_THREADS; j++) {
		if (r[j].started)
			pthread_join(r[j].th, NULL);
		total += r[j].n;
		if (rc == KI_OK)
			rc = r[j].rc;
	}
	if (rc == KI_OK && (all = malloc((total ? total : 1) *
	    sizeof(*all))) == NULL)
		rc = KI_ENOMEM;
	for (int j = 0; j < YREAD_THREADS; j++) {
		if (rc == KI_OK && r[j].n > 0)
			memcpy(all + off, r[j].d, r[j].n * sizeof(*all));
		off += r[j].n;
		free(r[j].d);
	}
	if (rc != KI_OK) {
		free(all);
		return rc;
	}
	*out = all;
	*n = total;
	return KI_OK;
}

/* Reads a young table into an array, sorted by (key, id) if sort. */
static int
young_read(store *s, MDB_txn *txn, MDB_dbi dbi, int sort, dent **out,
    size_t *n)
{
	MDB_stat st;
	dent *d = NULL;
	size_t cap = 0, i = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = mdb_stat(txn, dbi, &st)) != 0)
		return lm_map_rc(rc);
	if (st.ms_entries == 0)
		return KI_OK;
	rc = st.ms_entries >= s->yread_min ?
	    young_read_ranges(txn, dbi, st.ms_entries, &d, &i) : KI_ECONFLICT;
	if (rc == KI_ECONFLICT)   /* small, or another snapshot: read here */
		rc = young_scan(txn, dbi, 0, UINT64_MAX, &d, &i, &cap);
	if (rc == KI_OK && sort)
		rc = dent_sort(d, i);
	if (rc != KI_OK) {
		free(d);
		return rc;
	}
	*out = d;
	*n = i;
	return KI_OK;
}

/* Loads the memory from the committed tables (at open). */
int
lm_dm_load(store *s)
{
	MDB_txn *txn;
	dent *d;
	size_t n;
	uint64_t g;
	int rc;

	if ((rc = lm_map_rc(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn))) !=
	    KI_OK)
		return rc;
	if ((rc = lm_meta_get_u64(txn, s->meta, "dgen", &g)) != KI_OK ||
	    (rc = young_read(s, txn, s->young[g & 1], 0, &d, &n)) != KI_OK)
		goto out;
	for (size_t i = 0; i < n && rc == KI_OK; i++)
		rc = dm_add_locked(&s->dm, d[i].key, d[i].id);
	free(d);
	if (rc == KI_OK)
		rc = young_read(s, txn, s->young[(g + 1) & 1], 1, &s->dm.b,
		    &s->dm.bn);
	s->dm.bgen = g;
out:
	mdb_txn_abort(txn);
	s->dm.on = rc == KI_OK;
	return rc;
}

/* Whether id's record holds digest (a missing record does not). */
static int
young_has(store_txn *t, uint64_t id, const uint8_t *digest)
{
	int rc = rec_has_digest(t, id, digest);

	return rc == KI_ESTORE ? KI_ENOTFOUND : rc;
}

/* The lowest id among young candidates whose record holds digest: from
 * memory, or (*scan) the snapshot's tables. */
static int
young_find(store_txn *t, const uint8_t *digest, uint64_t *id)
{
	store *s = t->s;
	uint64_t key = lm_get_be64(digest), cand[16], best = UINT64_MAX;
	size_t n = 0;
	int rc = KI_OK, scan;

	pthread_rwlock_rdlock(&s->dm.lk);
	scan = !s->dm.on || mdb_txn_id(t->txn) < s->dm.b_done;
	if (!scan) {
		if (s->dm.acap > 0)
			for (size_t i = (size_t)key & (s->dm.acap - 1);
			    s->dm.a[i].id != 0; i = (i + 1) & (s->dm.acap - 1))
				if (s->dm.a[i].key == key && n < 16)
					cand[n++] = s->dm.a[i].id;
		if (s->dm.bn > 0) {
			size_t lo = 0, hi = s->dm.bn;

			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (s->dm.b[mid].key < key)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (; lo < s->dm.bn && s->dm.b[lo].key == key && n < 16;
			    lo++)
				cand[n++] = s->dm.b[lo].id;
		}
		/* More than 16 ids under one 8-byte prefix: read the tables. */
		scan = n == 16;
	}
	pthread_rwlock_unlock(&s->dm.lk);
	if (!scan) {
		for (size_t i = 0; i < n && rc == KI_OK; i++) {
			if (cand[i] >= best)
				continue;
			if ((rc = young_has(t, cand[i], digest)) == KI_OK)
				best = cand[i];
			else if (rc == KI_ENOTFOUND)
				rc = KI_OK;
		}
	} else {
		for (int g = 0; g < 2 && rc == KI_OK; g++) {
			MDB_cursor *c;
			MDB_val k, v;
			int mrc;

			if ((mrc = mdb_cursor_open(t->txn, s->young[g], &c)) != 0)
				return lm_map_rc(mrc);
			for (mrc = mdb_cursor_get(c, &k, &v, MDB_FIRST); mrc == 0;
			    mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
				uint64_t cid;

				if (k.mv_size != 8 || v.mv_size != DIGEST_KEY) {
					rc = KI_ESTORE;
					break;
				}
				cid = lm_get_be64(k.mv_data);
				if (memcmp(v.mv_data, digest, DIGEST_KEY) != 0 ||
				    cid >= best)
					continue;
				if ((rc = young_has(t, cid, digest)) == KI_OK)
					best = cid;
				else if (rc != KI_ENOTFOUND)
					break;
				rc = KI_OK;
			}
			mdb_cursor_close(c);
			if (rc == KI_OK && mrc != 0 && mrc != MDB_NOTFOUND)
				rc = lm_map_rc(mrc);
		}
	}
	if (rc != KI_OK)
		return rc;
	if (best == UINT64_MAX)
		return KI_ENOTFOUND;
	*id = best;
	return KI_OK;
}

/* Adds a new object's digest to the filling generation. */
int
lm_young_add(store_txn *t, const uint8_t *digest, uint64_t id)
{
	store *s = t->s;
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v = { DIGEST_KEY, (void *)(uintptr_t)digest };
	uint64_t g;
	int rc;

	lm_put_be64(kb, id);
	if ((rc = lm_meta_get_u64(t->txn, s->meta, "dgen", &g)) != KI_OK ||
	    (rc = lm_map_rc(mdb_put(t->txn, s->young[g & 1], &k, &v, 0))) !=
	    KI_OK)
		return rc;
	t->dadded++;
	return s->dm.on ? dm_add(s, lm_get_be64(digest), id) : KI_OK;
}

/* Takes a deleted object's young digest out (in either generation). */
int
lm_young_del(store_txn *t, uint64_t id)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb };

	lm_put_be64(kb, id);
	for (int g = 0; g < 2; g++) {
		int rc = mdb_del(t->txn, t->s->young[g], &k, NULL);

		if (rc != 0 && rc != MDB_NOTFOUND)
			return lm_map_rc(rc);
	}
	return KI_OK;
}

/* At a top-level commit of the owner: merges the next digests of the
 * merging generation into the main index (two for each young digest this
 * transaction added, and at least 16), or, when none is merging and the
 * filling one is full, starts merging it. What changes in memory is done
 * after the commit (lm_young_after). */
int
lm_young_step(store_txn *t)
{
	store *s = t->s;
	MDB_dbi merging;
	MDB_stat st;
	uint8_t lb[16], kb[8], ib[8];
	static char dlast[] = "dlast";
	MDB_val lk = { 5, dlast }, lv, k, v;
	dent last = { 0, 0 }, *todo;
	size_t want = (size_t)(2 * t->dadded + 16), n = 0, at;
	uint64_t g;
	int rc, end;

	if ((rc = lm_meta_get_u64(t->txn, s->meta, "dgen", &g)) != KI_OK)
		return rc;
	merging = s->young[(g + 1) & 1];
	if ((rc = lm_map_rc(mdb_stat(t->txn, merging, &st))) != KI_OK)
		return rc;
	if (st.ms_entries == 0) {
		if ((rc = lm_map_rc(mdb_stat(t->txn, s->young[g & 1], &st))) !=
		    KI_OK || st.ms_entries < s->young_max)
			return rc;
		t->dswap = 1;
		return lm_meta_put_u64(t->txn, s->meta, "dgen", g + 1);
	}
	rc = mdb_get(t->txn, s->meta, &lk, &lv);
	if (rc == 0 && lv.mv_size == 16) {
		last.key = lm_get_be64(lv.mv_data);
		last.id = lm_get_be64((const uint8_t *)lv.mv_data + 8);
	} else if (rc != MDB_NOTFOUND) {
		return rc == 0 ? KI_ESTORE : lm_map_rc(rc);
	}
	if ((todo = malloc(want * sizeof(*todo))) == NULL)
		return KI_ENOMEM;
	pthread_rwlock_rdlock(&s->dm.lk);
	if (s->dm.bgen != g || s->dm.bn == 0) {
		/* The memory does not hold this generation (it could not be
		 * read): nothing is merged. */
		pthread_rwlock_unlock(&s->dm.lk);
		free(todo);
		return KI_OK;
	}
	{
		size_t lo = 0, hi = s->dm.bn;

		/* The first after last (all of them when none was merged). */
		while (rc == 0 && lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (dent_cmp(&s->dm.b[mid], &last) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		at = rc == 0 ? lo : 0;
		for (; at < s->dm.bn && n < want; at++)
			todo[n++] = s->dm.b[at];
		end = at == s->dm.bn;
	}
	pthread_rwlock_unlock(&s->dm.lk);
	rc = KI_OK;
	for (size_t i = 0; i < n && rc == KI_OK; i++) {
		lm_put_be64(kb, todo[i].id);
		lm_put_be64(ib, todo[i].key);
		k.mv_size = 8;
		k.mv_data = kb;
		/* Still there (its object may have been deleted)? */
		rc = mdb_get(t->txn, merging, &k, &v);
		if (rc == MDB_NOTFOUND) {
			rc = KI_OK;
			continue;
		}
		if (rc != 0 || v.mv_size != DIGEST_KEY ||
		    memcmp(v.mv_data, ib, DIGEST_KEY) != 0) {
			rc = rc != 0 ? lm_map_rc(rc) : KI_ESTORE;
			break;
		}
		k.mv_size = DIGEST_KEY;
		k.mv_data = ib;
		v.mv_size = 8;
		v.mv_data = kb;
		rc = mdb_put(t->txn, s->digest, &k, &v, MDB_NODUPDATA);
		rc = rc == MDB_KEYEXIST ? KI_OK : lm_map_rc(rc);
	}
	if (rc == KI_OK && end) {
		/* The whole generation is in the main index. */
		rc = lm_map_rc(mdb_drop(t->txn, merging, 0));
		if (rc == KI_OK) {
			rc = mdb_del(t->txn, s->meta, &lk, NULL);
			rc = rc == MDB_NOTFOUND ? KI_OK : lm_map_rc(rc);
		}
		t->ddone = rc == KI_OK;
	} else if (rc == KI_OK && n > 0) {
		lm_put_be64(lb, todo[n - 1].key);
		lm_put_be64(lb + 8, todo[n - 1].id);
		lv.mv_size = 16;
		lv.mv_data = lb;
		rc = lm_map_rc(mdb_put(t->txn, s->meta, &lk, &lv, 0));
	}
	free(todo);
	return rc;
}

/* After a commit that lm_young_step changed: the memory follows. A started
 * merge: the filling hash becomes the sorted merging generation, read from
 * the committed table (the hash may hold ids of aborted transactions; the
 * table is what a restart would read); a finished one: its array goes, and
 * older snapshots read the tables. */
void
lm_young_after(store *s, int swap, int done, uint64_t txnid)
{
	dent *d = NULL;
	size_t n = 0;

	if (swap) {
		MDB_txn *txn;
		uint64_t g;
		int rc = lm_map_rc(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn));

		if (rc == KI_OK) {
			if ((rc = lm_meta_get_u64(txn, s->meta, "dgen", &g)) ==
			    KI_OK)
				rc = young_read(s, txn, s->young[(g + 1) & 1], 1,
				    &d, &n);
			s->dm.bgen = g;
			mdb_txn_abort(txn);
		}
		if (rc != KI_OK) {
			/* Without the array, lookups read the tables from now
			 * on, and this process no longer merges. */
			lm_slog(s, STORE_LOG_ERROR,
			    "store: the young digests cannot be read "
			    "(%s); digest lookups read the tables",
			    ki_strerror(rc));
			pthread_rwlock_wrlock(&s->dm.lk);
			s->dm.on = 0;
			pthread_rwlock_unlock(&s->dm.lk);
			return;
		}
	}
	pthread_rwlock_wrlock(&s->dm.lk);
	if (done) {
		s->dm.b_done = txnid;
		free(s->dm.b);
		s->dm.b = NULL;
		s->dm.bn = 0;
	}
	if (swap) {
		free(s->dm.b);
		s->dm.b = d;
		s->dm.bn = n;
		if (s->dm.acap > 0)
			memset(s->dm.a, 0, s->dm.acap * sizeof(*s->dm.a));
		s->dm.an = 0;
	}
	pthread_rwlock_unlock(&s->dm.lk);
}

/* The id the digest index keeps for digest: among the ids under its first
 * DIGEST_KEY bytes, the one whose record holds the whole digest. */
int
lm_digest_find(store_txn *t, const uint8_t *digest, uint64_t *id)
{
	MDB_val k = { DIGEST_KEY, (void *)(uintptr_t)digest }, v;
	MDB_cursor *c;
	int rc, mrc;

	/* Nearly always, the first id is the only one. */
	if ((rc = lm_get_u64(t->txn, t->s->digest, &k, id)) == KI_ENOTFOUND)
		return young_find(t, digest, id);
	if (rc != KI_OK || (rc = rec_has_digest(t, *id, digest)) !=
	    KI_ENOTFOUND)
		return rc;
	if ((mrc = mdb_cursor_open(t->txn, t->s->digest, &c)) != 0)
		return lm_map_rc(mrc);
	mrc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY);
	while (mrc == 0 && (mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP)) == 0) {
		if (v.mv_size != 8) {
			rc = KI_ESTORE;
			break;
		}
		*id = lm_get_be64(v.mv_data);
		if ((rc = rec_has_digest(t, *id, digest)) != KI_ENOTFOUND)
			break;
	}
	if (mrc != 0)
		rc = lm_map_rc(mrc);
	mdb_cursor_close(c);
	return rc == KI_ENOTFOUND ? young_find(t, digest, id) : rc;
}

int
lm_get_by_digest(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_obj *out)
{
	uint64_t id;
	int rc;

	if ((rc = lm_digest_find(t, digest, &id)) != KI_OK)
		return rc;
	return store_get_by_seq(t, id, out);
}

int
lm_get_by_natkey(store_txn *t, int kind, const char *key, size_t len,
	store_obj *out)
{
	uint8_t kb[1 + STORE_MAX_NATKEY];
	MDB_val k;
	uint64_t id;
	int rc;

	if (len == 0 || len > STORE_MAX_NATKEY)
		return KI_ENOTFOUND;
	k = lm_kind_key(kb, kind, key, len);
	if ((rc = lm_get_u64(t->txn, t->s->natkey, &k, &id)) != KI_OK)
		return rc;
	return store_get_by_seq(t, id, out);
}
