/* tests/unit/test_encode.c — server/encode.c: negotiation, YAML, gzip. */
#include <CUnit/CUnit.h>
#include <string.h>

#include "server/encode.h"
#include "tests.h"

/* The YAML of json, or "ERR <rc>". */
static void
yaml_is(const char *json, const char *want)
{
	ki_buf b;
	int rc;

	ki_buf_init(&b);
	rc = enc_yaml(json, strlen(json), &b);
	CU_ASSERT_EQUAL(rc, KI_OK);
	if (rc == KI_OK) {
		CU_ASSERT_STRING_EQUAL(b.data, want);
		if (strcmp(b.data, want) != 0)
			fprintf(stderr, "\nyaml of %s:\n%s\nwant:\n%s\n", json, b.data,
			    want);
	}
	ki_buf_free(&b);
}

static void
test_yaml_shapes(void)
{
	yaml_is("{\"a\":1,\"b\":{\"c\":\"d\"},\"e\":[1,2]}",
	    "a: 1\nb:\n  c: d\ne:\n- 1\n- 2\n");
	yaml_is("{\"a\":{},\"b\":[],\"c\":null,\"d\":true,\"e\":false}",
	    "a: {}\nb: []\nc: null\nd: true\ne: false\n");
	yaml_is("[[1,[2,3]],{\"k\":[{\"x\":1,\"z\":2}]},[]]",
	    "- - 1\n  - - 2\n    - 3\n- k:\n  - x: 1\n    z: 2\n- []\n");
	yaml_is("{\"items\":[{\"m\":{\"nm\":\"v\"},\"s\":[\"a\"]}]}",
	    "items:\n- m:\n    nm: v\n  s:\n  - a\n");
	yaml_is("\"top\"", "top\n");
	yaml_is(" { \"a\" : [ 1 , 2 ] } ", "a:\n- 1\n- 2\n");
}

static void
test_yaml_scalars(void)
{
	/* Numbers: an exponent gets a '.' and a sign (YAML 1.1 floats). */
	yaml_is("[1e5,-2.5E-3,0,1.5,-0]", "- 1.0e+5\n- -2.5e-3\n- 0\n- 1.5\n"
	    "- -0\n");
	/* What a reader would take for something else is quoted. */
	yaml_is("[\"yes\",\"No\",\"ON\",\"null\",\"y\",\"~\",\"123\",\"1e5\","
	    "\"\",\" a\",\"a b\",\"a: b\",\"#c\",\"-x\",\".inf\",\"@x\",\"*x\","
	    "\"!x\",\"2001-12-14\",\"k8s.io/name\",\"_x\",\"/p\"]",
	    "- \"yes\"\n- \"No\"\n- \"ON\"\n- \"null\"\n- \"y\"\n- \"~\"\n"
	    "- \"123\"\n- \"1e5\"\n- \"\"\n- \" a\"\n- \"a b\"\n- \"a: b\"\n"
	    "- \"#c\"\n- \"-x\"\n- \".inf\"\n- \"@x\"\n- \"*x\"\n- \"!x\"\n"
	    "- \"2001-12-14\"\n- k8s.io/name\n- _x\n- /p\n");
	/* Escapes: JSON's are decoded, YAML's written; NEL, LS, PS, BOM and
	 * controls escaped, other UTF-8 as it is, surrogate pairs joined. */
	yaml_is("[\"q\\\"b\\\\\",\"l1\\nl2\\tt\",\"\\u0001\\u007f\","
	    "\"\\u0085\\u2028\\u2029\\ufeff\",\"caf\\u00e9 \xc3\xa9\","
	    "\"\\ud83d\\ude00\",\"\\ud800x\"]",
	    "- \"q\\\"b\\\\\"\n- \"l1\\nl2\\tt\"\n- \"\\x01\\x7F\"\n"
	    "- \"\\x85\\u2028\\u2029\\uFEFF\"\n- \"caf\xc3\xa9 \xc3\xa9\"\n"
	    "- \"\xf0\x9f\x98\x80\"\n- \"\xef\xbf\xbdx\"\n");
	/* Keys follow the same rule. */
	yaml_is("{\"true\":1,\"a b\":2,\"ok\":3}",
	    "\"true\": 1\n\"a b\": 2\nok: 3\n");
}

