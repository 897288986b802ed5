/* The back-end table (backends/backend.h). */
#include "backends/backend.h"

#include <stdio.h>
#include <string.h>

#include "common/amx.h"

#define F(x) DT_FEAT_BIT(DT_FEAT_##x)

/* The vector geometry of each isa, shared by every dtype's row of it. */
#define GEOM_GENERIC .vec_floats = 4, .vec_regs = 16, .vec_regs_aarch64 = 32
#define GEOM_AVX2 .vec_floats = 8, .vec_regs = 16
#define GEOM_AVX512 .vec_floats = 16, .vec_regs = 32

#define PANEL_KG1 .kg = 1, .packed_b = "[strip][K][NR]"

/* A row that needs nothing beyond its isa (dt_dtype_native never asks why). */
#define PLAIN .key = -1, .hint = -1

static const dt_backend rows[DT_BACKEND_COUNT] = {
    /* f32: the f32 FMA on every isa */
    [DT_BACKEND_F32_GENERIC] = {DT_BACKEND_F32_GENERIC, DT_DTYPE_F32, "generic", DT_ISA_GENERIC,
                                0, 0, PLAIN, GEOM_GENERIC, PANEL_KG1, .peak = "f32",
                                .cflags = ""},
    [DT_BACKEND_F32_AVX2] = {DT_BACKEND_F32_AVX2, DT_DTYPE_F32, "avx2", DT_ISA_AVX2, 0, 0, PLAIN,
                             GEOM_AVX2, PANEL_KG1, .peak = "f32", .cflags = ""},
    [DT_BACKEND_F32_AVX512] = {DT_BACKEND_F32_AVX512, DT_DTYPE_F32, "avx512", DT_ISA_AVX512, 0,
                               0, PLAIN, GEOM_AVX512, PANEL_KG1, .peak = "f32", .cflags = ""},
    /* bf16: widened to f32 (portable), or vdpbf16ps on pairs of k */
    [DT_BACKEND_BF16_GENERIC] = {DT_BACKEND_BF16_GENERIC, DT_DTYPE_BF16, "portable-generic",
                                 DT_ISA_GENERIC, 1, 0, PLAIN, GEOM_GENERIC, PANEL_KG1,
                                 .peak = "f32", .cflags = ""},
    [DT_BACKEND_BF16_AVX2] = {DT_BACKEND_BF16_AVX2, DT_DTYPE_BF16, "portable-avx2", DT_ISA_AVX2,
                              1, 0, PLAIN, GEOM_AVX2, PANEL_KG1, .peak = "f32", .cflags = ""},
    [DT_BACKEND_BF16_AVX512BF16] = {DT_BACKEND_BF16_AVX512BF16, DT_DTYPE_BF16, "avx512_bf16",
                                    DT_ISA_AVX512, 0,
                                    F(AVX512_BF16) | F(AVX512BW) | F(AVX512VL),
                                    .key = DT_FEAT_AVX512_BF16, .hint = -1,
                                    .why_isa = "portable (the isa in use is below avx512)",
                                    .why_missing = "portable (no avx512_bf16)", GEOM_AVX512,
                                    .kg = 2, .packed_b = "[strip][K/2][NR][2]", .peak = "bf16",
                                    .cflags = ""},
    /* int8: widened to 32-bit lanes (portable), or vpdpbusd on quads of k */
    [DT_BACKEND_INT8_GENERIC] = {DT_BACKEND_INT8_GENERIC, DT_DTYPE_INT8, "portable-generic",
                                 DT_ISA_GENERIC, 1, 0, PLAIN, GEOM_GENERIC, PANEL_KG1,
                                 .peak = "f32", .cflags = ""},
    [DT_BACKEND_INT8_AVX2] = {DT_BACKEND_INT8_AVX2, DT_DTYPE_INT8, "portable-avx2", DT_ISA_AVX2,
                              1, 0, PLAIN, GEOM_AVX2, PANEL_KG1, .peak = "f32", .cflags = ""},
    [DT_BACKEND_INT8_AVX512VNNI] = {DT_BACKEND_INT8_AVX512VNNI, DT_DTYPE_INT8, "avx512_vnni",
                                    DT_ISA_AVX512, 0, F(AVX512_VNNI) | F(AVX512BW),
                                    .key = DT_FEAT_AVX512_VNNI, .hint = DT_FEAT_AVX_VNNI,
                                    .why_isa = "portable (the isa in use is below avx512)",
                                    .why_hint = "portable (avx_vnni back-end not written)",
                                    .why_missing = "portable (no avx512_vnni)", GEOM_AVX512,
                                    .kg = 4, .packed_b = "[strip][K/4][NR][4]", .peak = "int8",
                                    .cflags = ""},
    /* w8a32: s8 weights converted to f32, the f32 FMA on every isa */
    [DT_BACKEND_W8A32_GENERIC] = {DT_BACKEND_W8A32_GENERIC, DT_DTYPE_W8A32, "generic",
                                  DT_ISA_GENERIC, 0, 0, PLAIN, GEOM_GENERIC, PANEL_KG1,
                                  .peak = "f32", .cflags = ""},
    [DT_BACKEND_W8A32_AVX2] = {DT_BACKEND_W8A32_AVX2, DT_DTYPE_W8A32, "avx2", DT_ISA_AVX2, 0, 0,
                               PLAIN, GEOM_AVX2, PANEL_KG1, .peak = "f32", .cflags = ""},
    [DT_BACKEND_W8A32_AVX512] = {DT_BACKEND_W8A32_AVX512, DT_DTYPE_W8A32, "avx512",
                                 DT_ISA_AVX512, 0, 0, PLAIN, GEOM_AVX512, PANEL_KG1,
                                 .peak = "f32", .cflags = ""},
    /* AMX tiles: tdpbf16ps, tdpbusd on 16×16 C tiles; the packed B is the
     * vector rows' [K/g][NR][g] panel with K padded to a tile's 16 groups;
     * -march=native enables them on a CPU with AMX, elsewhere the kernels
     * build on the tile emulation (template/amx_tile.h) */
    [DT_BACKEND_BF16_AMX] = {DT_BACKEND_BF16_AMX, DT_DTYPE_BF16, "amx", DT_ISA_AVX512, 0,
                             F(AMX_TILE) | F(AMX_BF16), .key = DT_FEAT_AMX_BF16, .hint = -1,
                             .why_isa = "the isa in use is below avx512",
                             .why_missing = "no amx_bf16", GEOM_AVX512, .tiles = 8, .kg = 2,
                             .packed_b = "[strip][K/2][NR][2], K padded to 32", .peak = "amx_bf16",
                             .cflags = "", .unit = DT_UNIT_AMX, .kpad = 32},
    [DT_BACKEND_INT8_AMX] = {DT_BACKEND_INT8_AMX, DT_DTYPE_INT8, "amx", DT_ISA_AVX512, 0,
                             F(AMX_TILE) | F(AMX_INT8), .key = DT_FEAT_AMX_INT8, .hint = -1,
                             .why_isa = "the isa in use is below avx512",
                             .why_missing = "no amx_int8", GEOM_AVX512, .tiles = 8, .kg = 4,
                             .packed_b = "[strip][K/4][NR][4], K padded to 64", .peak = "amx_int8",
                             .cflags = "", .unit = DT_UNIT_AMX, .kpad = 64},
    /* math=bf16: bf16's rows for a dtype stored otherwise — f32_bf16 (f32
     * operands rounded to bf16 when the weights are packed and when a
     * kernel is called) and w8a32_bf16 (the s8 weights dequantized and
     * rounded when packed) */
#define MATH_BF16_ROWS(ID, DTYPE)                                                              \
    [DT_BACKEND_##ID##_GENERIC] = {DT_BACKEND_##ID##_GENERIC, DTYPE, "portable-generic",       \
                                   DT_ISA_GENERIC, 1, 0, PLAIN, GEOM_GENERIC, PANEL_KG1,       \
                                   .peak = "f32", .cflags = ""},                              \
    [DT_BACKEND_##ID##_AVX2] = {DT_BACKEND_##ID##_AVX2, DTYPE, "portable-avx2", DT_ISA_AVX2, 1, \
                                0, PLAIN, GEOM_AVX2, PANEL_KG1, .peak = "f32", .cflags = ""},  \
    [DT_BACKEND_##ID##_AVX512BF16] = {DT_BACKEND_##ID##_AVX512BF16, DTYPE, "avx512_bf16",      \
                                      DT_ISA_AVX512, 0,                                        \
                                      F(AVX512_BF16) | F(AVX512BW) | F(AVX512VL),              \
                                      .key = DT_FEAT_AVX512_BF16, .hint = -1,                  \
                                      .why_isa = "portable (the isa in use is below avx512)",  \
                                      .why_missing = "portable (no avx512_bf16)", GEOM_AVX512, \
                                      .kg = 2, .packed_b = "[strip][K/2][NR][2]",              \
                                      .peak = "bf16", .cflags = ""},                           \
    [DT_BACKEND_##ID##_AMX] = {DT_BACKEND_##ID##_AMX, DTYPE, "amx", DT_ISA_AVX512, 0,          \
                               F(AMX_TILE) | F(AMX_BF16), .key = DT_FEAT_AMX_BF16, .hint = -1, \
                               .why_isa = "the isa in use is below avx512",                    \
                               .why_missing = "no amx_bf16", GEOM_AVX512, .tiles = 8, .kg = 2, \
                               .packed_b = "[strip][K/2][NR][2], K padded to 32",              \
                               .peak = "amx_bf16", .cflags = "", .unit = DT_UNIT_AMX,          \
                               .kpad = 32}
    MATH_BF16_ROWS(F32BF16, DT_DTYPE_F32_BF16),
    MATH_BF16_ROWS(W8A32BF16, DT_DTYPE_W8A32_BF16),
#undef MATH_BF16_ROWS
};

