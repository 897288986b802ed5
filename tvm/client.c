/* dtune's TVM client: TVM FFI global functions that run dtune's tuned
 * kernels on TVM's tensors (docs/tvm.md).
 *
 *   dtune.open(db_path, threads)          the database and thread count
 *   dtune.dense(key, X, W, [bias,] Y)     Y = X·Wᵀ (+ bias, activation)
 *   dtune.batch_matmul(key, A, B, C)      C[b] = A[b]·B[b] (NN) or ·B[b]ᵀ (NT)
 *   dtune.stats()                         counters, as JSON text
 *   dtune.release()                       closes the database, frees packed weights
 *
 * dense and batch_matmul are destination-passing (Relax's call_dps_packed):
 * the output is the last argument and is written.  On every call the
 * tensors' shapes give the workload's variables, libdtune looks the kernel
 * up for that shape (dtune_lookup_values), the kernel is compiled and loaded
 * once per kernel id, a weight once packed per tensor and layout, and the
 * kernel runs on TVM's buffers.  The functions are registered when the
 * library is loaded (and are also the module functions
 * tvm_ffi.load_module finds).  This folder uses libdtune's public API only. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>
#include <tvm/ffi/c_api.h>

#include <dtune/dtune.h>

#include "client_kernels.h"
#include "client_key.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct {
    char *key;          /* as the caller spelled it */
    size_t len;
    dt_tvm_key k;
} key_entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static dtune *g_db;
static char g_db_path[4096];
static int g_threads;
static dt_tvm_cache *g_cache;
static key_entry *g_keys;
static int g_nkeys, g_cap_keys;
static int64_t g_calls, g_errors;

/* ---- errors --------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static int ffi_raise(const char *kind, const char *fmt,
                                                            ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    TVMFFIErrorSetRaisedFromCStr(kind, msg);
    __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
    return -1;
}

/* ---- arguments ------------------------------------------------------------ */

static TVMFFIByteArray *bytes_of(TVMFFIObject *obj)
{
    return (TVMFFIByteArray *)((char *)obj + sizeof(TVMFFIObject));
}

/* A string argument's text and length (not NUL-terminated for small strings). */
static int arg_str(const char *fn, const TVMFFIAny *a, int i, const char **s, size_t *n)
{
    switch (a->type_index) {
    case kTVMFFIRawStr:
        *s = a->v_c_str, *n = strlen(a->v_c_str);
        return 0;
    case kTVMFFISmallStr:
        *s = a->v_bytes, *n = a->small_str_len;
        return 0;
    case kTVMFFIStr:
        *s = bytes_of(a->v_obj)->data, *n = bytes_of(a->v_obj)->size;
        return 0;
    case kTVMFFIByteArrayPtr:
        *s = ((TVMFFIByteArray *)a->v_ptr)->data, *n = ((TVMFFIByteArray *)a->v_ptr)->size;
        return 0;
    default:
        return ffi_raise("TypeError", "%s: argument %d must be a string (type index %d)", fn, i,
                     (int)a->type_index);
    }
}

static int arg_int(const char *fn, const TVMFFIAny *a, int i, int64_t *v)
{
    if (a->type_index == kTVMFFIInt || a->type_index == kTVMFFIBool) {
        *v = a->v_int64;
        return 0;
    }
    return ffi_raise("TypeError", "%s: argument %d must be an integer (type index %d)", fn, i,
                 (int)a->type_index);
}

