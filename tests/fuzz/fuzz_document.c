/* tests/fuzz/fuzz_document.c — fuzz target for the upload path: JSON text
 * -> api_json_parse -> api_doc_prepare for every kind -> the digest and
 * its canonical bytes, and the same text through api_create (dry run) as a
 * lone document, a bundle, a List and NDJSON.
 *
 * Properties checked beyond "no crash, no leak":
 *  - JCS is a fixed point: for accepted text x whose JCS form exists,
 *    the server accepts JCS(x) back and JCS(parse(JCS(x))) == JCS(x);
 *  - a prepared document's canonical bytes are exactly
 *    {"apiVersion":…,"kind":…,"spec":…} in JCS form, its digest is their
 *    SHA-256 and its digest string parses back to the digest;
 *  - every api_create answer passes fuzz_check_resp(). */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jcs.h"
#include "api/kinds.h"
#include "api/object.h"
#include "api/service.h"
#include "tests/fuzz/fuzz.h"

static api_ctx ctx;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	memset(&ctx, 0, sizeof(ctx));
	ctx.st = fuzz_store_open(64u << 20);
	ctx.lim = &fuzz_limits;
	ctx.now = fuzz_now;
	fuzz_preload(&ctx);
	return 0;
}

/* JCS(x) must parse under the server's own rules and serialize to itself. */
static void
check_fixed_point(const ki_buf *canon, const char *what)
{
	struct json_object *back = NULL;
	api_status st;
	ki_buf again;
	int rc;

	api_status_init(&st);
	if (api_json_parse(canon->data, canon->len, 512, &back, &st) != KI_OK &&
	    st.message != NULL && ((fuzz_known("bigint") &&
	    strstr(st.message, "beyond the 64-bit range") != NULL) ||
	    (fuzz_known("scalar") &&
	    strstr(st.message, "unexpected end of input") != NULL))) {
		api_status_free(&st);
		return;
	}
	if (back == NULL && st.code != 0)
		fuzz_fail("%s: the server refuses its own canonical form (%s): "
		    "%.300s", what, st.message ? st.message : "?", canon->data);
	api_status_free(&st);
	ki_buf_init(&again);
	rc = api_jcs_serialize(back, &again);
	if (rc != KI_OK)
		fuzz_fail("%s: JCS fails (%d) on parsed JCS output %.300s", what, rc,
		    canon->data);
	if (again.len != canon->len || memcmp(again.data, canon->data,
	    canon->len) != 0)
		fuzz_fail("%s: JCS(parse(JCS(x))) != JCS(x):\n  %.300s\n  %.300s",
		    what, canon->data, again.data);
	ki_buf_free(&again);
	json_object_put(back);
}

/* A prepared document's canonical bytes, offsets and digest agree. */
static void
check_prepared(const api_doc *d)
{
	char head[128];
	uint8_t digest[API_DIGEST_LEN], parsed[API_DIGEST_LEN];
	char ds[API_DIGEST_STRLEN + 1];
	ki_buf again;
	struct json_object *spec;
	int n;

	n = snprintf(head, sizeof(head), "{\"apiVersion\":\"" API_GROUP_VERSION
	    "\",\"kind\":\"%s\",\"spec\":", d->kind->kind);
	if (d->canon.len < (size_t)n + 3 || memcmp(d->canon.data, head,
	    (size_t)n) != 0 || d->canon.data[d->canon.len - 1] != '}')
		fuzz_fail("canonical bytes do not have the digest's shape: %.300s",
		    d->canon.data);
	if (d->spec_off != (size_t)n || d->spec_off + d->spec_len + 1 !=
	    d->canon.len || d->canon.data[d->spec_off] != '{' ||
	    d->canon.data[d->spec_off + d->spec_len - 1] != '}')
		fuzz_fail("spec offsets %zu+%zu do not locate the spec in %zu bytes",
		    d->spec_off, d->spec_len, d->canon.len);
	if (api_sha256(d->canon.data, d->canon.len, digest) != KI_OK ||
	    memcmp(digest, d->digest, API_DIGEST_LEN) != 0)
		fuzz_fail("the digest is not the SHA-256 of the canonical bytes");
	api_digest_format(d->digest, ds);
	if (strcmp(ds, d->digest_str) != 0 ||
	    api_digest_parse(ds, strlen(ds), parsed) != KI_OK ||
	    memcmp(parsed, d->digest, API_DIGEST_LEN) != 0)
		fuzz_fail("digest string %s does not round-trip", d->digest_str);
	/* The spec left in the tree (after pruning) serializes to the bytes
	 * the digest covers. */
	if (!json_object_object_get_ex(d->obj, "spec", &spec))
		fuzz_fail("a prepared document lost its spec");
	ki_buf_init(&again);
	if (api_jcs_serialize(spec, &again) != KI_OK ||
	    again.len != d->spec_len || memcmp(again.data, d->canon.data +
	    d->spec_off, d->spec_len) != 0)
		fuzz_fail("the stored spec bytes differ from JCS(spec)");
	ki_buf_free(&again);
	check_fixed_point(&d->canon, "canonical document");
	if (d->name == NULL || *d->name == '\0')
		fuzz_fail("a document was accepted without a name");
	if (d->kind->id == API_RUN && d->nrefs != API_NREFS)
		fuzz_fail("a run was accepted with %zu references", d->nrefs);
}

