/* The TVM client (tvm/, libdtune_tvm): its global functions called the way
 * TVM's runtime calls a packed function — through TVM FFI's C API
 * (TVMFFIFunctionGetGlobal, TVMFFIFunctionCall) with DLTensor arguments —
 * on a database tuned here for a small model (a dense with bias+GELU and
 * the two batch matmuls of attention): every output checked against a
 * reference, at every tuned sequence length and beyond; weights packed once
 * per tensor; the kernels the tuner compiled loaded, not compiled again;
 * every bad argument a TVM error with a message, never a crash.  Built with
 * the client only where TVM FFI is found (CMakeLists.txt); elsewhere the
 * suite is one counted skip. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/dt_test.h"

#ifndef DTUNE_HAVE_TVM_FFI

static void test_skipped(void)
{
    dt_test_skip("the TVM client is not built: TVM FFI's header and library were not found "
                 "(scripts/tvm_ffi_venv.sh makes the pinned venv CMake looks in; docs/tvm.md)");
}

int main(void)
{
    CU_TestInfo tests[] = {{"TVM client", test_skipped}, CU_TEST_INFO_NULL};
    CU_SuiteInfo suites[] = {{"tvm_client", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}

#else

#include <dlfcn.h>
#include <jansson.h>

#include <dlpack/dlpack.h>
#include <tvm/ffi/c_api.h>

#define SEQ_HI 12
#define UP "dense(M=1..12,N=40,K=24,epilogue=bias+gelu)"
#define SCORES "batch_matmul(B=3,M=seq,N=seq,K=16,layout=NT;seq=1..12)"
#define CTX "batch_matmul(B=3,M=seq,N=16,K=seq,layout=NN;seq=1..12)"

static char *g_dir, g_db[4200];
static void *g_client;

static TVMFFIObjectHandle global(const char *name)
{
    TVMFFIByteArray n = {name, strlen(name)};
    TVMFFIObjectHandle f = NULL;
    if (TVMFFIFunctionGetGlobal(&n, &f) != 0)
        return NULL;
    return f;
}

/* Calls global name with args; 0, or -1 with the raised error's message in
 * msg (kind: message). */
static int call(const char *name, TVMFFIAny *args, int n, TVMFFIAny *result, char *msg,
                size_t msg_size)
{
    TVMFFIObjectHandle f = global(name);
    if (!f) {
        snprintf(msg, msg_size, "no global %s", name);
        return -1;
    }
    TVMFFIAny r = {.type_index = kTVMFFINone};
    int rc = TVMFFIFunctionCall(f, args, n, &r);
    TVMFFIObjectDecRef(f);
    if (msg)
        msg[0] = '\0';
    if (rc != 0) {
        TVMFFIObjectHandle err = NULL;
        TVMFFIErrorMoveFromRaised(&err);
        if (err) {
            TVMFFIErrorCell *cell = (TVMFFIErrorCell *)((char *)err + sizeof(TVMFFIObject));
            if (msg)
                snprintf(msg, msg_size, "%.*s: %.*s", (int)cell->kind.size, cell->kind.data,
                         (int)cell->message.size, cell->message.data);
            TVMFFIObjectDecRef(err);
        }
        return -1;
    }
    if (result)
        *result = r;
    else if (r.type_index >= kTVMFFIStaticObjectBegin)
        TVMFFIObjectDecRef(r.v_obj);
    return 0;
}

static TVMFFIAny str_arg(const char *s)
{
    return (TVMFFIAny){.type_index = kTVMFFIRawStr, .v_c_str = s};
}

static TVMFFIAny int_arg(int64_t v) { return (TVMFFIAny){.type_index = kTVMFFIInt, .v_int64 = v}; }

/* A float32 CPU tensor (compact) over data. */
typedef struct {
    DLTensor t;
    int64_t shape[4];
} tensor;

static void tensor_init(tensor *x, float *data, int ndim, const int64_t *shape)
{
    memset(x, 0, sizeof *x);
    memcpy(x->shape, shape, (size_t)ndim * sizeof *shape);
    x->t = (DLTensor){.data = data, .device = {kDLCPU, 0}, .ndim = ndim,
                      .dtype = {kDLFloat, 32, 1}, .shape = x->shape};
}

static TVMFFIAny tensor_arg(tensor *x)
{
    return (TVMFFIAny){.type_index = kTVMFFIDLTensorPtr, .v_ptr = &x->t};
}

