/* tests/unit/test_store_integrity.c — damaged stores: redo-log records and
 * data pages flipped (by position and at random), and a full disk. A
 * damaged store is refused clearly or recovered exactly, never served. */
#define _GNU_SOURCE /* mkdtemp */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/lmdb.h"
#include "store/store.h"
#include "store/wal.h"
#include "tests/unit/tests.h"

#define LOG_DATA 69632   /* where a redo file's records begin */

static const char *const files[] = { "data.mdb", "redo.0", "redo.1",
	"redo.side" };

static int
copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out, rc = 0;
	ssize_t n;

	if (in < 0)
		return errno == ENOENT ? 0 : -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0640);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	if (n < 0)
		rc = -1;
	close(in);
	close(out);
	return rc;
}

/* Copies the store's files from one directory into another. */
static int
copy_store(const char *from, const char *to)
{
	char a[512], b[512];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(a, sizeof(a), "%s/%s", from, files[i]);
		snprintf(b, sizeof(b), "%s/%s", to, files[i]);
		if (copy_file(a, b) != 0)
			return -1;
	}
	return 0;
}

static int
flip(const char *dir, const char *name, uint64_t off, uint8_t mask)
{
	char path[512];
	uint8_t c;
	int fd, rc = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_RDWR)) < 0)
		return -1;
	if (pread(fd, &c, 1, (off_t)off) == 1) {
		c ^= mask;
		if (pwrite(fd, &c, 1, (off_t)off) == 1)
			rc = 0;
	}
	close(fd);
	return rc;
}

/* The LMDB tuning of the next iopen(): iopts() resets it. */
static store_lmdb_options ilo;

static store_options
iopts(void)
{
	store_options o;

	memset(&o, 0, sizeof(o));
	memset(&ilo, 0, sizeof(ilo));
	ilo.map_size = 16u << 20;
	o.history = 1000;
	o.nosync = 1;
	/* No checkpoint but the open's: every write stays in the log. */
	ilo.checkpoint_bytes = UINT64_C(1) << 40;
	ilo.checkpoint_ms = UINT64_C(1) << 40;
	return o;
}

static int
iopen(store **s, const char *dir, const store_options *o)
{
	return store_lmdb_open(s, dir, o, &ilo);
}

static int
put_named(store_txn *t, const char *name, uint8_t dbyte)
{
	char json[512];
	store_obj o;

	memset(&o, 0, sizeof(o));
	snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"%s\"},"
	    "\"spec\":{\"d\":%u,\"pad\":\"%0200d\"},\"status\":{}}", name,
	    dbyte, 0);
	o.kind = 1;
	o.rv = store_next_rv(t);
	memset(o.digest, dbyte, sizeof(o.digest));
	o.name = name;
	o.name_len = strlen(name);
	o.json = json;
	o.json_len = strlen(json);
	return store_put(t, &o);
}

/* The records of a redo file: their offsets and ends. */
typedef struct lrecs {
	uint64_t at[64], end[64];
	size_t n;
} lrecs;

static void
log_records(const char *dir, const char *name, lrecs *r)
{
	char path[512];
	uint8_t f[24];
	uint64_t off = LOG_DATA;
	int fd;

	r->n = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY)) < 0)
		return;
	while (r->n < 64 && pread(fd, f, sizeof(f), (off_t)off) == 24) {
		uint32_t magic, len;

		memcpy(&magic, f, 4);
		memcpy(&len, f + 4, 4);
		if (magic != 0x5257494bu)
			break;
		r->at[r->n] = off;
		r->end[r->n] = off + 24 + len;
		off = r->end[r->n++];
	}
	close(fd);
}

/* Opens the store in dir: its result, and in *n the objects it holds and
 * whether they are the first *n of those written (names w0, w1, ...). */
