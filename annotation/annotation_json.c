/* Annotation <-> JSON.  The key order is fixed (it is the order of the
 * struct and of docs/search-space.md), so to_string is a stable cache and
 * database key. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_util.h"
#include "annotation/annotation.h"
#include "annotation/fields.h"

/* Keys in output order, one per dt_ann_field. */
static const char *const keys[DT_F_COUNT] = {
    "sketch", "isa", "mr", "nr", "kc", "mc", "nc", "unroll", "prefetch", "store", "order", "par",
    "threads",
};

/* Target-independent bounds of the integer fields (validate has the
 * target-dependent rules). */
typedef struct int_range {
    int lo, hi;
} int_range;

static int_range int_bounds(int f)
{
    switch ((dt_ann_field)f) {
    case DT_F_MR: return (int_range){1, DT_ANN_MR_MAX};
    case DT_F_NR: return (int_range){1, DT_ANN_NR_MAX};
    case DT_F_KC: return (int_range){0, DT_ANN_KC_MAX};
    case DT_F_MC: return (int_range){0, DT_ANN_MC_MAX};
    case DT_F_NC: return (int_range){1, DT_ANN_NC_MAX};
    case DT_F_UNROLL: return (int_range){1, 8};
    case DT_F_PREFETCH: return (int_range){0, DT_ANN_PREFETCH_MAX};
    case DT_F_THREADS: return (int_range){1, INT_MAX};
    default: return (int_range){0, -1}; /* not an integer field */
    }
}

json_t *dt_annotation_to_json(const dt_annotation *a)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_t *vals[DT_F_COUNT] = {
        json_string(dt_sketch_name(a->sketch)),
        json_string(dt_isa_name(a->isa)),
        json_integer(a->mr),
        json_integer(a->nr),
        json_integer(a->kc),
        json_integer(a->mc),
        json_integer(a->nc),
        json_integer(a->unroll),
        json_integer(a->prefetch),
        json_string(dt_store_name(a->store)),
        json_string(dt_order_name(a->order)),
        json_string(dt_par_name(a->par)),
        json_integer(a->threads),
    };
    int failed = 0;
    for (int f = 0; f < DT_F_COUNT; f++) /* _new steals the reference, even on failure */
        if (json_object_set_new(o, keys[f], vals[f]))
            failed = 1;
    /* unit only when not vec: vector annotations keep their text */
    if (a->unit != DT_UNIT_VEC && json_object_set_new(o, "unit", json_string(dt_unit_name(a->unit))))
        failed = 1;
    if (failed) {
        json_decref(o);
        return NULL;
    }
    return o;
}

char *dt_annotation_to_string(const dt_annotation *a)
{
    json_t *j = dt_annotation_to_json(a);
    if (!j)
        return NULL;
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    return s;
}

/* Parses the name-valued field f from s into *a. */
static int parse_name(int f, const char *s, dt_annotation *a, dt_err *e)
{
    switch ((dt_ann_field)f) {
    case DT_F_SKETCH:
        if (dt_sketch_from_name(s, &a->sketch))
            return dt_errf(e, DT_EINVAL,
                           "annotation JSON: key \"sketch\": unknown sketch \"%s\" (expected "
                           "blocked, stream or channel)",
                           s);
        return 0;
    case DT_F_ISA:
        if (dt_isa_from_name(s, &a->isa))
            return dt_errf(e, DT_EINVAL,
                           "annotation JSON: key \"isa\": unknown isa \"%s\" (expected generic, "
                           "avx2 or avx512)",
                           s);
        return 0;
    case DT_F_STORE:
        for (int i = 0; i < DT_STORE_COUNT; i++) {
            if (!strcmp(s, dt_store_name((dt_store_kind)i))) {
                a->store = (dt_store_kind)i;
                return 0;
            }
        }
        return dt_errf(e, DT_EINVAL,
                       "annotation JSON: key \"store\": unknown store \"%s\" (expected mask or "
                       "scratch)",
                       s);
    case DT_F_ORDER:
        for (int i = 0; i < DT_ORDER_COUNT; i++) {
            if (!strcmp(s, dt_order_name((dt_loop_order)i))) {
                a->order = (dt_loop_order)i;
                return 0;
            }
        }
        return dt_errf(e, DT_EINVAL,
                       "annotation JSON: key \"order\": unknown order \"%s\" (expected m_inner or "
                       "n_inner)",
                       s);
    case DT_F_PAR:
        for (int i = 0; i < DT_PAR_COUNT; i++) {
            if (!strcmp(s, dt_par_name((dt_par_axis)i))) {
                a->par = (dt_par_axis)i;
                return 0;
            }
        }
        return dt_errf(e, DT_EINVAL,
                       "annotation JSON: key \"par\": unknown par \"%s\" (expected n, m or mn)", s);
    default: break;
    }
    return dt_errf(e, DT_EINVAL, "annotation JSON: key \"%s\" is not a name field", keys[f]);
}

