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
	/* Records are numbered 1, 2, ... (0 is skipped) from the open on,
	 * across both files: a gap between two records that chain on (a
	 * damaged record of one file while the other holds later ones) shows
	 * as a number missing. first_no: the number of the first record
	 * appended to each file since appends last switched to it, written
	 * into its header, so that the first record after a checkpoint is
	 * checked too. */
	uint32_t next_no;
	uint32_t first_no[2];
};

static uint32_t
no_after(uint32_t no)
{
	return no + 1 == 0 ? 1 : no + 1;
}

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
	w->next_no = 1;
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

/* KI_ENOSPC when errno says the file system is full, else KI_EIO. */
static int
io_rc(void)
{
	return errno == ENOSPC || errno == EDQUOT ? KI_ENOSPC : KI_EIO;
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
			return n < 0 ? io_rc() : KI_EIO;
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
	h->first = get32(f + 36);
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
	put32(f + 36, w->first_no[file]);
	put32(f + 32, sum(f, sizeof(f), 32, h->metas, h->meta_len));
	if ((rc = pwrite_all(fd, h->metas, h->meta_len, HEAD_FIELDS)) !=
	    KI_OK || (rc = pwrite_all(fd, f, sizeof(f), 0)) != KI_OK)
		return rc;
	if (!nosync && fdatasync(fd) != 0)
		return io_rc();
	return KI_OK;
}

/* Fills a record's fields for its payload data; no is its number (0:
 * none, redo.side's records). */
static int
rec_fields(uint8_t f[REC_FIELDS], uint64_t txnid, uint32_t no,
	const void *data, size_t len)
{
	if (len > UINT32_MAX)
		return KI_ELIMIT;
	memset(f, 0, REC_FIELDS);
	put32(f, REC_MAGIC);
	put32(f + 4, (uint32_t)len);
	put64(f + 8, txnid);
	put32(f + 20, no);
	put32(f + 16, sum(f, REC_FIELDS, 16, data, len));
	return KI_OK;
}

/* Writes one record at off: fields and payload in one call. */
static int
write_rec(int fd, uint64_t off, uint64_t txnid, uint32_t no, const void *data,
	size_t len)
{
	uint8_t f[REC_FIELDS];
	struct iovec iov[2];
	ssize_t n;
	int rc;

	if ((rc = rec_fields(f, txnid, no, data, len)) != KI_OK)
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
	if (n < 0)
		return io_rc();
	if ((rc = pwrite_all(fd, f, sizeof(f), off)) != KI_OK)
		return rc;
	return pwrite_all(fd, data, len, off + sizeof(f));
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
		if (k < 0)
			return io_rc();
		if (k == 0 || (k & (BLOCK - 1)) != 0)
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
		if ((rc = rec_fields(f, txnid, w->next_no, data, len)) != KI_OK)
			return rc;
		rc = direct_write(w, f, data, len);
		if (rc == KI_OK) {
			direct_advance(w, REC_FIELDS + len);
			w->next_no = no_after(w->next_no);
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
	if ((rc = write_rec(w->fd[w->cur], w->off, txnid, w->next_no, data,
	    len)) != KI_OK)
		return rc;
	if (!nosync && fdatasync(w->fd[w->cur]) != 0) {
		/* Refused, so it must not be applied after a crash either:
		 * clear its fields (best effort; the next append overwrites
		 * it anyway). */
		rc = io_rc();
		memset(f, 0, sizeof(f));
		(void)pwrite_all(w->fd[w->cur], f, sizeof(f), w->off);
		(void)fdatasync(w->fd[w->cur]);
		return rc;
	}
	w->last = w->off;
	w->off += REC_FIELDS + len;
	w->next_no = no_after(w->next_no);
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
		} else {
			w->next_no = w->next_no == 1 ? UINT32_MAX :
			    w->next_no - 1;
		}
		return rc;
	}
	memset(f, 0, sizeof(f));
	if (pwrite_all(w->fd[w->cur], f, sizeof(f), w->last) != KI_OK ||
	    (!nosync && fdatasync(w->fd[w->cur]) != 0))
		return KI_EIO;
	w->off = w->last;
	w->next_no = w->next_no == 1 ? UINT32_MAX : w->next_no - 1;
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
	w->first_no[w->cur] = w->next_no;
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
	rc = write_rec(w->side, w->side_last, txnid, 0, data, len);
	if (rc == KI_OK && fdatasync(w->side) != 0)
		rc = io_rc();
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

/* Reads and checks the record at off: KI_OK with its fields in f and
 * (when data is not NULL) its payload in *data (caller frees), or
 * KI_ENOTFOUND when no whole valid record is there. */
static int
read_rec(int fd, uint64_t off, uint64_t size, uint8_t f[REC_FIELDS],
	uint8_t **data)
{
	uint8_t *p;
	uint32_t len;
	int rc;

	if (data != NULL)
		*data = NULL;
	if (off + REC_FIELDS > size)
		return KI_ENOTFOUND;
	if ((rc = pread_all(fd, f, REC_FIELDS, off)) != KI_OK)
		return rc;
	len = get32(f + 4);
	if (get32(f) != REC_MAGIC || off + REC_FIELDS + len > size)
		return KI_ENOTFOUND;
	if ((p = malloc(len ? len : 1)) == NULL)
		return KI_ENOMEM;
	if ((rc = pread_all(fd, p, len, off + REC_FIELDS)) != KI_OK ||
	    sum(f, REC_FIELDS, 16, p, len) != get32(f + 16)) {
		free(p);
		return rc == KI_OK ? KI_ENOTFOUND : rc;
	}
	if (data != NULL)
		*data = p;
	else
		free(p);
	return KI_OK;
}

