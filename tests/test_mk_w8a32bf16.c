/* microkernel/, dtype w8a32_bf16 — `math=bf16` on a w8a32 (weight-only
 * int8) dense workload (issue 29, point 7; dtype_w8a32bf16.c,
 * op_dense_w8a32.c, template/types_w8a32bf16.h, the w8a32_bf16 rows of
 * backends/backend.c): X and Y f32, W s8 with per-output-channel scales as
 * w8a32 takes them, each weight dequantized and rounded to bf16 when
 * packed (bf16(scale_b[n]·w)), X when a kernel is called, f32_bf16's
 * (that is bf16's) kernels.
 *   - every back-end row (portable generic and avx2, avx512_bf16 where the
 *     CPU has it, the AMX tiles emulated wherever AVX-512 runs and natively
 *     where usable) and annotations sampled for the dtype, both sketches,
 *     every epilogue, verified on the boundary shapes at 1 and 2 threads
 *     against the f64 reference of the rounded operands;
 *   - the packed weights are bf16(scale_b[n]·w) bit for bit (Y = X·Wᵀ with
 *     X one-hot), and a NULL, zero or NaN scale is refused by the checked
 *     packing;
 *   - the key: dtype=w8a32,math=bf16 round trip; the loader binds these
 *     kernels to this dtype, not to f32_bf16 whose entry points they carry;
 *   - end to end: `dtune bench --verify` (oneDNN's bf16 peer beside the f32
 *     ones), `dtune tune` + `dtune query`, `dtune import --math bf16` on a
 *     weight-only int8 ONNX model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "common/target.h"
#include "microkernel/build.h"
#include "microkernel/loader.h"
#include "microkernel/mk_op.h"
#include "microkernel/operands.h"
#include "backends/backend.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

static char *g_dir;
static dt_builder g_b;     /* -Wall -Wextra -Werror: kernels build warning-free */
static dt_builder g_emu_b; /* the same on the AMX tile emulation */
static dt_target g_target; /* this machine */
static dt_target g_amx;    /* this machine told it has AMX tiles (for the emulation) */

static int setup(void)
{
    if (dt_test_kernel_setup(&g_dir, &g_target, &g_b,
                             DT_BUILD_DEFAULT_FLAGS " -Wall -Wextra -Werror"))
        return 1;
    dt_test_amx_emulation(&g_b, &g_target, &g_emu_b, &g_amx);
    return 0;
}

static int teardown(void) { return dt_test_kernel_teardown(&g_dir); }

static const char *const g_ops[] = {
    "dense(M=1..8,N=64,K=64,dtype=w8a32,math=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=bias,dtype=w8a32,math=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=relu,dtype=w8a32,math=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+gelu,dtype=w8a32,math=bf16)",
};
#define N_OPS ((int)(sizeof g_ops / sizeof g_ops[0]))

/* Annotations sampled for the dtype on this machine (the rows the tuner
 * searches here), both sketches, every epilogue in turn. */
static void test_sampled_dtype(void)
{
    dt_test_verify_dtype_sampled(DT_DTYPE_W8A32_BF16, g_ops, N_OPS, 6, 20261128, &g_b, &g_target);
}

/* Every row of the dtype by itself: its annotations, both sketches — five
 * rows since issue 44 added avx512_fma (bf16 widened on AVX-512 FMA). */
static void test_every_row(void)
{
    /* portable-generic, portable-avx2, avx512_bf16, amx, avx512_fma */
    CU_ASSERT_EQUAL(dt_test_verify_dtype_rows(DT_DTYPE_W8A32_BF16, g_ops, N_OPS, 4, 8100, &g_b,
                                              &g_emu_b, &g_target, &g_amx, NULL), 5);
}

/* The packed weights are bf16(scale_b[n]·w), bit for bit: X one-hot in
 * column k0 makes Y[i][n] the weight W[n][k0] as the kernel multiplies it.
 * Every vector row of this machine and the tiles (emulated); also the
 * checked packing's refusals, and the loader's binding. */
