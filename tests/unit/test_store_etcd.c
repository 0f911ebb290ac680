/* tests/unit/test_store_etcd.c — what only the etcd backend has: several
 * stores (daemons) over one cluster, whose concurrent writes conflict
 * instead of overwriting each other, and the backup (etcd's snapshot).
 * Registered when KI_ETCD_ENDPOINTS names a cluster
 * (tests/etcd/conformance.sh). */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "store/etcd.h"
#include "tests/unit/store_tests.h"
#include "tests/unit/tests.h"

static int
open_at(store **out, const char *dir)
{
	store_etcd_options eo;
	store_options o = ts_opts();
	char prefix[512];

	memset(&eo, 0, sizeof(eo));
	eo.endpoints = getenv("KI_ETCD_ENDPOINTS");
	snprintf(prefix, sizeof(prefix), "/kitest-etcd%s/", dir);
	eo.prefix = prefix;
	return store_etcd_open(out, &eo, &o);
}

/* Two stores over the same keys: the write that began before the other
 * committed is refused whole (KI_ECONFLICT), the committed one is kept,
 * and the refused one succeeds when run again. */
static void
test_conflict(void)
{
	char *dir = tests_tmpdir();
	store *a, *b;
	store_txn *ta, *tb;
	store_obj ob;

	CU_ASSERT_EQUAL_FATAL(open_at(&a, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(open_at(&b, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 1, &ta), KI_OK);
	CU_ASSERT_EQUAL(ts_put(ta, 1, "from-a", 0xa1, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &tb), KI_OK);
	CU_ASSERT_EQUAL(ts_put(tb, 1, "from-b", 0xb1, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_rv(tb), 1);
	CU_ASSERT_EQUAL(store_commit(tb), KI_OK);
	/* Both took resourceVersion 1: the later commit must not win. */
	CU_ASSERT_EQUAL(store_commit(ta), KI_ECONFLICT);
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &ta), KI_OK);
	CU_ASSERT_EQUAL(store_rv(ta), 1);
	CU_ASSERT_EQUAL(store_get_by_name(ta, 1, "from-b", 6, &ob), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_name(ta, 1, "from-a", 6, &ob),
	    KI_ENOTFOUND);
	store_abort(ta);
	/* Run again, it goes after b's. */
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 1, &ta), KI_OK);
	CU_ASSERT_EQUAL(ts_put(ta, 1, "from-a", 0xa1, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_commit(ta), KI_OK);
	/* b's reads may lag a's commit until b reaches it. */
	CU_ASSERT_EQUAL(store_sync(b, 0, 3000), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(b, 0, &tb), KI_OK);
	CU_ASSERT_EQUAL(store_rv(tb), 2);
	CU_ASSERT_EQUAL(store_get_by_name(tb, 1, "from-a", 6, &ob), KI_OK);
	CU_ASSERT_EQUAL(ob.rv, 2);
	store_abort(tb);
	/* A token written alone conflicts too: every commit moves the
	 * counter key. */
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 1, &ta), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &tb), KI_OK);
	{
		uint8_t h[32];

		memset(h, 7, sizeof(h));
		CU_ASSERT_EQUAL(store_token_put(ta, h, "{}", 2), KI_OK);
		CU_ASSERT_EQUAL(store_token_put(tb, h, "{\"b\":1}", 7), KI_OK);
	}
	CU_ASSERT_EQUAL(store_commit(ta), KI_OK);
	CU_ASSERT_EQUAL(store_commit(tb), KI_ECONFLICT);
	store_close(a);
	store_close(b);
	tests_rmdir(dir);
	free(dir);
}

/* A read transaction keeps reading the state of its first read while
 * another store commits. */
