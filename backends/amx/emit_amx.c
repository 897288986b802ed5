/* The AMX tile back-end's register kernel (rows bf16/amx and int8/amx of
 * backends/backend.h; issue 29, point 3).
 *
 * An annotation with unit amx asks for an MR×NR block of 16×16 C tiles
 * (mt = MR/16 rows of tiles, nt = NR/16 columns).  Per K step of one tile
 * (64 bytes of K per row: 32 bf16, 64 u8):
 *   - A tiles: 16 rows × 64 bytes, read in place from X (stream sketch, row
 *     stride lda, the tile rows set to the M tile's valid rows) or from the
 *     driver's packed A panel ([MR][DT_KP(kc)] row-major, blocked sketch);
 *   - B tiles: 16 K groups × 16 columns × KG elements = 64 bytes per row, at
 *     b + step·16·KG·NR + j·16·KG with row stride NR·KG — the vector back-ends'
 *     [K/KG][NR][KG] panel is already AMX's B layout; the tile back-end pads
 *     its K to whole tiles (DT_KPAD) so every B tile is inside the panel;
 *   - C_ij += A_i·B_j: tdpbf16ps (f32) or tdpbusd (s32, u8·s8).
 * The kernel holds the smaller of its A and B sets in tile registers and
 * streams the other through the registers left (annotation.c, check_amx).
 * A K tail in the stream sketch (K not a multiple of a tile's K) is copied
 * with zeros into a small buffer: a tile never reads past X's rows.
 *
 * The tiles then go to a 64-byte aligned scratch tile (the C tiles' f32 or
 * s32) and each valid row through the dtype's vector epilogue, the one the
 * vector kernels use (dt_emit_store_f32 / dt_emit_store_s32 with one row):
 * accumulate, bias, activation, int8's zero point and scales, masked columns.
 *
 * Tile state is per thread and kept in no thread-local variable: DT_THREAD_BEGIN
 * (driver) asks the process's permission once (backends/amx/template/amx_tile.h,
 * dt_amx_permit) and, in the blocked sketch, configures the tiles (16 rows);
 * a stream call configures them for its M tile's rows; DT_THREAD_END
 * releases them.  Without a compiler targeting AMX, or with DT_AMX_EMULATE,
 * the same source runs on the SDM-exact emulation (backends/amx/template/amx_tile.h). */
#include "backends/amx/amx.h"
#include "backends/vector/emit.h"

#include "dt_tpl_amx_tile_h.h"

/* Tile register numbers: C tiles first, then the held tiles (one set, or
 * two that even and odd K steps alternate between), then the streamed
 * registers.  Tile registers are not renamed: a load into a register waits
 * for every product reading it, so a held tile loaded into the register the
 * last product of the step before still reads would stall each step for a
 * load's latency; two held sets let the next step's loads start while this
 * step's products run.  The streamed tiles rotate through as many registers
 * as are left (up to two steps' worth). */
typedef struct amx_plan {
    int mt, nt;
    int hold_a;     /* A tiles held (mt <= nt), else B tiles held */
    int nheld;      /* held tiles of a step: mt or nt */
    int nother;     /* streamed tiles of a step: nt or mt */
    int held_sets;  /* 1 or 2 */
    int nstream;    /* streamed registers */
} amx_plan;

static amx_plan plan_of(const dt_annotation *a)
{
    amx_plan p;
    p.mt = a->mr / 16;
    p.nt = a->nr / 16;
    p.hold_a = p.mt <= p.nt;
    p.nheld = p.hold_a ? p.mt : p.nt;
    p.nother = p.hold_a ? p.nt : p.mt;
    int other = p.nother, avail = 8 - p.mt * p.nt;
    /* two held sets when that leaves at least two streamed registers (or
     * all the step needs); validation guarantees avail >= nheld + 1 */
    int left2 = avail - 2 * p.nheld;
    p.held_sets = left2 >= 2 || (left2 >= 1 && other == 1) ? 2 : 1;
    int left = avail - p.held_sets * p.nheld;
    p.nstream = left < 2 * other ? left : 2 * other;
    return p;
}

static int held_reg(const amx_plan *p, int set, int t)
{
    return p->mt * p->nt + (p->held_sets == 2 ? set : 0) * p->nheld + t;
}

