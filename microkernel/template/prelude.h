/* ---- dtune micro-kernel prelude (microkernel/template/prelude.h) ----------
 * Back-end macros and the vector epilogue.  The generator defines before this:
 *   DT_ISA_AVX512 | DT_ISA_AVX2 | DT_ISA_GENERIC, VL (floats per vector),
 *   MR, NR, NV (= NR/VL), KC, MC, NC, UNROLL, PF, THREADS,
 *   DT_SKETCH_STREAM (0/1), DT_PAR_N/M/MN, DT_ORDER_N_INNER (0/1),
 *   DT_STORE_SCRATCH (0/1), @OP_MACROS@,
 *   DT_BIAS (0/1), DT_ACT (0 none, 1 relu, 2 gelu), DT_CONST_B (0/1: B is
 *   constant weights, packed once by the caller). */
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* dtune export defines DT_EXPORT (static) to put several kernels in one file */
#ifndef DT_EXPORT
#define DT_EXPORT __attribute__((visibility("default")))
#endif
/* unused: a kernel uses only some helpers (exports compile with -Werror) */
#define DT_INLINE static inline __attribute__((always_inline, unused))
#define DT_MIN(a, b) ((a) < (b) ? (a) : (b))

/* vf: the back-end's float vector; vi: the integer vector of the same size.
 * The epilogue math is written with GCC vector extensions, which apply to the
 * intrinsic types too (__m512 is a 64-byte GCC float vector). */
#if defined(DT_ISA_AVX512)
#include <immintrin.h>
typedef __m512 vf;
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps((p), (v))
#define VBCAST(x) _mm512_set1_ps(x)
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VZERO() _mm512_setzero_ps()
#define VMASK(n) ((__mmask16)((1u << (n)) - 1u))
#define VLOAD_N(p, n) _mm512_maskz_loadu_ps(VMASK(n), (p))
#define VSTORE_N(p, v, n) _mm512_mask_storeu_ps((p), VMASK(n), (v))
#define VPREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#elif defined(DT_ISA_AVX2)
#include <immintrin.h>
typedef __m256 vf;
static const int32_t dt_mask_table[16] __attribute__((unused)) = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps((p), (v))
#define VBCAST(x) _mm256_set1_ps(x)
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VZERO() _mm256_setzero_ps()
#define VMASK(n) _mm256_loadu_si256((const __m256i *)(dt_mask_table + 8 - (n)))
#define VLOAD_N(p, n) _mm256_maskload_ps((p), VMASK(n))
#define VSTORE_N(p, v, n) _mm256_maskstore_ps((p), VMASK(n), (v))
#define VPREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#else /* portable: GCC vector extensions */
typedef float vf __attribute__((vector_size(VL * 4)));
DT_INLINE vf dt_vload(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
DT_INLINE void dt_vstore(float *p, vf v) { memcpy(p, &v, sizeof v); }
DT_INLINE vf dt_vload_n(const float *p, int n)
{
    vf v = {0};
    memcpy(&v, p, (size_t)n * sizeof(float));
    return v;
}
DT_INLINE void dt_vstore_n(float *p, vf v, int n) { memcpy(p, &v, (size_t)n * sizeof(float)); }
#define VLOAD(p) dt_vload(p)
#define VSTORE(p, v) dt_vstore((p), (v))
#define VBCAST(x) ((vf){0} + (x))
#define VFMA(a, b, c) ((a) * (b) + (c))
#define VZERO() ((vf){0})
#define VLOAD_N(p, n) dt_vload_n((p), (n))
#define VSTORE_N(p, v, n) dt_vstore_n((p), (v), (n))
#define VPREFETCH(p) __builtin_prefetch((p), 0, 3)
#endif

/* What a quantized dtype's epilogue reads besides the bias (NULL for the
 * others): per-column weight scales and column sums (stored after the
 * packed panels, padded to whole strips), the activations' scale and zero
 * point. */
typedef struct {
    const float *scale_b;
    const int32_t *colsum;
    float scale_a;
    int32_t zp_a;
} dt_qctx;

typedef int32_t vi __attribute__((vector_size(sizeof(vf))));
typedef float vx __attribute__((vector_size(sizeof(vf)))); /* vf as a GCC vector */

