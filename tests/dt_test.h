/* Helpers shared by the CUnit suites: a main() runner, temporary
 * directories, and running the real `dtune` binary for end-to-end tests. */
#ifndef DT_TEST_H
#define DT_TEST_H

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/target.h"
#include "db/db.h"
#include "microkernel/build.h"
#include "microkernel/loader.h"
#include "space/annotation.h"

/* Registers the NULL-terminated suites, runs them verbosely and returns the
 * process exit code (0 only when every test passed and at least one ran). */
int dt_test_main(CU_SuiteInfo *suites);

/* A check that cannot run here (no such instruction, not root, no clang):
 * prints "skipped: WHY" at once and counts it.  dt_test_main closes every
 * suite with "skipped N: WHY; WHY (xK)" (or "skipped 0"), and with
 * $DTUNE_TEST_REPORT set appends "skip<TAB>SUITE<TAB>WHY" to that file for
 * scripts/test.sh's summary.  A skip never makes a suite fail or pass. */
void dt_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Records that the native kernels of a back-end ("f32 avx2", "bf16
 * avx512_bf16") were built and verified in this suite (why NULL), or were
 * not, and why (also counted as a skip); appended to $DTUNE_TEST_REPORT as
 * "backend<TAB>NAME<TAB>ran" or "backend<TAB>NAME<TAB>skipped<TAB>WHY". */
void dt_test_backend(const char *name, const char *why);
/* dt_test_backend for a dtype's kernels on every ISA: "DTYPE generic",
 * "DTYPE avx2", "DTYPE avx512" ran up to top, the rest skipped (this CPU's
 * target stops at top). */
void dt_test_isa_backends(const char *dtype, dt_isa top);

/* Creates a fresh directory under $TMPDIR (or /tmp); returns a malloc'ed path. */
char *dt_test_tmpdir(void);
/* dt_test_tmpdir, plus DTUNE_CACHE_DIR set to its "cache" subdirectory
 * (created), so kernels built by the test and its children stay inside;
 * to $DTUNE_TEST_KERNEL_CACHE instead when that is set (see
 * dt_test_shared_kernel_cache).  The private one never shares, for
 * the tests whose timing needs kernels that are still to be built. */
char *dt_test_tmpdir_with_cache(void);
char *dt_test_tmpdir_with_private_cache(void);
/* The model spec at DTUNE_SOURCE_DIR/rel, parsed (NULL with the error on
 * stderr when it does not load); free with dt_model_free. */
struct dt_model;
struct dt_model *dt_test_load_model(const char *rel);
/* A suite's temporary directory, for CU_SuiteInfo's init and cleanup:
 * dt_test_suite_init makes dt_test_suite_dir (dt_test_suite_init_with_cache:
 * with DTUNE_CACHE_DIR inside it), dt_test_suite_cleanup removes it, and
 * dt_test_path(name) is DIR/name in a ring of 8 static buffers, so a test
 * can hold a few at once. */
extern char *dt_test_suite_dir;
int dt_test_suite_init(void);
int dt_test_suite_init_with_cache(void);
int dt_test_suite_cleanup(void);
const char *dt_test_path(const char *name);
/* Calls fn(path, ud) for every file (not starting with '.') of the source
 * tree's directory rel (e.g. "tests/data/fuzz/http"); returns how many, or
 * -1 when the directory cannot be read. */
int dt_test_for_each_file(const char *rel, void (*fn)(const char *path, void *ud), void *ud);
/* Whether an op's attribute values (attrs, as dt_op_next_attrs walks them)
 * existed when the goldens were taken (tests/test_backend.c,
 * test_golden_rows.c, test_microkernel.c's source hashes): the epilogue's
 * first six (none .. bias+gelu).  ReLU6 and HardSwish came later (issue
 * 45): new kernels, verified by the kernel suites, left out of the goldens. */
struct dt_op_desc;
int dt_test_golden_attrs(const struct dt_op_desc *op, const int *attrs);
/* Rows of the measurements table of the database at path (opened
 * read-only), or -1 when there is no file or it cannot be read. */
int64_t dt_test_count_records(const char *path);
/* Removes a directory tree made by dt_test_tmpdir. */
void dt_test_rmtree(const char *path);
/* Writes text to dir/name; returns a malloc'ed full path. */
char *dt_test_write_file(const char *dir, const char *name, const char *text);

/* A file's contents (malloc'ed, NUL-terminated; "" if unreadable). */
char *dt_test_slurp(const char *path);

/* Result of running a command through /bin/sh. */
typedef struct {
    int exit_code;   /* exit status, or 128+signal when killed */
    char *out;       /* captured stdout (malloc'ed, NUL-terminated) */
    char *err;       /* captured stderr (malloc'ed, NUL-terminated) */
} dt_test_proc;

/* Runs `DTUNE_BIN <args>` (args is shell syntax) and captures its output. */
int dt_test_run_dtune(dt_test_proc *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void dt_test_proc_free(dt_test_proc *p);

/* Runs `DTUNE_BIN <args>` and parses its stdout as JSON: the value (caller
 * decrefs) when it exits 0, else NULL with the exit code and stderr printed.
 * *code receives the exit code. */
json_t *dt_test_run_dtune_json(int *code, const char *args);

/* Checks a tuning curve ("curve" of `dtune tune --json` and of a daemon
 * job's progress): an array of points, each naming its workload, with
 * elapsed time and trials never decreasing and trials <= max_trials;
 * returns the number of points, -1 when malformed (what is wrong printed). */
int dt_test_check_curve(const json_t *curve, int64_t max_trials);

/* Starts `DTUNE_BIN worker --listen 127.0.0.1:0 --token-file TOKEN [extra...]`
 * in its own process group (its runner children die with a kill of the
 * group), stdin and stdout on /dev/null, stderr into log_path, DTUNE_LOG set
 * to log_level when not NULL; then waits up to timeout_s for its ready line
 * "dtune worker listening on 127.0.0.1:PORT (target KEY)".  Returns the port,
 * or -1 when it did not get ready in time or exited (the caller stops it).
 * *pid receives the worker's pid (0 once it exited); target_key (may be
 * NULL) the KEY of the ready line. */
typedef struct {
    const char *token_path, *log_path;
    const char *const *extra_args;   /* NULL-terminated, or NULL */
    const char *log_level;
    double timeout_s;
} dt_test_worker_opts;
int dt_test_start_worker(const dt_test_worker_opts *o, pid_t *pid, char *target_key,
                         size_t key_size);

/* Takes turns with a forked child: one byte over a pipe end.  await returns
 * false when none came within 20 s. */
void dt_test_signal_fd(int fd);
bool dt_test_await_fd(int fd);

/* Interns a kernel of op dense with an annotation sampled (seed) for target
 * tg in the given sketch; *id gets its id.  For fixtures of hand-made
 * schedules. */
int dt_test_add_sampled_kernel(dt_db *db, const dt_target *tg, int sketch, uint64_t seed,
                               int64_t *id, dt_err *e);

/* A kernel suite's setup: a fresh temporary directory (*dir, malloc'ed),
 * this machine's target, and a builder with flags (NULL: the default
 * flags) caching as said below.  0, or 1 (CUnit's failed setup). */
int dt_test_kernel_setup(char **dir, dt_target *t, dt_builder *b, const char *flags);
/* $DTUNE_TEST_KERNEL_CACHE when set (scripts/test.sh sets it, so the three
 * configurations it runs build each kernel once: the cache is keyed by the
 * compiler's identity, its flags and the source), else NULL.
 * dt_test_kernel_setup builds into it when set, into DIR otherwise;
 * dt_test_kernel_setup_private always into DIR, for the suites that test the
 * cache itself. */
const char *dt_test_shared_kernel_cache(void);
int dt_test_kernel_setup_private(char **dir, dt_target *t, dt_builder *b, const char *flags);
/* Its teardown: the directory removed and freed; 0. */
int dt_test_kernel_teardown(char **dir);

/* For suites that build AMX tile kernels on the emulation everywhere: *emu
 * is builder b with -DDT_AMX_EMULATE, *amx target t told it has AMX tiles
 * (amx_tile, amx_bf16, amx_int8), so tile annotations validate and sample
 * on any CPU. */
void dt_test_amx_emulation(const dt_builder *b, const dt_target *t, dt_builder *emu,
                           dt_target *amx);

/* Annotations drawn for dtype d on t the way the tuner draws them
 * (dt_annotation_sample_dtype: every row it searches here), `per` of each
 * sketch, the kernel ops cycling through ops[0..nops); built with b and
 * verified on the boundary shapes. */
void dt_test_verify_dtype_sampled(dt_dtype d, const char *const *ops, int nops, int per,
                                  uint64_t seed, const dt_builder *b, const dt_target *t);

/* A check of one built kernel (dt_test_verify_boundaries, or a suite's own):
 * 0, or non-zero with the reason in *e. */
typedef int (*dt_test_kernel_check)(const dt_kernel *k, const dt_kernel_op *kop,
                                    const dt_annotation *a, dt_err *e);

/* Every back-end row of dtype d by itself (the math=bf16 dtypes' suites):
 * per row `per` annotations of each sketch drawn for its unit, the kernel
 * ops cycling through the keys ops[0..nops), built and verified on the
 * boundary shapes — vector rows with b on target t where the CPU runs
 * them, tile rows on the emulation (emu, amx from dt_test_amx_emulation)
 * and again natively where AMX is usable here; each row reported through
 * dt_test_backend; each kernel checked by check (NULL: on the boundary
 * shapes, dt_test_verify_boundaries).  Returns the number of rows of d. */
int dt_test_verify_dtype_rows(dt_dtype d, const char *const *ops, int nops, int per,
                              uint64_t seed, const dt_builder *b, const dt_builder *emu,
                              const dt_target *t, const dt_target *amx,
                              dt_test_kernel_check check);

/* A stream-sketch vector annotation (JSON, into buf of n bytes) of the isa
 * bf16 kernels run at on t (its native row, else its portable one): a 4 x
 * 2-vector register tile, one thread.  For bench tests comparing back-ends. */
void dt_test_bf16_vector_kernel_json(const dt_target *t, char *buf, size_t n);

/* Verifies conv2d kernel k (built for kop) at 1 and 2 threads on each of
 * shapes[0..n): {N, H, W, C, K, R, S, stride, pad, dilation, groups,
 * stride_w, dilation_w, pad_w, pad_b, pad_r (0 / -1: inherited),
 * transpose, out_pad, out_pad_w (left out: 0, a forward convolution)}, the
 * attributes set on a copy of kop, operands seeded seed + i; 0, or the first
 * failure with its shape's index in *e. */
#define DT_TEST_CONV_SHAPE 19
int dt_test_verify_conv_shapes(const dt_kernel *k, const dt_kernel_op *kop,
                               const int64_t (*shapes)[DT_TEST_CONV_SHAPE], size_t n,
                               uint64_t seed, dt_err *e);

/* The kernel op of workload key (a zeroed op, and the reason on stderr, when
 * the key does not parse). */
dt_kernel_op dt_test_kop(const char *key);

/* The boundary cases every micro-kernel must pass, each at 1 and 2 threads
 * (dt_verify_kernel): M = 1, M < MR, M prime, M past one M block; N not a
 * multiple of NR; K not a multiple of KC, of the unroll or of any K group
 * (each remainder mod 4), K = 1; batch > 1 for an op with a batch dim. */
int dt_test_verify_boundaries(const dt_kernel *k, const dt_kernel_op *kop, const dt_annotation *a,
                              dt_err *e);

/* Builds n (op, annotation) pairs in parallel with builder b and loads each
 * into ks[i], checking it is bound to its (op, dtype)'s hooks and computes
 * its op; a kernel that fails to build or load is a CUnit failure printed
 * with the op and the annotation, and leaves ks[i] zeroed (handle NULL).
 * Returns how many loaded; dt_test_unload_all releases them. */
int dt_test_build_load(const dt_builder *b, const dt_kernel_op *kops, const dt_annotation *anns,
                       int n, dt_kernel *ks);
void dt_test_unload_all(dt_kernel *ks, int n);
/* Builds n (op, annotation) pairs in parallel with builder b, loads each,
 * checks it is bound to its (op, dtype)'s hooks and computes its op, then
 * runs check on it (NULL: dt_test_verify_boundaries); every failure is a
 * CUnit failure printed with the op and the annotation ($DT_TEST_TRACE set:
 * each kernel is named before its check). */
void dt_test_build_and_verify(const dt_builder *b, const dt_kernel_op *kops,
                              const dt_annotation *anns, int n, dt_test_kernel_check check);

#endif
