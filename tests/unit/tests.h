/* tests/unit/tests.h — the suites the unit-test runner registers, and
 * helpers they share. */
#ifndef TESTS_H
#define TESTS_H

int test_jcs_register(void);
int test_store_register(void);
int test_store_lmdb_register(void);
int test_store_model_register(void);
int test_store_integrity_register(void);
int test_store_etcd_register(void);
int test_etcd_codec_register(void);
int test_api_register(void);
int test_labels_register(void);
int test_series_register(void);
int test_encode_register(void);
int test_jsonpatch_register(void);
int test_liger_register(void);
int test_liger_variants_register(void);
int test_gpu_register(void);
int test_costmodel_register(void);

/* A fresh empty directory under TMPDIR; caller frees the string and may
 * remove the directory with tests_rmdir(). */
char *tests_tmpdir(void);
void tests_rmdir(const char *dir);
/* The test data (tests/data: the seed, the Liger CSV, the JCS vectors) is
 * found under $KI_DATA_DIR, which `make check` sets; unset, under
 * tests/data relative to the working directory (the top of the source
 * tree). tests_data_path writes "<data dir>/<rel>" into out: 0, or -1 when
 * it does not fit. tests_read_data reads a whole file there: a
 * NUL-terminated copy (caller frees) and its length in *len, or NULL after
 * naming the file on stderr. */
int tests_data_path(char *out, size_t size, const char *rel);
char *tests_read_data(const char *rel, size_t *len);

#endif
