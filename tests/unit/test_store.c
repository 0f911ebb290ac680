/* tests/unit/test_store.c — the store's conformance suite: names,
 * digests, natural keys, back-references, lists by index, events, facets
 * and group commit, through store/store.h only, against every backend
 * (store_backends.c). */
#define _GNU_SOURCE /* memmem */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "tests/unit/store_tests.h"
#include "tests/unit/tests.h"

static void
test_put_get(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	store_obj ob;
	uint8_t d[32];

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(store_rv(t), 0);
	CU_ASSERT_EQUAL(ts_put(t, 1, "alpha", 0xaa, "src\x1f" "row1", NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 2, "alpha", 0xbb, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_rv(t), 2);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);

	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_rv(t), 2);
	CU_ASSERT_EQUAL(store_get_by_name(t, 1, "alpha", 5, &ob), KI_OK);
	CU_ASSERT_EQUAL(ob.kind, 1);
	CU_ASSERT_EQUAL(ob.rv, 1);
	CU_ASSERT_EQUAL(ob.digest[0], 0xaa);
	CU_ASSERT(ob.json_len > 0 && memcmp(ob.json, "{\"metadata\"", 11) == 0);
	/* Same name, other kind: another object. */
	CU_ASSERT_EQUAL(store_get_by_name(t, 2, "alpha", 5, &ob), KI_OK);
	CU_ASSERT_EQUAL(ob.digest[0], 0xbb);
	CU_ASSERT_EQUAL(store_get_by_name(t, 3, "alpha", 5, &ob), KI_ENOTFOUND);
	memset(d, 0xbb, sizeof(d));
	CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_OK);
	CU_ASSERT_EQUAL(ob.kind, 2);
	memset(d, 0xcc, sizeof(d));
	CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_ENOTFOUND);
	CU_ASSERT_EQUAL(store_get_by_natkey(t, 1, "src\x1f" "row1", 8, &ob), KI_OK);
	CU_ASSERT_EQUAL(ob.name_len, 5);
	CU_ASSERT_EQUAL(store_get_by_natkey(t, 2, "src\x1f" "row1", 8, &ob),
	    KI_ENOTFOUND);
	store_abort(t);
	store_close(s);

	/* Everything survives a reopen. */
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_rv(t), 2);
	CU_ASSERT_EQUAL(store_get_by_name(t, 1, "alpha", 5, &ob), KI_OK);
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

static void
test_abort_discards(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	store_obj ob;

	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "gone", 1, NULL, NULL, 0), KI_OK);
	store_abort(t);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_name(t, 1, "gone", 4, &ob), KI_ENOTFOUND);
	CU_ASSERT_EQUAL(store_rv(t), 0);
	store_abort(t);
	/* A ts_put whose rv is not the next one is refused. */
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	{
		store_obj bad;

		memset(&bad, 0, sizeof(bad));
		bad.kind = 1;
		bad.rv = 7;
		bad.name = "x";
		bad.name_len = 1;
		bad.json = "{}";
		bad.json_len = 2;
		CU_ASSERT_EQUAL(store_put(t, &bad), KI_EINVAL);
	}
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

static int
collect(void *arg, const store_obj *o)
{
	ts_names *a = arg;

	if (a->n >= 16)
		return 1;
	a->ids[a->n] = o->seq;
	snprintf(a->got[a->n++], 16, "%.*s", (int)o->name_len, o->name);
	return 0;
}

static int
stop_after_two(void *arg, const store_obj *o)
{
	ts_names *a = arg;

	collect(arg, o);
	return a->n == 2 ? 42 : 0;
}

