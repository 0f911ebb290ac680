/* api/list.c — list: pages and continue tokens (the query itself is in
 * api/query.c), and the facet counts of the catalogue. */
#include "api/service_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/labels.h"
#include "api/table.h"

/* ---- list ---- */

/* A list without a limit keeps this much of its items in memory, then
 * moves them to an unlinked file, so that memory stays bounded however
 * many objects it holds. */
#define LIST_KEEP_BYTES (1u << 20)

typedef struct list_arg {
	ki_buf *out;
	const api_kind *kind;
	const api_query *q;
	uint64_t limit, n;
	int more, table, include;
	double now;
	uint64_t last;              /* id of the last item */
	uint64_t examined;          /* objects the query was matched against */
	/* A whole list (no limit): out is moved to spill as it grows. */
	int whole;
	const char *spill_dir;
	FILE *spill;
	uint64_t spilled;
} list_arg;

/* Moves a whole list's rendered items to its file once they outgrow
 * memory (or at once when flush is set and a file exists). */
static int
list_spill(list_arg *a, int flush)
{
	if (!a->whole || a->out->len == 0 || (a->out->len < LIST_KEEP_BYTES &&
	    !(flush && a->spill != NULL)))
		return KI_OK;
	if (a->spill == NULL && (a->spill = api_spill_open(a->spill_dir)) ==
	    NULL)
		return KI_EIO;
	if (fwrite(a->out->data, 1, a->out->len, a->spill) != a->out->len)
		return KI_EIO;
	a->spilled += a->out->len;
	ki_buf_reset(a->out);
	return KI_OK;
}

/* Makes room for a page of limit items the size of the first, at once:
 * growing by doubling copies what the page holds at each step (4 to 5
 * copies of a page of 100 runs). At most 8 MiB ahead, and never past the
 * buffer's own limit. */
static void
page_reserve(ki_buf *b, size_t item, uint64_t limit)
{
	size_t want;

	if (limit > 1024)
		limit = 1024;
	if (item + 1 > ((size_t)8 << 20) / (size_t)limit)
		return;
	want = (item + 1) * (size_t)limit + 256;
	if (b->limit != 0 && want > b->limit - b->len)
		return;
	(void)ki_buf_reserve(b, want);
}

static int
list_one(void *arg, const store_obj *o)
{
	list_arg *a = arg;

	a->examined++;
	if (!api_query_match(a->q, o))
		return 0;
	if (a->limit != 0 && a->n == a->limit) {
		a->more = 1;
		return 1;
	}
	if (a->table) {
		api_table_row(a->out, a->kind, o, a->include, a->now, a->n > 0);
	} else {
		if (a->n > 0)
			ki_buf_putc(a->out, ',');
		else if (a->limit > 1 && !a->whole)
			page_reserve(a->out, o->json_len, a->limit);
		ki_buf_append(a->out, o->json, o->json_len);
	}
	a->n++;
	a->last = o->seq;
	return a->out->oom ? KI_ENOMEM : list_spill(a, 0);
}

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void
b64_encode(const char *s, size_t n, ki_buf *out)
{
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
		size_t k = n - i < 3 ? n - i : 3;

		if (k > 1)
			v |= (uint32_t)(unsigned char)s[i + 1] << 8;
		if (k > 2)
			v |= (unsigned char)s[i + 2];
		for (size_t j = 0; j < k + 1; j++)
			ki_buf_putc(out, b64url[(v >> (18 - 6 * j)) & 63]);
	}
}

static int
b64_decode(const char *s, ki_buf *out)
{
	uint32_t v = 0;
	int bits = 0;

	for (; *s; s++) {
		const char *p = strchr(b64url, *s);

		if (p == NULL)
			return KI_EINVAL;
		v = (v << 6) | (uint32_t)(p - b64url);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			ki_buf_putc(out, (char)((v >> bits) & 0xff));
		}
	}
	return out->oom ? KI_ENOMEM : KI_OK;
}

