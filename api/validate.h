/* api/validate.h — rules that span several fields of a document. */
#ifndef API_VALIDATE_H
#define API_VALIDATE_H

#include <json-c/json.h>

#include "api/status.h"

/* Checks a BenchmarkRun spec (already schema-valid in shape; borrowed) at
 * path (e.g. "spec" or "run.spec"): at least one figure, units fitting
 * their metric, quantiles ordered (min <= p20 <= median <= p80 <= max …),
 * no conflicting duplicates, the primary statistic present, and
 * sourceNative figures consistent with the normalized ones. */
void api_validate_run(struct json_object *spec, const char *path,
	api_status *st);

/* Checks a Workload spec: sweep names one of the parameters. */
void api_validate_workload(struct json_object *spec, const char *path,
	api_status *st);

/* Checks a BenchmarkProtocol spec: a timer or a method is given. */
void api_validate_protocol(struct json_object *spec, const char *path,
	api_status *st);

#endif
