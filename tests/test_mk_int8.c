/* The int8 micro-kernels (u8 activations × s8 weights, s32 accumulation,
 * dequantized f32 output; microkernel/dtype_int8.c, template/types_int8.h):
 * random annotations for every sketch × back-end (portable always, native
 * when this CPU has avx512_vnni) verified against the double reference on
 * every boundary case and epilogue; a bit-exact check against an integer
 * reference; scales and zero points at their extremes; the native kernel's
 * fallbacks for a compiler without avx512_vnni / avx512bw; the hooks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "common/mem.h"
#include "common/target.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "microkernel/mk_op.h"
#include "microkernel/reference.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

static char *g_dir;
static dt_builder g_builder;
static dt_target g_target;
static int g_native; /* this CPU runs int8 natively (avx512_vnni) */
static const char *g_native_why = "no native int8 here"; /* why not, when not */

static int setup(void)
{
    if (dt_test_kernel_setup(&g_dir, &g_target, &g_builder, NULL))
        return 1;
    const char *how;
    g_native = dt_dtype_native(DT_DTYPE_INT8, &g_target, &how) &&
               dt_dtype_target(DT_DTYPE_INT8, &g_target).isa == DT_ISA_AVX512;
    if (!g_native)
        g_native_why = how;
    /* generated kernels compile warning-free (the export tests' flags) */
    size_t len = strlen(g_builder.flags);
    snprintf(g_builder.flags + len, sizeof g_builder.flags - len, " -Wall -Wextra -Werror");
    return 0;
}

static int teardown(void) { return dt_test_kernel_teardown(&g_dir); }

static const char *const g_ops[] = {
    "dense(M=1..8,N=64,K=64,dtype=int8)",
    "dense(M=1..8,N=64,K=64,epilogue=bias,dtype=int8)",
    "dense(M=1..8,N=64,K=64,epilogue=relu,dtype=int8)",
    "dense(M=1..8,N=64,K=64,epilogue=gelu,dtype=int8)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+relu,dtype=int8)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+gelu,dtype=int8)",
};
#define N_OPS ((int)(sizeof g_ops / sizeof g_ops[0]))

/* The targets whose annotations select each back-end: the portable one
 * (generic, and avx2: the portable kernel with AVX2's vectors), and the
 * native one when this CPU runs int8 natively. */
static int backend_targets(dt_target *ts)
{
    int n = 0;
    dt_target t = g_target;
    dt_target_set_isa(&t, DT_ISA_GENERIC);
    ts[n++] = t;
    if (g_target.isa_max >= DT_ISA_AVX2) {
        t = g_target;
        dt_target_set_isa(&t, DT_ISA_AVX2);
        ts[n++] = t;
    }
    if (g_native)
        ts[n++] = dt_dtype_target(DT_DTYPE_INT8, &g_target);
    return n;
}

/* ---- verification against the double reference -------------------------- */

/* For every back-end and sketch: random annotations, each with an epilogue
 * in turn, so every epilogue meets every sketch × back-end. */
static void test_sketch_backend_matrix(void)
{
    enum { PER = 8 };
    dt_target ts[3];
    int nt = backend_targets(ts);
    dt_kernel_op kops[3 * DT_SKETCH_COUNT * PER];
    dt_annotation anns[3 * DT_SKETCH_COUNT * PER];
    int n = 0;
    dt_rng rng;
    dt_rng_seed(&rng, 8808);
    for (int b = 0; b < nt; b++)
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++)
            for (int i = 0; i < PER; i++) {
                dt_err e;
                CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &ts[b], sk, 0, &anns[n], &e), 0);
                CU_ASSERT_EQUAL(anns[n].isa, ts[b].isa);
                kops[n] = dt_test_kop(g_ops[(i + sk * 3 + b) % N_OPS]);
                n++;
            }
    dt_test_build_and_verify(&g_builder, kops, anns, n, NULL);
    dt_test_backend("int8 portable (generic vectors)", NULL);
    dt_test_backend("int8 portable (avx2 vectors)",
                    g_target.isa_max >= DT_ISA_AVX2 ? NULL : "no AVX2 on this CPU");
    dt_test_backend("int8 native (avx512_vnni)", g_native ? NULL : g_native_why);
}

/* Hand-picked corners on each back-end: the smallest tiles, scratch stores,
 * n_inner, unroll 8 with prefetch, every parallel axis, the smallest K block. */
