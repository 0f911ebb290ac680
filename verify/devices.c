/* verify/devices.c — kernelindex-ref --list-devices: the host's GPUs from
 * NVML (loaded at run time, so that the program runs without a driver),
 * or N simulated devices for testing the controller's scheduling. */
#define _POSIX_C_SOURCE 200809L
#include "verify/devices.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#define SIM_MAX 64
#define SIM_MODEL "NVIDIA H100 80GB HBM3"

typedef struct nvml_dev *nvml_dev_t;
typedef struct nvml_mem {
	unsigned long long total, free, used;
} nvml_mem;

/* The simulated device count, 0 when simulation is off. */
static int
sim_count(void)
{
	const char *s = getenv(REF_SIM_DEVICES_ENV);
	long n;
	char *end;

	if (s == NULL || *s == '\0')
		return 0;
	n = strtol(s, &end, 10);
	return *end == '\0' && n > 0 && n <= SIM_MAX ? (int)n : 0;
}

int
ref_sim_active(void)
{
	return sim_count() > 0;
}

/* The i-th model of KI_REF_SIMULATED_MODELS (comma-separated, cycled), or
 * SIM_MODEL; written to out. */
static void
sim_model(int i, char *out, size_t n)
{
	const char *s = getenv("KI_REF_SIMULATED_MODELS");
	const char *p, *q;
	int count = 0, k;

	snprintf(out, n, "%s", SIM_MODEL);
	if (s == NULL || *s == '\0')
		return;
	for (p = s; p != NULL; p = strchr(p, ','), p = p ? p + 1 : NULL)
		count++;
	p = s;
	for (k = i % count; k > 0; k--)
		p = strchr(p, ',') + 1;
	q = strchr(p, ',');
	snprintf(out, n, "%.*s", q ? (int)(q - p) : (int)strlen(p), p);
}

static struct json_object *
dev_object(int index, const char *uuid, const char *name, long long mem_mib,
	long sm, long memclk, const char *ecc, long long ecc_errors,
	const char *health, int simulated)
{
	struct json_object *o = json_object_new_object();
	struct json_object *c = json_object_new_object();

	json_object_object_add(o, "index", json_object_new_int(index));
	json_object_object_add(o, "uuid", json_object_new_string(uuid));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "memoryMiB", mem_mib >= 0 ?
	    json_object_new_int64(mem_mib) : NULL);
	json_object_object_add(c, "sm", sm >= 0 ? json_object_new_int64(sm) :
	    NULL);
	json_object_object_add(c, "memory", memclk >= 0 ?
	    json_object_new_int64(memclk) : NULL);
	json_object_object_add(o, "maxClocksMHz", c);
	json_object_object_add(o, "ecc", json_object_new_string(ecc));
	json_object_object_add(o, "eccErrors", ecc_errors >= 0 ?
	    json_object_new_int64(ecc_errors) : NULL);
	json_object_object_add(o, "health", json_object_new_string(health));
	json_object_object_add(o, "simulated", json_object_new_boolean(simulated));
	return o;
}

