/* tests/unit/test_store_model.c — the store against a model: random
 * writes (new objects, replacements keeping or changing their content,
 * deletes, aborted writes such as a dry run, tokens), each followed by a
 * reopen (clean or after a crash), and every index compared with the model
 * after it: names, digests, natural keys, labels, references, facets,
 * events and tokens. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "tests/unit/store_tests.h"
#include "tests/unit/tests.h"

#define M_OBJS 48
#define M_KINDS 2
#define M_EVENTS 4096

typedef struct m_obj {
	int live, kind;
	char name[16];
	uint32_t content;      /* its digest is made from this */
	int natkey;            /* -1: none */
	int gpu;               /* label gpu=g<gpu>, also the facet */
	int nrefs;
	uint32_t refs[2];      /* contents it references */
	uint64_t rv;
} m_obj;

typedef struct m_event {
	int type, kind;
	char name[16];
} m_event;

typedef struct model {
	m_obj o[M_OBJS];
	m_event ev[M_EVENTS];
	size_t nev;
	uint32_t next_content;
	int tokens[8];          /* token i stored */
	uint64_t rng;
} model;

static uint64_t
m_rand(model *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return m->rng;
}

static void
m_digest(uint32_t content, uint8_t d[STORE_DIGEST_LEN])
{
	uint64_t x = content * UINT64_C(0x9e3779b97f4a7c15) + 1;

	for (int i = 0; i < STORE_DIGEST_LEN; i++) {
		x ^= x >> 29;
		x *= UINT64_C(0xbf58476d1ce4e5b9);
		d[i] = (uint8_t)(x >> 56);
	}
}

/* Puts m's object i as it is in the model. */
static int
m_put(store_txn *t, m_obj *mo)
{
	char json[256], natkey[16], labels[32], facets[16];
	uint8_t refs[2 * STORE_DIGEST_LEN];
	store_obj o;
	int ln;

	memset(&o, 0, sizeof(o));
	snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"%s\"},"
	    "\"spec\":{\"c\":%u},\"status\":{}}", mo->name, mo->content);
	o.kind = mo->kind;
	o.rv = store_next_rv(t);
	m_digest(mo->content, o.digest);
	o.name = mo->name;
	o.name_len = strlen(mo->name);
	if (mo->natkey >= 0) {
		snprintf(natkey, sizeof(natkey), "nk%d", mo->natkey);
		o.natkey = natkey;
		o.natkey_len = strlen(natkey);
	}
	for (int i = 0; i < mo->nrefs; i++)
		m_digest(mo->refs[i], refs + i * STORE_DIGEST_LEN);
	o.refs = mo->nrefs ? refs : NULL;
	o.nrefs = (size_t)mo->nrefs;
	ln = snprintf(labels, sizeof(labels), "gpu%cg%d", 0, mo->gpu);
	o.labels = labels;
	o.labels_len = (size_t)ln + 1;
	ln = snprintf(facets, sizeof(facets), "g%d", mo->gpu);
	o.facets = facets;
	o.facets_len = (size_t)ln + 1;
	o.json = json;
	o.json_len = strlen(json);
	o.meta_off = 12;
	o.meta_len = (uint32_t)(strlen(mo->name) + 11);
	mo->rv = o.rv;
	return store_put(t, &o);
}

typedef struct m_names {
	char names[M_OBJS][16];
	size_t n;
	int kind_ok;
	int kind;
} m_names;

static int
m_collect(void *arg, const store_obj *o)
{
	m_names *c = arg;

	if (c->n < M_OBJS && o->name_len < 16) {
		memcpy(c->names[c->n], o->name, o->name_len);
		c->names[c->n][o->name_len] = '\0';
		c->n++;
	}
	if (c->kind && o->kind != c->kind)
		c->kind_ok = 0;
	return 0;
}

/* Whether the set of names c found is the set the model expects. */
static int
m_same_set(const model *m, const m_names *c, int (*want)(const m_obj *,
	const void *), const void *arg)
{
	size_t n = 0;

	for (int i = 0; i < M_OBJS; i++) {
		int found = 0;

		if (!m->o[i].live || !want(&m->o[i], arg))
			continue;
		n++;
		for (size_t j = 0; j < c->n; j++)
			found |= strcmp(c->names[j], m->o[i].name) == 0;
		if (!found)
			return 0;
	}
	return n == c->n;
}

