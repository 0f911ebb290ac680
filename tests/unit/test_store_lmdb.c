/* tests/unit/test_store_lmdb.c — what only the LMDB backend has: a full
 * and a growing map, the postings' tail, the young digest tables, the
 * event table's trimming, the conversions of older formats, and the redo
 * log's files and recovery. */
#define _GNU_SOURCE /* memmem */
#include <CUnit/CUnit.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/lmdb.h"
#include "store/lmdb_int.h"
#include "store/store.h"
#include "store/wal.h"
#include "tests/unit/store_tests.h"
#include "tests/unit/tests.h"

/* The LMDB tuning of the next tsopen(): opts() resets it. */
static store_lmdb_options lo;

static store_options
opts(uint64_t map)
{
	store_options o;

	memset(&o, 0, sizeof(o));
	memset(&lo, 0, sizeof(lo));
	lo.map_size = map;
	o.history = 1000;
	o.nosync = 1;
	return o;
}

static int
tsopen(store **s, const char *dir, const store_options *o)
{
	return store_lmdb_open(s, dir, o, &lo);
}

static void
test_map_full(void)
{
	char *dir = tests_tmpdir();
	store_options o = opts(1u << 20);
	store *s;
	store_txn *t;
	store_obj ob;
	char name[32];
	int rc = KI_OK, i;

	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "first", 1, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	/* Fill a 1 MiB map: the ts_put fails with KI_EFULL, nothing is half
	 * written, and reads keep working. */
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	for (i = 0; i < 100000 && rc == KI_OK; i++) {
		snprintf(name, sizeof(name), "filler-%06d", i);
		rc = ts_put(t, 1, name, (uint8_t)i, NULL, NULL, 0);
	}
	CU_ASSERT_EQUAL(rc, KI_EFULL);
	store_abort(t);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_name(t, 1, "first", 5, &ob), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_name(t, 1, "filler-000000", 13, &ob),
	    KI_ENOTFOUND);
	CU_ASSERT_EQUAL(store_rv(t), 1);
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

static void
test_map_grows(void)
{
	char *dir = tests_tmpdir();
	store_options o = opts(1u << 20);
	store *s;
	store_txn *t;
	store_lmdb_stats st;
	char name[32];
	int rc = KI_OK, i;

	lo.map_max = 8u << 20;
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	/* One write transaction each, as requests do: growth happens between
	 * them, until the maximum; then writes fail and reads go on. */
	for (i = 0; i < 200000 && rc == KI_OK; i++) {
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		for (int j = 0; j < 50 && rc == KI_OK; j++) {
			snprintf(name, sizeof(name), "g-%06d-%02d", i, j);
			rc = ts_put(t, 1, name, (uint8_t)j, NULL, NULL, 0);
		}
		if (rc == KI_OK)
			rc = store_commit(t);
		else
			store_abort(t);
	}
	CU_ASSERT_EQUAL(rc, KI_EFULL);
	CU_ASSERT_EQUAL(store_lmdb_stat(s, &st), KI_OK);
	CU_ASSERT_EQUAL(st.map_size, 8u << 20);
	/* Far more than a 1 MiB map holds were written. */
	CU_ASSERT(i > 100);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_name(t, 1, "g-000000-00", 11,
	    &(store_obj){ 0 }), KI_OK);
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* The tail: postings of the newest objects are written in groups, and a
 * list by postings or a walk of referrers reads the newest records
 * instead; answers must not depend on where the tail ends. A model of
 * every object is checked against the store after each transaction of a
 * sequence that crosses the tail's edge many times (objects of two kinds,
 * single puts, a transaction of 150, relabels and deletes on both sides of
 * the edge), then after a reopen and after a crash's recovery. */
#define TL_N 400

typedef struct tl_model {
	int kind[TL_N], alive[TL_N], gpu[TL_N], kern[TL_N], ref[TL_N];
	uint64_t id[TL_N];
} tl_model;

static const char *const tl_gpus[3] = { "a100", "h100", "l4" };

static const char *const tl_kerns[2] = { "emb", "rope" };

static int
tl_put(store_txn *t, tl_model *m, int i, int gpu, int kern, int ref)
{
	char name[16], labels[64], facets[64], body[32];
	uint8_t refs[32];
	store_obj o;
	size_t ll, fl;
	int rc;

	snprintf(name, sizeof(name), "t%03d", i);
	fl = (size_t)snprintf(facets, sizeof(facets), "gpu=%s%ckernel=%s%c",
	    tl_gpus[gpu], 0, tl_kerns[kern], 0);
	ll = (size_t)snprintf(labels, sizeof(labels), "gpu%c%s%ckernel%c%s%c",
	    0, tl_gpus[gpu], 0, 0, tl_kerns[kern], 0);
	snprintf(body, sizeof(body), "{\"i\":%d,\"g\":%d}", i, gpu);
	memset(refs, 0x60 + ref, sizeof(refs));
	memset(&o, 0, sizeof(o));
	o.kind = m->kind[i];
	o.rv = store_next_rv(t);
	memset(o.digest, 0, sizeof(o.digest));
	memcpy(o.digest, name, strlen(name));
	o.digest[30] = (uint8_t)gpu;
	o.digest[31] = (uint8_t)kern;
	o.name = name;
	o.name_len = strlen(name);
	o.refs = refs;
	o.nrefs = 1;
	o.labels = labels;
	o.labels_len = ll;
	o.facets = facets;
	o.facets_len = fl;
	o.json = body;
	o.json_len = strlen(body);
	if ((rc = store_put(t, &o)) == KI_OK) {
		m->alive[i] = 1;
		m->gpu[i] = gpu;
		m->kern[i] = kern;
		m->ref[i] = ref;
		m->id[i] = o.seq;
	}
	return rc;
}

typedef struct tl_got {
	uint64_t ids[TL_N];
	size_t n;
} tl_got;

static int
tl_collect(void *arg, const store_obj *o)
{
	tl_got *g = arg;

	if (g->n == TL_N)
		return 1;
	g->ids[g->n++] = o->seq;
	return 0;
}

static int
tl_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Object i satisfies query q (see tl_check). */
static int
tl_want(const tl_model *m, int q, int i)
{
	switch (q) {
	case 0: return m->gpu[i] == 0;
	case 1: return m->kern[i] == 1 && m->gpu[i] != 0;
	case 2: return m->ref[i] == 0;
	default: return m->ref[i] == 1 && m->kern[i] == 0;
	}
}

typedef struct tl_facets {
	char text[8][32];
	uint64_t n[8];
	size_t count;
	int ordered;
} tl_facets;

