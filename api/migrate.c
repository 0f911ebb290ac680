/* api/migrate.c — copies one store into another, empty one, through the
 * store's contract only (store/store.h), so that any backend can move to
 * any other: LMDB to etcd and back.
 *
 * The copy replays the source's event history from resourceVersion 0 in
 * order: each ADDED or MODIFIED event is a put of the object as that
 * event left it, each DELETED event a delete with its final state. An
 * empty destination then takes the same resourceVersion for every change
 * (each put or delete takes the next one) and the same id for every
 * object (ids are handed out in creation order), so the objects' bytes,
 * digests, ids, resourceVersions and the history a watch resumes from are
 * those of the source. Tokens are copied after the objects. A source
 * whose older events were trimmed (more changes than its history keeps)
 * cannot be replayed: it is refused, naming the oldest event kept. */
#include "api/admin.h"

#include <string.h>

#include <openssl/evp.h>

#include "api/kinds.h"
#include "store/store.h"

typedef struct mig {
	store *dst;
	store_txn *w;            /* the open write transaction, or NULL */
	size_t batch, in_batch;
	api_migrate_stats *st;
	int rc;                  /* the first failure */
	char *err;
	size_t errlen;
	uint64_t at_rv;          /* the event that failed */
} mig;

static void
mig_fail(mig *m, int rc, const char *what)
{
	if (m->rc == KI_OK) {
		m->rc = rc;
		snprintf(m->err, m->errlen, "%s", what);
	}
}

static int
mig_flush(mig *m)
{
	int rc = KI_OK;

	if (m->w != NULL) {
		rc = store_commit(m->w);
		m->w = NULL;
		m->in_batch = 0;
		if (rc != KI_OK)
			mig_fail(m, rc, "the destination refused a commit");
	}
	return rc;
}

/* One event of the source, replayed into the destination. */
static int
mig_event(void *arg, int type, const store_obj *src)
{
	mig *m = arg;
	store_obj o = *src;
	int rc;

	m->at_rv = src->rv;
	if (m->w == NULL && (rc = store_begin(m->dst, 1, &m->w)) != KI_OK) {
		mig_fail(m, rc, "cannot begin a write in the destination");
		return rc;
	}
	if (store_next_rv(m->w) != src->rv) {
		mig_fail(m, KI_ESTORE, "the destination's resourceVersion "
		    "does not follow the source's events");
		return KI_ESTORE;
	}
	if (type == STORE_DELETED) {
		rc = store_delete(m->w, o.kind, o.name, o.name_len, &o);
		m->st->deletes++;
	} else {
		rc = store_put(m->w, &o);
		if (rc == KI_OK && o.seq != src->seq) {
			mig_fail(m, KI_ESTORE, "the destination gave an object "
			    "another id than the source's");
			return KI_ESTORE;
		}
		m->st->puts++;
	}
	if (rc != KI_OK) {
		mig_fail(m, rc, "the destination refused an event's write");
		return rc;
	}
	m->st->events++;
	if (++m->in_batch >= m->batch && mig_flush(m) != KI_OK)
		return m->rc;
	return 0;
}

typedef struct tok_copy {
	store_txn *w;
	uint64_t n;
} tok_copy;

static int
mig_token(void *arg, const uint8_t *hash, const char *value, size_t len)
{
	tok_copy *tc = arg;
	int rc = store_token_put(tc->w, hash, value, len);

	if (rc == KI_OK)
		tc->n++;
	return rc;
}

/* ---- the comparison of both sides ---- */

typedef struct side_sum {
	EVP_MD_CTX *md;
	uint64_t n;
} side_sum;

static void
sum_u64(EVP_MD_CTX *md, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
	EVP_DigestUpdate(md, b, 8);
}

/* Everything a reader sees of an object: id, resourceVersion, digest,
 * name, natural key, references, labels and its stored bytes. */
