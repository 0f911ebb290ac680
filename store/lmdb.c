/* store/lmdb.c — the LMDB backend of store/store.h: writes, lists, events
 * and tokens (the layout is described in store/lmdb_int.h). */
#define _GNU_SOURCE /* memmem, pthread_rwlockattr_setkind_np, sync_file_range */
#include "store/lmdb_int.h"

/* ---- writes ---- */

/* The next pair of a label blob ("key\0value\0..."): sets key, value and
 * their lengths, moves *p past the pair. Returns 0 at the end of the blob
 * or at a pair it cuts short. */
static int
label_next(const char **p, const char *end, const char **key, size_t *klen,
	const char **val, size_t *vlen)
{
	if (*p == NULL || *p >= end)
		return 0;
	*key = *p;
	*klen = strnlen(*key, (size_t)(end - *key));
	if (*key + *klen >= end)
		return 0;
	*val = *key + *klen + 1;
	*vlen = strnlen(*val, (size_t)(end - *val));
	if (*val + *vlen >= end)
		return 0;
	*p = *val + *vlen + 1;
	return 1;
}

/* o's facets ("a\0b\0..."): its own, or those the store's facets function
 * derives from its labels, into fb (caller frees). Sets *p and *end. */
static int
obj_facets(store_txn *t, const store_obj *o, ki_buf *fb, const char **p,
	const char **end)
{
	int rc;

	*p = o->facets;
	*end = o->facets ? o->facets + o->facets_len : NULL;
	if (o->facets_len == 0 && t->s->facets != NULL) {
		if ((rc = t->s->facets(o->kind, o->labels, o->labels_len, fb)) !=
		    KI_OK)
			return rc;
		*p = fb->data;
		*end = fb->data ? fb->data + fb->len : NULL;
	}
	return KI_OK;
}

/* Adds (dir 1) or removes (dir -1) o's label postings (postings set) and
 * facet counts (facets set). */
static int
index_labels(store_txn *t, const store_obj *o, int dir, int postings,
	int facets)
{
	uint8_t kb[2 + STORE_MAX_INDEXED + STORE_MAX_NATKEY], ib[8];
	const char *p = o->labels, *end = o->labels ? o->labels + o->labels_len :
	    NULL, *key, *val;
	size_t klen, vlen, n;
	ki_buf fb;
	MDB_val k, v;
	int rc;

	lm_put_be64(ib, o->seq);
	while (postings && label_next(&p, end, &key, &klen, &val, &vlen)) {
		if ((n = lm_label_key(kb, o->kind, key, klen, val, vlen)) == 0)
			continue;
		k.mv_size = n;
		k.mv_data = kb;
		v.mv_size = 8;
		v.mv_data = ib;
		rc = dir > 0 ? mdb_put(t->txn, t->s->label, &k, &v, MDB_NODUPDATA) :
		    mdb_del(t->txn, t->s->label, &k, &v);
		if (rc != 0 && rc != MDB_NOTFOUND && rc != MDB_KEYEXIST)
			return lm_map_rc(rc);
	}
	if (!facets)
		return KI_OK;
	ki_buf_init(&fb);
	if ((rc = obj_facets(t, o, &fb, &p, &end)) != KI_OK)
		goto out;
	while (p != NULL && p < end) {
		size_t flen = strnlen(p, (size_t)(end - p));

		if (flen > 0 && flen <= STORE_MAX_NATKEY) {
			k = lm_kind_key(kb, o->kind, p, flen);
			if ((rc = lm_facet_add(t, k.mv_data, k.mv_size, dir > 0 ? 1 :
			    -1)) != KI_OK)
				goto out;
		}
		p += flen + 1;
	}
	rc = KI_OK;
out:
	ki_buf_free(&fb);
	return rc;
}

/* Adds (dir 1) or removes (dir -1) o's reference postings. */
static int
ref_postings(store_txn *t, const store_obj *o, int dir)
{
	uint8_t ib[8];
	MDB_val k, v = { 8, ib };
	int rc;

	lm_put_be64(ib, o->seq);
	for (size_t i = 0; i < o->nrefs; i++) {
		k.mv_size = STORE_DIGEST_LEN;
		k.mv_data = (void *)(uintptr_t)(o->refs + i * STORE_DIGEST_LEN);
		rc = dir > 0 ? mdb_put(t->txn, t->s->ref, &k, &v, MDB_NODUPDATA) :
		    mdb_del(t->txn, t->s->ref, &k, &v);
		if (rc != 0 && rc != MDB_KEYEXIST && rc != MDB_NOTFOUND)
			return lm_map_rc(rc);
	}
	return KI_OK;
}

/* The last seq whose objects' postings are written (meta "posted"), read
 * once a transaction. A store that has never left any in the tail (a new
 * one, or one from before the tail) has no "posted": every seq so far is
 * posted, and the commit writes that down. */
static int
posted_get(store_txn *t, uint64_t *out)
{
	MDB_val k = { 6, (void *)(uintptr_t)"posted" };
	int rc;

	if (!t->posted_read) {
		rc = lm_get_u64(t->txn, t->s->meta, &k, &t->posted);
		if (rc == KI_ENOTFOUND) {
			/* "seq" as committed: this transaction writes its own
			 * seq only at its commit. */
			if ((rc = lm_meta_get_u64(t->txn, t->s->meta, "seq",
			    &t->posted)) != KI_OK)
				return rc;
			t->posted_moved = t->write;
		} else if (rc != KI_OK) {
			return rc;
		}
		t->posted_read = 1;
	}
	*out = t->posted;
	return KI_OK;
}

