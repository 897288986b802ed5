/* dtune_kernel_packed_size, dtune_kernel_pack, dtune_kernel_run: a loaded
 * kernel called through the loader's op hooks (microkernel/loader.h) on
 * the op's own dims, so that no caller computes a GEMM view or a packed
 * size itself.  Every argument is checked first: the caller is outside
 * dtune, and a wrong dim makes a kernel write out of bounds. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "libdtune/kernel_internal.h"

/* The problem of k at dims (the op's concrete dims, each checked the way
 * the op checks them: >= 1, sizes in int64, a convolution's window). */
static int problem(const char *fn, const dtune_kernel *k, const int64_t *dims, int ndims,
                   dt_gemm *g, dt_err *e)
{
    const dt_op_desc *op = k->kop.op;
    if (!dims)
        return dt_errf(e, DT_EINVAL, "%s: dims is NULL (%s's %d dims: %s)", fn, op->name,
                       op->ndims, k->info.dims);
    if (ndims != op->ndims)
        return dt_errf(e, DT_EINVAL, "%s: ndims is %d; %s has %d dims (%s)", fn, ndims,
                       op->name, op->ndims, k->info.dims);
    for (int i = 0; i < ndims; i++)
        if (dims[i] < 1)
            return dt_errf(e, DT_EINVAL, "%s: dim %s is %lld; every dim must be >= 1", fn,
                           op->dims[i], (long long)dims[i]);
    int rc = op->check ? op->check(dims, k->kop.attrs, e) : 0;
    if (!rc)
        rc = dt_op_gemm(op, k->kop.attrs, dims, g, e);
    return rc ? dt_err_prefix(e, "%s", fn) : 0;
}

DTUNE_API int dtune_kernel_packed_size(const dtune_kernel *k, const int64_t *dims, int ndims,
                                       size_t *bytes)
{
    const char *fn = "dtune_kernel_packed_size";
    if (!k || !bytes)
        return dt_lib_fail(DTUNE_EINVAL, !k ? "dtune_kernel_packed_size: k is NULL"
                                            : "dtune_kernel_packed_size: bytes is NULL");
    *bytes = 0;
    dt_err e;
    dt_gemm g;
    int rc = problem(fn, k, dims, ndims, &g, &e);
    if (!rc && g.b_const)
        *bytes = dt_kernel_packed_size(&k->k, &g);
    return dt_lib_status(rc, &e);
}

/* The pack's own arguments: a kernel that packs, weights, a large enough
 * buffer. */
static int check_pack(const dtune_kernel *k, const dt_gemm *g, const void *W, void *packed,
                      size_t packed_size, dt_err *e)
{
    const char *fn = "dtune_kernel_pack";
    if (!g->b_const)
        return dt_errf(e, DT_EINVAL, "%s: kernel %lld (%s) has no constant weights to pack: "
                       "pass B to dtune_kernel_run", fn, (long long)k->info.kernel_id,
                       k->info.op);
    if (!W || !packed)
        return dt_errf(e, DT_EINVAL, "%s: %s is NULL", fn, !W ? "W" : "packed");
    size_t need = dt_kernel_packed_size(&k->k, g);
    if (packed_size < need)
        return dt_errf(e, DT_EINVAL, "%s: packed_size is %zu bytes; these weights take %zu "
                       "(dtune_kernel_packed_size)", fn, packed_size, need);
    return 0;
}

DTUNE_API int dtune_kernel_pack(const dtune_kernel *k, const int64_t *dims, int ndims,
                                const void *W, const float *scale_b, void *packed,
                                size_t packed_size)
{
    if (!k)
        return dt_lib_fail(DTUNE_EINVAL, "dtune_kernel_pack: k is NULL");
    dt_err e;
    dt_gemm g;
    int rc = problem("dtune_kernel_pack", k, dims, ndims, &g, &e);
    if (!rc)
        rc = check_pack(k, &g, W, packed, packed_size, &e);
    if (!rc && (rc = dt_kernel_pack_checked(&k->k, &g, W, scale_b, packed, &e)))
        dt_err_prefix(&e, "dtune_kernel_pack");
    return dt_lib_status(rc, &e);
}

/* The tensors of a call against what k reads. */
static int check_tensors(const dtune_kernel *k, const dtune_kernel_args *a, dt_err *e)
{
    const char *fn = "dtune_kernel_run";
    const char *null = !a->a ? "a" : !a->b ? "b" : !a->c ? "c" : NULL;
    if (null)
        return dt_errf(e, DT_EINVAL, "%s: args->%s is NULL%s", fn, null,
                       !strcmp(null, "b") && k->info.packs_weights
                           ? " (the packed weights: dtune_kernel_pack)" : "");
    if (k->info.bias && !a->bias)
        return dt_errf(e, DT_EINVAL, "%s: kernel %lld adds a bias: args->bias is NULL", fn,
                       (long long)k->info.kernel_id);
    if (!k->info.bias && a->bias)
        return dt_errf(e, DT_EINVAL, "%s: kernel %lld has no bias (its epilogue has none): "
                       "args->bias must be NULL", fn, (long long)k->info.kernel_id);
    /* int8's zero point is one of A's u8 values, its scale a real factor */
    if (k->info.scale_a && (a->zp_a < 0 || a->zp_a > 255))
        return dt_errf(e, DT_EINVAL, "%s: zp_a is %d; A's zero point is a u8 value (0..255)",
                       fn, (int)a->zp_a);
    if (k->info.scale_a && !isfinite(a->scale_a))
        return dt_errf(e, DT_EINVAL, "%s: scale_a = %g is not a finite number", fn,
                       (double)a->scale_a);
    return 0;
}

DTUNE_API int dtune_kernel_run(const dtune_kernel *k, const dtune_kernel_args *args)
{
    if (!k || !args)
        return dt_lib_fail(DTUNE_EINVAL, !k ? "dtune_kernel_run: k is NULL"
                                            : "dtune_kernel_run: args is NULL");
    dt_err e;
    dt_gemm g;
    int rc = problem("dtune_kernel_run", k, args->dims, k->kop.op->ndims, &g, &e);
    if (!rc)
        rc = check_tensors(k, args, &e);
    if (rc)
        return dt_lib_status(rc, &e);
    dt_gemm_args ga = dt_gemm_args_contiguous(&g, args->a, args->b, args->bias, args->c,
                                              args->threads);
    ga.scale_a = args->scale_a;
    ga.zp_a = args->zp_a;
    dt_kernel_run(&k->k, &ga);
    return dt_lib_status(0, NULL);
}
