/* `dtune bench`: dtune's micro-kernels and the peers (oneDNN, OpenBLAS,
 * LIBXSMM) timed side by side over a workload's shapes, in one run.
 *
 * Method (the machine is shared and noisy): every kernel is verified
 * against the reference first (three small boundary cases); with
 * verify_shapes, every candidate (kernel and peer) is also checked on every
 * shape it runs, on that shape's real inputs, against a double-accumulation
 * reference (microkernel/reference.h) plus a guard past the output — a candidate
 * that fails is not timed on that shape.  Then for each shape, R repeats, and in each
 * repeat every candidate runs one batch of calls lasting at least min_time
 * (in a rotating order, so that drift hits all alike); a candidate's time is
 * the minimum over repeats of batch time / calls.  Weight packing is timed
 * apart from the call (once per packed layout of the kernels — panel width
 * and K group —, once per peer and shape).
 *
 * An op whose GEMM view's A is implicit (ops/op.h, a_row: conv2d): A is
 * the op's input (a_elems elements, e.g. NHWC X); kernels are verified on
 * the op's own dims (the first shape's, and two small odd ones); the
 * per-shape reference reads A gathered from the input through a_row.  The
 * GEMM peers cannot take it and are listed with status "skipped"; the
 * convolution peer (onednn_conv) runs it, its primitive creation per shape
 * timed (peer_create_s).
 *
 * Ownership: dt_bench_run fills a dt_bench_result that owns its arrays;
 * free with dt_bench_result_free. */
#ifndef DT_BENCH_BENCH_H
#define DT_BENCH_BENCH_H

#include <stdint.h>

#include "backends/backend.h"
#include "common/error.h"
#include "common/target.h"
#include "microkernel/build.h"
#include "space/annotation.h"
#include "peers/peer.h"
#include "shape/workload.h"

/* A candidate that is not one dtune micro-kernel but is timed and verified
 * like one, e.g. the exported C of a whole dispatch table
 * (bench/bench_export.h).  Its tensors are in the workload's dtype, as the
 * kernels get them (microkernel/operands.h): A and B in the dtype's element
 * types, bias and C float.  Borrowed for the run. */
typedef struct dt_bench_extern {
    const char *name;   /* candidate name, e.g. "export" */
    void *ctx;
    /* constant weights: packs W (N×K, the dtype's B type) once before any
     * call, scale_b[N] the per-column weight scales of a quantized dtype
     * (int8, w8a32; else NULL); NULL for none */
    int (*pack)(void *ctx, const void *W, const float *scale_b, dt_err *e);
    /* one call on the shape with variable values vals: Y = f(X, W, bias)
     * (the op's GEMM view: A, B — packed when constant — bias, C); scale_a
     * and zp_a are A's quantization (int8; else 1 and 0) */
    void (*run)(void *ctx, const int64_t *vals, const void *X, const void *W,
                const float *bias, float scale_a, int32_t zp_a, float *Y);
} dt_bench_extern;

typedef struct dt_bench_opts {
    int threads;          /* threads for kernels and peers (>= 1) */
    int repeats;          /* interleaved repeats per shape (>= 1) */
    double min_time_s;    /* minimum duration of one timed batch */
    const char *peers;    /* comma-separated peer names, NULL = all, "" = none */
    int progress;         /* progress lines on stderr */
    uint64_t seed;        /* input data */
    int verify_shapes;    /* check every candidate's output on every shape it runs */
    /* NULL: every kernel runs every shape.  Else nshapes entries: shape s runs
     * only kernel shape_kernel[s] (an index into `kernels`; -1 none) — the
     * kernel a dispatch table picks for it.  Borrowed for the call. */
    const int *shape_kernel;
    /* NULL, or one more candidate, right after the kernels (index nkernels),
     * run on every shape */
    const dt_bench_extern *ext;
    /* Peak kinds to measure besides the dtype's and the ok kernels' (bit
     * 1u << kind): the back-ends of the kernels inside ext, which are no
     * candidates of their own (dt_bench_backend gives their kinds). */
    unsigned extra_peaks;
} dt_bench_opts;

typedef enum { DT_CAND_KERNEL = 0, DT_CAND_PEER, DT_CAND_EXTERN } dt_cand_kind;

