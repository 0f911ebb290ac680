/* server/main.c — kernelindexd: reads the configuration, opens the store,
 * serves HTTP until SIGTERM or SIGINT. Wiring only; the work is in the
 * library. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/admin.h"
#include "api/auth.h"
#include "api/labels.h"
#include "api/service.h"
#include <openssl/crypto.h>
#include "lib/log.h"
#include "server/config.h"
#include "server/http.h"
#include "server/router.h"
#include "api/verifier.h"
#include "server/watch.h"
#ifdef KI_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#ifndef KI_STATIC_DIR
#define KI_STATIC_DIR "static"
#endif

/* Whether dir holds the page (its index.html). */
static int
static_has_page(const char *dir)
{
	char path[1200];

	if ((size_t)snprintf(path, sizeof(path), "%s/index.html", dir) >=
	    sizeof(path))
		return 0;
	return access(path, R_OK) == 0;
}

/* Finds the web page's files. A --static-dir that holds index.html is kept.
 * Where none was named (the installed default), the page is looked for
 * beside the executable (a build tree: BUILD/static, or the source tree's
 * static/ two folders up from build/asan) and in the source tree the build
 * was configured from. The outcome, and every place looked at, is logged;
 * dir (size n) is rewritten to the folder found. Returns 1 when found. */
static int
static_dir_find(char *dir, size_t n)
{
	char exe[1024], tried[4096], cand[1200];
	const char *rel[] = { "static", "../static", "../../static",
	    "../share/kernelindex/static" };
	size_t used = 0;
	ssize_t len;
	int found = 0;

	tried[0] = '\0';
	if (static_has_page(dir)) {
		log_info("web page served from %s", dir);
		return 1;
	}
	used += (size_t)snprintf(tried + used, sizeof(tried) - used, "%s", dir);
	if (strcmp(dir, KI_STATIC_DIR) == 0) {
		len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (len > 0) {
			char *slash;

			exe[len] = '\0';
			slash = strrchr(exe, '/');
			if (slash != NULL)
				*slash = '\0';
			for (size_t i = 0; !found && len > 0 &&
			    i < sizeof(rel) / sizeof(rel[0]); i++) {
				if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", exe,
				    rel[i]) >= sizeof(cand))
					continue;
				if (static_has_page(cand))
					found = 1;
				else if (used < sizeof(tried))
					used += (size_t)snprintf(tried + used,
					    sizeof(tried) - used, ", %s", cand);
			}
		}
#ifdef KI_SOURCE_DIR
		if (!found && (size_t)snprintf(cand, sizeof(cand), "%s/static",
		    KI_SOURCE_DIR) < sizeof(cand)) {
			if (static_has_page(cand))
				found = 1;
			else if (used < sizeof(tried))
				used += (size_t)snprintf(tried + used,
				    sizeof(tried) - used, ", %s", cand);
		}
#endif
	}
	if (found && strlen(cand) < n) {
		log_info("web page served from %s (no index.html in %s)", cand,
		    dir);
		memcpy(dir, cand, strlen(cand) + 1);
		return 1;
	}
	log_warn("the web page was not found (looked for index.html in %s): "
	    "the API is served, GET / answers 404; point the daemon at the "
	    "page's folder with --static-dir", tried);
	return 0;
}

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

/* Tells the service manager the daemon's state (a systemd Type=notify
 * unit): "READY=1" once it serves, "STOPPING=1" when it begins to stop.
 * Without NOTIFY_SOCKET in the environment it does nothing. */
static void
notify(const char *state)
{
#ifdef KI_HAVE_SYSTEMD
	int rc = sd_notify(0, state);

	if (rc < 0)
		log_warn("cannot notify the service manager (%s): %s", state,
		    strerror(-rc));
#else
	(void)state;
#endif
}

/* After each commit: wake the watchers and the verification controller. */
static void
committed(void *arg, uint64_t rv)
{
	hooks *h = arg;

	watch_hub_notify(h->hub, rv);
	if (h->ver != NULL)
		verifier_notify(h->ver);
}

/* Where the store is, for messages: its directory or etcd's endpoints. */
static const char *
store_where(const ki_config *cfg)
{
	return strcmp(cfg->store, "etcd") == 0 ? cfg->etcd_endpoints :
	    cfg->data_dir;
}

