/* store/commit.c — group commit: the committer thread (see store/store.h),
 * over any backend of the contract. */
#include "store/store.h"
#include "lib/thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct store_committer {
	store *s;
	size_t max_batch;
	void (*committed)(void *arg, uint64_t rv);
	void *arg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	store_job *head, *tail;
	int stop;
	pthread_t thread;
	store_commit_stats stats;   /* atomics */
};

static uint64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Times a batch of jobs that may all run again is run again after its
 * commit conflicts with another process's. */
#define COMMIT_RETRIES 8

static int
all_rerun(const store_job *jobs)
{
	for (const store_job *j = jobs; j != NULL; j = j->next)
		if (!j->rerun && !j->again)
			return 0;
	return 1;
}

/* Runs one batch: one transaction, one sync. Jobs marked rerun write in
 * it directly; the others, and every job when the batch is run again, in
 * a child transaction each. */
static void
run_batch(store_committer *c, store_job *jobs, size_t njobs)
{
	store_txn *parent = NULL, *child;
	int rc, wrote = 0, isolate_all = 0, conflicts = 0;
	uint64_t rv = 0, t0;

again:
	wrote = 0;
	rc = store_begin(c->s, 1, &parent);
	for (store_job *j = jobs; j != NULL; j = j->next) {
		if (rc != KI_OK) {
			j->rc = rc;
			continue;
		}
		if (j->rerun && !isolate_all) {
			uint64_t before = store_writes(parent);

			j->rc = j->fn(parent, j->arg);
			if (j->rc == KI_OK) {
				wrote = 1;
			} else if (store_writes(parent) != before) {
				/* What it wrote cannot be dropped alone. */
				store_abort(parent);
				parent = NULL;
				wrote = 0;
				isolate_all = 1;
				__atomic_add_fetch(&c->stats.redone, 1, __ATOMIC_RELAXED);
				goto again;
			}
			continue;
		}
		if ((j->rc = store_begin_child(parent, &child)) != KI_OK)
			continue;
		j->rc = j->fn(child, j->arg);
		if (j->rc == KI_OK) {
			j->rc = store_commit(child);
			wrote |= j->rc == KI_OK;
		} else {
			store_abort(child);
		}
	}
	if (rc == KI_OK) {
		rv = store_rv(parent);
		t0 = mono_us();
		rc = store_commit(parent);
		__atomic_add_fetch(&c->stats.commit_us, mono_us() - t0,
		    __ATOMIC_RELAXED);
		if (rc == KI_OK) {
			__atomic_add_fetch(&c->stats.batches, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&c->stats.jobs, njobs, __ATOMIC_RELAXED);
		}
		/* Another process committed since the batch began (a store
		 * that several daemons share: etcd). Jobs that may run again
		 * (rerun or again) run again over the new state; a batch
		 * holding any other is answered with the conflict. */
		if (rc == KI_ECONFLICT && conflicts < COMMIT_RETRIES &&
		    all_rerun(jobs)) {
			conflicts++;
			parent = NULL;
			__atomic_add_fetch(&c->stats.redone, 1, __ATOMIC_RELAXED);
			goto again;
		}
	}
	if (rc != KI_OK && rc != KI_EQUOTA)
		/* Every request of the batch is answered with it; the reason
		 * (a full disk, a damaged store) is the operator's to see. An
		 * exhausted space quota is reported once, by the store, until
		 * writes resume (store/etcd_quota.c). */
		store_log(c->s, STORE_LOG_ERROR, "commit: a batch of %zu "
		    "write(s) failed: %s", njobs, ki_strerror(rc));
	if (rc == KI_OK && wrote && c->committed != NULL)
		c->committed(c->arg, rv);
	while (jobs != NULL) {
		store_job *next = jobs->next;

		/* done() may free the job. */
		jobs->done(jobs, rc);
		jobs = next;
	}
}

static void *
loop(void *arg)
{
	store_committer *c = arg;

	ki_thread_name("ki-committer");
	pthread_mutex_lock(&c->mu);
	for (;;) {
		store_job *batch, *last;
		size_t n = 1;

		while (c->head == NULL && !c->stop) {
			struct timespec ts;

			/* Idle for a second: the store's background work (a
			 * checkpoint), so that what a restart would apply
			 * stays short. */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) ==
			    ETIMEDOUT && c->head == NULL && !c->stop) {
				pthread_mutex_unlock(&c->mu);
				store_idle(c->s);
				pthread_mutex_lock(&c->mu);
			}
		}
		if (c->head == NULL && c->stop)
			break;
		batch = last = c->head;
		while (last->next != NULL && n < c->max_batch) {
			last = last->next;
			n++;
		}
		c->head = last->next;
		if (c->head == NULL)
			c->tail = NULL;
		last->next = NULL;
		pthread_mutex_unlock(&c->mu);
		run_batch(c, batch, n);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int
store_committer_start(store_committer **out, store *s, size_t max_batch,
	void (*committed)(void *arg, uint64_t rv), void *arg)
{
	store_committer *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (c == NULL)
		return KI_ENOMEM;
	c->s = s;
	c->max_batch = max_batch ? max_batch : 256;
	c->committed = committed;
	c->arg = arg;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (pthread_create(&c->thread, NULL, loop, c) != 0) {
		pthread_mutex_destroy(&c->mu);
		pthread_cond_destroy(&c->cv);
		free(c);
		return KI_EIO;
	}
	*out = c;
	return KI_OK;
}

void
store_committer_submit(store_committer *c, store_job *job)
{
	job->next = NULL;
	pthread_mutex_lock(&c->mu);
	if (c->tail != NULL)
		c->tail->next = job;
	else
		c->head = job;
	c->tail = job;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

void
store_committer_stats(store_committer *c, store_commit_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (c == NULL)
		return;
	out->batches = __atomic_load_n(&c->stats.batches, __ATOMIC_RELAXED);
	out->jobs = __atomic_load_n(&c->stats.jobs, __ATOMIC_RELAXED);
	out->redone = __atomic_load_n(&c->stats.redone, __ATOMIC_RELAXED);
	out->commit_us = __atomic_load_n(&c->stats.commit_us, __ATOMIC_RELAXED);
}

void
store_committer_stop(store_committer *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}
