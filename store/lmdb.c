/* store/lmdb.c — the embedded LMDB backend of store/store.h.
 *
 * Layout (format 7; named databases):
 *   meta     "rv" -> u64 store-wide resourceVersion, "seq" -> u64 last seq,
 *            "changes" -> u64 objects replaced or deleted (store_changes),
 *            "posted" -> u64 the last seq whose ref and label postings and
 *            facet counts are written (see "the tail" below; absent: all
 *            are),
 *            "dgen" -> u64 young digest generations begun, "dlast" ->
 *            the last young digest merged (see young0 below),
 *            "format" -> u64 7
 *   obj      id (u64 big-endian) -> record. An id is the kind in its top
 *            byte and a store-wide sequence below, so one kind's objects
 *            are one ascending key range: a list is a range read, and a
 *            new object lands at the end of its kind's range.
 *   name     kind byte + name -> id
 *   digest8  a digest's first 8 bytes -> ids (DUPSORT|DUPFIXED): per
 *            digest, the first object with that content; a lookup takes
 *            the id whose record holds the whole digest (two digests
 *            sharing 8 bytes are rare, and each keeps its own id)
 *   young0, young1  id -> a new object's digest's first 8 bytes: the
 *            young part of the digest index, merged into digest8 a
 *            generation at a time (see "the digest index")
 *   natkey   kind byte + natural key -> id
 *   ref      32-byte digest -> ids of the objects referencing it
 *            (DUPSORT|DUPFIXED: a posting list in id order)
 *   label    kind byte + key NUL value -> ids carrying that label
 *            (DUPSORT|DUPFIXED: a posting list in id order)
 *   event    rv (u64 big-endian) -> type byte + id (9 bytes)
 *   version  rv -> record: a state an event names that its object's
 *            current record no longer holds (superseded or deleted), kept
 *            as long as the event is
 *   aux      id -> u8 nrefs | u16 natkey_len | refs | natural key: kept
 *            apart from the record so that a run's record (about 3.5 KB
 *            of JSON) fits one 4 KB page
 *   facet    kind byte + facet text -> u64 count
 *   token    SHA-256 of a token -> its JSON description
 *
 * The tail: the ref and label postings and the facet counts of the
 * newest objects (seq above "posted", at most TAIL_MAX of them) are not
 * written yet; the commit that takes the tail to TAIL_MAX writes them all,
 * each posting list getting its ids in one append and each count one
 * update. A list by postings, a walk of referrers and the facet counts
 * read the tail's records instead. Written with each object, a run's
 * twelve postings (8 labels, 4 references) were 32 of the 55 pages a lone
 * run's commit wrote, each a DUPSORT sub-tree's leaf and branch copied for
 * one 8-byte id. Bytes
 * passed to write calls (/proc/PID/io wchar) a POST of a seed bundle:
 * 230 KB on one connection with them, 103 KB with the postings' tail; 21
 * and 19 KB at 64 connections, where a batch's runs share the lists' last
 * pages. On a 300,000-run store, one connection: 345 KB, 158 KB with the
 * postings' tail, 141 KB with the facet counts in it too.
 *
 * Why this shape: every secondary index holds 8-byte ids, appended in
 * ascending order within a posting list, so a batch of new objects dirties
 * the last page of each list, not a page per object; an event is 9 bytes,
 * not a second copy of the object; the only random-order inserts are the
 * content digests (and names and natural keys, as clients choose them).
 * The big values live under ascending keys; random digests only key a
 * small table (digest keys on big values were measured 4-6x slower), and
 * by their first 8 bytes: a new object's digest lands on a random leaf,
 * and 8-byte keys make the table half as many leaves and a fraction of the
 * branch pages that whole digests made, which is what a batch of new
 * objects copies (at 64 connections on a 300,000-run store, five
 * alternating rounds: 22.5-22.8 KB passed to write calls per POST against
 * 23.9-24.1 KB, and 4-7% more POSTs a second). A new object's digest
 * first goes to a young table in id order and reaches that table later, in
 * a merge of neighbouring digests (see "the digest index").
 *
 * A record is a fixed header, then name, natural key, refs and the JSON:
 *   0 u32 magic | 4 u8 kind | 5 u8 nrefs | 6 u16 name_len | 8 u16 natkey_len
 *   10 u16 flags (1: natkey and refs are in aux) | 12 u32 json_len | 16 u64 id | 24 u64 rv | 32 digest[32]
 *   64 u32 meta_off, meta_len, spec_off, spec_len, status_off, status_len
 *   88 u32 labels_len, facets_len
 *   96 name | natkey | refs | labels | facets | json [| u32 crc32c]
 * The CRC-32C (flag 2; every record written since it was added) covers
 * everything before it, and every decode checks it: a damaged record is
 * KI_ECORRUPT, never served (about 0.3 us for a 3.5 KB run's record with
 * the CPU's crc32 instruction). Records of older versions have none.
 * Integers in records are host order: the file is not portable across
 * endianness, like LMDB's own.
 *
 * Durability: commits are logged to the redo log (store/wal.h) and LMDB
 * commits without syncing; checkpoints (below) sync the file.
 *
 * A store of format 2 (objects keyed by seq, events holding copies, a
 * label index keyed by name) is converted at open, in batches, into the
 * tables above; the old tables are dropped when the last batch commits
 * (a crash in between starts the conversion again from the old tables).
 */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np: growth must not starve */
#include "store/store.h"

#include "lib/log.h"
#include "lib/thread.h"
#include "store/wal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define REC_MAGIC 0x324f494bu /* "KIO2" */
#define REC_HDR 96
#define REC_AUX 1   /* natural key and refs live in the aux table */
#define REC_SUM 2   /* the last 4 bytes: CRC-32C of the bytes before them */
/* 5: format 3 and the tail (meta "posted"). A format-3 store has every
 * posting and count written, so it is marked 5 when opened; a format-4
 * store (a tail of postings only: its facets were counted as its objects
 * were put) gets its tail's postings written, then is marked 5 (see
 * post_old_tail). A kernelindexd of an older format refuses a format-5
 * store: its lists would miss the tail's objects, or count their facets
 * twice. */
/* 6: the digest index keyed by 8-byte prefixes ("digest8"); a store of
 * formats 3 to 5 has its "digest" table (whole digests) copied into it at
 * open (see convert_digests). */
/* 7: the young digests ("young0", "young1", meta "dgen" and "dlast"); a
 * format-6 store has none, and is marked 7 when opened. */
#define FORMAT 7
/* Digests in a young generation before it starts merging (see the digest
 * index). */
#define YOUNG_MAX 131072
/* Threads that read a large young table at once, and the size it takes.
 * A table's leaves lie anywhere in the file, and each is a page fault that
 * waits for the disk when the file is not in the page cache: at the open of
 * a 2-million-run store just out of the page cache, the 170,000 young
 * digests (1,100 leaves) took 100-150 ms read one leaf after another and
 * 40-50 ms in 16 threads (64: no faster). */
#define YREAD_THREADS 16
#define YREAD_MIN 8192
#define DIGEST_KEY 8
#define ID_SEQ_MASK ((UINT64_C(1) << 56) - 1)
/* By default a checkpoint starts at the next write once the log holds
 * this much, or holds anything and the last one is this old (see
 * store_options); a write that would take the log past WAL_MAX waits for
 * the checkpoint in flight and starts one. */
#define CKPT_BYTES (UINT64_C(1) << 20)
#define CKPT_NS INT64_C(50000000)
#define WAL_MAX (UINT64_C(64) << 20)
/* Objects whose postings wait in the tail (see above). */
#define TAIL_MAX 64
/* Events past the history are deleted this many at a time (see
 * put_event). */
#define EVENT_TRIM 512

/* Operations in a log record: u8 op | u32 length | body. */
enum { OP_PUT = 1, OP_DELETE = 2, OP_TOKEN_PUT = 3, OP_TOKEN_DELETE = 4 };

/* One young digest: its first 8 bytes (big-endian, so that integer order
 * is the index's byte order) and its object's id. */
typedef struct dent {
	uint64_t key, id;
} dent;

/* What this process keeps in memory of the young digests (see "the digest
 * index" below): a hash of the filling generation and the merging one
 * sorted. */
typedef struct dmem {
	pthread_rwlock_t lk;
	int on;             /* the owner keeps it; others read the tables */
	dent *a;            /* open addressing; id 0 is a free slot */
	size_t acap, an;
	dent *b;            /* the merging generation, sorted */
	size_t bn;
	uint64_t bgen;      /* the "dgen" under which b is the merging one */
	uint64_t b_done;    /* the txnid that emptied the last merged one */
} dmem;

struct store {
	MDB_env *env;
	/* Every transaction holds it shared; growing the map takes it
	 * exclusively (LMDB resizes only with no transaction active). */
	pthread_rwlock_t resize;
	uint64_t map_max;
	MDB_dbi meta, obj, aux, name, digest, natkey, ref, label, event, version,
	    facet, token;
	MDB_dbi young[2];   /* "young0", "young1": see the digest index */
	uint64_t young_max;
	size_t yread_min;   /* entries from which young_read uses threads */
	dmem dm;
	uint64_t history;
	size_t convert_batch;   /* convert_digests (store_options) */
	int nosync;
	store_facets_fn facets;
	/* The redo log (see store/wal.h). owner: this process holds it, its
	 * commits append to it and the LMDB file is synced at checkpoints;
	 * otherwise (an admin command while a daemon owns the store) commits
	 * are logged to redo.side and synced whole. */
	wal *wal;
	int owner;
	int replaying;
	/* A reader on the checkpoint's state: LMDB reuses no page that state
	 * holds (nor any page freed after it), so it stays whole on disk
	 * whatever later commits wrote. */
	MDB_txn *pin;
	/* The checkpoint thread and the checkpoint in flight (ck_mu guards
	 * the pins and flags). */
	pthread_t ck_thread;
	/* ck_failed: the failed checkpoint's code (KI_ENOSPC, KI_EIO), which
	 * every later write gets. */
	int ck_started, ck_busy, ck_stop, ck_failed, ck_file;
	char *dir;          /* for the free space after a failed write */
	/* Commits since the thread last started writing the file's dirty
	 * pages back (see ckpt_loop). */
	int ck_ahead;
	pthread_mutex_t ck_mu;
	pthread_cond_t ck_cv;
	MDB_txn *ck_pin;
	wal_head *ck_head;
	uint64_t head_seq;
	uint64_t ckpt_bytes;     /* when to checkpoint (store_options) */
	int64_t ckpt_every_ns;
	int64_t ckpt_ns;         /* when the last one started */
	uint64_t checkpoints, recovered, log_bytes;   /* for store_stat */
};

struct store_txn {
	store *s;
	MDB_txn *txn;
	struct store_txn *parent;
	int write;
	uint64_t rv;      /* store-wide rv including this txn's puts */
	int dirty;
	uint64_t writes;  /* calls that may have changed it (store_writes) */
	ki_buf log;       /* its operations, for the redo log */
	/* The last id's seq, and the count of objects replaced or deleted
	 * (store_changes): each read once and written at the commit. */
	uint64_t seq, changes;
	int seq_read, seq_moved, changes_read, changes_moved;
	/* "posted" (see the tail), read once and written at the commit. */
	uint64_t posted;
	int posted_read, posted_moved;
	/* Facet counts changed here, summed per facet and written at the
	 * commit (a child's join its parent's): one read and one write of a
	 * count per transaction, not per object. */
	ki_buf fkeys;            /* the facets' keys, back to back */
	/* Young digests added here; what its commit did to the generations
	 * (see the digest index). */
	uint64_t dadded;
	int dswap, ddone;
	struct fdelta *fd;
	size_t nfd, fdcap;
};

/* One facet's change: its key in fkeys and the sum of +1s and -1s. */
typedef struct fdelta {
	size_t off, len;
	int64_t delta;
} fdelta;

static int
map_rc(int rc)
{
	switch (rc) {
	case MDB_SUCCESS: return KI_OK;
	case MDB_NOTFOUND: return KI_ENOTFOUND;
	case MDB_KEYEXIST: return KI_EEXIST;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
	case MDB_PAGE_FULL: return KI_EFULL;
	case ENOMEM: return KI_ENOMEM;
	case ENOSPC:
	case EDQUOT: return KI_ENOSPC;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID: return KI_ECORRUPT;
	default: return rc < 0 && rc >= KI_ENOSPC ? rc : KI_ESTORE;
	}
}

/* A write that failed with KI_ESTORE or KI_EIO while the store's file
 * system has (nearly) no space left failed for want of it: LMDB reports a
 * short write as EIO, not ENOSPC. */
static int
disk_rc(const store *s, int rc)
{
	struct statvfs sv;

	if ((rc == KI_ESTORE || rc == KI_EIO) && s->dir != NULL &&
	    statvfs(s->dir, &sv) == 0 &&
	    (uint64_t)sv.f_bavail * sv.f_frsize < (UINT64_C(1) << 20))
		return KI_ENOSPC;
	return rc;
}

