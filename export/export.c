/* dt_export_write: the plan (export_plan.c), its text (export_emit.c) and
 * the files (export_file.c). */
#include "export/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"

/* NAME from the path: the basename without ".c". */
static int name_of_path(const char *path, char *name, size_t n, dt_err *e)
{
    size_t len = strlen(path);
    if (len < 2 || strcmp(path + len - 2, ".c") != 0)
        return dt_errf(e, DT_EINVAL, "output %s: the name must end in .c", path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t bl = strlen(base) - 2;
    if (bl >= n)
        return dt_errf(e, DT_EINVAL, "output %s: the name is longer than %d characters", path,
                       DT_EXPORT_NAME_MAX);
    memcpy(name, base, bl);
    name[bl] = '\0';
    return 0;
}

static json_t *info_json(const dt_export_plan *p, const char *c_path, const char *h_path)
{
    json_t *j = json_object(), *ks = json_array(), *rs = json_array();
    json_object_set_new(j, "name", json_string(p->name));
    json_object_set_new(j, "c", json_string(c_path));
    json_object_set_new(j, "h", json_string(h_path));
    json_object_set_new(j, "workload", json_string(p->d->key));
    json_object_set_new(j, "dtype", json_string(dt_dtype_name(p->kop.dtype)));
    json_object_set_new(j, "target", json_string(p->target_key));
    json_object_set_new(j, "threads", json_integer(p->d->threads));
    json_object_set_new(j, "packed_bytes", p->g.b_const ? json_integer(p->packed_bytes)
                                                    : json_null());
    for (int k = 0; k < p->nk; k++) {
        json_t *jk = json_object();
        json_object_set_new(jk, "index", json_integer(k));
        json_object_set_new(jk, "id", json_integer(p->k[k].id));
        json_object_set_new(jk, "annotation", dt_annotation_to_json(&p->k[k].ann));
        if (p->g.b_const) {
            int64_t off = p->pack[p->k[k].pack_group].offset;
            json_object_set_new(jk, "pack_offset_bytes", json_integer(off));
            if (p->xop->offset_unit == 4) /* f32: as before the other dtypes */
                json_object_set_new(jk, "pack_offset_floats", json_integer(off / 4));
        }
        json_array_append_new(ks, jk);
    }
    for (int r = 0; r < p->d->n; r++) {
        json_t *jr = json_object();
        json_object_set_new(jr, "shape_lo", json_string(p->d->r[r].shape_lo));
        json_object_set_new(jr, "shape_hi", json_string(p->d->r[r].shape_hi));
        json_object_set_new(jr, "kernel_id", json_integer(p->d->r[r].kernel_id));
        json_object_set_new(jr, "kernel", json_integer(p->range_kernel[r]));
        json_array_append_new(rs, jr);
    }
    json_object_set_new(j, "kernels", ks);
    json_object_set_new(j, "ranges", rs);
    return j;
}

int dt_export_write(dt_db *db, const dt_export_opts *o, const char *out_c_path, dt_err *e)
{
    return dt_export_write_info(db, o, out_c_path, NULL, e);
}

int dt_export_write_info(dt_db *db, const dt_export_opts *o, const char *out_c_path,
                         json_t **info, dt_err *e)
{
    if (info)
        *info = NULL;
    char name[DT_EXPORT_NAME_MAX + 2] = "";
    int rc;
    if (!out_c_path || !o || !o->workload_key)
        return dt_errf(e, DT_EINVAL, "export: missing workload or output path");
    if (o->name) {
        snprintf(name, sizeof name, "%s", o->name);
    } else if ((rc = name_of_path(out_c_path, name, sizeof name, e))) {
        return rc;
    }
    char why[240];
    if (!dt_export_name_check(name, why, sizeof why))
        return dt_errf(e, DT_EINVAL, "%s %s cannot name the exported functions: %s%s",
                       o->name ? "name" : "output", o->name ? o->name : out_c_path, why,
                       o->name ? "" : " (give another file name, or keep it and choose the "
                                      "functions' name with --name)");
    size_t len = strlen(out_c_path);
    if (len < 2 || strcmp(out_c_path + len - 2, ".c") != 0)
        return dt_errf(e, DT_EINVAL, "output %s: the name must end in .c", out_c_path);
    char *h_path = strdup(out_c_path);
    if (!h_path)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    h_path[len - 1] = 'h';
    dt_export_plan *p = NULL;
    char *c_text = NULL, *h_text = NULL;
    if (!(rc = dt_export_plan_load(db, o, name, &p, e)) && !(rc = dt_export_emit_c(p, &c_text, e)) &&
        !(rc = dt_export_emit_h(p, &h_text, e))) {
        const char *paths[2] = {out_c_path, h_path}, *texts[2] = {c_text, h_text};
        rc = dt_export_write_files(paths, texts, 2, e);
        if (!rc && info && !(*info = info_json(p, out_c_path, h_path)))
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
    }
    free(c_text);
    free(h_text);
    free(h_path);
    dt_export_plan_free(p);
    return rc;
}