/* Opens the store the configuration names (api_store_open). */
static int
open_store(const ki_config *cfg, int shared, int nosync, store **st)
{
	api_store_cfg c = {
		.backend = cfg->store, .dir = cfg->data_dir,
		.map_size = cfg->map_size, .map_max = cfg->map_max,
		.history = cfg->history,
		.etcd_endpoints = cfg->etcd_endpoints,
		.etcd_prefix = cfg->etcd_prefix, .etcd_cacert = cfg->etcd_cacert,
		.etcd_cert = cfg->etcd_cert, .etcd_key = cfg->etcd_key,
		.etcd_user = cfg->etcd_user,
		.etcd_password_file = cfg->etcd_password_file,
		.etcd_nocache = !cfg->etcd_cache,
	};

	return api_store_open(st, &c, shared, nosync);
}

/* kernelindexd [options] token create|list|revoke …: manages tokens in the
 * store of --data-dir, while the daemon runs or not. */
static int
token_command(const ki_config *cfg, int argc, char **argv)
{
	const char *role = NULL, *source = NULL, *prefix = NULL, *desc = NULL;
	store *st = NULL;
	int rc;

	if (argc < 1) {
		fprintf(stderr, "usage: kernelindexd [--data-dir DIR] token create "
		    "--role reader|writer|admin [--source S] [--prefix P] "
		    "[--description D] | token list | token revoke ID\n");
		return 2;
	}
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--role") == 0)
			role = argv[i + 1];
		else if (strcmp(argv[i], "--source") == 0)
			source = argv[i + 1];
		else if (strcmp(argv[i], "--prefix") == 0)
			prefix = argv[i + 1];
		else if (strcmp(argv[i], "--description") == 0)
			desc = argv[i + 1];
		else if (strcmp(argv[0], "revoke") != 0) {
			fprintf(stderr, "kernelindexd token: unknown option %s\n",
			    argv[i]);
			return 2;
		}
	}
	if (strcmp(argv[0], "create") == 0 && argc % 2 == 0) {
		/* "--source" last, without its value, would make a token
		 * limited to nothing. */
		fprintf(stderr, "kernelindexd token create: %s needs a value\n",
		    argv[argc - 1]);
		return 2;
	}
	if ((source != NULL && *source == '\0') ||
	    (prefix != NULL && *prefix == '\0')) {
		fprintf(stderr, "kernelindexd token create: --%s must not be "
		    "empty (leave it out for a token without that limit)\n",
		    source != NULL && *source == '\0' ? "source" : "prefix");
		return 2;
	}
	if ((rc = open_store(cfg, 1, 0, &st)) != KI_OK) {
		fprintf(stderr, "kernelindexd: cannot open the store in %s: %s\n",
		    store_where(cfg), ki_strerror(rc));
		return 1;
	}
	if (strcmp(argv[0], "create") == 0) {
		char secret[64], id[16];

		const char *why = api_token_limits_bad(source, prefix);

		if (api_role_parse(role) == API_ROLE_NONE) {
			fprintf(stderr, "kernelindexd token create: --role must be "
			    "reader, writer or admin\n");
			rc = KI_EINVAL;
		} else if (why != NULL) {
			fprintf(stderr, "kernelindexd token create: %s\n", why);
			rc = KI_EINVAL;
		} else {
			rc = api_token_create(st, api_role_parse(role), source, prefix,
			    desc, wall_now(), secret, id);
		}
		if (rc == KI_OK) {
			/* The only time the secret is shown. */
			printf("%s\n", secret);
			fprintf(stderr, "token %s (%s%s%s%s%s) created; it is shown "
			    "once\n", id, role, source ? ", source " : "",
			    source ? source : "", prefix ? ", prefix " : "",
			    prefix ? prefix : "");
			OPENSSL_cleanse(secret, sizeof(secret));
		}
	} else if (strcmp(argv[0], "list") == 0) {
		ki_buf b;

		ki_buf_init(&b);
		rc = api_token_list(st, &b);
		if (rc == KI_OK)
			printf("%s\n", b.data);
		ki_buf_free(&b);
	} else if (strcmp(argv[0], "revoke") == 0 && argc == 2) {
		rc = api_token_revoke(st, argv[1]);
		if (rc == KI_OK)
			fprintf(stderr, "token %s revoked\n", argv[1]);
	} else {
		fprintf(stderr, "kernelindexd token: create, list or revoke ID\n");
		api_store_close(st);
		return 2;
	}
	api_store_close(st);
	if (rc != KI_OK && rc != KI_EINVAL)
		fprintf(stderr, "kernelindexd token: %s\n", ki_strerror(rc));
	return rc == KI_OK ? 0 : 1;
}

