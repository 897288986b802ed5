/* Loading a built micro-kernel (dlopen) and reaching its entry points.
 * Ownership: dt_kernel_load fills a dt_kernel that owns the dlopen handle;
 * dt_kernel_unload closes it (function pointers are invalid afterwards). */
#ifndef DT_MICROKERNEL_LOADER_H
#define DT_MICROKERNEL_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef size_t (*dtk_packed_size_fn)(int64_t N, int64_t K);
typedef void (*dtk_pack_fn)(int64_t N, int64_t K, const float *W, float *packed);
typedef void (*dtk_dense_fn)(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
                             const float *packed, const float *bias, float *Y, int64_t ldy,
                             int nthreads);
typedef void (*dtk_bmm_fn)(int64_t batch, int64_t M, int64_t N, int64_t K, const float *A,
                           int64_t lda, int64_t sa, const float *B, int64_t ldb, int64_t sb,
                           float *C, int64_t ldc, int64_t sc, int nthreads);

typedef struct dt_kernel {
    void *handle;
    const char *info;                /* "dense epilogue=bias; {annotation}" */
    dtk_packed_size_fn packed_size;  /* dense kernels */
    dtk_pack_fn pack;
    dtk_dense_fn dense;
    dtk_bmm_fn bmm;                  /* batch_matmul kernels */
} dt_kernel;

int dt_kernel_load(const char *so_path, dt_kernel *k, dt_err *e);
void dt_kernel_unload(dt_kernel *k);

#endif
