/* api/verifyq.h — what the verification controller's scheduler reads and
 * writes besides claiming and finishing (api/verify.h): the Verifications
 * waiting for a device, with what each asks for, and the statuses it sets
 * when none can measure one, or names the device that measures. */
#ifndef API_VERIFYQ_H
#define API_VERIFYQ_H

#include <stddef.h>
#include <stdint.h>

#include "api/service.h"

#define API_VWAIT_TEXT 128

/* One Verification in phase Pending or Running. */
typedef struct api_vwait {
	char name[254];
	uint64_t rv;                   /* oldest first */
	int running;
	/* The fair queue's key: the run's source (sourceNative.source), or
	 * "" when it has none. */
	char source[API_VWAIT_TEXT];
	/* spec.gpu as written ("" when absent); with "run", want_id is the
	 * run's GPU (table id, "" when unknown). want_id is the table id that
	 * spec.gpu names, "" when the table has no such model. */
	char want[API_VWAIT_TEXT];
	char want_id[64];
} api_vwait;

/* Fills *out (caller frees with free()) with the waiting Verifications,
 * *n of them, in resourceVersion order. Returns 0 or a KI_* code. */
int api_verify_waiting(api_ctx *ctx, api_vwait **out, size_t *n);

/* Ends the Verification name, if it still waits, as Failed / Unverifiable
 * with reason and message (no measurement is made). Returns 0, KI_ENOTFOUND
 * when it no longer waits, or a KI_* code. */
int api_verify_give_up(api_ctx *ctx, const char *name, const char *reason,
	const char *message);

/* Sets status.device {uuid, name, index} on the Running Verification name:
 * the device that measures it (kept when it finishes). */
int api_verify_note_device(api_ctx *ctx, const char *name, const char *uuid,
	const char *model, int index);

#endif