/* kernelindexd [--data-dir DIR] backup FILE: a consistent compacted copy
 * of the store, taken while a daemon may be writing. Restore: stop the
 * daemon, put FILE as DIR/data.mdb (remove DIR/lock.mdb), start it. */
static int
backup_command(const ki_config *cfg, int argc, char **argv)
{
	store *st = NULL;
	long long bytes;
	int rc, err;

	if (argc != 1) {
		fprintf(stderr, "usage: kernelindexd [--data-dir DIR] backup FILE\n");
		return 2;
	}
	if ((rc = open_store(cfg, 1, 0, &st)) != KI_OK) {
		fprintf(stderr, "kernelindexd: cannot open the store in %s: %s\n",
		    store_where(cfg), ki_strerror(rc));
		return 1;
	}
	rc = api_backup_file(st, argv[0], &bytes, &err);
	api_store_close(st);
	if (err != 0) {
		fprintf(stderr, "kernelindexd backup: %s: %s\n", argv[0],
		    strerror(err));
		return 1;
	}
	if (rc != KI_OK) {
		fprintf(stderr, "kernelindexd backup: %s\n", ki_strerror(rc));
		return 1;
	}
	fprintf(stderr, "backup of %s written to %s\n", cfg->data_dir, argv[0]);
	return 0;
}

/* kernelindexd [--data-dir DIR] fsck [--repair]: checks every stored
 * object and the indexes that find it; exit status 0 when all is well, 1
 * when something is damaged (or cannot be read), 2 on a usage error. */
static int
fsck_command(const ki_config *cfg, int argc, char **argv)
{
	store_verify_stats vs;
	store *st = NULL;
	int repair = argc == 1 && strcmp(argv[0], "--repair") == 0, rc;

	if (argc > 1 || (argc == 1 && !repair)) {
		fprintf(stderr, "usage: kernelindexd [--data-dir DIR] fsck "
		    "[--repair]\n");
		return 2;
	}
	if ((rc = open_store(cfg, !repair, 0, &st)) != KI_OK) {
		fprintf(stderr, "kernelindexd fsck: cannot open the store in %s: "
		    "%s%s\n", store_where(cfg), ki_strerror(rc), rc == KI_EBUSY ?
		    " (--repair needs the daemon stopped)" : "");
		return 1;
	}
	rc = api_fsck(st, repair, stdout, &vs);
	api_store_close(st);
	if (rc != KI_OK) {
		fprintf(stderr, "kernelindexd fsck: %s: the check stopped after "
		    "%llu objects: %s\n", cfg->data_dir,
		    (unsigned long long)vs.objects, ki_strerror(rc));
		return 1;
	}
	printf("%s: %llu objects checked, %llu problems, %llu digest index "
	    "entries repaired\n", cfg->data_dir,
	    (unsigned long long)vs.objects, (unsigned long long)vs.problems,
	    (unsigned long long)vs.repaired);
	return vs.problems > 0 ? 1 : 0;
}

/* Where SPEC ("lmdb:DIR" or "etcd:ENDPOINTS") names a store: the
 * configuration's settings (map size, history, etcd prefix, TLS, user)
 * with SPEC's backend and place. 0, or -1 for a malformed SPEC. */
static int
migrate_spec(const ki_config *cfg, const char *spec, api_store_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->map_size = cfg->map_size;
	c->map_max = cfg->map_max;
	c->history = cfg->history;
	c->etcd_prefix = cfg->etcd_prefix;
	c->etcd_cacert = cfg->etcd_cacert;
	c->etcd_cert = cfg->etcd_cert;
	c->etcd_key = cfg->etcd_key;
	c->etcd_user = cfg->etcd_user;
	c->etcd_password_file = cfg->etcd_password_file;
	/* One pass over each store: no copy kept of either. */
	c->etcd_nocache = 1;
	if (strncmp(spec, "lmdb:", 5) == 0 && spec[5] != '\0') {
		c->backend = "lmdb";
		c->dir = spec + 5;
		return 0;
	}
	if (strncmp(spec, "etcd:", 5) == 0 && (strncmp(spec + 5, "http://", 7)
	    == 0 || strncmp(spec + 5, "https://", 8) == 0)) {
		c->backend = "etcd";
		c->etcd_endpoints = spec + 5;
		return 0;
	}
	return -1;
}

