/* The int8 back-end of the micro-kernels (its register kernels; the dtype is microkernel/dtype_int8.c):
 * u8 activations × s8 weights with s32 accumulation, dequantized to f32 on
 * the last K block (template/types_int8.h says what a kernel computes and
 * defines the macros used below).  The register kernel dt_ukr:
 *   native (row int8/avx512_vnni, backends/backend.h; dt_mk_ukr_int8_dp): an MR×NR tile of __m512i s32 accumulators; per K
 *     group of 4, NV full-vector loads of the packed B panel [K/4][NR][4]
 *     and, per row, one 32-bit broadcast of A's quad and NV vpdpbusd;
 *   portable (rows portable-generic, portable-avx2): uint32 GCC vectors, KG = 1: per k, NV loads
 *     of VL s8 widened to 32 bits, per row a broadcast u8 and NV
 *     multiply-adds.
 * The end of the kernel: accumulate adds C's int32 bits (partial sums of
 * the earlier K blocks), last compensates the zero point (acc −
 * zp_a·colsum[n], exact in int32), converts, scales by scale_a·scale_b[n],
 * adds the bias and applies dt_act, and the store writes the accumulators'
 * bits (s32 partial sums, or the floats when last) with the mask / scratch
 * handling of the f32 kernels. */
#include "backends/vector/emit.h"

/* ---- the K loop ---------------------------------------------------------- */

/* One K group u (0..UNROLL-1) of the native kernel at group index g + u:
 * B is b + (g + u)·NR·4; A is the packed panel (blocked: quad of row i at
 * ((g + u)·MR + i)·4) or row pointers a<i> (stream).  tail: the stream
 * sketch's last, partial quad (kc % 4 bytes of each row). */
static void emit_group_native(dt_strbuf *sb, const dt_annotation *a, int nv, int u, int stream,
                              int tail)
{
    if (a->prefetch > 0 && !tail)
        for (int l = 0; l < nv; l++)
            dt_sb_appendf(sb, "        VPREFETCH(b + (g + %d) * (NR * 4) + %d);\n",
                          u + a->prefetch, l * 64);
    dt_sb_append(sb, "        {\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, "            __m512i b%d = BLOAD(b + (g + %d) * (NR * 4) + %d);\n", v,
                      u, v * 64);
    for (int i = 0; i < a->mr; i++) {
        if (tail)
            dt_sb_appendf(sb, "            __m512i av%d = ABCAST4_TAIL(a%d + g * 4, (int)(kc - g * 4));\n",
                          i, i);
        else if (stream)
            dt_sb_appendf(sb, "            __m512i av%d = ABCAST4(a%d + (g + %d) * 4);\n", i, i,
                          u);
        else
            dt_sb_appendf(sb, "            __m512i av%d = ABCAST4(a + ((g + %d) * MR + %d) * 4);\n",
                          i, u, i);
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "            c%d_%d = DT_DPBUSD(c%d_%d, av%d, b%d);\n", i, v, i, v,
                          i, v);
    }
    dt_sb_append(sb, "        }\n");
}

/* One K step u of the portable kernel (KG = 1): B row k + u of the [K][NR]
 * panel, A's element k + u of each row. */
static void emit_step_portable(dt_strbuf *sb, const dt_annotation *a, int nv, int vl, int u,
                               int stream)
{
    if (a->prefetch > 0) {
        int lines = (a->nr + 63) / 64;
        for (int l = 0; l < lines; l++)
            dt_sb_appendf(sb, "        VPREFETCH(b + (k + %d) * NR + %d);\n", u + a->prefetch,
                          l * 64);
    }
    dt_sb_append(sb, "        {\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, "            dt_acc b%d = BLOAD8(b + (k + %d) * NR + %d);\n", v, u,
                      v * vl);
    for (int i = 0; i < a->mr; i++) {
        if (stream)
            dt_sb_appendf(sb, "            dt_acc av%d = ABCAST1(a%d[k + %d]);\n", i, i, u);
        else
            dt_sb_appendf(sb, "            dt_acc av%d = ABCAST1(a[(k + %d) * MR + %d]);\n", i,
                          u, i);
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "            c%d_%d += av%d * b%d;\n", i, v, i, v);
    }
    dt_sb_append(sb, "        }\n");
}