static int
open_count(const char *dir, uint64_t *n, int *prefix)
{
	store_options o = iopts();
	store *s;
	store_txn *t;
	store_obj ob;
	char name[32];
	int rc;

	*n = 0;
	*prefix = 1;
	if ((rc = iopen(&s, dir, &o)) != KI_OK)
		return rc;
	if (store_begin(s, 0, &t) == KI_OK) {
		(void)store_count(t, 1, n);
		for (uint64_t i = 0; i < *n; i++) {
			snprintf(name, sizeof(name), "w%llu", (unsigned long long)i);
			if (store_get_by_name(t, 1, name, strlen(name), &ob) !=
			    KI_OK)
				*prefix = 0;
		}
		store_abort(t);
	}
	store_close(s);
	return KI_OK;
}

/* A store whose last n transactions (one object each) are only in the
 * redo log, as a crash leaves it; returns the redo file holding them. */
static const char *
crashed_store(const char *dir, int n)
{
	store_options o = iopts();
	store *s;
	store_txn *t;
	char name[16];
	lrecs r;

	if (iopen(&s, dir, &o) != KI_OK)
		return NULL;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		if (store_begin(s, 1, &t) != KI_OK)
			break;
		CU_ASSERT_EQUAL(put_named(t, name, (uint8_t)(i + 1)), KI_OK);
		CU_ASSERT_EQUAL(store_commit(t), KI_OK);
	}
	store_lmdb_crash(s);
	log_records(dir, "redo.0", &r);
	if (r.n == (size_t)n)
		return "redo.0";
	log_records(dir, "redo.1", &r);
	return r.n == (size_t)n ? "redo.1" : NULL;
}

/* One byte of a logged record flipped: a damaged record before the last
 * refuses the open (the records after it were acknowledged); the last one
 * damaged is a write a crash cut short, and the others are applied. */
static void
test_log_flips(void)
{
	enum { N = 6 };
	char *pristine = tests_tmpdir(), *work = tests_tmpdir();
	const char *log;
	lrecs r;
	uint64_t n, rng = 88172645463325252u;
	int prefix, refused = 0, recovered = 0, tried = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pristine);
	CU_ASSERT_PTR_NOT_NULL_FATAL(work);
	log = crashed_store(pristine, N);
	CU_ASSERT_PTR_NOT_NULL_FATAL(log);
	log_records(pristine, log, &r);
	/* Undamaged, the log gives back everything. */
	CU_ASSERT_EQUAL_FATAL(copy_store(pristine, work), 0);
	CU_ASSERT_EQUAL(open_count(work, &n, &prefix), KI_OK);
	CU_ASSERT_EQUAL(n, N);
	for (int pass = 0; pass < 2; pass++) {
		/* By position: every byte of each record's fields and every
		 * 29th of its payload; then 60 at random. */
		size_t count = pass == 0 ? r.end[N - 1] - r.at[0] : 60;

		for (size_t k = 0; k < count; k++) {
			uint64_t off;
			size_t rec = 0;

			if (pass == 0) {
				off = r.at[0] + k;
				while (rec < N && off >= r.end[rec])
					rec++;
				if (off - r.at[rec] >= 24 &&
				    (off - r.at[rec]) % 29 != 0)
					continue;
			} else {
				rng ^= rng << 13;
				rng ^= rng >> 7;
				rng ^= rng << 17;
				off = r.at[0] + rng % (r.end[N - 1] - r.at[0]);
				while (rec < N && off >= r.end[rec])
					rec++;
			}
			CU_ASSERT_EQUAL_FATAL(copy_store(pristine, work), 0);
			CU_ASSERT_EQUAL_FATAL(flip(work, log, off,
			    (uint8_t)(1u << (k % 8))), 0);
			tried++;
			if (rec < N - 1) {
				int rc = open_count(work, &n, &prefix);

				CU_ASSERT_EQUAL(rc, KI_ECORRUPT);
				if (rc != KI_ECORRUPT)
					fprintf(stderr, "\nlog byte %llu (record "
					    "%zu) flipped: %d, %llu objects\n",
					    (unsigned long long)off, rec, rc,
					    (unsigned long long)n);
				refused += rc == KI_ECORRUPT;
			} else {
				CU_ASSERT_EQUAL(open_count(work, &n, &prefix),
				    KI_OK);
				CU_ASSERT_EQUAL(n, N - 1);
				CU_ASSERT(prefix);
				recovered += n == N - 1 && prefix;
			}
		}
	}
	CU_ASSERT(tried > 100 && refused > 0 && recovered > 0);
	tests_rmdir(pristine);
	tests_rmdir(work);
	free(pristine);
	free(work);
}