/* kernelindexd [OPTIONS] migrate --from SPEC --to SPEC [--batch N]:
 * copies every object, event and token of one store into another, empty
 * one (api_migrate), and prints what each side holds. Exit status 0 when
 * both sides compare equal, 1 on a failure, 2 on a usage error. */
static int
migrate_command(const ki_config *cfg, int argc, char **argv)
{
	const char *from = NULL, *to = NULL;
	api_store_cfg cf, ct;
	api_migrate_stats ms;
	store *src = NULL, *dst = NULL;
	char err[512];
	long batch = 0;
	int rc, status = 1;

	for (int i = 0; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--from") == 0)
			from = argv[i + 1];
		else if (strcmp(argv[i], "--to") == 0)
			to = argv[i + 1];
		else if (strcmp(argv[i], "--batch") == 0)
			batch = strtol(argv[i + 1], NULL, 10);
		else
			from = NULL;
	}
	if (argc % 2 != 0 || from == NULL || to == NULL || batch < 0 ||
	    migrate_spec(cfg, from, &cf) != 0 ||
	    migrate_spec(cfg, to, &ct) != 0) {
		fprintf(stderr, "usage: kernelindexd [OPTIONS] migrate --from "
		    "lmdb:DIR|etcd:URL[,URL...] --to lmdb:DIR|etcd:URL[,URL...] "
		    "[--batch N]\n");
		return 2;
	}
	if ((rc = api_store_open(&src, &cf, 1, 0)) != KI_OK) {
		fprintf(stderr, "kernelindexd migrate: cannot open the source %s: "
		    "%s\n", from, ki_strerror(rc));
		return 1;
	}
	if ((rc = api_store_open(&dst, &ct, 0, 0)) != KI_OK) {
		fprintf(stderr, "kernelindexd migrate: cannot open the "
		    "destination %s: %s\n", to, ki_strerror(rc));
		goto out;
	}
	rc = api_migrate(src, dst, (size_t)batch, stdout, &ms, err,
	    sizeof(err));
	if (rc != KI_OK) {
		fprintf(stderr, "kernelindexd migrate: %s: %s\n", err,
		    ki_strerror(rc));
		goto out;
	}
	printf("migrated %s to %s: %llu events replayed (%llu puts, %llu "
	    "deletes), %llu objects, %llu tokens, resourceVersion %llu\n",
	    from, to, (unsigned long long)ms.events,
	    (unsigned long long)ms.puts, (unsigned long long)ms.deletes,
	    (unsigned long long)ms.objects, (unsigned long long)ms.tokens,
	    (unsigned long long)ms.rv);
	status = 0;
out:
	api_store_close(dst);
	api_store_close(src);
	return status;
}

