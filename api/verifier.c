/* api/verifier.c — runs kernelindex-ref for pending Verifications: one
 * measurement at a time on each of the host's GPUs (found by the program's
 * --list-devices), each child pinned to its GPU, the waiting ones taken in
 * turn by the run's source. A GPU whose measurement crashes, hangs or
 * reports a runtime error leaves the pool; the child's failure fails that
 * verification, never the daemon. */
#define _GNU_SOURCE /* pipe2, strcasestr */
#include "api/verifier.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "physics/gpu.h"
#include "api/verify.h"
#include "api/verifyq.h"
#include "lib/log.h"
#include "lib/thread.h"

#define MAX_OUTPUT (1u << 20)
#define MAX_STDERR 4096
#define MAX_DEVICES 64
#define FAIR_KEYS 64
#define LIST_TIMEOUT 10      /* seconds for --list-devices */

extern char **environ;


/* One slot of the pool: a GPU (or, on a host without one, the host). */
typedef struct vdev {
	verifier *v;
	int index;
	int pseudo;                     /* no GPU: the program picks */
	char uuid[96], name[96];
	char id[64];                    /* GPU table id, "" when unknown */
	int healthy;                    /* in the pool */
	char why[256];                  /* why it left the pool */
	char current[254];              /* the Verification it measures */
	unsigned long long ok, failed;
	pid_t child;
	pthread_t thread;
	int started;
} vdev;

struct verifier {
	api_ctx *api;
	char program[1024];
	int timeout;
	int simulated;                  /* KI_REF_SIMULATED_DEVICES, 0: none */
	pthread_t thread;               /* discovery, then waits for stop */
	pthread_mutex_t mu;             /* everything below */
	pthread_cond_t cv;
	pthread_mutex_t pick;           /* one slot picks at a time */
	int stop;
	unsigned long long gen;         /* bumped by each notify */
	pid_t lister;
	vdev devs[MAX_DEVICES];
	int ndev;
	/* The fair queue: when each source was last served. */
	struct {
		char key[API_VWAIT_TEXT];
		unsigned long long served;
	} keys[FAIR_KEYS];
	int nkeys;
	unsigned long long tick;
};

static double
mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A pipe whose ends other children do not inherit. */
static int
cloexec_pipe(int fds[2])
{
	if (pipe(fds) != 0)
		return -1;
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	return 0;
}

/* Makes fd the child's descriptor to: dup2, or, where it already is to,
 * clears its close-on-exec flag (dup2 onto itself would leave it set). */
static int
child_fd(int fd, int to)
{
	if (fd != to)
		return dup2(fd, to) == to ? 0 : -1;
	return fcntl(fd, F_SETFD, 0);
}

/* The child's environment: the daemon's, with CUDA_VISIBLE_DEVICES set to
 * dev's UUID (for a GPU), KI_REF_VERIFICATION to vname (when set) and
 * KI_REF_SIMULATED_DEVICES to simulated (when > 0). Built before fork,
 * since the child may not allocate. Caller frees with free_env(); NULL
 * when out of memory. */
static char **
child_env(const vdev *dev, const char *vname, int simulated)
{
	size_t n = 0, k = 0;
	char **e;

	while (environ[n] != NULL)
		n++;
	if ((e = calloc(n + 4, sizeof(*e))) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if ((dev != NULL && !dev->pseudo && strncmp(environ[i],
		    "CUDA_VISIBLE_DEVICES=", 21) == 0) ||
		    strncmp(environ[i], "KI_REF_VERIFICATION=", 20) == 0 ||
		    (simulated > 0 && strncmp(environ[i],
		    "KI_REF_SIMULATED_DEVICES=", 25) == 0))
			continue;
		if ((e[k++] = strdup(environ[i])) == NULL)
			goto fail;
	}
	if (dev != NULL && !dev->pseudo &&
	    asprintf(&e[k++], "CUDA_VISIBLE_DEVICES=%s", dev->uuid) < 0)
		goto fail;
	if (vname != NULL && asprintf(&e[k++], "KI_REF_VERIFICATION=%s",
	    vname) < 0)
		goto fail;
	if (simulated > 0 && asprintf(&e[k++], "KI_REF_SIMULATED_DEVICES=%d",
	    simulated) < 0)
		goto fail;
	return e;
fail:
	e[k - 1] = NULL;
	for (size_t i = 0; e[i] != NULL; i++)
		free(e[i]);
	free(e);
	return NULL;
}

