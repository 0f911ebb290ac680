/* bench/genstore.c — grows a store to millions of runs for the benchmark
 * suite, fast, from runs the daemon itself stored.
 *
 * usage: kernelindex-gen DATA_DIR TARGET_RUNS [HISTORY]
 *
 * The store in DATA_DIR (its daemon stopped) must hold runs uploaded
 * through the API: the templates. Copy j of the store's T runs is template
 * j mod T with "-g<k>" appended to its name and "/g<k>" to its
 * sourceNative.externalId (k = j div T + 1), a new uid, creationTimestamp
 * and resourceVersion, and the digest of its new spec (SHA-256 of the JCS
 * form of {apiVersion, kind, spec}; the spec stays canonical, as only a
 * string value changes). Everything else (labels, status, references,
 * plausibility) is the template's, as the daemon would render it for that
 * upload: bench/run.sh checks that by uploading some of the same bundles
 * to a fresh daemon and comparing the objects. Writes go through
 * store_put() in transactions of BATCH runs with syncing off: the pages
 * reach the disk when the kernel writes them back (bench/run.sh runs
 * sync(1) before it opens the store). Prints "runs=N seconds=S".
 */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/jcs.h"
#include "api/kinds.h"
#include "api/object.h"
#include "api/labels.h"
#include "store/lmdb.h"
#include "store/store.h"

#define BATCH 20000

typedef struct tmpl {
	store_obj o;          /* pointers into the copies below */
	char *json, *name, *natkey;
	uint8_t *refs;
	char *labels, *facets;
} tmpl;

typedef struct gen {
	tmpl *t;
	size_t n, cap;
} gen;

static char *
dup_bytes(const void *p, size_t n)
{
	char *c = malloc(n + 1);

	if (c != NULL) {
		if (n)
			memcpy(c, p, n);
		c[n] = 0;
	}
	return c;
}

static int
take_template(void *arg, const store_obj *o)
{
	gen *g = arg;
	tmpl *t;

	if (o->natkey == NULL || memchr(o->natkey, '\x1f', o->natkey_len) == NULL)
		return 0;   /* no natural key to make unique */
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 4096;
		tmpl *grown = realloc(g->t, cap * sizeof(*grown));

		if (grown == NULL)
			return 1;
		g->t = grown;
		g->cap = cap;
	}
	t = &g->t[g->n];
	memset(t, 0, sizeof(*t));
	t->o = *o;
	t->json = dup_bytes(o->json, o->json_len);
	t->name = dup_bytes(o->name, o->name_len);
	t->natkey = dup_bytes(o->natkey, o->natkey_len);
	t->refs = (uint8_t *)dup_bytes(o->refs, o->nrefs * STORE_DIGEST_LEN);
	t->labels = dup_bytes(o->labels, o->labels_len);
	t->facets = dup_bytes(o->facets, o->facets_len);
	if (!t->json || !t->name || !t->natkey || !t->refs || !t->labels ||
	    !t->facets)
		return 1;
	t->o.json = t->json;
	t->o.name = t->name;
	t->o.natkey = t->natkey;
	t->o.refs = o->nrefs ? t->refs : NULL;
	t->o.labels = o->labels_len ? t->labels : NULL;
	t->o.facets = o->facets_len ? t->facets : NULL;
	g->n++;
	return 0;
}

/* Appends region [p, p+n) to out with the string value of the first
 * "key":"…" in it replaced by val (or suffixed by val when append is
 * set). Returns -1 when the key is missing or the value has escapes. */
static int
put_replaced(char **out, const char *p, size_t n, const char *key,
	const char *val, size_t vlen, int append)
{
	char pat[64];
	size_t plen = (size_t)snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	const char *at = memmem(p, n, pat, plen), *v, *end;

	if (at == NULL)
		return -1;
	v = at + plen;
	end = memchr(v, '"', (size_t)(p + n - v));
	if (end == NULL || memchr(v, '\\', (size_t)(end - v)) != NULL)
		return -1;
	memcpy(*out, p, (size_t)(v - p));
	*out += v - p;
	if (append) {
		memcpy(*out, v, (size_t)(end - v));
		*out += end - v;
	}
	memcpy(*out, val, vlen);
	*out += vlen;
	memcpy(*out, end, (size_t)(p + n - end));
	*out += p + n - end;
	return 0;
}

