/* store/etcd_cache.c — the watch cache: an in-memory copy of every key
 * under the store's prefix, fed by etcd's watch, that read transactions
 * read instead of sending range requests (as kube-apiserver's watch cache
 * serves reads).
 *
 * At start the keyspace is read at one etcd revision (paged range
 * requests at that revision), then a thread watches the prefix from the
 * next revision (/v3/watch, one streamed POST) and applies every event.
 * Each key keeps the versions a reader may still need, newest first, with
 * the etcd revision that wrote them (mod_revision): a transaction reads
 * the versions at or below the revision the cache had reached when it
 * began, whatever is applied meanwhile, so that it sees one state
 * (snapshot isolation, as with etcd's own ranges at a revision). Versions
 * no registered reader can see any more are freed as events come in.
 *
 * When the stream breaks the cache is not ready (reads go to etcd, as
 * without it) until the watch is created again from the next revision;
 * when etcd compacted past that revision it loads the keyspace again (a
 * new generation: a transaction of the old one reads etcd instead). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/thread.h"
#include "store/etcd_int.h"

#define WC_LEVELS 24
#define WC_PAGE 1000           /* keys per range request of a load */

typedef struct wc_ver {
	int64_t mod;            /* the etcd revision that wrote it */
	char *val;              /* NULL: deleted */
	size_t vlen;
	struct wc_ver *older;
} wc_ver;

typedef struct wc_node {
	char *key;
	size_t klen;
	wc_ver *ver;            /* newest first */
	int pending;            /* on the prune list */
	int height;
	struct wc_node *next[];
} wc_node;

/* One generation of the map: a skip list of keys in byte order. */
typedef struct wc_map {
	wc_node *head;
	int level;
	uint32_t rnd;
	wc_node **pend;         /* nodes with versions to free later */
	size_t npend, cappend;
	size_t keys;
} wc_map;

/* A generation a reload replaced, kept while readers of it remain (they
 * hold values it lent). */
typedef struct wc_old {
	wc_map map;
	uint64_t gen;
	struct wc_old *next;
} wc_old;

/* A registered reader: the revision it reads, of which generation. */
typedef struct wc_reader {
	int64_t rev;
	uint64_t gen;
} wc_reader;

struct et_wcache {
	et_store *e;
	pthread_t thread;
	int thread_started;
	pthread_rwlock_t lk;    /* the map and gen */
	wc_map map;
	uint64_t gen;           /* bumped by each load */
	pthread_mutex_t mu;     /* everything below */
	uint64_t mgen;          /* gen, as of rev */
	pthread_cond_t cv;      /* rev or ready changed */
	int stop;
	int ready;              /* the watch is up: reads may use the cache */
	int resync;             /* a reader waited too long: reconnect */
	int hold;               /* store_etcd_cache_hold: stay down */
	int64_t rev;            /* every event up to it is applied */
	uint64_t rv;            /* m/rv at rev */
	wc_reader *readers;     /* the transactions reading */
	size_t nreaders, capreaders;
	wc_old *old;            /* replaced generations (the thread's) */
	/* What etcd showed the thread (it alone touches these). */
	int64_t next_rev;       /* the watch resumes from it */
	int reload;             /* compacted past next_rev: load again */
	int64_t batch_rev;      /* the highest revision of a message */
	json_tokener *tok;
	et_sock sock;           /* the watch stream's socket */
	char *start, *end;      /* [prefix, its range end) */
	size_t slen, elen;
	char *rvkey;            /* P m/rv */
	size_t rvklen;
	/* et_wc_fresh: one Range in flight at a time, numbered. */
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	uint64_t q_started;     /* Ranges begun */
	uint64_t q_done;        /* the last one answered */
	int q_busy;             /* one is in flight */
	int q_rc;               /* q_done's outcome */
	int64_t q_mod;
	/* store_etcd_follow's callback, called under fmu. */
	pthread_mutex_t fmu;
	void (*fn)(void *arg, uint64_t rv);
	void *arg;
	uint64_t told;          /* the last rv fn heard */
};

static int
keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* ---- the skip list ---- */