static void emit_k_loop(dt_strbuf *sb, const dt_annotation *a, int nv, int vl, int native,
                        int stream)
{
    if (native) {
        /* blocked: A and B panels hold whole zero-padded quads; stream:
         * whole quads of the rows, then the tail quad assembled */
        dt_sb_appendf(sb, "    const int64_t ng = %s;\n    int64_t g = 0;\n",
                      stream ? "kc / 4" : "(kc + 3) / 4");
        dt_sb_append(sb, "    for (; g + UNROLL <= ng; g += UNROLL) {\n");
        for (int u = 0; u < a->unroll; u++)
            emit_group_native(sb, a, nv, u, stream, 0);
        dt_sb_append(sb, "    }\n    DT_OPAQUE(g);\n    for (; g < ng; g++) {\n");
        emit_group_native(sb, a, nv, 0, stream, 0);
        dt_sb_append(sb, "    }\n");
        if (stream) {
            dt_sb_append(sb, "    DT_OPAQUE(g);\n    if (g * 4 < kc) {\n");
            emit_group_native(sb, a, nv, 0, stream, 1);
            dt_sb_append(sb, "    }\n");
        }
    } else {
        dt_sb_append(sb, "    int64_t k = 0;\n    for (; k + UNROLL <= kc; k += UNROLL) {\n");
        for (int u = 0; u < a->unroll; u++)
            emit_step_portable(sb, a, nv, vl, u, stream);
        dt_sb_append(sb, "    }\n    DT_OPAQUE(k);\n    for (; k < kc; k++) {\n");
        emit_step_portable(sb, a, nv, vl, 0, stream);
        dt_sb_append(sb, "    }\n");
    }
}

/* ---- the end: accumulate, dequantize, store ------------------------------ */

/* One accumulator's C operation: the full vector (n < 0) or its first n
 * lanes (n: the variable's name in the kernel) — the accumulate (add C's
 * int32 bits) or the store of the bits. */
enum { TILE_ACCUMULATE, TILE_STORE };

static void emit_one(dt_strbuf *sb, int kind, int i, int v, int vl, const char *n)
{
    if (kind == TILE_ACCUMULATE && !n)
        dt_sb_appendf(sb, "c%d_%d = ACC_ADD(c%d_%d, CLOAD(c + %d * ldc + %d));", i, v, i, v, i,
                      v * vl);
    else if (kind == TILE_ACCUMULATE)
        dt_sb_appendf(sb, "c%d_%d = ACC_ADD(c%d_%d, CLOAD_N(c + %d * ldc + %d, %s));", i, v, i,
                      v, i, v * vl, n);
    else if (!n)
        dt_sb_appendf(sb, "CSTORE(c + %d * ldc + %d, c%d_%d);", i, v * vl, i, v);
    else
        dt_sb_appendf(sb, "CSTORE_N(c + %d * ldc + %d, c%d_%d, %s);", i, v * vl, i, v, n);
}

/* kind over the tile: every accumulator when the tile is full (always with
 * scratch stores: the driver hands boundary tiles a full local tile), else
 * the valid rows and columns, partial vectors with n lanes. */
static void emit_tile_op(dt_strbuf *sb, const dt_annotation *a, int nv, int vl, const char *ind,
                         int kind)
{
    int masked = a->store == DT_STORE_MASK;
    if (masked)
        dt_sb_appendf(sb, "%sif (m_valid == MR && n_valid == NR) {\n", ind);
    for (int i = 0; i < a->mr; i++)
        for (int v = 0; v < nv; v++) {
            dt_sb_appendf(sb, "%s    ", ind);
            emit_one(sb, kind, i, v, vl, NULL);
            dt_sb_append(sb, "\n");
        }
    if (!masked)
        return;
    dt_sb_appendf(sb, "%s} else {\n", ind);
    for (int i = 0; i < a->mr; i++) {
        dt_sb_appendf(sb, "%s    if (m_valid > %d) {\n", ind, i);
        for (int v = 0; v < nv; v++) {
            dt_sb_appendf(sb, "%s        { int n = n_valid - %d; if (n >= VL) ", ind, v * vl);
            emit_one(sb, kind, i, v, vl, NULL);
            dt_sb_append(sb, " else if (n > 0) ");
            emit_one(sb, kind, i, v, vl, "n");
            dt_sb_append(sb, " }\n");
        }
        dt_sb_appendf(sb, "%s    }\n", ind);
    }
    dt_sb_appendf(sb, "%s}\n", ind);
}

