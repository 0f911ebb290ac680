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

/* ---- the pages ----
 *
 * LMDB asserts, aborting the process, when a cursor steps onto a page that
 * is not what its parent names (a zeroed page, say), so a walk of the
 * objects through cursors cannot report such damage. fsck first walks
 * every B-tree of its snapshot itself, reading the pages from the file:
 * each must carry its own number, be a branch or a leaf with its nodes
 * inside it, and each overflow page a leaf names must be one. The layout
 * is LMDB 0.9's (mdb.c): a 16-byte page header (number, pad, flags,
 * lower, upper), then 2-byte node offsets; a node is 8 bytes (data size
 * or child page in three 16-bit parts, flags, key size), its key, its
 * data; a table's record (MDB_db) is 48 bytes, its root at byte 40; the
 * meta (after the page header) holds the free and main tables' records
 * at bytes 24 and 72, the last page at 120, the transaction at 128. */

#define PW_BRANCH 0x01
#define PW_LEAF 0x02
#define PW_OVERFLOW 0x04
#define PW_LEAF2 0x20
#define PW_BIG 0x01      /* node: the data is on overflow pages */
#define PW_SUB 0x02      /* node: the data is a table's record */

typedef struct pwalk {
	int fd;
	size_t psize;
	uint64_t npages;     /* pages of the snapshot */
	uint64_t seen;
	uint64_t bad;        /* the first damaged page found */
} pwalk;

static uint16_t
pw16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static uint64_t
pw64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Reads page pgno into buf: 0 when it is there and carries its number. */
static int
pw_read(pwalk *w, uint64_t pgno, uint8_t *buf)
{
	if (pgno < 2 || pgno >= w->npages ||
	    pread(w->fd, buf, w->psize, (off_t)(pgno * w->psize)) !=
	    (ssize_t)w->psize)
		return -1;
	return pw64(buf) == pgno ? 0 : -1;
}

static int pw_tree(pwalk *w, uint64_t root, int depth);

/* A leaf node's data: its overflow page, or the tree of its table. */
static int
pw_data(pwalk *w, const uint8_t *pg, const uint8_t *node, int depth)
{
	uint16_t flags = pw16(node + 4), ksize = pw16(node + 6);
	uint32_t dsize = pw16(node) | (uint32_t)pw16(node + 2) << 16;
	const uint8_t *data = node + 8 + ksize;
	uint8_t *ov = NULL;
	int rc = -1;

	if (flags & PW_BIG) {
		if (data + 8 > pg + w->psize || (ov = malloc(w->psize)) == NULL)
			goto out;
		if (pw_read(w, pw64(data), ov) != 0 ||
		    !(pw16(ov + 10) & PW_OVERFLOW))
			w->bad = pw64(data);
		else
			rc = 0;
	} else if (data + dsize > pg + w->psize ||
	    ((flags & PW_SUB) && dsize < 48)) {
		goto out;
	} else if ((flags & PW_SUB) && pw64(data + 40) != UINT64_MAX) {
		rc = pw_tree(w, pw64(data + 40), depth + 1);
	} else {
		rc = 0;   /* inline data, or an inline page of duplicates */
	}
out:
	free(ov);
	return rc;
}

static int
pw_tree(pwalk *w, uint64_t root, int depth)
{
	uint8_t *pg = malloc(w->psize);
	uint16_t flags, lower, upper;
	int rc = -1;

	if (pg == NULL || depth > 64 || ++w->seen > w->npages ||
	    pw_read(w, root, pg) != 0)
		goto out;
	flags = pw16(pg + 10);
	lower = pw16(pg + 12);
	upper = pw16(pg + 14);
	if (lower < 16 || lower > upper || upper > w->psize ||
	    (flags & (PW_BRANCH | PW_LEAF)) == 0 ||
	    (flags & (PW_BRANCH | PW_LEAF)) == (PW_BRANCH | PW_LEAF))
		goto out;
	rc = 0;
	if (flags & PW_LEAF2)
		goto out;
	for (unsigned i = 0; rc == 0 && i < (unsigned)(lower - 16) / 2; i++) {
		uint16_t off = pw16(pg + 16 + 2 * i);
		const uint8_t *node = pg + off;

		if (off < upper || (size_t)off + 8 > w->psize) {
			rc = -1;
			break;
		}
		if (flags & PW_BRANCH)
			rc = pw_tree(w, pw16(node) | (uint64_t)pw16(node + 2) << 16 |
			    (uint64_t)pw16(node + 4) << 32, depth + 1);
		else
			rc = pw_data(w, pg, node, depth);
	}
out:
	/* A page below that was found damaged first is the one named. */
	if (rc != 0 && w->bad == 0)
		w->bad = root;
	free(pg);
	return rc;
}

