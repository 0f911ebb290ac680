/* server/config.c — the option table and its parsers. */
#include "server/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "lib/log.h"

#ifndef KI_STATIC_DIR
#define KI_STATIC_DIR "static"
#endif
#ifndef KI_REF_PROGRAM
#define KI_REF_PROGRAM "kernelindex-ref"
#endif

enum opt_type { T_STRING, T_INT, T_SIZE, T_BOOL, T_LEVEL };

typedef struct opt {
	const char *name;
	int type;
	size_t off;
	size_t size;          /* strings: buffer size */
	const char *def;
	uint64_t min, max;    /* numbers */
	const char *doc;
} opt;

#define F(m) offsetof(ki_config, m)
static const opt opts[] = {
	{ "listen", T_STRING, F(listen), sizeof(((ki_config *)0)->listen),
	  "127.0.0.1:8080", 0, 0, "address:port to listen on ([::1]:8080 for "
	  "IPv6)" },
	{ "store", T_STRING, F(store), sizeof(((ki_config *)0)->store),
	  "lmdb", 0, 0, "the store backend: lmdb (in data-dir) or etcd (in "
	  "the cluster at etcd-endpoints, shared by several daemons)" },
	{ "etcd-endpoints", T_STRING, F(etcd_endpoints),
	  sizeof(((ki_config *)0)->etcd_endpoints), "", 0, 0,
	  "etcd client URLs, comma-separated (store etcd only)" },
	{ "etcd-prefix", T_STRING, F(etcd_prefix),
	  sizeof(((ki_config *)0)->etcd_prefix), "/kernelindex/", 0, 0,
	  "the prefix of every key the store writes in etcd" },
	{ "etcd-cacert", T_STRING, F(etcd_cacert),
	  sizeof(((ki_config *)0)->etcd_cacert), "", 0, 0,
	  "PEM CA bundle that signs the etcd members' certificates (https "
	  "endpoints)" },
	{ "etcd-cert", T_STRING, F(etcd_cert),
	  sizeof(((ki_config *)0)->etcd_cert), "", 0, 0,
	  "PEM client certificate for etcd's --client-cert-auth (with "
	  "etcd-key)" },
	{ "etcd-key", T_STRING, F(etcd_key), sizeof(((ki_config *)0)->etcd_key),
	  "", 0, 0, "PEM private key of etcd-cert" },
	{ "etcd-user", T_STRING, F(etcd_user),
	  sizeof(((ki_config *)0)->etcd_user), "", 0, 0,
	  "etcd user when etcd's authentication is on (with "
	  "etcd-password-file)" },
	{ "etcd-password-file", T_STRING, F(etcd_password_file),
	  sizeof(((ki_config *)0)->etcd_password_file), "", 0, 0,
	  "file whose first line is etcd-user's password" },
	{ "etcd-cache", T_BOOL, F(etcd_cache), 0, "true", 0, 1,
	  "serve reads from a copy of the store kept by etcd's watch (false: "
	  "every read asks etcd; store etcd only)" },
	{ "data-dir", T_STRING, F(data_dir), sizeof(((ki_config *)0)->data_dir),
	  "./data", 0, 0, "directory of the LMDB store" },
	{ "static-dir", T_STRING, F(static_dir),
	  sizeof(((ki_config *)0)->static_dir), KI_STATIC_DIR, 0, 0,
	  "directory of the web page's files" },
	{ "log-level", T_LEVEL, F(log_level), sizeof(((ki_config *)0)->log_level),
	  "info", 0, 0, "debug, info, warn or error" },
	{ "threads", T_INT, F(threads), 0, "0", 0, 256,
	  "HTTP worker threads (0: one per CPU; etcd: 4 per CPU, >= 16)" },
	{ "map-size", T_SIZE, F(map_size), 0, "1G", 1u << 20,
	  (uint64_t)1 << 44, "initial LMDB map size (address space, not disk)" },
	{ "map-max", T_SIZE, F(map_max), 0, "256G", 1u << 20,
	  (uint64_t)1 << 44, "the map doubles when 3/4 full, up to this; "
	  "beyond it writes get 507" },
	{ "history", T_SIZE, F(history), 0, "100000", 100, 100000000,
	  "events kept for watch resumption" },
	{ "sync", T_BOOL, F(sync), 0, "true", 0, 1,
	  "sync every commit to disk before answering (false loses "
	  "acknowledged writes on a crash: benchmarks only)" },
	{ "max-body", T_SIZE, F(max_body), 0, "8M", 1024, 1u << 30,
	  "largest JSON request body" },
	{ "max-bulk-body", T_SIZE, F(max_bulk_body), 0, "256M", 1024,
	  (uint64_t)1 << 34, "largest body read whole: a List, or NDJSON sent "
	  "with atomic=true or dryRun" },
	{ "max-stream-body", T_SIZE, F(max_stream_body), 0, "64G", 1024,
	  (uint64_t)1 << 50, "largest NDJSON body read as it arrives (memory "
	  "does not grow with it)" },
	{ "max-depth", T_INT, F(max_depth), 0, "32", 4, 1000,
	  "deepest JSON nesting" },
	{ "max-items", T_SIZE, F(max_items), 0, "10000", 1, 10000000,
	  "documents in one bulk upload" },
	{ "max-page", T_SIZE, F(max_page), 0, "1000", 1, 100000,
	  "largest list page" },
	{ "max-connections", T_INT, F(max_connections), 0, "1024", 1, 100000,
	  "concurrent connections" },
	{ "max-per-ip", T_INT, F(max_per_ip), 0, "256", 0, 100000,
	  "concurrent connections from one address (0: no limit)" },
	{ "connection-timeout", T_INT, F(connection_timeout), 0, "60", 1, 86400,
	  "seconds an idle connection is kept" },
	{ "request-timeout", T_INT, F(request_timeout), 0, "0", 0, 86400,
	  "seconds a request's line, headers and body may take to arrive, "
	  "however steadily they trickle in; a body gets one more second per "
	  "64 KiB (0: the connection-timeout)" },
	{ "accept-chunked-bodies", T_BOOL, F(accept_chunked_bodies), 0, "true",
	  0, 1, "take request bodies sent with Transfer-Encoding: chunked "
	  "(false: 411, send Content-Length; for a front proxy that passes "
	  "chunked bodies on without re-framing them)" },
	{ "tls-cert", T_STRING, F(tls_cert), sizeof(((ki_config *)0)->tls_cert),
	  "", 0, 0, "PEM certificate (chain): serve HTTPS (with tls-key)" },
	{ "tls-key", T_STRING, F(tls_key), sizeof(((ki_config *)0)->tls_key),
	  "", 0, 0, "PEM private key of tls-cert" },
	{ "anonymous-reads", T_BOOL, F(anonymous_reads), 0, "true", 0, 1,
	  "reads need no token (false: every read needs a reader token)" },
	{ "ref-program", T_STRING, F(ref_program),
	  sizeof(((ki_config *)0)->ref_program), KI_REF_PROGRAM, 0, 0,
	  "the reference-kernel program verifications run" },
	{ "ref-timeout", T_INT, F(ref_timeout), 0, "600", 1, 86400,
	  "seconds a reference measurement may take" },
	{ "verifier-simulated-devices", T_INT, F(verifier_simulated_devices), 0,
	  "0", 0, 64, "verifications run on this many simulated devices (the "
	  "reference program's KI_REF_SIMULATED_DEVICES; 0: the host's GPUs)" },
};
#undef F

