/* server/encode.h — representations of an answer and of a request body:
 * content negotiation (Accept, Accept-Encoding), JSON rendered as YAML,
 * gzip both ways. No libmicrohttpd here, so tests can drive it. */
#ifndef SERVER_ENCODE_H
#define SERVER_ENCODE_H

#include <stddef.h>

#include "lib/ki.h"

/* Answers smaller than this are sent as they are even when the client
 * takes gzip: compressing them costs more than the bytes it saves. */
#define ENC_GZIP_MIN (8 * 1024)

/* Does this Accept-Encoding header (NULL: absent) take gzip? */
int enc_accepts_gzip(const char *accept_encoding);
/* Does this Accept header (NULL: absent) prefer application/yaml to
 * application/json? JSON is the default: wildcards do not choose YAML. */
int enc_wants_yaml(const char *accept);

/* What an endpoint can answer in, for enc_accepts. */
#define ENC_YAML 1
#define ENC_CSV 2

/* Does accept (NULL: no header) admit JSON (application/json, the
 * wildcard ranges of everything and of application/), or YAML or CSV
 * (text/csv, or the wildcard of text/) where forms says the endpoint
 * produces them? 0 when every range it names (with q above 0) is one the
 * endpoint cannot produce (406). */
int enc_accepts(const char *accept, int forms);
/* enc_content_type's refusals. */
#define ENC_CT_BAD (-1)       /* not a media type as RFC 9110 writes one */
#define ENC_CT_CHARSET (-2)   /* a charset other than UTF-8 */

/* Reads a Content-Type value (NULL: absent) as RFC 9110 8.3.1 writes one:
 * type "/" subtype, then parameters, each a token "=" a token or a
 * quoted-string, whitespace allowed only around each ";". mt receives
 * the type and subtype lower-cased (n bytes at most; "" when the value is
 * absent, empty or refused before its type is read). Returns 0;
 * ENC_CT_BAD with *why (static) saying what is wrong, a parameter named
 * twice included (ambiguous: which one counts?); or ENC_CT_CHARSET for a
 * charset other than UTF-8. */
int enc_content_type(const char *ct, char *mt, size_t n, const char **why);
/* Is a body of this Content-Type worth compressing (text, JSON, YAML)? */
int enc_compressible(const char *content_type);

/* Appends the gzip (RFC 1952) form of in[0..len) to out. Returns KI_OK or
 * KI_ENOMEM. */
int enc_gzip(const char *in, size_t len, ki_buf *out);

/* Appends the YAML form of the JSON text in[0..len) (an answer of this
 * server: valid JSON) to out, in block style with the keys in their JSON
 * order; strings are plain only where no YAML 1.1 or 1.2 reader can take
 * them for anything but that string, else double-quoted. Returns KI_OK,
 * KI_EINVAL (not JSON, or nested beyond 256) or KI_ENOMEM. */
int enc_yaml(const char *in, size_t len, ki_buf *out);

/* A gzip request body inflated as it arrives, into a ki_buf whose limit
 * bounds the decompressed size. */
typedef struct enc_inflater enc_inflater;

/* NULL when out of memory. Free with enc_inflate_free(). */
enc_inflater *enc_inflate_new(void);
/* Inflates in[0..len) onto out. Returns KI_OK, KI_EINVAL (not gzip, or
 * data after the end of the gzip stream), KI_ELIMIT (out's limit reached)
 * or KI_ENOMEM. */
int enc_inflate(enc_inflater *z, const char *in, size_t len, ki_buf *out);
/* The body has ended: KI_OK when the gzip stream was complete, else
 * KI_EINVAL. */
int enc_inflate_end(enc_inflater *z);
void enc_inflate_free(enc_inflater *z);

#endif