static void
test_list_and_delete(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	ts_names a;
	uint64_t count;

	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "c", 3, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "a", 1, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "b", 2, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 2, "a", 9, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);

	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	memset(&a, 0, sizeof(a));
	/* Creation order, one kind only. */
	CU_ASSERT_EQUAL(store_list(t, 1, 0, collect, &a), KI_OK);
	CU_ASSERT_EQUAL(a.n, 3);
	CU_ASSERT_STRING_EQUAL(a.got[0], "c");
	CU_ASSERT_STRING_EQUAL(a.got[1], "a");
	CU_ASSERT_STRING_EQUAL(a.got[2], "b");
	CU_ASSERT(a.ids[0] < a.ids[1] && a.ids[1] < a.ids[2]);
	CU_ASSERT_EQUAL(store_id_kind(a.ids[0]), 1);
	{
		uint64_t after = a.ids[0];

		memset(&a, 0, sizeof(a));
		CU_ASSERT_EQUAL(store_list(t, 1, after, collect, &a), KI_OK);
		CU_ASSERT_EQUAL(a.n, 2);
		CU_ASSERT_STRING_EQUAL(a.got[0], "a");
		/* An id of another kind starts nothing of this one. */
		memset(&a, 0, sizeof(a));
		CU_ASSERT_EQUAL(store_list(t, 2, after, collect, &a), KI_OK);
		CU_ASSERT_EQUAL(a.n, 1);
		CU_ASSERT_STRING_EQUAL(a.got[0], "a");
	}
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(store_list(t, 1, 0, stop_after_two, &a), 42);
	CU_ASSERT_EQUAL(a.n, 2);
	CU_ASSERT_EQUAL(store_count(t, 2, &count), KI_OK);
	CU_ASSERT_EQUAL(count, 1);
	store_abort(t);

	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(store_delete(t, 1, "b", 1, &ts_fin), KI_OK);
	CU_ASSERT_EQUAL(store_delete(t, 1, "b", 1, &ts_fin), KI_ENOTFOUND);
	CU_ASSERT_EQUAL(store_rv(t), 5);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_count(t, 1, &count), KI_OK);
	CU_ASSERT_EQUAL(count, 2);
	{
		uint8_t d[32];
		store_obj ob;

		memset(d, 2, sizeof(d));
		CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_ENOTFOUND);
	}
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

static void
test_events_and_refs(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	ts_evs e;
	ts_names a;
	uint8_t refs[64];

	memset(refs, 0x11, 32);
	memset(refs + 32, 0x22, 32);
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "r1", 0x31, NULL, refs, 2), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "r2", 0x32, NULL, refs + 32, 1), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "r1", 0x31, NULL, refs, 2), KI_OK);
	CU_ASSERT_EQUAL(store_delete(t, 1, "r2", 2, &ts_fin), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);

	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	memset(&e, 0, sizeof(e));
	CU_ASSERT_EQUAL(store_events_since(t, 0, ts_on_event, &e), KI_OK);
	CU_ASSERT_EQUAL(e.n, 4);
	CU_ASSERT_EQUAL(e.types[0], STORE_ADDED);
	CU_ASSERT_EQUAL(e.types[2], STORE_MODIFIED);
	CU_ASSERT_EQUAL(e.types[3], STORE_DELETED);
	CU_ASSERT_EQUAL(e.rvs[3], 4);
	memset(&e, 0, sizeof(e));
	CU_ASSERT_EQUAL(store_events_since(t, 2, ts_on_event, &e), KI_OK);
	CU_ASSERT_EQUAL(e.n, 2);
	CU_ASSERT_EQUAL(e.rvs[0], 3);
	/* 0x22 was referenced by r1 and by the deleted r2: only r1 is left. */
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(store_each_referrer(t, refs + 32, collect, &a), KI_OK);
	CU_ASSERT_EQUAL(a.n, 1);
	CU_ASSERT_STRING_EQUAL(a.got[0], "r1");
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

static void
test_history_trimmed(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	ts_evs e;
	char name[16];

	o.history = 100;
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	for (int i = 0; i < 250; i++) {
		snprintf(name, sizeof(name), "n%03d", i);
		CU_ASSERT_EQUAL(ts_put(t, 1, name, (uint8_t)i, NULL, NULL, 0), KI_OK);
	}
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_oldest_event(t), 151);
	memset(&e, 0, sizeof(e));
	CU_ASSERT_EQUAL(store_events_since(t, 10, ts_on_event, &e), KI_EGONE);
	CU_ASSERT_EQUAL(store_events_since(t, 150, ts_on_event, &e), KI_OK);
	CU_ASSERT_EQUAL(e.n, 32);  /* capped by the collector */
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* Puts kind-1 name with labels (a "k\0v\0" blob) and one ref. */
static int
put_labeled(store_txn *t, const char *name, const char *labels,
	size_t labels_len, const uint8_t *ref, const char *body)
{
	store_obj o;

	memset(&o, 0, sizeof(o));
	o.kind = 1;
	o.rv = store_next_rv(t);
	memset(o.digest, 0, sizeof(o.digest));
	memcpy(o.digest, name, strlen(name) < 32 ? strlen(name) : 32);
	o.digest[31] = (uint8_t)body[0];
	o.name = name;
	o.name_len = strlen(name);
	o.refs = ref;
	o.nrefs = ref != NULL;
	o.labels = labels;
	o.labels_len = labels_len;
	o.json = body;
	o.json_len = strlen(body);
	return store_put(t, &o);
}