static void
put_be64(uint8_t out[8], uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		out[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

static uint64_t
get_be64(const void *p)
{
	const uint8_t *b = p;
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | b[i];
	return v;
}

uint64_t
store_id(int kind, uint64_t seq)
{
	return (uint64_t)(uint8_t)kind << 56 | (seq & ID_SEQ_MASK);
}

int
store_id_kind(uint64_t id)
{
	return (int)(id >> 56);
}

/* Reads the 8-byte big-endian value under key. KI_ENOTFOUND when absent,
 * KI_ESTORE when the value is not 8 bytes. */
static int
get_u64(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, uint64_t *out)
{
	MDB_val v;
	int rc = mdb_get(txn, dbi, key, &v);

	if (rc != 0)
		return map_rc(rc);
	if (v.mv_size != 8)
		return KI_ESTORE;
	*out = get_be64(v.mv_data);
	return KI_OK;
}

/* A counter of the meta table: 0 while it was never written. */
static int
meta_get_u64(MDB_txn *txn, MDB_dbi meta, const char *key, uint64_t *out)
{
	MDB_val k = { strlen(key), (void *)(uintptr_t)key };
	int rc = get_u64(txn, meta, &k, out);

	if (rc == KI_ENOTFOUND) {
		*out = 0;
		rc = KI_OK;
	}
	return rc;
}

static int
meta_put_u64(MDB_txn *txn, MDB_dbi meta, const char *key, uint64_t val)
{
	uint8_t b[8];
	MDB_val k = { strlen(key), (void *)(uintptr_t)key }, v = { 8, b };

	put_be64(b, val);
	return map_rc(mdb_put(txn, meta, &k, &v, 0));
}

/* ---- records ---- */

/* CRC-32C (Castagnoli), reflected, as iSCSI and ext4 use it. */
static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void
crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t
crc32c_sw(uint32_t c, const uint8_t *p, size_t n)
{
	pthread_once(&crc_once, crc_init);
	while (n--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t c64 = c;

	while (n >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
		p += 8;
		n -= 8;
	}
	c = (uint32_t)c64;
	while (n--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

static uint32_t
crc32c(const void *data, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
	static int hw = -1;

	if (hw < 0)
		hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	if (hw)
		return ~crc32c_hw(~0u, data, n);
#endif
	return ~crc32c_sw(~0u, data, n);
}

/* Decodes a record (borrowed memory) into o; *flags gets its REC_*
 * flags (NULL: the record must carry everything). */
static int
rec_decode_flags(const void *data, size_t size, store_obj *o, int *flags)
{
	const uint8_t *p = data;
	uint32_t magic, json_len, offs[6], lf[2];
	uint16_t name_len, natkey_len, fl;
	size_t need;

	if (size < REC_HDR)
		return KI_ECORRUPT;
	memcpy(&magic, p, 4);
	if (magic != REC_MAGIC)
		return KI_ECORRUPT;
	memset(o, 0, sizeof(*o));
	o->kind = p[4];
	o->nrefs = p[5];
	memcpy(&name_len, p + 6, 2);
	memcpy(&natkey_len, p + 8, 2);
	memcpy(&fl, p + 10, 2);
	if (fl & REC_SUM) {
		uint32_t sum;

		if (size < REC_HDR + 4)
			return KI_ECORRUPT;
		size -= 4;
		memcpy(&sum, p + size, 4);
		if (crc32c(p, size) != sum)
			return KI_ECORRUPT;
		fl &= (uint16_t)~REC_SUM;
	}
	if (flags != NULL)
		*flags = fl;
	else if (fl != 0)
		return KI_ECORRUPT;
	memcpy(&json_len, p + 12, 4);
	memcpy(&o->seq, p + 16, 8);
	memcpy(&o->rv, p + 24, 8);
	memcpy(o->digest, p + 32, STORE_DIGEST_LEN);
	memcpy(offs, p + 64, sizeof(offs));
	memcpy(lf, p + 88, sizeof(lf));
	need = REC_HDR + (size_t)name_len + natkey_len +
	    o->nrefs * STORE_DIGEST_LEN + lf[0] + lf[1] + json_len;
	if (need != size)
		return KI_ECORRUPT;
	p += REC_HDR;
	o->name = (const char *)p;
	o->name_len = name_len;
	p += name_len;
	o->natkey = natkey_len ? (const char *)p : NULL;
	o->natkey_len = natkey_len;
	p += natkey_len;
	o->refs = o->nrefs ? p : NULL;
	p += o->nrefs * STORE_DIGEST_LEN;
	o->labels = lf[0] ? (const char *)p : NULL;
	o->labels_len = lf[0];
	p += lf[0];
	o->facets = lf[1] ? (const char *)p : NULL;
	o->facets_len = lf[1];
	p += lf[1];
	o->json = (const char *)p;
	o->json_len = json_len;
	o->meta_off = offs[0];
	o->meta_len = offs[1];
	o->spec_off = offs[2];
	o->spec_len = offs[3];
	o->status_off = offs[4];
	o->status_len = offs[5];
	if ((uint64_t)o->meta_off + o->meta_len > json_len ||
	    (uint64_t)o->spec_off + o->spec_len > json_len ||
	    (uint64_t)o->status_off + o->status_len > json_len)
		return KI_ECORRUPT;
	return KI_OK;
}

static int
rec_decode(const void *data, size_t size, store_obj *o)
{
	return rec_decode_flags(data, size, o, NULL);
}

static size_t
rec_size(const store_obj *o)
{
	return REC_HDR + o->name_len + o->natkey_len +
	    o->nrefs * STORE_DIGEST_LEN + o->labels_len + o->facets_len +
	    o->json_len + 4;
}

static void
rec_encode_flags(uint8_t *p, const store_obj *o, uint16_t flags)
{
	uint32_t magic = REC_MAGIC, json_len = (uint32_t)o->json_len;
	uint16_t name_len = (uint16_t)o->name_len;
	uint16_t natkey_len = (uint16_t)o->natkey_len;
	uint32_t offs[6] = { o->meta_off, o->meta_len, o->spec_off,
		o->spec_len, o->status_off, o->status_len };
	uint32_t lf[2] = { (uint32_t)o->labels_len, (uint32_t)o->facets_len };
	uint8_t *start = p;
	uint32_t sum;

	flags |= REC_SUM;
	memset(p, 0, REC_HDR);
	memcpy(p, &magic, 4);
	p[4] = (uint8_t)o->kind;
	p[5] = (uint8_t)o->nrefs;
	memcpy(p + 6, &name_len, 2);
	memcpy(p + 8, &natkey_len, 2);
	memcpy(p + 10, &flags, 2);
	memcpy(p + 12, &json_len, 4);
	memcpy(p + 16, &o->seq, 8);
	memcpy(p + 24, &o->rv, 8);
	memcpy(p + 32, o->digest, STORE_DIGEST_LEN);
	memcpy(p + 64, offs, sizeof(offs));
	memcpy(p + 88, lf, sizeof(lf));
	p += REC_HDR;
	memcpy(p, o->name, o->name_len);
	p += o->name_len;
	if (o->natkey_len)
		memcpy(p, o->natkey, o->natkey_len);
	p += o->natkey_len;
	if (o->nrefs)
		memcpy(p, o->refs, o->nrefs * STORE_DIGEST_LEN);
	p += o->nrefs * STORE_DIGEST_LEN;
	if (o->labels_len)
		memcpy(p, o->labels, o->labels_len);
	p += o->labels_len;
	if (o->facets_len)
		memcpy(p, o->facets, o->facets_len);
	p += o->facets_len;
	memcpy(p, o->json, o->json_len);
	p += o->json_len;
	sum = crc32c(start, (size_t)(p - start));
	memcpy(p, &sum, 4);
}

static void
rec_encode(uint8_t *p, const store_obj *o)
{
	rec_encode_flags(p, o, 0);
}

/* Builds kind byte + bytes into buf (at least 1 + STORE_MAX_NATKEY). */
static MDB_val
kind_key(uint8_t *buf, int kind, const char *s, size_t n)
{
	MDB_val k;

	buf[0] = (uint8_t)kind;
	memcpy(buf + 1, s, n);
	k.mv_size = n + 1;
	k.mv_data = buf;
	return k;
}

/* Adds delta to the change of facet key k in t. */
static int
facet_add(store_txn *t, const void *k, size_t len, int64_t delta)
{
	for (size_t i = 0; i < t->nfd; i++) {
		if (t->fd[i].len == len &&
		    memcmp(t->fkeys.data + t->fd[i].off, k, len) == 0) {
			t->fd[i].delta += delta;
			return KI_OK;
		}
	}
	if (t->nfd == t->fdcap) {
		size_t cap = t->fdcap ? t->fdcap * 2 : 16;
		fdelta *n = realloc(t->fd, cap * sizeof(*n));

		if (n == NULL)
			return KI_ENOMEM;
		t->fd = n;
		t->fdcap = cap;
	}
	t->fd[t->nfd].off = t->fkeys.len;
	t->fd[t->nfd].len = len;
	t->fd[t->nfd].delta = delta;
	if (ki_buf_append(&t->fkeys, k, len) != KI_OK)
		return KI_ENOMEM;
	t->nfd++;
	return KI_OK;
}

/* Writes t's facet changes into the facet table (a count never goes
 * below 0; at 0 it is removed). */
static int
facets_apply(store_txn *t)
{
	MDB_cursor *c;
	int rc = 0;

	if (t->nfd == 0)
		return KI_OK;
	if ((rc = mdb_cursor_open(t->txn, t->s->facet, &c)) != 0)
		return map_rc(rc);
	for (size_t i = 0; rc == 0 && i < t->nfd; i++) {
		MDB_val k = { t->fd[i].len, t->fkeys.data + t->fd[i].off }, v;
		uint8_t cb[8];
		int64_t count = 0;
		int found;

		if (t->fd[i].delta == 0)
			continue;
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY);
		found = rc == 0;
		if (found && v.mv_size == 8)
			count = (int64_t)get_be64(v.mv_data);
		else if (rc != 0 && rc != MDB_NOTFOUND)
			break;
		count += t->fd[i].delta;
		if (count < 0)
			count = 0;
		put_be64(cb, (uint64_t)count);
		v.mv_size = 8;
		v.mv_data = cb;
		if (count == 0)
			rc = found ? mdb_cursor_del(c, 0) : 0;
		else
			rc = mdb_cursor_put(c, &k, &v, found ? MDB_CURRENT : 0);
	}
	mdb_cursor_close(c);
	return map_rc(rc);
}

static void
txn_free(store_txn *t)
{
	ki_buf_free(&t->log);
	ki_buf_free(&t->fkeys);
	free(t->fd);
	free(t);
}

/* Builds the label-index key kind + key NUL value into buf
 * (2 + STORE_MAX_INDEXED bytes). Returns 0 when the pair is too long to be
 * indexed. */
static size_t
label_key(uint8_t *buf, int kind, const char *k, size_t klen, const char *v,
	size_t vlen)
{
	if (klen + vlen > STORE_MAX_INDEXED)
		return 0;
	buf[0] = (uint8_t)kind;
	memcpy(buf + 1, k, klen);
	buf[1 + klen] = 0;
	memcpy(buf + 2 + klen, v, vlen);
	return 2 + klen + vlen;
}

/* ---- open, convert, close ---- */

static int
open_tables(MDB_txn *txn, store *s)
{
	int rc;

	if ((rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &s->meta)) != 0 ||
	    (rc = mdb_dbi_open(txn, "obj", MDB_CREATE, &s->obj)) != 0 ||
	    (rc = mdb_dbi_open(txn, "aux", MDB_CREATE, &s->aux)) != 0 ||
	    (rc = mdb_dbi_open(txn, "name", MDB_CREATE, &s->name)) != 0 ||
	    (rc = mdb_dbi_open(txn, "digest8",
	         MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &s->digest)) != 0 ||
	    (rc = mdb_dbi_open(txn, "natkey", MDB_CREATE, &s->natkey)) != 0 ||
	    (rc = mdb_dbi_open(txn, "ref",
	         MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &s->ref)) != 0 ||
	    (rc = mdb_dbi_open(txn, "label",
	         MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &s->label)) != 0 ||
	    (rc = mdb_dbi_open(txn, "event", MDB_CREATE, &s->event)) != 0 ||
	    (rc = mdb_dbi_open(txn, "version", MDB_CREATE, &s->version)) != 0 ||
	    (rc = mdb_dbi_open(txn, "facet", MDB_CREATE, &s->facet)) != 0 ||
	    (rc = mdb_dbi_open(txn, "token", MDB_CREATE, &s->token)) != 0 ||
	    (rc = mdb_dbi_open(txn, "young0", MDB_CREATE, &s->young[0])) != 0 ||
	    (rc = mdb_dbi_open(txn, "young1", MDB_CREATE, &s->young[1])) != 0)
		return map_rc(rc);
	return KI_OK;
}

/* ---- the redo log ---- */

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Appends an operation header to t's log and returns where its len-byte
 * body goes (NULL: nothing is logged in this store or this phase). */
static int
log_op(store_txn *t, int op, size_t len, uint8_t **body)
{
	uint32_t n = (uint32_t)len;
	uint8_t *p;

	*body = NULL;
	if (t->s->replaying)
		return KI_OK;
	if (len > UINT32_MAX || ki_buf_reserve(&t->log, 5 + len) != KI_OK)
		return KI_ENOMEM;
	p = (uint8_t *)t->log.data + t->log.len;
	p[0] = (uint8_t)op;
	memcpy(p + 1, &n, 4);
	t->log.len += 5 + len;
	*body = p + 5;
	return KI_OK;
}

static int
log_obj(store_txn *t, int op, const store_obj *o)
{
	uint8_t *p;
	int rc = log_op(t, op, rec_size(o), &p);

	if (rc == KI_OK && p != NULL)
		rec_encode(p, o);
	return rc;
}

static int
log_token(store_txn *t, int op, const uint8_t *hash, const char *value,
	size_t len)
{
	uint8_t *p;
	int rc = log_op(t, op, STORE_DIGEST_LEN + len, &p);

	if (rc == KI_OK && p != NULL) {
		memcpy(p, hash, STORE_DIGEST_LEN);
		if (len)
			memcpy(p + STORE_DIGEST_LEN, value, len);
	}
	return rc;
}

/* LMDB's two meta pages as the file holds them now. */
static int
read_metas(store *s, wal_head *h)
{
	MDB_stat st;
	int fd;

	if (mdb_env_stat(s->env, &st) != 0 || mdb_env_get_fd(s->env, &fd) != 0 ||
	    2 * (size_t)st.ms_psize > sizeof(h->metas))
		return KI_ESTORE;
	h->meta_len = 2 * st.ms_psize;
	if (pread(fd, h->metas, h->meta_len, 0) != (ssize_t)h->meta_len)
		return KI_EIO;
	return KI_OK;
}

/* ---- checkpoints ----
 *
 * A checkpoint makes the last committed state C the one a crash goes back
 * to. Its first half runs under LMDB's writer lock (a write transaction
 * is open, so nothing commits meanwhile): a pin on C, a copy of the meta
 * pages as they are for C, and the log's appends switched to the other
 * file. The second half runs on the checkpoint thread, while commits go
 * on: sync the LMDB file (every page of C is then on disk), write the
 * header naming C into the new file, and only then move the pin to C. */

/* The first half; the caller holds the writer lock and no checkpoint is
 * in flight. */
static int
ckpt_begin(store *s, int clean)
{
	MDB_txn *pin;
	int rc;

	if ((rc = map_rc(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &pin))) !=
	    KI_OK)
		return rc;
	if ((rc = read_metas(s, s->ck_head)) != KI_OK) {
		mdb_txn_abort(pin);
		return rc;
	}
	s->ck_head->seq = ++s->head_seq;
	s->ck_head->txnid = mdb_txn_id(pin);
	s->ck_head->clean = (uint32_t)clean;
	pthread_mutex_lock(&s->ck_mu);
	s->ck_pin = pin;
	s->ck_file = wal_switch(s->wal);
	s->ck_busy = 1;
	pthread_cond_broadcast(&s->ck_cv);
	pthread_mutex_unlock(&s->ck_mu);
	s->ckpt_ns = now_ns();
	__atomic_store_n(&s->log_bytes, 0, __ATOMIC_RELAXED);
	return KI_OK;
}

/* The second half (the checkpoint thread). */
static void
ckpt_finish(store *s)
{
	int rc = KI_OK;

	if (!s->nosync && (rc = mdb_env_sync(s->env, 1)) != 0)
		rc = disk_rc(s, map_rc(rc));
	if (rc == KI_OK)
		rc = wal_head_write(s->wal, s->ck_file, s->ck_head, s->nosync);
	pthread_mutex_lock(&s->ck_mu);
	if (rc == KI_OK) {
		/* The header is durable: the old checkpoint's pages may go. */
		if (s->pin != NULL)
			mdb_txn_abort(s->pin);
		s->pin = s->ck_pin;
		__atomic_add_fetch(&s->checkpoints, 1, __ATOMIC_RELAXED);
	} else {
		/* The log's next switch would overwrite records the last
		 * valid header still needs: refuse writes from now on. */
		mdb_txn_abort(s->ck_pin);
		s->ck_failed = rc == KI_ENOSPC ? KI_ENOSPC : KI_EIO;
		log_error("store: a checkpoint failed (%s); writes are refused "
		    "until a restart", ki_strerror(rc));
	}
	s->ck_pin = NULL;
	s->ck_busy = 0;
	pthread_cond_broadcast(&s->ck_cv);
	pthread_mutex_unlock(&s->ck_mu);
}

/* Starts writing back the pages commits have written to the file since
 * the last call, without waiting for them. Left to the checkpoint's sync,
 * a checkpoint's pages (megabytes: every commit copies the pages it
 * changes) reach the device queue in one burst, and the log writes that
 * commits wait for queue behind it (measured: 2.8 ms a log write during a
 * checkpoint, 0.37 ms outside); sent after each commit, they go out in
 * small groups while the next batch is being prepared, and the sync finds
 * little left to write. Durability does not depend on it. */
static void
write_ahead(store *s)
{
#ifdef SYNC_FILE_RANGE_WRITE
	int fd;

	if (mdb_env_get_fd(s->env, &fd) == 0)
		(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
	(void)s;
#endif
}

static void *
ckpt_loop(void *arg)
{
	store *s = arg;

	ki_thread_name("ki-checkpoint");
	pthread_mutex_lock(&s->ck_mu);
	for (;;) {
		while (!s->ck_busy && !s->ck_stop && !s->ck_ahead)
			pthread_cond_wait(&s->ck_cv, &s->ck_mu);
		if (s->ck_busy) {
			pthread_mutex_unlock(&s->ck_mu);
			ckpt_finish(s);
			pthread_mutex_lock(&s->ck_mu);
		} else if (s->ck_ahead) {
			s->ck_ahead = 0;
			pthread_mutex_unlock(&s->ck_mu);
			write_ahead(s);
			pthread_mutex_lock(&s->ck_mu);
		} else {
			break;
		}
	}
	pthread_mutex_unlock(&s->ck_mu);
	return NULL;
}

/* Waits until no checkpoint is in flight; KI_EIO if one has failed. */
static int
ckpt_wait(store *s)
{
	int failed;

	pthread_mutex_lock(&s->ck_mu);
	while (s->ck_busy)
		pthread_cond_wait(&s->ck_cv, &s->ck_mu);
	failed = s->ck_failed;
	pthread_mutex_unlock(&s->ck_mu);
	return failed;
}

/* A whole checkpoint, waited for; the caller holds the writer lock. */
static int
ckpt_sync(store *s, int clean)
{
	int rc;

	if ((rc = ckpt_wait(s)) != KI_OK || (rc = ckpt_begin(s, clean)) != KI_OK)
		return rc;
	return ckpt_wait(s);
}

/* Whether a checkpoint is in flight; KI_EIO once one has failed. */
static int
ckpt_state(store *s, int *busy)
{
	int failed;

	pthread_mutex_lock(&s->ck_mu);
	*busy = s->ck_busy;
	failed = s->ck_failed;
	pthread_mutex_unlock(&s->ck_mu);
	return failed;
}

/* At the start of a write transaction: starts a checkpoint when the log
 * has grown or aged enough and none is in flight; when the map is tight
 * (see maybe_grow), takes one and waits for it. */
static int
ckpt_maybe(store *s, int tight)
{
	uint64_t used;
	int busy, rc;

	if (!s->owner || s->replaying)
		return KI_OK;
	if ((rc = ckpt_state(s, &busy)) != KI_OK)
		return rc;
	used = wal_used(s->wal);
	if (tight && (used > 0 || busy))
		return ckpt_sync(s, 0);
	if (busy || !(used >= s->ckpt_bytes ||
	    (used > 0 && now_ns() - s->ckpt_ns >= s->ckpt_every_ns)))
		return KI_OK;
	return ckpt_begin(s, 0);
}

/* Applies one logged transaction (replay at open). */
static int
replay_one(void *arg, uint64_t txnid, const uint8_t *p, size_t len)
{
	store *s = arg;
	store_txn *t;
	int rc;

	(void)txnid;
	if ((rc = store_begin(s, 1, &t)) != KI_OK)
		return rc;
	while (rc == KI_OK && len > 0) {
		uint32_t n;
		int op;
		store_obj o;

		if (len < 5) {
			rc = KI_ESTORE;
			break;
		}
		op = p[0];
		memcpy(&n, p + 1, 4);
		if (n > len - 5) {
			rc = KI_ESTORE;
			break;
		}
		p += 5;
		len -= 5;
		switch (op) {
		case OP_PUT:
			if ((rc = rec_decode(p, n, &o)) == KI_OK)
				rc = store_put(t, &o);
			break;
		case OP_DELETE:
			if ((rc = rec_decode(p, n, &o)) == KI_OK)
				rc = store_delete(t, o.kind, o.name, o.name_len, &o);
			break;
		case OP_TOKEN_PUT:
			rc = n < STORE_DIGEST_LEN ? KI_ESTORE :
			    store_token_put(t, p, (const char *)p + STORE_DIGEST_LEN,
			    n - STORE_DIGEST_LEN);
			break;
		case OP_TOKEN_DELETE:
			rc = n != STORE_DIGEST_LEN ? KI_ESTORE :
			    store_token_delete(t, p);
			break;
		default:
			rc = KI_ESTORE;
		}
		p += n;
		len -= n;
	}
	if (rc != KI_OK) {
		store_abort(t);
		return rc;
	}
	if ((rc = store_commit(t)) == KI_OK)
		s->recovered++;
	return rc;
}

static int convert_v2(store *s);
static int convert_digests(store *s);
static int dm_load(store *s);
static int young_step(store_txn *t);
static void young_after(store *s, int swap, int done, uint64_t txnid);
#define CONVERT_DIGESTS 200000
static int post_old_tail(store *s, MDB_txn *txn);

static int
env_open(store *s, const char *dir, uint64_t map_size)
{
	int rc;

	if ((rc = mdb_env_create(&s->env)) != 0)
		return rc;
	if ((rc = mdb_env_set_maxdbs(s->env, 24)) != 0 ||
	    (rc = mdb_env_set_mapsize(s->env, (size_t)map_size)) != 0 ||
	    (rc = mdb_env_set_maxreaders(s->env, 512)) != 0 ||
	    (rc = mdb_env_open(s->env, dir, MDB_NOTLS | MDB_NORDAHEAD |
	    (s->nosync ? MDB_NOSYNC : 0), 0640)) != 0) {
		mdb_env_close(s->env);
		s->env = NULL;
	}
	return rc;
}

/* Puts the checkpoint's meta pages back into the LMDB file: whatever a
 * crash left of later commits is then unreferenced (the pin kept their
 * pages from reusing the checkpoint's), and the log brings them back. */
static int
restore_metas(const char *dir, const wal_head *h)
{
	char path[4200];
	int fd, rc = KI_OK;

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return KI_EIO;
	if (pwrite(fd, h->metas, h->meta_len, 0) != (ssize_t)h->meta_len ||
	    fdatasync(fd) != 0)
		rc = KI_EIO;
	close(fd);
	return rc;
}

/* Opens the LMDB file, recovering through the log when the last owner did
 * not close it: the file goes back to the checkpoint, then the logged
 * transactions are applied again. *replay gets the checkpoint's txnid to
 * replay from, or 0 when there is nothing to replay. */
static int
open_recovering(store *s, const char *dir, uint64_t map_size, wal_head *h,
	int *replay, int *file)
{
	MDB_envinfo info;
	int rc;

	*replay = 0;
	if ((rc = env_open(s, dir, map_size)) != 0)
		return rc;
	if (!s->owner)
		return 0;
	rc = wal_head_read(s->wal, h, file);
	if (rc == KI_OK)
		s->head_seq = h->seq;
	if (rc == KI_ENOTFOUND || (rc == KI_OK && h->clean))
		return 0;
	if (rc != KI_OK)
		return rc;
	if ((rc = mdb_env_info(s->env, &info)) != 0)
		return rc;
	if ((uint64_t)info.me_last_txnid < h->txnid) {
		/* The file is older than the log's checkpoint: it was put
		 * there from a backup. The log belongs to the file it
		 * replaced. */
		log_warn("store: %s/data.mdb is older than its redo log "
		    "(transaction %llu < %llu): the log is not applied", dir,
		    (unsigned long long)info.me_last_txnid,
		    (unsigned long long)h->txnid);
		return 0;
	}
	mdb_env_close(s->env);
	s->env = NULL;
	if ((rc = restore_metas(dir, h)) != KI_OK ||
	    (rc = env_open(s, dir, map_size)) != 0)
		return rc;
	*replay = 1;
	return 0;
}

/* Stops the checkpoint thread (after the checkpoint in flight) and frees
 * what store_open set up, as far as it got. */
static void
store_free(store *s)
{
	if (s->ck_started) {
		ckpt_wait(s);
		pthread_mutex_lock(&s->ck_mu);
		s->ck_stop = 1;
		pthread_cond_broadcast(&s->ck_cv);
		pthread_mutex_unlock(&s->ck_mu);
		pthread_join(s->ck_thread, NULL);
	}
	if (s->pin != NULL)
		mdb_txn_abort(s->pin);
	if (s->env != NULL)
		mdb_env_close(s->env);
	wal_close(s->wal);
	free(s->ck_head);
	free(s->dir);
	pthread_mutex_destroy(&s->ck_mu);
	pthread_cond_destroy(&s->ck_cv);
	pthread_rwlock_destroy(&s->resize);
	pthread_rwlock_destroy(&s->dm.lk);
	free(s->dm.a);
	free(s->dm.b);
	free(s);
}

int
store_open(store **out, const char *dir, const store_options *opt)
{
	store *s;
	MDB_txn *txn = NULL;
	MDB_dbi old;
	wal_head *h = NULL;
	uint64_t format = 0, rv = 0;
	int rc, dead, convert = 0, replay = 0, file = 0;

	*out = NULL;
	if (mkdir(dir, 0750) != 0 && errno != EEXIST)
		return KI_EIO;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return KI_ENOMEM;
	if ((s->dir = strdup(dir)) == NULL) {
		free(s);
		return KI_ENOMEM;
	}
	s->history = opt->history ? opt->history : 100000;
	s->convert_batch = opt->convert_batch ? opt->convert_batch :
	    CONVERT_DIGESTS;
	s->nosync = opt->nosync;
	s->facets = opt->facets;
	s->ckpt_bytes = opt->checkpoint_bytes ? opt->checkpoint_bytes :
	    CKPT_BYTES;
	s->ckpt_every_ns = opt->checkpoint_ms ?
	    (int64_t)opt->checkpoint_ms * 1000000 : CKPT_NS;
	s->map_max = opt->map_max > opt->map_size ? opt->map_max : opt->map_size;
	s->young_max = opt->digest_young ? opt->digest_young : YOUNG_MAX;
	s->yread_min = opt->young_read_min ? opt->young_read_min : YREAD_MIN;
	pthread_rwlock_init(&s->dm.lk, NULL);
	{
		pthread_rwlockattr_t a;

		pthread_rwlockattr_init(&a);
		pthread_rwlockattr_setkind_np(&a,
		    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&s->resize, &a);
		pthread_rwlockattr_destroy(&a);
	}
	pthread_mutex_init(&s->ck_mu, NULL);
	pthread_cond_init(&s->ck_cv, NULL);
	if ((h = malloc(sizeof(*h))) == NULL ||
	    (s->ck_head = malloc(sizeof(*s->ck_head))) == NULL) {
		rc = KI_ENOMEM;
		goto fail;
	}
	if ((rc = wal_open(&s->wal, dir, &s->owner)) != KI_OK)
		goto fail;
	if (!s->owner && !opt->shared) {
		rc = KI_EBUSY;
		goto fail;
	}
	if ((rc = open_recovering(s, dir, opt->map_size, h, &replay, &file)) !=
	    0)
		goto fail;
	mdb_reader_check(s->env, &dead);
	/* From here until the first checkpoint, the recovered state is
	 * what must not be overwritten. */
	if (s->owner &&
	    (rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->pin)) != 0)
		goto fail;
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
		goto fail;
	if ((rc = open_tables(txn, s)) != KI_OK ||
	    (rc = meta_get_u64(txn, s->meta, "format", &format)) != KI_OK ||
	    (rc = meta_get_u64(txn, s->meta, "rv", &rv)) != KI_OK)
		goto fail;
	if (format > FORMAT) {
		rc = KI_ESTORE;   /* written by a newer kernelindexd */
		goto fail;
	}
	if (format == 0) {
		/* A format-2 store has its "objects" table; a new one has none. */
		convert = mdb_dbi_open(txn, "objects", 0, &old) == 0;
		if (!convert &&
		    (rc = meta_put_u64(txn, s->meta, "format", FORMAT)) != KI_OK)
			goto fail;
	} else if (format == 6) {
		/* Its young digest tables were just made, empty. */
		if ((rc = meta_put_u64(txn, s->meta, "format", FORMAT)) != KI_OK)
			goto fail;
	} else if (format == 3 || format == 4) {
		/* 5 until its digests are converted too. */
		if ((rc = post_old_tail(s, txn)) != KI_OK ||
		    (rc = meta_put_u64(txn, s->meta, "format", 5)) != KI_OK)
			goto fail;
	}
	if ((rc = mdb_txn_commit(txn)) != 0) {
		txn = NULL;
		goto fail;
	}
	txn = NULL;
	if (s->owner && (rc = dm_load(s)) != KI_OK)
		goto fail;
	if (convert && (rc = convert_v2(s)) != KI_OK)
		goto fail;
	if (format >= 3 && format <= 5 && (rc = convert_digests(s)) != KI_OK)
		goto fail;
	if (s->owner) {
		/* Commits are made durable by the log from now on. */
		if ((rc = mdb_env_set_flags(s->env, MDB_NOSYNC, 1)) != 0)
			goto fail;
		if (replay) {
			wal_damage bad;

			s->replaying = 1;
			rc = wal_each(s->wal, file, h->txnid, h->first, replay_one,
			    s, &bad);
			s->replaying = 0;
			if (rc == KI_ECORRUPT && bad.file >= 0) {
				log_error("store: the redo log of %s is damaged: "
				    "the record at byte %llu of %s is missing or "
				    "fails its checksum, and valid records follow "
				    "it; nothing is applied and the store is not "
				    "opened (transactions after it would be lost)",
				    dir, (unsigned long long)bad.off,
				    bad.file == 2 ? "redo.side" : bad.file ?
				    "redo.1" : "redo.0");
				goto fail;
			}
			if (rc != KI_OK) {
				log_error("store: the redo log of %s cannot be "
				    "applied: %s", dir, ki_strerror(rc));
				goto fail;
			}
			log_info("store: %llu transactions applied from the redo "
			    "log after an unclean stop",
			    (unsigned long long)s->recovered);
		}
		if (pthread_create(&s->ck_thread, NULL, ckpt_loop, s) != 0) {
			rc = KI_EIO;
			goto fail;
		}
		s->ck_started = 1;
		/* A checkpoint of the recovered state before any write; then
		 * the log and redo.side start over behind it, empty. */
		if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
			goto fail;
		rc = ckpt_sync(s, 0);
		mdb_txn_abort(txn);
		txn = NULL;
		if (rc != KI_OK || (rc = wal_trim(s->wal)) != KI_OK)
			goto fail;
	}
	free(h);
	*out = s;
	return KI_OK;
fail:
	free(h);
	if (txn != NULL)
		mdb_txn_abort(txn);
	store_free(s);
	if (rc == ENOENT || rc == EACCES)
		return KI_EIO;
	return rc < 0 ? rc : map_rc(rc);
}

int
store_checkpoint(store *s)
{
	MDB_txn *txn;
	int rc;

	if (!s->owner || __atomic_load_n(&s->log_bytes, __ATOMIC_RELAXED) == 0)
		return KI_OK;
	pthread_rwlock_rdlock(&s->resize);
	if ((rc = map_rc(mdb_txn_begin(s->env, NULL, 0, &txn))) == KI_OK) {
		int busy;

		if ((rc = ckpt_state(s, &busy)) == KI_OK && !busy &&
		    wal_used(s->wal) > 0)
			rc = ckpt_begin(s, 0);
		mdb_txn_abort(txn);
	}
	pthread_rwlock_unlock(&s->resize);
	return rc;
}

static void
close_store(store *s, int crash)
{
	MDB_txn *txn;

	if (s == NULL)
		return;
	if (s->owner && !crash && mdb_txn_begin(s->env, NULL, 0, &txn) == 0) {
		/* A clean close: the next open needs no recovery. */
		if (ckpt_sync(s, 1) != KI_OK)
			log_warn("store: no checkpoint at close; the next open "
			    "applies the redo log");
		mdb_txn_abort(txn);
	}
	store_free(s);
}

void
store_crash(store *s)
{
	close_store(s, 1);
}

void
store_close(store *s)
{
	close_store(s, 0);
}

/* Doubles the map (up to map_max) when it is 3/4 used. Called with no
 * transaction held by this thread. Returns 1 when the map is 3/4 used and
 * may not grow: then pages freed since the checkpoint (which the pin keeps
 * from reuse) are worth having back before a write. */
static int
maybe_grow(store *s)
{
	MDB_envinfo info;
	MDB_stat st;
	uint64_t used, size, want;

	/* The map may be replaced under a reader of it: look under the lock. */
	pthread_rwlock_rdlock(&s->resize);
	if (mdb_env_info(s->env, &info) != 0 || mdb_env_stat(s->env, &st) != 0) {
		pthread_rwlock_unlock(&s->resize);
		return 0;
	}
	pthread_rwlock_unlock(&s->resize);
	used = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
	size = info.me_mapsize;
	if (used < size / 4 * 3)
		return 0;
	if (size >= s->map_max)
		return 1;
	pthread_rwlock_wrlock(&s->resize);
	if (mdb_env_info(s->env, &info) == 0 && info.me_mapsize == size) {
		want = size * 2 < s->map_max ? size * 2 : s->map_max;
		mdb_env_set_mapsize(s->env, (size_t)want);
	}
	pthread_rwlock_unlock(&s->resize);
	return 0;
}

int
store_begin(store *s, int write, store_txn **out)
{
	store_txn *t;
	int rc, tight = 0;

	*out = NULL;
	if (write)
		tight = maybe_grow(s);
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return KI_ENOMEM;
	t->s = s;
	t->write = write;
	pthread_rwlock_rdlock(&s->resize);
	rc = mdb_txn_begin(s->env, NULL, write ? 0 : MDB_RDONLY, &t->txn);
	if (rc != 0) {
		pthread_rwlock_unlock(&s->resize);
		free(t);
		return map_rc(rc);
	}
	if ((rc = meta_get_u64(t->txn, s->meta, "rv", &t->rv)) != KI_OK ||
	    (write && (rc = ckpt_maybe(s, tight)) != KI_OK)) {
		mdb_txn_abort(t->txn);
		pthread_rwlock_unlock(&s->resize);
		free(t);
		return rc;
	}
	ki_buf_init(&t->log);
	*out = t;
	return KI_OK;
}

int
store_begin_child(store_txn *parent, store_txn **out)
{
	store_txn *t;
	int rc;

	*out = NULL;
	if (!parent->write)
		return KI_EINVAL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return KI_ENOMEM;
	t->s = parent->s;
	t->parent = parent;
	t->write = 1;
	t->rv = parent->rv;
	t->seq = parent->seq;
	t->seq_read = parent->seq_read;
	t->posted = parent->posted;
	t->posted_read = parent->posted_read;
	t->changes = parent->changes;
	t->changes_read = parent->changes_read;
	ki_buf_init(&t->log);
	rc = mdb_txn_begin(parent->s->env, parent->txn, 0, &t->txn);
	if (rc != 0) {
		free(t);
		return map_rc(rc);
	}
	*out = t;
	return KI_OK;
}

/* Commits a top-level write transaction whose operations are in t->log,
 * durably. As the owner of the log: the record is appended and synced
 * first, then LMDB commits without syncing (its pages reach the disk at
 * the next checkpoint); a record whose commit fails is retracted, so the
 * log never holds a transaction the store refused. A transaction too big
 * for the log commits and waits for a checkpoint instead. A process that
 * does not own the log appends to redo.side and commits synced. */
static int
commit_logged(store_txn *t)
{
	store *s = t->s;
	uint64_t txnid = mdb_txn_id(t->txn);
	int rc;

	if (!s->owner) {
		if ((rc = wal_side_append(s->wal, txnid, t->log.data,
		    t->log.len)) != KI_OK) {
			mdb_txn_abort(t->txn);
			return rc;
		}
		if ((rc = map_rc(mdb_txn_commit(t->txn))) != KI_OK &&
		    wal_side_retract(s->wal) != KI_OK) {
			log_error("store: a refused commit stays in the redo log; "
			    "stopping");
			abort();
		}
		return rc;
	}
	if (t->log.len > WAL_MAX) {
		if ((rc = map_rc(mdb_txn_commit(t->txn))) != KI_OK)
			return rc;
		if ((rc = map_rc(mdb_txn_begin(s->env, NULL, 0, &t->txn))) ==
		    KI_OK) {
			rc = ckpt_sync(s, 0);
			mdb_txn_abort(t->txn);
		}
		return rc;
	}
	if (wal_used(s->wal) + t->log.len > WAL_MAX &&
	    ((rc = ckpt_wait(s)) != KI_OK || (rc = ckpt_begin(s, 0)) != KI_OK)) {
		mdb_txn_abort(t->txn);
		return rc;
	}
	if ((rc = wal_append(s->wal, txnid, t->log.data, t->log.len,
	    s->nosync)) != KI_OK) {
		mdb_txn_abort(t->txn);
		return disk_rc(s, rc);
	}
	if ((rc = disk_rc(s, map_rc(mdb_txn_commit(t->txn)))) != KI_OK &&
	    wal_retract(s->wal, s->nosync) != KI_OK) {
		/* Neither committed nor retracted: a restart would apply it. */
		log_error("store: a refused commit stays in the redo log; "
		    "stopping");
		abort();
	}
	__atomic_store_n(&s->log_bytes, wal_used(s->wal), __ATOMIC_RELAXED);
	if (rc == KI_OK && !s->nosync && s->ck_started) {
		pthread_mutex_lock(&s->ck_mu);
		s->ck_ahead = 1;
		pthread_cond_broadcast(&s->ck_cv);
		pthread_mutex_unlock(&s->ck_mu);
	}
	return rc;
}

static int tail_maybe_post(store_txn *t);

int
store_commit(store_txn *t)
{
	uint64_t txnid;
	int rc = KI_OK;

	if (t->parent != NULL) {
		store_txn *pt = t->parent;

		rc = map_rc(mdb_txn_commit(t->txn));
		if (rc == KI_OK) {
			pt->rv = t->rv;
			pt->dirty |= t->dirty;
			pt->seq = t->seq;
			pt->seq_read = t->seq_read;
			pt->seq_moved |= t->seq_moved;
			pt->posted = t->posted;
			pt->posted_read = t->posted_read;
			pt->posted_moved |= t->posted_moved;
			pt->changes = t->changes;
			pt->changes_read = t->changes_read;
			pt->changes_moved |= t->changes_moved;
			pt->dadded += t->dadded;
			/* On failure the parent's log is marked, and its
			 * commit refuses (its changes would be unlogged);
			 * likewise a facet change that did not join. */
			if (t->log.len > 0 &&
			    ki_buf_append(&pt->log, t->log.data,
			    t->log.len) != KI_OK)
				rc = KI_ENOMEM;
			for (size_t i = 0; i < t->nfd; i++)
				if (facet_add(pt, t->fkeys.data + t->fd[i].off,
				    t->fd[i].len, t->fd[i].delta) != KI_OK)
					pt->log.oom = 1;
		}
		txn_free(t);
		return rc;
	}
	if (t->write && t->seq_moved)
		rc = tail_maybe_post(t);
	if (rc == KI_OK && t->write)
		rc = facets_apply(t);
	if (rc == KI_OK && t->write && t->seq_moved)
		rc = meta_put_u64(t->txn, t->s->meta, "seq", t->seq);
	if (rc == KI_OK && t->write && t->posted_moved)
		rc = meta_put_u64(t->txn, t->s->meta, "posted", t->posted);
	if (rc == KI_OK && t->write && t->changes_moved)
		rc = meta_put_u64(t->txn, t->s->meta, "changes", t->changes);
	if (rc == KI_OK && t->write && t->dadded > 0 && t->s->dm.on)
		rc = young_step(t);
	if (rc == KI_OK && t->write && t->dirty)
		rc = meta_put_u64(t->txn, t->s->meta, "rv", t->rv);
	if (rc == KI_OK && t->log.oom)
		rc = KI_ENOMEM;   /* an operation is missing from the log */
	txnid = t->write && t->txn != NULL ? mdb_txn_id(t->txn) : 0;
	if (rc != KI_OK) {
		mdb_txn_abort(t->txn);
	} else if (t->write && !t->s->replaying &&
	    t->log.len > 0) {
		rc = commit_logged(t);
	} else {
		/* Nothing logged (a read, an empty write, the open's own
		 * commits): without MDB_NOSYNC, LMDB's commit is itself
		 * durable. */
		rc = map_rc(mdb_txn_commit(t->txn));
	}
	if (rc == KI_OK && (t->dswap || t->ddone))
		young_after(t->s, t->dswap, t->ddone, txnid);
	pthread_rwlock_unlock(&t->s->resize);
	txn_free(t);
	return rc;
}

void
store_abort(store_txn *t)
{
	if (t == NULL)
		return;
	mdb_txn_abort(t->txn);
	if (t->parent == NULL)
		pthread_rwlock_unlock(&t->s->resize);
	txn_free(t);
}

uint64_t
store_rv(store_txn *t)
{
	return t->rv;
}

int
store_changes(store_txn *t, uint64_t *out)
{
	int rc;

	if (!t->changes_read) {
		if ((rc = meta_get_u64(t->txn, t->s->meta, "changes",
		    &t->changes)) != KI_OK)
			return rc;
		t->changes_read = 1;
	}
	*out = t->changes;
	return KI_OK;
}

/* Counts an object replaced or deleted by t. */
static int
changes_bump(store_txn *t)
{
	uint64_t n;
	int rc;

	if ((rc = store_changes(t, &n)) != KI_OK)
		return rc;
	t->changes = n + 1;
	t->changes_moved = 1;
	return KI_OK;
}

uint64_t
store_writes(store_txn *t)
{
	return t->writes;
}

uint64_t
store_next_rv(store_txn *t)
{
	return t->rv + 1;
}

uint64_t
store_oldest_event(store_txn *t)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t rv = 0;

	if (mdb_cursor_open(t->txn, t->s->event, &c) != 0)
		return 0;
	if (mdb_cursor_get(c, &k, &v, MDB_FIRST) == 0 && k.mv_size == 8)
		rv = get_be64(k.mv_data);
	mdb_cursor_close(c);
	/* Events older than the history wait for the next trim, and their
	 * superseded states are not kept (keep_version): they are gone. */
	if (rv != 0 && t->rv > t->s->history && rv <= t->rv - t->s->history)
		rv = t->rv - t->s->history + 1;
	return rv;
}

/* ---- reads ---- */


/* Decodes an object-table record into o, attaching its natural key and
 * refs from the aux table when it keeps them there (borrowed, valid until
 * the transaction ends or writes). aux: a cursor on the aux table to look
 * them up with (a list walks ids in order, and a positioned cursor finds
 * the next one without descending from the root), or NULL. */
static int
obj_decode(store_txn *t, MDB_cursor *aux, const void *data, size_t size,
	store_obj *o)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	const uint8_t *a;
	uint16_t nl;
	int flags, rc;

	if ((rc = rec_decode_flags(data, size, o, &flags)) != KI_OK)
		return rc;
	if (!(flags & REC_AUX))
		return KI_OK;
	put_be64(kb, o->seq);
	rc = aux != NULL ? mdb_cursor_get(aux, &k, &v, MDB_SET_KEY) :
	    mdb_get(t->txn, t->s->aux, &k, &v);
	if (rc != 0)
		return rc == MDB_NOTFOUND ? KI_ESTORE : map_rc(rc);
	a = v.mv_data;
	if (v.mv_size < 3)
		return KI_ESTORE;
	memcpy(&nl, a + 1, 2);
	if (v.mv_size != 3 + (size_t)a[0] * STORE_DIGEST_LEN + nl)
		return KI_ESTORE;
	o->nrefs = a[0];
	o->refs = o->nrefs ? a + 3 : NULL;
	o->natkey_len = nl;
	o->natkey = nl ? (const char *)a + 3 + o->nrefs * STORE_DIGEST_LEN : NULL;
	return KI_OK;
}

