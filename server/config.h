/* server/config.h — the daemon's configuration: one table of options
 * (name, type, default, bounds) fills this struct from defaults, a config
 * file and command-line flags, in that order. */
#ifndef SERVER_CONFIG_H
#define SERVER_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/limits.h"

typedef struct ki_config {
	char listen[256];
	char store[16];             /* the backend: "lmdb" or "etcd" */
	char etcd_endpoints[1024];  /* store etcd: client URLs, comma-separated */
	char etcd_prefix[256];      /* store etcd: the keys' prefix */
	char etcd_cacert[1024];     /* store etcd: TLS CA bundle */
	char etcd_cert[1024];       /* store etcd: TLS client certificate */
	char etcd_key[1024];        /* store etcd: its private key */
	char etcd_user[128];        /* store etcd: etcd user (--auth) */
	char etcd_password_file[1024]; /* store etcd: file of its password */
	int etcd_cache;             /* store etcd: the watch cache serves reads */
	char data_dir[1024];
	char static_dir[1024];
	char log_level[16];
	int threads;
	uint64_t map_size;
	uint64_t map_max;
	uint64_t history;
	int sync;
	uint64_t max_body;
	uint64_t max_bulk_body;
	uint64_t max_stream_body;
	int max_depth;
	uint64_t max_items;
	uint64_t max_page;
	int max_connections;
	int max_per_ip;
	int connection_timeout;
	int request_timeout;        /* 0: connection_timeout */
	int accept_chunked_bodies;  /* 0: a chunked request body is 411 */
	int anonymous_reads;
	char tls_cert[1024];
	char tls_key[1024];
	char ref_program[1024];
	int ref_timeout;
	int verifier_simulated_devices;   /* 0: the host's GPUs */
} ki_config;

/* Fills cfg with the defaults. */
void cfg_defaults(ki_config *cfg);
/* Sets one option by name ("max-body" or "max_body") from text. Returns 0,
 * or -1 with a message in err. */
int cfg_set(ki_config *cfg, const char *name, const char *value, char *err,
	size_t errlen);
/* Reads "name = value" lines (# comments) from path. Returns 0, or -1 with
 * a message naming the line in err. */
int cfg_load(ki_config *cfg, const char *path, char *err, size_t errlen);
/* Checks the options together (the listen address parses, …). */
int cfg_check(const ki_config *cfg, char *err, size_t errlen);
/* Prints the options with their defaults and bounds (for --help). */
void cfg_usage(FILE *out);
/* Fills the request limits from the configuration. */
void cfg_limits(const ki_config *cfg, ki_limits *lim);

#endif
