/* tests/unit/tests.h — the suites the unit-test runner registers, and
 * helpers they share. */
#ifndef TESTS_H
#define TESTS_H

int test_jcs_register(void);
int test_store_register(void);
int test_store_lmdb_register(void);
int test_store_model_register(void);
int test_store_integrity_register(void);
int test_api_register(void);
int test_labels_register(void);
int test_liger_register(void);
int test_gpu_register(void);
int test_costmodel_register(void);

/* A fresh empty directory under TMPDIR; caller frees the string and may
 * remove the directory with tests_rmdir(). */
char *tests_tmpdir(void);
void tests_rmdir(const char *dir);
/* Reads a whole file under KI_SHARED_DIR (or ../shared); NULL if missing.
 * Caller frees. */
char *tests_read_shared(const char *rel, size_t *len);

#endif