#define L(s) s, sizeof(s) - 1

static void
test_index_queries(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	ts_names a;
	uint8_t r1[32], r2[32];
	store_alt gpu_a = { "gpu", "a100", NULL }, gpu_h = { "gpu", "h100", NULL };
	store_alt kern_e = { "kernel", "emb", NULL }, ref1 = { NULL, NULL, r1 };
	store_alt either[2] = { { "gpu", "a100", NULL }, { "gpu", "h100", NULL } };
	store_term t_a = { &gpu_a, 1 }, t_e = { &kern_e, 1 }, t_r = { &ref1, 1 };
	store_term both[2], any = { either, 2 };

	(void)gpu_h;
	memset(r1, 0x51, sizeof(r1));
	memset(r2, 0x52, sizeof(r2));
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "x1", L("gpu\0a100\0kernel\0emb\0"), r1,
	    "{1}"), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "x2", L("gpu\0h100\0kernel\0emb\0"), r2,
	    "{2}"), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "x3", L("gpu\0a100\0kernel\0rms\0"), r1,
	    "{3}"), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "x4", L("gpu\0a100\0kernel\0emb\0"), r2,
	    "{4}"), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "x5", L("gpu\0b200\0kernel\0emb\0"), r1,
	    "{5}"), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);

	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(store_list_index(t, 1, &t_a, 1, 0, collect, &a), KI_OK);
	CU_ASSERT_EQUAL(a.n, 3);
	CU_ASSERT_STRING_EQUAL(a.got[0], "x1");
	CU_ASSERT_STRING_EQUAL(a.got[1], "x3");
	CU_ASSERT_STRING_EQUAL(a.got[2], "x4");
	/* Intersection of two postings. */
	both[0] = t_a;
	both[1] = t_e;
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(store_list_index(t, 1, both, 2, 0, collect, &a), KI_OK);
	CU_ASSERT_EQUAL(a.n, 2);
	CU_ASSERT_STRING_EQUAL(a.got[0], "x1");
	CU_ASSERT_STRING_EQUAL(a.got[1], "x4");
	/* Resuming after x1 skips it without a scan. */
	{
		uint64_t after = a.ids[0];

		memset(&a, 0, sizeof(a));
		CU_ASSERT_EQUAL(store_list_index(t, 1, both, 2, after, collect, &a),
		    KI_OK);
		CU_ASSERT_EQUAL(a.n, 1);
		CU_ASSERT_STRING_EQUAL(a.got[0], "x4");
	}
	/* A union (gpu in (a100,h100)) with a reference. */
	both[0] = any;
	both[1] = t_r;
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(store_list_index(t, 1, both, 2, 0, collect, &a), KI_OK);
	CU_ASSERT_EQUAL(a.n, 2);
	CU_ASSERT_STRING_EQUAL(a.got[0], "x1");
	CU_ASSERT_STRING_EQUAL(a.got[1], "x3");
	/* Another kind has none of them. */
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(store_list_index(t, 2, &t_a, 1, 0, collect, &a), KI_OK);
	CU_ASSERT_EQUAL(a.n, 0);
	store_abort(t);

	/* Relabel x1 and delete x4: their postings follow. */
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "x1", L("gpu\0h100\0kernel\0emb\0"), r1,
	    "{1}"), KI_OK);
	CU_ASSERT_EQUAL(store_delete(t, 1, "x4", 2, &ts_fin), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(store_list_index(t, 1, &t_a, 1, 0, collect, &a), KI_OK);
	CU_ASSERT_EQUAL(a.n, 1);
	CU_ASSERT_STRING_EQUAL(a.got[0], "x3");
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* The digest index keys digests by their first 8 bytes: digests that share
 * them each find their own object, the first object with a content keeps
 * it, and deleting one leaves the others. */
static void
test_digest_prefixes(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	store_obj ob;
	uint8_t d[32];
	char name[16];

	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	for (int i = 0; i < 30; i++) {
		ts_digest(i, d);
		snprintf(name, sizeof(name), "d%d", i);
		CU_ASSERT_EQUAL(ts_put_digest(t, 1, name, d), KI_OK);
	}
	/* The content of d4 again, under another name: d4 keeps the digest. */
	ts_digest(4, d);
	CU_ASSERT_EQUAL(ts_put_digest(t, 1, "again", d), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	ts_digest_check(s, 30, -1);
	store_close(s);
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	ts_digest_check(s, 30, -1);
	/* Deleting d5 (one of three sharing 8 bytes) leaves d3 and d4. */
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(store_delete(t, 1, "d5", 2, &ts_fin), KI_OK);
	/* Deleting "again" leaves d4 its digest. */
	CU_ASSERT_EQUAL(store_delete(t, 1, "again", 5, &ts_fin), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	ts_digest_check(s, 30, 5);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	ts_digest(4, d);
	CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_OK);
	CU_ASSERT(ob.name_len == 2 && memcmp(ob.name, "d4", 2) == 0);
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* Digests at the ends of the byte range (every byte 0xff, every byte 0):
 * each finds its own object and referrers, and no other. A backend that
 * reads "the keys starting with a digest" as a range must end the range
 * right when the digest ends in 0xff bytes. */
static void
test_digest_extremes(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	store_obj ob;
	ts_names a;
	uint8_t hi[32], lo[32], mid[32];

	memset(hi, 0xff, sizeof(hi));
	memset(lo, 0, sizeof(lo));
	memset(mid, 0x80, sizeof(mid));
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "mid", 0x80, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "refhi", 0x01, NULL, hi, 1), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "reflo", 0x02, NULL, lo, 1), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	/* Nothing has 0xff..ff or 0..0 as its digest. */
	CU_ASSERT_EQUAL(store_get_by_digest(t, hi, &ob), KI_ENOTFOUND);
	CU_ASSERT_EQUAL(store_get_by_digest(t, lo, &ob), KI_ENOTFOUND);
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(store_each_referrer(t, hi, collect, &a), KI_OK);
	CU_ASSERT_EQUAL_FATAL(a.n, 1);
	CU_ASSERT_STRING_EQUAL(a.got[0], "refhi");
	store_abort(t);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "hi", 0xff, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_get_by_digest(t, hi, &ob), KI_OK);
	CU_ASSERT(ob.name_len == 2 && memcmp(ob.name, "hi", 2) == 0);
	CU_ASSERT_EQUAL_FATAL(store_get_by_digest(t, mid, &ob), KI_OK);
	CU_ASSERT(ob.name_len == 3 && memcmp(ob.name, "mid", 3) == 0);
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

typedef struct reput {
	store_txn *t;
	int n;
	char seen[8][16];
} reput;

/* Re-puts each referrer it is given (the referrers of a digest are
 * re-rendered when it arrives); stops after 8, a loop. */
static int
reput_one(void *arg, const store_obj *o)
{
	reput *r = arg;
	char name[16];
	uint8_t refs[32];

	if (r->n >= 8)
		return 1;
	snprintf(name, sizeof(name), "%.*s", (int)o->name_len, o->name);
	snprintf(r->seen[r->n++], 16, "%s", name);
	memcpy(refs, o->refs, 32);
	return ts_put(r->t, 1, name, o->digest[0], NULL, refs, 1);
}

/* A walk of a digest's referrers that writes each one again (in the same
 * write transaction) visits each once, old and new writes alike. */
static void
test_referrers_rewritten_while_walked(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	uint8_t d[32];
	reput r;

	memset(d, 0x5a, sizeof(d));
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "ra", 0x61, NULL, d, 1), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "rb", 0x62, NULL, d, 1), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	for (int pass = 0; pass < 2; pass++) {
		/* Committed referrers, then one of them written in this
		 * transaction before the walk. */
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		if (pass == 1)
			CU_ASSERT_EQUAL(ts_put(t, 1, "rc", 0x63, NULL, d, 1), KI_OK);
		memset(&r, 0, sizeof(r));
		r.t = t;
		CU_ASSERT_EQUAL(store_each_referrer(t, d, reput_one, &r), KI_OK);
		CU_ASSERT_EQUAL(r.n, 2 + pass);
		CU_ASSERT_STRING_EQUAL(r.seen[0], "ra");
		CU_ASSERT_STRING_EQUAL(r.seen[1], "rb");
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	}
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* Each event shows the object as that event left it, though the current
 * record has moved on or is gone. */
