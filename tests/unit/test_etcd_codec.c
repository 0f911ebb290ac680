/* tests/unit/test_etcd_codec.c — the etcd store's value codec
 * (store/etcd_codec.c), through the path a value takes: et_codec_put
 * writes the base64 a Txn carries, et_unb64 reads it back from an answer
 * of etcd and inflates what was compressed. Needs no etcd. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "store/etcd_int.h"
#include "tests/unit/tests.h"

/* What etcd would answer for a value put as b holds it ("<base64>"):
 * the value read back, or NULL (*rc tells why). Caller frees. */
static char *
round_trip(const ki_buf *b, size_t *len, int *rc)
{
	json_object *o = json_object_new_object();
	char *out = NULL;

	json_object_object_add(o, "value",
	    json_object_new_string_len(b->data + 1, (int)b->len - 2));
	*rc = et_unb64(o, "value", &out, len);
	json_object_put(o);
	return out;
}

/* A JSON-like value of n bytes that deflate shrinks. */
static char *
json_like(size_t n)
{
	static const char part[] = "{\"kernel\":\"embedding\",\"median\":1.25,";
	char *p = malloc(n);

	for (size_t i = 0; p != NULL && i < n; i++)
		p[i] = part[i % (sizeof(part) - 1)];
	return p;
}

static void
test_compressed_round_trip(void)
{
	size_t n = 4096, len = 0;
	char *v = json_like(n), *back;
	ki_buf b;
	int rc;

	ki_buf_init(&b);
	CU_ASSERT_EQUAL_FATAL(et_codec_put(&b, v, n), KI_OK);
	/* Stored compressed: well under the value's base64. */
	CU_ASSERT(b.len < n / 2);
	back = round_trip(&b, &len, &rc);
	CU_ASSERT_EQUAL(rc, KI_OK);
	CU_ASSERT_EQUAL(len, n);
	CU_ASSERT(back != NULL && memcmp(back, v, n) == 0);
	free(back);
	ki_buf_free(&b);
	free(v);
}

static void
test_small_and_random_values_as_they_are(void)
{
	size_t sizes[] = { 8, 511, 4096 };
	unsigned seed = 7;

	for (size_t k = 0; k < 3; k++) {
		size_t n = sizes[k], len = 0;
		char *v = malloc(n), *back;
		ki_buf b;
		int rc;

		CU_ASSERT_FATAL(v != NULL);
		/* 8 and 511 bytes: too small to compress; 4096 random bytes
		 * do not shrink. */
		for (size_t i = 0; i < n; i++)
			v[i] = k < 2 ? 'a' : (char)(rand_r(&seed) >> 8);
		ki_buf_init(&b);
		CU_ASSERT_EQUAL(et_codec_put(&b, v, n), KI_OK);
		CU_ASSERT_EQUAL(b.len, 2 + (n + 2) / 3 * 4);
		back = round_trip(&b, &len, &rc);
		CU_ASSERT_EQUAL(rc, KI_OK);
		CU_ASSERT(back != NULL && len == n && memcmp(back, v, n) == 0);
		free(back);
		ki_buf_free(&b);
		free(v);
	}
}

static void
test_damaged_value_is_corrupt(void)
{
	/* The marker, a length of 4096, then a zlib stream cut short. */
	char raw[64], *back;
	size_t len = 0;
	ki_buf b;
	int rc;

	memcpy(raw, "\xffKZ1\0\0\x10\0\x78\x01", 10);
	memset(raw + 10, 0, sizeof(raw) - 10);
	ki_buf_init(&b);
	CU_ASSERT_EQUAL_FATAL(et_b64(&b, raw, sizeof(raw)), KI_OK);
	back = round_trip(&b, &len, &rc);
	CU_ASSERT_EQUAL(rc, KI_ECORRUPT);
	CU_ASSERT_PTR_NULL(back);
	free(back);
	ki_buf_free(&b);
}

int
test_etcd_codec_register(void)
{
	CU_pSuite s = CU_add_suite("etcd_codec", NULL, NULL);

	if (s == NULL ||
	    CU_add_test(s, "a JSON value is stored compressed and read back "
	        "whole", test_compressed_round_trip) == NULL ||
	    CU_add_test(s, "small and incompressible values are stored as "
	        "they are", test_small_and_random_values_as_they_are) == NULL ||
	    CU_add_test(s, "a compressed value that does not inflate is "
	        "KI_ECORRUPT", test_damaged_value_is_corrupt) == NULL)
		return -1;
	return 0;
}