/* A checksum of a file's bytes (FNV-1a), 0 when it cannot be read. */
static uint64_t
file_sum(const char *dir, const char *name)
{
	char path[512];
	uint8_t buf[65536];
	uint64_t h = 14695981039346656037u;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY)) < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ buf[i]) * 1099511628211u;
	close(fd);
	return h;
}

static int
cut(const char *dir, const char *name, uint64_t size)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return truncate(path, (off_t)size);
}

/* The log cut short (truncated at or inside a record) after a crash that
 * left the data file holding every commit: with two records or more gone
 * the open is refused, data.mdb untouched (acknowledged writes are in it,
 * not in the log); the last record alone gone is a write a crash cut
 * short, and the others are applied. */
static void
test_log_cut_short(void)
{
	enum { N = 6 };
	char *pristine = tests_tmpdir(), *work = tests_tmpdir();
	const char *log;
	lrecs r;
	uint64_t n, before;
	int prefix;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pristine);
	CU_ASSERT_PTR_NOT_NULL_FATAL(work);
	log = crashed_store(pristine, N);
	CU_ASSERT_PTR_NOT_NULL_FATAL(log);
	log_records(pristine, log, &r);
	CU_ASSERT_EQUAL_FATAL(r.n, N);
	for (size_t k = 0; k < N; k++) {
		for (int inside = 0; inside < 2; inside++) {
			int rc;

			CU_ASSERT_EQUAL_FATAL(copy_store(pristine, work), 0);
			CU_ASSERT_EQUAL_FATAL(cut(work, log, r.at[k] +
			    (inside ? 30 : 0)), 0);
			before = file_sum(work, "data.mdb");
			rc = open_count(work, &n, &prefix);
			if (k < N - 1) {
				CU_ASSERT_EQUAL(rc, KI_ECORRUPT);
				CU_ASSERT_EQUAL(file_sum(work, "data.mdb"),
				    before);
				if (rc != KI_ECORRUPT)
					fprintf(stderr, "\nlog cut at record %zu"
					    "%s: %d, %llu objects\n", k,
					    inside ? " (inside)" : "", rc,
					    (unsigned long long)n);
			} else {
				CU_ASSERT_EQUAL(rc, KI_OK);
				CU_ASSERT_EQUAL(n, N - 1);
				CU_ASSERT(prefix);
			}
		}
	}
	/* Refused, the log moved away: the data file as it is. */
	CU_ASSERT_EQUAL_FATAL(copy_store(pristine, work), 0);
	CU_ASSERT_EQUAL_FATAL(cut(work, log, r.at[1]), 0);
	CU_ASSERT_EQUAL(open_count(work, &n, &prefix), KI_ECORRUPT);
	CU_ASSERT_EQUAL(cut(work, "redo.0", 0), 0);
	CU_ASSERT_EQUAL(cut(work, "redo.1", 0), 0);
	CU_ASSERT_EQUAL(open_count(work, &n, &prefix), KI_OK);
	CU_ASSERT_EQUAL(n, N);
	CU_ASSERT(prefix);
	tests_rmdir(pristine);
	tests_rmdir(work);
	free(pristine);
	free(work);
}

