/* api/status.h — Kubernetes Status objects: the one shape of every error. */
#ifndef API_STATUS_H
#define API_STATUS_H

#include <stddef.h>

#include "lib/ki.h"

typedef struct api_cause {
	char *field;
	const char *reason;   /* FieldValueRequired, FieldValueInvalid, … */
	char *message;
} api_cause;

/* A failure being described. code 0 means "no failure yet". Causes may be
 * added before the code is known; api_status_fail() sets it. */
typedef struct api_status {
	int code;
	const char *reason;   /* Invalid, NotFound, AlreadyExists, … */
	char *message;
	const char *detail_kind;
	char *detail_name;
	api_cause *causes;
	size_t ncauses, cap;
	int oom;
} api_status;

#define API_MAX_CAUSES 100

void api_status_init(api_status *st);
void api_status_free(api_status *st);
/* Sets the code, reason and message (printf-style; replaces any earlier). */
void api_status_fail(api_status *st, int code, const char *reason,
	const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Adds one cause; field is a JSON path such as spec.timing.latencyNs. */
void api_status_cause(api_status *st, const char *reason, const char *field,
	const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void api_status_details(api_status *st, const char *kind, const char *name);
/* Appends the Status JSON to out. A status without a message gets one
 * built from its causes. */
void api_status_render(const api_status *st, ki_buf *out);
/* The one mapping from a KI_* code to a Status (500/503/507/409/404…). */
void api_status_from_rc(api_status *st, int rc, const char *what);

#endif
