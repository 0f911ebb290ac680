/* verify/ref_main.c — kernelindex-ref: reads one JSON request on stdin,
 * measures the workload with the reference kernel (CUDA when a device is
 * usable and allowed, else the CPU), writes one JSON result on stdout.
 * With --list-devices, prints the host's GPUs (verify/devices.c);
 * with --coverage, the kernel families and passes it measures; with
 * --plan, the shape a request would run on the CPU, without measuring. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/refcover.h"
#include "verify/devices.h"
#include "verify/ref.h"

/* Writes {"error": msg} and returns the exit status. */
static int
fail(const char *msg, int status)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "error", json_object_new_string(msg));
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	fflush(stdout);
	return status;
}

/* Reads stdin whole, at most REF_MAX_REQUEST bytes, into b. */
static int
read_request(ki_buf *b)
{
	char chunk[8192];
	size_t n;

	b->limit = REF_MAX_REQUEST;
	while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
		if (ki_buf_append(b, chunk, n) != KI_OK)
			return KI_ELIMIT;
	return ferror(stdin) ? KI_EIO : KI_OK;
}

/* Prints the coverage table as {"kernel": ["forward", …], …}. */
static int
print_coverage(void)
{
	static const char *const passes[] = { "forward", "backward", "full" };
	struct json_object *o = json_object_new_object();
	const struct ref_cover *t;
	size_t n, i, k;

	t = ref_coverage(&n);
	for (i = 0; i < n; i++) {
		struct json_object *a = json_object_new_array();

		for (k = 0; k < 3; k++)
			if (t[i].passes & ref_pass_bit(passes[k]))
				json_object_array_add(a,
				    json_object_new_string(passes[k]));
		json_object_object_add(o, t[i].kernel, a);
	}
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return 0;
}

/* --plan: the shape a family of family.h (row-wise, attention, MoE) or
 * of lin.h (over linear layers) would run on the CPU, without measuring:
 * {"kernel", "pass", "dtype", "scaled", "parameters"} on out. Returns the
 * exit status. */
static int
print_plan(const struct ref_job *job)
{
	struct fam_shape s = job->shape;
	struct lin_shape ls = job->lshape;
	struct json_object *o;
	int scaled;

	if (job->fam == NULL && job->lin == NULL)
		return fail("--plan: the embedding has no plan output", 3);
	scaled = job->lin != NULL ? lin_fit(job->lin, &ls, REF_CPU_MAX_ELEMS,
	    LIN_CPU_MAX_FLOPS) : fam_fit(job->fam, &s, REF_CPU_MAX_ELEMS);
	o = json_object_new_object();
	json_object_object_add(o, "kernel", json_object_new_string(job->kernel));
	json_object_object_add(o, "pass", json_object_new_string(
	    job->asked == REF_FORWARD ? "forward" : job->asked == REF_BACKWARD ?
	    "backward" : "full"));
	json_object_object_add(o, "dtype",
	    json_object_new_string(api_dtype_name(job->dtype)));
	json_object_object_add(o, "scaled", json_object_new_boolean(scaled));
	json_object_object_add(o, "parameters", job->lin != NULL ?
	    job->lin->params(&ls) : job->fam->params(&s));
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	struct json_tokener *tok = NULL;
	struct json_object *req = NULL;
	struct ref_result r;
	struct ref_job job;
	ki_buf in, out;
	char err[256];
	int rc, status = 1;

	if (argc == 2 && strcmp(argv[1], "--list-devices") == 0)
		return ref_list_devices();
	if (argc == 2 && strcmp(argv[1], "--coverage") == 0)
		return print_coverage();
	if (argc > 1 && (argc > 2 || strcmp(argv[1], "--plan") != 0)) {
		fputs("usage: kernelindex-ref [--list-devices | --coverage | "
		    "--plan] <request.json\n", stderr);
		return 2;
	}
	memset(&r, 0, sizeof(r));
	ki_buf_init(&in);
	ki_buf_init(&out);
	if (read_request(&in) != KI_OK) {
		status = fail("request unreadable or larger than 1 MiB", 2);
		goto done;
	}
	tok = json_tokener_new_ex(64);
	if (tok == NULL) {
		status = fail("out of memory", 1);
		goto done;
	}
	req = json_tokener_parse_ex(tok, in.data != NULL ? in.data : "",
	    (int)in.len);
	if (req == NULL || json_tokener_get_error(tok) != json_tokener_success) {
		status = fail("request is not valid JSON", 2);
		goto done;
	}
	rc = ref_parse_request(req, &job, err, sizeof(err));
	if (rc != KI_OK) {
		status = fail(err, rc == KI_ENOTFOUND ? 3 :
		    rc == KI_ELIMIT ? 5 : 2);
		goto done;
	}
	if (argc == 2) {
		status = print_plan(&job);
		goto done;
	}
	/* Simulated devices measure on the CPU. */
	if (ref_sim_active())
		job.backend = REF_CPU;
	if (job.backend == REF_CUDA && job.fam != NULL &&
	    (fam_attn_find(job.kernel) != NULL ||
	    fam_moe_find(job.kernel) != NULL)) {
		status = fail("the CUDA backend has no implementation of this "
		    "family yet (the CPU backend has)", 3);
		goto done;
	}
	if (job.backend == REF_CUDA && job.fam != NULL &&
	    fam_cpu_only_pass(job.fam)) {
		status = fail("the CUDA backend has no implementation of this "
		    "pass yet (the CPU backend has)", 3);
		goto done;
	}
	if (job.backend == REF_CUDA && job.lin != NULL) {
		status = fail("the CUDA backend has no implementation of this "
		    "family yet (the CPU backend has)", 3);
		goto done;
	}
	if (job.backend == REF_CUDA && !ref_cuda_available()) {
		status = fail("no usable CUDA device", 4);
		goto done;
	}
	ref_sim_begin();
	if (job.backend == REF_CUDA && job.fam != NULL &&
	    !fam_cuda_has(job.fam)) {
		status = fail("the CUDA backend has no kernel for this family "
		    "(the CPU backend has)", 3);
		goto done;
	}
	if (job.lin != NULL)
		rc = lin_cpu_run(&job, &r, err, sizeof(err));
	else if (job.fam != NULL)
		rc = job.backend != REF_CPU && ref_cuda_available() &&
		    fam_cuda_has(job.fam) && !fam_cpu_only_pass(job.fam) ?
		    fam_cuda_run(&job, &r, err, sizeof(err)) :
		    fam_cpu_run(&job, &r, err, sizeof(err));
	else if (job.backend != REF_CPU && ref_cuda_available())
		rc = ref_cuda_run(&job, &r, err, sizeof(err));
	else
		rc = ref_cpu_run(&job, &r, err, sizeof(err));
	ref_sim_end();
	if (rc != KI_OK) {
		status = fail(err, rc == KI_ELIMIT ? 5 : 1);
		goto done;
	}
	if (ref_write_result(&job, &r, &out) != KI_OK) {
		status = fail("out of memory", 1);
		goto done;
	}
	puts(out.data);
	fflush(stdout);
	status = 0;
done:
	json_object_put(r.ran);
	json_object_put(req);
	if (tok != NULL)
		json_tokener_free(tok);
	ki_buf_free(&in);
	ki_buf_free(&out);
	return status;
}
