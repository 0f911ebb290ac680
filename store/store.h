/* store/store.h — the contract of the object store: content-addressed
 * objects, names, natural keys, back-references, label and digest
 * indexes, the event history, access tokens and a resourceVersion. It
 * names nothing of a particular engine: store/lmdb.h adds what only the
 * LMDB backend has (its tuning, statistics, backup file, crash
 * simulation), and a backend over another engine (etcd: objects and index
 * entries as keys) implements these functions and passes the conformance
 * suites in tests/unit (store_backends.c lists the backends).
 *
 * What every caller keeps:
 *  - Open the store once per process, and never fork after store_open()
 *    (a forked child must exec at once).
 *  - One short transaction per request; never wait on the network inside
 *    one. At most one write transaction is open at a time (store_begin
 *    of a write waits for the one in flight), and a thread holds at most
 *    one transaction.
 *  - Every pointer a read returns (store_obj fields, token values) is
 *    borrowed and valid only until the transaction ends or writes again:
 *    copy what must outlive it.
 *  - A store_commit() that returns 0 is durable: an acknowledged write
 *    survives a crash (unless store_options.nosync).
 *
 * What every backend provides:
 *  - Transactions see one consistent state (snapshot isolation) and a
 *    write transaction is all or nothing. A process sees its own commits
 *    at once; where several processes share a store (etcd), another
 *    process's commit may be seen a moment later, unless store_sync
 *    reached it first (a lookup that finds nothing as a read
 *    transaction's first read reaches it on its own: store/etcd.h). A child transaction
 *    (store_begin_child) is a savepoint of its parent: its writes join
 *    the parent's when it commits and vanish when it aborts. An engine
 *    without nested transactions keeps a transaction's writes in memory
 *    until the top-level commit, and a savepoint is a mark in them.
 *  - Revisions: the resourceVersion is the store's own counter, not the
 *    engine's. Each put or delete takes the next value (store_next_rv),
 *    which the caller renders into the object before the put (objects are
 *    served as the bytes they were stored as), and records an event under
 *    it; store_rv is the last value taken. A backend whose engine numbers
 *    its revisions itself (etcd: one revision per transaction) keeps this
 *    counter as data, like the events, and makes the commit conditional
 *    on no other writer having committed since the transaction began
 *    (etcd: a compare on the counter key's mod_revision); the engine's
 *    revision is never shown.
 *  - Ids (store_id): the kind in the top byte and a store-wide creation
 *    sequence below; lists run in id order.
 *  - Damaged data is never returned: a read whose stored bytes fail the
 *    backend's own check is KI_ECORRUPT.
 *
 * Everything returns 0 or a negative KI_* code (lib/ki.h); the store never
 * writes a log of its own (see store_options.log).
 */
#ifndef STORE_H
#define STORE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/ki.h"

#define STORE_DIGEST_LEN 32
#define STORE_MAX_NAME 253
#define STORE_MAX_NATKEY 1024
#define STORE_MAX_REFS 8
#define STORE_MAX_INDEXED 128

typedef struct store store;
typedef struct store_txn store_txn;

/* Appends the facets of an object of kind with the label blob labels
 * ("text\0" strings, see store_obj.facets) to out. */
typedef int (*store_facets_fn)(int kind, const char *labels,
	size_t labels_len, ki_buf *out);

/* The store never writes a log itself: what an operator should hear of
 * (a recovery, a damaged log, a failed checkpoint) goes to this hook, if
 * set, as one line without a newline (as SQLite's sqlite3_log). */
enum store_log_level {
	STORE_LOG_ERROR = 0,
	STORE_LOG_WARN = 1,
	STORE_LOG_INFO = 2,
};
typedef void (*store_log_fn)(void *arg, int level, const char *msg);

typedef struct store_options {
	store_log_fn log;      /* NULL: nothing is reported */
	void *log_arg;
	uint64_t history;      /* events kept for watch and resume */
	int nosync;            /* tests only: a commit need not be durable */
	/* Open even while another process (a running daemon) owns the
	 * store (the admin commands): its writes are made durable on their
	 * own, and the store's background work is left to the owner. */
	int shared;
	/* When set, records need not carry their facets (they are a
	 * function of kind and labels): the store computes them whenever a
	 * put leaves store_obj.facets empty and when it unindexes an
	 * object. */
	store_facets_fn facets;
} store_options;

