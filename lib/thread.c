/* lib/thread.c — thread names (see lib/thread.h). */
#define _GNU_SOURCE /* pthread_setname_np */
#include "lib/thread.h"

#include <pthread.h>
#include <string.h>

void
ki_thread_name(const char *name)
{
	char n[16];
	size_t len = strlen(name);

	if (len > sizeof(n) - 1)
		len = sizeof(n) - 1;
	memcpy(n, name, len);
	n[len] = '\0';
	(void)pthread_setname_np(pthread_self(), n);
}
