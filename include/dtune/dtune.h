/* libdtune: the public C API of dtune.
 *
 * Compilers and runtimes use it to fetch tuned schedules from a dtune
 * database (the SQLite file `dtune tune` and `dtune daemon` write): for a
 * workload and a concrete shape, which micro-kernel to run, its annotation
 * and times, and its C source.  docs/libdtune.md has a walk-through;
 * examples/query.c is a program to copy.
 *
 *   dtune *db;
 *   if (dtune_open("dtune.db", &db) != DTUNE_OK) { puts(dtune_errmsg()); ... }
 *   dtune_schedule s;
 *   if (dtune_lookup(db, "dense(M=1..128,N=768,K=768)", "M=37", NULL, 0, &s) == DTUNE_OK)
 *       printf("kernel %lld, %.0f ns\n", (long long)s.kernel_id, s.measured_ns);
 *   dtune_close(db);
 *
 * Conventions
 * - Every symbol is prefixed dtune_ (macros DTUNE_).  Functions that can
 *   fail return DTUNE_OK (0) or a negative DTUNE_E* code.
 * - Errors: dtune_errmsg() is the message of the calling thread's most
 *   recent call that can fail (dtune_canonicalize, dtune_machine_key,
 *   dtune_backend, dtune_open, the lookups, dtune_kernel_source,
 *   dtune_export, the dtune_kernel_* calls, and the first versions'
 *   dtune_workload_canonical and dtune_target_key); "" when that call
 *   succeeded.  It is thread-local, so threads sharing
 *   a handle never see each other's messages.
 * - Arguments: no call crashes on NULL or out-of-range arguments (NULL
 *   handles, strings or out-pointers, empty keys or paths, zero buffer
 *   sizes, nvals < 0, threads < 0 or above 65536, kernel ids < 1): each is
 *   DTUNE_EINVAL with a message naming the argument.  Pointers that are not
 *   NULL must point to what the call says (a size larger than the buffer
 *   cannot be detected).
 * - Ownership: strings passed in are read during the call only.  Results are
 *   plain values written into caller memory (dtune_schedule), or malloc'ed
 *   buffers the caller releases with dtune_free (dtune_kernel_source).  No
 *   returned pointer points into the library's state, except the static
 *   strings of dtune_version, dtune_errstr and dtune_errmsg.
 * - Thread safety: every function is thread-safe.  One handle may be used by
 *   any number of threads at once (lookups of loaded schedules run in
 *   parallel); only dtune_close must not overlap other calls on its handle.
 * - Reading beside a writer: the database is opened read-only; SQLite's WAL
 *   mode lets it be read while `dtune tune` or `dtune daemon` writes it.
 *   Freshness: schedules are cached in the handle; at most every
 *   DTUNE_REFRESH_MS (100 ms, see dtune_set_refresh_ms) a lookup checks
 *   whether another process committed to the file and, if so, reloads the
 *   schedules it uses.  A schedule committed by a tuner is returned by every
 *   lookup that starts more than that interval after the commit. */
#ifndef DTUNE_DTUNE_H
#define DTUNE_DTUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DTUNE_API __attribute__((visibility("default")))
#else
#define DTUNE_API
#endif

/* ---- result codes --------------------------------------------------------- */
enum {
    DTUNE_OK = 0,
    DTUNE_EINVAL = -1,       /* bad input: malformed workload key, shape, argument */
    DTUNE_ENOMEM = -2,       /* out of memory */
    DTUNE_EIO = -3,          /* a file could not be read or written */
    DTUNE_EDB = -4,          /* SQLite failed, or a stored row is damaged */
    DTUNE_ENOTFOUND = -5,    /* no such file, workload, target, schedule or kernel */
    DTUNE_ENOTDTUNE = -6,    /* the file is not a dtune database */
    DTUNE_EVERSION = -7,     /* the database's schema is not this library's */
    DTUNE_EOVERFLOW = -8,    /* a size or result does not fit */
    DTUNE_EUNSUPPORTED = -9, /* valid request this build cannot serve */
    DTUNE_EBUSY = -10,       /* database locked past the timeout */
};

/* ---- identity (no database needed) ----------------------------------------- */

/* Version of the library, e.g. "0.1.0" (static string). */
DTUNE_API const char *dtune_version(void);

/* Writes the canonical form of a workload key (docs/workload-keys.md) into
 * out[0..out_size).  Returns DTUNE_OK, or a negative code with the reason in
 * dtune_errmsg(): a malformed key, a NULL or empty key, a NULL out, an
 * out_size below the canonical key's length + 1 (0 included) are
 * DTUNE_EINVAL. */
DTUNE_API int dtune_canonicalize(const char *key, char *out, size_t out_size);