static void
test_yaml_errors(void)
{
	static const char *const bad[] = { "", "{", "[1,", "{\"a\"}", "\"x",
		"{} x", "{\"a\":1", "[1]]" };
	ki_buf b;
	char deep[600];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ki_buf_init(&b);
		CU_ASSERT_EQUAL(enc_yaml(bad[i], strlen(bad[i]), &b), KI_EINVAL);
		ki_buf_free(&b);
	}
	memset(deep, '[', 300);
	memset(deep + 300, ']', 300);
	ki_buf_init(&b);
	CU_ASSERT_EQUAL(enc_yaml(deep, sizeof(deep), &b), KI_EINVAL);
	ki_buf_free(&b);
}

static void
test_negotiation(void)
{
	CU_ASSERT_FALSE(enc_accepts_gzip(NULL));
	CU_ASSERT_TRUE(enc_accepts_gzip("gzip"));
	CU_ASSERT_TRUE(enc_accepts_gzip("deflate, GZIP;q=0.5"));
	CU_ASSERT_TRUE(enc_accepts_gzip("x-gzip"));
	CU_ASSERT_TRUE(enc_accepts_gzip("*"));
	CU_ASSERT_FALSE(enc_accepts_gzip("gzip;q=0"));
	CU_ASSERT_FALSE(enc_accepts_gzip("gzip;q=0.000, *"));
	CU_ASSERT_FALSE(enc_accepts_gzip("*;q=0"));
	CU_ASSERT_FALSE(enc_accepts_gzip("br, identity"));
	CU_ASSERT_TRUE(enc_accepts_gzip("gzip ; q=0.001"));
	CU_ASSERT_FALSE(enc_wants_yaml(NULL));
	CU_ASSERT_FALSE(enc_wants_yaml("*/*"));
	CU_ASSERT_FALSE(enc_wants_yaml("application/json"));
	CU_ASSERT_TRUE(enc_wants_yaml("application/yaml"));
	CU_ASSERT_TRUE(enc_wants_yaml("application/yaml, */*;q=0.1"));
	CU_ASSERT_FALSE(enc_wants_yaml("application/json, application/yaml"));
	CU_ASSERT_TRUE(enc_wants_yaml("application/yaml, application/json"));
	CU_ASSERT_TRUE(enc_wants_yaml("application/json;q=0.5, "
	    "application/yaml"));
	CU_ASSERT_FALSE(enc_wants_yaml("application/yaml;q=0"));
	CU_ASSERT_TRUE(enc_wants_yaml("Application/YAML;as=Table;v=v1;"
	    "g=meta.k8s.io"));
	CU_ASSERT_TRUE(enc_compressible("application/json"));
	CU_ASSERT_TRUE(enc_compressible("text/html; charset=utf-8"));
	CU_ASSERT_FALSE(enc_compressible("image/png"));
}

/* RFC 9110 8.3.1 media types: what enc_content_type reads and refuses. */
static void
test_content_type(void)
{
	static const struct {
		const char *ct, *mt;
		int rc;
	} t[] = {
		{ NULL, "", 0 },
		{ "", "", 0 },
		{ "  ", "", 0 },
		{ "Application/JSON", "application/json", 0 },
		{ "application/json; charset=utf-8", "application/json", 0 },
		{ "application/json;charset=\"UTF-8\"", "application/json", 0 },
		{ "application/json ; charset=utf8 ;", "application/json", 0 },
		{ "application/json;;x=1", "application/json", 0 },
		{ "application/json; x=\";charset=utf-16\"", "application/json",
		  0 },
		{ "application/json; x=\"a\\\"b\"; charset=utf-8",
		  "application/json", 0 },
		{ "application/json\t", "application/json", 0 },
		{ "application/json; charset=utf-16", "application/json",
		  ENC_CT_CHARSET },
		{ "application/json; CHARSET=\"latin1\"", "application/json",
		  ENC_CT_CHARSET },
		{ "application/json; charset=utf-8-but-longer-than-thirty-one",
		  "application/json", ENC_CT_CHARSET },
		{ "application/json; charset =utf-16", "application/json",
		  ENC_CT_BAD },
		{ "application/json; charset= utf-16", "application/json",
		  ENC_CT_BAD },
		{ "application/json; charset=utf-8; Charset=utf-8",
		  "application/json", ENC_CT_BAD },
		{ "application/json; charset=\"utf-8", "application/json",
		  ENC_CT_BAD },
		{ "application/json x", "application/json", ENC_CT_BAD },
		{ "application/json; =x", "application/json", ENC_CT_BAD },
		{ "application/json; x=", "application/json", ENC_CT_BAD },
		{ "application/json; x=\"\x01\"", "application/json",
		  ENC_CT_BAD },
		{ "json", "", ENC_CT_BAD },
		{ "application/", "", ENC_CT_BAD },
		{ "/json", "", ENC_CT_BAD },
	};
	char mt[64];
	const char *why;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int rc = enc_content_type(t[i].ct, mt, sizeof(mt), &why);

		CU_ASSERT_EQUAL(rc, t[i].rc);
		CU_ASSERT_STRING_EQUAL(mt, t[i].mt);
		CU_ASSERT_TRUE((rc == ENC_CT_BAD) == (why != NULL));
		if (rc != t[i].rc || strcmp(mt, t[i].mt) != 0)
			fprintf(stderr, "content type %zu \"%s\": %d \"%s\"\n", i,
			    t[i].ct ? t[i].ct : "(null)", rc, mt);
	}
	/* mt is cut to its size, and always ended. */
	CU_ASSERT_EQUAL(enc_content_type("application/json", mt, 5, &why), 0);
	CU_ASSERT_STRING_EQUAL(mt, "appl");
}

