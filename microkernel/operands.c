/* Operands per dtype (microkernel/operands.h). */
#include "microkernel/operands.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "microkernel/reference.h"

uint16_t dt_bf16_from_f32(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a (quiet) NaN */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float dt_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* xorshift64 draws for the integer tensors */
static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int below(uint64_t *s, int n) { return (int)((next(s) >> 11) % (uint64_t)n); }

void dt_operands_free(dt_operands *o)
{
    if (!o)
        return;
    free(o->A);
    free(o->B);
    free(o->bias);
    free(o->scale_b);
    free(o->Aref);
    free(o->Bref);
    free(o->colscale);
    memset(o, 0, sizeof *o);
}


/* x as an operand of element type e holds it: bf16 rounds to nearest even,
 * f32 keeps it (the real elements; the integer ones are drawn as such) */
static float round_to(dt_elem e, float x)
{
    return e == DT_ELEM_BF16 ? dt_bf16_to_f32(dt_bf16_from_f32(x)) : x;
}

/* A dtype of another arithmetic (math=bf16: f32_bf16, w8a32_bf16): the
 * sums its kernels form are of operands rounded to the math dtype's
 * elements, so the reference's are too.  That dtype's row, or NULL when
 * r runs its own arithmetic. */
static const dt_dtype_row *math_of(const dt_dtype_row *r)
{
    return r->math == r->id ? NULL : dt_dtype_info(r->math);
}

/* Whether this maker knows how to draw r's operands: A and B real (f32,
 * bf16) or quantised as their layout says (A u8 with a scale and zero
 * point, B s8 with per-column scales). */
static int drawable(const dt_dtype_row *r)
{
    int a_real = r->a == DT_ELEM_F32 || r->a == DT_ELEM_BF16;
    int b_real = r->b == DT_ELEM_F32 || r->b == DT_ELEM_BF16;
    int a_affine = (r->quant & DT_QUANT_A_AFFINE) != 0;
    int b_scaled = (r->quant & DT_QUANT_B_SCALE_N) != 0;
    return (a_affine ? r->a == DT_ELEM_U8 : a_real) && (b_scaled ? r->b == DT_ELEM_S8 : b_real) &&
           r->c == DT_ELEM_F32;
}

/* A u8 with its scale and zero point: Aref = a − zp_a, small integers */
static void draw_a_affine(dt_operands *o, int64_t rows, int64_t K, int64_t lda, uint64_t *s)
{
    o->zp_a = 96 + below(s, 65);
    o->scale_a = 0.02f;
    uint8_t *A = o->A;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t k = 0; k < K; k++) {
            int v = below(s, 256);
            A[i * lda + k] = (uint8_t)v;
            o->Aref[i * K + k] = (float)(v - o->zp_a);
        }
}

/* A real: Aref drawn, A its stored form in element e (past K: a NaN a
 * kernel must not read), Aref then what is stored */
static void draw_a_real(dt_operands *o, dt_elem e, int64_t rows, int64_t K, int64_t lda,
                        uint64_t seed)
{
    dt_fill_random(o->Aref, rows * K, seed);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t k = 0; k < lda; k++) {
            if (e == DT_ELEM_BF16) {
                uint16_t *A = o->A;
                A[i * lda + k] = k < K ? dt_bf16_from_f32(o->Aref[i * K + k]) : 0x7fc1;
                if (k < K)
                    o->Aref[i * K + k] = dt_bf16_to_f32(A[i * lda + k]);
            } else {
                float *A = o->A;
                A[i * lda + k] = k < K ? o->Aref[i * K + k] : NAN;
            }
        }
}

/* B s8 with per-column scales; colscale the column's dequantisation (times
 * A's scale when A is affine).  Rounded math: the weights the kernels
 * multiply are round(scale_b[n]·w) (dequantised in f32, rounded when
 * packed; W is N×wk), colscale 1. */
