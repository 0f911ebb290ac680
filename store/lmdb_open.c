/* store/lmdb_open.c — the LMDB backend: open (and the conversions of older
 * formats) and close, transactions, the redo log and checkpoints. */
#define _GNU_SOURCE /* memmem, pthread_rwlockattr_setkind_np, sync_file_range */
#include "store/lmdb_int.h"

#include <sys/random.h>

/* ---- open, convert, close ---- */

static int
open_tables(MDB_txn *txn, store *s)
{
	int rc;

	if ((rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &s->meta)) != 0 ||
	    (rc = mdb_dbi_open(txn, "obj", MDB_CREATE, &s->obj)) != 0 ||
	    (rc = mdb_dbi_open(txn, "aux", MDB_CREATE, &s->aux)) != 0 ||
	    (rc = mdb_dbi_open(txn, "name", MDB_CREATE, &s->name)) != 0 ||
	    (rc = mdb_dbi_open(txn, "digest8",
	         MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &s->digest)) != 0 ||
	    (rc = mdb_dbi_open(txn, "natkey", MDB_CREATE, &s->natkey)) != 0 ||
	    (rc = mdb_dbi_open(txn, "ref",
	         MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &s->ref)) != 0 ||
	    (rc = mdb_dbi_open(txn, "label",
	         MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &s->label)) != 0 ||
	    (rc = mdb_dbi_open(txn, "event", MDB_CREATE, &s->event)) != 0 ||
	    (rc = mdb_dbi_open(txn, "version", MDB_CREATE, &s->version)) != 0 ||
	    (rc = mdb_dbi_open(txn, "facet", MDB_CREATE, &s->facet)) != 0 ||
	    (rc = mdb_dbi_open(txn, "token", MDB_CREATE, &s->token)) != 0 ||
	    (rc = mdb_dbi_open(txn, "young0", MDB_CREATE, &s->young[0])) != 0 ||
	    (rc = mdb_dbi_open(txn, "young1", MDB_CREATE, &s->young[1])) != 0)
		return lm_map_rc(rc);
	return KI_OK;
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

/* ---- the redo log ---- */

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* LMDB's two meta pages as the file holds them now. */
static int
read_metas(store *s, wal_head *h)
{
	MDB_stat st;
	int fd;

	if (mdb_env_stat(s->env, &st) != 0 || mdb_env_get_fd(s->env, &fd) != 0 ||
	    2 * (size_t)st.ms_psize > sizeof(h->metas))
		return KI_ESTORE;
	h->meta_len = 2 * st.ms_psize;
	if (pread(fd, h->metas, h->meta_len, 0) != (ssize_t)h->meta_len)
		return KI_EIO;
	return KI_OK;
}

/* ---- checkpoints ----
 *
 * A checkpoint makes the last committed state C the one a crash goes back
 * to. Its first half runs under LMDB's writer lock (a write transaction
 * is open, so nothing commits meanwhile): a pin on C, a copy of the meta
 * pages as they are for C, and the log's appends switched to the other
 * file. The second half runs on the checkpoint thread, while commits go
 * on: sync the LMDB file (every page of C is then on disk), write the
 * header naming C into the new file, and only then move the pin to C. */

/* The first half; the caller holds the writer lock and no checkpoint is
 * in flight. */
static int
ckpt_begin(store *s, int clean)
{
	MDB_txn *pin;
	int rc;

	if ((rc = lm_map_rc(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &pin))) !=
	    KI_OK)
		return rc;
	if ((rc = read_metas(s, s->ck_head)) != KI_OK) {
		mdb_txn_abort(pin);
		return rc;
	}
	s->ck_head->seq = ++s->head_seq;
	s->ck_head->txnid = mdb_txn_id(pin);
	s->ck_head->clean = (uint32_t)clean;
	pthread_mutex_lock(&s->ck_mu);
	s->ck_pin = pin;
	s->ck_file = wal_switch(s->wal);
	s->ck_busy = 1;
	pthread_cond_broadcast(&s->ck_cv);
	pthread_mutex_unlock(&s->ck_mu);
	s->ckpt_ns = now_ns();
	__atomic_store_n(&s->log_bytes, 0, __ATOMIC_RELAXED);
	return KI_OK;
}