/* Calls fn(arg, id) for each object with a seq in (from, upto], of every
 * kind, in id order, until fn returns non-zero (that value is returned). */
static int
tail_each(store_txn *t, uint64_t from, uint64_t upto,
	int (*fn)(void *arg, uint64_t id), void *arg)
{
	MDB_cursor *c;
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int kind = 1, rc;

	if (from >= upto)
		return KI_OK;
	if ((rc = mdb_cursor_open(t->txn, t->s->obj, &c)) != 0)
		return lm_map_rc(rc);
	/* Each kind's tail is the end of its id range. */
	while (kind <= 255) {
		k.mv_size = 8;
		k.mv_data = kb;
		lm_put_be64(kb, store_id(kind, from + 1));
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		if (rc == 0 && k.mv_size == 8 &&
		    store_id_kind(lm_get_be64(k.mv_data)) != kind) {
			/* No tail in kind: seek the next kind's. */
			kind = store_id_kind(lm_get_be64(k.mv_data));
			continue;
		}
		while (rc == 0) {
			uint64_t id;

			if (k.mv_size != 8) {
				rc = KI_ESTORE;
				goto out;
			}
			id = lm_get_be64(k.mv_data);
			if (store_id_kind(id) != kind)
				break;
			if ((id & ID_SEQ_MASK) <= upto &&
			    (rc = fn(arg, id)) != 0)
				goto out;
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		if (rc != 0 && rc != MDB_NOTFOUND) {
			rc = lm_map_rc(rc);
			goto out;
		}
		if (rc == MDB_NOTFOUND)
			break;
		kind++;
	}
	rc = KI_OK;
out:
	mdb_cursor_close(c);
	return rc;
}

/* Appends id to the ki_buf at arg: a list of ids (see id_at). */
static int
id_add(void *arg, uint64_t id)
{
	return ki_buf_append(arg, &id, sizeof(id));
}

static uint64_t
id_at(const ki_buf *ids, size_t i)
{
	uint64_t id;

	memcpy(&id, ids->data + i * sizeof(id), sizeof(id));
	return id;
}

static int load_copy(store_txn *t, uint64_t id, void **copy, store_obj *old);

/* Writes the postings, and the facet counts if facets is set, of the
 * objects with seqs in (from, upto], in id order, so that each posting list
 * gets its new ids as one append; "posted" moves to upto. */
static int
tail_post(store_txn *t, uint64_t from, uint64_t upto, int facets)
{
	ki_buf ids;
	int rc;

	ki_buf_init(&ids);
	if ((rc = tail_each(t, from, upto, id_add, &ids)) != KI_OK)
		goto out;
	for (size_t i = 0; i < ids.len / sizeof(uint64_t); i++) {
		store_obj o;
		void *copy;

		/* A copy: the postings' writes may move the record's page. */
		if ((rc = load_copy(t, id_at(&ids, i), &copy, &o)) == KI_OK &&
		    (rc = ref_postings(t, &o, 1)) == KI_OK)
			rc = index_labels(t, &o, 1, 1, facets);
		free(copy);
		if (rc != KI_OK)
			goto out;
	}
	t->posted = upto;
	t->posted_moved = 1;
out:
	ki_buf_free(&ids);
	return rc;
}

/* Posts the tail once it holds TAIL_MAX objects (or more: one transaction
 * may add many). */
int
lm_tail_maybe_post(store_txn *t)
{
	uint64_t posted;
	int rc;

	if ((rc = posted_get(t, &posted)) != KI_OK)
		return rc;
	if (!t->seq_read || t->seq < posted || t->seq - posted < TAIL_MAX)
		return KI_OK;
	return tail_post(t, posted, t->seq, 1);
}

/* Format 4 (and the format-3 stores that already had "posted") counted a
 * tail object's facets when it was put; format 5 counts them when it posts
 * the object. Such a store's tail gets its postings here, in txn (the
 * open's), its facets being counted already. A store without "posted" has
 * no tail: nothing to do. */
int
lm_post_old_tail(store *s, MDB_txn *txn)
{
	store_txn t;
	uint64_t posted, seq;
	int rc;

	memset(&t, 0, sizeof(t));
	t.s = s;
	t.txn = txn;
	t.write = 1;
	if ((rc = lm_meta_get_u64(txn, s->meta, "seq", &seq)) != KI_OK ||
	    (rc = posted_get(&t, &posted)) != KI_OK ||
	    (rc = tail_post(&t, posted, seq, 0)) != KI_OK)
		return rc;
	return lm_meta_put_u64(txn, s->meta, "posted", seq);
}

/* Adds (dir 1) or removes (dir -1) the digest, natural-key, reference and
 * label entries of o. */
int
lm_index_object(store_txn *t, const store_obj *o, int dir)
{
	uint8_t kb[1 + STORE_MAX_NATKEY], ib[8];
	MDB_val k, v = { 8, ib };
	uint64_t id;
	int rc;

	lm_put_be64(ib, o->seq);
	k.mv_size = DIGEST_KEY;
	k.mv_data = (void *)(uintptr_t)o->digest;
	if (dir > 0) {
		/* The first object with that content keeps it; a new digest
		 * goes to the young part of the index. A lookup that finds o
		 * itself found it in memory only: a replaced object's entries
		 * were just taken out of the tables (lm_index_object -1), and an
		 * aborted transaction (a dry run) leaves the ids it used in
		 * memory, where the next object to take that id finds its own
		 * record. The tables, which a restart reads, must hold it. */
		rc = lm_digest_find(t, o->digest, &id);
		if (rc == KI_ENOTFOUND || (rc == KI_OK && id == o->seq))
			rc = lm_young_add(t, o->digest, o->seq);
	} else {
		/* Only if the index keeps this object for it. */
		rc = lm_map_rc(mdb_del(t->txn, t->s->digest, &k, &v));
		if (rc == KI_ENOTFOUND)
			rc = KI_OK;
		if (rc == KI_OK)
			rc = lm_young_del(t, o->seq);
	}
	if (rc != KI_OK)
		return rc;
	if (o->natkey_len) {
		k = lm_kind_key(kb, o->kind, o->natkey, o->natkey_len);
		if (dir > 0) {
			rc = lm_map_rc(mdb_put(t->txn, t->s->natkey, &k, &v, 0));
		} else {
			rc = lm_get_u64(t->txn, t->s->natkey, &k, &id);
			if (rc == KI_OK && id == o->seq)
				rc = lm_map_rc(mdb_del(t->txn, t->s->natkey, &k, NULL));
			if (rc == KI_ENOTFOUND)
				rc = KI_OK;
		}
		if (rc != KI_OK)
			return rc;
	}
	if ((rc = posted_get(t, &id)) != KI_OK)
		return rc;
	if ((o->seq & ID_SEQ_MASK) > id)
		return KI_OK;   /* in the tail: counted when it is posted */
	if ((rc = ref_postings(t, o, dir)) != KI_OK)
		return rc;
	return index_labels(t, o, dir, 1, 1);
}

/* Keeps o, whole, as version rv while the event rv is kept: its object's
 * current record is about to stop holding that state. */
int
lm_keep_version(store_txn *t, uint64_t rv, const store_obj *o, uint64_t now_rv)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	if (rv + t->s->history <= now_rv)
		return KI_OK;   /* its event is trimmed by now */
	lm_put_be64(kb, rv);
	v.mv_size = lm_rec_size(o);
	if ((rc = mdb_put(t->txn, t->s->version, &k, &v, MDB_RESERVE)) != 0)
		return lm_map_rc(rc);
	lm_rec_encode(v.mv_data, o);
	return KI_OK;
}

