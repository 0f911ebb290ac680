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

/* A read transaction keeps reading the state it began with while another
 * store commits. */
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
	CU_ASSERT_EQUAL_FATAL(store_begin(b, 1, &w), KI_OK);
	CU_ASSERT_EQUAL(ts_put(w, 1, "later", 0x11, NULL, NULL, 0), KI_OK);
	CU_ASSERT_EQUAL(store_commit(w), KI_OK);
	CU_ASSERT_EQUAL(store_get_by_name(r, 1, "later", 5, &ob), KI_ENOTFOUND);
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
	for (int rerun = 1; rerun >= 0; rerun--) {
		cjob j;

		memset(&j, 0, sizeof(j));
		pthread_mutex_init(&j.mu, NULL);
		pthread_cond_init(&j.cv, NULL);
		j.job.fn = cjob_fn;
		j.job.arg = &j;
		j.job.done = cjob_done;
		j.job.rerun = rerun;
		j.other = b;
		store_committer_submit(c, &j.job);
		pthread_mutex_lock(&j.mu);
		while (!j.done)
			pthread_cond_wait(&j.cv, &j.mu);
		pthread_mutex_unlock(&j.mu);
		if (rerun) {
			CU_ASSERT_EQUAL(j.runs, 2);
			CU_ASSERT_EQUAL(j.done_rc, KI_OK);
			CU_ASSERT_EQUAL_FATAL(store_begin(b, 0, &t), KI_OK);
			CU_ASSERT_EQUAL(store_get_by_name(t, 1, "batched", 7, &ob),
			    KI_OK);
			CU_ASSERT_EQUAL(store_get_by_name(t, 1, "meanwhile", 9, &ob),
			    KI_OK);
			CU_ASSERT_EQUAL(store_rv(t), 2);
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
	    CU_add_test(s, "a read sees the state it began with",
	        test_snapshot_isolation) == NULL ||
	    CU_add_test(s, "backup is etcd's snapshot (a bbolt file)",
	        test_backup) == NULL ||
	    CU_add_test(s, "the committer runs a batch of rerunnable jobs again "
	        "after a conflict, answers the others with it",
	        test_committer_conflict) == NULL ||
	    CU_add_test(s, "a following store hears of another's commits",
	        test_follow) == NULL ||
	    CU_add_test(s, "no endpoint answers: KI_EUNAVAIL (503)", test_unreachable) ==
	    NULL)
		return -1;
	return 0;
}
