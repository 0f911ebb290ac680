/* api/verifier.c — runs kernelindex-ref for pending Verifications. The
 * child's crash or timeout fails that verification, never the daemon. */
#define _GNU_SOURCE /* pipe2 */
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
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/verify.h"
#include "lib/log.h"
#include "lib/thread.h"

#define MAX_OUTPUT (1u << 20)
#define MAX_STDERR 4096

extern char **environ;

struct verifier {
	api_ctx *api;
	char program[1024];
	int timeout;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop, wake;
	pid_t child;
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

/* Starts program in a process group of its own, with in, out and err as its
 * standard streams, no signal blocked and SIGPIPE at its default. The child
 * is killed when the calling thread ends, and so when the daemon dies
 * however it dies (PR_SET_PDEATHSIG): a killed daemon leaves no reference
 * program measuring on the GPU beside the one its restart starts again.
 * posix_spawn has no way to ask for that, hence fork; between fork and
 * exec the child calls only async-signal-safe functions. Returns 0 with
 * *pid set, or an errno (exec's, sent back through a close-on-exec pipe). */
static int
spawn(const char *program, int in, int out, int err, pid_t *pid)
{
	char *argv[] = { (char *)(uintptr_t)program, NULL };
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
			execve(program, argv, environ);
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

/* Runs the program with request on stdin; fills out (stdout) and err (a
 * description of a failure, empty on success). */
static void
run_child(verifier *v, const ki_buf *request, ki_buf *out, char *err,
	size_t errlen)
{
	int in[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	char ebuf[MAX_STDERR + 1];
	size_t elen = 0, written = 0;
	double deadline = mono() + v->timeout;
	pid_t pid = -1;
	int status = 0, rc, timed_out = 0, too_much = 0;

	err[0] = '\0';
	if (access(v->program, X_OK) != 0) {
		snprintf(err, errlen, "cannot start %.400s: %s", v->program,
		    strerror(errno));
		goto out;
	}
	if (cloexec_pipe(in) != 0 || cloexec_pipe(outp) != 0 ||
	    cloexec_pipe(errp) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto out;
	}
	if ((rc = spawn(v->program, in[0], outp[1], errp[1], &pid)) != 0) {
		snprintf(err, errlen, "cannot start %.400s: %s", v->program,
		    strerror(rc));
		pid = -1;
		goto out;
	}
	pthread_mutex_lock(&v->mu);
	v->child = pid;
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
		    "killed", v->timeout);
	else if (too_much)
		snprintf(err, errlen, "the reference program wrote more than %u "
		    "bytes and was killed", MAX_OUTPUT);
	else if (WIFSIGNALED(status))
		snprintf(err, errlen, "the reference program died of signal %d%s%.300s",
		    WTERMSIG(status), elen ? ": " : "", ebuf);
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && out->len == 0)
		snprintf(err, errlen, "the reference program exited %d%s%.300s",
		    WEXITSTATUS(status), elen ? ": " : "", ebuf);
out:
	pthread_mutex_lock(&v->mu);
	v->child = -1;
	pthread_mutex_unlock(&v->mu);
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
}

static void *
loop(void *arg)
{
	verifier *v = arg;
	ki_buf req, out;
	char name[256], err[512];
	int first = 1;

	ki_thread_name("ki-verifier");
	ki_buf_init(&req);
	ki_buf_init(&out);
	for (;;) {
		int rc;

		pthread_mutex_lock(&v->mu);
		while (!v->stop && !v->wake && !first) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 5;
			pthread_cond_timedwait(&v->cv, &v->mu, &ts);
			break;
		}
		v->wake = 0;
		if (v->stop) {
			pthread_mutex_unlock(&v->mu);
			break;
		}
		pthread_mutex_unlock(&v->mu);
		/* At start, a verification left Running by a stopped daemon is
		 * run again. */
		while ((rc = api_verify_claim(v->api, first, name, sizeof(name),
		    &req)) == 1) {
			ki_buf_reset(&out);
			log_info("verification %s: running %s", name, v->program);
			run_child(v, &req, &out, err, sizeof(err));
			if (err[0] != '\0')
				log_warn("verification %s: %s", name, err);
			rc = api_verify_finish(v->api, name, out.data, out.len,
			    err[0] ? err : NULL);
			if (rc != KI_OK)
				log_error("verification %s: recording the result: %s",
				    name, ki_strerror(rc));
			pthread_mutex_lock(&v->mu);
			rc = v->stop;
			pthread_mutex_unlock(&v->mu);
			if (rc)
				break;
		}
		if (rc < 0)
			log_error("verifications: %s", ki_strerror(rc));
		first = 0;
	}
	ki_buf_free(&req);
	ki_buf_free(&out);
	return NULL;
}

int
verifier_start(verifier **out, api_ctx *api, const char *program,
	int timeout)
{
	verifier *v = calloc(1, sizeof(*v));

	*out = NULL;
	if (v == NULL)
		return KI_ENOMEM;
	v->api = api;
	v->timeout = timeout;
	v->child = -1;
	snprintf(v->program, sizeof(v->program), "%s", program);
	pthread_mutex_init(&v->mu, NULL);
	pthread_cond_init(&v->cv, NULL);
	if (pthread_create(&v->thread, NULL, loop, v) != 0) {
		pthread_mutex_destroy(&v->mu);
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
	v->wake = 1;
	pthread_cond_signal(&v->cv);
	pthread_mutex_unlock(&v->mu);
}

void
verifier_stop(verifier *v)
{
	if (v == NULL)
		return;
	pthread_mutex_lock(&v->mu);
	v->stop = 1;
	if (v->child > 0)
		kill(-v->child, SIGKILL);
	pthread_cond_signal(&v->cv);
	pthread_mutex_unlock(&v->mu);
	pthread_join(v->thread, NULL);
	pthread_mutex_destroy(&v->mu);
	pthread_cond_destroy(&v->cv);
	free(v);
}