/* Appends the event rv -> type + id and trims the history to its bound.
 * The trim waits until EVENT_TRIM events are past the bound and then
 * deletes them together: deleting one per write copied the first leaf
 * and its branch pages in every commit, a third of what appending and
 * trimming an event wrote at one connection; EVENT_TRIM entries span a
 * few leaves, freed together. store_oldest_event hides the events that
 * wait. */
static int
put_event(store_txn *t, int type, uint64_t rv, uint64_t id)
{
	uint8_t kb[8], vb[9];
	MDB_val k = { 8, kb }, v = { 9, vb };
	MDB_cursor *c;
	uint64_t cutoff;
	int rc;

	lm_put_be64(kb, rv);
	vb[0] = (uint8_t)type;
	lm_put_be64(vb + 1, id);
	rc = mdb_put(t->txn, t->s->event, &k, &v, MDB_APPEND);
	if (rc != 0)
		return lm_map_rc(rc);
	if (rv <= t->s->history + EVENT_TRIM)
		return KI_OK;
	cutoff = rv - t->s->history;
	if ((rc = mdb_cursor_open(t->txn, t->s->event, &c)) != 0)
		return lm_map_rc(rc);
	rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	if (rc == 0 && lm_get_be64(k.mv_data) > cutoff - EVENT_TRIM) {
		mdb_cursor_close(c);
		return KI_OK;
	}
	for (; rc == 0 && lm_get_be64(k.mv_data) <= cutoff;
	    rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) {
		MDB_val vk = k;

		/* A superseded state kept for this event goes with it. */
		rc = mdb_del(t->txn, t->s->version, &vk, NULL);
		if (rc != 0 && rc != MDB_NOTFOUND)
			break;
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
	}
	mdb_cursor_close(c);
	return rc == 0 || rc == MDB_NOTFOUND ? KI_OK : lm_map_rc(rc);
}

int
lm_changes(store_txn *t, uint64_t *out)
{
	int rc;

	if (!t->changes_read) {
		if ((rc = lm_meta_get_u64(t->txn, t->s->meta, "changes",
		    &t->changes)) != KI_OK)
			return rc;
		t->changes_read = 1;
	}
	*out = t->changes;
	return KI_OK;
}

/* Counts an object replaced or deleted by t. */
int
lm_changes_bump(store_txn *t)
{
	uint64_t n;
	int rc;

	if ((rc = store_changes(t, &n)) != KI_OK)
		return rc;
	t->changes = n + 1;
	t->changes_moved = 1;
	return KI_OK;
}

