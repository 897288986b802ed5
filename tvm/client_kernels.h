/* The TVM client's kernels: a kernel id's C source (dtune_kernel_source)
 * compiled once into a shared object and loaded, and weights packed once
 * per (tensor, packed layout).  Not thread-safe: the caller serialises. */
#ifndef DTUNE_TVM_CLIENT_KERNELS_H
#define DTUNE_TVM_CLIENT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <dtune/dtune.h>

typedef size_t (*dt_tvm_packed_size_fn)(int64_t N, int64_t K);
typedef void (*dt_tvm_pack_fn)(int64_t N, int64_t K, const float *W, void *packed);
typedef void (*dt_tvm_dense_fn)(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
                                const void *packed, const float *bias, float *Y, int64_t ldy,
                                int nthreads);
typedef void (*dt_tvm_bmm_fn)(int64_t batch, int64_t M, int64_t N, int64_t K, const float *A,
                              int64_t lda, int64_t sa, const float *B, int64_t ldb, int64_t sb,
                              float *C, int64_t ldc, int64_t sc, int nthreads);

typedef struct {
    int64_t kernel_id;
    void *so;
    dt_tvm_packed_size_fn packed_size;
    dt_tvm_pack_fn pack;
    dt_tvm_dense_fn dense;
    dt_tvm_bmm_fn bmm;
    char layout[DTUNE_NAME_MAX + 16]; /* packed weights' identity: back-end and NR */
} dt_tvm_kernel;

typedef struct dt_tvm_cache dt_tvm_cache;

/* A cache whose kernels are compiled by $CC (else cc) with dtune's kernel
 * flags into cache_dir (NULL: $DTUNE_CACHE_DIR, else
 * $XDG_CACHE_HOME/dtune/kernels, else ~/.cache/dtune/kernels): the same
 * files under the same names as dtune's own builds, so a kernel the tuner
 * compiled on this machine is loaded, not compiled again. NULL on ENOMEM. */
dt_tvm_cache *dt_tvm_cache_new(const char *cache_dir);
void dt_tvm_cache_free(dt_tvm_cache *c);

/* The kernel of schedule s (its kernel id, workload and annotation), compiled
 * and loaded on first use.  NULL with the reason in err. */
const dt_tvm_kernel *dt_tvm_kernel_get(dt_tvm_cache *c, dtune *db, const dtune_schedule *s,
                                       char *err, size_t err_size);

/* W (N×K f32) packed for kernel kn, packed on first use for this W's
 * address and kn's layout (the weights of a compiled model are constants:
 * a tensor whose contents change at the same address must be dropped with
 * dt_tvm_cache_drop_packed).  NULL with the reason in err. */
const void *dt_tvm_packed(dt_tvm_cache *c, const dt_tvm_kernel *kn, const float *W, int64_t N,
                          int64_t K, char *err, size_t err_size);
void dt_tvm_cache_drop_packed(dt_tvm_cache *c);

typedef struct {
    int64_t kernels_built, kernels_loaded, packs;
    size_t packed_bytes;
} dt_tvm_cache_stats;
void dt_tvm_cache_get_stats(const dt_tvm_cache *c, dt_tvm_cache_stats *out);

#endif
