/* api/kinds.h — the resource kinds of kernelindex.dev/v1alpha1. */
#ifndef API_KINDS_H
#define API_KINDS_H

#include <stddef.h>

#include "api/version.h"

enum api_kind_id {
	API_RUN = 1,
	API_PROTOCOL,
	API_ENVIRONMENT,
	API_WORKLOAD,
	API_IMPLEMENTATION,
	API_VERIFICATION,
	API_THRESHOLD,
	API_NKINDS = API_THRESHOLD
};

struct api_field;

typedef struct api_kind {
	int id;
	const char *kind;        /* BenchmarkRun */
	const char *plural;      /* benchmarkruns */
	const char *singular;    /* benchmarkrun */
	const char *short_name;  /* kbr */
	const char *list_kind;   /* BenchmarkRunList */
	const char *bundle_part; /* "run": the member name in a bundle */
	const char *ref_field;   /* "protocolDigest": how a run points at it */
	/* 1: objects are their content (same spec = same object, whatever the
	 * name); 0: objects are their name (Verification). */
	int content_identity;
	const struct api_field *spec;
	const char *description;
} api_kind;

/* Looks kinds up; each returns NULL when there is no such kind. */
const api_kind *api_kind_by_id(int id);
const api_kind *api_kind_by_plural(const char *s, size_t n);
const api_kind *api_kind_by_kind(const char *s);
const api_kind *api_kind_by_part(const char *s);

#endif