static void test_corner_annotations(void)
{
    dt_target ts[3];
    int nt = backend_targets(ts);
    dt_kernel_op kops[3 * 6];
    dt_annotation anns[3 * 6];
    int n = 0;
    for (int b = 0; b < nt; b++) {
        dt_isa isa = ts[b].isa;
        int vl = dt_isa_vec_floats(isa);
        dt_annotation c[] = {
            {DT_SKETCH_BLOCKED, isa, 1, vl, 8, 1, vl, 1, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
            {DT_SKETCH_BLOCKED, isa, 3, 2 * vl, 16, 6, 4 * vl, 8, 4, DT_STORE_SCRATCH, DT_ORDER_N_INNER, DT_PAR_MN, 2, DT_UNIT_VEC},
            {DT_SKETCH_BLOCKED, isa, 4, vl, 8, 8, vl, 2, 1, DT_STORE_MASK, DT_ORDER_N_INNER, DT_PAR_M, 2, DT_UNIT_VEC},
            {DT_SKETCH_STREAM, isa, 1, vl, 0, 0, vl, 1, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_M, 2, DT_UNIT_VEC},
            {DT_SKETCH_STREAM, isa, 2, 3 * vl, 0, 0, 3 * vl, 4, 16, DT_STORE_SCRATCH, DT_ORDER_M_INNER, DT_PAR_MN, 2, DT_UNIT_VEC},
            {DT_SKETCH_STREAM, isa, 5, 2 * vl, 0, 0, 4 * vl, 8, 2, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 2, DT_UNIT_VEC},
        };
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            dt_err e;
            int rc = dt_annotation_validate(&c[i], &ts[b], &e);
            if (rc)
                fprintf(stderr, "\n  corner %zu: %s\n", i, e.msg);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            anns[n] = c[i];
            kops[n] = dt_test_kop(g_ops[(i + (size_t)b) % N_OPS]);
            n++;
        }
    }
    dt_test_build_and_verify(&g_builder, kops, anns, n, NULL);
}

/* ---- the integer reference: bit-exact ----------------------------------- */

static uint64_t xs(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Runs k on M×N×K: A u8 in [alo, ahi] (row stride K + 3, 0xA5 poison past
 * K), W s8 in [wlo, whi], scale_a, zp_a, scale_b (NULL: packs 1.0), bias
 * (may be NULL), into Y (row stride N + 2, guard past N); sums[M·N] gets
 * the int64 Σ (a − zp_a)·w.  Returns 0, or 1 when the kernel wrote past a
 * row's N outputs. */
static int run_int8(const dt_kernel *k, int64_t M, int64_t N, int64_t K, int alo, int ahi,
                    int wlo, int whi, float scale_a, int32_t zp_a, const float *scale_b,
                    const float *bias, int threads, uint64_t seed, float *Y, int64_t *sums)
{
    const int64_t lda = K + 3, ldy = N + 2;
    uint8_t *A = malloc((size_t)(M * lda));
    int8_t *W = malloc((size_t)(N * K));
    size_t psz = dt_kernel_packed_size(k, DT_GEMM_NK(N, K));
    void *packed = dt_alloc64(psz);
    CU_ASSERT_FATAL(A && W && packed);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
    memset(A, 0xA5, (size_t)(M * lda));
    for (int64_t i = 0; i < M; i++)
        for (int64_t kk = 0; kk < K; kk++)
            A[i * lda + kk] = (uint8_t)(alo + (int)(xs(&s) % (uint64_t)(ahi - alo + 1)));
    for (int64_t i = 0; i < N * K; i++)
        W[i] = (int8_t)(wlo + (int)(xs(&s) % (uint64_t)(whi - wlo + 1)));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            int64_t acc = 0;
            for (int64_t kk = 0; kk < K; kk++)
                acc += ((int64_t)A[i * lda + kk] - zp_a) * W[j * K + kk];
            sums[i * N + j] = acc;
        }
    for (int64_t i = 0; i < M * ldy; i++)
        Y[i] = -777.0f;
    dt_kernel_pack(k, DT_GEMM_NK(N, K), W, scale_b, packed);
    dt_gemm_args args = {.batch = 1, .M = M, .N = N, .K = K, .a = A, .lda = lda, .sa = M * lda,
                         .b = packed, .bias = bias, .c = Y, .ldc = ldy, .sc = M * ldy,
                         .threads = threads, .scale_a = scale_a, .zp_a = zp_a};
    dt_kernel_run(k, &args);
    int outside = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = N; j < ldy; j++)
            outside |= Y[i * ldy + j] != -777.0f;
    free(A);
    free(W);
    free(packed);
    return outside;
}

