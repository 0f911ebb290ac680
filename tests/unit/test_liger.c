/* tests/unit/test_liger.c — the Liger CSV importer: the seed row reproduced
 * exactly, the whole CSV converted, memory rows, the parameter mapping, CSV
 * quoting and malformed rows, and the export back to CSV. */
#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jcs.h"
#include "harness/liger.h"
#include "lib/ki.h"
#include "tests/unit/tests.h"

int test_liger_register(void);

/* ---- helpers --------------------------------------------------------- */

/* Reads the test data file rel (tests_data_path) into b. Returns 0, or -1
 * after recording a failure naming the file. */
static int
read_data(const char *rel, ki_buf *b)
{
	char path[4096];
	char chunk[65536];
	FILE *f = NULL;
	size_t n;

	if (tests_data_path(path, sizeof(path), rel) == 0)
		f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "test_liger: cannot open %s\n", path);
		CU_FAIL_FATAL("test data file missing (set KI_DATA_DIR)");
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		ki_buf_append(b, chunk, n);
	fclose(f);
	CU_ASSERT_FATAL(!b->oom);
	return 0;
}

/* Canonical (JCS) text of o, for exact comparison; caller frees. */
static char *
canon(struct json_object *o)
{
	ki_buf b;

	ki_buf_init(&b);
	if (api_jcs_serialize(o, &b) != KI_OK) {
		ki_buf_free(&b);
		return NULL;
	}
	return ki_buf_steal(&b, NULL);
}