int dt_backend_count(void) { return DT_BACKEND_COUNT; }

const dt_backend *dt_backend_at(int i)
{
    return i >= 0 && i < DT_BACKEND_COUNT ? &rows[i] : NULL;
}

const dt_backend *dt_backend_of_unit(dt_dtype d, dt_isa isa, dt_unit unit)
{
    for (int i = 0; i < DT_BACKEND_COUNT; i++)
        if (rows[i].dtype == d && rows[i].isa == isa && rows[i].unit == unit)
            return &rows[i];
    return NULL;
}

const dt_backend *dt_backend_of(dt_dtype d, dt_isa isa)
{
    return dt_backend_of_unit(d, isa, DT_UNIT_VEC);
}

const dt_backend *dt_backend_of_ann(dt_dtype d, const dt_annotation *a)
{
    return a ? dt_backend_of_unit(d, a->isa, a->unit) : NULL;
}

int dt_backend_kpad(const dt_backend *b)
{
    return b->kpad > 0 ? b->kpad : b->kg;
}

const dt_backend *dt_backend_portable(dt_dtype d)
{
    return dt_backend_of(d, DT_ISA_GENERIC);
}

const dt_backend *dt_backend_geometry(dt_isa isa)
{
    return dt_backend_of(DT_DTYPE_F32, isa);
}

