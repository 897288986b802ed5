/* Model arguments: JSON specs and ONNX files (cli/cli_model.h). */
#include "cli/cli_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "common/file.h"
#include "common/json_util.h"
#include "dtypes/dtype.h"
#include "shape/model.h"
#include "ops/op.h"

int dt_cli_vars_add(dt_cli_vars *v, const char *cmd, const char *arg)
{
    if (!strchr(arg, '='))
        return dt_cli_usage_error(cmd, "--var takes NAME=DOMAIN (e.g. seq=1..128), not '%s'",
                                  arg);
    if (v->n >= DT_CLI_MAX_VAR_ARGS)
        return dt_cli_usage_error(cmd, "at most %d --var flags", DT_CLI_MAX_VAR_ARGS);
    v->args[v->n++] = arg;
    return 0;
}

int dt_cli_branch_add(dt_cli_vars *v, const char *cmd, const char *arg)
{
    if (v->nbranches >= DT_CLI_MAX_VAR_ARGS)
        return dt_cli_usage_error(cmd, "at most %d --branch flags", DT_CLI_MAX_VAR_ARGS);
    v->branches[v->nbranches++] = arg;
    return 0;
}

int dt_cli_is_onnx(const char *path)
{
    size_t n = strlen(path);
    return n > 5 && !strcasecmp(path + n - 5, ".onnx");
}

int dt_cli_model_text(const char *path, const dt_cli_vars *v, char **text, size_t *len,
                      dt_ox_import **imp, dt_err *e)
{
    *text = NULL;
    *len = 0;
    *imp = NULL;
    if (!dt_cli_is_onnx(path)) {
        if (v->n || v->nbranches)
            return dt_errf(e, DT_EINVAL,
                           "%s: --%s applies to ONNX models (.onnx); a model spec declares "
                           "its %s itself",
                           path, v->n ? "var" : "branch", v->n ? "variables" : "workloads");
        int rc = dt_read_file(path, DT_MODEL_MAX_BYTES, text, len, e);
        if (rc == DT_ENOTFOUND)
            e->code = rc = DT_EINVAL; /* a missing model file is bad input: exit 2 */
        return rc;
    }
    int rc = dt_ox_import_file_branches(path, NULL, v->args, v->n, v->branches, v->nbranches,
                                        imp, e);
    if (rc == DT_ENOTFOUND)
        e->code = rc = DT_EINVAL;
    if (rc)
        return rc;
    dt_cli_print_import_warnings(*imp);
    *text = strdup((*imp)->spec_json);
    if (!*text) {
        dt_ox_import_free(*imp);
        *imp = NULL;
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    *len = strlen(*text);
    return 0;
}

/* some dtype's arithmetic (dtypes/dtype.h), not a list of its own */
int dt_cli_math_known(const char *math) { return dt_dtype_math_known(math); }

/* The dtype an op of op desc storing dtype `stored` gets with math (f32 ->
 * f32_bf16, w8a32 -> w8a32_bf16), or -1 when it keeps its own (no such
 * dtype, or the op does not take it). */
static int math_dtype(const dt_op_desc *op, dt_dtype stored, const char *math)
{
    dt_dtype d;
    if (!op || dt_dtype_math(stored) || dt_dtype_with_math(stored, math, &d) ||
        dt_op_check_dtype(op, d, NULL))
        return -1;
    return (int)d;
}

/* root as spec text in the import's layout: one member per line, the
 * variables one per line, the ops one per line. */
static char *spec_dumps(const json_t *root)
{
    const size_t flags = JSON_PRESERVE_ORDER | JSON_ENCODE_ANY;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    int ok = buf != NULL;
#define PUT(str)                                                                  \
    do {                                                                          \
        const char *s_ = (str);                                                   \
        size_t n_ = s_ ? strlen(s_) : 0;                                          \
        if (!s_)                                                                  \
            ok = 0;                                                               \
        while (ok && len + n_ + 1 > cap) {                                        \
            char *nb_ = realloc(buf, cap * 2);                                    \
            if (!nb_)                                                             \
                ok = 0;                                                           \
            else {                                                                \
                buf = nb_;                                                        \
                cap *= 2;                                                         \
            }                                                                     \
        }                                                                         \
        if (ok) {                                                                 \
            memcpy(buf + len, s_, n_);                                            \
            len += n_;                                                            \
            buf[len] = '\0';                                                      \
        }                                                                         \
    } while (0)
#define PUTJ(v)                                                                   \
    do {                                                                          \
        char *j_ = json_dumps((v), flags);                                        \
        PUT(j_);                                                                  \
        free(j_);                                                                 \
    } while (0)
    PUT("{");
    const char *key;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)root, key, v)
    {
        PUT(first ? "\n  " : ",\n  ");
        first = 0;
        json_t *k = json_string(key);
        PUTJ(k);
        json_decref(k);
        PUT(": ");
        if (json_is_array(v) && strcmp(key, "ops") == 0) {
            size_t i;
            json_t *op;
            PUT("[");
            json_array_foreach(v, i, op)
            {
                PUT(i ? ",\n    " : "\n    ");
                PUTJ(op);
            }
            PUT("\n  ]");
        } else if (json_is_object(v) && json_object_size(v) > 0) {
            const char *vk;
            json_t *vv;
            int vfirst = 1;
            PUT("{");
            json_object_foreach(v, vk, vv)
            {
                PUT(vfirst ? "\n    " : ",\n    ");
                vfirst = 0;
                json_t *kk = json_string(vk);
                PUTJ(kk);
                json_decref(kk);
                PUT(": ");
                PUTJ(vv);
            }
            PUT("\n  }");
        } else {
            PUTJ(v);
        }
    }
    PUT("\n}\n");
