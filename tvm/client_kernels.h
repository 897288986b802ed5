/* The TVM client's kernels: a kernel id built and loaded once through
 * libdtune (dtune_kernel_load: dtune's own builder, cache and names), and
 * weights packed once per (tensor, packed layout) with dtune_kernel_pack.
 * Not thread-safe: the caller serialises (a loaded kernel may then run on
 * any thread: dtune_kernel_run is thread-safe). */
#ifndef DTUNE_TVM_CLIENT_KERNELS_H
#define DTUNE_TVM_CLIENT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <dtune/dtune.h>

typedef struct {
    int64_t kernel_id;
    dtune_kernel *k;         /* loaded for the life of the process */
    dtune_kernel_info info;  /* op, dtype, packed_layout, ... */
} dt_tvm_kernel;

typedef struct dt_tvm_cache dt_tvm_cache;

/* An empty cache; NULL on ENOMEM. */
dt_tvm_cache *dt_tvm_cache_new(void);
void dt_tvm_cache_free(dt_tvm_cache *c);

/* The kernel of schedule s, built (when not in dtune's kernel cache) and
 * loaded on first use.  NULL with a DTUNE_E* code in *rc and the reason in
 * dt_tvm_errmsg(). */
const dt_tvm_kernel *dt_tvm_kernel_get(dt_tvm_cache *c, dtune *db, const dtune_schedule *s,
                                       int *rc);

/* W (N×K f32) packed for dense kernel kn, packed on first use for this W's
 * address and kn's packed layout (the weights of a compiled model are
 * constants: a tensor whose contents change at the same address must be
 * dropped with dt_tvm_cache_drop_packed).  NULL with a DTUNE_E* code in *rc
 * and the reason in dt_tvm_errmsg(). */
const void *dt_tvm_packed(dt_tvm_cache *c, const dt_tvm_kernel *kn, const float *W, int64_t N,
                          int64_t K, int *rc);
void dt_tvm_cache_drop_packed(dt_tvm_cache *c);

typedef struct {
    int64_t kernels_built, kernels_loaded, packs;
    size_t packed_bytes;
} dt_tvm_cache_stats;
void dt_tvm_cache_get_stats(const dt_tvm_cache *c, dt_tvm_cache_stats *out);

#endif
