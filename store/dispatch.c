/* store/dispatch.c — the functions of store/store.h, each handed to the
 * backend that opened the store (store/backend.h), and what is the same
 * for every backend (ids, the log hook). */
#include <stdarg.h>
#include <stdio.h>

#include "store/backend.h"

#define ID_SEQ_MASK ((UINT64_C(1) << 56) - 1)

static const store_ops *
ops_of(const store *s)
{
	return ((const store_head *)(const void *)s)->ops;
}

static store *
store_of(store_txn *t)
{
	return ((store_txn_head *)(void *)t)->s;
}

const char *
store_backend_name(const store *s)
{
	return ops_of(s)->name;
}

void
store_close(store *s)
{
	if (s != NULL)
		ops_of(s)->close(s);
}

int
store_begin(store *s, int write, store_txn **out)
{
	return ops_of(s)->begin(s, write, out);
}

int
store_begin_ahead(store *s, store_txn **out)
{
	if (ops_of(s)->begin_ahead == NULL)
		return ops_of(s)->begin(s, 0, out);
	return ops_of(s)->begin_ahead(s, out);
}

int
store_begin_child(store_txn *parent, store_txn **out)
{
	return ops_of(store_of(parent))->begin_child(parent, out);
}

int
store_commit(store_txn *t)
{
	return ops_of(store_of(t))->commit(t);
}

void
store_abort(store_txn *t)
{
	if (t != NULL)
		ops_of(store_of(t))->abort(t);
}

uint64_t
store_writes(store_txn *t)
{
	return ops_of(store_of(t))->writes(t);
}

int
store_changes(store_txn *t, uint64_t *out)
{
	return ops_of(store_of(t))->changes(t, out);
}

uint64_t
store_rv(store_txn *t)
{
	return ops_of(store_of(t))->rv(t);
}

uint64_t
store_oldest_event(store_txn *t)
{
	return ops_of(store_of(t))->oldest_event(t);
}

int
store_get_by_name(store_txn *t, int kind, const char *name, size_t len,
	store_obj *out)
{
	return ops_of(store_of(t))->get_by_name(t, kind, name, len, out);
}

int
store_get_by_digest(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_obj *out)
{
	return ops_of(store_of(t))->get_by_digest(t, digest, out);
}

int
store_get_by_natkey(store_txn *t, int kind, const char *key, size_t len,
	store_obj *out)
{
	return ops_of(store_of(t))->get_by_natkey(t, kind, key, len, out);
}

int
store_get_by_seq(store_txn *t, uint64_t id, store_obj *out)
{
	return ops_of(store_of(t))->get_by_seq(t, id, out);
}

uint64_t
store_next_rv(store_txn *t)
{
	return ops_of(store_of(t))->next_rv(t);
}

int
store_put(store_txn *t, store_obj *o)
{
	return ops_of(store_of(t))->put(t, o);
}

int
store_delete(store_txn *t, int kind, const char *name, size_t len,
	const store_obj *final)
{
	return ops_of(store_of(t))->del(t, kind, name, len, final);
}

int
store_list(store_txn *t, int kind, uint64_t after, store_each_fn fn,
	void *arg)
{
	return ops_of(store_of(t))->list(t, kind, after, fn, arg);
}

int
store_count(store_txn *t, int kind, uint64_t *out)
{
	return ops_of(store_of(t))->count(t, kind, out);
}

int
store_list_index(store_txn *t, int kind, const store_term *terms,
	size_t nterms, uint64_t after, store_each_fn fn, void *arg)
{
	return ops_of(store_of(t))->list_index(t, kind, terms, nterms, after, fn, arg);
}

int
store_facets(store_txn *t, int kind, store_facet_fn fn, void *arg)
{
	return ops_of(store_of(t))->facets(t, kind, fn, arg);
}

int
store_each_referrer(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_each_fn fn, void *arg)
{
	return ops_of(store_of(t))->each_referrer(t, digest, fn, arg);
}

int
store_events_since(store_txn *t, uint64_t rv, store_event_fn fn,
	void *arg)
{
	return ops_of(store_of(t))->events_since(t, rv, fn, arg);
}

int
store_token_put(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char *value, size_t len)
{
	return ops_of(store_of(t))->token_put(t, hash, value, len);
}

int
store_token_get(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char **value, size_t *len)
{
	return ops_of(store_of(t))->token_get(t, hash, value, len);
}

int
store_token_delete(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN])
{
	return ops_of(store_of(t))->token_delete(t, hash);
}

int
store_token_list(store_txn *t, store_token_fn fn, void *arg)
{
	return ops_of(store_of(t))->token_list(t, fn, arg);
}

int
store_token_count(store_txn *t, uint64_t *out)
{
	return ops_of(store_of(t))->token_count(t, out);
}

int
store_verify(store *s, int repair, store_check_fn check,
	store_problem_fn problem, void *arg, store_verify_stats *out)
{
	return ops_of(s)->verify(s, repair, check, problem, arg, out);
}

int
store_sync(store *s, uint64_t rv, long timeout_ms)
{
	if (ops_of(s)->sync == NULL)
		return KI_OK;
	return ops_of(s)->sync(s, rv, timeout_ms);
}

int
store_idle(store *s)
{
	return ops_of(s)->idle(s);
}

uint64_t
store_id(int kind, uint64_t seq)
{
	return (uint64_t)(uint8_t)kind << 56 | (seq & ID_SEQ_MASK);
}

int
store_id_kind(uint64_t id)
{
	return (int)(id >> 56);
}

void
store_log(const store *s, int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ops_of(s)->logline(s, level, line);
}
