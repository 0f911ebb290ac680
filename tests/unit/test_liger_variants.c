/* tests/unit/test_liger_variants.c — every row of other versions of Liger's
 * data files imports: the rows of 153 committed versions of
 * all_benchmark_data*.csv (tests/data/liger-variants/), with distinct names
 * and ids, each exported back byte for byte; what the importer does not
 * know is imported as written and named; only rows that are not records
 * of the header's shape are refused, with their line. */
#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "api/jcs.h"
#include "harness/liger.h"
#include "lib/ki.h"
#include "tests/unit/tests.h"

/* Reads liger-variants/name of the test data (tests_data_path),
 * gunzipping a .gz, into b. Returns 0, or -1 after recording a failure. */
static int
read_variant(const char *name, ki_buf *b)
{
	char rel[256], path[4096], chunk[65536];
	gzFile f = NULL;
	int n;

	snprintf(rel, sizeof(rel), "liger-variants/%s", name);
	if (tests_data_path(path, sizeof(path), rel) == 0)
		f = gzopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "test_liger_variants: cannot open %s\n", path);
		CU_FAIL_FATAL("test data file missing (set KI_DATA_DIR)");
		return -1;
	}
	while ((n = gzread(f, chunk, sizeof(chunk))) > 0)
		ki_buf_append(b, chunk, (size_t)n);
	CU_ASSERT_EQUAL(n, 0);
	gzclose(f);
	CU_ASSERT_FATAL(!b->oom);
	return 0;
}

static struct json_object *
at(struct json_object *o, const char *a, const char *b, const char *c)
{
	const char *keys[3] = { a, b, c };
	int i;

	for (i = 0; i < 3 && keys[i] != NULL; i++)
		if (o == NULL || !json_object_object_get_ex(o, keys[i], &o))
			return NULL;
	return o;
}

static const char *
at_str(struct json_object *o, const char *a, const char *b, const char *c)
{
	o = at(o, a, b, c);
	return o != NULL && json_object_is_type(o, json_type_string) ?
	    json_object_get_string(o) : NULL;
}

/* What a conversion of one file gave. */
typedef struct outcome {
	struct json_object *bundles; /* array, in line order */
	struct json_object *names;   /* run name → externalId */
	struct json_object *eids;    /* externalId → line */
	size_t nrefused, nbad_name, ndup;
	ki_buf refused;              /* "line: message\n" for each refusal */
} outcome;

/* Whether s is a DNS-1123 subdomain of at most max characters. */
static int
dns_name_ok(const char *s, size_t max)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max || s[0] == '-' || s[n - 1] == '-' ||
	    s[0] == '.' || s[n - 1] == '.')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' &&
		    s[i] <= '9') || s[i] == '-' || s[i] == '.') ||
		    (s[i] == '.' && (s[i + 1] == '.' || s[i + 1] == '-' ||
		    s[i - 1] == '-')))
			return 0;
	return 1;
}

static int
outcome_fn(void *arg, size_t line, struct json_object *bundle,
	const char *msg)
{
	outcome *o = arg;
	const char *name, *eid;

	if (bundle == NULL) {
		o->nrefused++;
		ki_buf_printf(&o->refused, "%zu: %s\n", line, msg);
		return 0;
	}
	json_object_array_add(o->bundles, json_object_get(bundle));
	name = at_str(bundle, "run", "metadata", "name");
	eid = at_str(at(bundle, "run", "spec", "sourceNative"), "externalId",
	    NULL, NULL);
	if (name == NULL || eid == NULL || !dns_name_ok(name,
	    LIGER_RUN_NAME_MAX) || strlen(eid) > 380) {
		o->nbad_name++;
		return 0;
	}
	if (json_object_object_get_ex(o->names, name, NULL) ||
	    json_object_object_get_ex(o->eids, eid, NULL))
		o->ndup++;
	json_object_object_add(o->names, name, json_object_new_string(eid));
	json_object_object_add(o->eids, eid, json_object_new_int64(
	    (int64_t)line));
	return 0;
}

static void
outcome_free(outcome *o)
{
	json_object_put(o->bundles);
	json_object_put(o->names);
	json_object_put(o->eids);
	ki_buf_free(&o->refused);
}

/* Converts file name; then exports every run back and compares with the
 * file's text when round_trip. */