typedef struct m_kg {
	int kind, gpu;
} m_kg;

static int
want_label(const m_obj *o, const void *arg)
{
	const m_kg *kg = arg;

	return o->kind == kg->kind && o->gpu == kg->gpu;
}

static int
want_ref(const m_obj *o, const void *arg)
{
	uint32_t c = *(const uint32_t *)arg;

	for (int i = 0; i < o->nrefs; i++)
		if (o->refs[i] == c)
			return 1;
	return 0;
}

typedef struct m_evc {
	const model *m;
	size_t at;
	int ok;
} m_evc;

static int
m_event_cb(void *arg, int type, const store_obj *o)
{
	m_evc *c = arg;
	const m_event *e;

	if (c->at >= c->m->nev) {
		c->ok = 0;
		return 1;
	}
	e = &c->m->ev[c->at++];
	if (type != e->type || o->kind != e->kind ||
	    o->name_len != strlen(e->name) ||
	    memcmp(o->name, e->name, o->name_len) != 0)
		c->ok = 0;
	return 0;
}

typedef struct m_facet {
	uint64_t count[8];
	int ok;
} m_facet;

static int
m_facet_cb(void *arg, const char *facet, size_t len, uint64_t count)
{
	m_facet *f = arg;

	if (len != 2 || facet[0] != 'g' || facet[1] < '0' || facet[1] > '7')
		f->ok = 0;
	else
		f->count[facet[1] - '0'] = count;
	return 0;
}

static int
m_token_cb(void *arg, const uint8_t *hash, const char *value, size_t len)
{
	int *seen = arg;

	(void)value;
	(void)len;
	if (hash[0] < 8)
		seen[hash[0]]++;
	return 0;
}

/* Compares every index of s with the model; returns the number of
 * mismatches (each one also a failed assertion). */
static int
m_check(store *s, const model *m)
{
	store_txn *t;
	store_obj ob;
	uint8_t d[STORE_DIGEST_LEN];
	int bad = 0;

	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	for (int i = 0; i < M_OBJS; i++) {
		const m_obj *mo = &m->o[i];
		char nk[16];
		int rc;

		m_digest(mo->content, d);
		rc = store_get_by_digest(t, d, &ob);
		if (!mo->live) {
			/* Its content belongs to no live object. */
			int owner = -1;

			for (int j = 0; j < M_OBJS; j++)
				if (m->o[j].live && m->o[j].content == mo->content)
					owner = j;
			if (owner < 0 && rc != KI_ENOTFOUND)
				{
			bad++;
			CU_FAIL("a gone content is found by digest");
		}
			continue;
		}
		if (rc != KI_OK || ob.name_len != strlen(mo->name) ||
		    memcmp(ob.name, mo->name, ob.name_len) != 0) {
			bad++;
			CU_FAIL("a live object is not found by its digest");
		}
		if (store_get_by_name(t, mo->kind, mo->name, strlen(mo->name),
		    &ob) != KI_OK || ob.rv != mo->rv ||
		    memcmp(ob.digest, d, sizeof(d)) != 0 ||
		    ob.nrefs != (size_t)mo->nrefs) {
			bad++;
			CU_FAIL("a live object differs by name");
		}
		if (mo->natkey >= 0) {
			snprintf(nk, sizeof(nk), "nk%d", mo->natkey);
			if (store_get_by_natkey(t, mo->kind, nk, strlen(nk), &ob) !=
			    KI_OK || ob.name_len != strlen(mo->name) ||
			    memcmp(ob.name, mo->name, ob.name_len) != 0) {
				bad++;
				CU_FAIL("a natural key does not find its object");
			}
		}
	}
	for (int kind = 1; kind <= M_KINDS; kind++) {
		m_facet f;
		uint64_t n = 0, want = 0;

		for (int i = 0; i < M_OBJS; i++)
			want += m->o[i].live && m->o[i].kind == kind;
		if (store_count(t, kind, &n) != KI_OK || n != want)
			{
			bad++;
			CU_FAIL("the count of a kind differs");
		}
		for (int g = 0; g < 4; g++) {
			char v[16];
			store_alt a = { "gpu", v, NULL };
			store_term term = { &a, 1 };
			m_names c = { .n = 0, .kind_ok = 1, .kind = kind };
			m_kg kg = { kind, g };

			snprintf(v, sizeof(v), "g%d", g);
			if (store_list_index(t, kind, &term, 1, 0, m_collect, &c) !=
			    KI_OK || !c.kind_ok || !m_same_set(m, &c, want_label, &kg))
				{
			bad++;
			CU_FAIL("a label list differs");
		}
		}
		memset(&f, 0, sizeof(f));
		f.ok = 1;
		if (store_facets(t, kind, m_facet_cb, &f) != KI_OK || !f.ok)
			{
			bad++;
			CU_FAIL("facets cannot be read");
		}
		for (int g = 0; g < 8; g++) {
			uint64_t w = 0;

			for (int i = 0; i < M_OBJS; i++)
				w += m->o[i].live && m->o[i].kind == kind &&
				    m->o[i].gpu == g;
			if (f.count[g] != w)
				{
			bad++;
			CU_FAIL("a facet count differs");
		}
		}
	}
	for (uint32_t c = 1; c < m->next_content; c++) {
		m_names names = { .n = 0, .kind_ok = 1, .kind = 0 };

		m_digest(c, d);
		if (store_each_referrer(t, d, m_collect, &names) != KI_OK ||
		    !m_same_set(m, &names, want_ref, &c))
			{
			bad++;
			CU_FAIL("the referrers of a digest differ");
		}
	}
	{
		m_evc c = { m, 0, 1 };

		if (store_events_since(t, 0, m_event_cb, &c) != KI_OK || !c.ok ||
		    c.at != m->nev)
			{
			bad++;
			CU_FAIL("the events differ");
		}
		if (store_rv(t) != m->nev)
			{
			bad++;
			CU_FAIL("the resourceVersion differs");
		}
	}
	{
		int seen[8] = { 0 };

		if (store_token_list(t, m_token_cb, seen) != KI_OK)
			{
			bad++;
			CU_FAIL("tokens cannot be listed");
		}
		for (int i = 0; i < 8; i++)
			if (seen[i] != m->tokens[i])
				{
			bad++;
			CU_FAIL("the tokens differ");
		}
	}
	store_abort(t);
	return bad;
}

