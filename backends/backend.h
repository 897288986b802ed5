/* The back-ends (DESIGN.md, "A back-end is a row, not a rung"; issue 44: a
 * back-end is a folder and a row).
 *
 * Each back-end is a folder of backends/ (generic, avx2, avx512,
 * avx512_bf16, avx512_vnni, amx, avx512_fma) whose one registration
 * (dt_backend_reg) gives its rows — one per dtype it runs — and, for a unit
 * with rules of its own, that unit's hooks (backends/unit.h).  A row says
 * everything about running a dtype there: its name, the CPU features it
 * needs, its vector width and register budget (a tile budget for a tile
 * back-end), the K group and layout of its packed B, the peak probe that
 * is its ceiling, its extra compile flags, and its code: the macro its
 * templates are compiled under, the register-kernel emitter, and a types
 * block of its own where the dtype's does not fit it.  backends/registry.c
 * lists the back-ends, one line each; the search space, the cost model,
 * codegen and `dtune info` iterate the rows.
 *
 * An annotation names its row with its isa and its unit (vec: the rows
 * every annotation had before AMX, whose JSON and stored source hashes stay
 * as they were; amx: the tile rows; fma: bf16 widened to f32 on AVX-512),
 * and dt_backend_of_ann is the one way from the two to
 * the row.  The tuner searches the units whose row the target runs
 * (dt_backend_searched).
 *
 *   folder        rows (dtype: name)                                   needs beyond the isa
 *   generic       f32, w8a32: generic; bf16, int8, f32_bf16,            -
 *                 w8a32_bf16: portable-generic (widened to f32 lanes)
 *   avx2          the same on avx2 (portable-avx2)                      -
 *   avx512        f32, w8a32: avx512                                    -
 *   avx512_bf16   bf16, f32_bf16, w8a32_bf16: vdpbf16ps on pairs (KG 2) avx512_bf16 bw vl
 *   avx512_vnni   int8: vpdpbusd on quads (KG 4)                        avx512_vnni bw
 *   amx           bf16, f32_bf16, w8a32_bf16 (KG 2, K pad 32), int8     amx_tile amx_bf16|int8
 *                 (KG 4, K pad 64): 8 tiles, unit amx
 *   avx512_fma    bf16, f32_bf16, w8a32_bf16 widened to f32, the        -
 *                 AVX-512 FMA (KG 1), unit fma
 *   (generic: VL 4, 16 registers, 32 on aarch64; avx2: 8, 16; avx512: 16, 32)
 *
 * An isa's own features are dt_isa_best's (avx2: avx2 + fma; avx512: also
 * avx512f); a target runs a row when its isa in use (DTUNE_TARGET_ISA may
 * lower it) admits the row's isa and it has the row's further features.
 *
 * Static, immutable data once registered; the pointers returned point into
 * it. */
#ifndef DT_BACKENDS_BACKEND_H
#define DT_BACKENDS_BACKEND_H

#include <stdint.h>

#include "common/target.h"
#include "annotation/annotation.h"
#include "dtypes/dtype.h"

#include "common/strbuf.h"

struct dt_backend;
/* A register-kernel emitter: dt_ukr of annotation a for row b; seg: the
 * segmented kernel an implicit A's stream sketch asks for (emit.h). */
typedef void (*dt_emit_ukr_fn)(dt_strbuf *sb, const struct dt_backend *b, const dt_annotation *a,
                               int seg);

/* The code of a row: what codegen needs of it (microkernel/mk_op.h calls
 * it dt_mk_backend). */
typedef struct dt_backend_code {
    /* The macro its templates are compiled under (`#define <macro> 1`):
     * the vector macros of template/prelude.h, the types blocks' choice of
     * K group and register kernel helpers. */
    const char *macro;
    int intrinsics; /* its code includes <immintrin.h> */
    dt_emit_ukr_fn emit_ukr;
    /* A types block emitted right after the dtype's element types (its
     * types_base when it has one, else its types: bf16's for bf16,
     * f32_bf16 and w8a32_bf16) to adapt them to the row (its K group, its
     * load helpers), or NULL. */
    const char *types;
} dt_backend_code;

typedef struct dt_backend {
    /* its index in the registry's rows (dt_backend_at), set when registered */
    int id;
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
    dt_backend_code code;
} dt_backend;

/* One back-end: its folder's registration (backends/registry.c lists them). */
typedef struct dt_backend_reg {
    const char *name; /* the folder */
    const dt_backend *rows;
    int nrows;
    /* the unit it brings (its hooks; NULL rules: the vector ones), or NULL */
    const struct dt_unit_hooks *unit;
} dt_backend_reg;

/* The registered back-ends, in registry order. */
int dt_backend_reg_count(void);
const dt_backend_reg *dt_backend_reg_at(int i);

int dt_backend_count(void);
/* Row i (0..count-1, i == id), or NULL. */
const dt_backend *dt_backend_at(int i);
/* The vector row of (dtype, annotation isa), or NULL when there is none. */
const dt_backend *dt_backend_of(dt_dtype d, dt_isa isa);
/* The row of (dtype, isa, unit): what an annotation names for a workload's
 * dtype (dt_backend_of_ann), or NULL. */
const dt_backend *dt_backend_of_unit(dt_dtype d, dt_isa isa, dt_unit unit);
/* The row an annotation names for a workload's dtype: (d, a->isa, a->unit). */
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