static int
map_init(wc_map *m)
{
	memset(m, 0, sizeof(*m));
	m->rnd = 0x9e3779b9u;
	m->level = 1;
	if ((m->head = calloc(1, sizeof(wc_node) +
	    WC_LEVELS * sizeof(wc_node *))) == NULL)
		return KI_ENOMEM;
	m->head->height = WC_LEVELS;
	return KI_OK;
}

static void
ver_free(wc_ver *v)
{
	while (v != NULL) {
		wc_ver *o = v->older;

		free(v->val);
		free(v);
		v = o;
	}
}

static void
node_free(wc_node *n)
{
	ver_free(n->ver);
	free(n->key);
	free(n);
}

static void
map_free(wc_map *m)
{
	wc_node *n = m->head != NULL ? m->head->next[0] : NULL;

	while (n != NULL) {
		wc_node *x = n->next[0];

		node_free(n);
		n = x;
	}
	free(m->head);
	free(m->pend);
	memset(m, 0, sizeof(*m));
}

/* The first node whose key is >= key; prev (if not NULL) gets, per level,
 * the last node before it. */
static wc_node *
map_seek(const wc_map *m, const char *key, size_t klen, wc_node **prev)
{
	wc_node *x = m->head;

	for (int i = m->level - 1; i >= 0; i--) {
		while (x->next[i] != NULL && keycmp(x->next[i]->key,
		    x->next[i]->klen, key, klen) < 0)
			x = x->next[i];
		if (prev != NULL)
			prev[i] = x;
	}
	return x->next[0];
}

/* The node of key, added (with no version) when absent; NULL without
 * memory. */
static wc_node *
map_node(wc_map *m, const char *key, size_t klen)
{
	wc_node *prev[WC_LEVELS], *x = map_seek(m, key, klen, prev);
	int h = 1;

	if (x != NULL && keycmp(x->key, x->klen, key, klen) == 0)
		return x;
	for (;;) {
		m->rnd ^= m->rnd << 13;
		m->rnd ^= m->rnd >> 17;
		m->rnd ^= m->rnd << 5;
		if ((m->rnd & 3) != 0 || h == WC_LEVELS)
			break;
		h++;
	}
	if ((x = calloc(1, sizeof(*x) + (size_t)h * sizeof(wc_node *))) ==
	    NULL || (x->key = malloc(klen + 1)) == NULL) {
		free(x);
		return NULL;
	}
	memcpy(x->key, key, klen);
	x->key[klen] = '\0';
	x->klen = klen;
	x->height = h;
	for (int i = m->level; i < h; i++)
		prev[i] = m->head;
	if (h > m->level)
		m->level = h;
	for (int i = 0; i < h; i++) {
		x->next[i] = prev[i]->next[i];
		prev[i]->next[i] = x;
	}
	m->keys++;
	return x;
}

static void
map_remove(wc_map *m, wc_node *n)
{
	wc_node *prev[WC_LEVELS], *x = map_seek(m, n->key, n->klen, prev);

	if (x != n)
		return;
	for (int i = 0; i < n->height; i++)
		if (prev[i]->next[i] == n)
			prev[i]->next[i] = n->next[i];
	while (m->level > 1 && m->head->next[m->level - 1] == NULL)
		m->level--;
	m->keys--;
	node_free(n);
}

/* The version of n a reader at rev sees (NULL: absent then). */
static const wc_ver *
visible(const wc_node *n, int64_t rev)
{
	for (const wc_ver *v = n->ver; v != NULL; v = v->older)
		if (v->mod <= rev)
			return v->val != NULL ? v : NULL;
	return NULL;
}

/* Whether n holds more than one reader could want. */
static int
prunable(const wc_node *n)
{
	return n->ver == NULL || n->ver->older != NULL || n->ver->val == NULL;
}

static int
note_pending(wc_map *m, wc_node *n)
{
	if (n->pending || !prunable(n))
		return KI_OK;
	if (m->npend == m->cappend) {
		size_t cap = m->cappend ? m->cappend * 2 : 64;
		wc_node **p = realloc(m->pend, cap * sizeof(*p));

		if (p == NULL)
			return KI_ENOMEM;
		m->pend = p;
		m->cappend = cap;
	}
	m->pend[m->npend++] = n;
	n->pending = 1;
	return KI_OK;
}