/* Builds copy k of template t into buf (large enough) and o. */
static int
make_copy(const tmpl *t, uint64_t k, uint64_t rv, const char *stamp,
	char *buf, char *name, char *natkey, store_obj *o)
{
	const store_obj *s = &t->o;
	char suffix[32], rvs[24], uid[37], dig[API_DIGEST_STRLEN + 1];
	char mbuf[8192], *p = buf;
	char *m1 = mbuf, *m2, *m3;
	size_t sl, rl, ml;
	char idbuf[1 << 16];
	static const char id_head[] = "{\"apiVersion\":\"" API_GROUP_VERSION
	    "\",\"kind\":\"BenchmarkRun\",\"spec\":";

	if (s->meta_len * 4 + 512 > sizeof(mbuf))
		return -1;
	sl = (size_t)snprintf(suffix, sizeof(suffix), "-g%llu",
	    (unsigned long long)k);
	rl = (size_t)snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
	*o = *s;
	o->rv = rv;
	memcpy(name, s->name, s->name_len);
	memcpy(name + s->name_len, suffix, sl);
	o->name = name;
	o->name_len = s->name_len + sl;
	/* The natural key ends with the externalId: both get "/g<k>". */
	memcpy(natkey, s->natkey, s->natkey_len);
	natkey[s->natkey_len] = '/';
	memcpy(natkey + s->natkey_len + 1, suffix + 1, sl - 1);
	o->natkey = natkey;
	o->natkey_len = s->natkey_len + sl;
	api_new_uid(uid);
	/* Metadata: name, resourceVersion, uid and creationTimestamp. */
	m2 = m1;
	if (put_replaced(&m2, s->json + s->meta_off, s->meta_len, "name",
	    suffix, sl, 1) != 0)
		return -1;
	m3 = m2;
	if (put_replaced(&m3, m1, (size_t)(m2 - m1), "resourceVersion", rvs, rl,
	    0) != 0)
		return -1;
	m1 = m3;
	if (put_replaced(&m1, m2, (size_t)(m3 - m2), "uid", uid, 36, 0) != 0)
		return -1;
	m2 = m1;
	if (put_replaced(&m2, m3, (size_t)(m1 - m3), "creationTimestamp", stamp,
	    strlen(stamp), 0) != 0)
		return -1;
	ml = (size_t)(m2 - m1);
	/* The head up to the metadata is the template's. */
	memcpy(p, s->json, s->meta_off);
	p += s->meta_off;
	o->meta_off = s->meta_off;
	memcpy(p, m1, ml);
	o->meta_len = (uint32_t)ml;
	p += ml;
	memcpy(p, ",\"spec\":", 8);
	p += 8;
	o->spec_off = (uint32_t)(p - buf);
	{
		char ext[32];

		ext[0] = '/';
		memcpy(ext + 1, suffix + 1, sl - 1);
		if (put_replaced(&p, s->json + s->spec_off, s->spec_len,
		    "externalId", ext, sl, 1) != 0)
			return -1;
	}
	o->spec_len = (uint32_t)(p - buf) - o->spec_off;
	if (sizeof(id_head) + o->spec_len + 1 > sizeof(idbuf))
		return -1;
	memcpy(idbuf, id_head, sizeof(id_head) - 1);
	memcpy(idbuf + sizeof(id_head) - 1, buf + o->spec_off, o->spec_len);
	idbuf[sizeof(id_head) - 1 + o->spec_len] = '}';
	if (api_sha256(idbuf, sizeof(id_head) + o->spec_len, o->digest) != KI_OK)
		return -1;
	api_digest_format(o->digest, dig);
	memcpy(p, ",\"status\":", 10);
	p += 10;
	o->status_off = (uint32_t)(p - buf);
	if (put_replaced(&p, s->json + s->status_off, s->status_len, "digest",
	    "sha256:", 7, 0) != 0)
		return -1;
	{
		/* The digest's hex follows the "sha256:" just written. */
		char *h = memmem(buf + o->status_off, (size_t)(p - buf) -
		    o->status_off, "\"digest\":\"sha256:", 17);

		if (h == NULL)
			return -1;
		h += 17;
		memmove(h + 64, h, (size_t)(p - h));
		memcpy(h, dig + 7, 64);   /* the hex after "sha256:" */
		p += 64;
	}
	o->status_len = (uint32_t)(p - buf) - o->status_off;
	*p++ = '}';
	o->json = buf;
	o->json_len = (size_t)(p - buf);
	return 0;
}