static void
usage(FILE *out)
{
	fprintf(out, "usage: kernelindexd [--config FILE] [--check] "
	    "[--OPTION VALUE]...\n"
	    "       kernelindexd [OPTIONS] token create|list|revoke ...\n"
	    "       kernelindexd [OPTIONS] backup FILE\n"
	    "       kernelindexd [OPTIONS] fsck [--repair]\n"
	    "       kernelindexd [OPTIONS] migrate --from lmdb:DIR|etcd:URLS "
	    "--to lmdb:DIR|etcd:URLS\n\n"
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
	int check = 0, sig, rc = 1, sub = 0, sub_argc = 0;
	char **sub_argv = NULL;
	store *st = NULL;
	http_server *hs = NULL;
	watch_hub *hub = NULL;
	hooks hk = { NULL, NULL };
	api_committer *committer = NULL;
	server_metrics metrics;
	api_ctx api;
	router rt;
	sigset_t set;

	cfg_defaults(&cfg);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			config = argv[++i];
		else if (strcmp(argv[i], "token") == 0 ||
		    strcmp(argv[i], "backup") == 0 ||
		    strcmp(argv[i], "fsck") == 0 ||
		    strcmp(argv[i], "migrate") == 0) {
			/* Options before "token" are the daemon's; the rest is the
			 * subcommand's. */
			sub = i;
			break;
		} else if (strncmp(argv[i], "--", 2) == 0 && i + 1 < argc &&
		    strchr(argv[i], '=') == NULL && strcmp(argv[i], "--check") != 0 &&
		    strcmp(argv[i], "--help") != 0 && strcmp(argv[i], "--version") != 0)
			i++;
	}
	if (sub > 0) {
		sub_argc = argc - sub - 1;
		sub_argv = argv + sub + 1;
		argc = sub;
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
	if (sub > 0 && strcmp(argv[sub], "backup") == 0)
		return backup_command(&cfg, sub_argc, sub_argv);
	if (sub > 0 && strcmp(argv[sub], "fsck") == 0)
		return fsck_command(&cfg, sub_argc, sub_argv);
	if (sub > 0 && strcmp(argv[sub], "migrate") == 0)
		return migrate_command(&cfg, sub_argc, sub_argv);
	if (sub > 0)
		return token_command(&cfg, sub_argc, sub_argv);
	log_set_level(log_level_parse(cfg.log_level));
#ifndef KI_HAVE_SYSTEMD
	if (getenv("NOTIFY_SOCKET") != NULL)
		log_warn("NOTIFY_SOCKET is set, but this build cannot notify the "
		    "service manager (configure --with-systemd): a Type=notify "
		    "unit will time out");
#endif

	/* Block the signals before any thread starts, so that only sigwait()
	 * below sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if ((rc = open_store(&cfg, 0, !cfg.sync, &st)) != KI_OK) {
		log_error("cannot open the store in %s: %s", store_where(&cfg),
		    ki_strerror(rc));
		return 1;
	}
	cfg_limits(&cfg, &lim);
	memset(&api, 0, sizeof(api));
	api.st = st;
	api.lim = &lim;
	api.now = wall_now;
	memset(&metrics, 0, sizeof(metrics));
	if (watch_hub_create(&hub, &api, cfg.history) != KI_OK) {
		log_error("cannot start the watch hub");
		api_store_close(st);
		return 1;
	}
	hk.hub = hub;
	hk.ver = NULL;
	api.committed = committed;
	api.committed_arg = &hk;
	api.spill_dir = cfg.data_dir;
	if (verifier_start(&hk.ver, &api, cfg.ref_program, cfg.ref_timeout,
	    cfg.verifier_simulated_devices) !=
	    KI_OK) {
		log_error("cannot start the verification controller");
		watch_hub_destroy(hub);
		api_store_close(st);
		return 1;
	}
	api.more_metrics = verifier_metrics;
	api.more_metrics_arg = hk.ver;
	if (api_committer_start(&committer, st, 256, committed, &hk) != KI_OK) {
		log_error("cannot start the committer");
		verifier_stop(hk.ver);
		watch_hub_destroy(hub);
		api_store_close(st);
		return 1;
	}
	api.committer = committer;
	/* Other daemons over the same etcd commit too: their writes wake this
	 * one's watchers as its own do. */
	if (api_store_follow(st, committed, &hk) != KI_OK) {
		log_error("cannot follow the store's commits");
		api_committer_stop(committer);
		verifier_stop(hk.ver);
		watch_hub_destroy(hub);
		api_store_close(st);
		return 1;
	}
	rt.api = &api;
	static_dir_find(cfg.static_dir, sizeof(cfg.static_dir));
	rt.static_dir = cfg.static_dir;
	rt.metrics = &metrics;
	rt.anonymous_reads = cfg.anonymous_reads;
	if (http_start(&hs, &cfg, &rt, hub) != KI_OK) {
		log_error("cannot listen on %s", cfg.listen);
		api_store_unfollow(st);
		api_committer_stop(committer);
		verifier_stop(hk.ver);
		watch_hub_destroy(hub);
		api_store_close(st);
		return 1;
	}
	log_info("kernelindexd %s listening on %s (port %u), store %s %s%s",
	    PACKAGE_VERSION, cfg.listen, http_port(hs), cfg.store,
	    store_where(&cfg),
	    cfg.sync ? "" : " (sync off: a crash can lose acknowledged writes)");
	{
		uint64_t ntok = 0;

		api_token_count(st, &ntok);
		if (ntok == 0)
			log_info("no tokens are configured: writes are accepted from "
			    "loopback clients only");
		else
			log_info("%llu token(s) configured: every write needs one; "
			    "reads %s", (unsigned long long)ntok, cfg.anonymous_reads ?
			    "are open" : "need a reader token");
	}
	notify("READY=1");
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP)
			continue;
		break;
	}
	log_info("signal %d: stopping", sig);
	notify("STOPPING=1");
	http_stop(hs);
	api_store_unfollow(st);
	api_committer_stop(committer);
	verifier_stop(hk.ver);
	watch_hub_destroy(hub);
	api_store_close(st);
	log_info("stopped cleanly");
	return 0;
}