static void test_packed_weights(void)
{
    enum { M = 4, N = 48, K = 40 };
    static float X[M * K], Y[M * N], scale[N];
    static int8_t W[N * K];
    for (int n = 0; n < N; n++) {
        scale[n] = 0.0007f + 0.00031f * (float)n; /* products that need rounding */
        for (int k = 0; k < K; k++)
            W[n * K + k] = (int8_t)((n * 37 + k * 11) % 255 - 127);
    }
    const dt_kernel_op kop = dt_test_kop("dense(M=1..4,N=48,K=40,dtype=w8a32,math=bf16)");
    dt_kernel_op kops[8];
    dt_annotation anns[8];
    int n = 0;
    dt_rng rng;
    dt_rng_seed(&rng, 77);
    for (int i = 0; i < dt_backend_count() && n < 8; i++) {
        const dt_backend *be = dt_backend_at(i);
        if (be->dtype != DT_DTYPE_W8A32_BF16 || !dt_backend_isa_admits(&g_target, be->isa) ||
            (be->unit == DT_UNIT_VEC && !dt_backend_usable(be, &g_target, NULL)))
            continue;
        dt_target t = be->unit == DT_UNIT_AMX ? g_amx : g_target;
        dt_target_set_isa(&t, be->isa);
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample_unit(&rng, &t, be->unit, DT_SKETCH_BLOCKED, 1,
                                                        &anns[n], &e), 0);
        kops[n++] = kop;
    }
    dt_kernel ks[8];
    memset(ks, 0, sizeof ks);
    CU_ASSERT_EQUAL(dt_test_build_load(&g_emu_b, kops, anns, n, ks), n);
    dt_gemm g;
    CU_ASSERT_EQUAL_FATAL(dt_kernel_op_gemm(&kop, &g, NULL), 0);
    g.batch = 1, g.M = M, g.N = N, g.K = K;
    for (int r = 0; r < n; r++) {
        if (!ks[r].handle)
            continue;
        /* the loader binds the kernel to w8a32_bf16, not f32_bf16 */
        CU_ASSERT_TRUE(dt_kernel_computes(&ks[r], &kop));
        void *packed = dt_alloc64(dt_kernel_packed_size(&ks[r], DT_GEMM_NK(N, K)) + 64);
        CU_ASSERT_PTR_NOT_NULL_FATAL(packed);
        dt_err e;
        CU_ASSERT_EQUAL(dt_kernel_pack_checked(&ks[r], DT_GEMM_NK(N, K), W, NULL, packed, &e), DT_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "scale_b is NULL"));
        float keep = scale[5];
        scale[5] = 0.0f;
        CU_ASSERT_EQUAL(dt_kernel_pack_checked(&ks[r], DT_GEMM_NK(N, K), W, scale, packed, &e), DT_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "scale_b[5]"));
        scale[5] = NAN;
        CU_ASSERT_EQUAL(dt_kernel_pack_checked(&ks[r], DT_GEMM_NK(N, K), W, scale, packed, &e), DT_EINVAL);
        scale[5] = keep;
        CU_ASSERT_EQUAL_FATAL(dt_kernel_pack_checked(&ks[r], DT_GEMM_NK(N, K), W, scale, packed, &e), 0);
        int bad = 0;
        for (int k0 = 0; k0 < K; k0 += 13) {
            memset(X, 0, sizeof X);
            for (int i = 0; i < M; i++)
                X[i * K + k0] = 1.0f;
            dt_gemm_args a = dt_gemm_args_contiguous(&g, X, packed, NULL, Y, 1);
            dt_kernel_run(&ks[r], &a);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    float want = dt_bf16_to_f32(dt_bf16_from_f32(scale[j] * (float)W[j * K + k0]));
                    if (memcmp(&Y[i * N + j], &want, sizeof want) != 0 && bad++ < 3)
                        fprintf(stderr, "\n  k%d: Y[%d][%d] = %a, want %a (k0 %d)", r, i, j,
                                (double)Y[i * N + j], (double)want, k0);
                }
        }
        CU_ASSERT_EQUAL(bad, 0);
        free(packed);
    }
    dt_test_unload_all(ks, n);
}

/* dtype=w8a32,math=bf16 in keys: parsed into w8a32_bf16, printed back. */
static void test_key(void)
{
    static const char *const in[] = {
        "dense(M=1..128,N=768,K=768,dtype=w8a32,math=bf16)",
        "dense(M=1..128,N=768,K=768,math=bf16,dtype=w8a32)",
        "dense(M=1..128,N=768,K=768,dtype=w8a32_bf16)",
        "dense(M=1..128,N=768,K=768,dtype=w8a32_bf16,math=bf16)",
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        dt_workload *w = NULL;
        dt_err e;
        int rc = dt_workload_parse_key(in[i], &w, &e);
        if (rc)
            fprintf(stderr, "\n  %s: %s\n", in[i], e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL(w->dtype, DT_DTYPE_W8A32_BF16);
        char key[512];
        CU_ASSERT(dt_workload_key(w, key, sizeof key) < sizeof key);
        CU_ASSERT_STRING_EQUAL(key, "dense(M=1..128,N=768,K=768,dtype=w8a32,math=bf16)");
        dt_workload_free(w);
    }
    CU_ASSERT_EQUAL(dt_dtype_storage(DT_DTYPE_W8A32_BF16), DT_DTYPE_W8A32);
    CU_ASSERT_STRING_EQUAL(dt_dtype_math(DT_DTYPE_W8A32_BF16), "bf16");
    CU_ASSERT_TRUE(dt_dtype_quantized(DT_DTYPE_W8A32_BF16)); /* its pack takes scale_b */
    dt_workload *w = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(dt_workload_parse_key("dense(M=1..8,N=8,K=8,dtype=int8,math=bf16)", &w, &e),
                    DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "math=bf16 takes f32 and w8a32"));
}