/* The shapes of the exact checks: boundaries of the tile, of K groups
 * (K % 4 = 1, 2, 3), of K blocks (K past 1 and 2 KC blocks: s32 partial
 * sums kept in C between blocks), M blocks. */
static int exact_cases(const dt_annotation *a, int64_t (*cases)[3])
{
    int64_t kc = a->kc > 0 ? a->kc : 64;
    int64_t mblk = a->mc > 0 ? a->mc : a->mr;
    int64_t c[][3] = {
        {1, 1, 1},
        {1, a->nr, 4},
        {a->mr, a->nr, kc},
        {a->mr > 1 ? a->mr - 1 : 1, a->nr + 3, 2 * kc + 1},
        {2 * mblk + 3, 2 * a->nr - 1, kc + 2},
        {7, 3 * a->nr + 5, 3 * kc + 3},
        {13, 17, 4 * a->unroll * 2 + 7},
    };
    memcpy(cases, c, sizeof c);
    return (int)(sizeof c / sizeof c[0]);
}

/* scale_a = 1, scale_b = 1, no bias: each output must equal the integer
 * Σ (a − zp_a)·w exactly (|Σ| < 2^24, so the float holds it); with relu,
 * max(Σ, 0) exactly. */
static int check_exact(const dt_kernel *k, const dt_annotation *a, int relu, const char *what)
{
    int64_t cases[8][3];
    int nc = exact_cases(a, cases);
    int bad = 0;
    static const int32_t zps[] = {0, 1, 128, 255};
    for (int t = 1; t <= 2 && !bad; t++)
        for (int c = 0; c < nc && !bad; c++) {
            int64_t M = cases[c][0], N = cases[c][1], K = cases[c][2];
            float *Y = malloc((size_t)(M * (N + 2)) * sizeof *Y);
            int64_t *sums = malloc((size_t)(M * N) * sizeof *sums);
            float *ones = malloc((size_t)N * sizeof *ones);
            CU_ASSERT_FATAL(Y && sums && ones);
            for (int64_t j = 0; j < N; j++)
                ones[j] = 1.0f;
            int32_t zp = zps[(c + t) % 4];
            /* the full u8 and s8 ranges; random signs keep |Σ| far below 2^24 (asserted) */
            int outside = run_int8(k, M, N, K, 0, 255, -128, 127, 1.0f, zp, c % 2 ? ones : NULL,
                                   NULL, t, 77 + (uint64_t)c, Y, sums);
            if (outside) {
                fprintf(stderr, "\n  %s: wrote past N at M=%lld N=%lld K=%lld\n", what,
                        (long long)M, (long long)N, (long long)K);
                bad = 1;
            }
            for (int64_t i = 0; i < M && !bad; i++)
                for (int64_t j = 0; j < N && !bad; j++) {
                    int64_t want = sums[i * N + j];
                    if (relu && want < 0)
                        want = 0;
                    CU_ASSERT_FATAL(llabs(want) < (1 << 24));
                    if (Y[i * (N + 2) + j] != (float)want) {
                        fprintf(stderr,
                                "\n  %s: not exact at [%lld,%lld] of M=%lld N=%lld K=%lld zp=%d "
                                "threads=%d: got %.9g, want %lld\n",
                                what, (long long)i, (long long)j, (long long)M, (long long)N,
                                (long long)K, zp, t, Y[i * (N + 2) + j], (long long)want);
                        bad = 1;
                    }
                }
            free(Y);
            free(sums);
            free(ones);
        }
    return bad;
}

static void exact_annotations(dt_kernel_op *kops, dt_annotation *anns, int *n, int per)
{
    dt_target ts[3];
    int nt = backend_targets(ts);
    dt_rng rng;
    dt_rng_seed(&rng, 4242);
    for (int b = 0; b < nt; b++)
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++)
            for (int i = 0; i < per; i++) {
                dt_err e;
                CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &ts[b], sk, 0, &anns[*n], &e),
                                      0);
                /* small K blocks: several blocks of partial sums */
                if (sk == DT_SKETCH_BLOCKED && i == 0)
                    anns[*n].kc = 8;
                kops[*n] = dt_test_kop(g_ops[i % 2 ? 2 : 0]); /* none, relu */
                (*n)++;
            }
}

/* The label of check_exact_kernel's messages: the dtype, or the extra
 * compiler flags of test_native_fallbacks' builds. */