static void
free_env(char **e)
{
	if (e == NULL)
		return;
	for (size_t i = 0; e[i] != NULL; i++)
		free(e[i]);
	free(e);
}

/* Starts program in a process group of its own, with in, out and err as its
 * standard streams, no signal blocked and SIGPIPE at its default. The child
 * is killed when the calling thread ends, and so when the daemon dies
 * however it dies (PR_SET_PDEATHSIG): a killed daemon leaves no reference
 * program measuring on the GPU beside the one its restart starts again.
 * posix_spawn has no way to ask for that, hence fork; between fork and
 * exec the child calls only async-signal-safe functions. argv[0] is the
 * program; envp its whole environment. Returns 0 with
 * *pid set, or an errno (exec's, sent back through a close-on-exec pipe). */
static int
spawn(char *const argv[], char *const envp[], int in, int out, int err,
	pid_t *pid)
{
	pid_t parent = getpid();
	sigset_t all, old;
	int ep[2], e = 0;
	ssize_t n;

	if (pipe2(ep, O_CLOEXEC) != 0)
		return errno;
	/* No handler of the daemon's may run in the child before exec. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	*pid = fork();
	if (*pid == 0) {
		struct sigaction dfl;
		sigset_t none;

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
		    getppid() != parent)
			_exit(127);   /* the daemon is already gone */
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&none);
		if (setpgid(0, 0) != 0 || child_fd(in, 0) != 0 ||
		    child_fd(out, 1) != 0 || child_fd(err, 2) != 0 ||
		    sigaction(SIGPIPE, &dfl, NULL) != 0 ||
		    sigprocmask(SIG_SETMASK, &none, NULL) != 0)
			e = errno;
		else
			execve(argv[0], argv, envp);
		if (e == 0)
			e = errno;
		n = write(ep[1], &e, sizeof(e));
		(void)n;
		_exit(127);
	}
	if (*pid < 0)
		e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(ep[1]);
	if (*pid > 0) {
		while ((n = read(ep[0], &e, sizeof(e))) < 0 && errno == EINTR)
			;
		if (n == (ssize_t)sizeof(e)) {
			while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
				;
			*pid = -1;
		} else {
			e = 0;   /* the pipe closed at exec */
		}
	}
	close(ep[0]);
	return e;
}

/* Runs the program with arg (NULL: none) and request on stdin, pinned to
 * dev (NULL: the daemon's environment as it is) for the Verification vname
 * (NULL: none), for at most timeout seconds; fills out (stdout) and err (a
 * description of a failure, empty on success). Returns 1 when the failure
 * is the device's (a crash, a hang, a runtime error), else 0. */
