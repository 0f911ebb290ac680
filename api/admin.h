/* api/admin.h — the administrative operations, independent of HTTP: the
 * store's opening and closing, tokens, backups, readiness and metrics, and
 * the store reads of the watch hub. server/ reaches the store only through
 * these and the other api/ operations. */
#ifndef API_ADMIN_H
#define API_ADMIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "api/service.h"
#include "lib/ki.h"

/* Where the store is: the backend and its settings (the configuration's
 * store, data-dir, map-size, map-max, history and etcd-* options). */
typedef struct api_store_cfg {
	const char *backend;     /* "lmdb" (NULL too) or "etcd" */
	const char *dir;         /* lmdb: the store's directory */
	uint64_t map_size, map_max;
	uint64_t history;        /* events kept for watches */
	/* etcd: client URLs, key prefix, TLS files, user and the file of its
	 * password ("" or NULL: none). */
	const char *etcd_endpoints, *etcd_prefix;
	const char *etcd_cacert, *etcd_cert, *etcd_key;
	const char *etcd_user, *etcd_password_file;
	/* etcd: every read asks etcd (no watch cache; config etcd-cache). */
	int etcd_nocache;
} api_store_cfg;

/* Opens the store c names with the API's facet function: LMDB's in
 * c->dir (map_size bytes of map, growing up to map_max) or etcd's; shared:
 * another process (a running daemon) may have it open (the admin
 * commands, which keep no watch cache); nosync: commits are not synced
 * (tests). Returns KI_OK with
 * *out, which the caller closes with api_store_close(). KI_EIO when the
 * etcd password file cannot be read. */
int api_store_open(store **out, const api_store_cfg *c, int shared,
	int nosync);
void api_store_close(store *st);
/* For a store that other daemons write too (etcd): calls fn(arg, rv) from
 * a thread of the store's whenever any daemon's commit moves the
 * resourceVersion, until api_store_unfollow(). Nothing for LMDB, whose
 * only writer is this daemon. */
int api_store_follow(store *st, void (*fn)(void *arg, uint64_t rv),
	void *arg);
void api_store_unfollow(store *st);

/* Checks every object of st and the indexes that find it (store_verify),
 * its digest recomputed from its content as the by-digest endpoint serves
 * it; each problem is a line on out. repair: missing digest index entries
 * are put back (st opened unshared). Returns store_verify's result, with
 * its counts in *vs. */
int api_fsck(store *st, int repair, FILE *out, store_verify_stats *vs);

/* What api_migrate copied and found. */
typedef struct api_migrate_stats {
	uint64_t events, puts, deletes;  /* events replayed */
	uint64_t tokens;                 /* tokens copied */
	uint64_t objects, rv;            /* in the destination after it */
} api_migrate_stats;

/* Copies every object, event and token of src into dst, which must be
 * empty (KI_EEXIST otherwise), by replaying src's events from 0 in
 * batches of batch per commit (0: 64), so that ids, resourceVersions,
 * digests and the watch history are the source's (KI_EGONE when src's
 * older events were trimmed). Then reads both back and compares their
 * objects, facet counts, events and tokens: the per-kind counts and a
 * SHA-256 of each side go to out; KI_ESTORE when they differ. On failure
 * err holds what went wrong. */
int api_migrate(store *src, store *dst, size_t batch, FILE *out,
	api_migrate_stats *stats, char *err, size_t errlen);

/* The number of tokens in the store, in *n (0 when it cannot be read). */
int api_token_count(store *st, uint64_t *n);

/* The store's resourceVersion in *rv (left as it is when it cannot be
 * read). */
int api_current_rv(store *st, uint64_t *rv);

/* Writes a consistent, compacted copy of st to a new file at path (never
 * an existing one), synced. Returns KI_OK with *bytes its size. When the
 * file cannot be created: KI_EIO with *open_errno the errno (EEXIST: it
 * exists). Any other failure: its code, the file removed, *open_errno 0. */
int api_backup_file(store *st, const char *path, long long *bytes,
	int *open_errno);

/* POST /admin/backup's operation: body {"path": "/abs/file"}; fills r
 * (201 and a Backup object, or a Status). */
void api_admin_backup(api_ctx *ctx, const char *body, size_t len,
	api_resp *r);

/* The token operations (admins only: the caller checks): list, create from
 * body {"role", "source", "prefix", "description"} (the answer holds the
 * secret, which is shown nowhere else), revoke by id. Each fills r. */
void api_admin_token_list(api_ctx *ctx, api_resp *r);
void api_admin_token_create(api_ctx *ctx, const char *body, size_t len,
	api_resp *r);
void api_admin_token_revoke(api_ctx *ctx, const char *id, api_resp *r);

/* KI_OK when the store can be read (readiness). */
int api_ready(api_ctx *ctx);

/* Appends the API's and the store's metrics, in Prometheus' text format:
 * lists, group commits, remembered bundle parts, the store's map, log and
 * checkpoints, and its resourceVersion. */
void api_metrics(api_ctx *ctx, ki_buf *b);

#endif
