/* libdtune's kernel calls (dtune_kernel_load, _info_get, _packed_size,
 * _pack, _run): stored kernels of a database made here built into the
 * kernel cache under the builder's own names, loaded, their weights
 * packed, run and checked against the double reference
 * (microkernel/reference.h); bad input — an unknown id, NULL arguments, a
 * damaged stored row, wrong dims — a DTUNE_E* code with a message. */
#include <dtune/dtune.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/target.h"
#include "db/db.h"
#include "microkernel/build.h"
#include "microkernel/reference.h"
#include "ops/op.h"
#include "space/annotation.h"
#include "tests/dt_test.h"

static char *g_dir;
static char g_db[4096];
/* f32 dense bias+relu, f32 batch_matmul NT, int8 dense, two damaged rows */
static int64_t g_dense, g_bmm, g_q8, g_bad_ann, g_bad_attrs;

/* A kernel row of op/dtype/attrs with an annotation sampled for this machine. */
static int add_kernel(dt_db *db, const dt_target *tg, const char *op, const char *dtype,
                      const char *attrs, uint64_t seed, int64_t *id, dt_err *e)
{
    dt_rng r;
    dt_rng_seed(&r, seed);
    dt_dtype d = DT_DTYPE_F32;
    dt_annotation a;
    if (dtype && dt_dtype_from_name(dtype, &d))
        return dt_errf(e, DT_EINVAL, "dtype %s", dtype);
    int rc = dt_annotation_sample_dtype(&r, tg, d, DT_SKETCH_BLOCKED, 1, &a, e);
    if (rc)
        return rc;
    char *ann = dt_annotation_to_string(&a);
    rc = dt_db_kernel_intern_attrs(db, op, dtype, attrs, "blocked", ann, NULL, id, e);
    free(ann);
    return rc;
}

static int make_db(dt_err *e)
{
    dt_target tg;
    dt_db *db = NULL;
    int rc;
    if ((rc = dt_target_detect(&tg, e)) || (rc = dt_db_open(g_db, DT_DB_CREATE, &db, e)))
        return rc;
    if (!(rc = add_kernel(db, &tg, "dense", NULL, "{\"epilogue\":\"bias+relu\"}", 3, &g_dense,
                          e)) &&
        !(rc = add_kernel(db, &tg, "batch_matmul", NULL, "{\"layout\":\"NT\"}", 4, &g_bmm, e)) &&
        !(rc = add_kernel(db, &tg, "dense", "int8", NULL, 5, &g_q8, e)) &&
        !(rc = dt_db_kernel_intern(db, "dense", "blocked", "{\"sketch\":\"blocked\"}", NULL,
                                   &g_bad_ann, e)))
        rc = dt_db_kernel_intern_attrs(db, "dense", NULL, "{\"epilogue\":\"sparkly\"}",
                                       "blocked", "{\"sketch\":\"blocked\"}", NULL,
                                       &g_bad_attrs, e);
    dt_db_close(db);
    return rc;
}

static int setup(void)
{
    g_dir = dt_test_tmpdir_with_cache();
    if (!g_dir)
        return 1;
    snprintf(g_db, sizeof g_db, "%s/k.db", g_dir);
    dt_err e;
    if (make_db(&e)) {
        fprintf(stderr, "fixture: %s\n", e.msg);
        return 1;
    }
    return 0;
}

