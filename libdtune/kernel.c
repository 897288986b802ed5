/* dtune_kernel_load, dtune_kernel_close, dtune_kernel_info_get: a stored
 * kernel built by dtune's own builder (microkernel/build.c: its cache
 * directory, names and flags) and loaded by dtune's own loader
 * (microkernel/loader.c), so that a client (the TVM client, the Python
 * package) has one build recipe, this one, instead of a copy that must be
 * kept equal to it by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "common/target.h"
#include "export/export.h"
#include "libdtune/kernel_internal.h"
#include "microkernel/build.h"
#include "space/annotation.h"

/* What the kernels row of id says, decoded: the op and the back-end row. */
typedef struct {
    dt_kernel_op kop;
    dt_annotation ann;
    const dt_backend *backend;
    char *src;
} stored_kernel;

/* e's message restated as a damaged row of db: DTUNE_EDB ("a stored row is
 * damaged"), not the DT_EINVAL the decoders use for bad input, which would
 * blame the caller's arguments. */
static int damaged(dt_db *db, int64_t id, dt_err *e)
{
    char why[DT_ERR_MSG_MAX];
    snprintf(why, sizeof why, "%s", e->msg);
    return dt_errf(e, DT_EDB, "kernel %lld in %s: its stored row is damaged: %s (run `dtune db "
                   "check --db %s`)", (long long)id, dt_db_path(db), why, dt_db_path(db));
}

/* Reads and decodes row id, then regenerates its source the one way
 * (dt_export_kernel_source, as dtune_kernel_source).  Caller holds db->mu. */
static int read_stored(dt_db *db, int64_t id, stored_kernel *sk, dt_err *e)
{
    dt_db_kernel row;
    int rc = dt_db_kernel_get(db, id, &row, e);
    if (rc) {
        if (rc == DT_ENOTFOUND)
            dt_errf(e, rc, "no kernel %lld in %s", (long long)id, dt_db_path(db));
        return rc;
    }
    rc = dt_kernel_op_from_row(row.op, row.dtype, row.attrs, &sk->kop, e);
    if (!rc)
        rc = dt_annotation_from_text(row.annotation, &sk->ann, e);
    if (!rc && !(sk->backend = dt_backend_of_ann(sk->kop.dtype, &sk->ann)))
        rc = dt_errf(e, DT_EINVAL, "its annotation names no back-end of dtype %s",
                     dt_dtype_name(sk->kop.dtype));
    dt_db_kernel_free(&row);
    if (rc == DT_EUNSUPPORTED)
        return dt_err_prefix(e, "kernel %lld", (long long)id);
    if (rc && rc != DT_ENOMEM)
        return damaged(db, id, e);
    return dt_export_kernel_source(db, id, &sk->src, e);
}

/* DT_EUNSUPPORTED unless this machine runs the kernel's back-end: a kernel
 * tuned elsewhere (AVX-512, AMX) would not compile here, or would stop the
 * process with SIGILL. */
static int check_runs_here(int64_t id, const dt_backend *b, dt_err *e)
{
    dt_target t;
    const char *why = NULL;
    char name[DTUNE_NAME_MAX];
    int rc = dt_target_detect(&t, e);
    if (rc || dt_backend_usable(b, &t, &why))
        return rc;
    return dt_errf(e, DT_EUNSUPPORTED, "kernel %lld runs on %s, which this machine does not "
                   "run%s%s", (long long)id, dt_backend_full_name(b, name, sizeof name),
                   why ? ": " : "", why ? why : "");
}

/* The builder of db, made on first use (caller holds db->mu). */
static int builder_of(dtune *db, const dt_builder **out, dt_err *e)
{
    if (!db->builder) {
        dt_builder *b = malloc(sizeof *b);
        if (!b)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        int rc = dt_builder_init(b, NULL, NULL, NULL, e);
        if (rc) {
            free(b);
            return rc;
        }
        db->builder = b;
    }
    *out = db->builder;
    return 0;
}

/* Compiles src with dtune's builder (a cache hit when it was built before)
 * and loads the result into k. */
static int build_and_load(const dt_builder *b, int64_t id, const char *src, dt_kernel *k,
                          dtune_kernel_info *info, dt_err *e)
{
    dt_build_result r;
    int rc = dt_build_one(b, src, &r, e);
    if (rc)
        return rc;
    if (r.status == DT_BUILD_COMPILE_ERROR)
        rc = dt_errf(e, DT_EUNSUPPORTED, "kernel %lld: %s failed to compile it (%s/%s.c): "
                     "%.600s", (long long)id, b->cc, b->cache_dir, r.hash, r.log ? r.log : "");
    else if (r.status != DT_BUILD_OK)
        rc = dt_errf(e, DT_EIO, "kernel %lld: building it failed (%s): %.600s", (long long)id,
                     dt_build_status_name(r.status), r.log ? r.log : "");
    if (!rc) {
        info->cache_hit = r.cache_hit;
        snprintf(info->path, sizeof info->path, "%s", r.so_path);
        rc = dt_kernel_load(r.so_path, k, e);
    }
    dt_build_result_free(&r);
    return rc;
}

