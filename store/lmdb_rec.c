/* store/lmdb_rec.c — the LMDB backend's records (layout, CRC-32C), the redo
 * log's operations and small helpers. */
#define _GNU_SOURCE /* memmem, pthread_rwlockattr_setkind_np, sync_file_range */
#include "store/lmdb_int.h"

int
lm_map_rc(int rc)
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

/* Reports one line through the caller's log hook (store_options.log). */
void
lm_slog(const store *s, int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (s->log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->log(s->log_arg, level, line);
}

void
lm_logline(const store *s, int level, const char *line)
{
	if (s->log != NULL)
		s->log(s->log_arg, level, line);
}

/* A write that failed with KI_ESTORE or KI_EIO while the store's file
 * system has (nearly) no space left failed for want of it: LMDB reports a
 * short write as EIO, not ENOSPC. */
int
lm_disk_rc(const store *s, int rc)
{
	struct statvfs sv;

	if ((rc == KI_ESTORE || rc == KI_EIO) && s->dir != NULL &&
	    statvfs(s->dir, &sv) == 0 &&
	    (uint64_t)sv.f_bavail * sv.f_frsize < (UINT64_C(1) << 20))
		return KI_ENOSPC;
	return rc;
}

void
lm_put_be64(uint8_t out[8], uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		out[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

uint64_t
lm_get_be64(const void *p)
{
	const uint8_t *b = p;
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | b[i];
	return v;
}


/* Reads the 8-byte big-endian value under key. KI_ENOTFOUND when absent,
 * KI_ESTORE when the value is not 8 bytes. */
int
lm_get_u64(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, uint64_t *out)
{
	MDB_val v;
	int rc = mdb_get(txn, dbi, key, &v);

	if (rc != 0)
		return lm_map_rc(rc);
	if (v.mv_size != 8)
		return KI_ESTORE;
	*out = lm_get_be64(v.mv_data);
	return KI_OK;
}

/* A counter of the meta table: 0 while it was never written. */
int
lm_meta_get_u64(MDB_txn *txn, MDB_dbi meta, const char *key, uint64_t *out)
{
	MDB_val k = { strlen(key), (void *)(uintptr_t)key };
	int rc = lm_get_u64(txn, meta, &k, out);

	if (rc == KI_ENOTFOUND) {
		*out = 0;
		rc = KI_OK;
	}
	return rc;
}

int
lm_meta_put_u64(MDB_txn *txn, MDB_dbi meta, const char *key, uint64_t val)
{
	uint8_t b[8];
	MDB_val k = { strlen(key), (void *)(uintptr_t)key }, v = { 8, b };

	lm_put_be64(b, val);
	return lm_map_rc(mdb_put(txn, meta, &k, &v, 0));
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

uint32_t
lm_crc32c_sw(uint32_t c, const uint8_t *p, size_t n)
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

uint32_t
lm_crc32c(const void *data, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
	static int hw = -1;   /* read and set by any thread: atomics */
	int h = __atomic_load_n(&hw, __ATOMIC_RELAXED);

	if (h < 0) {
		h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		__atomic_store_n(&hw, h, __ATOMIC_RELAXED);
	}
	if (h)
		return ~crc32c_hw(~0u, data, n);
#endif
	return ~lm_crc32c_sw(~0u, data, n);
}

/* Decodes a record (borrowed memory) into o; *flags gets its REC_*
 * flags (NULL: the record must carry everything). */
int
lm_rec_decode_flags(const void *data, size_t size, store_obj *o, int *flags)
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
		if (lm_crc32c(p, size) != sum)
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

int
lm_rec_decode(const void *data, size_t size, store_obj *o)
{
	return lm_rec_decode_flags(data, size, o, NULL);
}

size_t
lm_rec_size(const store_obj *o)
{
	return REC_HDR + o->name_len + o->natkey_len +
	    o->nrefs * STORE_DIGEST_LEN + o->labels_len + o->facets_len +
	    o->json_len + 4;
}

void
lm_rec_encode_flags(uint8_t *p, const store_obj *o, uint16_t flags)
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
	sum = lm_crc32c(start, (size_t)(p - start));
	memcpy(p, &sum, 4);
}

void
lm_rec_encode(uint8_t *p, const store_obj *o)
{
	lm_rec_encode_flags(p, o, 0);
}

/* Builds kind byte + bytes into buf (at least 1 + STORE_MAX_NATKEY). */
MDB_val
lm_kind_key(uint8_t *buf, int kind, const char *s, size_t n)
{
	MDB_val k;

	buf[0] = (uint8_t)kind;
	memcpy(buf + 1, s, n);
	k.mv_size = n + 1;
	k.mv_data = buf;
	return k;
}

/* Adds delta to the change of facet key k in t. */
int
lm_facet_add(store_txn *t, const void *k, size_t len, int64_t delta)
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
int
lm_facets_apply(store_txn *t)
{
	MDB_cursor *c;
	int rc = 0;

	if (t->nfd == 0)
		return KI_OK;
	if ((rc = mdb_cursor_open(t->txn, t->s->facet, &c)) != 0)
		return lm_map_rc(rc);
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
			count = (int64_t)lm_get_be64(v.mv_data);
		else if (rc != 0 && rc != MDB_NOTFOUND)
			break;
		count += t->fd[i].delta;
		if (count < 0)
			count = 0;
		lm_put_be64(cb, (uint64_t)count);
		v.mv_size = 8;
		v.mv_data = cb;
		if (count == 0)
			rc = found ? mdb_cursor_del(c, 0) : 0;
		else
			rc = mdb_cursor_put(c, &k, &v, found ? MDB_CURRENT : 0);
	}
	mdb_cursor_close(c);
	return lm_map_rc(rc);
}

void
lm_txn_free(store_txn *t)
{
	ki_buf_free(&t->log);
	ki_buf_free(&t->fkeys);
	free(t->fd);
	free(t);
}

/* Builds the label-index key kind + key NUL value into buf
 * (2 + STORE_MAX_INDEXED bytes). Returns 0 when the pair is too long to be
 * indexed. */
size_t
lm_label_key(uint8_t *buf, int kind, const char *k, size_t klen, const char *v,
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

/* ---- the redo log's operations ---- */

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

int
lm_log_obj(store_txn *t, int op, const store_obj *o)
{
	uint8_t *p;
	int rc = log_op(t, op, lm_rec_size(o), &p);

	if (rc == KI_OK && p != NULL)
		lm_rec_encode(p, o);
	return rc;
}

int
lm_log_token(store_txn *t, int op, const uint8_t *hash, const char *value,
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
