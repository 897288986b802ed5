/* The bf16 back-end of the micro-kernels (its register kernels; the dtype is microkernel/dtype_bf16.c):
 * A and B bf16 (uint16_t), f32 accumulation, C f32.  The register kernel
 * dt_ukr is an MR×NR tile of f32 accumulators c<i>_<v>, like f32's, so the
 * accumulate / bias / activation / store end is dt_emit_store_f32.
 *
 *   native (row bf16/avx512_bf16, backends/backend.h; dt_mk_ukr_bf16_dp):
 *     K groups of KG = 2.  A step is one group: NV full-vector loads of the
 *     packed B panel ([kc/2][NR][2]: 16 columns × 2 k per zmm), per row one
 *     32-bit broadcast of A's pair and NV vdpbf16ps.  In the stream sketch
 *     A is read in place, so an odd K's last group is assembled as (a, 0)
 *     rather than read past the row.
 *   portable (rows portable-generic, portable-avx2; dt_mk_ukr_bf16_portable): KG = 1, a bf16 widened to f32 by a
 *     16-bit shift (B: VL bf16 zero-extended to 32-bit lanes; A: a 16-bit
 *     broadcast), then the f32 FMA of the prelude. */
#include "backends/vector/emit.h"

/* VPREFETCH of the B panel PF steps after step u (idx: the loop's index);
 * a step reads step_elems bf16 of the panel. */
static void emit_prefetch(dt_strbuf *sb, const dt_annotation *a, const char *idx, int u,
                          int step_elems)
{
    if (a->prefetch <= 0)
        return;
    int lines = (step_elems * 2 + 63) / 64;
    for (int l = 0; l < lines; l++)
        dt_sb_appendf(sb, "        VPREFETCH(b + (%s + %d) * %d + %d);\n", idx, u + a->prefetch,
                      step_elems, l * 32);
}

/* ---- native: vdpbf16ps over pairs of k ------------------------------------ */

/* One K group: g + u is its index; tail: the stream sketch's last, odd k
 * (A's pair assembled as (a[kc-1], 0); B's panel is zero-padded). */
static void emit_native_step(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int stream,
                             int tail)
{
    if (!tail)
        emit_prefetch(sb, a, "g", u, a->nr * 2);
    dt_sb_append(sb, "        {\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, "            __m512i b%d = BLOAD(b + (g + %d) * (NR * 2) + %d);\n", v,
                      u, v * 32);
    for (int i = 0; i < a->mr; i++) {
        if (tail)
            dt_sb_appendf(sb, "            __m512i av%d = dt_bcast_last(a%d + kc - 1);\n", i, i);
        else if (stream)
            dt_sb_appendf(sb, "            __m512i av%d = dt_bcast_pair(a%d + (g + %d) * 2);\n", i,
                          i, u);
        else
            dt_sb_appendf(sb,
                          "            __m512i av%d = dt_bcast_pair(a + ((g + %d) * MR + %d) * 2);"
                          "\n", i, u, i);
        /* A's broadcast last: the operand vdpbf16ps may take from memory
         * ({1to16}), which the compiler folds when it has one use (NV = 1) */
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "            c%d_%d = DT_DPBF16(c%d_%d, b%d, av%d);\n", i, v, i, v,
                          v, i);
    }
    dt_sb_append(sb, "        }\n");
}

static void emit_native_loop(dt_strbuf *sb, const dt_annotation *a, int nv, int stream)
{
    /* blocked: A's packed panel is zero-padded to whole groups; stream: the
     * whole groups here, an odd last k below */
    dt_sb_appendf(sb, "    const int64_t ng = %s;\n    int64_t g = 0;\n"
                      "    for (; g + UNROLL <= ng; g += UNROLL) {\n",
                  stream ? "kc / 2" : "(kc + 1) / 2");
    for (int u = 0; u < a->unroll; u++)
        emit_native_step(sb, a, nv, u, stream, 0);
    dt_sb_append(sb, "    }\n    for (; g < ng; g++) {\n");
    emit_native_step(sb, a, nv, 0, stream, 0);
    dt_sb_append(sb, "    }\n");
    if (stream) {
        dt_sb_append(sb, "    if (kc & 1) {\n");
        emit_native_step(sb, a, nv, 0, stream, 1);
        dt_sb_append(sb, "    }\n");
    }
}

/* ---- portable: widen to f32, f32 FMA --------------------------------------- */

static void emit_portable_step(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int stream)
{
    int vl = a->nr / nv;
    emit_prefetch(sb, a, "k", u, a->nr);
    dt_sb_append(sb, "        {\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, "            vf b%d = dt_bf16_vload(b + (k + %d) * NR + %d);\n", v, u,
                      v * vl);
    for (int i = 0; i < a->mr; i++) {
        if (stream)
            dt_sb_appendf(sb, "            vf av%d = dt_bf16_bcast(a%d + k + %d);\n", i, i,
                          u);
        else
            dt_sb_appendf(sb, "            vf av%d = dt_bf16_bcast(a + (k + %d) * MR + %d);\n",
                          i, u, i);
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "            c%d_%d = VFMA(av%d, b%d, c%d_%d);\n", i, v, i, v, i, v);
    }
    dt_sb_append(sb, "        }\n");
}

static void emit_ukr(dt_strbuf *sb, const dt_backend *be, const dt_annotation *a, int native,
                     int seg)
{
    int nv = a->nr / be->vec_floats;
    int stream = a->sketch == DT_SKETCH_STREAM;
    dt_sb_appendf(sb,
                  "/* C tile (MR×NR at c, row stride ldc) = [C +] A·B in f32, then bias and\n"
                  " * activation when last.  A: %s.  b: a [kc%s][NR]%s bf16 panel.%s */\n",
                  stream ? "bf16 rows of X read in place (row stride lda)"
                         : native ? "a packed [kc/2][MR][2] bf16 panel"
                                  : "a packed [kc][MR] bf16 panel",
                  native ? "/2" : "", native ? "[2]" : "",
                  native ? "  vdpbf16ps\n * on pairs of k" : "  Widened to f32 by a shift");
    dt_emit_ukr_signature(sb, "dt_ta", "dt_tb", "dt_tc", seg);
    dt_sb_append(sb,
                 "    (void)q; (void)col; (void)bias; /* bias: unread without DT_BIAS */\n");
    dt_emit_ukr_start(sb, a, nv, "dt_ta");
    dt_emit_seg_begin(sb, seg);
    if (native)
        emit_native_loop(sb, a, nv, stream);
    else
        dt_emit_k_loop(sb, a, nv, stream, emit_portable_step);
    dt_emit_seg_end(sb, a, seg);
    dt_emit_store_f32(sb, a, nv, NULL);
    dt_sb_append(sb, "}\n\n");
    dt_emit_ukr_seg_call(sb, "dt_ta", "dt_tb", "dt_tc", seg);
}

/* the portable rows: bf16 widened to f32, the f32 FMA */
void dt_mk_ukr_bf16_portable(dt_strbuf *sb, const dt_backend *be, const dt_annotation *a,
                             int seg)
{
    emit_ukr(sb, be, a, 0, seg);
}

/* the native row: vdpbf16ps on pairs of k (KG 2) */
void dt_mk_ukr_bf16_dp(dt_strbuf *sb, const dt_backend *be, const dt_annotation *a, int seg)
{
    emit_ukr(sb, be, a, 1, seg);
}