static int teardown(void)
{
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

static dtune *open_db(void)
{
    dtune *db = NULL;
    CU_ASSERT_EQUAL_FATAL(dtune_open(g_db, &db), DTUNE_OK);
    return db;
}

static void fill(float *x, int64_t n, uint64_t seed)
{
    dt_rng r;
    dt_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(dt_rng_below(&r, 2001) - 1000) / 1000.0f;
}

/* Runs k on dims with fresh operands (B packed when it packs) and checks C
 * against the double reference; returns the check's code. */
static int run_checked(const dtune_kernel *k, const dtune_kernel_info *in, const int64_t *dims,
                       dt_err *e)
{
    const dt_op_desc *op = dt_op_find(in->op);
    int attrs[DT_MAX_ATTRS] = {0};
    if (!strcmp(in->op, "dense"))
        attrs[dt_op_attr_index(op, "epilogue")] =
            dt_attr_value_index(&op->attrs[dt_op_attr_index(op, "epilogue")], "bias+relu");
    else
        attrs[dt_op_attr_index(op, "layout")] =
            dt_attr_value_index(&op->attrs[dt_op_attr_index(op, "layout")], "NT");
    dt_gemm g;
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(op, attrs, dims, &g, e), 0);
    int64_t na = g.batch * g.M * g.K, nb = g.batch * g.N * g.K, nc = g.batch * g.M * g.N;
    float *A = malloc((size_t)na * 4), *B = malloc((size_t)nb * 4), *C = calloc((size_t)nc, 4);
    float *bias = malloc((size_t)g.N * 4);
    double *ref = malloc((size_t)nc * 8), *mag = malloc((size_t)nc * 8);
    fill(A, na, 1), fill(B, nb, 2), fill(bias, g.N, 3);
    void *packed = NULL;
    size_t bytes = 0;
    CU_ASSERT_EQUAL(dtune_kernel_packed_size(k, dims, in->ndims, &bytes), DTUNE_OK);
    CU_ASSERT_EQUAL(bytes > 0, in->packs_weights);
    if (in->packs_weights) {
        packed = malloc(bytes);
        CU_ASSERT_EQUAL(dtune_kernel_pack(k, dims, in->ndims, B, NULL, packed, bytes), DTUNE_OK);
    }
    dtune_kernel_args a = {.dims = dims, .a = A, .b = packed ? packed : B,
                           .bias = in->bias ? bias : NULL, .c = C, .threads = 1};
    int rc = dtune_kernel_run(k, &a);
    CU_ASSERT_EQUAL(rc, DTUNE_OK);
    if (!rc && !(rc = dt_ref_gemm(&g, A, B, bias, NULL, ref, mag, e)))
        rc = dt_check_close(C, g.N, ref, mag, g.batch * g.M, g.N, g.K, e);
    free(A), free(B), free(C), free(bias), free(ref), free(mag), free(packed);
    return rc;
}

/* The shared object is the builder's own name for the kernel's source:
 * the tuner's build and this one are one file. */
static void check_builder_name(dtune *db, const dtune_kernel_info *in)
{
    char *src = NULL;
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_source(db, in->kernel_id, NULL, &src), DTUNE_OK);
    dt_builder b;
    dt_build_result r;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_builder_init(&b, NULL, NULL, NULL, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_build_one(&b, src, &r, &e), 0);
    CU_ASSERT_EQUAL(r.cache_hit, 1); /* built by dtune_kernel_load */
    CU_ASSERT_STRING_EQUAL(r.so_path, in->path);
    CU_ASSERT_EQUAL(strncmp(in->path, getenv("DTUNE_CACHE_DIR"),
                            strlen(getenv("DTUNE_CACHE_DIR"))), 0);
    dt_build_result_free(&r);
    dtune_free(src);
}

static void test_dense(void)
{
    dtune *db = open_db();
    dtune_kernel *k = NULL;
    dtune_kernel_info in;
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_load(db, g_dense, &k), DTUNE_OK);
    CU_ASSERT_STRING_EQUAL(dtune_errmsg(), "");
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_info_get(k, &in), DTUNE_OK);
    CU_ASSERT_EQUAL(in.kernel_id, g_dense);
    CU_ASSERT_STRING_EQUAL(in.op, "dense");
    CU_ASSERT_STRING_EQUAL(in.dtype, "f32");
    CU_ASSERT_STRING_EQUAL(in.dims, "M,N,K");
    CU_ASSERT_EQUAL(in.ndims, 3);
    CU_ASSERT(in.packs_weights && in.bias && !in.scale_a && !in.scale_b);
    CU_ASSERT(in.a_bytes == 4 && in.b_bytes == 4 && in.c_bytes == 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(in.packed_layout, in.backend));
    CU_ASSERT_EQUAL(strncmp(in.backend, "f32/", 4), 0);
    check_builder_name(db, &in);
    dt_err e;
    /* every M, boundary tiles included: one kernel serves every shape */
    for (int64_t M = 1; M <= 37; M += 9) {
        int64_t dims[3] = {M, 72, 40};
        CU_ASSERT_EQUAL(run_checked(k, &in, dims, &e), 0);
        if (e.code)
            fprintf(stderr, "M=%lld: %s\n", (long long)M, e.msg);
    }
    /* loaded again: from the cache; the kernel outlives the database */
    dtune_kernel *k2 = NULL;
    dtune_kernel_info in2;
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_load(db, g_dense, &k2), DTUNE_OK);
    dtune_kernel_info_get(k2, &in2);
    CU_ASSERT_EQUAL(in2.cache_hit, 1);
    CU_ASSERT_STRING_EQUAL(in2.path, in.path);
    dtune_close(db);
    int64_t dims[3] = {5, 64, 32};
    CU_ASSERT_EQUAL(run_checked(k2, &in2, dims, &e), 0);
    dtune_kernel_close(k2);
    dtune_kernel_close(k);
}

