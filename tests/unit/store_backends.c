/* tests/unit/store_backends.c — the backends the store's conformance
 * suites run against (today the LMDB one): each suite is added once per
 * backend, and its init makes that backend the current one. */
#include <stdio.h>
#include <string.h>

#include "store/lmdb.h"
#include "tests/unit/store_tests.h"

static int
lmdb_open(store **out, const char *dir, const store_options *o, int small)
{
	store_lmdb_options lo;

	memset(&lo, 0, sizeof(lo));
	lo.map_size = 64u << 20;
	if (small) {
		lo.digest_young = 4;
		lo.young_read_min = 8;
		lo.convert_batch = 7;
	}
	return store_lmdb_open(out, dir, o, &lo);
}

static const ts_backend backends[] = {
	{ "lmdb", lmdb_open, store_lmdb_crash },
};

const ts_backend *ts_be = &backends[0];

static int
init_lmdb(void)
{
	ts_be = &backends[0];
	return 0;
}

/* One per backend, in the same order. */
static int (*const inits[])(void) = { init_lmdb };

int
ts_add_suites(const char *name, int (*add)(CU_pSuite s))
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		char full[128];
		CU_pSuite s;

		snprintf(full, sizeof(full), "%s/%s", name, backends[i].name);
		if ((s = CU_add_suite(full, inits[i], NULL)) == NULL ||
		    add(s) != 0)
			return -1;
	}
	return 0;
}
