/* tests/unit/main.c — runs every CUnit suite; exit status 1 on any failure. */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/tests.h"

char *
tests_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *p;
	size_t n;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	n = strlen(base) + 32;
	if ((p = malloc(n)) == NULL)
		return NULL;
	snprintf(p, n, "%s/kix-unit-XXXXXX", base);
	if (mkdtemp(p) == NULL) {
		free(p);
		return NULL;
	}
	return p;
}

void
tests_rmdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

int
tests_data_path(char *out, size_t size, const char *rel)
{
	const char *base = getenv("KI_DATA_DIR");
	int n;

	if (base == NULL || *base == '\0')
		base = "tests/data";
	n = snprintf(out, size, "%s/%s", base, rel);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

char *
tests_read_data(const char *rel, size_t *len)
{
	char path[4096];
	FILE *f;
	char *buf = NULL;
	long n;

	if (tests_data_path(path, sizeof(path), rel) != 0)
		return NULL;
	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "cannot open %s (set KI_DATA_DIR)\n", path);
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
			if (len != NULL)
				*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

/* unit_tests [SUITE...]: every suite, or only those named. */
int
main(int argc, char **argv)
{
	int (*suites[])(void) = {
		test_jcs_register,
		test_store_register,
		test_store_lmdb_register,
		test_store_model_register,
		test_store_integrity_register,
		test_store_etcd_register,
		test_etcd_codec_register,
		test_api_register,
		test_labels_register,
		test_series_register,
		test_encode_register,
		test_jsonpatch_register,
#ifdef KI_HAVE_LIGER
		test_liger_register,
		test_liger_variants_register,
#endif
#ifdef KI_HAVE_COSTMODEL
		test_gpu_register,
		test_costmodel_register,
#endif
	};
	unsigned failures;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		if (suites[i]() != 0) {
			fprintf(stderr, "registering suite %zu failed: %s\n", i,
			    CU_get_error_msg());
			CU_cleanup_registry();
			return 2;
		}
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	if (argc < 2)
		CU_basic_run_tests();
	for (int i = 1; i < argc; i++) {
		CU_pSuite s = CU_get_suite(argv[i]);

		if (s == NULL) {
			fprintf(stderr, "no suite %s\n", argv[i]);
			CU_cleanup_registry();
			return 2;
		}
		CU_basic_run_suite(s);
	}
	failures = CU_get_number_of_failures() +
	    CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	return failures == 0 ? 0 : 1;
}
