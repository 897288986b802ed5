/* f_adapt: padding efficiency, load balance, packing overhead; see adapt.h
 * and docs/cost-model.md.  The work split mirrors the generated driver
 * (microkernel/template/driver.c: dt_items_per_matrix, dt_item_at, the
 * contiguous deal of items to threads, the dynamic-B workers' packing of B:
 * template/op_batch_matmul.c). */
#include "costmodel/adapt.h"

#include <string.h>

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

typedef struct {
    int64_t M, N, K, batch;
    int64_t mr, nr, nc, mblk;
    dt_par_axis par;
} geom;

/* Work units of one matrix: NR strips (par n), MBLK blocks (par m), or
 * MBLK×NC grid cells (par mn). */
static int64_t units_per_matrix(const geom *g)
{
    switch (g->par) {
    case DT_PAR_N: return cdiv(g->N, g->nr);
    case DT_PAR_M: return cdiv(g->M, g->mblk);
    default: return cdiv(g->M, g->mblk) * cdiv(g->N, g->nc);
    }
}

/* dt_items_per_matrix of the driver. */
static int64_t items_per_matrix(const geom *g, int64_t nt)
{
    switch (g->par) {
    case DT_PAR_N:
    case DT_PAR_M: return imin(nt, units_per_matrix(g));
    default: return units_per_matrix(g);
    }
}

/* Rows and columns of item i of one matrix (dt_item_at). */
static void item_at(const geom *g, int64_t i, int64_t per, int64_t *rows, int64_t *cols)
{
    if (g->par == DT_PAR_N) {
        int64_t s = cdiv(g->N, g->nr);
        int64_t n0 = s * i / per * g->nr, n1 = imin(g->N, s * (i + 1) / per * g->nr);
        *rows = g->M;
        *cols = n1 - n0;
    } else if (g->par == DT_PAR_M) {
        int64_t b = cdiv(g->M, g->mblk);
        int64_t m0 = b * i / per * g->mblk, m1 = imin(g->M, b * (i + 1) / per * g->mblk);
        *rows = m1 - m0;
        *cols = g->N;
    } else {
        int64_t nn = cdiv(g->N, g->nc);
        int64_t m0 = (i / nn) * g->mblk, n0 = (i % nn) * g->nc;
        *rows = imin(g->M, m0 + g->mblk) - m0;
        *cols = imin(g->N, n0 + g->nc) - n0;
    }
}

/* The pixels of one output row where a convolution's kernels tile each
 * row apart — the stream sketch's tiles (dilation 1: dt_stream_rows) and
 * the channel sketch's end at a row's end (microkernel/template/
 * op_conv2d.c, op_conv2d_channel.c), so M pads per row, not as a whole; a
 * transposed convolution's rows are its phases' (a stride's share).  M
 * otherwise. */
static int64_t m_run(const dt_gemm *gv, const dt_annotation *a)
{
    if (!gv->op || !gv->op->conv ||
        (a->sketch != DT_SKETCH_STREAM && a->sketch != DT_SKETCH_CHANNEL))
        return gv->M;
    dt_conv_geom c;
    gv->op->conv(gv->dims, gv->attrs, &c);
    if (a->sketch == DT_SKETCH_STREAM && (c.dilation != 1 || c.dilation_w != 1))
        return gv->M; /* summed segment by segment over M's flat tiles */
    int64_t oh, ow;
    dt_conv_geom_out(&c, &oh, &ow);
    if (c.transpose)
        ow = cdiv(ow, c.stride_w);
    return ow >= 1 && ow <= gv->M ? ow : gv->M;
}

int dt_adapt_gemm_of(const dt_op_desc *op, const int *attrs, const int64_t *dims, dt_gemm *g,
                     dt_err *e)
{
    for (int i = 0; i < op->ndims; i++)
        if (dims[i] < 1)
            return dt_errf(e, DT_EINVAL, "f_adapt: dim %s = %lld < 1", op->dims[i],
                           (long long)dims[i]);
    if (dt_op_gemm(op, attrs, dims, g, NULL) != 0)
        return dt_errf(e, DT_EINVAL, "f_adapt: op %s has no GEMM view", op->name);
    return 0;
}

int dt_f_adapt(const dt_op_desc *op, const int64_t *dims, const dt_annotation *a,
               const dt_target *t, dt_adapt *out, dt_err *e)
{
    if (!op || !dims || !a || !out)
        return dt_errf(e, DT_EINVAL, "f_adapt: NULL argument");
    dt_gemm g;
    int rc = dt_adapt_gemm_of(op, NULL, dims, &g, e);
    return rc ? rc : dt_f_adapt_gemm(&g, a, t, out, e);
}

