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

#include "client_err.h"
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

/* A string argument's text and length (not NUL-terminated for small
 * strings): a TVM string or bytes, a C string or a byte array.  Text with
 * a NUL byte inside its length is refused: every string the client takes
 * (a key, a path) is read up to its first NUL by the calls it is passed
 * to, so the bytes after it would be ignored without a word. */
static int arg_str(const char *fn, const TVMFFIAny *a, int i, const char **s, size_t *n)
{
    const TVMFFIByteArray *b = NULL;
    switch (a->type_index) {
    case kTVMFFIRawStr:
        if (!a->v_c_str)
            return ffi_raise("ValueError", "%s: argument %d is a NULL string", fn, i);
        *s = a->v_c_str, *n = strlen(a->v_c_str);
        return 0;
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
        if (a->small_str_len > sizeof a->v_bytes)
            return ffi_raise("ValueError", "%s: argument %d is a small string of %u bytes "
                             "(at most %zu)", fn, i, (unsigned)a->small_str_len,
                             sizeof a->v_bytes);
        *s = a->v_bytes, *n = a->small_str_len;
        break;
    case kTVMFFIStr:
    case kTVMFFIBytes:
        if (!a->v_obj)
            return ffi_raise("ValueError", "%s: argument %d is a NULL string object", fn, i);
        b = bytes_of(a->v_obj);
        break;
    case kTVMFFIByteArrayPtr:
        if (!a->v_ptr)
            return ffi_raise("ValueError", "%s: argument %d is a NULL byte array", fn, i);
        b = (const TVMFFIByteArray *)a->v_ptr;
        break;
    default:
        return ffi_raise("TypeError", "%s: argument %d must be a string (type index %d)", fn, i,
                         (int)a->type_index);
    }
    if (b) {
        if (!b->data && b->size)
            return ffi_raise("ValueError", "%s: argument %d is a string of %zu bytes without "
                             "data", fn, i, b->size);
        *s = b->data ? b->data : "", *n = b->size;
    }
    const char *nul = memchr(*s, '\0', *n);
    if (nul)
        return ffi_raise("ValueError", "%s: argument %d has a NUL byte at offset %zu of its %zu "
                         "bytes: keys and paths are text without NUL bytes", fn, i,
                         (size_t)(nul - *s), *n);
    return 0;
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

/* t's shape as "(2, 3, 4)" into buf (dims past the eighth elided). */
static const char *shape_text(const DLTensor *t, char *buf, size_t size)
{
    size_t j = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < t->ndim && j < size; d++) {
        if (d == 8) {
            j += (size_t)snprintf(buf + j, size - j, ", ... %d dims", t->ndim);
            break;
        }
        j += (size_t)snprintf(buf + j, size - j, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    }
    if (j < size)
        snprintf(buf + j, size - j, t->ndim == 1 ? ",)" : ")");
    return buf;
}

/* dtype's name as TVM spells it: float32, float16, bfloat16, int8, float32x4 */
static const char *dtype_text(DLDataType dt, char *buf, size_t size)
{
    const char *code = dt.code == kDLInt      ? "int"
                       : dt.code == kDLUInt   ? "uint"
                       : dt.code == kDLFloat  ? "float"
                       : dt.code == kDLBfloat ? "bfloat"
                       : dt.code == kDLBool   ? "bool"
                                              : NULL;
    int j = code ? snprintf(buf, size, "%s%d", code, dt.bits)
                 : snprintf(buf, size, "dtype code %d of %d bits", dt.code, dt.bits);
    if (dt.lanes != 1 && j >= 0 && (size_t)j < size)
        snprintf(buf + j, size - (size_t)j, "x%d", dt.lanes);
    return buf;
}

/* A float32 CPU tensor with row-major compact strides, of at least
 * min_ndim dims, each at least 1, whose size in bytes (with its
 * byte_offset) fits in int64 — so no product of its dims overflows — and
 * whose first element is aligned for a float. */
static int arg_tensor(const char *fn, const TVMFFIAny *a, const char *name, int min_ndim,
                      DLTensor **out)
{
    DLTensor *t;
    char sh[256], dt[64];
    if (a->type_index == kTVMFFIDLTensorPtr)
        t = (DLTensor *)a->v_ptr;
    else if (a->type_index == kTVMFFITensor)
        t = a->v_obj ? (DLTensor *)((char *)a->v_obj + sizeof(TVMFFIObject)) : NULL;
    else
        return ffi_raise("TypeError", "%s: %s must be a tensor (type index %d)", fn, name,
                     (int)a->type_index);
    if (!t)
        return ffi_raise("ValueError", "%s: %s is a NULL tensor", fn, name);
    if (!t->data)
        return ffi_raise("ValueError", "%s: %s has no data", fn, name);
    if (t->device.device_type != kDLCPU)
        return ffi_raise("ValueError", "%s: %s is on device type %d; dtune's kernels run on the CPU",
                     fn, name, (int)t->device.device_type);
    if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1)
        return ffi_raise("TypeError", "%s: %s must be float32, not %s", fn, name,
                         dtype_text(t->dtype, dt, sizeof dt));
    if (t->ndim < min_ndim)
        return ffi_raise("ValueError", "%s: %s has %d dim%s, at least %d expected", fn, name,
                         t->ndim, t->ndim == 1 ? "" : "s", min_ndim);
    if (!t->shape)
        return ffi_raise("ValueError", "%s: %s has %d dim%s but no shape", fn, name, t->ndim,
                         t->ndim == 1 ? "" : "s");
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 1)
            return ffi_raise("ValueError", "%s: %s of shape %s has dim %d of size %lld; every dim "
                             "must be at least 1", fn, name, shape_text(t, sh, sizeof sh), d,
                             (long long)t->shape[d]);
    int64_t elems = 1, bytes;
    for (int d = 0; d < t->ndim; d++)
        if (__builtin_mul_overflow(elems, t->shape[d], &elems))
            return ffi_raise("ValueError", "%s: %s of shape %s overflows: the product of its "
                             "dims exceeds 2^63-1", fn, name, shape_text(t, sh, sizeof sh));
    if (__builtin_mul_overflow(elems, (int64_t)sizeof(float), &bytes) ||
        t->byte_offset > (uint64_t)INT64_MAX ||
        __builtin_add_overflow(bytes, (int64_t)t->byte_offset, &bytes))
        return ffi_raise("ValueError", "%s: %s of shape %s overflows: its %lld elements of 4 "
                         "bytes after a byte_offset of %llu exceed 2^63-1 bytes", fn, name,
                         shape_text(t, sh, sizeof sh), (long long)elems,
                         (unsigned long long)t->byte_offset);
    uintptr_t first;
    if (__builtin_add_overflow((uintptr_t)t->data, t->byte_offset, &first) ||
        __builtin_add_overflow(first, (uintptr_t)elems * sizeof(float), &first))
        return ffi_raise("ValueError", "%s: %s's byte_offset %llu and size go past the end of "
                         "the address space", fn, name, (unsigned long long)t->byte_offset);
    if (((uintptr_t)t->data + t->byte_offset) % _Alignof(float))
        return ffi_raise("ValueError", "%s: %s's data + byte_offset (%llu) is not aligned to "
                         "%zu bytes, a float32's alignment", fn, name,
                         (unsigned long long)t->byte_offset, _Alignof(float));
    if (t->strides) {
        int64_t want = 1; /* no overflow: at most the element count */
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (t->shape[d] != 1 && t->strides[d] != want)
                return ffi_raise("ValueError",
                             "%s: %s is not contiguous (stride %lld at dim %d, %lld expected)",
                             fn, name, (long long)t->strides[d], d, (long long)want);
            want *= t->shape[d];
        }
    }
    *out = t;
    return 0;
}

