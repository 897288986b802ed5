/* The model spec of an import (onnx/import_spec.h).
 *
 * Each extracted op is built and checked as a workload here, with the same
 * sketch/ functions dt_model_parse uses, so that a problem (a dim below 1
 * for some shape, too many shapes) is reported at the ONNX node it comes
 * from rather than at a line of generated JSON; its canonical key merges
 * identical ops into one spec op with a count. */
#include "onnx/import_spec.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "shape/model.h"

/* Op names of the spec fit whole, with a "~N" that makes them unique, into
 * the 63 bytes of a tuning task's name (tuner/task.h), which `dtune tune`
 * prints: a longer node name keeps its tail from a '/' after a "…"
 * ("…/encoder/layer.0/attention/self/MatMul_1"), where node names differ. */
#define NAME_MAX_BYTES 58
#define ELLIPSIS "\xe2\x80\xa6" /* U+2026, 3 bytes */
/* Untuned kinds listed by name in the description; the rest are counted. */
#define DESC_MAX_UNTUNED 12

/* One spec op: the first of the ops that share its key, and their number. */
typedef struct {
    int op;
    int64_t count;            /* ops merged into it */
    char per_run[DT_KEY_MAX]; /* each one's count per run as an expression ("seq"), or ""
                                 for once */
    char key[DT_KEY_MAX];
    char name[NAME_MAX_BYTES + 16];
} spec_op;

/* Copies the valid UTF-8 of s into out (at most max bytes, never a partial
 * character), each invalid byte as '?': names from the file go into JSON,
 * which jansson refuses when they are not UTF-8. */
static void utf8_copy(const char *s, size_t max, char *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    while (*p) {
        int len = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3
                              : (*p & 0xF8) == 0xF0 ? 4 : 0;
        for (int k = 1; k < len; k++)
            if ((p[k] & 0xC0) != 0x80)
                len = 0;
        /* overlong 2-byte forms and code points past U+10FFFF are invalid too */
        if ((len == 2 && *p < 0xC2) || (len == 4 && *p > 0xF4))
            len = 0;
        size_t take = len ? (size_t)len : 1;
        if (o + take > max)
            break;
        if (len)
            memcpy(out + o, p, take);
        else
            out[o] = '?';
        o += take;
        p += take;
    }
    out[o] = '\0';
}

/* Prints a canonical expression into a malloc'ed string (NULL: no memory). */
static char *expr_text(const dt_expr *x)
{
    size_t n = dt_expr_print(x, NULL, 0) + 1;
    char *t = malloc(n);
    if (t)
        dt_expr_print(x, t, n);
    return t;
}

/* "dense with M=batch*seq, N=768, K=768" for messages. */
static void op_text(const dt_ox_op *op, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "%s with ", op->op->name);
    for (int d = 0; d < op->op->ndims && len < n; d++) {
        char *t = expr_text(op->dims[d]);
        len += (size_t)snprintf(buf + len, n - len, "%s%s=%s", d ? ", " : "", op->op->dims[d],
                                t ? t : "?");
        free(t);
    }
}

/* The first shape of the variables at which a dim of op is below 1, as
 * "dim M = seq-1 is 0 at seq=1" in the model's own variable names (the
 * workload's messages name a dim's variable after the dim: M=M).  0 when
 * there is none (or the shapes are too many to look through: the
 * workload's own message stays). */
static int dim_below_one(const dt_ox_op *op, const dt_var *vars, int nvars, char *msg, size_t n)
{
    const char *names[DT_MAX_VARS];
    const dt_var *used[DT_MAX_VARS];
    int nused = 0;
    int64_t shapes = 1;
    for (int v = 0; v < nvars; v++) {
        int u = 0;
        for (int d = 0; d < op->op->ndims; d++)
            u |= dt_expr_uses(op->dims[d], vars[v].name);
        if (u) {
            used[nused] = &vars[v];
            names[nused++] = vars[v].name;
            shapes *= vars[v].dom.n;
        }
        if (shapes > DT_MAX_SHAPES)
            return 0;
    }
    dt_expr *dims[DT_MAX_DIMS] = {0};
    int found = 0;
    for (int d = 0; d < op->op->ndims; d++)
        if (!(dims[d] = dt_expr_clone(op->dims[d])) || dt_expr_bind(dims[d], names, nused, NULL))
            goto out;
    int64_t vals[DT_MAX_VARS];
    for (int64_t s = 0; s < shapes && !found; s++) {
        int64_t rest = s;
        for (int v = nused - 1; v >= 0; v--) {
            vals[v] = used[v]->dom.values[rest % used[v]->dom.n];
            rest /= used[v]->dom.n;
        }
        for (int d = 0; d < op->op->ndims && !found; d++) {
            int64_t x;
            if (dt_expr_eval(dims[d], vals, &x, NULL) || x >= 1)
                continue;
            char *t = expr_text(op->dims[d]);
            size_t len = (size_t)snprintf(msg, n, "dim %s = %s is %lld at ", op->op->dims[d],
                                          t ? t : "?", (long long)x);
            free(t);
            for (int v = 0; v < nused && len < n; v++)
                len += (size_t)snprintf(msg + len, n - len, "%s%s=%lld", v ? "," : "", names[v],
                                        (long long)vals[v]);
            /* a dim that uses no variable is this for every shape: name the
             * variables that have one value (what --var seq=0..0 made of it) */
            int nfixed = 0;
            for (int v = 0; !nused && v < nvars && len < n; v++)
                if (vars[v].dom.n == 1)
                    len += (size_t)snprintf(msg + len, n - len, "%s%s=%lld", nfixed++ ? "," : "",
                                            vars[v].name, (long long)vars[v].dom.values[0]);
            if (!nused && !nfixed && len < n)
                len += (size_t)snprintf(msg + len, n - len, "every shape");
            if (len < n)
                snprintf(msg + len, n - len, "; every dim must be >= 1");
            found = 1;
        }
    }
out:
    for (int d = 0; d < DT_MAX_DIMS; d++)
        dt_expr_free(dims[d]);
    return found;
}