/* Copies the current state of id, whole, into *copy (caller frees) and
 * decodes it into old, which then points into the copy: later writes in
 * the transaction may move the pages a borrowed record lives on. */
static int
load_copy(store_txn *t, uint64_t id, void **copy, store_obj *old)
{
	store_obj cur;
	int rc;

	*copy = NULL;
	if ((rc = store_get_by_seq(t, id, &cur)) != KI_OK)
		return rc;
	if ((*copy = malloc(lm_rec_size(&cur))) == NULL)
		return KI_ENOMEM;
	lm_rec_encode(*copy, &cur);
	return lm_rec_decode(*copy, lm_rec_size(&cur), old);
}

int
lm_put(store_txn *t, store_obj *o)
{
	uint8_t kb[1 + STORE_MAX_NAME], ib[8];
	MDB_val k, v;
	store_obj old;
	void *copy = NULL;
	uint64_t id, last;
	int rc, exists;

	if (!t->write || o->rv != t->rv + 1 || o->name_len == 0 ||
	    o->name_len > STORE_MAX_NAME || o->natkey_len > STORE_MAX_NATKEY ||
	    o->nrefs > STORE_MAX_REFS || o->json_len > UINT32_MAX ||
	    o->labels_len > UINT32_MAX || o->facets_len > UINT32_MAX ||
	    o->kind <= 0 || o->kind > 255)
		return KI_EINVAL;
	t->writes++;
	k = lm_kind_key(kb, o->kind, o->name, o->name_len);
	rc = lm_get_u64(t->txn, t->s->name, &k, &id);
	if (rc != KI_OK && rc != KI_ENOTFOUND)
		return rc;
	exists = rc == KI_OK;
	if (exists) {
		if ((rc = lm_changes_bump(t)) != KI_OK ||
		    (rc = load_copy(t, id, &copy, &old)) != KI_OK ||
		    (rc = lm_index_object(t, &old, -1)) != KI_OK ||
		    (rc = lm_keep_version(t, old.rv, &old, o->rv)) != KI_OK)
			goto out;
	} else {
		if (!t->seq_read) {
			if ((rc = lm_meta_get_u64(t->txn, t->s->meta, "seq", &last)) !=
			    KI_OK)
				goto out;
			t->seq = last;
			t->seq_read = 1;
		}
		id = store_id(o->kind, ++t->seq);
		t->seq_moved = 1;
		lm_put_be64(ib, id);
		v.mv_size = 8;
		v.mv_data = ib;
		if ((rc = lm_map_rc(mdb_put(t->txn, t->s->name, &k, &v, 0))) != KI_OK)
			goto out;
	}
	o->seq = id;
	if ((rc = lm_write_record(t, o)) != KI_OK)
		goto out;
	if ((rc = lm_index_object(t, o, 1)) != KI_OK ||
	    (rc = put_event(t, exists ? STORE_MODIFIED : STORE_ADDED, o->rv,
	    id)) != KI_OK)
		goto out;
	t->rv = o->rv;
	t->dirty = 1;
	rc = lm_log_obj(t, OP_PUT, o);
out:
	free(copy);
	return rc;
}

int
lm_delete(store_txn *t, int kind, const char *name, size_t len,
	const store_obj *final)
{
	uint8_t kb[1 + STORE_MAX_NAME], ib[8];
	MDB_val k, ik = { 8, ib };
	store_obj old, ev;
	void *copy = NULL;
	uint64_t id, rv = t->rv + 1;
	int rc;

	if (!t->write || len == 0 || len > STORE_MAX_NAME)
		return KI_EINVAL;
	t->writes++;
	k = lm_kind_key(kb, kind, name, len);
	if ((rc = lm_get_u64(t->txn, t->s->name, &k, &id)) != KI_OK)
		return rc;
	if ((rc = lm_changes_bump(t)) != KI_OK ||
	    (rc = load_copy(t, id, &copy, &old)) != KI_OK)
		goto out;
	/* The event names the final state, kept as a version. */
	ev = old;
	ev.rv = rv;
	ev.json = final->json;
	ev.json_len = final->json_len;
	ev.meta_off = final->meta_off;
	ev.meta_len = final->meta_len;
	ev.spec_off = final->spec_off;
	ev.spec_len = final->spec_len;
	ev.status_off = final->status_off;
	ev.status_len = final->status_len;
	if ((rc = lm_keep_version(t, old.rv, &old, rv)) != KI_OK ||
	    (rc = lm_keep_version(t, rv, &ev, rv)) != KI_OK ||
	    (rc = put_event(t, STORE_DELETED, rv, id)) != KI_OK ||
	    (rc = lm_index_object(t, &old, -1)) != KI_OK)
		goto out;
	if ((rc = lm_map_rc(mdb_del(t->txn, t->s->name, &k, NULL))) != KI_OK)
		goto out;
	lm_put_be64(ib, id);
	if ((rc = lm_map_rc(mdb_del(t->txn, t->s->obj, &ik, NULL))) != KI_OK)
		goto out;
	rc = lm_map_rc(mdb_del(t->txn, t->s->aux, &ik, NULL));
	if (rc != KI_OK && rc != KI_ENOTFOUND)
		goto out;
	t->rv = rv;
	t->dirty = 1;
	{
		store_obj d;

		memset(&d, 0, sizeof(d));
		d.kind = kind;
		d.name = name;
		d.name_len = len;
		d.json = final->json;
		d.json_len = final->json_len;
		d.meta_off = final->meta_off;
		d.meta_len = final->meta_len;
		d.spec_off = final->spec_off;
		d.spec_len = final->spec_len;
		d.status_off = final->status_off;
		d.status_len = final->status_len;
		rc = lm_log_obj(t, OP_DELETE, &d);
	}
out:
	free(copy);
	return rc;
}

