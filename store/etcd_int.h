/* store/etcd_int.h — the etcd backend's internals, shared by its files:
 * etcd_http.c (requests to etcd's JSON gateway through libcurl),
 * etcd_txn.c (transactions: the snapshot they read, the writes they
 * buffer, savepoints, the commit), etcd_rec.c (records), etcd_cache.c
 * (the watch cache the reads are served from), etcd_read.c (lists and
 * walks) and etcd.c (objects, indexes, lists, events, tokens). Nothing outside store/ includes it.
 *
 * Keys, each under the store's prefix P (integers big-endian, so that
 * byte order is numeric order):
 *   P m/rv       u64 the store's resourceVersion (every commit puts it:
 *                its mod_revision is what a commit compares)
 *   P m/seq      u64 the last id's sequence
 *   P m/changes  u64 objects replaced or deleted (store_changes)
 *   P m/trim     u64 the last resourceVersion whose event is trimmed
 *   P o/ id      the object's record (below)
 *   P n/ kind name            -> id
 *   P k/ kind natural key     -> id
 *   P d/ digest id            -> "" (per digest, its objects in id order:
 *                              the first one answers a lookup)
 *   P l/ kind key NUL value NUL id -> "" (a label's posting list)
 *   P r/ digest id            -> "" (the referrers of a digest)
 *   P f/ kind facet           -> u64 count
 *   P e/ rv       type byte + the record of the object as that event left
 *                 it (the DELETED one: the final state the caller gave)
 *   P t/ hash     a token's JSON description
 * A list is one range request from a start key with a limit, whatever
 * the number of keys before it.
 *
 * A record: u32 magic | u8 kind | u8 nrefs | u16 name_len |
 * u16 natkey_len | u16 0 | u32 json_len | u64 id | u64 rv | digest[32] |
 * u32 meta_off, meta_len, spec_off, spec_len, status_off, status_len |
 * u32 labels_len, facets_len | name | natkey | refs | labels | facets |
 * json | u32 CRC-32 (zlib's) of everything before it.
 *
 * Transactions: store_begin reads the m/ keys (one range request) and
 * notes etcd's revision; every later read of the transaction is a range
 * request at that revision (snapshot isolation), merged, in a write
 * transaction, with the writes it has buffered (read your writes). A
 * child transaction is a mark in the buffer's undo log. The commit is one
 * etcd Txn: compare m/rv's mod_revision with the one read at the begin,
 * then every put and delete; a failed compare (another writer committed
 * since) is KI_ECONFLICT and nothing is written.
 */
#ifndef STORE_ETCD_INT_H
#define STORE_ETCD_INT_H

#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdint.h>

#include "store/backend.h"
#include "store/etcd.h"
#include "store/store.h"

#define ET_MAGIC 0x3145494bu   /* "KIE1" */
#define ET_HDR 96
#define ET_PAGE 256            /* keys per range request of a scan */
#define ET_WC_PAGE 32          /* keys per step of a scan of the watch
                                * cache (a seek costs little there, and a
                                * list page stops after its limit) */
#define ET_CONNS 8             /* idle connections kept */
#define ET_TRIES 6             /* tries of a request while etcd is
                                * unavailable (et_post_read) */
#define ET_TXN_TIMEOUTS 6       /* a commit's Txn may take this many
                                * request timeouts */
#define ET_WAIT_MS 5000        /* the longest a commit waits for the watch
                                * cache to apply it */
