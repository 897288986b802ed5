/* An exported file as a bench candidate (bench/bench_export.h). */
#include "bench/bench_export.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/mem.h"
#include "ops/op.h"

/* The value of a "dtune-export-KEY: value" line of the file's comment. */
static int header_field(const char *src, const char *field, char *out, size_t n)
{
    const char *p = strstr(src, field);
    if (!p)
        return 0;
    p += strlen(field);
    while (*p == ' ')
        p++;
    size_t len = strcspn(p, "\n");
    if (len >= n)
        return 0;
    memcpy(out, p, len);
    out[len] = '\0';
    return 1;
}

/* NAME_pack: (W, packed), or (W, scale_b, packed) for a quantized dtype. */
typedef void (*pack_fn)(const void *W, void *packed);
typedef int64_t (*qpack_fn)(const void *W, const float *scale_b, void *packed);

static int pack(void *ctx, const void *W, const float *scale_b, dt_err *e)
{
    dt_bench_export *x = ctx;
    size_t bytes = x->packed_size();
    free(x->packed);
    if (!(x->packed = dt_alloc64(bytes ? bytes : 64)))
        return dt_errf(e, DT_ENOMEM, "out of memory for %zu bytes of packed weights", bytes);
    if (x->qb) {
        int64_t rc = ((qpack_fn)x->pack)(W, scale_b, x->packed);
        if (rc)
            return dt_errf(e, DT_EINVAL, "%s_pack refused %s", x->name,
                           rc < 0 ? "a NULL scale_b" : "a scale that is zero, NaN or infinite");
    } else
        ((pack_fn)x->pack)(W, x->packed);
    return 0;
}

/* The entry point's types (docs/export.md, "ABI"): the shape's variables
 * first, then the tensors — A, for int8 A's scale and zero point, B (the
 * packed weights when they are constant), C — and a bias pointer last for
 * an op with a bias.  Tensors are passed as const void * / float *: every
 * dtype's element pointers are object pointers, passed alike. */
#define T_PLAIN const void *, const void *, float *
#define A_PLAIN X, in2, Y
#define T_BIAS const void *, const void *, float *, const float *
#define A_BIAS X, in2, Y, bias
#define T_Q const void *, float, int32_t, const void *, float *
#define A_Q X, scale_a, zp_a, in2, Y
#define T_QBIAS const void *, float, int32_t, const void *, float *, const float *
#define A_QBIAS X, scale_a, zp_a, in2, Y, bias
/* TYPES and ARGS are the names above: expanded before substitution, so
 * their commas do not split the arguments */
#define CALL(TYPES, ARGS)                                                                    \
    do {                                                                                     \
        switch (x->nvars) {                                                                  \
        case 0: ((void (*)(TYPES))x->entry)(ARGS); break;                                    \
        case 1: ((void (*)(int64_t, TYPES))x->entry)(v[0], ARGS); break;                     \
        case 2: ((void (*)(int64_t, int64_t, TYPES))x->entry)(v[0], v[1], ARGS); break;      \
        default:                                                                             \
            ((void (*)(int64_t, int64_t, int64_t, TYPES))x->entry)(v[0], v[1], v[2], ARGS);  \
            break;                                                                           \
        }                                                                                    \
    } while (0)

static void run(void *ctx, const int64_t *v, const void *X, const void *W, const float *bias,
                float scale_a, int32_t zp_a, float *Y)
{
    dt_bench_export *x = ctx;
    const void *in2 = x->wconst ? x->packed : W;
    if (x->qa && x->bias)
        CALL(T_QBIAS, A_QBIAS);
    else if (x->qa)
        CALL(T_Q, A_Q);
    else if (x->bias)
        CALL(T_BIAS, A_BIAS);
    else
        CALL(T_PLAIN, A_PLAIN);
}

int dt_bench_export_load(const char *c_path, const dt_workload *w, const dt_builder *b,
                         dt_bench_export *x, dt_err *e)
{
    memset(x, 0, sizeof *x);
    if (w->nvars > 3)
        return dt_errf(e, DT_EUNSUPPORTED, "benchmarking an export of more than 3 variables");
    const char *base = strrchr(c_path, '/');
    base = base ? base + 1 : c_path;
    size_t bl = strlen(base);
    if (bl < 3 || bl - 2 >= sizeof x->name || strcmp(base + bl - 2, ".c") != 0)
        return dt_errf(e, DT_EINVAL, "%s: expected NAME.c, as written by dtune export", c_path);
    memcpy(x->name, base, bl - 2);
    x->name[bl - 2] = '\0';
    char *src = NULL;
    size_t len;
    int rc = dt_read_file(c_path, (size_t)256 << 20, &src, &len, e);
    if (rc)
        return rc;
    char key[DT_KEY_MAX], want[DT_KEY_MAX], threads[32];
    dt_workload_key(w, want, sizeof want);
    if (!header_field(src, "dtune-export-workload:", key, sizeof key) ||
        !header_field(src, "dtune-export-threads:", threads, sizeof threads)) {
        free(src);
        return dt_errf(e, DT_EINVAL, "%s was not written by dtune export (no dtune-export-"
                       "workload line)", c_path);
    }
    if (strcmp(key, want) != 0) {
        free(src);
        return dt_errf(e, DT_EINVAL, "%s exports %s, not %s", c_path, key, want);
    }
    x->threads = atoi(threads);
    dt_build_result br;
    rc = dt_build_one(b, src, &br, e);
    free(src);
    if (rc)
        return rc;
    if (br.status != DT_BUILD_OK) {
        rc = dt_errf(e, DT_EINVAL, "%s does not build (%s): %.600s", c_path,
                     dt_build_status_name(br.status), br.log ? br.log : "");
        dt_build_result_free(&br);
        return rc;
    }
    snprintf(x->so_path, sizeof x->so_path, "%s", br.so_path);
    dt_build_result_free(&br);
    void *h = dlopen(x->so_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h)
        return dt_errf(e, DT_EINVAL, "cannot load the build of %s: %s", c_path, dlerror());
    dt_gemm g;
    if ((rc = dt_op_gemm(w->op, w->attrs, NULL, &g, e)))
        return rc;
    x->wconst = g.b_const;
    x->bias = g.bias;
    /* the exported ABI: int8 passes A's scale and zero point; a quantized
     * dtype packs its weights with their scales */
    x->qa = dt_dtype_a_quantized(w->dtype);
    x->qb = dt_dtype_quantized(w->dtype);
    x->nvars = w->nvars;
    char sym[128];
    x->entry = dlsym(h, x->name);
    snprintf(sym, sizeof sym, "%s_packed_size", x->name);
    *(void **)&x->packed_size = dlsym(h, sym);
    snprintf(sym, sizeof sym, "%s_pack", x->name);
    *(void **)&x->pack = dlsym(h, sym);
    if (!x->entry || (x->wconst && (!x->packed_size || !x->pack)))
        return dt_errf(e, DT_EINVAL, "%s does not define %s%s", c_path, x->name,
                       x->wconst ? ", its _pack and _packed_size" : "");
    x->ext = (dt_bench_extern){.name = "export", .ctx = x, .pack = x->wconst ? pack : NULL,
                               .run = run};
    return 0;
}

void dt_bench_export_free(dt_bench_export *x)
{
    if (!x)
        return;
    free(x->packed);
    x->packed = NULL;
}