/* Writes o (o->seq set) as the record of its id: the record without its
 * natural key and refs, and those in the aux table. */
static int
write_record(store_txn *t, const store_obj *o)
{
	uint8_t kb[8], *a;
	MDB_val k = { 8, kb }, v;
	store_obj rec = *o;
	uint16_t nl = (uint16_t)o->natkey_len;
	int rc;

	put_be64(kb, o->seq);
	rec.natkey = NULL;
	rec.natkey_len = 0;
	rec.refs = NULL;
	rec.nrefs = 0;
	if (t->s->facets != NULL) {
		rec.facets = NULL;   /* recomputed from the labels when needed */
		rec.facets_len = 0;
	}
	v.mv_size = rec_size(&rec);
	if ((rc = mdb_put(t->txn, t->s->obj, &k, &v, MDB_RESERVE)) != 0)
		return map_rc(rc);
	rec_encode_flags(v.mv_data, &rec, REC_AUX);
	v.mv_size = 3 + o->nrefs * STORE_DIGEST_LEN + o->natkey_len;
	if ((rc = mdb_put(t->txn, t->s->aux, &k, &v, MDB_RESERVE)) != 0)
		return map_rc(rc);
	a = v.mv_data;
	a[0] = (uint8_t)o->nrefs;
	memcpy(a + 1, &nl, 2);
	if (o->nrefs)
		memcpy(a + 3, o->refs, o->nrefs * STORE_DIGEST_LEN);
	if (o->natkey_len)
		memcpy(a + 3 + o->nrefs * STORE_DIGEST_LEN, o->natkey, o->natkey_len);
	return KI_OK;
}

