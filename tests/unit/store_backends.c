/* tests/unit/store_backends.c — the backends the store's conformance
 * suites run against: LMDB always, and etcd when KI_ETCD_ENDPOINTS names
 * a cluster (tests/etcd/conformance.sh starts one). Each suite is added
 * once per backend, as "SUITE/BACKEND", and its init makes that backend
 * the current one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/etcd.h"
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

/* Each test's directory names its own key prefix: a reopen of the same
 * directory finds the same store, another test's is empty. */
static int
etcd_open(store **out, const char *dir, const store_options *o, int small)
{
	store_etcd_options eo;
	char prefix[512];

	(void)small;
	memset(&eo, 0, sizeof(eo));
	eo.endpoints = getenv("KI_ETCD_ENDPOINTS");
	snprintf(prefix, sizeof(prefix), "/kitest%s/", dir);
	eo.prefix = prefix;
	return store_etcd_open(out, &eo, o);
}

static const ts_backend backends[] = {
	{ "lmdb", lmdb_open, store_lmdb_crash },
	{ "etcd", etcd_open, store_close },
};

const ts_backend *ts_be = &backends[0];

static int
init_lmdb(void)
{
	ts_be = &backends[0];
	return 0;
}

static int
init_etcd(void)
{
	ts_be = &backends[1];
	return 0;
}

/* One per backend, in the same order. */
static int (*const inits[])(void) = { init_lmdb, init_etcd };

int
ts_add_suites(const char *name, int (*add)(CU_pSuite s))
{
	const char *etcd = getenv("KI_ETCD_ENDPOINTS");
	size_t n = sizeof(backends) / sizeof(backends[0]);

	for (size_t i = 0; i < n; i++) {
		char full[128];
		CU_pSuite s;

		if (i == 1 && (etcd == NULL || *etcd == '\0'))
			continue;
		snprintf(full, sizeof(full), "%s/%s", name, backends[i].name);
		if ((s = CU_add_suite(full, inits[i], NULL)) == NULL ||
		    add(s) != 0)
			return -1;
	}
	return 0;
}
