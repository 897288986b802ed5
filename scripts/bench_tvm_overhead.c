/* The TVM client's per-call overhead: dtune.dense called through TVM FFI
 * (TVMFFIFunctionCall on the global function, as TVM's runtime calls a
 * packed function: a string key and DLTensor arguments; inside, the shape
 * is read, libdtune looks the kernel up, the packed weights are found) against
 * the exported C of the same schedule called directly (dtune export: its
 * own compiled-in dispatch, weights packed by the caller).  Both run the
 * same kernels on the same buffers; the difference is the client's cost.
 *
 *   bench_tvm_overhead CLIENT_SO DB KEY N K EXPORT_SO [M ...]
 *
 * EXPORT_SO is `dtune export KEY --db DB --name dtx --threads 1`'s dtx.c
 * compiled with the kernel flags (scripts/bench_tvm_overhead.sh does it).
 * Single thread.  Per M: ROUNDS rounds, each timing CALLS calls of one
 * path then CALLS of the other; the per-call minimum and median over the
 * rounds of each, and their difference.  One JSON line per M on stdout. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <dlpack/dlpack.h>
#include <tvm/ffi/c_api.h>

#define ROUNDS 300
#define CALLS 20

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: %s CLIENT_SO DB KEY N K EXPORT_SO M [M ...]\n", argv[0]);
        return 1;
    }
    const char *key = argv[3];
    int64_t N = atoll(argv[4]), K = atoll(argv[5]);
    int bias = strstr(key, "epilogue=bias") != NULL;
    if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void *ex = dlopen(argv[6], RTLD_NOW | RTLD_LOCAL);
    if (!ex) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    size_t (*ex_size)(void) = (size_t(*)(void))dlsym(ex, "dtx_packed_size");
    void (*ex_pack)(const float *, float *) = (void (*)(const float *, float *))dlsym(ex, "dtx_pack");
    void (*ex_run)(int64_t, const float *, const float *, float *, const float *) =
        (void (*)(int64_t, const float *, const float *, float *, const float *))dlsym(ex, "dtx");
    if (!ex_size || !ex_pack || !ex_run) {
        fprintf(stderr, "%s: no dtx, dtx_pack, dtx_packed_size\n", argv[6]);
        return 1;
    }
    TVMFFIObjectHandle open = NULL, dense = NULL;
    TVMFFIByteArray n1 = {"dtune.open", 10}, n2 = {"dtune.dense", 11};
    if (TVMFFIFunctionGetGlobal(&n1, &open) || TVMFFIFunctionGetGlobal(&n2, &dense) || !open ||
        !dense) {
        fprintf(stderr, "the client's functions are not registered\n");
        return 1;
    }
    TVMFFIAny oa[2] = {{.type_index = kTVMFFIRawStr, .v_c_str = argv[2]},
                       {.type_index = kTVMFFIInt, .v_int64 = 1}};
    TVMFFIAny r = {.type_index = kTVMFFINone};
    if (TVMFFIFunctionCall(open, oa, 2, &r)) {
        fprintf(stderr, "dtune.open failed\n");
        return 1;
    }
    int64_t maxM = 0;
    for (int i = 7; i < argc; i++)
        maxM = atoll(argv[i]) > maxM ? atoll(argv[i]) : maxM;
    float *X = aligned_alloc(64, (size_t)(maxM * K * 4 + 64)), *W = malloc((size_t)(N * K * 4));
    float *Y = aligned_alloc(64, (size_t)(maxM * N * 4 + 64)), *b = calloc((size_t)N, 4);
    /* the exported path's packed weights placed as the client places its
     * own (2 MB-aligned from 2 MB, huge pages asked for): placed
     * differently, a 768x768 layer's 2.4 MB ran 10-35 % slower or faster
     * from one process to the next, whichever path had the luckier pages */
    size_t bytes = ex_size(), align = bytes >= (1u << 21) ? (1u << 21) : 64;
    float *packed = NULL;
    if (posix_memalign((void **)&packed, align, (bytes + 63) / 64 * 64))
        return 1;
    if (align > 64)
        madvise(packed, bytes, MADV_HUGEPAGE);
    for (int64_t i = 0; i < maxM * K; i++)
        X[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (int64_t i = 0; i < N * K; i++)
        W[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    ex_pack(W, packed);
    /* the TVM tensors: a key string, then X, W, [bias,] Y as DLTensor pointers */
    int64_t xs[2] = {0, K}, ws[2] = {N, K}, bs[1] = {N}, ys[2] = {0, N};
    DLTensor tx = {X, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, xs, NULL, 0};
    DLTensor tw = {W, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, ws, NULL, 0};
    DLTensor tb = {b, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, bs, NULL, 0};
    DLTensor ty = {Y, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, ys, NULL, 0};
    TVMFFIAny args[5] = {{.type_index = kTVMFFIRawStr, .v_c_str = key},
                         {.type_index = kTVMFFIDLTensorPtr, .v_ptr = &tx},
                         {.type_index = kTVMFFIDLTensorPtr, .v_ptr = &tw},
                         {.type_index = kTVMFFIDLTensorPtr, .v_ptr = bias ? &tb : &ty},
                         {.type_index = kTVMFFIDLTensorPtr, .v_ptr = &ty}};
    int nargs = bias ? 5 : 4;
    static double t_ex[ROUNDS], t_tvm[ROUNDS], d[ROUNDS];
    for (int i = 7; i < argc; i++) {
        int64_t M = atoll(argv[i]);
        xs[0] = ys[0] = M;
        for (int w = 0; w < 50; w++) { /* warm: kernels loaded, weights packed */
            ex_run(M, X, packed, Y, bias ? b : NULL);
            if (TVMFFIFunctionCall(dense, args, nargs, &r)) {
                fprintf(stderr, "dtune.dense failed at M=%lld\n", (long long)M);
                return 1;
            }
        }
        for (int k = 0; k < ROUNDS; k++) {
            double t0 = now_ns();
            for (int c = 0; c < CALLS; c++)
                ex_run(M, X, packed, Y, bias ? b : NULL);
            double t1 = now_ns();
            for (int c = 0; c < CALLS; c++)
                TVMFFIFunctionCall(dense, args, nargs, &r);
            double t2 = now_ns();
            t_ex[k] = (t1 - t0) / CALLS, t_tvm[k] = (t2 - t1) / CALLS;
            d[k] = t_tvm[k] - t_ex[k];
        }
        qsort(t_ex, ROUNDS, sizeof(double), cmp);
        qsort(t_tvm, ROUNDS, sizeof(double), cmp);
        qsort(d, ROUNDS, sizeof(double), cmp);
        printf("{\"M\": %lld, \"export_min_ns\": %.1f, \"export_median_ns\": %.1f, "
               "\"tvm_min_ns\": %.1f, \"tvm_median_ns\": %.1f, \"overhead_min_ns\": %.1f, "
               "\"overhead_median_ns\": %.1f, \"overhead_of_medians_ns\": %.1f}\n",
               (long long)M, t_ex[0], t_ex[ROUNDS / 2], t_tvm[0], t_tvm[ROUNDS / 2],
               t_tvm[0] - t_ex[0], d[ROUNDS / 2], t_tvm[ROUNDS / 2] - t_ex[ROUNDS / 2]);
        fflush(stdout);
    }
    return 0;
}
