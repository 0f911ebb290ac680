/* api/admin.c — the administrative operations: opening the store,
 * tokens, backups, readiness and metrics. */
#include "api/admin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "api/auth.h"
#include "api/jcs.h"
#include "api/kinds.h"
#include "api/version.h"
#include "store/store.h"
#include "api/labels.h"
#include "api/object.h"
#include "api/parts.h"
#include "api/threshold.h"
#include "lib/log.h"
#include "store/etcd.h"
#include "store/lmdb.h"

/* A Status answer without a field cause. */
#define fail(r, code, reason, ...) \
	api_resp_fail(r, code, reason, NULL, __VA_ARGS__)

/* The store's log hook: its lines go to the daemon's log. */
static void
store_log_hook(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level == STORE_LOG_ERROR)
		log_error("%s", msg);
	else if (level == STORE_LOG_WARN)
		log_warn("%s", msg);
	else
		log_info("%s", msg);
}

static const char *
or_null(const char *s)
{
	return s != NULL && *s != '\0' ? s : NULL;
}

/* Reads the first line of path (a password) into buf. */
static int
read_secret(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	int rc = KI_EIO;

	buf[0] = '\0';
	if (f == NULL)
		return KI_EIO;
	if (fgets(buf, (int)size, f) != NULL) {
		buf[strcspn(buf, "\r\n")] = '\0';
		rc = KI_OK;
	}
	fclose(f);
	return rc;
}

static int
open_etcd(store **out, const api_store_cfg *c, const store_options *so)
{
	store_etcd_options eo;
	char password[256];
	int rc = KI_OK;

	memset(&eo, 0, sizeof(eo));
	eo.endpoints = c->etcd_endpoints;
	eo.prefix = or_null(c->etcd_prefix);
	eo.cacert = or_null(c->etcd_cacert);
	eo.cert = or_null(c->etcd_cert);
	eo.key = or_null(c->etcd_key);
	eo.user = or_null(c->etcd_user);
	eo.nocache = c->etcd_nocache;
	password[0] = '\0';
	if (or_null(c->etcd_password_file) != NULL)
		rc = read_secret(c->etcd_password_file, password,
		    sizeof(password));
	eo.password = password;
	if (rc == KI_OK)
		rc = store_etcd_open(out, &eo, so);
	OPENSSL_cleanse(password, sizeof(password));
	return rc;
}

int
api_store_open(store **out, const api_store_cfg *c, int shared, int nosync)
{
	store_options so;
	store_lmdb_options lo;

	memset(&so, 0, sizeof(so));
	memset(&lo, 0, sizeof(lo));
	so.log = store_log_hook;
	lo.map_size = c->map_size;
	lo.map_max = c->map_max;
	so.history = c->history;
	so.facets = api_store_facets;
	so.shared = shared;
	so.nosync = nosync;
	if (c->backend != NULL && strcmp(c->backend, "etcd") == 0) {
		api_store_cfg ec = *c;

		/* An admin command beside the daemon reads once: no copy. */
		ec.etcd_nocache |= shared;
		return open_etcd(out, &ec, &so);
	}
	return store_lmdb_open(out, c->dir, &so, &lo);
}

void
api_store_close(store *st)
{
	store_close(st);
}

int
api_store_follow(store *st, void (*fn)(void *arg, uint64_t rv), void *arg)
{
	if (strcmp(store_backend_name(st), "etcd") != 0)
		return KI_OK;
	return store_etcd_follow(st, fn, arg);
}

void
api_store_unfollow(store *st)
{
	if (strcmp(store_backend_name(st), "etcd") == 0)
		store_etcd_unfollow(st);
}