static void
test_snapshot_isolation(void)
{
	char *dir = tests_tmpdir();
	store *a, *b;
	store_txn *r, *w;
	store_obj ob;
	uint64_t n;

	CU_ASSERT_EQUAL_FATAL(open_at(&a, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(open_at(&b, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &r), KI_OK);
	CU_ASSERT_EQUAL(store_rv(r), 0);
	CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &w), KI_OK);
	CU_ASSERT_EQUAL(ts_put(w, 1, "later", 0x11, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_commit(w), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_name(r, 1, "later", 5, &ob), KI_ENOTFOUND);
	CU_ASSERT_EQUAL(store_get_by_digest(r, (const uint8_t *)
	    "\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11"
	    "\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11",
	    &ob), KI_ENOTFOUND);
	CU_ASSERT_EQUAL(store_count(r, 1, &n), KI_OK);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL(store_rv(r), 0);
	store_abort(r);
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &r), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_name(r, 1, "later", 5, &ob), KI_OK);
	store_abort(r);
	store_close(a);
	store_close(b);
	tests_rmdir(dir);
	free(dir);
}

/* The backup is etcd's snapshot: a bbolt file (its meta page's magic
 * 0xED0CDAED at offset 32 of the first page). */
static void
test_backup(void)
{
	char *dir = tests_tmpdir();
	char path[1024];
	store *s;
	store_txn *t;
	struct stat st;
	unsigned char head[64];
	int fd;

	CU_ASSERT_EQUAL_FATAL(open_at(&s, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(s, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "kept", 0x21, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	snprintf(path, sizeof(path), "%s/snapshot.db", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(store_etcd_backup_fd(s, fd), KI_OK);
	close(fd);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT(st.st_size >= 4096);
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(read(fd, head, sizeof(head)), (ssize_t)sizeof(head));
	close(fd);
	/* bbolt's meta: page header (16 bytes), then magic (u32, host order). */
	CU_ASSERT(head[16] == 0xed && head[17] == 0xda && head[18] == 0x0c &&
	    head[19] == 0xed);
	store_close(s);
	tests_rmdir(dir);
	free(dir);
}

static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;

static void
on_rv(void *arg, uint64_t rv)
{
	uint64_t *seen = arg;

	pthread_mutex_lock(&seen_mu);
	if (rv > *seen)
		*seen = rv;
	pthread_mutex_unlock(&seen_mu);
}

/* Waits up to 10 s for *seen to reach want. */
static uint64_t
wait_seen(uint64_t *seen, uint64_t want)
{
	uint64_t got = 0;

	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&seen_mu);
		got = *seen;
		pthread_mutex_unlock(&seen_mu);
		if (got >= want)
			break;
		usleep(10000);
	}
	return got;
}

/* A store that follows hears of the commits another store makes. */
static void
test_follow(void)
{
	char *dir = tests_tmpdir();
	store *a, *b;
	store_txn *t;
	uint64_t seen = 0;

	CU_ASSERT_EQUAL_FATAL(open_at(&a, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(open_at(&b, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_etcd_follow(a, on_rv, &seen), KI_OK);
	CU_ASSERT_EQUAL(store_etcd_follow(a, on_rv, &seen), KI_EINVAL);
	/* The watch is being set up: commit until it has seen one. */
	for (int i = 0; i < 50 && wait_seen(&seen, 1) == 0; i++) {
		CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &t), KI_OK);
		CU_ASSERT_EQUAL(ts_put(t, 1, "first", 0x31, NULL, NULL, 0), KI_OK);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	}
	CU_ASSERT(wait_seen(&seen, 1) >= 1);
	CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "second", 0x32, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "third", 0x33, NULL, NULL, 0), KI_OK);
	{
		uint64_t want = store_rv(t);

		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		CU_ASSERT_EQUAL(wait_seen(&seen, want), want);
	}
	store_close(a);
	store_close(b);
	tests_rmdir(dir);
	free(dir);
}

/* A job of the committer over store a that, on its first run, lets
 * store b (another daemon) commit in between; then puts its own name. */
typedef struct cjob {
	store_job job;
	store *other;
	int runs, done, done_rc;
	pthread_mutex_t mu;
	pthread_cond_t cv;
} cjob;

static int
cjob_fn(store_txn *t, void *arg)
{
	cjob *j = arg;

	if (j->runs++ == 0) {
		store_txn *o;

		if (store_begin(j->other, 1, &o) != KI_OK)
			return KI_ESTORE;
		if (ts_put(o, 1, "meanwhile", 0x41, NULL, NULL, 0) != KI_OK ||
		    store_commit(o) != KI_OK)
			return KI_ESTORE;
	}
	return ts_put(t, 1, "batched", 0x42, NULL, NULL, 0);
}

static void
cjob_done(store_job *job, int rc)
{
	cjob *j = (cjob *)(void *)job;

	pthread_mutex_lock(&j->mu);
	j->done = 1;
	j->done_rc = rc;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

/* A batch of jobs that may run again is run again when another store
 * committed while it ran: both writes are kept, the job answered once;
 * a batch holding a job that may not run again is answered with the
 * conflict. */
static void
test_committer_conflict(void)
{
	char *dir = tests_tmpdir();
	store *a, *b;
	store_committer *c;
	store_txn *t;
	store_obj ob;

	CU_ASSERT_EQUAL_FATAL(open_at(&a, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(open_at(&b, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_committer_start(&c, a, 0, NULL, NULL),
	    KI_OK);
	/* rerun 2: marked again (runs in a child, may run again). */
	for (int rerun = 2; rerun >= 0; rerun--) {
		cjob j;

		memset(&j, 0, sizeof(j));
		pthread_mutex_init(&j.mu, NULL);
		pthread_cond_init(&j.cv, NULL);
		j.job.fn = cjob_fn;
		j.job.arg = &j;
		j.job.done = cjob_done;
		j.job.rerun = rerun == 1;
		j.job.again = rerun == 2;
		j.other = b;
		store_committer_submit(c, &j.job);
		pthread_mutex_lock(&j.mu);
		while (!j.done)
			pthread_cond_wait(&j.cv, &j.mu);
		pthread_mutex_unlock(&j.mu);
		if (rerun) {
			CU_ASSERT_EQUAL(j.runs, 2);
			CU_ASSERT_EQUAL(j.done_rc, KI_OK);
			/* b's reads may lag a's commit until b reaches it. */
			CU_ASSERT_EQUAL(store_sync(b, 0, 3000), KI_OK);
			CU_ASSERT_EQUAL_FATAL(store_begin(b, 0, &t), KI_OK);
			CU_ASSERT_EQUAL(store_get_by_name(t, 1, "batched", 7, &ob),
			    KI_OK);
			CU_ASSERT_EQUAL(store_get_by_name(t, 1, "meanwhile", 9, &ob),
			    KI_OK);
			/* The second pass replaces what the first wrote. */
			CU_ASSERT_EQUAL(store_rv(t), rerun == 2 ? 2u : 4u);
			store_abort(t);
		} else {
			CU_ASSERT_EQUAL(j.runs, 1);
			CU_ASSERT_EQUAL(j.done_rc, KI_ECONFLICT);
		}
		pthread_mutex_destroy(&j.mu);
		pthread_cond_destroy(&j.cv);
	}
	store_committer_stop(c);
	store_close(a);
	store_close(b);
	tests_rmdir(dir);
	free(dir);
}

/* The requests store s has sent to etcd so far. */
static uint64_t
sent(store *s)
{
	store_etcd_stats st;

	CU_ASSERT_EQUAL(store_etcd_stats_get(s, &st), KI_OK);
	return st.ranges + st.txns;
}

/* Waits up to 10 s for s's watch cache to serve reads. */
static int
wait_ready(store *s)
{
	store_etcd_stats st;

	for (int i = 0; i < 1000; i++) {
		if (store_etcd_stats_get(s, &st) == KI_OK && st.cache_ready)
			return 1;
		usleep(10000);
	}
	return 0;
}

/* The watch cache serves reads: a store reads its own commits at once,
 * with no request to etcd; what another store committed is found by
 * name, digest, natural key and token at once (a lookup that misses is
 * confirmed against etcd: one request), and store_sync reaches a
 * resourceVersion of the other store's before a list. */
static void
test_cache_reads(void)
{
	char *dir = tests_tmpdir();
	store *a, *b;
	store_txn *t;
	store_obj ob;
	uint64_t n0, brv, cnt;
	uint8_t d[STORE_DIGEST_LEN], h[STORE_DIGEST_LEN];
	const char *tv;
	size_t tl;

	CU_ASSERT_EQUAL_FATAL(open_at(&a, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(open_at(&b, dir), KI_OK);
	CU_ASSERT_FATAL(wait_ready(a));
	/* Its own write, read back from the cache alone. */
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "mine", 0x51, "nk-mine", NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	n0 = sent(a);
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_rv(t), 1);
	CU_ASSERT_EQUAL(store_get_by_name(t, 1, "mine", 4, &ob), KI_OK);
	memset(d, 0x51, sizeof(d));
	CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_natkey(t, 1, "nk-mine", 7, &ob), KI_OK);
	CU_ASSERT_EQUAL(store_count(t, 1, &cnt), KI_OK);
	CU_ASSERT_EQUAL(cnt, 1);
	store_abort(t);
	CU_ASSERT_EQUAL(sent(a), n0);
	/* Another store's writes, each found through a at once: a token
	 * (even after the token count was read, as authentication does),
	 * then an object by name, one by digest, one by natural key. */
	CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &t), KI_OK);
	memset(h, 0x5a, sizeof(h));
	CU_ASSERT_EQUAL(store_token_put(t, h, "{}", 2), KI_OK);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_token_count(t, &cnt), KI_OK);
	CU_ASSERT_EQUAL(store_token_get(t, h, &tv, &tl), KI_OK);
	store_abort(t);
	for (int i = 0; i < 3; i++) {
		static const char *const names[] = { "theirs", "theirs-d",
		    "theirs-k" };
		char nk[16];

		snprintf(nk, sizeof(nk), "nk-%d", i);
		CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &t), KI_OK);
		CU_ASSERT_EQUAL(ts_put(t, 1, names[i], (uint8_t)(0x52 + i), nk,
		    NULL, 0), KI_OK);
		brv = store_rv(t);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &t), KI_OK);
		memset(d, 0x52 + i, sizeof(d));
		if (i == 0)
			CU_ASSERT_EQUAL(store_get_by_name(t, 1, names[i],
			    strlen(names[i]), &ob), KI_OK);
		if (i == 1)
			CU_ASSERT_EQUAL(store_get_by_digest(t, d, &ob), KI_OK);
		if (i == 2)
			CU_ASSERT_EQUAL(store_get_by_natkey(t, 1, nk, strlen(nk),
			    &ob), KI_OK);
		store_abort(t);
	}
	/* A list after store_sync (what a list with that resourceVersion
	 * calls first) holds it. */
	CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &t), KI_OK);
	CU_ASSERT_EQUAL(ts_put(t, 1, "late", 0x5f, NULL, NULL, 0), KI_OK);
	brv = store_rv(t);
	CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	CU_ASSERT_EQUAL(store_sync(a, brv, 3000), KI_OK);
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &t), KI_OK);
	CU_ASSERT(store_rv(t) >= brv);
	CU_ASSERT_EQUAL(store_count(t, 1, &cnt), KI_OK);
	CU_ASSERT_EQUAL(cnt, 5);
	store_abort(t);
	/* A resourceVersion no store has: KI_ELIMIT after the wait. */
	CU_ASSERT_EQUAL(store_sync(a, brv + 1000, 200), KI_ELIMIT);
	CU_ASSERT_EQUAL(store_sync(a, 0, 3000), KI_OK);
	/* A name nobody wrote: one request to confirm the 404. */
	n0 = sent(a);
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_name(t, 1, "nobody", 6, &ob), KI_ENOTFOUND);
	store_abort(t);
	CU_ASSERT_EQUAL(sent(a), n0 + 1);
	/* Once the cache has it, a read of b's object costs nothing. */
	n0 = sent(a);
	CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_name(t, 1, "theirs", 6, &ob), KI_OK);
	store_abort(t);
	CU_ASSERT_EQUAL(sent(a), n0);
	store_close(a);
	store_close(b);
	tests_rmdir(dir);
	free(dir);
}