static void
m_event_add(model *m, int type, const m_obj *o)
{
	if (m->nev < M_EVENTS) {
		m->ev[m->nev].type = type;
		m->ev[m->nev].kind = o->kind;
		memcpy(m->ev[m->nev].name, o->name, sizeof(o->name));
		m->nev++;
	}
}

/* One random write, committed (the model follows) or aborted. */
static void
m_step(store *s, model *m, int step)
{
	store_txn *t;
	int i = (int)(m_rand(m) % M_OBJS), op = (int)(m_rand(m) % 10);
	m_obj *mo = &m->o[i], next;
	uint8_t hash[STORE_DIGEST_LEN];

	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	if (op == 9) {
		/* A token. */
		int k = (int)(m_rand(m) % 8);

		memset(hash, 0, sizeof(hash));
		hash[0] = (uint8_t)k;
		if (m->tokens[k]) {
			CU_ASSERT_EQUAL(store_token_delete(t, hash), KI_OK);
			m->tokens[k] = 0;
		} else {
			CU_ASSERT_EQUAL(store_token_put(t, hash, "{}", 2), KI_OK);
			m->tokens[k] = 1;
		}
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		return;
	}
	if (!mo->live) {
		/* A new object, at times first written by a transaction that
		 * aborts (a dry run of the same content). */
		next = *mo;
		next.live = 1;
		next.kind = 1 + (int)(m_rand(m) % M_KINDS);
		snprintf(next.name, sizeof(next.name), "o%d-%d", i, step);
		next.content = m->next_content++;
		next.natkey = m_rand(m) % 3 ? i : -1;
		next.gpu = (int)(m_rand(m) % 4);
		next.nrefs = (int)(m_rand(m) % 3);
		for (int r = 0; r < next.nrefs; r++)
			next.refs[r] = 1 + (uint32_t)(m_rand(m) % m->next_content);
		if (op < 3) {
			CU_ASSERT_EQUAL(m_put(t, &next), KI_OK);
			store_abort(t);
			CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
		}
		CU_ASSERT_EQUAL(m_put(t, &next), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_commit(t), KI_OK);
		*mo = next;
		m_event_add(m, STORE_ADDED, mo);
		return;
	}
	if (op < 2) {
		CU_ASSERT_EQUAL(store_delete(t, mo->kind, mo->name,
		    strlen(mo->name), &(store_obj){ .json = "{}",
		    .json_len = 2 }), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_commit(t), KI_OK);
		mo->live = 0;
		m_event_add(m, STORE_DELETED, mo);
		return;
	}
	/* A replacement: a label change keeps the content (a merge patch, a
	 * status rewrite); at times the content changes too (a PUT of
	 * another spec). */
	next = *mo;
	next.gpu = (int)(m_rand(m) % 4);
	if (op == 8)
		next.content = m->next_content++;
	if (op == 7) {
		/* Aborted first. */
		CU_ASSERT_EQUAL(m_put(t, &next), KI_OK);
		store_abort(t);
		CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	}
	CU_ASSERT_EQUAL(m_put(t, &next), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_commit(t), KI_OK);
	*mo = next;
	m_event_add(m, STORE_MODIFIED, mo);
}