/* Whether a and b are the same JSON (JCS text and json-c equality). */
static int
same_json(struct json_object *a, struct json_object *b)
{
	char *ca = canon(a), *cb = canon(b);
	int same = ca != NULL && cb != NULL && strcmp(ca, cb) == 0 &&
	    json_object_equal(a, b);

	if (!same)
		fprintf(stderr, "\n  got:  %s\n  want: %s\n", ca ? ca : "(null)",
		    cb ? cb : "(null)");
	free(ca);
	free(cb);
	return same;
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

static int
digest_str(struct json_object *o, char out[API_DIGEST_STRLEN + 1])
{
	uint8_t d[API_DIGEST_LEN];

	if (api_digest(o, d, NULL) != KI_OK)
		return -1;
	api_digest_format(d, out);
	return 0;
}

/* Every bundle of the CSV, kept in line order. */
typedef struct collect {
	struct json_object *bundles; /* array */
	size_t nfail;
	ki_buf errors;
	size_t seed_line;            /* the line of the seed's row */
} collect;

static int
collect_fn(void *arg, size_t line, struct json_object *bundle,
	const char *msg)
{
	collect *c = arg;
	const char *eid;

	if (bundle == NULL) {
		c->nfail++;
		ki_buf_printf(&c->errors, "%s\n", msg);
		return 0;
	}
	eid = at_str(at(bundle, "run", "spec", "sourceNative"), "externalId",
	    NULL, NULL);
	if (eid != NULL && strcmp(eid, "embedding/full/huggingface/"
	    "nvidia-a100-sxm4-80gb/batch8-hidden4096-seq2048-vocab131072-fp32/"
	    "2024-09-03-15-33-28") == 0)
		c->seed_line = line;
	json_object_array_add(c->bundles, json_object_get(bundle));
	return 0;
}

static collect all;
static int all_loaded;

/* Converts the whole CSV once for the tests that need it. */
static int
load_all(void)
{
	ki_buf csv, err;
	int rc;

	if (all_loaded)
		return 0;
	ki_buf_init(&csv);
	ki_buf_init(&err);
	if (read_data("liger/all_benchmark_data.csv", &csv) != 0)
		return -1;
	memset(&all, 0, sizeof(all));
	ki_buf_init(&all.errors);
	all.bundles = json_object_new_array();
	rc = liger_convert_text(csv.data, csv.len, collect_fn, &all, &err);
	if (rc != KI_OK)
		fprintf(stderr, "convert: %s\n", err.data ? err.data : "?");
	CU_ASSERT_EQUAL_FATAL(rc, KI_OK);
	ki_buf_free(&csv);
	ki_buf_free(&err);
	all_loaded = 1;
	return 0;
}

static int
suite_clean(void)
{
	if (all_loaded) {
		json_object_put(all.bundles);
		ki_buf_free(&all.errors);
		all_loaded = 0;
	}
	return 0;
}

/* Converts a small CSV text of a header and one row; *out the bundle or
 * NULL with err filled. Returns the converter's code. */
static int
convert_one(const char *row, struct json_object **out, ki_buf *err)
{
	static const char header[] = "kernel_name,kernel_provider,"
	    "kernel_operation_mode,metric_name,metric_unit,x_name,x_label,"
	    "x_value,y_value_50,y_value_20,y_value_80,"
	    "extra_benchmark_config_str,gpu_name,timestamp,liger_version\r\n";
	liger_conv *c = NULL;
	liger_record rec;
	liger_csv csv;
	ki_buf text;
	int rc;

	*out = NULL;
	ki_buf_init(&text);
	ki_buf_puts(&text, header);
	ki_buf_puts(&text, row);
	liger_record_init(&rec);
	rc = liger_conv_new(&c);
	if (rc != KI_OK)
		goto out;
	liger_csv_init(&csv, text.data, text.len);
	rc = liger_csv_next(&csv, &rec, err);
	if (rc != 1)
		goto out;
	rc = liger_conv_header(c, &rec, err);
	if (rc != KI_OK)
		goto out;
	rc = liger_csv_next(&csv, &rec, err);
	if (rc != 1)
		goto out;
	rc = liger_conv_row(c, &rec, out, err);
out:
	liger_conv_free(c);
	liger_record_free(&rec);
	ki_buf_free(&text);
	return rc;
}

/* ---- the seed row ---------------------------------------------------- */

static void
test_seed_row(void)
{
	struct json_object *seed = NULL, *mine, *run, *srun;
	static const char *const run_fields[] = { "status", "timing",
	    "observedAt", "measurements", "sourceNative" };
	char d[API_DIGEST_STRLEN + 1];
	ki_buf text;
	size_t i;

	ki_buf_init(&text);
	if (read_data("seed/embedding-full-huggingface-a100.json", &text))
		return;
	seed = json_tokener_parse(text.data);
	ki_buf_free(&text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(seed);
	if (load_all() != 0)
		goto out;
	CU_ASSERT_NOT_EQUAL_FATAL(all.seed_line, 0);
	mine = NULL;
	for (i = 0; i < json_object_array_length(all.bundles); i++) {
		struct json_object *b = json_object_array_get_idx(all.bundles, i);
		const char *eid = at_str(at(b, "run", "spec", "sourceNative"),
		    "externalId", NULL, NULL);

		if (eid != NULL && strcmp(eid, at_str(at(seed, "run", "spec",
		    "sourceNative"), "externalId", NULL, NULL)) == 0)
			mine = b;
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(mine);
	run = at(mine, "run", "spec", NULL);
	srun = at(seed, "run", "spec", NULL);
	for (i = 0; i < sizeof(run_fields) / sizeof(run_fields[0]); i++) {
		struct json_object *a = at(run, run_fields[i], NULL, NULL);
		struct json_object *b = at(srun, run_fields[i], NULL, NULL);

		CU_ASSERT_PTR_NOT_NULL(a);
		CU_ASSERT_TRUE(same_json(a, b));
	}
	CU_ASSERT_TRUE(same_json(at(mine, "protocol", "spec", NULL),
	    at(seed, "protocol", "spec", NULL)));
	CU_ASSERT_TRUE(same_json(at(mine, "environment", "spec", NULL),
	    at(seed, "environment", "spec", NULL)));

	CU_ASSERT_EQUAL(digest_str(at(mine, "protocol", NULL, NULL), d), 0);
	CU_ASSERT_STRING_EQUAL(d, "sha256:5b02ee9a2140fbc6fcc1c89800f6c177"
	    "ba22718c8897cb532bf0ba91867c1e58");
	CU_ASSERT_STRING_EQUAL(at_str(run, "protocolDigest", NULL, NULL),
	    at_str(srun, "protocolDigest", NULL, NULL));
	CU_ASSERT_EQUAL(digest_str(at(mine, "environment", NULL, NULL), d), 0);
	CU_ASSERT_STRING_EQUAL(d, "sha256:90c9e2764222f592477cfccf3373519a"
	    "dd5a1b881563956ad058c4f99e41b6b9");
	CU_ASSERT_STRING_EQUAL(at_str(run, "environmentDigest", NULL, NULL),
	    at_str(srun, "environmentDigest", NULL, NULL));
	/* The run's other two digests are those of the bundled documents. */
	CU_ASSERT_EQUAL(digest_str(at(mine, "workload", NULL, NULL), d), 0);
	CU_ASSERT_STRING_EQUAL(at_str(run, "workloadDigest", NULL, NULL), d);
	CU_ASSERT_EQUAL(digest_str(at(mine, "implementation", NULL, NULL), d),
	    0);
	CU_ASSERT_STRING_EQUAL(at_str(run, "implementationDigest", NULL, NULL),
	    d);

	/* The name: the seed's readable part, cut to 91 characters, and 8 hex
	 * digits of SHA-256 of the externalId, so that no other row of any
	 * file shares it (the seed's own name is cut in the timestamp, which
	 * every other time of the same point would share). */
	{
		const char *nm = at_str(mine, "run", "metadata", "name");
		const char *sn = at_str(seed, "run", "metadata", "name");

		CU_ASSERT_EQUAL(strlen(nm), 100);
		CU_ASSERT_EQUAL(strncmp(nm, sn, 91), 0);
		CU_ASSERT_STRING_EQUAL(nm + 91, "-d6609f4e");
	}
	CU_ASSERT_STRING_EQUAL(at_str(mine, "run", "metadata", "title"),
	    at_str(seed, "run", "metadata", "title"));
	CU_ASSERT_TRUE(same_json(at(mine, "run", "metadata", "labels"),
	    at(seed, "run", "metadata", "labels")));
	CU_ASSERT_STRING_EQUAL(at_str(mine, "protocol", "metadata", "name"),
	    "liger-bench-do-bench-full");
	CU_ASSERT_STRING_EQUAL(at_str(mine, "protocol", "metadata", "title"),
	    at_str(seed, "protocol", "metadata", "title"));
	CU_ASSERT_STRING_EQUAL(at_str(mine, "environment", "metadata", "name"),
	    "liger-bench-nvidia-a100-sxm4-80gb");
	CU_ASSERT_STRING_EQUAL(at_str(mine, "environment", "metadata",
	    "title"), at_str(seed, "environment", "metadata", "title"));

	/* The workload and implementation in the documented shapes. */
	{
		struct json_object *want = json_tokener_parse(
		    "{\"kernel\":\"embedding\",\"pass\":\"full\","
		    "\"dtype\":\"float32\",\"parameters\":{\"batch\":8,"
		    "\"seq\":2048,\"hidden\":4096,\"vocab\":131072},"
		    "\"sweep\":\"vocab\"}");

		CU_ASSERT_TRUE(same_json(at(mine, "workload", "spec", NULL),
		    want));
		json_object_put(want);
		want = json_tokener_parse("{\"provider\":\"huggingface\","
		    "\"framework\":\"torch\"}");
		CU_ASSERT_TRUE(same_json(at(mine, "implementation", "spec",
		    NULL), want));
		json_object_put(want);
	}
out:
	json_object_put(seed);
}

/* ---- the whole file -------------------------------------------------- */

static int
cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Counts adjacent duplicates of a sorted array. */
static size_t
dups(const char **v, size_t n)
{
	size_t i, d = 0;

	qsort(v, n, sizeof(v[0]), cmp_strp);
	for (i = 1; i < n; i++)
		if (strcmp(v[i - 1], v[i]) == 0) {
			fprintf(stderr, "\n  duplicate: %s", v[i]);
			d++;
		}
	return d;
}

/* A DNS-1123 subdomain of at most max characters. */
static int
name_ok(const char *s, size_t max)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > max)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && c != '-' && c != '.')
			return 0;
		if (!alnum && (i == 0 || i + 1 == n))
			return 0;
		if (c == '.' && (s[i - 1] == '-' || s[i + 1] == '-' ||
		    s[i + 1] == '.'))
			return 0;
	}
	return 1;
}

