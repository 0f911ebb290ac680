/* store/lmdb_int.h — the LMDB backend's internals, shared by its files,
 * each calling only the files before it: lmdb_rec.c (records, their
 * checksum, the redo log's operations, helpers), lmdb_young.c (reads, the
 * digest index), lmdb.c (writes, lists, events, tokens), lmdb_open.c
 * (open, format conversions, close, transactions, the redo log,
 * checkpoints) and lmdb_tools.c (statistics, backup, verification).
 * Nothing outside store/ includes it.
 *
 * Layout (format 7; named databases):
 *   meta     "rv" -> u64 store-wide resourceVersion, "seq" -> u64 last seq,
 *            "changes" -> u64 objects replaced or deleted (store_changes),
 *            "posted" -> u64 the last seq whose ref and label postings and
 *            facet counts are written (see "the tail" below; absent: all
 *            are),
 *            "dgen" -> u64 young digest generations begun, "dlast" ->
 *            the last young digest merged (see young0 below),
 *            "format" -> u64 7
 *   obj      id (u64 big-endian) -> record. An id is the kind in its top
 *            byte and a store-wide sequence below, so one kind's objects
 *            are one ascending key range: a list is a range read, and a
 *            new object lands at the end of its kind's range.
 *   name     kind byte + name -> id
 *   digest8  a digest's first 8 bytes -> ids (DUPSORT|DUPFIXED): per
 *            digest, the first object with that content; a lookup takes
 *            the id whose record holds the whole digest (two digests
 *            sharing 8 bytes are rare, and each keeps its own id)
 *   young0, young1  id -> a new object's digest's first 8 bytes: the
 *            young part of the digest index, merged into digest8 a
 *            generation at a time (see "the digest index")
 *   natkey   kind byte + natural key -> id
 *   ref      32-byte digest -> ids of the objects referencing it
 *            (DUPSORT|DUPFIXED: a posting list in id order)
 *   label    kind byte + key NUL value -> ids carrying that label
 *            (DUPSORT|DUPFIXED: a posting list in id order)
 *   event    rv (u64 big-endian) -> type byte + id (9 bytes)
 *   version  rv -> record: a state an event names that its object's
 *            current record no longer holds (superseded or deleted), kept
 *            as long as the event is
 *   aux      id -> u8 nrefs | u16 natkey_len | refs | natural key: kept
 *            apart from the record so that a run's record (about 3.5 KB
 *            of JSON) fits one 4 KB page
 *   facet    kind byte + facet text -> u64 count
 *   token    SHA-256 of a token -> its JSON description
 *
 * The tail: the ref and label postings and the facet counts of the
 * newest objects (seq above "posted", at most TAIL_MAX of them) are not
 * written yet; the commit that takes the tail to TAIL_MAX writes them all,
 * each posting list getting its ids in one append and each count one
 * update. A list by postings, a walk of referrers and the facet counts
 * read the tail's records instead. Written with each object, a run's
 * twelve postings (8 labels, 4 references) were 32 of the 55 pages a lone
 * run's commit wrote, each a DUPSORT sub-tree's leaf and branch copied for
 * one 8-byte id. Bytes
 * passed to write calls (/proc/PID/io wchar) a POST of a seed bundle:
 * 230 KB on one connection with them, 103 KB with the postings' tail; 21
 * and 19 KB at 64 connections, where a batch's runs share the lists' last
 * pages. On a 300,000-run store, one connection: 345 KB, 158 KB with the
 * postings' tail, 141 KB with the facet counts in it too.
 *
 * Why this shape: every secondary index holds 8-byte ids, appended in
 * ascending order within a posting list, so a batch of new objects dirties
 * the last page of each list, not a page per object; an event is 9 bytes,
 * not a second copy of the object; the only random-order inserts are the
 * content digests (and names and natural keys, as clients choose them).
 * The big values live under ascending keys; random digests only key a
 * small table (digest keys on big values were measured 4-6x slower), and
 * by their first 8 bytes: a new object's digest lands on a random leaf,
 * and 8-byte keys make the table half as many leaves and a fraction of the
 * branch pages that whole digests made, which is what a batch of new
 * objects copies (at 64 connections on a 300,000-run store, five
 * alternating rounds: 22.5-22.8 KB passed to write calls per POST against
 * 23.9-24.1 KB, and 4-7% more POSTs a second). A new object's digest
 * first goes to a young table in id order and reaches that table later, in
 * a merge of neighbouring digests (see "the digest index").
 *
 * A record is a fixed header, then name, natural key, refs and the JSON:
 *   0 u32 magic | 4 u8 kind | 5 u8 nrefs | 6 u16 name_len | 8 u16 natkey_len
 *   10 u16 flags (1: natkey and refs are in aux) | 12 u32 json_len | 16 u64 id | 24 u64 rv | 32 digest[32]
 *   64 u32 meta_off, meta_len, spec_off, spec_len, status_off, status_len
 *   88 u32 labels_len, facets_len
 *   96 name | natkey | refs | labels | facets | json [| u32 crc32c]
 * The CRC-32C (flag 2; every record written since it was added) covers
 * everything before it, and every decode checks it: a damaged record is
 * KI_ECORRUPT, never served (0.35-0.5 us for a 3.5 KB record with the
 * CPU's crc32 instruction, measured on a 2-core Xeon). Records of older versions have none.
 * Integers in records are host order: the file is not portable across
 * endianness, like LMDB's own.
 *
 * Durability: commits are logged to the redo log (store/wal.h) and LMDB
 * commits without syncing; checkpoints (below) sync the file.
 *
 * A store of format 2 (objects keyed by seq, events holding copies, a
 * label index keyed by name) is converted at open, in batches, into the
 * tables above; the old tables are dropped when the last batch commits
 * (a crash in between starts the conversion again from the old tables).
 */