int
store_get_by_seq(store_txn *t, uint64_t id, store_obj *out)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	put_be64(kb, id);
	if ((rc = mdb_get(t->txn, t->s->obj, &k, &v)) != 0)
		return map_rc(rc);
	if ((rc = obj_decode(t, NULL, v.mv_data, v.mv_size, out)) == KI_OK &&
	    out->seq != id)
		rc = KI_ECORRUPT;   /* a damaged key found another record */
	return rc;
}

/* store_get_by_seq() through cursors on the object and aux tables, for a
 * walk in ascending id order. */
static int
get_by_cursor(store_txn *t, MDB_cursor *obj, MDB_cursor *aux, uint64_t id,
	store_obj *out)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	put_be64(kb, id);
	if ((rc = mdb_cursor_get(obj, &k, &v, MDB_SET_KEY)) != 0)
		return map_rc(rc);
	if ((rc = obj_decode(t, aux, v.mv_data, v.mv_size, out)) == KI_OK &&
	    out->seq != id)
		rc = KI_ECORRUPT;
	return rc;
}

int
store_get_by_name(store_txn *t, int kind, const char *name, size_t len,
	store_obj *out)
{
	uint8_t kb[1 + STORE_MAX_NAME];
	MDB_val k;
	uint64_t id;
	int rc;

	if (len == 0 || len > STORE_MAX_NAME)
		return KI_ENOTFOUND;
	k = kind_key(kb, kind, name, len);
	if ((rc = get_u64(t->txn, t->s->name, &k, &id)) != KI_OK)
		return rc;
	return store_get_by_seq(t, id, out);
}

/* KI_OK if object id's record holds digest, KI_ENOTFOUND if it holds
 * another. */
static int
rec_has_digest(store_txn *t, uint64_t id, const uint8_t *digest)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	store_obj o;
	int rc, flags;

	put_be64(kb, id);
	if ((rc = mdb_get(t->txn, t->s->obj, &k, &v)) != 0)
		return rc == MDB_NOTFOUND ? KI_ESTORE : map_rc(rc);
	if ((rc = rec_decode_flags(v.mv_data, v.mv_size, &o, &flags)) != KI_OK)
		return rc;
	return memcmp(o.digest, digest, STORE_DIGEST_LEN) == 0 ? KI_OK :
	    KI_ENOTFOUND;
}

/* ---- the digest index ----
 *
 * A new object's digest is random, so in one B-tree every new object
 * copies a leaf of its own and the branch pages above it: at 64
 * connections, a third of the bytes a POST wrote, and, measured by
 * leaving the index out, 20-35% of the POSTs a second on a store grown to
 * 250,000 runs. So the index has two parts. The main one ("digest8")
 * as before. The young one: digests of new objects, written in the order
 * of their ids into one of two tables ("young0", "young1", id -> the
 * digest's first 8 bytes), so that a batch of new objects appends to the
 * same page, and held in memory by the owner of the store. Once the
 * filling table (meta "dgen" & 1) holds young_max digests, it stops
 * filling ("dgen" moves on) and its digests merge into the main index in
 * their order, a few for each one the other table takes ("dlast": the last
 * one merged), so that the digests one commit merges are neighbours and
 * share the main index's leaves; when the last is merged the table is
 * emptied. A lookup takes the main index's ids, then the young ones, and
 * keeps one whose record holds the whole digest (a young id may be from a
 * transaction that aborted, or of an object since deleted: its record then
 * says so). Only a reader whose snapshot is older than the commit that
 * emptied a table after its merge may find the memory without that
 * table's digests; it reads its snapshot's tables instead. A process that
 * does not own the store (an admin command) always reads the tables. */

static int
dent_cmp(const void *a, const void *b)
{
	const dent *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Adds to the filling generation's hash (the caller holds dm.lk for
 * writing). */
static int
dm_add_locked(dmem *m, uint64_t key, uint64_t id)
{
	size_t i;

	if (2 * (m->an + 1) > m->acap) {
		size_t cap = m->acap ? m->acap * 2 : 1024;
		dent *na = calloc(cap, sizeof(*na));

		if (na == NULL)
			return KI_ENOMEM;
		for (size_t j = 0; j < m->acap; j++) {
			if (m->a[j].id == 0)
				continue;
			for (i = (size_t)m->a[j].key & (cap - 1); na[i].id != 0;
			    i = (i + 1) & (cap - 1))
				;
			na[i] = m->a[j];
		}
		free(m->a);
		m->a = na;
		m->acap = cap;
	}
	for (i = (size_t)key & (m->acap - 1); m->a[i].id != 0;
	    i = (i + 1) & (m->acap - 1))
		if (m->a[i].key == key && m->a[i].id == id)
			return KI_OK;
	m->a[i].key = key;
	m->a[i].id = id;
	m->an++;
	return KI_OK;
}

static int
dm_add(store *s, uint64_t key, uint64_t id)
{
	int rc;

	pthread_rwlock_wrlock(&s->dm.lk);
	rc = dm_add_locked(&s->dm, key, id);
	pthread_rwlock_unlock(&s->dm.lk);
	return rc;
}

/* Sorts young digests by key, stably: entries read in id order come out
 * in (key, id) order. An LSD radix sort, 8 bits a pass: qsort's merge sort
 * was the largest item of a warm open's CPU profile; this sorts 140,000
 * in 4-6 ms. The committer sorts a generation each time one fills. */
static int
dent_sort(dent *d, size_t n)
{
	dent *tmp, *src = d, *dst;
	size_t cnt[256];

	if (n < 2)
		return KI_OK;
	if ((tmp = malloc(n * sizeof(*tmp))) == NULL)
		return KI_ENOMEM;
	dst = tmp;
	for (int shift = 0; shift < 64; shift += 8) {
		size_t sum = 0;

		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(src[i].key >> shift) & 0xff]++;
		if (cnt[(src[0].key >> shift) & 0xff] == n)
			continue;   /* every key has this byte: nothing moves */
		for (int b = 0; b < 256; b++) {
			size_t c = cnt[b];

			cnt[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[(src[i].key >> shift) & 0xff]++] = src[i];
		dst = src;
		src = src == d ? tmp : d;
	}
	if (src != d)
		memcpy(d, src, n * sizeof(*d));
	free(tmp);
	return KI_OK;
}

/* Appends the entries of a young table with ids in [lo, hi] to *d. */
static int
young_scan(MDB_txn *txn, MDB_dbi dbi, uint64_t lo, uint64_t hi, dent **d,
    size_t *n, size_t *cap)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint8_t kb[8];
	int rc;

	if ((rc = mdb_cursor_open(txn, dbi, &c)) != 0)
		return map_rc(rc);
	put_be64(kb, lo);
	k.mv_size = sizeof(kb);
	k.mv_data = kb;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		uint64_t id;

		if (k.mv_size != 8 || v.mv_size != DIGEST_KEY) {
			rc = MDB_CORRUPTED;
			break;
		}
		if ((id = get_be64(k.mv_data)) > hi)
			break;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 1024;
			dent *nd = realloc(*d, nc * sizeof(*nd));

			if (nd == NULL) {
				mdb_cursor_close(c);
				return KI_ENOMEM;
			}
			*d = nd;
			*cap = nc;
		}
		(*d)[*n].id = id;
		(*d)[*n].key = get_be64(v.mv_data);
		(*n)++;
	}
	mdb_cursor_close(c);
	return rc == 0 || rc == MDB_NOTFOUND ? KI_OK : map_rc(rc);
}

/* One of the threads that read a young table's id ranges side by side. */
typedef struct yread {
	MDB_env *env;
	MDB_dbi dbi;
	size_t txnid;        /* the snapshot that the reader must see */
	uint64_t lo, hi;
	dent *d;
	size_t n, cap;
	int rc, started;
	pthread_t th;
} yread;

static void *
yread_run(void *arg)
{
	yread *r = arg;
	MDB_txn *txn;

	ki_thread_name("ki-young-read");
	if ((r->rc = map_rc(mdb_txn_begin(r->env, NULL, MDB_RDONLY, &txn))) !=
	    KI_OK)
		return NULL;
	if (mdb_txn_id(txn) != r->txnid)
		r->rc = KI_ECONFLICT;   /* a commit came between */
	else if ((r->d = malloc(r->cap * sizeof(*r->d))) == NULL)
		r->rc = KI_ENOMEM;
	else
		r->rc = young_scan(txn, r->dbi, r->lo, r->hi, &r->d, &r->n,
		    &r->cap);
	mdb_txn_abort(txn);
	return NULL;
}

/* Reads the young table dbi of txn's snapshot, of entries entries, as
 * YREAD_THREADS ranges of ids side by side (a range whose thread does not
 * start is read here), into one array in id order. KI_ECONFLICT: a reader
 * saw a later snapshot. */