/* A float32 CPU tensor with row-major compact strides, of at least min_ndim dims. */
static int arg_tensor(const char *fn, const TVMFFIAny *a, const char *name, int min_ndim,
                      DLTensor **out)
{
    DLTensor *t;
    if (a->type_index == kTVMFFIDLTensorPtr)
        t = (DLTensor *)a->v_ptr;
    else if (a->type_index == kTVMFFITensor)
        t = (DLTensor *)((char *)a->v_obj + sizeof(TVMFFIObject));
    else
        return ffi_raise("TypeError", "%s: %s must be a tensor (type index %d)", fn, name,
                     (int)a->type_index);
    if (!t || !t->data)
        return ffi_raise("ValueError", "%s: %s has no data", fn, name);
    if (t->device.device_type != kDLCPU)
        return ffi_raise("ValueError", "%s: %s is on device type %d; dtune's kernels run on the CPU",
                     fn, name, (int)t->device.device_type);
    if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1)
        return ffi_raise("TypeError", "%s: %s must be float32 (dtype code %d, %d bits, %d lanes)", fn,
                     name, t->dtype.code, t->dtype.bits, t->dtype.lanes);
    if (t->ndim < min_ndim)
        return ffi_raise("ValueError", "%s: %s has %d dims, at least %d expected", fn, name, t->ndim,
                     min_ndim);
    if (t->strides) {
        int64_t want = 1;
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (t->shape[d] != 1 && t->strides[d] != want)
                return ffi_raise("ValueError",
                             "%s: %s is not contiguous (stride %lld at dim %d, %lld expected)",
                             fn, name, (long long)t->strides[d], d, (long long)want);
            want *= t->shape[d];
        }
    }
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 1)
            return ffi_raise("ValueError", "%s: %s has an empty dim %d", fn, name, d);
    *out = t;
    return 0;
}

static float *data_of(const DLTensor *t) { return (float *)((char *)t->data + t->byte_offset); }

static int64_t lead(const DLTensor *t, int keep)
{
    int64_t p = 1;
    for (int d = 0; d < t->ndim - keep; d++)
        p *= t->shape[d];
    return p;
}

/* ---- the database and the keys (under g_lock) ----------------------------- */

static int open_locked(const char *fn)
{
    if (g_db)
        return 0;
    if (!g_db_path[0]) {
        const char *env = getenv("DTUNE_DB");
        snprintf(g_db_path, sizeof g_db_path, "%s", env && *env ? env : "dtune.db");
    }
    if (dtune_open(g_db_path, &g_db) != DTUNE_OK)
        return ffi_raise("RuntimeError", "%s: %s (call dtune.open(path, threads) first, or set "
                     "DTUNE_DB)", fn, dtune_errmsg());
    if (!g_cache && !(g_cache = dt_tvm_cache_new(NULL)))
        return ffi_raise("RuntimeError", "%s: out of memory", fn);
    return 0;
}

/* The entry of the key spelled s[0..n), read on its first call. */
static const key_entry *key_locked(const char *fn, const char *s, size_t n)
{
    for (int i = 0; i < g_nkeys; i++)
        if (g_keys[i].len == n && memcmp(g_keys[i].key, s, n) == 0)
            return &g_keys[i];
    char *key = strndup(s, n);
    key_entry *e = NULL;
    if (key && g_nkeys == g_cap_keys) {
        int cap = g_cap_keys ? 2 * g_cap_keys : 16;
        key_entry *k = realloc(g_keys, (size_t)cap * sizeof *k);
        if (k)
            g_keys = k, g_cap_keys = cap;
    }
    if (!key || g_nkeys == g_cap_keys) {
        free(key);
        return ffi_raise("RuntimeError", "%s: out of memory", fn), NULL;
    }
    e = &g_keys[g_nkeys];
    char err[1024];
    if (dt_tvm_key_read(key, &e->k, err, sizeof err)) {
        free(key);
        return ffi_raise("ValueError", "%s: %s", fn, err), NULL;
    }
    e->key = key, e->len = n;
    g_nkeys++;
    return e;
}

/* Sets the variable of dim d of k to v, or checks its constant. */
static int bind_dim(const char *fn, const dt_tvm_key *k, int d, int64_t v, int64_t *vals,
                    int *set, const char *what)
{
    char dim = k->dims[d];
    if (k->dim_var[d] < 0) {
        if (k->dim_value[d] != v)
            return ffi_raise("ValueError", "%s: %s give %c=%lld, but %s has %c=%lld", fn, what, dim,
                         (long long)v, k->canonical, dim, (long long)k->dim_value[d]);
        return 0;
    }
    int vi = k->dim_var[d];
    if (set[vi] && vals[vi] != v)
        return ffi_raise("ValueError", "%s: %s give %s=%lld and %lld", fn, what,
                     k->var[vi], (long long)v, (long long)vals[vi]);
    vals[vi] = v, set[vi] = 1;
    return 0;
}

/* The kernel for k at dims[] (the op's order): looked up, loaded, its entry
 * points copied out. */
