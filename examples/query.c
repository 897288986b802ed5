/* query: look up the tuned micro-kernel of a workload at a few shapes with
 * libdtune, print what the schedule says, and fetch the kernel's C source.
 *
 * Build (after `cmake --install`):
 *   cc -O2 query.c -o query $(pkg-config --cflags --libs dtune)
 * Run:
 *   ./query dtune.db 'dense(M=1..64,N=256,K=256)' M=1 M=37 M=500
 *
 * Copy freely: it uses nothing but <dtune/dtune.h>. */
#include <dtune/dtune.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void print_ns(const char *what, double ns)
{
    if (isnan(ns))
        printf("  %-10s unknown\n", what);
    else
        printf("  %-10s %.2f us\n", what, ns * 1e-3);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s DB WORKLOAD [SHAPE ...]\n"
                        "  e.g. %s dtune.db 'dense(M=1..64,N=256,K=256)' M=1 M=37 M=500\n",
                argv[0], argv[0]);
        return 1;
    }
    const char *path = argv[1], *workload = argv[2];
    const char *fallback[] = {"M=1", "M=37", "M=500"};
    const char **shapes = argc > 3 ? (const char **)argv + 3 : fallback;
    int nshapes = argc > 3 ? argc - 3 : 3;

    printf("libdtune %s\n", dtune_version());
    dtune *db = NULL;
    if (dtune_open(path, &db) != DTUNE_OK) {
        fprintf(stderr, "cannot open %s: %s\n", path, dtune_errmsg());
        return 2;
    }

    int rc = 0;
    long long first_kernel = -1;
    for (int i = 0; i < nshapes; i++) {
        dtune_schedule s;
        /* NULL target: this machine; 0 threads: the highest count tuned */
        if (dtune_lookup(db, workload, shapes[i], NULL, 0, &s) != DTUNE_OK) {
            fprintf(stderr, "%s at %s: %s\n", workload, shapes[i], dtune_errmsg());
            rc = 2;
            continue;
        }
        printf("%s %s -> kernel %lld (%s %s%s)\n", s.workload, s.shape, (long long)s.kernel_id,
               s.op, s.sketch, s.extrapolated ? ", extrapolated" : "");
        printf("  range      %s .. %s, %d thread%s, target %s\n", s.range_lo, s.range_hi,
               s.threads, s.threads == 1 ? "" : "s", s.target);
        printf("  annotation %s\n", s.annotation);
        print_ns("predicted", s.predicted_ns);
        print_ns("measured", s.measured_ns);
        if (first_kernel < 0)
            first_kernel = (long long)s.kernel_id;
    }

    if (first_kernel >= 0) {
        /* the C source of the kernel, generated for this workload's op */
        char *src = NULL;
        if (dtune_kernel_source(db, first_kernel, workload, &src) != DTUNE_OK) {
            fprintf(stderr, "source of kernel %lld: %s\n", first_kernel, dtune_errmsg());
            rc = 2;
        } else {
            const char *abi = strstr(src, "dtk_abi_version") ? "exports dtk_abi_version"
                                                             : "no ABI symbol?";
            printf("kernel %lld: %zu bytes of C, %s\n", first_kernel, strlen(src), abi);
            dtune_free(src);
        }
    }
    dtune_close(db);
    return rc;
}