enum store_event_type {
	STORE_ADDED = 1,
	STORE_MODIFIED = 2,
	STORE_DELETED = 3,
};

/* One stored object. For a read, every pointer is borrowed (see caveats).
 * For store_put(), the caller fills every field but seq and rv. json holds
 * the whole rendered object; the offset/length pairs locate its metadata,
 * spec and status members inside it so that readers can serve parts
 * without parsing. */
typedef struct store_obj {
	int kind;                        /* small integer, api/kinds.h */
	uint64_t seq;                    /* its id (store_id): the kind in the
	                                  * top byte, ascending in creation
	                                  * order within the kind, kept when
	                                  * the object is replaced */
	uint64_t rv;                     /* resourceVersion of the last change */
	uint8_t digest[STORE_DIGEST_LEN];
	const char *name;
	size_t name_len;
	const char *natkey;              /* natural key, or NULL */
	size_t natkey_len;
	const uint8_t *refs;             /* nrefs digests it references */
	size_t nrefs;
	/* Labels as "key\0value\0" pairs; the store indexes each pair whose
	 * key and value together are at most STORE_MAX_INDEXED bytes. */
	const char *labels;
	size_t labels_len;
	/* Facets as "text\0" strings: the store keeps a count of objects per
	 * kind and facet (store_facets). Empty on a put: computed with
	 * store_options.facets. */
	const char *facets;
	size_t facets_len;
	const char *json;
	size_t json_len;
	uint32_t meta_off, meta_len;
	uint32_t spec_off, spec_len;
	uint32_t status_off, status_len;
} store_obj;

/* Opens (creating if needed) the store in directory dir. On success *out
 * owns the store; free with store_close(). */
int store_open(store **out, const char *dir, const store_options *opt);
void store_close(store *s);
/* The backend that opened s: "lmdb" (store_open, store/lmdb.h) or "etcd"
 * (store/etcd.h); what only one backend has is asked of it alone. */
const char *store_backend_name(const store *s);

/* Begins a transaction. A write transaction excludes other writers until it
 * ends. Free with store_commit() or store_abort(). KI_ENOSPC, KI_EFULL or
 * KI_EIO when the store cannot take writes now (its space is exhausted, an
 * earlier background write failed). */
int store_begin(store *s, int write, store_txn **out);
/* Begins a read transaction whose answers only prepare a write that reads
 * them again (a read ahead of a write: what a request renders before its
 * job runs in the committer's transaction). A backend whose reads may lag
 * other processes' commits (etcd's watch cache) answers from its copy
 * without asking the engine about a lookup that misses; the write
 * transaction decides. Otherwise store_begin(s, 0, out). */
int store_begin_ahead(store *s, store_txn **out);
/* Begins a child of a write transaction (a savepoint): its writes join
 * the parent's when it commits, and vanish when it aborts. Used to batch
 * many requests into one durable commit (group commit, below). */
int store_begin_child(store_txn *parent, store_txn **out);
/* Commits durably (a child only joins its parent); the transaction is
 * freed whatever the result. KI_ENOSPC when the disk is full: nothing of
 * it was written. */
int store_commit(store_txn *t);
/* Aborts; the transaction is freed. Safe on NULL. */
void store_abort(store_txn *t);
/* How many calls so far may have changed t (puts, deletes, tokens, failed
 * or not): unchanged across a call means it left t as it was. */
uint64_t store_writes(store_txn *t);
/* How many objects had been replaced or deleted in the state t reads,
 * counting t's own. A read ahead of a write that finds the same count as
 * the write transaction knows that every object it found is still there
 * and the same: only new ones can have come since. */
int store_changes(store_txn *t, uint64_t *out);

/* The store-wide resourceVersion as of this transaction (including puts
 * made in it). */
uint64_t store_rv(store_txn *t);
/* The oldest resourceVersion whose events are still kept (0 when none). */
uint64_t store_oldest_event(store_txn *t);

int store_get_by_name(store_txn *t, int kind, const char *name, size_t len,
	store_obj *out);
int store_get_by_digest(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_obj *out);
int store_get_by_natkey(store_txn *t, int kind, const char *key, size_t len,
	store_obj *out);
