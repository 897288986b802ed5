/* The w8a32 back-end of the micro-kernels (its register kernels; the dtype is microkernel/dtype_w8a32.c):
 * weight-only int8.  A is f32, the packed weights are s8 with per-column
 * scales (template/types_w8a32.h); the generated register kernel dt_ukr
 * converts each K step's NR weights s8 -> f32 in registers (DT_W8_LOAD:
 * vpmovsxbd + vcvtdq2ps on AVX-512, vpmovsxbd + vcvtdq2ps on AVX2, GCC
 * vector conversions on the portable back-end), amortised over MR
 * broadcast rows of A, and accumulates in f32 FMAs.  The scale factors out
 * of the sum: on the last K block the accumulators are multiplied by the
 * strip's scale vectors (q->scale_b + col), then bias and activation
 * (dt_emit_store_f32).  The weights move 4× fewer bytes than f32's: the
 * point on the bandwidth-bound small-M shapes (LLM decode). */
#include "backends/vector/emit.h"

/* Prefetch of the weight stream PF K steps ahead: a panel row is NR bytes,
 * so one prefetch per 64-byte line the stream advances over, not one per
 * step.  u: the step within the unrolled body. */
static void emit_prefetch(dt_strbuf *sb, const dt_annotation *a, int u)
{
    if (a->prefetch <= 0)
        return;
    int nr = a->nr;
    if (nr >= 64) {
        for (int l = 0; l < (nr + 63) / 64; l++)
            dt_sb_appendf(sb, "        VPREFETCH(b + (k + %d) * NR + %d);\n", u + a->prefetch,
                          l * 64);
        return;
    }
    /* nr < 64: only the steps of the body that reach a new 64-byte chunk
     * (relative to the body's start), and its first */
    if (u == 0 || (u * nr) / 64 != ((u - 1) * nr) / 64)
        dt_sb_appendf(sb, "        VPREFETCH(b + (k + %d) * NR);\n", u + a->prefetch);
}

/* One K step u of the outer product of the tile's rows [r0, r1) by NR
 * columns: NV weight vectors converted from s8, a broadcast of A a row,
 * NV FMAs a row. */
static void emit_step_rows(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int stream,
                           int r0, int r1)
{
    int vl = a->nr / nv;
    emit_prefetch(sb, a, u);
    dt_sb_append(sb, "        {\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, "            vf b%d = DT_W8_LOAD(b + (k + %d) * NR + %d);\n", v, u,
                      v * vl);
    for (int i = r0; i < r1; i++) {
        if (stream)
            dt_sb_appendf(sb, "            vf av%d = VBCAST(a%d[k + %d]);\n", i, i, u);
        else
            dt_sb_appendf(sb, "            vf av%d = VBCAST(a[(k + %d) * MR + %d]);\n", i, u, i);
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "            c%d_%d = VFMA(av%d, b%d, c%d_%d);\n", i, v, i, v, i, v);
    }
    dt_sb_append(sb, "        }\n");
}

static void emit_k_step(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int stream)
{
    emit_step_rows(sb, a, nv, u, stream, 0, a->mr);
}

static void emit_rows_step(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int r0, int r1)
{
    emit_step_rows(sb, a, nv, u, 1, r0, r1);
}

/* The dequantization on the last K block: times the columns' scales. */
static void emit_scale(dt_strbuf *sb, const dt_annotation *a, int nv)
{
    int vl = a->nr / nv;
    dt_sb_append(sb, "        const float *qs = q->scale_b + col;\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, "        vf qs%d = VLOAD(qs + %d);\n", v, v * vl);
    for (int i = 0; i < a->mr; i++)
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "        c%d_%d = c%d_%d * qs%d;\n", i, v, i, v, v);
}

void dt_mk_ukr_w8a32(dt_strbuf *sb, const dt_backend *be, const dt_annotation *a, int seg)
{
    int nv = a->nr / be->vec_floats;
    int stream = a->sketch == DT_SKETCH_STREAM;
    dt_sb_appendf(sb,
                  "/* C tile (MR×NR at c, row stride ldc) = [C +] A·float(B), then on the last\n"
                  " * K block × scale_b, bias and activation.  A: %s.\n"
                  " * b: an s8 [kc][NR] panel. */\n",
                  stream ? "rows of X read in place (row stride lda)" : "a packed [kc][MR] panel");
    dt_emit_ukr_signature(sb, "dt_ta", "dt_tb", "dt_tc", seg);

    dt_emit_ukr_start(sb, a, nv, "float");
    dt_emit_seg_begin(sb, seg);
    dt_emit_k_loop(sb, a, nv, stream, emit_k_step);
    dt_emit_seg_end(sb, a, seg);
    dt_emit_store_f32(sb, a, nv, emit_scale);
    dt_sb_append(sb, "}\n\n");
    dt_emit_ukr_seg_call(sb, "dt_ta", "dt_tb", "dt_tc", seg);
    if (seg) /* stream only (codegen.c) */
        dt_emit_ukr_seg_edge(sb, a, nv, "dt_ta", "dt_tb", "dt_tc", emit_rows_step, emit_scale);
}
