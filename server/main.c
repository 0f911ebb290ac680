/* server/main.c — kernelindexd: reads the configuration, opens the store,
 * serves HTTP until SIGTERM or SIGINT. Wiring only; the work is in the
 * library. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/service.h"
#include "lib/log.h"
#include "server/config.h"
#include "server/http.h"
#include "server/router.h"
#include "server/verifier.h"
#include "server/watch.h"
#include "store/store.h"

static double
wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct hooks {
	watch_hub *hub;
	verifier *ver;
} hooks;

/* After each commit: wake the watchers and the verification controller. */
static void
committed(void *arg, uint64_t rv)
{
	hooks *h = arg;

	watch_hub_notify(h->hub, rv);
	if (h->ver != NULL)
		verifier_notify(h->ver);
}

static void
usage(FILE *out)
{
	fprintf(out, "usage: kernelindexd [--config FILE] [--check] "
	    "[--OPTION VALUE]...\n\n"
	    "Serves the kernelindex.dev API from an embedded LMDB store.\n\n"
	    "  --config FILE          read options from FILE (name = value)\n"
	    "  --check                validate the configuration and exit\n"
	    "  --help, --version\n\noptions (also in the config file, with _ or "
	    "-):\n");
	cfg_usage(out);
}

int
main(int argc, char **argv)
{
	ki_config cfg;
	ki_limits lim;
	char err[512];
	const char *config = NULL;
	int check = 0, sig, rc = 1;
	store *st = NULL;
	store_options so;
	http_server *hs = NULL;
	watch_hub *hub = NULL;
	hooks hk = { NULL, NULL };
	server_metrics metrics;
	api_ctx api;
	router rt;
	sigset_t set;

	cfg_defaults(&cfg);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			config = argv[++i];
	}
	if (config != NULL && cfg_load(&cfg, config, err, sizeof(err)) != 0) {
		fprintf(stderr, "kernelindexd: %s\n", err);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--config") == 0) {
			i++;
		} else if (strcmp(a, "--check") == 0) {
			check = 1;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--version") == 0) {
			printf("kernelindexd %s\n", PACKAGE_VERSION);
			return 0;
		} else if (strncmp(a, "--", 2) == 0) {
			const char *eq = strchr(a, '=');
			char name[64];
			const char *value;

			if (eq != NULL) {
				snprintf(name, sizeof(name), "%.*s", (int)(eq - a - 2),
				    a + 2);
				value = eq + 1;
			} else if (i + 1 < argc) {
				snprintf(name, sizeof(name), "%s", a + 2);
				value = argv[++i];
			} else {
				fprintf(stderr, "kernelindexd: %s needs a value\n", a);
				return 2;
			}
			if (cfg_set(&cfg, name, value, err, sizeof(err)) != 0) {
				fprintf(stderr, "kernelindexd: %s\n", err);
				return 2;
			}
		} else {
			fprintf(stderr, "kernelindexd: unexpected argument \"%s\"\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (cfg_check(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "kernelindexd: %s\n", err);
		return 2;
	}
	if (check) {
		printf("configuration ok\n");
		return 0;
	}
	log_set_level(log_level_parse(cfg.log_level));

	/* Block the signals before any thread starts, so that only sigwait()
	 * below sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	memset(&so, 0, sizeof(so));
	so.map_size = cfg.map_size;
	so.history = cfg.history;
	so.nosync = !cfg.sync;
	if ((rc = store_open(&st, cfg.data_dir, &so)) != KI_OK) {
		log_error("cannot open the store in %s: %s", cfg.data_dir,
		    ki_strerror(rc));
		return 1;
	}
	cfg_limits(&cfg, &lim);
	memset(&api, 0, sizeof(api));
	api.st = st;
	api.lim = &lim;
	api.now = wall_now;
	memset(&metrics, 0, sizeof(metrics));
	if (watch_hub_create(&hub, &api) != KI_OK) {
		log_error("cannot start the watch hub");
		store_close(st);
		return 1;
	}
	hk.hub = hub;
	hk.ver = NULL;
	api.committed = committed;
	api.committed_arg = &hk;
	if (verifier_start(&hk.ver, &api, cfg.ref_program, cfg.ref_timeout) !=
	    KI_OK) {
		log_error("cannot start the verification controller");
		watch_hub_destroy(hub);
		store_close(st);
		return 1;
	}
	rt.api = &api;
	rt.static_dir = cfg.static_dir;
	rt.metrics = &metrics;
	if (http_start(&hs, &cfg, &rt, hub) != KI_OK) {
		log_error("cannot listen on %s", cfg.listen);
		verifier_stop(hk.ver);
		watch_hub_destroy(hub);
		store_close(st);
		return 1;
	}
	log_info("kernelindexd %s listening on %s (port %u), store %s%s",
	    PACKAGE_VERSION, cfg.listen, http_port(hs), cfg.data_dir,
	    cfg.sync ? "" : " (sync off: a crash can lose acknowledged writes)");
	log_info("no tokens are configured: writes are accepted from loopback "
	    "clients only");
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP)
			continue;
		break;
	}
	log_info("signal %d: stopping", sig);
	http_stop(hs);
	verifier_stop(hk.ver);
	watch_hub_destroy(hub);
	store_close(st);
	log_info("stopped cleanly");
	return 0;
}
