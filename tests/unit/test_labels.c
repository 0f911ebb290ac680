/* tests/unit/test_labels.c — label and field selectors, the label blob,
 * slugs, and Kubernetes' HumanDuration. */
#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <string.h>

#include "api/labels.h"
#include "api/table.h"
#include "tests/unit/tests.h"

static const char blob[] = "gpu\0h100\0kernel\0embedding\0provider\0liger\0"
	"rows\0" "4096\0";

static int
matches(const char *sel)
{
	api_selector s;
	char err[256];
	int m;

	if (api_selector_parse(sel, &s, err, sizeof(err)) != KI_OK)
		return -1;
	m = api_selector_match(&s, blob, sizeof(blob) - 1);
	api_selector_free(&s);
	return m;
}

static void
test_selector_match(void)
{
	CU_ASSERT_EQUAL(matches(""), 1);
	CU_ASSERT_EQUAL(matches("kernel="), 0);
	CU_ASSERT_EQUAL(matches("kernel!="), 1);
	CU_ASSERT_EQUAL(matches("kernel=embedding"), 1);
	CU_ASSERT_EQUAL(matches("kernel==embedding"), 1);
	CU_ASSERT_EQUAL(matches("kernel=softmax"), 0);
	CU_ASSERT_EQUAL(matches("kernel!=softmax"), 1);
	CU_ASSERT_EQUAL(matches("absent!=x"), 1);
	CU_ASSERT_EQUAL(matches("provider in (liger,torch)"), 1);
	CU_ASSERT_EQUAL(matches("provider in (torch)"), 0);
	CU_ASSERT_EQUAL(matches("provider notin (torch, triton)"), 1);
	CU_ASSERT_EQUAL(matches("gpu"), 1);
	CU_ASSERT_EQUAL(matches("!gpu"), 0);
	CU_ASSERT_EQUAL(matches("!absent"), 1);
	CU_ASSERT_EQUAL(matches("rows>4000,rows<5000"), 1);
	CU_ASSERT_EQUAL(matches("rows>4096"), 0);
	CU_ASSERT_EQUAL(matches(" kernel = embedding , gpu in ( h100 ) "), 1);
	CU_ASSERT_EQUAL(matches("kernel=embedding,gpu=a100"), 0);
}

static void
test_selector_errors(void)
{
	static const char *const bad[] = { "=x", "kernel in x",
		"kernel in (a", "kernel in (a b)", "a b", "kernel=bad value!",
		"rows>abc", "k==v,", "-bad-key=1", NULL };
	api_selector s;
	char err[256];

	for (const char *const *b = bad; *b != NULL; b++) {
		int rc = api_selector_parse(*b, &s, err, sizeof(err));

		CU_ASSERT_EQUAL(rc, KI_EINVAL);
		if (rc == KI_OK)
			api_selector_free(&s);
		else
			CU_ASSERT_PTR_NOT_NULL(strstr(err, "unable to parse"));
	}
	CU_ASSERT_EQUAL(api_field_selector_parse("metadata.name=a.b", &s, err,
	    sizeof(err)), KI_OK);
	CU_ASSERT_EQUAL(s.n, 1);
	CU_ASSERT_STRING_EQUAL(s.reqs[0].key, "metadata.name");
	CU_ASSERT_STRING_EQUAL(s.reqs[0].values[0], "a.b");
	api_selector_free(&s);
	CU_ASSERT_EQUAL(api_field_selector_parse("metadata.name", &s, err,
	    sizeof(err)), KI_EINVAL);
}

static void
test_driver(void)
{
	api_selector s;
	char err[256];
	const api_requirement *r;

	CU_ASSERT_EQUAL_FATAL(api_selector_parse("gpu in (a),kernel=x,b!=c",
	    &s, err, sizeof(err)), KI_OK);
	r = api_selector_driver(&s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r->key, "kernel");
	api_selector_free(&s);
	CU_ASSERT_EQUAL_FATAL(api_selector_parse("!a", &s, err, sizeof(err)),
	    KI_OK);
	CU_ASSERT_PTR_NULL(api_selector_driver(&s));
	api_selector_free(&s);
}

static void
test_encode_and_slug(void)
{
	struct json_object *l = json_tokener_parse(
	    "{\"z\":\"1\",\"a\":\"2\",\"m\":\"\"}");
	ki_buf b;
	char slug[64];

	ki_buf_init(&b);
	CU_ASSERT_EQUAL(api_labels_encode(l, &b), KI_OK);
	CU_ASSERT_EQUAL(b.len, 11);
	CU_ASSERT(memcmp(b.data, "a\0" "2\0m\0\0z\0" "1\0", 11) == 0);
	ki_buf_free(&b);
	json_object_put(l);
	CU_ASSERT_EQUAL(api_slug("NVIDIA A100 SXM4-80GB", slug), 21);
	CU_ASSERT_STRING_EQUAL(slug, "nvidia-a100-sxm4-80gb");
	api_slug("  --H100 (PCIe)  ", slug);
	CU_ASSERT_STRING_EQUAL(slug, "h100-pcie");
	CU_ASSERT_EQUAL(api_slug("!!!", slug), 0);
}

static void
age(double s, const char *want)
{
	ki_buf b;

	ki_buf_init(&b);
	api_human_duration(s, &b);
	CU_ASSERT_STRING_EQUAL(b.data, want);
	ki_buf_free(&b);
}

static void
test_human_duration(void)
{
	age(-5, "<invalid>");
	age(-0.5, "0s");
	age(0, "0s");
	age(119, "119s");
	age(120, "2m");
	age(200, "3m20s");
	age(599, "9m59s");
	age(600, "10m");
	age(129 * 60, "129m");
	age(3 * 3600, "3h");
	age(5 * 3600 + 180, "5h3m");
	age(47 * 3600, "47h");
	age(3 * 86400 + 4 * 3600, "3d4h");
	age(8 * 86400, "8d");
	age(400 * 86400, "400d");
	age(3 * 365 * 86400, "3y");
	age(3 * 365 * 86400 + 86400 * 5, "3y5d");
	age(9 * 365 * 86400, "9y");
}

int
test_labels_register(void)
{
	CU_pSuite s = CU_add_suite("labels", NULL, NULL);

	if (s == NULL ||
	    CU_add_test(s, "selectors match", test_selector_match) == NULL ||
	    CU_add_test(s, "selector errors", test_selector_errors) == NULL ||
	    CU_add_test(s, "index driver", test_driver) == NULL ||
	    CU_add_test(s, "label blob and slugs", test_encode_and_slug) == NULL ||
	    CU_add_test(s, "HumanDuration", test_human_duration) == NULL)
		return -1;
	return 0;
}