/* Adds a version of key written at mod (val NULL: deleted). */
static int
map_apply(wc_map *m, const char *key, size_t klen, int64_t mod,
	const char *val, size_t vlen)
{
	wc_node *n;
	wc_ver *v;

	if (val == NULL) {
		n = map_seek(m, key, klen, NULL);
		if (n == NULL || keycmp(n->key, n->klen, key, klen) != 0 ||
		    n->ver == NULL || n->ver->val == NULL)
			return KI_OK;
	} else if ((n = map_node(m, key, klen)) == NULL)
		return KI_ENOMEM;
	if (n->ver != NULL && n->ver->mod >= mod)
		return KI_OK;   /* sent again: applied already */
	if ((v = calloc(1, sizeof(*v))) == NULL)
		return KI_ENOMEM;
	if (val != NULL) {
		if ((v->val = malloc(vlen + 1)) == NULL) {
			free(v);
			return KI_ENOMEM;
		}
		memcpy(v->val, val, vlen);
		v->val[vlen] = '\0';
		v->vlen = vlen;
	}
	v->mod = mod;
	v->older = n->ver;
	n->ver = v;
	return note_pending(m, n);
}

/* Frees the versions no reader at or above horizon can see, and the keys
 * deleted at or below it. */
static void
map_prune(wc_map *m, int64_t horizon)
{
	size_t keep = 0;

	for (size_t i = 0; i < m->npend; i++) {
		wc_node *n = m->pend[i];
		wc_ver *v = n->ver;

		while (v != NULL && v->mod > horizon)
			v = v->older;
		if (v != NULL) {
			ver_free(v->older);
			v->older = NULL;
		}
		if (n->ver == NULL || (n->ver == v && v->val == NULL)) {
			map_remove(m, n);
			continue;
		}
		if (prunable(n))
			m->pend[keep++] = n;
		else
			n->pending = 0;
	}
	m->npend = keep;
}

/* ---- readers ---- */