static const char *g_exact_label = "int8";

/* check_exact as a dt_test_build_and_verify check. */
static int check_exact_kernel(const dt_kernel *k, const dt_kernel_op *kop, const dt_annotation *a,
                              dt_err *e)
{
    dt_gemm g;
    if (dt_kernel_op_gemm(kop, &g, e) != 0)
        return e->code;
    char *ann = dt_annotation_to_string(a);
    char what[600];
    snprintf(what, sizeof what, "%s %s", g_exact_label, ann);
    free(ann);
    if (check_exact(k, a, g.act == DT_ACT_RELU, what))
        return dt_errf(e, DT_EINVAL, "%s: not bit-exact (details above)", g_exact_label);
    return 0;
}

static void test_bit_exact(void)
{
    enum { PER = 4 };
    dt_kernel_op kops[3 * DT_SKETCH_COUNT * PER];
    dt_annotation anns[3 * DT_SKETCH_COUNT * PER];
    int n = 0;
    exact_annotations(kops, anns, &n, PER);
    g_exact_label = "int8";
    dt_test_build_and_verify(&g_builder, kops, anns, n, check_exact_kernel);
}

/* The native kernel built by a compiler told the CPU has no avx512_vnni
 * (an export for another machine): vpdpbusd's sums by vpmaddwd, then also
 * without avx512bw (256-bit halves) — still bit-exact, and verified. */
static void test_native_fallbacks(void)
{
    if (!g_native) {
        dt_test_skip("the native int8 kernel's fallbacks: no native int8 back-end here");
        return;
    }
    static const char *const extra[] = {"-mno-avx512vnni", "-mno-avx512vnni -mno-avx512bw"};
    for (size_t f = 0; f < sizeof extra / sizeof extra[0]; f++) {
        dt_builder b = g_builder;
        snprintf(b.flags, sizeof b.flags, "%.400s %s", g_builder.flags, extra[f]);
        dt_target t = dt_dtype_target(DT_DTYPE_INT8, &g_target);
        dt_rng rng;
        dt_rng_seed(&rng, 31 + f);
        dt_kernel_op kops[4];
        dt_annotation anns[4];
        for (int i = 0; i < 4; i++) {
            dt_err e;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, i % 2, 0, &anns[i], &e), 0);
            kops[i] = dt_test_kop(g_ops[i < 2 ? 0 : 5]);
        }
        g_exact_label = extra[f];
        dt_test_build_and_verify(&b, kops, anns, 2, check_exact_kernel);
        dt_test_build_and_verify(&b, kops + 2, anns + 2, 2, NULL);
        /* the source selects the fallback by the compiler's macros */
        char *src = NULL;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_codegen(&kops[0], &anns[0], &src, &e), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(src, "#if defined(__AVX512VNNI__)"));
        free(src);
    }
}

/* ---- scales, zero points, extremes ---------------------------------------- */

/* Against an independent double computation of act(scale_a·scale_b[n]·Σ +
 * bias[n]) within the int8 tolerance: scale_a from tiny to large, zp_a at
 * 0 and 255, A and W at their extremes (255·(-128) products: no saturation
 * anywhere), per-column scales spanning four decades, negative ones too. */
