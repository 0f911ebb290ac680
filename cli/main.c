/* cli/main.c — the kernelindex command-line client: global options, each
 * command's usage, and dispatch. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

typedef struct command {
	const char *name;
	int (*fn)(cli *c, int argc, char **argv);
	const char *usage;
} command;

static const command commands[] = {
	{ "push", cli_cmd_push,
	  "push FILE|DIR|- … [--atomic] [--batch N] [--quiet] [--verbose]\n"
	  "    Uploads JSON documents, bundles, Lists or NDJSON (one bundle a\n"
	  "    line); folders recursively (*.json, *.ndjson, *.jsonl). Every\n"
	  "    path is checked first: a missing one sends nothing. A progress\n"
	  "    bar is drawn on a terminal (not with --quiet); a summary is\n"
	  "    printed, and each object with --verbose.\n" },
	{ "get", cli_cmd_get,
	  "get KIND NAME [-o json|name]\n"
	  "    One object, by name or by digest (sha256:<hex>); -o name prints\n"
	  "    kind.kernelindex.dev/NAME.\n" },
	{ "list", cli_cmd_list,
	  "list KIND [-l SELECTOR] [--limit N] [-o table|wide|json|name]\n"
	  "    The objects of a kind (at most N with --limit). Runs show NAME,\n"
	  "    KERNEL, PASS, PROVIDER, GPU, DTYPE, SWEPT, MEDIAN, VERDICT and\n"
	  "    VERSION; other kinds the server's Table columns.\n" },
	{ "watch", cli_cmd_watch,
	  "watch KIND [-l SELECTOR] [-o json]\n"
	  "    Streams the changes to a kind.\n" },
	{ "delete", cli_cmd_delete,
	  "delete KIND NAME … | delete KIND -l SELECTOR\n"
	  "    Deletes objects by name, or those a label selector matches.\n" },
	{ "import", cli_cmd_import,
	  "import liger FILE [--batch N] [--atomic] [--quiet]\n"
	  "       [--dry-run [-o ndjson]]\n"
	  "    Converts the rows of Liger-Kernel's all_benchmark_data*.csv into\n"
	  "    bundles and uploads them; --dry-run writes them instead.\n" },
	{ "export", cli_cmd_export,
	  "export liger|csv [-l SELECTOR] [-o FILE]\n"
	  "    Writes the runs a selector matches (all without one) as CSV:\n"
	  "    liger, the Liger runs as Liger's all_benchmark_data.csv rows;\n"
	  "    csv, every run as plain CSV (one row a run, one column a\n"
	  "    field).\n" },
	{ "compare", cli_cmd_compare,
	  "compare --baseline SELECTOR --candidate SELECTOR [-l SELECTOR]\n"
	  "        [--threshold 5%] [--version-label LABEL]\n"
	  "        [--include-implausible] [--all] [-o table|markdown|json|csv]\n"
	  "    Pairs the runs of the two selectors by series (workload,\n"
	  "    provider, GPU, metric, protocol) and prints each pair's ratio\n"
	  "    candidate/baseline with its interval; -l narrows both sides.\n"
	  "    Exit status 1 when a pair changed for the worse by more than the\n"
	  "    threshold.\n" },
	{ "run", cli_cmd_run,
	  "run [--baseline SELECTOR] [--threshold PCT] [--csv FILE] [--quiet]\n"
	  "    [--label KEY=VALUE]… [--dry-run] -- COMMAND [ARG]…\n"
	  "    Runs a benchmark command, reads what it writes (rows Liger's\n"
	  "    harness appends to all_benchmark_data*.csv during the run, and\n"
	  "    lines of kernelindex result JSON on its standard output),\n"
	  "    uploads them and prints what was created, unchanged or refused.\n"
	  "    With --baseline, each new run is compared with the baseline's\n"
	  "    run of the same series (ratio of medians); a slowdown beyond\n"
	  "    --threshold percent (default 5) exits 4.\n" },
};

static const char usage_head[] =
"usage: kernelindex [--server URL] [--token TOKEN] COMMAND …\n"
"\n"
"commands (COMMAND --help for one):\n";

static const char usage_tail[] =
"\n"
"KIND: benchmarkruns (kbr), benchmarkprotocols (kbp),\n"
"  executionenvironments (kee), workloads (kwl), implementations (kimpl),\n"
"  verifications (kver), thresholds (kth); singular names and Kinds work\n"
"  too.\n"
"\n"
"The server comes from --server or KERNELINDEX_SERVER (default "
CLI_DEFAULT_SERVER "),\n"
"the token from --token or KERNELINDEX_TOKEN.\n"
"\n"
"exit status: 0 ok, 1 the server rejected something (or the input was\n"
"unusable), 2 usage, 3 the server could not be reached, 4 a regression\n"
"beyond the threshold (run --baseline).\n";

/* The usage text of a command ("push", …), or NULL for none; static. */
static const char *
cli_usage_of(const char *cmd)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, cmd) == 0)
			return commands[i].usage;
	return NULL;
}