/* By id (store_obj.seq). */
int store_get_by_seq(store_txn *t, uint64_t id, store_obj *out);

/* Reserves the resourceVersion that the next store_put()/store_delete() in
 * this write transaction will record, so the caller can render it into the
 * object first. Calling it twice without a put returns the same value. */
uint64_t store_next_rv(store_txn *t);

/* Inserts or replaces (by kind+name) an object. A new object gets a new seq;
 * a replaced one keeps its seq. Records an ADDED or MODIFIED event holding
 * the object. o->rv must equal store_next_rv() (else KI_EINVAL). The
 * digest index keeps, per digest, the first object stored with it. On
 * success o->seq is set. KI_EFULL when the store's space is used up. */
int store_put(store_txn *t, store_obj *o);

/* Deletes kind+name, recording a DELETED event whose object is final's
 * json and offsets (the final rendered state, with the deleting
 * resourceVersion; other fields are taken from the stored record).
 * KI_ENOTFOUND if absent. */
int store_delete(store_txn *t, int kind, const char *name, size_t len,
	const store_obj *final);

/* An object's id: kind in the top byte, a store-wide sequence (creation
 * order) below. */
uint64_t store_id(int kind, uint64_t seq);
int store_id_kind(uint64_t id);

/* Calls fn for each object of kind in id (creation) order, starting after
 * (excluding) the id `after` (0: from the start), until fn returns
 * non-zero (that value is returned) or the kind ends (0). A range read of
 * the object table: a page costs the same wherever it starts. */
typedef int (*store_each_fn)(void *arg, const store_obj *o);
int store_list(store_txn *t, int kind, uint64_t after, store_each_fn fn,
	void *arg);
/* Number of objects of kind (a scan: for tests and tools). */
int store_count(store_txn *t, int kind, uint64_t *out);

/* One index entry a list may be driven by: a label pair (key and value,
 * digest NULL) or the objects referencing a digest (digest set). */
typedef struct store_alt {
	const char *key, *value;
	const uint8_t *digest;
} store_alt;
/* A requirement: an object satisfies it when it has any of the alts. */
typedef struct store_term {
	const store_alt *alts;
	size_t nalts;
} store_term;

/* Like store_list(), over the objects of kind that satisfy every term,
 * found through the label and reference indexes (each in id order), not
 * by a scan of the kind. nterms 0 is store_list(). KI_EINVAL when a label
 * pair is too long to be indexed (see store_obj.labels). */
int store_list_index(store_txn *t, int kind, const store_term *terms,
	size_t nterms, uint64_t after, store_each_fn fn, void *arg);

/* Calls fn for each facet of kind with its object count (> 0), in byte
 * order of the facet text, until fn returns non-zero. */
typedef int (*store_facet_fn)(void *arg, const char *facet, size_t len,
	uint64_t count);
int store_facets(store_txn *t, int kind, store_facet_fn fn, void *arg);

/* Calls fn for each object whose refs include digest. */
int store_each_referrer(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_each_fn fn, void *arg);

/* One recorded event: type and the object as it was (borrowed). */
typedef int (*store_event_fn)(void *arg, int type, const store_obj *o);
/* Calls fn for each event with resourceVersion > rv in order. KI_EGONE
 * when events after rv were already trimmed (the store keeps at least
 * store_options.history of them). */
int store_events_since(store_txn *t, uint64_t rv, store_event_fn fn,
	void *arg);

/* Access tokens, keyed by the SHA-256 of the secret (the secret itself is
 * never stored). value is the token's JSON description. */
int store_token_put(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char *value, size_t len);
/* Borrowed value, valid until the transaction ends. */
int store_token_get(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char **value, size_t *len);
int store_token_delete(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN]);
typedef int (*store_token_fn)(void *arg, const uint8_t *hash,
	const char *value, size_t len);
int store_token_list(store_txn *t, store_token_fn fn, void *arg);
/* Number of tokens (0: none configured). */
int store_token_count(store_txn *t, uint64_t *out);

/* store_verify: a problem found, with the id of the object concerned (0:
 * none) and a description (static text). */
typedef void (*store_problem_fn)(void *arg, uint64_t id, const char *what);
/* The caller's own check of an object (its digest recomputed from its
 * content): 0 when it holds. */