/* Reads a decoded continue token "i:<id>" of kind into *id. */
static int
parse_after(const ki_buf *tok, int kind, uint64_t *id)
{
	unsigned long long v = 0;

	if (tok->len < 3 || tok->len > 22 || memcmp(tok->data, "i:", 2) != 0)
		return KI_EINVAL;
	for (size_t i = 2; i < tok->len; i++) {
		unsigned digit = (unsigned)(tok->data[i] - '0');

		/* 20 digits may pass 2^64: wrapped, a page would start
		 * anywhere. */
		if (tok->data[i] < '0' || tok->data[i] > '9' ||
		    v > (UINT64_MAX - digit) / 10)
			return KI_EINVAL;
		v = v * 10 + digit;
	}
	if (store_id_kind(v) != kind)
		return KI_EINVAL;
	*id = v;
	return KI_OK;
}

void
api_list(api_ctx *ctx, const api_kind *k, const api_list_opts *opt,
	api_resp *r)
{
	store_txn *txn = NULL;
	api_query q;
	list_arg a;
	ki_buf after, tok, items;
	uint64_t after_id = 0;
	api_status st;
	int rc, path;

	memset(&a, 0, sizeof(a));
	memset(&q, 0, sizeof(q));
	ki_buf_init(&after);
	ki_buf_init(&tok);
	ki_buf_init(&items);
	api_status_init(&st);
	if (api_query_parse(&q, k, opt->label_selector, opt->field_selector,
	    r) != KI_OK)
		goto out;
	a.out = &r->body;
	a.kind = k;
	a.q = &q;
	a.table = opt->table;
	a.include = opt->include;
	a.now = ctx->now();
	a.limit = opt->limit;
	if (a.limit > ctx->lim->max_page)
		a.limit = ctx->lim->max_page;
	/* Without a limit the answer is the whole collection, as
	 * kube-apiserver's: one read transaction renders it (one
	 * resourceVersion), its items spilled to a file as they come. */
	a.whole = a.limit == 0;
	a.spill_dir = ctx->spill_dir;
	if (a.whole)
		a.out = &items;
	if (opt->continue_token != NULL && *opt->continue_token != '\0') {
		/* Token: "i:" + the id of the previous page's last object, in
		 * decimal: the next page starts after it with one seek. */
		int drc = b64_decode(opt->continue_token, &after);

		if (drc == KI_OK && after.len >= 2 &&
		    memcmp(after.data, "n:", 2) == 0) {
			/* A name-ordered page of an older kernelindexd: the pages
			 * it continued are gone, as an expired token's are. */
			api_status_fail(&st, 410, "Expired", "the continue token "
			    "comes from an older version of the index, whose pages "
			    "were in name order: list again from the start");
			api_resp_status(r, &st);
			goto out;
		}
		if (drc != KI_OK || parse_after(&after, k->id, &after_id) != KI_OK) {
			api_status_fail(&st, 400, "BadRequest", "the continue token "
			    "is malformed: pass metadata.continue from the previous "
			    "page unchanged");
			api_resp_status(r, &st);
			goto out;
		}
	}
	/* A store whose reads may lag (etcd's watch cache) first reaches
	 * the resourceVersion asked for, or everything committed so far
	 * (none asked): as kube-apiserver's cache waits. */
	if (!opt->any)
		(void)store_sync(ctx->st, opt->min_rv, 3000);
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a read transaction");
		goto out;
	}
	if (opt->min_rv > store_rv(txn)) {
		api_resp_fail(r, 504, "Timeout", "resourceVersion", "Too large "
		    "resource version: %llu, current: %llu",
		    (unsigned long long)opt->min_rv,
		    (unsigned long long)store_rv(txn));
		goto out;
	}
	if (opt->exact && opt->min_rv != store_rv(txn)) {
		api_resp_fail(r, 410, "Expired", "resourceVersion", "too old "
		    "resource version: %llu (current %llu): a list is served at "
		    "the newest version only", (unsigned long long)opt->min_rv,
		    (unsigned long long)store_rv(txn));
		goto out;
	}
	if (a.table)
		api_table_open(&r->body, k);
	else
		ki_buf_printf(&r->body, "{\"kind\":\"%s\",\"apiVersion\":\""
		    API_GROUP_VERSION "\",\"items\":[", k->list_kind);
	rc = api_query_run(txn, k, &q, after_id, list_one, &a, &path);
	__atomic_add_fetch(&ctx->lists.requests[path], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ctx->lists.examined, a.examined, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ctx->lists.returned, a.n, __ATOMIC_RELAXED);
	if (rc != KI_OK && rc != 1) {
		api_fail_rc(r, rc, "listing");
		goto out;
	}
	if (a.whole && a.spill == NULL) {
		/* It fitted in memory: the items follow the head. */
		ki_buf_append(&r->body, items.data, items.len);
		ki_buf_reset(&items);
		a.whole = 0;
	}
	a.out = &r->body;
	if (a.spill != NULL)
		a.out = &items;     /* the tail goes after the spilled items */
	if (a.more) {
		ki_buf raw;

		ki_buf_init(&raw);
		ki_buf_printf(&raw, "i:%llu", (unsigned long long)a.last);
		b64_encode(raw.data, raw.len, &tok);
		ki_buf_free(&raw);
	}
	if (a.table) {
		api_table_close(a.out, store_rv(txn), a.more ? tok.data : NULL);
	} else {
		ki_buf_printf(a.out, "],\"metadata\":{\"resourceVersion\":"
		    "\"%llu\"", (unsigned long long)store_rv(txn));
		if (a.more)
			ki_buf_printf(a.out, ",\"continue\":\"%s\"", tok.data);
		ki_buf_puts(a.out, "}}");
	}
	if (r->body.oom || items.oom) {
		api_fail_rc(r, KI_ENOMEM, "listing");
		goto out;
	}
	if (a.spill != NULL) {
		if ((rc = list_spill(&a, 1)) != KI_OK || fflush(a.spill) != 0) {
			api_fail_rc(r, rc != KI_OK ? rc : KI_EIO, "listing");
			goto out;
		}
		r->spill = a.spill;
		r->spill_len = a.spilled;
		a.spill = NULL;
	}
	r->code = 200;
