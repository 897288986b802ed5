/* The separate epilogue pass of the peers that cannot fuse it
 * (peers/peer_internal.h): Y += bias, then ReLU, GELU, ReLU6 or HardSwish.
 *
 * The activations are the micro-kernels' own code — microkernel/template/
 * act.h, the text every generated kernel embeds — included here once per
 * instruction set, so both sides pay for the same arithmetic (GELU: erf by
 * Abramowitz–Stegun 7.1.26, |error| <= 1.5e-7; exp by range reduction and a
 * degree-6 polynomial) and there is one GELU polynomial.  act.h is written
 * over the vector types vf/vx/vi and defines dt_act (and dt_exp_neg) for
 * DT_ACT 1 (ReLU), 2 (GELU), 3 (ReLU6) or 4 (HardSwish);
 * peers/epilogue_variant.h renames them.  Three
 * variants, picked once for this CPU: AVX-512 (16-float vectors), AVX2
 * (two 8-float vectors per 16 floats), baseline x86-64 (four 4-float
 * vectors), each vector as wide as its instruction set, so no function
 * passes a vector its target cannot hold in a register (the psABI). */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "peers/peer_internal.h"

/* The three variants' relu_W / gelu_W on W-float vectors, each compiled
 * for its ISA (peers/epilogue_variant.h). */
typedef float vf16 __attribute__((vector_size(64)));
typedef int32_t vi16 __attribute__((vector_size(64)));
#define EPI_VF vf16
#define EPI_VI vi16
#define EPI_TARGET __attribute__((target("avx512f")))
#define EPI_RELU relu_16
#define EPI_GELU gelu_16
#define EPI_RELU6 relu6_16
#define EPI_HSWISH hswish_16
#define EPI_CLAMP6 clamp6_16
#define EPI_CLAMP6H clamp6h_16
#define EPI_EXP exp_neg_16
#define EPI_RECIP recip_16
#define EPI_EXP_POLY exp_poly_16
#include "peers/epilogue_variant.h"

typedef float vf8 __attribute__((vector_size(32)));
typedef int32_t vi8 __attribute__((vector_size(32)));
#define EPI_VF vf8
#define EPI_VI vi8
#define EPI_TARGET __attribute__((target("avx2")))
#define EPI_RELU relu_8
#define EPI_GELU gelu_8
#define EPI_RELU6 relu6_8
#define EPI_HSWISH hswish_8
#define EPI_CLAMP6 clamp6_8
#define EPI_CLAMP6H clamp6h_8
#define EPI_EXP exp_neg_8
#define EPI_RECIP recip_8
#define EPI_EXP_POLY exp_poly_8
#include "peers/epilogue_variant.h"

typedef float vf4 __attribute__((vector_size(16)));
typedef int32_t vi4 __attribute__((vector_size(16)));
#define EPI_VF vf4
#define EPI_VI vi4
#define EPI_TARGET
#define EPI_RELU relu_4
#define EPI_GELU gelu_4
#define EPI_RELU6 relu6_4
#define EPI_HSWISH hswish_4
#define EPI_CLAMP6 clamp6_4
#define EPI_CLAMP6H clamp6h_4
#define EPI_EXP exp_neg_4
#define EPI_RECIP recip_4
#define EPI_EXP_POLY exp_poly_4
#include "peers/epilogue_variant.h"

/* y[0..15] = act(y[0..15] + bias[0..15]) as n vectors of 16/n floats, the
 * activations of variant w (relu_w, gelu_w, relu6_w, hswish_w): a macro,
 * so each variant's vectors stay inside its own function. */
#define EPI16(T, n, w)                                                          \
    do {                                                                        \
        for (int q = 0; q < (n); q++) {                                         \
            T v;                                                                \
            memcpy(&v, y + q * (16 / (n)), sizeof v);                           \
            if (bias) {                                                         \
                T b;                                                            \
                memcpy(&b, bias + q * (16 / (n)), sizeof b);                    \
                v += b;                                                         \
            }                                                                   \
            if (act == DT_PEER_ACT_RELU)                                        \
                v = relu_##w(v);                                                \
            else if (act == DT_PEER_ACT_GELU)                                   \
                v = gelu_##w(v);                                                \
            else if (act == DT_PEER_ACT_RELU6)                                  \
                v = relu6_##w(v);                                               \
            else if (act == DT_PEER_ACT_HARDSWISH)                              \
                v = hswish_##w(v);                                              \
            memcpy(y + q * (16 / (n)), &v, sizeof v);                           \
        }                                                                       \
    } while (0)

/* One row of n floats; the tail through zero-padded copies. */
#define EPI_ROW(name, tgt, T, nv, w)                                            \
    tgt static void name(float *row, int64_t n, const float *brow, dt_peer_act act) \
    {                                                                           \
        int64_t j = 0;                                                          \
        for (; j + 16 <= n; j += 16) {                                          \
            float *y = row + j;                                                 \
            const float *bias = brow ? brow + j : NULL;                         \
            EPI16(T, nv, w);                                                    \
        }                                                                       \
        if (j < n) {                                                            \
            size_t rest = (size_t)(n - j) * sizeof(float);                      \
            float yt[16] = {0}, bt[16] = {0};                                   \
            memcpy(yt, row + j, rest);                                          \
            if (brow)                                                           \
                memcpy(bt, brow + j, rest);                                     \
            float *y = yt;                                                      \
            const float *bias = brow ? bt : NULL;                               \
            EPI16(T, nv, w);                                                    \
            memcpy(row + j, yt, rest);                                          \
        }                                                                       \
    }

EPI_ROW(epi_row_avx512, __attribute__((target("avx512f"))), vf16, 1, 16)
EPI_ROW(epi_row_avx2, __attribute__((target("avx2"))), vf8, 2, 8)
EPI_ROW(epi_row_base, , vf4, 4, 4)

typedef void (*epi_row_fn)(float *row, int64_t n, const float *brow, dt_peer_act act);
static epi_row_fn epi_row;
static pthread_once_t epi_once = PTHREAD_ONCE_INIT;

static void pick_epi_row(void)
{
    __builtin_cpu_init();
    epi_row = __builtin_cpu_supports("avx512f") ? epi_row_avx512
              : __builtin_cpu_supports("avx2")  ? epi_row_avx2
                                                : epi_row_base;
}

void dt_peer_epilogue_tile(float *y, int64_t rows, int64_t cols, int64_t ldy,
                           const float *bias, dt_peer_act act)
{
    if (!bias && act == DT_PEER_ACT_NONE)
        return;
    pthread_once(&epi_once, pick_epi_row);
    for (int64_t i = 0; i < rows; i++)
        epi_row(y + i * ldy, cols, bias, act);
}

void dt_peer_epilogue(float *y, int64_t M, int64_t N, int64_t ldy, const float *bias,
                      dt_peer_act act, int threads)
{
    if (!bias && act == DT_PEER_ACT_NONE)
        return;
    if (threads < 1)
        threads = 1;
    /* below ~16K elements the fork/join costs more than the pass itself */
    int team = (M * N >= 16384 && M > 1) ? threads : 1;
    if (team > M)
        team = (int)M;
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
    for (int64_t i = 0; i < M; i++)
        dt_peer_epilogue_tile(y + i * ldy, 1, N, ldy, bias, act);
}
