/* cli/http.h — the CLI's HTTP client over libcurl: one keep-alive connection
 * to the server, bearer token, retries of idempotent requests, and line
 * streaming for watches. */
#ifndef CLI_HTTP_H
#define CLI_HTTP_H

#include <stddef.h>

#include "lib/ki.h"

/* The largest response body the CLI keeps (a list page, an object). */
#define CLI_HTTP_MAX_BODY ((size_t)512 << 20)

/* Attempts for one request when the server cannot be reached or answers
 * 502, 503 or 504 (every request the CLI makes is safe to repeat: uploads
 * are idempotent by content). */
#define CLI_HTTP_ATTEMPTS 3

typedef struct cli_http cli_http;

/* Makes a client for base URL server ("http://127.0.0.1:8080", a trailing
 * '/' is dropped) with an optional bearer token (NULL: none). Both strings
 * are copied. Returns 0 and *out (caller frees with cli_http_free()),
 * KI_EINVAL for a token holding CR or LF, or KI_ENOMEM. */
int cli_http_new(const char *server, const char *token, cli_http **out);
void cli_http_free(cli_http *h);

/* The base URL (borrowed, valid while h lives). */
const char *cli_http_server(const cli_http *h);

/* The last transport error ("Couldn't connect to server"…); borrowed,
 * valid until the next request. */
const char *cli_http_error(const cli_http *h);

/* The Accept header of the requests that follow (borrowed, valid while
 * it is set); NULL: application/json. */
void cli_http_set_accept(cli_http *h, const char *accept);

/* Performs one request: method "GET"/"POST"/…, path (with its query) is
 * appended to the base URL, body of len bytes with Content-Type ctype
 * (both may be NULL). The response body is appended to resp, the HTTP
 * status written to *status. Returns 0 when a response arrived, whatever
 * its status; KI_EIO when the server could not be reached after
 * CLI_HTTP_ATTEMPTS (see cli_http_error()); KI_ELIMIT for a body over
 * CLI_HTTP_MAX_BODY; KI_ENOMEM. */
int cli_http_request(cli_http *h, const char *method, const char *path,
	const char *ctype, const char *body, size_t len, ki_buf *resp,
	long *status);

/* Called with each line (without its LF) of a streamed 200 response;
 * returns 0 to go on, anything else to stop. */
typedef int (*cli_line_fn)(void *arg, const char *line, size_t len);

/* GETs path and hands the body line by line to fn while it arrives. A
 * response other than 200 is not streamed: its body goes to resp and its
 * status to *status. Returns 0 when the stream ended (the server closed
 * it, or fn stopped it), KI_EIO when the server could not be reached or
 * the connection broke, KI_ENOMEM. */
int cli_http_stream(cli_http *h, const char *path, cli_line_fn fn,
	void *arg, ki_buf *resp, long *status);

/* Appends s percent-encoded for a URL query value. */
int cli_url_escape(ki_buf *b, const char *s);

#endif
