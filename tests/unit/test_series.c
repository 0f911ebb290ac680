/* tests/unit/test_series.c — series of runs: version order, a run's figures
 * and series key, and CSV fields. */
#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <string.h>

#include "api/series.h"
#include "tests/unit/tests.h"

static void
test_version_order(void)
{
	CU_ASSERT(api_version_cmp("0.10.0", "0.9.1") > 0);
	CU_ASSERT(api_version_cmp("0.9.1", "0.10.0") < 0);
	CU_ASSERT(api_version_cmp("0.2.1", "0.2.1") == 0);
	CU_ASSERT(api_version_cmp("0.2.1", "0.2") > 0);
	CU_ASSERT(api_version_cmp("", "0.1") < 0);
	CU_ASSERT(api_version_cmp("1.0-rc1", "1.0-rc2") < 0);
	CU_ASSERT(api_version_cmp("v2", "v10") < 0);
	CU_ASSERT(api_version_cmp("007", "7") == 0);
}

/* A run's parts from JSON texts. */
static int
point(const char *spec, const char *labels, api_point *p)
{
	struct json_object *s = json_tokener_parse(spec);
	struct json_object *l = json_tokener_parse(labels);
	int rc = api_point_from_parts(s, l, NULL, "r1", NULL, p);

	json_object_put(s);
	json_object_put(l);
	return rc;
}

static void
test_point_figures(void)
{
	api_point a, b, c;

	CU_ASSERT_EQUAL(point("{\"timing\":{\"latencyNs\":{\"median\":100}},"
	    "\"measurements\":[{\"metric\":\"latency\",\"statistic\":\"p20\","
	    "\"unit\":\"ns\",\"value\":90}],\"observedAt\":\"2024-09-03T15:31:39Z\","
	    "\"workloadDigest\":\"sha256:aa\",\"protocolDigest\":\"sha256:bb\"}",
	    "{\"kernel\":\"rms_norm\",\"pass\":\"forward\",\"provider\":\"liger\","
	    "\"gpu\":\"h100\",\"metric\":\"latency\",\"dtype\":\"bfloat16\","
	    "\"liger_version\":\"0.2.1\"}", &a), KI_OK);
	CU_ASSERT_DOUBLE_EQUAL(a.median, 100, 0);
	CU_ASSERT_DOUBLE_EQUAL(a.p20, 90, 0);
	CU_ASSERT_DOUBLE_EQUAL(a.p80, 100, 0);   /* absent: the median */
	CU_ASSERT_STRING_EQUAL(a.version, "0.2.1");
	CU_ASSERT_STRING_EQUAL(a.unit, "ns");
	CU_ASSERT(a.lower_better);
	/* The same series under another version: the key ignores it. */
	CU_ASSERT_EQUAL(point("{\"timing\":{\"latencyNs\":{\"median\":125}},"
	    "\"workloadDigest\":\"sha256:aa\",\"protocolDigest\":\"sha256:bb\"}",
	    "{\"kernel\":\"rms_norm\",\"pass\":\"forward\",\"provider\":\"liger\","
	    "\"gpu\":\"h100\",\"metric\":\"latency\",\"dtype\":\"bfloat16\","
	    "\"version\":\"0.3.0\"}", &b), KI_OK);
	CU_ASSERT_STRING_EQUAL(a.key, b.key);
	CU_ASSERT_STRING_EQUAL(b.version, "0.3.0");
	CU_ASSERT(api_point_cmp(&a, &b) < 0);
	/* Memory from its measurements; another GPU is another series. */
	CU_ASSERT_EQUAL(point("{\"measurements\":[{\"metric\":\"peak_memory\","
	    "\"statistic\":\"median\",\"unit\":\"bytes\",\"value\":4096}],"
	    "\"workloadDigest\":\"sha256:aa\",\"protocolDigest\":\"sha256:bb\"}",
	    "{\"kernel\":\"rms_norm\",\"provider\":\"liger\",\"gpu\":\"a100\","
	    "\"metric\":\"peak_memory\"}", &c), KI_OK);
	CU_ASSERT_DOUBLE_EQUAL(c.median, 4096, 0);
	CU_ASSERT_STRING_EQUAL(c.unit, "bytes");
	CU_ASSERT(strcmp(a.key, c.key) != 0);
	api_point_free(&a);
	api_point_free(&b);
	api_point_free(&c);
	/* No figure of its metric: no series. */
	CU_ASSERT_EQUAL(point("{\"measurements\":[]}",
	    "{\"metric\":\"latency\"}", &a), KI_ENOTFOUND);
	CU_ASSERT_EQUAL(point("{\"timing\":{\"latencyNs\":{\"median\":1}}}",
	    "{}", &a), KI_ENOTFOUND);
}

static void
test_csv_field(void)
{
	ki_buf b;

	ki_buf_init(&b);
	api_csv_field(&b, "plain");
	ki_buf_putc(&b, ',');
	api_csv_field(&b, "{\"B\": 8, \"T\": 2048}");
	ki_buf_putc(&b, ',');
	api_csv_field(&b, "two\nlines");
	ki_buf_putc(&b, ',');
	api_csv_field(&b, NULL);
	ki_buf_putc(&b, '\0');
	CU_ASSERT_STRING_EQUAL(b.data, "plain,\"{\"\"B\"\": 8, \"\"T\"\": 2048}\","
	    "\"two\nlines\",");
	ki_buf_free(&b);
}

int
test_series_register(void)
{
	CU_pSuite s = CU_add_suite("series", NULL, NULL);

	if (s == NULL ||
	    CU_add_test(s, "version order", test_version_order) == NULL ||
	    CU_add_test(s, "a run's figures and series", test_point_figures) ==
	    NULL ||
	    CU_add_test(s, "CSV fields", test_csv_field) == NULL)
		return -1;
	return 0;
}
