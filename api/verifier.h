/* api/verifier.h — the Verification controller: runs the reference-kernel
 * program for each pending Verification, as a child process with a timeout
 * and bounded output, one at a time on each of the host's GPUs. */
#ifndef API_VERIFIER_H
#define API_VERIFIER_H

#include "api/service.h"

typedef struct verifier verifier;

/* Starts the controller. program is the reference program's path, timeout
 * its limit in seconds; simulated > 0 has the program present that many
 * simulated devices (KI_REF_SIMULATED_DEVICES), 0 the host's GPUs. */
int verifier_start(verifier **out, api_ctx *api, const char *program,
	int timeout, int simulated);
/* Wakes the controller (after a commit). */
void verifier_notify(verifier *v);
/* Appends the pool's metrics (api_ctx.more_metrics; arg is the verifier)
 * to b. */
void verifier_metrics(void *arg, ki_buf *b);
/* Stops the controller; a child still running is killed. */
void verifier_stop(verifier *v);

#endif
