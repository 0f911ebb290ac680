/* api/commit.h — group commit: concurrent write requests share one synced
 * LMDB commit, and every answer waits until the batch is on disk.
 *
 * A job that may fail after it has written (a bulk upload, a stream's
 * chunk) runs in a child transaction of the batch, so that its failure
 * leaves the others intact. A job marked rerun runs in the batch's own
 * transaction, which saves the child's copy of every page it touches; if
 * it fails after writing, the batch is aborted and run again with every
 * job in a child transaction. Such a job's fn must therefore give the
 * same answer when run again from the start. */
#ifndef API_COMMIT_H
#define API_COMMIT_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct api_job api_job;
/* The work of one request, run inside txn by the committer. Returns 0 to
 * keep its writes, anything else to drop them (its answer is already
 * rendered either way). */
typedef int (*api_job_fn)(store_txn *txn, void *arg);
/* Called once the batch holding the job is committed (or failed):
 * commit_rc is the batch commit's result. */
typedef void (*api_job_done)(api_job *job, int commit_rc);

struct api_job {
	api_job_fn fn;
	void *arg;
	int rc;                   /* fn's result */
	int rerun;                /* fn may run in the batch's transaction */
	api_job_done done;
	void *cookie;             /* for done: whom to wake */
	api_job *next;
};

typedef struct api_committer api_committer;

/* What the committer has done, for /metrics. */
typedef struct api_commit_stats {
	uint64_t batches;       /* synced commits */
	uint64_t jobs;          /* requests they carried */
	uint64_t redone;        /* batches run again, each job in a child */
	uint64_t commit_us;     /* time in store_commit (writes and syncs) */
} api_commit_stats;

/* Starts the committer thread over s. committed(arg, rv) is called after
 * each batch that wrote something. */
int api_committer_start(api_committer **out, store *s, size_t max_batch,
	void (*committed)(void *arg, uint64_t rv), void *arg);
/* Queues a job; its done() runs on the committer thread. */
void api_committer_submit(api_committer *c, api_job *job);
/* A snapshot of the counters (zeros for NULL). */
void api_committer_stats(api_committer *c, api_commit_stats *out);
/* Runs what is queued, then stops. */
void api_committer_stop(api_committer *c);

#endif