/* fsck: 0 when o's digest is the SHA-256 of its canonical content. */
static int
fsck_digest(void *arg, const store_obj *o)
{
	const api_kind *k = api_kind_by_id(o->kind);
	uint8_t got[API_DIGEST_LEN];
	ki_buf b;
	int bad = 1;

	(void)arg;
	if (k == NULL)
		return 1;
	ki_buf_init(&b);
	ki_buf_printf(&b, "{\"apiVersion\":\"" API_GROUP_VERSION
	    "\",\"kind\":\"%s\",\"spec\":", k->kind);
	ki_buf_append(&b, o->json + o->spec_off, o->spec_len);
	ki_buf_putc(&b, '}');
	if (!b.oom && api_sha256(b.data, b.len, got) == KI_OK)
		bad = memcmp(got, o->digest, API_DIGEST_LEN) != 0;
	ki_buf_free(&b);
	return bad;
}

static void
fsck_problem(void *arg, uint64_t id, const char *what)
{
	fprintf(arg, "object of kind %d, number %llu: %s\n", store_id_kind(id),
	    (unsigned long long)(id & ((UINT64_C(1) << 56) - 1)), what);
}

int
api_fsck(store *st, int repair, FILE *out, store_verify_stats *vs)
{
	return store_verify(st, repair, fsck_digest, fsck_problem, out, vs);
}

int
api_token_count(store *st, uint64_t *n)
{
	store_txn *t;
	int rc;

	*n = 0;
	if ((rc = store_begin(st, 0, &t)) == KI_OK) {
		rc = store_token_count(t, n);
		store_abort(t);
	}
	return rc;
}

int
api_current_rv(store *st, uint64_t *rv)
{
	store_txn *t;
	int rc;

	if ((rc = store_begin(st, 0, &t)) == KI_OK) {
		*rv = store_rv(t);
		store_abort(t);
	}
	return rc;
}

int
api_backup_file(store *st, const char *path, long long *bytes,
	int *open_errno)
{
	struct stat sb;
	int fd, rc;

	*bytes = 0;
	*open_errno = 0;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0) {
		*open_errno = errno;
		return KI_EIO;
	}
	/* etcd: the whole cluster's database, as etcdctl snapshot save
	 * writes it. */
	if (strcmp(store_backend_name(st), "etcd") == 0)
		rc = store_etcd_backup_fd(st, fd);
	else
		rc = store_lmdb_backup_fd(st, fd);
	if (rc == KI_OK && fsync(fd) != 0)
		rc = KI_EIO;
	if (rc == KI_OK && fstat(fd, &sb) != 0)
		rc = KI_EIO;
	close(fd);
	if (rc != KI_OK) {
		unlink(path);
		return rc;
	}
	*bytes = (long long)sb.st_size;
	return KI_OK;
}

/* A request body of the admin API: an object whose members are among
 * keys (NULL-terminated), each a string, those in nonempty not "".
 * Returns 1, or 0 with r filled (422 naming the member): a member that is
 * not read would be ignored silently (an "expires" believed honoured), and
 * a "source" of "" or null would make an unlimited token. */
static int
members_ok(struct json_object *o, const char *const *keys,
	const char *const *nonempty, api_resp *r)
{
	if (!json_object_is_type(o, json_type_object)) {
		fail(r, 400, "BadRequest", "the body must be a JSON object");
		return 0;
	}
	json_object_object_foreach(o, key, v) {
		const char *const *k = keys;

		while (*k != NULL && strcmp(*k, key) != 0)
			k++;
		if (*k == NULL) {
			fail(r, 422, "Invalid", "%.64s: unknown field", key);
			return 0;
		}
		if (!json_object_is_type(v, json_type_string)) {
			fail(r, 422, "Invalid", "%s: must be a string", key);
			return 0;
		}
		for (k = nonempty; *k != NULL; k++) {
			if (strcmp(*k, key) == 0 && json_object_get_string_len(v) == 0) {
				fail(r, 422, "Invalid", "%s: must not be empty (leave "
				    "it out for none)", key);
				return 0;
			}
		}
	}
	return 1;
}