int
et_wc_begin(et_store *e, int64_t *rev, uint64_t *gen)
{
	et_wcache *c = e->wc;
	int ok = 0;

	if (c == NULL)
		return 0;
	pthread_mutex_lock(&c->mu);
	if (c->ready && !c->stop) {
		if (c->nreaders == c->capreaders) {
			size_t cap = c->capreaders ? c->capreaders * 2 : 16;
			wc_reader *p = realloc(c->readers, cap * sizeof(*p));

			if (p != NULL) {
				c->readers = p;
				c->capreaders = cap;
			}
		}
		if (c->nreaders < c->capreaders) {
			c->readers[c->nreaders].rev = c->rev;
			c->readers[c->nreaders++].gen = c->mgen;
			*rev = c->rev;
			*gen = c->mgen;
			ok = 1;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return ok;
}

void
et_wc_end(et_store *e, int64_t rev, uint64_t gen)
{
	et_wcache *c = e->wc;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nreaders; i++)
		if (c->readers[i].rev == rev && c->readers[i].gen == gen) {
			c->readers[i] = c->readers[--c->nreaders];
			break;
		}
	pthread_mutex_unlock(&c->mu);
}

int
et_wc_get(et_store *e, uint64_t gen, int64_t rev, const char *key,
	size_t klen, const char **val, size_t *vlen, int64_t *mod)
{
	et_wcache *c = e->wc;
	const wc_node *n;
	const wc_ver *v = NULL;
	int rc = KI_ENOTFOUND;

	*val = NULL;
	*vlen = 0;
	pthread_rwlock_rdlock(&c->lk);
	if (c->gen != gen) {
		pthread_rwlock_unlock(&c->lk);
		return 1;
	}
	n = map_seek(&c->map, key, klen, NULL);
	if (n != NULL && keycmp(n->key, n->klen, key, klen) == 0)
		v = visible(n, rev);
	if (v != NULL) {
		/* Lent: the version is kept while the reader is registered
		 * (map_prune spares what a reader at or above the horizon
		 * sees; a reload keeps the old generation: wc_reap). */
		*val = v->val;
		*vlen = v->vlen;
		if (mod != NULL)
			*mod = v->mod;
		rc = KI_OK;
	}
	pthread_rwlock_unlock(&c->lk);
	return rc;
}

int
et_wc_range(et_store *e, uint64_t gen, int64_t rev, const char *start,
	size_t slen, const char *end, size_t elen, size_t limit,
	et_wc_fn fn, void *arg, int *more)
{
	et_wcache *c = e->wc;
	const wc_node *n;
	size_t got = 0;
	int rc = KI_OK;

	*more = 0;
	pthread_rwlock_rdlock(&c->lk);
	if (c->gen != gen) {
		pthread_rwlock_unlock(&c->lk);
		return 1;
	}
	for (n = map_seek(&c->map, start, slen, NULL); n != NULL &&
	    (end == NULL ? keycmp(n->key, n->klen, start, slen) == 0 :
	    keycmp(n->key, n->klen, end, elen) < 0); n = n->next[0]) {
		const wc_ver *v = visible(n, rev);

		if (v == NULL)
			continue;
		if (limit > 0 && got == limit) {
			*more = 1;
			break;
		}
		if ((rc = fn(arg, n->key, n->klen, v->val, v->vlen, v->mod)) !=
		    KI_OK)
			break;
		got++;
	}
	pthread_rwlock_unlock(&c->lk);
	return rc;
}

/* ---- what etcd has committed: one Range for every caller waiting ---- */

int
et_wc_fresh(et_store *e, et_conn *conn, int64_t *mod)
{
	et_wcache *c = e->wc;
	uint64_t want;
	int rc;

	pthread_mutex_lock(&c->qmu);
	/* The Range numbered q_started + 1 begins after this moment: its
	 * answer holds every commit acknowledged before the caller came. */
	want = c->q_started + 1;
	while (c->q_done < want) {
		uint64_t n;
		int64_t m = 0;

		if (c->q_busy) {
			pthread_cond_wait(&c->qcv, &c->qmu);
			continue;
		}
		/* None in flight: this caller sends the next one (for itself
		 * and whoever comes meanwhile). */
		c->q_busy = 1;
		n = ++c->q_started;
		pthread_mutex_unlock(&c->qmu);
		rc = et_rv_mod_now(e, conn, c->rvkey, c->rvklen, &m);
		pthread_mutex_lock(&c->qmu);
		c->q_busy = 0;
		c->q_done = n;
		c->q_rc = rc;
		c->q_mod = m;
		pthread_cond_broadcast(&c->qcv);
	}
	rc = c->q_rc;
	*mod = c->q_mod;
	pthread_mutex_unlock(&c->qmu);
	return rc;
}

/* The absolute time timeout_ms from now, for pthread_cond_timedwait. */
static void
deadline(struct timespec *at, long timeout_ms)
{
	clock_gettime(CLOCK_REALTIME, at);
	at->tv_sec += timeout_ms / 1000;
	at->tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (at->tv_nsec >= 1000000000L) {
		at->tv_sec++;
		at->tv_nsec -= 1000000000L;
	}
}

int
et_wc_wait(et_store *e, int64_t rev, long timeout_ms)
{
	et_wcache *c = e->wc;
	struct timespec at;
	int rc = KI_OK;

	if (c == NULL)
		return KI_OK;
	deadline(&at, timeout_ms);
	pthread_mutex_lock(&c->mu);
	while (c->ready && !c->stop && c->rev < rev)
		if (pthread_cond_timedwait(&c->cv, &c->mu, &at) == ETIMEDOUT) {
			if (c->ready && c->rev < rev) {
				/* The stream stalled: take it up again, and
				 * read etcd until then. */
				c->resync = 1;
				c->ready = 0;
				rc = KI_EUNAVAIL;
			}
			break;
		}
	pthread_mutex_unlock(&c->mu);
	if (rc != KI_OK)
		et_sock_kick(&c->sock);
	return rc;
}

int
et_wc_wait_rv(et_store *e, uint64_t rv, long timeout_ms)
{
	et_wcache *c = e->wc;
	struct timespec at;
	int rc = KI_OK;

	if (c == NULL)
		return KI_OK;
	deadline(&at, timeout_ms);
	pthread_mutex_lock(&c->mu);
	while (c->ready && !c->stop && c->rv < rv)
		if (pthread_cond_timedwait(&c->cv, &c->mu, &at) == ETIMEDOUT) {
			rc = KI_ELIMIT;
			break;
		}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

void
et_wc_stats(et_store *e, et_wc_info *out)
{
	et_wcache *c = e->wc;

	memset(out, 0, sizeof(*out));
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	out->ready = c->ready;
	out->rev = c->rev;
	out->rv = c->rv;
	out->gen = c->mgen;
	pthread_mutex_unlock(&c->mu);
	pthread_rwlock_rdlock(&c->lk);
	out->keys = c->map.keys;
	pthread_rwlock_unlock(&c->lk);
}

/* ---- the thread: load, then watch ---- */

/* The value of kv (et_unb64): a stored value that does not inflate
 * (etcd_codec.c) is kept as one byte no record decodes from, so that a
 * read of it is KI_ECORRUPT, as a read from etcd is. */
static int
wc_value(const et_wcache *c, json_object *kv, const char *k, size_t kl,
	char **v, size_t *vl)
{
	int rc = et_unb64(kv, "value", v, vl);
	store_obj o;

	if (rc != KI_OK && rc != KI_ECORRUPT)
		return rc;
	/* A record or an event is checked once, here, not at each read
	 * (readers of the cache skip the checksum: et_rec_read). */
	if (rc == KI_OK && kl > c->slen + 1 && k[c->slen + 1] == '/' &&
	    (k[c->slen] == 'o' || k[c->slen] == 'e')) {
		size_t skip = k[c->slen] == 'e' ? 1 : 0;

		if (*vl < skip || et_rec_decode(*v + skip, *vl - skip, &o) !=
		    KI_OK)
			rc = KI_ECORRUPT;
	}
	if (rc == KI_OK)
		return KI_OK;
	free(*v);
	if ((*v = malloc(2)) == NULL)
		return KI_ENOMEM;
	(*v)[0] = (char)0xff;
	(*v)[1] = '\0';
	*vl = 1;
	return KI_OK;
}

static void
wc_log(et_wcache *c, int level, const char *msg)
{
	if (c->e->log != NULL)
		c->e->log(c->e->log_arg, level, msg);
}

static int
wc_stopped(et_wcache *c)
{
	int stop;

	pthread_mutex_lock(&c->mu);
	stop = c->stop || c->resync || c->hold;
	pthread_mutex_unlock(&c->mu);
	return stop;
}

/* The value of m/rv (0: absent or malformed). */
static uint64_t
rv_of(const char *v, size_t vl)
{
	return v != NULL && vl == 8 ? et_get_be64(v) : 0;
}

/* Tells the follower of a new resourceVersion (not under any lock but
 * fmu). */
static void
wc_tell(et_wcache *c, uint64_t rv)
{
	pthread_mutex_lock(&c->fmu);
	if (c->fn != NULL && rv != c->told) {
		c->told = rv;
		c->fn(c->arg, rv);
	}
	pthread_mutex_unlock(&c->fmu);
}

/* Frees the replaced generations no reader reads any more. */
static void
wc_reap(et_wcache *c)
{
	wc_old **at = &c->old;

	while (*at != NULL) {
		wc_old *o = *at;
		int used = 0;

		pthread_mutex_lock(&c->mu);
		for (size_t i = 0; i < c->nreaders && !used; i++)
			used = c->readers[i].gen == o->gen;
		pthread_mutex_unlock(&c->mu);
		if (used) {
			at = &o->next;
			continue;
		}
		*at = o->next;
		map_free(&o->map);
		free(o);
	}
}

/* Reads the whole prefix at one revision into a new map, and makes it
 * the cache's (a new generation). */
static int
wc_load(et_wcache *c)
{
	et_store *e = c->e;
	et_conn *conn = et_conn_get(e);
	wc_map m;
	wc_old *old;
	ki_buf from;
	int64_t rev = 0;
	uint64_t rv = 0, gen;
	int rc, more = 1;

	if (conn == NULL)
		return KI_ENOMEM;
	if ((old = calloc(1, sizeof(*old))) == NULL) {
		et_conn_put(e, conn);
		return KI_ENOMEM;
	}
	if ((rc = map_init(&m)) != KI_OK) {
		free(old);
		et_conn_put(e, conn);
		return rc;
	}
	ki_buf_init(&from);
	ki_buf_append(&from, c->start, c->slen);
	while (rc == KI_OK && more) {
		json_object *resp = NULL, *kvs = NULL, *hdr, *mo;
		ki_buf b;
		size_t n;

		ki_buf_init(&b);
		ki_buf_puts(&b, "{\"key\":");
		et_b64(&b, from.data, from.len);
		ki_buf_puts(&b, ",\"range_end\":");
		et_b64(&b, c->end, c->elen);
		ki_buf_printf(&b, ",\"limit\":\"%d\"", WC_PAGE);
		if (rev > 0)
			ki_buf_printf(&b, ",\"revision\":\"%lld\"", (long long)rev);
		ki_buf_putc(&b, '}');
		rc = b.oom || from.oom ? KI_ENOMEM : et_post_read(e, conn,
		    "/v3/kv/range", b.data, b.len, &resp);
		ki_buf_free(&b);
		if (rc != KI_OK)
			break;
		if (rev == 0 && json_object_object_get_ex(resp, "header", &hdr))
			rev = et_int(hdr, "revision");
		more = json_object_object_get_ex(resp, "more", &mo) &&
		    json_object_get_boolean(mo);
		json_object_object_get_ex(resp, "kvs", &kvs);
		n = kvs != NULL ? json_object_array_length(kvs) : 0;
		for (size_t i = 0; i < n && rc == KI_OK; i++) {
			json_object *kv = json_object_array_get_idx(kvs, i);
			char *k = NULL, *v = NULL;
			size_t kl, vl;

			if ((rc = et_unb64(kv, "key", &k, &kl)) == KI_OK &&
			    (rc = wc_value(c, kv, k, kl, &v, &vl)) == KI_OK) {
				rc = map_apply(&m, k, kl, et_int(kv, "mod_revision"),
				    v != NULL ? v : "", vl);
				if (kl == c->rvklen && memcmp(k, c->rvkey, kl) == 0)
					rv = rv_of(v, vl);
				if (i + 1 == n) {
					ki_buf_reset(&from);
					ki_buf_append(&from, k, kl);
					if (ki_buf_putc(&from, '\0') != KI_OK)
						rc = KI_ENOMEM;
				}
			}
			free(k);
			free(v);
		}
		if (n == 0)
			more = 0;
		json_object_put(resp);
	}
	ki_buf_free(&from);
	et_conn_put(e, conn);
	if (rc != KI_OK) {
		map_free(&m);
		free(old);
		return rc;
	}
	map_prune(&m, rev);
	pthread_rwlock_wrlock(&c->lk);
	/* The old generation's readers still hold what it lent them. */
	old->map = c->map;
	old->gen = c->gen;
	old->next = c->old;
	c->old = old;
	c->map = m;
	gen = ++c->gen;
	pthread_rwlock_unlock(&c->lk);
	wc_reap(c);
	pthread_mutex_lock(&c->mu);
	c->mgen = gen;
	c->rev = rev;
	c->rv = rv;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	c->next_rev = rev + 1;
	c->reload = 0;
	wc_tell(c, rv);
	return KI_OK;
}

/* One message of the watch stream: its events, applied at once. */
static int
wc_message(et_wcache *c, json_object *o)
{
	json_object *res, *evs, *x;
	int64_t top = 0, horizon;
	uint64_t rv = 0;
	size_t n;
	int rc = KI_OK;

	if (!json_object_object_get_ex(o, "result", &res))
		return KI_OK;
	if (et_int(res, "compact_revision") > 0) {
		c->reload = 1;
		return KI_EGONE;
	}
	if (json_object_object_get_ex(res, "canceled", &x) &&
	    json_object_get_boolean(x))
		return KI_EGONE;
	if (json_object_object_get_ex(res, "created", &x) &&
	    json_object_get_boolean(x)) {
		pthread_mutex_lock(&c->mu);
		c->ready = 1;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
	}
	if (!json_object_object_get_ex(res, "events", &evs) ||
	    (n = json_object_array_length(evs)) == 0)
		return KI_OK;
	pthread_rwlock_wrlock(&c->lk);
	for (size_t i = 0; i < n && rc == KI_OK; i++) {
		json_object *ev = json_object_array_get_idx(evs, i), *kv, *ty;
		char *k = NULL, *v = NULL;
		size_t kl, vl;
		int del;
		int64_t mod;

		if (!json_object_object_get_ex(ev, "kv", &kv))
			continue;
		del = json_object_object_get_ex(ev, "type", &ty) &&
		    strcmp(json_object_get_string(ty), "DELETE") == 0;
		mod = et_int(kv, "mod_revision");
		if (mod < c->next_rev)
			continue;   /* a stream taken up again sends it twice */
		if ((rc = et_unb64(kv, "key", &k, &kl)) == KI_OK &&
		    (rc = wc_value(c, kv, k, kl, &v, &vl)) == KI_OK) {
			if (mod > top)
				top = mod;
			rc = map_apply(&c->map, k, kl, mod,
			    del ? NULL : v != NULL ? v : "", vl);
			if (!del && kl == c->rvklen && memcmp(k, c->rvkey, kl) == 0)
				rv = rv_of(v, vl);
		}
		free(k);
		free(v);
	}
	pthread_rwlock_unlock(&c->lk);
	if (rc != KI_OK) {
		/* Without memory the copy is incomplete: load it again. */
		c->reload = 1;
		return rc;
	}
	pthread_mutex_lock(&c->mu);
	if (top > c->rev)
		c->rev = top;
	if (rv > c->rv)
		c->rv = rv;
	horizon = c->rev;
	for (size_t i = 0; i < c->nreaders; i++)
		if (c->readers[i].rev < horizon)
			horizon = c->readers[i].rev;
	pthread_cond_broadcast(&c->cv);
	rv = c->rv;
	pthread_mutex_unlock(&c->mu);
	c->next_rev = top + 1;
	pthread_rwlock_wrlock(&c->lk);
	map_prune(&c->map, horizon);
	pthread_rwlock_unlock(&c->lk);
	if (c->old != NULL)
		wc_reap(c);
	wc_tell(c, rv);
	return KI_OK;
}

static size_t
on_watch(char *p, size_t size, size_t n, void *arg)
{
	et_wcache *c = arg;
	size_t len = size * n, at = 0;

	while (at < len) {
		json_object *o;
		int rc;

		while (at < len && (p[at] == '\n' || p[at] == '\r' || p[at] == ' '))
			at++;
		if (at == len)
			break;
		o = json_tokener_parse_ex(c->tok, p + at, (int)(len - at));
		if (o == NULL) {
			if (json_tokener_get_error(c->tok) == json_tokener_continue)
				return len;
			return 0;
		}
		at += json_tokener_get_parse_end(c->tok);
		json_tokener_reset(c->tok);
		rc = wc_message(c, o);
		json_object_put(o);
		if (rc != KI_OK)
			return 0;   /* ends the stream */
	}
	return len;
}

static int
on_watch_stopped(void *arg)
{
	return wc_stopped(arg);
}

static void
wc_not_ready(et_wcache *c)
{
	pthread_mutex_lock(&c->mu);
	c->ready = 0;
	c->resync = 0;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void
wc_pause(et_wcache *c, int tenths)
{
	for (int i = 0; i < tenths * 2 && !wc_stopped(c); i++)
		usleep(50000);
}

static void *
wc_loop(void *arg)
{
	et_wcache *c = arg;
	int fails = 0;

	ki_thread_name("ki-etcd-cache");
	for (;;) {
		ki_buf b;

		pthread_mutex_lock(&c->mu);
		while (c->hold && !c->stop)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->stop) {
			pthread_mutex_unlock(&c->mu);
			break;
		}
		pthread_mutex_unlock(&c->mu);
		if (c->reload) {
			wc_not_ready(c);
			if (wc_load(c) != KI_OK) {
				wc_log(c, STORE_LOG_WARN, "etcd watch cache: "
				    "loading the keyspace failed; reads go to etcd "
				    "until it succeeds");
				wc_pause(c, fails < 10 ? ++fails : fails);
				continue;
			}
		}
		ki_buf_init(&b);
		ki_buf_puts(&b, "{\"create_request\":{\"key\":");
		et_b64(&b, c->start, c->slen);
		ki_buf_puts(&b, ",\"range_end\":");
		et_b64(&b, c->end, c->elen);
		ki_buf_printf(&b, ",\"start_revision\":\"%lld\"}}",
		    (long long)c->next_rev);
		json_tokener_reset(c->tok);
		if (!b.oom)
			(void)et_stream(c->e, "/v3/watch", b.data, b.len, on_watch,
			    c, on_watch_stopped, c, &c->sock);
		ki_buf_free(&b);
		/* The stream ended (a member went away, a compaction, a
		 * stall): etcd answers reads until it is up again. */
		wc_not_ready(c);
		if (!c->reload)
			fails = 0;
		wc_pause(c, 1);
	}
	return NULL;
}

int
et_wc_start(et_store *e)
{
	et_wcache *c;
	char key[512];
	size_t n;
	int rc;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return KI_ENOMEM;
	c->e = e;
	pthread_rwlock_init(&c->lk, NULL);
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->fmu, NULL);
	pthread_mutex_init(&c->qmu, NULL);
	pthread_cond_init(&c->qcv, NULL);
	pthread_cond_init(&c->cv, NULL);
	pthread_mutex_init(&c->sock.mu, NULL);
	c->sock.fd = -1;
	e->wc = c;
	n = et_key(e, key, 'm', "rv", 2);
	c->slen = e->prefix_len;
	if ((rc = map_init(&c->map)) != KI_OK ||
	    (c->tok = json_tokener_new()) == NULL ||
	    (c->rvkey = malloc(n)) == NULL ||
	    (c->start = malloc(c->slen + 1)) == NULL ||
	    (c->end = malloc(c->slen + 1)) == NULL) {
		rc = KI_ENOMEM;
		goto fail;
	}
	memcpy(c->rvkey, key, n);
	c->rvklen = n;
	memcpy(c->start, e->prefix, c->slen);
	memcpy(c->end, e->prefix, c->slen);
	c->elen = et_prefix_end(c->end, c->slen);
	if ((rc = wc_load(c)) != KI_OK)
		goto fail;
	if (pthread_create(&c->thread, NULL, wc_loop, c) != 0) {
		rc = KI_ENOMEM;
		goto fail;
	}
	c->thread_started = 1;
	/* Reads wait for the watch (a moment) rather than find it not
	 * ready and go to etcd. */
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < 50 && !c->ready; i++) {
		struct timespec at;

		clock_gettime(CLOCK_REALTIME, &at);
		at.tv_nsec += 20000000L;
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->cv, &c->mu, &at);
	}
	pthread_mutex_unlock(&c->mu);
	return KI_OK;
