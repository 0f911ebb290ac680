/* tests/unit/test_gpu.c — the GPU table's figures and the matchers from
 * device names and ExecutionEnvironment hardware to its rows. */
#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <string.h>

#include "physics/gpu.h"

int test_gpu_register(void);

static const char *
name_id(const char *s)
{
	const api_gpu *g = api_gpu_match_name(s);

	return g != NULL ? g->id : "(none)";
}

static const char *
hw_id(const char *json)
{
	struct json_object *o = json_tokener_parse(json);
	const api_gpu *g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	g = api_gpu_match_hardware(o);
	json_object_put(o);
	return g != NULL ? g->id : "(none)";
}

/* Every row is complete and internally consistent. */
static void
test_table(void)
{
	static const char *required[] = { "a100-sxm4-40gb", "a100-sxm4-80gb",
		"a100-pcie-40gb", "a100-pcie-80gb", "h100-sxm5-80gb",
		"h100-pcie-80gb", "h200-sxm-141gb", "b200-180gb", "rtx-3090",
		"rtx-4090", "l4", "l40s", "mi300x" };
	size_t n, i;
	const api_gpu *t = api_gpu_table(&n);

	CU_ASSERT(n >= sizeof(required) / sizeof(required[0]));
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		CU_ASSERT_PTR_NOT_NULL(api_gpu_by_id(required[i]));
	for (i = 0; i < n; i++) {
		CU_ASSERT(t[i].dram_bw > 1e11 && t[i].dram_bw < 2e13);
		CU_ASSERT(t[i].fp32 > 1e13);
		CU_ASSERT(t[i].tf32 >= t[i].fp32 * 0.99);
		CU_ASSERT(t[i].bf16 >= t[i].tf32);
		CU_ASSERT(t[i].fp16 >= t[i].bf16);
		CU_ASSERT(t[i].l2_bytes >= 4u << 20);
		CU_ASSERT(t[i].mem_bytes >= (uint64_t)16 << 30);
		CU_ASSERT(t[i].sm_count > 0);
		CU_ASSERT_PTR_NOT_NULL(t[i].name);
	}
	/* Spot figures straight from the datasheets. */
	CU_ASSERT_DOUBLE_EQUAL(api_gpu_by_id("a100-sxm4-80gb")->dram_bw,
	    2039e9, 1);
	CU_ASSERT_DOUBLE_EQUAL(api_gpu_by_id("h200-sxm-141gb")->dram_bw,
	    4.8e12, 1);
	CU_ASSERT_DOUBLE_EQUAL(api_gpu_by_id("h100-sxm5-80gb")->bf16,
	    989.4e12, 1);
	CU_ASSERT_EQUAL(api_gpu_by_id("h100-sxm5-80gb")->sm_count, 132);
	CU_ASSERT_PTR_NULL(api_gpu_by_id("nope"));
	CU_ASSERT_PTR_NULL(api_gpu_by_id(NULL));
}

/* The device names the data and the drivers spell. */
static void
test_names(void)
{
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA H100 80GB HBM3"),
	    "h100-sxm5-80gb");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA A100-SXM4-80GB"),
	    "a100-sxm4-80gb");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA A100-SXM4-40GB"),
	    "a100-sxm4-40gb");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA A100-PCIE-40GB"),
	    "a100-pcie-40gb");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA A100 80GB PCIe"),
	    "a100-pcie-80gb");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA GeForce RTX 3090"), "rtx-3090");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA GeForce RTX 4090"), "rtx-4090");
	CU_ASSERT_STRING_EQUAL(name_id("rtx4090"), "rtx-4090");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA B200"), "b200-180gb");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA H100 PCIe"), "h100-pcie-80gb");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA H200"), "h200-sxm-141gb");
	CU_ASSERT_STRING_EQUAL(name_id("nvidia h200"), "h200-sxm-141gb");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA L4"), "l4");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA L40S"), "l40s");
	CU_ASSERT_STRING_EQUAL(name_id("AMD Instinct MI300X"), "mi300x");
	/* Unstated variants take the fastest: the floor stays a bound. */
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA A100"), "a100-sxm4-80gb");
	CU_ASSERT_STRING_EQUAL(name_id("H100"), "h100-sxm5-80gb");
	/* Parts not in the table are not guessed. */
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA H100 NVL"), "(none)");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA GeForce RTX 3090 Ti"),
	    "(none)");
	CU_ASSERT_STRING_EQUAL(name_id("NVIDIA L40"), "(none)");
	CU_ASSERT_STRING_EQUAL(name_id("Tesla V100-SXM2-16GB"), "(none)");
	CU_ASSERT_STRING_EQUAL(name_id(""), "(none)");
	CU_ASSERT_PTR_NULL(api_gpu_match_name(NULL));
}

