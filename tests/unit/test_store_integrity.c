/* tests/unit/test_store_integrity.c — damaged stores: redo-log records and
 * data pages flipped, a full disk. */
#include <CUnit/CUnit.h>

#include "store/store.h"
#include "tests/unit/tests.h"

int
test_store_integrity_register(void)
{
	CU_pSuite s = CU_add_suite("store_integrity", NULL, NULL);

	return s == NULL ? -1 : 0;
}
