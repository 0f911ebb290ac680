/* verify/ref.h — the reference-kernel program's internal interface: one
 * job (a workload under a protocol), its result, and the backends that
 * run it (CPU always, CUDA when built with nvcc). */
#ifndef VERIFY_REF_H
#define VERIFY_REF_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "physics/gpu.h"
#include "lib/ki.h"
#include "verify/family.h"
#include "verify/lin.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ref_pass { REF_FORWARD, REF_BACKWARD, REF_FULL };
enum ref_backend { REF_AUTO, REF_CPU, REF_CUDA };

/* Limits on what a request may ask for. */
#define REF_MAX_REQUEST (1u << 20)       /* bytes of JSON on stdin */
#define REF_CPU_MAX_ELEMS (1u << 22)     /* weight + activations, CPU */
#define REF_CPU_MAX_FLOPS 2e8            /* a full pass's matrix FLOPs, CPU */
#define REF_SAMPLE_ROWS 256              /* rows compared with float64 */
#define REF_DEFAULT_WARMUP_MS 25.0       /* triton.testing.do_bench */
#define REF_DEFAULT_REP_MS 100.0
#define REF_DEFAULT_FLUSH (256u << 20)   /* do_bench's cache buffer */
#define REF_CPU_FLUSH (32u << 20)

/* One measurement to make. Shapes are the embedding's: out = W[idx],
 * idx (batch, seq) int64 in [0, vocab), W (vocab, hidden). */
struct ref_job {
	char kernel[64];
	enum ref_pass pass;
	enum api_dtype dtype;
	enum ref_backend backend;
	int64_t batch, seq, hidden, vocab;
	double warmup_ms, rep_ms;    /* do_bench's warmup= and rep= */
	uint64_t flush_bytes;        /* buffer written between repetitions */
	double max_seconds;          /* wall-clock budget for the timing */
	uint64_t seed;               /* 0: draw one from the clock */
	const struct family *fam;    /* a row-wise family, NULL: embedding */
	struct fam_shape shape;      /* its shape, as asked */
	enum ref_pass asked;         /* the pass named in the request (a
	                              * megatron "backward" runs as full) */
	const struct lin_family *lin;   /* a family over linear layers */
	struct lin_shape lshape;     /* its shape, as asked */
};

/* What a backend measured. */
struct ref_result {
	const char *backend;         /* "cpu" or "cuda"; static */
	int scaled;                  /* the shape was reduced to fit */
	int64_t batch, seq, hidden, vocab;   /* the shape actually run */
	char gpu_name[256];
	char driver[48];
	char sm[16];
	int clocks_sm_before, clocks_mem_before;   /* MHz, -1 unknown */
	int clocks_sm_after, clocks_mem_after;
	double median_ns, p20_ns, p80_ns;
	int repetitions;
	double max_rel_error;        /* max over sampled rows of ‖Δ‖/‖ref‖ */
	int64_t checked_outputs;     /* elements compared with float64 */
	int complete;                /* every output element was written */
	int accumulated_outputs;     /* gradients also checked after a second
	                              * repetition added to the first's, as
	                              * the script's autograd accumulates
	                              * them (0: none accumulates in this
	                              * pass, or the backend writes anew) */
	double copy_bw;              /* bytes/s (read + written) of a large
	                              * copy measured in the same run; 0 if
	                              * not measured */
	double matmul_rate;          /* FLOPs/s of the backend's matrix
	                              * product measured in the same run; 0
	                              * if not measured */
	struct json_object *ran;     /* the parameters of the shape run
	                              * (owned; NULL: the embedding's) */
};

/* KIREF_WRITE_ANEW=1: the CPU backend times and checks every pass writing
 * its gradients anew, as the CUDA backend does, where the script adds to
 * them; the result then counts no accumulated gradient and its floor
 * leaves out reading the earlier ones (ref_write_result). For comparing
 * with the CUDA backend and for testing that floor. */
int ref_cpu_write_anew(void);

/* Measures the host's copy rate (bytes read + written per second) with
 * memcpy over buffers larger than the caches; 0 when it cannot. */
double ref_cpu_copy_rate(void);
/* One do_bench timing of pass(arg) on the CPU (ref_cpu.c): fills r's
 * median/p20/p80, repetitions and copy rate; KI_ENOMEM with err set. */
int ref_cpu_bench(const struct ref_job *job, void (*pass)(void *), void *arg,
	struct ref_result *r, char *err, size_t errlen);

/* Parses a request {"workload", "protocol", "backend", "maxSeconds"}
 * (req borrowed) into *job. Returns 0, or KI_EINVAL / KI_ENOTFOUND with a
 * message in err (an unknown kernel is KI_ENOTFOUND). */
int ref_parse_request(struct json_object *req, struct ref_job *job,
	char *err, size_t errlen);