static float *random_floats(size_t n, unsigned seed)
{
    float *a = malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return a;
}

/* max |y - ref| / (1 + |ref|) */
static double rel_err(const float *y, const double *ref, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(y[i] - ref[i]) / (1 + fabs(ref[i]));
        worst = (d > worst || isnan(d)) ? d : worst;
    }
    return worst;
}

static json_t *stats(void)
{
    TVMFFIAny r;
    char msg[512];
    if (call("dtune.stats", NULL, 0, &r, msg, sizeof msg) != 0)
        return NULL;
    const char *s = NULL;
    size_t n = 0;
    if (r.type_index == kTVMFFISmallStr) {
        s = r.v_bytes, n = r.small_str_len;
    } else if (r.type_index == kTVMFFIStr) {
        TVMFFIByteArray *b = (TVMFFIByteArray *)((char *)r.v_obj + sizeof(TVMFFIObject));
        s = b->data, n = b->size;
    }
    json_t *j = s ? json_loadb(s, n, 0, NULL) : NULL;
    if (r.type_index >= kTVMFFIStaticObjectBegin)
        TVMFFIObjectDecRef(r.v_obj);
    return j;
}

static int64_t stat_of(const char *name)
{
    json_t *j = stats();
    int64_t v = j ? json_integer_value(json_object_get(j, name)) : -1;
    json_decref(j);
    return v;
}

static int setup(void)
{
    g_dir = dt_test_tmpdir_with_cache(); /* the tuner and the client share the kernel cache */
    if (!g_dir)
        return 1;
    char *spec = dt_test_write_file(
        g_dir, "m.json",
        "{\"name\": \"tvm-client-test\", \"variables\": {\"seq\": {\"range\": [1, 12]}},\n"
        " \"ops\": [\n"
        "  {\"name\": \"up\", \"op\": \"dense\", \"M\": \"seq\", \"N\": 40, \"K\": 24,"
        " \"epilogue\": \"bias+gelu\"},\n"
        "  {\"name\": \"scores\", \"op\": \"batch_matmul\", \"B\": 3, \"M\": \"seq\","
        " \"N\": \"seq\", \"K\": 16, \"layout\": \"NT\"},\n"
        "  {\"name\": \"ctx\", \"op\": \"batch_matmul\", \"B\": 3, \"M\": \"seq\", \"N\": 16,"
        " \"K\": \"seq\", \"layout\": \"NN\"}]}\n");
    snprintf(g_db, sizeof g_db, "%s/t.db", g_dir);
    char args[8600];
    snprintf(args, sizeof args, "tune '%s' --db '%s' --trials 12 --threads 1 --min-time 0.2 --json",
             spec, g_db);
    free(spec);
    int code;
    json_t *t = dt_test_run_dtune_json(&code, args);
    json_decref(t);
    if (code != 0)
        return 1;
    g_client = dlopen(DTUNE_TVM_CLIENT, RTLD_NOW | RTLD_GLOBAL);
    if (!g_client) {
        fprintf(stderr, "cannot load %s: %s\n", DTUNE_TVM_CLIENT, dlerror());
        return 1;
    }
    TVMFFIAny a[2] = {str_arg(g_db), int_arg(1)};
    char msg[1024];
    if (call("dtune.open", a, 2, NULL, msg, sizeof msg) != 0) {
        fprintf(stderr, "dtune.open: %s\n", msg);
        return 1;
    }
    return 0;
}

