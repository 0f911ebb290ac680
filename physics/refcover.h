/* physics/refcover.h — which workloads the reference program measures: the
 * one table both the program and the Verification controller read, so
 * that a request the program cannot answer is answered without running
 * it. Plain C, no CUDA, no API types. */
#ifndef PHYSICS_REFCOVER_H
#define PHYSICS_REFCOVER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REF_PASS_FORWARD 1u
#define REF_PASS_BACKWARD 2u
#define REF_PASS_FULL 4u

/* One kernel family the reference implements. */
struct ref_cover {
	const char *kernel;     /* Liger's kernel_name */
	unsigned passes;        /* REF_PASS_* it measures */
	const char *why_not;    /* why a pass it lacks is not measured */
};

/* The pass bit of "forward", "backward" or "full"; 0 for anything else. */
unsigned ref_pass_bit(const char *pass);

/* 1 when the reference measures kernel's pass (NULL pass: any pass);
 * else 0, with *why (may be NULL) set to a static sentence saying why. */
int ref_covers(const char *kernel, const char *pass, const char **why);

/* The whole table; *n receives its length. Static storage. */
const struct ref_cover *ref_coverage(size_t *n);

#ifdef __cplusplus
}
#endif

#endif