/* etcd's compaction, asked through its JSON gateway. */
static size_t
on_discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static size_t
on_body_buf(char *p, size_t size, size_t n, void *arg)
{
	return ki_buf_append(arg, p, size * n) == KI_OK ? size * n : 0;
}

static int
compact_now(void)
{
	const char *ep = getenv("KI_ETCD_ENDPOINTS");
	char url[512], body[128];
	CURL *c = curl_easy_init();
	struct curl_slist *hd = curl_slist_append(NULL,
	    "Content-Type: application/json");
	long code = 0, rev = 0;
	ki_buf resp;
	int rc = -1;

	ki_buf_init(&resp);
	snprintf(url, sizeof(url), "%.*s/v3/kv/range", (int)strcspn(ep, ","), ep);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{\"key\":\"AA==\"}");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body_buf);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
	if (curl_easy_perform(c) == CURLE_OK && resp.data != NULL) {
		const char *r = strstr(resp.data, "\"revision\":\"");

		if (r != NULL)
			rev = strtol(r + 12, NULL, 10);
	}
	if (rev > 0) {
		snprintf(url, sizeof(url), "%.*s/v3/kv/compaction",
		    (int)strcspn(ep, ","), ep);
		snprintf(body, sizeof(body), "{\"revision\":\"%ld\"}", rev);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_discard);
		if (curl_easy_perform(c) == CURLE_OK) {
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
			rc = code == 200 ? 0 : -1;
		}
	}
	ki_buf_free(&resp);
	curl_slist_free_all(hd);
	curl_easy_cleanup(c);
	return rc;
}