static void
print_usage(FILE *f)
{
	size_t i;

	fputs(usage_head, f);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const char *u = commands[i].usage;
		const char *nl = strchr(u, '\n');

		fprintf(f, "  %.*s\n", nl != NULL ? (int)(nl - u) : (int)strlen(u),
		    u);
	}
	fputs(usage_tail, f);
}

static int
usage(const cli *c, const char *why)
{
	if (why != NULL)
		cli_err(c, "%s", why);
	print_usage(stderr);
	return CLI_EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	const command *cmd = NULL;
	cli c;
	char **args;
	int nargs = 0, i, rc;
	size_t k;

	memset(&c, 0, sizeof(c));
	c.prog = "kernelindex";
	c.server = getenv("KERNELINDEX_SERVER");
	if (c.server == NULL || *c.server == '\0')
		c.server = CLI_DEFAULT_SERVER;
	c.token = getenv("KERNELINDEX_TOKEN");
	c.tty = isatty(STDERR_FILENO);

	/* --server and --token may stand anywhere before a "--"; the rest
	 * stays in order. After "--" everything is the command's (run's
	 * benchmark command keeps its own options). */
	args = calloc((size_t)argc + 1, sizeof(*args));
	if (args == NULL) {
		cli_err(&c, "out of memory");
		return CLI_EXIT_REJECTED;
	}
	for (i = 1; i < argc;) {
		const char *v = NULL;
		int r;

		if (strcmp(argv[i], "--") == 0) {
			/* Before the command word, "--" only ends the options. */
			if (nargs == 0)
				i++;
			for (; i < argc; i++)
				args[nargs++] = argv[i];
			break;
		}
		if ((r = cli_take_opt(argc, argv, &i, "--server", "-s", &v)) != 0) {
			if (r < 0) {
				free(args);
				return usage(&c, "--server needs a URL");
			}
			c.server = v;
		} else if ((r = cli_take_opt(argc, argv, &i, "--token", NULL,
		    &v)) != 0) {
			if (r < 0) {
				free(args);
				return usage(&c, "--token needs a value");
			}
			c.token = v;
		} else {
			args[nargs++] = argv[i++];
		}
	}
	if (nargs == 0) {
		free(args);
		return usage(&c, "no command");
	}
	if (strcmp(args[0], "-h") == 0 || strcmp(args[0], "--help") == 0 ||
	    strcmp(args[0], "help") == 0) {
		const char *u = nargs > 1 ? cli_usage_of(args[1]) : NULL;

		if (u != NULL)
			printf("usage: kernelindex %s", u);
		else
			print_usage(stdout);
		free(args);
		return CLI_EXIT_OK;
	}
	for (k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (strcmp(commands[k].name, args[0]) == 0)
			cmd = &commands[k];
	if (cmd == NULL) {
		cli_err(&c, "unknown command '%s'", args[0]);
		free(args);
		return usage(&c, NULL);
	}
	if (cli_wants_help(nargs - 1, args + 1)) {
		printf("usage: kernelindex %s", cmd->usage);
		free(args);
		return CLI_EXIT_OK;
	}
	if (strncmp(c.server, "http://", 7) != 0 &&
	    strncmp(c.server, "https://", 8) != 0) {
		free(args);
		return usage(&c, "the server URL must begin with http:// or "
		    "https://");
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		cli_err(&c, "cannot initialise libcurl");
		free(args);
		return CLI_EXIT_REJECTED;
	}
	rc = cmd->fn(&c, nargs - 1, args + 1);
	cli_progress_clear(&c);
	cli_http_free(c.http);
	curl_global_cleanup();
	free(args);
	if (fflush(stdout) != 0 && rc == CLI_EXIT_OK) {
		cli_err(&c, "writing the output: %s", strerror(errno));
		rc = CLI_EXIT_REJECTED;
	}
	return rc;
}