static void
test_event_states(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	ts_evs e;
	store_obj gone = { .json = "{del}", .json_len = 5 };

	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "v", NULL, 0, NULL, "{one}"), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "v", NULL, 0, NULL, "{two}"), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "v", NULL, 0, NULL, "{three}"), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "w", NULL, 0, NULL, "{w}"), KI_OK);
	CU_ASSERT_EQUAL(store_delete(t, 1, "v", 1, &gone), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	memset(&e, 0, sizeof(e));
	CU_ASSERT_EQUAL(store_events_since(t, 0, ts_on_event, &e), KI_OK);
	CU_ASSERT_EQUAL_FATAL(e.n, 5);
	CU_ASSERT_STRING_EQUAL(e.json[0], "{one}");
	CU_ASSERT_STRING_EQUAL(e.json[1], "{two}");
	CU_ASSERT_STRING_EQUAL(e.json[2], "{three}");
	CU_ASSERT_STRING_EQUAL(e.json[3], "{w}");
	CU_ASSERT_STRING_EQUAL(e.json[4], "{del}");
	CU_ASSERT_EQUAL(e.types[0], STORE_ADDED);
	CU_ASSERT_EQUAL(e.types[2], STORE_MODIFIED);
	CU_ASSERT_EQUAL(e.types[4], STORE_DELETED);
	store_abort(t);
	store_close(s);
	/* The kept states survive a reopen. */
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	memset(&e, 0, sizeof(e));
	CU_ASSERT_EQUAL(store_events_since(t, 1, ts_on_event, &e), KI_OK);
	CU_ASSERT_EQUAL(e.n, 4);
	CU_ASSERT_STRING_EQUAL(e.json[0], "{two}");
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* A facet per label value, as "v\0". */
static int
value_facets(int kind, const char *labels, size_t len, ki_buf *out)
{
	const char *p = labels, *end = labels + len;

	(void)kind;
	while (labels != NULL && p < end) {
		const char *v = p + strlen(p) + 1;

		ki_buf_append(out, v, strlen(v) + 1);
		p = v + strlen(v) + 1;
	}
	return KI_OK;
}

static int
count_facet(void *arg, const char *facet, size_t len, uint64_t count)
{
	uint64_t *c = arg;

	if (len == 4 && memcmp(facet, "a100", 4) == 0)
		c[0] = count;
	else if (len == 4 && memcmp(facet, "h100", 4) == 0)
		c[1] = count;
	return 0;
}

/* Records without their facets: the store recomputes them when an object
 * is replaced or deleted, so the counts follow. */
static void
test_facets_recomputed(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_txn *t;
	uint64_t c[2];
	store_obj gone = { .json = "{}", .json_len = 2 };

	o.facets = value_facets;
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "f1", L("gpu\0a100\0"), NULL, "{1}"), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "f2", L("gpu\0a100\0"), NULL, "{2}"), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(put_labeled(t, "f1", L("gpu\0h100\0"), NULL, "{1}"), KI_OK);
	CU_ASSERT_EQUAL(store_delete(t, 1, "f2", 2, &gone), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	memset(c, 0, sizeof(c));
	CU_ASSERT_EQUAL(store_facets(t, 1, count_facet, c), KI_OK);
	CU_ASSERT_EQUAL(c[0], 0);
	CU_ASSERT_EQUAL(c[1], 1);
	store_abort(t);
	/* A transaction sums its changes and writes them at its commit: a
	 * child's join it, an aborted child's vanish with the child's ids. */
	{
		store_txn *ch;
		store_obj a, b;
		uint64_t last;

		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_begin_child(t, &ch), KI_OK);
		CU_ASSERT_EQUAL(put_labeled(ch, "f3", L("gpu\0a100\0"), NULL, "{3}"),
		    KI_OK);
		CU_ASSERT_EQUAL(store_commit(ch), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_begin_child(t, &ch), KI_OK);
		CU_ASSERT_EQUAL(put_labeled(ch, "f4", L("gpu\0a100\0"), NULL, "{4}"),
		    KI_OK);
		store_abort(ch);
		CU_ASSERT_EQUAL(put_labeled(t, "f5", L("gpu\0h100\0"), NULL, "{5}"),
		    KI_OK);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
		memset(c, 0, sizeof(c));
		CU_ASSERT_EQUAL(store_facets(t, 1, count_facet, c), KI_OK);
		CU_ASSERT_EQUAL(c[0], 1);
		CU_ASSERT_EQUAL(c[1], 2);
		CU_ASSERT_EQUAL(store_get_by_name(t, 1, "f4", 2, &a), KI_ENOTFOUND);
		CU_ASSERT_EQUAL_FATAL(store_get_by_name(t, 1, "f3", 2, &a), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_get_by_name(t, 1, "f5", 2, &b), KI_OK);
		CU_ASSERT(b.seq > a.seq);
		last = b.seq;
		store_abort(t);
		/* After a restart, ids go on from the last one stored. */
		store_close(s);
		CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		CU_ASSERT_EQUAL(put_labeled(t, "f6", L("gpu\0h100\0"), NULL, "{6}"),
		    KI_OK);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_get_by_name(t, 1, "f6", 2, &a), KI_OK);
		CU_ASSERT(a.seq > last);
		memset(c, 0, sizeof(c));
		CU_ASSERT_EQUAL(store_facets(t, 1, count_facet, c), KI_OK);
		CU_ASSERT_EQUAL(c[1], 3);
		store_abort(t);
	}
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* ---- group commit ---- */