/* ---- end to end ----------------------------------------------------------- */

static void test_e2e_bench(void)
{
    dt_test_proc p;
    int code = dt_test_run_dtune(&p, "bench 'dense(M=1..16,N=32,K=40,epilogue=bias,dtype=w8a32,"
                                     "math=bf16)' --sample 3 --shapes '{1,5,16}' --threads 1 "
                                     "--repeats 1 --min-time 0.1 --verify --json");
    CU_ASSERT_EQUAL(code, 0);
    if (code)
        fprintf(stderr, "\n  bench: exit %d: %s\n", code, p.err);
    json_error_t jerr;
    json_t *r = code == 0 ? json_loads(p.out, 0, &jerr) : NULL;
    CU_ASSERT_PTR_NOT_NULL(r);
    if (r) {
        size_t i;
        json_t *c;
        int kernels = 0, onednn = 0, onednn_bf16 = 0;
        json_array_foreach(json_object_get(r, "candidates"), i, c)
        {
            /* every kernel and peer verified against the rounded operands */
            CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "status")), "ok");
            const char *be = json_string_value(json_object_get(c, "backend"));
            const char *name = json_string_value(json_object_get(c, "name"));
            kernels += be && strncmp(be, "w8a32_bf16/", 11) == 0;
            onednn += name && strcmp(name, "onednn") == 0;
            onednn_bf16 += name && strcmp(name, "onednn_bf16") == 0;
        }
        CU_ASSERT_EQUAL(kernels, 3);
        CU_ASSERT_EQUAL(onednn_bf16, onednn);
        if (!onednn)
            dt_test_skip("oneDNN is not built in: no oneDNN peers for w8a32 math=bf16");
        json_decref(r);
    }
    dt_test_proc_free(&p);
}

static void test_e2e_tune_import(void)
{
    char *dir = dt_test_tmpdir();
    char args[1024];
    snprintf(args, sizeof args,
             "tune 'dense(M=1..8,N=32,K=32,dtype=w8a32)' --math bf16 --db '%s/t.db' --trials 8 "
             "--threads 1 --min-time 0.2 --json", dir);
    int code;
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    if (t) {
        json_t *w = json_array_get(json_object_get(t, "workloads"), 0);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(w, "workload")),
                               "dense(M=1..8,N=32,K=32,dtype=w8a32,math=bf16)");
        json_decref(t);
    }
    dt_test_proc p;
    code = dt_test_run_dtune(&p, "query 'dense(M=1..8,N=32,K=32,dtype=w8a32,math=bf16)' --db "
                                 "'%s/t.db' --shape M=3", dir);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "w8a32_bf16/"));
    dt_test_proc_free(&p);
    /* a weight-only int8 ONNX model: its w8a32 dense ops take bf16 math */
    code = dt_test_run_dtune(&p, "import '" DTUNE_SOURCE_DIR "/tests/data/onnx/w8a32-torch.onnx' "
                                 "--var batch=1 --var seq=1..8 --math bf16");
    if (code)
        fprintf(stderr, "\n  import: exit %d: %s\n", code, p.err);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "\"dtype\": \"w8a32_bf16\""));
    CU_ASSERT_PTR_NULL(strstr(p.out, "\"dtype\": \"w8a32\""));
    dt_test_proc_free(&p);
    dt_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"sampled for the dtype: every row this CPU searches", test_sampled_dtype},
        {"every row, both sketches (AMX emulated and native)", test_every_row},
        {"packed weights are bf16(scale_b[n]*w), bit for bit; bad scales refused",
         test_packed_weights},
        {"dtype=w8a32,math=bf16 in keys", test_key},
        {"dtune bench on a w8a32 math=bf16 key", test_e2e_bench},
        {"dtune tune --math bf16, query, import --math bf16", test_e2e_tune_import},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"mk_w8a32bf16", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