/* the register of streamed tile t (0..nother-1) of a step of parity set */
static int stream_reg(const amx_plan *p, int set, int t)
{
    return p->mt * p->nt + p->held_sets * p->nheld + (set * p->nother + t) % p->nstream;
}

static int c_tile(const amx_plan *p, int i, int j) { return i * p->nt + j; }

/* The configuration of every tile for `rows` valid rows of the first tile
 * row (the stream sketch's M tile; 16 in the blocked sketch). */
static void emit_configure(dt_strbuf *sb, const amx_plan *p)
{
    dt_sb_append(sb, "/* the tiles for `rows` rows of A and C (row 0 of tiles; the others 16) */\n"
                     "static void dt_amx_configure(int rows)\n{\n"
                     "    dt_amx_cfg cfg;\n    dt_amx_cfg_init(&cfg);\n");
    for (int i = 0; i < p->mt; i++)
        for (int j = 0; j < p->nt; j++)
            dt_sb_appendf(sb, "    dt_amx_cfg_tile(&cfg, %d, %s, 64);\n", c_tile(p, i, j),
                          i ? "16" : "rows");
    for (int set = 0; set < p->held_sets; set++)
        for (int t = 0; t < p->nheld; t++)
            dt_sb_appendf(sb, "    dt_amx_cfg_tile(&cfg, %d, %s, 64);\n", held_reg(p, set, t),
                          p->hold_a && t == 0 ? "rows" : "16");
    for (int t = 0; t < p->nstream; t++)
        dt_sb_appendf(sb, "    dt_amx_cfg_tile(&cfg, %d, %s, 64);\n", stream_reg(p, 0, t),
                      !p->hold_a ? "rows" : "16"); /* A streams in blocked only: 16 */
    dt_sb_append(sb, "    DT_TILE_CONFIG(&cfg);\n}\n\n");
}

/* One K step with operand set `set`: the A tiles at `abase` (row stride
 * astride bytes, tile row i at abase + i·16·arow elements), the B tiles of
 * step `bstep`.  Each held tile is loaded just before its first product, not
 * all at the step's start: its register's last reader of the step before
 * (not renamed, above) is then further back, and the first product starts
 * after two loads instead of nheld + 1 (the 2×2 block runs 87 % of the peak
 * from L1 this way against 78 % with the held loads first; docs/
 * microkernels.md, "Where the time goes"). */
static void emit_step(dt_strbuf *sb, const amx_plan *p, int set, const char *dp,
                      const char *abase, const char *arow, const char *astride, const char *bstep)
{
    const char *bstride = "(int64_t)(NR * KG * sizeof(dt_tb))";
    for (int h = 0; h < p->nheld; h++) {
        if (p->hold_a)
            dt_sb_appendf(sb, "        DT_TILE_LOAD(%d, %s + %d * %s, %s);\n", held_reg(p, set, h),
                          abase, 16 * h, arow, astride);
        else
            dt_sb_appendf(sb, "        DT_TILE_LOAD(%d, b + (%s) * (16 * KG * NR) + %d * KG, %s);\n",
                          held_reg(p, set, h), bstep, 16 * h, bstride);
        for (int o = 0; o < p->nother; o++) {
            int r = stream_reg(p, set, o);
            if (h == 0) { /* the streamed tiles, each before its first product */
                if (p->hold_a)
                    dt_sb_appendf(sb,
                                  "        DT_TILE_LOAD(%d, b + (%s) * (16 * KG * NR) + %d * KG, %s);\n",
                                  r, bstep, 16 * o, bstride);
                else
                    dt_sb_appendf(sb, "        DT_TILE_LOAD(%d, %s + %d * %s, %s);\n", r, abase,
                                  16 * o, arow, astride);
            }
            int i = p->hold_a ? h : o, j = p->hold_a ? o : h;
            dt_sb_appendf(sb, "        %s(%d, %d, %d);\n", dp, c_tile(p, i, j),
                          p->hold_a ? held_reg(p, set, h) : r, p->hold_a ? r : held_reg(p, set, h));
        }
    }
}

/* The loop over K steps s < steps: two steps an iteration on alternating
 * operand sets when there are two. */