/* ---- lists ---- */

int
lm_list(store_txn *t, int kind, uint64_t after, store_each_fn fn,
	void *arg)
{
	uint8_t kb[8];
	MDB_cursor *c, *aux = NULL;
	MDB_val k = { 8, kb }, v;
	store_obj o;
	uint64_t start;
	int rc;

	start = after >= store_id(kind, 0) ? after + 1 : store_id(kind, 1);
	if (store_id_kind(start) != kind)
		return KI_OK;
	if ((rc = mdb_cursor_open(t->txn, t->s->obj, &c)) != 0)
		return lm_map_rc(rc);
	if ((rc = mdb_cursor_open(t->txn, t->s->aux, &aux)) != 0) {
		mdb_cursor_close(c);
		return lm_map_rc(rc);
	}
	lm_put_be64(kb, start);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		if (k.mv_size != 8 || store_id_kind(lm_get_be64(k.mv_data)) != kind)
			break;
		if ((rc = lm_obj_decode(t, aux, v.mv_data, v.mv_size, &o)) != KI_OK)
			goto out;
		if ((rc = fn(arg, &o)) != 0)
			goto out;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	rc = rc == MDB_NOTFOUND || rc == 0 ? KI_OK : lm_map_rc(rc);
out:
	mdb_cursor_close(aux);
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
lm_count(store_txn *t, int kind, uint64_t *out)
{
	*out = 0;
	return store_list(t, kind, 0, count_one, out);
}

/* One posting list being walked: a cursor on its key, and the id it
 * stands on (0 before the first seek, UINT64_MAX once past the end). */
typedef struct posting {
	MDB_cursor *c;
	MDB_val key;
	uint8_t kb[2 + STORE_MAX_INDEXED];
	uint64_t at;
} posting;

/* Moves p to its first id >= want; sets p->at (UINT64_MAX: none). */
static int
posting_seek(posting *p, uint64_t want)
{
	uint8_t vb[8];
	MDB_val k = p->key, v = { 8, vb };
	int rc;

	if (p->at >= want)
		return KI_OK;
	if (p->at != 0 && p->at + 1 == want) {
		/* Walking a list in order: the next duplicate is the answer. */
		rc = mdb_cursor_get(p->c, &k, &v, MDB_NEXT_DUP);
	} else {
		lm_put_be64(vb, want);
		rc = mdb_cursor_get(p->c, &k, &v, MDB_GET_BOTH_RANGE);
	}
	if (rc == MDB_NOTFOUND) {
		p->at = UINT64_MAX;
		return KI_OK;
	}
	if (rc != 0)
		return lm_map_rc(rc);
	if (v.mv_size != 8)
		return KI_ESTORE;
	p->at = lm_get_be64(v.mv_data);
	return KI_OK;
}

/* Whether o has the label key=value (both NUL-terminated). */
static int
obj_has_label(const store_obj *o, const char *key, const char *value)
{
	const char *p = o->labels, *end = o->labels ? o->labels + o->labels_len :
	    NULL, *k, *v;
	size_t kl = strlen(key), vl = strlen(value), klen, vlen;

	while (label_next(&p, end, &k, &klen, &v, &vlen))
		if (klen == kl && vlen == vl && memcmp(k, key, kl) == 0 &&
		    memcmp(v, value, vl) == 0)
			return 1;
	return 0;
}

static int
obj_has_ref(const store_obj *o, const uint8_t *digest)
{
	for (size_t i = 0; i < o->nrefs; i++)
		if (memcmp(o->refs + i * STORE_DIGEST_LEN, digest,
		    STORE_DIGEST_LEN) == 0)
			return 1;
	return 0;
}

/* Whether o satisfies every term: what the postings would have said. */
static int
obj_matches(const store_obj *o, const store_term *terms, size_t nterms)
{
	for (size_t i = 0; i < nterms; i++) {
		size_t j;

		for (j = 0; j < terms[i].nalts; j++) {
			const store_alt *a = &terms[i].alts[j];

			if (a->digest != NULL ? obj_has_ref(o, a->digest) :
			    obj_has_label(o, a->key, a->value))
				break;
		}
		if (j == terms[i].nalts)
			return 0;
	}
	return 1;
}

int
lm_list_index(store_txn *t, int kind, const store_term *terms,
	size_t nterms, uint64_t after, store_each_fn fn, void *arg)
{
	posting *ps = NULL;
	size_t *first = NULL, np = 0, total = 0;
	MDB_cursor *obj = NULL, *aux = NULL;
	store_obj o;
	uint64_t cand, posted, tail;
	int rc = KI_OK;

	if (nterms == 0)
		return store_list(t, kind, after, fn, arg);
	for (size_t i = 0; i < nterms; i++) {
		if (terms[i].nalts == 0)
			return KI_OK;   /* a term nothing satisfies */
		total += terms[i].nalts;
	}
	ps = calloc(total, sizeof(*ps));
	first = calloc(nterms + 1, sizeof(*first));
	if (ps == NULL || first == NULL) {
		rc = KI_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nterms; i++) {
		first[i] = np;
		for (size_t j = 0; j < terms[i].nalts; j++) {
			const store_alt *a = &terms[i].alts[j];
			posting *p = &ps[np];
			MDB_dbi dbi;

			if (a->digest != NULL) {
				memcpy(p->kb, a->digest, STORE_DIGEST_LEN);
				p->key.mv_size = STORE_DIGEST_LEN;
				dbi = t->s->ref;
			} else {
				p->key.mv_size = lm_label_key(p->kb, kind, a->key,
				    strlen(a->key), a->value, strlen(a->value));
				if (p->key.mv_size == 0) {
					rc = KI_EINVAL;
					goto out;
				}
				dbi = t->s->label;
			}
			p->key.mv_data = p->kb;
			if ((rc = lm_map_rc(mdb_cursor_open(t->txn, dbi, &p->c))) !=
			    KI_OK)
				goto out;
			np++;
		}
	}
	first[nterms] = np;
	if ((rc = lm_map_rc(mdb_cursor_open(t->txn, t->s->obj, &obj))) != KI_OK ||
	    (rc = lm_map_rc(mdb_cursor_open(t->txn, t->s->aux, &aux))) != KI_OK ||
	    (rc = posted_get(t, &posted)) != KI_OK)
		goto out;
	/* The tail's objects have no postings yet: they are read below. */
	tail = posted >= ID_SEQ_MASK ? store_id(kind, ID_SEQ_MASK) + 1 :
	    store_id(kind, posted + 1);
	/* Leapfrog: each term proposes its first id >= the candidate (the
	 * least over its alternatives); the candidate moves up until every
	 * term agrees on it. Each step is a seek in a posting list, so a page
	 * costs what its matches cost, whatever the size of the store. */
	cand = after >= store_id(kind, 0) ? after + 1 : store_id(kind, 1);
	while (cand < tail) {
		size_t agree = 0, i = 0;

		while (agree < nterms) {
			uint64_t best = UINT64_MAX;

			for (size_t j = first[i]; j < first[i + 1]; j++) {
				if ((rc = posting_seek(&ps[j], cand)) != KI_OK)
					goto out;
				if (ps[j].at < best)
					best = ps[j].at;
			}
			if (best >= tail) {
				cand = tail;
				break;
			}
			if (best == cand) {
				agree++;
			} else {
				cand = best;
				agree = 1;
			}
			i = (i + 1) % nterms;
		}
		if (cand >= tail)
			break;
		rc = lm_get_by_cursor(t, obj, aux, cand, &o);
		if (rc == KI_OK)
			rc = fn(arg, &o);
		else if (rc == KI_ENOTFOUND)
			rc = KI_ESTORE;   /* an index entry without its object */
		if (rc != 0)
			goto out;
		cand++;
	}
	/* The tail: its records, matched here (at most TAIL_MAX a kind). */
	if (store_id_kind(cand) == kind) {
		uint8_t kb[8];
		MDB_val k = { 8, kb }, v;

		lm_put_be64(kb, cand);
		rc = mdb_cursor_get(obj, &k, &v, MDB_SET_RANGE);
		while (rc == 0) {
			if (k.mv_size != 8) {
				rc = KI_ESTORE;
				goto out;
			}
			if (store_id_kind(lm_get_be64(k.mv_data)) != kind)
				break;
			if ((rc = lm_obj_decode(t, aux, v.mv_data, v.mv_size, &o)) !=
			    KI_OK)
				goto out;
			if (obj_matches(&o, terms, nterms) &&
			    (rc = fn(arg, &o)) != 0)
				goto out;
			rc = mdb_cursor_get(obj, &k, &v, MDB_NEXT);
		}
		rc = rc == 0 || rc == MDB_NOTFOUND ? KI_OK : lm_map_rc(rc);
	}
out:
	if (aux != NULL)
		mdb_cursor_close(aux);
	if (obj != NULL)
		mdb_cursor_close(obj);
	for (size_t j = 0; ps != NULL && j < np; j++)
		mdb_cursor_close(ps[j].c);
	free(ps);
	free(first);
	return rc;
}

/* One facet of the tail's objects, with how many of them have it. */
typedef struct tail_facet {
	size_t off, len;   /* in tail_facets.text */
	const char *s;     /* text + off, once text stops growing */
	uint64_t n;
} tail_facet;

typedef struct tail_facets {
	store_txn *t;
	int kind;
	ki_buf text;       /* every facet of every tail object, back to back */
	tail_facet *f;
	size_t n, cap;
} tail_facets;

/* LMDB's default key order: bytes, then the shorter first. */
static int
bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c != 0 ? c : (al > bl) - (al < bl);
}