static int kernel_for(const char *fn, const char *key, const dt_tvm_key *k, const int64_t *dims,
                      const char *what, dt_tvm_kernel *out)
{
    int64_t vals[DT_TVM_MAX_VARS] = {0};
    int set[DT_TVM_MAX_VARS] = {0};
    for (int d = 0; d < k->ndims; d++)
        if (bind_dim(fn, k, d, dims[d], vals, set, what))
            return -1;
    dtune_schedule s;
    if (dtune_lookup_values(g_db, key, vals, k->nvars, NULL, g_threads, &s) != DTUNE_OK)
        return ffi_raise("RuntimeError", "%s: %s", fn, dtune_errmsg());
    char err[2600];
    const dt_tvm_kernel *kn = dt_tvm_kernel_get(g_cache, g_db, &s, err, sizeof err);
    if (!kn)
        return ffi_raise("RuntimeError", "%s: %s", fn, err);
    *out = *kn;
    return 0;
}

/* ---- the functions -------------------------------------------------------- */

static int fn_open(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *result)
{
    (void)self, (void)result;
    const char *fn = "dtune.open", *s = NULL;
    size_t len = 0;
    int64_t threads = 0;
    if (n < 1 || n > 2)
        return ffi_raise("TypeError", "%s(db_path, threads=0): %d arguments given", fn, (int)n);
    if (arg_str(fn, &args[0], 0, &s, &len) || (n == 2 && arg_int(fn, &args[1], 1, &threads)))
        return -1;
    if (threads < 0 || threads > 65536)
        return ffi_raise("ValueError", "%s: threads=%lld is outside 0..65536", fn, (long long)threads);
    if (len == 0 || len >= sizeof g_db_path)
        return ffi_raise("ValueError", "%s: the database path is empty or too long", fn);
    char path[sizeof g_db_path];
    memcpy(path, s, len);
    path[len] = '\0';
    dtune *db = NULL;
    if (dtune_open(path, &db) != DTUNE_OK)
        return ffi_raise("RuntimeError", "%s: %s", fn, dtune_errmsg());
    pthread_mutex_lock(&g_lock);
    dtune_close(g_db);
    g_db = db;
    snprintf(g_db_path, sizeof g_db_path, "%s", path);
    g_threads = (int)threads;
    if (!g_cache)
        g_cache = dt_tvm_cache_new(NULL);
    int ok = g_cache != NULL;
    pthread_mutex_unlock(&g_lock);
    return ok ? 0 : ffi_raise("RuntimeError", "%s: out of memory", fn);
}

static int fn_dense(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *result)
{
    (void)self, (void)result;
    const char *fn = "dtune.dense", *ks = NULL;
    size_t kl = 0;
    DLTensor *X, *W, *bias = NULL, *Y;
    if (n != 4 && n != 5)
        return ffi_raise("TypeError", "%s(key, X, W, [bias,] Y): %d arguments given", fn, (int)n);
    if (arg_str(fn, &args[0], 0, &ks, &kl) || arg_tensor(fn, &args[1], "X", 1, &X) ||
        arg_tensor(fn, &args[2], "W", 2, &W) ||
        (n == 5 && arg_tensor(fn, &args[3], "bias", 1, &bias)) ||
        arg_tensor(fn, &args[n - 1], "Y", 1, &Y))
        return -1;
    int64_t M = lead(X, 1), K = X->shape[X->ndim - 1], N = W->shape[0];
    pthread_mutex_lock(&g_lock);
    g_calls++;
    int rc = -1;
    dt_tvm_kernel kn;
    const void *packed = NULL;
    const key_entry *e;
    const dt_tvm_key *k;
    if (open_locked(fn) || !(e = key_locked(fn, ks, kl)))
        goto out;
    k = &e->k;
    if (k->op != DT_TVM_DENSE) {
        ffi_raise("ValueError", "%s: %s is not a dense workload (dtune.batch_matmul runs it)", fn,
              k->canonical);
        goto out;
    }
    if (W->ndim != 2 || W->shape[1] != K) {
        ffi_raise("ValueError", "%s: W must be N x K = ? x %lld (X's last dim); it is %s%lld x %lld",
              fn, (long long)K, W->ndim == 2 ? "" : "not 2-D: ", (long long)W->shape[0],
              (long long)W->shape[W->ndim - 1]);
        goto out;
    }
    if ((bias != NULL) != (k->bias != 0)) {
        ffi_raise("ValueError", "%s: %s %s a bias: pass %s", fn, k->canonical,
              k->bias ? "adds" : "has no", k->bias ? "(key, X, W, bias, Y)" : "(key, X, W, Y)");
        goto out;
    }
    int64_t dims[3] = {M, N, K};
    if (kernel_for(fn, e->key, k, dims, "X and W", &kn))
        goto out;
    if (bias && (bias->ndim != 1 || bias->shape[0] != N)) {
        ffi_raise("ValueError", "%s: bias must have N=%lld elements", fn, (long long)N);
        goto out;
    }
    if (Y->ndim != X->ndim || lead(Y, 1) != M || Y->shape[Y->ndim - 1] != N) {
        ffi_raise("ValueError", "%s: Y must be X's leading dims x N=%lld", fn, (long long)N);
        goto out;
    }
    if (!kn.dense) {
        ffi_raise("RuntimeError", "%s: kernel %lld has no dense entry point", fn,
              (long long)kn.kernel_id);
        goto out;
    }
    char err[512];
    if (!(packed = dt_tvm_packed(g_cache, &kn, data_of(W), N, K, err, sizeof err))) {
        ffi_raise("RuntimeError", "%s: %s", fn, err);
        goto out;
    }
    rc = 0;
out:;
    int threads = g_threads;
    pthread_mutex_unlock(&g_lock);
    if (rc == 0)
        kn.dense(M, N, K, data_of(X), K, packed, bias ? data_of(bias) : NULL, data_of(Y), N,
                 threads);
    return rc;
}