static void emit_steps(dt_strbuf *sb, const amx_plan *p, const char *dp, const char *arow,
                       const char *astride)
{
    dt_sb_append(sb, "    int64_t s = 0;\n");
    if (p->held_sets == 2) {
        dt_sb_append(sb, "    for (; s + 2 <= steps; s += 2) {\n");
        emit_step(sb, p, 0, dp, "a + s * DT_TK", arow, astride, "s");
        emit_step(sb, p, 1, dp, "a + (s + 1) * DT_TK", arow, astride, "s + 1");
        dt_sb_append(sb, "    }\n");
    }
    dt_sb_append(sb, "    for (; s < steps; s++) {\n");
    emit_step(sb, p, 0, dp, "a + s * DT_TK", arow, astride, "s");
    dt_sb_append(sb, "    }\n");
}

/* One row of the scratch tile through the dtype's vector epilogue: the
 * vector kernels' store code for a one-row tile (MR is 1 inside). */
static void emit_row_epilogue(dt_strbuf *sb, const dt_annotation *a, int int8)
{
    dt_annotation row = *a;
    row.mr = 1;
    int nv = a->nr / 16;
    dt_sb_appendf(sb,
                  "#pragma push_macro(\"MR\")\n#undef MR\n#define MR 1\n"
                  "/* one row of C from the scratch tile row t */\n"
                  "DT_INLINE void dt_amx_row(const %s *t, dt_tc *restrict c, int64_t ldc,"
                  " int m_valid,\n    int n_valid, int accumulate, const float *restrict bias,"
                  " int last, const dt_qctx *q,\n    int64_t col)\n{\n"
                  "    (void)q; (void)col; (void)bias; (void)last;\n",
                  int8 ? "int32_t" : "float");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, int8 ? "    dt_acc c0_%d = CLOAD(t + %d);\n"
                               : "    vf c0_%d = VLOAD(t + %d);\n",
                      v, 16 * v);
    if (int8)
        dt_emit_store_s32(sb, &row, nv, 16);
    else
        dt_emit_store_f32(sb, &row, nv, NULL);
    dt_sb_append(sb, "}\n#pragma pop_macro(\"MR\")\n\n");
}