static void draw_b_scaled(dt_operands *o, const dt_dtype_row *r, int64_t nb, int64_t N,
                          int64_t wk, uint64_t *s)
{
    int8_t *B = o->B;
    for (int64_t i = 0; i < nb; i++) {
        B[i] = (int8_t)(below(s, 255) - 127);
        o->Bref[i] = (float)B[i];
    }
    for (int64_t n = 0; n < N; n++) {
        o->scale_b[n] = 0.0005f + 0.0045f * (float)below(s, 1000) / 1000.0f;
        o->colscale[n] = r->quant & DT_QUANT_A_AFFINE ? (double)o->scale_a * (double)o->scale_b[n]
                                                      : (double)o->scale_b[n];
    }
    const dt_dtype_row *m = math_of(r);
    if (m) {
        for (int64_t i = 0; i < nb; i++)
            o->Bref[i] = round_to(m->b, o->scale_b[i / wk] * o->Bref[i]);
        for (int64_t n = 0; n < N; n++)
            o->colscale[n] = 1.0;
    }
}

/* B real: Bref drawn, B its stored form in element e, Bref then what the
 * kernels multiply (rounded to the math's elements) */
static void draw_b_real(dt_operands *o, const dt_dtype_row *r, int64_t nb, uint64_t seed)
{
    dt_fill_random(o->Bref, nb, seed);
    if (r->b == DT_ELEM_BF16) {
        uint16_t *B = o->B;
        for (int64_t i = 0; i < nb; i++) {
            B[i] = dt_bf16_from_f32(o->Bref[i]);
            o->Bref[i] = dt_bf16_to_f32(B[i]);
        }
        return;
    }
    memcpy(o->B, o->Bref, (size_t)nb * sizeof(float));
    const dt_dtype_row *m = math_of(r);
    if (m)
        for (int64_t i = 0; i < nb; i++)
            o->Bref[i] = round_to(m->b, o->Bref[i]);
}

/* The arrays of rows×K of A (row stride lda), nb elements of B, N of the
 * per-column data, in r's element types; 0 or DT_ENOMEM (o freed). */
static int alloc_operands(dt_operands *o, const dt_dtype_row *r, int64_t rows, int64_t K,
                          int64_t lda, int64_t nb, int64_t N, dt_err *e)
{
    const int quant = (r->quant & DT_QUANT_B_SCALE_N) != 0;
    const int as = dt_elem_size(r->a), bs = dt_elem_size(r->b);
    o->A = dt_alloc64((size_t)(rows * lda) * (size_t)as + 64);
    o->B = dt_alloc64((size_t)nb * (size_t)bs + 64);
    o->bias = malloc((size_t)N * sizeof *o->bias);
    o->Aref = malloc((size_t)(rows * K) * sizeof *o->Aref);
    o->Bref = malloc((size_t)nb * sizeof *o->Bref);
    if (quant) {
        o->scale_b = malloc((size_t)N * sizeof *o->scale_b);
        o->colscale = malloc((size_t)N * sizeof *o->colscale);
    }
    if (!o->A || !o->B || !o->bias || !o->Aref || !o->Bref ||
        (quant && (!o->scale_b || !o->colscale))) {
        dt_operands_free(o);
        return dt_errf(e, DT_ENOMEM,
                       "out of memory for the operands (%lld x %lld, %lld, %lld elements)",
                       (long long)rows, (long long)K, (long long)nb, (long long)N);
    }
    memset(o->A, 0xA5, (size_t)(rows * lda) * (size_t)as); /* poison past K */
    return 0;
}

/* rows×K of A (row stride lda), nb elements of B, N of the per-column data;
 * wk: the K of constant weights W[N][wk] (B's element i is column i / wk),
 * which w8a32_bf16's rounded weights need (0: no such weights).  Every
 * choice is the dtype row's (dtypes/dtype.h): its elements, its
 * quantisation layout, its math. */
