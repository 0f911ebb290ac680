/* store/etcd_key.c — the etcd store's keys: the prefix and a part letter
 * before every key, big-endian integers in keys and values, the end of a
 * prefix's range, and an object's record key by its id. The lowest layer
 * of the etcd backend's files: it calls none of the others. */
#include <string.h>

#include "store/etcd_int.h"

void
et_put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

uint64_t
et_get_be64(const void *p)
{
	const uint8_t *b = p;
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

size_t
et_key(const et_store *e, char *buf, char part, const void *rest, size_t n)
{
	memcpy(buf, e->prefix, e->prefix_len);
	buf[e->prefix_len] = part;
	buf[e->prefix_len + 1] = '/';
	if (n > 0)
		memcpy(buf + e->prefix_len + 2, rest, n);
	return e->prefix_len + 2 + n;
}

size_t
et_prefix_end(char *buf, size_t n)
{
	while (n > 0 && (uint8_t)buf[n - 1] == 0xff)
		n--;
	if (n > 0)
		buf[n - 1]++;
	return n;
}

size_t
et_id_key(et_store *e, char *buf, uint64_t id)
{
	uint8_t b[8];

	et_put_be64(b, id);
	return et_key(e, buf, 'o', b, 8);
}
