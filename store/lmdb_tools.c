/* store/lmdb_tools.c — the LMDB backend: statistics, backup and
 * verification. */
#define _GNU_SOURCE /* memmem, pthread_rwlockattr_setkind_np, sync_file_range */
#include "store/lmdb_int.h"

/* ---- statistics, backup ---- */

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
