/* tests/fuzz/replay.c — runs a fuzz target's corpus as an ordinary test,
 * without libFuzzer: every file of each directory (in name order) is fed
 * to LLVMFuzzerTestOneInput from an exact-size heap copy, after
 * LLVMFuzzerInitialize where the target defines it.
 *
 *   replay [DIR|FILE]...
 *
 * Without arguments it replays tests/fuzz/corpus/NAME and, where it
 * exists, tests/fuzz/crashes/NAME under $KI_SRCDIR (else $srcdir, else
 * "."), NAME being the target (FUZZ_TARGET_NAME at compile time). It
 * prints "NAME: N inputs replayed from DIR" per directory and ends with
 * "P passed, F failed"; it exits 0 only when every input ran. A broken
 * property or a sanitizer report kills the process: the input that did it
 * is named on stderr together with a last "P passed, 1 failed" line. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

#ifndef FUZZ_TARGET_NAME
#define FUZZ_TARGET_NAME "fuzz"
#endif

/* Weak: a target without an initializer leaves it NULL. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
/* The sanitizers' hook, present only in sanitized builds. */
void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static const char *current;     /* the input being run, for the report */
static volatile sig_atomic_t passed;

static void
put(const char *s)
{
	ssize_t n = write(2, s, strlen(s));

	(void)n;
}

static void
put_num(long v)
{
	char b[24];
	int i = (int)sizeof(b) - 1;

	b[i] = '\0';
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0 && i > 0);
	put(b + i);
}

/* Async-signal-safe: names the input and prints the summary line. */
static void
report_death(void)
{
	static volatile sig_atomic_t once;

	if (once)
		return;
	once = 1;
	put("replay: ");
	put(FUZZ_TARGET_NAME);
	put(": the input ");
	put(current ? current : "(none: during initialisation)");
	put(" failed\n");
	put_num((long)passed);
	put(" passed, 1 failed\n");
}

static void
on_signal(int sig)
{
	report_death();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int
read_file(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;

	if (f == NULL)
		return -1;
	for (;;) {
		size_t got;

		if (n == cap) {
			uint8_t *nb;

			cap = cap ? cap * 2 : 4096;
			if ((nb = realloc(buf, cap)) == NULL) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* Exactly n bytes, so that reading past the input is caught. */
	*out = n ? realloc(buf, n) : buf;
	if (*out == NULL)
		*out = buf;
	*len = n;
	return 0;
}

static int
run_file(const char *path)
{
	uint8_t *data;
	size_t len;

	if (read_file(path, &data, &len) != 0) {
		fprintf(stderr, "replay: cannot read %s: %s\n", path,
		    strerror(errno));
		return -1;
	}
	current = path;
	LLVMFuzzerTestOneInput(data, len);
	current = NULL;
	free(data);
	passed++;
	return 0;
}

static int
only_files(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

/* Replays a directory or one file; returns the number of failures. */
static int
replay(const char *path)
{
	struct dirent **names;
	struct stat st;
	int n, failed = 0, ran = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		failed = run_file(path) != 0;
		printf("%s: %d inputs replayed from %s\n", FUZZ_TARGET_NAME,
		    !failed, path);
		return failed;
	}
	if ((n = scandir(path, &names, only_files, alphasort)) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char full[4096];

		snprintf(full, sizeof(full), "%s/%s", path, names[i]->d_name);
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(full) != 0)
				failed++;
			else
				ran++;
		}
		free(names[i]);
	}
	free(names);
	printf("%s: %d inputs replayed from %s\n", FUZZ_TARGET_NAME, ran, path);
	fflush(stdout);
	if (ran == 0 && failed == 0) {
		fprintf(stderr, "replay: %s holds no inputs\n", path);
		failed = 1;
	}
	return failed;
}

int
main(int argc, char **argv)
{
	static const int sigs[] = { SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL };
	int failed = 0;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_signal);
	if (__sanitizer_set_death_callback != NULL)
		__sanitizer_set_death_callback(report_death);
	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			failed += replay(argv[i]);
	} else {
		const char *src = getenv("KI_SRCDIR");
		char dir[4096];
		struct stat st;

		if (src == NULL || *src == '\0')
			src = getenv("srcdir");
		if (src == NULL || *src == '\0')
			src = ".";
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", src,
		    FUZZ_TARGET_NAME);
		failed += replay(dir);
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/crashes/%s", src,
		    FUZZ_TARGET_NAME);
		if (stat(dir, &st) == 0)
			failed += replay(dir);
	}
	printf("%ld passed, %d failed\n", (long)passed, failed);
	return failed ? 1 : 0;
}