/* Writes the result as one JSON object to out (appended): backend, gpu,
 * latencyNs, repetitions, bytes (the cost model's floor bytes for the
 * shape run), achievedBandwidth (bytes/s), maxRelError, checkedOutputs,
 * tolerance, correct, scaled, shape and floor: the cost model's bytes
 * at the copy rate measured in the same run, and the fraction of that
 * floor the median reached. Returns 0 or KI_ENOMEM. */
int ref_write_result(const struct ref_job *job, const struct ref_result *r,
	ki_buf *out);

/* Largest ‖out − ref‖/‖ref‖ that passes for a dtype. */
double ref_tolerance(enum api_dtype dt);

/* Linear-interpolation quantile of n sorted values (torch.quantile). */
double ref_quantile(const double *sorted, int n, double q);

/* Sorts v and fills the three statistics. */
void ref_stats(double *v, int n, double *p50, double *p20, double *p80);

/* Element conversions with round-to-nearest-even. */
float ref_bf16_to_f32(uint16_t h);
uint16_t ref_f32_to_bf16(float f);
float ref_f16_to_f32(uint16_t h);
uint16_t ref_f32_to_f16(float f);

/* A splitmix64 stream: fresh inputs for every check. */
uint64_t ref_rand(uint64_t *state);
/* A standard-normal float (Box–Muller). */
float ref_randn(uint64_t *state);

/* Fills n elements of dt with standard-normal values. */
void ref_fill_randn(void *p, size_t n, enum api_dtype dt, uint64_t *rng);

/* Fills n indices uniformly in [0, v) (torch.randint's distribution). */
void ref_fill_indices(int64_t *idx, size_t n, int64_t v, uint64_t *rng);

/* One element of dt as a double. */
double ref_elem(const void *p, size_t i, enum api_dtype dt);

/* Checks an embedding forward output out (bt × d) against W[idx] in
 * float64 on REF_SAMPLE_ROWS sampled rows, and that no element is still
 * the NaN poison. Updates r->max_rel_error (max), r->checked_outputs (+=)
 * and r->complete (cleared on a miss). */
void ref_check_forward(const void *w, const int64_t *idx, const void *out,
	int64_t bt, int64_t d, enum api_dtype dt, uint64_t *rng,
	struct ref_result *r);

/* Checks a dense embedding gradient dw (v × d) against the float64
 * scatter-sum of dy's rows on sampled rows, half of them rows some index
 * hits, and that no element is still the poison. Same updates as
 * ref_check_forward. Returns 0 or KI_ENOMEM. */
int ref_check_backward(const int64_t *idx, const void *dy, const void *dw,
	int64_t bt, int64_t d, int64_t v, enum api_dtype dt, uint64_t *rng,
	struct ref_result *r);

/* The same for a gradient that a repetition added to prior (v × d, as
 * the earlier repetition left it; NULL: ref_check_backward): the
 * expected rows are prior's plus the scatter-sum. */
int ref_check_backward_prior(const int64_t *idx, const void *dy,
	const void *dw, const void *prior, int64_t bt, int64_t d, int64_t v,
	enum api_dtype dt, uint64_t *rng, struct ref_result *r);

/* Runs the job on the CPU, reducing the shape when it exceeds
 * REF_CPU_MAX_ELEMS (r->scaled then set). Returns 0 or a KI_* code with
 * a message in err. */
int ref_cpu_run(const struct ref_job *job, struct ref_result *r,
	char *err, size_t errlen);

/* The device-to-device copy rate of the first CUDA device, bytes read +
 * written per second; 0 when it cannot be measured. */
double ref_cuda_copy_rate(void);

/* 1 when a CUDA device can be used, else 0 (always 0 without CUDA). */
int ref_cuda_available(void);

/* Runs the job on the first CUDA device. Returns 0 or a KI_* code with a
 * message in err (KI_ELIMIT: the workload does not fit the card). */
int ref_cuda_run(const struct ref_job *job, struct ref_result *r,
	char *err, size_t errlen);

/* ---- the row-wise families (verify/fam_cpu.c, verify/fam_cuda.cu) ---- */

/* Lays the shape out and halves it until its tensors hold at most
 * max_elems elements (and its full pass at most REF_CPU_MAX_FLOPS where
 * the family counts them); returns 1 when it was reduced. */
int fam_fit(const struct family *f, struct fam_shape *s, double max_elems);

/* Writes the NaN poison over the outputs of the forward (fwd) and the
 * backward (bwd) in host. */
void fam_poison(const struct fam_shape *s, void *const *host,
	enum api_dtype dt, int fwd, int bwd);

/* Runs a family's job on the CPU, as ref_cpu_run. */
int fam_cpu_run(const struct ref_job *job, struct ref_result *r,
	char *err, size_t errlen);

/* 1 when the CUDA backend has kernels for the family (0 without CUDA). */
int fam_cuda_has(const struct family *f);

/* Runs a family's job on the first CUDA device, as ref_cuda_run. */
int fam_cuda_run(const struct ref_job *job, struct ref_result *r,
	char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
