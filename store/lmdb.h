/* store/lmdb.h — what only the LMDB backend of store/store.h has: its
 * tuning (the map's size and growth, checkpoints of its redo log, the
 * young digest tables, the batches of a format conversion), its
 * statistics, its backup (a data.mdb file) and crash simulation for tests.
 * store_open() opens this backend with the defaults below.
 *
 * How it keeps the contract: LMDB's lock file is per process (hence no
 * fork after the open); stale reader slots of a crashed process are
 * cleared at open; the map grows (a write's store_begin, when it is 3/4
 * full) only once every transaction of the process has ended, hence one
 * transaction per thread; a read's pointers point into the memory map;
 * child transactions are LMDB's nested ones. A commit appends one record
 * to the redo log and syncs it, and LMDB's own file is synced at
 * checkpoints (store/wal.h); every record carries a CRC-32C. The label and
 * reference postings and the facet counts of the newest objects (at most
 * 64) are written in groups: lists and counts read those objects' records
 * instead. */
#ifndef STORE_LMDB_H
#define STORE_LMDB_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct store_lmdb_options {
	uint64_t map_size;     /* bytes of address space (0: 1 GiB) */
	uint64_t map_max;      /* it doubles when 3/4 full, up to this
	                        * (0: 256 GiB, at least map_size) */
	/* A checkpoint once the redo log holds this many bytes or this
	 * many ms have passed since the last (0: 1 MiB, 50 ms). */
	uint64_t checkpoint_bytes;
	uint64_t checkpoint_ms;
	/* Entries per transaction when an older store's tables are copied
	 * into a newer layout at open (0: the default; tests make it small
	 * to cross batch boundaries). */
	size_t convert_batch;
	/* Digests the young part of the digest index holds before it is
	 * merged into the main one (0: the default; tests make it small). */
	size_t digest_young;
	/* Entries from which a young table is read by several threads at
	 * once (0: the default; tests make it small). */
	size_t young_read_min;
} store_lmdb_options;

/* store_open() with LMDB's tuning (lo NULL: the defaults). A store opened
 * while another process owns it (store_options.shared) commits to the
 * redo log's redo.side, synced, and takes no checkpoint. */
int store_lmdb_open(store **out, const char *dir, const store_options *opt,
	const store_lmdb_options *lo);

/* Writes a consistent, compacted copy of the store to fd (a data.mdb file)
 * while writes continue (LMDB's mdb_env_copyfd2 with MDB_CP_COMPACT). */
int store_lmdb_backup_fd(store *s, int fd);

/* Statistics for /metrics. */
typedef struct store_lmdb_stats {
	uint64_t map_size, map_used, page_size, entries;
	uint64_t log_bytes;     /* redo log written since the last checkpoint */
	uint64_t checkpoints;   /* taken since open */
	uint64_t recovered;     /* transactions applied from the log at open */
} store_lmdb_stats;
/* KI_EINVAL, like store_lmdb_backup_fd(), for a store of another
 * backend. */
int store_lmdb_stat(store *s, store_lmdb_stats *out);

/* Tests only: closes the store as a crash would leave it, without the
 * final checkpoint, so that the next open recovers from the log. */
void store_lmdb_crash(store *s);

#endif