static void test_batch_matmul(void)
{
    dtune *db = open_db();
    dtune_kernel *k = NULL;
    dtune_kernel_info in;
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_load(db, g_bmm, &k), DTUNE_OK);
    dtune_kernel_info_get(k, &in);
    CU_ASSERT_STRING_EQUAL(in.dims, "B,M,N,K");
    CU_ASSERT(!in.packs_weights && !in.bias && in.packed_layout[0] == '\0');
    dt_err e;
    int64_t dims[4] = {3, 13, 17, 16};
    CU_ASSERT_EQUAL(run_checked(k, &in, dims, &e), 0);
    /* no weights to pack */
    float w[16];
    CU_ASSERT_EQUAL(dtune_kernel_pack(k, dims, 4, w, NULL, w, sizeof w), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "no constant weights"));
    dtune_kernel_close(k);
    dtune_close(db);
}

/* An unknown id, NULLs, ids below 1 and damaged rows. */
static void test_load_errors(void)
{
    dtune *db = open_db();
    dtune_kernel *k = (dtune_kernel *)db; /* must be reset to NULL */
    CU_ASSERT_EQUAL(dtune_kernel_load(db, 999999, &k), DTUNE_ENOTFOUND);
    CU_ASSERT_PTR_NULL(k);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "no kernel 999999"));
    CU_ASSERT_EQUAL(dtune_kernel_load(NULL, g_dense, &k), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "dtune_kernel_load: db is NULL"));
    CU_ASSERT_EQUAL(dtune_kernel_load(db, 0, &k), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "kernel id 0 is not one"));
    CU_ASSERT_EQUAL(dtune_kernel_load(db, g_dense, NULL), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "out is NULL"));
    int64_t bad[2] = {g_bad_ann, g_bad_attrs};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(dtune_kernel_load(db, bad[i], &k), DTUNE_EDB);
        CU_ASSERT_PTR_NULL(k);
        CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "stored row is damaged"));
        CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "dtune db check"));
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "attribute epilogue"));
    dtune_kernel_info in;
    CU_ASSERT_EQUAL(dtune_kernel_info_get(NULL, &in), DTUNE_EINVAL);
    dtune_kernel_close(NULL);
    dtune_close(db);
}

