/* verify/ref_nocuda.c — the CUDA backend's stand-in for builds without
 * nvcc: no device is ever usable, so "auto" runs on the CPU. */
#include <stdio.h>

#include "verify/ref.h"

int
ref_cuda_available(void)
{
	return 0;
}

int
ref_cuda_run(const struct ref_job *job, struct ref_result *r, char *err,
	size_t errlen)
{
	(void)job;
	(void)r;
	snprintf(err, errlen, "built without CUDA");
	return KI_ENOTFOUND;
}

double
ref_cuda_copy_rate(void)
{
	return 0;
}

int
fam_cuda_has(const struct family *f)
{
	(void)f;
	return 0;
}

int
fam_cuda_run(const struct ref_job *job, struct ref_result *r, char *err,
	size_t errlen)
{
	(void)job;
	(void)r;
	snprintf(err, errlen, "built without CUDA");
	return KI_ENOTFOUND;
}
