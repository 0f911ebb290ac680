/* lib/thread.c — thread names (see lib/thread.h). */
#define _GNU_SOURCE /* pthread_setname_np */
#include "lib/thread.h"

#include <pthread.h>
#include <stdio.h>

void
ki_thread_name(const char *name)
{
	char n[16];   /* Linux refuses longer names; keep their start */

	snprintf(n, sizeof(n), "%s", name);
	(void)pthread_setname_np(pthread_self(), n);
}
