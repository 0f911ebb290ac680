/* api/compare.h — answers computed from the stored runs and not stored
 * themselves: a Comparison of two label selectors paired by series, the
 * leaderboard of providers per GPU, and the runs as CSV. */
#ifndef API_COMPARE_H
#define API_COMPARE_H

#include <stddef.h>

#include "api/service.h"

/* What a Comparison asks (every string borrowed). */
typedef struct api_compare_spec {
	const char *baseline;       /* label selector of the baseline runs */
	const char *candidate;      /* label selector of the candidate runs */
	const char *common;         /* ANDed with both; NULL: none */
	const char *version_label;  /* NULL: liger_version, then version */
	double threshold_pct;       /* a change beyond it counts (5 = 5%) */
	int include_implausible;    /* runs flagged Implausible take part */
} api_compare_spec;

#define API_COMPARE_DEFAULT_THRESHOLD 5.0

/* POST .../comparisons: body is a Comparison (kernelindex.dev/v1alpha1)
 * whose spec holds baseline.labelSelector, candidate.labelSelector and
 * optionally labelSelector, thresholdPercent, versionLabel and
 * includeImplausible. Answers 201 with the Comparison and its status, or
 * as CSV when csv is set; nothing is stored (as SelfSubjectAccessReview).
 * Bad input: 400/422 with the field. */
void api_compare_post(api_ctx *ctx, const char *body, size_t len, int csv,
	api_resp *r);

/* GET .../comparisons?baseline=…&candidate=…: the same answer (200) from
 * query parameters, s filled by the caller; field names the parameter
 * each selector came from, for errors. */
void api_compare_get(api_ctx *ctx, const api_compare_spec *s, int csv,
	api_resp *r);

/* GET .../leaderboard[?gpu=…&labelSelector=…&includeImplausible=true]:
 * for each GPU, kernel, pass, dtype, size (workload), metric and protocol,
 * each provider's newest run ranked, the winner's margin over the runner
 * up and its fraction of the physical floor. gpu and sel may be NULL. */
void api_leaderboard(api_ctx *ctx, const char *gpu, const char *sel,
	const char *version_label, int include_implausible, int csv,
	api_resp *r);

/* GET .../series[?labelSelector=…&includeImplausible=true]: the selected
 * runs grouped by series, each series' points in version order (how a
 * kernel changed across releases). */
void api_series(api_ctx *ctx, const char *sel, const char *version_label,
	int include_implausible, api_resp *r);

/* GET .../benchmarkruns or .../series with Accept: text/csv (or
 * format=csv): one line a run selected by sel (may be NULL) with its
 * series and figures; implausible runs only when include_implausible
 * (the series' includeImplausible; a list of runs names them all). */
void api_runs_csv(api_ctx *ctx, const char *sel, const char *version_label,
	int include_implausible, api_resp *r);

#endif
