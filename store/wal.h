/* store/wal.h — the store's redo log.
 *
 * A durable write appends one record (the operations of one committed
 * transaction) and syncs it (O_DIRECT | O_DSYNC where the file system
 * allows, else write + fdatasync): one sequential write, where committing the
 * B-trees themselves syncs every page the transaction touched, scattered
 * over the file. The LMDB file is synced at checkpoints, in the
 * background. A checkpoint's header names the LMDB transaction whose state
 * is then on disk and holds a copy of LMDB's two meta pages as they were.
 *
 * Files, in the store's directory:
 *   redo.0, redo.1  the owner's log (the process holding redo.0's lock):
 *                   a header, then records from WAL_DATA on. Appends go to
 *                   one file; a checkpoint switches to the other, and its
 *                   header goes there once the LMDB file is synced. The
 *                   log is the newer valid header's file, then the other
 *                   file, as long as the txnids ascend.
 *   redo.side       records of other processes (admin commands run while a
 *                   daemon owns the store), appended at its end.
 * A record is u32 magic | u32 payload length | u64 LMDB txnid | u32 crc32 |
 * u32 number (see struct wal; 0 in redo.side and from older versions) |
 * payload. A header's u32 at byte 36 is the number of its file's first
 * record. */
#ifndef KI_STORE_WAL_H
#define KI_STORE_WAL_H

#include <stddef.h>
#include <stdint.h>

typedef struct wal wal;

#define WAL_META_MAX 65536   /* two LMDB pages of up to 32 KB */

typedef struct wal_head {
	uint64_t seq;            /* the newer of the two files' headers wins */
	uint64_t txnid;          /* LMDB transaction of the checkpoint */
	uint32_t clean;          /* written by a clean close */
	uint32_t meta_len;       /* bytes of metas: LMDB's pages 0 and 1 */
	uint32_t first;          /* read: the number of the first record
	                          * after it (0: unknown); written: the
	                          * log's own */
	uint8_t metas[WAL_META_MAX];
} wal_head;

/* Opens (creating) the log files in dir and tries to take the owner's
 * lock: *owner is 1 when this process holds it, 0 when another does. */
int wal_open(wal **out, const char *dir, int *owner);
void wal_close(wal *w);

/* The newer valid header and its file: KI_ENOTFOUND when there is none. */
int wal_head_read(wal *w, wal_head *h, int *file);
/* Writes h into file's header and syncs it unless nosync. */
int wal_head_write(wal *w, int file, const wal_head *h, int nosync);

/* The owner's appends: one record at the write position of the current
 * file, synced unless nosync; on failure the position is unchanged. */
int wal_append(wal *w, uint64_t txnid, const void *data, size_t len,
	int nosync);
/* Undoes the last append (its transaction did not commit): clears its
 * record header on disk, synced, and moves the position back. */
int wal_retract(wal *w, int nosync);
/* Bytes appended to the current file. */
uint64_t wal_used(const wal *w);
/* Appends go to the start of the other file from now on; returns it. */
int wal_switch(wal *w);

/* Drops every record of both files and redo.side's, keeping the current
 * file's header (the owner, once that header is durable and nothing has
 * been appended since): records of an earlier life of the store (another
 * file put back from a backup has lower txnids) can never chain on. */
int wal_trim(wal *w);

/* Another process's append to redo.side, synced; and its undo. */
int wal_side_append(wal *w, uint64_t txnid, const void *data, size_t len);
int wal_side_retract(wal *w);

/* Where wal_each found the log damaged: file 0 or 1 (redo.0, redo.1), 2
 * (redo.side) or -1 (nowhere), and the byte offset of the first record
 * that is missing or fails its checksum. */
typedef struct wal_damage {
	int file;
	uint64_t off;
} wal_damage;

/* Calls fn for each logged transaction above base in txnid order: the
 * records of file (the newest header's), then of the other file, merged
 * with redo.side's; first is the header's number of the record after base
 * (0: unknown). fn returning nonzero stops with that value. A damaged
 * record that valid later records follow, or a record missing between
 * two, is KI_ECORRUPT with *bad set, before fn is called at all; a
 * damaged last record (a write a crash cut short) ends the log. */
int wal_each(wal *w, int file, uint64_t base, uint32_t first,
	int (*fn)(void *arg, uint64_t txnid, const uint8_t *data, size_t len),
	void *arg, wal_damage *bad);

#endif
