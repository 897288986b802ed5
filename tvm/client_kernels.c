/* The TVM client's kernel and packed-weight caches (client_kernels.h).
 *
 * A kernel's shared object is named as dtune's builder names it
 * (microkernel/build.c): BLAKE2b-256 of the compiler's `--version` first
 * line, the flags and the source (each with its NUL), in hex, + ".so", in
 * the same directory, published by rename.  So the kernels `dtune tune`
 * compiled on this machine are loaded as they are, and two processes may
 * build the same kernel at once.  The client is outside the core and links
 * libdtune's public API only, which is why these few lines mirror the
 * builder's instead of calling it. */
#include "client_kernels.h"
#include "client_err.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* dtune's kernel flags (DT_BUILD_DEFAULT_FLAGS in microkernel/build.h: the
 * name of a cached build depends on them, so they must stay equal) */
#define KERNEL_FLAGS "-O3 -march=native -fopenmp -fPIC -shared"

typedef struct {
    const float *W;
    int64_t N, K;
    char layout[DTUNE_NAME_MAX + 16];
    void *packed;
    size_t bytes;
} packed_entry;

struct dt_tvm_cache {
    char dir[3072]; /* leaves room for the file names under PATH_MAX */
    char cc[256], cc_identity[512];
    dt_tvm_kernel *kernels;
    int nkernels, cap_kernels;
    packed_entry *packs;
    int npacks, cap_packs;
    dt_tvm_cache_stats stats;
};

dt_tvm_cache *dt_tvm_cache_new(const char *cache_dir)
{
    dt_tvm_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    const char *d = cache_dir ? cache_dir : getenv("DTUNE_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (d && *d)
        snprintf(c->dir, sizeof c->dir, "%s", d);
    else if (xdg && *xdg)
        snprintf(c->dir, sizeof c->dir, "%s/dtune/kernels", xdg);
    else if (home && *home)
        snprintf(c->dir, sizeof c->dir, "%s/.cache/dtune/kernels", home);
    else
        snprintf(c->dir, sizeof c->dir, "/tmp/dtune-cache-%d/kernels", (int)getuid());
    const char *cc = getenv("CC");
    snprintf(c->cc, sizeof c->cc, "%s", cc && *cc ? cc : "cc");
    return c;
}

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
    /* the shared objects stay loaded: a kernel may still run on another
     * thread of the host when the client is torn down at exit */
    free(c->kernels);
    free(c);
}

void dt_tvm_cache_get_stats(const dt_tvm_cache *c, dt_tvm_cache_stats *out) { *out = c->stats; }

static int make_dirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char was = *p;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return -1;
        if (!was)
            return 0;
        *p = '/';
    }
}

/* Runs argv with stdout and stderr into log; its exit status, or -1. */
static int run(char *const argv[], const char *log)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *read_text(const char *path, size_t max)
{
    FILE *f = fopen(path, "rb");
    char *s = calloc(1, max + 1);
    if (f && s)
        s[fread(s, 1, max, f)] = '\0';
    if (f)
        fclose(f);
    return s;
}

static int compiler_identity(dt_tvm_cache *c, char *err, size_t n)
{
    if (c->cc_identity[0])
        return 0;
    if (make_dirs(c->dir))
        return dt_tvm_fail(err, n, "cannot create the kernel cache %s: %s", c->dir, strerror(errno));
    char log[PATH_MAX];
    snprintf(log, sizeof log, "%s/.version.%d.log", c->dir, (int)getpid());
    char flag[] = "--version";
    char *argv[] = {c->cc, flag, NULL};
    int rc = run(argv, log);
    char *text = read_text(log, sizeof c->cc_identity - 1);
    unlink(log);
    if (rc != 0 || !text) {
        free(text);
        return dt_tvm_fail(err, n, "cannot run the C compiler '%s --version' (set CC)", c->cc);
    }
    text[strcspn(text, "\n")] = '\0';
    snprintf(c->cc_identity, sizeof c->cc_identity, "%s", text);
    free(text);
    return 0;
}

