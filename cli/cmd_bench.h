/* Private to `dtune bench` (cli/cmd_bench.c, cli/cmd_bench_db.c): its
 * parsed arguments and the dispatched mode (--db). */
#ifndef DT_CLI_CMD_BENCH_H
#define DT_CLI_CMD_BENCH_H

#include <jansson.h>
#include <stdint.h>

#include "bench/bench.h"

typedef struct dt_bench_args {
    const char *kernel_file, *shapes, *peers, *db;
    const char *export_c;   /* --export NAME.c */
    int sample, threads, threads_set, repeats, json, verify;
    double min_time_ms;
    uint64_t seed;
} dt_bench_args;

/* `dtune bench KEY --db PATH`: for every shape, the kernel the database's
 * schedule dispatches it to, verified on that shape and timed with the
 * peers.  With --export NAME.c (the database then defaults to
 * dt_cli_default_db), the exported file's entry point is timed instead, the
 * schedule labelling each shape's range and kernel.  Returns the exit code. */
int dt_cmd_bench_db(const dt_bench_args *a, const char *key);

/* Every peak measured in r, by kind name: {"bf16": {"gops": 110.4,
 * "gops_1thread": 110.4, "unit": "GFLOP/s"}, "amx_bf16": {...}}; new
 * reference. */
json_t *dt_bench_peaks_json(const dt_bench_result *r);

#endif