out:
	if (a.spill != NULL)
		fclose(a.spill);
	ki_buf_free(&items);
	store_abort(txn);
	api_query_free(&q);
	ki_buf_free(&after);
	ki_buf_free(&tok);
	api_status_free(&st);
}

/* ---- facets ---- */

typedef struct facet_acc {
	/* "l:k=v" / "c:…" -> count, accumulated in a json-c object. */
	struct json_object *counts;
	const api_query *q;
	uint64_t total;
	ki_buf scratch;             /* an object's facets */
} facet_acc;

static int
facet_stored(void *arg, const char *facet, size_t len, uint64_t count)
{
	facet_acc *f = arg;
	char key[STORE_MAX_NATKEY + 1];

	if (len == 2 && memcmp(facet, "n:", 2) == 0) {
		f->total = count;
		return 0;
	}
	snprintf(key, sizeof(key), "%.*s", (int)len, facet);
	json_object_object_add(f->counts, key, json_object_new_int64(
	    (int64_t)count));
	return 0;
}

static int
facet_scan(void *arg, const store_obj *o)
{
	facet_acc *f = arg;
	const char *p, *end;

	if (!api_query_match(f->q, o))
		return 0;
	f->total++;
	/* Records do not carry their facets: they follow from the labels. */
	ki_buf_reset(&f->scratch);
	if (api_store_facets(o->kind, o->labels, o->labels_len, &f->scratch) !=
	    KI_OK)
		return KI_ENOMEM;
	p = f->scratch.data;
	end = p + f->scratch.len;
	while (p != NULL && p < end) {
		size_t n = strnlen(p, (size_t)(end - p));
		char key[STORE_MAX_NATKEY + 1];
		struct json_object *v;

		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		if (json_object_object_get_ex(f->counts, key, &v))
			json_object_set_int64(v, json_object_get_int64(v) + 1);
		else
			json_object_object_add(f->counts, key,
			    json_object_new_int64(1));
		p += n + 1;
	}
	return 0;
}

