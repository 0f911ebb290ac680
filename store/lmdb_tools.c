/* store/lmdb_tools.c — the LMDB backend: statistics, tokens, backup,
 * verification and the conversions of older formats. */
#define _GNU_SOURCE /* memmem, pthread_rwlockattr_setkind_np, sync_file_range */
#include "store/lmdb_int.h"

/* ---- statistics, tokens, backup ---- */

int
store_lmdb_stat(store *s, store_lmdb_stats *out)
{
	MDB_envinfo info;
	MDB_stat st;
	int rc;

	/* Another backend's store has no LMDB statistics. */
	if (strcmp(store_backend_name(s), "lmdb") != 0)
		return KI_EINVAL;
	pthread_rwlock_rdlock(&s->resize);
	rc = mdb_env_info(s->env, &info) != 0 || mdb_env_stat(s->env, &st) != 0;
	pthread_rwlock_unlock(&s->resize);
	if (rc)
		return KI_ESTORE;
	out->map_size = info.me_mapsize;
	out->page_size = st.ms_psize;
	out->map_used = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
	out->entries = st.ms_entries;
	out->log_bytes = __atomic_load_n(&s->log_bytes, __ATOMIC_RELAXED);
	out->checkpoints = __atomic_load_n(&s->checkpoints, __ATOMIC_RELAXED);
	out->recovered = s->recovered;
	return KI_OK;
}

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

/* ---- verification ---- */

typedef struct verify {
	store_txn *t;
	store_check_fn check;
	store_problem_fn problem;
	void *arg;
	store_verify_stats *st;
	int repair;
} verify;

static void
vproblem(verify *v, uint64_t id, const char *what)
{
	v->st->problems++;
	if (v->problem != NULL)
		v->problem(v->arg, id, what);
}

/* The indexes that must find object o (id). */
static int
verify_object(verify *v, uint64_t id, const store_obj *o)
{
	uint8_t kb[1 + STORE_MAX_NATKEY];
	MDB_val k;
	uint64_t got;
	int rc;

	if (o->seq != id)
		vproblem(v, id, "the record names another id");
	k = lm_kind_key(kb, o->kind, o->name, o->name_len);
	rc = lm_get_u64(v->t->txn, v->t->s->name, &k, &got);
	if (rc != KI_OK && rc != KI_ENOTFOUND)
		return rc;
	if (rc != KI_OK || got != id)
		vproblem(v, id, "its name does not find it");
	if (o->natkey_len) {
		k = lm_kind_key(kb, o->kind, o->natkey, o->natkey_len);
		rc = lm_get_u64(v->t->txn, v->t->s->natkey, &k, &got);
		if (rc != KI_OK && rc != KI_ENOTFOUND)
			return rc;
		if (rc != KI_OK)
			vproblem(v, id, "its natural key is not indexed");
	}
	rc = lm_digest_find(v->t, o->digest, &got);
	if (rc == KI_ENOTFOUND) {
		if (v->repair && (rc = lm_young_add(v->t, o->digest, id)) == KI_OK)
			v->st->repaired++;
		else
			vproblem(v, id, "its digest is not in the digest index");
	} else if (rc == KI_ECORRUPT) {
		vproblem(v, id, "its digest finds a damaged record");
	} else if (rc != KI_OK) {
		return rc;
	}
	if (v->check != NULL && v->check(v->arg, o) != 0)
		vproblem(v, id, "its content does not match its digest");
	return KI_OK;
}