/* Whether fd holds, anywhere after the offset from, a valid record with a
 * txnid above prev: one that a damaged record cut off from the chain
 * (KI_ECORRUPT, *at its offset), or none (KI_OK). A file holds records
 * of its earlier cycles after its chain, but their txnids are lower. */
static int
scan_after(int fd, uint64_t from, uint64_t size, uint64_t prev, uint64_t *at)
{
	enum { CHUNK = 1 << 20 };
	static const uint8_t magic[4] = { 0x4b, 0x49, 0x57, 0x52 };
	uint8_t *buf = malloc(CHUNK + 3), f[REC_FIELDS];
	uint64_t off = from;
	int rc = KI_OK;

	if (buf == NULL)
		return KI_ENOMEM;
	while (rc == KI_OK && off + REC_FIELDS <= size) {
		size_t n = size - off < CHUNK + 3 ? (size_t)(size - off) :
		    CHUNK + 3;
		const uint8_t *p = buf, *end;

		if ((rc = pread_all(fd, buf, n, off)) != KI_OK)
			break;
		end = buf + n;
		while (rc == KI_OK && (p = memmem(p, (size_t)(end - p), magic,
		    4)) != NULL) {
			uint64_t cand = off + (uint64_t)(p - buf);

			p++;
			if (cand + REC_FIELDS > size)
				break;
			rc = read_rec(fd, cand, size, f, NULL);
			if (rc == KI_ENOTFOUND) {
				rc = KI_OK;
			} else if (rc == KI_OK && get64(f + 8) > prev) {
				*at = cand;
				rc = KI_ECORRUPT;
			}
		}
		/* The next chunk starts 3 bytes back: a magic across the edge
		 * is found there. */
		off += n > 3 ? n - 3 : n;
		if (n < CHUNK + 3)
			break;
	}
	free(buf);
	return rc;
}

/* Reads fd's run of valid records from off with txnids ascending above
 * *prev, into r; *prev gets the last one's. *no is the number the next
 * record must carry (0: any), and gets the one after the last's. Then
 * checks that no valid record with a higher txnid lies past the run's end:
 * KI_ECORRUPT (with *bad_at) when one does. */
static int
read_chain(int fd, uint64_t off, uint64_t *prev, uint32_t *no, recs *r,
	uint64_t *bad_at)
{
	struct stat st;
	uint8_t f[REC_FIELDS];
	uint64_t size;
	int rc;

	if (fstat(fd, &st) != 0)
		return KI_EIO;
	size = (uint64_t)st.st_size;
	for (;;) {
		rec x;
		uint32_t xno;

		rc = read_rec(fd, off, size, f, &x.data);
		if (rc == KI_ENOTFOUND)
			break;
		if (rc != KI_OK)
			return rc;
		x.len = get32(f + 4);
		x.txnid = get64(f + 8);
		xno = get32(f + 20);
		if (x.txnid <= *prev) {
			free(x.data);
			break;
		}
		if (xno != 0 && *no != 0 && xno != *no) {
			/* A record is missing before this one. */
			free(x.data);
			*bad_at = off;
			return KI_ECORRUPT;
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
		*no = xno != 0 ? no_after(xno) : 0;
		off += sizeof(f) + x.len;
	}
	if ((rc = scan_after(fd, off + 1, size, *prev, bad_at)) ==
	    KI_ECORRUPT && *bad_at > off)
		*bad_at = off;   /* the record that breaks the chain */
	return rc;
}

int
wal_each(wal *w, int file, uint64_t base, uint32_t first,
	int (*fn)(void *arg, uint64_t txnid, const uint8_t *data, size_t len),
	void *arg, wal_damage *bad)
{
	recs m = { 0 }, s = { 0 };
	uint64_t prev = base, sprev = 0, at = 0;
	uint32_t no = first, sno = 0;
	size_t i = 0, j = 0;
	int rc;

	bad->file = -1;
	bad->off = 0;
	if ((rc = read_chain(w->fd[file], WAL_DATA, &prev, &no, &m, &at)) !=
	    KI_OK) {
		bad->file = file;
		goto out;
	}
	if ((rc = read_chain(w->fd[file ^ 1], WAL_DATA, &prev, &no, &m, &at)) !=
	    KI_OK) {
		bad->file = file ^ 1;
		goto out;
	}
	if ((rc = read_chain(w->side, 0, &sprev, &sno, &s, &at)) != KI_OK) {
		bad->file = 2;
		goto out;
	}
	while (j < s.n && s.v[j].txnid <= base)
		j++;
	while (rc == KI_OK && (i < m.n || j < s.n)) {
		rec *x = j >= s.n || (i < m.n && m.v[i].txnid < s.v[j].txnid) ?
		    &m.v[i++] : &s.v[j++];

		rc = fn(arg, x->txnid, x->data, x->len);
	}
out:
	if (rc == KI_OK || bad->file < 0)
		bad->file = -1;
	else
		bad->off = at;
	recs_free(&m);
	recs_free(&s);
	return rc;
}