#define ET_BATCH 100           /* range requests in one prefetching Txn
                                * (etcd's --max-txn-ops is 128 by default) */

/* One connection (a libcurl easy handle) to the cluster. */
typedef struct et_conn {
	CURL *curl;
	struct curl_slist *hdrs;
	char *hdr_token;        /* the auth token these headers carry */
	ki_buf resp;
	struct et_conn *next;
} et_conn;

typedef struct et_follow et_follow;
typedef struct et_wcache et_wcache;

typedef struct et_store {
	store_head head;        /* first: see store/backend.h */
	et_follow *follow;      /* store_etcd_follow's thread, or NULL */
	et_wcache *wc;          /* the watch cache (etcd_cache.c), or NULL */
	int following;          /* store_etcd_follow holds a callback */
	uint64_t nranges, ntxns;  /* requests sent (atomic) */
	char **endpoints;
	size_t nendpoints, cur;  /* cur: the endpoint that answered last */
	char *prefix;
	size_t prefix_len;
	char *cacert, *cert, *key, *user, *password;
	long timeout_ms;
	pthread_mutex_t mu;     /* conns, cur, token */
	et_conn *idle;
	size_t nidle;
	char *token;            /* etcd auth token, or NULL */
	pthread_mutex_t wmu;    /* held by the write transaction */
	uint64_t history;
	store_facets_fn facets;
	store_log_fn log;
	void *log_arg;
	int quota_hit;          /* etcd refused a write for its space quota
	                         * (store/etcd_quota.c; atomic) */
} et_store;

/* One buffered write. */
typedef struct et_ent {
	char *key;
	size_t klen;
	char *val;              /* NULL with del */
	size_t vlen;
	int del;
} et_ent;

/* How to undo one buffered write: the entry as it was (had 0: absent). */
typedef struct et_undo {
	char *key;
	size_t klen;
	int had, del;
	char *val;
	size_t vlen;
} et_undo;

typedef struct et_top {
	et_conn *conn;
	int64_t rev;            /* the etcd revision every read reads */
	int64_t rv_mod;         /* m/rv's mod_revision at rev */
	uint64_t rv, seq, changes, trim;
	uint64_t writes;
	et_ent **ents;          /* sorted by key */
	size_t nents, capents;
	/* Remote reads' answers at rev (del: absent), sorted by key: a key
	 * is read from etcd once per transaction. */
	et_ent **cache;
	size_t ncache, capcache;
	/* Kinds whose facet counts are all in the cache (et_local_only). */
	uint8_t facets_read[32];
	/* Reads come from the watch cache at rev, of this generation of
	 * it; else from etcd. Registered there (reg) from the begin to the
	 * end (even after a reload sent the reads to etcd): the values it
	 * lends stay while the transaction lives. */
	int cached, reg;
	uint64_t gen;
	int confirmed;          /* et_confirm ran */
	int observed;           /* something of the state was read */
	et_undo *undo;
	size_t nundo, capundo;
	int depth;              /* open children */
} et_top;

struct store_txn {
	store *s;               /* first: see store/backend.h */
	et_top *top;
	store_txn *parent;
	int write;
	/* A child's savepoint. */
	size_t undo_mark;
	uint64_t rv, seq, changes;
};

/* A scan's callback: a key and its value (borrowed for the call).
 * Non-zero stops the scan and is returned. */
typedef int (*et_scan_fn)(void *arg, const char *key, size_t klen,
	const char *val, size_t vlen);

/* etcd_http.c */
int et_http_open(et_store *e, const store_etcd_options *eo);
void et_http_close(et_store *e);
et_conn *et_conn_get(et_store *e);
void et_conn_put(et_store *e, et_conn *c);
/* Sets c's per-request timeout (0: the store's). */
void et_conn_timeout(et_store *e, et_conn *c, long ms);
/* POSTs body (JSON) to path once; *out (caller puts with
 * json_object_put) is the answer. KI_EUNAVAIL when no endpoint answers
 * or etcd cannot serve for now (no leader, leader changed, a timeout:
 * a write's outcome is then unknown), KI_EGONE when etcd says the
 * revision is compacted, KI_ESTORE for another refusal. */
int et_post(et_store *e, et_conn *c, const char *path, const char *body,
	size_t len, json_object **out);
/* et_post for a request that changes nothing (a range, a read-only Txn):
 * sent again, after et_backoff(), up to ET_TRIES times in all while the
 * answer is KI_EUNAVAIL. */
int et_post_read(et_store *e, et_conn *c, const char *path,
	const char *body, size_t len, json_object **out);
/* Sleeps before the (i + 2)th try of a request. */
void et_backoff(int i);
/* m/rv's mod_revision in etcd now (key, klen: P m/rv; 0: absent), read
 * with et_post_read. */
int et_rv_mod_now(et_store *e, et_conn *c, const char *key, size_t klen,
	int64_t *mod);

/* etcd's space quota (etcd_quota.c). et_quota_refused: etcd refused a
 * write with msg ("etcdserver: mvcc: database space exceeded", borrowed):
 * reports it through the store's log hook at error level the first time
 * only, and returns KI_EQUOTA. et_quota_wrote: a write committed; if the
 * quota had been reached, reports that writes resume and re-arms the
 * report. Both are safe from any thread. */
int et_quota_refused(et_store *e, const char *msg);
void et_quota_wrote(et_store *e);
/* Appends n bytes as base64 in quotes. */
int et_b64(ki_buf *b, const void *p, size_t n);
/* Decodes the base64 string of member name of o into a new allocation
 * (caller frees; NULL and 0 when absent). */
int et_unb64(json_object *o, const char *name, char **out, size_t *len);

/* Stored values (etcd_codec.c). et_codec_put appends the base64 of val
 * as it is stored: zlib-compressed behind a marker when that pays, else
 * as it is. et_codec_get: when *val (a value read from etcd, len bytes,
 * caller-owned) is compressed, replaces it with the value it holds (the
 * old allocation freed, the new one the caller's, NUL-terminated); other
 * values are left as they are. KI_ECORRUPT when a compressed value does
 * not inflate to its length. */
int et_codec_put(ki_buf *b, const char *val, size_t vlen);
int et_codec_get(char **val, size_t *len);
int64_t et_int(json_object *o, const char *name);
/* Streams /v3/maintenance/snapshot to fd. */
int et_snapshot(et_store *e, int fd);
/* Starts the thread that watches key (/v3/watch) and calls fn with each
 * new value (a u64); et_follow_stop ends it (store_close). */
int et_follow_start(et_store *e, const char *key, size_t klen,
	void (*fn)(void *arg, uint64_t rv), void *arg);
void et_follow_stop(et_store *e);

/* A stream's socket (fd -1: none), for et_sock_kick. */
typedef struct et_sock {
	pthread_mutex_t mu;
	int fd;
} et_sock;
/* Streams a POST's answer to on_data (libcurl's write callback) until
 * the stream ends or stopped(sarg) is non-zero (asked about once a
 * second; et_sock_kick(sock) ends it at once). */
int et_stream(et_store *e, const char *path, const char *body, size_t len,
	size_t (*on_data)(char *p, size_t size, size_t n, void *arg),
	void *arg, int (*stopped)(void *arg), void *sarg, et_sock *sock);
/* Shuts the stream's socket down: the transfer ends. */
void et_sock_kick(et_sock *k);

/* etcd_cache.c: the watch cache. */
/* Loads the keyspace and starts the thread that watches it. */
int et_wc_start(et_store *e);
/* Stops the thread and frees the copy (store_close). */
void et_wc_stop(et_store *e);
/* Registers a reader: 1 with the revision it reads (*rev) and the
 * generation of the copy (*gen), or 0 when the cache is not ready (read
 * etcd). End with et_wc_end(rev, gen): until then every value the cache
 * lends the reader (et_wc_get, et_wc_range) stays as it is, whatever is
 * applied or loaded meanwhile. */
int et_wc_begin(et_store *e, int64_t *rev, uint64_t *gen);
void et_wc_end(et_store *e, int64_t rev, uint64_t gen);
/* key's value at rev: KI_OK (*val lent until the reader's et_wc_end,
 * NUL-terminated; *mod the revision that wrote it), KI_ENOTFOUND, or 1
 * when gen is gone (a reload: read etcd). */
int et_wc_get(et_store *e, uint64_t gen, int64_t rev, const char *key,
	size_t klen, const char **val, size_t *vlen, int64_t *mod);
/* Called for each key of a range, under the cache's lock: key and val
 * are lent until the reader's et_wc_end; call nothing of the cache. A
 * record (o/) or an event (e/) the cache lends has passed its checksum
 * when the cache took it (a value that failed it is lent as one byte
 * that no record decodes from). */
typedef int (*et_wc_fn)(void *arg, const char *key, size_t klen,
	const char *val, size_t vlen, int64_t mod);
/* The keys in [start, end) (end NULL: key start alone) at rev, at most
 * limit (0: all; *more set when more follow). 1 when gen is gone. */
int et_wc_range(et_store *e, uint64_t gen, int64_t rev, const char *start,
	size_t slen, const char *end, size_t elen, size_t limit, et_wc_fn fn,
	void *arg, int *more);
/* m/rv's mod_revision in etcd, read by a linearizable Range that began
 * after the call: what every commit acknowledged before the call has
 * reached. Callers that come while a Range is in flight wait for the next
 * one (one caller sends it on its connection, conn, for all who wait), so
 * that N concurrent callers cost about one Range per round trip. */
int et_wc_fresh(et_store *e, et_conn *conn, int64_t *mod);
/* Waits until the cache applied etcd revision rev (KI_OK, at once when
 * the cache is not ready); KI_EUNAVAIL after timeout_ms, when it also
 * stops serving reads until its stream is up again. */
int et_wc_wait(et_store *e, int64_t rev, long timeout_ms);
/* Waits until the cache's resourceVersion is rv or more: KI_OK, or
 * KI_ELIMIT after timeout_ms. */
int et_wc_wait_rv(et_store *e, uint64_t rv, long timeout_ms);
/* The follower's callback moves to the cache's thread: called after the
 * events that moved the resourceVersion are applied (fn NULL: none). */
void et_wc_follow(et_store *e, void (*fn)(void *arg, uint64_t rv),
	void *arg);
typedef struct et_wc_info {
	int ready;
	int64_t rev;
	uint64_t rv, gen;
	size_t keys;
} et_wc_info;
void et_wc_stats(et_store *e, et_wc_info *out);
/* store_etcd_cache_hold. */
void et_wc_hold(et_store *e, int hold);

/* etcd_txn.c */
/* The key prefix + part + rest (n bytes) into buf (at least
 * prefix_len + 2 + n): its length. */
size_t et_key(const et_store *e, char *buf, char part, const void *rest,
	size_t n);
/* Turns the prefix in buf (n bytes) into the end of its range (etcd's
 * range_end for a prefix: trailing 0xff bytes dropped, the last one
 * raised); returns its length. */
size_t et_prefix_end(char *buf, size_t n);
/* The value of key as t sees it: its own write, else etcd's at t's
 * revision (read once, then kept). *val is borrowed: valid until t ends
 * or writes key again. KI_ENOTFOUND when absent. */
int et_get(store_txn *t, const char *key, size_t klen, const char **val,
	size_t *vlen);
/* Notes what the transaction's revision holds at key (val NULL: absent)
 * so that et_get need not ask etcd (a scan's answers). */
int et_cache_put(store_txn *t, const char *key, size_t klen, const char *val,
	size_t vlen);
/* What the cache holds at key: KI_OK (*val borrowed), KI_ENOTFOUND
 * (known absent), or 1 (not read yet). */
int et_cache_get(store_txn *t, const char *key, size_t klen, const char **val,
	size_t *vlen);
/* The first key in [start, end) the transaction has written and not
 * deleted: 1 with *key (borrowed), or 0. */
int et_buf_first(store_txn *t, const char *start, size_t slen, const char *end,
	size_t elen, const char **key, size_t *klen);
/* Whether the transaction has deleted key. */
int et_buf_deleted(store_txn *t, const char *key, size_t klen);
/* Whether key is known absent without a read (a facet count of a kind
 * whose counts were all read: see facets_read in etcd.c). */
int et_local_only(store_txn *t, const char *key, size_t klen);
/* Reads the records of the n ids that neither the buffer nor the cache
 * holds, up to ET_BATCH in one etcd Txn of range requests at the
 * transaction's revision, into the cache (a list page's candidates: one
 * round trip instead of one each). */
int et_prefetch(store_txn *t, const uint64_t *ids, size_t n);
int et_set(store_txn *t, const char *key, size_t klen, const void *val,
	size_t vlen);
int et_del(store_txn *t, const char *key, size_t klen);
/* Calls fn for each key in [start, end) in order, as t sees it. */
int et_scan(store_txn *t, const char *start, size_t slen, const char *end,
	size_t elen, et_scan_fn fn, void *arg);
/* Like et_scan, over what etcd holds at the revision alone (not the
 * transaction's writes). */
int et_scan_remote(store_txn *t, const char *start, size_t slen,
	const char *end, size_t elen, et_scan_fn fn, void *arg);
int et_begin(store *s, int write, store_txn **out);
int et_begin_ahead(store *s, store_txn **out);
/* For a read transaction served by the watch cache that has read nothing
 * of its state yet but a lookup that missed: asks etcd for m/rv's
 * mod_revision and, when the cache is behind it, waits for the cache and
 * moves the transaction to the newer state (what the lookup read is
 * forgotten). 1 when it moved (look again), 0 when the transaction's
 * state is etcd's latest (or it reads etcd itself, or had read before),
 * or an error. fresh: nothing was read before the lookup. */
int et_confirm(store_txn *t, int fresh);
int et_begin_child(store_txn *parent, store_txn **out);
int et_commit(store_txn *t);
void et_abort(store_txn *t);
void et_put_be64(uint8_t *p, uint64_t v);
uint64_t et_get_be64(const void *p);

/* Records (etcd_rec.c). Encodes o (its id in seq) with the facets
 * given, after what b holds. */
int et_rec_encode(ki_buf *b, const store_obj *o, const char *facets,
	size_t facets_len);
/* Decodes a record; o's pointers point into p. KI_ECORRUPT when its
 * checksum or lengths do not hold. */
int et_rec_decode(const char *p, size_t n, store_obj *o);
/* et_rec_decode of a value t read: without the checksum while t reads
 * the watch cache, which checked it when it took the value. */
int et_rec_read(store_txn *t, const char *p, size_t n, store_obj *o);
/* P o/ id into buf: its length. */
size_t et_id_key(et_store *e, char *buf, uint64_t id);

/* etcd_read.c */
/* The object of id, as t sees it (KI_ENOTFOUND: none). */
int et_get_by_seq(store_txn *t, uint64_t id, store_obj *out);
int et_list(store_txn *t, int kind, uint64_t after, store_each_fn fn,
	void *arg);
int et_count(store_txn *t, int kind, uint64_t *out);
int et_list_index(store_txn *t, int kind, const store_term *terms,
	size_t nterms, uint64_t after, store_each_fn fn, void *arg);
int et_facets(store_txn *t, int kind, store_facet_fn fn, void *arg);
int et_each_referrer(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_each_fn fn, void *arg);
int et_events_since(store_txn *t, uint64_t rv, store_event_fn fn,
	void *arg);

#endif