static int
convert_file(const char *name, outcome *o, int round_trip)
{
	ki_buf text, err, back;
	size_t i, nbad = 0;
	int rc;

	memset(o, 0, sizeof(*o));
	ki_buf_init(&o->refused);
	ki_buf_init(&text);
	ki_buf_init(&err);
	ki_buf_init(&back);
	o->bundles = json_object_new_array();
	o->names = json_object_new_object();
	o->eids = json_object_new_object();
	if (read_variant(name, &text) != 0)
		return -1;
	rc = liger_convert_text(text.data, text.len, outcome_fn, o, &err);
	CU_ASSERT_EQUAL(rc, KI_OK);
	if (round_trip) {
		liger_csv_header(&back);
		for (i = 0; i < json_object_array_length(o->bundles); i++) {
			struct json_object *b = json_object_array_get_idx(
			    o->bundles, i);
			ki_buf canon;
			struct json_object *stored;

			/* Through the canonical form the server stores. */
			ki_buf_init(&canon);
			api_jcs_serialize(at(b, "run", NULL, NULL), &canon);
			stored = json_tokener_parse(canon.data);
			ki_buf_reset(&err);
			if (liger_run_to_csv(stored, NULL, &back, &err) != KI_OK) {
				fprintf(stderr, "\n  export: %s", err.data);
				nbad++;
			}
			json_object_put(stored);
			ki_buf_free(&canon);
		}
		CU_ASSERT_EQUAL(nbad, 0);
		CU_ASSERT_EQUAL(back.len, text.len);
		if (back.len != text.len || memcmp(back.data, text.data,
		    text.len) != 0) {
			for (i = 0; i < back.len && i < text.len &&
			    back.data[i] == text.data[i]; i++)
				;
			fprintf(stderr, "\n  %s: export differs at byte %zu: "
			    "'%.80s' against '%.80s'", name, i, back.data + i,
			    text.data + i);
			CU_FAIL("export round trip");
		}
	}
	ki_buf_free(&text);
	ki_buf_free(&err);
	ki_buf_free(&back);
	return 0;
}

/* 7,151 rows of 153 versions: all import, no two share a name or an
 * externalId, and all export back byte for byte. */
static void
test_history_rows(void)
{
	outcome o;

	if (convert_file("history-rows.csv.gz", &o, 1) != 0)
		return;
	if (o.nrefused > 0)
		fprintf(stderr, "\n%s", o.refused.data);
	CU_ASSERT_EQUAL(o.nrefused, 0);
	CU_ASSERT_EQUAL(json_object_array_length(o.bundles), 7151);
	CU_ASSERT_EQUAL(o.nbad_name, 0);
	CU_ASSERT_EQUAL(o.ndup, 0);
	CU_ASSERT_EQUAL(json_object_object_length(o.names), 7151);
	outcome_free(&o);
}

static void
test_cutedsl_file(void)
{
	outcome o;

	if (convert_file("all_benchmark_data_cutedsl-ead96b6.csv", &o, 1) != 0)
		return;
	CU_ASSERT_EQUAL(o.nrefused, 0);
	CU_ASSERT_EQUAL(json_object_array_length(o.bundles), 165);
	CU_ASSERT_EQUAL(o.ndup, 0);
	CU_ASSERT_EQUAL(o.nbad_name, 0);
	outcome_free(&o);
}

/* The version committed with a merge conflict's markers: the three marker
 * lines are refused with their line numbers, the 84 rows around them
 * import. */
static void
test_conflicted_file(void)
{
	outcome o;

	if (convert_file("all_benchmark_data-26f24e07-lines400-500.csv", &o,
	    0) != 0)
		return;
	CU_ASSERT_EQUAL(o.nrefused, 3);
	CU_ASSERT_EQUAL(json_object_array_length(o.bundles), 84);
	CU_ASSERT_STRING_EQUAL(o.refused.data,
	    "14: line 14: the row has 1 field, the header 15\n"
	    "51: line 51: the row has 1 field, the header 15\n"
	    "88: line 88: the row has 1 field, the header 15\n");
	CU_ASSERT_EQUAL(o.ndup, 0);
	outcome_free(&o);
}

/* The bundle of the row of history-rows.csv.gz whose externalId is eid
 * (borrowed from o), or NULL. */
static struct json_object *
find_eid(outcome *o, const char *eid)
{
	size_t i;

	for (i = 0; i < json_object_array_length(o->bundles); i++) {
		struct json_object *b = json_object_array_get_idx(o->bundles, i);
		const char *e = at_str(at(b, "run", "spec", "sourceNative"),
		    "externalId", NULL, NULL);

		if (e != NULL && strcmp(e, eid) == 0)
			return b;
	}
	fprintf(stderr, "\n  no row with externalId %s", eid);
	return NULL;
}