/* info's names and needs, from the decoded row. */
static void describe(const stored_kernel *sk, const dt_gemm *g, dtune_kernel_info *info)
{
    const dt_op_desc *op = sk->kop.op;
    dt_dtype d = sk->kop.dtype;
    snprintf(info->op, sizeof info->op, "%s", op->name);
    snprintf(info->dtype, sizeof info->dtype, "%s", dt_dtype_name(d));
    dt_backend_full_name(sk->backend, info->backend, sizeof info->backend);
    info->ndims = op->ndims;
    size_t n = 0;
    for (int i = 0; i < op->ndims && n < sizeof info->dims; i++)
        n += (size_t)snprintf(info->dims + n, sizeof info->dims - n, "%s%s", i ? "," : "",
                              op->dims[i]);
    info->packs_weights = g->b_const;
    info->bias = g->bias;
    info->scale_a = dt_dtype_a_quantized(d);
    info->scale_b = g->b_const && dt_dtype_quantized(d);
    info->a_bytes = dt_dtype_a_size(d);
    info->b_bytes = dt_dtype_b_size(d);
    info->c_bytes = dt_dtype_c_size(d);
    /* the packed B depends on the back-end row and NR only
     * (docs/microkernels.md, "ABI") */
    if (g->b_const)
        snprintf(info->packed_layout, sizeof info->packed_layout, "%.40s nr=%d", info->backend,
                 sk->ann.nr);
}

/* Everything but the build, under the handle's lock (its connection). */
static int prepare(dtune *db, int64_t id, stored_kernel *sk, const dt_builder **b,
                   dt_gemm *g, dt_err *e)
{
    pthread_mutex_lock(&db->mu);
    int rc = read_stored(db->db, id, sk, e);
    if (!rc)
        rc = builder_of(db, b, e);
    pthread_mutex_unlock(&db->mu);
    if (!rc)
        rc = dt_kernel_op_gemm(&sk->kop, g, e);
    if (!rc)
        rc = check_runs_here(id, sk->backend, e);
    return rc;
}

/* The loaded kernel must be the row's op and dtype: a cache file that is
 * something else (damaged, or written by hand) is refused. */
static int check_loaded(const dtune_kernel *k, dt_err *e)
{
    if (dt_kernel_computes(&k->k, &k->kop))
        return 0;
    return dt_errf(e, DT_EIO, "kernel %lld: %s does not export the entry points of a %s %s "
                   "kernel (remove it from the kernel cache)", (long long)k->info.kernel_id,
                   k->info.path, k->info.op, k->info.dtype);
}

DTUNE_API int dtune_kernel_load(dtune *db, int64_t kernel_id, dtune_kernel **out)
{
    if (!out)
        return dt_lib_fail(DTUNE_EINVAL, "dtune_kernel_load: out is NULL");
    *out = NULL;
    int rc = dt_lib_check_kernel_id("dtune_kernel_load", db, kernel_id);
    if (rc)
        return rc;
    dt_err e;
    stored_kernel sk = {0};
    const dt_builder *b = NULL;
    dt_gemm g;
    dtune_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return dt_lib_fail(DTUNE_ENOMEM, "dtune_kernel_load: out of memory");
    k->info.kernel_id = kernel_id;
    rc = prepare(db, kernel_id, &sk, &b, &g, &e);
    if (!rc) {
        k->kop = sk.kop;
        describe(&sk, &g, &k->info);
        /* outside the lock: a compile takes seconds, lookups and sources
         * on the handle go on meanwhile */
        rc = build_and_load(b, kernel_id, sk.src, &k->k, &k->info, &e);
    }
    if (!rc)
        rc = check_loaded(k, &e);
    free(sk.src);
    if (rc) {
        dtune_kernel_close(k);
        return dt_lib_status(rc, &e);
    }
    *out = k;
    return dt_lib_status(0, NULL);
}

DTUNE_API void dtune_kernel_close(dtune_kernel *k)
{
    if (!k)
        return;
    dt_kernel_unload(&k->k);
    free(k);
}

DTUNE_API int dtune_kernel_info_get(const dtune_kernel *k, dtune_kernel_info *out)
{
    if (!k || !out)
        return dt_lib_fail(DTUNE_EINVAL, !k ? "dtune_kernel_info_get: k is NULL (load one "
                                              "with dtune_kernel_load)"
                                            : "dtune_kernel_info_get: out is NULL");
    *out = k->info;
    return dt_lib_status(0, NULL);
}