static int
young_read_ranges(MDB_txn *txn, MDB_dbi dbi, size_t entries, dent **out,
    size_t *n)
{
	yread r[YREAD_THREADS];
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t first = 0, last = 0, span;
	size_t total = 0, off = 0;
	dent *all = NULL;
	int rc;

	if ((rc = mdb_cursor_open(txn, dbi, &c)) != 0)
		return map_rc(rc);
	if ((rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) == 0 &&
	    k.mv_size == 8) {
		first = get_be64(k.mv_data);
		if ((rc = mdb_cursor_get(c, &k, &v, MDB_LAST)) == 0 &&
		    k.mv_size == 8)
			last = get_be64(k.mv_data);
	}
	if (rc == 0 && k.mv_size != 8)
		rc = MDB_CORRUPTED;
	mdb_cursor_close(c);
	if (rc != 0)
		return map_rc(rc);
	span = last >= first ? (last - first) / YREAD_THREADS + 1 : 1;
	memset(r, 0, sizeof(r));
	for (int j = 0; j < YREAD_THREADS; j++) {
		r[j].env = mdb_txn_env(txn);
		r[j].dbi = dbi;
		r[j].txnid = mdb_txn_id(txn);
		r[j].lo = first + (uint64_t)j * span;
		r[j].hi = j == YREAD_THREADS - 1 ? UINT64_MAX :
		    r[j].lo + span - 1;
		/* Its share and a margin: ids are dense in a table. */
		r[j].cap = entries / YREAD_THREADS +
		    entries / (4 * YREAD_THREADS) + 64;
		r[j].started = pthread_create(&r[j].th, NULL, yread_run,
		    &r[j]) == 0;
		if (!r[j].started)
			yread_run(&r[j]);
	}
	for (int j = 0; j < YREAD_THREADS; j++) {
		if (r[j].started)
			pthread_join(r[j].th, NULL);
		total += r[j].n;
		if (rc == KI_OK)
			rc = r[j].rc;
	}
	if (rc == KI_OK && (all = malloc((total ? total : 1) *
	    sizeof(*all))) == NULL)
		rc = KI_ENOMEM;
	for (int j = 0; j < YREAD_THREADS; j++) {
		if (rc == KI_OK && r[j].n > 0)
			memcpy(all + off, r[j].d, r[j].n * sizeof(*all));
		off += r[j].n;
		free(r[j].d);
	}
	if (rc != KI_OK) {
		free(all);
		return rc;
	}
	*out = all;
	*n = total;
	return KI_OK;
}

/* Reads a young table into an array, sorted by (key, id) if sort. */
static int
young_read(store *s, MDB_txn *txn, MDB_dbi dbi, int sort, dent **out,
    size_t *n)
{
	MDB_stat st;
	dent *d = NULL;
	size_t cap = 0, i = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = mdb_stat(txn, dbi, &st)) != 0)
		return map_rc(rc);
	if (st.ms_entries == 0)
		return KI_OK;
	rc = st.ms_entries >= s->yread_min ?
	    young_read_ranges(txn, dbi, st.ms_entries, &d, &i) : KI_ECONFLICT;
	if (rc == KI_ECONFLICT)   /* small, or another snapshot: read here */
		rc = young_scan(txn, dbi, 0, UINT64_MAX, &d, &i, &cap);
	if (rc == KI_OK && sort)
		rc = dent_sort(d, i);
	if (rc != KI_OK) {
		free(d);
		return rc;
	}
	*out = d;
	*n = i;
	return KI_OK;
}

/* Loads the memory from the committed tables (at open). */
static int
dm_load(store *s)
{
	MDB_txn *txn;
	dent *d;
	size_t n;
	uint64_t g;
	int rc;

	if ((rc = map_rc(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn))) !=
	    KI_OK)
		return rc;
	if ((rc = meta_get_u64(txn, s->meta, "dgen", &g)) != KI_OK ||
	    (rc = young_read(s, txn, s->young[g & 1], 0, &d, &n)) != KI_OK)
		goto out;
	for (size_t i = 0; i < n && rc == KI_OK; i++)
		rc = dm_add_locked(&s->dm, d[i].key, d[i].id);
	free(d);
	if (rc == KI_OK)
		rc = young_read(s, txn, s->young[(g + 1) & 1], 1, &s->dm.b,
		    &s->dm.bn);
	s->dm.bgen = g;
out:
	mdb_txn_abort(txn);
	s->dm.on = rc == KI_OK;
	return rc;
}

/* Whether id's record holds digest (a missing record does not). */
static int
young_has(store_txn *t, uint64_t id, const uint8_t *digest)
{
	int rc = rec_has_digest(t, id, digest);

	return rc == KI_ESTORE ? KI_ENOTFOUND : rc;
}

/* The lowest id among young candidates whose record holds digest: from
 * memory, or (*scan) the snapshot's tables. */
static int
young_find(store_txn *t, const uint8_t *digest, uint64_t *id)
{
	store *s = t->s;
	uint64_t key = get_be64(digest), cand[16], best = UINT64_MAX;
	size_t n = 0;
	int rc = KI_OK, scan;

	pthread_rwlock_rdlock(&s->dm.lk);
	scan = !s->dm.on || mdb_txn_id(t->txn) < s->dm.b_done;
	if (!scan) {
		if (s->dm.acap > 0)
			for (size_t i = (size_t)key & (s->dm.acap - 1);
			    s->dm.a[i].id != 0; i = (i + 1) & (s->dm.acap - 1))
				if (s->dm.a[i].key == key && n < 16)
					cand[n++] = s->dm.a[i].id;
		if (s->dm.bn > 0) {
			size_t lo = 0, hi = s->dm.bn;

			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (s->dm.b[mid].key < key)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (; lo < s->dm.bn && s->dm.b[lo].key == key && n < 16;
			    lo++)
				cand[n++] = s->dm.b[lo].id;
		}
		/* More than 16 ids under one 8-byte prefix: read the tables. */
		scan = n == 16;
	}
	pthread_rwlock_unlock(&s->dm.lk);
	if (!scan) {
		for (size_t i = 0; i < n && rc == KI_OK; i++) {
			if (cand[i] >= best)
				continue;
			if ((rc = young_has(t, cand[i], digest)) == KI_OK)
				best = cand[i];
			else if (rc == KI_ENOTFOUND)
				rc = KI_OK;
		}
	} else {
		for (int g = 0; g < 2 && rc == KI_OK; g++) {
			MDB_cursor *c;
			MDB_val k, v;
			int mrc;

			if ((mrc = mdb_cursor_open(t->txn, s->young[g], &c)) != 0)
				return map_rc(mrc);
			for (mrc = mdb_cursor_get(c, &k, &v, MDB_FIRST); mrc == 0;
			    mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
				uint64_t cid;

				if (k.mv_size != 8 || v.mv_size != DIGEST_KEY) {
					rc = KI_ESTORE;
					break;
				}
				cid = get_be64(k.mv_data);
				if (memcmp(v.mv_data, digest, DIGEST_KEY) != 0 ||
				    cid >= best)
					continue;
				if ((rc = young_has(t, cid, digest)) == KI_OK)
					best = cid;
				else if (rc != KI_ENOTFOUND)
					break;
				rc = KI_OK;
			}
			mdb_cursor_close(c);
			if (rc == KI_OK && mrc != 0 && mrc != MDB_NOTFOUND)
				rc = map_rc(mrc);
		}
	}
	if (rc != KI_OK)
		return rc;
	if (best == UINT64_MAX)
		return KI_ENOTFOUND;
	*id = best;
	return KI_OK;
}

/* Adds a new object's digest to the filling generation. */
static int
young_add(store_txn *t, const uint8_t *digest, uint64_t id)
{
	store *s = t->s;
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v = { DIGEST_KEY, (void *)(uintptr_t)digest };
	uint64_t g;
	int rc;

	put_be64(kb, id);
	if ((rc = meta_get_u64(t->txn, s->meta, "dgen", &g)) != KI_OK ||
	    (rc = map_rc(mdb_put(t->txn, s->young[g & 1], &k, &v, 0))) !=
	    KI_OK)
		return rc;
	t->dadded++;
	return s->dm.on ? dm_add(s, get_be64(digest), id) : KI_OK;
}

/* Takes a deleted object's young digest out (in either generation). */
static int
young_del(store_txn *t, uint64_t id)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb };

	put_be64(kb, id);
	for (int g = 0; g < 2; g++) {
		int rc = mdb_del(t->txn, t->s->young[g], &k, NULL);

		if (rc != 0 && rc != MDB_NOTFOUND)
			return map_rc(rc);
	}
	return KI_OK;
}

/* At a top-level commit of the owner: merges the next digests of the
 * merging generation into the main index (two for each young digest this
 * transaction added, and at least 16), or, when none is merging and the
 * filling one is full, starts merging it. What changes in memory is done
 * after the commit (young_after). */
static int
young_step(store_txn *t)
{
	store *s = t->s;
	MDB_dbi merging;
	MDB_stat st;
	uint8_t lb[16], kb[8], ib[8];
	static char dlast[] = "dlast";
	MDB_val lk = { 5, dlast }, lv, k, v;
	dent last = { 0, 0 }, *todo;
	size_t want = (size_t)(2 * t->dadded + 16), n = 0, at;
	uint64_t g;
	int rc, end;

	if ((rc = meta_get_u64(t->txn, s->meta, "dgen", &g)) != KI_OK)
		return rc;
	merging = s->young[(g + 1) & 1];
	if ((rc = map_rc(mdb_stat(t->txn, merging, &st))) != KI_OK)
		return rc;
	if (st.ms_entries == 0) {
		if ((rc = map_rc(mdb_stat(t->txn, s->young[g & 1], &st))) !=
		    KI_OK || st.ms_entries < s->young_max)
			return rc;
		t->dswap = 1;
		return meta_put_u64(t->txn, s->meta, "dgen", g + 1);
	}
	rc = mdb_get(t->txn, s->meta, &lk, &lv);
	if (rc == 0 && lv.mv_size == 16) {
		last.key = get_be64(lv.mv_data);
		last.id = get_be64((const uint8_t *)lv.mv_data + 8);
	} else if (rc != MDB_NOTFOUND) {
		return rc == 0 ? KI_ESTORE : map_rc(rc);
	}
	if ((todo = malloc(want * sizeof(*todo))) == NULL)
		return KI_ENOMEM;
	pthread_rwlock_rdlock(&s->dm.lk);
	if (s->dm.bgen != g || s->dm.bn == 0) {
		/* The memory does not hold this generation (it could not be
		 * read): nothing is merged. */
		pthread_rwlock_unlock(&s->dm.lk);
		free(todo);
		return KI_OK;
	}
	{
		size_t lo = 0, hi = s->dm.bn;

		/* The first after last (all of them when none was merged). */
		while (rc == 0 && lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (dent_cmp(&s->dm.b[mid], &last) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		at = rc == 0 ? lo : 0;
		for (; at < s->dm.bn && n < want; at++)
			todo[n++] = s->dm.b[at];
		end = at == s->dm.bn;
	}
	pthread_rwlock_unlock(&s->dm.lk);
	rc = KI_OK;
	for (size_t i = 0; i < n && rc == KI_OK; i++) {
		put_be64(kb, todo[i].id);
		put_be64(ib, todo[i].key);
		k.mv_size = 8;
		k.mv_data = kb;
		/* Still there (its object may have been deleted)? */
		rc = mdb_get(t->txn, merging, &k, &v);
		if (rc == MDB_NOTFOUND) {
			rc = KI_OK;
			continue;
		}
		if (rc != 0 || v.mv_size != DIGEST_KEY ||
		    memcmp(v.mv_data, ib, DIGEST_KEY) != 0) {
			rc = rc != 0 ? map_rc(rc) : KI_ESTORE;
			break;
		}
		k.mv_size = DIGEST_KEY;
		k.mv_data = ib;
		v.mv_size = 8;
		v.mv_data = kb;
		rc = mdb_put(t->txn, s->digest, &k, &v, MDB_NODUPDATA);
		rc = rc == MDB_KEYEXIST ? KI_OK : map_rc(rc);
	}
	if (rc == KI_OK && end) {
		/* The whole generation is in the main index. */
		rc = map_rc(mdb_drop(t->txn, merging, 0));
		if (rc == KI_OK) {
			rc = mdb_del(t->txn, s->meta, &lk, NULL);
			rc = rc == MDB_NOTFOUND ? KI_OK : map_rc(rc);
		}
		t->ddone = rc == KI_OK;
	} else if (rc == KI_OK && n > 0) {
		put_be64(lb, todo[n - 1].key);
		put_be64(lb + 8, todo[n - 1].id);
		lv.mv_size = 16;
		lv.mv_data = lb;
		rc = map_rc(mdb_put(t->txn, s->meta, &lk, &lv, 0));
	}
	free(todo);
	return rc;
}

/* After a commit that young_step changed: the memory follows. A started
 * merge: the filling hash becomes the sorted merging generation, read from
 * the committed table (the hash may hold ids of aborted transactions; the
 * table is what a restart would read); a finished one: its array goes, and
 * older snapshots read the tables. */
static void
young_after(store *s, int swap, int done, uint64_t txnid)
{
	dent *d = NULL;
	size_t n = 0;

	if (swap) {
		MDB_txn *txn;
		uint64_t g;
		int rc = map_rc(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn));

		if (rc == KI_OK) {
			if ((rc = meta_get_u64(txn, s->meta, "dgen", &g)) ==
			    KI_OK)
				rc = young_read(s, txn, s->young[(g + 1) & 1], 1,
				    &d, &n);
			s->dm.bgen = g;
			mdb_txn_abort(txn);
		}
		if (rc != KI_OK) {
			/* Without the array, lookups read the tables from now
			 * on, and this process no longer merges. */
			log_error("store: the young digests cannot be read "
			    "(%s); digest lookups read the tables",
			    ki_strerror(rc));
			pthread_rwlock_wrlock(&s->dm.lk);
			s->dm.on = 0;
			pthread_rwlock_unlock(&s->dm.lk);
			return;
		}
	}
	pthread_rwlock_wrlock(&s->dm.lk);
	if (done) {
		s->dm.b_done = txnid;
		free(s->dm.b);
		s->dm.b = NULL;
		s->dm.bn = 0;
	}
	if (swap) {
		free(s->dm.b);
		s->dm.b = d;
		s->dm.bn = n;
		if (s->dm.acap > 0)
			memset(s->dm.a, 0, s->dm.acap * sizeof(*s->dm.a));
		s->dm.an = 0;
	}
	pthread_rwlock_unlock(&s->dm.lk);
}

/* The id the digest index keeps for digest: among the ids under its first
 * DIGEST_KEY bytes, the one whose record holds the whole digest. */
static int
digest_find(store_txn *t, const uint8_t *digest, uint64_t *id)
{
	MDB_val k = { DIGEST_KEY, (void *)(uintptr_t)digest }, v;
	MDB_cursor *c;
	int rc, mrc;

	/* Nearly always, the first id is the only one. */
	if ((rc = get_u64(t->txn, t->s->digest, &k, id)) == KI_ENOTFOUND)
		return young_find(t, digest, id);
	if (rc != KI_OK || (rc = rec_has_digest(t, *id, digest)) !=
	    KI_ENOTFOUND)
		return rc;
	if ((mrc = mdb_cursor_open(t->txn, t->s->digest, &c)) != 0)
		return map_rc(mrc);
	mrc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY);
	while (mrc == 0 && (mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP)) == 0) {
		if (v.mv_size != 8) {
			rc = KI_ESTORE;
			break;
		}
		*id = get_be64(v.mv_data);
		if ((rc = rec_has_digest(t, *id, digest)) != KI_ENOTFOUND)
			break;
	}
	if (mrc != 0)
		rc = map_rc(mrc);
	mdb_cursor_close(c);
	return rc == KI_ENOTFOUND ? young_find(t, digest, id) : rc;
}

int
store_get_by_digest(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_obj *out)
{
	uint64_t id;
	int rc;

	if ((rc = digest_find(t, digest, &id)) != KI_OK)
		return rc;
	return store_get_by_seq(t, id, out);
}

int
store_get_by_natkey(store_txn *t, int kind, const char *key, size_t len,
	store_obj *out)
{
	uint8_t kb[1 + STORE_MAX_NATKEY];
	MDB_val k;
	uint64_t id;
	int rc;

	if (len == 0 || len > STORE_MAX_NATKEY)
		return KI_ENOTFOUND;
	k = kind_key(kb, kind, key, len);
	if ((rc = get_u64(t->txn, t->s->natkey, &k, &id)) != KI_OK)
		return rc;
	return store_get_by_seq(t, id, out);
}

/* ---- writes ---- */

/* The next pair of a label blob ("key\0value\0..."): sets key, value and
 * their lengths, moves *p past the pair. Returns 0 at the end of the blob
 * or at a pair it cuts short. */
static int
label_next(const char **p, const char *end, const char **key, size_t *klen,
	const char **val, size_t *vlen)
{
	if (*p == NULL || *p >= end)
		return 0;
	*key = *p;
	*klen = strnlen(*key, (size_t)(end - *key));
	if (*key + *klen >= end)
		return 0;
	*val = *key + *klen + 1;
	*vlen = strnlen(*val, (size_t)(end - *val));
	if (*val + *vlen >= end)
		return 0;
	*p = *val + *vlen + 1;
	return 1;
}