/* A committer job for the tests: puts name (unless fail_first), then fails
 * when told to; counts its runs; done() counts down. */
typedef struct tjob {
	store_job job;
	const char *name;
	int write_then_fail, fail_first, runs, done_rc;
	int *pending;
} tjob;

static pthread_mutex_t tj_mu = PTHREAD_MUTEX_INITIALIZER;

static pthread_cond_t tj_cv = PTHREAD_COND_INITIALIZER;

static int tj_gate;     /* 1 while the first job holds the committer */
static int tj_entered;  /* the first job is running */

static int
tjob_fn(store_txn *t, void *arg)
{
	tjob *j = arg;
	int rc;

	j->runs++;
	if (j->name == NULL) {
		/* The gate: holds this batch until the others are queued. */
		pthread_mutex_lock(&tj_mu);
		tj_entered = 1;
		pthread_cond_broadcast(&tj_cv);
		while (tj_gate)
			pthread_cond_wait(&tj_cv, &tj_mu);
		pthread_mutex_unlock(&tj_mu);
		return KI_OK;
	}
	if (j->fail_first)
		return KI_ECONFLICT;
	rc = ts_put(t, 1, j->name, (uint8_t)(0x40 + j->name[0]), NULL, NULL, 0);
	if (rc != KI_OK)
		return rc;
	return j->write_then_fail ? KI_ECONFLICT : KI_OK;
}