static int
run_child(verifier *v, vdev *dev, const char *arg, const char *vname,
	int timeout, const ki_buf *request, ki_buf *out, char *err,
	size_t errlen)
{
	char *argv[] = { v->program, (char *)(uintptr_t)arg, NULL };
	char **envp = NULL;
	pid_t *slot = dev != NULL ? &dev->child : &v->lister;
	int fault = 0;
	int in[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	char ebuf[MAX_STDERR + 1];
	size_t elen = 0, written = 0;
	double deadline = mono() + timeout;
	pid_t pid = -1;
	int status = 0, rc, timed_out = 0, too_much = 0;

	err[0] = '\0';
	if (access(v->program, X_OK) != 0) {
		snprintf(err, errlen, "cannot start %.400s: %s", v->program,
		    strerror(errno));
		goto out;
	}
	if ((envp = child_env(dev, vname, v->simulated)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (cloexec_pipe(in) != 0 || cloexec_pipe(outp) != 0 ||
	    cloexec_pipe(errp) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto out;
	}
	if ((rc = spawn(argv, envp, in[0], outp[1], errp[1], &pid)) != 0) {
		snprintf(err, errlen, "cannot start %.400s: %s", v->program,
		    strerror(rc));
		pid = -1;
		goto out;
	}
	pthread_mutex_lock(&v->mu);
	*slot = pid;
	if (v->stop)       /* verifier_stop came before the pid was known */
		kill(-pid, SIGKILL);
	pthread_mutex_unlock(&v->mu);
	close(in[0]);
	close(outp[1]);
	close(errp[1]);
	in[0] = outp[1] = errp[1] = -1;
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	while (outp[0] >= 0 || errp[0] >= 0) {
		struct pollfd pf[3];
		int n = 0, ms = (int)((deadline - mono()) * 1000);

		if (ms <= 0) {
			timed_out = 1;
			break;
		}
		if (outp[0] >= 0)
			pf[n++] = (struct pollfd){ outp[0], POLLIN, 0 };
		if (errp[0] >= 0)
			pf[n++] = (struct pollfd){ errp[0], POLLIN, 0 };
		if (in[1] >= 0)
			pf[n++] = (struct pollfd){ in[1], POLLOUT, 0 };
		if (poll(pf, (nfds_t)n, ms > 1000 ? 1000 : ms) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < n; i++) {
			char chunk[8192];
			ssize_t got;

			if (pf[i].revents == 0)
				continue;
			if (pf[i].fd == in[1]) {
				got = write(in[1], request->data + written,
				    request->len - written);
				if (got > 0)
					written += (size_t)got;
				if (got < 0 || written == request->len) {
					close(in[1]);
					in[1] = -1;
				}
				continue;
			}
			got = read(pf[i].fd, chunk, sizeof(chunk));
			if (got <= 0) {
				close(pf[i].fd);
				if (pf[i].fd == outp[0])
					outp[0] = -1;
				else
					errp[0] = -1;
				continue;
			}
			if (pf[i].fd == outp[0]) {
				if (out->len + (size_t)got > MAX_OUTPUT) {
					too_much = 1;
					break;
				}
				ki_buf_append(out, chunk, (size_t)got);
			} else if (elen < MAX_STDERR) {
				size_t take = (size_t)got < MAX_STDERR - elen ?
				    (size_t)got : MAX_STDERR - elen;

				memcpy(ebuf + elen, chunk, take);
				elen += take;
			}
		}
		if (too_much)
			break;
	}
	if (timed_out || too_much)
		kill(-pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* Anything it left in its group goes too. */
	kill(-pid, SIGKILL);
	ebuf[elen] = '\0';
	if (timed_out)
		snprintf(err, errlen, "the reference program ran past %d s and was "
		    "killed", timeout);
	else if (too_much)
		snprintf(err, errlen, "the reference program wrote more than %u "
		    "bytes and was killed", MAX_OUTPUT);
	else if (WIFSIGNALED(status))
		snprintf(err, errlen, "the reference program died of signal %d%s%.300s",
		    WTERMSIG(status), elen ? ": " : "", ebuf);
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && out->len == 0)
		snprintf(err, errlen, "the reference program exited %d%s%.300s",
		    WEXITSTATUS(status), elen ? ": " : "", ebuf);
	/* Exit 1 is a runtime error (a CUDA error, say), 4 no usable device;
	 * 2, 3 and 5 are about the request. */
	fault = timed_out || too_much || WIFSIGNALED(status) ||
	    (WIFEXITED(status) && (WEXITSTATUS(status) == 1 ||
	    WEXITSTATUS(status) == 4));
out:
	pthread_mutex_lock(&v->mu);
	*slot = -1;
	pthread_mutex_unlock(&v->mu);
	free_env(envp);
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	return fault;
}

/* ---- discovery ---- */

/* Fills v's pool from `program --list-devices`; a host where it finds no
 * GPU (or the program cannot say) gets one slot, the host itself, where
 * the program picks its device as it always did. */
static void
discover(verifier *v)
{
	struct json_object *o = NULL, *arr;
	ki_buf none, out;
	char err[512];
	size_t n = 0;

	ki_buf_init(&none);
	ki_buf_init(&out);
	run_child(v, NULL, "--list-devices", NULL, v->timeout < LIST_TIMEOUT ?
	    v->timeout : LIST_TIMEOUT, &none, &out, err, sizeof(err));
	if (err[0] == '\0' && out.len > 0)
		o = json_tokener_parse(out.data);
	arr = json_object_object_get(o, "devices");
	if (json_object_is_type(arr, json_type_array))
		n = json_object_array_length(arr);
	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < n && v->ndev < MAX_DEVICES; i++) {
		struct json_object *d = json_object_array_get_idx(arr, i);
		const char *uuid = json_object_get_string(json_object_object_get(d,
		    "uuid"));
		const char *name = json_object_get_string(json_object_object_get(d,
		    "name"));
		const char *health = json_object_get_string(
		    json_object_object_get(d, "health"));
		vdev *dv = &v->devs[v->ndev];
		const api_gpu *g;

		if (uuid == NULL || *uuid == '\0')
			continue;
		memset(dv, 0, sizeof(*dv));
		dv->v = v;
		dv->child = -1;
		dv->index = json_object_get_int(json_object_object_get(d,
		    "index"));
		snprintf(dv->uuid, sizeof(dv->uuid), "%s", uuid);
		snprintf(dv->name, sizeof(dv->name), "%s", name ? name : "");
		if ((g = api_gpu_match_name(dv->name)) != NULL)
			snprintf(dv->id, sizeof(dv->id), "%s", g->id);
		dv->healthy = health != NULL && strcmp(health, "ok") == 0;
		if (!dv->healthy)
			snprintf(dv->why, sizeof(dv->why), "NVML reports %s",
			    health ? health : "no health");
		v->ndev++;
	}
	if (v->ndev == 0) {
		vdev *dv = &v->devs[0];

		memset(dv, 0, sizeof(*dv));
		dv->v = v;
		dv->child = -1;
		dv->pseudo = 1;
		dv->healthy = 1;
		snprintf(dv->name, sizeof(dv->name), "host");
		v->ndev = 1;
		log_info("verifications: no GPU listed by %s%s%s: one measurement "
		    "at a time, on the device the program picks", v->program,
		    err[0] ? ": " : "", err);
	}
	for (int i = 0; i < v->ndev; i++)
		if (!v->devs[i].pseudo)
			log_info("verifications: GPU %d %s (%s)%s%s", v->devs[i].index,
			    v->devs[i].uuid, v->devs[i].name, v->devs[i].healthy ?
			    "" : " left out: ", v->devs[i].why);
	pthread_mutex_unlock(&v->mu);
	if (o != NULL)
		json_object_put(o);
	ki_buf_free(&none);
	ki_buf_free(&out);
}

/* ---- the fair queue ---- */

/* Whether dev may measure w. */
static int
fits(const vdev *d, const api_vwait *w)
{
	if (w->want[0] == '\0')
		return 1;
	if (d->pseudo)
		return 0;
	if (strcmp(w->want, "run") == 0 || w->want_id[0] != '\0')
		return w->want_id[0] != '\0' && strcmp(d->id, w->want_id) == 0;
	return strcasestr(d->name, w->want) != NULL ||
	    strcasecmp(d->uuid, w->want) == 0;
}

/* When the source key was last served (0: never). Called with v->mu. */
static unsigned long long *
served(verifier *v, const char *key)
{
	int i, low = 0;

	for (i = 0; i < v->nkeys; i++)
		if (strcmp(v->keys[i].key, key) == 0)
			return &v->keys[i].served;
	if (v->nkeys < FAIR_KEYS) {
		i = v->nkeys++;
	} else {
		/* Forget the source served longest ago. */
		for (i = 1; i < FAIR_KEYS; i++)
			if (v->keys[i].served < v->keys[low].served)
				low = i;
		i = low;
	}
	snprintf(v->keys[i].key, sizeof(v->keys[i].key), "%s", key);
	v->keys[i].served = 0;
	return &v->keys[i].served;
}

/* Why no device of the pool can ever measure w, in msg; 0 when one can.
 * Called with v->mu. */
static const char *
hopeless(verifier *v, const api_vwait *w, char *msg, size_t n)
{
	size_t len = 0;
	int any = 0;

	for (int i = 0; i < v->ndev; i++)
		if (v->devs[i].healthy && fits(&v->devs[i], w))
			return NULL;
	if (strcmp(w->want, "run") == 0 && w->want_id[0] == '\0') {
		snprintf(msg, n, "spec.gpu is \"run\" and the run's GPU is not "
		    "known");
		return "RunGPUUnknown";
	}
	len = (size_t)snprintf(msg, n, "no GPU of this host%s%s%s is in the pool; "
	    "it has:", w->want[0] ? " matching \"" : "", w->want,
	    w->want[0] ? "\"" : "");
	for (int i = 0; i < v->ndev && len < n; i++) {
		const vdev *d = &v->devs[i];

		any = 1;
		len += (size_t)snprintf(msg + len, n - len, "%s %s%s%s%s",
		    i ? "," : "", d->pseudo ? "no GPU" : d->name, d->healthy ? "" :
		    " (out of the pool: ", d->healthy ? "" : d->why,
		    d->healthy ? "" : ")");
	}
	if (!any && len < n)
		snprintf(msg + len, n - len, " none");
	return w->want[0] ? "NoMatchingGPU" : "NoHealthyGPU";
}

/* Claims the next Verification for d: among those waiting that d fits and
 * no slot measures, the one whose source was served longest ago, oldest
 * first; ends those that no device of the pool can measure. Returns 1 with
 * name and request filled, 0 when none, or a negative KI_* code. */
static int
next_for(vdev *d, char *name, size_t namelen, ki_buf *request)
{
	verifier *v = d->v;
	api_vwait *w = NULL;
	size_t n = 0;
	int rc;

	pthread_mutex_lock(&v->pick);
	for (;;) {
		long best = -1;
		unsigned long long best_served = 0;

		free(w);
		w = NULL;
		if ((rc = api_verify_waiting(v->api, &w, &n)) != KI_OK)
			break;
		pthread_mutex_lock(&v->mu);
		for (size_t i = 0; i < n; i++) {
			const char *reason;
			char msg[512];
			int busy = 0;

			for (int k = 0; k < v->ndev; k++)
				busy |= strcmp(v->devs[k].current, w[i].name) == 0;
			if (busy)
				continue;
			if ((reason = hopeless(v, &w[i], msg, sizeof(msg))) != NULL) {
				pthread_mutex_unlock(&v->mu);
				log_warn("verification %s: %s", w[i].name, msg);
				rc = api_verify_give_up(v->api, w[i].name, reason, msg);
				if (rc != KI_OK && rc != KI_ENOTFOUND)
					log_error("verification %s: %s", w[i].name,
					    ki_strerror(rc));
				pthread_mutex_lock(&v->mu);
				continue;
			}
			if (!d->healthy || !fits(d, &w[i]))
				continue;
			if (best < 0 || *served(v, w[i].source) < best_served) {
				best = (long)i;
				best_served = *served(v, w[i].source);
			}
		}
		if (best < 0) {
			pthread_mutex_unlock(&v->mu);
			rc = 0;
			break;
		}
		snprintf(d->current, sizeof(d->current), "%s", w[best].name);
		*served(v, w[best].source) = ++v->tick;
		pthread_mutex_unlock(&v->mu);
		rc = api_verify_claim_named(v->api, w[best].name, request);
		if (rc == 1) {
			snprintf(name, namelen, "%s", w[best].name);
			break;
		}
		pthread_mutex_lock(&v->mu);
		d->current[0] = '\0';
		pthread_mutex_unlock(&v->mu);
		if (rc < 0)
			break;
	}
	pthread_mutex_unlock(&v->pick);
	free(w);
	return rc;
}

/* Takes d out of the pool. Called with v->mu. */
static void
leave_pool(vdev *d, const char *vname, const char *why)
{
	d->healthy = 0;
	snprintf(d->why, sizeof(d->why), "measuring %.60s: %.180s", vname, why);
	log_error("verifications: GPU %d %s (%s) leaves the pool: %s", d->index,
	    d->uuid, d->name, d->why);
	d->v->gen++;
	pthread_cond_broadcast(&d->v->cv);
}

/* A slot's thread: measures what next_for gives it until the daemon stops
 * or the device leaves the pool. */
static void *
slot_loop(void *arg)
{
	vdev *d = arg;
	verifier *v = d->v;
	unsigned long long seen = (unsigned long long)-1;
	ki_buf req, out;
	char name[256], err[512];

	/* top -H tells the slots apart: ki-gpu-INDEX, or ki-verify-host. */
	if (d->pseudo) {
		ki_thread_name("ki-verify-host");
	} else {
		snprintf(name, sizeof(name), "ki-gpu-%d", d->index);
		ki_thread_name(name);
	}
	ki_buf_init(&req);
	ki_buf_init(&out);
	for (;;) {
		int rc, stop;

		pthread_mutex_lock(&v->mu);
		if (seen == v->gen && !v->stop && d->healthy) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 5;
			pthread_cond_timedwait(&v->cv, &v->mu, &ts);
		}
		seen = v->gen;
		stop = v->stop || !d->healthy;
		pthread_mutex_unlock(&v->mu);
		if (stop)
			break;
		while ((rc = next_for(d, name, sizeof(name), &req)) == 1) {
			int fault;

			ki_buf_reset(&out);
			log_info("verification %s: running %s on %s %s", name,
			    v->program, d->pseudo ? "the host" : d->uuid, d->name);
			if (!d->pseudo && (rc = api_verify_note_device(v->api, name,
			    d->uuid, d->name, d->index)) != KI_OK)
				log_error("verification %s: recording the device: %s",
				    name, ki_strerror(rc));
			fault = run_child(v, d, NULL, name, v->timeout, &req, &out,
			    err, sizeof(err));
			if (err[0] != '\0')
				log_warn("verification %s: %s", name, err);
			rc = api_verify_finish(v->api, name, out.data, out.len,
			    err[0] ? err : NULL);
			if (rc != KI_OK)
				log_error("verification %s: recording the result: %s",
				    name, ki_strerror(rc));
			pthread_mutex_lock(&v->mu);
			d->current[0] = '\0';
			if (err[0] != '\0')
				d->failed++;
			else
				d->ok++;
			/* The host itself never leaves: there is nowhere else. */
			if (fault && !d->pseudo && !v->stop)
				leave_pool(d, name, err);
			stop = v->stop || !d->healthy;
			pthread_mutex_unlock(&v->mu);
			if (stop)
				break;
		}
		if (rc < 0)
			log_error("verifications: %s", ki_strerror(rc));
	}
	ki_buf_free(&req);
	ki_buf_free(&out);
	return NULL;
}

/* The controller's first thread: finds the devices, starts a slot thread
 * for each, and waits for the stop. */
static void *
control(void *arg)
{
	verifier *v = arg;

	ki_thread_name("ki-verifier");
	discover(v);
	pthread_mutex_lock(&v->mu);
	for (int i = 0; i < v->ndev && !v->stop; i++) {
		vdev *d = &v->devs[i];

		d->started = pthread_create(&d->thread, NULL, slot_loop, d) == 0;
		if (!d->started)
			log_error("verifications: cannot start a thread for %s",
			    d->uuid);
	}
	while (!v->stop)
		pthread_cond_wait(&v->cv, &v->mu);
	pthread_mutex_unlock(&v->mu);
	for (int i = 0; i < v->ndev; i++)
		if (v->devs[i].started)
			pthread_join(v->devs[i].thread, NULL);
	return NULL;
}

int
verifier_start(verifier **out, api_ctx *api, const char *program,
	int timeout, int simulated)
{
	verifier *v = calloc(1, sizeof(*v));

	*out = NULL;
	if (v == NULL)
		return KI_ENOMEM;
	v->api = api;
	v->timeout = timeout;
	v->simulated = simulated;
	v->lister = -1;
	snprintf(v->program, sizeof(v->program), "%s", program);
	pthread_mutex_init(&v->mu, NULL);
	pthread_mutex_init(&v->pick, NULL);
	pthread_cond_init(&v->cv, NULL);
	if (pthread_create(&v->thread, NULL, control, v) != 0) {
		pthread_mutex_destroy(&v->mu);
		pthread_mutex_destroy(&v->pick);
		pthread_cond_destroy(&v->cv);
		free(v);
		return KI_EIO;
	}
	*out = v;
	return KI_OK;
}

void
verifier_notify(verifier *v)
{
	pthread_mutex_lock(&v->mu);
	v->gen++;
	pthread_cond_broadcast(&v->cv);
	pthread_mutex_unlock(&v->mu);
}

/* Appends s to b with the escapes of a Prometheus label value. */
static void
label(ki_buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			ki_buf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			ki_buf_puts(b, "\\n");
		else
			ki_buf_append(b, s, 1);
	}
}