/* Walks the free and main tables (and through the main one every named
 * table) of the newest snapshot, held by a read transaction of its own
 * while it walks (a daemon may be writing): KI_OK, or KI_ECORRUPT with the
 * first damaged page in *bad. The snapshot's roots are in the meta page
 * carrying its transaction; while commits overwrite both meta pages
 * between the transaction's start and their reading, it tries again
 * (and, after 1,000 tries, walks nothing). */
static int
pw_walk(store *s, uint64_t *bad)
{
	MDB_stat st;
	MDB_txn *rt = NULL;
	uint8_t *meta[2] = { NULL, NULL };
	const uint8_t *m = NULL;
	pwalk w;
	int rc = KI_ENOMEM;

	memset(&w, 0, sizeof(w));
	*bad = 0;
	if (mdb_env_stat(s->env, &st) != 0 || mdb_env_get_fd(s->env, &w.fd) != 0)
		return KI_ESTORE;
	w.psize = st.ms_psize;
	if ((meta[0] = malloc(w.psize)) == NULL ||
	    (meta[1] = malloc(w.psize)) == NULL)
		goto out;
	for (int tries = 0; m == NULL && tries < 1000; tries++) {
		if (rt != NULL)
			mdb_txn_abort(rt);
		if ((rc = lm_map_rc(mdb_txn_begin(s->env, NULL, MDB_RDONLY,
		    &rt))) != KI_OK) {
			rt = NULL;
			goto out;
		}
		rc = KI_EIO;
		if (pread(w.fd, meta[0], w.psize, 0) != (ssize_t)w.psize ||
		    pread(w.fd, meta[1], w.psize, (off_t)w.psize) !=
		    (ssize_t)w.psize)
			goto out;
		for (int i = 0; i < 2; i++)
			if (pw64(meta[i] + 16 + 128) == mdb_txn_id(rt))
				m = meta[i];
	}
	rc = KI_OK;
	if (m == NULL)
		goto out;
	w.npages = pw64(m + 16 + 120) + 1;
	for (int db = 0; db < 2 && rc == KI_OK; db++) {
		uint64_t root = pw64(m + 16 + 24 + 48 * db + 40);

		if (root != UINT64_MAX && pw_tree(&w, root, 0) != 0)
			rc = KI_ECORRUPT;
	}
	*bad = w.bad;
out:
	if (rt != NULL)
		mdb_txn_abort(rt);
	free(meta[0]);
	free(meta[1]);
	return rc;
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
	uint64_t bad;
	int rc, mrc;

	memset(out, 0, sizeof(*out));
	if (repair && !s->owner)
		return KI_EBUSY;
	if ((rc = store_begin(s, repair, &v.t)) != KI_OK)
		return rc;
	if ((rc = pw_walk(s, &bad)) == KI_ECORRUPT) {
		/* A cursor reaching that page would abort the process. */
		lm_slog(s, STORE_LOG_ERROR, "store: page %llu of %s/data.mdb "
		    "is damaged (its header is not that of the page its "
		    "parent names); the objects are not walked",
		    (unsigned long long)bad, s->dir);
		vproblem(&v, 0, "a page of the data file is damaged (the log "
		    "names it); the objects were not walked");
		rc = KI_OK;
		goto out;
	}
	if (rc != KI_OK)
		goto out;
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
