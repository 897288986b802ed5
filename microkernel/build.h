/* Building micro-kernels: spawn $CC on the generated source, in parallel up
 * to a job limit, each with a time limit, and cache the shared object by the
 * hash of (compiler identity, flags, source), so a kernel is compiled once
 * per machine.  Compiler output is captured into the result, never printed.
 *
 * Ownership: a dt_builder is initialised once (it runs `$CC --version`) and
 * is read-only afterwards, so it may be shared by threads.  Each
 * dt_build_result owns its log (free with dt_build_result_free). */
#ifndef DT_MICROKERNEL_BUILD_H
#define DT_MICROKERNEL_BUILD_H

#include <limits.h>
#include <stddef.h>

#include "common/error.h"

#define DT_BUILD_DEFAULT_FLAGS "-O3 -march=native -fopenmp -fPIC -shared"
#define DT_BUILD_DEFAULT_TIMEOUT 120.0

typedef struct dt_builder {
    char cc[256];            /* $CC, else "cc" */
    char flags[512];         /* DT_BUILD_DEFAULT_FLAGS unless set */
    char cache_dir[3072];     /* leaves room for file names under PATH_MAX */
    char cc_identity[512];   /* first line of `cc --version` */
    double timeout_s;
} dt_builder;

typedef enum {
    DT_BUILD_OK = 0,
    DT_BUILD_COMPILE_ERROR,   /* the compiler ran and failed: log has why */
    DT_BUILD_TIMEOUT,         /* killed after timeout_s */
    DT_BUILD_SYSTEM_ERROR,    /* could not write, spawn, rename ... */
} dt_build_status;

typedef struct dt_build_result {
    dt_build_status status;
    int cache_hit;            /* the .so was already there */
    char hash[65];            /* hex BLAKE2b-256 of identity + flags + source */
    char so_path[PATH_MAX];
    char *log;                /* compiler output or the system error (malloc'ed) */
    double seconds;           /* wall time spent building (0 on a hit) */
} dt_build_result;

/* cache_dir NULL: $DTUNE_CACHE_DIR, else $XDG_CACHE_HOME/dtune/kernels, else
 * $HOME/.cache/dtune/kernels (created).  cc / flags NULL: defaults above. */
int dt_builder_init(dt_builder *b, const char *cc, const char *flags, const char *cache_dir,
                    dt_err *e);

/* Builds n sources with at most jobs compilers at once (jobs <= 0: the
 * number of online CPUs).  Fills results[i] for every i; returns 0 when the
 * build machinery worked (even if some kernels failed to compile: see
 * results[i].status), or a negative code if it could not run at all. */
int dt_build_many(const dt_builder *b, const char *const *sources, int n, int jobs,
                  dt_build_result *results, dt_err *e);
/* One source. */
int dt_build_one(const dt_builder *b, const char *source, dt_build_result *r, dt_err *e);
void dt_build_result_free(dt_build_result *r);
const char *dt_build_status_name(dt_build_status s);

/* Hex BLAKE2b-256 of the concatenation of n strings, each followed by NUL. */
void dt_hash_strings(const char *const *parts, int n, char out[65]);

#endif