/* ExecutionEnvironment hardware objects, split by an importer or not. */
static void
test_hardware(void)
{
	CU_ASSERT_STRING_EQUAL(hw_id("{\"vendor\":\"nvidia\",\"product\":"
	    "\"NVIDIA A100\",\"formFactor\":\"SXM4-80GB\",\"architecture\":"
	    "\"sm_80\"}"), "a100-sxm4-80gb");
	CU_ASSERT_STRING_EQUAL(hw_id("{\"vendor\":\"NVIDIA\",\"product\":"
	    "\"NVIDIA A100\",\"formFactor\":\"SXM4-40GB\"}"),
	    "a100-sxm4-40gb");
	CU_ASSERT_STRING_EQUAL(hw_id("{\"product\":\"NVIDIA H100 80GB HBM3\"}"),
	    "h100-sxm5-80gb");
	CU_ASSERT_STRING_EQUAL(hw_id("{\"vendor\":\"nvidia\",\"product\":"
	    "\"NVIDIA H100\",\"formFactor\":\"PCIe\"}"), "h100-pcie-80gb");
	CU_ASSERT_STRING_EQUAL(hw_id("{\"vendor\":\"NVIDIA Corporation\","
	    "\"product\":\"NVIDIA GeForce RTX 3090\"}"), "rtx-3090");
	CU_ASSERT_STRING_EQUAL(hw_id("{\"vendor\":\"amd\",\"product\":"
	    "\"MI300X\",\"formFactor\":\"OAM\"}"), "mi300x");
	/* A vendor that contradicts the product fails the match. */
	CU_ASSERT_STRING_EQUAL(hw_id("{\"vendor\":\"amd\",\"product\":"
	    "\"NVIDIA B200\"}"), "(none)");
	CU_ASSERT_STRING_EQUAL(hw_id("{\"vendor\":\"nvidia\"}"), "(none)");
	CU_ASSERT_STRING_EQUAL(hw_id("{\"product\":42}"), "(none)");
	CU_ASSERT_STRING_EQUAL(hw_id("[]"), "(none)");
	CU_ASSERT_PTR_NULL(api_gpu_match_hardware(NULL));
}

static void
test_dtypes(void)
{
	const api_gpu *h = api_gpu_by_id("h100-sxm5-80gb");

	CU_ASSERT_EQUAL(api_dtype_parse("torch.float32"), API_DT_F32);
	CU_ASSERT_EQUAL(api_dtype_parse("FP32"), API_DT_F32);
	CU_ASSERT_EQUAL(api_dtype_parse("bfloat16"), API_DT_BF16);
	CU_ASSERT_EQUAL(api_dtype_parse("torch.bfloat16"), API_DT_BF16);
	CU_ASSERT_EQUAL(api_dtype_parse("half"), API_DT_F16);
	CU_ASSERT_EQUAL(api_dtype_parse("float64"), API_DT_F64);
	CU_ASSERT_EQUAL(api_dtype_parse("int8"), API_DT_UNKNOWN);
	CU_ASSERT_EQUAL(api_dtype_parse(NULL), API_DT_UNKNOWN);
	CU_ASSERT_EQUAL(api_dtype_size(API_DT_F32), 4);
	CU_ASSERT_EQUAL(api_dtype_size(API_DT_BF16), 2);
	CU_ASSERT_EQUAL(api_dtype_size(API_DT_UNKNOWN), 0);
	CU_ASSERT_STRING_EQUAL(api_dtype_name(API_DT_F16), "float16");
	CU_ASSERT_DOUBLE_EQUAL(api_gpu_matrix_rate(h, API_DT_F32), h->tf32, 0);
	CU_ASSERT_DOUBLE_EQUAL(api_gpu_matrix_rate(h, API_DT_BF16), h->bf16,
	    0);
	CU_ASSERT_DOUBLE_EQUAL(api_gpu_matrix_rate(h, API_DT_F16), h->fp16, 0);
	CU_ASSERT_DOUBLE_EQUAL(api_gpu_matrix_rate(h, API_DT_F64), h->fp32, 0);
}

int
test_gpu_register(void)
{
	CU_pSuite s = CU_add_suite("gpu", NULL, NULL);

	if (s == NULL ||
	    CU_add_test(s, "table", test_table) == NULL ||
	    CU_add_test(s, "device names", test_names) == NULL ||
	    CU_add_test(s, "environment hardware", test_hardware) == NULL ||
	    CU_add_test(s, "dtypes and rates", test_dtypes) == NULL)
		return -1;
	return 0;
}
