/* tests/jcs/jcs_digest.c — reads JSON documents one per line on stdin and
 * writes, for each, one line: "ok <sha256 hex> <canonical form, base64>"
 * when the daemon's parser (api_json_parse, at the depth given as the
 * first argument, 32 by default) takes it and the canonicalizer
 * (api_jcs_serialize) writes it, or "refused <HTTP code or KI_* code>".
 * The differential test (tests/jcs/diff.mjs) compares the digests with an
 * independent RFC 8785 implementation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "api/jcs.h"
#include "api/object.h"
#include "api/status.h"

/* Answers one line (text, n bytes) on stdout. */
static void
answer(const char *text, size_t n, int depth)
{
	struct json_object *o = NULL;
	api_status st;
	ki_buf canon;
	uint8_t d[API_DIGEST_LEN];
	unsigned char *b64 = NULL;
	int rc;

	api_status_init(&st);
	ki_buf_init(&canon);
	if (api_json_parse(text, n, depth, &o, &st) != KI_OK) {
		printf("refused %d\n", st.code);
		goto out;
	}
	rc = api_jcs_serialize(o, &canon);
	if (rc == KI_OK && canon.oom)
		rc = KI_ENOMEM;
	if (rc != KI_OK) {
		printf("refused %d\n", rc);
		goto out;
	}
	if (api_sha256(canon.data, canon.len, d) != KI_OK) {
		printf("refused sha256\n");
		goto out;
	}
	b64 = malloc(4 * (canon.len / 3 + 1) + 1);
	if (b64 == NULL) {
		printf("refused memory\n");
		goto out;
	}
	EVP_EncodeBlock(b64, (const unsigned char *)canon.data, (int)canon.len);
	printf("ok ");
	for (size_t i = 0; i < API_DIGEST_LEN; i++)
		printf("%02x", d[i]);
	printf(" %s\n", b64);
out:
	free(b64);
	if (o != NULL)
		json_object_put(o);
	ki_buf_free(&canon);
	api_status_free(&st);
}

int
main(int argc, char **argv)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int depth = argc > 1 ? atoi(argv[1]) : 32;

	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			n--;
		answer(line, (size_t)n, depth);
	}
	free(line);
	return ferror(stdin) ? 1 : 0;
}
