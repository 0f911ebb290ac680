/* api/series.h — series of runs: what makes two runs comparable, their
 * figures read from stored runs, and the order of a series' history. A
 * series is the runs of one workload, implementation provider, GPU, pass,
 * dtype, metric and protocol; its runs differ by version and time. */
#ifndef API_SERIES_H
#define API_SERIES_H

#include <json-c/json.h>
#include <stddef.h>

#include "api/service.h"
#include "lib/ki.h"
#include "store/store.h"

#define API_SERIES_LABEL 64

/* One run as a point of its series. Every string is owned by the point
 * (freed by api_points_free). */
typedef struct api_point {
	char *name;                     /* the run's metadata.name */
	char *key;                      /* the series key (see api_point_key) */
	char *workload;                 /* the workload's name, or its digest */
	char *x_name, *x_value;         /* the swept parameter, when known */
	char kernel[API_SERIES_LABEL], pass[API_SERIES_LABEL];
	char dtype[API_SERIES_LABEL], provider[API_SERIES_LABEL];
	char gpu[API_SERIES_LABEL], metric[API_SERIES_LABEL];
	char version[API_SERIES_LABEL]; /* the version label's value, or "" */
	char observed[40];              /* spec.observedAt, or "" */
	char workload_digest[API_DIGEST_STRLEN + 1];
	char protocol_digest[API_DIGEST_STRLEN + 1];
	char unit[16];                  /* "ns" or "bytes" … */
	double median, p20, p80;        /* p20/p80 = median when not given */
	double fraction;                /* of the physical floor; < 0 unknown */
	int implausible;                /* plausibility verdict Implausible */
	int lower_better;               /* latency, memory: 1; throughput: 0 */
} api_point;

typedef struct api_points {
	api_point *v;
	size_t n, cap;
} api_points;

void api_points_free(api_points *p);

/* The label that carries a run's version when none is declared. */
#define API_DEFAULT_VERSION_LABEL "liger_version"

/* Reads o (a stored run, borrowed) into p: its labels, figures and series
 * key, the version from the label version_label (NULL: liger_version, then
 * version). Returns KI_OK, KI_ENOTFOUND when the run has no figure of its
 * metric (it belongs to no series), KI_ENOMEM. p is freed on failure. */
int api_point_from_obj(const store_obj *o, const char *version_label,
	api_point *p);
/* The same from a run's parts (borrowed): spec, labels (derived ones
 * included), its status (may be NULL) and name. */
int api_point_from_parts(struct json_object *spec, struct json_object *labels,
	struct json_object *status, const char *name, const char *version_label,
	api_point *p);
void api_point_free(api_point *p);

/* Appends the runs that satisfy the label selector sel (NULL: all) to
 * out, read through txn; runs without figures are skipped. Returns KI_OK,
 * KI_EINVAL (a bad selector: its message in err), KI_ELIMIT when out
 * would pass KI_MAX_SERIES_RUNS, or another KI_* code. */
int api_points_select(store_txn *txn, const char *sel,
	const char *version_label, api_points *out, char *err, size_t errlen);

/* The same, of the runs referencing the workload whose digest is
 * workload ("sha256:…"; NULL: any), read through the reference index. */
int api_points_select_workload(store_txn *txn, const char *sel,
	const char *workload, const char *version_label, api_points *out,
	char *err, size_t errlen);

/* Orders two versions: numeric dot-separated parts compare as numbers
 * ("0.10.0" after "0.9.1"), the rest as text; "" comes first. */
int api_version_cmp(const char *a, const char *b);
/* Orders two points of a series: by version, then by observedAt, then
 * by name. */
int api_point_cmp(const api_point *a, const api_point *b);

/* Writes s as one CSV field (quoted when it holds a comma, a quote or a
 * line break). */
void api_csv_field(ki_buf *out, const char *s);

#endif
