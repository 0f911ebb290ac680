/* store/etcd_rec.c — the etcd backend's records: an object as the value
 * of its o/ key (the layout is in store/etcd_int.h). Reads by id are
 * etcd_read.c's. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "store/etcd_int.h"

/* ---- records ---- */

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* Encodes o (with id and facets) as a record into b (after what b holds). */
int
et_rec_encode(ki_buf *b, const store_obj *o, const char *facets,
	size_t facets_len)
{
	uint8_t h[ET_HDR];
	size_t start = b->len;
	uint32_t crc;

	memset(h, 0, sizeof(h));
	put32(h, ET_MAGIC);
	h[4] = (uint8_t)o->kind;
	h[5] = (uint8_t)o->nrefs;
	h[6] = (uint8_t)(o->name_len >> 8);
	h[7] = (uint8_t)o->name_len;
	h[8] = (uint8_t)(o->natkey_len >> 8);
	h[9] = (uint8_t)o->natkey_len;
	put32(h + 12, (uint32_t)o->json_len);
	et_put_be64(h + 16, o->seq);
	et_put_be64(h + 24, o->rv);
	memcpy(h + 32, o->digest, STORE_DIGEST_LEN);
	put32(h + 64, o->meta_off);
	put32(h + 68, o->meta_len);
	put32(h + 72, o->spec_off);
	put32(h + 76, o->spec_len);
	put32(h + 80, o->status_off);
	put32(h + 84, o->status_len);
	put32(h + 88, (uint32_t)o->labels_len);
	put32(h + 92, (uint32_t)facets_len);
	ki_buf_append(b, h, sizeof(h));
	ki_buf_append(b, o->name, o->name_len);
	if (o->natkey_len > 0)
		ki_buf_append(b, o->natkey, o->natkey_len);
	if (o->nrefs > 0)
		ki_buf_append(b, o->refs, o->nrefs * STORE_DIGEST_LEN);
	if (o->labels_len > 0)
		ki_buf_append(b, o->labels, o->labels_len);
	if (facets_len > 0)
		ki_buf_append(b, facets, facets_len);
	ki_buf_append(b, o->json, o->json_len);
	if (b->oom)
		return KI_ENOMEM;
	crc = (uint32_t)crc32(0L, (const Bytef *)b->data + start,
	    (uInt)(b->len - start));
	ki_buf_reserve(b, 4);
	if (b->oom)
		return KI_ENOMEM;
	put32((uint8_t *)b->data + b->len, crc);
	b->len += 4;
	b->data[b->len] = '\0';
	return KI_OK;
}

/* Decodes a record; every pointer of o points into p. sum: check its
 * CRC-32 too. */
static int
rec_decode(const char *p, size_t n, store_obj *o, int sum)
{
	const uint8_t *h = (const uint8_t *)p;
	size_t need;
	const char *at;

	memset(o, 0, sizeof(*o));
	if (n < ET_HDR + 4 || get32(h) != ET_MAGIC || (sum &&
	    get32(h + n - 4) != (uint32_t)crc32(0L, (const Bytef *)p,
	    (uInt)(n - 4))))
		return KI_ECORRUPT;
	o->kind = h[4];
	o->nrefs = h[5];
	o->name_len = (size_t)h[6] << 8 | h[7];
	o->natkey_len = (size_t)h[8] << 8 | h[9];
	o->json_len = get32(h + 12);
	o->seq = et_get_be64(h + 16);
	o->rv = et_get_be64(h + 24);
	memcpy(o->digest, h + 32, STORE_DIGEST_LEN);
	o->meta_off = get32(h + 64);
	o->meta_len = get32(h + 68);
	o->spec_off = get32(h + 72);
	o->spec_len = get32(h + 76);
	o->status_off = get32(h + 80);
	o->status_len = get32(h + 84);
	o->labels_len = get32(h + 88);
	o->facets_len = get32(h + 92);
	need = ET_HDR + o->name_len + o->natkey_len +
	    o->nrefs * STORE_DIGEST_LEN + o->labels_len + o->facets_len +
	    o->json_len + 4;
	if (need != n)
		return KI_ECORRUPT;
	at = p + ET_HDR;
	o->name = at;
	at += o->name_len;
	o->natkey = o->natkey_len ? at : NULL;
	at += o->natkey_len;
	o->refs = o->nrefs ? (const uint8_t *)at : NULL;
	at += o->nrefs * STORE_DIGEST_LEN;
	o->labels = o->labels_len ? at : NULL;
	at += o->labels_len;
	o->facets = o->facets_len ? at : NULL;
	at += o->facets_len;
	o->json = at;
	return KI_OK;
}

int
et_rec_decode(const char *p, size_t n, store_obj *o)
{
	return rec_decode(p, n, o, 1);
}

int
et_rec_read(store_txn *t, const char *p, size_t n, store_obj *o)
{
	/* What the watch cache lends passed the checksum when the cache
	 * took it (etcd_cache.c); a transaction's own writes are its own
	 * encodings. */
	return rec_decode(p, n, o, !t->top->cached);
}

