/* lib/log.c — leveled logging to stderr, one line per call. */
#include "lib/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile int min_level = LOG_INFO;

void
log_set_level(int level)
{
	min_level = level;
}

int
log_get_level(void)
{
	return min_level;
}

int
log_level_parse(const char *s)
{
	static const char *const names[] = { "debug", "info", "warn", "error" };

	for (int i = 0; i < 4; i++) {
		if (strcmp(s, names[i]) == 0)
			return i;
	}
	return -1;
}

void
log_msg(int level, const char *fmt, ...)
{
	static const char *const tags[] = { "debug", "info", "warn", "error" };
	int saved = errno;
	char line[2048], ts[32];
	struct timespec now;
	struct tm tm;
	va_list ap;
	int n;

	if (level < min_level)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03ldZ %s ", ts,
	    now.tv_nsec / 1000000, tags[level < 0 ? 0 : level > 3 ? 3 : level]);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line: lines from threads do not interleave. */
	n = (int)strlen(line);
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n] = '\n';
	line[n + 1] = '\0';
	fputs(line, stderr);
	errno = saved;
}