#undef PUTJ
#undef PUT
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

int dt_cli_spec_math(char **text, size_t *len, const char *math, int *marked, dt_err *e)
{
    if (marked)
        *marked = 0;
    if (!dt_cli_math_known(math))
        return dt_errf(e, DT_EINVAL, "--math takes %s, not '%s'", dt_dtype_math_names(), math);
    json_error_t je;
    json_t *root = json_loadb(*text, *len, 0, &je);
    if (!json_is_object(root)) {
        json_decref(root);
        return dt_errf(e, DT_EINVAL, "--math: the model is no JSON spec object (%s)", je.text);
    }
    dt_dtype def = DT_DTYPE_F32;
    json_t *jd = json_object_get(root, "dtype");
    if (json_is_string(jd) && dt_dtype_from_name(json_string_value(jd), &def))
        def = DT_DTYPE_COUNT; /* unknown: the spec's parser says so later */
    size_t i;
    json_t *op;
    int n = 0;
    json_array_foreach(json_object_get(root, "ops"), i, op)
    {
        dt_dtype d = def;
        json_t *od = json_object_get(op, "dtype");
        if (json_is_string(od) && dt_dtype_from_name(json_string_value(od), &d))
            continue;
        json_t *name = json_object_get(op, "op");
        int to = json_is_string(name) && d != DT_DTYPE_COUNT
                     ? math_dtype(dt_op_find(json_string_value(name)), d, math)
                     : -1;
        if (to >= 0) {
            json_object_set_new(op, "dtype", json_string(dt_dtype_name((dt_dtype)to)));
            n++;
        }
    }
    char *out = spec_dumps(root);
    json_decref(root);
    if (!out)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    free(*text);
    *text = out;
    *len = strlen(out);
    if (marked)
        *marked = n;
    return 0;
}

int dt_cli_key_math(const char *key, const char *math, char *out, size_t n, dt_err *e)
{
    if (!dt_cli_math_known(math))
        return dt_errf(e, DT_EINVAL, "--math takes %s, not '%s'", dt_dtype_math_names(), math);
    dt_workload *w = NULL;
    int rc = dt_workload_parse_key(key, &w, e);
    if (rc)
        return rc;
    int to = math_dtype(w->op, w->dtype, math);
    if (to >= 0)
        w->dtype = (dt_dtype)to;
    if (dt_workload_key(w, out, n) >= n)
        rc = dt_errf(e, DT_EINVAL, "workload key too long");
    dt_workload_free(w);
    return rc;
}

void dt_cli_print_import_warnings(const dt_ox_import *imp)
{
    for (int i = 0; imp && i < imp->nwarnings; i++)
        fprintf(stderr, "dtune: warning: %s\n", dt_cli_safe(imp->warnings[i]));
}

/* "GEMM-like work in tuned ops: 97.3 % at the largest shape (batch=4,seq=128:
 * 11.2 of 11.5 GFLOP), 96.0 % at the weighted one (...)", then the untuned
 * GEMM-like nodes, most work first (at most COVERAGE_SHOWN). */