static const opt *
find_opt(const char *name)
{
	char norm[64];
	size_t i;

	for (i = 0; name[i] && i < sizeof(norm) - 1; i++)
		norm[i] = name[i] == '_' ? '-' : name[i];
	norm[i] = '\0';
	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		if (strcmp(opts[i].name, norm) == 0)
			return &opts[i];
	}
	return NULL;
}

static int
parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	if (!isdigit((unsigned char)*s))
		return -1;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'K': case 'k': mul = 1ull << 10; end++; break;
	case 'M': case 'm': mul = 1ull << 20; end++; break;
	case 'G': case 'g': mul = 1ull << 30; end++; break;
	case 'T': case 't': mul = 1ull << 40; end++; break;
	default: return -1;
	}
	if (*end != '\0' || (v != 0 && mul > UINT64_MAX / v))
		return -1;
	*out = v * mul;
	return 0;
}

static int
set_opt(ki_config *cfg, const opt *o, const char *value, char *err,
	size_t errlen)
{
	char *base = (char *)cfg + o->off;
	uint64_t v;

	switch (o->type) {
	case T_STRING:
		if (strlen(value) >= o->size) {
			snprintf(err, errlen, "%s: longer than %zu characters", o->name,
			    o->size - 1);
			return -1;
		}
		snprintf(base, o->size, "%s", value);
		return 0;
	case T_LEVEL:
		if (log_level_parse(value) < 0) {
			snprintf(err, errlen, "%s: \"%s\" is not debug, info, warn or "
			    "error", o->name, value);
			return -1;
		}
		snprintf(base, o->size, "%s", value);
		return 0;
	case T_BOOL:
		if (strcmp(value, "true") == 0 || strcmp(value, "yes") == 0 ||
		    strcmp(value, "1") == 0)
			*(int *)(void *)base = 1;
		else if (strcmp(value, "false") == 0 || strcmp(value, "no") == 0 ||
		    strcmp(value, "0") == 0)
			*(int *)(void *)base = 0;
		else {
			snprintf(err, errlen, "%s: \"%s\" is not true or false",
			    o->name, value);
			return -1;
		}
		return 0;
	case T_INT:
	case T_SIZE:
		if (parse_size(value, &v) != 0 || v < o->min || v > o->max) {
			snprintf(err, errlen, "%s: \"%s\" is not a number from %llu to "
			    "%llu%s", o->name, value, (unsigned long long)o->min,
			    (unsigned long long)o->max,
			    o->type == T_SIZE ? " (K, M, G, T suffixes allowed)" : "");
			return -1;
		}
		if (o->type == T_INT)
			*(int *)(void *)base = (int)v;
		else
			*(uint64_t *)(void *)base = v;
		return 0;
	default:
		return -1;
	}
}