/* Writes the key of the machine this process runs on (the target key under
 * which schedules are stored, e.g. "x86_64-avx512-2c-48K.1M.32M"; format in
 * docs/targets.md) into out[0..out_size).  Honours DTUNE_TARGET_ISA and
 * DTUNE_TARGET_CORES.  Returns DTUNE_OK, or a negative code with the reason
 * in dtune_errmsg(); a NULL out or an out_size below the key's length + 1 is
 * DTUNE_EINVAL (DTUNE_TARGET_MAX always fits). */
DTUNE_API int dtune_machine_key(char *out, size_t out_size);

/* Writes the back-end a kernel runs on, e.g. "bf16/amx" or "f32/avx512"
 * (the dtype, then the back-end row's name: docs/microkernels.md), from
 * the workload key it serves and its annotation JSON, as dtune_lookup
 * gives both (dtune_schedule.workload, .annotation), into
 * out[0..out_size); DTUNE_NAME_MAX always fits.  Returns DTUNE_OK, or
 * DTUNE_EINVAL with the reason in dtune_errmsg(): a NULL or malformed key
 * or annotation, an annotation naming no back-end of the key's dtype, a
 * NULL out or an out_size below the name's length + 1. */
DTUNE_API int dtune_backend(const char *workload, const char *annotation, char *out,
                            size_t out_size);

/* The two calls above as the first versions of the API spelled them, kept
 * working: the same, and besides dtune_errmsg() the message is copied into
 * err[0..err_size) when err is not NULL.  New code: the calls above. */
DTUNE_API int dtune_workload_canonical(const char *key, char *out, size_t out_size, char *err,
                                       size_t err_size);
DTUNE_API int dtune_target_key(char *out, size_t out_size, char *err, size_t err_size);

/* ---- errors ----------------------------------------------------------------- */

/* The calling thread's message of its last open, lookup, source or export
 * call (see Conventions): what failed and where, e.g. "workload
 * dense(M=1..8,N=64,K=32) has never been tuned in dtune.db".  Thread-local;
 * valid until this thread's next dtune_* call; never NULL. */
DTUNE_API const char *dtune_errmsg(void);

/* A short static name of a DTUNE_E* code ("not found", ...). */
DTUNE_API const char *dtune_errstr(int code);

/* ---- a database ------------------------------------------------------------- */

typedef struct dtune dtune;

#define DTUNE_REFRESH_MS 100

/* Opens the dtune database at path read-only.  DTUNE_ENOTFOUND for a
 * missing file, DTUNE_ENOTDTUNE for a file that is not a dtune database,
 * DTUNE_EVERSION for a schema this library does not read; *out is then
 * NULL.  On success the caller owns *out and releases it with dtune_close.
 * The machine's target key is detected here (DTUNE_TARGET_ISA and
 * DTUNE_TARGET_CORES are read at this point). */
DTUNE_API int dtune_open(const char *path, dtune **out);

/* Closes the handle (NULL is allowed).  No other call on it may be running. */
DTUNE_API void dtune_close(dtune *db);

/* The freshness interval of the handle in ms (default DTUNE_REFRESH_MS;
 * 0 checks the file on every lookup). */
DTUNE_API void dtune_set_refresh_ms(dtune *db, int ms);

/* ---- lookups ---------------------------------------------------------------- */

#define DTUNE_KEY_MAX 1024        /* workload keys */
#define DTUNE_TARGET_MAX 128      /* target keys */
#define DTUNE_SHAPE_MAX 128       /* shape texts */
#define DTUNE_NAME_MAX 64         /* op and sketch names */
#define DTUNE_ANNOTATION_MAX 1024 /* annotation JSON */

/* The micro-kernel a schedule dispatches for one shape.  A plain value: all
 * text is copied in, nothing to free. */
typedef struct dtune_schedule {
    int64_t kernel_id;            /* for dtune_kernel_source */
    char op[DTUNE_NAME_MAX];      /* "dense", "batch_matmul" */
    char sketch[DTUNE_NAME_MAX];  /* "blocked", "stream" */
    char annotation[DTUNE_ANNOTATION_MAX]; /* JSON: {"sketch","isa","mr","nr","kc",...} */
    double predicted_ns;  /* cost-model prediction, mean over the range; NAN if unknown */
    double measured_ns;   /* measured time, mean over the range; NAN if unknown */
    int extrapolated;     /* 1: the shape is outside the tuned shape set; it runs the
                             kernel of the nearest tuned range (correct, maybe slower) */
    int threads;          /* thread count the schedule was tuned for */
    char shape[DTUNE_SHAPE_MAX];     /* the shape looked up, canonical: "M=37" */
    char range_lo[DTUNE_SHAPE_MAX];  /* the tuned range that chose the kernel: a box, */
    char range_hi[DTUNE_SHAPE_MAX];  /* its two corners (one interval per variable) */
    char workload[DTUNE_KEY_MAX];    /* canonical workload key */
    char target[DTUNE_TARGET_MAX];   /* target key of the schedule */
} dtune_schedule;

