/* store/lmdb_ops.c — the LMDB backend's entry points: its table of
 * operations (store/backend.h) and the opens that hand it to the store,
 * apart from the files it names so that they need nothing of this one. */
#include "store/lmdb_int.h"

static const store_ops lm_ops = {
	.name = "lmdb",
	.close = lm_close,
	.begin = lm_begin,
	.begin_child = lm_begin_child,
	.commit = lm_commit,
	.abort = lm_abort,
	.writes = lm_writes,
	.changes = lm_changes,
	.rv = lm_rv,
	.oldest_event = lm_oldest_event,
	.get_by_name = lm_get_by_name,
	.get_by_digest = lm_get_by_digest,
	.get_by_natkey = lm_get_by_natkey,
	.get_by_seq = lm_get_by_seq,
	.next_rv = lm_next_rv,
	.put = lm_put,
	.del = lm_delete,
	.list = lm_list,
	.count = lm_count,
	.list_index = lm_list_index,
	.facets = lm_facets,
	.each_referrer = lm_each_referrer,
	.events_since = lm_events_since,
	.token_put = lm_token_put,
	.token_get = lm_token_get,
	.token_delete = lm_token_delete,
	.token_list = lm_token_list,
	.token_count = lm_token_count,
	.verify = lm_verify,
	.idle = lm_idle,
	.logline = lm_logline,
};

int
store_open(store **out, const char *dir, const store_options *opt)
{
	return lm_open(out, dir, opt, NULL, &lm_ops);
}

int
store_lmdb_open(store **out, const char *dir, const store_options *opt,
	const store_lmdb_options *lo)
{
	return lm_open(out, dir, opt, lo, &lm_ops);
}