/* The second half (the checkpoint thread). */
static void
ckpt_finish(store *s)
{
	int rc = KI_OK;

	if (!s->nosync && (rc = mdb_env_sync(s->env, 1)) != 0)
		rc = lm_disk_rc(s, lm_map_rc(rc));
	if (rc == KI_OK)
		rc = wal_head_write(s->wal, s->ck_file, s->ck_head, s->nosync);
	pthread_mutex_lock(&s->ck_mu);
	if (rc == KI_OK) {
		/* The header is durable: the old checkpoint's pages may go. */
		if (s->pin != NULL)
			mdb_txn_abort(s->pin);
		s->pin = s->ck_pin;
		__atomic_add_fetch(&s->checkpoints, 1, __ATOMIC_RELAXED);
	} else {
		/* The log's next switch would overwrite records the last
		 * valid header still needs: refuse writes from now on. */
		mdb_txn_abort(s->ck_pin);
		s->ck_failed = rc == KI_ENOSPC ? KI_ENOSPC : KI_EIO;
		lm_slog(s, STORE_LOG_ERROR,
		    "store: a checkpoint failed (%s); writes are refused "
		    "until a restart", ki_strerror(rc));
	}
	s->ck_pin = NULL;
	s->ck_busy = 0;
	pthread_cond_broadcast(&s->ck_cv);
	pthread_mutex_unlock(&s->ck_mu);
}

/* Starts writing back the pages commits have written to the file since
 * the last call, without waiting for them. Left to the checkpoint's sync,
 * a checkpoint's pages (megabytes: every commit copies the pages it
 * changes) reach the device queue in one burst, and the log writes that
 * commits wait for queue behind it (docs/storage.md has the figures);
 * sent after each commit, they go out in
 * small groups while the next batch is being prepared, and the sync finds
 * little left to write. Durability does not depend on it. */