static void
tjob_done(store_job *job, int commit_rc)
{
	tjob *j = (tjob *)(void *)job;

	j->done_rc = commit_rc;
	pthread_mutex_lock(&tj_mu);
	(*j->pending)--;
	pthread_cond_broadcast(&tj_cv);
	pthread_mutex_unlock(&tj_mu);
}

/* Runs jobs[1..n-1] as one batch: they are queued while the gate jobs[0]
 * holds the committer in the batch before. */
static void
run_batch_of(store_committer *c, tjob *jobs, size_t n)
{
	int pending = (int)n;

	tj_gate = 1;
	tj_entered = 0;
	for (size_t i = 0; i < n; i++) {
		jobs[i].job.fn = tjob_fn;
		jobs[i].job.arg = &jobs[i];
		jobs[i].job.done = tjob_done;
		jobs[i].pending = &pending;
	}
	store_committer_submit(c, &jobs[0].job);
	pthread_mutex_lock(&tj_mu);
	while (!tj_entered)
		pthread_cond_wait(&tj_cv, &tj_mu);
	pthread_mutex_unlock(&tj_mu);
	for (size_t i = 1; i < n; i++)
		store_committer_submit(c, &jobs[i].job);
	pthread_mutex_lock(&tj_mu);
	tj_gate = 0;
	pthread_cond_broadcast(&tj_cv);
	while (pending > 0)
		pthread_cond_wait(&tj_cv, &tj_mu);
	pthread_mutex_unlock(&tj_mu);
}