void
cfg_defaults(ki_config *cfg)
{
	char err[256];

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		if (set_opt(cfg, &opts[i], opts[i].def, err, sizeof(err)) != 0)
			abort(); /* a default outside its own bounds */
	}
}

int
cfg_set(ki_config *cfg, const char *name, const char *value, char *err,
	size_t errlen)
{
	const opt *o = find_opt(name);

	if (o == NULL) {
		snprintf(err, errlen, "unknown option \"%s\"", name);
		return -1;
	}
	return set_opt(cfg, o, value, err, errlen);
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int
cfg_load(ki_config *cfg, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[2048], msg[512];
	int lineno = 0, rc = 0;

	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		char *s, *eq, *name, *value;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			rc = -1;
			break;
		}
		if ((s = strchr(line, '#')) != NULL)
			*s = '\0';
		s = trim(line);
		if (*s == '\0')
			continue;
		if ((eq = strchr(s, '=')) == NULL) {
			snprintf(err, errlen, "%s:%d: expected \"name = value\"", path,
			    lineno);
			rc = -1;
			break;
		}
		*eq = '\0';
		name = trim(s);
		value = trim(eq + 1);
		if (value[0] == '"' && strlen(value) >= 2 &&
		    value[strlen(value) - 1] == '"') {
			value[strlen(value) - 1] = '\0';
			value++;
		}
		if (cfg_set(cfg, name, value, msg, sizeof(msg)) != 0) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
			rc = -1;
			break;
		}
	}
	fclose(f);
	return rc;
}

