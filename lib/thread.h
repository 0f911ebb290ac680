/* lib/thread.h — names for the daemon's own threads, as `top -H`, `ps -L`,
 * perf and /proc/PID/task/TID/comm show them. */
#ifndef KI_THREAD_H
#define KI_THREAD_H

/* Names the calling thread; Linux keeps the first 15 bytes. Best effort:
 * a platform without thread names keeps the process's. */
void ki_thread_name(const char *name);

#endif
