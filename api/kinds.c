/* api/kinds.c — the table of resource kinds. */
#include "api/kinds.h"

#include <string.h>

#include "api/schema.h"

static const api_kind kinds[API_NKINDS] = {
	{ API_RUN, "BenchmarkRun", "benchmarkruns", "benchmarkrun", "kbr",
	  "BenchmarkRunList", "run", NULL, 1, api_schema_run,
	  "BenchmarkRun is one measured result of a kernel: what was computed "
	  "(workload), by whom (implementation), where (environment) and how "
	  "it was measured (protocol), each referenced by content digest. Its "
	  "spec is immutable." },
	{ API_PROTOCOL, "BenchmarkProtocol", "benchmarkprotocols",
	  "benchmarkprotocol", "kbp", "BenchmarkProtocolList", "protocol",
	  "protocolDigest", 1, api_schema_protocol,
	  "BenchmarkProtocol says how results were measured: timer, "
	  "statistic, harness." },
	{ API_ENVIRONMENT, "ExecutionEnvironment", "executionenvironments",
	  "executionenvironment", "kee", "ExecutionEnvironmentList",
	  "environment", "environmentDigest", 1, api_schema_environment,
	  "ExecutionEnvironment says where a result was measured: the GPU "
	  "and the software around it." },
	{ API_WORKLOAD, "Workload", "workloads", "workload", "kwl",
	  "WorkloadList", "workload", "workloadDigest", 1, api_schema_workload,
	  "Workload says what was computed: kernel family, pass, shape "
	  "parameters and dtype." },
	{ API_IMPLEMENTATION, "Implementation", "implementations",
	  "implementation", "kimpl", "ImplementationList", "implementation",
	  "implementationDigest", 1, api_schema_implementation,
	  "Implementation says who computed it: provider, framework, "
	  "version." },
	{ API_VERIFICATION, "Verification", "verifications", "verification",
	  "kver", "VerificationList", NULL, NULL, 0, api_schema_verification,
	  "Verification asks the server to re-measure one run with its "
	  "reference kernel; the server fills its status." },
	{ API_THRESHOLD, "Threshold", "thresholds", "threshold", "kth",
	  "ThresholdList", NULL, NULL, 0, api_schema_threshold,
	  "Threshold judges each run that arrives in a series its selector "
	  "covers against that series' history (a percentage, z-score or IQR "
	  "test over a window, with a minimum sample): a regressing run gets "
	  "a Regressed condition and the label regression=true." },
};

const api_kind *
api_kind_by_id(int id)
{
	if (id < 1 || id > API_NKINDS)
		return NULL;
	return &kinds[id - 1];
}

const api_kind *
api_kind_by_plural(const char *s, size_t n)
{
	for (int i = 0; i < API_NKINDS; i++) {
		if (strlen(kinds[i].plural) == n &&
		    memcmp(kinds[i].plural, s, n) == 0)
			return &kinds[i];
	}
	return NULL;
}

const api_kind *
api_kind_by_kind(const char *s)
{
	for (int i = 0; i < API_NKINDS; i++) {
		if (strcmp(kinds[i].kind, s) == 0)
			return &kinds[i];
	}
	return NULL;
}

const api_kind *
api_kind_by_part(const char *s)
{
	for (int i = 0; i < API_NKINDS; i++) {
		if (kinds[i].bundle_part != NULL &&
		    strcmp(kinds[i].bundle_part, s) == 0)
			return &kinds[i];
	}
	return NULL;
}