int
cfg_check(const ki_config *cfg, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	char host[256];
	const char *colon;
	char *end;
	long port;

	colon = strrchr(cfg->listen, ':');
	if (colon == NULL || colon == cfg->listen) {
		snprintf(err, errlen, "listen: \"%s\" is not ADDRESS:PORT",
		    cfg->listen);
		return -1;
	}
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 0 || port > 65535 || colon[1] == '\0') {
		snprintf(err, errlen, "listen: \"%s\" has no valid port",
		    cfg->listen);
		return -1;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - cfg->listen),
	    cfg->listen);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
		if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&ss)->sin6_addr) != 1) {
			snprintf(err, errlen, "listen: \"%s\" is not an IPv6 address",
			    host);
			return -1;
		}
	} else if (inet_pton(AF_INET, host,
	    &((struct sockaddr_in *)&ss)->sin_addr) != 1) {
		snprintf(err, errlen, "listen: \"%s\" is not an IPv4 address "
		    "(write IPv6 as [::1]:8080)", host);
		return -1;
	}
	if (strcmp(cfg->store, "lmdb") != 0 && strcmp(cfg->store, "etcd") != 0) {
		snprintf(err, errlen, "store: \"%s\" is not a store backend "
		    "(lmdb or etcd)", cfg->store);
		return -1;
	}
	if (strcmp(cfg->store, "etcd") == 0 && cfg->etcd_endpoints[0] == '\0') {
		snprintf(err, errlen, "etcd-endpoints: store etcd needs the "
		    "cluster's client URLs");
		return -1;
	}
	if (strcmp(cfg->store, "etcd") != 0 && (cfg->etcd_endpoints[0] != '\0' ||
	    cfg->etcd_cacert[0] != '\0' || cfg->etcd_cert[0] != '\0' ||
	    cfg->etcd_key[0] != '\0' || cfg->etcd_user[0] != '\0' ||
	    cfg->etcd_password_file[0] != '\0')) {
		snprintf(err, errlen, "etcd-endpoints: only with store etcd "
		    "(the store is %s)", cfg->store);
		return -1;
	}
	for (const char *p = cfg->etcd_endpoints; *cfg->etcd_endpoints != '\0';) {
		const char *comma = strchr(p, ',');
		size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);

		if (!(n > 7 && strncmp(p, "http://", 7) == 0) &&
		    !(n > 8 && strncmp(p, "https://", 8) == 0)) {
			snprintf(err, errlen, "etcd-endpoints: \"%.*s\" is not an "
			    "http:// or https:// URL", (int)n, p);
			return -1;
		}
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	if ((cfg->etcd_cert[0] == '\0') != (cfg->etcd_key[0] == '\0')) {
		snprintf(err, errlen, "etcd-cert and etcd-key go together");
		return -1;
	}
	if ((cfg->etcd_user[0] == '\0') != (cfg->etcd_password_file[0] == '\0')) {
		snprintf(err, errlen, "etcd-user and etcd-password-file go together");
		return -1;
	}
	if (strcmp(cfg->store, "etcd") == 0 && cfg->etcd_prefix[0] == '\0') {
		snprintf(err, errlen, "etcd-prefix: must not be empty");
		return -1;
	}
	if (cfg->data_dir[0] == '\0') {
		snprintf(err, errlen, "data-dir: must not be empty");
		return -1;
	}
	if ((cfg->tls_cert[0] == '\0') != (cfg->tls_key[0] == '\0')) {
		snprintf(err, errlen, "tls-cert and tls-key go together");
		return -1;
	}
	if (cfg->map_max < cfg->map_size) {
		snprintf(err, errlen, "map-max must not be below map-size");
		return -1;
	}
	if (cfg->max_body > cfg->max_bulk_body) {
		snprintf(err, errlen, "max-body must not exceed max-bulk-body");
		return -1;
	}
	return 0;
}

void
cfg_usage(FILE *out)
{
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		fprintf(out, "  --%-20s %s (default %s)\n", opts[i].name, opts[i].doc,
		    opts[i].def);
}

void
cfg_limits(const ki_config *cfg, ki_limits *lim)
{
	lim->max_body = (size_t)cfg->max_body;
	lim->max_bulk_body = (size_t)cfg->max_bulk_body;
	lim->max_stream_body = cfg->max_stream_body;
	lim->max_depth = cfg->max_depth;
	lim->max_items = (size_t)cfg->max_items;
	lim->max_page = (size_t)cfg->max_page;
}
