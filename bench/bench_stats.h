/* Reading a dt_bench_result: GFLOP/s of a candidate on a shape, the
 * strongest oneDNN peer of a shape, and the ratio statistics `dtune bench`
 * reports (geometric mean, minimum and where, count below a threshold).
 *
 * Ownership: plain values; results are borrowed. */
#ifndef DT_BENCH_BENCH_STATS_H
#define DT_BENCH_BENCH_STATS_H

#include "bench/bench.h"

/* GFLOP/s of candidate c on shape s; NAN when it was not timed there. */
double dt_bench_gflops(const dt_bench_result *r, int c, int s);

/* 1 for the peers built on oneDNN (onednn, onednn_rt, dnnl_sgemm). */
int dt_bench_is_onednn(const char *peer_name);

/* The highest GFLOP/s of a oneDNN peer on shape s (the "strongest oneDNN
 * peer": with a batched B, the 3-D batched matmul primitive, the run-time
 * dims primitive and the dnnl_sgemm batch loop); *which (may be NULL) gets
 * its candidate index.  NAN / -1 when no oneDNN peer ran. */
double dt_bench_onednn_best(const dt_bench_result *r, int s, int *which);

/* Ratios over shapes. */
typedef struct dt_ratio_stats {
    int n;            /* ratios added */
    double log_sum;
    double min;       /* INFINITY when n is 0 */
    int min_at;       /* the `at` of the minimum, -1 when n is 0 */
    double threshold; /* `below` counts ratios < threshold */
    int below;
} dt_ratio_stats;

void dt_ratio_stats_init(dt_ratio_stats *st, double threshold);
/* Adds ratio (ignored unless finite and > 0) observed at index `at`. */
void dt_ratio_stats_add(dt_ratio_stats *st, double ratio, int at);
/* Geometric mean; NAN when n is 0. */
double dt_ratio_stats_geomean(const dt_ratio_stats *st);

#endif