static void
test_whole_csv(void)
{
	const char **names, **eids;
	size_t n, i, bad = 0;
	struct json_object *protos, *envs;

	if (load_all() != 0)
		return;
	if (all.nfail != 0)
		fprintf(stderr, "%s", all.errors.data);
	CU_ASSERT_EQUAL(all.nfail, 0);
	n = json_object_array_length(all.bundles);
	CU_ASSERT_EQUAL(n, 2448);
	names = calloc(n, sizeof(*names));
	eids = calloc(n, sizeof(*eids));
	CU_ASSERT_PTR_NOT_NULL_FATAL(names);
	CU_ASSERT_PTR_NOT_NULL_FATAL(eids);
	protos = json_object_new_object();
	envs = json_object_new_object();
	for (i = 0; i < n; i++) {
		struct json_object *b = json_object_array_get_idx(all.bundles, i);
		static const char *const parts[] = { "protocol", "environment",
		    "workload", "implementation" };
		size_t k;

		names[i] = at_str(b, "run", "metadata", "name");
		eids[i] = at_str(at(b, "run", "spec", "sourceNative"),
		    "externalId", NULL, NULL);
		if (names[i] == NULL || eids[i] == NULL ||
		    !name_ok(names[i], LIGER_RUN_NAME_MAX)) {
			fprintf(stderr, "\n  bad run name: %s",
			    names[i] ? names[i] : "(none)");
			bad++;
			names[i] = eids[i] = "";
		}
		for (k = 0; k < 4; k++) {
			const char *nm = at_str(b, parts[k], "metadata", "name");

			if (nm == NULL || !name_ok(nm, LIGER_NAME_MAX)) {
				fprintf(stderr, "\n  bad %s name: %s", parts[k],
				    nm ? nm : "(none)");
				bad++;
			}
		}
		json_object_object_add(protos, at_str(b, "protocol", "metadata",
		    "name"), NULL);
		json_object_object_add(envs, at_str(b, "environment", "metadata",
		    "name"), NULL);
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(dups(names, n), 0);
	CU_ASSERT_EQUAL(dups(eids, n), 0);
	/* 3 passes timed + the Megatron backward + 3 passes of memory. */
	CU_ASSERT_EQUAL(json_object_object_length(protos), 7);
	CU_ASSERT_EQUAL(json_object_object_length(envs), 6);
	json_object_put(protos);
	json_object_put(envs);
	free(names);
	free(eids);
}

/* Same name, same spec: an object's name never stands for two contents. */
static void
test_names_name_one_content(void)
{
	static const char *const parts[] = { "protocol", "environment",
	    "workload", "implementation" };
	struct json_object *seen;
	size_t i, k, n, bad = 0;

	if (load_all() != 0)
		return;
	seen = json_object_new_object();
	n = json_object_array_length(all.bundles);
	for (i = 0; i < n; i++) {
		struct json_object *b = json_object_array_get_idx(all.bundles, i);

		for (k = 0; k < 4; k++) {
			struct json_object *o = at(b, parts[k], NULL, NULL), *old;
			char d[API_DIGEST_STRLEN + 1];
			const char *nm = at_str(o, "metadata", "name", NULL);

			CU_ASSERT_EQUAL_FATAL(digest_str(o, d), 0);
			if (json_object_object_get_ex(seen, nm, &old)) {
				if (strcmp(json_object_get_string(old), d) != 0)
					bad++;
			} else {
				json_object_object_add(seen, nm,
				    json_object_new_string(d));
			}
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	json_object_put(seen);
}

/* ---- one memory row -------------------------------------------------- */

static void
test_memory_row(void)
{
	struct json_object *b = NULL, *spec, *m, *want;
	ki_buf err;
	int rc;

	ki_buf_init(&err);
	rc = convert_one("embedding,liger,full,memory,MB,V,embedding dimension,"
	    "131072,4256.0,4256.0,4256.5,\"{\"\"B\"\": 8, \"\"T\"\": 2048, "
	    "\"\"D\"\": 4096, \"\"dtype\"\": \"\"torch.float32\"\"}\","
	    "NVIDIA A100-SXM4-80GB,2024-09-03 15:33:29,0.2.1\r\n", &b, &err);
	if (rc != KI_OK)
		fprintf(stderr, "%s\n", err.data);
	CU_ASSERT_EQUAL_FATAL(rc, KI_OK);
	spec = at(b, "run", "spec", NULL);
	CU_ASSERT_PTR_NULL(at(spec, "timing", NULL, NULL));
	CU_ASSERT_STRING_EQUAL(at_str(spec, "status", NULL, NULL), "passed");
	m = at(spec, "measurements", NULL, NULL);
	want = json_tokener_parse("[{\"unit\":\"bytes\",\"value\":4462739456,"
	    "\"metric\":\"peak_memory\",\"statistic\":\"median\"},"
	    "{\"unit\":\"bytes\",\"value\":4462739456,\"metric\":\"peak_memory\","
	    "\"statistic\":\"p20\"},{\"unit\":\"bytes\",\"value\":4463263744,"
	    "\"metric\":\"peak_memory\",\"statistic\":\"p80\"}]");
	CU_ASSERT_TRUE(same_json(m, want));
	json_object_put(want);
	want = json_tokener_parse("{\"source\":\"liger-kernel-bench\","
	    "\"metrics\":{\"mb_20\":4256.0,\"mb_50\":4256.0,\"mb_80\":4256.5},"
	    "\"benchmark\":\"embedding/full\",\"externalId\":"
	    "\"embedding/full/memory/liger/nvidia-a100-sxm4-80gb/"
	    "batch8-hidden4096-seq2048-vocab131072-fp32/2024-09-03-15-33-29\"}");
	CU_ASSERT_TRUE(same_json(at(spec, "sourceNative", NULL, NULL), want));
	json_object_put(want);
	CU_ASSERT_STRING_EQUAL(at_str(b, "protocol", "metadata", "name"),
	    "liger-bench-max-memory-full");
	CU_ASSERT_STRING_EQUAL(at_str(at(b, "protocol", "spec",
	    "measurement"), "method", NULL, NULL),
	    "torch.cuda.max_memory_allocated");
	CU_ASSERT_STRING_EQUAL(at_str(b, "implementation", "spec", "version"),
	    "0.2.1");
	CU_ASSERT_STRING_EQUAL(at_str(b, "implementation", "metadata", "name"),
	    "liger-torch-0.2.1");
	/* the memory and speed runs of one point have distinct names */
	CU_ASSERT_STRING_EQUAL(at_str(b, "run", "metadata", "name"),
	    "liger-embedding-full-memory-liger-nvidia-a100-sxm4-80gb-batch8-"
	    "hidden4096-seq2048-vocab1310-593f1768");
	json_object_put(b);
	ki_buf_free(&err);
}

/* The memory rows of the real file all convert into bytes. */
static void
test_memory_rows_in_csv(void)
{
	size_t i, n, nmem = 0, bad = 0;

	if (load_all() != 0)
		return;
	n = json_object_array_length(all.bundles);
	for (i = 0; i < n; i++) {
		struct json_object *b = json_object_array_get_idx(all.bundles, i);
		struct json_object *spec = at(b, "run", "spec", NULL);
		struct json_object *mb = at(spec, "sourceNative", "metrics",
		    "mb_50");
		struct json_object *m;

		if (mb == NULL)
			continue;
		nmem++;
		m = json_object_array_get_idx(at(spec, "measurements", NULL,
		    NULL), 0);
		if (at(spec, "timing", NULL, NULL) != NULL ||
		    strcmp(at_str(m, "statistic", NULL, NULL), "median") != 0 ||
		    json_object_get_int64(at(m, "value", NULL, NULL)) !=
		    llround(json_object_get_double(mb) * 1048576.0))
			bad++;
	}
	CU_ASSERT_EQUAL(nmem, 799);
	CU_ASSERT_EQUAL(bad, 0);
}

/* ---- the parameter mapping ------------------------------------------- */

static void
test_param_mapping(void)
{
	static const char *const canonical[] = { "batch", "seq", "tokens",
	    "hidden", "vocab", "rows", "intermediate", "heads", "q_heads",
	    "kv_heads", "experts", "topk", "channels", "channels_per_group",
	    "kernel_size", "dilation", "groups", "in_channels", "out_channels",
	    "eps" };
	const liger_param_map *t;
	size_t n, i, k;
	struct json_object *b = NULL, *want;
	ki_buf err;

	CU_ASSERT_STRING_EQUAL(liger_canonical_param("embedding", "B"),
	    "batch");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("embedding", "D"),
	    "hidden");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("embedding", "V"),
	    "vocab");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("layer_norm", "M"),
	    "rows");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("group_norm", "M"),
	    "batch");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("fused_moe", "K"),
	    "topk");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("fused_moe", "T"),
	    "tokens");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("rope", "T"), "seq");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("multi_token_attention",
	    "K"), "kernel_size");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("megatron_swiglu",
	    "ffn_local"), "intermediate");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("jsd", "BT"), "tokens");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("geglu", "bsz"),
	    "batch");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("geglu", "hidden_act"),
	    "hidden_act");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param(NULL, "C_in"),
	    "in_channels");
	CU_ASSERT_STRING_EQUAL(liger_canonical_param("x", "TP"), "TP");

	/* Every row maps to a canonical name (or keeps its own spelling). */
	t = liger_param_table(&n);
	CU_ASSERT_TRUE(n > 20);
	for (i = 0; i < n; i++) {
		int known = 0;

		for (k = 0; k < sizeof(canonical) / sizeof(canonical[0]); k++)
			if (strcmp(t[i].canonical, canonical[k]) == 0)
				known = 1;
		CU_ASSERT_TRUE(known || strcmp(t[i].canonical, t[i].liger) == 0);
	}

	/* fused_moe: null T dropped, x T → tokens, sweep_dim gone. */
	ki_buf_init(&err);
	CU_ASSERT_EQUAL_FATAL(convert_one("fused_moe,liger,full,speed,ms,T,"
	    "num_tokens,2048,1.5,1.25,2.0,\"{\"\"sweep_dim\"\": \"\"T\"\", "
	    "\"\"T\"\": null, \"\"E\"\": 128, \"\"H\"\": 2048, "
	    "\"\"intermediate_dim\"\": 768, \"\"K\"\": 8, \"\"dtype\"\": "
	    "\"\"torch.bfloat16\"\"}\",NVIDIA H100 80GB HBM3,"
	    "2026-04-02 23:57:32,0.7.0\r\n", &b, &err), KI_OK);
	want = json_tokener_parse("{\"kernel\":\"fused_moe\",\"pass\":\"full\","
	    "\"dtype\":\"bfloat16\",\"parameters\":{\"experts\":128,"
	    "\"hidden\":2048,\"intermediate\":768,\"topk\":8,\"tokens\":2048},"
	    "\"sweep\":\"tokens\"}");
	CU_ASSERT_TRUE(same_json(at(b, "workload", "spec", NULL), want));
	json_object_put(want);
	CU_ASSERT_STRING_EQUAL(at_str(at(b, "run", "spec", "sourceNative"),
	    "externalId", NULL, NULL), "fused_moe/full/liger/"
	    "nvidia-h100-80gb-hbm3/experts128-hidden2048-intermediate768-"
	    "tokens2048-topk8-bf16/2026-04-02-23-57-32");
	json_object_put(b);

	/* Strings, booleans and floats stay; dtype leaves the parameters. */
	CU_ASSERT_EQUAL_FATAL(convert_one("kto_loss,liger,full,speed,ms,B,"
	    "Batch Size (B),4,1.5,1.25,2.0,\"{\"\"bias\"\": true, \"\"beta\"\": "
	    "0.1, \"\"mode\"\": \"\"forward\"\", \"\"H\"\": 1024, \"\"eps\"\": "
	    "1e-06, \"\"dtype\"\": \"\"torch.bfloat16\"\"}\",NVIDIA H100 80GB "
	    "HBM3,2024-12-01 10:00:00,0.5.0\r\n", &b, &err), KI_OK);
	want = json_tokener_parse("{\"bias\":true,\"beta\":0.1,\"mode\":"
	    "\"forward\",\"hidden\":1024,\"eps\":1e-06,\"batch\":4}");
	CU_ASSERT_TRUE(same_json(at(b, "workload", "spec", "parameters"),
	    want));
	json_object_put(want);
	CU_ASSERT_STRING_EQUAL(at_str(at(b, "run", "spec", "sourceNative"),
	    "externalId", NULL, NULL), "kto_loss/full/liger/nvidia-h100-80gb-"
	    "hbm3/batch4-beta0.1-biastrue-eps1e-06-hidden1024-modeforward-bf16/"
	    "2024-12-01-10-00-00");
	json_object_put(b);

	/* No dtype: the script's default (cross_entropy float32, megatron
	 * bfloat16); none known: an error. */
	CU_ASSERT_EQUAL_FATAL(convert_one("cross_entropy,liger,forward,speed,"
	    "ms,V,vocab size,4096,0.5,0.5,0.5,\"{\"\"B\"\": 8, \"\"T\"\": "
	    "2048}\",NVIDIA A100-SXM4-80GB,2024-09-03 15:31:39,0.2.1\r\n", &b,
	    &err), KI_OK);
	CU_ASSERT_STRING_EQUAL(at_str(b, "workload", "spec", "dtype"),
	    "float32");
	json_object_put(b);
	CU_ASSERT_EQUAL_FATAL(convert_one("megatron_swiglu,torch,backward,"
	    "speed,ms,ffn_local,per-rank FFN hidden size,1024,0.5,0.5,0.5,"
	    "\"{\"\"B\"\": 4, \"\"S\"\": 2048}\",NVIDIA H100 80GB HBM3,"
	    "2026-01-01 00:00:00,0.8.1\r\n", &b, &err), KI_OK);
	CU_ASSERT_STRING_EQUAL(at_str(b, "workload", "spec", "dtype"),
	    "bfloat16");
	CU_ASSERT_STRING_EQUAL(at_str(b, "protocol", "metadata", "name"),
	    "liger-bench-do-bench-backward-with-forward");
	CU_ASSERT_PTR_NULL(at(b, "implementation", "spec", "version"));
	CU_ASSERT_STRING_EQUAL(at_str(b, "implementation", "metadata", "name"),
	    "torch");
	json_object_put(b);
	/* None known: the dtype is "unknown", and the run says so. */
	ki_buf_reset(&err);
	CU_ASSERT_EQUAL_FATAL(convert_one("new_kernel,liger,full,speed,ms,N,n,"
	    "1,0.5,0.5,0.5,\"{\"\"M\"\": 4}\",NVIDIA B200,2026-01-01 "
	    "00:00:00,0.8.1\r\n", &b, &err), KI_OK);
	CU_ASSERT_STRING_EQUAL(at_str(b, "workload", "spec", "dtype"),
	    "unknown");
	CU_ASSERT_STRING_EQUAL(at_str(at(b, "run", "metadata", "annotations"),
	    LIGER_ANN_UNKNOWN, NULL, NULL), "kernel 'new_kernel'; dtype (the "
	    "row names none)");
	json_object_put(b);
	ki_buf_free(&err);
}