/* What the rows the importer used to refuse become. */
static void
test_what_is_kept(void)
{
	struct json_object *b, *want;
	outcome o;

	if (convert_file("history-rows.csv.gz", &o, 0) != 0)
		return;

	/* x_name T = 1024 beside the config's seq_len 8192 (the script's
	 * default, which x overrides): both kept, x under the canonical
	 * name, the config's value under its own spelling. */
	b = find_eid(&o, "geglu/forward/liger_triton/nvidia-b200/"
	    "batch1-hidden4096-hidden_actgelu_pytorch_tanh-intermediate14336-"
	    "seq1024-seq_len8192-bf16/2026-06-16-04-03-53");
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	want = json_tokener_parse("{\"seq\":1024,\"seq_len\":8192,"
	    "\"hidden\":4096,\"intermediate\":14336,\"batch\":1,"
	    "\"hidden_act\":\"gelu_pytorch_tanh\"}");
	CU_ASSERT_TRUE(json_object_equal(at(b, "workload", "spec",
	    "parameters"), want));
	json_object_put(want);
	CU_ASSERT_STRING_EQUAL(at_str(b, "workload", "spec", "sweep"), "seq");

	/* A GPU outside the table: the environment says what the name says,
	 * and the run names what was not known. */
	b = find_eid(&o, "rms_norm/full/liger/nvidia-l40s-948f6189/"
	    "eps1e-06-hidden1024-rows2048-bf16/2024-09-04-16-04-45");
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	want = json_tokener_parse("{\"vendor\":\"nvidia\","
	    "\"product\":\"NVIDIA L40S\"}");
	CU_ASSERT_TRUE(json_object_equal(at(b, "environment", "spec",
	    "hardware"), want));
	json_object_put(want);
	CU_ASSERT_STRING_EQUAL(at_str(b, "environment", "metadata", "name"),
	    "liger-bench-nvidia-l40s-948f6189");
	CU_ASSERT_STRING_EQUAL(at_str(at(b, "run", "metadata", "annotations"),
	    LIGER_ANN_UNKNOWN, NULL, NULL), "GPU 'NVIDIA L40S'");

	/* no-grad-forward: a forward pass under its own protocol. */
	b = find_eid(&o, "cross_entropy/no-grad-forward/liger_triton/"
	    "nvidia-b200/batch1-model_configllama_2_7b-seq2048-fp32/"
	    "2026-07-05-21-00-21");
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_STRING_EQUAL(at_str(b, "workload", "spec", "pass"),
	    "forward");
	CU_ASSERT_STRING_EQUAL(at_str(b, "protocol", "metadata", "name"),
	    "liger-bench-do-bench-no-grad-forward");
	CU_ASSERT_PTR_NULL(at(b, "run", "metadata", "annotations") != NULL ?
	    at(at(b, "run", "metadata", "annotations"), LIGER_ANN_UNKNOWN,
	    NULL, NULL) : NULL);

	/* A model_config sweep without a dtype: dtype unknown. */
	b = find_eid(&o, "rms_norm/forward/huggingface/"
	    "nvidia-h100-80gb-hbm3/batch1-eps1e-06-model_configllama_2_7b-"
	    "seq2048-unknown/2026-06-26-06-27-18");
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_STRING_EQUAL(at_str(b, "workload", "spec", "dtype"),
	    "unknown");
	CU_ASSERT_STRING_EQUAL(at_str(at(b, "run", "metadata", "annotations"),
	    LIGER_ANN_UNKNOWN, NULL, NULL), "dtype (the row names none)");
	outcome_free(&o);
}

int
test_liger_variants_register(void)
{
	CU_pSuite s = CU_add_suite("liger variants", NULL, NULL);

	if (s == NULL)
		return -1;
	if (CU_add_test(s, "history: every row of 153 versions imports",
	    test_history_rows) == NULL ||
	    CU_add_test(s, "cutedsl data file", test_cutedsl_file) == NULL ||
	    CU_add_test(s, "a version with conflict markers",
	    test_conflicted_file) == NULL ||
	    CU_add_test(s, "what the importer does not know is kept",
	    test_what_is_kept) == NULL)
		return -1;
	return 0;
}