static int make(dt_operands *o, dt_dtype d, int64_t rows, int64_t K, int64_t lda, int64_t nb,
                int64_t N, int64_t wk, uint64_t seed, dt_err *e)
{
    const dt_dtype_row *r = dt_dtype_info(d);
    if (!r || !drawable(r))
        return dt_errf(e, DT_EINVAL, "no operands for dtype %d", (int)d);
    const dt_dtype_row *m = math_of(r);
    const int quant = (r->quant & DT_QUANT_B_SCALE_N) != 0;
    if (m && quant && (wk < 1 || nb != N * wk))
        return dt_errf(e, DT_EINVAL, "operands: %s needs constant weights N x K "
                       "(N=%lld, K=%lld, %lld elements)", r->name, (long long)N,
                       (long long)wk, (long long)nb);
    o->dtype = d;
    o->lda = lda;
    o->scale_a = 1.0f;
    int rc = alloc_operands(o, r, rows, K, lda, nb, N, e);
    if (rc)
        return rc;
    dt_fill_random(o->bias, N, seed + 2);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    if (r->quant & DT_QUANT_A_AFFINE)
        draw_a_affine(o, rows, K, lda, &s);
    else
        draw_a_real(o, r->a, rows, K, lda, seed);
    if (m) /* stored unrounded: the kernels round A when called */
        for (int64_t i = 0; i < rows * K; i++)
            o->Aref[i] = round_to(m->a, o->Aref[i]);
    if (quant)
        draw_b_scaled(o, r, nb, N, wk, &s);
    else
        draw_b_real(o, r, nb, seed + 1);
    return 0;
}

/* rows×K of the view's matrix gathered from src through row(i, index)
 * (-1: 0) into a new array; NULL when out of memory */
static float *gather(const dt_gemm *g, int64_t rows, int64_t K, const float *src,
                     void (*row)(const int64_t *, const int *, int64_t, int64_t *))
{
    float *m = malloc((size_t)(rows * K) * sizeof *m);
    int64_t *index = malloc((size_t)K * sizeof *index);
    if (m && index)
        for (int64_t i = 0; i < rows; i++) {
            row(g->dims, g->attrs, i, index);
            for (int64_t k = 0; k < K; k++)
                m[i * K + k] = index[k] < 0 ? 0.0f : src[index[k]];
        }
    free(index);
    if (!index) {
        free(m);
        return NULL;
    }
    return m;
}

/* An op whose A is implicit (ops/op.h, a_row): A is its input, drawn
 * like one row of a_elems elements; Aref the view's M×K matrix gathered
 * from that row's real values (0 where the op reads padding).  B as the op
 * stores it (b_elems, K/groups values per output channel for a grouped
 * convolution), Bref the view's N×K gathered from it through b_row. */
static int make_implicit(dt_operands *o, dt_dtype d, const dt_gemm *g, uint64_t seed, dt_err *e)
{
    const int64_t nx = g->op->a_elems(g->dims, g->attrs);
    const int64_t nb = g->op->b_elems ? g->op->b_elems(g->dims, g->attrs) : g->N * g->K;
    int rc = make(o, d, 1, nx, nx, nb, g->N, nb / g->N, seed, e);
    if (rc)
        return rc;
    o->lda = 0;
    float *im = gather(g, g->M, g->K, o->Aref, g->op->a_row);
    float *bv = g->op->b_row ? gather(g, g->N, g->K, o->Bref, g->op->b_row) : NULL;
    if (!im || (g->op->b_row && !bv)) {
        free(im);
        free(bv);
        dt_operands_free(o);
        return dt_errf(e, DT_ENOMEM, "out of memory for the operands (%lld x %lld)",
                       (long long)g->M, (long long)g->K);
    }
    free(o->Aref);
    o->Aref = im;
    if (bv) {
        free(o->Bref);
        o->Bref = bv;
    }
    return 0;
}

int dt_operands_make(dt_operands *o, dt_dtype d, const dt_gemm *g, int64_t lda, uint64_t seed,
                     dt_err *e)
{
    memset(o, 0, sizeof *o);
    o->g = *g;
    if (g->op && g->op->a_row)
        return make_implicit(o, d, g, seed, e);
    return make(o, d, g->batch * g->M, g->K, lda, g->batch * g->N * g->K, g->N,
                g->b_const ? g->K : 0, seed, e);
}

int dt_operands_make_flat(dt_operands *o, dt_dtype d, int64_t na, int64_t nb, int64_t nn,
                          int64_t wk, uint64_t seed, dt_err *e)
{
    memset(o, 0, sizeof *o);
    return make(o, d, na, 1, 1, nb, nn, wk, seed, e);
}
