/* The text of NAME.c and NAME.h: the ABI comment, the kernels, the
 * dispatcher, packing and the entry point (docs/export.md).  What differs
 * per op comes from its export hooks (export_op.h). */
#include "export/export_internal.h"
#include "microkernel/mk_op.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- expressions as C ---------------------------------------------------- */

static void emit_expr(dt_strbuf *sb, const dt_export_plan *p, const dt_expr *x)
{
    static const char *const op[] = {[DT_EXPR_ADD] = " + ", [DT_EXPR_MUL] = " * ",
                                      [DT_EXPR_SUB] = " - "};
    switch (x->kind) {
    case DT_EXPR_CONST:
        dt_sb_appendf(sb, x->value < 0 ? "(%lld)" : "%lld", (long long)x->value);
        return;
    case DT_EXPR_VAR:
        dt_sb_append(sb, p->var[x->var_index]);
        return;
    case DT_EXPR_DIV: /* floor division, as in workload keys */
        dt_sb_appendf(sb, "%s_fdiv(", p->name);
        emit_expr(sb, p, x->args[0]);
        dt_sb_append(sb, ", ");
        emit_expr(sb, p, x->args[1]);
        dt_sb_append(sb, ")");
        return;
    default:
        dt_sb_append(sb, "(");
        for (int i = 0; i < x->nargs; i++) {
            if (i)
                dt_sb_append(sb, op[x->kind]);
            emit_expr(sb, p, x->args[i]);
        }
        dt_sb_append(sb, ")");
    }
}

static int uses_div(const dt_expr *x)
{
    if (x->kind == DT_EXPR_DIV)
        return 1;
    for (int i = 0; i < x->nargs; i++)
        if (uses_div(x->args[i]))
            return 1;
    return 0;
}

/* ---- the ABI, shared by the header and the C file ------------------------- */

const char *dt_export_act_text(const dt_export_plan *p)
{
    return p->g.act == DT_ACT_RELU        ? ", then ReLU"
           : p->g.act == DT_ACT_GELU      ? ", then GELU (erf form)"
           : p->g.act == DT_ACT_RELU6     ? ", then ReLU6"
           : p->g.act == DT_ACT_HARDSWISH ? ", then HardSwish"
                                          : "";
}

void dt_export_fill(dt_strbuf *sb, const char *text, const dt_export_field *fields, size_t n)
{
    for (const char *s = text; *s;) {
        size_t f = 0;
        if (*s == '@')
            for (; f < n && strncmp(s, fields[f].field, strlen(fields[f].field)) != 0; f++)
                ;
        if (*s == '@' && f < n) {
            dt_sb_append(sb, fields[f].value);
            s += strlen(fields[f].field);
        } else {
            dt_sb_appendn(sb, s++, 1);
        }
    }
}

void dt_export_offset_text(char *buf, size_t n, int unit, const char *cast, int64_t offset)
{
    if (unit == 4)
        snprintf(buf, n, "packed + %lld", (long long)(offset / 4));
    else
        snprintf(buf, n, "(%s)packed + %lld", cast, (long long)offset);
}

static void emit_shape_params(dt_strbuf *sb, const dt_export_plan *p)
{
    for (int v = 0; v < p->w->nvars; v++)
        dt_sb_appendf(sb, "int64_t %s, ", p->var[v]);
}

/* NAME_pack of a quantized dtype checks the scales it is given and says
 * which one it refused: it returns int64_t; the others return nothing. */
static const char *pack_returns(const dt_export_plan *p)
{
    return dt_dtype_quantized(p->kop.dtype) ? "int64_t" : "void";
}

static void emit_prototypes(dt_strbuf *sb, const dt_export_plan *p)
{
    if (p->g.b_const) {
        dt_sb_appendf(sb, "size_t %s_packed_size(void);\n", p->name);
        dt_sb_appendf(sb, "%s %s_pack(%s);\n", pack_returns(p), p->name, p->xop->pack_params);
    }
    dt_sb_appendf(sb, "void %s(", p->name);
    emit_shape_params(sb, p);
    p->xop->emit_params(sb, p);
    dt_sb_append(sb, ");\n");
}

