/* tests/unit/test_jsonpatch.c — JSON Patch: the examples of RFC 6902
 * appendix A, and patches that must be refused with the document left as
 * it was. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api/jsonpatch.h"
#include "tests/unit/tests.h"

/* doc, patch, the result (NULL: refused with code). */
static const struct {
	const char *doc, *patch, *want;
	int code;
} cases[] = {
	/* A.1 - A.16 */
	{ "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
	  "{\"foo\":\"bar\",\"baz\":\"qux\"}", 0 },
	{ "{\"foo\":[\"bar\",\"baz\"]}",
	  "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
	  "{\"foo\":[\"bar\",\"qux\",\"baz\"]}", 0 },
	{ "{\"baz\":\"qux\",\"foo\":\"bar\"}",
	  "[{\"op\":\"remove\",\"path\":\"/baz\"}]", "{\"foo\":\"bar\"}", 0 },
	{ "{\"foo\":[\"bar\",\"qux\",\"baz\"]}",
	  "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
	  "{\"foo\":[\"bar\",\"baz\"]}", 0 },
	{ "{\"baz\":\"qux\",\"foo\":\"bar\"}",
	  "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
	  "{\"baz\":\"boo\",\"foo\":\"bar\"}", 0 },
	{ "{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":"
	  "\"grault\"}}",
	  "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
	  "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":"
	  "\"fred\"}}", 0 },
	{ "{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
	  "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
	  "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}", 0 },
	{ "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
	  "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},{\"op\":\"test\","
	  "\"path\":\"/foo/1\",\"value\":2}]",
	  "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}", 0 },
	{ "{\"baz\":\"qux\"}",
	  "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]", NULL, 422 },
	{ "{\"foo\":\"bar\"}",
	  "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]",
	  "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}", 0 },
	{ "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":"
	  "\"qux\",\"xyz\":123}]", "{\"foo\":\"bar\",\"baz\":\"qux\"}", 0 },
	{ "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz/bat\","
	  "\"value\":\"qux\"}]", NULL, 422 },
	{ "{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\","
	  "\"value\":10}]", "{\"/\":9,\"~1\":10}", 0 },
	{ "{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\","
	  "\"value\":\"10\"}]", NULL, 422 },
	{ "{\"foo\":[\"bar\"]}", "[{\"op\":\"add\",\"path\":\"/foo/-\","
	  "\"value\":[\"abc\",\"def\"]}]",
	  "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}", 0 },
	/* numbers compare by value; objects whatever their order */
	{ "{\"a\":1,\"o\":{\"x\":1,\"y\":2}}", "[{\"op\":\"test\",\"path\":\"/a\","
	  "\"value\":1.0},{\"op\":\"test\",\"path\":\"/o\",\"value\":{\"y\":2,"
	  "\"x\":1}}]", "{\"a\":1,\"o\":{\"x\":1,\"y\":2}}", 0 },
	/* copy, the whole document, a later failure undoes nothing done */
	{ "{\"a\":{\"b\":1}}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":"
	  "\"/c\"}]", "{\"a\":{\"b\":1},\"c\":{\"b\":1}}", 0 },
	{ "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":{\"b\":2}}]",
	  "{\"b\":2}", 0 },
	{ "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},"
	  "{\"op\":\"remove\",\"path\":\"/nope\"}]", NULL, 422 },
	/* malformed patches */
	{ "{\"a\":1}", "{\"op\":\"add\"}", NULL, 400 },
	{ "{\"a\":1}", "[{\"op\":\"frobnicate\",\"path\":\"/a\"}]", NULL, 400 },
	{ "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", NULL, 400 },
	{ "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\"}]", NULL, 400 },
	{ "{\"a\":1}", "[{\"op\":\"move\",\"path\":\"/a/b\",\"from\":\"/a\"}]",
	  NULL, 422 },
	{ "{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/01\",\"value\":1}]",
	  NULL, 422 },
	{ "{\"a\":[1]}", "[{\"op\":\"replace\",\"path\":\"/a/1\",\"value\":1}]",
	  NULL, 422 },
	{ "{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/~2\",\"value\":1}]", NULL,
	  400 },
};

static void
test_cases(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *doc = json_tokener_parse(cases[i].doc);
		struct json_object *patch = json_tokener_parse(cases[i].patch);
		struct json_object *out = NULL;
		const char *before;
		char *saved;
		api_status st;
		int rc;

		CU_ASSERT_FATAL(doc != NULL && patch != NULL);
		saved = strdup(json_object_to_json_string(doc));
		api_status_init(&st);
		rc = api_jsonpatch_apply(doc, patch, &out, &st);
		if (cases[i].want != NULL) {
			struct json_object *want = json_tokener_parse(cases[i].want);

			CU_ASSERT_EQUAL(rc, KI_OK);
			if (rc != KI_OK || !json_object_equal(out, want))
				fprintf(stderr, "case %zu: got %s\n", i, out ?
				    json_object_to_json_string(out) : st.message);
			CU_ASSERT(rc == KI_OK && json_object_equal(out, want));
			json_object_put(want);
		} else {
			if (rc != KI_EINVAL || st.code != cases[i].code)
				fprintf(stderr, "case %zu: rc %d code %d\n", i, rc, st.code);
			CU_ASSERT_EQUAL(rc, KI_EINVAL);
			CU_ASSERT_EQUAL(st.code, cases[i].code);
			CU_ASSERT_PTR_NULL(out);
			CU_ASSERT_PTR_NOT_NULL(st.message);
		}
		/* The document is never changed: the patch applies to a copy. */
		before = json_object_to_json_string(doc);
		CU_ASSERT_STRING_EQUAL(before, saved);
		free(saved);
		api_status_free(&st);
		json_object_put(out);
		json_object_put(doc);
		json_object_put(patch);
	}
}

int
test_jsonpatch_register(void)
{
	CU_pSuite s = CU_add_suite("jsonpatch", NULL, NULL);

	if (s == NULL ||
	    CU_add_test(s, "RFC 6902 and refusals", test_cases) == NULL)
		return -1;
	return 0;
}
