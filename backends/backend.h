/* The back-end table: one row per (dtype, back-end) — DESIGN.md, "A back-end
 * is a row, not a rung"; issue 29, point 1.
 *
 * A row says everything about a back-end that is not code: its name, the
 * CPU features it needs, its vector width and register budget (a tile
 * budget for a tile back-end), the K group and layout of its packed B, the
 * peak probe that is its ceiling and its extra compile flags.  Its code —
 * the register-kernel emitter and the templates' selector macro — is the
 * micro-kernel layer's, keyed by the row's id (microkernel/mk_op.h,
 * dt_mk_backend_of).  Adding a back-end (AMX next) is a row here, a row of
 * hooks there and the emitter's file; nothing else compares ISAs or names
 * a dtype's instruction.
 *
 * An annotation names its row with its isa and its unit (vec: the rows
 * every annotation had before AMX, whose JSON and stored source hashes stay
 * as they were; amx: the tile rows), and dt_backend_of_ann(dtype, a) is the
 * one way from the two to the row.  The tuner searches the units whose row
 * the target runs (tuner/search.c).
 *
 *   dtype  isa      row                name               needs beyond the isa   VL regs KG
 *   f32    generic  F32_GENERIC        generic            -                      4  16*  1
 *   f32    avx2     F32_AVX2           avx2               -                      8  16   1
 *   f32    avx512   F32_AVX512         avx512             -                      16 32   1
 *   bf16   generic  BF16_GENERIC       portable-generic   -                      4  16*  1
 *   bf16   avx2     BF16_AVX2          portable-avx2      -                      8  16   1
 *   bf16   avx512   BF16_AVX512BF16    avx512_bf16        avx512_bf16 bw vl      16 32   2
 *   int8   generic  INT8_GENERIC       portable-generic   -                      4  16*  1
 *   int8   avx2     INT8_AVX2          portable-avx2      -                      8  16   1
 *   int8   avx512   INT8_AVX512VNNI    avx512_vnni        avx512_vnni bw         16 32   4
 *   w8a32  generic  W8A32_GENERIC      generic            -                      4  16*  1
 *   w8a32  avx2     W8A32_AVX2         avx2               -                      8  16   1
 *   w8a32  avx512   W8A32_AVX512       avx512             -                      16 32   1
 *   bf16   avx512   BF16_AMX (amx)     amx                amx_tile amx_bf16      tiles 8 2 (K pad 32)
 *   int8   avx512   INT8_AMX (amx)     amx                amx_tile amx_int8      tiles 8 4 (K pad 64)
 *   f32_bf16 (math=bf16: f32 operands rounded to bf16, bf16's kernels):
 *          generic  F32BF16_GENERIC    portable-generic   -                      4  16*  1
 *          avx2     F32BF16_AVX2       portable-avx2      -                      8  16   1
 *          avx512   F32BF16_AVX512BF16 avx512_bf16        avx512_bf16 bw vl      16 32   2
 *          avx512   F32BF16_AMX (amx)  amx                amx_tile amx_bf16      tiles 8 2 (K pad 32)
 *   w8a32_bf16 (math=bf16 on w8a32: the weights dequantized and rounded to
 *          bf16 when packed, then f32_bf16's kernels): rows W8A32BF16_* as
 *          f32_bf16's above
 *   (* 32 on aarch64: GCC vectors are NEON registers there)
 *
 * An isa's own features are dt_isa_best's (avx2: avx2 + fma; avx512: also
 * avx512f); a target runs a row when its isa in use (DTUNE_TARGET_ISA may
 * lower it) admits the row's isa and it has the row's further features.
 *
 * Static, immutable data; the pointers returned point into it. */
#ifndef DT_BACKENDS_BACKEND_H
#define DT_BACKENDS_BACKEND_H

#include <stdint.h>

#include "common/target.h"
#include "space/annotation.h"
#include "dtypes/dtype.h"

/* Row ids: the index of a row, and the key of the micro-kernel layer's
 * hooks.  Named only here, in backends/backend.c and in
 * microkernel/backend_emit.c (scripts/check_backend_names.sh). */
typedef enum dt_backend_id {
    DT_BACKEND_F32_GENERIC = 0,
    DT_BACKEND_F32_AVX2,
    DT_BACKEND_F32_AVX512,
    DT_BACKEND_BF16_GENERIC,
    DT_BACKEND_BF16_AVX2,
    DT_BACKEND_BF16_AVX512BF16,
    DT_BACKEND_INT8_GENERIC,
    DT_BACKEND_INT8_AVX2,
    DT_BACKEND_INT8_AVX512VNNI,
    DT_BACKEND_W8A32_GENERIC,
    DT_BACKEND_W8A32_AVX2,
    DT_BACKEND_W8A32_AVX512,
    DT_BACKEND_BF16_AMX,
    DT_BACKEND_INT8_AMX,
    DT_BACKEND_F32BF16_GENERIC,
    DT_BACKEND_F32BF16_AVX2,
    DT_BACKEND_F32BF16_AVX512BF16,
    DT_BACKEND_F32BF16_AMX,
    DT_BACKEND_W8A32BF16_GENERIC,
    DT_BACKEND_W8A32BF16_AVX2,
    DT_BACKEND_W8A32BF16_AVX512BF16,
    DT_BACKEND_W8A32BF16_AMX,
    DT_BACKEND_COUNT
} dt_backend_id;