static int
tail_facet_add(void *arg, uint64_t id)
{
	tail_facets *tf = arg;
	store_obj o;
	ki_buf fb;
	const char *p, *end;
	int rc;

	if (store_id_kind(id) != tf->kind)
		return 0;
	if ((rc = store_get_by_seq(tf->t, id, &o)) != KI_OK)
		return rc;
	ki_buf_init(&fb);
	if ((rc = obj_facets(tf->t, &o, &fb, &p, &end)) != KI_OK)
		goto out;
	for (; p != NULL && p < end; p += strnlen(p, (size_t)(end - p)) + 1) {
		size_t flen = strnlen(p, (size_t)(end - p));

		if (flen == 0 || flen > STORE_MAX_NATKEY)
			continue;   /* as index_labels: not counted */
		if (tf->n == tf->cap) {
			size_t cap = tf->cap ? tf->cap * 2 : 64;
			tail_facet *grown = realloc(tf->f, cap * sizeof(*grown));

			if (grown == NULL) {
				rc = KI_ENOMEM;
				goto out;
			}
			tf->f = grown;
			tf->cap = cap;
		}
		tf->f[tf->n++] = (tail_facet){ tf->text.len, flen, NULL, 1 };
		ki_buf_append(&tf->text, p, flen);
	}
	rc = tf->text.oom ? KI_ENOMEM : KI_OK;
out:
	ki_buf_free(&fb);
	return rc;
}