#ifndef STORE_LMDB_INT_H
#define STORE_LMDB_INT_H

#include "store/backend.h"
#include "store/lmdb.h"
#include "store/store.h"

#include "lib/thread.h"
#include "store/wal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define REC_MAGIC 0x324f494bu /* "KIO2" */
#define REC_HDR 96
#define REC_AUX 1   /* natural key and refs live in the aux table */
#define REC_SUM 2   /* the last 4 bytes: CRC-32C of the bytes before them */
/* 5: format 3 and the tail (meta "posted"). A format-3 store has every
 * posting and count written, so it is marked 5 when opened; a format-4
 * store (a tail of postings only: its facets were counted as its objects
 * were put) gets its tail's postings written, then is marked 5 (see
 * post_old_tail). A kernelindexd of an older format refuses a format-5
 * store: its lists would miss the tail's objects, or count their facets
 * twice. */
/* 6: the digest index keyed by 8-byte prefixes ("digest8"); a store of
 * formats 3 to 5 has its "digest" table (whole digests) copied into it at
 * open (see convert_digests). */
/* 7: the young digests ("young0", "young1", meta "dgen" and "dlast"); a
 * format-6 store has none, and is marked 7 when opened. */
#define FORMAT 7
/* Digests in a young generation before it starts merging (see the digest
 * index). */
#define YOUNG_MAX 131072
/* Threads that read a large young table at once, and the size it takes.
 * A table's leaves lie anywhere in the file, and each is a page fault that
 * waits for the disk when the file is not in the page cache: at the open of
 * a 2-million-run store just out of the page cache, the 170,000 young
 * digests (1,100 leaves) took 100-150 ms read one leaf after another and
 * 40-50 ms in 16 threads (64: no faster). */
#define YREAD_THREADS 16
#define YREAD_MIN 8192
#define DIGEST_KEY 8
#define ID_SEQ_MASK ((UINT64_C(1) << 56) - 1)
/* By default a checkpoint starts at the next write once the log holds
 * this much, or holds anything and the last one is this old (see
 * store_options); a write that would take the log past WAL_MAX waits for
 * the checkpoint in flight and starts one. */
#define CKPT_BYTES (UINT64_C(1) << 20)
/* The map's defaults (store_lmdb_options). */
#define MAP_DEFAULT (UINT64_C(1) << 30)
#define MAP_MAX_DEFAULT (UINT64_C(256) << 30)
#define CKPT_NS INT64_C(50000000)
#define WAL_MAX (UINT64_C(64) << 20)
/* Objects whose postings wait in the tail (see above). */
#define TAIL_MAX 64
/* Events past the history are deleted this many at a time (see
 * put_event). */
#define EVENT_TRIM 512

/* Operations in a log record: u8 op | u32 length | body. */
enum { OP_PUT = 1, OP_DELETE = 2, OP_TOKEN_PUT = 3, OP_TOKEN_DELETE = 4 };

/* One young digest: its first 8 bytes (big-endian, so that integer order
 * is the index's byte order) and its object's id. */
typedef struct dent {
	uint64_t key, id;
} dent;

/* What this process keeps in memory of the young digests (see "the digest
 * index" below): a hash of the filling generation and the merging one
 * sorted. */
typedef struct dmem {
	pthread_rwlock_t lk;
	int on;             /* the owner keeps it; others read the tables */
	dent *a;            /* open addressing; id 0 is a free slot */
	size_t acap, an;
	dent *b;            /* the merging generation, sorted */
	size_t bn;
	uint64_t bgen;      /* the "dgen" under which b is the merging one */
	uint64_t b_done;    /* the txnid that emptied the last merged one */
} dmem;

