/* tests/unit/store_tests.h — what the store's test suites share: the
 * backends a conformance suite runs against (store_backends.c) and small
 * helpers (store_tests.c). It includes only store/store.h: a suite that
 * includes nothing else tests the contract, whatever the backend. */
#ifndef TESTS_STORE_TESTS_H
#define TESTS_STORE_TESTS_H

#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* One backend of store/store.h. */
typedef struct ts_backend {
	const char *name;
	/* Opens the store in dir with o; small: with the backend's own
	 * thresholds made small (LMDB: the young digest generations), so that
	 * a few writes cross them. */
	int (*open)(store **out, const char *dir, const store_options *o,
	    int small);
	/* Closes s as a crash would leave it (a backend that cannot simulate
	 * one: store_close). */
	void (*crash)(store *s);
} ts_backend;

/* The backend the running suite tests (set by its suite's init). */
extern const ts_backend *ts_be;

/* Adds, for every backend, a suite named "NAME/BACKEND" whose tests add()
 * adds; -1 when CUnit refuses. */
int ts_add_suites(const char *name, int (*add)(CU_pSuite s));

/* Options for a small test store: events kept 1000, no sync. */
store_options ts_opts(void);
int ts_open(store **out, const char *dir, const store_options *o);
int ts_open_small(store **out, const char *dir, const store_options *o);
void ts_crash(store *s);

/* What a delete's final state is in the tests. */
extern const store_obj ts_fin;

typedef struct ts_names {
	char got[16][16];
	uint64_t ids[16];
	int n;
} ts_names;

typedef struct ts_evs {
	int types[32];
	uint64_t rvs[32];
	char json[32][16];
	int n;
} ts_evs;

int ts_put(store_txn *t, int kind, const char *name, uint8_t dbyte,
	const char *natkey, const uint8_t *refs, size_t nrefs);
int ts_on_event(void *arg, int type, const store_obj *o);
int ts_put_digest(store_txn *t, int kind, const char *name, const uint8_t *digest);
void ts_digest(int i, uint8_t d[32]);
void ts_digest_check(store *s, int n, int gone);

#endif