void
verifier_metrics(void *arg, ki_buf *b)
{
	static const char *const help[] = {
		"kernelindex_verifier_device_in_pool", "gauge",
		"Whether the device measures verifications (0: taken out).",
		"kernelindex_verifier_device_busy", "gauge",
		"Whether the device is measuring now.",
		"kernelindex_verifier_measurements_total", "counter",
		"Reference measurements finished on the device, by outcome.",
	};
	verifier *v = arg;

	pthread_mutex_lock(&v->mu);
	for (int m = 0; m < 3; m++) {
		ki_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", help[3 * m],
		    help[3 * m + 2], help[3 * m], help[3 * m + 1]);
		for (int i = 0; i < v->ndev; i++) {
			const vdev *d = &v->devs[i];

			for (int o = 0; o < (m == 2 ? 2 : 1); o++) {
				ki_buf_printf(b, "%s{index=\"%d\",uuid=\"", help[3 * m],
				    d->pseudo ? -1 : d->index);
				label(b, d->uuid);
				ki_buf_puts(b, "\",model=\"");
				label(b, d->name);
				if (m == 2)
					ki_buf_puts(b, o ? "\",outcome=\"failed" :
					    "\",outcome=\"ok");
				ki_buf_printf(b, "\"} %llu\n", m == 0 ?
				    (unsigned long long)d->healthy : m == 1 ?
				    (unsigned long long)(d->current[0] != '\0') :
				    o ? d->failed : d->ok);
			}
		}
	}
	pthread_mutex_unlock(&v->mu);
}

void
verifier_stop(verifier *v)
{
	if (v == NULL)
		return;
	pthread_mutex_lock(&v->mu);
	v->stop = 1;
	if (v->lister > 0)
		kill(-v->lister, SIGKILL);
	for (int i = 0; i < v->ndev; i++)
		if (v->devs[i].child > 0)
			kill(-v->devs[i].child, SIGKILL);
	pthread_cond_broadcast(&v->cv);
	pthread_mutex_unlock(&v->mu);
	pthread_join(v->thread, NULL);
	pthread_mutex_destroy(&v->mu);
	pthread_mutex_destroy(&v->pick);
	pthread_cond_destroy(&v->cv);
	free(v);
}