/* " *   M = batch*seq" lines: each dim of the op as a function of the variables. */
static void emit_dims_doc(dt_strbuf *sb, const dt_export_plan *p)
{
    for (int d = 0; d < p->w->op->ndims; d++) {
        char text[256];
        dt_expr_print(p->w->dims[d], text, sizeof text);
        dt_sb_appendf(sb, " *   %s = %s\n", p->w->op->dims[d], text);
    }
    for (int v = 0; v < p->w->nvars; v++) {
        char dom[256];
        dt_domain_print(&p->w->vars[v].dom, dom, sizeof dom);
        dt_sb_appendf(sb, " * %s (argument %s) was tuned over %s; any value with every dim >= 1 "
                          "runs.\n", p->w->vars[v].name, p->var[v], dom);
    }
}

/* " * ns as X us" or "n/a" */
static void append_us(dt_strbuf *sb, double ns)
{
    if (isfinite(ns))
        dt_sb_appendf(sb, "%.3f us", ns * 1e-3);
    else
        dt_sb_append(sb, "n/a");
}

/* The kernel budget's outcome: the kernels, the objective and its loss
 * against the unrestricted per-shape choice (docs/tuner.md, "Kernel
 * budget"), from the records (dispatch/dispatch_stats.h). */
static void emit_budget_doc(dt_strbuf *sb, const dt_export_plan *p)
{
    const dt_dispatch_stats *st = &p->stats;
    dt_sb_appendf(sb, " * Kernels (ids): ");
    for (int i = 0; i < st->nids; i++)
        dt_sb_appendf(sb, "%s%lld", i ? ", " : "", (long long)st->kernel_ids[i]);
    dt_sb_appendf(sb, "%s over %lld shapes.\n * Objective (weighted mean measured time over the "
                      "shape set): ", st->nids < st->kernels ? ", ..." : "",
                  (long long)st->shapes);
    append_us(sb, st->objective_ns);
    if (st->unmeasured)
        dt_sb_appendf(sb, " (%lld shape%s not measured)", (long long)st->unmeasured,
                      st->unmeasured == 1 ? "" : "s");
    dt_sb_append(sb, ";\n * unrestricted per-shape choice: ");
    append_us(sb, st->best_objective_ns);
    dt_sb_appendf(sb, " with %d kernel%s; loss ", st->best_kernels,
                  st->best_kernels == 1 ? "" : "s");
    if (isfinite(st->loss))
        dt_sb_appendf(sb, "%.2f %%.\n *\n", 100 * st->loss);
    else
        dt_sb_append(sb, "n/a.\n *\n");
}

static void emit_abi_doc(dt_strbuf *sb, const dt_export_plan *p)
{
    char what[128];
    dt_kernel_op_describe(&p->kop, what, sizeof what);
    dt_sb_appendf(sb, " * workload: %s\n * target:   %s, %d thread%s (%s_THREADS)\n"
                      " * %d range%s, %d kernel%s; generated by dtune %s `dtune export`.\n *\n",
                  p->d->key, p->target_key, p->d->threads, p->d->threads == 1 ? "" : "s",
                  p->name, p->d->n, p->d->n == 1 ? "" : "s", p->nk, p->nk == 1 ? "" : "s",
                  DTUNE_VERSION);
    emit_budget_doc(sb, p);
    dt_sb_append(sb, " * Dims:\n");
    emit_dims_doc(sb, p);
    p->xop->emit_doc(sb, p);
    dt_sb_appendf(sb, " * Threads: %s_THREADS OpenMP threads (default %d; -D%s_THREADS=T when "
                      "compiling\n * %s.c to change it).\n",
                  p->name, p->d->threads, p->name, p->name);
}