static void
prepare_as(struct json_object *obj, const api_kind *expect)
{
	struct json_object *copy = NULL;
	api_unknown unk = { NULL, 0, 0 };
	api_status st;
	api_doc d;

	if (json_object_deep_copy(obj, &copy, NULL) != 0 || copy == NULL)
		return;
	api_status_init(&st);
	api_doc_prepare(&d, copy, "", expect, &st, &unk);
	if (d.digest_str[0] != '\0') {
		if (st.code != 0 || st.ncauses != 0)
			fuzz_fail("a digest was computed for a refused document");
		if (expect != NULL && d.kind != expect)
			fuzz_fail("prepared as %s in the %s collection", d.kind->kind,
			    expect->kind);
		check_prepared(&d);
	} else if (st.code == 0 && st.ncauses == 0) {
		fuzz_fail("a document was neither accepted nor refused");
	}
	api_doc_free(&d);
	api_status_free(&st);
	api_unknown_free(&unk);
}

/* api_jcs_number against an independent oracle: the output reads back as
 * v, has the ECMAScript shape, and has no more significant digits than the
 * shortest "%.*e" form that reads back (printf rounds correctly, so that
 * form can only be longer, where a neighbour of the nearest decimal fits
 * and the nearest does not). */
static void
check_number(double v)
{
	char out[32], s[40];
	int n = api_jcs_number(v, out), digits = 0, p;
	const char *q;

	if (!isfinite(v)) {
		if (n != KI_EINVAL)
			fuzz_fail("api_jcs_number accepted a non-finite number");
		return;
	}
	if (n <= 0 || (size_t)n != strlen(out))
		fuzz_fail("api_jcs_number(%.17g) returned %d", v, n);
	if (strtod(out, NULL) != v && !(v == 0 && strcmp(out, "0") == 0))
		fuzz_fail("api_jcs_number(%.17g) = %s does not read back", v, out);
	for (q = out; *q && *q != 'e'; q++) {
		if (*q >= '0' && *q <= '9' && (digits > 0 || *q != '0'))
			digits++;
		else if (!(*q >= '0' && *q <= '9') && *q != '.' && *q != '-')
			fuzz_fail("api_jcs_number(%.17g) = %s", v, out);
	}
	/* Trailing zeros of an integer are not significant digits. */
	if (strchr(out, '.') == NULL && strchr(out, 'e') == NULL)
		for (q = out + strlen(out) - 1; q > out && *q == '0'; q--)
			digits--;
	if (v == 0)
		return;
	for (p = 1; p <= 17; p++) {
		snprintf(s, sizeof(s), "%.*e", p - 1, v);
		if (strtod(s, NULL) == v)
			break;
	}
	if (digits > p)
		fuzz_fail("api_jcs_number(%.17g) = %s: %d digits where %s has %d",
		    v, out, digits, s, p);
	if (out[0] == '.' || (out[0] == '-' && out[1] == '.') ||
	    strstr(out, "e+0") || strstr(out, "e-0") || strstr(out, ".e") ||
	    (strchr(out, '.') && strchr(out, 'e') == NULL &&
	    out[strlen(out) - 1] == '0'))
		fuzz_fail("api_jcs_number(%.17g) = %s is not ECMAScript's form",
		    v, out);
}

