/* Reading a dt_bench_result (bench/bench_stats.h). */
#include "bench/bench_stats.h"

#include <math.h>
#include <string.h>

double dt_bench_gflops(const dt_bench_result *r, int c, int s)
{
    double sec = r->seconds[c * r->nshapes + s];
    return sec > 0 && !isinf(sec) ? r->gflop[s] / sec : NAN;
}

int dt_bench_is_onednn(const char *peer_name)
{
    return strncmp(peer_name, "onednn", 6) == 0 || strncmp(peer_name, "dnnl", 4) == 0;
}

double dt_bench_onednn_best(const dt_bench_result *r, int s, int *which)
{
    double best = NAN;
    int at = -1;
    for (int c = 0; c < r->ncands; c++) {
        if (r->cands[c].kind != DT_CAND_PEER || !dt_bench_is_onednn(r->cands[c].name))
            continue;
        double g = dt_bench_gflops(r, c, s);
        if (g > 0 && !(best >= g)) {
            best = g;
            at = c;
        }
    }
    if (which)
        *which = at;
    return best;
}

void dt_ratio_stats_init(dt_ratio_stats *st, double threshold)
{
    *st = (dt_ratio_stats){0, 0.0, INFINITY, -1, threshold, 0};
}

void dt_ratio_stats_add(dt_ratio_stats *st, double ratio, int at)
{
    if (!(ratio > 0) || isinf(ratio))
        return;
    st->n++;
    st->log_sum += log(ratio);
    if (ratio < st->min) {
        st->min = ratio;
        st->min_at = at;
    }
    if (ratio < st->threshold)
        st->below++;
}

double dt_ratio_stats_geomean(const dt_ratio_stats *st)
{
    return st->n ? exp(st->log_sum / st->n) : NAN;
}