fail:
	et_wc_stop(e);
	return rc;
}

void
et_wc_stop(et_store *e)
{
	et_wcache *c = e->wc;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	c->ready = 0;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	et_sock_kick(&c->sock);
	if (c->thread_started)
		pthread_join(c->thread, NULL);
	map_free(&c->map);
	while (c->old != NULL) {
		wc_old *o = c->old;

		c->old = o->next;
		map_free(&o->map);
		free(o);
	}
	if (c->tok != NULL)
		json_tokener_free(c->tok);
	free(c->readers);
	free(c->rvkey);
	free(c->start);
	free(c->end);
	pthread_rwlock_destroy(&c->lk);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->fmu);
	pthread_mutex_destroy(&c->qmu);
	pthread_cond_destroy(&c->qcv);
	pthread_mutex_destroy(&c->sock.mu);
	pthread_cond_destroy(&c->cv);
	free(c);
	e->wc = NULL;
}

void
et_wc_hold(et_store *e, int hold)
{
	et_wcache *c = e->wc;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->hold = hold;
	if (hold)
		c->ready = 0;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (hold)
		et_sock_kick(&c->sock);
}

void
et_wc_follow(et_store *e, void (*fn)(void *arg, uint64_t rv), void *arg)
{
	et_wcache *c = e->wc;

	pthread_mutex_lock(&c->fmu);
	c->fn = fn;
	c->arg = arg;
	pthread_mutex_lock(&c->mu);
	c->told = c->rv;
	pthread_mutex_unlock(&c->mu);
	pthread_mutex_unlock(&c->fmu);
}
