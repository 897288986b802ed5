/* shape/workload: domains, canonical keys (round trip, random keys), shape
 * sets and their weights, validation of impossible shapes. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

/* canonical form of a key, or "ERROR: message" */
static const char *canon(const char *key)
{
    static char buf[DT_KEY_MAX + 300];
    dt_workload *w = NULL;
    dt_err e;
    if (dt_workload_parse_key(key, &w, &e))
        snprintf(buf, sizeof buf, "ERROR: %.1000s", e.msg);
    else
        dt_workload_key(w, buf, sizeof buf);
    dt_workload_free(w);
    return buf;
}

static void expect_canon(const char *key, const char *want)
{
    const char *got = canon(key);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "\n  %s\n  -> %s\n  expected %s\n", key, got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
}

static void test_canonical_keys(void)
{
    /* the examples of the issue and docs/workload-keys.md are fixed points */
    expect_canon("dense(M=1..128,N=768,K=768)", "dense(M=1..128,N=768,K=768)");
    expect_canon("batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT;seq=1..128)",
                 "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT;seq=1..128)");
    /* a dim that is a variable of its own takes the dim's name */
    expect_canon("dense(M=seq,N=768,K=768;seq=1..128)", "dense(M=1..128,N=768,K=768)");
    /* spaces, order of items, default attributes */
    expect_canon(" dense( K = 768 , N=768, M=1..128, epilogue=none ) ",
                 "dense(M=1..128,N=768,K=768)");
    expect_canon("dense(M=1..128,N=768,K=768,epilogue=bias+gelu)",
                 "dense(M=1..128,N=768,K=768,epilogue=bias+gelu)");
    /* layout is always printed, NN is the default */
    expect_canon("batch_matmul(B=2,M=3,N=4,K=5)", "batch_matmul(B=2,M=3,N=4,K=5,layout=NN)");
    /* single-valued variables become constants, expressions fold */
    expect_canon("dense(M=batch*seq,N=768,K=768;batch={1},seq=1..128)",
                 "dense(M=1..128,N=768,K=768)");
    expect_canon("dense(M=seq*batch,N=2*384,K=768;seq=1..128,batch=1..8)",
                 "dense(M=batch*seq,N=768,K=768;batch=1..8,seq=1..128)");
    expect_canon("batch_matmul(B=batch*12,M=seq,N=seq,K=64,layout=NT;seq=1..128,batch=1..8)",
                 "batch_matmul(B=12*batch,M=seq,N=seq,K=64,layout=NT;batch=1..8,seq=1..128)");
    /* domains: lists, steps */
    expect_canon("dense(M={8,1,4,2},N=64,K=64)", "dense(M={1,2,4,8},N=64,K=64)");
    expect_canon("dense(M={16,32,48},N=64,K=64)", "dense(M=16..48:16,N=64,K=64)");
    expect_canon("dense(M=8..512:8,N=64,K=64)", "dense(M=8..512:8,N=64,K=64)");
    expect_canon("dense(M={3,4},N=64,K=64)", "dense(M=3..4,N=64,K=64)");
    /* a variable shared by two dims is not inlined */
    expect_canon("batch_matmul(B=1,M=s,N=s,K=s;s=1..4)",
                 "batch_matmul(B=1,M=s,N=s,K=s,layout=NN;s=1..4)");
    expect_canon("dense(M=M,N=M,K=3;M=1..4)", "dense(M=M,N=M,K=3;M=1..4)");
    /* static workload */
    expect_canon("dense(M=1,N=2,K=3)", "dense(M=1,N=2,K=3)");
    /* dtype: after the attributes, f32 (the default) never printed */
    expect_canon("dense(dtype=bf16,M=1..128,N=768,K=768)",
                 "dense(M=1..128,N=768,K=768,dtype=bf16)");
    expect_canon("dense(M=1..128,N=768,K=768,dtype=f32)", "dense(M=1..128,N=768,K=768)");
    expect_canon("dense(M=1..128,dtype=int8,N=768,K=768,epilogue=bias)",
                 "dense(M=1..128,N=768,K=768,epilogue=bias,dtype=int8)");
    expect_canon("dense(M=seq,N=4096,K=4096,dtype=w8a32;seq=1..64)",
                 "dense(M=1..64,N=4096,K=4096,dtype=w8a32)");
    expect_canon("batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT,dtype=bf16;seq=1..128)",
                 "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT,dtype=bf16;seq=1..128)");
    /* issue 42, defect 7: one key whatever the order of a sum's constants */
    expect_canon("dense(M=x-1+2,N=16,K=16;x=1..4)", "dense(M=x+1,N=16,K=16;x=1..4)");
    expect_canon("dense(M=x+1-1+1,N=16,K=16;x=1..4)", "dense(M=x+1,N=16,K=16;x=1..4)");
    expect_canon("dense(M=x+-1+2,N=16,K=16;x=1..4)", "dense(M=x+1,N=16,K=16;x=1..4)");
    expect_canon("dense(M=x+x,N=16,K=16;x=1..4)", "dense(M=2*x,N=16,K=16;x=1..4)");
    expect_canon("dense(M=x-x+1,N=16,K=16)", "dense(M=1,N=16,K=16)");
}

