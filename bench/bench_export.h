/* The exported C of a dispatch table (`dtune export`, docs/export.md) as a
 * `dtune bench` candidate: NAME.c is built with the kernels' compiler and
 * flags (microkernel/build.h, cached), loaded with dlopen, and its entry
 * point called per shape with the dtype's tensors and, for int8, A's scale
 * and zero point; constant weights go through NAME_pack once (with the
 * weight scales of a quantized dtype).
 *
 * Ownership: dt_bench_export_load fills a dt_bench_export that owns its
 * packed buffer and the loaded object (never unloaded: the OpenMP runtime it
 * pulls in must outlive its idle threads); dt_bench_export_free releases the
 * buffer.  x->ext points into x. */
#ifndef DT_BENCH_BENCH_EXPORT_H
#define DT_BENCH_BENCH_EXPORT_H

#include <stddef.h>

#include "bench/bench.h"
#include "common/error.h"
#include "microkernel/build.h"
#include "shape/workload.h"

typedef struct dt_bench_export {
    dt_bench_extern ext;   /* name "export" */
    char name[72];         /* NAME: the basename of the file without .c */
    char so_path[4096];
    int threads;           /* the thread count the file was exported for */
    int nvars, wconst, bias; /* the op's GEMM view: constant weights, a bias */
    int qa, qb;            /* the dtype's ABI: NAME takes scale_a, zp_a (int8);
                              NAME_pack takes scale_b (int8, w8a32) */
    void *entry;           /* NAME */
    size_t (*packed_size)(void);
    void (*pack)(void);    /* NAME_pack, called as the dtype's signature (docs/export.md) */
    void *packed;          /* constant weights: NAME_pack's output */
} dt_bench_export;

/* Reads c_path (…/NAME.c), checks that it exports workload w (its
 * "dtune-export-workload:" line; DT_EINVAL otherwise), builds and loads it.
 * DT_ENOTFOUND for a missing file, DT_EINVAL for one that is not an
 * exported file or does not compile (with the compiler's first lines). */
int dt_bench_export_load(const char *c_path, const dt_workload *w, const dt_builder *b,
                         dt_bench_export *x, dt_err *e);
void dt_bench_export_free(dt_bench_export *x);

#endif
