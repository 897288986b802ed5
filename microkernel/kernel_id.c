/* A kernel's identity as the database stores it (db/db.h, dt_db_kernel):
 * the op's name, the dtype's name and the attribute values as a JSON object
 * {"<attr>": "<value>", ...} naming every attribute of the op.  The tuner
 * stores what it generated with (dt_kernel_op_attrs_json); export/ and
 * libdtune regenerate a kernel's source from its row alone
 * (dt_kernel_op_from_row).  docs/database.md, "kernels". */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "microkernel/codegen.h"

char *dt_kernel_op_attrs_json(const dt_kernel_op *kop)
{
    json_t *o = json_object();
    for (int i = 0; o && i < kop->op->nattrs; i++) {
        const dt_attr_desc *ad = &kop->op->attrs[i];
        char num[16];
        json_t *v = ad->integer ? json_integer(kop->attrs[i])
                                : json_string(dt_attr_text(ad, kop->attrs[i], num));
        if (json_object_set_new(o, ad->name, v)) {
            json_decref(o);
            return NULL;
        }
    }
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return s;
}

int dt_kernel_op_from_row(const char *op, const char *dtype, const char *attrs_json,
                          dt_kernel_op *kop, dt_err *e)
{
    *kop = (dt_kernel_op){0};
    kop->op = dt_op_find(op);
    if (!kop->op)
        return dt_errf(e, DT_EUNSUPPORTED, "unknown op '%s'", op);
    int d = 0;
    while (d < DT_DTYPE_COUNT && strcmp(dt_dtype_name((dt_dtype)d), dtype ? dtype : "f32"))
        d++;
    if (d == DT_DTYPE_COUNT)
        return dt_errf(e, DT_EUNSUPPORTED, "unknown dtype '%s'", dtype);
    kop->dtype = (dt_dtype)d;
    for (int i = 0; i < kop->op->nattrs; i++)
        kop->attrs[i] = kop->op->attrs[i].default_index;
    json_error_t je;
    json_t *o = json_loads(attrs_json ? attrs_json : "{}", 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        return dt_errf(e, DT_EINVAL, "attributes %s are not a JSON object", attrs_json);
    }
    const char *name;
    json_t *v;
    int rc = 0;
    json_object_foreach(o, name, v)
    {
        int a = dt_op_attr_index(kop->op, name), x = -1;
        if (a < 0)
            rc = dt_errf(e, DT_EINVAL, "%s has no attribute '%s'", op, name);
        else if (dt_attr_parse_json(&kop->op->attrs[a], v, &x))
            rc = dt_errf(e, DT_EINVAL, "%s attribute %s: invalid value", op, name);
        else
            kop->attrs[a] = x;
        if (rc)
            break;
    }
    json_decref(o);
    return rc;
}