int
lm_verify(store *s, int repair, store_check_fn check,
	store_problem_fn problem, void *arg, store_verify_stats *out)
{
	verify v = { NULL, check, problem, arg, out, repair };
	MDB_cursor *c = NULL, *aux = NULL;
	MDB_val k, val;
	int rc, mrc;

	memset(out, 0, sizeof(*out));
	if (repair && !s->owner)
		return KI_EBUSY;
	if ((rc = store_begin(s, repair, &v.t)) != KI_OK)
		return rc;
	if ((rc = lm_map_rc(mdb_cursor_open(v.t->txn, s->obj, &c))) != KI_OK ||
	    (rc = lm_map_rc(mdb_cursor_open(v.t->txn, s->aux, &aux))) != KI_OK)
		goto out;
	for (mrc = mdb_cursor_get(c, &k, &val, MDB_FIRST); mrc == 0 &&
	    rc == KI_OK; mrc = mdb_cursor_get(c, &k, &val, MDB_NEXT)) {
		store_obj o;
		uint64_t id;
		int drc;

		out->objects++;
		if (k.mv_size != 8) {
			vproblem(&v, 0, "an object key is not 8 bytes");
			continue;
		}
		id = lm_get_be64(k.mv_data);
		drc = lm_obj_decode(v.t, aux, val.mv_data, val.mv_size, &o);
		if (drc == KI_ECORRUPT || drc == KI_ESTORE) {
			vproblem(&v, id, drc == KI_ECORRUPT ? "its record is "
			    "damaged (checksum or structure)" : "its natural key "
			    "and references are missing");
			continue;
		}
		if (drc != KI_OK) {
			rc = drc;
			break;
		}
		rc = verify_object(&v, id, &o);
	}
	if (rc == KI_OK && mrc != 0 && mrc != MDB_NOTFOUND)
		rc = lm_map_rc(mrc);
	mdb_cursor_close(c);
	c = NULL;
	/* Every name names an object. */
	if (rc == KI_OK &&
	    (rc = lm_map_rc(mdb_cursor_open(v.t->txn, s->name, &c))) == KI_OK) {
		for (mrc = mdb_cursor_get(c, &k, &val, MDB_FIRST); mrc == 0;
		    mrc = mdb_cursor_get(c, &k, &val, MDB_NEXT)) {
			MDB_val ok, ov;

			if (val.mv_size != 8) {
				vproblem(&v, 0, "a name's entry is not an id");
				continue;
			}
			ok.mv_size = 8;
			ok.mv_data = val.mv_data;
			if (mdb_get(v.t->txn, s->obj, &ok, &ov) != 0)
				vproblem(&v, lm_get_be64(val.mv_data),
				    "a name names no object");
		}
		if (mrc != MDB_NOTFOUND)
			rc = lm_map_rc(mrc);
	}
out:
	if (c != NULL)
		mdb_cursor_close(c);
	if (aux != NULL)
		mdb_cursor_close(aux);
	if (rc == KI_OK && repair && out->repaired > 0)
		return store_commit(v.t);
	store_abort(v.t);
	return rc;
}

int
store_lmdb_backup_fd(store *s, int fd)
{
	if (strcmp(store_backend_name(s), "lmdb") != 0)
		return KI_EINVAL;
	return lm_map_rc(mdb_env_copyfd2(s->env, fd, MDB_CP_COMPACT));
}

/* ---- formats 3-5 -> 6 ---- */

/* Copies the "digest" table of a store of format 3 to 5 (whole digests ->
 * id) into "digest8" (first DIGEST_KEY bytes -> ids), in key order,
 * s->convert_batch entries a transaction; the last one drops "digest" and
 * marks the store format 6. A crash part-way leaves format 5 and the next
 * open starts again from an empty "digest8". */