static void
sum_obj(EVP_MD_CTX *md, const store_obj *o)
{
	sum_u64(md, (uint64_t)o->kind);
	sum_u64(md, o->seq);
	sum_u64(md, o->rv);
	EVP_DigestUpdate(md, o->digest, STORE_DIGEST_LEN);
	sum_u64(md, o->name_len);
	EVP_DigestUpdate(md, o->name, o->name_len);
	sum_u64(md, o->natkey != NULL ? o->natkey_len + 1 : 0);
	if (o->natkey != NULL)
		EVP_DigestUpdate(md, o->natkey, o->natkey_len);
	sum_u64(md, o->nrefs);
	if (o->nrefs > 0)
		EVP_DigestUpdate(md, o->refs, o->nrefs * STORE_DIGEST_LEN);
	sum_u64(md, o->labels_len);
	EVP_DigestUpdate(md, o->labels, o->labels_len);
	sum_u64(md, o->json_len);
	EVP_DigestUpdate(md, o->json, o->json_len);
	sum_u64(md, o->meta_off);
	sum_u64(md, o->spec_off);
	sum_u64(md, o->status_off);
}

static int
sum_each(void *arg, const store_obj *o)
{
	side_sum *s = arg;

	sum_obj(s->md, o);
	s->n++;
	return 0;
}

static int
sum_event(void *arg, int type, const store_obj *o)
{
	side_sum *s = arg;

	sum_u64(s->md, (uint64_t)type);
	sum_obj(s->md, o);
	s->n++;
	return 0;
}

static int
sum_token(void *arg, const uint8_t *hash, const char *value, size_t len)
{
	side_sum *s = arg;

	EVP_DigestUpdate(s->md, hash, STORE_DIGEST_LEN);
	sum_u64(s->md, len);
	EVP_DigestUpdate(s->md, value, len);
	s->n++;
	return 0;
}

static int
sum_facet(void *arg, const char *facet, size_t len, uint64_t count)
{
	side_sum *s = arg;

	sum_u64(s->md, len);
	EVP_DigestUpdate(s->md, facet, len);
	sum_u64(s->md, count);
	return 0;
}

/* A summary of everything st holds: per kind its objects (in id order)
 * and facet counts, the events from 0, the tokens. */
typedef struct store_sum {
	uint64_t rv, objects, events, tokens;
	uint64_t per_kind[API_NKINDS + 1];
	uint8_t sha[32];
} store_sum;

static int
summarize(store *st, store_sum *out)
{
	side_sum s = { NULL, 0 };
	store_txn *t = NULL;
	unsigned int len = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((s.md = EVP_MD_CTX_new()) == NULL)
		return KI_ENOMEM;
	if (EVP_DigestInit_ex(s.md, EVP_sha256(), NULL) != 1) {
		rc = KI_ENOMEM;
		goto out;
	}
	if ((rc = store_begin(st, 0, &t)) != KI_OK)
		goto out;
	out->rv = store_rv(t);
	sum_u64(s.md, out->rv);
	for (int k = 1; k <= API_NKINDS && rc == KI_OK; k++) {
		uint64_t before = s.n;

		if ((rc = store_list(t, k, 0, sum_each, &s)) != KI_OK)
			break;
		out->per_kind[k] = s.n - before;
		rc = store_facets(t, k, sum_facet, &s);
	}
	out->objects = s.n;
	s.n = 0;
	if (rc == KI_OK)
		rc = store_events_since(t, 0, sum_event, &s);
	out->events = s.n;
	s.n = 0;
	if (rc == KI_OK)
		rc = store_token_list(t, sum_token, &s);
	out->tokens = s.n;
	if (rc == KI_OK && EVP_DigestFinal_ex(s.md, out->sha, &len) != 1)
		rc = KI_ENOMEM;
out:
	store_abort(t);
	EVP_MD_CTX_free(s.md);
	return rc;
}

static void
hex32(const uint8_t *b, char out[65])
{
	static const char x[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		out[2 * i] = x[b[i] >> 4];
		out[2 * i + 1] = x[b[i] & 15];
	}
	out[64] = '\0';
}

/* The destination must hold nothing: no change ever, no token. */
static int
check_empty(store *dst, char *err, size_t errlen)
{
	store_txn *t = NULL;
	uint64_t tokens = 0, rv;
	int rc;

	if ((rc = store_begin(dst, 0, &t)) != KI_OK) {
		snprintf(err, errlen, "cannot read the destination");
		return rc;
	}
	rv = store_rv(t);
	rc = store_token_count(t, &tokens);
	store_abort(t);
	if (rc != KI_OK) {
		snprintf(err, errlen, "cannot read the destination's tokens");
		return rc;
	}
	if (rv != 0 || tokens != 0) {
		snprintf(err, errlen, "the destination is not empty "
		    "(resourceVersion %llu, %llu tokens): migrate writes only "
		    "into a new store", (unsigned long long)rv,
		    (unsigned long long)tokens);
		return KI_EEXIST;
	}
	return KI_OK;
}

