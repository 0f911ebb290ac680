/* store/backend.h — how store/dispatch.c reaches a backend: every backend's
 * store begins with a pointer to its table of operations, and every
 * transaction with a pointer to its store, so that the functions of
 * store/store.h dispatch on either. Only store/ includes it. */
#ifndef STORE_BACKEND_H
#define STORE_BACKEND_H

#include "store/store.h"

typedef struct store_ops {
	const char *name;    /* "lmdb", "etcd" */
	void (*close)(store *s);
	int (*begin)(store *s, int write, store_txn **out);
	int (*begin_child)(store_txn *parent, store_txn **out);
	/* store_begin_ahead (NULL: begin(s, 0, out)). */
	int (*begin_ahead)(store *s, store_txn **out);
	int (*commit)(store_txn *t);
	void (*abort)(store_txn *t);
	uint64_t (*writes)(store_txn *t);
	int (*changes)(store_txn *t, uint64_t *out);
	uint64_t (*rv)(store_txn *t);
	uint64_t (*oldest_event)(store_txn *t);
	int (*get_by_name)(store_txn *t, int kind, const char *name, size_t len,
		store_obj *out);
	int (*get_by_digest)(store_txn *t,
		const uint8_t digest[STORE_DIGEST_LEN], store_obj *out);
	int (*get_by_natkey)(store_txn *t, int kind, const char *key, size_t len,
		store_obj *out);
	int (*get_by_seq)(store_txn *t, uint64_t id, store_obj *out);
	uint64_t (*next_rv)(store_txn *t);
	int (*put)(store_txn *t, store_obj *o);
	int (*del)(store_txn *t, int kind, const char *name, size_t len,
		const store_obj *final);
	int (*list)(store_txn *t, int kind, uint64_t after, store_each_fn fn,
		void *arg);
	int (*count)(store_txn *t, int kind, uint64_t *out);
	int (*list_index)(store_txn *t, int kind, const store_term *terms,
		size_t nterms, uint64_t after, store_each_fn fn, void *arg);
	int (*facets)(store_txn *t, int kind, store_facet_fn fn, void *arg);
	int (*each_referrer)(store_txn *t,
		const uint8_t digest[STORE_DIGEST_LEN], store_each_fn fn,
		void *arg);
	int (*events_since)(store_txn *t, uint64_t rv, store_event_fn fn,
		void *arg);
	int (*token_put)(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
		const char *value, size_t len);
	int (*token_get)(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
		const char **value, size_t *len);
	int (*token_delete)(store_txn *t,
		const uint8_t hash[STORE_DIGEST_LEN]);
	int (*token_list)(store_txn *t, store_token_fn fn, void *arg);
	int (*token_count)(store_txn *t, uint64_t *out);
	int (*verify)(store *s, int repair, store_check_fn check,
		store_problem_fn problem, void *arg, store_verify_stats *out);
	int (*idle)(store *s);
	/* store_sync (NULL: reads never lag). */
	int (*sync)(store *s, uint64_t rv, long timeout_ms);
	/* Hands one formatted line to the store's log hook, if any. */
	void (*logline)(const store *s, int level, const char *line);
} store_ops;

/* The first member of every backend's struct store. */
typedef struct store_head {
	const store_ops *ops;
} store_head;

/* The first member of every backend's struct store_txn. */
typedef struct store_txn_head {
	store *s;
} store_txn_head;

#endif
