/* api/threshold.h — Threshold: a label selector, a test (percentage,
 * z-score or IQR over a window of a series' history), a minimum sample and
 * a direction, judged for each run that arrives in a series it covers. */
#ifndef API_THRESHOLD_H
#define API_THRESHOLD_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "api/status.h"
#include "lib/ki.h"
#include "store/store.h"

/* What the judgements so far came to, for /metrics (atomic counters):
 * runs judged by at least one threshold, those found regressed, and
 * those left unjudged for want of history. Counted when judged in a write,
 * whether or not that write commits. */
typedef struct api_threshold_stats {
	uint64_t judged, regressed, insufficient;
} api_threshold_stats;

void api_threshold_stats_get(api_threshold_stats *out);
/* Appends those counters to b in the Prometheus text format. */
void api_threshold_metrics(ki_buf *b);

/* Checks of a Threshold's spec that the schema cannot make: its selector
 * parses, window and minSample agree. Causes go to st under path
 * ("spec"). */
void api_validate_threshold(struct json_object *spec, const char *path,
	api_status *st);

/* Is any Threshold stored? */
int api_threshold_any(store_txn *txn);

/* Judges the arriving run (spec borrowed, refs its nrefs reference
 * digests, name its name) against every stored Threshold whose selector
 * its labels satisfy (meta's labels, borrowed, with the labels the server
 * derives). When one covers it, *extra is a new status object
 * ({"conditions":[Regressed], "thresholds":[…]}; the caller puts it) and,
 * when a test finds it regressed, meta's labels get regression=true.
 * now (seconds since the epoch) dates the condition. Returns KI_OK (with
 * *extra NULL when none covers it) or a KI_* code. */
int api_threshold_judge(store_txn *txn, struct json_object *spec,
	const uint8_t *refs, size_t nrefs, const char *name,
	struct json_object *meta, struct json_object **extra, double now);

/* Copies what a judgement left in a run's status old (borrowed) into kept
 * (borrowed, modified): its thresholds member and Regressed condition
 * (appended to kept's conditions when it has some), so that a re-render
 * of the run keeps them. */
void api_threshold_keep(struct json_object *old, struct json_object *kept);

#endif
