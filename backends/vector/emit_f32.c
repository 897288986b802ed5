/* The f32 back-end of the micro-kernels (its register kernels; the dtype is microkernel/dtype_f32.c):
 * the prelude (vector macros per ISA), the vector epilogue, the driver
 * template and the generated register kernel dt_ukr — an MR×NR tile of
 * fp32 FMAs over a packed B panel.  Every f32 op's kernels share them. */
#include "backends/vector/emit.h"

/* ---- the register kernel ------------------------------------------------ */

/* One K step u (0..UNROLL-1) of the outer product of the tile's rows
 * [r0, r1) by NR columns whose B row k is at base + k·stride (its NR
 * columns contiguous), prefetched when pf: the panel's ("b", "NR"), or the
 * transposed tile's image rows ("bs", "ldb"). */
static void emit_step_rows(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int stream,
                           const char *base, const char *stride, int pf, int r0, int r1)
{
    int vl = a->nr / nv;
    if (pf && a->prefetch > 0) {
        int lines = (a->nr * 4 + 63) / 64;
        for (int l = 0; l < lines; l++)
            dt_sb_appendf(sb, "        VPREFETCH(%s + (k + %d) * %s + %d);\n", base,
                          u + a->prefetch, stride, l * 16);
    }
    dt_sb_append(sb, "        {\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, "            vf b%d = VLOAD(%s + (k + %d) * %s + %d);\n", v, base, u,
                      stride, v * vl);
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
    emit_step_rows(sb, a, nv, u, stream, "b", "NR", 1, 0, a->mr);
}

static void emit_t_step(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int stream)
{
    emit_step_rows(sb, a, nv, u, stream, "bs", "ldb", 0, 0, a->mr);
}

/* One K step u of a stream kernel over the tile's rows [r0, r1). */
static void emit_rows_step(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int r0, int r1)
{
    emit_step_rows(sb, a, nv, u, 1, "b", "NR", 1, r0, r1);
}

/* The transposed tile of an implicit A's stream kernels (seg): an MR×NR
 * tile whose rows are the op's output channels (A: the weights, a_rows of
 * them, each a contiguous row of lda) and whose columns are output pixels
 * (B: nseg segments of kc rows, segment sg's at b + boff[sg], row stride
 * ldb), stored whole to the scratch tile c [MR][NR] (no epilogue: the
 * caller's, per row).  A convolution with fewer output channels than a
 * vector fills every lane this way (template/op_conv2d.c). */
static void emit_ukr_t(dt_strbuf *sb, const dt_annotation *a, int nv)
{
    dt_sb_append(sb, "#define DT_UKR_T 1\n"
                     "static __attribute__((noinline)) void dt_ukr_t(int64_t kc, const float "
                     "*restrict a, int64_t lda,\n    int a_rows, int64_t nseg, const int64_t "
                     "*restrict boff, const float *restrict b,\n    int64_t ldb, float *restrict c)"
                     "\n{\n");
    dt_emit_ukr_start(sb, a, nv, "float"); /* a stream annotation: the rows a<i> */
    dt_sb_append(sb, "    for (int64_t sg = 0; sg < nseg; sg++) {\n"
                     "    const float *bs = b + boff[sg];\n");
    dt_emit_k_loop(sb, a, nv, 1, emit_t_step);
    for (int i = 0; i < a->mr; i++)
        dt_sb_appendf(sb, "    a%d += kc;\n", i);
    dt_sb_append(sb, "    }\n");
    int vl = a->nr / nv;
    for (int i = 0; i < a->mr; i++)
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "    VSTORE(c + %d * NR + %d, c%d_%d);\n", i, v * vl, i, v);
    dt_sb_append(sb, "}\n\n");
}

void dt_mk_ukr_f32(dt_strbuf *sb, const dt_backend *be, const dt_annotation *a, int seg)
{
    int nv = a->nr / be->vec_floats;
    int stream = a->sketch == DT_SKETCH_STREAM;
    dt_sb_appendf(sb,
                  "/* C tile (MR×NR at c, row stride ldc) = [C +] A·B, then bias and activation\n"
                  " * when last.  A: %s.  b: a [kc][NR] panel. */\n",
                  stream ? "rows of X read in place (row stride lda)" : "a packed [kc][MR] panel");
    dt_emit_ukr_signature(sb, "float", "float", "float", seg);
    dt_sb_append(sb, "    (void)q; (void)col;\n");
    dt_emit_ukr_start(sb, a, nv, "float");
    dt_emit_seg_begin(sb, seg);
    dt_emit_k_loop(sb, a, nv, stream, emit_k_step);
    dt_emit_seg_end(sb, a, seg);
    dt_emit_store_f32(sb, a, nv, NULL);
    dt_sb_append(sb, "}\n\n");
    dt_emit_ukr_seg_call(sb, "float", "float", "float", seg);
    if (seg) { /* stream only (codegen.c) */
        dt_emit_ukr_seg_edge(sb, a, nv, "float", "float", "float", emit_rows_step, NULL);
        emit_ukr_t(sb, a, nv);
    }
}
