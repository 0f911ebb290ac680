/* tests/unit/test_jcs.c — CUnit tests of api/jcs.c: RFC 8785 vectors and
 * numbers, the content digest of the seed, and the raw-text checks. */
#include "api/jcs.h"
#include "api/object.h"
#include "lib/jsonlex.h"
#include "tests/unit/tests.h"

#include <CUnit/CUnit.h>
#include <json-c/json_object_iterator.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int test_jcs_register(void);

/* numbers.csv holds this many lines; fewer means the file was cut short. */
#define NUMBERS_LINES 99996

/* Parses text (NUL-terminated, len bytes) as the daemon does: strict,
 * UTF-8 checked. *ok says whether json-c took it. Returns the tree (caller
 * releases with json_object_put()); NULL for a JSON null or a failure. */
static struct json_object *
parse_strict(const char *text, size_t len, int *ok)
{
	struct json_tokener *tok;
	struct json_object *o = NULL;

	*ok = 0;
	tok = json_tokener_new();
	if (tok == NULL)
		return NULL;
	json_tokener_set_flags(tok,
	    JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	/* The terminating NUL is passed too, so that a bare number ends. */
	o = json_tokener_parse_ex(tok, text, (int)len + 1);
	if (json_tokener_get_error(tok) == json_tokener_success)
		*ok = 1;
	json_tokener_free(tok);
	return o;
}

/* Canonicalizes JSON text into out (appended; caller frees with
 * ki_buf_free()). Returns the serializer's code, or -100 when json-c
 * rejects the text. */
static int
canon_text(const char *text, ki_buf *out)
{
	struct json_object *o;
	int ok, rc;

	o = parse_strict(text, strlen(text), &ok);
	if (!ok)
		return -100;
	rc = api_jcs_serialize(o, out);
	json_object_put(o);
	return rc;
}

static void
expect_number(double v, const char *want)
{
	char out[32];
	int n;

	memset(out, 'x', sizeof(out));
	n = api_jcs_number(v, out);
	CU_ASSERT_EQUAL(n, (int)strlen(want));
	CU_ASSERT_STRING_EQUAL(out, want);
	if (n < 0 || strcmp(out, want) != 0)
		fprintf(stderr, "\nnumber %.17g: got \"%s\", want \"%s\"\n", v,
		    n < 0 ? "(error)" : out, want);
}

static void
test_number_cases(void)
{
	char out[32];

	expect_number(0.0, "0");
	expect_number(-0.0, "0");
	expect_number(1, "1");
	expect_number(-1, "-1");
	expect_number(0.5, "0.5");
	expect_number(0.1, "0.1");
	expect_number(1.0 / 3.0, "0.3333333333333333");
	expect_number(4.35, "4.35");
	expect_number(100, "100");
	expect_number(1e20, "100000000000000000000");
	expect_number(123456789012345680000.0, "123456789012345680000");
	expect_number(1e21, "1e+21");
	expect_number(-1e21, "-1e+21");
	expect_number(1.5e300, "1.5e+300");
	expect_number(1e-6, "0.000001");
	expect_number(1.25e-6, "0.00000125");
	expect_number(1e-7, "1e-7");
	expect_number(-1.5e-7, "-1.5e-7");
	expect_number(5e-324, "5e-324");
	expect_number(2.2250738585072014e-308, "2.2250738585072014e-308");
	expect_number(1.7976931348623157e308, "1.7976931348623157e+308");
	expect_number(-1.7976931348623157e308, "-1.7976931348623157e+308");
	expect_number(9007199254740992.0, "9007199254740992");
	expect_number(9007199254740994.0, "9007199254740994");
	expect_number(18446744073709551616.0, "18446744073709552000");
	expect_number(333333333.33333329, "333333333.3333333");
	expect_number(7.484294414520264, "7.484294414520264");
	/* 2^-44: a power of two, whose rounding interval is lopsided. */
	expect_number(ldexp(1, -44), "5.684341886080802e-14");
	CU_ASSERT_EQUAL(api_jcs_number(NAN, out), KI_EINVAL);
	CU_ASSERT_EQUAL(api_jcs_number(INFINITY, out), KI_EINVAL);
	CU_ASSERT_EQUAL(api_jcs_number(-INFINITY, out), KI_EINVAL);
}

static void
expect_literal(const char *lit, const char *want)
{
	char out[32];
	int n;

	memset(out, 'x', sizeof(out));
	n = api_jcs_number_literal(lit, out);
	if (want == NULL) {
		CU_ASSERT_EQUAL(n, 0);
		if (n != 0)
			fprintf(stderr, "\nliteral %s: written as \"%s\", want "
			    "it left to the double\n", lit, out);
		return;
	}
	CU_ASSERT_EQUAL(n, (int)strlen(want));
	CU_ASSERT(n > 0 && strcmp(out, want) == 0);
	if (n <= 0 || strcmp(out, want) != 0)
		fprintf(stderr, "\nliteral %s: got \"%s\", want \"%s\"\n", lit,
		    n <= 0 ? "(not written)" : out, want);
}

/* A number literal of up to 15 significant digits is written from its
 * digits: the same bytes as its double's search gives, on the cases and
 * on random literals; the others are left to the double. */
static void
test_number_literals(void)
{
	unsigned seed = (unsigned)time(NULL);
	size_t written = 0, bad = 0;

	expect_literal("0.0", "0");
	expect_literal("-0.0", "0");
	expect_literal("0e5", "0");
	expect_literal("1.0", "1");
	expect_literal("1.5e3", "1500");
	expect_literal("10.50", "10.5");
	expect_literal("0.1", "0.1");
	expect_literal("0.000001", "0.000001");
	expect_literal("1e-7", "1e-7");
	expect_literal("-1.25E-6", "-0.00000125");
	expect_literal("123456789012345.0", "123456789012345");
	expect_literal("100000000000000000000.0", "100000000000000000000");
	expect_literal("1e21", "1e+21");
	expect_literal("1.5e+300", NULL);  /* beyond 1e290: the double's */
	expect_literal("1.5e280", "1.5e+280");
	expect_literal("0.00000000000000000000000000000000000000001e45",
	    "10000");
	expect_literal("1.2345678901234567", NULL);  /* 17 digits */
	expect_literal("1000000000000001.5", NULL);  /* 17 with inner zeros */
	expect_literal("1e-300", NULL);
	expect_literal("1e400", NULL);
	expect_literal("1e99999999999999999999", NULL);
	expect_literal("01.5", NULL);
	expect_literal("1.", NULL);
	expect_literal(".5", NULL);
	expect_literal("1e", NULL);
	expect_literal("1e+", NULL);
	expect_literal("1.5.5", NULL);
	expect_literal("-", NULL);
	expect_literal("%.17g", NULL);
	expect_literal("1.5 ", NULL);
	expect_literal("", NULL);

	srand(seed);
	for (int i = 0; i < 200000; i++) {
		char lit[64], got[32], want[32] = "";
		int k = 1 + rand() % 17, point = rand() % (k + 1), o = 0;
		int e = rand() % 3 == 0 ? rand() % 601 - 300 : 0, n;

		if (rand() % 2)
			lit[o++] = '-';
		if (point == 0)
			lit[o++] = '0';
		for (int j = 0; j < k; j++) {
			if (j == point && j > 0)
				lit[o++] = '.';
			if (j == point && j == 0)
				lit[o++] = '.';
			/* No leading zero in the integer part. */
			lit[o++] = (char)('0' + (j == 0 && point > 0 ?
			    1 + rand() % 9 : rand() % 10));
		}
		if (e != 0)
			o += snprintf(lit + o, sizeof(lit) - (size_t)o, "e%d", e);
		lit[o] = '\0';
		n = api_jcs_number_literal(lit, got);
		if (n == 0)
			continue;
		written++;
		if (n < 0 || api_jcs_number(strtod(lit, NULL), want) != n ||
		    strcmp(got, want) != 0) {
			if (bad++ < 10)
				fprintf(stderr, "\nliteral %s (seed %u): got \"%s\", "
				    "the double's search \"%s\"\n", lit, seed, got,
				    want);
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* Most random literals qualify; none is skipped wholesale. */
	CU_ASSERT(written > 100000);
}

/* Every line of numbers.csv: "<hex bits>,<expected>". */
static void
test_numbers_csv(void)
{
	char *text, *line, *next;
	size_t len, lines = 0, bad = 0;

	text = tests_read_data("jcs/numbers.csv", &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	for (line = text; *line != '\0'; line = next) {
		char *comma, *end, out[32];
		unsigned long long bits;
		double v;
		int n;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (*line == '\0')
			continue;
		lines++;
		comma = strchr(line, ',');
		if (comma == NULL) {
			bad++;
			continue;
		}
		*comma = '\0';
		bits = strtoull(line, &end, 16);
		if (end != comma) {
			bad++;
			continue;
		}
		memcpy(&v, &bits, sizeof(v));
		n = api_jcs_number(v, out);
		if (n < 0 || (size_t)n != strlen(out) ||
		    strcmp(out, comma + 1) != 0) {
			if (bad < 10)
				fprintf(stderr, "\nnumbers.csv %s: got \"%s\", "
				    "want \"%s\"\n", line, n < 0 ? "(error)" : out,
				    comma + 1);
			bad++;
		}
	}
	CU_ASSERT_EQUAL(lines, NUMBERS_LINES);
	CU_ASSERT_EQUAL(bad, 0);
	free(text);
}

/* RFC 8785's reference inputs, canonicalized byte for byte. */
static void
test_vectors(void)
{
	static const char *const names[] = {
		"arrays", "french", "structures", "unicode", "values", "weird",
	};
	size_t i, done = 0;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char rel[256];
		char *in = NULL, *want = NULL;
		size_t inlen = 0, wantlen = 0;
		struct json_object *o = NULL;
		ki_buf got;
		int ok = 0;

		ki_buf_init(&got);
		snprintf(rel, sizeof(rel), "jcs/input/%s.json", names[i]);
		in = tests_read_data(rel, &inlen);
		snprintf(rel, sizeof(rel), "jcs/output/%s.json", names[i]);
		want = tests_read_data(rel, &wantlen);
		CU_ASSERT_PTR_NOT_NULL(in);
		CU_ASSERT_PTR_NOT_NULL(want);
		if (in == NULL || want == NULL)
			goto next;
		o = parse_strict(in, inlen, &ok);
		CU_ASSERT_TRUE(ok);
		if (!ok)
			goto next;
		CU_ASSERT_EQUAL(api_jcs_serialize(o, &got), KI_OK);
		CU_ASSERT_EQUAL(got.len, wantlen);
		CU_ASSERT_TRUE(got.len == wantlen &&
		    memcmp(got.data, want, wantlen) == 0);
		if (got.len != wantlen || memcmp(got.data, want, wantlen) != 0)
			fprintf(stderr, "\nvector %s: got %s\n", names[i],
			    got.data != NULL ? got.data : "(nothing)");
		else
			done++;
		CU_ASSERT_EQUAL(api_json_find_duplicate_key(in, inlen, NULL), 0);
		CU_ASSERT_EQUAL(api_json_find_lossy(in, inlen, NULL, NULL), 0);
next:
		json_object_put(o);
		ki_buf_free(&got);
		free(in);
		free(want);
	}
	CU_ASSERT_EQUAL(done, 6);
}

static void
expect_canon(const char *text, const char *want)
{
	ki_buf got;
	int rc;

	ki_buf_init(&got);
	rc = canon_text(text, &got);
	CU_ASSERT_EQUAL(rc, KI_OK);
	CU_ASSERT_PTR_NOT_NULL(got.data);
	if (rc == KI_OK && got.data != NULL) {
		CU_ASSERT_STRING_EQUAL(got.data, want);
		if (strcmp(got.data, want) != 0)
			fprintf(stderr, "\ncanon %s: got %s\n", text, got.data);
	}
	ki_buf_free(&got);
}

/* json-c gives int64, uint64 (above INT64_MAX) and double; all are
 * written as doubles. */
static void
test_serialize_numbers(void)
{
	struct json_object *a;
	ki_buf got;

	expect_canon("[18446744073709551615, 9223372036854775808,"
	    " 9223372036854775807, -9223372036854775808, 9007199254740993,"
	    " -0, -0.0, 0, 1E30, 4.50, 2e-3, 1e-27, 1.5e300, 123]",
	    "[18446744073709552000,9223372036854776000,9223372036854776000,"
	    "-9223372036854776000,9007199254740992,0,0,0,1e+30,4.5,0.002,"
	    "1e-27,1.5e+300,123]");

	a = json_object_new_array();
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	json_object_array_add(a, json_object_new_uint64(UINT64_MAX));
	json_object_array_add(a, json_object_new_int64(INT64_MIN));
	json_object_array_add(a, json_object_new_int64(-5));
	json_object_array_add(a, json_object_new_uint64(7));
	json_object_array_add(a, json_object_new_double(0.1));
	ki_buf_init(&got);
	CU_ASSERT_EQUAL(api_jcs_serialize(a, &got), KI_OK);
	CU_ASSERT_STRING_EQUAL(got.data,
	    "[18446744073709552000,-9223372036854776000,-5,7,0.1]");
	ki_buf_free(&got);
	json_object_put(a);
}

static void
test_serialize_nonfinite(void)
{
	static const char *const texts[] = {
		"[NaN]", "[Infinity]", "{\"a\":[-Infinity]}", "[1e400]",
		"{\"x\":-2e308}",
	};
	struct json_object *o;
	ki_buf got;
	size_t i;

	ki_buf_init(&got);
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		ki_buf_reset(&got);
		/* json-c takes these, even in strict mode. */
		CU_ASSERT_EQUAL(canon_text(texts[i], &got), KI_EINVAL);
	}
	o = json_object_new_double(NAN);
	CU_ASSERT_EQUAL(api_jcs_serialize(o, &got), KI_EINVAL);
	json_object_put(o);
	ki_buf_free(&got);
}

/* Keys sort by UTF-16 code units: U+E000 after U+1F602 (0xD83D 0xDE02),
 * though its UTF-8 form sorts first by bytes. */
static void
test_serialize_structure(void)
{
	expect_canon("{\"\\ue000\":1,\"\\ud83d\\ude02\":2,\"z\":3,\"a\":4,"
	    "\"\\u00e9\":5,\"\":6,\"\\uffff\":7,\"\\ud800\\udc00\":8}",
	    "{\"\":6,\"a\":4,\"z\":3,\"\xc3\xa9\":5,\"\xf0\x90\x80\x80\":8,"
	    "\"\xf0\x9f\x98\x82\":2,\"\xee\x80\x80\":1,\"\xef\xbf\xbf\":7}");
	expect_canon("{\"b\":[3,{\"y\":null,\"x\":true}],\"a\":{},\"c\":[],"
	    "\"d\":false}",
	    "{\"a\":{},\"b\":[3,{\"x\":true,\"y\":null}],\"c\":[],\"d\":false}");
	expect_canon("{\"aa\":1,\"a\":2,\"ab\":3,\"B\":4}",
	    "{\"B\":4,\"a\":2,\"aa\":1,\"ab\":3}");
	expect_canon("\"\\u0000\\u001f\\u007f\\u2028/\\t\"",
	    "\"\\u0000\\u001f\x7f\xe2\x80\xa8/\\t\"");
	expect_canon("null", "null");
	expect_canon("[ ]", "[]");
	expect_canon(" 12 ", "12");
}

/* String escaping looks at eight bytes at a time: every byte that needs a
 * look ('"', '\\', a control character, a UTF-8 lead), at every offset of
 * strings around a word's length, escapes as byte by byte. */
static void
test_string_escapes_at_every_offset(void)
{
	static const char *const odd[] = { "\"", "\\", "\n", "\x01",
		"\x1f", "\x7f", "\xc3\xa9", "\xe2\x80\xa8", "\xff" };
	static const char *const want[] = { "\\\"", "\\\\", "\\n",
		"\\u0001", "\\u001f", "\x7f", "\xc3\xa9", "\xe2\x80\xa8",
		"\xef\xbf\xbd" };

	for (size_t k = 0; k < sizeof(odd) / sizeof(odd[0]); k++) {
		for (size_t len = 0; len < 20; len++) {
			for (size_t at = 0; at <= len; at++) {
				char in[64], exp[64];
				ki_buf b;

				memset(in, 'a', len);
				memcpy(in + at, odd[k], strlen(odd[k]));
				memset(in + at + strlen(odd[k]), 'b', len - at);
				snprintf(exp, sizeof(exp), "\"%.*s%s%.*s\"", (int)at, in,
				    want[k], (int)(len - at), in + at + strlen(odd[k]));
				ki_buf_init(&b);
				CU_ASSERT_EQUAL(ki_buf_json_string(&b, in,
				    len + strlen(odd[k])), KI_OK);
				CU_ASSERT_STRING_EQUAL(b.data, exp);
				ki_buf_free(&b);
			}
		}
	}
}

/* The seed carries the digests of its protocol and environment. */
static void
test_digest_seed(void)
{
	static const char *const parts[][2] = {
		{ "protocol", "protocolDigest" },
		{ "environment", "environmentDigest" },
	};
	struct json_object *seed = NULL, *run, *spec, *part, *want;
	char *text;
	size_t len, i;
	int ok = 0;

	text = tests_read_data("seed/embedding-full-huggingface-a100.json", &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	seed = parse_strict(text, len, &ok);
	CU_ASSERT_TRUE(ok);
	CU_ASSERT_EQUAL(api_json_find_duplicate_key(text, len, NULL), 0);
	CU_ASSERT_EQUAL(api_json_find_lossy(text, len, NULL, NULL), 0);
	CU_ASSERT_TRUE(json_object_object_get_ex(seed, "run", &run));
	CU_ASSERT_TRUE(json_object_object_get_ex(run, "spec", &spec));
	for (i = 0; i < 2; i++) {
		uint8_t d[API_DIGEST_LEN], d2[API_DIGEST_LEN], again[API_DIGEST_LEN];
		char hex[API_DIGEST_STRLEN + 1];
		ki_buf canon;

		ki_buf_init(&canon);
		ki_buf_puts(&canon, "prefix");
		CU_ASSERT_TRUE(json_object_object_get_ex(seed, parts[i][0], &part));
		CU_ASSERT_TRUE(json_object_object_get_ex(spec, parts[i][1], &want));
		CU_ASSERT_EQUAL(api_digest(part, d, &canon), KI_OK);
		api_digest_format(d, hex);
		CU_ASSERT_STRING_EQUAL(hex, json_object_get_string(want));
		CU_ASSERT_NSTRING_EQUAL(hex, i == 0 ? "sha256:5b02ee9a" :
		    "sha256:90c9e276", 15);
		/* canon got the bytes that were hashed, after what it held. */
		CU_ASSERT_NSTRING_EQUAL(canon.data, "prefix{\"apiVersion\":", 20);
		CU_ASSERT_EQUAL(api_sha256(canon.data + 6, canon.len - 6, again),
		    KI_OK);
		CU_ASSERT_EQUAL(memcmp(again, d, sizeof(d)), 0);
		CU_ASSERT_EQUAL(api_digest(part, d2, NULL), KI_OK);
		CU_ASSERT_EQUAL(memcmp(d2, d, sizeof(d)), 0);
		ki_buf_free(&canon);
	}
	json_object_put(seed);
	free(text);
}

static struct json_object *
parse_or_null(const char *text)
{
	int ok;
	struct json_object *o = parse_strict(text, strlen(text), &ok);

	CU_ASSERT_TRUE(ok);
	return o;
}

/* Only apiVersion, kind and spec count; metadata and order do not. */
static void
test_digest_members(void)
{
	struct json_object *a, *b, *c, *bad;
	uint8_t da[API_DIGEST_LEN], db[API_DIGEST_LEN], dc[API_DIGEST_LEN];
	ki_buf canon;

	ki_buf_init(&canon);
	a = parse_or_null("{\"kind\":\"K\",\"apiVersion\":\"v\","
	    "\"spec\":{\"b\":1,\"a\":2.0},\"metadata\":{\"name\":\"x\"}}");
	b = parse_or_null("{\"metadata\":{\"name\":\"y\",\"labels\":{}},"
	    "\"spec\":{\"a\":2,\"b\":1},\"apiVersion\":\"v\",\"kind\":\"K\","
	    "\"status\":{}}");
	c = parse_or_null("{\"kind\":\"K\",\"apiVersion\":\"v\","
	    "\"spec\":{\"b\":1,\"a\":3}}");
	CU_ASSERT_EQUAL(api_digest(a, da, &canon), KI_OK);
	CU_ASSERT_STRING_EQUAL(canon.data,
	    "{\"apiVersion\":\"v\",\"kind\":\"K\",\"spec\":{\"a\":2,\"b\":1}}");
	CU_ASSERT_EQUAL(api_digest(b, db, NULL), KI_OK);
	CU_ASSERT_EQUAL(api_digest(c, dc, NULL), KI_OK);
	CU_ASSERT_EQUAL(memcmp(da, db, sizeof(da)), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(da, dc, sizeof(da)), 0);

	/* A missing member, a non-object, a non-finite number: KI_EINVAL,
	 * and canon is left as it was. */
	ki_buf_reset(&canon);
	ki_buf_puts(&canon, "keep");
	bad = parse_or_null("{\"apiVersion\":\"v\",\"kind\":\"K\"}");
	CU_ASSERT_EQUAL(api_digest(bad, da, &canon), KI_EINVAL);
	json_object_put(bad);
	bad = parse_or_null("{\"apiVersion\":\"v\",\"spec\":{}}");
	CU_ASSERT_EQUAL(api_digest(bad, da, &canon), KI_EINVAL);
	json_object_put(bad);
	bad = parse_or_null("[\"apiVersion\",\"kind\",\"spec\"]");
	CU_ASSERT_EQUAL(api_digest(bad, da, &canon), KI_EINVAL);
	json_object_put(bad);
	bad = parse_or_null("{\"apiVersion\":\"v\",\"kind\":\"K\","
	    "\"spec\":{\"x\":[1,NaN]}}");
	CU_ASSERT_EQUAL(api_digest(bad, da, &canon), KI_EINVAL);
	json_object_put(bad);
	CU_ASSERT_EQUAL(api_digest(NULL, da, &canon), KI_EINVAL);
	CU_ASSERT_STRING_EQUAL(canon.data, "keep");
	CU_ASSERT_EQUAL(canon.len, 4);

	json_object_put(a);
	json_object_put(b);
	json_object_put(c);
	ki_buf_free(&canon);
}

static void
test_sha256(void)
{
	static const char *const abc56 =
	    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	uint8_t d[API_DIGEST_LEN];
	char hex[API_DIGEST_STRLEN + 1];

	CU_ASSERT_EQUAL(api_sha256("", 0, d), KI_OK);
	api_digest_format(d, hex);
	CU_ASSERT_STRING_EQUAL(hex, "sha256:"
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	CU_ASSERT_EQUAL(api_sha256("abc", 3, d), KI_OK);
	api_digest_format(d, hex);
	CU_ASSERT_STRING_EQUAL(hex, "sha256:"
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CU_ASSERT_EQUAL(api_sha256(abc56, strlen(abc56), d), KI_OK);
	api_digest_format(d, hex);
	CU_ASSERT_STRING_EQUAL(hex, "sha256:"
	    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void
test_digest_parse(void)
{
	static const char good[] = "sha256:"
	    "5b02ee9a2140fbc6fcc1c89800f6c177ba22718c8897cb532bf0ba91867c1e58";
	uint8_t d[API_DIGEST_LEN], e[API_DIGEST_LEN];
	char hex[API_DIGEST_STRLEN + 1], s[API_DIGEST_STRLEN + 8];
	size_t i;

	CU_ASSERT_EQUAL(api_digest_parse(good, strlen(good), d), KI_OK);
	CU_ASSERT_EQUAL(d[0], 0x5b);
	CU_ASSERT_EQUAL(d[31], 0x58);
	api_digest_format(d, hex);
	CU_ASSERT_STRING_EQUAL(hex, good);
	CU_ASSERT_EQUAL(strlen(hex), API_DIGEST_STRLEN);

	/* Only n bytes are read: no NUL is needed. */
	memcpy(s, good, API_DIGEST_STRLEN);
	memcpy(s + API_DIGEST_STRLEN, "ffffff", 7);
	CU_ASSERT_EQUAL(api_digest_parse(s, API_DIGEST_STRLEN, e), KI_OK);
	CU_ASSERT_EQUAL(memcmp(d, e, sizeof(d)), 0);

	CU_ASSERT_EQUAL(api_digest_parse(good, API_DIGEST_STRLEN - 1, e),
	    KI_EINVAL);
	CU_ASSERT_EQUAL(api_digest_parse(s, API_DIGEST_STRLEN + 1, e),
	    KI_EINVAL);
	CU_ASSERT_EQUAL(api_digest_parse(NULL, API_DIGEST_STRLEN, e), KI_EINVAL);
	CU_ASSERT_EQUAL(api_digest_parse("", 0, e), KI_EINVAL);
	memcpy(s, good, sizeof(good));
	s[7] = 'B'; /* uppercase */
	CU_ASSERT_EQUAL(api_digest_parse(s, API_DIGEST_STRLEN, e), KI_EINVAL);
	s[7] = 'g';
	CU_ASSERT_EQUAL(api_digest_parse(s, API_DIGEST_STRLEN, e), KI_EINVAL);
	memcpy(s, good, sizeof(good));
	s[API_DIGEST_STRLEN - 1] = ' ';
	CU_ASSERT_EQUAL(api_digest_parse(s, API_DIGEST_STRLEN, e), KI_EINVAL);
	memcpy(s, good, sizeof(good));
	memcpy(s, "sha512:", 7);
	CU_ASSERT_EQUAL(api_digest_parse(s, API_DIGEST_STRLEN, e), KI_EINVAL);
	memcpy(s, good, sizeof(good));
	s[6] = ';';
	CU_ASSERT_EQUAL(api_digest_parse(s, API_DIGEST_STRLEN, e), KI_EINVAL);

	for (i = 0; i < API_DIGEST_LEN; i++)
		d[i] = (uint8_t)(i * 37 + 1);
	api_digest_format(d, hex);
	CU_ASSERT_EQUAL(api_digest_parse(hex, strlen(hex), e), KI_OK);
	CU_ASSERT_EQUAL(memcmp(d, e, sizeof(d)), 0);
}

struct scan_case {
	const char *text;
	int rc;
	const char *path; /* when rc == 1 */
};

/* Runs one case of a raw-text check; the text must be one json-c takes. */
static void
expect_scan(const struct scan_case *c, int lossy, const char *why)
{
	struct json_object *o;
	ki_buf path;
	const char *got_why = NULL;
	int ok, rc;

	o = parse_strict(c->text, strlen(c->text), &ok);
	CU_ASSERT_TRUE(ok);
	if (!ok)
		fprintf(stderr, "\njson-c rejects %s\n", c->text);
	json_object_put(o);
	ki_buf_init(&path);
	if (lossy)
		rc = api_json_find_lossy(c->text, strlen(c->text), &path,
		    &got_why);
	else
		rc = api_json_find_duplicate_key(c->text, strlen(c->text), &path);
	CU_ASSERT_EQUAL(rc, c->rc);
	if (rc == 1 && c->rc == 1) {
		CU_ASSERT_PTR_NOT_NULL(path.data);
		CU_ASSERT_STRING_EQUAL(path.data != NULL ? path.data : "", c->path);
		if (why != NULL)
			CU_ASSERT_STRING_EQUAL(got_why != NULL ? got_why : "", why);
	} else {
		CU_ASSERT_EQUAL(path.len, 0);
	}
	if (rc != c->rc || (rc == 1 && (path.data == NULL ||
	    strcmp(path.data, c->path) != 0)))
		fprintf(stderr, "\nscan %s: rc %d path \"%s\"\n", c->text, rc,
		    path.data != NULL ? path.data : "");
	ki_buf_free(&path);
}

static void
test_duplicate_keys(void)
{
	static const struct scan_case cases[] = {
		{ "{\"a\":1,\"a\":2}", 1, "a" },
		{ "{\"spec\":{\"timing\":{\"median\":1,\"p20\":2,\"median\":3}}}",
		  1, "spec.timing.median" },
		{ "{\"items\":[{\"metadata\":{\"name\":\"a\"}},{},"
		  "{\"metadata\":{\"name\":\"x\",\"name\":\"y\"}}]}",
		  1, "items[2].metadata.name" },
		{ "{\"a\":1,\"\\u0061\":2}", 1, "a" },
		{ "{\"\\u00e9\":1,\"\xc3\xa9\":2}", 1, "[\"\xc3\xa9\"]" },
		{ "{\"\\ud83d\\ude02\":1,\"\xf0\x9f\x98\x82\":2}", 1,
		  "[\"\xf0\x9f\x98\x82\"]" },
		{ "{\"x\":{\"a.b\":1,\"a.b\":2}}", 1, "x[\"a.b\"]" },
		{ "{\"\":1,\"\":2}", 1, "[\"\"]" },
		{ "[0,{\"k\":1,\"k\":1}]", 1, "[1].k" },
		{ "{\"a\":[[{\"b\":[1,{\"c\":{\"d\":1,\"d\":2}}]}]]}", 1,
		  "a[0][0].b[1].c.d" },
		{ "{\"a\":1,\"a\":2,\"a\":3}", 1, "a" },
		/* The first in the text, whatever the nesting. */
		{ "{\"b\":1,\"b\":2,\"c\":{\"x\":1,\"x\":2}}", 1, "b" },
		{ "{\"c\":{\"x\":1,\"x\":2},\"b\":1,\"b\":2}", 1, "c.x" },
		{ "{\"a\":1,\"b\":2,\"b\":3,\"a\":4}", 1, "b" },
		/* json-c cuts keys at U+0000 and takes lone surrogates as
		 * U+FFFD, so it merges these too. */
		{ "{\"a\\u0000b\":1,\"a\\u0000c\":2}", 1, "[\"a\\u0000c\"]" },
		{ "{\"\\ud800\":1,\"\\ufffd\":2}", 1, "[\"\xef\xbf\xbd\"]" },
		{ "{\"a\":{\"a\":1},\"b\":{\"a\":2},\"c\":[{\"a\":1},{\"a\":2}]}",
		  0, NULL },
		{ "{\"s\":\"{\\\"a\\\":1,\\\"a\\\":2}\",\"t\":\"\\\\\",\"u\":\"]}\"}",
		  0, NULL },
		{ "{\"a\":1,\"A\":2,\"a \":3,\"\\u0062\":4,\"ab\":5}", 0, NULL },
		{ "{\"\\ud83d\\ude02\":1,\"\\ud83d\\ude03\":2}", 0, NULL },
		{ "{ \"a\" : [ ] , \"b\" : { } , \"c\" : [ 1 , { } ] }", 0, NULL },
		{ "\"x\"", 0, NULL },
		{ "12", 0, NULL },
		{ "[]", 0, NULL },
		{ "{}", 0, NULL },
		{ "[NaN,-Infinity,true,false,null,1.5e3]", 0, NULL },
	};
	ki_buf path;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_scan(&cases[i], 0, NULL);

	/* The path is appended to what the buffer held, and left alone when
	 * there is no duplicate; path may be NULL. */
	ki_buf_init(&path);
	ki_buf_puts(&path, "at ");
	CU_ASSERT_EQUAL(api_json_find_duplicate_key("{\"q\":{\"z\":0,\"z\":0}}",
	    strlen("{\"q\":{\"z\":0,\"z\":0}}"), &path), 1);
	CU_ASSERT_STRING_EQUAL(path.data, "at q.z");
	ki_buf_reset(&path);
	ki_buf_puts(&path, "at ");
	CU_ASSERT_EQUAL(api_json_find_duplicate_key("{\"z\":0}", 7, &path), 0);
	CU_ASSERT_STRING_EQUAL(path.data, "at ");
	CU_ASSERT_EQUAL(api_json_find_duplicate_key("{\"z\":0,\"z\":0}", 13,
	    NULL), 1);
	/* Only n bytes are read. */
	CU_ASSERT_EQUAL(api_json_find_duplicate_key("{\"z\":0}xyz", 7, NULL), 0);
	/* Not JSON at all. */
	CU_ASSERT_EQUAL(api_json_find_duplicate_key("{\"a\":1", 6, NULL),
	    KI_EINVAL);
	CU_ASSERT_EQUAL(api_json_find_duplicate_key("{\"a\" 1}", 7, NULL),
	    KI_EINVAL);
	CU_ASSERT_EQUAL(api_json_find_duplicate_key("[\"a]", 4, NULL),
	    KI_EINVAL);
	CU_ASSERT_EQUAL(api_json_find_duplicate_key("{\"a\\x\":1}", 9, NULL),
	    KI_EINVAL);
	CU_ASSERT_EQUAL(api_json_find_duplicate_key(NULL, 0, NULL), KI_EINVAL);
	ki_buf_free(&path);
}

/* A large document: 20,000 keys in one object and 2,000 small objects. */
static void
test_duplicate_keys_big(void)
{
	ki_buf doc, path;
	size_t i, cut;
	struct json_object *o;
	int ok;

	ki_buf_init(&doc);
	ki_buf_init(&path);
	ki_buf_puts(&doc, "{\"items\":[{");
	for (i = 0; i < 20000; i++)
		ki_buf_printf(&doc, "%s\"k%zu\":%zu", i ? "," : "", i, i);
	cut = doc.len;
	ki_buf_puts(&doc, "}");
	for (i = 0; i < 2000; i++)
		ki_buf_printf(&doc, ",{\"name\":\"n%zu\",\"v\":[%zu,{\"k0\":1}]}",
		    i, i);
	ki_buf_puts(&doc, "],\"k0\":0}");
	CU_ASSERT_FALSE_FATAL(doc.oom);
	o = parse_strict(doc.data, doc.len, &ok);
	CU_ASSERT_TRUE(ok);
	json_object_put(o);
	CU_ASSERT_EQUAL(api_json_find_duplicate_key(doc.data, doc.len, &path), 0);
	CU_ASSERT_EQUAL(path.len, 0);

	/* The same key again, last in the big object. */
	doc.len = cut;
	doc.data[cut] = '\0';
	ki_buf_puts(&doc, ",\"k12345\":1}]}");
	CU_ASSERT_FALSE_FATAL(doc.oom);
	o = parse_strict(doc.data, doc.len, &ok);
	CU_ASSERT_TRUE(ok);
	json_object_put(o);
	CU_ASSERT_EQUAL(api_json_find_duplicate_key(doc.data, doc.len, &path), 1);
	CU_ASSERT_STRING_EQUAL(path.data, "items[0].k12345");
	ki_buf_free(&path);
	ki_buf_free(&doc);
}

static void
test_lossy(void)
{
	static const char *const range = "an integer beyond the 64-bit range";
	static const char *const lone = "a lone surrogate escape";
	static const struct scan_case numbers[] = {
		{ "{\"spec\":{\"n\":123456789012345678901234567890}}", 1, "spec.n" },
		{ "[1,-123456789012345678901234567890]", 1, "[1]" },
		{ "{\"a\":[{\"x b\":[18446744073709555000]}]}", 1,
		  "a[0][\"x b\"][0]" },
		{ "99999999999999999999999", 1, "" },
		/* Clamped, but to the same double. */
		{ "[18446744073709551615,18446744073709551616,"
		  "18446744073709553000,-9223372036854775808,"
		  "-9223372036854775809,9223372036854775808]", 0, NULL },
		{ "[1e400,1.5,-0,0,123456789012345678901234567890.0,"
		  "1234567890123456789012e3,NaN,-Infinity]", 0, NULL },
	};
	static const struct scan_case strings[] = {
		{ "{\"a\":\"\\ud800\"}", 1, "a" },
		{ "{\"a\":[\"ok\",\"x\\udc00\"]}", 1, "a[1]" },
		{ "{\"\\udc00x\":1}", 1, "[\"\xef\xbf\xbdx\"]" },
		{ "{\"k\":\"\\ud83d\\ud83d\\ude02\"}", 1, "k" },
		{ "{\"k\":\"\\ud83d\\ude02\\uD83D\\uDE02\",\"\\u20ac\":\"\\u0000\"}",
		  0, NULL },
	};
	static const struct scan_case keys[] = {
		{ "{\"m\":{\"a\\u0000b\":1}}", 1, "m[\"a\\u0000b\"]" },
	};
	static const char first[] = "[\"\\ud800\",99999999999999999999999]";
	const char *why = "unset";
	size_t i;

	for (i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++)
		expect_scan(&numbers[i], 1, range);
	for (i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		expect_scan(&strings[i], 1, lone);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		expect_scan(&keys[i], 1, "a key holding U+0000");

	/* The first finding wins; why is left alone when there is none. */
	CU_ASSERT_EQUAL(api_json_find_lossy(first, strlen(first), NULL, &why),
	    1);
	CU_ASSERT_STRING_EQUAL(why, lone);
	why = "unset";
	CU_ASSERT_EQUAL(api_json_find_lossy("[1,2]", 5, NULL, &why), 0);
	CU_ASSERT_STRING_EQUAL(why, "unset");
	CU_ASSERT_EQUAL(api_json_find_lossy("[1,", 3, NULL, &why), KI_EINVAL);
}

/* Allocation failures, forced through the buffers' size limits. */
static void
test_out_of_memory(void)
{
	static const char text[] =
	    "{\"apiVersion\":\"v\",\"kind\":\"K\",\"spec\":{\"long\":"
	    "\"a value longer than the limit\",\"dup\":1,\"dup\":2}}";
	struct json_object *o;
	uint8_t d[API_DIGEST_LEN];
	ki_buf b;
	int ok;

	o = parse_strict(text, strlen(text), &ok);
	CU_ASSERT_TRUE_FATAL(ok);
	ki_buf_init(&b);
	b.limit = 16;
	CU_ASSERT_EQUAL(api_jcs_serialize(o, &b), KI_ENOMEM);
	ki_buf_free(&b);
	CU_ASSERT_EQUAL(api_digest(o, d, &b), KI_ENOMEM);
	ki_buf_free(&b);
	b.limit = 2;
	CU_ASSERT_EQUAL(api_json_find_duplicate_key(text, strlen(text), &b),
	    KI_ENOMEM);
	ki_buf_free(&b);
	b.limit = 0;
	CU_ASSERT_EQUAL(api_json_find_duplicate_key(text, strlen(text), &b), 1);
	CU_ASSERT_STRING_EQUAL(b.data, "spec.dup");
	ki_buf_free(&b);
	json_object_put(o);
}

/* Are two trees the same to every reader: types, values, the text a double
 * keeps, member order? */
static int
same_tree(struct json_object *a, struct json_object *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	if (json_object_get_type(a) != json_object_get_type(b))
		return 0;
	switch (json_object_get_type(a)) {
	case json_type_null:
		return 1;
	case json_type_boolean:
		return json_object_get_boolean(a) == json_object_get_boolean(b);
	case json_type_int:
		return json_object_get_int64(a) == json_object_get_int64(b) &&
		    json_object_get_uint64(a) == json_object_get_uint64(b);
	case json_type_double: {
		double x = json_object_get_double(a), y = json_object_get_double(b);

		return memcmp(&x, &y, sizeof(x)) == 0 &&
		    strcmp(json_object_get_string(a), json_object_get_string(b)) == 0;
	}
	case json_type_string:
		return json_object_get_string_len(a) == json_object_get_string_len(b) &&
		    memcmp(json_object_get_string(a), json_object_get_string(b),
		    (size_t)json_object_get_string_len(a)) == 0;
	case json_type_array:
		if (json_object_array_length(a) != json_object_array_length(b))
			return 0;
		for (size_t i = 0; i < json_object_array_length(a); i++)
			if (!same_tree(json_object_array_get_idx(a, i),
			    json_object_array_get_idx(b, i)))
				return 0;
		return 1;
	case json_type_object: {
		struct json_object_iterator ia = json_object_iter_begin(a);
		struct json_object_iterator ea = json_object_iter_end(a);
		struct json_object_iterator ib = json_object_iter_begin(b);
		struct json_object_iterator eb = json_object_iter_end(b);

		for (; !json_object_iter_equal(&ia, &ea); json_object_iter_next(&ia),
		    json_object_iter_next(&ib)) {
			if (json_object_iter_equal(&ib, &eb) ||
			    strcmp(json_object_iter_peek_name(&ia),
			    json_object_iter_peek_name(&ib)) != 0 ||
			    !same_tree(json_object_iter_peek_value(&ia),
			    json_object_iter_peek_value(&ib)))
				return 0;
		}
		return json_object_iter_equal(&ib, &eb);
	}
	}
	return 0;
}

/* api_json_parse parses plain uploads in one pass of its own: what it
 * accepts must be json-c's strict tree, and what it leaves to the full
 * path must still be refused there. */
static void
test_parse_tree(void)
{
	static const struct {
		const char *text;
		int ok;
	} cases[] = {
		{ "{}", 1 },
		{ " \t\r\n{\"a\":[],\"b\":{},\"c\":[[],{}]} \n", 1 },
		{ "{\"a\":true,\"b\":false,\"c\":null,\"d\":[null,true]}", 1 },
		{ "{\"i\":0,\"j\":-0,\"k\":123456789012345678,"
		  "\"l\":-123456789012345678,\"m\":1234567890123456789,"
		  "\"n\":9223372036854775807,\"o\":18446744073709551615}", 1 },
		{ "{\"a\":0.0,\"b\":-0.0,\"c\":1e5,\"d\":1E+5,\"e\":-2.5E-3,"
		  "\"f\":7.484294414520264,\"g\":1e21,\"h\":1.50,\"i\":5e-324,"
		  "\"j\":1.7976931348623157e308,\"k\":100e-2}", 1 },
		{ "{\"a\":\"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n"
		  "\\r\\t\",\"\\u0061b\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}", 1 },
		{ "{\"\":\"\",\"a\":\"\\u0000\"}", 1 },
		{ "{\"a\":[1,2,{\"b\":[3,{\"c\":\"d\"}]}]}", 1 },
		/* Out of range: the full path takes json-c's infinity (a schema
		 * refuses it later). */
		{ "{\"a\":1e400}", 1 },
		/* Names the schemas know (interned) mixed with others, in
		 * objects under and over the member count where duplicates are
		 * looked for by a walk. */
		{ "{\"kind\":1,\"kinds\":2,\"spec\":{\"timing\":{},"
		  "\"Timing\":{}},\"x\":3}", 1 },
		{ "{\"a1\":1,\"a2\":2,\"a3\":3,\"a4\":4,\"a5\":5,\"a6\":6,"
		  "\"a7\":7,\"a8\":8,\"a9\":9,\"b1\":1,\"b2\":2,\"b3\":3,"
		  "\"b4\":4,\"b5\":5,\"b6\":6,\"kind\":7,\"spec\":8,"
		  "\"name\":9,\"c1\":1}", 1 },
		/* Left to the full path, which refuses them. */
		{ "{\"a\":1,\"a\":2}", 0 },
		{ "{\"a\":1,\"\\u0061\":2}", 0 },
		{ "{\"kind\":1,\"spec\":2,\"kind\":3}", 0 },
		{ "{\"kind\":1,\"\\u006bind\":2}", 0 },
		{ "{\"spec\":{\"measurement\":{},\"harness\":1,"
		  "\"measurement\":{}}}", 0 },
		{ "{\"a1\":1,\"a2\":2,\"a3\":3,\"a4\":4,\"a5\":5,\"a6\":6,"
		  "\"a7\":7,\"a8\":8,\"a9\":9,\"b1\":1,\"b2\":2,\"b3\":3,"
		  "\"b4\":4,\"b5\":5,\"b6\":6,\"b7\":7,\"kind\":1,"
		  "\"kind\":2}", 0 },
		{ "{\"a1\":1,\"a2\":2,\"a3\":3,\"a4\":4,\"a5\":5,\"a6\":6,"
		  "\"a7\":7,\"a8\":8,\"a9\":9,\"b1\":1,\"b2\":2,\"b3\":3,"
		  "\"b4\":4,\"b5\":5,\"b6\":6,\"b7\":7,\"a1\":1}", 0 },
		{ "{\"a\":\"\\ud800\"}", 0 },
		{ "{\"a\\u0000b\":1}", 0 },
		{ "{\"a\":9.3e18}", 0 },
		{ "{\"a\":99999999999999999999}", 0 },
		{ "{\"a\":01}", 0 },
		/* json-c takes "1.", "00" and "1.e2" (as 1, 0 and 100): not
		 * JSON's grammar, so the full path refuses them. */
		{ "{\"a\":1.}", 0 },
		{ "{\"a\":00}", 0 },
		{ "{\"a\":1.e2}", 0 },
		{ "{\"a\":-00.5}", 0 },
		{ "{\"a\":[1,]}", 0 },
		{ "{\"a\":1,}", 0 },
		{ "{\"a\":\"x\x01\"}", 0 },
		{ "{\"a\":\"\xc0\xaf\"}", 0 },
		{ "{\"a\":NaN}", 0 },
		{ "{'a':1}", 0 },
		{ "{\"a\":1} x", 0 },
		{ "{\"a\":tru}", 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = cases[i].text;
		struct json_object *got = NULL, *want;
		json_tokener *tok;
		api_status st;
		int rc;

		api_status_init(&st);
		rc = api_json_parse(t, strlen(t), 32, &got, &st);
		if (rc != (cases[i].ok ? KI_OK : KI_EINVAL))
			fprintf(stderr, "test_parse_tree: case %zu: rc %d\n", i, rc);
		CU_ASSERT_EQUAL(rc, cases[i].ok ? KI_OK : KI_EINVAL);
		if (rc == KI_OK) {
			tok = json_tokener_new_ex(32);
			CU_ASSERT_PTR_NOT_NULL_FATAL(tok);
			json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
			    JSON_TOKENER_VALIDATE_UTF8);
			want = json_tokener_parse_ex(tok, t, (int)strlen(t));
			CU_ASSERT_PTR_NOT_NULL(want);
			CU_ASSERT(same_tree(got, want));
			json_object_put(want);
			json_tokener_free(tok);
		} else {
			CU_ASSERT_EQUAL(st.code, 400);
		}
		if (got != NULL)
			json_object_put(got);
		api_status_free(&st);
	}
}

/* Strings and keys with one special byte sequence (an escape, a quote,
 * multi-byte UTF-8, a control or bad byte) at every offset, so that the
 * parser's eight-bytes-at-a-time skip over plain text meets each at every
 * alignment: what it accepts is json-c's tree, and it refuses raw
 * controls and bytes that are not UTF-8 (which json-c lets through)
 * wherever they are. */
static void
test_parse_string_offsets(void)
{
	static const struct {
		const char *s;
		int ok;
	} specials[] = { { "\\\"", 1 }, { "\\\\", 1 }, { "\\n", 1 },
		{ "\\u00e9", 1 }, { "\\ud83d\\ude00", 1 }, { "\xc3\xa9", 1 },
		{ "\xf0\x9f\x98\x80", 1 }, { "/", 1 }, { "\x01", 0 },
		{ "\x1f", 0 }, { "\xc0\xaf", 0 }, { "\xff", 0 }, { "\xc3", 0 } };
	char text[128], plain[40];

	for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); k++) {
		for (size_t off = 0; off <= 24; off++) {
			for (int in_key = 0; in_key < 2; in_key++) {
				struct json_object *got = NULL, *want = NULL;
				api_status st;
				int rc;

				memset(plain, 'a', off);
				plain[off] = '\0';
				if (in_key)
					snprintf(text, sizeof(text), "{\"%s%sbcdefghijk\":1}",
					    plain, specials[k].s);
				else
					snprintf(text, sizeof(text), "{\"k\":\"%s%sbcdefghijk\","
					    "\"m\":2}", plain, specials[k].s);
				api_status_init(&st);
				rc = api_json_parse(text, strlen(text), 32, &got, &st);
				CU_ASSERT_EQUAL(rc, specials[k].ok ? KI_OK : KI_EINVAL);
				if (rc == KI_OK) {
					json_tokener *tok = json_tokener_new_ex(32);

					CU_ASSERT_PTR_NOT_NULL_FATAL(tok);
					json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
					    JSON_TOKENER_VALIDATE_UTF8);
					want = json_tokener_parse_ex(tok, text,
					    (int)strlen(text));
					CU_ASSERT_PTR_NOT_NULL(want);
					CU_ASSERT(same_tree(got, want));
					json_object_put(want);
					json_tokener_free(tok);
					json_object_put(got);
				} else {
					CU_ASSERT_EQUAL(st.code, 400);
				}
				api_status_free(&st);
			}
		}
	}
}

/* The same for the seed: every number and string as json-c has them. */
static void
test_parse_tree_seed(void)
{
	struct json_object *got = NULL, *want;
	api_status st;
	size_t len;
	char *text = tests_read_data("seed/embedding-full-huggingface-a100.json",
	    &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	api_status_init(&st);
	CU_ASSERT_EQUAL(api_json_parse(text, len, 32, &got, &st), KI_OK);
	want = json_tokener_parse(text);
	CU_ASSERT(same_tree(got, want));
	json_object_put(got);
	json_object_put(want);
	api_status_free(&st);
	free(text);
}

/* Characters above U+FFFF written as surrogate-pair escapes, in a value
 * and in a key, on the one-pass path and on json-c's (which a 19-digit
 * integer forces): each must read as the character, as its UTF-8 bytes
 * do. json-c 0.16 alone reads those whose low 16 bits are 0xD800..0xDFFF
 * (U+1D800, U+10DC00) as U+FFFD. */
static void
test_parse_astral_escapes(void)
{
	static const uint32_t cps[] = { 0x10000, 0x1D800, 0x1DBFF, 0x1DC00,
	    0x1DFFF, 0x2D800, 0x1F600, 0x10D800, 0x10DFFF, 0x10FFFF };
	static const char *const tails[] = { "", ",\"z\":1234567890123456789" };

	for (size_t i = 0; i < sizeof(cps) / sizeof(cps[0]); i++) {
		for (size_t j = 0; j < 2; j++) {
			uint32_t c = cps[i] - 0x10000;
			unsigned hi = 0xD800 + (c >> 10), lo = 0xDC00 + (c & 0x3FF);
			char esc[160];
			ki_buf raw, want;
			struct json_object *got = NULL, *v = NULL;
			api_status st;
			int rc;

			ki_buf_init(&raw);
			ki_buf_init(&want);
			ki_buf_put_utf8(&raw, cps[i]);
			snprintf(esc, sizeof(esc), "{\"k\\u%04x\\u%04x\":"
			    "\"a\\u%04X\\u%04Xb\"%s}", hi, lo, hi, lo, tails[j]);
			ki_buf_append(&want, "k", 1);
			ki_buf_append(&want, raw.data, raw.len);
			api_status_init(&st);
			rc = api_json_parse(esc, strlen(esc), 32, &got, &st);
			CU_ASSERT_EQUAL_FATAL(rc, KI_OK);
			CU_ASSERT_FATAL(json_object_object_get_ex(got,
			    want.data, &v));
			ki_buf_reset(&want);
			ki_buf_append(&want, "a", 1);
			ki_buf_append(&want, raw.data, raw.len);
			ki_buf_append(&want, "b", 1);
			if (strcmp(json_object_get_string(v), want.data) != 0)
				fprintf(stderr, "test_parse_astral_escapes: "
				    "U+%X path %zu read wrong\n", cps[i], j);
			CU_ASSERT_STRING_EQUAL(json_object_get_string(v),
			    want.data);
			json_object_put(got);
			api_status_free(&st);
			ki_buf_free(&raw);
			ki_buf_free(&want);
		}
	}
}

#define U(lit) ((const unsigned char *)(lit))

/* The lexer's primitives, one case each of what their callers rely on:
 * a quote after an even run of backslashes ends a string, an odd one does
 * not; escapes decode (a pair to one character, U+1D800 among them, which
 * json-c misreads); JSONLEX_STRICT refuses what the fast parser must leave
 * to json-c while the lenient mode reads it as json-c does; numbers follow
 * JSON's grammar; a value skips brackets inside strings. */
static void
test_jsonlex(void)
{
	static const struct {
		const char *text;
		size_t end;
	} ends[] = {
		{ "\"ab\"x", 4 }, { "\"a\\\"b\"", 6 }, { "\"a\\\\\"b", 5 },
		{ "\"a\\\\\\\"\"", 7 }, { "\"abc", JSONLEX_NONE },
		{ "\"\\\"", JSONLEX_NONE },
	};
	static const struct {
		const char *text;
		int strict_ok;  /* JSONLEX_STRICT takes it */
		const char *decoded; /* lenient mode's contents */
	} strs[] = {
		{ "\"plain text over eight bytes\"", 1,
		    "plain text over eight bytes" },
		{ "\"tab\\t \\u00e9 \\/\"", 1, "tab\t \xc3\xa9 /" },
		{ "\"\\ud836\\udc00\"", 1, "\xf0\x9d\xa0\x80" },  /* U+1D800 */
		{ "\"\\ud800x\"", 0, "\xef\xbf\xbdx" },
		{ "\"\\udc00\\ud800\"", 0, "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\"a\\u0000b\"", 0, "a\0b" },
		{ "\"raw\x01\"", 0, "raw\x01" },
		{ "\"bad \xc3\x28 utf8\"", 0, "bad \xc3\x28 utf8" },
	};
	static const struct {
		const char *text;
		int ok, is_int;
		size_t end, digits;
	} nums[] = {
		{ "0", 1, 1, 1, 1 }, { "-120,", 1, 1, 4, 3 },
		{ "1.5e-3]", 1, 0, 6, 1 }, { "01", 1, 1, 1, 1 },
		{ "1.", 0, 0, 0, 0 }, { "-", 0, 0, 0, 0 }, { "1e+", 0, 0, 0, 0 },
		{ ".5", 0, 0, 0, 0 },
	};
	const char *v = "{\"a\":\"}]\",\"b\":[1,{\"c\":\"\\\"}\"}]} tail";
	ki_buf out;
	jsonlex_str js;
	jsonlex_num num;
	uint32_t cp = 0;
	size_t i;

	for (i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		CU_ASSERT_EQUAL(jsonlex_string_end(U(ends[i].text),
		    strlen(ends[i].text), 0), ends[i].end);
	ki_buf_init(&out);
	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		const char *t = strs[i].text;
		size_t n = strlen(t), want = strlen(strs[i].decoded);
		const char *got;

		if (i == 5)
			want = 3;   /* "a\0b" */
		CU_ASSERT_EQUAL(jsonlex_string(U(t), n, 0, JSONLEX_STRICT, NULL,
		    &js) == KI_OK, strs[i].strict_ok);
		ki_buf_reset(&out);
		CU_ASSERT_EQUAL_FATAL(jsonlex_string(U(t), n, 0, 0, &out, &js),
		    KI_OK);
		CU_ASSERT_EQUAL(js.end, n);
		got = js.decoded ? out.data : t + 1;
		CU_ASSERT_EQUAL(js.decoded ? out.len : n - 2, want);
		CU_ASSERT(memcmp(got, strs[i].decoded, want) == 0);
		CU_ASSERT_EQUAL(js.lone, i == 3 || i == 4 ? 1 : JSONLEX_NONE);
	}
	ki_buf_free(&out);
	CU_ASSERT_EQUAL(jsonlex_escape(U("\\ud836\\udc00"), 12, 0, &cp), 12);
	CU_ASSERT_EQUAL(cp, 0x1D800);
	CU_ASSERT_EQUAL(jsonlex_escape(U("\\ud836\\u0041"), 12, 0, &cp), 6);
	CU_ASSERT_EQUAL(cp, 0xD836);
	CU_ASSERT_EQUAL(jsonlex_escape(U("\\x"), 2, 0, &cp), 0);
	CU_ASSERT_EQUAL(jsonlex_escape(U("\\u12"), 4, 0, &cp), 0);
	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		int rc = jsonlex_number(U(nums[i].text), strlen(nums[i].text),
		    0, &num);

		CU_ASSERT_EQUAL(rc == KI_OK, nums[i].ok);
		if (rc != KI_OK)
			continue;
		CU_ASSERT_EQUAL(num.end, nums[i].end);
		CU_ASSERT_EQUAL(num.is_int, nums[i].is_int);
		CU_ASSERT_EQUAL(num.digits, nums[i].digits);
		CU_ASSERT_EQUAL(num.neg, nums[i].text[0] == '-');
	}
	CU_ASSERT_EQUAL(jsonlex_value_end(U(v), strlen(v), 0, 8),
	    strlen(v) - 5);
	CU_ASSERT_EQUAL(jsonlex_value_end(U(v), strlen(v), 0, 2), JSONLEX_NONE);
	CU_ASSERT_EQUAL(jsonlex_value_end(U("[1,2"), 4, 0, 8), JSONLEX_NONE);
	CU_ASSERT_EQUAL(jsonlex_value_end(U("true}"), 5, 0, 8), 4);
	CU_ASSERT_EQUAL(jsonlex_value_end(U(",1"), 2, 0, 8), 0);
	CU_ASSERT_EQUAL(jsonlex_ws(U(" \t\r\n x"), 6, 0), 5);
}

int
test_jcs_register(void)
{
	static const struct {
		const char *name;
		CU_TestFunc fn;
	} tests[] = {
		{ "number cases", test_number_cases },
		{ "numbers.csv", test_numbers_csv },
		{ "number literals written from their digits",
		    test_number_literals },
		{ "RFC 8785 vectors", test_vectors },
		{ "serialize numbers", test_serialize_numbers },
		{ "serialize non-finite", test_serialize_nonfinite },
		{ "serialize structure and key order", test_serialize_structure },
		{ "string escapes at every offset",
		    test_string_escapes_at_every_offset },
		{ "digest of the seed", test_digest_seed },
		{ "digest members", test_digest_members },
		{ "sha256", test_sha256 },
		{ "digest format and parse", test_digest_parse },
		{ "duplicate keys", test_duplicate_keys },
		{ "duplicate keys, big document", test_duplicate_keys_big },
		{ "lossy text", test_lossy },
		{ "out of memory", test_out_of_memory },
		{ "parsed tree is json-c's", test_parse_tree },
		{ "parsed tree of the seed", test_parse_tree_seed },
		{ "parsed strings, a special byte at every offset",
		  test_parse_string_offsets },
		{ "characters above U+FFFF as escapes, on both paths",
		  test_parse_astral_escapes },
		{ "the JSON lexer's primitives", test_jsonlex },
	};
	CU_pSuite s;
	size_t i;

	s = CU_add_suite("jcs", NULL, NULL);
	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	return 0;
}
