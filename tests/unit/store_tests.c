/* tests/unit/store_tests.c — helpers the store's test suites share (see
 * store_tests.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "tests/unit/store_tests.h"

store_options
ts_opts(void)
{
	store_options o;

	memset(&o, 0, sizeof(o));
	o.history = 1000;
	o.nosync = 1;
	return o;
}

int
ts_open(store **out, const char *dir, const store_options *o)
{
	return ts_be->open(out, dir, o, 0);
}

int
ts_open_small(store **out, const char *dir, const store_options *o)
{
	return ts_be->open(out, dir, o, 1);
}

void
ts_crash(store *s)
{
	ts_be->crash(s);
}

const store_obj ts_fin = { .json = "{}", .json_len = 2 };

/* Puts kind/name with a digest made of one byte and a small JSON body. */
int
ts_put(store_txn *t, int kind, const char *name, uint8_t dbyte,
	const char *natkey, const uint8_t *refs, size_t nrefs)
{
	char json[256];
	store_obj o;

	memset(&o, 0, sizeof(o));
	snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"%s\"},"
	    "\"spec\":{\"d\":%u},\"status\":{}}", name, dbyte);
	o.kind = kind;
	o.rv = store_next_rv(t);
	memset(o.digest, dbyte, sizeof(o.digest));
	o.name = name;
	o.name_len = strlen(name);
	o.natkey = natkey;
	o.natkey_len = natkey ? strlen(natkey) : 0;
	o.refs = refs;
	o.nrefs = nrefs;
	o.json = json;
	o.json_len = strlen(json);
	o.meta_off = 12;
	o.meta_len = (uint32_t)(strlen(name) + 11);
	return store_put(t, &o);
}



int
ts_on_event(void *arg, int type, const store_obj *o)
{
	ts_evs *e = arg;

	if (e->n < 32) {
		e->types[e->n] = type;
		snprintf(e->json[e->n], 16, "%.*s", (int)o->json_len, o->json);
		e->rvs[e->n++] = o->rv;
	}
	return 0;
}

/* Puts kind/name with the given digest. */
int
ts_put_digest(store_txn *t, int kind, const char *name, const uint8_t *digest)
{
	char json[128];
	store_obj o;

	memset(&o, 0, sizeof(o));
	snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"%s\"},"
	    "\"spec\":{},\"status\":{}}", name);
	o.kind = kind;
	o.rv = store_next_rv(t);
	memcpy(o.digest, digest, sizeof(o.digest));
	o.name = name;
	o.name_len = strlen(name);
	o.json = json;
	o.json_len = strlen(json);
	o.meta_off = 12;
	o.meta_len = (uint32_t)(strlen(name) + 11);
	return store_put(t, &o);
}

/* Digest i of the collision tests: the first 8 bytes come from i / 3, so
 * that digests 3k, 3k+1 and 3k+2 start the same; the rest tells them
 * apart. The prefixes are a permutation of i / 3, out of id order as real
 * digests are, so that the index's sorting is tested. */
void
ts_digest(int i, uint8_t d[32])
{
	unsigned p = ((unsigned)(i / 3) * 40503u + 12345u) & 0xffffu;

	memset(d, 0, 32);
	d[0] = (uint8_t)(p >> 8);
	d[7] = (uint8_t)p;
	d[8] = (uint8_t)(0x90 - i % 3 * 0x30);   /* out of id order */
	d[31] = (uint8_t)i;
}

/* Each of digests 0..n-1 ts_names object "d<i>" of kind 1, and a digest that
 * starts like them but ends otherwise ts_names nothing. */
void
ts_digest_check(store *s, int n, int gone)
{
	store_txn *t;
	store_obj ob;
	uint8_t d[32];
	char name[16];

	CU_ASSERT_EQUAL_FATAL(store_begin(s, 0, &t), KI_OK);
	for (int i = 0; i < n; i++) {
		ts_digest(i, d);
		snprintf(name, sizeof(name), "d%d", i);
		if (i == gone) {
			CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_ENOTFOUND);
			continue;
		}
		CU_ASSERT_EQUAL_FATAL(store_get_by_digest(t, d, &ob), KI_OK);
		CU_ASSERT_EQUAL(ob.name_len, strlen(name));
		CU_ASSERT(memcmp(ob.name, name, ob.name_len) == 0);
		CU_ASSERT(memcmp(ob.digest, d, 32) == 0);
		d[20] ^= 1;
		CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_ENOTFOUND);
	}
	store_abort(t);
}