/* Another store's redo log beside a data file (files copied between
 * directories): the open is refused and the data file left as it was,
 * not given the other store's meta pages and transactions; without the
 * foreign log it opens with its own objects. */
static void
test_log_of_another_store(void)
{
	char *a = tests_tmpdir(), *b = tests_tmpdir();
	char from[512], to[512];
	uint64_t n, before;
	int prefix;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_PTR_NOT_NULL_FATAL(crashed_store(a, 5));
	CU_ASSERT_PTR_NOT_NULL_FATAL(crashed_store(b, 3));
	for (size_t i = 1; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(from, sizeof(from), "%s/%s", a, files[i]);
		snprintf(to, sizeof(to), "%s/%s", b, files[i]);
		CU_ASSERT_EQUAL_FATAL(copy_file(from, to), 0);
	}
	before = file_sum(b, "data.mdb");
	CU_ASSERT_EQUAL(open_count(b, &n, &prefix), KI_ECORRUPT);
	CU_ASSERT_EQUAL(file_sum(b, "data.mdb"), before);
	for (size_t i = 1; i < sizeof(files) / sizeof(files[0]); i++)
		(void)cut(b, files[i], 0);
	CU_ASSERT_EQUAL(open_count(b, &n, &prefix), KI_OK);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT(prefix);
	tests_rmdir(a);
	tests_rmdir(b);
	free(a);
	free(b);
}

typedef struct wl_n {
	uint64_t txnid[16];
	size_t n;
} wl_n;

static int
wl_take(void *arg, uint64_t txnid, const uint8_t *data, size_t len)
{
	wl_n *w = arg;

	(void)data;
	(void)len;
	if (w->n < 16)
		w->txnid[w->n++] = txnid;
	return 0;
}

/* The log's files in turn: a damaged last record of the first file, while
 * the second holds later records (a checkpoint was in flight), is a gap,
 * not the end of the log. */
static void
test_log_gap_across_files(void)
{
	for (int which = 0; which < 3; which++) {
		char *dir = tests_tmpdir();
		uint8_t payload[100];
		wal_damage bad;
		wal_head *h = calloc(1, sizeof(*h));
		wl_n got = { .n = 0 };
		wal *w;
		int owner, rc;

		CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
		CU_ASSERT_PTR_NOT_NULL_FATAL(h);
		memset(payload, 0x5a, sizeof(payload));
		CU_ASSERT_EQUAL_FATAL(wal_open(&w, dir, &owner), KI_OK);
		/* As the open leaves it: a checkpoint's header in file 0
		 * (appends switched there), then records. */
		CU_ASSERT_EQUAL(wal_switch(w), 1);
		CU_ASSERT_EQUAL(wal_switch(w), 0);
		h->seq = 1;
		h->txnid = 10;
		h->meta_len = 64;
		CU_ASSERT_EQUAL(wal_head_write(w, 0, h, 1), KI_OK);
		for (uint64_t x = 11; x <= 13; x++)
			CU_ASSERT_EQUAL(wal_append(w, x, payload, sizeof(payload),
			    1), KI_OK);
		CU_ASSERT_EQUAL(wal_switch(w), 1);
		for (uint64_t x = 14; x <= 15; x++)
			CU_ASSERT_EQUAL(wal_append(w, x, payload, sizeof(payload),
			    1), KI_OK);
		wal_close(w);
		/* which 0: nothing damaged; 1: file 0's last record (13); 2:
		 * its first (11). */
		if (which > 0)
			CU_ASSERT_EQUAL(flip(dir, "redo.0", LOG_DATA +
			    (which == 1 ? 2 : 0) * (24 + sizeof(payload)) + 40,
			    0x10), 0);
		CU_ASSERT_EQUAL_FATAL(wal_open(&w, dir, &owner), KI_OK);
		{
			int file;

			CU_ASSERT_EQUAL(wal_head_read(w, h, &file), KI_OK);
			CU_ASSERT_EQUAL(file, 0);
			CU_ASSERT_EQUAL(h->first, 1);
		}
		rc = wal_each(w, 0, h->txnid, h->first, wl_take, &got, &bad);
		if (which == 0) {
			CU_ASSERT_EQUAL(rc, KI_OK);
			CU_ASSERT_EQUAL(got.n, 5);
		} else {
			CU_ASSERT_EQUAL(rc, KI_ECORRUPT);
			CU_ASSERT_EQUAL(got.n, 0);
			CU_ASSERT_EQUAL(bad.file, which == 1 ? 1 : 0);
		}
		wal_close(w);
		free(h);
		tests_rmdir(dir);
		free(dir);
	}
}