static int
tl_facet(void *arg, const char *facet, size_t len, uint64_t n)
{
	tl_facets *f = arg;

	if (f->count == 8 || len >= sizeof(f->text[0]))
		return 1;
	if (f->count > 0 && strcmp(f->text[f->count - 1], facet) >= 0)
		f->ordered = 0;
	snprintf(f->text[f->count], sizeof(f->text[0]), "%.*s", (int)len, facet);
	f->n[f->count++] = n;
	return 0;
}

/* Compares four queries, from the start and from after a middle id, the
 * referrers of both refs and the facet counts of kind 1 with the model. */
static void
tl_check(store *s, const tl_model *m, int n)
{
	uint8_t r0[32], r1[32];
	store_alt a100 = { "gpu", "a100", NULL }, rope = { "kernel", "rope", NULL };
	store_alt emb = { "kernel", "emb", NULL };
	store_alt hl[2] = { { "gpu", "h100", NULL }, { "gpu", "l4", NULL } };
	store_alt ref0 = { NULL, NULL, r0 }, ref1 = { NULL, NULL, r1 };
	store_term q0[1] = { { &a100, 1 } };
	store_term q1[2] = { { &rope, 1 }, { hl, 2 } };
	store_term q2[1] = { { &ref0, 1 } };
	store_term q3[2] = { { &ref1, 1 }, { &emb, 1 } };
	const store_term *qs[4] = { q0, q1, q2, q3 };
	size_t nq[4] = { 1, 2, 1, 2 };
	store_txn *t;
	static tl_got got;
	static uint64_t want[TL_N];

	memset(r0, 0x60, sizeof(r0));
	memset(r1, 0x61, sizeof(r1));
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	for (int q = 0; q < 4; q++) {
		for (int from = 0; from < 2; from++) {
			uint64_t after = 0;
			size_t k = 0;
			int ok = 1;

			if (from) {
				for (int i = n / 2; i < n && after == 0; i++)
					if (m->kind[i] == 1 && m->alive[i])
						after = m->id[i];
			}
			got.n = 0;
			CU_ASSERT_EQUAL(store_list_index(t, 1, qs[q], nq[q], after,
			    tl_collect, &got), KI_OK);
			/* In id order: an object ts_put again after its delete has
			 * a new id. */
			for (int i = 0; i < n; i++) {
				if (m->kind[i] != 1 || !m->alive[i] ||
				    m->id[i] <= after || !tl_want(m, q, i))
					continue;
				want[k++] = m->id[i];
			}
			qsort(want, k, sizeof(*want), tl_cmp);
			CU_ASSERT_EQUAL(got.n, k);
			for (size_t j = 0; j < k && j < got.n; j++)
				ok &= got.ids[j] == want[j];
			CU_ASSERT(ok);
		}
	}
	for (int r = 0; r < 2; r++) {
		size_t nwant = 0;

		got.n = 0;
		CU_ASSERT_EQUAL(store_each_referrer(t, r ? r1 : r0, tl_collect,
		    &got), KI_OK);
		for (int i = 0; i < n; i++)
			nwant += m->alive[i] && m->ref[i] == r;
		CU_ASSERT_EQUAL(got.n, nwant);
		for (size_t j = 0; j < got.n; j++) {
			int found = 0;

			for (int i = 0; i < n && !found; i++)
				found = m->alive[i] && m->ref[i] == r &&
				    m->id[i] == got.ids[j];
			CU_ASSERT(found);
		}
	}
	{
		tl_facets f;
		size_t nonzero = 0;

		memset(&f, 0, sizeof(f));
		f.ordered = 1;
		CU_ASSERT_EQUAL(store_facets(t, 1, tl_facet, &f), KI_OK);
		CU_ASSERT(f.ordered);
		for (int g = 0; g < 5; g++) {
			char text[32];
			uint64_t count = 0, have = 0;

			snprintf(text, sizeof(text), g < 3 ? "gpu=%s" : "kernel=%s",
			    g < 3 ? tl_gpus[g] : tl_kerns[g - 3]);
			for (int i = 0; i < n; i++)
				count += m->kind[i] == 1 && m->alive[i] &&
				    (g < 3 ? m->gpu[i] == g : m->kern[i] == g - 3);
			for (size_t j = 0; j < f.count; j++)
				if (strcmp(f.text[j], text) == 0)
					have = f.n[j];
			CU_ASSERT_EQUAL(have, count);
			nonzero += count > 0;
		}
		/* Nothing else, and no facet whose count fell to 0. */
		for (size_t j = 0; j < f.count; j++)
			CU_ASSERT(f.n[j] > 0);
		CU_ASSERT_EQUAL(f.count, nonzero);
	}
	store_abort(t);
}

