/* store/etcd.h — the etcd backend of store/store.h: objects and index
 * entries as keys of an etcd (v3) cluster under one prefix, so that
 * several daemons can serve the same store. How it keeps the contract and
 * what a request costs is written in store/etcd_int.h and docs/etcd.md. */
#ifndef STORE_ETCD_H
#define STORE_ETCD_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct store_etcd_options {
	/* Client URLs, comma-separated ("http://127.0.0.1:2379,..."); a
	 * request that cannot reach one tries the next. */
	const char *endpoints;
	/* Every key starts with it (NULL: "/kernelindex/"). */
	const char *prefix;
	/* TLS (https endpoints): the CA bundle that signs the members'
	 * certificates, and a client certificate and key for etcd's
	 * --client-cert-auth (NULL: none). */
	const char *cacert, *cert, *key;
	/* etcd authentication (--auth): a user and its password (NULL: none).
	 * The token is requested at open and again when etcd says it
	 * expired. */
	const char *user, *password;
	long timeout_ms;     /* per request (0: 10 s) */
	/* Read etcd for every read instead of the watch cache (an in-memory
	 * copy of the store fed by etcd's watch; docs/etcd.md). */
	int nocache;
} store_etcd_options;

/* Opens the store kept in etcd under eo->prefix (creating nothing until
 * the first write). On success *out owns the store; free with
 * store_close(). KI_EIO when no endpoint answers. */
int store_etcd_open(store **out, const store_etcd_options *eo,
	const store_options *opt);

/* Writes a snapshot of the whole etcd database (etcd's
 * /v3/maintenance/snapshot, a bbolt file that `etcdctl snapshot restore`
 * takes) to fd. */
int store_etcd_backup_fd(store *s, int fd);

/* What the store has done, for tests and /metrics. */
typedef struct store_etcd_stats {
	uint64_t ranges, txns;  /* range and Txn requests sent to etcd */
	int cache_ready;        /* the watch cache serves reads now */
	int64_t cache_rev;      /* the etcd revision it has applied */
	uint64_t cache_rv;      /* the resourceVersion there */
	uint64_t cache_loads;   /* times it read the whole keyspace */
	uint64_t cache_keys;    /* keys it holds */
} store_etcd_stats;
/* KI_EINVAL for a store of another backend. */
int store_etcd_stats_get(store *s, store_etcd_stats *out);

/* Tests: holds the watch cache's stream down (hold 1: the stream is
 * closed and not taken up again, reads go to etcd) or lets it resume
 * (hold 0). Nothing without a cache. */
void store_etcd_cache_hold(store *s, int hold);

/* Calls fn(arg, rv) from a thread of the store's each time a commit of
 * any process moves the store's resourceVersion to rv (etcd's watch of
 * the counter key, resumed from the next revision when the stream ends),
 * until store_close(): so that a daemon's watchers hear of the writes
 * other daemons commit. One follower per store; KI_EINVAL for a second
 * or for a store of another backend. */
int store_etcd_follow(store *s, void (*fn)(void *arg, uint64_t rv),
	void *arg);
/* Stops the follower (before what its fn reaches goes away); store_close
 * stops it too. Nothing for a store of another backend. */
void store_etcd_unfollow(store *s);

#endif