void
api_admin_backup(api_ctx *ctx, const char *body, size_t len, api_resp *r)
{
	struct json_object *o = NULL;
	const char *path;
	api_status st;
	long long bytes;
	int rc, err;

	api_status_init(&st);
	if (api_json_parse(body, len, 4, &o, &st) != KI_OK) {
		api_resp_status(r, &st);
		api_status_free(&st);
		return;
	}
	api_status_free(&st);
	{
		static const char *const keys[] = { "path", NULL };

		if (!members_ok(o, keys, keys, r)) {
			json_object_put(o);
			return;
		}
	}
	path = json_object_get_string(json_object_object_get(o, "path"));
	if (path == NULL || path[0] != '/') {
		json_object_put(o);
		fail(r, 422, "Invalid", "path: an absolute path for the new file is "
		    "required");
		return;
	}
	rc = api_backup_file(ctx->st, path, &bytes, &err);
	if (err != 0) {
		fail(r, err == EEXIST ? 409 : 422, err == EEXIST ?
		    "AlreadyExists" : "Invalid", "path: %.200s: %s", path,
		    strerror(err));
		json_object_put(o);
		return;
	}
	if (rc != KI_OK) {
		json_object_put(o);
		api_fail_rc(r, rc, "backup");
		return;
	}
	ki_buf_puts(&r->body, "{\"kind\":\"Backup\",\"apiVersion\":"
	    "\"kernelindex.dev/v1alpha1\",\"path\":");
	ki_buf_json_string(&r->body, path, strlen(path));
	ki_buf_printf(&r->body, ",\"bytes\":%lld}", bytes);
	json_object_put(o);
	r->code = 201;
}

void
api_admin_token_list(api_ctx *ctx, api_resp *r)
{
	int rc = api_token_list(ctx->st, &r->body);

	if (rc != KI_OK)
		api_fail_rc(r, rc, "listing tokens");
	else
		r->code = 200;
}

void
api_admin_token_create(api_ctx *ctx, const char *body, size_t len,
	api_resp *r)
{
	struct json_object *o = NULL;
	api_status st;
	char secret[64], id[16];
	int role, rc;

	api_status_init(&st);
	if (api_json_parse(body, len, 8, &o, &st) != KI_OK) {
		api_resp_status(r, &st);
		api_status_free(&st);
		return;
	}
	api_status_free(&st);
	{
		static const char *const keys[] = { "role", "source", "prefix",
			"description", NULL };
		static const char *const nonempty[] = { "source", "prefix",
			NULL };

		if (!members_ok(o, keys, nonempty, r)) {
			json_object_put(o);
			return;
		}
	}
	role = api_role_parse(json_object_get_string(
	    json_object_object_get(o, "role")));
	if (role == API_ROLE_NONE) {
		json_object_put(o);
		fail(r, 422, "Invalid", "role: must be reader, writer or admin");
		return;
	}
	{
		const char *why = api_token_limits_bad(json_object_get_string(
		    json_object_object_get(o, "source")), json_object_get_string(
		    json_object_object_get(o, "prefix")));

		if (why != NULL) {
			json_object_put(o);
			fail(r, 422, "Invalid", "%s", why);
			return;
		}
	}
	rc = api_token_create(ctx->st, role, json_object_get_string(
	    json_object_object_get(o, "source")), json_object_get_string(
	    json_object_object_get(o, "prefix")), json_object_get_string(
	    json_object_object_get(o, "description")), ctx->now(),
	    secret, id);
	json_object_put(o);
	if (rc != KI_OK) {
		api_fail_rc(r, rc, "creating the token");
		return;
	}
	ki_buf_printf(&r->body, "{\"kind\":\"Token\",\"apiVersion\":"
	    "\"kernelindex.dev/v1alpha1\",\"id\":\"%s\",\"role\":\"%s\","
	    "\"token\":\"%s\"}", id, api_role_name(role), secret);
	OPENSSL_cleanse(secret, sizeof(secret));
	r->secret = 1;
	r->code = 201;
}