typedef struct dt_bench_cand {
    dt_cand_kind kind;
    char name[64];            /* "k17" or the peer's name */
    dt_annotation ann;        /* kernels */
    /* "ok", "compile_error", "wrong_answer", "unsupported", ...; a peer
     * "skipped" when it cannot compute the op at all (a GEMM peer on
     * conv2d, whose A is implicit), message saying why */
    char status[32];
    char *message;            /* why it is not "ok" (malloc'ed) or NULL */
    double pack_s;            /* kernels, extern: packing time of constant weights, else 0 */
    /* kernels: the back-end its annotation names for the workload's dtype
     * (backends/backend.h, dt_backend_full_name: "bf16/amx") and the peak
     * kind of that row, the ceiling of its %peak (dt_bench_backend); ""
     * and the dtype's peak kind for peers and the extern candidate */
    char backend[32];
    dt_peak_kind peak_kind;
} dt_bench_cand;

typedef struct dt_bench_result {
    int nshapes, nvars;
    int64_t *shapes;          /* nshapes × nvars variable values */
    int64_t *dims;            /* nshapes × op ndims */
    double *gflop;            /* per shape: useful GFLOP of one call */
    int ncands;
    dt_bench_cand *cands;
    double *seconds;          /* ncands × nshapes: best time per call, NAN if n/a */
    double *peer_pack_s;      /* ncands × nshapes: peer packing time, NAN if n/a */
    /* ncands × nshapes: a peer's create() time on the shape (primitive
     * creation: what a dynamic-shape server pays on each new shape), NAN if
     * n/a.  The convolution peers' (onednn_conv) is also summarised in their
     * message, which the text and JSON reports print. */
    double *peer_create_s;
    /* ncands × nshapes: 1 the output on this shape matched the reference,
     * -1 it did not (or the call failed; not timed), 0 not checked (not run
     * on this shape, or verify_shapes off) */
    signed char *verified;
    char **verify_msg;        /* ncands × nshapes: why verified is -1 (malloc'ed), or NULL */
    /* The ceiling of the workload's dtype (peers/peer.h): the peak of its
     * vector row on the target (dt_bench_dtype_peak: vdpbf16ps for bf16 and
     * vpdpbusd for int8 where the CPU has them, else the FMA); with
     * opts.threads threads, the higher of probes before and after the
     * shapes, in this run; GFLOP/s (GOP/s for int8).  Kept for the reports'
     * compatibility: a kernel's %peak divides by its own back-end's peak,
     * peaks[cands[c].peak_kind] (dt_bench_cand_peak). */
    dt_peak_kind peak_kind;
    double peak_gops;
    double peak1_gops;        /* with 1 thread */
    /* Every peak kind measured in this run, probed like peak_gops: the
     * dtype's, every ok kernel's back-end's and opts.extra_peaks; with
     * opts.threads threads and with 1; NAN for a kind not measured (or
     * without a probe on this machine). */
    double peaks[DT_PEAK_COUNT];
    double peaks1[DT_PEAK_COUNT];
} dt_bench_result;

/* shapes: nshapes × w->nvars values.  kernels: n annotations; one that is
 * not valid for target t gets status "invalid" and is not built. */
int dt_bench_run(const dt_workload *w, const int64_t *shapes, int nshapes,
                 const dt_annotation *kernels, int nkernels, const dt_target *t,
                 const dt_builder *b, const dt_bench_opts *o, dt_bench_result *r, dt_err *e);
void dt_bench_result_free(dt_bench_result *r);

/* The peak kind of dtype d's vector row on t (dt_backend_of(d, t->isa) and
 * its `peak`), or f32 when dt_dtype_native says that row is not usable
 * (the portable stand-ins widen to f32 FMAs). */
dt_peak_kind dt_bench_dtype_peak(dt_dtype d, const dt_target *t);
/* The back-end that annotation a names for dtype d (dt_backend_of_ann):
 * its full name ("bf16/amx", "?" when there is no such row) into buf (size
 * n, may be NULL), and its peak kind as the return value (f32 when there
 * is no row). */
dt_peak_kind dt_bench_backend(dt_dtype d, const dt_annotation *a, char *buf, int n);
/* The peak (opts.threads threads) that candidate c's %peak divides by:
 * peaks[cands[c].peak_kind]; NAN when that kind has no measurement. */
double dt_bench_cand_peak(const dt_bench_result *r, int c);
/* "bf16 110.4 GFLOP/s (1 thread 110.4), amx_bf16 3267.0 GFLOP/s (1 thread
 * 1633.5)": every measured peak, the dtype's first, into buf (size n);
 * returns buf. */
const char *dt_bench_peaks_text(const dt_bench_result *r, char *buf, int n);

#endif