static void
test_gzip_round_trip(void)
{
	ki_buf z, out;
	enc_inflater *in;
	char text[20000];

	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (char)('a' + (i * 7 % 26));
	ki_buf_init(&z);
	ki_buf_init(&out);
	CU_ASSERT_EQUAL(enc_gzip(text, sizeof(text), &z), KI_OK);
	CU_ASSERT_TRUE(z.len > 18 && z.len < sizeof(text) / 4);
	/* Fed a byte at a time, as a body might arrive. */
	in = enc_inflate_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(in);
	for (size_t i = 0; i < z.len; i++)
		CU_ASSERT_EQUAL(enc_inflate(in, z.data + i, 1, &out), KI_OK);
	CU_ASSERT_EQUAL(enc_inflate_end(in), KI_OK);
	CU_ASSERT_EQUAL(out.len, sizeof(text));
	CU_ASSERT_TRUE(out.len == sizeof(text) &&
	    memcmp(out.data, text, sizeof(text)) == 0);
	/* Trailing bytes after the stream's end are refused. */
	CU_ASSERT_EQUAL(enc_inflate(in, "x", 1, &out), KI_EINVAL);
	enc_inflate_free(in);
	/* The limit is on the decompressed size. */
	ki_buf_free(&out);
	ki_buf_init(&out);
	out.limit = 1000;
	in = enc_inflate_new();
	CU_ASSERT_EQUAL(enc_inflate(in, z.data, z.len, &out), KI_ELIMIT);
	enc_inflate_free(in);
	/* A cut stream is not complete; garbage is not gzip. */
	ki_buf_free(&out);
	ki_buf_init(&out);
	in = enc_inflate_new();
	CU_ASSERT_EQUAL(enc_inflate(in, z.data, z.len - 5, &out), KI_OK);
	CU_ASSERT_EQUAL(enc_inflate_end(in), KI_EINVAL);
	enc_inflate_free(in);
	in = enc_inflate_new();
	CU_ASSERT_EQUAL(enc_inflate(in, "not gzip at all", 15, &out), KI_EINVAL);
	enc_inflate_free(in);
	ki_buf_free(&out);
	ki_buf_free(&z);
}

int
test_encode_register(void)
{
	CU_pSuite s = CU_add_suite("encode", NULL, NULL);

	if (s == NULL ||
	    CU_add_test(s, "YAML shapes", test_yaml_shapes) == NULL ||
	    CU_add_test(s, "YAML scalars", test_yaml_scalars) == NULL ||
	    CU_add_test(s, "YAML refusals", test_yaml_errors) == NULL ||
	    CU_add_test(s, "Accept and Accept-Encoding", test_negotiation) ==
	    NULL ||
	    CU_add_test(s, "Content-Type parameters", test_content_type) ==
	    NULL ||
	    CU_add_test(s, "gzip both ways", test_gzip_round_trip) == NULL)
		return -1;
	return 0;
}