static int
tail_facet_cmp(const void *a, const void *b)
{
	const tail_facet *x = a, *y = b;

	return bytes_cmp(x->s, x->len, y->s, y->len);
}

/* Collects the facets of kind's tail objects into tf, sorted as the facet
 * table is, each once with its count. */
static int
tail_facets_collect(store_txn *t, int kind, tail_facets *tf)
{
	uint64_t posted;
	size_t w = 0;
	int rc;

	memset(tf, 0, sizeof(*tf));
	tf->t = t;
	tf->kind = kind;
	ki_buf_init(&tf->text);
	if ((rc = posted_get(t, &posted)) != KI_OK ||
	    (rc = tail_each(t, posted, ID_SEQ_MASK, tail_facet_add, tf)) !=
	    KI_OK || tf->n == 0)
		return rc;
	for (size_t r = 0; r < tf->n; r++)
		tf->f[r].s = tf->text.data + tf->f[r].off;
	qsort(tf->f, tf->n, sizeof(*tf->f), tail_facet_cmp);
	for (size_t r = 0; r < tf->n; r++) {
		if (w > 0 && bytes_cmp(tf->f[w - 1].s, tf->f[w - 1].len,
		    tf->f[r].s, tf->f[r].len) == 0)
			tf->f[w - 1].n += tf->f[r].n;
		else
			tf->f[w++] = tf->f[r];
	}
	tf->n = w;
	return KI_OK;
}

int
lm_facets(store_txn *t, int kind, store_facet_fn fn, void *arg)
{
	uint8_t kb[1];
	MDB_cursor *c;
	MDB_val k = { 1, kb }, v;
	tail_facets tf;
	size_t i = 0;
	int rc;

	/* The counts in the table, merged with the tail's (see the tail). */
	if ((rc = tail_facets_collect(t, kind, &tf)) != KI_OK)
		goto done;
	kb[0] = (uint8_t)kind;
	if ((rc = mdb_cursor_open(t->txn, t->s->facet, &c)) != 0) {
		rc = lm_map_rc(rc);
		goto done;
	}
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		const char *text = (const char *)k.mv_data + 1;
		size_t len = k.mv_size - 1;
		uint64_t n;

		if (k.mv_size < 1 || ((uint8_t *)k.mv_data)[0] != (uint8_t)kind)
			break;
		while (i < tf.n && bytes_cmp(tf.f[i].s,
		    tf.f[i].len, text, len) < 0) {
			if ((rc = fn(arg, tf.f[i].s, tf.f[i].len,
			    tf.f[i].n)) != 0)
				goto out;
			i++;
		}
		if (v.mv_size == 8) {
			n = lm_get_be64(v.mv_data);
			if (i < tf.n && bytes_cmp(tf.f[i].s,
			    tf.f[i].len, text, len) == 0)
				n += tf.f[i++].n;
			if ((rc = fn(arg, text, len, n)) != 0)
				goto out;
		}
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	rc = rc == MDB_NOTFOUND || rc == 0 ? KI_OK : lm_map_rc(rc);
	for (; rc == KI_OK && i < tf.n; i++)
		rc = fn(arg, tf.f[i].s, tf.f[i].len, tf.f[i].n);
out:
	mdb_cursor_close(c);
done:
	free(tf.f);
	ki_buf_free(&tf.text);
	return rc;
}

typedef struct referrer_arg {
	store_txn *t;
	const uint8_t *digest;
	ki_buf *ids;
} referrer_arg;

static int
tail_referrer(void *arg, uint64_t id)
{
	referrer_arg *a = arg;
	store_obj o;
	int rc;

	if ((rc = store_get_by_seq(a->t, id, &o)) != KI_OK)
		return rc;
	return obj_has_ref(&o, a->digest) ? id_add(a->ids, id) : 0;
}