struct store {
	const store_ops *ops;   /* first: see store/backend.h */
	MDB_env *env;
	/* Every transaction holds it shared; growing the map takes it
	 * exclusively (LMDB resizes only with no transaction active). */
	pthread_rwlock_t resize;
	uint64_t map_max;
	MDB_dbi meta, obj, aux, name, digest, natkey, ref, label, event, version,
	    facet, token;
	MDB_dbi young[2];   /* "young0", "young1": see the digest index */
	uint64_t young_max;
	size_t yread_min;   /* entries from which young_read uses threads */
	dmem dm;
	uint64_t history;
	size_t convert_batch;   /* convert_digests (store_options) */
	int nosync;
	store_facets_fn facets;
	/* The redo log (see store/wal.h). owner: this process holds it, its
	 * commits append to it and the LMDB file is synced at checkpoints;
	 * otherwise (an admin command while a daemon owns the store) commits
	 * are logged to redo.side and synced whole. */
	wal *wal;
	int owner;
	int replaying;
	/* A reader on the checkpoint's state: LMDB reuses no page that state
	 * holds (nor any page freed after it), so it stays whole on disk
	 * whatever later commits wrote. */
	MDB_txn *pin;
	/* The checkpoint thread and the checkpoint in flight (ck_mu guards
	 * the pins and flags). */
	pthread_t ck_thread;
	/* ck_failed: the failed checkpoint's code (KI_ENOSPC, KI_EIO), which
	 * every later write gets. */
	int ck_started, ck_busy, ck_stop, ck_failed, ck_file;
	char *dir;          /* for the free space after a failed write */
	store_log_fn log;   /* store_options.log */
	void *log_arg;
	/* Commits since the thread last started writing the file's dirty
	 * pages back (see ckpt_loop). */
	int ck_ahead;
	pthread_mutex_t ck_mu;
	pthread_cond_t ck_cv;
	MDB_txn *ck_pin;
	wal_head *ck_head;
	uint64_t head_seq;
	uint64_t ckpt_bytes;     /* when to checkpoint (store_options) */
	int64_t ckpt_every_ns;
	int64_t ckpt_ns;         /* when the last one started */
	uint64_t checkpoints, recovered, log_bytes;   /* for store_stat */
};

struct store_txn {
	store *s;               /* first: see store/backend.h */
	MDB_txn *txn;
	struct store_txn *parent;
	int write;
	uint64_t rv;      /* store-wide rv including this txn's puts */
	int dirty;
	uint64_t writes;  /* calls that may have changed it (store_writes) */
	ki_buf log;       /* its operations, for the redo log */
	/* The last id's seq, and the count of objects replaced or deleted
	 * (store_changes): each read once and written at the commit. */
	uint64_t seq, changes;
	int seq_read, seq_moved, changes_read, changes_moved;
	/* "posted" (see the tail), read once and written at the commit. */
	uint64_t posted;
	int posted_read, posted_moved;
	/* Facet counts changed here, summed per facet and written at the
	 * commit (a child's join its parent's): one read and one write of a
	 * count per transaction, not per object. */
	ki_buf fkeys;            /* the facets' keys, back to back */
	/* Young digests added here; what its commit did to the generations
	 * (see the digest index). */
	uint64_t dadded;
	int dswap, ddone;
	struct fdelta *fd;
	size_t nfd, fdcap;
};

/* One facet's change: its key in fkeys and the sum of +1s and -1s. */
typedef struct fdelta {
	size_t off, len;
	int64_t delta;
} fdelta;

/* lmdb_rec.c */
/* CRC-32C of n bytes (the CPU's crc32 instruction where there is one);
 * lm_crc32c_sw: the table's, from a running value c (inverted). */