static int
count_events(void *arg, int type, const store_obj *o)
{
	(void)type;
	(void)o;
	(*(int *)arg)++;
	return 0;
}

/* The watch stream breaks: reads go to etcd meanwhile; when it is up
 * again the cache has every change made meanwhile (resumed from the next
 * revision), and after a compaction past that revision it loads the
 * keyspace again; no event is lost either way. */
static void
test_cache_break(void)
{
	char *dir = tests_tmpdir();
	store *a, *b;
	store_txn *t;
	store_obj ob;
	store_etcd_stats st0, st;
	uint64_t cnt;
	int nev;

	CU_ASSERT_EQUAL_FATAL(open_at(&a, dir), KI_OK);
	CU_ASSERT_EQUAL_FATAL(open_at(&b, dir), KI_OK);
	CU_ASSERT_FATAL(wait_ready(a));
	for (int round = 0; round < 2; round++) {
		char name[32];

		CU_ASSERT_EQUAL(store_etcd_stats_get(a, &st0), KI_OK);
		store_etcd_cache_hold(a, 1);
		CU_ASSERT_EQUAL(store_etcd_stats_get(a, &st), KI_OK);
		CU_ASSERT_EQUAL(st.cache_ready, 0);
		for (int i = 0; i < 3; i++) {
			snprintf(name, sizeof(name), "r%d-%d", round, i);
			CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &t), KI_OK);
			CU_ASSERT_EQUAL(ts_put(t, 1, name, (uint8_t)(0x60 + round * 4 +
			    i), NULL, NULL, 0), KI_OK);
			CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		}
		CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &t), KI_OK);
		snprintf(name, sizeof(name), "r%d-1", round);
		CU_ASSERT_EQUAL(store_delete(t, 1, name, strlen(name), &ts_fin),
		    KI_OK);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
		/* Down: a reads etcd, and sees it all. */
		CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &t), KI_OK);
		CU_ASSERT_EQUAL(store_count(t, 1, &cnt), KI_OK);
		CU_ASSERT_EQUAL(cnt, (uint64_t)(2 * round + 2));
		store_abort(t);
		if (round == 1)
			CU_ASSERT_EQUAL(compact_now(), 0);
		store_etcd_cache_hold(a, 0);
		/* After a compaction, the watch is created, then cancelled:
		 * wait for the load. */
		for (int i = 0; i < 1000 && round == 1; i++) {
			CU_ASSERT_EQUAL(store_etcd_stats_get(a, &st), KI_OK);
			if (st.cache_loads > st0.cache_loads)
				break;
			usleep(10000);
		}
		CU_ASSERT_FATAL(wait_ready(a));
		CU_ASSERT_EQUAL(store_etcd_stats_get(a, &st), KI_OK);
		/* Compacted: loaded again; else resumed. */
		CU_ASSERT_EQUAL(st.cache_loads, st0.cache_loads + (round == 1));
		CU_ASSERT_EQUAL(store_sync(a, 0, 3000), KI_OK);
		CU_ASSERT_EQUAL_FATAL(store_begin(a, 0, &t), KI_OK);
		CU_ASSERT_EQUAL(store_count(t, 1, &cnt), KI_OK);
		CU_ASSERT_EQUAL(cnt, (uint64_t)(2 * round + 2));
		snprintf(name, sizeof(name), "r%d-2", round);
		CU_ASSERT_EQUAL(store_get_by_name(t, 1, name, strlen(name), &ob),
		    KI_OK);
		snprintf(name, sizeof(name), "r%d-1", round);
		CU_ASSERT_EQUAL(store_get_by_name(t, 1, name, strlen(name), &ob),
		    KI_ENOTFOUND);
		nev = 0;
		CU_ASSERT_EQUAL(store_events_since(t, 0, count_events, &nev), KI_OK);
		CU_ASSERT_EQUAL(nev, 4 * (round + 1));
		CU_ASSERT_EQUAL(store_rv(t), (uint64_t)(4 * (round + 1)));
		store_abort(t);
	}
	store_close(a);
	store_close(b);
	tests_rmdir(dir);
	free(dir);
}