int
lm_each_referrer(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_each_fn fn, void *arg)
{
	MDB_cursor *c;
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)digest }, v;
	ki_buf ids;
	referrer_arg ra = { t, digest, &ids };
	uint64_t posted;
	store_obj o;
	int rc;

	/* Collect first: fn may write (re-render a referrer), which would
	 * invalidate the cursor. */
	if ((rc = mdb_cursor_open(t->txn, t->s->ref, &c)) != 0)
		return lm_map_rc(rc);
	ki_buf_init(&ids);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY);
	while (rc == 0 && v.mv_size == 8) {
		if ((rc = id_add(&ids, lm_get_be64(v.mv_data))) != KI_OK)
			break;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP);
	}
	mdb_cursor_close(c);
	rc = rc == MDB_NOTFOUND || rc == 0 ? KI_OK : lm_map_rc(rc);
	/* And the tail's, which have no postings yet. */
	if (rc == KI_OK && (rc = posted_get(t, &posted)) == KI_OK)
		rc = tail_each(t, posted, ID_SEQ_MASK, tail_referrer, &ra);
	for (size_t i = 0; rc == KI_OK && i < ids.len / sizeof(uint64_t); i++) {
		if ((rc = store_get_by_seq(t, id_at(&ids, i), &o)) == KI_OK)
			rc = fn(arg, &o);
	}
	ki_buf_free(&ids);
	return rc;
}

/* ---- events ---- */
uint64_t
lm_oldest_event(store_txn *t)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t rv = 0;

	if (mdb_cursor_open(t->txn, t->s->event, &c) != 0)
		return 0;
	if (mdb_cursor_get(c, &k, &v, MDB_FIRST) == 0 && k.mv_size == 8)
		rv = lm_get_be64(k.mv_data);
	mdb_cursor_close(c);
	/* Events older than the history wait for the next trim, and their
	 * superseded states are not kept (lm_keep_version): they are gone. */
	if (rv != 0 && t->rv > t->s->history && rv <= t->rv - t->s->history)
		rv = t->rv - t->s->history + 1;
	return rv;
}


/* Finds the state event rv of type names for object id: its current
 * record when that is still the one rv wrote, else the kept version. */
static int
event_state(store_txn *t, uint64_t rv, int type, uint64_t id, store_obj *o)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	if (type != STORE_DELETED) {
		rc = store_get_by_seq(t, id, o);
		if (rc == KI_OK && o->rv == rv)
			return KI_OK;
		if (rc != KI_OK && rc != KI_ENOTFOUND)
			return rc;
	}
	lm_put_be64(kb, rv);
	if ((rc = mdb_get(t->txn, t->s->version, &k, &v)) != 0)
		return rc == MDB_NOTFOUND ? KI_ESTORE : lm_map_rc(rc);
	return lm_rec_decode(v.mv_data, v.mv_size, o);
}

int
lm_events_since(store_txn *t, uint64_t rv, store_event_fn fn, void *arg)
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
	if ((rc = mdb_cursor_open(t->txn, t->s->event, &c)) != 0)
		return lm_map_rc(rc);
	lm_put_be64(kb, rv + 1);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		const uint8_t *e = v.mv_data;

		if (k.mv_size != 8 || v.mv_size != 9) {
			rc = KI_ESTORE;
			goto out;
		}
		rc = event_state(t, lm_get_be64(k.mv_data), e[0], lm_get_be64(e + 1), &o);
		if (rc != KI_OK)
			goto out;
		if ((rc = fn(arg, e[0], &o)) != 0)
			goto out;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	rc = rc == MDB_NOTFOUND ? KI_OK : lm_map_rc(rc);
out:
	mdb_cursor_close(c);
	return rc;
}

/* ---- tokens ---- */

int
lm_token_put(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char *value, size_t len)
{
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)hash };
	MDB_val v = { len, (void *)(uintptr_t)value };
	int rc;

	if (!t->write)
		return KI_EINVAL;
	t->writes++;
	t->dirty = 1;
	if ((rc = lm_map_rc(mdb_put(t->txn, t->s->token, &k, &v, 0))) != KI_OK)
		return rc;
	return lm_log_token(t, OP_TOKEN_PUT, hash, value, len);
}

int
lm_token_get(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char **value, size_t *len)
{
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)hash }, v;
	int rc = mdb_get(t->txn, t->s->token, &k, &v);

	if (rc != 0)
		return lm_map_rc(rc);
	*value = v.mv_data;
	*len = v.mv_size;
	return KI_OK;
}

int
lm_token_delete(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN])
{
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)hash };
	int rc;

	if (!t->write)
		return KI_EINVAL;
	t->writes++;
	t->dirty = 1;
	if ((rc = lm_map_rc(mdb_del(t->txn, t->s->token, &k, NULL))) != KI_OK)
		return rc;
	return lm_log_token(t, OP_TOKEN_DELETE, hash, NULL, 0);
}

int
lm_token_list(store_txn *t, store_token_fn fn, void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if ((rc = mdb_cursor_open(t->txn, t->s->token, &c)) != 0)
		return lm_map_rc(rc);
	rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	while (rc == 0) {
		if (k.mv_size == STORE_DIGEST_LEN &&
		    (rc = fn(arg, k.mv_data, v.mv_data, v.mv_size)) != 0)
			break;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND || rc == 0 ? KI_OK : rc > 0 ? lm_map_rc(rc) : rc;
}

int
lm_token_count(store_txn *t, uint64_t *out)
{
	MDB_stat st;
	int rc = mdb_stat(t->txn, t->s->token, &st);

	*out = rc == 0 ? st.ms_entries : 0;
	return lm_map_rc(rc);
}