static void
write_ahead(store *s)
{
#ifdef SYNC_FILE_RANGE_WRITE
	int fd;

	if (mdb_env_get_fd(s->env, &fd) == 0)
		(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
	(void)s;
#endif
}

static void *
ckpt_loop(void *arg)
{
	store *s = arg;

	ki_thread_name("ki-checkpoint");
	pthread_mutex_lock(&s->ck_mu);
	for (;;) {
		while (!s->ck_busy && !s->ck_stop && !s->ck_ahead)
			pthread_cond_wait(&s->ck_cv, &s->ck_mu);
		if (s->ck_busy) {
			pthread_mutex_unlock(&s->ck_mu);
			ckpt_finish(s);
			pthread_mutex_lock(&s->ck_mu);
		} else if (s->ck_ahead) {
			s->ck_ahead = 0;
			pthread_mutex_unlock(&s->ck_mu);
			write_ahead(s);
			pthread_mutex_lock(&s->ck_mu);
		} else {
			break;
		}
	}
	pthread_mutex_unlock(&s->ck_mu);
	return NULL;
}

/* Waits until no checkpoint is in flight; KI_EIO if one has failed. */
static int
ckpt_wait(store *s)
{
	int failed;

	pthread_mutex_lock(&s->ck_mu);
	while (s->ck_busy)
		pthread_cond_wait(&s->ck_cv, &s->ck_mu);
	failed = s->ck_failed;
	pthread_mutex_unlock(&s->ck_mu);
	return failed;
}

/* A whole checkpoint, waited for; the caller holds the writer lock. */
static int
ckpt_sync(store *s, int clean)
{
	int rc;

	if ((rc = ckpt_wait(s)) != KI_OK || (rc = ckpt_begin(s, clean)) != KI_OK)
		return rc;
	return ckpt_wait(s);
}

/* Whether a checkpoint is in flight; KI_EIO once one has failed. */
static int
ckpt_state(store *s, int *busy)
{
	int failed;

	pthread_mutex_lock(&s->ck_mu);
	*busy = s->ck_busy;
	failed = s->ck_failed;
	pthread_mutex_unlock(&s->ck_mu);
	return failed;
}

/* At the start of a write transaction: starts a checkpoint when the log
 * has grown or aged enough and none is in flight; when the map is tight
 * (see maybe_grow), takes one and waits for it. */
static int
ckpt_maybe(store *s, int tight)
{
	uint64_t used;
	int busy, rc;

	if (!s->owner || s->replaying)
		return KI_OK;
	if ((rc = ckpt_state(s, &busy)) != KI_OK)
		return rc;
	used = wal_used(s->wal);
	if (tight && (used > 0 || busy))
		return ckpt_sync(s, 0);
	if (busy || !(used >= s->ckpt_bytes ||
	    (used > 0 && now_ns() - s->ckpt_ns >= s->ckpt_every_ns)))
		return KI_OK;
	return ckpt_begin(s, 0);
}

/* Applies one logged transaction (replay at open). */
static int
replay_one(void *arg, uint64_t txnid, const uint8_t *p, size_t len)
{
	store *s = arg;
	store_txn *t;
	int rc;

	(void)txnid;
	if ((rc = store_begin(s, 1, &t)) != KI_OK)
		return rc;
	while (rc == KI_OK && len > 0) {
		uint32_t n;
		int op;
		store_obj o;

		if (len < 5) {
			rc = KI_ESTORE;
			break;
		}
		op = p[0];
		memcpy(&n, p + 1, 4);
		if (n > len - 5) {
			rc = KI_ESTORE;
			break;
		}
		p += 5;
		len -= 5;
		switch (op) {
		case OP_PUT:
			if ((rc = lm_rec_decode(p, n, &o)) == KI_OK)
				rc = store_put(t, &o);
			break;
		case OP_DELETE:
			if ((rc = lm_rec_decode(p, n, &o)) == KI_OK)
				rc = store_delete(t, o.kind, o.name, o.name_len, &o);
			break;
		case OP_TOKEN_PUT:
			rc = n < STORE_DIGEST_LEN ? KI_ESTORE :
			    store_token_put(t, p, (const char *)p + STORE_DIGEST_LEN,
			    n - STORE_DIGEST_LEN);
			break;
		case OP_TOKEN_DELETE:
			rc = n != STORE_DIGEST_LEN ? KI_ESTORE :
			    store_token_delete(t, p);
			break;
		default:
			rc = KI_ESTORE;
		}
		p += n;
		len -= n;
	}
	if (rc != KI_OK) {
		store_abort(t);
		return rc;
	}
	if ((rc = store_commit(t)) == KI_OK)
		s->recovered++;
	return rc;
}

#define CONVERT_DIGESTS 200000

/* LMDB aborts the process when a page it reads is not what its tree says
 * (a damaged data file: a zeroed or overwritten page); that cannot be
 * turned into an error, but the operator is told what happened and what
 * to do before the abort, instead of only LMDB's assertion text. */
static void
on_lmdb_assert(MDB_env *env, const char *msg)
{
	const store *s = mdb_env_get_userctx(env);

	if (s != NULL)
		lm_slog(s, STORE_LOG_ERROR, "the store's data file %s/data.mdb "
		    "is damaged (LMDB: %s); the daemon stops: run "
		    "`kernelindexd --data-dir DIR fsck` and restore the store "
		    "from a backup", s->dir, msg);
}

static int
env_open(store *s, const char *dir, uint64_t map_size)
{
	int rc;

	if ((rc = mdb_env_create(&s->env)) != 0)
		return rc;
	(void)mdb_env_set_userctx(s->env, s);
	(void)mdb_env_set_assert(s->env, on_lmdb_assert);
	if ((rc = mdb_env_set_maxdbs(s->env, 24)) != 0 ||
	    (rc = mdb_env_set_mapsize(s->env, (size_t)map_size)) != 0 ||
	    (rc = mdb_env_set_maxreaders(s->env, 512)) != 0 ||
	    (rc = mdb_env_open(s->env, dir, MDB_NOTLS | MDB_NORDAHEAD |
	    (s->nosync ? MDB_NOSYNC : 0), 0640)) != 0) {
		mdb_env_close(s->env);
		s->env = NULL;
	}
	return rc;
}

/* Puts the checkpoint's meta pages back into the LMDB file: whatever a
 * crash left of later commits is then unreferenced (the pin kept their
 * pages from reusing the checkpoint's), and the log brings them back. */
static int
restore_metas(const char *dir, const wal_head *h)
{
	char path[4200];
	int fd, rc = KI_OK;

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return KI_EIO;
	if (pwrite(fd, h->metas, h->meta_len, 0) != (ssize_t)h->meta_len ||
	    fdatasync(fd) != 0)
		rc = KI_EIO;
	close(fd);
	return rc;
}

/* ---- the store's identity ----
 *
 * An 8-byte tag and 16 random bytes at the end of LMDB's first meta page,
 * which LMDB neither reads nor writes (a commit writes the meta struct at
 * the page's start; a new file and a compacted copy have zeros there). A
 * checkpoint's header copies the meta pages whole, so it names the file it
 * was taken of, and the log is applied to that file only: a redo log
 * beside another store's data file (files copied between directories)
 * would otherwise put that store's meta pages into this file and apply its
 * transactions, serving a mixture of the two and losing acknowledged
 * writes, with nothing to say so. */
#define ID_TAG "kistore1"
#define ID_LEN 24

static int
id_valid(const uint8_t *id)
{
	return memcmp(id, ID_TAG, 8) == 0;
}

/* The identity as the file holds it now, and the page size. */
static int
id_read(MDB_env *env, uint8_t *id, size_t *psize)
{
	MDB_stat st;
	int fd;

	if (mdb_env_stat(env, &st) != 0 || mdb_env_get_fd(env, &fd) != 0 ||
	    st.ms_psize < 512)
		return KI_ESTORE;
	*psize = st.ms_psize;
	if (pread(fd, id, ID_LEN, (off_t)(st.ms_psize - ID_LEN)) != ID_LEN)
		return KI_EIO;
	return KI_OK;
}

/* Gives a file without an identity one (the owner, before its first
 * checkpoint), synced. */
static int
id_stamp(MDB_env *env)
{
	uint8_t id[ID_LEN];
	size_t psize;
	int fd, rc;

	if ((rc = id_read(env, id, &psize)) != KI_OK || id_valid(id))
		return rc;
	memcpy(id, ID_TAG, 8);
	if (getrandom(id + 8, ID_LEN - 8, 0) != ID_LEN - 8 ||
	    mdb_env_get_fd(env, &fd) != 0 ||
	    pwrite(fd, id, ID_LEN, (off_t)(psize - ID_LEN)) != ID_LEN ||
	    fdatasync(fd) != 0)
		return KI_EIO;
	return KI_OK;
}

static void
id_hex(const uint8_t *id, char out[33])
{
	int i;

	if (!id_valid(id)) {
		snprintf(out, 33, "none");
		return;
	}
	for (i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", id[8 + i]);
}

/* KI_ECORRUPT, logged, when the log's checkpoint names another file than
 * the one in dir: another store's, or one without an identity that is not
 * older than the checkpoint (older, it is a backup put back, whose log is
 * ignored: open_recovering). A log without an identity (written before
 * identities were) is taken as the file's. */
static int
id_check(store *s, const char *dir, const wal_head *h, int older)
{
	uint8_t fid[ID_LEN];
	const uint8_t *hid;
	char a[33], b[33];
	size_t psize;
	int rc;

	if ((rc = id_read(s->env, fid, &psize)) != KI_OK)
		return rc;
	if (h->meta_len < psize)
		return KI_OK;
	hid = h->metas + psize - ID_LEN;
	if (!id_valid(hid) || (id_valid(fid) ?
	    memcmp(hid, fid, ID_LEN) == 0 : older))
		return KI_OK;
	id_hex(hid, a);
	id_hex(fid, b);
	lm_slog(s, STORE_LOG_ERROR,
	    "store: the redo log in %s belongs to another store (its "
	    "checkpoint names store %s, data.mdb is store %s): nothing is "
	    "applied and the store is not opened; move redo.0, redo.1 and "
	    "redo.side away to open data.mdb as it is", dir, a, b);
	return KI_ECORRUPT;
}

static int
log_last(void *arg, uint64_t txnid, const uint8_t *data, size_t len)
{
	uint64_t *last = arg;

	(void)data;
	(void)len;
	if (txnid > *last)
		*last = txnid;
	return KI_OK;
}

/* KI_ECORRUPT, logged, when the file holds commits that the log does not:
 * every commit after the checkpoint is logged before LMDB commits it (one
 * too large for the log excepted: it is followed by a checkpoint, and a
 * crash in between leaves it unlogged and unanswered), so a file whose
 * last transaction lies past the log's last record + 1 has a log cut
 * short or with records removed, and applying it would drop acknowledged
 * writes. A damaged log is left to the replay to report. */
static int
log_covers(store *s, const char *dir, const wal_head *h, int file,
	uint64_t file_last)
{
	wal_damage bad;
	uint64_t last = h->txnid;

	if (wal_each(s->wal, file, h->txnid, h->first, log_last, &last,
	    &bad) != KI_OK || file_last <= last + 1)
		return KI_OK;
	lm_slog(s, STORE_LOG_ERROR,
	    "store: the redo log of %s ends at transaction %llu, but "
	    "data.mdb holds transactions up to %llu: records are missing "
	    "from the log (cut short or removed); nothing is applied and the "
	    "store is not opened (acknowledged writes would be lost). After "
	    "a process crash (not a power failure) data.mdb is whole: move "
	    "redo.0, redo.1 and redo.side away to open it as it is", dir,
	    (unsigned long long)last, (unsigned long long)file_last);
	return KI_ECORRUPT;
}

/* Opens the LMDB file, recovering through the log when the last owner did
 * not close it: the file goes back to the checkpoint, then the logged
 * transactions are applied again. *replay gets the checkpoint's txnid to
 * replay from, or 0 when there is nothing to replay. */
static int
open_recovering(store *s, const char *dir, uint64_t map_size, wal_head *h,
	int *replay, int *file)
{
	MDB_envinfo info;
	int rc, older;

	*replay = 0;
	if ((rc = env_open(s, dir, map_size)) != 0)
		return rc;
	if (!s->owner)
		return 0;
	rc = wal_head_read(s->wal, h, file);
	if (rc == KI_OK)
		s->head_seq = h->seq;
	if (rc == KI_ENOTFOUND || (rc == KI_OK && h->clean))
		return id_stamp(s->env);
	if (rc != KI_OK)
		return rc;
	if ((rc = mdb_env_info(s->env, &info)) != 0)
		return rc;
	older = (uint64_t)info.me_last_txnid < h->txnid;
	if ((rc = id_check(s, dir, h, older)) != KI_OK)
		return rc;
	if (!older && (rc = log_covers(s, dir, h, *file,
	    (uint64_t)info.me_last_txnid)) != KI_OK)
		return rc;
	if (older) {
		/* The file is older than the log's checkpoint: it was put
		 * there from a backup. The log belongs to the file it
		 * replaced. */
		lm_slog(s, STORE_LOG_WARN,
		    "store: %s/data.mdb is older than its redo log "
		    "(transaction %llu < %llu): the log is not applied", dir,
		    (unsigned long long)info.me_last_txnid,
		    (unsigned long long)h->txnid);
		return id_stamp(s->env);
	}
	mdb_env_close(s->env);
	s->env = NULL;
	if ((rc = restore_metas(dir, h)) != KI_OK ||
	    (rc = env_open(s, dir, map_size)) != 0)
		return rc;
	*replay = 1;
	return id_stamp(s->env);
}

/* Stops the checkpoint thread (after the checkpoint in flight) and frees
 * what store_open set up, as far as it got. */
static void
store_free(store *s)
{
	if (s->ck_started) {
		ckpt_wait(s);
		pthread_mutex_lock(&s->ck_mu);
		s->ck_stop = 1;
		pthread_cond_broadcast(&s->ck_cv);
		pthread_mutex_unlock(&s->ck_mu);
		pthread_join(s->ck_thread, NULL);
	}
	if (s->pin != NULL)
		mdb_txn_abort(s->pin);
	if (s->env != NULL)
		mdb_env_close(s->env);
	wal_close(s->wal);
	free(s->ck_head);
	free(s->dir);
	pthread_mutex_destroy(&s->ck_mu);
	pthread_cond_destroy(&s->ck_cv);
	pthread_rwlock_destroy(&s->resize);
	pthread_rwlock_destroy(&s->dm.lk);
	free(s->dm.a);
	free(s->dm.b);
	free(s);
}

int
lm_open(store **out, const char *dir, const store_options *opt,
	const store_lmdb_options *lo, const store_ops *ops)
{
	static const store_lmdb_options dflt;
	uint64_t map_size, map_max;
	store *s;
	MDB_txn *txn = NULL;
	MDB_dbi old;
	wal_head *h = NULL;
	uint64_t format = 0, rv = 0;
	int rc, dead, convert = 0, replay = 0, file = 0;

	*out = NULL;
	if (mkdir(dir, 0750) != 0 && errno != EEXIST)
		return KI_EIO;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return KI_ENOMEM;
	if ((s->dir = strdup(dir)) == NULL) {
		free(s);
		return KI_ENOMEM;
	}
	s->ops = ops;
	s->log = opt->log;
	s->log_arg = opt->log_arg;
	s->history = opt->history ? opt->history : 100000;
	if (lo == NULL)
		lo = &dflt;
	map_size = lo->map_size ? lo->map_size : MAP_DEFAULT;
	map_max = lo->map_max ? lo->map_max : MAP_MAX_DEFAULT;
	s->convert_batch = lo->convert_batch ? lo->convert_batch :
	    CONVERT_DIGESTS;
	s->nosync = opt->nosync;
	s->facets = opt->facets;
	s->ckpt_bytes = lo->checkpoint_bytes ? lo->checkpoint_bytes :
	    CKPT_BYTES;
	s->ckpt_every_ns = lo->checkpoint_ms ?
	    (int64_t)lo->checkpoint_ms * 1000000 : CKPT_NS;
	s->map_max = map_max > map_size ? map_max : map_size;
	s->young_max = lo->digest_young ? lo->digest_young : YOUNG_MAX;
	s->yread_min = lo->young_read_min ? lo->young_read_min : YREAD_MIN;
	pthread_rwlock_init(&s->dm.lk, NULL);
	{
		pthread_rwlockattr_t a;

		pthread_rwlockattr_init(&a);
		pthread_rwlockattr_setkind_np(&a,
		    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&s->resize, &a);
		pthread_rwlockattr_destroy(&a);
	}
	pthread_mutex_init(&s->ck_mu, NULL);
	pthread_cond_init(&s->ck_cv, NULL);
	if ((h = malloc(sizeof(*h))) == NULL ||
	    (s->ck_head = malloc(sizeof(*s->ck_head))) == NULL) {
		rc = KI_ENOMEM;
		goto fail;
	}
	if ((rc = wal_open(&s->wal, dir, &s->owner)) != KI_OK)
		goto fail;
	if (!s->owner && !opt->shared) {
		rc = KI_EBUSY;
		goto fail;
	}
	if ((rc = open_recovering(s, dir, map_size, h, &replay, &file)) !=
	    0)
		goto fail;
	mdb_reader_check(s->env, &dead);
	/* From here until the first checkpoint, the recovered state is
	 * what must not be overwritten. */
	if (s->owner &&
	    (rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->pin)) != 0)
		goto fail;
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
		goto fail;
	if ((rc = open_tables(txn, s)) != KI_OK ||
	    (rc = lm_meta_get_u64(txn, s->meta, "format", &format)) != KI_OK ||
	    (rc = lm_meta_get_u64(txn, s->meta, "rv", &rv)) != KI_OK)
		goto fail;
	if (format > FORMAT) {
		rc = KI_ESTORE;   /* written by a newer kernelindexd */
		goto fail;
	}
	if (format == 0) {
		/* A format-2 store has its "objects" table; a new one has none. */
		convert = mdb_dbi_open(txn, "objects", 0, &old) == 0;
		if (!convert &&
		    (rc = lm_meta_put_u64(txn, s->meta, "format", FORMAT)) != KI_OK)
			goto fail;
	} else if (format == 6) {
		/* Its young digest tables were just made, empty. */
		if ((rc = lm_meta_put_u64(txn, s->meta, "format", FORMAT)) != KI_OK)
			goto fail;
	} else if (format == 3 || format == 4) {
		/* 5 until its digests are converted too. */
		if ((rc = lm_post_old_tail(s, txn)) != KI_OK ||
		    (rc = lm_meta_put_u64(txn, s->meta, "format", 5)) != KI_OK)
			goto fail;
	}
	if ((rc = mdb_txn_commit(txn)) != 0) {
		txn = NULL;
		goto fail;
	}
	txn = NULL;
	if (s->owner && (rc = lm_dm_load(s)) != KI_OK)
		goto fail;
	if (convert && (rc = lm_convert_v2(s)) != KI_OK)
		goto fail;
	if (format >= 3 && format <= 5 && (rc = lm_convert_digests(s)) != KI_OK)
		goto fail;
	if (s->owner) {
		/* Commits are made durable by the log from now on. */
		if ((rc = mdb_env_set_flags(s->env, MDB_NOSYNC, 1)) != 0)
			goto fail;
		if (replay) {
			wal_damage bad;

			s->replaying = 1;
			rc = wal_each(s->wal, file, h->txnid, h->first, replay_one,
			    s, &bad);
			s->replaying = 0;
			if (rc == KI_ECORRUPT && bad.file >= 0) {
				lm_slog(s, STORE_LOG_ERROR,
				    "store: the redo log of %s is damaged: "
				    "the record at byte %llu of %s is missing or "
				    "fails its checksum, and valid records follow "
				    "it; nothing is applied and the store is not "
				    "opened (transactions after it would be lost)",
				    dir, (unsigned long long)bad.off,
				    bad.file == 2 ? "redo.side" : bad.file ?
				    "redo.1" : "redo.0");
				goto fail;
			}
			if (rc != KI_OK) {
				lm_slog(s, STORE_LOG_ERROR,
				    "store: the redo log of %s cannot be "
				    "applied: %s", dir, ki_strerror(rc));
				goto fail;
			}
			lm_slog(s, STORE_LOG_INFO,
			    "store: %llu transactions applied from the redo "
			    "log after an unclean stop",
			    (unsigned long long)s->recovered);
		}
		if (pthread_create(&s->ck_thread, NULL, ckpt_loop, s) != 0) {
			rc = KI_EIO;
			goto fail;
		}
		s->ck_started = 1;
		/* A checkpoint of the recovered state before any write; then
		 * the log and redo.side start over behind it, empty. */
		if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
			goto fail;
		rc = ckpt_sync(s, 0);
		mdb_txn_abort(txn);
		txn = NULL;
		if (rc != KI_OK || (rc = wal_trim(s->wal)) != KI_OK)
			goto fail;
	}
	free(h);
	*out = s;
	return KI_OK;
fail:
	free(h);
	if (txn != NULL)
		mdb_txn_abort(txn);
	store_free(s);
	if (rc == ENOENT || rc == EACCES)
		return KI_EIO;
	return rc < 0 ? rc : lm_map_rc(rc);
}

int
lm_idle(store *s)
{
	MDB_txn *txn;
	int rc;

	if (!s->owner || __atomic_load_n(&s->log_bytes, __ATOMIC_RELAXED) == 0)
		return KI_OK;
	pthread_rwlock_rdlock(&s->resize);
	if ((rc = lm_map_rc(mdb_txn_begin(s->env, NULL, 0, &txn))) == KI_OK) {
		int busy;

		if ((rc = ckpt_state(s, &busy)) == KI_OK && !busy &&
		    wal_used(s->wal) > 0)
			rc = ckpt_begin(s, 0);
		mdb_txn_abort(txn);
	}
	pthread_rwlock_unlock(&s->resize);
	return rc;
}

static void
close_store(store *s, int crash)
{
	MDB_txn *txn;

	if (s == NULL)
		return;
	if (s->owner && !crash && mdb_txn_begin(s->env, NULL, 0, &txn) == 0) {
		/* A clean close: the next open needs no recovery. */
		if (ckpt_sync(s, 1) != KI_OK)
			lm_slog(s, STORE_LOG_WARN,
			    "store: no checkpoint at close; the next open "
			    "applies the redo log");
		mdb_txn_abort(txn);
	}
	store_free(s);
}

void
store_lmdb_crash(store *s)
{
	close_store(s, 1);
}

void
lm_close(store *s)
{
	close_store(s, 0);
}

/* Doubles the map (up to map_max) when it is 3/4 used. Called with no
 * transaction held by this thread. Returns 1 when the map is 3/4 used and
 * may not grow: then pages freed since the checkpoint (which the pin keeps
 * from reuse) are worth having back before a write. */
static int
maybe_grow(store *s)
{
	MDB_envinfo info;
	MDB_stat st;
	uint64_t used, size, want;

	/* The map may be replaced under a reader of it: look under the lock. */
	pthread_rwlock_rdlock(&s->resize);
	if (mdb_env_info(s->env, &info) != 0 || mdb_env_stat(s->env, &st) != 0) {
		pthread_rwlock_unlock(&s->resize);
		return 0;
	}
	pthread_rwlock_unlock(&s->resize);
	used = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
	size = info.me_mapsize;
	if (used < size / 4 * 3)
		return 0;
	if (size >= s->map_max)
		return 1;
	pthread_rwlock_wrlock(&s->resize);
	if (mdb_env_info(s->env, &info) == 0 && info.me_mapsize == size) {
		want = size * 2 < s->map_max ? size * 2 : s->map_max;
		mdb_env_set_mapsize(s->env, (size_t)want);
	}
	pthread_rwlock_unlock(&s->resize);
	return 0;
}

int
lm_begin(store *s, int write, store_txn **out)
{
	store_txn *t;
	int rc, tight = 0;

	*out = NULL;
	if (write)
		tight = maybe_grow(s);
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
		return lm_map_rc(rc);
	}
	if ((rc = lm_meta_get_u64(t->txn, s->meta, "rv", &t->rv)) != KI_OK ||
	    (write && (rc = ckpt_maybe(s, tight)) != KI_OK)) {
		mdb_txn_abort(t->txn);
		pthread_rwlock_unlock(&s->resize);
		free(t);
		return rc;
	}
	ki_buf_init(&t->log);
	*out = t;
	return KI_OK;
}