static void test_scales_and_extremes(void)
{
    dt_target ts[3];
    int nt = backend_targets(ts);
    dt_kernel_op kops[3 * 2];
    dt_annotation anns[3 * 2];
    int n = 0;
    dt_rng rng;
    dt_rng_seed(&rng, 555);
    for (int b = 0; b < nt; b++)
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++) {
            dt_err e;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &ts[b], sk, 0, &anns[n], &e), 0);
            if (sk == DT_SKETCH_BLOCKED)
                anns[n].kc = 16;
            kops[n] = dt_test_kop(g_ops[b % 2 ? 5 : 4]); /* bias+gelu, bias+relu */
            n++;
        }
    dt_kernel ks[3 * 2];
    dt_test_build_load(&g_builder, kops, anns, n, ks);
    static const struct {
        float scale_a;
        int32_t zp;
        int alo, ahi, wlo, whi;
    } cfg[] = {
        {1e-3f, 0, 0, 255, -128, 127},
        {0.75f, 255, 0, 255, -128, 127},
        {3.0f, 128, 255, 255, -128, -128}, /* every product 255·(-128) */
        {0.05f, 7, 0, 0, 127, 127},        /* a = 0 < zp: negative terms only */
        {2e-2f, 100, 200, 255, -5, 5},
    };
    const int64_t M = 11, N = 45, K = 301;
    for (int i = 0; i < n; i++) {
        if (!ks[i].handle)
            continue;
        dt_gemm g;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_kernel_op_gemm(&kops[i], &g, &e), 0);
        for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
            float *Y = malloc((size_t)(M * (N + 2)) * sizeof *Y);
            int64_t *sums = malloc((size_t)(M * N) * sizeof *sums);
            float *sb = malloc((size_t)N * sizeof *sb), *bias = malloc((size_t)N * sizeof *bias);
            double *ref = malloc((size_t)(M * N) * sizeof *ref);
            double *mag = malloc((size_t)(M * N) * sizeof *mag);
            CU_ASSERT_FATAL(Y && sums && sb && bias && ref && mag);
            for (int64_t j = 0; j < N; j++) {
                sb[j] = (float)(pow(10.0, -(double)(j % 4) - 2.0) * (j % 3 == 2 ? -1.7 : 1.3));
                bias[j] = (float)((double)((j * 37) % 21) / 10.0 - 1.0);
            }
            int outside = run_int8(&ks[i], M, N, K, cfg[c].alo, cfg[c].ahi, cfg[c].wlo,
                                   cfg[c].whi, cfg[c].scale_a, cfg[c].zp, sb, bias, 1 + (int)c % 2,
                                   900 + c, Y, sums);
            CU_ASSERT_FALSE(outside);
            for (int64_t r = 0; r < M; r++)
                for (int64_t j = 0; j < N; j++) {
                    double cs = (double)cfg[c].scale_a * (double)sb[j];
                    double v = cs * (double)sums[r * N + j] + bias[j];
                    ref[r * N + j] = dt_ref_act(v, g.act);
                    /* the s32 sum is exact: the magnitude is the scaled sum's */
                    mag[r * N + j] = fabs(cs * (double)sums[r * N + j]) + fabs(bias[j]);
                }
            int rc = dt_check_close_tol(Y, N + 2, ref, mag, M, N,
                                        dt_ref_tol_k(DT_DTYPE_INT8, K), &e);
            if (rc) {
                char *ann = dt_annotation_to_string(&anns[i]);
                fprintf(stderr, "\n  config %zu, %s: %s\n", c, ann, e.msg);
                free(ann);
            }
            CU_ASSERT_EQUAL(rc, 0);
            free(Y);
            free(sums);
            free(sb);
            free(bias);
            free(ref);
            free(mag);
        }
    }
    dt_test_unload_all(ks, n);
}

/* ---- the hooks ------------------------------------------------------------- */

/* (dense, int8) has hooks of its own: the int8 back-end, packing, suffixed
 * entry points; its sources carry only its own op block and the int8 types;
 * a built kernel binds to int8 dense, not to f32 dense, and packs to
 * panels + colsum + scale_b. */