int dt_annotation_from_json(const json_t *j, dt_annotation *out, dt_err *e)
{
    if (!j || !json_is_object(j))
        return dt_errf(e, DT_EINVAL, "annotation JSON: expected an object, got %s",
                       j ? dt_json_type_name(j) : "nothing");
    /* jansson's iteration API is not const-qualified; nothing is modified */
    json_t *obj = (json_t *)j;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int known = 0;
        for (int f = 0; f < DT_F_COUNT && !known; f++)
            known = !strcmp(key, keys[f]);
        if (!known && strcmp(key, "unit"))
            return dt_errf(e, DT_EINVAL,
                           "annotation JSON: unknown key \"%s\" (expected sketch, isa, mr, nr, "
                           "kc, mc, nc, unroll, prefetch, store, order, par, threads, unit)",
                           key);
    }

    dt_annotation a;
    memset(&a, 0, sizeof a);
    for (int f = 0; f < DT_F_COUNT; f++) {
        v = json_object_get(j, keys[f]);
        if (!v)
            return dt_errf(e, DT_EINVAL, "annotation JSON: missing key \"%s\"", keys[f]);
        int_range b = int_bounds(f);
        if (b.lo > b.hi) { /* a name */
            if (!json_is_string(v))
                return dt_errf(e, DT_EINVAL, "annotation JSON: key \"%s\": expected a string, got %s",
                               keys[f], dt_json_type_name(v));
            int rc = parse_name(f, json_string_value(v), &a, e);
            if (rc)
                return rc;
            continue;
        }
        if (!json_is_integer(v))
            return dt_errf(e, DT_EINVAL, "annotation JSON: key \"%s\": expected an integer, got %s",
                           keys[f], dt_json_type_name(v));
        json_int_t x = json_integer_value(v);
        if (x < b.lo || x > b.hi)
            return dt_errf(e, DT_EINVAL, "annotation JSON: key \"%s\": %" JSON_INTEGER_FORMAT
                                         " out of range %d..%d",
                           keys[f], x, b.lo, b.hi);
        dt_ann_set(&a, f, (int)x);
    }
    v = json_object_get(j, "unit"); /* optional: vec when absent */
    if (v && (!json_is_string(v) || dt_unit_from_name(json_string_value(v), &a.unit)))
        return dt_errf(e, DT_EINVAL, "annotation JSON: key \"unit\": expected one of %s",
                       dt_unit_names());
    *out = a;
    return 0;
}

int dt_annotation_from_text(const char *text, dt_annotation *out, dt_err *e)
{
    if (!text)
        return dt_errf(e, DT_EINVAL, "annotation JSON: no text");
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    if (!j)
        return dt_errf(e, DT_EINVAL, "annotation is not JSON: %s", jerr.text);
    int rc = dt_annotation_from_json(j, out, e);
    json_decref(j);
    return rc;
}