uint32_t lm_crc32c(const void *data, size_t n);
uint32_t lm_crc32c_sw(uint32_t c, const uint8_t *p, size_t n);
int lm_map_rc(int rc);
void lm_slog(const store *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int lm_disk_rc(const store *s, int rc);
void lm_put_be64(uint8_t out[8], uint64_t v);
uint64_t lm_get_be64(const void *p);
int lm_get_u64(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, uint64_t *out);
int lm_meta_get_u64(MDB_txn *txn, MDB_dbi meta, const char *key,
	uint64_t *out);
int lm_meta_put_u64(MDB_txn *txn, MDB_dbi meta, const char *key, uint64_t val);
int lm_rec_decode_flags(const void *data, size_t size, store_obj *o,
	int *flags);
int lm_rec_decode(const void *data, size_t size, store_obj *o);
size_t lm_rec_size(const store_obj *o);
void lm_rec_encode_flags(uint8_t *p, const store_obj *o, uint16_t flags);
void lm_rec_encode(uint8_t *p, const store_obj *o);
MDB_val lm_kind_key(uint8_t *buf, int kind, const char *s, size_t n);
int lm_facet_add(store_txn *t, const void *k, size_t len, int64_t delta);
int lm_facets_apply(store_txn *t);
void lm_txn_free(store_txn *t);
size_t lm_label_key(uint8_t *buf, int kind, const char *k, size_t klen,
	const char *v, size_t vlen);
/* Logs a put or delete of o, a token's put or delete, in t's redo log
 * (nothing while the log is replayed). */
int lm_log_obj(store_txn *t, int op, const store_obj *o);
int lm_log_token(store_txn *t, int op, const uint8_t *hash, const char *value,
	size_t len);

/* lmdb_young.c */
int lm_obj_decode(store_txn *t, MDB_cursor *aux, const void *data, size_t size,
	store_obj *o);
int lm_write_record(store_txn *t, const store_obj *o);
int lm_get_by_cursor(store_txn *t, MDB_cursor *obj, MDB_cursor *aux,
	uint64_t id, store_obj *out);
int lm_dm_load(store *s);
int lm_young_add(store_txn *t, const uint8_t *digest, uint64_t id);
int lm_young_del(store_txn *t, uint64_t id);
int lm_young_step(store_txn *t);
void lm_young_after(store *s, int swap, int done, uint64_t txnid);
int lm_digest_find(store_txn *t, const uint8_t *digest, uint64_t *id);

/* lmdb.c */
int lm_tail_maybe_post(store_txn *t);
int lm_post_old_tail(store *s, MDB_txn *txn);
int lm_index_object(store_txn *t, const store_obj *o, int dir);
int lm_keep_version(store_txn *t, uint64_t rv, const store_obj *o,
	uint64_t now_rv);
int lm_changes_bump(store_txn *t);

/* lmdb_open.c */
int lm_convert_digests(store *s);
int lm_convert_v2(store *s);

/* The backend's side of store/store.h (store/backend.h), in the files
 * above, named in lmdb_ops.c's table (the top of the backend: it calls
 * them all and none calls it). */
void lm_close(store *s);
int lm_begin(store *s, int write, store_txn **out);
int lm_begin_child(store_txn *parent, store_txn **out);
int lm_commit(store_txn *t);
void lm_abort(store_txn *t);
uint64_t lm_writes(store_txn *t);
int lm_changes(store_txn *t, uint64_t *out);
uint64_t lm_rv(store_txn *t);
uint64_t lm_oldest_event(store_txn *t);
int lm_get_by_name(store_txn *t, int kind, const char *name, size_t len,
		store_obj *out);
int lm_get_by_digest(store_txn *t,
		const uint8_t digest[STORE_DIGEST_LEN], store_obj *out);
int lm_get_by_natkey(store_txn *t, int kind, const char *key, size_t len,
		store_obj *out);
int lm_get_by_seq(store_txn *t, uint64_t id, store_obj *out);
uint64_t lm_next_rv(store_txn *t);
int lm_put(store_txn *t, store_obj *o);
int lm_delete(store_txn *t, int kind, const char *name, size_t len,
		const store_obj *final);
int lm_list(store_txn *t, int kind, uint64_t after, store_each_fn fn,
		void *arg);
int lm_count(store_txn *t, int kind, uint64_t *out);
int lm_list_index(store_txn *t, int kind, const store_term *terms,
		size_t nterms, uint64_t after, store_each_fn fn, void *arg);
int lm_facets(store_txn *t, int kind, store_facet_fn fn, void *arg);
int lm_each_referrer(store_txn *t,
		const uint8_t digest[STORE_DIGEST_LEN], store_each_fn fn,
		void *arg);
int lm_events_since(store_txn *t, uint64_t rv, store_event_fn fn,
		void *arg);
int lm_token_put(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
		const char *value, size_t len);
int lm_token_get(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
		const char **value, size_t *len);
int lm_token_delete(store_txn *t,
		const uint8_t hash[STORE_DIGEST_LEN]);
int lm_token_list(store_txn *t, store_token_fn fn, void *arg);
int lm_token_count(store_txn *t, uint64_t *out);
int lm_verify(store *s, int repair, store_check_fn check,
		store_problem_fn problem, void *arg, store_verify_stats *out);
int lm_idle(store *s);
void lm_logline(const store *s, int level, const char *line);
/* Opens the store with ops as its table (lmdb_ops.c). */
int lm_open(store **out, const char *dir, const store_options *opt,
	const store_lmdb_options *lo, const store_ops *ops);

#endif