/* The op as a canonical workload over the variables (the ones its dims
 * use, with their domains): its key into key; validated (every shape
 * checked) only when known(key, ctx) says it is new, since identical keys
 * are identical workloads. */
static int op_key(const dt_ox_graph *g, const dt_ox_op *op, const dt_var *vars, int nvars,
                  int (*known)(const char *key, void *ctx), void *ctx, char *key, dt_err *e)
{
    dt_workload *w = dt_workload_new(op->op);
    if (!w)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    int rc = 0;
    for (int d = 0; d < op->op->ndims && !rc; d++)
        if (!(w->dims[d] = dt_expr_clone(op->dims[d])))
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
    for (int a = 0; a < op->op->nattrs; a++)
        w->attrs[a] = dt_ox_op_attr_value(op, a);
    w->dtype = op->dtype;
    for (int v = 0; v < nvars && !rc; v++) {
        int used = 0;
        for (int d = 0; d < op->op->ndims; d++)
            used |= dt_expr_uses(op->dims[d], vars[v].name);
        dt_domain dom;
        if (!used)
            continue;
        if (dt_domain_copy(&dom, &vars[v].dom))
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
        else
            rc = dt_workload_add_var(w, vars[v].name, &dom, e);
    }
    if (!rc && !(rc = dt_workload_canonicalize(w, e))) {
        dt_workload_key(w, key, DT_KEY_MAX);
        if (!known(key, ctx))
            rc = dt_workload_validate(w, e);
    }
    dt_workload_free(w);
    if (rc && rc != DT_ENOMEM) {
        char label[320], what[512], msg[DT_ERR_MSG_MAX];
        if (dim_below_one(op, vars, nvars, msg, sizeof msg))
            snprintf(e->msg, sizeof e->msg, "%s", msg);
        op_text(op, what, sizeof what);
        dt_err_prefix(e, "%s: node %s: %s", g->source, dt_ox_node_label(g, op->node, label,
                                                                        sizeof label),
                      what);
        e->code = rc = DT_EINVAL;
    }
    return rc;
}

typedef struct {
    const spec_op *so;
    int n;
} spec_ops;

/* Index of key among the spec ops so far, or -1. */
static int find_key(const spec_ops *s, const char *key)
{
    for (int k = 0; k < s->n; k++)
        if (!strcmp(s->so[k].key, key))
            return k;
    return -1;
}

static int key_known(const char *key, void *ctx) { return find_key(ctx, key) >= 0; }

/* The op's name in the spec: its node's (or "Op#i"), unique among sofar. */
static void op_name(const dt_ox_graph *g, int node, const spec_op *sofar, int n, char *out)
{
    const dt_ox_node *nd = &g->nodes[node];
    char base[NAME_MAX_BYTES + 1];
    size_t len = strlen(nd->name);
    if (len > NAME_MAX_BYTES) {
        /* the tail from the first '/' that leaves room for the "…", else
         * the last bytes from a character's start */
        size_t keep = NAME_MAX_BYTES - (sizeof ELLIPSIS - 1);
        const char *tail = nd->name + len - keep, *slash = strchr(tail, '/');
        if (slash && slash[1])
            tail = slash;
        while (((unsigned char)*tail & 0xC0) == 0x80)
            tail++;
        memcpy(base, ELLIPSIS, sizeof ELLIPSIS - 1);
        utf8_copy(tail, keep, base + sizeof ELLIPSIS - 1);
    } else if (nd->name[0])
        utf8_copy(nd->name, NAME_MAX_BYTES, base);
    else {
        char t[41];
        utf8_copy(nd->op_type, 40, t);
        snprintf(base, sizeof base, "%s#%d", t, node);
    }
    snprintf(out, NAME_MAX_BYTES + 16, "%s", base);
    for (int k = 2;; k++) {
        int taken = 0;
        for (int i = 0; i < n && !taken; i++)
            taken = !strcmp(sofar[i].name, out);
        if (!taken)
            return;
        snprintf(out, NAME_MAX_BYTES + 16, "%s~%d", base, k);
    }
}