static void test_dtype_keys(void)
{
    /* each dtype parses to its workload dtype and prints back */
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        char key[128], out[DT_KEY_MAX];
        snprintf(key, sizeof key, "dense(M=1..8,N=64,K=64,dtype=%s)", dt_dtype_name((dt_dtype)d));
        dt_workload *w = NULL;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(key, &w, &e), 0);
        CU_ASSERT_EQUAL(w->dtype, (dt_dtype)d);
        dt_workload_key(w, out, sizeof out);
        /* f32 prints no dtype; f32_bf16 prints as f32 with math=bf16, w8a32_bf16
         * as w8a32 with math=bf16 */
        CU_ASSERT_STRING_EQUAL(out, d == DT_DTYPE_F32         ? "dense(M=1..8,N=64,K=64)"
                                    : d == DT_DTYPE_F32_BF16 ? "dense(M=1..8,N=64,K=64,math=bf16)"
                                    : d == DT_DTYPE_W8A32_BF16
                                        ? "dense(M=1..8,N=64,K=64,dtype=w8a32,math=bf16)"
                                        : key);
        /* the clone keeps it */
        dt_workload *c = dt_workload_clone(w);
        CU_ASSERT_EQUAL(c->dtype, w->dtype);
        dt_workload_free(c);
        dt_workload_free(w);
    }
    dt_dtype d;
    CU_ASSERT_EQUAL(dt_dtype_from_name("bf16", &d), 0);
    CU_ASSERT_EQUAL(d, DT_DTYPE_BF16);
    CU_ASSERT_EQUAL(dt_dtype_from_name("fp8", &d), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_dtype_a_size(DT_DTYPE_INT8), 1);
    CU_ASSERT_EQUAL(dt_dtype_b_size(DT_DTYPE_W8A32), 1);
    CU_ASSERT_EQUAL(dt_dtype_a_size(DT_DTYPE_W8A32), 4);
    CU_ASSERT_EQUAL(dt_dtype_c_size(DT_DTYPE_BF16), 4);
    /* a CPU without the extensions runs bf16 and int8 on the portable back-end */
    dt_target t;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&t, &e), 0);
    dt_target_set_isa(&t, DT_ISA_GENERIC);
    const char *how = NULL;
    CU_ASSERT_EQUAL(dt_dtype_native(DT_DTYPE_BF16, &t, &how), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(how, "portable"));
    CU_ASSERT_EQUAL(dt_dtype_native(DT_DTYPE_INT8, &t, &how), 0);
    CU_ASSERT_EQUAL(dt_dtype_native(DT_DTYPE_F32, &t, &how), 1);
    t.features &= ~DT_FEAT_BIT(DT_FEAT_AVX512_BF16);
    dt_target_set_isa(&t, t.isa_max);
    CU_ASSERT_EQUAL(dt_dtype_native(DT_DTYPE_BF16, &t, NULL), 0);
    CU_ASSERT_EQUAL(dt_dtype_target(DT_DTYPE_BF16, &t).isa, DT_ISA_GENERIC);
    CU_ASSERT_EQUAL(dt_dtype_target(DT_DTYPE_F32, &t).isa, t.isa);
}