/* o's facets ("a\0b\0..."): its own, or those the store's facets function
 * derives from its labels, into fb (caller frees). Sets *p and *end. */
static int
obj_facets(store_txn *t, const store_obj *o, ki_buf *fb, const char **p,
	const char **end)
{
	int rc;

	*p = o->facets;
	*end = o->facets ? o->facets + o->facets_len : NULL;
	if (o->facets_len == 0 && t->s->facets != NULL) {
		if ((rc = t->s->facets(o->kind, o->labels, o->labels_len, fb)) !=
		    KI_OK)
			return rc;
		*p = fb->data;
		*end = fb->data ? fb->data + fb->len : NULL;
	}
	return KI_OK;
}

/* Adds (dir 1) or removes (dir -1) o's label postings (postings set) and
 * facet counts (facets set). */
static int
index_labels(store_txn *t, const store_obj *o, int dir, int postings,
	int facets)
{
	uint8_t kb[2 + STORE_MAX_INDEXED + STORE_MAX_NATKEY], ib[8];
	const char *p = o->labels, *end = o->labels ? o->labels + o->labels_len :
	    NULL, *key, *val;
	size_t klen, vlen, n;
	ki_buf fb;
	MDB_val k, v;
	int rc;

	put_be64(ib, o->seq);
	while (postings && label_next(&p, end, &key, &klen, &val, &vlen)) {
		if ((n = label_key(kb, o->kind, key, klen, val, vlen)) == 0)
			continue;
		k.mv_size = n;
		k.mv_data = kb;
		v.mv_size = 8;
		v.mv_data = ib;
		rc = dir > 0 ? mdb_put(t->txn, t->s->label, &k, &v, MDB_NODUPDATA) :
		    mdb_del(t->txn, t->s->label, &k, &v);
		if (rc != 0 && rc != MDB_NOTFOUND && rc != MDB_KEYEXIST)
			return map_rc(rc);
	}
	if (!facets)
		return KI_OK;
	ki_buf_init(&fb);
	if ((rc = obj_facets(t, o, &fb, &p, &end)) != KI_OK)
		goto out;
	while (p != NULL && p < end) {
		size_t flen = strnlen(p, (size_t)(end - p));

		if (flen > 0 && flen <= STORE_MAX_NATKEY) {
			k = kind_key(kb, o->kind, p, flen);
			if ((rc = facet_add(t, k.mv_data, k.mv_size, dir > 0 ? 1 :
			    -1)) != KI_OK)
				goto out;
		}
		p += flen + 1;
	}
	rc = KI_OK;
out:
	ki_buf_free(&fb);
	return rc;
}

/* Adds (dir 1) or removes (dir -1) o's reference postings. */
static int
ref_postings(store_txn *t, const store_obj *o, int dir)
{
	uint8_t ib[8];
	MDB_val k, v = { 8, ib };
	int rc;

	put_be64(ib, o->seq);
	for (size_t i = 0; i < o->nrefs; i++) {
		k.mv_size = STORE_DIGEST_LEN;
		k.mv_data = (void *)(uintptr_t)(o->refs + i * STORE_DIGEST_LEN);
		rc = dir > 0 ? mdb_put(t->txn, t->s->ref, &k, &v, MDB_NODUPDATA) :
		    mdb_del(t->txn, t->s->ref, &k, &v);
		if (rc != 0 && rc != MDB_KEYEXIST && rc != MDB_NOTFOUND)
			return map_rc(rc);
	}
	return KI_OK;
}

/* The last seq whose objects' postings are written (meta "posted"), read
 * once a transaction. A store that has never left any in the tail (a new
 * one, or one from before the tail) has no "posted": every seq so far is
 * posted, and the commit writes that down. */
static int
posted_get(store_txn *t, uint64_t *out)
{
	MDB_val k = { 6, (void *)(uintptr_t)"posted" };
	int rc;

	if (!t->posted_read) {
		rc = get_u64(t->txn, t->s->meta, &k, &t->posted);
		if (rc == KI_ENOTFOUND) {
			/* "seq" as committed: this transaction writes its own
			 * seq only at its commit. */
			if ((rc = meta_get_u64(t->txn, t->s->meta, "seq",
			    &t->posted)) != KI_OK)
				return rc;
			t->posted_moved = t->write;
		} else if (rc != KI_OK) {
			return rc;
		}
		t->posted_read = 1;
	}
	*out = t->posted;
	return KI_OK;
}

/* Calls fn(arg, id) for each object with a seq in (from, upto], of every
 * kind, in id order, until fn returns non-zero (that value is returned). */
static int
tail_each(store_txn *t, uint64_t from, uint64_t upto,
	int (*fn)(void *arg, uint64_t id), void *arg)
{
	MDB_cursor *c;
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int kind = 1, rc;

	if (from >= upto)
		return KI_OK;
	if ((rc = mdb_cursor_open(t->txn, t->s->obj, &c)) != 0)
		return map_rc(rc);
	/* Each kind's tail is the end of its id range. */
	while (kind <= 255) {
		k.mv_size = 8;
		k.mv_data = kb;
		put_be64(kb, store_id(kind, from + 1));
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		if (rc == 0 && k.mv_size == 8 &&
		    store_id_kind(get_be64(k.mv_data)) != kind) {
			/* No tail in kind: seek the next kind's. */
			kind = store_id_kind(get_be64(k.mv_data));
			continue;
		}
		while (rc == 0) {
			uint64_t id;

			if (k.mv_size != 8) {
				rc = KI_ESTORE;
				goto out;
			}
			id = get_be64(k.mv_data);
			if (store_id_kind(id) != kind)
				break;
			if ((id & ID_SEQ_MASK) <= upto &&
			    (rc = fn(arg, id)) != 0)
				goto out;
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		if (rc != 0 && rc != MDB_NOTFOUND) {
			rc = map_rc(rc);
			goto out;
		}
		if (rc == MDB_NOTFOUND)
			break;
		kind++;
	}
	rc = KI_OK;
out:
	mdb_cursor_close(c);
	return rc;
}

/* Appends id to the ki_buf at arg: a list of ids (see id_at). */
static int
id_add(void *arg, uint64_t id)
{
	return ki_buf_append(arg, &id, sizeof(id));
}

static uint64_t
id_at(const ki_buf *ids, size_t i)
{
	uint64_t id;

	memcpy(&id, ids->data + i * sizeof(id), sizeof(id));
	return id;
}

static int load_copy(store_txn *t, uint64_t id, void **copy, store_obj *old);

/* Writes the postings, and the facet counts if facets is set, of the
 * objects with seqs in (from, upto], in id order, so that each posting list
 * gets its new ids as one append; "posted" moves to upto. */
static int
tail_post(store_txn *t, uint64_t from, uint64_t upto, int facets)
{
	ki_buf ids;
	int rc;

	ki_buf_init(&ids);
	if ((rc = tail_each(t, from, upto, id_add, &ids)) != KI_OK)
		goto out;
	for (size_t i = 0; i < ids.len / sizeof(uint64_t); i++) {
		store_obj o;
		void *copy;

		/* A copy: the postings' writes may move the record's page. */
		if ((rc = load_copy(t, id_at(&ids, i), &copy, &o)) == KI_OK &&
		    (rc = ref_postings(t, &o, 1)) == KI_OK)
			rc = index_labels(t, &o, 1, 1, facets);
		free(copy);
		if (rc != KI_OK)
			goto out;
	}
	t->posted = upto;
	t->posted_moved = 1;
out:
	ki_buf_free(&ids);
	return rc;
}

/* Posts the tail once it holds TAIL_MAX objects (or more: one transaction
 * may add many). */
static int
tail_maybe_post(store_txn *t)
{
	uint64_t posted;
	int rc;

	if ((rc = posted_get(t, &posted)) != KI_OK)
		return rc;
	if (!t->seq_read || t->seq < posted || t->seq - posted < TAIL_MAX)
		return KI_OK;
	return tail_post(t, posted, t->seq, 1);
}

/* Format 4 (and the format-3 stores that already had "posted") counted a
 * tail object's facets when it was put; format 5 counts them when it posts
 * the object. Such a store's tail gets its postings here, in txn (the
 * open's), its facets being counted already. A store without "posted" has
 * no tail: nothing to do. */
static int
post_old_tail(store *s, MDB_txn *txn)
{
	store_txn t;
	uint64_t posted, seq;
	int rc;

	memset(&t, 0, sizeof(t));
	t.s = s;
	t.txn = txn;
	t.write = 1;
	if ((rc = meta_get_u64(txn, s->meta, "seq", &seq)) != KI_OK ||
	    (rc = posted_get(&t, &posted)) != KI_OK ||
	    (rc = tail_post(&t, posted, seq, 0)) != KI_OK)
		return rc;
	return meta_put_u64(txn, s->meta, "posted", seq);
}

/* Adds (dir 1) or removes (dir -1) the digest, natural-key, reference and
 * label entries of o. */
static int
index_object(store_txn *t, const store_obj *o, int dir)
{
	uint8_t kb[1 + STORE_MAX_NATKEY], ib[8];
	MDB_val k, v = { 8, ib };
	uint64_t id;
	int rc;

	put_be64(ib, o->seq);
	k.mv_size = DIGEST_KEY;
	k.mv_data = (void *)(uintptr_t)o->digest;
	if (dir > 0) {
		/* The first object with that content keeps it; a new digest
		 * goes to the young part of the index. A lookup that finds o
		 * itself found it in memory only: a replaced object's entries
		 * were just taken out of the tables (index_object -1), and an
		 * aborted transaction (a dry run) leaves the ids it used in
		 * memory, where the next object to take that id finds its own
		 * record. The tables, which a restart reads, must hold it. */
		rc = digest_find(t, o->digest, &id);
		if (rc == KI_ENOTFOUND || (rc == KI_OK && id == o->seq))
			rc = young_add(t, o->digest, o->seq);
	} else {
		/* Only if the index keeps this object for it. */
		rc = map_rc(mdb_del(t->txn, t->s->digest, &k, &v));
		if (rc == KI_ENOTFOUND)
			rc = KI_OK;
		if (rc == KI_OK)
			rc = young_del(t, o->seq);
	}
	if (rc != KI_OK)
		return rc;
	if (o->natkey_len) {
		k = kind_key(kb, o->kind, o->natkey, o->natkey_len);
		if (dir > 0) {
			rc = map_rc(mdb_put(t->txn, t->s->natkey, &k, &v, 0));
		} else {
			rc = get_u64(t->txn, t->s->natkey, &k, &id);
			if (rc == KI_OK && id == o->seq)
				rc = map_rc(mdb_del(t->txn, t->s->natkey, &k, NULL));
			if (rc == KI_ENOTFOUND)
				rc = KI_OK;
		}
		if (rc != KI_OK)
			return rc;
	}
	if ((rc = posted_get(t, &id)) != KI_OK)
		return rc;
	if ((o->seq & ID_SEQ_MASK) > id)
		return KI_OK;   /* in the tail: counted when it is posted */
	if ((rc = ref_postings(t, o, dir)) != KI_OK)
		return rc;
	return index_labels(t, o, dir, 1, 1);
}

/* Keeps o, whole, as version rv while the event rv is kept: its object's
 * current record is about to stop holding that state. */
static int
keep_version(store_txn *t, uint64_t rv, const store_obj *o, uint64_t now_rv)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	if (rv + t->s->history <= now_rv)
		return KI_OK;   /* its event is trimmed by now */
	put_be64(kb, rv);
	v.mv_size = rec_size(o);
	if ((rc = mdb_put(t->txn, t->s->version, &k, &v, MDB_RESERVE)) != 0)
		return map_rc(rc);
	rec_encode(v.mv_data, o);
	return KI_OK;
}

/* Appends the event rv -> type + id and trims the history to its bound.
 * The trim waits until EVENT_TRIM events are past the bound and then
 * deletes them together: deleting one per write copied the first leaf
 * and its branch pages in every commit, a third of what appending and
 * trimming an event wrote at one connection; EVENT_TRIM entries span a
 * few leaves, freed together. store_oldest_event hides the events that
 * wait. */
static int
put_event(store_txn *t, int type, uint64_t rv, uint64_t id)
{
	uint8_t kb[8], vb[9];
	MDB_val k = { 8, kb }, v = { 9, vb };
	MDB_cursor *c;
	uint64_t cutoff;
	int rc;

	put_be64(kb, rv);
	vb[0] = (uint8_t)type;
	put_be64(vb + 1, id);
	rc = mdb_put(t->txn, t->s->event, &k, &v, MDB_APPEND);
	if (rc != 0)
		return map_rc(rc);
	if (rv <= t->s->history + EVENT_TRIM)
		return KI_OK;
	cutoff = rv - t->s->history;
	if ((rc = mdb_cursor_open(t->txn, t->s->event, &c)) != 0)
		return map_rc(rc);
	rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	if (rc == 0 && get_be64(k.mv_data) > cutoff - EVENT_TRIM) {
		mdb_cursor_close(c);
		return KI_OK;
	}
	for (; rc == 0 && get_be64(k.mv_data) <= cutoff;
	    rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) {
		MDB_val vk = k;

		/* A superseded state kept for this event goes with it. */
		rc = mdb_del(t->txn, t->s->version, &vk, NULL);
		if (rc != 0 && rc != MDB_NOTFOUND)
			break;
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
	}
	mdb_cursor_close(c);
	return rc == 0 || rc == MDB_NOTFOUND ? KI_OK : map_rc(rc);
}

/* Copies the current state of id, whole, into *copy (caller frees) and
 * decodes it into old, which then points into the copy: later writes in
 * the transaction may move the pages a borrowed record lives on. */
static int
load_copy(store_txn *t, uint64_t id, void **copy, store_obj *old)
{
	store_obj cur;
	int rc;

	*copy = NULL;
	if ((rc = store_get_by_seq(t, id, &cur)) != KI_OK)
		return rc;
	if ((*copy = malloc(rec_size(&cur))) == NULL)
		return KI_ENOMEM;
	rec_encode(*copy, &cur);
	return rec_decode(*copy, rec_size(&cur), old);
}

int
store_put(store_txn *t, store_obj *o)
{
	uint8_t kb[1 + STORE_MAX_NAME], ib[8];
	MDB_val k, v;
	store_obj old;
	void *copy = NULL;
	uint64_t id, last;
	int rc, exists;

	if (!t->write || o->rv != t->rv + 1 || o->name_len == 0 ||
	    o->name_len > STORE_MAX_NAME || o->natkey_len > STORE_MAX_NATKEY ||
	    o->nrefs > STORE_MAX_REFS || o->json_len > UINT32_MAX ||
	    o->labels_len > UINT32_MAX || o->facets_len > UINT32_MAX ||
	    o->kind <= 0 || o->kind > 255)
		return KI_EINVAL;
	t->writes++;
	k = kind_key(kb, o->kind, o->name, o->name_len);
	rc = get_u64(t->txn, t->s->name, &k, &id);
	if (rc != KI_OK && rc != KI_ENOTFOUND)
		return rc;
	exists = rc == KI_OK;
	if (exists) {
		if ((rc = changes_bump(t)) != KI_OK ||
		    (rc = load_copy(t, id, &copy, &old)) != KI_OK ||
		    (rc = index_object(t, &old, -1)) != KI_OK ||
		    (rc = keep_version(t, old.rv, &old, o->rv)) != KI_OK)
			goto out;
	} else {
		if (!t->seq_read) {
			if ((rc = meta_get_u64(t->txn, t->s->meta, "seq", &last)) !=
			    KI_OK)
				goto out;
			t->seq = last;
			t->seq_read = 1;
		}
		id = store_id(o->kind, ++t->seq);
		t->seq_moved = 1;
		put_be64(ib, id);
		v.mv_size = 8;
		v.mv_data = ib;
		if ((rc = map_rc(mdb_put(t->txn, t->s->name, &k, &v, 0))) != KI_OK)
			goto out;
	}
	o->seq = id;
	if ((rc = write_record(t, o)) != KI_OK)
		goto out;
	if ((rc = index_object(t, o, 1)) != KI_OK ||
	    (rc = put_event(t, exists ? STORE_MODIFIED : STORE_ADDED, o->rv,
	    id)) != KI_OK)
		goto out;
	t->rv = o->rv;
	t->dirty = 1;
	rc = log_obj(t, OP_PUT, o);
out:
	free(copy);
	return rc;
}