void
api_admin_token_revoke(api_ctx *ctx, const char *id, api_resp *r)
{
	int rc = api_token_revoke(ctx->st, id);

	if (rc == KI_ENOTFOUND)
		fail(r, 404, "NotFound", "no token with id \"%.16s\"", id);
	else if (rc != KI_OK)
		api_fail_rc(r, rc, "revoking");
	else {
		ki_buf_puts(&r->body, "{\"kind\":\"Status\",\"apiVersion\":"
		    "\"v1\",\"metadata\":{},\"status\":\"Success\",\"code\":200}");
		r->code = 200;
	}
}

int
api_ready(api_ctx *ctx)
{
	store_txn *t;
	int rc;

	if ((rc = store_begin(ctx->st, 0, &t)) != KI_OK)
		return rc;
	store_abort(t);
	return KI_OK;
}

void
api_metrics(api_ctx *ctx, ki_buf *b)
{
	store_lmdb_stats ss;

	api_threshold_metrics(b);

	{
		static const char *const paths[API_LIST_PATHS] = { "name", "index",
			"range" };
		const api_list_stats *ls = &ctx->lists;

		ki_buf_puts(b, "# HELP kernelindex_list_requests_total Lists, by "
		    "how they were served: a name lookup, index postings, or a "
		    "read of the kind in order.\n# TYPE "
		    "kernelindex_list_requests_total counter\n");
		for (int i = 0; i < API_LIST_PATHS; i++)
			ki_buf_printf(b, "kernelindex_list_requests_total{path=\"%s\"} "
			    "%llu\n", paths[i], (unsigned long long)
			    __atomic_load_n(&ls->requests[i], __ATOMIC_RELAXED));
		ki_buf_printf(b, "# HELP kernelindex_list_objects_examined_total "
		    "Objects lists read and matched against their selectors.\n"
		    "# TYPE kernelindex_list_objects_examined_total counter\n"
		    "kernelindex_list_objects_examined_total %llu\n"
		    "# HELP kernelindex_list_items_returned_total Items lists "
		    "answered.\n# TYPE kernelindex_list_items_returned_total "
		    "counter\nkernelindex_list_items_returned_total %llu\n",
		    (unsigned long long)__atomic_load_n(&ls->examined,
		    __ATOMIC_RELAXED), (unsigned long long)__atomic_load_n(
		    &ls->returned, __ATOMIC_RELAXED));
	}
	{
		store_commit_stats cs;

		store_committer_stats(ctx->committer, &cs);
		ki_buf_printf(b, "# HELP kernelindex_commit_batches_total Synced "
		    "commits of the group committer.\n# TYPE "
		    "kernelindex_commit_batches_total counter\n"
		    "kernelindex_commit_batches_total %llu\n"
		    "# HELP kernelindex_commit_requests_total Write requests those "
		    "commits carried.\n# TYPE kernelindex_commit_requests_total "
		    "counter\nkernelindex_commit_requests_total %llu\n"
		    "# HELP kernelindex_commit_redone_total Batches run again with "
		    "each request in a transaction of its own, after one failed "
		    "having written.\n# TYPE kernelindex_commit_redone_total "
		    "counter\nkernelindex_commit_redone_total %llu\n"
		    "# HELP kernelindex_commit_seconds_total Time in commits (page "
		    "writes and syncs).\n# TYPE kernelindex_commit_seconds_total "
		    "counter\nkernelindex_commit_seconds_total %.6f\n",
		    (unsigned long long)cs.batches, (unsigned long long)cs.jobs,
		    (unsigned long long)cs.redone, (double)cs.commit_us / 1e6);
	}
	ki_buf_printf(b, "# HELP kernelindex_bundle_parts_remembered_total "
	    "Bundle parts taken from memory (the same bytes validated before) "
	    "instead of parsed again.\n# TYPE "
	    "kernelindex_bundle_parts_remembered_total counter\n"
	    "kernelindex_bundle_parts_remembered_total %llu\n",
	    (unsigned long long)api_part_hits());
	if (store_lmdb_stat(ctx->st, &ss) == KI_OK)
		ki_buf_printf(b, "# HELP kernelindex_store_map_bytes LMDB map size.\n"
		    "# TYPE kernelindex_store_map_bytes gauge\n"
		    "kernelindex_store_map_bytes %llu\n"
		    "# HELP kernelindex_store_used_bytes LMDB pages in use.\n"
		    "# TYPE kernelindex_store_used_bytes gauge\n"
		    "kernelindex_store_used_bytes %llu\n"
		    "# HELP kernelindex_store_log_bytes Redo log written since the "
		    "last checkpoint.\n# TYPE kernelindex_store_log_bytes gauge\n"
		    "kernelindex_store_log_bytes %llu\n"
		    "# HELP kernelindex_store_checkpoints_total Checkpoints (the "
		    "LMDB file synced, the log started over).\n# TYPE "
		    "kernelindex_store_checkpoints_total counter\n"
		    "kernelindex_store_checkpoints_total %llu\n"
		    "# HELP kernelindex_store_recovered_transactions Transactions "
		    "applied from the redo log when the store was opened.\n# TYPE "
		    "kernelindex_store_recovered_transactions gauge\n"
		    "kernelindex_store_recovered_transactions %llu\n",
		    (unsigned long long)ss.map_size,
		    (unsigned long long)ss.map_used,
		    (unsigned long long)ss.log_bytes,
		    (unsigned long long)ss.checkpoints,
		    (unsigned long long)ss.recovered);
	{
		store_etcd_stats es;

		if (store_etcd_stats_get(ctx->st, &es) == KI_OK)
			ki_buf_printf(b, "# HELP kernelindex_etcd_requests_total "
			    "Requests sent to etcd, by kind.\n# TYPE "
			    "kernelindex_etcd_requests_total counter\n"
			    "kernelindex_etcd_requests_total{kind=\"range\"} %llu\n"
			    "kernelindex_etcd_requests_total{kind=\"txn\"} %llu\n"
			    "# HELP kernelindex_etcd_cache_ready 1 while the watch cache "
			    "serves reads (0: they go to etcd).\n# TYPE "
			    "kernelindex_etcd_cache_ready gauge\n"
			    "kernelindex_etcd_cache_ready %d\n"
			    "# HELP kernelindex_etcd_cache_revision The etcd revision "
			    "the watch cache has applied.\n# TYPE "
			    "kernelindex_etcd_cache_revision gauge\n"
			    "kernelindex_etcd_cache_revision %lld\n"
			    "# HELP kernelindex_etcd_cache_loads_total Times the watch "
			    "cache read the whole keyspace (at start, after a "
			    "compaction).\n# TYPE kernelindex_etcd_cache_loads_total "
			    "counter\nkernelindex_etcd_cache_loads_total %llu\n"
			    "# HELP kernelindex_etcd_cache_keys Keys the watch cache "
			    "holds.\n# TYPE kernelindex_etcd_cache_keys gauge\n"
			    "kernelindex_etcd_cache_keys %llu\n",
			    (unsigned long long)es.ranges, (unsigned long long)es.txns,
			    es.cache_ready, (long long)es.cache_rev,
			    (unsigned long long)es.cache_loads,
			    (unsigned long long)es.cache_keys);
	}
	{
		store_txn *t;

		if (store_begin(ctx->st, 0, &t) == KI_OK) {
			ki_buf_printf(b, "# HELP kernelindex_store_resource_version The "
			    "store's resourceVersion.\n# TYPE "
			    "kernelindex_store_resource_version gauge\n"
			    "kernelindex_store_resource_version %llu\n",
			    (unsigned long long)store_rv(t));
			store_abort(t);
		}
	}
	if (ctx->more_metrics != NULL)
		ctx->more_metrics(ctx->more_metrics_arg, b);
}
