/* The plan of an exported file: the dispatch table of (workload, target,
 * threads), its distinct kernels, the packing groups of constant weights,
 * and C names. */
#include "export/export_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/target.h"
#include "microkernel/mk_op.h"

void dt_export_plan_free(dt_export_plan *p)
{
    if (!p)
        return;
    dt_dispatch_free(p->d);
    free(p->k);
    free(p->range_kernel);
    free(p->pack);
    free(p->var);
    free(p);
}

/* Whether n is a tensor parameter name of any op's exported functions. */
static int is_param(const char *n)
{
    for (int o = 0; o < dt_export_op_count(); o++)
        for (int i = 0; i < DT_EXPORT_MAX_PARAMS && dt_export_op_at(o)->params[i]; i++)
            if (strcmp(n, dt_export_op_at(o)->params[i]) == 0)
                return 1;
    return 0;
}

/* C parameter names of the variables: the variable's own name unless it
 * would clash with a keyword, a library name (errno, NAN: the checks NAME
 * meets), a tensor parameter or the file's own names. */
static void name_vars(dt_export_plan *p)
{
    for (int v = 0; v < p->w->nvars; v++) {
        const char *n = p->w->vars[v].name;
        char why[160];
        int clash = !dt_export_name_check(n, why, sizeof why) ||
                    strncmp(n, p->name, strlen(p->name)) == 0 || is_param(n);
        snprintf(p->var[v], sizeof p->var[v], clash ? "%s_var" : "%s", n);
    }
}

static int64_t round64(int64_t bytes) { return (bytes + 63) / 64 * 64; }


/* The GEMM view's N and K of w with every dim its constant, or v where
 * it varies, except dim `vary` (-1: none) at v + 1. */
static int view_nk(const dt_export_plan *p, int vary, int64_t v, int64_t *n, int64_t *k,
                   dt_err *e)
{
    const dt_workload *w = p->w;
    int64_t dims[DT_MAX_DIMS];
    for (int d = 0; d < w->op->ndims; d++)
        dims[d] = w->dims[d]->kind == DT_EXPR_CONST ? w->dims[d]->value : d == vary ? v + 1 : v;
    dt_gemm g;
    int rc = dt_op_gemm(w->op, p->kop.attrs, dims, &g, e);
    *n = g.N;
    *k = g.K;
    return rc;
}

/* The stored elements of the weights (the op's b_elems) with every dim its
 * constant, or v where it varies. */
static int64_t stored_elems(const dt_export_plan *p, int64_t v)
{
    const dt_workload *w = p->w;
    int64_t dims[DT_MAX_DIMS];
    for (int d = 0; d < w->op->ndims; d++)
        dims[d] = w->dims[d]->kind == DT_EXPR_CONST ? w->dims[d]->value : v;
    return w->op->b_elems(dims, p->kop.attrs);
}

/* The view's B of weights stored otherwise than N×K (an op with b_row: a
 * grouped convolution's) as G diagonal blocks of N/G × K/G, G derived from
 * the count of stored elements, b_elems = G · (N/G) · (K/G) = N·K / G, so
 * that no op is named here.  Anything else is refused. */
static int weights_groups(dt_export_plan *p, dt_err *e)
{
    p->G = 1;
    p->Ng = p->N;
    p->Kg = p->K;
    if (!p->w->op->b_row)
        return 0;
    const int64_t be = stored_elems(p, 1), nk = p->N * p->K;
    if (be == nk)
        return 0;
    int64_t G = be > 0 && nk % be == 0 ? nk / be : 0;
    /* b_elems must not vary either: checked at a second value */
    if (!G || p->N % G || p->K % G || stored_elems(p, 8) != be)
        return dt_errf(e, DT_EUNSUPPORTED, "%s: its weights are stored in a layout exported "
                       "code cannot pack (%lld elements, not G diagonal blocks of %s's %lld x "
                       "%lld view)", p->d->key, (long long)be, p->w->op->name,
                       (long long)p->N, (long long)p->K);
    p->G = G;
    p->Ng = p->N / G;
    p->Kg = p->K / G;
    DT_ASSERT(p->G * p->Ng == p->N && p->G * p->Kg == p->K && p->G * p->Ng * p->Kg == be,
              "the weights are G diagonal blocks of Ng x Kg holding every stored element");
    return 0;
}

/* The constant N and K of the weights: a role's own dim must be a constant;
 * a size derived from several dims (conv2d's K = R*S*C) must not change with
 * any dim that varies (each varied alone, at 1 and 2 and at 7 and 8); then
 * their diagonal blocks (weights_groups). */