int
store_delete(store_txn *t, int kind, const char *name, size_t len,
	const store_obj *final)
{
	uint8_t kb[1 + STORE_MAX_NAME], ib[8];
	MDB_val k, ik = { 8, ib };
	store_obj old, ev;
	void *copy = NULL;
	uint64_t id, rv = t->rv + 1;
	int rc;

	if (!t->write || len == 0 || len > STORE_MAX_NAME)
		return KI_EINVAL;
	t->writes++;
	k = kind_key(kb, kind, name, len);
	if ((rc = get_u64(t->txn, t->s->name, &k, &id)) != KI_OK)
		return rc;
	if ((rc = changes_bump(t)) != KI_OK ||
	    (rc = load_copy(t, id, &copy, &old)) != KI_OK)
		goto out;
	/* The event names the final state, kept as a version. */
	ev = old;
	ev.rv = rv;
	ev.json = final->json;
	ev.json_len = final->json_len;
	ev.meta_off = final->meta_off;
	ev.meta_len = final->meta_len;
	ev.spec_off = final->spec_off;
	ev.spec_len = final->spec_len;
	ev.status_off = final->status_off;
	ev.status_len = final->status_len;
	if ((rc = keep_version(t, old.rv, &old, rv)) != KI_OK ||
	    (rc = keep_version(t, rv, &ev, rv)) != KI_OK ||
	    (rc = put_event(t, STORE_DELETED, rv, id)) != KI_OK ||
	    (rc = index_object(t, &old, -1)) != KI_OK)
		goto out;
	if ((rc = map_rc(mdb_del(t->txn, t->s->name, &k, NULL))) != KI_OK)
		goto out;
	put_be64(ib, id);
	if ((rc = map_rc(mdb_del(t->txn, t->s->obj, &ik, NULL))) != KI_OK)
		goto out;
	rc = map_rc(mdb_del(t->txn, t->s->aux, &ik, NULL));
	if (rc != KI_OK && rc != KI_ENOTFOUND)
		goto out;
	t->rv = rv;
	t->dirty = 1;
	{
		store_obj d;

		memset(&d, 0, sizeof(d));
		d.kind = kind;
		d.name = name;
		d.name_len = len;
		d.json = final->json;
		d.json_len = final->json_len;
		d.meta_off = final->meta_off;
		d.meta_len = final->meta_len;
		d.spec_off = final->spec_off;
		d.spec_len = final->spec_len;
		d.status_off = final->status_off;
		d.status_len = final->status_len;
		rc = log_obj(t, OP_DELETE, &d);
	}
out:
	free(copy);
	return rc;
}

/* ---- lists ---- */

int
store_list(store_txn *t, int kind, uint64_t after, store_each_fn fn,
	void *arg)
{
	uint8_t kb[8];
	MDB_cursor *c, *aux = NULL;
	MDB_val k = { 8, kb }, v;
	store_obj o;
	uint64_t start;
	int rc;

	start = after >= store_id(kind, 0) ? after + 1 : store_id(kind, 1);
	if (store_id_kind(start) != kind)
		return KI_OK;
	if ((rc = mdb_cursor_open(t->txn, t->s->obj, &c)) != 0)
		return map_rc(rc);
	if ((rc = mdb_cursor_open(t->txn, t->s->aux, &aux)) != 0) {
		mdb_cursor_close(c);
		return map_rc(rc);
	}
	put_be64(kb, start);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		if (k.mv_size != 8 || store_id_kind(get_be64(k.mv_data)) != kind)
			break;
		if ((rc = obj_decode(t, aux, v.mv_data, v.mv_size, &o)) != KI_OK)
			goto out;
		if ((rc = fn(arg, &o)) != 0)
			goto out;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	rc = rc == MDB_NOTFOUND || rc == 0 ? KI_OK : map_rc(rc);
out:
	mdb_cursor_close(aux);
	mdb_cursor_close(c);
	return rc;
}

static int
count_one(void *arg, const store_obj *o)
{
	(void)o;
	(*(uint64_t *)arg)++;
	return 0;
}

int
store_count(store_txn *t, int kind, uint64_t *out)
{
	*out = 0;
	return store_list(t, kind, 0, count_one, out);
}

/* One posting list being walked: a cursor on its key, and the id it
 * stands on (0 before the first seek, UINT64_MAX once past the end). */
typedef struct posting {
	MDB_cursor *c;
	MDB_val key;
	uint8_t kb[2 + STORE_MAX_INDEXED];
	uint64_t at;
} posting;

/* Moves p to its first id >= want; sets p->at (UINT64_MAX: none). */
static int
posting_seek(posting *p, uint64_t want)
{
	uint8_t vb[8];
	MDB_val k = p->key, v = { 8, vb };
	int rc;

	if (p->at >= want)
		return KI_OK;
	if (p->at != 0 && p->at + 1 == want) {
		/* Walking a list in order: the next duplicate is the answer. */
		rc = mdb_cursor_get(p->c, &k, &v, MDB_NEXT_DUP);
	} else {
		put_be64(vb, want);
		rc = mdb_cursor_get(p->c, &k, &v, MDB_GET_BOTH_RANGE);
	}
	if (rc == MDB_NOTFOUND) {
		p->at = UINT64_MAX;
		return KI_OK;
	}
	if (rc != 0)
		return map_rc(rc);
	if (v.mv_size != 8)
		return KI_ESTORE;
	p->at = get_be64(v.mv_data);
	return KI_OK;
}

/* Whether o has the label key=value (both NUL-terminated). */
static int
obj_has_label(const store_obj *o, const char *key, const char *value)
{
	const char *p = o->labels, *end = o->labels ? o->labels + o->labels_len :
	    NULL, *k, *v;
	size_t kl = strlen(key), vl = strlen(value), klen, vlen;

	while (label_next(&p, end, &k, &klen, &v, &vlen))
		if (klen == kl && vlen == vl && memcmp(k, key, kl) == 0 &&
		    memcmp(v, value, vl) == 0)
			return 1;
	return 0;
}

static int
obj_has_ref(const store_obj *o, const uint8_t *digest)
{
	for (size_t i = 0; i < o->nrefs; i++)
		if (memcmp(o->refs + i * STORE_DIGEST_LEN, digest,
		    STORE_DIGEST_LEN) == 0)
			return 1;
	return 0;
}

/* Whether o satisfies every term: what the postings would have said. */
static int
obj_matches(const store_obj *o, const store_term *terms, size_t nterms)
{
	for (size_t i = 0; i < nterms; i++) {
		size_t j;

		for (j = 0; j < terms[i].nalts; j++) {
			const store_alt *a = &terms[i].alts[j];

			if (a->digest != NULL ? obj_has_ref(o, a->digest) :
			    obj_has_label(o, a->key, a->value))
				break;
		}
		if (j == terms[i].nalts)
			return 0;
	}
	return 1;
}

int
store_list_index(store_txn *t, int kind, const store_term *terms,
	size_t nterms, uint64_t after, store_each_fn fn, void *arg)
{
	posting *ps = NULL;
	size_t *first = NULL, np = 0, total = 0;
	MDB_cursor *obj = NULL, *aux = NULL;
	store_obj o;
	uint64_t cand, posted, tail;
	int rc = KI_OK;

	if (nterms == 0)
		return store_list(t, kind, after, fn, arg);
	for (size_t i = 0; i < nterms; i++) {
		if (terms[i].nalts == 0)
			return KI_OK;   /* a term nothing satisfies */
		total += terms[i].nalts;
	}
	ps = calloc(total, sizeof(*ps));
	first = calloc(nterms + 1, sizeof(*first));
	if (ps == NULL || first == NULL) {
		rc = KI_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nterms; i++) {
		first[i] = np;
		for (size_t j = 0; j < terms[i].nalts; j++) {
			const store_alt *a = &terms[i].alts[j];
			posting *p = &ps[np];
			MDB_dbi dbi;

			if (a->digest != NULL) {
				memcpy(p->kb, a->digest, STORE_DIGEST_LEN);
				p->key.mv_size = STORE_DIGEST_LEN;
				dbi = t->s->ref;
			} else {
				p->key.mv_size = label_key(p->kb, kind, a->key,
				    strlen(a->key), a->value, strlen(a->value));
				if (p->key.mv_size == 0) {
					rc = KI_EINVAL;
					goto out;
				}
				dbi = t->s->label;
			}
			p->key.mv_data = p->kb;
			if ((rc = map_rc(mdb_cursor_open(t->txn, dbi, &p->c))) !=
			    KI_OK)
				goto out;
			np++;
		}
	}
	first[nterms] = np;
	if ((rc = map_rc(mdb_cursor_open(t->txn, t->s->obj, &obj))) != KI_OK ||
	    (rc = map_rc(mdb_cursor_open(t->txn, t->s->aux, &aux))) != KI_OK ||
	    (rc = posted_get(t, &posted)) != KI_OK)
		goto out;
	/* The tail's objects have no postings yet: they are read below. */
	tail = posted >= ID_SEQ_MASK ? store_id(kind, ID_SEQ_MASK) + 1 :
	    store_id(kind, posted + 1);
	/* Leapfrog: each term proposes its first id >= the candidate (the
	 * least over its alternatives); the candidate moves up until every
	 * term agrees on it. Each step is a seek in a posting list, so a page
	 * costs what its matches cost, whatever the size of the store. */
	cand = after >= store_id(kind, 0) ? after + 1 : store_id(kind, 1);
	while (cand < tail) {
		size_t agree = 0, i = 0;

		while (agree < nterms) {
			uint64_t best = UINT64_MAX;

			for (size_t j = first[i]; j < first[i + 1]; j++) {
				if ((rc = posting_seek(&ps[j], cand)) != KI_OK)
					goto out;
				if (ps[j].at < best)
					best = ps[j].at;
			}
			if (best >= tail) {
				cand = tail;
				break;
			}
			if (best == cand) {
				agree++;
			} else {
				cand = best;
				agree = 1;
			}
			i = (i + 1) % nterms;
		}
		if (cand >= tail)
			break;
		rc = get_by_cursor(t, obj, aux, cand, &o);
		if (rc == KI_OK)
			rc = fn(arg, &o);
		else if (rc == KI_ENOTFOUND)
			rc = KI_ESTORE;   /* an index entry without its object */
		if (rc != 0)
			goto out;
		cand++;
	}
	/* The tail: its records, matched here (at most TAIL_MAX a kind). */
	if (store_id_kind(cand) == kind) {
		uint8_t kb[8];
		MDB_val k = { 8, kb }, v;

		put_be64(kb, cand);
		rc = mdb_cursor_get(obj, &k, &v, MDB_SET_RANGE);
		while (rc == 0) {
			if (k.mv_size != 8) {
				rc = KI_ESTORE;
				goto out;
			}
			if (store_id_kind(get_be64(k.mv_data)) != kind)
				break;
			if ((rc = obj_decode(t, aux, v.mv_data, v.mv_size, &o)) !=
			    KI_OK)
				goto out;
			if (obj_matches(&o, terms, nterms) &&
			    (rc = fn(arg, &o)) != 0)
				goto out;
			rc = mdb_cursor_get(obj, &k, &v, MDB_NEXT);
		}
		rc = rc == 0 || rc == MDB_NOTFOUND ? KI_OK : map_rc(rc);
	}
out:
	if (aux != NULL)
		mdb_cursor_close(aux);
	if (obj != NULL)
		mdb_cursor_close(obj);
	for (size_t j = 0; ps != NULL && j < np; j++)
		mdb_cursor_close(ps[j].c);
	free(ps);
	free(first);
	return rc;
}

/* One facet of the tail's objects, with how many of them have it. */
typedef struct tail_facet {
	size_t off, len;   /* in tail_facets.text */
	const char *s;     /* text + off, once text stops growing */
	uint64_t n;
} tail_facet;

typedef struct tail_facets {
	store_txn *t;
	int kind;
	ki_buf text;       /* every facet of every tail object, back to back */
	tail_facet *f;
	size_t n, cap;
} tail_facets;

/* LMDB's default key order: bytes, then the shorter first. */
static int
bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c != 0 ? c : (al > bl) - (al < bl);
}

static int
tail_facet_add(void *arg, uint64_t id)
{
	tail_facets *tf = arg;
	store_obj o;
	ki_buf fb;
	const char *p, *end;
	int rc;

	if (store_id_kind(id) != tf->kind)
		return 0;
	if ((rc = store_get_by_seq(tf->t, id, &o)) != KI_OK)
		return rc;
	ki_buf_init(&fb);
	if ((rc = obj_facets(tf->t, &o, &fb, &p, &end)) != KI_OK)
		goto out;
	for (; p != NULL && p < end; p += strnlen(p, (size_t)(end - p)) + 1) {
		size_t flen = strnlen(p, (size_t)(end - p));

		if (flen == 0 || flen > STORE_MAX_NATKEY)
			continue;   /* as index_labels: not counted */
		if (tf->n == tf->cap) {
			size_t cap = tf->cap ? tf->cap * 2 : 64;
			tail_facet *grown = realloc(tf->f, cap * sizeof(*grown));

			if (grown == NULL) {
				rc = KI_ENOMEM;
				goto out;
			}
			tf->f = grown;
			tf->cap = cap;
		}
		tf->f[tf->n++] = (tail_facet){ tf->text.len, flen, NULL, 1 };
		ki_buf_append(&tf->text, p, flen);
	}
	rc = tf->text.oom ? KI_ENOMEM : KI_OK;
out:
	ki_buf_free(&fb);
	return rc;
}

static int
tail_facet_cmp(const void *a, const void *b)
{
	const tail_facet *x = a, *y = b;

	return bytes_cmp(x->s, x->len, y->s, y->len);
}

/* Collects the facets of kind's tail objects into tf, sorted as the facet
 * table is, each once with its count. */
static int
tail_facets_collect(store_txn *t, int kind, tail_facets *tf)
{
	uint64_t posted;
	size_t w = 0;
	int rc;

	memset(tf, 0, sizeof(*tf));
	tf->t = t;
	tf->kind = kind;
	ki_buf_init(&tf->text);
	if ((rc = posted_get(t, &posted)) != KI_OK ||
	    (rc = tail_each(t, posted, ID_SEQ_MASK, tail_facet_add, tf)) !=
	    KI_OK || tf->n == 0)
		return rc;
	for (size_t r = 0; r < tf->n; r++)
		tf->f[r].s = tf->text.data + tf->f[r].off;
	qsort(tf->f, tf->n, sizeof(*tf->f), tail_facet_cmp);
	for (size_t r = 0; r < tf->n; r++) {
		if (w > 0 && bytes_cmp(tf->f[w - 1].s, tf->f[w - 1].len,
		    tf->f[r].s, tf->f[r].len) == 0)
			tf->f[w - 1].n += tf->f[r].n;
		else
			tf->f[w++] = tf->f[r];
	}
	tf->n = w;
	return KI_OK;
}

int
store_facets(store_txn *t, int kind, store_facet_fn fn, void *arg)
{
	uint8_t kb[1];
	MDB_cursor *c;
	MDB_val k = { 1, kb }, v;
	tail_facets tf;
	size_t i = 0;
	int rc;

	/* The counts in the table, merged with the tail's (see the tail). */
	if ((rc = tail_facets_collect(t, kind, &tf)) != KI_OK)
		goto done;
	kb[0] = (uint8_t)kind;
	if ((rc = mdb_cursor_open(t->txn, t->s->facet, &c)) != 0) {
		rc = map_rc(rc);
		goto done;
	}
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		const char *text = (const char *)k.mv_data + 1;
		size_t len = k.mv_size - 1;
		uint64_t n;

		if (k.mv_size < 1 || ((uint8_t *)k.mv_data)[0] != (uint8_t)kind)
			break;
		while (i < tf.n && bytes_cmp(tf.f[i].s,
		    tf.f[i].len, text, len) < 0) {
			if ((rc = fn(arg, tf.f[i].s, tf.f[i].len,
			    tf.f[i].n)) != 0)
				goto out;
			i++;
		}
		if (v.mv_size == 8) {
			n = get_be64(v.mv_data);
			if (i < tf.n && bytes_cmp(tf.f[i].s,
			    tf.f[i].len, text, len) == 0)
				n += tf.f[i++].n;
			if ((rc = fn(arg, text, len, n)) != 0)
				goto out;
		}
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	rc = rc == MDB_NOTFOUND || rc == 0 ? KI_OK : map_rc(rc);
	for (; rc == KI_OK && i < tf.n; i++)
		rc = fn(arg, tf.f[i].s, tf.f[i].len, tf.f[i].n);
out:
	mdb_cursor_close(c);
done:
	free(tf.f);
	ki_buf_free(&tf.text);
	return rc;
}

typedef struct referrer_arg {
	store_txn *t;
	const uint8_t *digest;
	ki_buf *ids;
} referrer_arg;

static int
tail_referrer(void *arg, uint64_t id)
{
	referrer_arg *a = arg;
	store_obj o;
	int rc;

	if ((rc = store_get_by_seq(a->t, id, &o)) != KI_OK)
		return rc;
	return obj_has_ref(&o, a->digest) ? id_add(a->ids, id) : 0;
}

int
store_each_referrer(store_txn *t, const uint8_t digest[STORE_DIGEST_LEN],
	store_each_fn fn, void *arg)
{
	MDB_cursor *c;
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)digest }, v;
	ki_buf ids;
	referrer_arg ra = { t, digest, &ids };
	uint64_t posted;
	store_obj o;
	int rc;

	/* Collect first: fn may write (re-render a referrer), which would
	 * invalidate the cursor. */
	if ((rc = mdb_cursor_open(t->txn, t->s->ref, &c)) != 0)
		return map_rc(rc);
	ki_buf_init(&ids);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY);
	while (rc == 0 && v.mv_size == 8) {
		if ((rc = id_add(&ids, get_be64(v.mv_data))) != KI_OK)
			break;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP);
	}
	mdb_cursor_close(c);
	rc = rc == MDB_NOTFOUND || rc == 0 ? KI_OK : map_rc(rc);
	/* And the tail's, which have no postings yet. */
	if (rc == KI_OK && (rc = posted_get(t, &posted)) == KI_OK)
		rc = tail_each(t, posted, ID_SEQ_MASK, tail_referrer, &ra);
	for (size_t i = 0; rc == KI_OK && i < ids.len / sizeof(uint64_t); i++) {
		if ((rc = store_get_by_seq(t, id_at(&ids, i), &o)) == KI_OK)
			rc = fn(arg, &o);
	}
	ki_buf_free(&ids);
	return rc;
}