static void
test_tail_postings(void)
{
	char *dir = tests_tmpdir();
	store_options o = opts(64u << 20);
	static tl_model m;
	store *s;
	store_txn *t;
	int n = 0, step = 0;

	o.nosync = 0;
	memset(&m, 0, sizeof(m));
	for (int i = 0; i < TL_N; i++)
		m.kind[i] = i % 7 == 3 ? 2 : 1;
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	while (n < TL_N) {
		/* One object at a time, then groups, then 150 at once. */
		int take = step < 70 ? 1 : step < 80 ? 9 : 150;

		if (take > TL_N - n)
			take = TL_N - n;
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		for (int k = 0; k < take; k++, n++)
			CU_ASSERT_EQUAL(tl_put(t, &m, n, n % 3, (n / 3) % 2,
			    (n / 5) % 2), KI_OK);
		/* Relabel and delete old and new objects as it goes. */
		if (step % 10 == 9) {
			int old = (step * 7) % (n / 2 + 1), young = n - 2;
			char name[16];

			if (m.alive[old])
				CU_ASSERT_EQUAL(tl_put(t, &m, old, (m.gpu[old] + 1) % 3,
				    1 - m.kern[old], 1 - m.ref[old]), KI_OK);
			CU_ASSERT_EQUAL(tl_put(t, &m, young, 0, 1, 0), KI_OK);
			snprintf(name, sizeof(name), "t%03d", old + 1);
			if (m.alive[old + 1]) {
				CU_ASSERT_EQUAL(store_delete(t, m.kind[old + 1], name,
				    strlen(name), &ts_fin), KI_OK);
				m.alive[old + 1] = 0;
			}
			snprintf(name, sizeof(name), "t%03d", n - 1);
			CU_ASSERT_EQUAL(store_delete(t, m.kind[n - 1], name,
			    strlen(name), &ts_fin), KI_OK);
			m.alive[n - 1] = 0;
		}
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		tl_check(s, &m, n);
		step++;
	}
	store_close(s);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	tl_check(s, &m, n);
	/* Objects ts_put one at a time after a checkpoint, then a crash: the
	 * log's replay rebuilds the same answers. */
	CU_ASSERT_EQUAL(store_idle(s), KI_OK);
	for (int i = 0; i < 100; i++) {
		int j = (i * 37) % TL_N;

		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		CU_ASSERT_EQUAL(tl_put(t, &m, j, i % 3, i % 2, (i / 2) % 2), KI_OK);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	}
	tl_check(s, &m, n);
	store_lmdb_crash(s);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	tl_check(s, &m, n);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* Opens the LMDB environment of the store at dir and a transaction on it,
 * read-only if rdonly. Returns 0 or LMDB's error (nothing left open). */
static int
tl_lmdb_open(const char *dir, int rdonly, MDB_env **env, MDB_txn **txn)
{
	int rc;

	if ((rc = mdb_env_create(env)) != 0)
		return rc;
	mdb_env_set_maxdbs(*env, 24);
	if ((rc = mdb_env_open(*env, dir, rdonly ? MDB_RDONLY : 0, 0640)) != 0 ||
	    (rc = mdb_txn_begin(*env, NULL, rdonly ? MDB_RDONLY : 0, txn)) != 0)
		mdb_env_close(*env);
	return rc;
}

/* Commits txn if rc is 0, else aborts it; closes env. Returns the result. */
static int
tl_lmdb_close(MDB_env *env, MDB_txn *txn, int rc)
{
	rc = rc == 0 ? mdb_txn_commit(txn) : (mdb_txn_abort(txn), rc);
	mdb_env_close(env);
	return rc;
}

static uint64_t
tl_be64(const MDB_val *v)
{
	uint64_t n = 0;

	for (size_t i = 0; i < v->mv_size && i < 8; i++)
		n = n << 8 | ((const uint8_t *)v->mv_data)[i];
	return n;
}

/* Puts n as meta "format" in txn. */
static int
tl_put_format(MDB_txn *txn, MDB_dbi meta, uint8_t n)
{
	uint8_t b[8] = { 0, 0, 0, 0, 0, 0, 0, n };
	MDB_val f = { 6, (void *)(uintptr_t)"format" }, v = { 8, b };

	return mdb_put(txn, meta, &f, &v, 0);
}

/* Rewrites the store at dir as a kernelindexd of format 3 left it: no
 * "posted" (every posting written) and "format" 3. Returns 0 on success. */
static int
tl_make_format3(const char *dir)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi meta;
	MDB_val k = { 6, (void *)(uintptr_t)"posted" };
	int rc;

	if ((rc = tl_lmdb_open(dir, 0, &env, &txn)) != 0)
		return rc;
	if ((rc = mdb_dbi_open(txn, "meta", 0, &meta)) == 0 &&
	    (rc = mdb_del(txn, meta, &k, NULL)) == 0)
		rc = tl_put_format(txn, meta, 3);
	return tl_lmdb_close(env, txn, rc);
}

/* Rewrites the store at dir as a kernelindexd of format 4 left it: the
 * facets of objects first..last-1 (its tail) counted, format 4. */
static int
tl_make_format4(const char *dir, const tl_model *m, int first, int last)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi meta, facet;
	MDB_val k, v;
	int rc;

	if ((rc = tl_lmdb_open(dir, 0, &env, &txn)) != 0)
		return rc;
	if ((rc = mdb_dbi_open(txn, "meta", 0, &meta)) == 0 &&
	    (rc = mdb_dbi_open(txn, "facet", 0, &facet)) == 0)
		rc = tl_put_format(txn, meta, 4);
	for (int i = first; rc == 0 && i < last; i++) {
		for (int g = 0; rc == 0 && g < 2 && m->alive[i]; g++) {
			char key[40];
			uint8_t cb[8];
			uint64_t n = 0;

			key[0] = (char)m->kind[i];
			k.mv_size = 1 + (size_t)snprintf(key + 1, sizeof(key) - 1,
			    g ? "kernel=%s" : "gpu=%s",
			    g ? tl_kerns[m->kern[i]] : tl_gpus[m->gpu[i]]);
			k.mv_data = key;
			if (mdb_get(txn, facet, &k, &v) == 0 && v.mv_size == 8)
				n = tl_be64(&v);
			n++;
			for (int b = 7; b >= 0; b--, n >>= 8)
				cb[b] = (uint8_t)(n & 0xff);
			v.mv_size = 8;
			v.mv_data = cb;
			rc = mdb_put(txn, facet, &k, &v, 0);
		}
	}
	return tl_lmdb_close(env, txn, rc);
}

/* The "format" of the store at dir, 0 if unreadable. */
static uint64_t
tl_format(const char *dir)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi meta;
	MDB_val k = { 6, (void *)(uintptr_t)"format" }, v;
	uint64_t format = 0;

	if (tl_lmdb_open(dir, 1, &env, &txn) != 0)
		return 0;
	if (mdb_dbi_open(txn, "meta", 0, &meta) == 0 &&
	    mdb_get(txn, meta, &k, &v) == 0 && v.mv_size == 8)
		format = tl_be64(&v);
	tl_lmdb_close(env, txn, 1);   /* read-only: aborted */
	return format;
}

/* Events past the history are deleted in runs, not one per write, and
 * the ones that wait for the next run are not served: a watcher that far
 * behind is told its rv is gone, as it would be had they been deleted. */
static void
test_history_trimmed_in_runs(void)
{
	char *dir = tests_tmpdir();
	store_options o = opts(64u << 20);
	store *s;
	store_txn *t;
	ts_evs e;
	char name[16];
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi ev;
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t first = 0, count = 0;

	o.history = 100;
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	for (int b = 0; b < 20; b++) {
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		for (int i = 0; i < 100; i++) {
			snprintf(name, sizeof(name), "n%04d", b * 100 + i);
			CU_ASSERT_EQUAL(ts_put(t, 1, name, (uint8_t)i, NULL, NULL, 0),
			    KI_OK);
		}
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	}
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_rv(t), 2000);
	CU_ASSERT_EQUAL(store_oldest_event(t), 1901);
	memset(&e, 0, sizeof(e));
	CU_ASSERT_EQUAL(store_events_since(t, 1600, ts_on_event, &e), KI_EGONE);
	CU_ASSERT_EQUAL(store_events_since(t, 1899, ts_on_event, &e), KI_EGONE);
	CU_ASSERT_EQUAL(e.n, 0);
	CU_ASSERT_EQUAL(store_events_since(t, 1900, ts_on_event, &e), KI_OK);
	CU_ASSERT_EQUAL(e.n, 32);   /* capped by the collector */
	CU_ASSERT_EQUAL(e.rvs[0], 1901);
	store_abort(t);
	store_close(s);
	/* What the table holds: more than the history (a run waits), fewer
	 * than the history and one run, none of the first run. */
	CU_ASSERT_EQUAL_FATAL(tl_lmdb_open(dir, 1, &env, &txn), 0);
	if (mdb_dbi_open(txn, "event", 0, &ev) == 0 &&
	    mdb_cursor_open(txn, ev, &c) == 0) {
		for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
		    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
			if (count++ == 0)
				first = tl_be64(&k);
		}
		mdb_cursor_close(c);
	}
	tl_lmdb_close(env, txn, 1);
	CU_ASSERT(count > 100);
	CU_ASSERT(count <= 100 + 512);
	CU_ASSERT(first > 512);
	CU_ASSERT_EQUAL(first + count - 1, 2000);
	tests_rmdir(dir);
	free(dir);
}