int dt_export_emit_h(const dt_export_plan *p, char **out, dt_err *e)
{
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_sb_appendf(&sb, "/* %s.h: the interface of %s.c, a tuned kernel exported by dtune.\n",
                  p->name, p->name);
    emit_abi_doc(&sb, p);
    dt_sb_appendf(&sb, " * Compile %s.c with: cc -O3 -march=native -fopenmp -c %s.c\n */\n",
                  p->name, p->name);
    dt_sb_appendf(&sb, "#ifndef DTUNE_EXPORT_%s_H\n#define DTUNE_EXPORT_%s_H\n\n", p->name,
                  p->name);
    dt_sb_append(&sb, "#include <stddef.h>\n#include <stdint.h>\n\n#ifdef __cplusplus\n"
                      "extern \"C\" {\n#endif\n\n");
    emit_prototypes(&sb, p);
    dt_sb_append(&sb, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
    if (!(*out = dt_sb_take(&sb)))
        return dt_errf(e, DT_ENOMEM, "out of memory writing the header");
    return 0;
}

/* ---- the C file ----------------------------------------------------------- */

/* const int64_t dt_<dim> = ... for every dim. */
static void emit_dims(dt_strbuf *sb, const dt_export_plan *p)
{
    for (int d = 0; d < p->w->op->ndims; d++) {
        dt_sb_appendf(sb, "    const int64_t dt_%s = ", p->w->op->dims[d]);
        emit_expr(sb, p, p->w->dims[d]);
        dt_sb_append(sb, ";\n");
    }
}

static void emit_entry(dt_strbuf *sb, const dt_export_plan *p)
{
    dt_sb_appendf(sb, "\n/* Any shape: the kernel its range selects (%s_select). */\nvoid %s(",
                  p->name, p->name);
    emit_shape_params(sb, p);
    p->xop->emit_params(sb, p);
    dt_sb_append(sb, ")\n{\n");
    emit_dims(sb, p);
    dt_sb_appendf(sb, "    switch (%s_select(", p->name);
    for (int v = 0; v < p->w->nvars; v++)
        dt_sb_appendf(sb, "%s%s", v ? ", " : "", p->var[v]);
    dt_sb_append(sb, ")) {\n");
    for (int k = 0; k < p->nk; k++) {
        if (k + 1 == p->nk) /* NAME_select returns 0..nk-1 */
            dt_sb_append(sb, "    default:\n");
        else
            dt_sb_appendf(sb, "    case %d:\n", k);
        p->xop->emit_call(sb, p, k);
        dt_sb_append(sb, "        break;\n");
    }
    dt_sb_append(sb, "    }\n}\n");
}

static void emit_packing(dt_strbuf *sb, const dt_export_plan *p)
{
    /* f32 writes floats (its text predates the other dtypes), the rest bytes */
    const int unit = p->xop->offset_unit > 1 ? p->xop->offset_unit : 1;
    if (unit > 1)
        dt_sb_appendf(sb, "\n/* Packed weights: %d region%s, one per panel width, each "
                          "[strip][K][NR] with the\n * last strip zero-padded, at 64-byte "
                          "aligned offsets:\n",
                      p->npack, p->npack == 1 ? "" : "s");
    else
        dt_sb_appendf(sb, "\n/* Packed weights: %d region%s, one per panel layout (width NR, "
                          "K group KG), each\n * [strip][K/KG][NR][KG] with K padded to whole "
                          "groups and the last strip\n * zero-padded%s%s%s at 64-byte aligned "
                          "byte offsets:\n",
                      p->npack, p->npack == 1 ? "" : "s", p->xop->pack_tail ? ", then\n * " : "",
                      p->xop->pack_tail ? p->xop->pack_tail : "",
                      p->xop->pack_tail ? ";\n *" : ",");
    for (int g = 0; g < p->npack; g++) {
        if (unit > 1)
            dt_sb_appendf(sb, " *   NR %d: floats", p->pack[g].nr);
        else
            dt_sb_appendf(sb, " *   NR %d, KG %d: bytes", p->pack[g].nr, p->pack[g].kg);
        dt_sb_appendf(sb, " %lld..%lld, for", (long long)(p->pack[g].offset / unit),
                      (long long)((p->pack[g].offset + p->pack[g].bytes) / unit - 1));
        for (int k = 0; k < p->nk; k++)
            if (p->k[k].pack_group == g)
                dt_sb_appendf(sb, " %s_k%d", p->name, k);
        dt_sb_append(sb, "\n");
    }
    dt_sb_appendf(sb, " */\nsize_t %s_packed_size(void)\n{\n", p->name);
    if (unit > 1)
        dt_sb_appendf(sb, "    return (size_t)%lld * sizeof(float);\n",
                      (long long)(p->packed_bytes / unit));
    else
        dt_sb_appendf(sb, "    return (size_t)%lld;\n", (long long)p->packed_bytes);
    int checked = dt_dtype_quantized(p->kop.dtype);
    dt_sb_appendf(sb, "}\n\n%s %s_pack(%s)\n{\n", pack_returns(p), p->name,
                  p->xop->pack_params);
    if (checked) /* x - x == 0 is false for NaN and infinities */
        dt_sb_appendf(sb, "    /* refuse what no weight scale can be; nothing is written */\n"
                          "    if (!scale_b)\n        return -1;\n"
                          "    for (int64_t n = 0; n < %lld; n++)\n"
                          "        if (!(scale_b[n] != 0.0f && scale_b[n] - scale_b[n] == 0.0f))\n"
                          "            return n + 1;\n",
                      (long long)p->N);
    for (int g = 0; g < p->npack; g++)
        p->xop->emit_pack(sb, p, g);
    dt_sb_append(sb, checked ? "    return 0;\n}\n" : "}\n");
}

/* Whether a kernel's back-end uses intrinsics (microkernel/mk_op.h). */
static int any_intrinsics(const dt_export_plan *p)
{
    for (int k = 0; k < p->nk; k++) {
        const dt_mk_backend *mb = dt_mk_backend_of(dt_backend_of_ann(p->kop.dtype, &p->k[k].ann));
        if (mb && mb->intrinsics)
            return 1;
    }
    return 0;
}

int dt_export_emit_c(const dt_export_plan *p, char **out, dt_err *e)
{
    *out = NULL;
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_sb_appendf(&sb, "/* %s.c: a tuned kernel exported by dtune; self-contained (no dtune "
                       "header or\n * library).  Interface: %s.h (the same prototypes are "
                       "below).\n",
                  p->name, p->name);
    emit_abi_doc(&sb, p);
    dt_sb_appendf(&sb, " * Build: cc -O3 -march=native -fopenmp -c %s.c\n"
                       " * Do not edit: re-run `dtune export`.\n"
                       " * dtune-export-workload: %s\n * dtune-export-threads: %d\n */\n",
                  p->name, p->d->key, p->d->threads);
    /* the kernels' system headers first, before any renaming macro exists */
    dt_sb_append(&sb, "#include <math.h>\n#include <omp.h>\n#include <stddef.h>\n"
                      "#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n");
    if (any_intrinsics(p))
        dt_sb_append(&sb, "#include <immintrin.h>\n");
    dt_sb_appendf(&sb, "\n#ifndef %s_THREADS\n#define %s_THREADS %d\n#endif\n\n", p->name,
                  p->name, p->d->threads);
    emit_prototypes(&sb, p);
    int rc = 0;
    for (int k = 0; !rc && k < p->nk; k++)
        rc = dt_export_emit_kernel(&sb, p, k, e);
    if (rc) {
        dt_sb_free(&sb);
        return rc;
    }
    dt_sb_append(&sb, "\n/* ==== dispatch ==== */\n\n");
    int div = 0;
    for (int d = 0; d < p->w->op->ndims; d++)
        div |= uses_div(p->w->dims[d]);
    if (div)
        dt_sb_appendf(&sb, "static inline int64_t %s_fdiv(int64_t a, int64_t b)\n{\n"
                           "    int64_t q = a / b;\n    return q * b != a && (a < 0) != (b < 0) ? "
                           "q - 1 : q;\n}\n\n",
                      p->name);
    dt_export_emit_select(&sb, p);
    if (p->g.b_const)
        emit_packing(&sb, p);
    emit_entry(&sb, p);
    if (!(*out = dt_sb_take(&sb)))
        return dt_errf(e, DT_ENOMEM, "out of memory writing the exported source");
    return 0;
}