static int teardown(void)
{
    call("dtune.release", NULL, 0, NULL, NULL, 0);
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

static double gelu(double v) { return 0.5 * v * (1 + erf(v / sqrt(2.0))); }

/* dtune.dense on X [1][M][24] with the model's W and bias, every M of the
 * tuned set and two beyond it (extrapolated: the nearest range's kernel) */
static void test_dense(void)
{
    float *W = random_floats(40 * 24, 1), *b = random_floats(40, 2);
    int64_t packs0 = stat_of("packs");
    for (int64_t M = 1; M <= SEQ_HI + 9; M += (M < SEQ_HI ? 1 : 9)) {
        float *X = random_floats((size_t)M * 24, (unsigned)M), *Y = calloc((size_t)M * 40, 4);
        double *ref = calloc((size_t)M * 40, sizeof *ref);
        for (int64_t m = 0; m < M; m++)
            for (int n = 0; n < 40; n++) {
                double s = b[n];
                for (int k = 0; k < 24; k++)
                    s += (double)X[m * 24 + k] * W[n * 24 + k];
                ref[m * 40 + n] = gelu(s);
            }
        tensor x, w, bias, y;
        tensor_init(&x, X, 3, (int64_t[]){1, M, 24});
        tensor_init(&w, W, 2, (int64_t[]){40, 24});
        tensor_init(&bias, b, 1, (int64_t[]){40});
        tensor_init(&y, Y, 3, (int64_t[]){1, M, 40});
        TVMFFIAny a[5] = {str_arg(UP), tensor_arg(&x), tensor_arg(&w), tensor_arg(&bias),
                          tensor_arg(&y)};
        char msg[1024];
        int rc = call("dtune.dense", a, 5, NULL, msg, sizeof msg);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            printf("\n  M=%lld: %s\n", (long long)M, msg);
        double err = rel_err(Y, ref, (size_t)M * 40);
        CU_ASSERT(err < 1e-4);
        if (err >= 1e-4)
            printf("\n  M=%lld: relative error %g\n", (long long)M, err);
        free(X), free(Y), free(ref);
    }
    /* one W: packed once per layout the dispatched kernels use, however many calls */
    int64_t packs = stat_of("packs") - packs0;
    CU_ASSERT(packs >= 1 && packs <= stat_of("kernels_loaded"));
    free(W), free(b);
}

/* attention's two batch matmuls, [1][3] leading dims, every seq and beyond */
static void test_batch_matmul(void)
{
    for (int64_t S = 1; S <= SEQ_HI + 4; S++) {
        float *Q = random_floats((size_t)3 * S * 16, 7), *Kt = random_floats((size_t)3 * S * 16, 8);
        float *P = calloc((size_t)3 * S * S, 4), *V = random_floats((size_t)3 * S * 16, 9);
        float *O = calloc((size_t)3 * S * 16, 4);
        double *rp = calloc((size_t)3 * S * S, sizeof *rp), *ro = calloc((size_t)3 * S * 16, 8);
        for (int h = 0; h < 3; h++)
            for (int64_t i = 0; i < S; i++)
                for (int64_t j = 0; j < S; j++) {
                    double s = 0;
                    for (int k = 0; k < 16; k++)
                        s += (double)Q[(h * S + i) * 16 + k] * Kt[(h * S + j) * 16 + k];
                    rp[(h * S + i) * S + j] = s;
                }
        tensor q, k, p, v, o;
        tensor_init(&q, Q, 4, (int64_t[]){1, 3, S, 16});
        tensor_init(&k, Kt, 4, (int64_t[]){1, 3, S, 16});
        tensor_init(&p, P, 4, (int64_t[]){1, 3, S, S});
        TVMFFIAny a[4] = {str_arg(SCORES), tensor_arg(&q), tensor_arg(&k), tensor_arg(&p)};
        char msg[1024];
        CU_ASSERT_EQUAL(call("dtune.batch_matmul", a, 4, NULL, msg, sizeof msg), 0);
        CU_ASSERT(rel_err(P, rp, (size_t)3 * S * S) < 1e-5);
        /* O = P·V, NN, with P as computed */
        for (int h = 0; h < 3; h++)
            for (int64_t i = 0; i < S; i++)
                for (int n = 0; n < 16; n++) {
                    double s = 0;
                    for (int64_t j = 0; j < S; j++)
                        s += (double)P[(h * S + i) * S + j] * V[(h * S + j) * 16 + n];
                    ro[(h * S + i) * 16 + n] = s;
                }
        tensor_init(&v, V, 3, (int64_t[]){3, S, 16});
        tensor_init(&o, O, 3, (int64_t[]){3, S, 16});
        TVMFFIAny b[4] = {str_arg(CTX), tensor_arg(&p), tensor_arg(&v), tensor_arg(&o)};
        int rc = call("dtune.batch_matmul", b, 4, NULL, msg, sizeof msg);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            printf("\n  seq=%lld: %s\n", (long long)S, msg);
        CU_ASSERT(rel_err(O, ro, (size_t)3 * S * 16) < 1e-5);
        free(Q), free(Kt), free(P), free(V), free(O), free(rp), free(ro);
    }
}

/* The kernels the tuner compiled into the shared cache are loaded as they
 * are: the client's file names are the builder's. */
static void test_kernels_not_rebuilt(void)
{
    CU_ASSERT(stat_of("kernels_loaded") >= 3);
    CU_ASSERT_EQUAL(stat_of("kernels_built"), 0);
}

/* A weight packed once: the same W over many calls adds no pack; another
 * tensor of the same shape is packed for itself. */
static void test_packed_once(void)
{
    float *W = random_floats(40 * 24, 3), *W2 = random_floats(40 * 24, 4), *b = calloc(40, 4);
    float *X = random_floats(5 * 24, 5), *Y = calloc(5 * 40, 4);
    tensor x, w, w2, bias, y;
    tensor_init(&x, X, 2, (int64_t[]){5, 24});
    tensor_init(&w, W, 2, (int64_t[]){40, 24});
    tensor_init(&w2, W2, 2, (int64_t[]){40, 24});
    tensor_init(&bias, b, 1, (int64_t[]){40});
    tensor_init(&y, Y, 2, (int64_t[]){5, 40});
    TVMFFIAny a[5] = {str_arg(UP), tensor_arg(&x), tensor_arg(&w), tensor_arg(&bias),
                      tensor_arg(&y)};
    CU_ASSERT_EQUAL(call("dtune.dense", a, 5, NULL, NULL, 0), 0);
    int64_t packs = stat_of("packs");
    for (int i = 0; i < 20; i++)
        CU_ASSERT_EQUAL(call("dtune.dense", a, 5, NULL, NULL, 0), 0);
    CU_ASSERT_EQUAL(stat_of("packs"), packs);
    a[2] = tensor_arg(&w2);
    CU_ASSERT_EQUAL(call("dtune.dense", a, 5, NULL, NULL, 0), 0);
    CU_ASSERT_EQUAL(stat_of("packs"), packs + 1);
    free(W), free(W2), free(b), free(X), free(Y);
}

/* Every bad call is a TVM error whose message says what is wrong. */
static void expect_error(const char *name, TVMFFIAny *a, int n, const char *want)
{
    char msg[2048];
    CU_ASSERT_NOT_EQUAL(call(name, a, n, NULL, msg, sizeof msg), 0);
    if (!strstr(msg, want)) {
        printf("\n  expected \"%s\" in: %s\n", want, msg);
        CU_FAIL("error message");
    }
}

static void test_errors(void)
{
    float *X = random_floats(4 * 24, 1), *W = random_floats(40 * 24, 2), *b = calloc(40, 4);
    float *Y = calloc(4 * 40, 4);
    tensor x, w, bias, y, wbad, ybad;
    tensor_init(&x, X, 2, (int64_t[]){4, 24});
    tensor_init(&w, W, 2, (int64_t[]){40, 24});
    tensor_init(&bias, b, 1, (int64_t[]){40});
    tensor_init(&y, Y, 2, (int64_t[]){4, 40});
    tensor_init(&wbad, W, 2, (int64_t[]){30, 24});
    tensor_init(&ybad, Y, 2, (int64_t[]){4, 30});
    TVMFFIAny ok[5] = {str_arg(UP), tensor_arg(&x), tensor_arg(&w), tensor_arg(&bias),
                       tensor_arg(&y)};
    TVMFFIAny a[5];

    memcpy(a, ok, sizeof a);
    expect_error("dtune.dense", a, 4, "adds a bias");       /* bias missing */
    expect_error("dtune.dense", a, 3, "arguments given");
    a[0] = str_arg("dense(M=1..12,N=40,K=24,epilogue=bias+gelu"); /* malformed */
    expect_error("dtune.dense", a, 5, "dtune.dense: ");
    a[0] = str_arg("conv2d(N=1,H=8,W=8,C=4,K=4,R=3,S=3,stride=1,pad=1)");
    expect_error("dtune.dense", a, 5, "runs dense and batch_matmul");
    a[0] = str_arg("dense(M=b*s,N=40,K=24;b=1..2,s=1..6)");
    expect_error("dtune.dense", a, 5, "is an expression");
    a[0] = str_arg("dense(M=1..12,N=40,K=24,dtype=int8)");
    expect_error("dtune.dense", a, 5, "not served through TVM");
    a[0] = str_arg("dense(M=1..12,N=40,K=24,epilogue=bias)"); /* never tuned */
    expect_error("dtune.dense", a, 5, "dtune.dense: ");
    a[0] = str_arg(SCORES);
    expect_error("dtune.dense", a, 5, "dtune.batch_matmul runs it");
    a[0] = int_arg(3);
    expect_error("dtune.dense", a, 5, "must be a string");

    memcpy(a, ok, sizeof a);
    a[2] = tensor_arg(&wbad); /* N = 30 against the key's 40 */
    expect_error("dtune.dense", a, 5, "N=40");
    memcpy(a, ok, sizeof a);
    a[4] = tensor_arg(&ybad);
    expect_error("dtune.dense", a, 5, "Y must be");
    memcpy(a, ok, sizeof a);
    a[1] = str_arg("X");
    expect_error("dtune.dense", a, 5, "X must be a tensor");
    x.t.dtype.bits = 16;
    memcpy(a, ok, sizeof a);
    expect_error("dtune.dense", a, 5, "must be float32");
    x.t.dtype.bits = 32;
    x.t.device.device_type = kDLCUDA;
    expect_error("dtune.dense", a, 5, "on the CPU");
    x.t.device.device_type = kDLCPU;
    int64_t strides[2] = {48, 1}; /* every other row: not contiguous */
    x.t.strides = strides;
    expect_error("dtune.dense", a, 5, "not contiguous");
    x.t.strides = NULL;
    float *nodata = x.t.data;
    x.t.data = NULL;
    expect_error("dtune.dense", a, 5, "has no data");
    x.t.data = nodata;

    /* batch_matmul: mismatched batch and inner dims */
    tensor q, k, p;
    float *Q = random_floats(3 * 4 * 16, 1), *P = calloc(3 * 4 * 4, 4);
    tensor_init(&q, Q, 3, (int64_t[]){3, 4, 16});
    tensor_init(&k, Q, 3, (int64_t[]){2, 6, 16});
    tensor_init(&p, P, 3, (int64_t[]){3, 4, 4});
    TVMFFIAny c[4] = {str_arg(SCORES), tensor_arg(&q), tensor_arg(&k), tensor_arg(&p)};
    expect_error("dtune.batch_matmul", c, 4, "B must be 3 matrices");
    tensor_init(&k, Q, 3, (int64_t[]){3, 4, 16});
    tensor_init(&p, P, 3, (int64_t[]){3, 4, 5});
    expect_error("dtune.batch_matmul", c, 4, "C must be 3 matrices of 4 x 4");
    tensor_init(&p, P, 3, (int64_t[]){3, 4, 4});
    c[0] = str_arg(UP);
    expect_error("dtune.batch_matmul", c, 4, "dtune.dense runs it");

    /* dtune.open on a missing file or with bad threads; the open database stays */
    TVMFFIAny o[2] = {str_arg("/nonexistent/dtune.db"), int_arg(1)};
    expect_error("dtune.open", o, 2, "/nonexistent/dtune.db");
    o[0] = str_arg(g_db), o[1] = int_arg(-1);
    expect_error("dtune.open", o, 2, "threads=-1");
    CU_ASSERT_EQUAL(call("dtune.dense", ok, 5, NULL, NULL, 0), 0);
    CU_ASSERT(stat_of("errors") >= 20);
    free(X), free(W), free(b), free(Y), free(Q), free(P);
}

/* A TVM string or bytes object of text[0..n) (NULs included) as an argument. */
static TVMFFIAny bytes_arg(const char *text, size_t n, int as_bytes)
{
    TVMFFIByteArray b = {text, n};
    TVMFFIAny r = {.type_index = kTVMFFINone};
    int rc = as_bytes ? TVMFFIBytesFromByteArray(&b, &r) : TVMFFIStringFromByteArray(&b, &r);
    CU_ASSERT_EQUAL(rc, 0);
    return r;
}

static void drop_arg(TVMFFIAny *a)
{
    if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj)
        TVMFFIObjectDecRef(a->v_obj);
}