/* No endpoint that answers: the open fails with KI_EUNAVAIL, nothing leaks. */
static void
test_unreachable(void)
{
	store_etcd_options eo;
	store_options o = ts_opts();
	store *s = NULL;

	memset(&eo, 0, sizeof(eo));
	eo.endpoints = "http://127.0.0.1:1,http://127.0.0.1:2";
	eo.timeout_ms = 500;
	CU_ASSERT_EQUAL(store_etcd_open(&s, &eo, &o), KI_EUNAVAIL);
	CU_ASSERT_PTR_NULL(s);
	eo.endpoints = ",";
	CU_ASSERT_EQUAL(store_etcd_open(&s, &eo, &o), KI_EINVAL);
}

int
test_store_etcd_register(void)
{
	const char *ep = getenv("KI_ETCD_ENDPOINTS");
	CU_pSuite s;

	if (ep == NULL || *ep == '\0')
		return 0;
	s = CU_add_suite("store_etcd", NULL, NULL);
	if (s == NULL ||
	    CU_add_test(s, "two stores: the later commit of a concurrent write "
	        "is a conflict, nothing is lost", test_conflict) == NULL ||
	    CU_add_test(s, "a read sees the state of its first read",
	        test_snapshot_isolation) == NULL ||
	    CU_add_test(s, "backup is etcd's snapshot (a bbolt file)",
	        test_backup) == NULL ||
	    CU_add_test(s, "the committer runs a batch of rerunnable jobs (rerun "
	        "or again) again after a conflict, answers the others with it",
	        test_committer_conflict) == NULL ||
	    CU_add_test(s, "a following store hears of another's commits",
	        test_follow) == NULL ||
	    CU_add_test(s, "the watch cache: own writes at once without a "
	        "request, another store's found at once, store_sync",
	        test_cache_reads) == NULL ||
	    CU_add_test(s, "the watch cache: a broken stream resumes, a "
	        "compaction reloads, no change lost", test_cache_break) == NULL ||
	    CU_add_test(s, "no endpoint answers: KI_EUNAVAIL (503)", test_unreachable) ==
	    NULL)
		return -1;
	return 0;
}