static int
copy_tokens(store *src, store *dst, uint64_t *n, char *err, size_t errlen)
{
	store_txn *r = NULL;
	tok_copy tc = { NULL, 0 };
	int rc;

	if ((rc = store_begin(src, 0, &r)) != KI_OK ||
	    (rc = store_begin(dst, 1, &tc.w)) != KI_OK) {
		snprintf(err, errlen, "cannot begin the copy of the tokens");
		goto out;
	}
	if ((rc = store_token_list(r, mig_token, &tc)) != KI_OK) {
		snprintf(err, errlen, "cannot copy the tokens");
		goto out;
	}
	rc = store_commit(tc.w);
	tc.w = NULL;
	if (rc != KI_OK)
		snprintf(err, errlen, "the destination refused the tokens");
	*n = tc.n;
out:
	store_abort(tc.w);
	store_abort(r);
	return rc;
}

int
api_migrate(store *src, store *dst, size_t batch, FILE *out,
	api_migrate_stats *stats, char *err, size_t errlen)
{
	mig m;
	store_txn *r = NULL;
	store_sum a, b;
	char ha[65], hb[65];
	int rc;

	memset(stats, 0, sizeof(*stats));
	memset(&m, 0, sizeof(m));
	m.dst = dst;
	m.batch = batch > 0 ? batch : 64;
	m.st = stats;
	m.err = err;
	m.errlen = errlen;
	err[0] = '\0';
	if ((rc = check_empty(dst, err, errlen)) != KI_OK)
		return rc;
	if ((rc = store_begin(src, 0, &r)) != KI_OK) {
		snprintf(err, errlen, "cannot read the source");
		return rc;
	}
	rc = store_events_since(r, 0, mig_event, &m);
	if (rc == KI_EGONE) {
		snprintf(err, errlen, "the source's events before "
		    "resourceVersion %llu were trimmed (its history keeps "
		    "fewer than its %llu changes): its ids and "
		    "resourceVersions cannot be replayed",
		    (unsigned long long)store_oldest_event(r),
		    (unsigned long long)store_rv(r));
	} else if (rc == KI_OK) {
		rc = mig_flush(&m);
	} else if (m.rc == KI_OK) {
		snprintf(err, errlen, "cannot read the source's events");
	} else {
		size_t n = strlen(err);

		snprintf(err + n, errlen - n, " (at resourceVersion %llu)",
		    (unsigned long long)m.at_rv);
	}
	store_abort(m.w);
	store_abort(r);
	if (rc != KI_OK)
		return rc;
	if ((rc = copy_tokens(src, dst, &stats->tokens, err, errlen)) != KI_OK)
		return rc;
	/* Both sides, read again and compared. */
	if ((rc = summarize(src, &a)) != KI_OK) {
		snprintf(err, errlen, "cannot read the source back");
		return rc;
	}
	if ((rc = summarize(dst, &b)) != KI_OK) {
		snprintf(err, errlen, "cannot read the destination back");
		return rc;
	}
	hex32(a.sha, ha);
	hex32(b.sha, hb);
	stats->objects = b.objects;
	stats->rv = b.rv;
	for (int k = 1; k <= API_NKINDS; k++) {
		const api_kind *kd = api_kind_by_id(k);

		fprintf(out, "%-16s source %8llu  destination %8llu\n",
		    kd != NULL ? kd->plural : "?",
		    (unsigned long long)a.per_kind[k],
		    (unsigned long long)b.per_kind[k]);
	}
	fprintf(out, "%-16s source %8llu  destination %8llu\n", "events",
	    (unsigned long long)a.events, (unsigned long long)b.events);
	fprintf(out, "%-16s source %8llu  destination %8llu\n", "tokens",
	    (unsigned long long)a.tokens, (unsigned long long)b.tokens);
	fprintf(out, "%-16s source %8llu  destination %8llu\n",
	    "resourceVersion", (unsigned long long)a.rv,
	    (unsigned long long)b.rv);
	fprintf(out, "sha256 of everything: source %s\n"
	    "                      destination %s\n", ha, hb);
	if (memcmp(a.sha, b.sha, 32) != 0) {
		snprintf(err, errlen, "the copy differs from the source (a "
		    "daemon wrote to one of them meanwhile?)");
		return KI_ESTORE;
	}
	return KI_OK;
}