void
api_facets(api_ctx *ctx, const char *label_sel, api_resp *r)
{
	const api_kind *k = api_kind_by_id(API_RUN);
	struct json_object *labels = NULL;
	store_txn *txn = NULL;
	facet_acc f;
	api_query q;
	int rc, first = 1;

	memset(&f, 0, sizeof(f));
	if (api_query_parse(&q, k, label_sel, NULL, r) != KI_OK)
		return;
	f.q = &q;
	f.counts = json_object_new_object();
	labels = json_object_new_object();
	if (f.counts == NULL || labels == NULL) {
		api_fail_rc(r, KI_ENOMEM, "counting");
		goto out;
	}
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a read transaction");
		goto out;
	}
	/* Without a selector the store's counters answer at once; with one,
	 * the matching runs are counted (through the label index when an
	 * equality requirement allows). */
	if (q.labels->n == 0) {
		rc = store_facets(txn, k->id, facet_stored, &f);
	} else {
		int path;

		rc = api_query_run(txn, k, &q, 0, facet_scan, &f, &path);
	}
	if (rc != KI_OK) {
		api_fail_rc(r, rc, "counting");
		goto out;
	}
	ki_buf_printf(&r->body, "{\"kind\":\"Facets\",\"apiVersion\":\""
	    API_GROUP_VERSION "\",\"metadata\":{\"resourceVersion\":\"%llu\"},"
	    "\"total\":%llu,\"labels\":", (unsigned long long)store_rv(txn),
	    (unsigned long long)f.total);
	json_object_object_foreach(f.counts, key, val) {
		const char *eq;
		struct json_object *m;
		char lk[400];

		if (strncmp(key, "l:", 2) != 0 || (eq = strchr(key, '=')) == NULL)
			continue;
		snprintf(lk, sizeof(lk), "%.*s", (int)(eq - key - 2), key + 2);
		if (!json_object_object_get_ex(labels, lk, &m)) {
			m = json_object_new_object();
			json_object_object_add(labels, lk, m);
		}
		json_object_object_add(m, eq + 1, json_object_get(val));
	}
	api_jcs_serialize(labels, &r->body);
	ki_buf_puts(&r->body, ",\"combinations\":[");
	json_object_object_foreach(f.counts, ckey, cval) {
		char text[STORE_MAX_NATKEY + 1];
		char *parts[4] = { NULL, NULL, NULL, NULL }, *p;
		int n = 0;

		if (strncmp(ckey, "c:", 2) != 0)
			continue;
		snprintf(text, sizeof(text), "%s", ckey + 2);
		p = text;
		for (char *s; n < 4 && (s = strsep(&p, "\x1f")) != NULL;)
			parts[n++] = s;
		if (n != 4)
			continue;
		ki_buf_puts(&r->body, first ? "{\"kernel\":" : ",{\"kernel\":");
		ki_buf_json_string(&r->body, parts[0], strlen(parts[0]));
		ki_buf_puts(&r->body, ",\"provider\":");
		ki_buf_json_string(&r->body, parts[1], strlen(parts[1]));
		ki_buf_puts(&r->body, ",\"gpu\":");
		ki_buf_json_string(&r->body, parts[2], strlen(parts[2]));
		ki_buf_puts(&r->body, ",\"metric\":");
		ki_buf_json_string(&r->body, parts[3], strlen(parts[3]));
		ki_buf_printf(&r->body, ",\"count\":%lld}",
		    (long long)json_object_get_int64(cval));
		first = 0;
	}
	ki_buf_puts(&r->body, "]}");
	if (r->body.oom)
		api_fail_rc(r, KI_ENOMEM, "counting");
	else
		r->code = 200;
out:
	store_abort(txn);
	api_query_free(&q);
	ki_buf_free(&f.scratch);
	if (f.counts != NULL)
		json_object_put(f.counts);
	if (labels != NULL)
		json_object_put(labels);
}
