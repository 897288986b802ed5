/* The f32 back-end of the micro-kernels (microkernel/mk_op.h, dt_mk_dtype):
 * the prelude (vector macros per ISA), the vector epilogue, the driver
 * template and the generated register kernel dt_ukr — an MR×NR tile of
 * fp32 FMAs over a packed B panel.  Every f32 op's kernels share them. */
#include "microkernel/emit.h"
#include "microkernel/mk_op.h"

#include "dt_tpl_act_h.h"
#include "dt_tpl_driver_c.h"
#include "dt_tpl_prelude_h.h"
#include "dt_tpl_types_f32_h.h"

/* ---- the register kernel ------------------------------------------------ */

/* One K step u (0..UNROLL-1) of the MR×NR outer product whose B row k is at
 * base + k·stride (its NR columns contiguous), prefetched when pf: the
 * panel's ("b", "NR"), or the transposed tile's image rows ("bs", "ldb"). */
static void emit_step_b(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int stream,
                        const char *base, const char *stride, int pf)
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
    for (int i = 0; i < a->mr; i++) {
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
    emit_step_b(sb, a, nv, u, stream, "b", "NR", 1);
}

void dt_emit_ukr_signature(dt_strbuf *sb, const char *ta, const char *tb, const char *tc,
                           int seg)
{
    if (seg)
        dt_sb_append(sb, "#define DT_UKR_SEG 1\n");
    dt_sb_appendf(sb,
                  "static __attribute__((noinline)) void dt_ukr%s(int64_t kc, const %s *restrict a,"
                  " int64_t lda,%s\n    int a_rows, const %s *restrict b, %s *restrict c,"
                  " int64_t ldc, int m_valid,\n    int n_valid, int accumulate, const float "
                  "*restrict bias, int last,\n    const dt_qctx *q, int64_t col)\n{\n",
                  seg ? "_seg" : "", ta, seg ? " int64_t nseg, int64_t lds," : "", tb, tc);
}

void dt_emit_seg_begin(dt_strbuf *sb, int seg)
{
    if (seg)
        dt_sb_append(sb, "    for (int64_t sg = 0; sg < nseg; sg++) {\n");
}

void dt_emit_seg_end(dt_strbuf *sb, const dt_annotation *a, int seg)
{
    if (!seg)
        return;
    dt_sb_append(sb, "    b += kc * NR;\n");
    for (int i = 0; i < a->mr; i++)
        dt_sb_appendf(sb, "    a%d += lds;\n", i);
    dt_sb_append(sb, "    }\n");
}

void dt_emit_ukr_seg_call(dt_strbuf *sb, const char *ta, const char *tb, const char *tc, int seg)
{
    if (!seg)
        return;
    dt_sb_appendf(sb,
                  "static inline void dt_ukr(int64_t kc, const %s *restrict a, int64_t lda,"
                  " int a_rows,\n    const %s *restrict b, %s *restrict c, int64_t ldc,"
                  " int m_valid, int n_valid,\n    int accumulate, const float *restrict bias,"
                  " int last, const dt_qctx *q, int64_t col)\n{\n"
                  "    dt_ukr_seg(kc, a, lda, 1, 0, a_rows, b, c, ldc, m_valid, n_valid,"
                  " accumulate, bias, last,\n               q, col);\n}\n\n",
                  ta, tb, tc);
}

void dt_emit_ukr_start(dt_strbuf *sb, const dt_annotation *a, int nv, const char *atype)
{
    for (int i = 0; i < a->mr; i++)
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "    vf c%d_%d = VZERO();\n", i, v);
    if (a->sketch == DT_SKETCH_STREAM) {
        /* rows past a_rows re-read the last valid row: computed in full,
         * never stored (local padding in registers) */
        for (int i = 0; i < a->mr; i++)
            dt_sb_appendf(sb, "    const %s *a%d = a + (int64_t)(%d < a_rows ? %d : a_rows - 1)"
                              " * lda;\n", atype, i, i, i);
    } else {
        dt_sb_append(sb, "    (void)lda; (void)a_rows;\n");
    }
}

void dt_emit_k_loop(dt_strbuf *sb, const dt_annotation *a, int nv, int stream,
                    dt_emit_step_fn step)
{
    dt_sb_append(sb, "    int64_t k = 0;\n    for (; k + UNROLL <= kc; k += UNROLL) {\n");
    for (int u = 0; u < a->unroll; u++)
        step(sb, a, nv, u, stream);
    dt_sb_append(sb, "    }\n    for (; k < kc; k++) {\n");
    step(sb, a, nv, 0, stream);
    dt_sb_append(sb, "    }\n");
}

