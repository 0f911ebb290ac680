/* store/wal.c — the redo log's files (see store/wal.h). */
#define _GNU_SOURCE /* O_DIRECT */
#include "store/wal.h"

#include "lib/ki.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#define HEAD_MAGIC 0x4857494bu  /* "KIWH" */
#define REC_MAGIC 0x5257494bu   /* "KIWR" */
#define HEAD_FIELDS 64
#define WAL_DATA 69632          /* 17 pages: fields and two 32 KB pages */
#define REC_FIELDS 24
#define BLOCK 4096              /* direct writes: offset and length */

/* Appends go through a second descriptor of each file opened O_DIRECT |
 * O_DSYNC where the file system allows it: the record leaves in one write
 * that returns once it is on the device, without passing the page cache
 * and its writeback (which cost more CPU per commit than all of the
 * commit's B-tree work). A direct write covers whole blocks, so each one
 * starts with the bytes already written in its first block (the tail, kept
 * here) and ends with zeros; rewriting those bytes unchanged cannot damage
 * them, whatever part of the write a power failure lets through. */
struct wal {
	int fd[2];          /* redo.0 (holds the owner's lock), redo.1 */
	int dfd[2];         /* the same, for direct appends; -1: buffered */
	int side;           /* redo.side */
	int cur;            /* the file appends go to */
	uint64_t off;       /* next append in it */
	uint64_t last;      /* offset of the last append (for a retract) */
	uint64_t side_last; /* redo.side's size before its last append */
	uint8_t *buf;       /* direct writes' staging, BLOCK-aligned */
	size_t cap;
	uint8_t tail[BLOCK];      /* off's block up to off */
	uint8_t last_tail[BLOCK]; /* last's block up to last */
};

/* Appends go through the page cache from now on. */
static void
direct_off(wal *w)
{
	for (int i = 0; i < 2; i++) {
		if (w->dfd[i] >= 0)
			close(w->dfd[i]);
		w->dfd[i] = -1;
	}
}

static int
open_in(const char *dir, const char *name, int flags)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, O_RDWR | O_CREAT | O_CLOEXEC | flags, 0640);
}

int
wal_open(wal **out, const char *dir, int *owner)
{
	wal *w;

	*out = NULL;
	*owner = 0;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return KI_ENOMEM;
	w->fd[0] = open_in(dir, "redo.0", 0);
	w->fd[1] = open_in(dir, "redo.1", 0);
	w->side = open_in(dir, "redo.side", 0);
	w->dfd[0] = w->dfd[1] = -1;
	if (w->fd[0] < 0 || w->fd[1] < 0 || w->side < 0)
		goto fail;
	/* Not every file system takes O_DIRECT (tmpfs does not): appends
	 * are then written and synced through the page cache. */
	w->dfd[0] = open_in(dir, "redo.0", O_DIRECT | O_DSYNC);
	w->dfd[1] = open_in(dir, "redo.1", O_DIRECT | O_DSYNC);
	if (w->dfd[0] < 0 || w->dfd[1] < 0)
		direct_off(w);
	if (flock(w->fd[0], LOCK_EX | LOCK_NB) == 0)
		*owner = 1;
	else if (errno != EWOULDBLOCK)
		goto fail;
	w->off = w->last = WAL_DATA;
	*out = w;
	return KI_OK;
fail:
	wal_close(w);
	return KI_EIO;
}

void
wal_close(wal *w)
{
	if (w == NULL)
		return;
	direct_off(w);
	for (int i = 0; i < 2; i++)
		if (w->fd[i] >= 0)
			close(w->fd[i]);   /* redo.0's drops the lock */
	free(w->buf);
	if (w->side >= 0)
		close(w->side);
	free(w);
}

static void
put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void
put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint32_t
get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* The checksum of a header or record: its fields with the crc field
 * zeroed, then its body. */
static uint32_t
sum(const uint8_t *fields, size_t nfields, size_t crc_at, const void *body,
	size_t len)
{
	uint8_t f[HEAD_FIELDS];
	uLong c = crc32(0L, Z_NULL, 0);

	memcpy(f, fields, nfields);
	memset(f + crc_at, 0, 4);
	c = crc32(c, f, (uInt)nfields);
	while (len > 0) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

		c = crc32(c, body, n);
		body = (const uint8_t *)body + n;
		len -= n;
	}
	return (uint32_t)c;
}