int
lm_convert_digests(store *s)
{
	MDB_txn *txn;
	MDB_dbi old;
	MDB_cursor *c = NULL;
	MDB_val k, v, from;
	uint8_t last[STORE_DIGEST_LEN];
	size_t n, total = 0;
	int rc, more = 1, first = 1;

	while (more) {
		if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
			return lm_map_rc(rc);
		if ((rc = mdb_dbi_open(txn, "digest", 0, &old)) == MDB_NOTFOUND) {
			/* Nothing to copy (a store made as format 6 and marked
			 * older by hand, say). */
			more = 0;
			goto done;
		}
		if (rc != 0 || (first && (rc = mdb_drop(txn, s->digest, 0)) != 0) ||
		    (rc = mdb_cursor_open(txn, old, &c)) != 0)
			goto fail;
		if (first) {
			rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
		} else {
			from.mv_size = sizeof(last);
			from.mv_data = last;
			k = from;
			rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
			if (rc == 0 && k.mv_size == sizeof(last) &&
			    memcmp(k.mv_data, last, sizeof(last)) == 0)
				rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		for (n = 0; rc == 0 && n < s->convert_batch; n++) {
			MDB_val nk = { DIGEST_KEY, k.mv_data };
			int same;

			if (k.mv_size != STORE_DIGEST_LEN || v.mv_size != 8) {
				rc = MDB_CORRUPTED;
				goto fail;
			}
			/* Ids of digests that share a prefix go in in id
			 * order, whatever the order of their digests. */
			same = (!first || n > 0) &&
			    memcmp(k.mv_data, last, DIGEST_KEY) == 0;
			if ((rc = mdb_put(txn, s->digest, &nk, &v,
			    same ? MDB_NODUPDATA : MDB_APPEND)) != 0)
				goto fail;
			memcpy(last, k.mv_data, sizeof(last));
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		total += n;
		first = 0;
		if (rc == MDB_NOTFOUND)
			more = 0;
		else if (rc != 0)
			goto fail;
		mdb_cursor_close(c);
		c = NULL;
		if (!more && (rc = mdb_drop(txn, old, 1)) != 0)
			goto fail;
done:
		if (!more &&
		    (rc = lm_meta_put_u64(txn, s->meta, "format", FORMAT)) != KI_OK) {
			mdb_txn_abort(txn);
			return rc;
		}
		if ((rc = mdb_txn_commit(txn)) != 0)
			return lm_map_rc(rc);
	}
	if (total > 0)
		lm_slog(s, STORE_LOG_INFO,
		    "store: %zu digests moved to the format-6 index", total);
	return KI_OK;
fail:
	if (c != NULL)
		mdb_cursor_close(c);
	mdb_txn_abort(txn);
	return lm_map_rc(rc);
}

/* ---- format 2 -> 3 ---- */

#define CONVERT_BATCH 20000

/* Rewrites a format-2 store's objects into the format-3 tables, in
 * batches of CONVERT_BATCH transactions' worth, then drops the old tables
 * and marks the store format 3, in one last transaction. The history of
 * events does not carry over (a watch from before the conversion gets
 * 410 Expired and lists again), nor does the old label index (rebuilt from
 * the records); tokens do. */
int
lm_convert_v2(store *s)
{
	static const char *const old_names[] = { "objects", "names", "digests",
		"natkeys", "refs", "events", "labels", "facets", "tokens" };
	store_txn t;
	MDB_dbi old, dbi;
	MDB_cursor *c = NULL;
	MDB_val k, v;
	uint8_t kb[8];
	uint64_t next = 0;
	int rc, done = 0;

	memset(&t, 0, sizeof(t));
	t.s = s;
	t.write = 1;
	/* Every object's postings are written as it is converted. */
	t.posted = ID_SEQ_MASK;
	t.posted_read = 1;
	/* Start from empty format-3 tables: a crash mid-way left some. */
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &t.txn)) != 0)
		return lm_map_rc(rc);
	if ((rc = mdb_drop(t.txn, s->obj, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->name, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->digest, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->natkey, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->ref, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->label, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->event, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->version, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->facet, 0)) != 0 ||
	    (rc = mdb_txn_commit(t.txn)) != 0)
		goto fail;
	t.txn = NULL;
	while (!done) {
		size_t n = 0;

		if ((rc = mdb_txn_begin(s->env, NULL, 0, &t.txn)) != 0 ||
		    (rc = mdb_dbi_open(t.txn, "objects", 0, &old)) != 0 ||
		    (rc = mdb_cursor_open(t.txn, old, &c)) != 0)
			goto fail;
		lm_put_be64(kb, next);
		k.mv_size = 8;
		k.mv_data = kb;
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		for (; rc == 0 && n < CONVERT_BATCH; n++) {
			store_obj o;
			uint8_t nb[1 + STORE_MAX_NAME], ib[8];
			MDB_val nk, iv = { 8, ib };

			if (k.mv_size != 8 ||
			    lm_rec_decode(v.mv_data, v.mv_size, &o) != KI_OK) {
				rc = KI_ESTORE;
				goto fail;
			}
			next = lm_get_be64(k.mv_data) + 1;
			o.seq = store_id(o.kind, lm_get_be64(k.mv_data));
			lm_put_be64(ib, o.seq);
			nk = lm_kind_key(nb, o.kind, o.name, o.name_len);
			if ((rc = mdb_put(t.txn, s->name, &nk, &iv, 0)) != 0)
				goto fail;
			if ((rc = lm_write_record(&t, &o)) != KI_OK ||
			    (rc = lm_index_object(&t, &o, 1)) != KI_OK)
				goto fail;
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		if (rc != 0 && rc != MDB_NOTFOUND)
			goto fail;
		done = rc == MDB_NOTFOUND;
		mdb_cursor_close(c);
		c = NULL;
		if (done) {
			/* Tokens move over; then the old tables go. */
			if (mdb_dbi_open(t.txn, "tokens", 0, &dbi) == 0) {
				if ((rc = mdb_cursor_open(t.txn, dbi, &c)) != 0)
					goto fail;
				rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
				while (rc == 0) {
					if ((rc = mdb_put(t.txn, s->token, &k, &v, 0)) != 0)
						goto fail;
					rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
				}
				mdb_cursor_close(c);
				c = NULL;
				if (rc != MDB_NOTFOUND)
					goto fail;
			}
			for (size_t i = 0; i < sizeof(old_names) / sizeof(*old_names);
			    i++) {
				if (mdb_dbi_open(t.txn, old_names[i], 0, &dbi) == 0 &&
				    (rc = mdb_drop(t.txn, dbi, 1)) != 0)
					goto fail;
			}
			if ((rc = lm_meta_put_u64(t.txn, s->meta, "format", FORMAT)) !=
			    KI_OK)
				goto fail;
		}
		if ((rc = mdb_txn_commit(t.txn)) != 0) {
			t.txn = NULL;
			goto fail;
		}
		t.txn = NULL;
	}
	return KI_OK;
fail:
	if (c != NULL)
		mdb_cursor_close(c);
	if (t.txn != NULL)
		mdb_txn_abort(t.txn);
	return rc < 0 ? rc : lm_map_rc(rc);
}