void dt_mk_ukr_amx(dt_strbuf *sb, const dt_backend *be, const dt_annotation *a, int seg)
{
    (void)seg; /* the tiles' stream kernels take whole tiles of K: no segments */
    const int int8 = be->dtype == DT_DTYPE_INT8;
    const int stream = a->sketch == DT_SKETCH_STREAM;
    const char *dp = int8 ? "DT_TILE_DPBUSD" : "DT_TILE_DPBF16PS";
    amx_plan p = plan_of(a);

    dt_sb_appendf(sb, "/* ---- AMX tiles (%s) ---- */\n#define DT_AMX 1\n"
                      "/* a tile's K: 64 bytes of A per row */\n#define DT_TK %d\n"
                      "#define DT_KPAD DT_TK\n",
                  int8 ? "tdpbusd" : "tdpbf16ps", be->kpad);
    dt_sb_append(sb, dt_tpl_amx_tile_h);
    /* No thread-local state (a dlopen'ed module's TLS, once dlclose'd, trips
     * LeakSanitizer): the blocked sketch configures the tiles once per
     * thread (16 rows always), the stream sketch at every call (its rows are
     * the M tile's); the end of a thread's work releases them. */
    dt_sb_append(sb, "\n#include <stdio.h>\n");
    emit_configure(sb, &p);
    dt_sb_appendf(sb, "DT_INLINE void dt_amx_thread_begin(void)\n{\n"
                      "    if (dt_amx_permit()) {\n"
                      "        fputs(\"dtune kernel: the OS refused AMX tile data "
                      "(arch_prctl ARCH_REQ_XCOMP_PERM)\\n\", stderr);\n"
                      "        abort();\n    }\n%s}\n"
                      "#define DT_THREAD_BEGIN() dt_amx_thread_begin()\n"
                      "#define DT_THREAD_END() DT_TILE_RELEASE()\n\n",
                  stream ? "" : "    dt_amx_configure(16);\n");
    emit_row_epilogue(sb, a, int8);

    dt_sb_appendf(sb,
                  "/* C (MR×NR at c, row stride ldc) = [C +] A·B on a %dx%d block of tiles,\n"
                  " * then the epilogue row by row.  A: %s.  b: a [DT_KP(K)/KG][NR][KG] panel. */\n",
                  p.mt, p.nt,
                  stream ? "X's rows in place (row stride lda), a_rows valid"
                         : "a packed [MR][DT_KP(kc)] panel");
    dt_emit_ukr_signature(sb, "dt_ta", "dt_tb", "dt_tc", 0);
    if (stream)
        dt_sb_append(sb, "    const int rows = a_rows;\n    dt_amx_configure(rows);\n");
    /* blocked: a full tile block's partial sums of the earlier K blocks are
     * loaded into the C tiles and, before the last K block, stored back
     * as they are (no scratch, no epilogue) */
    dt_sb_appendf(sb, "    const int direct = %s;\n",
                  stream ? "0" : "accumulate && m_valid == MR && n_valid == NR");
    dt_sb_append(sb, "    if (direct) {\n");
    for (int i = 0; i < p.mt; i++)
        for (int j = 0; j < p.nt; j++)
            dt_sb_appendf(sb, "        DT_TILE_LOAD(%d, c + %d * ldc + %d, ldc * 4);\n",
                          c_tile(&p, i, j), 16 * i, 16 * j);
    dt_sb_append(sb, "    } else {\n");
    for (int i = 0; i < p.mt; i++)
        for (int j = 0; j < p.nt; j++)
            dt_sb_appendf(sb, "        DT_TILE_ZERO(%d);\n", c_tile(&p, i, j));
    dt_sb_append(sb, "    }\n");
    if (stream) {
        dt_sb_append(sb, "    const int64_t steps = kc / DT_TK;\n"
                         "    const int64_t astride = lda * (int64_t)sizeof(dt_ta);\n");
        emit_steps(sb, &p, dp, "lda", "astride");
        dt_sb_append(sb, "    if (kc % DT_TK) { /* the K tail, zero-padded: never past X's rows */\n"
                         "        dt_ta tail[16 * DT_TK] __attribute__((aligned(64)));\n"
                         "        memset(tail, 0, sizeof tail);\n"
                         "        for (int r = 0; r < rows; r++)\n"
                         "            memcpy(tail + r * DT_TK, a + r * lda + steps * DT_TK,\n"
                         "                   (size_t)(kc % DT_TK) * sizeof(dt_ta));\n"
                         "        const int64_t tstride = DT_TK * (int64_t)sizeof(dt_ta);\n"
                         "        {\n");
        emit_step(sb, &p, 0, dp, "tail", "DT_TK", "tstride", "steps");
        dt_sb_append(sb, "        }\n    }\n");
    } else {
        dt_sb_append(sb, "    (void)lda; (void)a_rows;\n"
                         "    const int64_t kp = (kc + DT_TK - 1) / DT_TK * DT_TK, steps = kp / DT_TK;\n"
                         "    const int64_t astride = kp * (int64_t)sizeof(dt_ta);\n");
        emit_steps(sb, &p, dp, "kp", "astride");
    }
    if (!stream) {
        dt_sb_append(sb, "    if (!last && m_valid == MR && n_valid == NR) {\n");
        for (int i = 0; i < p.mt; i++)
            for (int j = 0; j < p.nt; j++)
                dt_sb_appendf(sb, "        DT_TILE_STORE(%d, c + %d * ldc + %d, ldc * 4);\n",
                              c_tile(&p, i, j), 16 * i, 16 * j);
        dt_sb_append(sb, "        return;\n    }\n");
    }
    dt_sb_appendf(sb, "    %s ct[MR * NR] __attribute__((aligned(64)));\n",
                  int8 ? "int32_t" : "float");
    for (int i = 0; i < p.mt; i++)
        for (int j = 0; j < p.nt; j++)
            dt_sb_appendf(sb, "    DT_TILE_STORE(%d, ct + %d * NR + %d, NR * 4);\n",
                          c_tile(&p, i, j), 16 * i, 16 * j);
    dt_sb_append(sb, "    for (int r = 0; r < m_valid; r++)\n"
                     "        dt_amx_row(ct + r * NR, c + r * ldc, ldc, 1, n_valid,"
                     " accumulate && !direct, bias, last, q, col);\n"
                     "}\n\n");
}
