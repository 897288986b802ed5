/* The pieces of register-kernel generation that the vector emitters share
 * (backends/vector/emit.h). */
#include "backends/vector/emit.h"

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

/* The K range [k, end) of a segment over the tile's rows [r0, r1): UNROLL
 * steps, then one at a time; without rows, k jumps to end. */
static void emit_k_range(dt_strbuf *sb, const dt_annotation *a, int nv, const char *end, int r0,
                         int r1, dt_emit_rows_step_fn step)
{
    if (r0 >= r1) {
        dt_sb_appendf(sb, "    if (k < %s)\n        k = %s;\n", end, end);
        return;
    }
    dt_sb_appendf(sb, "    for (; k + UNROLL <= %s; k += UNROLL) {\n", end);
    for (int u = 0; u < a->unroll; u++)
        step(sb, a, nv, u, r0, r1);
    dt_sb_appendf(sb, "    }\n    for (; k < %s; k++) {\n", end);
    step(sb, a, nv, 0, r0, r1);
    dt_sb_append(sb, "    }\n");
}

void dt_emit_ukr_seg_edge(dt_strbuf *sb, const dt_annotation *a, int nv, const char *ta,
                          const char *tb, const char *tc, dt_emit_rows_step_fn step,
                          void (*pre)(dt_strbuf *sb, const dt_annotation *a, int nv))
{
    dt_sb_appendf(sb,
                  "#define DT_UKR_SEG_EDGE 1\n"
                  "static __attribute__((noinline)) void dt_ukr_seg_edge(int64_t kc, const %s "
                  "*restrict a,\n    int64_t lda, int64_t nseg, int64_t lds, int64_t klo, "
                  "int64_t khi,\n    const %s *restrict b, %s *restrict c, int64_t ldc, int "
                  "n_valid,\n    const float *restrict bias, const dt_qctx *q, int64_t col)\n{\n"
                  "    const int a_rows = MR, m_valid = MR, accumulate = 0, last = 1;\n",
                  ta, tb, tc);
    if (!pre)
        dt_sb_append(sb, "    (void)q; (void)col;\n");
    dt_emit_ukr_start(sb, a, nv, ta);
    dt_emit_seg_begin(sb, 1);
    dt_sb_append(sb, "    int64_t k = 0;\n");
    emit_k_range(sb, a, nv, "klo", 1, a->mr, step);
    emit_k_range(sb, a, nv, "khi", 0, a->mr, step);
    emit_k_range(sb, a, nv, "kc", 0, a->mr - 1, step);
    dt_emit_seg_end(sb, a, 1);
    dt_emit_store_f32(sb, a, nv, pre);
    dt_sb_append(sb, "}\n\n");
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