/* Entries in table name of the store at dir (-1: no such table). */
static long
tl_count(const char *dir, const char *name)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_stat st;
	long n = -1;

	if (tl_lmdb_open(dir, 1, &env, &txn) != 0)
		return -1;
	if (mdb_dbi_open(txn, name, 0, &dbi) == 0 &&
	    mdb_stat(txn, dbi, &st) == 0)
		n = (long)st.ms_entries;
	tl_lmdb_close(env, txn, 1);
	return n;
}

/* Digests 0..n-1 (ts_digest) of objects "d<i>": those in gone[] are not
 * found, the others are, in a read transaction of s. */
static void
td_check_gone(store *s, int n, const int *gone, size_t ngone)
{
	store_txn *t;
	store_obj ob;
	uint8_t d[32];
	char name[16];

	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	for (int i = 0; i < n; i++) {
		int g = 0;

		for (size_t j = 0; j < ngone; j++)
			g |= gone[j] == i;
		ts_digest(i, d);
		snprintf(name, sizeof(name), "d%d", i);
		if (g) {
			CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_ENOTFOUND);
			continue;
		}
		CU_ASSERT_EQUAL_FATAL(store_get_by_digest(t, d, &ob), KI_OK);
		CU_ASSERT(ob.name_len == strlen(name) &&
		    memcmp(ob.name, name, ob.name_len) == 0);
	}
	store_abort(t);
}

/* New digests go to the young part of the digest index, which merges into
 * the main one a generation at a time (64 here). 300 objects, 3 a commit,
 * cross several merges, with reopens (some in the middle of a merge) and a
 * crash: after each commit every digest is found, including digests that
 * share 8 bytes; a read transaction opened before merges that it outlives
 * still finds exactly its snapshot's digests; deleted objects are not found
 * whether their digest was young or merged, and merging does not bring
 * them back; the young tables stay within two generations and the main
 * index holds the rest. Tables of 8 or more entries are read by ranges of
 * ids in threads (at open and when a generation fills), as large ones
 * are. */
static void
test_digest_young(void)
{
	char *dir = tests_tmpdir();
	store_options o = opts(64u << 20);
	store *s;
	store_txn *t, *old = NULL;
	store_obj ob;
	uint8_t d[32];
	char name[16];
	int gone[3] = { 5, 280, 298 };
	long young, main;

	lo.digest_young = 64;
	lo.young_read_min = 8;   /* tables read by several threads at open */
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	for (int i = 0; i < 300; i += 3) {
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		for (int j = i; j < i + 3; j++) {
			ts_digest(j, d);
			snprintf(name, sizeof(name), "d%d", j);
			CU_ASSERT_EQUAL(ts_put_digest(t, 1, name, d), KI_OK);
		}
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		ts_digest_check(s, i + 3, -1);
		if (i == 60)
			CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &old), KI_OK);
		if (i == 150 && old != NULL) {
			/* The snapshot of 63 objects, whose digests have been
			 * merged since, and their tables emptied. */
			for (int j = 0; j < 80; j++) {
				ts_digest(j, d);
				CU_ASSERT_EQUAL(store_get_by_digest(old, d, &ob),
				    j < 63 ? KI_OK : KI_ENOTFOUND);
			}
			store_abort(old);
			old = NULL;
		}
		if ((i % 45 == 0 && (i < 60 || i > 150)) || i == 201) {
			store_close(s);
			CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
			ts_digest_check(s, i + 3, -1);
		}
	}
	/* Deleted: d5 (merged), d280 (merging or young), d298 (young). */
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	for (size_t j = 0; j < 3; j++) {
		snprintf(name, sizeof(name), "d%d", gone[j]);
		CU_ASSERT_EQUAL(store_delete(t, 1, name, strlen(name), &ts_fin),
		    KI_OK);
	}
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	td_check_gone(s, 300, gone, 3);
	/* More objects: every generation merges on, past the deleted. */
	for (int i = 300; i < 450; i += 3) {
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		for (int j = i; j < i + 3; j++) {
			ts_digest(j, d);
			snprintf(name, sizeof(name), "d%d", j);
			CU_ASSERT_EQUAL(ts_put_digest(t, 1, name, d), KI_OK);
		}
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	}
	td_check_gone(s, 450, gone, 3);
	/* A crash: the log brings back what the checkpoint lacks. */
	store_lmdb_crash(s);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	td_check_gone(s, 450, gone, 3);
	store_close(s);
	young = tl_count(dir, "young0") + tl_count(dir, "young1");
	main = tl_count(dir, "digest8");
	/* A merged digest leaves its young table when the whole generation
	 * has merged. */
	CU_ASSERT(young >= 0 && young <= 2 * 64 + 3);
	CU_ASSERT(main <= 450 - 3 && main + young >= 450 - 3);
	CU_ASSERT(main >= 450 - 3 - 2 * 64 - 3);
	tests_rmdir(dir);
	free(dir);
}

/* Rewrites the digest index of the store at dir as formats 3 to 5 kept it:
 * "digest", whole digests -> id, and no "digest8"; format 5. */