static float *data_of(const DLTensor *t) { return (float *)((char *)t->data + t->byte_offset); }

/* The product of t's dims but the last keep: no overflow, arg_tensor
 * checked the product of all of them. */
static int64_t lead(const DLTensor *t, int keep)
{
    int64_t p = 1;
    for (int d = 0; d < t->ndim - keep; d++)
        p *= t->shape[d];
    return p;
}

/* Whether a's dims but its last ka and b's but its last kb are the same,
 * leading 1s aside ((1, 3) and (3) are; (3, 2) and (2, 3), or (6), are not):
 * the batch of matrices is their product, read in the same order. */
static int same_lead(const DLTensor *a, int ka, const DLTensor *b, int kb)
{
    int i = 0, j = 0, na = a->ndim - ka, nb = b->ndim - kb;
    while (i < na && a->shape[i] == 1)
        i++;
    while (j < nb && b->shape[j] == 1)
        j++;
    if (na - i != nb - j)
        return 0;
    for (; i < na; i++, j++)
        if (a->shape[i] != b->shape[j])
            return 0;
    return 1;
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
    if (!g_cache && !(g_cache = dt_tvm_cache_new()))
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
    if (dt_tvm_key_read(key, &e->k)) {
        free(key);
        return ffi_raise("ValueError", "%s: %s", fn, dt_tvm_errmsg()), NULL;
    }
    e->key = key, e->len = n;
    g_nkeys++;
    return e;
}