/* Two Liger keys naming one parameter with different values: both kept,
 * the second under its own spelling. */
static void
test_param_conflict(void)
{
	struct json_object *b = NULL, *want;
	ki_buf err;

	ki_buf_init(&err);
	CU_ASSERT_EQUAL_FATAL(convert_one("geglu,liger,full,speed,ms,T,seq,1024,"
	    "0.5,0.5,0.5,\"{\"\"bsz\"\": 8, \"\"B\"\": 4, \"\"dtype\"\": "
	    "\"\"torch.bfloat16\"\"}\",NVIDIA B200,2026-01-01 00:00:00,0.8.1\r\n",
	    &b, &err), KI_OK);
	want = json_tokener_parse("{\"seq\":1024,\"batch\":8,\"B\":4}");
	CU_ASSERT_TRUE(same_json(at(b, "workload", "spec", "parameters"),
	    want));
	json_object_put(want);
	CU_ASSERT_STRING_EQUAL(at_str(at(b, "run", "spec", "sourceNative"),
	    "externalId", NULL, NULL), "geglu/full/liger/nvidia-b200/"
	    "B4-batch8-seq1024-bf16/2026-01-01-00-00-00");
	json_object_put(b);
	ki_buf_free(&err);
}

/* ---- CSV quoting ----------------------------------------------------- */