int
lm_begin_child(store_txn *parent, store_txn **out)
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
	t->seq = parent->seq;
	t->seq_read = parent->seq_read;
	t->posted = parent->posted;
	t->posted_read = parent->posted_read;
	t->changes = parent->changes;
	t->changes_read = parent->changes_read;
	ki_buf_init(&t->log);
	rc = mdb_txn_begin(parent->s->env, parent->txn, 0, &t->txn);
	if (rc != 0) {
		free(t);
		return lm_map_rc(rc);
	}
	*out = t;
	return KI_OK;
}

/* Commits a top-level write transaction whose operations are in t->log,
 * durably. As the owner of the log: the record is appended and synced
 * first, then LMDB commits without syncing (its pages reach the disk at
 * the next checkpoint); a record whose commit fails is retracted, so the
 * log never holds a transaction the store refused. A transaction too big
 * for the log commits and waits for a checkpoint instead. A process that
 * does not own the log appends to redo.side and commits synced. */
static int
commit_logged(store_txn *t)
{
	store *s = t->s;
	uint64_t txnid = mdb_txn_id(t->txn);
	int rc;

	if (!s->owner) {
		if ((rc = wal_side_append(s->wal, txnid, t->log.data,
		    t->log.len)) != KI_OK) {
			mdb_txn_abort(t->txn);
			return rc;
		}
		if ((rc = lm_map_rc(mdb_txn_commit(t->txn))) != KI_OK &&
		    wal_side_retract(s->wal) != KI_OK) {
			lm_slog(s, STORE_LOG_ERROR,
			    "store: a refused commit stays in the redo log; "
			    "stopping");
			abort();
		}
		return rc;
	}
	if (t->log.len > WAL_MAX) {
		if ((rc = lm_map_rc(mdb_txn_commit(t->txn))) != KI_OK)
			return rc;
		if ((rc = lm_map_rc(mdb_txn_begin(s->env, NULL, 0, &t->txn))) ==
		    KI_OK) {
			rc = ckpt_sync(s, 0);
			mdb_txn_abort(t->txn);
		}
		return rc;
	}
	if (wal_used(s->wal) + t->log.len > WAL_MAX &&
	    ((rc = ckpt_wait(s)) != KI_OK || (rc = ckpt_begin(s, 0)) != KI_OK)) {
		mdb_txn_abort(t->txn);
		return rc;
	}
	if ((rc = wal_append(s->wal, txnid, t->log.data, t->log.len,
	    s->nosync)) != KI_OK) {
		mdb_txn_abort(t->txn);
		return lm_disk_rc(s, rc);
	}
	if ((rc = lm_disk_rc(s, lm_map_rc(mdb_txn_commit(t->txn)))) != KI_OK &&
	    wal_retract(s->wal, s->nosync) != KI_OK) {
		/* Neither committed nor retracted: a restart would apply it. */
		lm_slog(s, STORE_LOG_ERROR,
		    "store: a refused commit stays in the redo log; "
		    "stopping");
		abort();
	}
	__atomic_store_n(&s->log_bytes, wal_used(s->wal), __ATOMIC_RELAXED);
	if (rc == KI_OK && !s->nosync && s->ck_started) {
		pthread_mutex_lock(&s->ck_mu);
		s->ck_ahead = 1;
		pthread_cond_broadcast(&s->ck_cv);
		pthread_mutex_unlock(&s->ck_mu);
	}
	return rc;
}


