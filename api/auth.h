/* api/auth.h — bearer tokens and roles. A token is a random secret shown
 * once; the store keeps only its SHA-256 and its description (role, an
 * optional sourceNative.source and name prefix it is limited to). */
#ifndef API_AUTH_H
#define API_AUTH_H

#include <stddef.h>

#include "api/status.h"
#include "lib/ki.h"
#include "store/store.h"

enum api_role { API_ROLE_NONE = 0, API_ROLE_READER, API_ROLE_WRITER,
	API_ROLE_ADMIN };

typedef struct api_principal {
	int role;
	int token;             /* authenticated with a token */
	int tokens_exist;      /* the store has at least one token */
	int loopback;
	char id[16];           /* the token's id */
	char source[257];      /* limited to this sourceNative.source, or "" */
	char prefix[254];      /* limited to names with this prefix, or "" */
} api_principal;

/* "reader", "writer", "admin" -> role, or API_ROLE_NONE. */
int api_role_parse(const char *s);
const char *api_role_name(int role);

/* Resolves the Authorization header (may be NULL) of a request. Without a
 * header the principal is anonymous; with no token configured at all,
 * anonymous loopback clients may write. Returns 0, or fills st (401) for a
 * malformed or unknown token. */
int api_authenticate(store *s, const char *authorization, int loopback,
	api_principal *out, api_status *st);

/* May p write at all? Fills st (401/403) when not. */
int api_may_write(const api_principal *p, api_status *st);
/* May p write an object named name, of a run from source (NULL for other
 * kinds)? Fills st (403) when not. */
int api_may_write_object(const api_principal *p, const char *name,
	const char *source, api_status *st);

/* May p change or delete a stored Verification of the run run_name (NULL
 * when it cannot be read)? A token limited to a name prefix created it
 * only if the run's name is under the prefix (its outcome is written onto
 * the run), and it changes or removes one only as it could create it.
 * Fills st (403) when not. */
int api_may_change_verification(const api_principal *p,
	const char *run_name, api_status *st);

/* May p change or delete a stored object of kind (its Kind name, for the
 * message) named name? is_run says it is a BenchmarkRun, source (may be
 * NULL when unknown; source_len bytes, not NUL-terminated) is then its
 * stored sourceNative.source. A token limited to a source changes and
 * deletes only that source's runs, never the objects shared by all runs.
 * Fills st (403) when not. */
int api_may_change_stored(const api_principal *p, const char *kind,
	int is_run, const char *name, const char *source, size_t source_len,
	api_status *st);

/* Why a token's limits (either may be NULL) could never match a run or a
 * name, or NULL when they can: a source holding a control character (the
 * runs' sources hold none), longer than a run's, a prefix holding a
 * character no object name holds or not starting as one does. Static. */
const char *api_token_limits_bad(const char *source, const char *prefix);

/* Creates a token; writes the secret (shown once) into secret and its id
 * into id. Returns 0 or a KI_* code. */
int api_token_create(store *s, int role, const char *source,
	const char *prefix, const char *description, double now,
	char secret[64], char id[16]);
/* Revokes the token whose id is id. KI_ENOTFOUND if none. */
int api_token_revoke(store *s, const char *id);
/* Appends {"items":[{id, role, source, prefix, description, created}]}. */
int api_token_list(store *s, ki_buf *out);

#endif