/* ---- JSON text ---- */

/* Appends a JSON value in jansson's one-line form ("a": 1, "b": [1, 2]).
 * Names from the model reach a terminal when the spec goes to stdout, and
 * jansson escapes only the C0 controls: the C1 controls (U+0080..U+009F,
 * UTF-8 C2 80..C2 9F, e.g. CSI) are escaped here as \u0080..\u009F, which
 * read back as the same string.  Outside strings JSON has no such bytes. */
static void append_json(dt_strbuf *sb, json_t *v)
{
    char *t = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
    if (!t) {
        sb->oom = 1;
    } else {
        static const char hex[] = "0123456789ABCDEF";
        const unsigned char *p = (const unsigned char *)t, *run = p;
        for (; *p; p++) {
            if (p[0] != 0xC2 || p[1] < 0x80 || p[1] > 0x9F)
                continue;
            dt_sb_appendn(sb, (const char *)run, (size_t)(p - run));
            char esc[7] = {'\\', 'u', '0', '0', hex[p[1] >> 4], hex[p[1] & 15], 0};
            dt_sb_append(sb, esc);
            run = ++p + 1;
        }
        dt_sb_append(sb, (const char *)run);
    }
    free(t);
    json_decref(v);
}

/* The "variables" entry of a domain: an integer, a range (with a step) or
 * values, and weights when they are not uniform. */
static json_t *domain_json(const dt_domain *d)
{
    if (d->n == 1)
        return json_integer(d->values[0]);
    int64_t step = d->values[1] - d->values[0];
    int prog = 1, uniform = 1;
    for (int i = 2; i < d->n; i++)
        prog &= d->values[i] - d->values[i - 1] == step;
    for (int i = 0; i < d->n; i++)
        uniform &= fabs(d->weights[i] * d->n - 1.0) < 1e-9;
    json_t *o = json_object();
    if (prog && (step == 1 || d->n >= 3)) {
        json_object_set_new(o, "range", json_pack("[I, I]", (json_int_t)d->values[0],
                                                  (json_int_t)d->values[d->n - 1]));
        if (step > 1)
            json_object_set_new(o, "step", json_integer(step));
    } else {
        json_t *vals = json_array();
        for (int i = 0; i < d->n; i++)
            json_array_append_new(vals, json_integer(d->values[i]));
        json_object_set_new(o, "values", vals);
    }
    if (!uniform) {
        json_t *w = json_array();
        for (int i = 0; i < d->n; i++)
            json_array_append_new(w, json_real(d->weights[i]));
        json_object_set_new(o, "weights", w);
    }
    return o;
}

static json_t *op_json(const dt_ox_op *op, const spec_op *so)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(so->name));
    json_object_set_new(o, "op", json_string(op->op->name));
    for (int d = 0; d < op->op->ndims; d++) {
        const dt_expr *x = op->dims[d];
        json_t *v;
        if (x->kind == DT_EXPR_CONST)
            v = json_integer(x->value);
        else {
            char *t = expr_text(x);
            v = t ? json_string(t) : NULL;
            free(t);
        }
        json_object_set_new(o, op->op->dims[d], v);
    }
    for (int k = 0; k < op->op->nattrs; k++) {
        const dt_attr_desc *a = &op->op->attrs[k];
        int v = dt_ox_op_attr_value(op, k);
        if (!a->always_print && v == a->default_index)
            continue;
        char buf[32];
        json_object_set_new(o, a->name, a->integer ? json_integer(v)
                                                   : json_string(dt_attr_text(a, v, buf)));
    }
    if (op->dtype != DT_DTYPE_F32)
        json_object_set_new(o, "dtype", json_string(dt_dtype_name(op->dtype)));
    if (!so->per_run[0]) {
        json_object_set_new(o, "count", json_integer(so->count));
    } else {
        char text[DT_KEY_MAX + 32];
        if (so->count == 1)
            snprintf(text, sizeof text, "%s", so->per_run);
        else
            snprintf(text, sizeof text, "%lld*(%s)", (long long)so->count, so->per_run);
        json_object_set_new(o, "count", json_string(text));
    }
    return o;
}