int
lm_commit(store_txn *t)
{
	uint64_t txnid;
	int rc = KI_OK;

	if (t->parent != NULL) {
		store_txn *pt = t->parent;

		rc = lm_map_rc(mdb_txn_commit(t->txn));
		if (rc == KI_OK) {
			pt->rv = t->rv;
			pt->dirty |= t->dirty;
			pt->seq = t->seq;
			pt->seq_read = t->seq_read;
			pt->seq_moved |= t->seq_moved;
			pt->posted = t->posted;
			pt->posted_read = t->posted_read;
			pt->posted_moved |= t->posted_moved;
			pt->changes = t->changes;
			pt->changes_read = t->changes_read;
			pt->changes_moved |= t->changes_moved;
			pt->dadded += t->dadded;
			/* On failure the parent's log is marked, and its
			 * commit refuses (its changes would be unlogged);
			 * likewise a facet change that did not join. */
			if (t->log.len > 0 &&
			    ki_buf_append(&pt->log, t->log.data,
			    t->log.len) != KI_OK)
				rc = KI_ENOMEM;
			for (size_t i = 0; i < t->nfd; i++)
				if (lm_facet_add(pt, t->fkeys.data + t->fd[i].off,
				    t->fd[i].len, t->fd[i].delta) != KI_OK)
					pt->log.oom = 1;
		}
		lm_txn_free(t);
		return rc;
	}
	if (t->write && t->seq_moved)
		rc = lm_tail_maybe_post(t);
	if (rc == KI_OK && t->write)
		rc = lm_facets_apply(t);
	if (rc == KI_OK && t->write && t->seq_moved)
		rc = lm_meta_put_u64(t->txn, t->s->meta, "seq", t->seq);
	if (rc == KI_OK && t->write && t->posted_moved)
		rc = lm_meta_put_u64(t->txn, t->s->meta, "posted", t->posted);
	if (rc == KI_OK && t->write && t->changes_moved)
		rc = lm_meta_put_u64(t->txn, t->s->meta, "changes", t->changes);
	if (rc == KI_OK && t->write && t->dadded > 0 && t->s->dm.on)
		rc = lm_young_step(t);
	if (rc == KI_OK && t->write && t->dirty)
		rc = lm_meta_put_u64(t->txn, t->s->meta, "rv", t->rv);
	if (rc == KI_OK && t->log.oom)
		rc = KI_ENOMEM;   /* an operation is missing from the log */
	txnid = t->write && t->txn != NULL ? mdb_txn_id(t->txn) : 0;
	if (rc != KI_OK) {
		mdb_txn_abort(t->txn);
	} else if (t->write && !t->s->replaying &&
	    t->log.len > 0) {
		rc = commit_logged(t);
	} else {
		/* Nothing logged (a read, an empty write, the open's own
		 * commits): without MDB_NOSYNC, LMDB's commit is itself
		 * durable. */
		rc = lm_map_rc(mdb_txn_commit(t->txn));
	}
	if (rc == KI_OK && (t->dswap || t->ddone))
		lm_young_after(t->s, t->dswap, t->ddone, txnid);
	pthread_rwlock_unlock(&t->s->resize);
	lm_txn_free(t);
	return rc;
}

void
lm_abort(store_txn *t)
{
	if (t == NULL)
		return;
	mdb_txn_abort(t->txn);
	if (t->parent == NULL)
		pthread_rwlock_unlock(&t->s->resize);
	lm_txn_free(t);
}

uint64_t
lm_rv(store_txn *t)
{
	return t->rv;
}

uint64_t
lm_writes(store_txn *t)
{
	return t->writes;
}

uint64_t
lm_next_rv(store_txn *t)
{
	return t->rv + 1;
}