int
main(int argc, char **argv)
{
	store_options so;
	store_lmdb_options lo;
	store *st = NULL;
	store_txn *t = NULL;
	gen g;
	uint64_t target, have = 0, made = 0;
	char stamp[32], name[STORE_MAX_NAME + 40], natkey[STORE_MAX_NATKEY + 40];
	char *buf = NULL;
	struct timespec t0, t1;
	time_t now = time(NULL);
	int rc;

	if (argc < 3 || (target = strtoull(argv[2], NULL, 10)) == 0) {
		fprintf(stderr, "usage: kernelindex-gen DATA_DIR TARGET_RUNS "
		    "[HISTORY]\n");
		return 2;
	}
	memset(&so, 0, sizeof(so));
	memset(&g, 0, sizeof(g));
	memset(&lo, 0, sizeof(lo));
	lo.map_size = 1ull << 30;
	lo.map_max = 1ull << 40;
	so.history = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
	so.facets = api_store_facets;
	so.nosync = 1;
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((rc = store_lmdb_open(&st, argv[1], &so, &lo)) != KI_OK) {
		fprintf(stderr, "kernelindex-gen: cannot open %s: %s\n", argv[1],
		    ki_strerror(rc));
		return 1;
	}
	if ((rc = store_begin(st, 0, &t)) != KI_OK ||
	    (rc = store_count(t, API_RUN, &have)) != KI_OK ||
	    (rc = store_list(t, API_RUN, 0, take_template, &g)) != KI_OK) {
		fprintf(stderr, "kernelindex-gen: reading templates: %s\n",
		    ki_strerror(rc));
		goto fail;
	}
	store_abort(t);
	t = NULL;
	if (g.n == 0) {
		fprintf(stderr, "kernelindex-gen: no run with a natural key to "
		    "copy\n");
		rc = KI_EINVAL;
		goto fail;
	}
	if ((buf = malloc(1 << 20)) == NULL) {
		rc = KI_ENOMEM;
		goto fail;
	}
	while (have + made < target) {
		if ((rc = store_begin(st, 1, &t)) != KI_OK)
			goto fail;
		for (size_t i = 0; i < BATCH && have + made < target; i++) {
			const tmpl *tp = &g.t[made % g.n];
			store_obj o;

			if (tp->o.json_len + 4096 > (1 << 20) ||
			    make_copy(tp, made / g.n + 1, store_next_rv(t), stamp, buf,
			    name, natkey, &o) != 0) {
				fprintf(stderr, "kernelindex-gen: template %s cannot be "
				    "copied\n", tp->name);
				rc = KI_EINVAL;
				goto fail;
			}
			if ((rc = store_put(t, &o)) != KI_OK)
				goto fail;
			made++;
		}
		if ((rc = store_commit(t)) != KI_OK) {
			t = NULL;
			goto fail;
		}
		t = NULL;
	}
	store_close(st);
	st = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("runs=%llu made=%llu templates=%zu seconds=%.1f\n",
	    (unsigned long long)(have + made), (unsigned long long)made, g.n,
	    (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	rc = KI_OK;
fail:
	if (rc != KI_OK)
		fprintf(stderr, "kernelindex-gen: %s after %llu runs\n",
		    ki_strerror(rc), (unsigned long long)made);
	store_abort(t);
	store_close(st);
	for (size_t i = 0; i < g.n; i++) {
		free(g.t[i].json);
		free(g.t[i].name);
		free(g.t[i].natkey);
		free(g.t[i].refs);
		free(g.t[i].labels);
		free(g.t[i].facets);
	}
	free(g.t);
	free(buf);
	return rc == KI_OK ? 0 : 1;
}