/* ---- events ---- */

/* Finds the state event rv of type names for object id: its current
 * record when that is still the one rv wrote, else the kept version. */
static int
event_state(store_txn *t, uint64_t rv, int type, uint64_t id, store_obj *o)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	if (type != STORE_DELETED) {
		rc = store_get_by_seq(t, id, o);
		if (rc == KI_OK && o->rv == rv)
			return KI_OK;
		if (rc != KI_OK && rc != KI_ENOTFOUND)
			return rc;
	}
	put_be64(kb, rv);
	if ((rc = mdb_get(t->txn, t->s->version, &k, &v)) != 0)
		return rc == MDB_NOTFOUND ? KI_ESTORE : map_rc(rc);
	return rec_decode(v.mv_data, v.mv_size, o);
}

int
store_events_since(store_txn *t, uint64_t rv, store_event_fn fn, void *arg)
{
	uint8_t kb[8];
	MDB_cursor *c;
	MDB_val k = { 8, kb }, v;
	store_obj o;
	uint64_t oldest;
	int rc;

	oldest = store_oldest_event(t);
	if (rv < t->rv && (oldest == 0 || oldest > rv + 1))
		return KI_EGONE;
	if ((rc = mdb_cursor_open(t->txn, t->s->event, &c)) != 0)
		return map_rc(rc);
	put_be64(kb, rv + 1);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		const uint8_t *e = v.mv_data;

		if (k.mv_size != 8 || v.mv_size != 9) {
			rc = KI_ESTORE;
			goto out;
		}
		rc = event_state(t, get_be64(k.mv_data), e[0], get_be64(e + 1), &o);
		if (rc != KI_OK)
			goto out;
		if ((rc = fn(arg, e[0], &o)) != 0)
			goto out;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	rc = rc == MDB_NOTFOUND ? KI_OK : map_rc(rc);
out:
	mdb_cursor_close(c);
	return rc;
}

/* ---- statistics, tokens, backup ---- */

int
store_stat(store *s, store_stats *out)
{
	MDB_envinfo info;
	MDB_stat st;
	int rc;

	pthread_rwlock_rdlock(&s->resize);
	rc = mdb_env_info(s->env, &info) != 0 || mdb_env_stat(s->env, &st) != 0;
	pthread_rwlock_unlock(&s->resize);
	if (rc)
		return KI_ESTORE;
	out->map_size = info.me_mapsize;
	out->page_size = st.ms_psize;
	out->map_used = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
	out->entries = st.ms_entries;
	out->log_bytes = __atomic_load_n(&s->log_bytes, __ATOMIC_RELAXED);
	out->checkpoints = __atomic_load_n(&s->checkpoints, __ATOMIC_RELAXED);
	out->recovered = s->recovered;
	return KI_OK;
}

int
store_token_put(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char *value, size_t len)
{
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)hash };
	MDB_val v = { len, (void *)(uintptr_t)value };
	int rc;

	if (!t->write)
		return KI_EINVAL;
	t->writes++;
	t->dirty = 1;
	if ((rc = map_rc(mdb_put(t->txn, t->s->token, &k, &v, 0))) != KI_OK)
		return rc;
	return log_token(t, OP_TOKEN_PUT, hash, value, len);
}

int
store_token_get(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN],
	const char **value, size_t *len)
{
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)hash }, v;
	int rc = mdb_get(t->txn, t->s->token, &k, &v);

	if (rc != 0)
		return map_rc(rc);
	*value = v.mv_data;
	*len = v.mv_size;
	return KI_OK;
}

int
store_token_delete(store_txn *t, const uint8_t hash[STORE_DIGEST_LEN])
{
	MDB_val k = { STORE_DIGEST_LEN, (void *)(uintptr_t)hash };
	int rc;

	if (!t->write)
		return KI_EINVAL;
	t->writes++;
	t->dirty = 1;
	if ((rc = map_rc(mdb_del(t->txn, t->s->token, &k, NULL))) != KI_OK)
		return rc;
	return log_token(t, OP_TOKEN_DELETE, hash, NULL, 0);
}

int
store_token_list(store_txn *t, store_token_fn fn, void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if ((rc = mdb_cursor_open(t->txn, t->s->token, &c)) != 0)
		return map_rc(rc);
	rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	while (rc == 0) {
		if (k.mv_size == STORE_DIGEST_LEN &&
		    (rc = fn(arg, k.mv_data, v.mv_data, v.mv_size)) != 0)
			break;
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND || rc == 0 ? KI_OK : rc > 0 ? map_rc(rc) : rc;
}

int
store_token_count(store_txn *t, uint64_t *out)
{
	MDB_stat st;
	int rc = mdb_stat(t->txn, t->s->token, &st);

	*out = rc == 0 ? st.ms_entries : 0;
	return map_rc(rc);
}

/* ---- verification ---- */

typedef struct verify {
	store_txn *t;
	store_check_fn check;
	store_problem_fn problem;
	void *arg;
	store_verify_stats *st;
	int repair;
} verify;

static void
vproblem(verify *v, uint64_t id, const char *what)
{
	v->st->problems++;
	if (v->problem != NULL)
		v->problem(v->arg, id, what);
}

/* The indexes that must find object o (id). */
static int
verify_object(verify *v, uint64_t id, const store_obj *o)
{
	uint8_t kb[1 + STORE_MAX_NATKEY];
	MDB_val k;
	uint64_t got;
	int rc;

	if (o->seq != id)
		vproblem(v, id, "the record names another id");
	k = kind_key(kb, o->kind, o->name, o->name_len);
	rc = get_u64(v->t->txn, v->t->s->name, &k, &got);
	if (rc != KI_OK && rc != KI_ENOTFOUND)
		return rc;
	if (rc != KI_OK || got != id)
		vproblem(v, id, "its name does not find it");
	if (o->natkey_len) {
		k = kind_key(kb, o->kind, o->natkey, o->natkey_len);
		rc = get_u64(v->t->txn, v->t->s->natkey, &k, &got);
		if (rc != KI_OK && rc != KI_ENOTFOUND)
			return rc;
		if (rc != KI_OK)
			vproblem(v, id, "its natural key is not indexed");
	}
	rc = digest_find(v->t, o->digest, &got);
	if (rc == KI_ENOTFOUND) {
		if (v->repair && (rc = young_add(v->t, o->digest, id)) == KI_OK)
			v->st->repaired++;
		else
			vproblem(v, id, "its digest is not in the digest index");
	} else if (rc == KI_ECORRUPT) {
		vproblem(v, id, "its digest finds a damaged record");
	} else if (rc != KI_OK) {
		return rc;
	}
	if (v->check != NULL && v->check(v->arg, o) != 0)
		vproblem(v, id, "its content does not match its digest");
	return KI_OK;
}

int
store_verify(store *s, int repair, store_check_fn check,
	store_problem_fn problem, void *arg, store_verify_stats *out)
{
	verify v = { NULL, check, problem, arg, out, repair };
	MDB_cursor *c = NULL, *aux = NULL;
	MDB_val k, val;
	int rc, mrc;

	memset(out, 0, sizeof(*out));
	if (repair && !s->owner)
		return KI_EBUSY;
	if ((rc = store_begin(s, repair, &v.t)) != KI_OK)
		return rc;
	if ((rc = map_rc(mdb_cursor_open(v.t->txn, s->obj, &c))) != KI_OK ||
	    (rc = map_rc(mdb_cursor_open(v.t->txn, s->aux, &aux))) != KI_OK)
		goto out;
	for (mrc = mdb_cursor_get(c, &k, &val, MDB_FIRST); mrc == 0 &&
	    rc == KI_OK; mrc = mdb_cursor_get(c, &k, &val, MDB_NEXT)) {
		store_obj o;
		uint64_t id;
		int drc;

		out->objects++;
		if (k.mv_size != 8) {
			vproblem(&v, 0, "an object key is not 8 bytes");
			continue;
		}
		id = get_be64(k.mv_data);
		drc = obj_decode(v.t, aux, val.mv_data, val.mv_size, &o);
		if (drc == KI_ECORRUPT || drc == KI_ESTORE) {
			vproblem(&v, id, drc == KI_ECORRUPT ? "its record is "
			    "damaged (checksum or structure)" : "its natural key "
			    "and references are missing");
			continue;
		}
		if (drc != KI_OK) {
			rc = drc;
			break;
		}
		rc = verify_object(&v, id, &o);
	}
	if (rc == KI_OK && mrc != 0 && mrc != MDB_NOTFOUND)
		rc = map_rc(mrc);
	mdb_cursor_close(c);
	c = NULL;
	/* Every name names an object. */
	if (rc == KI_OK &&
	    (rc = map_rc(mdb_cursor_open(v.t->txn, s->name, &c))) == KI_OK) {
		for (mrc = mdb_cursor_get(c, &k, &val, MDB_FIRST); mrc == 0;
		    mrc = mdb_cursor_get(c, &k, &val, MDB_NEXT)) {
			MDB_val ok, ov;

			if (val.mv_size != 8) {
				vproblem(&v, 0, "a name's entry is not an id");
				continue;
			}
			ok.mv_size = 8;
			ok.mv_data = val.mv_data;
			if (mdb_get(v.t->txn, s->obj, &ok, &ov) != 0)
				vproblem(&v, get_be64(val.mv_data),
				    "a name names no object");
		}
		if (mrc != MDB_NOTFOUND)
			rc = map_rc(mrc);
	}
out:
	if (c != NULL)
		mdb_cursor_close(c);
	if (aux != NULL)
		mdb_cursor_close(aux);
	if (rc == KI_OK && repair && out->repaired > 0)
		return store_commit(v.t);
	store_abort(v.t);
	return rc;
}

int
store_backup_fd(store *s, int fd)
{
	return map_rc(mdb_env_copyfd2(s->env, fd, MDB_CP_COMPACT));
}

/* ---- formats 3-5 -> 6 ---- */

/* Copies the "digest" table of a store of format 3 to 5 (whole digests ->
 * id) into "digest8" (first DIGEST_KEY bytes -> ids), in key order,
 * s->convert_batch entries a transaction; the last one drops "digest" and
 * marks the store format 6. A crash part-way leaves format 5 and the next
 * open starts again from an empty "digest8". */
static int
convert_digests(store *s)
{
	MDB_txn *txn;
	MDB_dbi old;
	MDB_cursor *c = NULL;
	MDB_val k, v, from;
	uint8_t last[STORE_DIGEST_LEN];
	size_t n, total = 0;
	int rc, more = 1, first = 1;

	while (more) {
		if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
			return map_rc(rc);
		if ((rc = mdb_dbi_open(txn, "digest", 0, &old)) == MDB_NOTFOUND) {
			/* Nothing to copy (a store made as format 6 and marked
			 * older by hand, say). */
			more = 0;
			goto done;
		}
		if (rc != 0 || (first && (rc = mdb_drop(txn, s->digest, 0)) != 0) ||
		    (rc = mdb_cursor_open(txn, old, &c)) != 0)
			goto fail;
		if (first) {
			rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
		} else {
			from.mv_size = sizeof(last);
			from.mv_data = last;
			k = from;
			rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
			if (rc == 0 && k.mv_size == sizeof(last) &&
			    memcmp(k.mv_data, last, sizeof(last)) == 0)
				rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		for (n = 0; rc == 0 && n < s->convert_batch; n++) {
			MDB_val nk = { DIGEST_KEY, k.mv_data };
			int same;

			if (k.mv_size != STORE_DIGEST_LEN || v.mv_size != 8) {
				rc = MDB_CORRUPTED;
				goto fail;
			}
			/* Ids of digests that share a prefix go in in id
			 * order, whatever the order of their digests. */
			same = (!first || n > 0) &&
			    memcmp(k.mv_data, last, DIGEST_KEY) == 0;
			if ((rc = mdb_put(txn, s->digest, &nk, &v,
			    same ? MDB_NODUPDATA : MDB_APPEND)) != 0)
				goto fail;
			memcpy(last, k.mv_data, sizeof(last));
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		total += n;
		first = 0;
		if (rc == MDB_NOTFOUND)
			more = 0;
		else if (rc != 0)
			goto fail;
		mdb_cursor_close(c);
		c = NULL;
		if (!more && (rc = mdb_drop(txn, old, 1)) != 0)
			goto fail;
done:
		if (!more &&
		    (rc = meta_put_u64(txn, s->meta, "format", FORMAT)) != KI_OK) {
			mdb_txn_abort(txn);
			return rc;
		}
		if ((rc = mdb_txn_commit(txn)) != 0)
			return map_rc(rc);
	}
	if (total > 0)
		log_info("store: %zu digests moved to the format-6 index", total);
	return KI_OK;
fail:
	if (c != NULL)
		mdb_cursor_close(c);
	mdb_txn_abort(txn);
	return map_rc(rc);
}

/* ---- format 2 -> 3 ---- */

#define CONVERT_BATCH 20000

/* Rewrites a format-2 store's objects into the format-3 tables, in
 * batches of CONVERT_BATCH transactions' worth, then drops the old tables
 * and marks the store format 3, in one last transaction. The history of
 * events does not carry over (a watch from before the conversion gets
 * 410 Expired and lists again), nor does the old label index (rebuilt from
 * the records); tokens do. */
static int
convert_v2(store *s)
{
	static const char *const old_names[] = { "objects", "names", "digests",
		"natkeys", "refs", "events", "labels", "facets", "tokens" };
	store_txn t;
	MDB_dbi old, dbi;
	MDB_cursor *c = NULL;
	MDB_val k, v;
	uint8_t kb[8];
	uint64_t next = 0;
	int rc, done = 0;

	memset(&t, 0, sizeof(t));
	t.s = s;
	t.write = 1;
	/* Every object's postings are written as it is converted. */
	t.posted = ID_SEQ_MASK;
	t.posted_read = 1;
	/* Start from empty format-3 tables: a crash mid-way left some. */
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &t.txn)) != 0)
		return map_rc(rc);
	if ((rc = mdb_drop(t.txn, s->obj, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->name, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->digest, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->natkey, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->ref, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->label, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->event, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->version, 0)) != 0 ||
	    (rc = mdb_drop(t.txn, s->facet, 0)) != 0 ||
	    (rc = mdb_txn_commit(t.txn)) != 0)
		goto fail;
	t.txn = NULL;
	while (!done) {
		size_t n = 0;

		if ((rc = mdb_txn_begin(s->env, NULL, 0, &t.txn)) != 0 ||
		    (rc = mdb_dbi_open(t.txn, "objects", 0, &old)) != 0 ||
		    (rc = mdb_cursor_open(t.txn, old, &c)) != 0)
			goto fail;
		put_be64(kb, next);
		k.mv_size = 8;
		k.mv_data = kb;
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		for (; rc == 0 && n < CONVERT_BATCH; n++) {
			store_obj o;
			uint8_t nb[1 + STORE_MAX_NAME], ib[8];
			MDB_val nk, iv = { 8, ib };

			if (k.mv_size != 8 ||
			    rec_decode(v.mv_data, v.mv_size, &o) != KI_OK) {
				rc = KI_ESTORE;
				goto fail;
			}
			next = get_be64(k.mv_data) + 1;
			o.seq = store_id(o.kind, get_be64(k.mv_data));
			put_be64(ib, o.seq);
			nk = kind_key(nb, o.kind, o.name, o.name_len);
			if ((rc = mdb_put(t.txn, s->name, &nk, &iv, 0)) != 0)
				goto fail;
			if ((rc = write_record(&t, &o)) != KI_OK ||
			    (rc = index_object(&t, &o, 1)) != KI_OK)
				goto fail;
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		if (rc != 0 && rc != MDB_NOTFOUND)
			goto fail;
		done = rc == MDB_NOTFOUND;
		mdb_cursor_close(c);
		c = NULL;
		if (done) {
			/* Tokens move over; then the old tables go. */
			if (mdb_dbi_open(t.txn, "tokens", 0, &dbi) == 0) {
				if ((rc = mdb_cursor_open(t.txn, dbi, &c)) != 0)
					goto fail;
				rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
				while (rc == 0) {
					if ((rc = mdb_put(t.txn, s->token, &k, &v, 0)) != 0)
						goto fail;
					rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
				}
				mdb_cursor_close(c);
				c = NULL;
				if (rc != MDB_NOTFOUND)
					goto fail;
			}
			for (size_t i = 0; i < sizeof(old_names) / sizeof(*old_names);
			    i++) {
				if (mdb_dbi_open(t.txn, old_names[i], 0, &dbi) == 0 &&
				    (rc = mdb_drop(t.txn, dbi, 1)) != 0)
					goto fail;
			}
			if ((rc = meta_put_u64(t.txn, s->meta, "format", FORMAT)) !=
			    KI_OK)
				goto fail;
		}
		if ((rc = mdb_txn_commit(t.txn)) != 0) {
			t.txn = NULL;
			goto fail;
		}
		t.txn = NULL;
	}
	return KI_OK;
fail:
	if (c != NULL)
		mdb_cursor_close(c);
	if (t.txn != NULL)
		mdb_txn_abort(t.txn);
	return rc < 0 ? rc : map_rc(rc);
}