static void test_key_errors(void)
{
    static const struct {
        const char *key, *needle;
    } cases[] = {
        {"dense", "expected op("},
        {"conv3d(M=1)", "unknown op 'conv3d'"},
        {"dense(M=1..128,N=768)", "dim K is missing"},
        {"dense(M=1..128,N=768,K=768,X=3)", "'X' at offset"},
        {"dense(M=1..128,M=2,N=768,K=768)", "given twice"},
        {"dense(M=128..1,N=768,K=768)", "empty range"},
        {"dense(M=1..128,N=768,K=768,epilogue=tanh)", "expected one of"},
        {"dense(M=seq,N=768,K=768)", "unknown variable 'seq'"},
        {"dense(M=seq,N=768,K=768;seq=1..4,extra=1..2)", "declared but no dim uses it"},
        {"dense(M=seq,N=768,K=768;seq=1..4,seq=2..3)", "defined twice"},
        {"dense(M=seq-2,N=768,K=768;seq=1..4)", "must be >= 1"},
        {"dense(M=0,N=768,K=768)", "must be >= 1"},
        {"dense(M=seq*3037000500,N=3037000500,K=1;seq=1..2)", "overflows int64"},
        {"dense(M=1..2000000,N=1,K=1)", "at most"},
        {"dense(M=a*b*c,N=1,K=1;a=1..200,b=1..200,c=1..200)", "shapes; at most"},
        {"dense(M=1..128,N=768,K=768", "expected op("},
        {"dense(M=1..128,N=76 8,K=768)", "offset"},
        {"dense(M=1..128:0,N=1,K=1)", "step must be >= 1"},
        {"dense(M=1..128,N=768,K=768,dtype=fp8)", "dtype=fp8 at offset 27: unknown dtype"},
        {"dense(M=1..128,N=768,K=768,dtype=bf16,dtype=int8)", "dtype is given twice"},
        {"batch_matmul(B=1,M=1..8,N=8,K=8,dtype=int8)",
         "dtype int8 is not available for batch_matmul (it has f32, bf16)"},
        /* issue 42, defect 10: an unknown math= is unknown, as dtype= says */
        {"dense(M=1..8,N=16,K=16,math=fp8)", "unknown math 'fp8' (known: bf16"},
        {"dense(M=1..8,N=16,K=16,math=)", "unknown math '' (known: bf16"},
        {"dense(M=1..8,N=16,K=16,math=BF16)", "unknown math 'BF16' (known: bf16"},
        {"dense(M=1..8,N=16,K=16,math=f32)", "unknown math 'f32' (known: bf16"},
        {"dense(M=1..8,N=16,K=16,dtype=int8,math=bf16)", "math=bf16 at offset 34 is not available"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = canon(cases[i].key);
        int ok = strncmp(got, "ERROR: ", 7) == 0 && strstr(got, cases[i].needle);
        if (!ok)
            fprintf(stderr, "\n  %s -> %s (expected an error with '%s')\n", cases[i].key, got,
                    cases[i].needle);
        CU_ASSERT_TRUE(ok);
    }
}

/* Builds a random valid key from random pieces, in non-canonical spelling. */
static void random_key(char *buf, size_t n)
{
    static const char *vars[] = {"batch", "seq", "h"};
    static const char *doms[] = {"1..8", "1..128", "{1,2,4,8}", "8..64:8", "{3,5}", "2..3"};
    /* "#" stands for a random constant */
    static const char *dexprs[] = {"#", "seq", "batch*seq", "seq*batch", "2*h", "h+1",
                                   "seq*#", "(h+#)/2", "batch"};
    int is_dense = rand() % 2;
    int ndims = is_dense ? 3 : 4;
    const char *dims_d[] = {"M", "N", "K"}, *dims_b[] = {"B", "M", "N", "K"};
    size_t len = (size_t)snprintf(buf, n, "%s(", is_dense ? "dense" : "batch_matmul");
    for (int d = 0; d < ndims; d++) {
        char ex[64];
        const char *tmpl = dexprs[rand() % 9], *hash = strchr(tmpl, '#');
        if (hash)
            snprintf(ex, sizeof ex, "%.*s%d%s", (int)(hash - tmpl), tmpl, 1 + rand() % 500,
                     hash + 1);
        else
            snprintf(ex, sizeof ex, "%s", tmpl);
        len += (size_t)snprintf(buf + len, n - len, "%s%s=%s", d ? "," : "",
                                (is_dense ? dims_d : dims_b)[d], ex);
    }
    if (is_dense && rand() % 2)
        len += (size_t)snprintf(buf + len, n - len, ",epilogue=%s",
                                (const char *[]){"bias", "gelu", "bias+relu"}[rand() % 3]);
    if (!is_dense && rand() % 2)
        len += (size_t)snprintf(buf + len, n - len, ",layout=%s", rand() % 2 ? "NT" : "NN");
    if (rand() % 3 == 0)
        len += (size_t)snprintf(buf + len, n - len, ",dtype=%s",
                                is_dense ? (const char *[]){"f32", "bf16", "int8", "w8a32"}[rand() % 4]
                                         : (rand() % 2 ? "bf16" : "f32"));
    char sep = ';';
    for (int v = 0; v < 3; v++) {
        if (!strstr(buf, vars[v]))
            continue;
        len += (size_t)snprintf(buf + len, n - len, "%c%s=%s", sep, vars[v], doms[rand() % 6]);
        sep = ',';
    }
    snprintf(buf + len, n - len, ")");
}

static void test_random_keys_round_trip(void)
{
    srand(42);
    int valid = 0;
    for (int i = 0; i < 3000; i++) {
        char key[512];
        random_key(key, sizeof key);
        dt_workload *w = NULL, *w2 = NULL;
        dt_err e;
        if (dt_workload_parse_key(key, &w, &e))
            continue; /* e.g. 'h' not used after folding: covered by test_key_errors */
        valid++;
        char k1[DT_KEY_MAX], k2[DT_KEY_MAX];
        dt_workload_key(w, k1, sizeof k1);
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(k1, &w2, &e), 0);
        dt_workload_key(w2, k2, sizeof k2);
        CU_ASSERT_STRING_EQUAL(k1, k2);
        /* same shape set, same dims on every shape */
        CU_ASSERT_EQUAL(dt_workload_nshapes(w), dt_workload_nshapes(w2));
        int64_t n = dt_workload_nshapes(w), v1[DT_MAX_VARS], v2[DT_MAX_VARS];
        for (int64_t s = 0; s < n; s += 1 + n / 7) {
            int64_t d1[DT_MAX_DIMS], d2[DT_MAX_DIMS];
            dt_workload_shape_at(w, s, v1, NULL);
            dt_workload_shape_at(w2, s, v2, NULL);
            CU_ASSERT_EQUAL(dt_workload_dims(w, v1, d1, &e), 0);
            CU_ASSERT_EQUAL(dt_workload_dims(w2, v2, d2, &e), 0);
            CU_ASSERT_EQUAL(memcmp(d1, d2, (size_t)w->op->ndims * sizeof d1[0]), 0);
        }
        dt_workload_free(w);
        dt_workload_free(w2);
    }
    CU_ASSERT_TRUE(valid > 1000);
}