static void test_hooks(void)
{
    const dt_op_desc *dense = dt_op_find("dense");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dense);
    const dt_mk_op *m = dt_mk_op_find(dense, DT_DTYPE_INT8);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(m->backend->dtype, DT_DTYPE_INT8);
    CU_ASSERT_EQUAL(m->group, 0);
    CU_ASSERT_PTR_NOT_NULL(m->pack);
    CU_ASSERT_PTR_NOT_NULL(m->packed_size);
    CU_ASSERT_EQUAL(m->nsyms, 3);
    CU_ASSERT_STRING_EQUAL(m->syms[0], "dtk_dense_u8s8");
    CU_ASSERT_STRING_EQUAL(m->syms[1], "dtk_pack_u8s8");
    CU_ASSERT_STRING_EQUAL(m->syms[2], "dtk_packed_size_u8s8");
    for (int i = 0; i < dt_mk_op_count(); i++) {
        const dt_mk_op *o = dt_mk_op_at(i);
        if (o == m)
            continue;
        int same = o->nsyms == m->nsyms;
        for (int s = 0; same && s < m->nsyms; s++)
            same = strcmp(o->syms[s], m->syms[s]) == 0;
        CU_ASSERT_FALSE(same);
    }

    dt_target ts[3];
    int nt = backend_targets(ts);
    dt_kernel_op kop = dt_test_kop(g_ops[5]), f32 = dt_test_kop("dense(M=1..8,N=64,K=64,epilogue=bias+gelu)");
    CU_ASSERT_EQUAL(kop.dtype, DT_DTYPE_INT8);
    dt_annotation anns[3];
    dt_kernel_op kops[3];
    for (int b = 0; b < nt; b++) {
        dt_rng rng;
        dt_rng_seed(&rng, 17);
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &ts[b], -1, 1, &anns[b], &e), 0);
        kops[b] = kop;
        char *src = NULL;
        CU_ASSERT_EQUAL_FATAL(dt_codegen(&kop, &anns[b], &src, &e), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(src, "#define DT_OP_DENSE 1\n"));
        CU_ASSERT_PTR_NULL(strstr(src, "DT_OP_BMM"));
        CU_ASSERT_PTR_NOT_NULL(strstr(src, "int8 element types"));
        CU_ASSERT_PTR_NOT_NULL(strstr(src, "dtype=int8; "));
        /* native: vpdpbusd on 32-bit quads; portable: KG 1 widened loads */
        int native = anns[b].isa == DT_ISA_AVX512;
        CU_ASSERT_EQUAL(strstr(src, "DT_DPBUSD(c0_0") != NULL, native);
        CU_ASSERT_EQUAL(strstr(src, "BLOAD8(b") != NULL, !native);
        free(src);
    }
    dt_kernel ks[3];
    dt_test_build_load(&g_builder, kops, anns, nt, ks);
    for (int b = 0; b < nt; b++) {
        if (!ks[b].handle)
            continue;
        CU_ASSERT_PTR_EQUAL(ks[b].op, m);
        CU_ASSERT_TRUE(dt_kernel_computes(&ks[b], &kop));
        CU_ASSERT_FALSE(dt_kernel_computes(&ks[b], &f32));
        dt_err e;
        CU_ASSERT_EQUAL(dt_verify_kernel(&ks[b], &f32, 1, 3, 5, 7, 1, 1, &e), DT_EINVAL);
        /* panels [strip][K rounded up to KG][NR], then colsum and scale_b */
        int kg = anns[b].isa == DT_ISA_AVX512 ? 4 : 1;
        int64_t N = 37, K = 9, strips = (N + anns[b].nr - 1) / anns[b].nr;
        int64_t kp = (K + kg - 1) / kg * kg;
        size_t want = (size_t)(strips * anns[b].nr * kp) + (size_t)(strips * anns[b].nr) * 8;
        CU_ASSERT_EQUAL(dt_kernel_packed_size(&ks[b], DT_GEMM_NK(N, K)), want);
        CU_ASSERT_EQUAL(dt_mk_packed_bytes(m, &anns[b], N, K), want); /* known without a build */
        int8_t W[37 * 9];
        float sb[37];
        for (int j = 0; j < 37; j++) {
            sb[j] = 0.5f + (float)j;
            for (int k = 0; k < 9; k++)
                W[j * 9 + k] = (int8_t)((j * 7 + k * 13) % 255 - 127);
        }
        unsigned char *p = malloc(want);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        dt_kernel_pack(&ks[b], DT_GEMM_NK(N, K), W, sb, p);
        const unsigned char *tail = p + (size_t)(strips * anns[b].nr * kp);
        int64_t np = strips * anns[b].nr;
        for (int64_t j = 0; j < np; j++) {
            int32_t cs;
            float s;
            memcpy(&cs, tail + j * 4, 4);
            memcpy(&s, tail + np * 4 + j * 4, 4);
            int32_t want_cs = 0;
            for (int k = 0; j < N && k < K; k++)
                want_cs += W[j * K + k];
            CU_ASSERT_EQUAL(cs, want_cs);
            CU_ASSERT_EQUAL(s, j < N ? sb[j] : 0.0f);
        }
        /* the panel element (k, column j) of strip 0 */
        for (int64_t k = 0; k < kp; k++)
            for (int64_t j = 0; j < anns[b].nr; j++) {
                int8_t got = (int8_t)p[(k / kg * anns[b].nr + j) * kg + k % kg];
                CU_ASSERT_EQUAL(got, j < N && k < K ? W[j * K + k] : 0);
            }
        free(p);
    }
    dt_test_unload_all(ks, nt);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"every sketch x back-end, random annotations, verified", test_sketch_backend_matrix},
        {"corner annotations verified", test_corner_annotations},
        {"bit-exact against the integer reference", test_bit_exact},
        {"scales, zero points and extreme values", test_scales_and_extremes},
        {"native kernels without avx512_vnni / avx512bw", test_native_fallbacks},
        {"the int8 dense hooks", test_hooks},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"mk_int8", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