/* Looks up the schedule of workload (a workload key in any spelling, e.g.
 * "dense(M=1..128,N=768,K=768)") for one shape, given as text naming every
 * variable ("M=37", "batch=2,seq=37"), and fills *out.  target is a target
 * key, or NULL for this machine.  threads selects the schedule tuned for
 * that many threads (1..65536), 0 the highest count that has one.  Every valid shape
 * gets a kernel: shapes outside the tuned set are flagged extrapolated.
 * DTUNE_EINVAL for a malformed key or shape; DTUNE_ENOTFOUND when the
 * workload, the target or a schedule for that thread count is missing (the
 * message says which); DTUNE_EDB when a stored schedule row cannot be read
 * (damage: the message names the row and suggests `dtune db check`).  After
 * the first lookup of a (workload spelling,
 * target, threads), lookups take well under a microsecond. */
DTUNE_API int dtune_lookup(dtune *db, const char *workload, const char *shape,
                           const char *target, int threads, dtune_schedule *out);

/* dtune_lookup with the shape as values: vals[0..nvals) in the order of the
 * variables in the canonical key (sorted by name; for "M=1..128" just M).
 * nvals must be the workload's variable count (0..8); vals may be NULL only
 * when nvals is 0. */
DTUNE_API int dtune_lookup_values(dtune *db, const char *workload, const int64_t *vals,
                                  int nvals, const char *target, int threads,
                                  dtune_schedule *out);

/* ---- kernel source and export ------------------------------------------------------ */

/* The C source of kernel kernel_id (a translation unit exporting the kernel
 * ABI of docs/microkernels.md: dtk_abi_version, dtk_packed_size, dtk_pack,
 * dtk_dense or dtk_bmm), regenerated from its database row, which holds the
 * op, dtype and attribute values (e.g. epilogue=bias+gelu) it was generated
 * with: a kernel id names one source.  workload should be NULL.  When it is
 * not, it is only checked: a workload whose op or attribute values are not
 * the kernel's is DTUNE_EINVAL (a kernel id dtune_lookup gave for that
 * workload always passes).  *src is malloc'ed; release it with dtune_free.
 * DTUNE_ENOTFOUND when there is no such kernel; a kernel_id below 1 (never
 * an id) is DTUNE_EINVAL.  *src is NULL after any error. */
DTUNE_API int dtune_kernel_source(dtune *db, int64_t kernel_id, const char *workload,
                                  char **src);

/* Releases memory returned by libdtune (NULL is allowed). */
DTUNE_API void dtune_free(void *p);

/* Writes a self-contained C file (out_c_path, "…/NAME.c") and its header
 * (…/NAME.h) for the schedule of workload on target (NULL: this machine) at
 * threads (0: the highest): every kernel it selects, the weight packing and
 * one entry point that dispatches any shape (docs/export.md).  NAME is the
 * file's basename and must be a C identifier.  DTUNE_ENOTFOUND when the
 * workload, target or schedule is missing; DTUNE_EIO when a file cannot be
 * written (nothing partial is left). */
DTUNE_API int dtune_export(dtune *db, const char *workload, const char *target, int threads,
                           const char *out_c_path);

/* ---- kernels: build, load, pack weights, run -------------------------------- */

/* A stored kernel built and loaded into this process (opaque).  It does not
 * refer to the database it came from: it stays usable after dtune_close. */
typedef struct dtune_kernel dtune_kernel;

#define DTUNE_PATH_MAX 4096 /* the kernel's shared object */

/* What a loaded kernel computes and needs.  A plain value. */
typedef struct dtune_kernel_info {
    int64_t kernel_id;
    char op[DTUNE_NAME_MAX];      /* "dense", "batch_matmul", "conv2d" */
    char dtype[DTUNE_NAME_MAX];   /* "f32", "bf16", "int8", "w8a32", "f32_bf16", ... */
    char backend[DTUNE_NAME_MAX]; /* the back-end row, as dtune_backend: "f32/avx512" */
    /* The packed weights' identity: kernels with the same packed_layout take
     * the same packed buffer ("" for an op without packed weights). */
    char packed_layout[DTUNE_NAME_MAX];
    int ndims;                    /* the op's dims, in key order ... */
    char dims[DTUNE_NAME_MAX];    /* ... named, comma-separated: "M,N,K" */
    int packs_weights;  /* 1: B is constant (weights): pass dtune_kernel_pack's buffer as b */
    int bias;           /* 1: the epilogue adds bias[N]: dtune_kernel_args.bias is required */
    int scale_a;        /* 1: A is quantized (int8): scale_a and zp_a are read */
    int scale_b;        /* 1: dtune_kernel_pack requires per-output-channel weight scales */
    /* Bytes per element: A 4 float, 2 bf16 bits (uint16_t), 1 uint8_t; B 4
     * float, 2 bf16 bits (uint16_t), 1 int8_t; C 4 float. */
    int a_bytes, b_bytes, c_bytes;
    int cache_hit;      /* 1: the shared object was in the kernel cache; 0: built now */
    char path[DTUNE_PATH_MAX]; /* the shared object in the kernel cache */
} dtune_kernel_info;