/* "imported from bert-base.onnx (producer P, opset 14): 1234 nodes, 96 in
 * tuned ops; not tuned: Softmax ×12, ..." */
static char *description(const dt_ox_graph *g, const dt_ox_wl *wl)
{
    dt_strbuf sb;
    dt_sb_init(&sb);
    const char *base = strrchr(g->source, '/');
    char file[256], producer[256];
    utf8_copy(base ? base + 1 : g->source, 200, file);
    utf8_copy(g->producer, 200, producer);
    dt_sb_appendf(&sb, "imported from %s (%s%s%sopset %lld): %d nodes, %lld in tuned ops", file,
                  producer[0] ? "producer " : "", producer, producer[0] ? ", " : "",
                  (long long)g->opset, g->nnodes, (long long)wl->ntuned);
    for (int i = 0; i < wl->nuntuned; i++) {
        if (i == DESC_MAX_UNTUNED) {
            dt_sb_appendf(&sb, ", %d more kinds", wl->nuntuned - i);
            break;
        }
        char what[200];
        utf8_copy(wl->untuned[i].what, 150, what);
        const dt_ox_untuned *u = &wl->untuned[i];
        dt_sb_appendf(&sb, "%s%s ×%lld", i ? ", " : "; not tuned: ", what,
                      (long long)u->instances);
        if (u->instances != u->nodes) /* a pattern: its occurrences, then its nodes */
            dt_sb_appendf(&sb, " (%lld nodes)", (long long)u->nodes);
    }
    return dt_sb_take(&sb);
}

int dt_ox_spec_write(const dt_ox_graph *g, const dt_ox_wl *wl, const char *name,
                     const dt_var *vars, int nvars, char **out, dt_err *e)
{
    *out = NULL;
    if (wl->nops == 0) {
        char *d = description(g, wl);
        const char *list = d ? strstr(d, "not tuned: ") : NULL;
        int rc = dt_errf(e, DT_EINVAL, "%s: nothing to tune: no MatMul, Gemm or Conv dtune's "
                         "ops express (%s)", g->source, list ? list : "no nodes");
        free(d);
        return rc;
    }
    spec_op *so = calloc((size_t)wl->nops, sizeof *so);
    if (!so)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    int nso = 0, rc = 0;
    for (int i = 0; i < wl->nops && !rc; i++) {
        char key[DT_KEY_MAX], per_run[DT_KEY_MAX] = "";
        spec_ops sofar = {so, nso};
        if ((rc = op_key(g, &wl->ops[i], vars, nvars, key_known, &sofar, key, e)))
            break;
        if (wl->ops[i].count)
            dt_expr_print(wl->ops[i].count, per_run, sizeof per_run);
        int k = find_key(&sofar, key);
        while (k >= 0 && k < nso && (strcmp(so[k].key, key) || strcmp(so[k].per_run, per_run)))
            k++; /* the same key, run another number of times: an op of its own */
        if (k < 0 || k >= nso) {
            k = nso;
            so[k].op = i;
            memcpy(so[k].key, key, sizeof key);
            memcpy(so[k].per_run, per_run, sizeof per_run);
            op_name(g, wl->ops[i].node, so, nso, so[k].name);
            nso++;
        }
        so[k].count++;
    }
    if (!rc && nso > DT_MODEL_MAX_OPS)
        rc = dt_errf(e, DT_EINVAL, "%s: %d distinct ops; a model spec holds at most %d",
                     g->source, nso, DT_MODEL_MAX_OPS);
    char *desc = rc ? NULL : description(g, wl);
    if (!rc && !desc)
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
    if (rc) {
        free(so);
        return rc;
    }
    char model[256];
    utf8_copy(name, 200, model);
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_sb_append(&sb, "{\n  \"name\": ");
    append_json(&sb, json_string(model[0] ? model : "model"));
    dt_sb_append(&sb, ",\n  \"description\": ");
    append_json(&sb, json_string(desc));
    dt_sb_append(&sb, ",\n  \"variables\": {");
    for (int v = 0; v < nvars; v++) {
        dt_sb_append(&sb, v ? ",\n    " : "\n    ");
        append_json(&sb, json_string(vars[v].name));
        dt_sb_append(&sb, ": ");
        append_json(&sb, domain_json(&vars[v].dom));
    }
    dt_sb_append(&sb, nvars ? "\n  },\n  \"ops\": [" : "},\n  \"ops\": [");
    for (int k = 0; k < nso; k++) {
        dt_sb_append(&sb, k ? ",\n    " : "\n    ");
        append_json(&sb, op_json(&wl->ops[so[k].op], &so[k]));
    }
    dt_sb_append(&sb, "\n  ]\n}");
    free(desc);
    free(so);
    if (!(*out = dt_sb_take(&sb)))
        return dt_errf(e, DT_ENOMEM, "out of memory");
    return 0;
}