static void
create(const api_kind *coll, const char *body, size_t len, int ndjson,
	int fv, int atomic)
{
	api_write_opts wo;
	api_resp r;
	char what[96];

	memset(&wo, 0, sizeof(wo));
	wo.dry_run = 1;
	wo.field_validation = fv;
	wo.atomic = atomic;
	api_resp_init(&r);
	api_create(&ctx, coll, body, len, ndjson, &wo, &r);
	snprintf(what, sizeof(what), "POST %s%s (dry run)", coll->plural,
	    ndjson ? " NDJSON" : "");
	fuzz_check_resp(&r, what);
	if (r.code == 201 && r.created == NULL && !ndjson &&
	    strstr(r.body.data, "\"kind\":\"UploadResult\"") == NULL)
		fuzz_fail("%s: 201 for one object without a Location", what);
	api_resp_free(&r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, *ztext;
	struct json_object *obj = NULL, *kv;
	api_status st;
	const api_kind *k = NULL;
	/* Options chosen from the input, so that each is reproducible. */
	unsigned pick = size ? data[size - 1] : 0;

	if (size > fuzz_limits.max_bulk_body)
		return 0;
	if (size >= sizeof(double)) {
		double v;

		memcpy(&v, data, sizeof(v));
		check_number(v);
	}
	/* An exact-size copy for api_json_parse (which takes a length), and a
	 * NUL-terminated one for api_create (bodies arrive so from http.c). */
	text = malloc(size ? size : 1);
	ztext = malloc(size + 1);
	if (text == NULL || ztext == NULL)
		fuzz_fail("out of memory");
	memcpy(text, data, size);
	memcpy(ztext, data, size);
	ztext[size] = '\0';

	api_status_init(&st);
	if (api_json_parse(text, size, fuzz_limits.max_depth, &obj, &st) ==
	    KI_OK) {
		ki_buf canon;
		size_t at = 0;

		while (at < size && (text[at] == ' ' || text[at] == '\t' ||
		    text[at] == '\n' || text[at] == '\r'))
			at++;
		if (obj == NULL && !(size - at >= 4 &&
		    memcmp(text + at, "null", 4) == 0))
			fuzz_fail("accepted without a tree");
		ki_buf_init(&canon);
		if (api_jcs_serialize(obj, &canon) == KI_OK)
			check_fixed_point(&canon, "whole document");
		ki_buf_free(&canon);
		prepare_as(obj, NULL);
		for (int id = 1; id <= API_NKINDS; id++)
			prepare_as(obj, api_kind_by_id(id));
		if (json_object_is_type(obj, json_type_object) &&
		    json_object_object_get_ex(obj, "kind", &kv) &&
		    json_object_is_type(kv, json_type_string))
			k = api_kind_by_kind(json_object_get_string(kv));
		json_object_put(obj);
	} else {
		if (obj != NULL)
			fuzz_fail("refused but a tree was returned");
		if (st.code != 400 && st.code != 413)
			fuzz_fail("api_json_parse refused with code %d", st.code);
	}
	api_status_free(&st);

	create(api_kind_by_id(API_RUN), ztext, size, 0,
	    (int)(pick % 3), 0);
	if (k != NULL && k->id != API_RUN)
		create(k, ztext, size, 0, API_FV_STRICT, 0);
	create(api_kind_by_id(API_RUN), ztext, size, 1, (int)(pick / 3 % 3),
	    (pick & 64) != 0);
	free(text);
	free(ztext);
	return 0;
}