/* Compiles src into so_path (atomically) unless it is there. */
static int build(dt_tvm_cache *c, const char *src, char *so_path, size_t so_size, char *err,
                 size_t n)
{
    if (compiler_identity(c, err, n))
        return -1;
    if (sodium_init() < 0)
        return dt_tvm_fail(err, n, "libsodium failed to initialise");
    const char *parts[] = {c->cc_identity, KERNEL_FLAGS, src};
    crypto_generichash_state st;
    unsigned char h[32];
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    for (int i = 0; i < 3; i++)
        crypto_generichash_update(&st, (const unsigned char *)parts[i], strlen(parts[i]) + 1);
    crypto_generichash_final(&st, h, sizeof h);
    char hash[65];
    sodium_bin2hex(hash, sizeof hash, h, sizeof h);
    snprintf(so_path, so_size, "%s/%s.so", c->dir, hash);
    if (access(so_path, R_OK) == 0)
        return 0;
    char cpath[PATH_MAX], tmp[PATH_MAX], log[PATH_MAX];
    unsigned tag = randombytes_random();
    snprintf(cpath, sizeof cpath, "%s/%s.%d.%08x.c", c->dir, hash, (int)getpid(), tag);
    snprintf(tmp, sizeof tmp, "%s/%s.%d.%08x.so.tmp", c->dir, hash, (int)getpid(), tag);
    snprintf(log, sizeof log, "%s/%s.%d.%08x.log", c->dir, hash, (int)getpid(), tag);
    FILE *f = fopen(cpath, "w");
    int ok = f && fputs(src, f) >= 0;
    ok &= f && fclose(f) == 0;
    if (!ok) {
        unlink(cpath);
        return dt_tvm_fail(err, n, "cannot write %s: %s", cpath, strerror(errno));
    }
    char flags[] = KERNEL_FLAGS, *argv[16];
    int argc = 0;
    argv[argc++] = c->cc;
    for (char *save, *t = strtok_r(flags, " ", &save); t; t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    char o[] = "-o";
    argv[argc++] = cpath;
    argv[argc++] = o;
    argv[argc++] = tmp;
    argv[argc] = NULL;
    int rc = run(argv, log);
    int result = 0;
    if (rc != 0) {
        char *text = read_text(log, 2000);
        result = dt_tvm_fail(err, n, "compiling kernel %s failed (%s, exit %d): %s", hash, c->cc, rc,
                      text ? text : "");
        free(text);
    } else if (rename(tmp, so_path) != 0) {
        result = dt_tvm_fail(err, n, "cannot publish %s: %s", so_path, strerror(errno));
    } else {
        char keep[PATH_MAX];
        snprintf(keep, sizeof keep, "%s/%s.c", c->dir, hash);
        rename(cpath, keep); /* the source beside its build, as dtune keeps it */
        c->stats.kernels_built++;
    }
    unlink(cpath);
    unlink(tmp);
    unlink(log);
    return result;
}

/* "nr" of an annotation JSON, or 0 */
static int annotation_nr(const char *ann)
{
    const char *p = strstr(ann, "\"nr\"");
    if (!p || !(p = strchr(p + 4, ':')))
        return 0;
    return atoi(p + 1);
}

const dt_tvm_kernel *dt_tvm_kernel_get(dt_tvm_cache *c, dtune *db, const dtune_schedule *s,
                                       char *err, size_t n)
{
    for (int i = 0; i < c->nkernels; i++)
        if (c->kernels[i].kernel_id == s->kernel_id)
            return &c->kernels[i];
    if (c->nkernels == c->cap_kernels) {
        int cap = c->cap_kernels ? 2 * c->cap_kernels : 16;
        dt_tvm_kernel *k = realloc(c->kernels, (size_t)cap * sizeof *k);
        if (!k)
            return dt_tvm_fail(err, n, "out of memory"), NULL;
        c->kernels = k, c->cap_kernels = cap;
    }
    char *src = NULL;
    if (dtune_kernel_source(db, s->kernel_id, NULL, &src) != DTUNE_OK)
        return dt_tvm_fail(err, n, "%s", dtune_errmsg()), NULL;
    char so_path[PATH_MAX];
    int rc = build(c, src, so_path, sizeof so_path, err, n);
    dtune_free(src);
    if (rc)
        return NULL;
    void *so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!so)
        return dt_tvm_fail(err, n, "cannot load %s: %s", so_path, dlerror()), NULL;
    dt_tvm_kernel k = {.kernel_id = s->kernel_id, .so = so};
    /* f32 entry points carry no suffix; math=bf16's take f32 with _f32bf16 */
    *(void **)&k.packed_size = dlsym(so, "dtk_packed_size");
    *(void **)&k.pack = dlsym(so, "dtk_pack");
    *(void **)&k.dense = dlsym(so, "dtk_dense");
    *(void **)&k.bmm = dlsym(so, "dtk_bmm");
    if (!k.dense && !k.bmm) {
        *(void **)&k.packed_size = dlsym(so, "dtk_packed_size_f32bf16");
        *(void **)&k.pack = dlsym(so, "dtk_pack_f32bf16");
        *(void **)&k.dense = dlsym(so, "dtk_dense_f32bf16");
    }
    if (!k.bmm && !(k.dense && k.pack && k.packed_size)) {
        dlclose(so);
        return dt_tvm_fail(err, n, "kernel %lld (%s) has no f32 entry point the TVM client calls",
                    (long long)s->kernel_id, so_path),
               NULL;
    }
    char backend[DTUNE_NAME_MAX];
    if (dtune_backend(s->workload, s->annotation, backend, sizeof backend) != DTUNE_OK)
        snprintf(backend, sizeof backend, "kernel%lld", (long long)s->kernel_id);
    /* the packed layout depends on the back-end row and NR only
     * (docs/microkernels.md, "ABI") */
    snprintf(k.layout, sizeof k.layout, "%s/nr%d", backend, annotation_nr(s->annotation));
    c->kernels[c->nkernels] = k;
    c->stats.kernels_loaded++;
    return &c->kernels[c->nkernels++];
}

