/* api/table.h — meta.k8s.io/v1 Table rendering for kubectl's server-side
 * printing: columns per kind, human units and Kubernetes-style ages. */
#ifndef API_TABLE_H
#define API_TABLE_H

#include "api/kinds.h"
#include "lib/ki.h"
#include "store/store.h"

enum api_include { API_INCLUDE_NONE, API_INCLUDE_METADATA,
	API_INCLUDE_OBJECT };

/* Appends {"kind":"Table",…,"columnDefinitions":[…],"rows":[ */
void api_table_open(ki_buf *out, const api_kind *k);
/* Appends one row for o (borrowed) after `first` rows already written. */
void api_table_row(ki_buf *out, const api_kind *k, const store_obj *o,
	int include, double now, int first);
/* Appends ],"metadata":{"resourceVersion":…[,"continue":…]}} */
void api_table_close(ki_buf *out, uint64_t rv, const char *cont);

/* Kubernetes' HumanDuration: "45s", "3m20s", "129m", "5h3m", "3d4h", … */
void api_human_duration(double seconds, ki_buf *out);

#endif