static int weights_nk(dt_export_plan *p, dt_err *e)
{
    const dt_workload *w = p->w;
    int role[2] = {p->g.dim[DT_ROLE_N], p->g.dim[DT_ROLE_K]};
    for (int r = 0; r < 2; r++)
        if (role[r] >= 0 && w->dims[role[r]]->kind != DT_EXPR_CONST)
            return dt_errf(e, DT_EUNSUPPORTED, "%s: exported %s code needs constant N and K "
                           "(the weights are packed once)", p->d->key, w->op->name);
    int rc = view_nk(p, -1, 1, &p->N, &p->K, e);
    char varying[256] = "";
    size_t len = 0;
    for (int d = 0; !rc && d < w->op->ndims; d++) {
        if (w->dims[d]->kind == DT_EXPR_CONST)
            continue;
        int changes = 0;
        static const int64_t at[2] = {1, 7};
        for (int i = 0; !rc && i < 2; i++) {
            int64_t n0, k0, n1, k1;
            if (!(rc = view_nk(p, -1, at[i], &n0, &k0, e)) &&
                !(rc = view_nk(p, d, at[i], &n1, &k1, e)))
                changes |= n0 != n1 || k0 != k1;
        }
        if (changes && len < sizeof varying)
            len += (size_t)snprintf(varying + len, sizeof varying - len, "%s%s", len ? ", " : "",
                                    w->op->dims[d]);
    }
    if (rc)
        return rc;
    if (len)
        return dt_errf(e, DT_EUNSUPPORTED, "%s: exported %s code needs constant weights: the "
                       "GEMM view's N and K must not vary (the weights are packed once), but "
                       "%s vary", p->d->key, w->op->name, varying);
    return weights_groups(p, e);
}

/* Constant weights: N and K must be constants; one packing region per
 * distinct layout (NR, KG), its size what the kernel's packed_size entry
 * point returns (dt_mk_packed_bytes) for each of the G groups' Ng x Kg (the
 * kernel reads group i at i times that size, not rounded), at 64-byte
 * aligned byte offsets. */
static int plan_packing(dt_export_plan *p, dt_err *e)
{
    const dt_workload *w = p->w;
    int rc = weights_nk(p, e);
    if (rc)
        return rc;
    const dt_mk_op *m = dt_mk_op_find(w->op, p->kop.dtype);
    if (!m || !m->packed_size)
        return dt_errf(e, DT_EUNSUPPORTED, "%s: no packing for op %s, dtype %s", p->d->key,
                       w->op->name, dt_dtype_name(p->kop.dtype));
    DT_ASSERT(p->nk >= 1, "a plan has kernels");
    p->pack = calloc((size_t)p->nk, sizeof *p->pack);
    if (!p->pack)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int k = 0; k < p->nk; k++) {
        const dt_annotation *a = &p->k[k].ann;
        /* an own sketch's kernels (conv2d's channel sketch) pack the whole
         * weights their own way, in one call */
        const dt_mk_op *mk = dt_mk_op_for(w->op, p->kop.dtype, a);
        if (!mk || !mk->packed_size)
            return dt_errf(e, DT_EUNSUPPORTED, "%s: kernel %d: no packing for op %s, dtype %s, "
                           "sketch %s", p->d->key, k, w->op->name, dt_dtype_name(p->kop.dtype),
                           dt_sketch_name(a->sketch));
        const int whole = mk->sketch != DT_SKETCH_BLOCKED;
        int kg = dt_mk_packed_kg(m, a), kpad = dt_mk_packed_kpad(m, a), g = 0;
        while (g < p->npack &&
               (p->pack[g].nr != a->nr || p->pack[g].kg != kg || p->pack[g].kpad != kpad ||
                p->pack[g].whole != whole))
            g++;
        if (g == p->npack && whole) {
            /* K rows of R·S·C/G weights each, packed by the row's own hook */
            const int64_t bytes = (int64_t)dt_mk_packed_bytes(mk, a, p->N, p->Kg);
            if (bytes <= 0 || p->packed_bytes > INT64_MAX / 4 - round64(bytes))
                return dt_errf(e, DT_EOVERFLOW, "%s: the packed weights do not fit in memory",
                               p->d->key);
            p->pack[g] = (dt_export_pack){.nr = a->nr, .kg = kg, .kpad = kpad, .whole = 1,
                                          .kernel = k, .offset = p->packed_bytes, .bytes = bytes,
                                          .group_bytes = bytes};
            p->packed_bytes += round64(bytes);
            p->npack++;
        } else if (g == p->npack) {
            /* Ng, Kg, G >= 1 and NR >= 1: G·(strips·NR·KP·4 + tail) below 2^62 */
            int64_t nr = a->nr, strips = (p->Ng + nr - 1) / nr,
                    kp = (p->Kg + kpad - 1) / kpad * kpad;
            if (strips > INT64_MAX / 16 / nr / kp / p->G)
                return dt_errf(e, DT_EOVERFLOW, "%s: the packed weights do not fit in memory",
                               p->d->key);
            int64_t group_bytes = (int64_t)dt_mk_packed_bytes(m, a, p->Ng, p->Kg),
                    bytes = p->G * group_bytes;
            if (p->packed_bytes > INT64_MAX / 4 - round64(bytes))
                return dt_errf(e, DT_EOVERFLOW, "%s: the packed weights do not fit in memory",
                               p->d->key);
            p->pack[g] = (dt_export_pack){.nr = (int)nr, .kg = kg, .kpad = kpad, .kernel = k,
                                          .offset = p->packed_bytes, .bytes = bytes,
                                          .group_bytes = group_bytes};
            p->packed_bytes += round64(bytes);
            p->npack++;
        }
        p->k[k].pack_group = g;
    }
    DT_ASSERT(p->npack >= 1 && p->npack <= p->nk, "there are 1..(kernels) packing layouts");
    for (int g = 0; g < p->npack; g++) {
        const dt_export_pack *pk = &p->pack[g];
        DT_ASSERT(pk->offset % 64 == 0, "a packing region starts 64-byte aligned");
        DT_ASSERT(g == 0 || pk->offset >= p->pack[g - 1].offset + p->pack[g - 1].bytes,
                  "packing regions follow each other without overlap");
        DT_ASSERT(pk->bytes == (pk->whole ? 1 : p->G) * pk->group_bytes &&
                      pk->bytes <= p->packed_bytes,
                  "a packing region holds its G groups (or the whole weights) inside the packed "
                  "weights");
        DT_ASSERT(pk->kernel >= 0 && pk->kernel < p->nk && p->k[pk->kernel].pack_group == g,
                  "a packing region names a kernel that uses it");
    }
    return 0;
}