/* Sets the variable of dim d of k to v, or checks its constant; set[vi] is
 * 1 + the dim that set variable vi. */
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
        return ffi_raise("ValueError", "%s: %s give %c=%lld and %c=%lld, but %s has %c and %c "
                         "both the variable %s", fn, what, k->dims[set[vi] - 1],
                         (long long)vals[vi], dim, (long long)v, k->canonical,
                         k->dims[set[vi] - 1], dim, k->var[vi]);
    vals[vi] = v, set[vi] = 1 + d;
    return 0;
}

/* The variables' values vals[0..k->nvars) of k at dims[] (the op's order),
 * each constant checked. */
static int bind_dims(const char *fn, const dt_tvm_key *k, const int64_t *dims, const char *what,
                     int64_t *vals)
{
    int set[DT_TVM_MAX_VARS] = {0};
    for (int d = 0; d < k->ndims; d++)
        if (bind_dim(fn, k, d, dims[d], vals, set, what))
            return -1;
    return 0;
}

/* The kernel for k at the variables' values: looked up, loaded, its entry
 * points copied out. */
static int kernel_for(const char *fn, const char *key, const dt_tvm_key *k, const int64_t *vals,
                      dt_tvm_kernel *out)
{
    dtune_schedule s;
    if (dtune_lookup_values(g_db, key, vals, k->nvars, NULL, g_threads, &s) != DTUNE_OK)
        return ffi_raise("RuntimeError", "%s: %s", fn, dtune_errmsg());
    int rc;
    const dt_tvm_kernel *kn = dt_tvm_kernel_get(g_cache, g_db, &s, &rc);
    if (!kn)
        return ffi_raise("RuntimeError", "%s: %s", fn, dt_tvm_errmsg());
    *out = *kn;
    return 0;
}

/* Runs a kernel outside the lock (dtune_kernel_run is thread-safe); its
 * checks of the call are the last line of defence, raised as TVM errors. */
static int run(const char *fn, const dtune_kernel *k, const dtune_kernel_args *a)
{
    if (dtune_kernel_run(k, a) != DTUNE_OK)
        return ffi_raise("RuntimeError", "%s: %s", fn, dtune_errmsg());
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
        return ffi_raise("TypeError", "%s(db_path, threads=0): %d argument%s given", fn, (int)n,
                         n == 1 ? "" : "s");
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
        g_cache = dt_tvm_cache_new();
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
        return ffi_raise("TypeError", "%s(key, X, W, [bias,] Y): %d argument%s given", fn, (int)n,
                         n == 1 ? "" : "s");
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
    char sh[256];
    if (open_locked(fn) || !(e = key_locked(fn, ks, kl)))
        goto out;
    k = &e->k;
    if (k->op != DT_TVM_DENSE) {
        ffi_raise("ValueError", "%s: %s is not a dense workload (dtune.batch_matmul runs it)", fn,
              k->canonical);
        goto out;
    }
    if (W->ndim != 2 || W->shape[1] != K) {
        ffi_raise("ValueError", "%s: W must be N x K with K=%lld (X's last dim); it is %s", fn,
                  (long long)K, shape_text(W, sh, sizeof sh));
        goto out;
    }
    int64_t dims[3] = {M, N, K}, vals[DT_TVM_MAX_VARS] = {0};
    if (bind_dims(fn, k, dims, "X and W", vals))
        goto out;
    if ((bias != NULL) != (k->bias != 0)) {
        ffi_raise("ValueError", k->bias ? "%s: %s adds a bias: pass (key, X, W, bias, Y)"
                                        : "%s: %s has no bias: pass (key, X, W, Y)",
                  fn, k->canonical);
        goto out;
    }
    if (bias && (bias->ndim != 1 || bias->shape[0] != N)) {
        ffi_raise("ValueError", "%s: bias must be (N,) = (%lld,) (W's first dim); it is %s", fn,
                  (long long)N, shape_text(bias, sh, sizeof sh));
        goto out;
    }
    if (!same_lead(Y, 1, X, 1) || Y->shape[Y->ndim - 1] != N) {
        char xs[256];
        ffi_raise("ValueError", "%s: Y must be X's leading dims x N, X being %s and N=%lld; it "
                  "is %s", fn, shape_text(X, xs, sizeof xs), (long long)N,
                  shape_text(Y, sh, sizeof sh));
        goto out;
    }
    if (kernel_for(fn, e->key, k, vals, &kn))
        goto out;
    if (strcmp(kn.info.op, "dense")) {
        ffi_raise("RuntimeError", "%s: kernel %lld is a %s kernel, not a dense one", fn,
                  (long long)kn.kernel_id, kn.info.op);
        goto out;
    }
    int prc;
    if (!(packed = dt_tvm_packed(g_cache, &kn, data_of(W), N, K, &prc))) {
        ffi_raise("RuntimeError", "%s: %s", fn, dt_tvm_errmsg());
        goto out;
    }
    rc = 0;
out:;
    int threads = g_threads;
    pthread_mutex_unlock(&g_lock);
    if (rc == 0) {
        const int64_t mnk[3] = {M, N, K};
        dtune_kernel_args a = {.dims = mnk, .a = data_of(X), .b = packed,
                               .bias = bias ? data_of(bias) : NULL, .c = data_of(Y),
                               .threads = threads};
        rc = run(fn, kn.k, &a);
    }
    return rc;
}

