/* The TVM client's kernel and packed-weight caches (client_kernels.h).
 *
 * Building and loading are libdtune's (dtune_kernel_load): the shared
 * object is dtune's builder's own, under its names in its cache directory,
 * so the kernels `dtune tune` compiled on this machine are loaded as they
 * are.  The client keeps no build recipe of its own. */
#include "client_kernels.h"
#include "client_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct {
    const float *W;
    int64_t N, K;
    char layout[DTUNE_NAME_MAX];
    void *packed;
    size_t bytes;
} packed_entry;

struct dt_tvm_cache {
    dt_tvm_kernel *kernels;
    int nkernels, cap_kernels;
    packed_entry *packs;
    int npacks, cap_packs;
    dt_tvm_cache_stats stats;
};

dt_tvm_cache *dt_tvm_cache_new(void) { return calloc(1, sizeof(dt_tvm_cache)); }

void dt_tvm_cache_drop_packed(dt_tvm_cache *c)
{
    for (int i = 0; i < c->npacks; i++)
        free(c->packs[i].packed);
    c->npacks = 0;
    c->stats.packed_bytes = 0;
}

void dt_tvm_cache_free(dt_tvm_cache *c)
{
    if (!c)
        return;
    dt_tvm_cache_drop_packed(c);
    free(c->packs);
    /* the kernels stay loaded: one may still run on another thread of the
     * host when the client is torn down at exit */
    free(c->kernels);
    free(c);
}

void dt_tvm_cache_get_stats(const dt_tvm_cache *c, dt_tvm_cache_stats *out) { *out = c->stats; }

/* The client passes f32 tensors only: f32 kernels, and math=bf16's, which
 * take f32 and round inside. */
static int takes_f32(const dtune_kernel_info *in)
{
    return in->a_bytes == 4 && in->b_bytes == 4 && !in->scale_a && !in->scale_b;
}

const dt_tvm_kernel *dt_tvm_kernel_get(dt_tvm_cache *c, dtune *db, const dtune_schedule *s,
                                       int *rc)
{
    for (int i = 0; i < c->nkernels; i++)
        if (c->kernels[i].kernel_id == s->kernel_id)
            return &c->kernels[i];
    if (c->nkernels == c->cap_kernels) {
        int cap = c->cap_kernels ? 2 * c->cap_kernels : 16;
        dt_tvm_kernel *k = realloc(c->kernels, (size_t)cap * sizeof *k);
        if (!k)
            return *rc = dt_tvm_fail(DTUNE_ENOMEM, "out of memory"), NULL;
        c->kernels = k, c->cap_kernels = cap;
    }
    dt_tvm_kernel k = {.kernel_id = s->kernel_id};
    if ((*rc = dtune_kernel_load(db, s->kernel_id, &k.k)) ||
        (*rc = dtune_kernel_info_get(k.k, &k.info)))
        return dt_tvm_fail(*rc, "%s", dtune_errmsg()), NULL;
    if (!takes_f32(&k.info)) {
        dtune_kernel_close(k.k);
        return *rc = dt_tvm_fail(DTUNE_EUNSUPPORTED, "kernel %lld is a %s kernel: the TVM "
                                 "client passes f32 tensors only", (long long)s->kernel_id,
                                 k.info.dtype),
               NULL;
    }
    c->kernels[c->nkernels] = k;
    c->stats.kernels_loaded++;
    c->stats.kernels_built += !k.info.cache_hit;
    return &c->kernels[c->nkernels++];
}

/* A buffer for bytes of packed weights: weights of 2 MB and more start on a
 * 2 MB boundary and ask for transparent huge pages (granted where the OS
 * has them in madvise mode): the kernels stream them.  On the Xeon of
 * docs/tvm.md, whose VM granted none, the alignment alone took a 768x768
 * layer's M=1 call from 72-85 us to 64-72 us. */
static void *packed_buffer(size_t bytes)
{
    void *buf = NULL;
    size_t align = bytes >= (1u << 21) ? (1u << 21) : 64;
    if (bytes == 0 || posix_memalign(&buf, align, bytes) != 0)
        return NULL;
    if (align > 64)
        madvise(buf, bytes, MADV_HUGEPAGE);
    return buf;
}

/* Packs W for kn into a new buffer, or NULL with *rc set. */
static void *pack_new(const dt_tvm_kernel *kn, const float *W, int64_t N, int64_t K,
                      size_t *bytes, int *rc)
{
    const int64_t dims[3] = {1, N, K}; /* dense's M, N, K: M does not change the pack */
    if ((*rc = dtune_kernel_packed_size(kn->k, dims, 3, bytes)))
        return dt_tvm_fail(*rc, "%s", dtune_errmsg()), NULL;
    void *buf = packed_buffer(*bytes);
    if (!buf)
        return *rc = dt_tvm_fail(DTUNE_ENOMEM, "cannot allocate %zu bytes of packed weights",
                                 *bytes),
               NULL;
    if ((*rc = dtune_kernel_pack(kn->k, dims, 3, W, NULL, buf, *bytes))) {
        free(buf);
        return dt_tvm_fail(*rc, "%s", dtune_errmsg()), NULL;
    }
    return buf;
}

const void *dt_tvm_packed(dt_tvm_cache *c, const dt_tvm_kernel *kn, const float *W, int64_t N,
                          int64_t K, int *rc)
{
    for (int i = 0; i < c->npacks; i++) {
        packed_entry *p = &c->packs[i];
        if (p->W == W && p->N == N && p->K == K && !strcmp(p->layout, kn->info.packed_layout))
            return p->packed;
    }
    if (c->npacks == c->cap_packs) {
        int cap = c->cap_packs ? 2 * c->cap_packs : 16;
        packed_entry *p = realloc(c->packs, (size_t)cap * sizeof *p);
        if (!p)
            return *rc = dt_tvm_fail(DTUNE_ENOMEM, "out of memory"), NULL;
        c->packs = p, c->cap_packs = cap;
    }
    size_t bytes = 0;
    void *buf = pack_new(kn, W, N, K, &bytes, rc);
    if (!buf)
        return NULL;
    packed_entry *p = &c->packs[c->npacks++];
    *p = (packed_entry){.W = W, .N = N, .K = K, .packed = buf, .bytes = bytes};
    snprintf(p->layout, sizeof p->layout, "%s", kn->info.packed_layout);
    c->stats.packs++;
    c->stats.packed_bytes += bytes;
    return buf;
}
