/* store/etcd_codec.c — the values the etcd store writes, compressed with
 * zlib when that pays: etcd's database has a space quota (2 GiB by
 * default, store/etcd_quota.c), and a stored run (its record and its watch
 * event) is mostly JSON, which deflate shrinks to less than half
 * (bench/results-etcd-2026-12-06.md).
 *
 * A compressed value is EC_MAGIC (4 bytes), the length of the value it
 * holds (4 bytes, big-endian), then a zlib stream of that value. A value
 * is compressed when it is at least EC_MIN bytes and its stream saves at
 * least an eighth; any other value is stored as it is. Every value the
 * store writes otherwise begins with a byte that EC_MAGIC's first byte
 * (0xff) cannot be: a record with ET_MAGIC, an event with its type (1-3),
 * a counter or id with the high byte of a big-endian integer far below
 * 2^56 * 0xff, a token's description with JSON text. So values written
 * before this codec, or below EC_MIN, are read as they are. */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "store/etcd_int.h"

#define EC_MAGIC "\xffKZ1"
#define EC_HDR 8
#define EC_MIN 512
#define EC_LEVEL 1          /* level 6 saved 4% more at 1.2x the time */
#define EC_MAX (64u << 20)  /* etcd's --max-request-bytes, above */

/* The base64 JSON string etcd's gateway takes keys and values in. */
int
et_b64(ki_buf *b, const void *p, size_t n)
{
	size_t need = 4 * ((n + 2) / 3) + 3;

	if (ki_buf_putc(b, '"') != KI_OK || ki_buf_reserve(b, need) != KI_OK)
		return KI_ENOMEM;
	b->len += (size_t)EVP_EncodeBlock((unsigned char *)b->data + b->len,
	    p, (int)n);
	b->data[b->len] = '\0';
	return ki_buf_putc(b, '"');
}

int
et_codec_put(ki_buf *b, const char *val, size_t vlen)
{
	uLongf zlen;
	uint8_t *z;
	int rc;

	if (vlen < EC_MIN || vlen > EC_MAX)
		return et_b64(b, val, vlen);
	zlen = compressBound((uLong)vlen);
	if ((z = malloc(EC_HDR + zlen)) == NULL)
		return KI_ENOMEM;
	memcpy(z, EC_MAGIC, 4);
	z[4] = (uint8_t)(vlen >> 24);
	z[5] = (uint8_t)(vlen >> 16);
	z[6] = (uint8_t)(vlen >> 8);
	z[7] = (uint8_t)vlen;
	if (compress2(z + EC_HDR, &zlen, (const Bytef *)val, (uLong)vlen,
	    EC_LEVEL) == Z_OK && EC_HDR + zlen <= vlen - vlen / 8)
		rc = et_b64(b, z, EC_HDR + zlen);
	else
		rc = et_b64(b, val, vlen);
	free(z);
	return rc;
}

int
et_codec_get(char **val, size_t *len)
{
	const uint8_t *p = (const uint8_t *)*val;
	uLongf n;
	char *out;

	if (*val == NULL || *len < EC_HDR || memcmp(p, EC_MAGIC, 4) != 0)
		return KI_OK;
	n = (uLongf)p[4] << 24 | (uLongf)p[5] << 16 | (uLongf)p[6] << 8 | p[7];
	if (n > EC_MAX)
		return KI_ECORRUPT;
	if ((out = malloc(n + 1)) == NULL)
		return KI_ENOMEM;
	{
		uLongf got = n;

		if (uncompress((Bytef *)out, &got, p + EC_HDR,
		    (uLong)(*len - EC_HDR)) != Z_OK || got != n) {
			free(out);
			return KI_ECORRUPT;
		}
	}
	out[n] = '\0';
	free(*val);
	*val = out;
	*len = (size_t)n;
	return KI_OK;
}