static int
tl_make_format5(const char *dir)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi meta, obj, d8, d32, young[2];
	MDB_cursor *c;
	MDB_val k, v, ok, ov;
	int rc;

	if ((rc = tl_lmdb_open(dir, 0, &env, &txn)) != 0)
		return rc;
	if ((rc = mdb_dbi_open(txn, "meta", 0, &meta)) != 0 ||
	    (rc = mdb_dbi_open(txn, "obj", 0, &obj)) != 0 ||
	    (rc = mdb_dbi_open(txn, "digest8", 0, &d8)) != 0 ||
	    (rc = mdb_dbi_open(txn, "young0", 0, &young[0])) != 0 ||
	    (rc = mdb_dbi_open(txn, "young1", 0, &young[1])) != 0 ||
	    (rc = mdb_dbi_open(txn, "digest", MDB_CREATE, &d32)) != 0)
		return tl_lmdb_close(env, txn, rc);
	/* Every digest the index holds, main and young (an id is the
	 * value of the one, the key of the others). */
	for (int i = 0; i < 3 && (rc == 0 || rc == MDB_NOTFOUND); i++) {
		MDB_dbi dbi = i == 0 ? d8 : young[i - 1];

		if ((rc = mdb_cursor_open(txn, dbi, &c)) != 0)
			break;
		for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
		    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
			MDB_val id = i == 0 ? v : k;

			/* The record's digest is at offset 32. */
			ok = id;
			if ((rc = mdb_get(txn, obj, &ok, &ov)) != 0)
				break;
			ok.mv_size = 32;
			ok.mv_data = (uint8_t *)ov.mv_data + 32;
			if ((rc = mdb_put(txn, d32, &ok, &id, MDB_NOOVERWRITE)) !=
			    0)
				break;
		}
		mdb_cursor_close(c);
	}
	if (rc == MDB_NOTFOUND)
		rc = mdb_drop(txn, d8, 1);
	if (rc == 0)
		rc = mdb_drop(txn, young[0], 1);
	if (rc == 0)
		rc = mdb_drop(txn, young[1], 1);
	for (int i = 0; i < 2 && rc == 0; i++) {
		static char dgen[] = "dgen", dlast[] = "dlast";
		MDB_val mk = { i == 0 ? 4 : 5, i == 0 ? dgen : dlast };

		if ((rc = mdb_del(txn, meta, &mk, NULL)) == MDB_NOTFOUND)
			rc = 0;
	}
	if (rc == 0)
		rc = tl_put_format(txn, meta, 5);
	return tl_lmdb_close(env, txn, rc);
}

/* Whether the store at dir has a table of that name. */
static int
tl_has_table(const char *dir, const char *name)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	int has;

	if (tl_lmdb_open(dir, 1, &env, &txn) != 0)
		return -1;
	has = mdb_dbi_open(txn, name, 0, &dbi) == 0;
	tl_lmdb_close(env, txn, 1);
	return has;
}

/* A format-5 store's digest index (whole digests) is copied into the
 * format-6 one at open, across transactions (batches of 7 here), digests
 * that share 8 bytes included; the old table goes and the store is
 * marked 6. */
