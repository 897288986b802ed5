/* The back-end rows (backends/backend.h): the registry's rows flattened
 * into one table once, its consistency asserted then; the lookups. */
#include "backends/backend.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends/unit.h"
#include "common/check.h"

#define ROWS_MAX 64

static dt_backend rows[ROWS_MAX];
static int nrows;
static pthread_once_t rows_once = PTHREAD_ONCE_INIT;

/* The vector units' hooks: the search space's own rules (NULL hooks). */
static const dt_unit_hooks unit_vec = {.unit = DT_UNIT_VEC, .elem_bytes = 4, .isa = DT_ISA_GENERIC};
static const dt_unit_hooks *units[DT_UNIT_COUNT];

/* What every row must be for the layers that read it: stated once, checked
 * when the registry is read (at start-up, by the first lookup). */
static void check_row(const dt_backend *b)
{
    DT_ASSERT(b->name && *b->name, "a back-end row has a name");
    DT_ASSERT((unsigned)b->dtype < DT_DTYPE_COUNT, "a row's dtype is a dtype");
    DT_ASSERT((unsigned)b->isa < DT_ISA_COUNT, "a row's isa is an isa");
    DT_ASSERT((unsigned)b->unit < DT_UNIT_COUNT, "a row's unit is a unit");
    DT_ASSERT(b->vec_floats == dt_isa_vec_floats(b->isa),
              "a row's vector width is its isa's (the annotation space's geometry)");
    DT_ASSERT(b->vec_regs > 0, "a row has vector registers");
    DT_ASSERT(b->kg == 1 || b->kg == 2 || b->kg == 4, "a K group is 1, 2 or 4 elements");
    DT_ASSERT(b->kpad == 0 || (b->kpad > 0 && b->kpad % b->kg == 0),
              "a row's K padding is whole K groups");
    DT_ASSERT(b->packed_b && b->peak && b->cflags, "a row states its layout, peak and flags");
    DT_ASSERT(b->code.macro && b->code.emit_ukr, "a row has code: its macro and its emitter");
    DT_ASSERT(b->key >= -1 && b->key < DT_FEAT_COUNT && b->hint >= -1 && b->hint < DT_FEAT_COUNT,
              "a row's key and hint are features or -1");
    DT_ASSERT(b->key < 0 || b->why_missing, "a row with a key feature says why it is missing");
    DT_ASSERT(!b->portable || b->needs == 0, "a portable stand-in needs nothing beyond its isa");
}

static void add_unit(const dt_unit_hooks *h)
{
    DT_ASSERT((unsigned)h->unit < DT_UNIT_COUNT, "a registered unit is a unit");
    DT_ASSERT(!units[h->unit] || units[h->unit] == h, "one set of hooks per unit");
    DT_ASSERT(h->elem_bytes > 0, "a unit's cache rules have an element size");
    DT_ASSERT(!h->tile || h->reg_pressure, "a tile unit says its register pressure");
    DT_ASSERT(!h->sample_once == !h->check && !h->mutate_once == !h->check &&
                  !h->cross_once == !h->check,
              "a unit has all of its own rules or none");
    units[h->unit] = h;
}

static void build_rows(void)
{
    add_unit(&unit_vec);
    for (int r = 0; r < dt_backend_reg_count(); r++) {
        const dt_backend_reg *g = dt_backend_reg_at(r);
        DT_ASSERT(g && g->name && g->rows && g->nrows > 0, "a back-end registers its rows");
        if (g->unit)
            add_unit(g->unit);
        for (int i = 0; i < g->nrows; i++) {
            DT_ASSERT(nrows < ROWS_MAX, "the rows fit the registry's table");
            rows[nrows] = g->rows[i];
            rows[nrows].id = nrows;
            check_row(&rows[nrows]);
            nrows++;
        }
    }
    for (int u = 0; u < DT_UNIT_COUNT; u++)
        DT_ASSERT(units[u], "every unit is registered, by the back-end that brings it");
    for (int i = 0; i < nrows; i++) {
        const dt_backend *b = &rows[i];
        for (int j = 0; j < i; j++) {
            DT_ASSERT(!(rows[j].dtype == b->dtype && rows[j].isa == b->isa &&
                        rows[j].unit == b->unit),
                      "one row per (dtype, isa, unit): an annotation names one row");
            DT_ASSERT(!(rows[j].dtype == b->dtype && strcmp(rows[j].name, b->name) == 0),
                      "a dtype's rows have distinct names");
        }
        DT_ASSERT(!units[b->unit]->tile || b->tiles > 0, "a tile unit's row has tiles");
    }
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        int generic = 0;
        for (int i = 0; i < nrows; i++)
            generic += (int)rows[i].dtype == d && rows[i].isa == DT_ISA_GENERIC &&
                       rows[i].unit == DT_UNIT_VEC && rows[i].needs == 0;
        DT_ASSERT(generic == 1, "every dtype has one generic row that any CPU runs");
    }
}

static void ensure_rows(void)
{
    pthread_once(&rows_once, build_rows);
}

const dt_unit_hooks *dt_unit_hooks_of(dt_unit u)
{
    ensure_rows();
    DT_ASSERT((unsigned)u < DT_UNIT_COUNT, "a unit asked for is a unit (callers validate)");
    return units[u];
}

int dt_backend_count(void)
{
    ensure_rows();
    return nrows;
}

const dt_backend *dt_backend_at(int i)
{
    ensure_rows();
    return i >= 0 && i < nrows ? &rows[i] : NULL;
}

const dt_backend *dt_backend_of_unit(dt_dtype d, dt_isa isa, dt_unit unit)
{
    ensure_rows();
    for (int i = 0; i < nrows; i++)
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
    for (int i = 0; i < dt_backend_count(); i++) {
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
    /* pure: the target's features say it (an AMX kernel asks the OS for
     * its tile permission itself where it runs: backends/amx/template/amx_tile.h) */
    if (isa_ok && (t->features & b->needs) == b->needs)
        return 1;
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
