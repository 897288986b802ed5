/* lookup_bench: in-process dtune_lookup latency after the first lookup.
 *
 *   lookup_bench DB WORKLOAD [VAR LO HI] [REPEATS] [LOOKUPS] [OTHER=VALUE]
 *
 * Looks up WORKLOAD at the shapes VAR=LO..VAR=HI (default M=1..64) in turn,
 * a second variable held at OTHER=VALUE for a workload with two:
 * one first lookup (which loads the schedule), then REPEATS (default 20)
 * runs of LOOKUPS (default 200000) lookups each, cycling through the shapes.
 * Prints the minimum over the runs of the mean ns per lookup, for shapes
 * given as text (dtune_lookup) and as values (dtune_lookup_values).
 * scripts/bench_lookup.sh runs it. */
#include <dtune/dtune.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 6 && argc != 7 && argc != 8 && argc != 9) {
        fprintf(stderr, "usage: %s DB WORKLOAD [VAR LO HI] [REPEATS] [LOOKUPS] [OTHER=VALUE]\n",
                argv[0]);
        return 1;
    }
    /* a second variable at a fixed value: values go in the variables' order
     * (sorted by name, as the canonical key writes them) */
    const char *other = argc == 9 ? argv[8] : NULL, *eq = other ? strchr(other, '=') : NULL;
    if (other && (!eq || eq == other)) {
        fprintf(stderr, "OTHER=VALUE expected, got '%s'\n", other);
        return 1;
    }
    const int nv = other ? 2 : 1;
    const char *var = argc >= 6 ? argv[3] : "M";
    long lo = argc >= 6 ? atol(argv[4]) : 1, hi = argc >= 6 ? atol(argv[5]) : 64;
    int repeats = argc >= 7 ? atoi(argv[6]) : 20;
    long lookups = argc >= 8 ? atol(argv[7]) : 200000;
    if (lo < 1 || hi < lo || hi - lo >= 4096 || repeats < 1 || lookups < 1) {
        fprintf(stderr, "bad range, repeats or lookups\n");
        return 1;
    }
    int n = (int)(hi - lo + 1);
    char(*text)[64] = malloc((size_t)n * sizeof *text);
    int64_t *vals = malloc((size_t)(n * nv) * sizeof *vals);
    const int var_first = !other || strncmp(var, other, (size_t)(eq - other)) < 0;
    for (int i = 0; i < n; i++) {
        snprintf(text[i], sizeof text[i], "%s=%ld%s%s", var, lo + i, other ? "," : "",
                 other ? other : "");
        vals[i * nv + (var_first ? 0 : 1)] = lo + i;
        if (other)
            vals[i * nv + (var_first ? 1 : 0)] = atol(eq + 1);
    }
    dtune *db = NULL;
    if (dtune_open(argv[1], &db) != DTUNE_OK) {
        fprintf(stderr, "%s\n", dtune_errmsg());
        return 2;
    }
    dtune_schedule s;
    double t0 = now_ns();
    if (dtune_lookup(db, argv[2], text[0], NULL, 0, &s) != DTUNE_OK) {
        fprintf(stderr, "%s\n", dtune_errmsg());
        return 2;
    }
    double first = now_ns() - t0;
    int64_t sink = 0;
    for (int by_values = 0; by_values < 2; by_values++) {
        double best = 1e300;
        for (int r = 0; r < repeats; r++) {
            double t = now_ns();
            for (long i = 0; i < lookups; i++) {
                int k = (int)(i % n);
                int rc = by_values ? dtune_lookup_values(db, argv[2], &vals[k * nv], nv, NULL, 0,
                                                         &s)
                                   : dtune_lookup(db, argv[2], text[k], NULL, 0, &s);
                if (rc != DTUNE_OK) {
                    fprintf(stderr, "%s\n", dtune_errmsg());
                    return 2;
                }
                sink += s.kernel_id;
            }
            double mean = (now_ns() - t) / (double)lookups;
            if (mean < best)
                best = mean;
        }
        printf("%-20s %8.1f ns per lookup (min over %d runs of the mean of %ld lookups "
               "over %d shapes; target < 1000 ns)\n",
               by_values ? "dtune_lookup_values" : "dtune_lookup", best, repeats, lookups, n);
    }
    printf("first lookup (loads the schedule): %.1f us; workload %s, target %s, %d thread%s\n",
           first * 1e-3, s.workload, s.target, s.threads, s.threads == 1 ? "" : "s");
    dtune_close(db);
    free(text);
    free(vals);
    return sink == 0 ? 3 : 0;
}