static int
pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? KI_ENOTFOUND : KI_EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return KI_OK;
}

static int
pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return KI_EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return KI_OK;
}

static int
read_head(int fd, wal_head *h)
{
	uint8_t f[HEAD_FIELDS];
	int rc;

	if ((rc = pread_all(fd, f, sizeof(f), 0)) != KI_OK)
		return rc;
	if (get32(f) != HEAD_MAGIC || get32(f + 4) != 1)
		return KI_ENOTFOUND;
	h->seq = get64(f + 8);
	h->txnid = get64(f + 16);
	h->clean = get32(f + 24);
	h->meta_len = get32(f + 28);
	if (h->meta_len == 0 || h->meta_len > WAL_META_MAX)
		return KI_ENOTFOUND;
	if ((rc = pread_all(fd, h->metas, h->meta_len, HEAD_FIELDS)) != KI_OK)
		return rc;
	if (sum(f, sizeof(f), 32, h->metas, h->meta_len) != get32(f + 32))
		return KI_ENOTFOUND;
	return KI_OK;
}

int
wal_head_read(wal *w, wal_head *h, int *file)
{
	wal_head *b = malloc(sizeof(*b));
	int ra, rb;

	if (b == NULL)
		return KI_ENOMEM;
	ra = read_head(w->fd[0], h);
	rb = read_head(w->fd[1], b);
	if (ra == KI_EIO || rb == KI_EIO) {
		free(b);
		return KI_EIO;
	}
	*file = 0;
	if (rb == KI_OK && (ra != KI_OK || b->seq > h->seq)) {
		memcpy(h, b, sizeof(*h));
		*file = 1;
		ra = KI_OK;
	}
	free(b);
	return ra;
}

int
wal_head_write(wal *w, int file, const wal_head *h, int nosync)
{
	uint8_t f[HEAD_FIELDS];
	int fd = w->fd[file], rc;

	memset(f, 0, sizeof(f));
	put32(f, HEAD_MAGIC);
	put32(f + 4, 1);
	put64(f + 8, h->seq);
	put64(f + 16, h->txnid);
	put32(f + 24, h->clean);
	put32(f + 28, h->meta_len);
	put32(f + 32, sum(f, sizeof(f), 32, h->metas, h->meta_len));
	if ((rc = pwrite_all(fd, h->metas, h->meta_len, HEAD_FIELDS)) !=
	    KI_OK || (rc = pwrite_all(fd, f, sizeof(f), 0)) != KI_OK)
		return rc;
	if (!nosync && fdatasync(fd) != 0)
		return KI_EIO;
	return KI_OK;
}

/* Fills a record's fields for its payload data. */
static int
rec_fields(uint8_t f[REC_FIELDS], uint64_t txnid, const void *data,
	size_t len)
{
	if (len > UINT32_MAX)
		return KI_ELIMIT;
	memset(f, 0, REC_FIELDS);
	put32(f, REC_MAGIC);
	put32(f + 4, (uint32_t)len);
	put64(f + 8, txnid);
	put32(f + 16, sum(f, REC_FIELDS, 16, data, len));
	return KI_OK;
}

/* Writes one record at off: fields and payload in one call. */
static int
write_rec(int fd, uint64_t off, uint64_t txnid, const void *data, size_t len)
{
	uint8_t f[REC_FIELDS];
	struct iovec iov[2];
	ssize_t n;
	int rc;

	if ((rc = rec_fields(f, txnid, data, len)) != KI_OK)
		return rc;
	iov[0].iov_base = f;
	iov[0].iov_len = sizeof(f);
	iov[1].iov_base = (void *)(uintptr_t)data;
	iov[1].iov_len = len;
	do
		n = pwritev(fd, iov, 2, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)(sizeof(f) + len))
		return KI_OK;
	/* A short write: finish it plainly. */
	if (n < 0 || pwrite_all(fd, f, sizeof(f), off) != KI_OK ||
	    pwrite_all(fd, data, len, off + sizeof(f)) != KI_OK)
		return KI_EIO;
	return KI_OK;
}

/* Writes the blocks from off's block on: the tail, then n bytes of data
 * (NULL: zeros), then zeros to the block's end; the tail and off are left
 * as they were. */
