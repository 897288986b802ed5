/* dense: Y[M,N] = X[M,K] · W[N,K]ᵀ (+ bias[N]) (then relu or gelu).
 * W is constant (weights), so micro-kernels may prepack it once. */
#include "ops/op.h"

enum { M, N, K };

static double dense_flops(const int64_t *d, const int *attrs)
{
    (void)attrs; /* epilogues are O(M·N), not counted as useful flops */
    return 2.0 * (double)d[M] * (double)d[N] * (double)d[K];
}

static int dense_check(const int64_t *d, const int *attrs, dt_err *e)
{
    (void)attrs;
    int64_t r;
    int64_t x[] = {d[M], d[K]}, w[] = {d[N], d[K]}, y[] = {d[M], d[N]};
    int64_t f[] = {2, d[M], d[N], d[K]};
    int rc;
    if ((rc = dt_checked_product(x, 2, "X size M*K", &r, e)) ||
        (rc = dt_checked_product(w, 2, "W size N*K", &r, e)) ||
        (rc = dt_checked_product(y, 2, "Y size M*N", &r, e)) ||
        (rc = dt_checked_product(f, 4, "flop count 2*M*N*K", &r, e)))
        return rc;
    return 0;
}

/* X is A, W (N×K) is B transposed and constant. */
static void dense_gemm(const int *attrs, const int64_t *dims, dt_gemm *g)
{
    g->dim[DT_ROLE_BATCH] = -1;
    g->dim[DT_ROLE_M] = M;
    g->dim[DT_ROLE_N] = N;
    g->dim[DT_ROLE_K] = K;
    g->batched = 0;
    if (dims)
        dt_gemm_sizes_by_role(dims, g);
    g->b_trans = 1;
    g->b_const = 1;
    g->bias = dt_epilogue_bias(attrs[0]);
    g->act = dt_epilogue_act(attrs[0]);
}

const dt_op_desc dt_op_dense = {
    .name = "dense",
    .summary = "Y[M,N] = X[M,K]·W[N,K]^T with constant weights W, optional "
               "bias/relu/gelu/relu6/hardswish",
    .ndims = 3,
    .dims = {"M", "N", "K"},
    .nattrs = 1,
    .attrs = {{.name = "epilogue",
               .nvalues = DT_EPILOGUE_COUNT,
               .values = DT_EPILOGUE_VALUES,
               .default_index = 0,
               .always_print = 0}},
    .flops = dense_flops,
    .check = dense_check,
    .gemm = dense_gemm,
    .dtypes = DT_DTYPE_BIT(DT_DTYPE_F32) | DT_DTYPE_BIT(DT_DTYPE_BF16) |
              DT_DTYPE_BIT(DT_DTYPE_INT8) | DT_DTYPE_BIT(DT_DTYPE_W8A32) |
              DT_DTYPE_BIT(DT_DTYPE_F32_BF16) | DT_DTYPE_BIT(DT_DTYPE_W8A32_BF16),
};
