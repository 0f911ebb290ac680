/* api/schema.c — spec schemas of the seven kinds and the schema walker. */
#include "api/schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/jcs.h"

#define DEFAULT_MAX_STRING 4096
#define DEFAULT_MAX_ITEMS 1000
#define DEFAULT_MAX_KEYS 256

/* ---- enumerations ---- */

static const char *const statistics[] = { "median", "mean", "min", "max",
	"p5", "p10", "p20", "p25", "p75", "p80", "p90", "p95", "p99", "stddev",
	NULL };
static const char *const metrics[] = { "latency", "peak_memory",
	"bandwidth", "throughput", NULL };
static const char *const units[] = { "ns", "us", "ms", "s", "bytes", "KiB",
	"MiB", "GiB", "GB/s", "TFLOP/s", "items/s", NULL };
static const char *const run_states[] = { "passed", "failed", "error",
	"skipped", NULL };
static const char *const timers[] = { "cuda_events", "cupti", "wall_clock",
	"nsys", "ncu", "hip_events", "rocprof", NULL };
static const char *const vendors[] = { "nvidia", "amd", "intel", "apple",
	"google", "aws", "other", NULL };
static const char *const passes[] = { "forward", "backward", "full",
	"unknown", NULL };
static const char *const dtypes[] = { "float64", "float32", "tfloat32",
	"float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int64",
	"int32", "int16", "int8", "uint8", "bool", "mixed", "unknown", NULL };

/* ---- BenchmarkRun ---- */

static const api_field number_value[] = {
	{ "value", API_T_NUMBER, 0, NULL, NULL, 0, NULL },
};
static const api_field string_value[] = {
	{ "value", API_T_STRING, 0, NULL, NULL, 0, NULL },
};
static const api_field scalar_value[] = {
	{ "value", API_T_SCALAR, 0, NULL, NULL, 0, NULL },
};