static void
test_csv_quoting(void)
{
	static const char text[] =
	    "a,\"b,c\",\"say \"\"hi\"\"\"\r\n"    /* comma, doubled quotes */
	    "\"multi\r\nline\",,\"\"\n"            /* CRLF inside, empties */
	    "\r\n"                                 /* a blank line */
	    "x,\"\",\"y\"";                        /* no final newline */
	liger_csv csv;
	liger_record r;
	ki_buf err;

	liger_record_init(&r);
	ki_buf_init(&err);
	liger_csv_init(&csv, text, sizeof(text) - 1);
	CU_ASSERT_EQUAL(liger_csv_next(&csv, &r, &err), 1);
	CU_ASSERT_EQUAL(r.nfields, 3);
	CU_ASSERT_STRING_EQUAL(r.field[0], "a");
	CU_ASSERT_STRING_EQUAL(r.field[1], "b,c");
	CU_ASSERT_STRING_EQUAL(r.field[2], "say \"hi\"");
	CU_ASSERT_EQUAL(r.line, 1);
	CU_ASSERT_EQUAL(liger_csv_next(&csv, &r, &err), 1);
	CU_ASSERT_EQUAL(r.nfields, 3);
	CU_ASSERT_STRING_EQUAL(r.field[0], "multi\r\nline");
	CU_ASSERT_STRING_EQUAL(r.field[1], "");
	CU_ASSERT_STRING_EQUAL(r.field[2], "");
	CU_ASSERT_EQUAL(r.line, 2);
	CU_ASSERT_EQUAL(liger_csv_next(&csv, &r, &err), 1);
	CU_ASSERT_EQUAL(r.line, 5);
	CU_ASSERT_EQUAL(r.nfields, 3);
	CU_ASSERT_STRING_EQUAL(r.field[0], "x");
	CU_ASSERT_STRING_EQUAL(r.field[1], "");
	CU_ASSERT_STRING_EQUAL(r.field[2], "y");
	CU_ASSERT_EQUAL(liger_csv_next(&csv, &r, &err), 0);

	/* Malformed: a quote inside an unquoted field, text after a closing
	 * quote (each skipped to the next line), an unclosed quote. */
	{
		static const char bad[] = "ok,fi\"eld\r\n"
		    "\"a\"b,c\r\n"
		    "fine,row\r\n"
		    "\"open,field\r\nmore\r\n";

		liger_csv_init(&csv, bad, sizeof(bad) - 1);
		CU_ASSERT_EQUAL(liger_csv_next(&csv, &r, &err), KI_EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.data, "line 1"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err.data, "quote inside"));
		ki_buf_reset(&err);
		CU_ASSERT_EQUAL(liger_csv_next(&csv, &r, &err), KI_EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.data, "line 2"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err.data, "after the closing"));
		ki_buf_reset(&err);
		CU_ASSERT_EQUAL(liger_csv_next(&csv, &r, &err), 1);
		CU_ASSERT_STRING_EQUAL(r.field[1], "row");
		CU_ASSERT_EQUAL(liger_csv_next(&csv, &r, &err), KI_EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.data, "line 4"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err.data, "not closed"));
		CU_ASSERT_EQUAL(liger_csv_next(&csv, &r, &err), 0);
	}

	/* Writing: quoted only where needed, quotes doubled. */
	{
		ki_buf out;

		ki_buf_init(&out);
		liger_csv_put_field(&out, "plain", 5);
		ki_buf_putc(&out, ',');
		liger_csv_put_field(&out, "{\"B\": 8}", 8);
		ki_buf_putc(&out, ',');
		liger_csv_put_field(&out, "a\nb", 3);
		CU_ASSERT_STRING_EQUAL(out.data,
		    "plain,\"{\"\"B\"\": 8}\",\"a\nb\"");
		ki_buf_free(&out);
	}
	liger_record_free(&r);
	ki_buf_free(&err);
}

