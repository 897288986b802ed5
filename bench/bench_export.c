/* An exported file as a bench candidate (bench/bench_export.h). */
#include "bench/bench_export.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/mem.h"
#include "sketch/op.h"

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

static int pack(void *ctx, const float *W, dt_err *e)
{
    dt_bench_export *x = ctx;
    size_t bytes = x->packed_size();
    free(x->packed);
    if (!(x->packed = dt_alloc64(bytes ? bytes : 64)))
        return dt_errf(e, DT_ENOMEM, "out of memory for %zu bytes of packed weights", bytes);
    x->pack(W, x->packed);
    return 0;
}

/* The entry point's types: the shape's variables first, then the tensors
 * (A, B — the packed weights when they are constant — and C), a bias
 * pointer last for an op with a bias. */
typedef void (*fn0)(const float *, const float *, float *);
typedef void (*fn1)(int64_t, const float *, const float *, float *);
typedef void (*fn2)(int64_t, int64_t, const float *, const float *, float *);
typedef void (*fn3)(int64_t, int64_t, int64_t, const float *, const float *, float *);
typedef void (*fb0)(const float *, const float *, float *, const float *);
typedef void (*fb1)(int64_t, const float *, const float *, float *, const float *);
typedef void (*fb2)(int64_t, int64_t, const float *, const float *, float *, const float *);
typedef void (*fb3)(int64_t, int64_t, int64_t, const float *, const float *, float *,
                    const float *);

static void run(void *ctx, const int64_t *v, const float *X, const float *W, const float *bias,
                float *Y)
{
    dt_bench_export *x = ctx;
    const float *in2 = x->wconst ? x->packed : W;
    if (x->bias) {
        switch (x->nvars) {
        case 0: ((fb0)x->entry)(X, in2, Y, bias); break;
        case 1: ((fb1)x->entry)(v[0], X, in2, Y, bias); break;
        case 2: ((fb2)x->entry)(v[0], v[1], X, in2, Y, bias); break;
        default: ((fb3)x->entry)(v[0], v[1], v[2], X, in2, Y, bias); break;
        }
        return;
    }
    switch (x->nvars) {
    case 0: ((fn0)x->entry)(X, in2, Y); break;
    case 1: ((fn1)x->entry)(v[0], X, in2, Y); break;
    case 2: ((fn2)x->entry)(v[0], v[1], X, in2, Y); break;
    default: ((fn3)x->entry)(v[0], v[1], v[2], X, in2, Y); break;
    }
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