void dt_emit_store_s32(dt_strbuf *sb, const dt_annotation *a, int nv, int vl)
{
    /* accumulate: the partial s32 sums of the earlier K blocks */
    dt_sb_append(sb, "    if (accumulate) {\n");
    emit_tile_op(sb, a, nv, vl, "    ", TILE_ACCUMULATE);
    dt_sb_append(sb, "    }\n");
    /* last: zero-point compensation, dequantization, bias, activation; the
     * accumulators then hold the floats' bits */
    dt_sb_append(sb, "    if (last) {\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb,
                      "        dt_acc zc%d = DT_ZC(q, col + %d);\n"
                      "        vf sc%d = DT_SC(q, col + %d);\n",
                      v, v * vl, v, v * vl);
    dt_sb_append(sb, "#if DT_BIAS\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, "        vf bias%d = VLOAD(bias + %d);\n", v, v * vl);
    dt_sb_append(sb, "#endif\n");
    for (int i = 0; i < a->mr; i++)
        for (int v = 0; v < nv; v++) {
            dt_sb_appendf(sb, "        { vf f = DT_DEQ(c%d_%d, zc%d, sc%d);\n", i, v, v, v);
            dt_sb_appendf(sb, "#if DT_BIAS\n          f = f + bias%d;\n#endif\n", v);
            dt_sb_appendf(sb, "          c%d_%d = DT_FBITS(dt_act(f)); }\n", i, v);
        }
    dt_sb_append(sb, "    }\n");
    /* store the bits */
    emit_tile_op(sb, a, nv, vl, "", TILE_STORE);
    if (a->store == DT_STORE_SCRATCH)
        dt_sb_append(sb, "    (void)m_valid; (void)n_valid;\n");
}

static void emit_ukr(dt_strbuf *sb, const dt_backend *be, const dt_annotation *a, int native,
                     int seg)
{
    int vl = be->vec_floats;
    int nv = a->nr / vl;
    int stream = a->sketch == DT_SKETCH_STREAM;
    dt_sb_appendf(sb,
                  "/* C tile (MR×NR at c, row stride ldc): s32 sums of u8·s8 [+ C's s32 partial"
                  " sums];\n * when last, scale_a·scale_b[n]·(sum − zp_a·colsum[n]), bias and"
                  " activation, as floats.\n * A: %s.  b: a %s panel. */\n",
                  stream ? "rows of X read in place (row stride lda)"
                         : native ? "a packed [kc/4][MR][4] panel" : "a packed [kc][MR] panel",
                  native ? "[kc/4][NR][4]" : "[kc][NR]");
    /* GCC's out-of-SSA coalescing makes each accumulator one pseudo from
     * the K loop through the epilogue (where its value is replaced); when
     * the epilogue's pressure (GELU, the per-column vectors) spills it, it
     * is spilled in the K loop too — loads and stores of accumulators in
     * every iteration of stream kernels.  Not coalescing user variables
     * keeps the loop's and the epilogue's versions apart. */
    dt_sb_append(sb, "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC push_options\n"
                     "#pragma GCC optimize(\"no-tree-coalesce-vars\")\n#endif\n");
    dt_emit_ukr_signature(sb, "dt_ta", "dt_tb", "dt_tc", seg);
    dt_sb_append(sb, "    (void)bias;\n");
    for (int i = 0; i < a->mr; i++)
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "    dt_acc c%d_%d = ACC_ZERO();\n", i, v);
    if (stream) {
        /* rows past a_rows re-read the last valid row: computed in full,
         * never stored (local padding in registers) */
        for (int i = 0; i < a->mr; i++)
            dt_sb_appendf(sb, "    const uint8_t *a%d = a + (int64_t)(%d < a_rows ? %d : a_rows - 1)"
                              " * lda;\n", i, i, i);
    } else {
        dt_sb_append(sb, "    (void)lda; (void)a_rows;\n");
    }
    dt_emit_seg_begin(sb, seg);
    emit_k_loop(sb, a, nv, vl, native, stream);
    dt_emit_seg_end(sb, a, seg);
    dt_emit_store_s32(sb, a, nv, vl);
    dt_sb_append(sb, "}\n#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC pop_options\n"
                     "#endif\n\n");
    dt_emit_ukr_seg_call(sb, "dt_ta", "dt_tb", "dt_tc", seg);
}

/* the portable rows: u8 and s8 widened to 32-bit lanes */
void dt_mk_ukr_int8_portable(dt_strbuf *sb, const dt_backend *be, const dt_annotation *a,
                             int seg)
{
    emit_ukr(sb, be, a, 0, seg);
}

/* the native row: vpdpbusd on quads of k (KG 4) */
void dt_mk_ukr_int8_dp(dt_strbuf *sb, const dt_backend *be, const dt_annotation *a, int seg)
{
    emit_ukr(sb, be, a, 1, seg);
}