static int fn_batch_matmul(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *result)
{
    (void)self, (void)result;
    const char *fn = "dtune.batch_matmul", *ks = NULL;
    size_t kl = 0;
    DLTensor *A, *B, *C;
    if (n != 4)
        return ffi_raise("TypeError", "%s(key, A, B, C): %d arguments given", fn, (int)n);
    if (arg_str(fn, &args[0], 0, &ks, &kl) || arg_tensor(fn, &args[1], "A", 2, &A) ||
        arg_tensor(fn, &args[2], "B", 2, &B) || arg_tensor(fn, &args[3], "C", 2, &C))
        return -1;
    pthread_mutex_lock(&g_lock);
    g_calls++;
    int rc = -1;
    dt_tvm_kernel kn;
    const key_entry *e;
    const dt_tvm_key *k = NULL;
    int64_t ldb = 0, batch = lead(A, 2), M = A->shape[A->ndim - 2], K = A->shape[A->ndim - 1], N = 0;
    if (open_locked(fn) || !(e = key_locked(fn, ks, kl)))
        goto out;
    k = &e->k;
    if (k->op != DT_TVM_BMM) {
        ffi_raise("ValueError", "%s: %s is not a batch_matmul workload (dtune.dense runs it)", fn,
              k->canonical);
        goto out;
    }
    int64_t bk = B->shape[B->ndim - (k->nt ? 1 : 2)];
    N = B->shape[B->ndim - (k->nt ? 2 : 1)];
    if (lead(B, 2) != batch || bk != K) {
        ffi_raise("ValueError", "%s: B must be %lld matrices of %s; it is %lld of %lld x %lld", fn,
              (long long)batch, k->nt ? "N x K" : "K x N", (long long)lead(B, 2),
              (long long)B->shape[B->ndim - 2], (long long)B->shape[B->ndim - 1]);
        goto out;
    }
    if (lead(C, 2) != batch || C->shape[C->ndim - 2] != M || C->shape[C->ndim - 1] != N) {
        ffi_raise("ValueError", "%s: C must be %lld matrices of %lld x %lld", fn, (long long)batch,
              (long long)M, (long long)N);
        goto out;
    }
    int64_t dims[4] = {batch, M, N, K};
    if (kernel_for(fn, e->key, k, dims, "A and B", &kn))
        goto out;
    if (!kn.bmm) {
        ffi_raise("RuntimeError", "%s: kernel %lld has no batch_matmul entry point", fn,
              (long long)kn.kernel_id);
        goto out;
    }
    ldb = k->nt ? K : N;
    rc = 0;
out:;
    int threads = g_threads;
    pthread_mutex_unlock(&g_lock);
    if (rc == 0)
        kn.bmm(batch, M, N, K, data_of(A), K, M * K, data_of(B), ldb, K * N, data_of(C), N,
               M * N, threads);
    return rc;
}