/* ---- malformed rows -------------------------------------------------- */

static void
test_malformed_rows(void)
{
	static const struct {
		const char *row;
		const char *expect;
	} cases[] = {
		{ "embedding,liger,full,speed,ms,V,v,1024,0.5,0.5\r\n",
		    "the row has 10 fields, the header 15" },
		{ "embedding,liger,full,speed,ms,V,v,1024,fast,0.5,0.5,"
		    "\"{\"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8.1\r\n",
		    "column y_value_50: 'fast' is not a finite" },
		{ "embedding,liger,full,speed,ms,V,v,1024,0.5,0.5,nan,"
		    "\"{\"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8.1\r\n",
		    "column y_value_80: 'nan'" },
		{ "embedding,liger,full,speed,s,V,v,1024,0.5,0.5,0.5,"
		    "\"{\"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8.1\r\n",
		    "column metric_name: 'speed' in 's'" },
		{ "embedding,liger,full,speed,ms,V,v,1024,0.5,0.5,0.5,"
		    "\"{\"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026/01/01 00:00,0.8.1\r\n", "column timestamp:" },
		{ "embedding,liger,full,speed,ms,V,v,1024,0.6,0.5,0.55,"
		    "\"{\"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8.1\r\n", "out of order" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *b = NULL;
		ki_buf err;
		int rc;

		ki_buf_init(&err);
		rc = convert_one(cases[i].row, &b, &err);
		CU_ASSERT_EQUAL(rc, KI_EINVAL);
		CU_ASSERT_PTR_NULL(b);
		if (err.data == NULL || strstr(err.data, cases[i].expect) ==
		    NULL || strncmp(err.data, "line 2: ", 8) != 0) {
			fprintf(stderr, "\n  case %zu: got '%s', want '%s'", i,
			    err.data ? err.data : "", cases[i].expect);
			CU_FAIL("error message");
		}
		json_object_put(b);
		ki_buf_free(&err);
	}
}

/* Rows with what the importer does not know import as written, the run
 * naming what was not known; each exports back to its line. */
static void
test_unknown_rows_import(void)
{
	static const struct {
		const char *row;
		const char *unknown;  /* the annotation; NULL: none */
		const char *check;    /* "path=value" on the bundle, or NULL */
	} cases[] = {
		{ "embedding,liger,full,speed,ms,V,v,1024,0.5,0.5,0.5,"
		    "\"{\"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA Z9000,"
		    "2026-01-01 00:00:00,0.8.1\r\n", "GPU 'NVIDIA Z9000'",
		    "environment.spec.hardware.product=NVIDIA Z9000" },
		{ "embedding,liger,no-grad-forward,speed,ms,V,v,1024,0.5,0.5,"
		    "0.5,\"{\"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8.1\r\n", NULL,
		    "workload.spec.pass=forward" },
		{ "embedding,liger,sideways,speed,ms,V,v,1024,0.5,0.5,"
		    "0.5,\"{\"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8.1\r\n", "operation mode 'sideways'",
		    "protocol.metadata.name=liger-bench-do-bench-mode-sideways" },
		{ "embedding,liger,full,speed,ms,V,v,1024,0.5,0.5,0.5,"
		    "\"{\"\"dtype\"\": \"\"torch.float32\"\"\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8.1\r\n",
		    "extra_benchmark_config_str is not a JSON object (kept as "
		    "written); dtype (the row names none)", NULL },
		{ "embedding,liger,full,speed,ms,V,v,1024,0.5,0.5,0.5,"
		    "\"{\"\"D\"\": 1, \"\"D\"\": 2, \"\"dtype\"\": "
		    "\"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8.1\r\n", "extra_benchmark_config_str "
		    "holds the key D twice (the last one is used)", NULL },
		{ "embedding,liger,full,speed,ms,V,v,1024,0.5,0.5,0.5,"
		    "\"{\"\"dtype\"\": \"\"torch.int4\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8.1\r\n", "dtype 'torch.int4'",
		    "workload.spec.dtype=unknown" },
		{ "embedding,liger,full,speed,ms,V,v,1024,0.5,0.5,0.5,"
		    "\"{\"\"cfg\"\": {\"\"a\"\": 1}, \"\"dtype\"\": "
		    "\"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8.1\r\n", NULL,
		    "workload.spec.parameters=" },
		{ "emb/edding,liger,full,speed,ms,V,v,1024,0.5,0.5,0.5,"
		    "\"{\"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8+local,0.8.1\r\n", NULL, NULL },
		{ "emb/edding,liger,full,speed,ms,V,v,1024,0.5,0.5,0.5,"
		    "\"{\"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA B200,"
		    "2026-01-01 00:00:00,0.8+local\r\n", "kernel 'emb/edding'",
		    "workload.spec.kernel=emb_edding" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *b = NULL, *back = NULL;
		const char *ann;
		ki_buf err, csv;
		char *stored;
		int rc;

		ki_buf_init(&err);
		ki_buf_init(&csv);
		rc = convert_one(cases[i].row, &b, &err);
		if (i == 7) {
			/* 16 fields: not a record of the header's shape */
			CU_ASSERT_EQUAL(rc, KI_EINVAL);
			ki_buf_free(&err);
			continue;
		}
		CU_ASSERT_EQUAL(rc, KI_OK);
		if (rc != KI_OK) {
			fprintf(stderr, "\n  case %zu: %s", i, err.data);
			ki_buf_free(&err);
			continue;
		}
		ann = at_str(at(b, "run", "metadata", "annotations"),
		    LIGER_ANN_UNKNOWN, NULL, NULL);
		if (cases[i].unknown == NULL) {
			CU_ASSERT_PTR_NULL(ann);
		} else if (ann == NULL || strcmp(ann, cases[i].unknown) != 0) {
			fprintf(stderr, "\n  case %zu: unknown '%s', want '%s'", i,
			    ann ? ann : "(none)", cases[i].unknown);
			CU_FAIL("the unknown annotation");
		}
		if (cases[i].check != NULL) {
			char path[128], *eq, *p, *seg[6];
			struct json_object *o = b;
			int n = 0;

			snprintf(path, sizeof(path), "%s", cases[i].check);
			eq = strchr(path, '=');
			*eq = '\0';
			for (p = path; n < 6 && p != NULL; n++) {
				seg[n] = p;
				p = strchr(p, '.');
				if (p != NULL)
					*p++ = '\0';
			}
			for (int k = 0; k < n && o != NULL; k++)
				o = at(o, seg[k], NULL, NULL);
			CU_ASSERT_PTR_NOT_NULL(o);
			if (o != NULL && eq[1] != '\0') {
				CU_ASSERT_STRING_EQUAL(json_object_get_string(o),
				    eq + 1);
			}
		}
		/* Back to the same line. */
		stored = canon(at(b, "run", NULL, NULL));
		back = json_tokener_parse(stored);
		CU_ASSERT_EQUAL(liger_run_to_csv(back, NULL, &csv, &err), KI_OK);
		CU_ASSERT_STRING_EQUAL(csv.data != NULL ? csv.data : "",
		    cases[i].row);
		json_object_put(back);
		free(stored);
		json_object_put(b);
		ki_buf_free(&err);
		ki_buf_free(&csv);
	}
}

/* A bad row among good ones is reported with its line; the rest convert. */
static int
count_fn(void *arg, size_t line, struct json_object *bundle, const char *msg)
{
	size_t *n = arg;

	if (bundle != NULL)
		n[0]++;
	else if (line == 3 && strstr(msg, "line 3: ") == msg)
		n[1]++;
	else
		n[2]++;
	return 0;
}

static void
test_convert_text_reports(void)
{
	static const char text[] = "kernel_name,kernel_provider,"
	    "kernel_operation_mode,metric_name,metric_unit,x_name,x_label,"
	    "x_value,y_value_50,y_value_20,y_value_80,"
	    "extra_benchmark_config_str,gpu_name,timestamp,liger_version\n"
	    "tvd,torch,full,speed,ms,V,vocab size,4096,1.0,0.5,2.0,"
	    "\"{\"\"B\"\": 8, \"\"T\"\": 2048}\",NVIDIA H100 80GB HBM3,"
	    "2025-01-01 00:00:00,0.7.0\n"
	    "tvd,torch,full,speed,ms,V,vocab size,8192,1.0,0.5\n"
	    "tvd,torch,full,speed,ms,V,vocab size,8192,1.0,0.5,2.0,"
	    "\"{\"\"B\"\": 8, \"\"T\"\": 2048}\",NVIDIA H100 80GB HBM3,"
	    "2025-01-01 00:00:00,0.7.0\n";
	size_t n[3] = { 0, 0, 0 };
	ki_buf err;

	ki_buf_init(&err);
	CU_ASSERT_EQUAL(liger_convert_text(text, sizeof(text) - 1, count_fn, n,
	    &err), KI_OK);
	CU_ASSERT_EQUAL(n[0], 2);
	CU_ASSERT_EQUAL(n[1], 1);
	CU_ASSERT_EQUAL(n[2], 0);
	/* A header without the columns is refused as a whole. */
	CU_ASSERT_EQUAL(liger_convert_text("a,b\n1,2\n", 8, count_fn, n, &err),
	    KI_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.data, "no column kernel_name"));
	ki_buf_free(&err);
}

/* ---- names ----------------------------------------------------------- */

static void
test_long_names(void)
{
	struct json_object *b = NULL;
	const char *name;
	ki_buf err;

	ki_buf_init(&err);
	/* Cut before the timestamp: a hash of the externalId ends the name. */
	CU_ASSERT_EQUAL_FATAL(convert_one("fused_neighborhood_attention,liger,"
	    "full,speed,ms,seq_len,sequence length,1024,1.0,0.5,2.0,"
	    "\"{\"\"batch_size\"\": 2, \"\"hidden_size\"\": 512, "
	    "\"\"num_heads\"\": 8, \"\"kernel_size\"\": 7, \"\"dilation\"\": 1, "
	    "\"\"bias\"\": true, \"\"dtype\"\": \"\"torch.float32\"\"}\","
	    "NVIDIA H100 80GB HBM3,2025-07-01 12:00:00,0.6.0\r\n", &b, &err),
	    KI_OK);
	name = at_str(b, "run", "metadata", "name");
	CU_ASSERT_EQUAL(strlen(name), 100);
	{
		static const char prefix[] = "liger-fused-neighborhood-"
		    "attention-full-liger-nvidia-h100-80gb-hbm3-batch2-biastrue-";

		CU_ASSERT_EQUAL(strncmp(name, prefix, sizeof(prefix) - 1), 0);
	}
	CU_ASSERT_EQUAL(name[91], '-');
	CU_ASSERT_EQUAL(strspn(name + 92, "0123456789abcdef"), 8);
	json_object_put(b);
	ki_buf_free(&err);
}

/* ---- number formatting ----------------------------------------------- */

static void
test_format_double(void)
{
	static const struct {
		double v;
		const char *s;
	} cases[] = {
		{ 7.484294414520264, "7.484294414520264" },
		{ 7.5203776359558105, "7.5203776359558105" },
		{ 1e-06, "1e-06" },
		{ 0.0001, "0.0001" },
		{ 1e-05, "1e-05" },
		{ 2.0, "2.0" },
		{ 100.0, "100.0" },
		{ 4256.5, "4256.5" },
		{ 0.1, "0.1" },
		{ 1e16, "1e+16" },
		{ 1234567890123456.0, "1234567890123456.0" },
		{ -0.5, "-0.5" },
		{ 0.0, "0.0" },
		{ 1.5e-300, "1.5e-300" },
	};
	char out[32];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CU_ASSERT_TRUE(liger_format_double(cases[i].v, out) > 0);
		CU_ASSERT_STRING_EQUAL(out, cases[i].s);
	}
	CU_ASSERT_EQUAL(liger_format_double(1.0 / 0.0, out), KI_EINVAL);
}