static void
test_digests_from_format5(void)
{
	char *dir = tests_tmpdir();
	store_options o = opts(64u << 20);
	store *s;
	store_txn *t;
	uint8_t d[32];
	char name[16];

	lo.convert_batch = 7;
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	for (int i = 0; i < 50; i++) {
		ts_digest(i, d);
		snprintf(name, sizeof(name), "d%d", i);
		CU_ASSERT_EQUAL(ts_put_digest(t, 1, name, d), KI_OK);
	}
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	store_close(s);
	CU_ASSERT_EQUAL_FATAL(tl_make_format5(dir), 0);
	CU_ASSERT_EQUAL(tl_format(dir), 5);
	CU_ASSERT_EQUAL(tl_has_table(dir, "digest"), 1);
	CU_ASSERT_EQUAL(tl_has_table(dir, "digest8"), 0);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	ts_digest_check(s, 50, -1);
	store_close(s);
	CU_ASSERT_EQUAL(tl_format(dir), 7);
	CU_ASSERT_EQUAL(tl_has_table(dir, "digest"), 0);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	ts_digest_check(s, 50, -1);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* A store of format 4 (a tail of postings only, its facets counted) gets
 * its tail's postings when opened, counts each facet once, and is marked
 * 6. */
static void
test_tail_from_format4(void)
{
	char *dir = tests_tmpdir();
	store_options o = opts(64u << 20);
	static tl_model m;
	store *s;
	store_txn *t;
	int n = 0;

	memset(&m, 0, sizeof(m));
	for (int i = 0; i < TL_N; i++)
		m.kind[i] = i % 5 == 2 ? 2 : 1;
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	/* 64 posted, then a tail of 20. */
	for (; n < 84; n++) {
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		CU_ASSERT_EQUAL(tl_put(t, &m, n, n % 3, n % 2, (n / 3) % 2), KI_OK);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	}
	store_close(s);
	CU_ASSERT_EQUAL_FATAL(tl_make_format4(dir, &m, 64, 84), 0);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	tl_check(s, &m, n);
	for (; n < 120; n++) {
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		CU_ASSERT_EQUAL(tl_put(t, &m, n, (n / 2) % 3, n % 2, n % 2), KI_OK);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	}
	tl_check(s, &m, n);
	store_close(s);
	CU_ASSERT_EQUAL(tl_format(dir), 7);
	tests_rmdir(dir);
	free(dir);
}

/* A store of format 3 (no tail: every posting written, no "posted") opens
 * as format 7, answers as before, and its next objects go to a tail. */
static void
test_tail_from_format3(void)
{
	char *dir = tests_tmpdir();
	store_options o = opts(64u << 20);
	static tl_model m;
	store *s;
	store_txn *t;
	int n = 0;

	memset(&m, 0, sizeof(m));
	for (int i = 0; i < TL_N; i++)
		m.kind[i] = 1;
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	/* TAIL_MAX objects in one transaction: its commit writes every
	 * posting, which is what a format-3 store has. */
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	for (; n < 64; n++)
		CU_ASSERT_EQUAL(tl_put(t, &m, n, n % 3, n % 2, n % 2), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	store_close(s);
	CU_ASSERT_EQUAL_FATAL(tl_make_format3(dir), 0);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	tl_check(s, &m, n);
	for (; n < 100; n++) {
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		CU_ASSERT_EQUAL(tl_put(t, &m, n, n % 3, (n / 2) % 2, n % 2), KI_OK);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		tl_check(s, &m, n + 1);
	}
	store_close(s);
	/* Marked 6 (5 was the tail): an older kernelindexd would miss the
	 * tail. */
	CU_ASSERT_EQUAL(tl_format(dir), 7);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	tl_check(s, &m, n);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* ---- the redo log: recovery from what a power failure leaves ---- */

static int
slurp(const char *path, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	*data = NULL;
	*len = 0;
	if (f == NULL)
		return -1;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || (*data = malloc((size_t)n + 1)) == NULL ||
	    fread(*data, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(*data);
		*data = NULL;
		return -1;
	}
	fclose(f);
	*len = (size_t)n;
	return 0;
}

static int
spit(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int rc;

	if (f == NULL)
		return -1;
	rc = fwrite(data, 1, len, f) == len ? 0 : -1;
	return fclose(f) == 0 ? rc : -1;
}

#define WL_N 300

/* Puts object r<i> with digest byte d (also its JSON's "d") and notes it
 * in want. */
static void
wl_put(store_txn *t, uint8_t *want, int i, uint8_t d)
{
	char name[16];

	snprintf(name, sizeof(name), "r%03d", i);
	want[i] = d;
	CU_ASSERT_EQUAL(ts_put(t, 1, name, d, NULL, NULL, 0), KI_OK);
}

static const uint8_t wl_hash[STORE_DIGEST_LEN] = { 7, 7, 7 };

static const uint8_t wl_side[STORE_DIGEST_LEN] = { 8, 8, 8 };

/* Another process (an admin command while the daemon owns the store):
 * puts the wl_side token; 0 when it did. */
static int
wl_side_write(const char *dir)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		store_options o = opts(64u << 20);
		store *s;
		store_txn *t;
		int rc;

		o.nosync = 0;
		o.shared = 1;
		if (tsopen(&s, dir, &o) != KI_OK)
			_exit(2);
		rc = store_begin(s, 1, &t) == KI_OK &&
		    store_token_put(t, wl_side, "{\"side\":1}", 10) == KI_OK &&
		    store_commit(t) == KI_OK;
		store_close(s);
		_exit(rc ? 0 : 3);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Checks the store in dir against want (digest byte per object r000..,
 * 0: absent) and whether the token is there. */
static void
wl_verify(const char *dir, const uint8_t *want, int token, uint64_t recovered)
{
	store_options o = opts(64u << 20);
	store *s;
	store_txn *t;
	store_lmdb_stats st;

	lo.checkpoint_ms = 3600000;
	uint64_t count, n = 0;
	const char *tv;
	size_t tl;

	o.nosync = 0;
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL(store_lmdb_stat(s, &st), KI_OK);
	CU_ASSERT_EQUAL(st.recovered, recovered);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	for (int i = 0; i < WL_N; i++) {
		char name[16], d[16];
		store_obj ob;
		int rc;

		snprintf(name, sizeof(name), "r%03d", i);
		rc = store_get_by_name(t, 1, name, strlen(name), &ob);
		if (want[i] == 0) {
			CU_ASSERT_EQUAL(rc, KI_ENOTFOUND);
			continue;
		}
		n++;
		CU_ASSERT_EQUAL(rc, KI_OK);
		if (rc != KI_OK)
			continue;
		CU_ASSERT_EQUAL(ob.digest[0], want[i]);
		snprintf(d, sizeof(d), "\"d\":%u}", want[i]);
		CU_ASSERT(ob.json_len > strlen(d) &&
		    memmem(ob.json, ob.json_len, d, strlen(d)) != NULL);
	}
	CU_ASSERT_EQUAL(store_count(t, 1, &count), KI_OK);
	CU_ASSERT_EQUAL(count, n);
	CU_ASSERT_EQUAL(store_token_get(t, wl_hash, &tv, &tl),
	    token ? KI_OK : KI_ENOTFOUND);
	CU_ASSERT_EQUAL(store_token_get(t, wl_side, &tv, &tl),
	    token ? KI_OK : KI_ENOTFOUND);
	store_abort(t);
	store_close(s);
}

/* The log files alone: records of sizes that start and end anywhere in a
 * 4 KB block (the direct writes' unit), a retracted one (its commit
 * failed) replaced by another under the same txnid, read back in order
 * after a reopen; synced appends (direct where the file system allows)
 * and unsynced ones (through the page cache). */
typedef struct wl_rec {
	uint64_t txnid;
	size_t len;
	uint8_t fill;
} wl_rec;

typedef struct wl_seen {
	wl_rec v[32];
	size_t n;
	int bad;
} wl_seen;

static int
wl_collect(void *arg, uint64_t txnid, const uint8_t *data, size_t len)
{
	wl_seen *s = arg;

	if (s->n == 32)
		return 1;
	s->v[s->n].txnid = txnid;
	s->v[s->n].len = len;
	s->v[s->n].fill = len ? data[0] : 0;
	for (size_t i = 0; i < len; i++)
		s->bad |= data[i] != (uint8_t)(data[0] + i % 7);
	s->n++;
	return 0;
}

static void
test_redo_log_files(void)
{
	static const size_t sizes[] = { 1, 100, 4072, 5000, 3, 8192, 0, 70000,
		4096 - 24 - 3, 24, 12000 };
	const size_t n = sizeof(sizes) / sizeof(sizes[0]);

	for (int nosync = 0; nosync <= 1; nosync++) {
		char *dir = tests_tmpdir();
		wl_rec want[32];
		wl_seen seen;
		wal_damage bad;
		uint8_t *buf = malloc(70000);
		size_t nw = 0;
		uint64_t txnid = 1;
		wal *w;
		int owner;

		CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
		CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
		CU_ASSERT_EQUAL_FATAL(wal_open(&w, dir, &owner), KI_OK);
		CU_ASSERT_EQUAL(owner, 1);
		for (size_t i = 0; i < n; i++, txnid++) {
			uint8_t fill = (uint8_t)(17 * i + 1);

			for (size_t b = 0; b < sizes[i]; b++)
				buf[b] = (uint8_t)(fill + b % 7);
			CU_ASSERT_EQUAL_FATAL(wal_append(w, txnid, buf, sizes[i],
			    nosync), KI_OK);
			if (i % 4 == 2) {
				/* Its commit failed: gone, and the next record
				 * takes its txnid. */
				CU_ASSERT_EQUAL_FATAL(wal_retract(w, nosync), KI_OK);
				fill = (uint8_t)(fill + 100);
				for (size_t b = 0; b < sizes[i] / 2; b++)
					buf[b] = (uint8_t)(fill + b % 7);
				CU_ASSERT_EQUAL_FATAL(wal_append(w, txnid, buf,
				    sizes[i] / 2, nosync), KI_OK);
				want[nw++] = (wl_rec){ txnid, sizes[i] / 2,
					sizes[i] / 2 ? fill : 0 };
				continue;
			}
			want[nw++] = (wl_rec){ txnid, sizes[i], sizes[i] ? fill : 0 };
		}
		/* A last one whose commit failed, and no write after it: its
		 * fields were cleared on disk. */
		memset(buf, 0xab, 300);
		CU_ASSERT_EQUAL_FATAL(wal_append(w, txnid, buf, 300, nosync),
		    KI_OK);
		CU_ASSERT_EQUAL_FATAL(wal_retract(w, nosync), KI_OK);
		{
			uint64_t used = 0;

			for (size_t i = 0; i < nw; i++)
				used += 24 + want[i].len;
			CU_ASSERT_EQUAL(wal_used(w), used);
		}
		wal_close(w);
		CU_ASSERT_EQUAL_FATAL(wal_open(&w, dir, &owner), KI_OK);
		memset(&seen, 0, sizeof(seen));
		CU_ASSERT_EQUAL(wal_each(w, 0, 0, 0, wl_collect, &seen, &bad),
		    KI_OK);
		CU_ASSERT_EQUAL(seen.bad, 0);
		CU_ASSERT_EQUAL(seen.n, nw);
		for (size_t i = 0; i < nw && i < seen.n; i++) {
			CU_ASSERT_EQUAL(seen.v[i].txnid, want[i].txnid);
			CU_ASSERT_EQUAL(seen.v[i].len, want[i].len);
			CU_ASSERT_EQUAL(seen.v[i].fill, want[i].fill);
		}
		wal_close(w);
		free(buf);
		tests_rmdir(dir);
		free(dir);
	}
}

static void
test_redo_log_recovery(void)
{
	char *dir = tests_tmpdir(), mdb[4200], log[3][4200];
	store_options o = opts(64u << 20);
	store *s;
	store_txn *t;
	uint8_t want[WL_N], *early = NULL, *snap = NULL, *cur = NULL,
	    *logd[3] = { NULL, NULL, NULL }, *m;
	size_t early_len, snap_len, cur_len, wal_len[3];
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	int next = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	/* The open's checkpoint is the one a crash goes back to: no other
	 * starts while the test writes, however slowly it runs. */
	lo.checkpoint_ms = 3600000;
	snprintf(mdb, sizeof(mdb), "%s/data.mdb", dir);
	snprintf(log[0], sizeof(log[0]), "%s/redo.0", dir);
	snprintf(log[1], sizeof(log[1]), "%s/redo.1", dir);
	snprintf(log[2], sizeof(log[2]), "%s/redo.side", dir);
	memset(want, 0, sizeof(want));
	o.nosync = 0;
	/* Ten objects, a clean close; a copy of that file for later. */
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	for (; next < 10; next++)
		wl_put(t, want, next, (uint8_t)(next % 250 + 1));
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	store_close(s);
	CU_ASSERT_EQUAL_FATAL(slurp(mdb, &early, &early_len), 0);
	/* Forty more; then the open's checkpoint is the state a crash goes
	 * back to: a copy of the file as it is then. */
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	for (; next < 50; next++)
		wl_put(t, want, next, (uint8_t)(next % 250 + 1));
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	store_close(s);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(slurp(mdb, &snap, &snap_len), 0);
	/* Forty logged transactions: new objects, replacements, deletes, a
	 * token; the last one only puts r299. */
	for (int x = 0; x < 40; x++) {
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		if (x == 39) {
			wl_put(t, want, WL_N - 1, 99);
			CU_ASSERT_EQUAL(store_commit(t), KI_OK);
			continue;
		}
		for (int k = 0; k < 5; k++, next++)
			wl_put(t, want, next, (uint8_t)(next % 250 + 1));
		if (x % 4 == 1) {
			char name[16];
			int i = x * 3;

			wl_put(t, want, i, (uint8_t)(200 + x % 50));
			snprintf(name, sizeof(name), "r%03d", i + 1);
			want[i + 1] = 0;
			CU_ASSERT_EQUAL(store_delete(t, 1, name, strlen(name), &ts_fin),
			    KI_OK);
		}
		if (x == 20)
			CU_ASSERT_EQUAL(store_token_put(t, wl_hash, "{}", 2), KI_OK);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		if (x == 30)   /* logged in redo.side, between two of ours */
			CU_ASSERT_EQUAL(wl_side_write(dir), 0);
	}
	store_lmdb_crash(s);
	CU_ASSERT_EQUAL_FATAL(slurp(mdb, &cur, &cur_len), 0);
	for (int f = 0; f < 3; f++)
		CU_ASSERT_EQUAL_FATAL(slurp(log[f], &logd[f], &wal_len[f]), 0);
	CU_ASSERT_FATAL(cur_len % ps == 0 && snap_len % ps == 0);
	m = malloc(cur_len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);

	/* What reached the disk: the newest meta pages, and of every page
	 * written since the checkpoint either the new content, the old one or
	 * garbage (a torn or unwritten page). */
	for (unsigned seed = 1; seed <= 4; seed++) {
		size_t changed = 0;

		srand(seed);
		memcpy(m, cur, cur_len);
		for (size_t p = 2; p < cur_len / ps; p++) {
			int in_snap = (p + 1) * ps <= snap_len;
			int r = rand() % 3;

			if (in_snap && memcmp(cur + p * ps, snap + p * ps, ps) == 0)
				continue;
			changed++;
			if (r == 1 || (r == 2 && !in_snap)) {
				for (size_t b = 0; b < ps; b++)
					m[p * ps + b] = (uint8_t)rand();
			} else if (r == 2) {
				memcpy(m + p * ps, snap + p * ps, ps);
			}
		}
		CU_ASSERT(changed > 0);
		CU_ASSERT_EQUAL_FATAL(spit(mdb, m, cur_len), 0);
		for (int f = 0; f < 3; f++)
			CU_ASSERT_EQUAL_FATAL(spit(log[f], logd[f], wal_len[f]), 0);
		wl_verify(dir, want, 1, 41);
	}

	/* A torn last record: its transaction was never acknowledged, and the
	 * 39 before it and the other process's come back. */
	CU_ASSERT_EQUAL_FATAL(spit(mdb, cur, cur_len), 0);
	{
		/* The log is the file with the records (the other one was
		 * emptied at the open). Its records start at byte 69632: u32
		 * magic, u32 length, 16 more bytes of fields, the payload; a
		 * direct write may have left zeros after the last. */
		int last = wal_len[1] > wal_len[0];
		size_t end = 69632;

		CU_ASSERT_FATAL(wal_len[last] > 100 && wal_len[last ^ 1] < 100);
		while (end + 24 <= wal_len[last]) {
			uint32_t magic, len;

			memcpy(&magic, logd[last] + end, 4);
			memcpy(&len, logd[last] + end + 4, 4);
			if (magic != 0x5257494bu || end + 24 + len > wal_len[last])
				break;
			end += 24 + len;
		}
		CU_ASSERT_FATAL(end > 69632);
		CU_ASSERT_EQUAL_FATAL(spit(log[last], logd[last], end - 7), 0);
		CU_ASSERT_EQUAL_FATAL(spit(log[last ^ 1], logd[last ^ 1],
		    wal_len[last ^ 1]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(spit(log[2], logd[2], wal_len[2]), 0);
	want[WL_N - 1] = 0;
	wl_verify(dir, want, 1, 40);
	/* Reopened after a clean close: nothing to apply. */
	wl_verify(dir, want, 1, 0);

	/* A file restored from an older copy is not touched by the log of the
	 * one it replaced (its records are in both log files here, so that
	 * whichever the next appends go to, the other holds them). */
	CU_ASSERT_EQUAL_FATAL(spit(mdb, early, early_len), 0);
	{
		int last = wal_len[1] > wal_len[0];

		for (int f = 0; f < 2; f++)
			CU_ASSERT_EQUAL_FATAL(spit(log[f], logd[last],
			    wal_len[last]), 0);
		CU_ASSERT_EQUAL_FATAL(spit(log[2], logd[2], wal_len[2]), 0);
	}
	for (int i = 0; i < WL_N; i++)
		want[i] = i < 10 ? (uint8_t)(i % 250 + 1) : 0;
	wl_verify(dir, want, 0, 0);
	/* ...nor after the next crash: a new write, then recovery applies it
	 * alone, not what the replaced file's log held after it. */
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	wl_put(t, want, WL_N - 1, 77);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	store_lmdb_crash(s);
	wl_verify(dir, want, 0, 1);

	free(m);
	free(early);
	free(snap);
	free(cur);
	for (int f = 0; f < 3; f++)
		free(logd[f]);
	tests_rmdir(dir);
	free(dir);
}

/* A store whose digest index lost an object's entry (as the defect fixed
 * in index_object left them): store_verify reports it, its repair puts it
 * back, and the object is found by digest after a reopen. */
static void
test_verify_repair(void)
{
	char *dir = tests_tmpdir();
	store_options o = opts(64u << 20);
	store_verify_stats vs;
	store *s;
	store_txn *t;
	store_obj ob;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	uint8_t d[32];
	int rc = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "lost", 0x5a, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "kept", 0x5b, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	store_close(s);
	/* Every digest entry of "lost" goes (young or main). */
	CU_ASSERT_EQUAL_FATAL(tl_lmdb_open(dir, 0, &env, &txn), 0);
	memset(d, 0x5a, sizeof(d));
	for (int i = 0; i < 3 && rc == 0; i++) {
		static const char *const tables[] = { "young0", "young1",
			"digest8" };
		MDB_cursor *c;
		MDB_val k, v;

		if ((rc = mdb_dbi_open(txn, tables[i], 0, &dbi)) != 0 ||
		    (rc = mdb_cursor_open(txn, dbi, &c)) != 0)
			break;
		for (int r = mdb_cursor_get(c, &k, &v, MDB_FIRST); r == 0;
		    r = mdb_cursor_get(c, &k, &v, MDB_NEXT))
			if ((i < 2 && v.mv_size == 8 && memcmp(v.mv_data, d, 8) == 0) ||
			    (i == 2 && k.mv_size == 8 &&
			    memcmp(k.mv_data, d, 8) == 0))
				rc = mdb_cursor_del(c, 0);
		mdb_cursor_close(c);
	}
	CU_ASSERT_EQUAL_FATAL(tl_lmdb_close(env, txn, rc), 0);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_ENOTFOUND);
	store_abort(t);
	CU_ASSERT_EQUAL(store_verify(s, 0, NULL, NULL, NULL, &vs), KI_OK);
	CU_ASSERT_EQUAL(vs.objects, 2);
	CU_ASSERT_EQUAL(vs.problems, 1);
	CU_ASSERT_EQUAL(store_verify(s, 1, NULL, NULL, NULL, &vs), KI_OK);
	CU_ASSERT_EQUAL(vs.repaired, 1);
	CU_ASSERT_EQUAL(vs.problems, 0);
	store_close(s);
	CU_ASSERT_EQUAL_FATAL(tsopen(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_OK);
	CU_ASSERT(ob.name_len == 4 && memcmp(ob.name, "lost", 4) == 0);
	store_abort(t);
	CU_ASSERT_EQUAL(store_verify(s, 0, NULL, NULL, NULL, &vs), KI_OK);
	CU_ASSERT_EQUAL(vs.problems, 0);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

/* The records' checksum is the standard CRC-32C (RFC 3720's check value)
 * by the CPU's instruction and by the table alike, at every length and
 * alignment, so that a file is read the same on every machine. */
static void
test_record_crc32c(void)
{
	uint8_t buf[300];

	CU_ASSERT_EQUAL(lm_crc32c("123456789", 9), 0xe3069283u);
	CU_ASSERT_EQUAL(~lm_crc32c_sw(~0u, (const uint8_t *)"123456789", 9),
	    0xe3069283u);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	for (size_t off = 0; off < 9; off++)
		for (size_t n = 0; n + off <= sizeof(buf); n += 13)
			CU_ASSERT_EQUAL(lm_crc32c(buf + off, n),
			    ~lm_crc32c_sw(~0u, buf + off, n));
}

static int
add_tests(CU_pSuite s)
{
	if (CU_add_test(s, "records' checksum: CRC-32C, instruction and "
	    "table alike", test_record_crc32c) == NULL ||
	    CU_add_test(s, "store_verify finds an object missing from the "
	    "digest index, and its repair puts it back",
	    test_verify_repair) == NULL ||
	    CU_add_test(s, "history is trimmed in runs, the waiting part hidden",
	        test_history_trimmed_in_runs) == NULL ||
	    CU_add_test(s, "a full map fails cleanly",
	        test_map_full) == NULL ||
	    CU_add_test(s, "the tail: postings written in groups, lists and " "referrers read the newest records",
	        test_tail_postings) == NULL ||
	    CU_add_test(s, "young digests merge into the digest index and are always found",
	        test_digest_young) == NULL ||
	    CU_add_test(s, "a format-5 store's digest index is converted at open",
	        test_digests_from_format5) == NULL ||
	    CU_add_test(s, "a format-3 store opens as format 7 and gets a tail",
	        test_tail_from_format3) == NULL ||
	    CU_add_test(s, "a format-4 store's tail is posted when it opens, " "its facets counted once",
	        test_tail_from_format4) == NULL ||
	    CU_add_test(s, "the map grows up to its maximum",
	        test_map_grows) == NULL ||
	    CU_add_test(s, "redo log files: records across block edges, a " "retracted one, read back",
	        test_redo_log_files) == NULL ||
	    CU_add_test(s, "redo log: recovery from a power failure's leftovers, " "a torn record, an older file",
	        test_redo_log_recovery) == NULL)
		return -1;
	return 0;
}

int
test_store_lmdb_register(void)
{
	CU_pSuite s = CU_add_suite("store_lmdb", NULL, NULL);

	return s == NULL ? -1 : add_tests(s);
}