static int fn_stats(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *result)
{
    (void)self, (void)args, (void)n;
    dt_tvm_cache_stats st = {0};
    char text[2 * sizeof g_db_path + 512], path[2 * sizeof g_db_path];
    size_t j = 0;
    pthread_mutex_lock(&g_lock);
    if (g_cache)
        dt_tvm_cache_get_stats(g_cache, &st);
    /* the path as a JSON string: quotes, backslashes and control characters escaped */
    for (const char *p = g_db ? g_db_path : ""; *p && j + 7 < sizeof path; p++) {
        if (*p == '"' || *p == '\\')
            path[j++] = '\\', path[j++] = *p;
        else if ((unsigned char)*p < 0x20)
            j += (size_t)snprintf(path + j, 7, "\\u%04x", (unsigned char)*p);
        else
            path[j++] = *p;
    }
    path[j] = '\0';
    snprintf(text, sizeof text,
             "{\"db\": \"%s\", \"threads\": %d, \"calls\": %lld, \"errors\": %lld, "
             "\"workloads\": %d, \"kernels_loaded\": %lld, \"kernels_built\": %lld, "
             "\"packs\": %lld, \"packed_bytes\": %zu}",
             path, g_threads, (long long)g_calls,
             (long long)__atomic_load_n(&g_errors, __ATOMIC_RELAXED), g_nkeys,
             (long long)st.kernels_loaded, (long long)st.kernels_built, (long long)st.packs,
             st.packed_bytes);
    pthread_mutex_unlock(&g_lock);
    TVMFFIByteArray b = {text, strlen(text)};
    return TVMFFIStringFromByteArray(&b, result);
}

static int fn_release(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *result)
{
    (void)self, (void)args, (void)n, (void)result;
    pthread_mutex_lock(&g_lock);
    dtune_close(g_db);
    g_db = NULL;
    if (g_cache)
        dt_tvm_cache_drop_packed(g_cache);
    for (int i = 0; i < g_nkeys; i++)
        free(g_keys[i].key);
    g_nkeys = 0;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

/* ---- registration --------------------------------------------------------- */

/* the module functions tvm_ffi.load_module finds (mod.dense, ...) */
EXPORT int __tvm_ffi_open(void *s, const TVMFFIAny *a, int32_t n, TVMFFIAny *r)
{
    return fn_open(s, a, n, r);
}
EXPORT int __tvm_ffi_dense(void *s, const TVMFFIAny *a, int32_t n, TVMFFIAny *r)
{
    return fn_dense(s, a, n, r);
}
EXPORT int __tvm_ffi_batch_matmul(void *s, const TVMFFIAny *a, int32_t n, TVMFFIAny *r)
{
    return fn_batch_matmul(s, a, n, r);
}
EXPORT int __tvm_ffi_stats(void *s, const TVMFFIAny *a, int32_t n, TVMFFIAny *r)
{
    return fn_stats(s, a, n, r);
}
EXPORT int __tvm_ffi_release(void *s, const TVMFFIAny *a, int32_t n, TVMFFIAny *r)
{
    return fn_release(s, a, n, r);
}

__attribute__((constructor)) static void register_globals(void)
{
    static const struct {
        const char *name;
        TVMFFISafeCallType fn;
    } fns[] = {{"dtune.open", fn_open},       {"dtune.dense", fn_dense},
               {"dtune.batch_matmul", fn_batch_matmul}, {"dtune.stats", fn_stats},
               {"dtune.release", fn_release}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        TVMFFIObjectHandle f = NULL;
        TVMFFIByteArray name = {fns[i].name, strlen(fns[i].name)};
        if (TVMFFIFunctionCreate(NULL, fns[i].fn, NULL, &f) != 0 ||
            TVMFFIFunctionSetGlobal(&name, f, 1) != 0) {
            TVMFFIObjectHandle err = NULL;
            TVMFFIErrorMoveFromRaised(&err);
            fprintf(stderr, "libdtune_tvm: cannot register %s with TVM FFI\n", fns[i].name);
            if (err)
                TVMFFIObjectDecRef(err);
        }
        if (f)
            TVMFFIObjectDecRef(f);
    }
}