/* A full disk (a small tmpfs mounted for the test, as root; skipped with
 * a printed reason otherwise): the write that does not fit fails with
 * KI_ENOSPC (which the API answers with 507), reads go on, and the store
 * opens again with every acknowledged write. */
static void
test_disk_full(void)
{
	char *dir = tests_tmpdir(), sub[512];
	store_options o = iopts();
	store *s;
	store_txn *t;
	int rc = KI_OK, acked = 0;
	uint64_t n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	if (geteuid() != 0 || mount("tmpfs", dir, "tmpfs", 0, "size=3m") != 0) {
		fprintf(stderr, "\n  skipped: a 3 MiB tmpfs cannot be mounted "
		    "here (%s); the full-disk case is not exercised\n",
		    geteuid() != 0 ? "not root" : strerror(errno));
		tests_rmdir(dir);
		free(dir);
		return;
	}
	snprintf(sub, sizeof(sub), "%s/store", dir);
	ilo.map_size = 64u << 20;   /* the disk fills first, not the map */
	o.nosync = 0;
	ilo.checkpoint_bytes = 0;
	ilo.checkpoint_ms = 0;
	CU_ASSERT_EQUAL_FATAL(iopen(&s, sub, &o), KI_OK);
	for (int i = 0; i < 100000 && rc == KI_OK; i++) {
		char name[32];

		snprintf(name, sizeof(name), "w%d", i);
		if ((rc = store_begin(s, 1, &t)) != KI_OK)
			break;
		if ((rc = put_named(t, name, (uint8_t)(i + 1))) != KI_OK) {
			store_abort(t);
			break;
		}
		if ((rc = store_commit(t)) == KI_OK)
			acked++;
	}
	CU_ASSERT_EQUAL(rc, KI_ENOSPC);
	if (rc != KI_ENOSPC)
		fprintf(stderr, "\n  the full disk gave %d (%s) after %d "
		    "writes\n", rc, ki_strerror(rc), acked);
	CU_ASSERT(acked > 10);
	/* Reads go on. */
	CU_ASSERT_EQUAL(store_begin(s, 0, &t), KI_OK);
	CU_ASSERT_EQUAL(store_count(t, 1, &n), KI_OK);
	CU_ASSERT_EQUAL(n, (uint64_t)acked);
	store_abort(t);
	store_close(s);
	o.nosync = 1;
	if (iopen(&s, sub, &o) == KI_OK) {
		CU_ASSERT_EQUAL(store_begin(s, 0, &t), KI_OK);
		CU_ASSERT_EQUAL(store_count(t, 1, &n), KI_OK);
		CU_ASSERT_EQUAL(n, (uint64_t)acked);
		store_abort(t);
		store_close(s);
	}
	CU_ASSERT_EQUAL(umount(dir), 0);
	tests_rmdir(dir);
	free(dir);
}

/* ---- the data file ---- */

enum { DN = 40 };