#define COVERAGE_SHOWN 10
static void print_coverage(FILE *out, const dt_ox_coverage *c)
{
    if (!c->ngemm) {
        fprintf(out, "  no GEMM-like node (MatMul, Gemm, Conv, ConvTranspose, LSTM/GRU/RNN, "
                     "Einsum)\n");
        return;
    }
    static const char *const at[2] = {"the largest shape", "the weighted shape"};
    fprintf(out, "  GEMM-like work in tuned ops:");
    for (int k = 0; k < 2; k++)
        fprintf(out, "%s %.1f %% at %s (%s: %.4g of %.4g GFLOP)", k ? "," : "",
                c->gflop[k] > 0 ? 100 * c->tuned_gflop[k] / c->gflop[k] : 100.0, at[k],
                dt_cli_safe(c->shape[k]), c->tuned_gflop[k], c->gflop[k]);
    fprintf(out, "; %d GEMM-like node%s, %d not tuned", c->ngemm, c->ngemm == 1 ? "" : "s",
            c->nleft);
    if (c->nuncounted)
        fprintf(out, ", %d whose work could not be counted", c->nuncounted);
    fprintf(out, "\n");
    for (int i = 0; i < c->nleft && i < COVERAGE_SHOWN; i++) {
        const dt_ox_gemm_left *l = &c->left[i];
        char share[32] = "not counted";
        if (l->gflop[1] >= 0)
            snprintf(share, sizeof share, "%.1f %%",
                     c->gflop[1] > 0 ? 100 * l->gflop[1] / c->gflop[1] : 0.0);
        fprintf(out, "    %-11s %s: %s\n", share, dt_cli_safe(l->node), dt_cli_safe(l->why));
    }
    if (c->nleft > COVERAGE_SHOWN)
        fprintf(out, "    ... %d more (--json lists them all)\n", c->nleft - COVERAGE_SHOWN);
}

void dt_cli_print_untuned(FILE *out, const dt_ox_import *imp, const char *path)
{
    if (!imp)
        return;
    print_coverage(out, &imp->coverage);
    fprintf(out, "%s: %lld nodes, %lld in tuned ops", dt_cli_safe(path), (long long)imp->nnodes,
            (long long)imp->ntuned);
    if (!imp->nuntuned) {
        fprintf(out, "; every node is tuned\n");
        return;
    }
    fprintf(out, "; not tuned:\n");
    for (int i = 0; i < imp->nuntuned; i++) {
        const dt_ox_untuned *u = &imp->untuned[i];
        char n[64];
        if (u->instances != u->nodes)
            snprintf(n, sizeof n, "%lld nodes in %lld", (long long)u->nodes,
                     (long long)u->instances);
        else
            snprintf(n, sizeof n, "%lld node%s", (long long)u->nodes, u->nodes == 1 ? "" : "s");
        fprintf(out, "  %-40s %-18s %s\n", dt_cli_safe(u->what), n, dt_cli_safe(u->why));
    }
}

json_t *dt_cli_untuned_json(const dt_ox_import *imp)
{
    if (!imp)
        return NULL;
    json_t *arr = json_array();
    for (int i = 0; i < imp->nuntuned; i++)
        json_array_append_new(arr, json_pack("{s:s, s:I, s:I, s:s}", "what",
                                             imp->untuned[i].what, "nodes",
                                             (json_int_t)imp->untuned[i].nodes, "instances",
                                             (json_int_t)imp->untuned[i].instances, "why",
                                             imp->untuned[i].why));
    json_t *warnings = json_array();
    for (int i = 0; i < imp->nwarnings; i++)
        json_array_append_new(warnings, json_string(imp->warnings[i]));
    const dt_ox_coverage *c = &imp->coverage;
    json_t *left = json_array(), *at = json_array();
    for (int i = 0; i < c->nleft; i++)
        json_array_append_new(left, json_pack("{s:s, s:s, s:o, s:o}", "node", c->left[i].node,
                                              "why", c->left[i].why, "gflop_largest",
                                              dt_json_num_or_null(c->left[i].gflop[0] < 0
                                                                      ? NAN
                                                                      : c->left[i].gflop[0]),
                                              "gflop_weighted",
                                              dt_json_num_or_null(c->left[i].gflop[1] < 0
                                                                      ? NAN
                                                                      : c->left[i].gflop[1])));
    for (int k = 0; k < 2; k++)
        json_array_append_new(
            at, json_pack("{s:s, s:s?, s:f, s:f, s:o}", "at", k ? "weighted" : "largest",
                          "shape", c->shape[k], "gflop", c->gflop[k], "tuned_gflop",
                          c->tuned_gflop[k], "tuned_share",
                          dt_json_num_or_null(c->gflop[k] > 0 ? c->tuned_gflop[k] / c->gflop[k]
                                                              : NAN)));
    json_t *cov = json_pack("{s:i, s:i, s:o, s:o}", "gemm_nodes", c->ngemm, "uncounted",
                            c->nuncounted, "shapes", at, "untuned_gemm", left);
    return json_pack("{s:I, s:I, s:o, s:o, s:o}", "nodes", (json_int_t)imp->nnodes,
                     "tuned_nodes", (json_int_t)imp->ntuned, "untuned", arr, "warnings",
                     warnings, "coverage", cov);
}