static void
m_run(uint64_t seed, int small)
{
	char *dir = tests_tmpdir();
	store_options o;
	store *s;
	model *m = calloc(1, sizeof(*m));
	int bad = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	memset(&o, 0, sizeof(o));
	o.history = 100000;
	o.nosync = 1;
	m->rng = seed;
	m->next_content = 1;
	CU_ASSERT_EQUAL_FATAL((small ? ts_open_small : ts_open)(&s, dir, &o), KI_OK);
	for (int step = 0; step < 400 && bad == 0; step++) {
		m_step(s, m, step);
		bad += m_check(s, m);
		/* The restart between the write and its read: a clean stop,
		 * or a crash that the redo log recovers. */
		if (step % 3 == 2)
			ts_crash(s);
		else
			store_close(s);
		CU_ASSERT_EQUAL_FATAL((small ? ts_open_small : ts_open)(&s, dir, &o), KI_OK);
		bad += m_check(s, m);
		if (bad)
			fprintf(stderr, "\nstore model: seed %llu, first mismatch "
			    "after step %d\n", (unsigned long long)seed, step);
	}
	store_close(s);
	tests_rmdir(dir);
	free(dir);
	free(m);
}

/* With the backend's thresholds made small (LMDB: young digest
 * generations of 4, merged often), and with its defaults. */
static void
test_model_restart(void)
{
	m_run(UINT64_C(0x2545f4914f6cdd1d), 1);
	m_run(UINT64_C(0x9e3779b97f4a7c15), 0);
}

/* The defects the model found, as plain cases: an object changed after
 * its creation, and one created after a dry run of the same content, are
 * found by digest after a restart. */
static void
test_digest_after_change_restart(void)
{
	char *dir = tests_tmpdir();
	store_options o;
	store *s;
	store_txn *t;
	store_obj ob;
	model *m = calloc(1, sizeof(*m));
	uint8_t d[STORE_DIGEST_LEN];

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	memset(&o, 0, sizeof(o));
	o.nosync = 1;
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	m->o[0] = (m_obj){ .live = 1, .kind = 1, .name = "patched",
	    .content = 1, .natkey = -1 };
	m->o[1] = (m_obj){ .live = 1, .kind = 1, .name = "dryrun",
	    .content = 2, .natkey = -1 };
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(m_put(t, &m->o[0]), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	/* A label change: same content. */
	m->o[0].gpu = 1;
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(m_put(t, &m->o[0]), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	/* A dry run, then the create. */
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(m_put(t, &m->o[1]), KI_OK);
	store_abort(t);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(m_put(t, &m->o[1]), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	store_close(s);
	CU_ASSERT_EQUAL_FATAL(ts_open(&s, dir, &o), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	m_digest(1, d);
	CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_OK);
	m_digest(2, d);
	CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_OK);
	store_abort(t);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
	free(m);
}

static int
add_tests(CU_pSuite s)
{
	if (CU_add_test(s, "an object changed or dry-run before its creation "
	    "is found by digest after a restart",
	    test_digest_after_change_restart) == NULL ||
	    CU_add_test(s, "every index matches a model after each write and "
	    "a restart", test_model_restart) == NULL)
		return -1;
	return 0;
}

int
test_store_model_register(void)
{
	return ts_add_suites("store_model", add_tests);
}