/* A cleanly closed store of DN objects w0.. (digest byte i + 1). */
static int
data_store(const char *dir)
{
	store_options o = iopts();
	store *s;
	store_txn *t;
	char name[16];
	int rc;

	char *tmp = tests_tmpdir(), path[512];
	int fd;

	if (tmp == NULL)
		return KI_ENOMEM;
	if ((rc = iopen(&s, tmp, &o)) != KI_OK)
		goto out;
	for (int i = 0; i < DN && rc == KI_OK; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		if ((rc = store_begin(s, 1, &t)) != KI_OK)
			break;
		if ((rc = put_named(t, name, (uint8_t)(i + 1))) != KI_OK) {
			store_abort(t);
			break;
		}
		rc = store_commit(t);
	}
	/* Its compacted copy, as a restore puts it: every page of the file
	 * is live (the store's own file keeps the superseded copies of the
	 * pages its commits replaced). */
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if (rc == KI_OK) {
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640)) < 0) {
			rc = KI_EIO;
		} else {
			rc = store_lmdb_backup_fd(s, fd);
			close(fd);
		}
	}
	store_close(s);
out:
	tests_rmdir(tmp);
	free(tmp);
	return rc;
}

/* Reads every object by name and by digest and compares it with what was
 * written: 0 all exact, 1 some refused (an error, never other content),
 * 2 some served wrong; *verify_problems from store_verify. -1: the open
 * refused the store. */
static int
data_read_all(const char *dir, uint64_t *problems)
{
	store_options o = iopts();
	store_verify_stats vs;
	store *s;
	store_txn *t;
	int worst = 0;

	*problems = 0;
	if (iopen(&s, dir, &o) != KI_OK)
		return -1;
	if (store_begin(s, 0, &t) != KI_OK) {
		store_close(s);
		return -1;
	}
	for (int i = 0; i < DN; i++) {
		char name[16], json[512];
		uint8_t d[STORE_DIGEST_LEN];
		store_obj ob;
		int rc;

		snprintf(name, sizeof(name), "w%d", i);
		snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"%s\"},"
		    "\"spec\":{\"d\":%u,\"pad\":\"%0200d\"},\"status\":{}}", name,
		    i + 1, 0);
		memset(d, i + 1, sizeof(d));
		for (int by = 0; by < 2; by++) {
			rc = by ? store_get_by_digest(t, d, &ob) :
			    store_get_by_name(t, 1, name, strlen(name), &ob);
			if (rc != KI_OK) {
				if (worst < 1)
					worst = 1;
			} else if (ob.json_len != strlen(json) ||
			    memcmp(ob.json, json, ob.json_len) != 0 ||
			    memcmp(ob.digest, d, sizeof(d)) != 0 ||
			    ob.name_len != strlen(name) ||
			    memcmp(ob.name, name, ob.name_len) != 0) {
				worst = 2;
			}
		}
	}
	store_abort(t);
	if (store_verify(s, 0, NULL, NULL, NULL, &vs) == KI_OK)
		*problems = vs.problems;
	else
		*problems = UINT64_MAX;
	store_close(s);
	return worst;
}

static uint64_t
find_bytes(const char *dir, const char *name, const char *needle)
{
	char path[512];
	FILE *f;
	char *buf;
	long n;
	uint64_t at = UINT64_MAX;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "rb")) == NULL)
		return at;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	if (n > 0 && (buf = malloc((size_t)n)) != NULL) {
		if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
			char *p = memmem(buf, (size_t)n, needle, strlen(needle));

			if (p != NULL)
				at = (uint64_t)(p - buf);
		}
		free(buf);
	}
	fclose(f);
	return at;
}

/* A byte of a stored record flipped (its JSON, its header): that object
 * is refused by name and by digest (KI_ECORRUPT), every other is served
 * exactly, and store_verify reports it. */
