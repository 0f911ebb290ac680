/* lib/log.h — the one small logger: levels, printf-checked, keeps errno. */
#ifndef KI_LOG_H
#define KI_LOG_H

enum { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Sets the lowest level printed (default LOG_INFO). */
void log_set_level(int level);
int log_get_level(void);
/* Parses "debug", "info", "warn" or "error"; -1 if none. */
int log_level_parse(const char *s);
/* Writes one line to stderr: time, level, message. errno is preserved. */
void log_msg(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
