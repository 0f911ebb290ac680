/* api/verify.h — the Verification controller's steps over the store:
 * claim a pending verification and build the reference program's request,
 * then record what the program measured on the Verification and mirror it
 * onto the run. Launching the program is api/verifier.c's job. */
#ifndef API_VERIFY_H
#define API_VERIFY_H

#include <stddef.h>

#include "api/service.h"

/* Claims the oldest Verification in phase Pending (or, with
 * include_running, one left Running by a previous daemon): marks it Running
 * and fills name and the request JSON. Returns 1 when one was claimed, 0
 * when none waits, or a negative KI_* code. A Verification whose run or
 * workload cannot be found is marked Failed and skipped. */
int api_verify_claim(api_ctx *ctx, int include_running, char *name,
	size_t namelen, ki_buf *request);

/* As api_verify_claim, for the Verification name only (Pending or
 * Running): 1 when claimed, 0 when it no longer waits (or failed at once),
 * or a negative KI_* code. */
int api_verify_claim_named(api_ctx *ctx, const char *name, ki_buf *request);

/* Records the outcome: result (the program's JSON, may be NULL) or the
 * error text, on the Verification (phase Succeeded or Failed, conditions,
 * verdict) and as status.verification on its run. */
int api_verify_finish(api_ctx *ctx, const char *name, const char *result,
	size_t len, const char *error);

#endif