const void *dt_tvm_packed(dt_tvm_cache *c, const dt_tvm_kernel *kn, const float *W, int64_t N,
                          int64_t K, char *err, size_t n)
{
    for (int i = 0; i < c->npacks; i++) {
        packed_entry *p = &c->packs[i];
        if (p->W == W && p->N == N && p->K == K && !strcmp(p->layout, kn->layout))
            return p->packed;
    }
    if (c->npacks == c->cap_packs) {
        int cap = c->cap_packs ? 2 * c->cap_packs : 16;
        packed_entry *p = realloc(c->packs, (size_t)cap * sizeof *p);
        if (!p)
            return dt_tvm_fail(err, n, "out of memory"), NULL;
        c->packs = p, c->cap_packs = cap;
    }
    size_t bytes = kn->packed_size(N, K);
    void *buf = NULL;
    /* weights of 2 MB and more start on a 2 MB boundary and ask for
     * transparent huge pages (granted where the OS has them in madvise
     * mode): the kernels stream them.  On the Xeon of docs/tvm.md, whose VM
     * granted none, the alignment alone took a 768x768 layer's M=1 call
     * from 72-85 us to 64-72 us. */
    size_t align = bytes >= (1u << 21) ? (1u << 21) : 64;
    if (bytes == 0 || posix_memalign(&buf, align, bytes) != 0)
        return dt_tvm_fail(err, n, "cannot allocate %zu bytes of packed weights", bytes), NULL;
    if (align > 64)
        madvise(buf, bytes, MADV_HUGEPAGE);
    kn->pack(N, K, W, buf);
    packed_entry *p = &c->packs[c->npacks++];
    *p = (packed_entry){.W = W, .N = N, .K = K, .packed = buf, .bytes = bytes};
    snprintf(p->layout, sizeof p->layout, "%s", kn->layout);
    c->stats.packs++;
    c->stats.packed_bytes += bytes;
    return buf;
}