/* ---- export ---------------------------------------------------------- */

/* Every converted bundle's run turns back into its CSV line, byte for
 * byte (the figures included), also after a trip through the canonical
 * form the server stores (where 4256.0 becomes 4256). */
static void
test_export_round_trip(void)
{
	ki_buf csv, out, err;
	size_t i, n, bad = 0;

	if (load_all() != 0)
		return;
	ki_buf_init(&csv);
	ki_buf_init(&out);
	ki_buf_init(&err);
	if (read_data("liger/all_benchmark_data.csv", &csv) != 0)
		return;
	liger_csv_header(&out);
	n = json_object_array_length(all.bundles);
	for (i = 0; i < n; i++) {
		struct json_object *b = json_object_array_get_idx(all.bundles, i);
		char *stored = canon(at(b, "run", NULL, NULL));
		struct json_object *back = stored != NULL ?
		    json_tokener_parse(stored) : NULL;

		if (back == NULL || liger_run_to_csv(back, NULL, &out,
		    &err) != KI_OK)
			bad++;
		json_object_put(back);
		free(stored);
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(out.len, csv.len);
	CU_ASSERT_TRUE(out.len == csv.len &&
	    memcmp(out.data, csv.data, csv.len) == 0);

	/* Without its annotations a run borrows them from a run of the same
	 * sweep, and reads x_value from the externalId. */
	{
		struct json_object *seed_b = NULL, *sib = NULL, *copy = NULL;
		ki_buf one;

		ki_buf_init(&one);
		for (i = 0; i < n; i++) {
			struct json_object *b =
			    json_object_array_get_idx(all.bundles, i);
			const char *nm = at_str(b, "run", "metadata", "name");

			if (strncmp(nm, "liger-embedding-full-huggingface-nvidia-"
			    "a100-sxm4-80gb-batch8-hidden4096-seq2048-"
			    "vocab131072-fp32-2", 91) == 0 && strstr(at_str(at(b,
			    "run", "spec", "sourceNative"), "externalId", NULL,
			    NULL), "15-33-28") != NULL)
				seed_b = b;
			else if (strstr(nm, "embedding-full-huggingface-nvidia-"
			    "a100-sxm4-80gb-batch8-hidden4096-seq2048-"
			    "vocab1024-") != NULL)
				sib = b;
		}
		CU_ASSERT_PTR_NOT_NULL_FATAL(seed_b);
		CU_ASSERT_PTR_NOT_NULL_FATAL(sib);
		CU_ASSERT_EQUAL(json_object_deep_copy(at(seed_b, "run", NULL,
		    NULL), &copy, NULL), 0);
		json_object_object_del(at(copy, "metadata", NULL, NULL),
		    "annotations");
		CU_ASSERT_EQUAL(liger_run_to_csv(copy, NULL, &one, &err),
		    KI_EINVAL);
		CU_ASSERT_EQUAL(liger_run_to_csv(copy, at(sib, "run", NULL,
		    NULL), &one, &err), KI_OK);
		CU_ASSERT_STRING_EQUAL(one.data, "embedding,huggingface,full,"
		    "speed,ms,V,embedding dimension,131072,7.489376068115234,"
		    "7.484294414520264,7.5203776359558105,\"{\"\"B\"\": 8, "
		    "\"\"T\"\": 2048, \"\"D\"\": 4096, \"\"dtype\"\": "
		    "\"\"torch.float32\"\"}\",NVIDIA A100-SXM4-80GB,"
		    "2024-09-03 15:33:28,0.2.1\r\n");
		json_object_put(copy);
		ki_buf_free(&one);
	}
	ki_buf_free(&csv);
	ki_buf_free(&out);
	ki_buf_free(&err);
}

/* ---- registration ---------------------------------------------------- */

int
test_liger_register(void)
{
	CU_pSuite s = CU_add_suite("liger", NULL, suite_clean);

	if (s == NULL)
		return CU_get_error();
	if (CU_add_test(s, "seed row reproduced", test_seed_row) == NULL ||
	    CU_add_test(s, "whole CSV: 2448 unique bundles",
	    test_whole_csv) == NULL ||
	    CU_add_test(s, "one name, one content",
	    test_names_name_one_content) == NULL ||
	    CU_add_test(s, "memory row", test_memory_row) == NULL ||
	    CU_add_test(s, "memory rows of the CSV",
	    test_memory_rows_in_csv) == NULL ||
	    CU_add_test(s, "parameter mapping", test_param_mapping) == NULL ||
	    CU_add_test(s, "parameter conflict", test_param_conflict) == NULL ||
	    CU_add_test(s, "CSV quoting", test_csv_quoting) == NULL ||
	    CU_add_test(s, "malformed rows", test_malformed_rows) == NULL ||
	    CU_add_test(s, "unknown parts import as written",
	    test_unknown_rows_import) == NULL ||
	    CU_add_test(s, "per-row reports",
	    test_convert_text_reports) == NULL ||
	    CU_add_test(s, "long run names", test_long_names) == NULL ||
	    CU_add_test(s, "Python float repr", test_format_double) == NULL ||
	    CU_add_test(s, "export round trip", test_export_round_trip) == NULL)
		return CU_get_error();
	return CUE_SUCCESS;
}
