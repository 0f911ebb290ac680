/* lib/limits.h — every limit a client's request can run into, in one place.
 * The defaults here are the configuration's defaults (server/config.c). */
#ifndef KI_LIMITS_H
#define KI_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#define KI_DEFAULT_MAX_BODY (1024 * 1024)             /* one document */
#define KI_DEFAULT_MAX_BULK_BODY (256 * 1024 * 1024)  /* List, atomic NDJSON */
#define KI_DEFAULT_MAX_STREAM_BODY ((uint64_t)64 << 30) /* streamed NDJSON */
#define KI_DEFAULT_MAX_DEPTH 32                       /* JSON nesting */
#define KI_DEFAULT_MAX_ITEMS 10000                    /* per bulk upload */
#define KI_DEFAULT_MAX_PAGE 1000                      /* list page size */
#define KI_DEFAULT_MAX_CONNECTIONS 1024
#define KI_DEFAULT_MAX_PER_IP 256
#define KI_DEFAULT_CONNECTION_TIMEOUT 60              /* seconds idle */
#define KI_MAX_URL 8192                               /* path + query */
#define KI_MAX_NAME 253                               /* metadata.name */
#define KI_MAX_LABELS 64
/* Runs one comparison side, leaderboard, series list or Threshold history
 * reads into memory (about 400 bytes each). */
#define KI_MAX_SERIES_RUNS 250000

typedef struct ki_limits {
	size_t max_body;
	size_t max_bulk_body;
	int max_depth;
	size_t max_items;
	size_t max_page;
	uint64_t max_stream_body;
} ki_limits;

#endif