int dt_f_adapt_gemm(const dt_gemm *gv, const dt_annotation *a, const dt_target *t,
                    dt_adapt *out, dt_err *e)
{
    if (!gv || !a || !out)
        return dt_errf(e, DT_EINVAL, "f_adapt: NULL argument");
    if (gv->batch < 1 || gv->M < 1 || gv->N < 1 || gv->K < 1)
        return dt_errf(e, DT_EINVAL, "f_adapt: sizes batch %lld, M %lld, N %lld, K %lld "
                                     "must be >= 1",
                       (long long)gv->batch, (long long)gv->M, (long long)gv->N,
                       (long long)gv->K);
    int blocked = a->sketch == DT_SKETCH_BLOCKED;
    if (a->mr <= 0 || a->nr <= 0 || (blocked && (a->mc <= 0 || a->kc <= 0)) ||
        (a->par == DT_PAR_MN && a->nc <= 0) || a->par < 0 || a->par >= DT_PAR_COUNT)
        return dt_errf(e, DT_EINVAL, "f_adapt: malformed annotation (mr %d, nr %d, mc %d, "
                                     "kc %d, nc %d)",
                       a->mr, a->nr, a->mc, a->kc, a->nc);
    int nt = a->threads > 0 ? a->threads : (t && t->cores > 0 ? t->cores : 1);

    geom g = {.M = gv->M, .N = gv->N, .K = gv->K, .batch = gv->batch,
              .mr = a->mr, .nr = a->nr, .nc = a->nc > 0 ? a->nc : a->nr,
              .mblk = blocked ? a->mc : a->mr, .par = a->par};
    int batched = gv->batched;
    memset(out, 0, sizeof *out);
    out->threads = nt;

    /* padding: register tiles over M (per row where a convolution's
     * kernels tile rows apart) and N (the batch is never padded) */
    double M = (double)g.M, N = (double)g.N, K = (double)g.K, B = (double)g.batch;
    const int64_t run = m_run(gv, a);
    out->padding = ((double)run * N) /
                   ((double)(cdiv(run, g.mr) * g.mr) * (double)(cdiv(g.N, g.nr) * g.nr));

    /* balance: per matrix `per` items of at most ⌈u/per⌉ units; the driver
     * deals batch·per items to nt threads in contiguous runs; for an op
     * with a batch dim and batch >= threads whole matrices are the items. */
    int64_t u = units_per_matrix(&g);
    int64_t per = items_per_matrix(&g, batched && g.batch >= nt ? 1 : nt);
    int64_t items = g.batch * per;
    int64_t max_units = cdiv(items, nt) * cdiv(u, per);
    out->units = g.batch * u;
    out->items = items;
    out->balance = (double)out->units / ((double)max_units * nt);

    /* packing: A is packed MR-tall, zero padded, per NC block of an item's
     * columns (blocked only); a constant B is prepacked once, outside the
     * call; a dynamic B is packed (all of N, NR-padded) by each thread for
     * each matrix it touches. */
    double copies = 0;
    if (blocked) {
        double per_matrix = 0;
        for (int64_t i = 0; i < per; i++) {
            int64_t rows, cols;
            item_at(&g, i, per, &rows, &cols);
            if (rows <= 0 || cols <= 0)
                continue;
            /* each MC block of the item's rows is padded to MR */
            int64_t full = rows / a->mc, rest = rows % a->mc;
            double prow = (double)(full * (cdiv(a->mc, g.mr) * g.mr) +
                                   (rest ? cdiv(rest, g.mr) * g.mr : 0));
            per_matrix += prow * K * (double)cdiv(cols, a->nc > 0 ? a->nc : cols);
        }
        copies += B * per_matrix;
    }
    if (!gv->b_const) {
        int64_t pairs = 0; /* distinct (thread, matrix) pairs */
        for (int64_t tid = 0; tid < nt; tid++) {
            int64_t i0 = items * tid / nt, i1 = items * (tid + 1) / nt;
            if (i0 < i1)
                pairs += (i1 - 1) / per - i0 / per + 1;
        }
        copies += (double)pairs * (double)(cdiv(g.N, g.nr) * g.nr) * K;
    }
    out->copies = copies;
    out->flops = 2 * B * M * N * K;
    out->packing = out->flops / (out->flops + DT_ADAPT_COPY_FLOPS * copies);
    out->total = out->padding * out->balance * out->packing;
    return 0;
}
