#include "microkernel/loader.h"

#include <dlfcn.h>
#include <math.h>
#include <string.h>

#include "microkernel/mk_op.h"

dt_gemm_args dt_gemm_args_contiguous(const dt_gemm *g, const void *A, const void *B,
                                     const float *bias, void *C, int threads)
{
    return (dt_gemm_args){.batch = g->batch, .M = g->M, .N = g->N, .K = g->K,
                          .a = A, .lda = g->K, .sa = g->M * g->K,
                          .b = B, .ldb = g->b_trans ? g->K : g->N, .sb = g->N * g->K,
                          .bias = g->bias ? bias : NULL,
                          .c = C, .ldc = g->N, .sc = g->M * g->N, .threads = threads,
                          .dims = g->op ? g->dims : NULL, .attrs = g->op ? g->attrs : NULL};
}

/* Resolves m's entry points in h; 1 when all are there. */
static int bind(void *h, const dt_mk_op *m, dt_kernel *k)
{
    for (int i = 0; i < m->nsyms; i++) {
        /* function pointers from dlsym: the POSIX-sanctioned conversion */
        *(void **)&k->fn[i] = dlsym(h, m->syms[i]);
        if (!k->fn[i])
            return 0;
    }
    k->op = m;
    return 1;
}

int dt_kernel_load(const char *so_path, dt_kernel *k, dt_err *e)
{
    memset(k, 0, sizeof *k);
    /* Kernels use OpenMP.  If this process did not link libgomp itself, the
     * first kernel loads it and closing the last kernel would unload it under
     * its own idle worker threads; pin it for the life of the process. */
    dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    void *h = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return dt_errf(e, DT_EIO, "cannot load kernel %s: %s", so_path, dlerror());
    const int *abi = dlsym(h, "dtk_abi_version");
    if (!abi || *abi != DT_KERNEL_ABI) {
        dlclose(h);
        return dt_errf(e, DT_EINVAL, "%s is not a dtune kernel of ABI %d", so_path,
                       DT_KERNEL_ABI);
    }
    k->handle = h;
    k->info = dlsym(h, "dtk_info");
    for (int i = 0; i < dt_mk_op_count() && !k->op; i++)
        if (!bind(h, dt_mk_op_at(i), k))
            memset(k->fn, 0, sizeof k->fn);
    if (!k->op) {
        dt_kernel_unload(k);
        return dt_errf(e, DT_EINVAL, "%s exports no dtune entry point", so_path);
    }
    return 0;
}

void dt_kernel_unload(dt_kernel *k)
{
    if (k && k->handle)
        dlclose(k->handle);
    if (k)
        memset(k, 0, sizeof *k);
}

int dt_kernel_computes(const dt_kernel *k, const dt_kernel_op *kop)
{
    /* a row of (op, dtype): the GEMM view's or one of the op's own sketches */
    return k->op && k->op->op == kop->op && k->op->backend->dtype == kop->dtype;
}

void dt_kernel_run(const dt_kernel *k, const dt_gemm_args *a) { k->op->run(k, a); }

size_t dt_kernel_packed_size(const dt_kernel *k, const dt_gemm *g)
{
    return k->op->packed_size ? k->op->packed_size(k, g) : 0;
}

void dt_kernel_pack(const dt_kernel *k, const dt_gemm *g, const void *B, const float *scale_b,
                    void *packed)
{
    if (k->op->pack)
        k->op->pack(k, g, B, scale_b, packed);
}

int dt_kernel_pack_checked(const dt_kernel *k, const dt_gemm *g, const void *B,
                           const float *scale_b, void *packed, dt_err *e)
{
    if (k->op->pack && dt_dtype_quantized(k->op->backend->dtype)) {
        if (!scale_b)
            return dt_errf(e, DT_EINVAL, "scale_b is NULL: dtype %s needs one finite non-zero "
                           "weight scale per output channel",
                           dt_dtype_name(k->op->backend->dtype));
        for (int64_t n = 0; n < g->N; n++)
            if (!isfinite(scale_b[n]) || scale_b[n] == 0.0f)
                return dt_errf(e, DT_EINVAL, "scale_b[%lld] = %g is not a finite non-zero number",
                               (long long)n, (double)scale_b[n]);
    }
    dt_kernel_pack(k, g, B, scale_b, packed);
    return 0;
}