static void
test_data_record_flips(void)
{
	char *pristine = tests_tmpdir(), *work = tests_tmpdir();
	int tried = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pristine);
	CU_ASSERT_PTR_NOT_NULL_FATAL(work);
	CU_ASSERT_EQUAL_FATAL(data_store(pristine), KI_OK);
	for (int i = 0; i < DN; i += 3) {
		char needle[32];
		uint64_t at, problems;
		/* Into its JSON, its name, its header's digest. */
		static const int delta[] = { 40, 120, 9, -30, -60 };

		snprintf(needle, sizeof(needle), "\"name\":\"w%d\"}", i);
		at = find_bytes(pristine, "data.mdb", needle);
		CU_ASSERT_FATAL(at != UINT64_MAX);
		for (size_t k = 0; k < sizeof(delta) / sizeof(delta[0]); k++) {
			int worst;

			CU_ASSERT_EQUAL_FATAL(copy_store(pristine, work), 0);
			CU_ASSERT_EQUAL_FATAL(flip(work, "data.mdb",
			    (uint64_t)((int64_t)at + delta[k]), 0x04), 0);
			worst = data_read_all(work, &problems);
			CU_ASSERT_EQUAL(worst, 1);
			CU_ASSERT(problems >= 1 && problems != UINT64_MAX);
			tried++;
		}
	}
	CU_ASSERT(tried >= 50);
	tests_rmdir(pristine);
	tests_rmdir(work);
	free(pristine);
	free(work);
}

/* Bytes flipped anywhere in the data file, each trial in a child process
 * (a damaged B-tree may crash LMDB): no trial may serve other content
 * than was written; a trial either refuses (at open, or per object with
 * an error that store_verify reports) or serves everything exactly. */
static void
test_data_random_flips(void)
{
	char *pristine = tests_tmpdir(), *work = tests_tmpdir();
	uint64_t size, rng = 0x853c49e6748fea9bu;
	int outcome[5] = { 0 };   /* exact, refused, wrong, open refused, crash */

	CU_ASSERT_PTR_NOT_NULL_FATAL(pristine);
	CU_ASSERT_PTR_NOT_NULL_FATAL(work);
	CU_ASSERT_EQUAL_FATAL(data_store(pristine), KI_OK);
	{
		char path[512];
		struct stat st;

		snprintf(path, sizeof(path), "%s/data.mdb", pristine);
		CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
		size = (uint64_t)st.st_size;
	}
	for (int trial = 0; trial < 200; trial++) {
		pid_t pid;
		int status;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		CU_ASSERT_EQUAL_FATAL(copy_store(pristine, work), 0);
		CU_ASSERT_EQUAL_FATAL(flip(work, "data.mdb", rng % size,
		    (uint8_t)(1u << (rng >> 60 & 7))), 0);
		fflush(NULL);
		if ((pid = fork()) == 0) {
			uint64_t problems;
			int worst = data_read_all(work, &problems);

			/* A refused read that store_verify does not report
			 * would be a silent gap. */
			if (worst == 1 && problems == 0)
				worst = 2;
			_exit(worst < 0 ? 3 : worst);
		}
		CU_ASSERT_FATAL(pid > 0);
		CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
		if (WIFEXITED(status) && WEXITSTATUS(status) <= 3)
			outcome[WEXITSTATUS(status)]++;
		else
			outcome[4]++;
	}
	fprintf(stderr, "\n  200 random flips of data.mdb: %d served exactly "
	    "(unused bytes), %d refused per object, %d served wrong content, "
	    "%d refused at open, %d crashed\n", outcome[0], outcome[1],
	    outcome[2], outcome[3], outcome[4]);
	CU_ASSERT_EQUAL(outcome[2], 0);
	tests_rmdir(pristine);
	tests_rmdir(work);
	free(pristine);
	free(work);
}

/* Each page of a compacted data file zeroed in turn (a sector lost), each
 * trial in a child process: store_verify (fsck) reports the damage, or
 * the open refuses the file; neither may abort the process, as LMDB's
 * cursors do when they step onto such a page. */