/* Issue 42's hostile calls and the client's own pass over its argument
 * handling: each refused with its reason, never cut short, wrapped around
 * or run on memory the tensors do not describe. */
static void test_errors_hostile(void)
{
    float *X = random_floats(4 * 24, 1), *W = random_floats(40 * 24, 2), *b = calloc(40, 4);
    float *Y = calloc(4 * 40 + 1, 4);
    tensor x, w, bias, y;
    tensor_init(&x, X, 2, (int64_t[]){4, 24});
    tensor_init(&w, W, 2, (int64_t[]){40, 24});
    tensor_init(&bias, b, 1, (int64_t[]){40});
    tensor_init(&y, Y, 2, (int64_t[]){4, 40});
    TVMFFIAny ok[5] = {str_arg(UP), tensor_arg(&x), tensor_arg(&w), tensor_arg(&bias),
                       tensor_arg(&y)};
    TVMFFIAny a[5];
    char want[256];

    /* a key with a NUL inside its length, as a TVM string, TVM bytes and a
     * byte array: refused, not read as the key before the NUL */
    char nulkey[sizeof UP + 8];
    memcpy(nulkey, UP "\0junk", sizeof UP + 5);
    size_t nl = sizeof UP + 4; /* UP, NUL, "junk" */
    snprintf(want, sizeof want, "argument 0 has a NUL byte at offset %zu of its %zu bytes",
             sizeof UP - 1, nl);
    for (int as_bytes = 0; as_bytes < 2; as_bytes++) {
        memcpy(a, ok, sizeof a);
        a[0] = bytes_arg(nulkey, nl, as_bytes);
        expect_error("dtune.dense", a, 5, want);
        drop_arg(&a[0]);
    }
    TVMFFIByteArray kb = {nulkey, nl};
    memcpy(a, ok, sizeof a);
    a[0] = (TVMFFIAny){.type_index = kTVMFFIByteArrayPtr, .v_ptr = &kb};
    expect_error("dtune.dense", a, 5, want);
    /* the same key without its NUL tail, as TVM bytes: served */
    a[0] = bytes_arg(UP, sizeof UP - 1, 1);
    CU_ASSERT_EQUAL(call("dtune.dense", a, 5, NULL, NULL, 0), 0);
    drop_arg(&a[0]);
    /* a path with a NUL inside: refused, not opened as the path before it */
    char nulpath[sizeof g_db + 8];
    size_t pl = strlen(g_db);
    memcpy(nulpath, g_db, pl);
    memcpy(nulpath + pl, "\0junk", 5);
    TVMFFIAny o[2] = {bytes_arg(nulpath, pl + 5, 0), int_arg(1)};
    snprintf(want, sizeof want, "dtune.open: argument 0 has a NUL byte at offset %zu", pl);
    expect_error("dtune.open", o, 2, want);
    drop_arg(&o[0]);
    /* NULL strings */
    memcpy(a, ok, sizeof a);
    a[0] = (TVMFFIAny){.type_index = kTVMFFIRawStr, .v_c_str = NULL};
    expect_error("dtune.dense", a, 5, "argument 0 is a NULL string");
    a[0] = (TVMFFIAny){.type_index = kTVMFFIByteArrayPtr, .v_ptr = NULL};
    expect_error("dtune.dense", a, 5, "argument 0 is a NULL byte array");

    /* shapes whose products overflow int64: refused, never wrapped (to
     * M=0 for X of (2^40, 2^40, 24)) */
    const int64_t T40 = (int64_t)1 << 40;
    memcpy(a, ok, sizeof a);
    tensor_init(&x, X, 3, (int64_t[]){T40, T40, 24});
    expect_error("dtune.dense", a, 5,
                 "X of shape (1099511627776, 1099511627776, 24) overflows: the product of its "
                 "dims exceeds 2^63-1");
    tensor_init(&x, X, 2, (int64_t[]){(int64_t)1 << 58, 24}); /* elements fit, bytes do not */
    expect_error("dtune.dense", a, 5, "X of shape (288230376151711744, 24) overflows: its "
                                      "6917529027641081856 elements of 4 bytes");
    tensor_init(&x, X, 2, (int64_t[]){4, 24});
    x.t.byte_offset = (uint64_t)1 << 63;
    expect_error("dtune.dense", a, 5, "after a byte_offset of 9223372036854775808 exceed");
    x.t.byte_offset = UINT64_MAX - 100;
    expect_error("dtune.dense", a, 5, "X of shape (4, 24) overflows");
    x.t.data = (void *)(uintptr_t)-4096; /* the size fits, the address wraps */
    x.t.byte_offset = 4000;
    expect_error("dtune.dense", a, 5, "X's byte_offset 4000 and size go past the end of the "
                                      "address space");
    x.t.data = X;
    x.t.byte_offset = 0;

    /* a bias to a key without one: a grammatical message */
    a[0] = str_arg("dense(M=1..12,N=40,K=24)");
    expect_error("dtune.dense", a, 5,
                 "dtune.dense: dense(M=1..12,N=40,K=24) has no bias: pass (key, X, W, Y)");
    memcpy(a, ok, sizeof a);
    expect_error("dtune.dense", a, 4,
                 "dense(M=1..12,N=40,K=24,epilogue=bias+gelu) adds a bias: pass (key, X, W, "
                 "bias, Y)");
    expect_error("dtune.dense", a, 1, "dtune.dense(key, X, W, [bias,] Y): 1 argument given");
    expect_error("dtune.batch_matmul", a, 5, "dtune.batch_matmul(key, A, B, C): 5 arguments");

    /* dims of 0 and negative dims */
    tensor_init(&x, X, 2, (int64_t[]){0, 24});
    expect_error("dtune.dense", a, 5, "X of shape (0, 24) has dim 0 of size 0; every dim must");
    tensor_init(&x, X, 2, (int64_t[]){-4, 24});
    expect_error("dtune.dense", a, 5, "X of shape (-4, 24) has dim 0 of size -4");
    int64_t neg_strides[2] = {24, 1};
    x.t.strides = neg_strides; /* the dims are checked before the strides */
    expect_error("dtune.dense", a, 5, "has dim 0 of size -4");
    x.t.strides = NULL;
    tensor_init(&x, X, 2, (int64_t[]){4, 24});
    x.t.shape = NULL;
    expect_error("dtune.dense", a, 5, "X has 2 dims but no shape");
    tensor_init(&x, X, 2, (int64_t[]){4, 24});
    x.t.ndim = -1;
    expect_error("dtune.dense", a, 5, "X has -1 dims, at least 1 expected");
    tensor_init(&x, X, 2, (int64_t[]){4, 24});

    /* dtypes by their names, lanes included */
    x.t.dtype.lanes = 4;
    expect_error("dtune.dense", a, 5, "X must be float32, not float32x4");
    x.t.dtype = (DLDataType){kDLBfloat, 16, 1};
    expect_error("dtune.dense", a, 5, "X must be float32, not bfloat16");
    x.t.dtype = (DLDataType){kDLFloat, 32, 1};

    /* a first element not aligned for a float */
    y.t.byte_offset = 2;
    expect_error("dtune.dense", a, 5, "Y's data + byte_offset (2) is not aligned to 4 bytes");
    y.t.byte_offset = 4; /* aligned: served, into Y[1..] */
    CU_ASSERT_EQUAL(call("dtune.dense", a, 5, NULL, NULL, 0), 0);
    y.t.byte_offset = 0;

    /* leading dims that differ but have the same product */
    tensor_init(&x, X, 3, (int64_t[]){4, 1, 24});
    tensor_init(&y, Y, 3, (int64_t[]){2, 2, 40});
    expect_error("dtune.dense", a, 5, "Y must be X's leading dims x N, X being (4, 1, 24)");
    tensor_init(&x, X, 3, (int64_t[]){1, 4, 24});
    tensor_init(&y, Y, 2, (int64_t[]){4, 40}); /* leading 1s aside: the same */
    CU_ASSERT_EQUAL(call("dtune.dense", a, 5, NULL, NULL, 0), 0);
    tensor_init(&x, X, 2, (int64_t[]){4, 24});
    tensor_init(&y, Y, 2, (int64_t[]){4, 40});
    tensor_init(&w, W, 3, (int64_t[]){40, 24, 1});
    expect_error("dtune.dense", a, 5,
                 "W must be N x K with K=24 (X's last dim); it is (40, 24, 1)");
    tensor_init(&w, W, 2, (int64_t[]){40, 24});
    tensor_init(&bias, b, 2, (int64_t[]){1, 40});
    expect_error("dtune.dense", a, 5, "bias must be (N,) = (40,) (W's first dim); it is (1, 40)");
    tensor_init(&bias, b, 1, (int64_t[]){40});

    /* batch_matmul: overflowing shapes, batches that differ in their dims */
    float *Q = random_floats(3 * 4 * 16, 1), *P = calloc(3 * 4 * 4, 4);
    tensor q, k, p;
    tensor_init(&q, Q, 3, (int64_t[]){T40, T40, 16});
    tensor_init(&k, Q, 3, (int64_t[]){3, 4, 16});
    tensor_init(&p, P, 3, (int64_t[]){3, 4, 4});
    TVMFFIAny c[4] = {str_arg(SCORES), tensor_arg(&q), tensor_arg(&k), tensor_arg(&p)};
    expect_error("dtune.batch_matmul", c, 4,
                 "A of shape (1099511627776, 1099511627776, 16) overflows");
    tensor_init(&q, Q, 4, (int64_t[]){(int64_t)1 << 32, (int64_t)1 << 32, 4, 16});
    expect_error("dtune.batch_matmul", c, 4,
                 "A of shape (4294967296, 4294967296, 4, 16) overflows");
    tensor_init(&q, Q, 3, (int64_t[]){3, 4, 16});
    tensor_init(&k, Q, 4, (int64_t[]){3, 1, 4, 16}); /* 3 x 1 batches against A's 3 */
    expect_error("dtune.batch_matmul", c, 4, "B must be 3 matrices of N x K with K=16, with A's "
                                             "leading dims (A is (3, 4, 16)); it is (3, 1, 4, 16)");
    tensor_init(&k, Q, 4, (int64_t[]){1, 3, 4, 16});
    tensor_init(&p, P, 4, (int64_t[]){3, 1, 4, 4});
    expect_error("dtune.batch_matmul", c, 4, "C must be 3 matrices of 4 x 4");
    tensor_init(&p, P, 4, (int64_t[]){1, 3, 4, 4});
    CU_ASSERT_EQUAL(call("dtune.batch_matmul", c, 4, NULL, NULL, 0), 0);

    /* keys: other spellings of one workload are served and counted as one
     * workload; a shared variable two tensors disagree on; a key whose
     * canonical form is too long for dtune */
    int64_t workloads = stat_of("workloads");
    memcpy(a, ok, sizeof a);
    a[0] = str_arg("dense(M=seq,N=40,K=24,epilogue=bias+gelu;seq=1..12)");
    CU_ASSERT_EQUAL(call("dtune.dense", a, 5, NULL, NULL, 0), 0);
    a[0] = str_arg("dense( K = 24, N = 40, M = {1,2,3,4,5,6,7,8,9,10,11,12}, "
                   "epilogue = bias+gelu )");
    CU_ASSERT_EQUAL(call("dtune.dense", a, 5, NULL, NULL, 0), 0);
    CU_ASSERT_EQUAL(stat_of("workloads"), workloads);
    a[0] = str_arg("dense(M=m,N=m,K=24;m=1..12)");
    expect_error("dtune.dense", a, 4, "X and W give M=4 and N=40, but dense(M=m,N=m,K=24;m=1..12) "
                                      "has M and N both the variable m");
    char *longkey = malloc(4096);
    size_t ll = (size_t)sprintf(longkey, "dense(M={");
    for (int i = 1; i < 300; i++) /* 299 values, no progression: printed as they are */
        ll += (size_t)sprintf(longkey + ll, "%d,", 3 * i + (i & 1));
    sprintf(longkey + ll - 1, "},N=40,K=24,epilogue=bias+gelu)");
    a[0] = str_arg(longkey);
    expect_error("dtune.dense", a, 5, "bytes long in canonical form, more than dtune's limit of "
                                      "1023");
    free(longkey);

    /* tensor objects and pointers that are NULL */
    memcpy(a, ok, sizeof a);
    a[2] = (TVMFFIAny){.type_index = kTVMFFITensor, .v_obj = NULL};
    expect_error("dtune.dense", a, 5, "W is a NULL tensor");
    a[2] = (TVMFFIAny){.type_index = kTVMFFIDLTensorPtr, .v_ptr = NULL};
    expect_error("dtune.dense", a, 5, "W is a NULL tensor");
    free(X), free(W), free(b), free(Y), free(Q), free(P);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"dense with bias+GELU at every seq and beyond", test_dense},
        {"attention's batch matmuls (NT, NN) at every seq", test_batch_matmul},
        {"the tuner's compiled kernels are loaded, not rebuilt", test_kernels_not_rebuilt},
        {"a weight tensor is packed once", test_packed_once},
        {"bad calls raise TVM errors with their reason", test_errors},
        {"hostile arguments raise TVM errors with their reason", test_errors_hostile},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"tvm_client", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}

#endif