/* Appends NVML's devices to arr; nothing when NVML cannot be loaded. */
static void
nvml_devices(struct json_object *arr)
{
	int (*init)(void), (*shutdown)(void);
	int (*count)(unsigned *);
	int (*by_index)(unsigned, nvml_dev_t *);
	int (*name)(nvml_dev_t, char *, unsigned);
	int (*uuid)(nvml_dev_t, char *, unsigned);
	int (*meminfo)(nvml_dev_t, nvml_mem *);
	int (*maxclock)(nvml_dev_t, int, unsigned *);
	int (*eccmode)(nvml_dev_t, int *, int *);
	int (*eccerr)(nvml_dev_t, int, int, unsigned long long *);
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	unsigned n = 0;

	if (lib == NULL)
		return;
	*(void **)&init = dlsym(lib, "nvmlInit_v2");
	*(void **)&shutdown = dlsym(lib, "nvmlShutdown");
	*(void **)&count = dlsym(lib, "nvmlDeviceGetCount_v2");
	*(void **)&by_index = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&name = dlsym(lib, "nvmlDeviceGetName");
	*(void **)&uuid = dlsym(lib, "nvmlDeviceGetUUID");
	*(void **)&meminfo = dlsym(lib, "nvmlDeviceGetMemoryInfo");
	*(void **)&maxclock = dlsym(lib, "nvmlDeviceGetMaxClockInfo");
	*(void **)&eccmode = dlsym(lib, "nvmlDeviceGetEccMode");
	*(void **)&eccerr = dlsym(lib, "nvmlDeviceGetTotalEccErrors");
	if (init == NULL || count == NULL || by_index == NULL || name == NULL ||
	    uuid == NULL || init() != 0)
		goto out;
	if (count(&n) != 0)
		n = 0;
	for (unsigned i = 0; i < n; i++) {
		nvml_dev_t d;
		nvml_mem m;
		char nm[96] = "", id[96] = "";
		unsigned sm, mc;
		int cur, pend;
		unsigned long long errs;
		long long mem = -1, ecc_errors = -1;
		const char *ecc = "unknown", *health = "ok";

		if (by_index(i, &d) != 0 || uuid(d, id, sizeof(id)) != 0) {
			json_object_array_add(arr, dev_object((int)i, "", "",
			    -1, -1, -1, "unknown", -1, "unreachable", 0));
			continue;
		}
		name(d, nm, sizeof(nm));
		if (meminfo != NULL && meminfo(d, &m) == 0)
			mem = (long long)(m.total >> 20);
		if (maxclock == NULL || maxclock(d, 1, &sm) != 0)
			sm = 0;
		if (maxclock == NULL || maxclock(d, 2, &mc) != 0)
			mc = 0;
		if (eccmode != NULL && eccmode(d, &cur, &pend) == 0)
			ecc = cur ? "enabled" : "disabled";
		/* Uncorrected (1) volatile (0) errors since the driver loaded:
		 * a GPU that has any does not measure. */
		if (eccerr != NULL && strcmp(ecc, "enabled") == 0 &&
		    eccerr(d, 1, 0, &errs) == 0) {
			ecc_errors = (long long)errs;
			if (errs > 0)
				health = "uncorrectedEccErrors";
		}
		json_object_array_add(arr, dev_object((int)i, id, nm, mem,
		    sm ? (long)sm : -1, mc ? (long)mc : -1, ecc, ecc_errors,
		    health, 0));
	}
	if (shutdown != NULL)
		shutdown();
out:
	dlclose(lib);
}

int
ref_list_devices(void)
{
	struct json_object *o = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	int n = sim_count();

	for (int i = 0; i < n; i++) {
		char id[64], model[96];

		snprintf(id, sizeof(id), "GPU-5111a7ed-0000-4000-8000-%012d", i);
		sim_model(i, model, sizeof(model));
		json_object_array_add(arr, dev_object(i, id, model, 81559, 1980,
		    2619, "enabled", 0, "ok", 1));
	}
	if (n == 0)
		nvml_devices(arr);
	json_object_object_add(o, "devices", arr);
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* Appends one line to KI_REF_SIMULATED_LOG (O_APPEND: lines of concurrent
 * children do not interleave). */
static void
sim_log(const char *what)
{
	const char *path = getenv("KI_REF_SIMULATED_LOG");
	const char *dev = getenv("CUDA_VISIBLE_DEVICES");
	const char *ver = getenv("KI_REF_VERIFICATION");
	struct timespec ts;
	char line[512];
	int fd, len;

	if (path == NULL || *path == '\0')
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	len = snprintf(line, sizeof(line), "%s %s %s %lld.%06ld %ld\n", what,
	    dev && *dev ? dev : "-", ver && *ver ? ver : "-",
	    (long long)ts.tv_sec, ts.tv_nsec / 1000, (long)getpid());
	if (len <= 0 || (size_t)len >= sizeof(line))
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)len) != len)
		fputs("kernelindex-ref: the simulation log is short\n", stderr);
	close(fd);
}

void
ref_sim_begin(void)
{
	const char *fault = getenv("KI_REF_SIMULATED_FAULT");
	const char *dev = getenv("CUDA_VISIBLE_DEVICES");
	const char *delay = getenv("KI_REF_SIMULATED_DELAY_MS");

	if (!ref_sim_active())
		return;
	sim_log("start");
	if (fault != NULL && dev != NULL && *fault != '\0' &&
	    strcmp(fault, dev) == 0) {
		sim_log("fault");
		abort();
	}
	if (delay != NULL) {
		long ms = strtol(delay, NULL, 10);
		struct timespec ts;

		if (ms > 0 && ms < 600000) {
			ts.tv_sec = ms / 1000;
			ts.tv_nsec = (ms % 1000) * 1000000L;
			while (nanosleep(&ts, &ts) != 0)
				;
		}
	}
}

void
ref_sim_end(void)
{
	if (ref_sim_active())
		sim_log("end");
}
