/* tests/fuzz/fuzz.h — what the fuzz targets share: the libFuzzer entry
 * points (declared here so that the targets build with
 * -Wmissing-prototypes), a throw-away store, and the checks every API
 * response must pass. */
#ifndef TESTS_FUZZ_H
#define TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "api/service.h"
#include "store/store.h"

/* Runs one input. Returns 0; a broken property calls fuzz_fail(). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Called once before the first input, where a target defines it. */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Reports a broken property on stderr and aborts, so that libFuzzer (or
 * the replay program) records the input. */
void fuzz_fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* Is tag listed in $FUZZ_KNOWN (comma-separated)? A listed finding is
 * tolerated so that a run can look past it before it is fixed:
 *   utf8    answers whose JSON strings hold invalid UTF-8;
 *   bigint  canonical forms holding an integer literal beyond 64 bits;
 *   natkey  500 "storage engine failure" for a natural key longer than
 *           LMDB's largest key;
 *   scalar  a bare top-level number refused as "unexpected end of input"
 *           when no byte follows it. */
int fuzz_known(const char *tag);

/* Opens a store in a new temporary directory, without sync, removed at
 * exit. Aborts when it cannot. */
store *fuzz_store_open(uint64_t map_size);

/* Stores the seed bundle through ctx (aborts unless it answers 201). */
void fuzz_preload(api_ctx *ctx);

/* A fixed clock, so that answers depend on the input only. */
double fuzz_now(void);

/* Limits small enough for fuzzing, otherwise the defaults' shape. */
extern const ki_limits fuzz_limits;

/* Checks what every answer must satisfy: a code in 100..599 and not 500;
 * a JSON body wherever the Content-Type says JSON; for a code >= 400 a
 * Status whose code equals the HTTP code. what names the call in the
 * report. */
void fuzz_check_resp(const api_resp *r, const char *what);

/* Parses n bytes the server produced as strict JSON (valid UTF-8 too):
 * the tree (caller puts) or NULL. */
struct json_object *fuzz_parse_strict(const char *s, size_t n);

#endif