/* Adds C's current values (accumulate), then bias and activation (last),
 * then stores; with the mask store method partial tiles use masked vectors.
 * Shared by the dtypes whose accumulators are f32 vectors c<i>_<v>
 * (microkernel/emit.h); pre (may be NULL) emits what such a dtype does to
 * the accumulators first when last (w8a32: the per-column scales). */
void dt_emit_store_f32(dt_strbuf *sb, const dt_annotation *a, int nv,
                       void (*pre)(dt_strbuf *sb, const dt_annotation *a, int nv))
{
    int vl = a->nr / nv;
    int masked = a->store == DT_STORE_MASK;
    /* accumulate */
    dt_sb_append(sb, "    if (accumulate) {\n");
    if (masked)
        dt_sb_append(sb, "      if (m_valid == MR && n_valid == NR) {\n");
    for (int i = 0; i < a->mr; i++)
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "        c%d_%d = c%d_%d + VLOAD(c + %d * ldc + %d);\n", i, v, i, v,
                          i, v * vl);
    if (masked) {
        dt_sb_append(sb, "      } else {\n");
        for (int i = 0; i < a->mr; i++) {
            dt_sb_appendf(sb, "        if (m_valid > %d) {\n", i);
            for (int v = 0; v < nv; v++)
                dt_sb_appendf(sb,
                              "          { int n = n_valid - %d; if (n >= VL) c%d_%d = c%d_%d + "
                              "VLOAD(c + %d * ldc + %d); else if (n > 0) c%d_%d = c%d_%d + "
                              "VLOAD_N(c + %d * ldc + %d, n); }\n",
                              v * vl, i, v, i, v, i, v * vl, i, v, i, v, i, v * vl);
            dt_sb_append(sb, "        }\n");
        }
        dt_sb_append(sb, "      }\n");
    }
    dt_sb_append(sb, "    }\n");
    /* epilogue */
    if (pre) {
        dt_sb_append(sb, "    (void)bias;\n    if (last) {\n");
        pre(sb, a, nv);
    } else {
        dt_sb_append(sb, "#if DT_BIAS || DT_ACT\n    if (last) {\n");
    }
    dt_sb_append(sb, "#if DT_BIAS\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, "        vf bias%d = VLOAD(bias + %d);\n", v, v * vl);
    for (int i = 0; i < a->mr; i++)
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "        c%d_%d = c%d_%d + bias%d;\n", i, v, i, v, v);
    dt_sb_append(sb, "#else\n        (void)bias;\n#endif\n");
    for (int i = 0; i < a->mr; i++)
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "        c%d_%d = dt_act(c%d_%d);\n", i, v, i, v);
    if (pre)
        dt_sb_append(sb, "    }\n");
    else
        dt_sb_append(sb, "    }\n#else\n    (void)last; (void)bias;\n#endif\n");
    /* store */
    if (masked)
        dt_sb_append(sb, "    if (m_valid == MR && n_valid == NR) {\n");
    for (int i = 0; i < a->mr; i++)
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "        VSTORE(c + %d * ldc + %d, c%d_%d);\n", i, v * vl, i, v);
    if (masked) {
        dt_sb_append(sb, "    } else {\n");
        for (int i = 0; i < a->mr; i++) {
            dt_sb_appendf(sb, "        if (m_valid > %d) {\n", i);
            for (int v = 0; v < nv; v++)
                dt_sb_appendf(sb,
                              "          { int n = n_valid - %d; if (n >= VL) VSTORE(c + %d * "
                              "ldc + %d, c%d_%d); else if (n > 0) VSTORE_N(c + %d * ldc + %d, "
                              "c%d_%d, n); }\n",
                              v * vl, i, v * vl, i, v, i, v * vl, i, v);
            dt_sb_append(sb, "        }\n");
        }
        dt_sb_append(sb, "    }\n");
    } else {
        dt_sb_append(sb, "    (void)m_valid; (void)n_valid;\n");
    }
}

/* One K step u of the transposed tile (stream rows a<i>): its B row k is
 * row k of the segment's transposed image rows, ldb apart. */
static void emit_t_step(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int stream)
{
    emit_step_b(sb, a, nv, u, stream, "bs", "ldb", 0);
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
    if (seg)
        emit_ukr_t(sb, a, nv);
}

const dt_mk_dtype dt_mk_dtype_f32 = {
    .dtype = DT_DTYPE_F32,
    .prelude = dt_tpl_prelude_h,
    .types = dt_tpl_types_f32_h,
    .epilogue = dt_tpl_act_h,
    .driver = dt_tpl_driver_c,
    .qtail_col_bytes = 0,
};