/* Builds kernel kernel_id of db (its source as dtune_kernel_source gives
 * it) into the kernel cache, unless it is there, and loads it: the same
 * build as dtune's own (tuner, workers, bench): $CC (else cc) with dtune's
 * kernel flags, the cache directory $DTUNE_CACHE_DIR, else
 * $XDG_CACHE_HOME/dtune/kernels, else ~/.cache/dtune/kernels, the shared
 * object named by the hash of the compiler's identity, the flags and the
 * source.  So a kernel the tuner compiled on this machine is loaded, not
 * compiled again.  On success the caller owns *out (dtune_kernel_close).
 * DTUNE_ENOTFOUND: no such kernel; DTUNE_EDB: its stored row is damaged
 * (the message names the row and suggests `dtune db check`);
 * DTUNE_EUNSUPPORTED: an op or dtype this library does not know, a
 * back-end this machine does not run, or the compiler refused the source
 * (the message has the start of its log); DTUNE_EIO: the compiler or the
 * cache could not be used.  *out is NULL after any error. */
DTUNE_API int dtune_kernel_load(dtune *db, int64_t kernel_id, dtune_kernel **out);

/* Unloads k (NULL is allowed).  No call on k may be running. */
DTUNE_API void dtune_kernel_close(dtune_kernel *k);

/* Fills *out with what k computes and needs. */
DTUNE_API int dtune_kernel_info_get(const dtune_kernel *k, dtune_kernel_info *out);

/* The size in bytes of k's packed weights for the op's dims dims[0..ndims)
 * (info.dims order; dims the weights do not depend on, such as dense's M,
 * may be any value >= 1): *bytes is 0 for an op without packed weights. */
DTUNE_API int dtune_kernel_packed_size(const dtune_kernel *k, const int64_t *dims, int ndims,
                                       size_t *bytes);

/* Packs the weights W (as the op stores them: dense N×K, conv2d
 * K×R×S×C/groups, in the dtype's B type) once for k into packed
 * (packed_size bytes, at least dtune_kernel_packed_size's; 64-byte aligned
 * is fastest).  scale_b[N]: the weight scales of a quantized dtype
 * (info.scale_b), each finite and non-zero; NULL otherwise.  DTUNE_EINVAL
 * for an op without packed weights, a small buffer or a bad scale (nothing
 * is packed then). */
DTUNE_API int dtune_kernel_pack(const dtune_kernel *k, const int64_t *dims, int ndims,
                                const void *W, const float *scale_b, void *packed,
                                size_t packed_size);

/* One call's tensors, all contiguous, borrowed for the call. */
typedef struct dtune_kernel_args {
    const int64_t *dims; /* the op's dims (info.dims order), info.ndims values, each >= 1 */
    const void *a;       /* A: dense X[M][K], batch_matmul A[B][M][K], conv2d X (NHWC) */
    const void *b;       /* the packed weights when info.packs_weights, else
                            batch_matmul's B[B][K][N] (NN) or B[B][N][K] (NT) */
    const float *bias;   /* bias[N] when info.bias, else NULL */
    void *c;             /* the float output: C[B][M][N], dense Y[M][N], conv2d Y (NHWC) */
    int threads;         /* <= 0: the thread count the kernel was tuned with */
    float scale_a;       /* int8 (info.scale_a): A's real value is scale_a·(a − zp_a), */
    int32_t zp_a;        /* scale_a finite, zp_a 0..255; ignored otherwise */
} dtune_kernel_args;

/* Runs k once.  Thread-safe: any number of threads may run one kernel at
 * once.  DTUNE_EINVAL for a NULL tensor, a missing or unexpected bias,
 * dims that are not the op's (wrong count, below 1, a convolution's window
 * larger than its padded image), or int8 quantization out of range;
 * DTUNE_EOVERFLOW for tensors whose size does not fit int64.  Nothing runs
 * then. */
DTUNE_API int dtune_kernel_run(const dtune_kernel *k, const dtune_kernel_args *args);

#ifdef __cplusplus
}
#endif
#endif