typedef struct dt_backend {
    dt_backend_id id;
    dt_dtype dtype;
    /* "avx512_bf16", "portable-avx2", "avx512": what `dtune info` and the
     * tests call it (dt_backend_full_name adds the dtype) */
    const char *name;
    /* The annotation isa that selects this row for its dtype (until the
     * annotation names the row itself). */
    dt_isa isa;
    /* A stand-in for a dtype whose own instruction this CPU lacks (bf16's
     * and int8's rows that widen to 32-bit lanes): dt_dtype_native says
     * "portable (...)" when the target's row is one.  f32's and w8a32's rows
     * are their dtypes' own on every isa. */
    int portable;
    /* CPU features needed beyond the isa's own (DT_FEAT_BIT mask); key is the
     * one that names the back-end (reported when only the isa in use is too
     * low), hint a feature that calls for a back-end not written yet. */
    uint32_t needs;
    int key;  /* a dt_feature, or -1 */
    int hint; /* a dt_feature, or -1 */
    /* dt_dtype_native's texts when this row cannot run: the isa in use is
     * below the row's though the CPU has key; the CPU has hint; otherwise. */
    const char *why_isa, *why_hint, *why_missing;
    /* Register geometry: f32 lanes per vector (VL), vector registers on
     * x86-64 and on aarch64 (0: the row does not run there, the x86-64
     * count is used).  tiles: tile registers of a tile back-end, 0 for a
     * vector one. */
    int vec_floats, vec_regs, vec_regs_aarch64, tiles;
    /* The packed B: K group (1; 2 bf16 pairs; 4 u8·s8 quads) and layout. */
    int kg;
    const char *packed_b;
    /* The ceiling of its kernels: a peers/peer.h peak kind by name
     * (dt_peak_kind_name: "f32", "bf16", "int8"). */
    const char *peak;
    /* Compile flags its kernels need beyond the builder's ("" for every
     * vector row: -march=native covers them). */
    const char *cflags;
    /* Its execution unit (an annotation's unit names it), and for a tile
     * back-end the K padding of its packed B (a tile's 16 rows of K groups:
     * 32 bf16, 64 s8; 0: kg — vector rows pad K to whole groups only). */
    dt_unit unit;
    int kpad;
} dt_backend;

int dt_backend_count(void);
/* Row i (0..count-1, i == id), or NULL. */
const dt_backend *dt_backend_at(int i);
/* The vector row of (dtype, annotation isa), or NULL when there is none. */
const dt_backend *dt_backend_of(dt_dtype d, dt_isa isa);
/* The row of (dtype, isa, unit): what an annotation names for a workload's
 * dtype (dt_backend_of_ann), or NULL. */
const dt_backend *dt_backend_of_unit(dt_dtype d, dt_isa isa, dt_unit unit);
const dt_backend *dt_backend_of_ann(dt_dtype d, const dt_annotation *a);
/* K padding of b's packed B: a multiple of its K group (kpad, or kg). */
int dt_backend_kpad(const dt_backend *b);
/* The dtype's row that runs on any CPU (its generic row), or NULL. */
const dt_backend *dt_backend_portable(dt_dtype d);
/* "bf16/avx512_bf16" into buf (size n); returns buf. */
const char *dt_backend_full_name(const dt_backend *b, char *buf, int n);

/* The full name of the row a stored annotation (JSON text) names for
 * dtype d, into buf (size n): 0, or DT_EINVAL with why in e (the text
 * does not parse: prefixed "annotation"; it names no row of d). */
int dt_backend_name_of_text(dt_dtype d, const char *annotation, char *buf, int n, dt_err *e);

/* Vector registers of b's code on arch ("aarch64", "x86_64", ...). */
int dt_backend_vec_regs(const dt_backend *b, const char *arch);

/* The register geometry of annotation isa isa, which every dtype's row of
 * that isa shares (tests/test_backend.c checks): the f32 row.  For the
 * annotation space, which does not know its dtype until the annotation
 * names its row.  NULL for an unknown isa. */
const dt_backend *dt_backend_geometry(dt_isa isa);

/* The rows the tuner searches for dtype d on t (issue 29: the back-end is
 * searched), at most max into out; returns how many: the vector row at the
 * isa in use (dt_backend_of(d, t->isa)); where that row is d's own
 * instruction (not a portable stand-in) also d's widest portable row t
 * runs (bf16, int8 widened to 32-bit lanes: the f32 FMA) and every tile row
 * t runs.  One row (f32, w8a32, or a dtype already on its portable row)
 * means nothing to choose. */
int dt_backend_searched(dt_dtype d, const dt_target *t, const dt_backend **out, int max);

/* Whether the target's isa in use admits vector code of isa: the one place
 * the isa order is read. */
int dt_backend_isa_admits(const dt_target *t, dt_isa isa);
/* Whether t runs b: its isa admits b's and it has b's features.  *why (may
 * be NULL) gets NULL, or the row's text for why not. */
int dt_backend_usable(const dt_backend *b, const dt_target *t, const char **why);

/* How the target runs d (backends/backend.h): 1 when the target's row of d
 * (dt_backend_of(d, t->isa)) is d's own back-end and t runs it (f32, w8a32:
 * always; bf16, int8: where the CPU has their dot-product instruction), 0
 * when d's kernels fall back to a portable row.  *how (may be NULL) gets a
 * short text: the row's name ("avx512_bf16", "avx2"), or why not, from d's
 * own row ("portable (no avx512_bf16)"). */
int dt_dtype_native(dt_dtype d, const dt_target *t, const char **how);

/* The target as d's kernels see it: t itself when d runs natively, else t
 * with its ISA lowered to that of d's portable row (generic), so that
 * annotations sampled and validated for d select d's portable back-end. */
dt_target dt_dtype_target(dt_dtype d, const dt_target *t);

#endif