static int
stored(store *s, const char *name)
{
	store_txn *t;
	store_obj o;
	int rc;

	if (store_begin(s, 0, &t) != KI_OK)
		return -1;
	rc = store_get_by_name(t, 1, name, strlen(name), &o);
	store_abort(t);
	return rc == KI_OK;
}

/* Jobs marked rerun write in the batch's transaction; one that fails after
 * writing makes the batch run again with each job in its own child, so
 * its writes go and the others' stay. One that fails before writing, or
 * a job in its own child, changes nothing for the rest. */
static void
test_group_commit_rerun(void)
{
	char *dir = tests_tmpdir();
	store_options o = ts_opts();
	store *s;
	store_committer *c;

	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_committer_start(&c, s, 0, NULL, NULL), KI_OK);
	{
		/* a, b and c share a batch; b writes, then fails. */
		tjob j[4] = { { .name = NULL }, { .name = "a", .job.rerun = 1 },
			{ .name = "b", .job.rerun = 1, .write_then_fail = 1 },
			{ .name = "c", .job.rerun = 1 } };

		run_batch_of(c, j, 4);
		CU_ASSERT_EQUAL(stored(s, "a"), 1);
		CU_ASSERT_EQUAL(stored(s, "b"), 0);
		CU_ASSERT_EQUAL(stored(s, "c"), 1);
		/* a and b ran again; c, after b, ran once, in the redo. */
		CU_ASSERT_EQUAL(j[1].runs, 2);
		CU_ASSERT_EQUAL(j[2].runs, 2);
		CU_ASSERT_EQUAL(j[3].runs, 1);
		CU_ASSERT_EQUAL(j[1].job.rc, KI_OK);
		CU_ASSERT_EQUAL(j[2].job.rc, KI_ECONFLICT);
		CU_ASSERT_EQUAL(j[3].job.rc, KI_OK);
		CU_ASSERT_EQUAL(j[1].done_rc, KI_OK);
	}
	{
		/* d fails before writing: nothing runs again. e is in a child
		 * and fails after writing: its child goes, alone. */
		tjob j[5] = { { .name = NULL }, { .name = "d", .job.rerun = 1,
			.fail_first = 1 }, { .name = "e", .write_then_fail = 1 },
			{ .name = "f", .job.rerun = 1 }, { .name = "g" } };

		run_batch_of(c, j, 5);
		CU_ASSERT_EQUAL(stored(s, "d"), 0);
		CU_ASSERT_EQUAL(stored(s, "e"), 0);
		CU_ASSERT_EQUAL(stored(s, "f"), 1);
		CU_ASSERT_EQUAL(stored(s, "g"), 1);
		for (int i = 1; i < 5; i++)
			CU_ASSERT_EQUAL(j[i].runs, 1);
	}
	store_committer_stop(c);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

static int
add_tests(CU_pSuite s)
{
	if (CU_add_test(s, "put, get by name/digest/natural key, reopen",
	        test_put_get) == NULL ||
	    CU_add_test(s, "abort discards, wrong rv refused",
	        test_abort_discards) == NULL ||
	    CU_add_test(s, "list in creation order, paging, delete",
	        test_list_and_delete) == NULL ||
	    CU_add_test(s, "events and back-references",
	        test_events_and_refs) == NULL ||
	    CU_add_test(s, "history is trimmed, old rv is gone",
	        test_history_trimmed) == NULL ||
	    CU_add_test(s, "lists driven by index postings: intersection, " "union, references, resume",
	        test_index_queries) == NULL ||
	    CU_add_test(s, "digests that share 8 bytes each find their object",
	        test_digest_prefixes) == NULL ||
	    CU_add_test(s, "digests of all 0xff or all 0 bytes find their own "
	        "object and referrers", test_digest_extremes) == NULL ||
	    CU_add_test(s, "referrers written again while walked are each "
	        "visited once", test_referrers_rewritten_while_walked) == NULL ||
	    CU_add_test(s, "each event shows its own state",
	        test_event_states) == NULL ||
	    CU_add_test(s, "facets recomputed from labels follow replace and " "delete, summed per transaction with its children's",
	        test_facets_recomputed) == NULL ||
	    CU_add_test(s, "group commit: a write that fails after writing is " "dropped alone",
	        test_group_commit_rerun) == NULL)
		return -1;
	return 0;
}

int
test_store_register(void)
{
	return ts_add_suites("store", add_tests);
}