const char *dt_backend_full_name(const dt_backend *b, char *buf, int n)
{
    snprintf(buf, (size_t)n, "%s/%s", b ? dt_dtype_name(b->dtype) : "?", b ? b->name : "?");
    return buf;
}

int dt_backend_name_of_text(dt_dtype d, const char *annotation, char *buf, int n, dt_err *e)
{
    dt_annotation a;
    if (dt_annotation_from_text(annotation, &a, e))
        return dt_err_prefix(e, "annotation");
    const dt_backend *b = dt_backend_of_ann(d, &a);
    if (!b)
        return dt_errf(e, DT_EINVAL, "the annotation names no back-end of dtype %s",
                       dt_dtype_name(d));
    dt_backend_full_name(b, buf, n);
    return 0;
}

int dt_backend_vec_regs(const dt_backend *b, const char *arch)
{
    if (b->vec_regs_aarch64 && arch && strcmp(arch, "aarch64") == 0)
        return b->vec_regs_aarch64;
    return b->vec_regs;
}

int dt_backend_searched(dt_dtype d, const dt_target *t, const dt_backend **out, int max)
{
    int n = 0;
    const dt_backend *own = dt_backend_of(d, t->isa);
    if (!own || max < 1)
        return 0;
    out[n++] = own;
    if (own->portable || !dt_backend_usable(own, t, NULL))
        return n;
    const dt_backend *wide = NULL; /* the widest portable row t runs */
    for (int i = 0; i < DT_BACKEND_COUNT; i++) {
        const dt_backend *b = &rows[i];
        if (b->dtype != d || !dt_backend_usable(b, t, NULL))
            continue;
        if (b->portable && (!wide || b->isa > wide->isa))
            wide = b;
        else if (b->unit != DT_UNIT_VEC && n < max)
            out[n++] = b;
    }
    if (wide && n < max)
        out[n++] = wide;
    return n;
}

int dt_backend_isa_admits(const dt_target *t, dt_isa isa)
{
    return isa <= t->isa;
}

int dt_backend_usable(const dt_backend *b, const dt_target *t, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    *why = NULL;
    int isa_ok = dt_backend_isa_admits(t, b->isa);
    if (isa_ok && (t->features & b->needs) == b->needs) {
        /* a tile row also needs the kernel's permission to use the tiles
         * (Linux grants AMX state per process: common/amx.h) */
        if (b->unit == DT_UNIT_AMX && !dt_amx_usable(t, why))
            return 0;
        return 1;
    }
    if (!isa_ok && b->key >= 0 && dt_target_has(t, (dt_feature)b->key))
        *why = b->why_isa;
    else if (b->hint >= 0 && dt_target_has(t, (dt_feature)b->hint))
        *why = b->why_hint;
    else
        *why = b->why_missing;
    if (!*why)
        *why = isa_ok ? "the CPU lacks a feature it needs" : "the isa in use is below its isa";
    return 0;
}

/* ---- what a dtype runs on (backends/backend.h) ---- */

int dt_dtype_native(dt_dtype d, const dt_target *t, const char **how)
{
    const char *dummy;
    if (!how)
        how = &dummy;
    const dt_backend *b = dt_backend_of(d, t->isa);
    if (!b) {
        *how = "?";
        return 0;
    }
    if (!b->portable && dt_backend_usable(b, t, NULL)) {
        *how = b->name;
        return 1;
    }
    /* why not: the reason of d's own vector back-end (its last vector row
     * that is not a portable stand-in) */
    *how = "portable";
    for (int i = dt_backend_count() - 1; i >= 0; i--) {
        const dt_backend *o = dt_backend_at(i);
        if (o->dtype == d && !o->portable && o->unit == DT_UNIT_VEC) {
            dt_backend_usable(o, t, how);
            break;
        }
    }
    return 0;
}

dt_target dt_dtype_target(dt_dtype d, const dt_target *t)
{
    dt_target out = *t;
    const dt_backend *p = dt_backend_portable(d);
    if (!dt_dtype_native(d, t, NULL) && p)
        dt_target_set_isa(&out, p->isa);
    return out;
}