static void
test_data_zeroed_pages(void)
{
	enum { PSIZE = 4096 };   /* LMDB's page: the system's */
	char *pristine = tests_tmpdir(), *work = tests_tmpdir(), path[512];
	static uint8_t zero[PSIZE];
	uint64_t npages;
	int outcome[5] = { 0 };   /* reported, missed, open refused, error,
	                           * crashed */
	struct stat st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pristine);
	CU_ASSERT_PTR_NOT_NULL_FATAL(work);
	CU_ASSERT_EQUAL_FATAL(data_store(pristine), KI_OK);
	snprintf(path, sizeof(path), "%s/data.mdb", pristine);
	CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
	npages = (uint64_t)st.st_size / PSIZE;
	CU_ASSERT_FATAL(npages > 8);
	snprintf(path, sizeof(path), "%s/data.mdb", work);
	for (uint64_t pg = 2; pg < npages; pg++) {
		pid_t pid;
		int status, fd, fds[2];
		uint8_t got;

		CU_ASSERT_EQUAL_FATAL(copy_store(pristine, work), 0);
		fd = open(path, O_RDWR);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_EQUAL(pwrite(fd, zero, PSIZE, (off_t)(pg * PSIZE)),
		    PSIZE);
		close(fd);
		fflush(NULL);
		CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
		if ((pid = fork()) == 0) {
			store_options o = iopts();
			store_verify_stats vs;
			store *s;
			uint8_t res = 2;

			/* The outcome goes through a pipe: under valgrind an
			 * exit status is valgrind's. */
			close(fds[0]);
			if (iopen(&s, work, &o) == KI_OK) {
				res = store_verify(s, 0, NULL, NULL, NULL, &vs) !=
				    KI_OK ? 3 : vs.problems > 0 ? 0 : 1;
				store_close(s);
			}
			if (write(fds[1], &res, 1) != 1)
				_exit(1);
			_exit(0);
		}
		CU_ASSERT_FATAL(pid > 0);
		close(fds[1]);
		if (read(fds[0], &got, 1) == 1 && got <= 3)
			outcome[got]++;
		else
			outcome[4]++;   /* it died before answering */
		close(fds[0]);
		CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
	}
	fprintf(stderr, "\n  %llu pages zeroed in turn: %d reported by fsck, "
	    "%d missed, %d refused at open, %d fsck errors, %d crashed\n",
	    (unsigned long long)(npages - 2), outcome[0], outcome[1],
	    outcome[2], outcome[3], outcome[4]);
	CU_ASSERT_EQUAL(outcome[1], 0);
	CU_ASSERT_EQUAL(outcome[4], 0);
	tests_rmdir(pristine);
	tests_rmdir(work);
	free(pristine);
	free(work);
}

int
test_store_integrity_register(void)
{
	CU_pSuite s = CU_add_suite("store_integrity", NULL, NULL);

	if (s == NULL ||
	    CU_add_test(s, "a damaged redo-log record is refused unless it is "
	    "the last", test_log_flips) == NULL ||
	    CU_add_test(s, "a record missing between the log's two files is "
	    "refused", test_log_gap_across_files) == NULL ||
	    CU_add_test(s, "a log cut short is refused, not applied without "
	    "its lost records", test_log_cut_short) == NULL ||
	    CU_add_test(s, "another store's redo log is refused",
	    test_log_of_another_store) == NULL ||
	    CU_add_test(s, "a full disk fails a write with KI_ENOSPC, reads go "
	    "on", test_disk_full) == NULL ||
	    CU_add_test(s, "a damaged record is refused, never served, and "
	    "store_verify reports it", test_data_record_flips) == NULL ||
	    CU_add_test(s, "random bytes of the data file flipped: nothing "
	    "wrong is served", test_data_random_flips) == NULL ||
	    CU_add_test(s, "a zeroed page of the data file is reported by "
	    "fsck, not an abort", test_data_zeroed_pages) == NULL)
		return -1;
	return 0;
}