static void test_domains(void)
{
    dt_domain d;
    dt_err e;
    char buf[128];
    CU_ASSERT_EQUAL(dt_domain_range(&d, 1, 128, 1, &e), 0);
    CU_ASSERT_EQUAL(d.n, 128);
    CU_ASSERT_DOUBLE_EQUAL(d.weights[5], 1.0 / 128, 1e-12);
    dt_domain_print(&d, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "1..128");
    CU_ASSERT_TRUE(dt_domain_contains(&d, 77));
    CU_ASSERT_FALSE(dt_domain_contains(&d, 129));
    dt_domain_free(&d);

    int64_t vals[] = {32, 16, 128};
    double w[] = {1, 2, 1};
    CU_ASSERT_EQUAL(dt_domain_values(&d, vals, w, 3, &e), 0);
    CU_ASSERT_EQUAL(d.values[0], 16);
    CU_ASSERT_DOUBLE_EQUAL(d.weights[0], 0.5, 1e-12); /* weight follows its value */
    CU_ASSERT_DOUBLE_EQUAL(d.weights[1], 0.25, 1e-12);
    dt_domain_print(&d, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "{16,32,128}");
    dt_domain_free(&d);

    int64_t dup[] = {1, 2, 1};
    CU_ASSERT_EQUAL(dt_domain_values(&d, dup, NULL, 3, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "twice"));
    double neg[] = {1, -1, 1};
    CU_ASSERT_EQUAL(dt_domain_values(&d, vals, neg, 3, &e), DT_EINVAL);
    double zero[] = {0, 0, 0};
    CU_ASSERT_EQUAL(dt_domain_values(&d, vals, zero, 3, &e), DT_EINVAL);
    double nan_w[] = {1, NAN, 1};
    CU_ASSERT_EQUAL(dt_domain_values(&d, vals, nan_w, 3, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_domain_range(&d, 5, 4, 1, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_domain_range(&d, INT64_MIN, INT64_MAX, 1, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_domain_parse("{}", &d, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_domain_parse("1..", &d, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_domain_parse("{1,2", &d, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_domain_parse("x", &d, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_domain_parse("-4..-2", &d, &e), 0);
    CU_ASSERT_EQUAL(d.n, 3);
    dt_domain_free(&d);
}

static void test_shape_set(void)
{
    dt_workload *w = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(
        dt_workload_parse_key("batch_matmul(B=12*batch,M=seq,N=seq,K=64,layout=NT;"
                              "batch=1..8,seq=1..128)", &w, &e), 0);
    CU_ASSERT_EQUAL(w->nvars, 2);
    CU_ASSERT_EQUAL(dt_workload_nshapes(w), 8 * 128);
    int64_t v[DT_MAX_VARS], d[DT_MAX_DIMS];
    double weight, total = 0;
    for (int64_t i = 0; i < dt_workload_nshapes(w); i++) {
        dt_workload_shape_at(w, i, v, &weight);
        total += weight;
    }
    CU_ASSERT_DOUBLE_EQUAL(total, 1.0, 1e-9);
    dt_workload_shape_at(w, 128 + 36, v, &weight); /* last variable fastest */
    CU_ASSERT_EQUAL(v[0], 2);
    CU_ASSERT_EQUAL(v[1], 37);
    CU_ASSERT_DOUBLE_EQUAL(weight, 1.0 / 1024, 1e-12);
    CU_ASSERT_EQUAL(dt_workload_dims(w, v, d, &e), 0);
    CU_ASSERT_EQUAL(d[0], 24);
    CU_ASSERT_EQUAL(d[1], 37);
    CU_ASSERT_EQUAL(d[2], 37);
    CU_ASSERT_EQUAL(d[3], 64);
    char s[64];
    dt_shape_format(w, v, s, sizeof s);
    CU_ASSERT_STRING_EQUAL(s, "batch=2,seq=37");

    int in;
    CU_ASSERT_EQUAL(dt_shape_parse(w, "seq=37,batch=2", v, &in, &e), 0);
    CU_ASSERT_TRUE(in);
    CU_ASSERT_EQUAL(dt_shape_parse(w, "batch=2,seq=300", v, &in, &e), 0);
    CU_ASSERT_FALSE(in); /* outside the set: still a valid shape */

    /* shape index: the inverse of shape_at, nearest values outside the set */
    int64_t idx, near[DT_MAX_VARS];
    int64_t v2[2] = {2, 37};
    CU_ASSERT_EQUAL(dt_workload_shape_index(w, v2, &idx, near), 1);
    CU_ASSERT_EQUAL(idx, 128 + 36);
    for (int64_t i = 0; i < dt_workload_nshapes(w); i += 97) {
        dt_workload_shape_at(w, i, v2, NULL);
        CU_ASSERT_EQUAL(dt_workload_shape_index(w, v2, &idx, NULL), 1);
        CU_ASSERT_EQUAL(idx, i);
    }
    v2[0] = 9; v2[1] = 300;
    CU_ASSERT_EQUAL(dt_workload_shape_index(w, v2, &idx, near), 0);
    CU_ASSERT_EQUAL(near[0], 8);
    CU_ASSERT_EQUAL(near[1], 128);
    CU_ASSERT_EQUAL(idx, 8 * 128 - 1);
    v2[0] = 0; v2[1] = -5;
    CU_ASSERT_EQUAL(dt_workload_shape_index(w, v2, &idx, near), 0);
    CU_ASSERT_EQUAL(idx, 0);
    CU_ASSERT_EQUAL(dt_shape_parse(w, "batch=2", v, &in, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "'seq' has no value"));
    CU_ASSERT_EQUAL(dt_shape_parse(w, "batch=2,seq=3,M=4", v, &in, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "batch, seq"));
    CU_ASSERT_EQUAL(dt_shape_parse(w, "batch=2,seq=0", v, &in, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, ">= 1"));
    CU_ASSERT_EQUAL(dt_shape_parse(w, "batch=2,seq=x", v, &in, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_shape_parse(w, "batch=2,batch=3", v, &in, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_shape_parse(w, "batch=99999999999999999999,seq=1", v, &in, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_shape_parse(w, "batch=4611686018427387904,seq=4", v, &in, &e),
                    DT_EOVERFLOW);
    dt_workload_free(w);

    /* a static workload has one empty shape */
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key("dense(M=4,N=8,K=16)", &w, &e), 0);
    CU_ASSERT_EQUAL(dt_workload_nshapes(w), 1);
    CU_ASSERT_EQUAL(dt_shape_parse(w, "", v, &in, &e), 0);
    CU_ASSERT_TRUE(in);
    dt_workload_free(w);
}

static void test_nearest_value(void)
{
    dt_domain d;
    dt_err e;
    int64_t vals[] = {5, 24, 43, 62, 81, 100, 119, 128};
    CU_ASSERT_EQUAL_FATAL(dt_domain_values(&d, vals, NULL, 8, &e), 0);
    CU_ASSERT_EQUAL(dt_domain_nearest(&d, 1), 0);
    CU_ASSERT_EQUAL(dt_domain_nearest(&d, 5), 0);
    CU_ASSERT_EQUAL(dt_domain_nearest(&d, 14), 0);  /* tie 5 / 24 at 14.5: 14 is nearer 5 */
    CU_ASSERT_EQUAL(dt_domain_nearest(&d, 15), 1);
    CU_ASSERT_EQUAL(dt_domain_nearest(&d, 53), 3); /* 43 and 62 are 10 / 9 away */
    CU_ASSERT_EQUAL(dt_domain_nearest(&d, 119), 6);
    CU_ASSERT_EQUAL(dt_domain_nearest(&d, 124), 7); /* 119: 5, 128: 4 */
    CU_ASSERT_EQUAL(dt_domain_nearest(&d, 10000), 7);
    dt_domain_free(&d);
    int64_t one = 7;
    CU_ASSERT_EQUAL_FATAL(dt_domain_values(&d, &one, NULL, 1, &e), 0);
    CU_ASSERT_EQUAL(dt_domain_nearest(&d, 3), 0);
    CU_ASSERT_EQUAL(dt_domain_nearest(&d, 30), 0);
    dt_domain_free(&d);
}

static void test_clone_and_flops(void)
{
    dt_workload *w = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key("dense(M=1..128,N=768,K=3072)", &w, &e), 0);
    dt_workload *c = dt_workload_clone(w);
    char k1[DT_KEY_MAX], k2[DT_KEY_MAX];
    dt_workload_key(w, k1, sizeof k1);
    dt_workload_key(c, k2, sizeof k2);
    CU_ASSERT_STRING_EQUAL(k1, k2);
    int64_t dims[3] = {128, 768, 3072};
    CU_ASSERT_DOUBLE_EQUAL(w->op->flops(dims, w->attrs), 2.0 * 128 * 768 * 3072, 1);
    /* a small buffer still reports the length needed */
    char small[8];
    CU_ASSERT_EQUAL(dt_workload_key(w, small, sizeof small), strlen(k1));
    CU_ASSERT_EQUAL(strlen(small), 7);
    dt_workload_free(w);
    dt_workload_free(c);
}

/* Attribute values as text: enumerated by name, integers in their range
 * (a convolution's stride or pad), and what a message says is allowed. */
static void test_attribute_values(void)
{
    const dt_op_desc *dense = dt_op_find("dense");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dense);
    const dt_attr_desc *epi = &dense->attrs[0];
    int v = -1;
    char buf[128], num[16];
    CU_ASSERT_EQUAL(dt_attr_parse(epi, "bias+gelu", &v), 0);
    CU_ASSERT_EQUAL(v, 5);
    CU_ASSERT_STRING_EQUAL(dt_attr_text(epi, v, num), "bias+gelu");
    CU_ASSERT_EQUAL(dt_attr_parse(epi, "gelu+bias", &v), -1);
    dt_attr_allowed(epi, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "one of none, bias, relu, gelu, bias+relu, bias+gelu, relu6, "
                                "bias+relu6, hardswish, bias+hardswish");
    CU_ASSERT_EQUAL(dt_attr_parse(epi, "bias+hardswish", &v), 0);
    CU_ASSERT_EQUAL(v, 9);
    CU_ASSERT_EQUAL(dt_epilogue_bias(v), 1);
    CU_ASSERT_EQUAL(dt_epilogue_act(v), DT_ACT_HARDSWISH);
    CU_ASSERT_EQUAL(dt_epilogue_act(6), DT_ACT_RELU6);
    CU_ASSERT_EQUAL(dt_epilogue_bias(6), 0);
    const dt_attr_desc pad = {.name = "pad", .integer = 1, .min = 0, .max = 64, .default_index = 0};
    CU_ASSERT_EQUAL(dt_attr_parse(&pad, "0", &v), 0);
    CU_ASSERT_EQUAL(v, 0);
    CU_ASSERT_EQUAL(dt_attr_parse(&pad, "64", &v), 0);
    CU_ASSERT_EQUAL(v, 64);
    CU_ASSERT_STRING_EQUAL(dt_attr_text(&pad, v, num), "64");
    static const char *bad[] = {"65", "-1", "", "1.5", "x", "2x", " 2", "+2", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = -7;
        CU_ASSERT_EQUAL(dt_attr_parse(&pad, bad[i], &v), -1);
        CU_ASSERT_EQUAL(v, -7);
    }
    dt_attr_allowed(&pad, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "an integer in 0..64");
    const dt_attr_desc off = {.name = "offset", .integer = 1, .min = -8, .max = 8};
    CU_ASSERT_EQUAL(dt_attr_parse(&off, "-8", &v), 0);
    CU_ASSERT_EQUAL(v, -8);
    CU_ASSERT_EQUAL(dt_attr_parse(&off, "-9", &v), -1);
    /* from JSON: strings for every attribute, integers for integer ones */
    json_t *js = json_string("bias"), *j3 = json_integer(3), *j99 = json_integer(99);
    CU_ASSERT_EQUAL(dt_attr_parse_json(epi, js, &v), 0);
    CU_ASSERT_EQUAL(v, 1);
    CU_ASSERT_EQUAL(dt_attr_parse_json(epi, j3, &v), -1);
    CU_ASSERT_EQUAL(dt_attr_parse_json(&pad, j3, &v), 0);
    CU_ASSERT_EQUAL(v, 3);
    CU_ASSERT_EQUAL(dt_attr_parse_json(&pad, j99, &v), -1);
    CU_ASSERT_EQUAL(dt_attr_parse_json(&pad, js, &v), -1);
    json_decref(js);
    json_decref(j3);
    json_decref(j99);
    /* combinations of attribute values: enumerated ones only */
    int attrs[DT_MAX_ATTRS] = {0}, n = 1;
    while (dt_op_next_attrs(dense, attrs))
        n++;
    CU_ASSERT_EQUAL(n, DT_EPILOGUE_COUNT);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"canonical keys", test_canonical_keys},
        {"malformed and impossible keys", test_key_errors},
        {"dtypes in keys", test_dtype_keys},
        {"random keys round-trip", test_random_keys_round_trip},
        {"domains", test_domains},
        {"shape sets, weights, shape strings", test_shape_set},
        {"nearest domain value", test_nearest_value},
        {"clone, flops, truncated key buffer", test_clone_and_flops},
        {"attribute values: enumerated and integer", test_attribute_values},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"workload", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