static int fn_batch_matmul(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *result)
{
    (void)self, (void)result;
    const char *fn = "dtune.batch_matmul", *ks = NULL;
    size_t kl = 0;
    DLTensor *A, *B, *C;
    if (n != 4)
        return ffi_raise("TypeError", "%s(key, A, B, C): %d argument%s given", fn, (int)n,
                         n == 1 ? "" : "s");
    if (arg_str(fn, &args[0], 0, &ks, &kl) || arg_tensor(fn, &args[1], "A", 2, &A) ||
        arg_tensor(fn, &args[2], "B", 2, &B) || arg_tensor(fn, &args[3], "C", 2, &C))
        return -1;
    pthread_mutex_lock(&g_lock);
    g_calls++;
    int rc = -1;
    dt_tvm_kernel kn;
    const key_entry *e;
    const dt_tvm_key *k = NULL;
    int64_t batch = lead(A, 2), M = A->shape[A->ndim - 2], K = A->shape[A->ndim - 1], N = 0;
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
    char as[256], sh[256];
    if (!same_lead(B, 2, A, 2) || bk != K) {
        ffi_raise("ValueError", "%s: B must be %lld matrices of %s with K=%lld, with A's leading "
                  "dims (A is %s); it is %s", fn, (long long)batch,
                  k->nt ? "N x K" : "K x N", (long long)K, shape_text(A, as, sizeof as),
                  shape_text(B, sh, sizeof sh));
        goto out;
    }
    if (!same_lead(C, 2, A, 2) || C->shape[C->ndim - 2] != M || C->shape[C->ndim - 1] != N) {
        ffi_raise("ValueError", "%s: C must be %lld matrices of %lld x %lld, with A's leading "
                  "dims (A is %s); it is %s", fn, (long long)batch, (long long)M, (long long)N,
                  shape_text(A, as, sizeof as), shape_text(C, sh, sizeof sh));
        goto out;
    }
    int64_t dims[4] = {batch, M, N, K}, vals[DT_TVM_MAX_VARS] = {0};
    if (bind_dims(fn, k, dims, "A and B", vals) || kernel_for(fn, e->key, k, vals, &kn))
        goto out;
    if (strcmp(kn.info.op, "batch_matmul")) {
        ffi_raise("RuntimeError", "%s: kernel %lld is a %s kernel, not a batch_matmul one", fn,
                  (long long)kn.kernel_id, kn.info.op);
        goto out;
    }
    rc = 0;
out:;
    int threads = g_threads;
    pthread_mutex_unlock(&g_lock);
    if (rc == 0) {
        /* contiguous tensors: B is N×K (NT) or K×N (NN), as the kernel's op says */
        const int64_t bmnk[4] = {batch, M, N, K};
        dtune_kernel_args a = {.dims = bmnk, .a = data_of(A), .b = data_of(B),
                               .c = data_of(C), .threads = threads};
        rc = run(fn, kn.k, &a);
    }
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
    /* workloads, not spellings: the keys are cached by the caller's text */
    int workloads = 0;
    for (int i = 0; i < g_nkeys; i++) {
        int seen = 0;
        for (int q = 0; q < i && !seen; q++)
            seen = !strcmp(g_keys[q].k.canonical, g_keys[i].k.canonical);
        workloads += !seen;
    }
    snprintf(text, sizeof text,
             "{\"db\": \"%s\", \"threads\": %d, \"calls\": %lld, \"errors\": %lld, "
             "\"workloads\": %d, \"kernels_loaded\": %lld, \"kernels_built\": %lld, "
             "\"packs\": %lld, \"packed_bytes\": %zu}",
             path, g_threads, (long long)g_calls,
             (long long)__atomic_load_n(&g_errors, __ATOMIC_RELAXED), workloads,
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