static int
direct_write(wal *w, const uint8_t *fields, const void *data, size_t n)
{
	uint64_t at = w->off & ~(uint64_t)(BLOCK - 1);
	size_t head = (size_t)(w->off - at), f = fields ? REC_FIELDS : 0;
	size_t len = (head + f + n + BLOCK - 1) & ~(size_t)(BLOCK - 1);
	size_t done = 0;

	if (len > w->cap) {
		void *p;

		if (posix_memalign(&p, BLOCK, len) != 0)
			return KI_ENOMEM;
		free(w->buf);
		w->buf = p;
		w->cap = len;
	}
	memcpy(w->buf, w->tail, head);
	if (fields != NULL)
		memcpy(w->buf + head, fields, REC_FIELDS);
	if (data != NULL)
		memcpy(w->buf + head + f, data, n);
	else
		memset(w->buf + head + f, 0, n);
	memset(w->buf + head + f + n, 0, len - head - f - n);
	while (done < len) {
		ssize_t k = pwrite(w->dfd[w->cur], w->buf + done, len - done,
		    (off_t)(at + done));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EINVAL && done == 0)
			return KI_EINVAL;   /* the device wants other alignment */
		if (k <= 0 || (k & (BLOCK - 1)) != 0)
			return KI_EIO;
		done += (size_t)k;
	}
	return KI_OK;
}

/* Moves off past n bytes just written by direct_write: the new tail is
 * what its buffer holds of off's new block. */
static void
direct_advance(wal *w, size_t n)
{
	uint64_t at = w->off & ~(uint64_t)(BLOCK - 1);
	uint64_t end = w->off + n, end_at = end & ~(uint64_t)(BLOCK - 1);

	memcpy(w->last_tail, w->tail, (size_t)(w->off - at));
	memcpy(w->tail, w->buf + (end_at - at), (size_t)(end - end_at));
	w->last = w->off;
	w->off = end;
}

int
wal_append(wal *w, uint64_t txnid, const void *data, size_t len, int nosync)
{
	uint8_t f[REC_FIELDS];
	int rc;

	if (!nosync && w->dfd[w->cur] >= 0) {
		if ((rc = rec_fields(f, txnid, data, len)) != KI_OK)
			return rc;
		rc = direct_write(w, f, data, len);
		if (rc == KI_OK) {
			direct_advance(w, REC_FIELDS + len);
			return KI_OK;
		}
		if (rc != KI_EINVAL) {
			/* It may be on the device in part, or whole: clear its
			 * fields (best effort; the next append overwrites it
			 * anyway). */
			(void)direct_write(w, NULL, NULL, REC_FIELDS);
			return rc;
		}
		/* Refused before anything was written: from now on appends go
		 * through the page cache, after the bytes written so far. */
		direct_off(w);
	}
	if ((rc = write_rec(w->fd[w->cur], w->off, txnid, data, len)) != KI_OK)
		return rc;
	if (!nosync && fdatasync(w->fd[w->cur]) != 0) {
		/* Refused, so it must not be applied after a crash either:
		 * clear its fields (best effort; the next append overwrites
		 * it anyway). */
		memset(f, 0, sizeof(f));
		(void)pwrite_all(w->fd[w->cur], f, sizeof(f), w->off);
		(void)fdatasync(w->fd[w->cur]);
		return KI_EIO;
	}
	w->last = w->off;
	w->off += REC_FIELDS + len;
	return KI_OK;
}

int
wal_retract(wal *w, int nosync)
{
	uint8_t f[REC_FIELDS];

	if (!nosync && w->dfd[w->cur] >= 0) {
		uint8_t keep[BLOCK];
		uint64_t off = w->off;
		int rc;

		/* Back to the last append's block and tail, and zeros over its
		 * fields. */
		memcpy(keep, w->tail, sizeof(keep));
		w->off = w->last;
		memcpy(w->tail, w->last_tail, sizeof(w->tail));
		if ((rc = direct_write(w, NULL, NULL, REC_FIELDS)) != KI_OK) {
			w->off = off;
			memcpy(w->tail, keep, sizeof(w->tail));
		}
		return rc;
	}
	memset(f, 0, sizeof(f));
	if (pwrite_all(w->fd[w->cur], f, sizeof(f), w->last) != KI_OK ||
	    (!nosync && fdatasync(w->fd[w->cur]) != 0))
		return KI_EIO;
	w->off = w->last;
	return KI_OK;
}