static const api_field latency_ns[] = {
	{ "median", API_T_NUMBER, API_F_REQUIRED | API_F_NONNEG, NULL, NULL, 0,
	  "Median latency in nanoseconds." },
	{ "p20", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0,
	  "20th percentile in nanoseconds." },
	{ "p80", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0,
	  "80th percentile in nanoseconds." },
	{ "mean", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0, "Mean, ns." },
	{ "min", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0, "Minimum, ns." },
	{ "max", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0, "Maximum, ns." },
	{ "stddev", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0,
	  "Standard deviation, ns." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

static const api_field timing[] = {
	{ "latencyNs", API_T_OBJECT, API_F_REQUIRED, NULL, latency_ns, 0,
	  "The latency figures, normalized to nanoseconds." },
	{ "primaryStatistic", API_T_STRING, API_F_REQUIRED, statistics, NULL, 0,
	  "Which statistic of latencyNs is the headline figure." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

static const api_field measurement[] = {
	{ "metric", API_T_STRING, API_F_REQUIRED, metrics, NULL, 0,
	  "What was measured." },
	{ "statistic", API_T_STRING, API_F_REQUIRED, statistics, NULL, 0,
	  "Which statistic of the repetitions this value is." },
	{ "unit", API_T_STRING, API_F_REQUIRED, units, NULL, 0,
	  "The unit of value." },
	{ "value", API_T_NUMBER, API_F_REQUIRED | API_F_NONNEG, NULL, NULL, 0,
	  "The figure: finite and non-negative." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};
static const api_field measurement_item[] = {
	{ "item", API_T_OBJECT, 0, NULL, measurement, 0, NULL },
};

static const api_field source_native[] = {
	/* The natural key (source, a separator, externalId, after a kind byte)
	 * keys an LMDB table: at most 511 bytes. The separator is U+001F, so
	 * neither half may hold a control character: then the key is read
	 * back one way only, and no two (source, externalId) pairs share it. */
	{ "source", API_T_STRING, API_F_REQUIRED | API_F_NONEMPTY | API_F_NOCTL,
	  NULL, NULL, 128, "The harness that produced the row (the natural "
	  "key's first half)." },
	{ "externalId", API_T_STRING, API_F_REQUIRED | API_F_NONEMPTY |
	  API_F_NOCTL, NULL, NULL, 380, "The row's id in that source (the "
	  "natural key's second half)." },
	{ "benchmark", API_T_STRING, 0, NULL, NULL, 256,
	  "The source's benchmark name, e.g. embedding/full." },
	{ "metrics", API_T_MAP, 0, NULL, number_value, 0,
	  "The source's own figures, as it reported them (ms_50, mb_50, …)." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

const api_field api_schema_run[] = {
	{ "status", API_T_STRING, API_F_REQUIRED, run_states, NULL, 0,
	  "Whether the benchmark ran to completion." },
	{ "observedAt", API_T_STRING, API_F_REQUIRED | API_F_TIME, NULL, NULL, 64,
	  "When it was measured (RFC 3339)." },
	{ "timing", API_T_OBJECT, 0, NULL, timing, 0,
	  "Latency, normalized to nanoseconds." },
	{ "measurements", API_T_ARRAY, 0, NULL, measurement_item, 0,
	  "Every figure with its metric, statistic and unit." },
	{ "sourceNative", API_T_OBJECT, 0, NULL, source_native, 0,
	  "The row as its source recorded it." },
	{ "protocolDigest", API_T_STRING, API_F_REQUIRED | API_F_DIGEST, NULL,
	  NULL, 0, "Digest of the BenchmarkProtocol: how it was measured." },
	{ "workloadDigest", API_T_STRING, API_F_REQUIRED | API_F_DIGEST, NULL,
	  NULL, 0, "Digest of the Workload: what was computed." },
	{ "environmentDigest", API_T_STRING, API_F_REQUIRED | API_F_DIGEST, NULL,
	  NULL, 0, "Digest of the ExecutionEnvironment: where." },
	{ "implementationDigest", API_T_STRING, API_F_REQUIRED | API_F_DIGEST,
	  NULL, NULL, 0, "Digest of the Implementation: who computed it." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

/* ---- BenchmarkProtocol ---- */

static const api_field quantile_item[] = {
	{ "item", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0, NULL },
};

static const api_field protocol_measurement[] = {
	{ "timer", API_T_STRING, 0, timers, NULL, 0,
	  "The clock: CUDA events, CUPTI, wall clock, … (latency protocols; "
	  "a protocol needs a timer or a method)." },
	{ "method", API_T_STRING, 0, NULL, NULL, 256,
	  "How a non-time figure was read, e.g. "
	  "torch.cuda.max_memory_allocated (memory protocols)." },
	{ "primaryStatistic", API_T_STRING, API_F_REQUIRED, statistics, NULL, 0,
	  "The statistic reported as the headline figure." },
	{ "warmupMs", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0,
	  "Warm-up time before measuring, milliseconds." },
	{ "repetitionMs", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0,
	  "Time spent on measured repetitions, milliseconds." },
	{ "repetitions", API_T_INTEGER, API_F_NONNEG, NULL, NULL, 0,
	  "Number of measured repetitions." },
	{ "l2Flush", API_T_BOOL, 0, NULL, NULL, 0,
	  "Whether the L2 cache is flushed between repetitions." },
	{ "quantiles", API_T_ARRAY, 0, NULL, quantile_item, 16,
	  "Quantiles recorded, as fractions (0.5, 0.2, 0.8)." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

static const api_field harness[] = {
	{ "name", API_T_STRING, API_F_REQUIRED | API_F_NONEMPTY, NULL, NULL, 256,
	  "The harness's name." },
	{ "repository", API_T_STRING, 0, NULL, NULL, 512, "Where it lives." },
	{ "version", API_T_STRING, 0, NULL, NULL, 128, "Its version." },
	{ "command", API_T_STRING, 0, NULL, NULL, 0, "How it was invoked." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

static const api_field comparability[] = {
	{ "family", API_T_STRING, 0, NULL, NULL, 128,
	  "Protocols of one family give comparable numbers." },
	{ "notes", API_T_STRING, 0, NULL, NULL, 0,
	  "What is timed and what the figures can be compared with." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

const api_field api_schema_protocol[] = {
	{ "measurement", API_T_OBJECT, API_F_REQUIRED, NULL,
	  protocol_measurement, 0, "How the clock was read." },
	{ "harness", API_T_OBJECT, 0, NULL, harness, 0,
	  "The program that ran the benchmark." },
	{ "comparability", API_T_OBJECT, 0, NULL, comparability, 0,
	  "Which results may be compared." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

/* ---- ExecutionEnvironment ---- */

static const api_field hardware[] = {
	{ "vendor", API_T_STRING, API_F_REQUIRED, vendors, NULL, 0,
	  "The accelerator's vendor." },
	{ "product", API_T_STRING, API_F_REQUIRED | API_F_NONEMPTY, NULL, NULL,
	  128, "The product name, e.g. NVIDIA A100." },
	{ "formFactor", API_T_STRING, 0, NULL, NULL, 64,
	  "Form factor and memory, e.g. SXM4-80GB." },
	{ "architecture", API_T_STRING, 0, NULL, NULL, 32,
	  "Compute architecture, e.g. sm_80." },
	{ "count", API_T_INTEGER, API_F_NONNEG, NULL, NULL, 0,
	  "How many accelerators the run used." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

const api_field api_schema_environment[] = {
	{ "hardware", API_T_OBJECT, API_F_REQUIRED, NULL, hardware, 0,
	  "The accelerator." },
	{ "software", API_T_MAP, 0, NULL, string_value, 0,
	  "Software versions: cuda, driver, torch, triton, …" },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

/* ---- Workload ---- */

const api_field api_schema_workload[] = {
	{ "kernel", API_T_STRING, API_F_REQUIRED | API_F_IDENT, NULL, NULL, 128,
	  "The kernel family, e.g. embedding, rms_norm." },
	{ "pass", API_T_STRING, API_F_REQUIRED, passes, NULL, 0,
	  "Which pass was timed." },
	{ "dtype", API_T_STRING, API_F_REQUIRED, dtypes, NULL, 0,
	  "The element type." },
	{ "parameters", API_T_MAP, API_F_REQUIRED, NULL, scalar_value, 0,
	  "Shape and configuration parameters (batch, seq, hidden, vocab, …)." },
	{ "sweep", API_T_STRING, 0, NULL, NULL, 128,
	  "The parameter swept across a benchmark's runs." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

/* ---- Implementation ---- */

const api_field api_schema_implementation[] = {
	{ "provider", API_T_STRING, API_F_REQUIRED | API_F_IDENT, NULL, NULL, 128,
	  "Who provides the kernel: liger, huggingface, torch_compile, …" },
	{ "framework", API_T_STRING, 0, NULL, NULL, 64,
	  "The framework it runs in, e.g. torch." },
	{ "version", API_T_STRING, 0, NULL, NULL, 128, "The provider's version." },
	{ "repository", API_T_STRING, 0, NULL, NULL, 512, "Where its code is." },
	{ "commit", API_T_STRING, 0, NULL, NULL, 64, "The code's commit." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

/* ---- Verification ---- */

const api_field api_schema_verification[] = {
	{ "runName", API_T_STRING, API_F_REQUIRED | API_F_DNSNAME, NULL, NULL,
	  253, "The BenchmarkRun to re-measure." },
	{ "gpu", API_T_STRING, API_F_NONEMPTY | API_F_NOCTL, NULL, NULL, 127,
	  "The GPU model to measure on (e.g. H100, A100-SXM4-80GB), or \"run\" "
	  "for the run's own; absent: any GPU of the host. It waits for a free "
	  "one, and ends Unverifiable when the host has none." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

/* ---- Threshold ---- */

static const char *const threshold_tests[] = { "percentage", "zscore", "iqr",
	NULL };
static const char *const threshold_directions[] = { "auto", "increase",
	"decrease", NULL };

const api_field api_schema_threshold[] = {
	{ "selector", API_T_STRING, 0, NULL, NULL, 1024,
	  "A label selector of the runs it judges (empty: every run), e.g. "
	  "provider=liger,gpu=h100-80gb-hbm3." },
	{ "test", API_T_STRING, API_F_REQUIRED, threshold_tests, NULL, 0,
	  "percentage: the run's median against the median of the window; "
	  "zscore: standard deviations from the window's mean; iqr: beyond "
	  "the window's quartiles by limit interquartile ranges." },
	{ "limit", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0,
	  "How far is too far: percent (default 5), standard deviations "
	  "(default 3) or IQR multiples (default 1.5)." },
	{ "window", API_T_INTEGER, 0, NULL, NULL, 0,
	  "How many of the series' earlier runs (by version, then time) the "
	  "test reads: 1 to 1000, default 10." },
	{ "minSample", API_T_INTEGER, 0, NULL, NULL, 0,
	  "Fewer earlier runs than this leave the run unjudged "
	  "(Regressed=Unknown, InsufficientHistory): default 1 for "
	  "percentage, 5 for zscore and iqr." },
	{ "direction", API_T_STRING, 0, threshold_directions, NULL, 0,
	  "Which way is worse: auto (by the metric: a rise of latency or "
	  "memory, a fall of bandwidth or throughput), increase or "
	  "decrease." },
	{ "versionLabel", API_T_STRING, 0, NULL, NULL, 317,
	  "The label that orders a series by version (default liger_version, "
	  "then version)." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

/* ---- Comparison (answered, not stored: api/compare.c) ---- */

static const api_field comparison_side[] = {
	{ "labelSelector", API_T_STRING, API_F_REQUIRED, NULL, NULL, 1024,
	  "The runs of this side, e.g. liger_version=0.2.1." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

const api_field api_schema_comparison[] = {
	{ "baseline", API_T_OBJECT, API_F_REQUIRED, NULL, comparison_side, 0,
	  "The runs compared against." },
	{ "candidate", API_T_OBJECT, API_F_REQUIRED, NULL, comparison_side, 0,
	  "The runs judged." },
	{ "labelSelector", API_T_STRING, 0, NULL, NULL, 1024,
	  "Narrows both sides, e.g. gpu=h100-sxm5-80gb." },
	{ "thresholdPercent", API_T_NUMBER, API_F_NONNEG, NULL, NULL, 0,
	  "A pair worse by more than this is a regression, better by more an "
	  "improvement (default 5)." },
	{ "versionLabel", API_T_STRING, 0, NULL, NULL, 317,
	  "The label that orders a series by version (default liger_version, "
	  "then version)." },
	{ "includeImplausible", API_T_BOOL, 0, NULL, NULL, 0,
	  "Runs flagged Implausible take part (default false)." },
	{ NULL, 0, 0, NULL, NULL, 0, NULL },
};

/* ---- syntax checks ---- */

static int
is_alnum_lower(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int
is_alnum(int c)
{
	return is_alnum_lower(c) || (c >= 'A' && c <= 'Z');
}

int
api_is_dns_subdomain(const char *s, size_t n)
{
	size_t i, start = 0;

	if (n == 0 || n > 253)
		return 0;
	for (i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			/* each label: [a-z0-9]([-a-z0-9]*[a-z0-9])? */
			if (i == start || !is_alnum_lower((unsigned char)s[start]) ||
			    !is_alnum_lower((unsigned char)s[i - 1]))
				return 0;
			start = i + 1;
		} else if (!is_alnum_lower((unsigned char)s[i]) && s[i] != '-') {
			return 0;
		}
	}
	return 1;
}

/* [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63 characters. */
static int
is_qualified_part(const char *s, size_t n)
{
	if (n == 0 || n > 63)
		return 0;
	if (!is_alnum((unsigned char)s[0]) || !is_alnum((unsigned char)s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
			return 0;
	}
	return 1;
}

int
api_is_label_key(const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n);

	if (slash == NULL)
		return is_qualified_part(s, n);
	return api_is_dns_subdomain(s, (size_t)(slash - s)) &&
	    is_qualified_part(slash + 1, n - (size_t)(slash - s) - 1);
}

int
api_is_label_value(const char *s, size_t n)
{
	return n == 0 || is_qualified_part(s, n);
}

static int
is_ident(const char *s, size_t n)
{
	if (n == 0 || !is_alnum_lower((unsigned char)s[0]) ||
	    !is_alnum_lower((unsigned char)s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (!is_alnum_lower(c) && c != '_' && c != '-' && c != '.')
			return 0;
	}
	return 1;
}

static int
digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 1;
}

static int
is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int
api_parse_time(const char *s, double *secs)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31,
		30, 31 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	double frac = 0;
	size_t n = strlen(s), i = 19;
	long long days;

	if (n < 20 || s[4] != '-' || s[7] != '-' ||
	    (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':')
		return 0;
	if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
	    !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) ||
	    !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &sec))
		return 0;
	if (mo < 1 || mo > 12 || d < 1 ||
	    d > mdays[mo - 1] + (mo == 2 && is_leap(y)) || h > 23 || mi > 59 ||
	    sec > 60)
		return 0;
	if (s[i] == '.') {
		double scale = 0.1;

		i++;
		if (i >= n || s[i] < '0' || s[i] > '9')
			return 0;
		while (i < n && s[i] >= '0' && s[i] <= '9') {
			frac += (s[i] - '0') * scale;
			scale /= 10;
			i++;
		}
	}
	if (i < n && (s[i] == 'Z' || s[i] == 'z') && i + 1 == n) {
		sign = 0;
	} else if (i + 6 == n && (s[i] == '+' || s[i] == '-') &&
	    s[i + 3] == ':' && digits(s + i + 1, 2, &oh) &&
	    digits(s + i + 4, 2, &om) && oh <= 23 && om <= 59) {
		sign = s[i] == '+' ? 1 : -1;
	} else {
		return 0;
	}
	/* Days from the civil date (H. Hinnant's algorithm). */
	{
		int yy = y - (mo <= 2);
		int era = (yy >= 0 ? yy : yy - 399) / 400;
		int yoe = yy - era * 400;
		int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
		int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

		days = (long long)era * 146097 + doe - 719468;
	}
	*secs = (double)days * 86400 + h * 3600 + mi * 60 + sec + frac -
	    sign * (oh * 3600 + om * 60);
	return 1;
}

int
api_json_number(struct json_object *v, double *out)
{
	double d;

	switch (json_object_get_type(v)) {
	case json_type_int:
		d = (double)json_object_get_int64(v);
		if (d > 9.2e18)
			d = (double)json_object_get_uint64(v);
		break;
	case json_type_double:
		d = json_object_get_double(v);
		break;
	default:
		return 0;
	}
	if (!isfinite(d))
		return 0;
	*out = d;
	return 1;
}

/* Numbers in [2^63, 10^21) in magnitude are written by RFC 8785 as integer
 * literals that json-c (int64/uint64) cannot read back exactly. */
static int
exact_magnitude(double d)
{
	return fabs(d) < 9223372036854775808.0 || fabs(d) >= 1e21;
}

/* Is v, when json-c holds it as an integer, the double RFC 8785 reads it
 * as? Above 2^53 most integers are not: 9007199254740993 would be stored,
 * hashed and served as 9007199254740992, changed in silence. */
static int
int_exact(struct json_object *v)
{
	int64_t i;
	uint64_t u;
	double d;

	if (json_object_get_type(v) != json_type_int)
		return 1;
	i = json_object_get_int64(v);
	if (i < 0) {
		d = (double)i;
		return i >= -9007199254740992LL || (int64_t)d == i;
	}
	u = json_object_get_uint64(v);
	if (u <= 9007199254740992ULL)
		return 1;
	d = (double)u;
	return d < 18446744073709551616.0 && (uint64_t)d == u;
}

/* ---- the walker ---- */

void
api_unknown_free(api_unknown *u)
{
	for (size_t i = 0; i < u->n; i++)
		free(u->paths[i]);
	free(u->paths);
	memset(u, 0, sizeof(*u));
}

static void
unknown_add(api_unknown *u, const char *path)
{
	char *p;

	if (u == NULL || u->n >= API_MAX_CAUSES)
		return;
	if (u->n == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 8;
		char **n = realloc(u->paths, cap * sizeof(*n));

		if (n == NULL)
			return;
		u->paths = n;
		u->cap = cap;
	}
	if ((p = strdup(path)) != NULL)
		u->paths[u->n++] = p;
}

/* A short rendering of a bad value for a message: JSON, at most 64 bytes. */
static void
show_value(ki_buf *out, struct json_object *v)
{
	const char *s = json_object_to_json_string_ext(v,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);

	if (n > 64) {
		ki_buf_append(out, s, 61);
		ki_buf_puts(out, "...");
	} else {
		ki_buf_append(out, s, n);
	}
}

static void
invalid(api_status *st, const char *path, struct json_object *v,
	const char *why)
{
	ki_buf b;

	ki_buf_init(&b);
	show_value(&b, v);
	api_status_cause(st, "FieldValueInvalid", path, "Invalid value: %s: %s",
	    b.data ? b.data : "", why);
	ki_buf_free(&b);
}

static void walk(struct json_object *v, const api_field *f, ki_buf *path,
	api_status *st, api_unknown *unk);

static void
walk_object(struct json_object *v, const api_field *fields, ki_buf *path,
	api_status *st, api_unknown *unk)
{
	size_t base = path->len, found = 0;
	const char *drop[64];
	size_t ndrop = 0;

	for (const api_field *f = fields; f->name != NULL; f++) {
		struct json_object *m;

		if (base)
			ki_buf_putc(path, '.');
		ki_buf_puts(path, f->name);
		if (!json_object_object_get_ex(v, f->name, &m)) {
			if (f->flags & API_F_REQUIRED)
				api_status_cause(st, "FieldValueRequired",
				    path->data, "Required value");
		} else {
			found++;
			if (m == NULL && (f->flags & API_F_REQUIRED))
				api_status_cause(st, "FieldValueRequired",
				    path->data, "Required value: must not be null");
			else if (m == NULL)
				invalid(st, path->data, m, "must not be null");
			else
				walk(m, f, path, st, unk);
		}
		path->len = base;
		if (path->data)
			path->data[base] = '\0';
	}
	/* Keys are distinct: when every member was a field, none is
	 * unknown. */
	if (found == (size_t)json_object_object_length(v))
		return;
	json_object_object_foreach(v, key, val) {
		const api_field *f;

		(void)val;
		for (f = fields; f->name != NULL; f++) {
			if (strcmp(f->name, key) == 0)
				break;
		}
		if (f->name != NULL)
			continue;
		if (base)
			ki_buf_putc(path, '.');
		ki_buf_puts(path, key);
		unknown_add(unk, path->data);
		path->len = base;
		if (path->data)
			path->data[base] = '\0';
		if (ndrop < sizeof(drop) / sizeof(drop[0]))
			drop[ndrop++] = key;
		else if (ndrop++ == sizeof(drop) / sizeof(drop[0]))
			api_status_cause(st, "FieldValueTooMany",
			    base ? path->data : "<root>",
			    "Too many unknown fields: at most %zu may be dropped",
			    sizeof(drop) / sizeof(drop[0]));
	}
	/* Unknown fields are pruned, as kube-apiserver prunes them: what is
	 * stored, and digested, is what the schema knows. */
	for (size_t i = 0; i < ndrop && i < sizeof(drop) / sizeof(drop[0]); i++)
		json_object_object_del(v, drop[i]);
}

static void
walk(struct json_object *v, const api_field *f, ki_buf *path, api_status *st,
	api_unknown *unk)
{
	enum json_type t = json_object_get_type(v);
	size_t max = f->max_len;
	double d;

	switch (f->type) {
	case API_T_OBJECT:
		if (t != json_type_object) {
			invalid(st, path->data, v, "must be of type object");
			return;
		}
		walk_object(v, f->fields, path, st, unk);
		return;
	case API_T_MAP: {
		size_t base = path->len, n = 0;

		if (t != json_type_object) {
			invalid(st, path->data, v, "must be of type object");
			return;
		}
		max = max ? max : DEFAULT_MAX_KEYS;
		json_object_object_foreach(v, key, val) {
			if (++n > max) {
				api_status_cause(st, "FieldValueTooMany", path->data,
				    "Too many: must have at most %zu entries", max);
				break;
			}
			ki_buf_putc(path, '.');
			ki_buf_puts(path, key);
			if (*key == '\0' || strlen(key) > 256)
				api_status_cause(st, "FieldValueInvalid", path->data,
				    "Invalid key: must be 1 to 256 characters");
			else if (val == NULL)
				invalid(st, path->data, val, "must not be null");
			else
				walk(val, &f->fields[0], path, st, unk);
			path->len = base;
			path->data[base] = '\0';
		}
		if (n == 0 && (f->flags & API_F_NONEMPTY))
			api_status_cause(st, "FieldValueRequired", path->data,
			    "Required value: must have at least one entry");
		return;
	}
	case API_T_ARRAY: {
		size_t base = path->len, n;

		if (t != json_type_array) {
			invalid(st, path->data, v, "must be of type array");
			return;
		}
		n = json_object_array_length(v);
		max = max ? max : DEFAULT_MAX_ITEMS;
		if (n > max) {
			api_status_cause(st, "FieldValueTooMany", path->data,
			    "Too many: %zu: must have at most %zu items", n, max);
			return;
		}
		if (n == 0 && (f->flags & API_F_NONEMPTY))
			api_status_cause(st, "FieldValueRequired", path->data,
			    "Required value: must have at least one item");
		for (size_t i = 0; i < n; i++) {
			struct json_object *item = json_object_array_get_idx(v, i);

			ki_buf_printf(path, "[%zu]", i);
			if (item == NULL)
				invalid(st, path->data, item, "must not be null");
			else
				walk(item, &f->fields[0], path, st, unk);
			path->len = base;
			path->data[base] = '\0';
		}
		return;
	}
	case API_T_SCALAR:
		if (t == json_type_string || t == json_type_boolean)
			return;
		if ((t == json_type_int || t == json_type_double) &&
		    api_json_number(v, &d) && exact_magnitude(d) && int_exact(v))
			return;
		invalid(st, path->data, v,
		    "must be a string, a finite number or a boolean");
		return;
	case API_T_BOOL:
		if (t != json_type_boolean)
			invalid(st, path->data, v, "must be of type boolean");
		return;
	case API_T_INTEGER:
	case API_T_NUMBER:
		if (t != json_type_int && t != json_type_double) {
			invalid(st, path->data, v, f->type == API_T_INTEGER ?
			    "must be of type integer" : "must be of type number");
			return;
		}
		if (!api_json_number(v, &d)) {
			invalid(st, path->data, v, "must be a finite number");
			return;
		}
		if (!exact_magnitude(d)) {
			invalid(st, path->data, v, "must be below 2^63 in magnitude "
			    "(RFC 8785 writes larger integers in full, and they would "
			    "not read back exactly)");
			return;
		}
		if (!int_exact(v)) {
			invalid(st, path->data, v, "must be an integer that a double "
			    "holds exactly (every one up to 2^53 is): RFC 8785 reads "
			    "numbers as doubles, and would change this one");
			return;
		}
		if (f->type == API_T_INTEGER && d != floor(d)) {
			invalid(st, path->data, v, "must be of type integer");
			return;
		}
		if ((f->flags & API_F_NONNEG) && d < 0)
			invalid(st, path->data, v,
			    "must be greater than or equal to 0");
		return;
	case API_T_STRING: {
		const char *s;
		size_t n;
		uint8_t dg[API_DIGEST_LEN];
		double secs;

		if (t != json_type_string) {
			invalid(st, path->data, v, "must be of type string");
			return;
		}
		s = json_object_get_string(v);
		n = (size_t)json_object_get_string_len(v);
		max = max ? max : DEFAULT_MAX_STRING;
		if (n > max) {
			api_status_cause(st, "FieldValueTooLong", path->data,
			    "Too long: may not be more than %zu bytes", max);
			return;
		}
		if (memchr(s, '\0', n) != NULL) {
			invalid(st, path->data, v, "must not contain NUL");
			return;
		}
		if ((f->flags & API_F_NONEMPTY) && n == 0) {
			api_status_cause(st, "FieldValueRequired", path->data,
			    "Required value: must not be empty");
			return;
		}
		if (f->enums != NULL) {
			const char *const *e;
			ki_buf b;

			for (e = f->enums; *e != NULL; e++) {
				if (strcmp(*e, s) == 0)
					return;
			}
			ki_buf_init(&b);
			show_value(&b, v);
			ki_buf_puts(&b, ": supported values: ");
			for (e = f->enums; *e != NULL; e++)
				ki_buf_printf(&b, "%s\"%s\"", e == f->enums ? "" : ", ",
				    *e);
			api_status_cause(st, "FieldValueNotSupported", path->data,
			    "Unsupported value: %s", b.data ? b.data : "");
			ki_buf_free(&b);
			return;
		}
		if ((f->flags & API_F_DIGEST) &&
		    api_digest_parse(s, n, dg) != KI_OK)
			invalid(st, path->data, v, "must be a digest: \"sha256:\" "
			    "followed by 64 lowercase hexadecimal digits");
		if ((f->flags & API_F_TIME) && !api_parse_time(s, &secs))
			invalid(st, path->data, v, "must be an RFC 3339 date-time "
			    "such as 2024-09-03T15:33:28.000Z");
		if ((f->flags & API_F_DNSNAME) && !api_is_dns_subdomain(s, n))
			invalid(st, path->data, v, "a lowercase RFC 1123 subdomain "
			    "must consist of lower case alphanumeric characters, "
			    "'-' or '.', and must start and end with an alphanumeric "
			    "character");
		if (f->flags & API_F_NOCTL) {
			for (size_t i = 0; i < n; i++) {
				if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
					invalid(st, path->data, v, "must not contain "
					    "control characters");
					return;
				}
			}
		}
		if ((f->flags & API_F_IDENT) && !is_ident(s, n))
			invalid(st, path->data, v, "must consist of lower case "
			    "alphanumeric characters, '_', '-' or '.', and start and "
			    "end with an alphanumeric character");
		return;
	}
	default:
		return;
	}
}

void
api_schema_validate_object(struct json_object *value, const api_field *fields,
	const char *path, api_status *st, api_unknown *unk)
{
	ki_buf p;

	ki_buf_init(&p);
	ki_buf_puts(&p, path);
	walk_object(value, fields, &p, st, unk);
	if (p.oom)
		st->oom = 1;
	ki_buf_free(&p);
}
