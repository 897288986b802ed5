/* batch_matmul: for b < B, C[b] = A[b] · op(B[b]) with both operands dynamic.
 * layout NN: A[B,M,K], B[B,K,N];  layout NT: A[B,M,K], B[B,N,K] (B transposed,
 * as in attention's Q·Kᵀ).  C is [B,M,N]. */
#include "ops/op.h"

enum { BATCH, M, N, K };

static double bmm_flops(const int64_t *d, const int *attrs)
{
    (void)attrs;
    return 2.0 * (double)d[BATCH] * (double)d[M] * (double)d[N] * (double)d[K];
}

static int bmm_check(const int64_t *d, const int *attrs, dt_err *e)
{
    (void)attrs;
    int64_t r;
    int64_t a[] = {d[BATCH], d[M], d[K]}, b[] = {d[BATCH], d[K], d[N]};
    int64_t c[] = {d[BATCH], d[M], d[N]}, f[] = {2, d[BATCH], d[M], d[N], d[K]};
    int rc;
    if ((rc = dt_checked_product(a, 3, "A size B*M*K", &r, e)) ||
        (rc = dt_checked_product(b, 3, "B size B*K*N", &r, e)) ||
        (rc = dt_checked_product(c, 3, "C size B*M*N", &r, e)) ||
        (rc = dt_checked_product(f, 5, "flop count 2*B*M*N*K", &r, e)))
        return rc;
    return 0;
}

/* Both operands dynamic; NT stores B[b] transposed.  No epilogue. */
static void bmm_gemm(const int *attrs, const int64_t *dims, dt_gemm *g)
{
    g->dim[DT_ROLE_BATCH] = BATCH;
    g->dim[DT_ROLE_M] = M;
    g->dim[DT_ROLE_N] = N;
    g->dim[DT_ROLE_K] = K;
    g->batched = 1;
    if (dims)
        dt_gemm_sizes_by_role(dims, g);
    g->b_trans = attrs[0] == 1; /* layout NT */
    g->b_const = 0;
    g->bias = 0;
    g->act = DT_ACT_NONE;
}

const dt_op_desc dt_op_batch_matmul = {
    .name = "batch_matmul",
    .summary = "C[b] = A[b]·B[b] (layout NN) or A[b]·B[b]^T (layout NT), both operands dynamic",
    .ndims = 4,
    .dims = {"B", "M", "N", "K"},
    .nattrs = 1,
    .attrs = {{.name = "layout",
               .nvalues = 2,
               .values = {"NN", "NT"},
               .default_index = 0,
               .always_print = 1}},
    .flops = bmm_flops,
    .check = bmm_check,
    .gemm = bmm_gemm,
    /* both operands are activations: no weight-only or per-channel int8 */
    .dtypes = DT_DTYPE_BIT(DT_DTYPE_F32) | DT_DTYPE_BIT(DT_DTYPE_BF16),
};