typedef int (*store_check_fn)(void *arg, const store_obj *o);
typedef struct store_verify_stats {
	uint64_t objects;    /* records walked */
	uint64_t problems;   /* reported to problem() */
	uint64_t repaired;   /* digest index entries written back */
} store_verify_stats;
/* Walks every object: its record must be whole (the backend's own
 * checksum), its name and natural key must find it, its digest must find
 * it (or an earlier object with the same content), and check (when not
 * NULL) must hold; every name must name an object. Each failure goes to
 * problem. With repair, an object missing from the digest index is put
 * back (only by the owner of the store: KI_EBUSY while a daemon holds
 * it). Returns KI_OK when the walk completed, whatever it found. */
int store_verify(store *s, int repair, store_check_fn check,
	store_problem_fn problem, void *arg, store_verify_stats *out);

/* Waits until a read transaction begun after it returns sees
 * resourceVersion rv or later (rv 0: every commit made, through any
 * process, before the call), at most timeout_ms; what a list or watch
 * with a resourceVersion calls first. For a backend whose reads may lag
 * its engine (etcd's watch cache, docs/etcd.md): LMDB's reads never lag,
 * and it returns at once. KI_OK, or KI_ELIMIT when rv was not reached in
 * time (the caller answers as for a resourceVersion ahead of the
 * store's). */
int store_sync(store *s, uint64_t rv, long timeout_ms);

/* The committer (or any caller) has seen no write for a while: the
 * store may do its background work now (the LMDB backend: a checkpoint,
 * so that a restart has little to apply). */
int store_idle(store *s);

/* Reports one line through the store's log hook (store_options.log), for
 * the store's own parts (the group committer). */
void store_log(const store *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- group commit ----
 *
 * Concurrent write requests share one durable commit, and every answer
 * waits until the batch is durable: the committer thread runs the queued
 * jobs in one transaction, then commits it once.
 *
 * A job that may fail after it has written (a bulk upload, a stream's
 * chunk) runs in a child transaction of the batch, so that its failure
 * leaves the others intact. A job marked rerun runs in the batch's own
 * transaction, which saves the child's copy of every page it touches; if
 * it fails after writing, the batch is aborted and run again with every
 * job in a child transaction. Such a job's fn must therefore give the
 * same answer when run again from the start. A batch whose commit
 * conflicts with another process's (KI_ECONFLICT: a store several daemons
 * share) is run again, up to 8 times, when every job in it is marked
 * rerun or again (a job that must run in a child transaction, a bulk
 * upload, but starts its answer afresh each time fn runs); otherwise its
 * jobs are answered with the conflict. A failed batch
 * is reported through the store's log hook. */

typedef struct store_job store_job;
/* The work of one request, run inside txn by the committer. Returns 0 to
 * keep its writes, anything else to drop them (its answer is already
 * rendered either way). */
typedef int (*store_job_fn)(store_txn *txn, void *arg);
/* Called once the batch holding the job is committed (or failed):
 * commit_rc is the batch commit's result. */
typedef void (*store_job_done)(store_job *job, int commit_rc);

struct store_job {
	store_job_fn fn;
	void *arg;
	int rc;                   /* fn's result */
	int rerun;                /* fn may run in the batch's transaction */
	int again;                /* fn may run again after a conflict (in a
	                           * child transaction) */
	store_job_done done;
	void *cookie;             /* for done: whom to wake */
	store_job *next;
};

typedef struct store_committer store_committer;

/* What the committer has done, for /metrics. */
typedef struct store_commit_stats {
	uint64_t batches;       /* synced commits */
	uint64_t jobs;          /* requests they carried */
	uint64_t redone;        /* batches run again, each job in a child */
	uint64_t commit_us;     /* time in store_commit (writes and syncs) */
} store_commit_stats;

/* Starts the committer thread over s. committed(arg, rv) is called after
 * each batch that wrote something. */
int store_committer_start(store_committer **out, store *s, size_t max_batch,
	void (*committed)(void *arg, uint64_t rv), void *arg);
/* Queues a job; its done() runs on the committer thread. */
void store_committer_submit(store_committer *c, store_job *job);
/* A snapshot of the counters (zeros for NULL). */
void store_committer_stats(store_committer *c, store_commit_stats *out);
/* Runs what is queued, then stops. */
void store_committer_stop(store_committer *c);

#endif