uint64_t
wal_used(const wal *w)
{
	return w->off - WAL_DATA;
}

int
wal_switch(wal *w)
{
	w->cur ^= 1;
	w->off = w->last = WAL_DATA;
	return w->cur;
}

int
wal_side_append(wal *w, uint64_t txnid, const void *data, size_t len)
{
	struct stat st;
	int rc;

	if (fstat(w->side, &st) != 0)
		return KI_EIO;
	w->side_last = (uint64_t)st.st_size;
	rc = write_rec(w->side, w->side_last, txnid, data, len);
	if (rc == KI_OK && fdatasync(w->side) != 0)
		rc = KI_EIO;
	if (rc != KI_OK) {
		/* A torn or unsynced record would end the side log for the
		 * records after it: cut it off. */
		(void)wal_side_retract(w);
	}
	return rc;
}

int
wal_side_retract(wal *w)
{
	return ftruncate(w->side, (off_t)w->side_last) == 0 &&
	    fdatasync(w->side) == 0 ? KI_OK : KI_EIO;
}

int
wal_trim(wal *w)
{
	int other = w->fd[w->cur ^ 1], cur = w->fd[w->cur];

	if (ftruncate(other, 0) != 0 || ftruncate(cur, WAL_DATA) != 0 ||
	    ftruncate(w->side, 0) != 0 || fdatasync(other) != 0 ||
	    fdatasync(cur) != 0 || fdatasync(w->side) != 0)
		return KI_EIO;
	w->off = w->last = WAL_DATA;
	return KI_OK;
}

/* ---- replay ---- */

typedef struct rec {
	uint64_t txnid;
	uint8_t *data;
	uint32_t len;
} rec;

typedef struct recs {
	rec *v;
	size_t n, cap;
} recs;

static void
recs_free(recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].data);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

/* Reads fd's run of valid records from off with txnids ascending above
 * *prev, into r; *prev gets the last one's. */
static int
read_chain(int fd, uint64_t off, uint64_t *prev, recs *r)
{
	struct stat st;
	uint8_t f[REC_FIELDS];

	if (fstat(fd, &st) != 0)
		return KI_EIO;
	for (;;) {
		rec x;

		if (pread_all(fd, f, sizeof(f), off) != KI_OK ||
		    get32(f) != REC_MAGIC)
			return KI_OK;
		x.len = get32(f + 4);
		x.txnid = get64(f + 8);
		if (x.txnid <= *prev ||
		    off + sizeof(f) + x.len > (uint64_t)st.st_size)
			return KI_OK;
		if ((x.data = malloc(x.len ? x.len : 1)) == NULL)
			return KI_ENOMEM;
		if (pread_all(fd, x.data, x.len, off + sizeof(f)) != KI_OK ||
		    sum(f, sizeof(f), 16, x.data, x.len) != get32(f + 16)) {
			free(x.data);
			return KI_OK;
		}
		if (r->n == r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 64;
			rec *nv = realloc(r->v, cap * sizeof(*nv));

			if (nv == NULL) {
				free(x.data);
				return KI_ENOMEM;
			}
			r->v = nv;
			r->cap = cap;
		}
		r->v[r->n++] = x;
		*prev = x.txnid;
		off += sizeof(f) + x.len;
	}
}

int
wal_each(wal *w, int file, uint64_t base,
	int (*fn)(void *arg, uint64_t txnid, const uint8_t *data, size_t len),
	void *arg)
{
	recs m = { 0 }, s = { 0 };
	uint64_t prev = base, sprev = 0;
	size_t i = 0, j = 0;
	int rc;

	if ((rc = read_chain(w->fd[file], WAL_DATA, &prev, &m)) != KI_OK ||
	    (rc = read_chain(w->fd[file ^ 1], WAL_DATA, &prev, &m)) != KI_OK ||
	    (rc = read_chain(w->side, 0, &sprev, &s)) != KI_OK)
		goto out;
	while (j < s.n && s.v[j].txnid <= base)
		j++;
	while (rc == KI_OK && (i < m.n || j < s.n)) {
		rec *x = j >= s.n || (i < m.n && m.v[i].txnid < s.v[j].txnid) ?
		    &m.v[i++] : &s.v[j++];

		rc = fn(arg, x->txnid, x->data, x->len);
	}
out:
	recs_free(&m);
	recs_free(&s);
	return rc;
}