/* Pack and run arguments: each refused with a message, nothing run. */
static void test_call_errors(void)
{
    dtune *db = open_db();
    dtune_kernel *k = NULL;
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_load(db, g_dense, &k), DTUNE_OK);
    dtune_close(db);
    int64_t dims[3] = {4, 64, 32}, zero[3] = {0, 64, 32};
    size_t bytes = 0;
    CU_ASSERT_EQUAL(dtune_kernel_packed_size(k, dims, 2, &bytes), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "dense has 3 dims (M,N,K)"));
    CU_ASSERT_EQUAL(dtune_kernel_packed_size(k, zero, 3, &bytes), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "dim M is 0"));
    CU_ASSERT_EQUAL(dtune_kernel_packed_size(k, NULL, 3, &bytes), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(dtune_kernel_packed_size(NULL, dims, 3, &bytes), DTUNE_EINVAL);
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_packed_size(k, dims, 3, &bytes), DTUNE_OK);
    float *W = calloc(64 * 32, 4), *packed = malloc(bytes), X[4 * 32] = {0}, Y[4 * 64], b[64];
    CU_ASSERT_EQUAL(dtune_kernel_pack(k, dims, 3, W, NULL, packed, bytes - 1), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "dtune_kernel_packed_size"));
    CU_ASSERT_EQUAL(dtune_kernel_pack(k, dims, 3, NULL, NULL, packed, bytes), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(dtune_kernel_pack(k, dims, 3, W, NULL, packed, bytes), DTUNE_OK);
    dtune_kernel_args ok = {.dims = dims, .a = X, .b = packed, .bias = b, .c = Y};
    dtune_kernel_args a = ok;
    a.bias = NULL;
    CU_ASSERT_EQUAL(dtune_kernel_run(k, &a), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "adds a bias"));
    a = ok, a.b = NULL;
    CU_ASSERT_EQUAL(dtune_kernel_run(k, &a), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "args->b is NULL"));
    a = ok, a.dims = zero;
    CU_ASSERT_EQUAL(dtune_kernel_run(k, &a), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(dtune_kernel_run(k, NULL), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(dtune_kernel_run(NULL, &ok), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(dtune_kernel_run(k, &ok), DTUNE_OK);
    CU_ASSERT_STRING_EQUAL(dtune_errmsg(), "");
    free(W), free(packed);
    dtune_kernel_close(k);
}

/* int8: the weight scales are checked at the pack, the zero point at the run. */
static void test_int8_checks(void)
{
    dtune *db = open_db();
    dtune_kernel *k = NULL;
    dtune_kernel_info in;
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_load(db, g_q8, &k), DTUNE_OK);
    dtune_close(db);
    dtune_kernel_info_get(k, &in);
    CU_ASSERT(in.scale_a && in.scale_b && in.a_bytes == 1 && in.b_bytes == 1);
    CU_ASSERT_STRING_EQUAL(in.dtype, "int8");
    int64_t dims[3] = {2, 32, 16};
    size_t bytes = 0;
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_packed_size(k, dims, 3, &bytes), DTUNE_OK);
    int8_t W[32 * 16] = {1};
    float sb[32], Y[2 * 32];
    uint8_t X[2 * 16] = {3};
    for (int i = 0; i < 32; i++)
        sb[i] = 0.5f;
    void *packed = malloc(bytes);
    CU_ASSERT_EQUAL(dtune_kernel_pack(k, dims, 3, W, NULL, packed, bytes), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "scale_b is NULL"));
    sb[7] = NAN;
    CU_ASSERT_EQUAL(dtune_kernel_pack(k, dims, 3, W, sb, packed, bytes), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "scale_b[7]"));
    sb[7] = 0.5f;
    CU_ASSERT_EQUAL(dtune_kernel_pack(k, dims, 3, W, sb, packed, bytes), DTUNE_OK);
    dtune_kernel_args a = {.dims = dims, .a = X, .b = packed, .c = Y, .scale_a = 1.0f,
                           .zp_a = 256};
    CU_ASSERT_EQUAL(dtune_kernel_run(k, &a), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "zp_a is 256"));
    a.zp_a = 1;
    CU_ASSERT_EQUAL(dtune_kernel_run(k, &a), DTUNE_OK);
    /* Y[0][0] = 1·0.5·((3 − 1)·1 + 15·(0 − 1)·0) = 1.0 */
    CU_ASSERT_DOUBLE_EQUAL(Y[0], 1.0, 1e-6);
    free(packed);
    dtune_kernel_close(k);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"dense bias+relu: built under the builder's name, packed, run, checked", test_dense},
        {"batch_matmul NT: run and checked, nothing to pack", test_batch_matmul},
        {"load: unknown id, NULLs, damaged rows", test_load_errors},
        {"pack and run: bad dims, buffers, bias", test_call_errors},
        {"int8: scale_b at the pack, zp_a at the run", test_int8_checks},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"libdtune_kernel", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
