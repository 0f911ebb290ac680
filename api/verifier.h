/* api/verifier.h — the Verification controller: a thread that runs the
 * reference-kernel program for each pending Verification, as a child
 * process with a timeout and bounded output. */
#ifndef API_VERIFIER_H
#define API_VERIFIER_H

#include "api/service.h"

typedef struct verifier verifier;

/* Starts the controller. program is the reference program's path, timeout
 * its limit in seconds. */
int verifier_start(verifier **out, api_ctx *api, const char *program,
	int timeout);
/* Wakes the controller (after a commit). */
void verifier_notify(verifier *v);
/* Stops the controller; a child still running is killed. */
void verifier_stop(verifier *v);

#endif