int dt_export_plan_load(dt_db *db, const dt_export_opts *o, const char *name,
                        dt_export_plan **out, dt_err *e)
{
    *out = NULL;
    dt_export_plan *p = calloc(1, sizeof *p);
    if (!p)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    snprintf(p->name, sizeof p->name, "%s", name);
    int rc = 0;
    if (o->target_key) {
        snprintf(p->target_key, sizeof p->target_key, "%s", o->target_key);
    } else {
        dt_target t;
        if ((rc = dt_target_detect_key(&t, p->target_key, sizeof p->target_key, e)))
            goto fail;
    }
    if ((rc = dt_dispatch_load(db, o->workload_key, p->target_key, o->threads, &p->d, e)))
        goto fail;
    p->w = p->d->w;
    p->kop = dt_kernel_op_of_workload(p->w);
    p->xop = dt_export_op_find(p->w->op, p->kop.dtype);
    if (!p->xop || dt_kernel_op_gemm(&p->kop, &p->g, NULL) != 0) {
        rc = dt_errf(e, DT_EUNSUPPORTED, "%s: no export for op %s, dtype %s", p->d->key,
                     p->w->op->name, dt_dtype_name(p->kop.dtype));
        goto fail;
    }
    const char *why = p->xop->refuses ? p->xop->refuses(p->kop.attrs) : NULL;
    if (why) {
        rc = dt_errf(e, DT_EUNSUPPORTED, "%s: not exported: %s", p->d->key, why);
        goto fail;
    }
    int n = p->d->n;
    p->k = calloc((size_t)n, sizeof *p->k);
    p->range_kernel = calloc((size_t)n, sizeof *p->range_kernel);
    p->var = calloc((size_t)(p->w->nvars ? p->w->nvars : 1), sizeof *p->var);
    if (!p->k || !p->range_kernel || !p->var) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto fail;
    }
    for (int r = 0; r < n; r++) {
        int k = 0;
        while (k < p->nk && p->k[k].id != p->d->r[r].kernel_id)
            k++;
        if (k == p->nk) {
            p->k[k].id = p->d->r[r].kernel_id;
            if ((rc = dt_dispatch_kernel_annotation(db, p->k[k].id, p->w, &p->k[k].ann, e))) {
                dt_err_prefix(e, "the schedule");
                goto fail;
            }
            p->k[k].ann.threads = p->d->threads; /* the schedule for T threads runs with T */
            p->nk++;
        }
        p->range_kernel[r] = k;
    }
    DT_ASSERT(n == 0 || (p->nk >= 1 && p->nk <= n), "a plan has 1..(boxes) distinct kernels");
    for (int r = 0; r < n; r++) {
        int rk = p->range_kernel[r];
        DT_ASSERT(rk >= 0 && rk < p->nk, "each table entry's kernel index is in range");
        DT_ASSERT(p->k[rk].id == p->d->r[r].kernel_id, "each table entry names its box's kernel");
    }
    for (int k = 1; k < p->nk; k++)
        for (int j = 0; j < k; j++)
            DT_ASSERT(p->k[j].id != p->k[k].id, "a plan's kernels are distinct");
    if (p->g.b_const && (rc = plan_packing(p, e)))
        goto fail;
    if ((rc = dt_dispatch_stats_load(db, p->d, p->target_key, &p->stats, e)))
        goto fail;
    name_vars(p);
    *out = p;
    return 0;
fail:
    dt_export_plan_free(p);
    return rc;
}
