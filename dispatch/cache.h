/* A thread-safe cache of dispatch tables read from one dtune database: the
 * query path shared by libdtune (dtune_lookup) and the daemon
 * (GET /v1/schedules).
 *
 * The database is opened read-only; WAL lets it sit beside a daemon or a
 * tuner that writes to the same file.  A lookup names a workload (any
 * spelling of its key), a shape, a target and a thread count and gets the
 * micro-kernel the schedule dispatches for that shape (dispatch/dispatch.h:
 * shapes outside the tuned set take the nearest range's kernel and are
 * flagged extrapolated).
 *
 * Speed: the first lookup of a (key as spelled, target, threads) loads its
 * table and the annotations of its kernels from the database; later lookups
 * are a hash probe under a read lock, the shape parse and the box search (a
 * binary search with one variable), with no allocation and no SQL (well
 * under 1 us).  Misses (unknown
 * workload, target or schedule) are cached the same way, so a repeated
 * miss is cheap too.  At most DT_DISPATCH_CACHE_MAX_ENTRIES triples are
 * kept; past that the cache is emptied and refilled on demand.
 *
 * Freshness rule: at most once per check interval (default
 * DT_DISPATCH_CACHE_CHECK_MS = 100 ms, CLOCK_MONOTONIC_COARSE), a lookup
 * asks SQLite for PRAGMA data_version, which changes whenever another
 * connection (a tuner, the daemon, `dtune tune`) commits to the file.  When
 * it changed, every cached table is marked stale and reloaded by its next
 * lookup.  So a schedule committed by another process is returned by every
 * lookup that starts more than one check interval after the commit (plus
 * the time of one reload).  Lookups never block on a writer: WAL readers
 * see the last committed state.  When a reload fails for a reason other
 * than bad input (the file busy or unreadable, or the new schedule's rows
 * damaged), the stale table answers.
 *
 * Thread safety: every function may be called from any number of threads at
 * once on one cache, except dt_dispatch_cache_close (no lookup may be running
 * or start on that cache).  Table loads are serialised on the cache's single
 * database connection; lookups of loaded tables run in parallel.
 *
 * Ownership: strings passed in are read during the call only.  A
 * dt_dispatch_cache_result is a plain value filled by the lookup (its text
 * is copied into it), so it stays valid however the cache changes later. */
#ifndef DT_DISPATCH_CACHE_H
#define DT_DISPATCH_CACHE_H

#include <stdint.h>

#include "common/error.h"
#include "common/target.h"
#include "shape/workload.h"

#define DT_DISPATCH_CACHE_CHECK_MS 100
#define DT_DISPATCH_CACHE_MAX_ENTRIES 1024
#define DT_DISPATCH_ANNOTATION_MAX 1024   /* longest annotation JSON returned */
#define DT_DISPATCH_SHAPE_MAX 128         /* longest shape text */
#define DT_DISPATCH_NAME_MAX 64           /* op and sketch names */

typedef struct dt_dispatch_cache dt_dispatch_cache;

/* What to look up.  shape is text naming every variable ("M=37",
 * "batch=2,seq=37"); when it is NULL, vals[0..nvals) give the values in the
 * workload's canonical variable order (sorted by name, as in the key), and
 * nvals must equal the workload's variable count. */
typedef struct dt_dispatch_query {
    const char *workload_key; /* any spelling; canonicalised */
    const char *shape;        /* NULL: use vals */
    const int64_t *vals;
    int nvals;
    const char *target_key;   /* NULL: this machine (detected once, at open) */
    int threads;              /* 0: the highest thread count with a schedule */
} dt_dispatch_query;

typedef struct dt_dispatch_cache_result {
    int64_t kernel_id;
    char op[DT_DISPATCH_NAME_MAX];       /* "dense", "batch_matmul", ... */
    char sketch[DT_DISPATCH_NAME_MAX];   /* "blocked", "stream" */
    char backend[DT_DISPATCH_NAME_MAX];  /* "bf16/amx", "f32/avx512"; "?" if none */
    char annotation[DT_DISPATCH_ANNOTATION_MAX]; /* canonical JSON as stored */
    double predicted_ns;   /* mean over the range; NAN when unknown */
    double measured_ns;    /* mean over the range; NAN when unknown */
    int extrapolated;      /* 1: the shape is not in the tuned set (nearest range used) */
    int threads;           /* the schedule's thread count */
    char shape[DT_DISPATCH_SHAPE_MAX];    /* canonical text of the shape looked up */
    char range_lo[DT_DISPATCH_SHAPE_MAX]; /* the range whose kernel was chosen */
    char range_hi[DT_DISPATCH_SHAPE_MAX];
    char workload_key[DT_KEY_MAX];        /* canonical */
    char target_key[DT_TARGET_KEY_MAX];
} dt_dispatch_cache_result;

/* Opens db_path read-only and detects this machine's target key.
 * DT_ENOTFOUND for a missing file, DT_ENOTDTUNE for a file that is not a
 * dtune database, DT_EVERSION for another schema version (dt_db_open).  On
 * success the caller closes *out with dt_dispatch_cache_close. */
int dt_dispatch_cache_open(const char *db_path, dt_dispatch_cache **out, dt_err *e);

/* Frees the cache and closes its database (NULL is allowed). */
void dt_dispatch_cache_close(dt_dispatch_cache *c);

/* The check interval of the freshness rule, in ms (>= 0; 0 checks on every
 * lookup).  For tests and for callers that need faster visibility. */
void dt_dispatch_cache_set_check_interval(dt_dispatch_cache *c, int ms);

/* This machine's target key, as used for target_key == NULL; owned by c. */
const char *dt_dispatch_cache_local_target(const dt_dispatch_cache *c);

/* Looks up q and fills *out.  DT_EINVAL for a malformed workload key or
 * shape (or nvals that does not match), with the reason; DT_ENOTFOUND when
 * the workload, the target or a schedule is missing, with a message naming
 * which; DT_EDB/DT_EBUSY when the database cannot be read, DT_EDB too when
 * the stored schedule does not load (damage: dt_dispatch_load's message
 * names the schedules row and suggests `dtune db check`). */
int dt_dispatch_cache_lookup(dt_dispatch_cache *c, const dt_dispatch_query *q,
                             dt_dispatch_cache_result *out, dt_err *e);

/* Counters since open: table loads (first loads and reloads, misses
 * included) and freshness checks that found a change.  Either may be NULL. */
void dt_dispatch_cache_stats(dt_dispatch_cache *c, uint64_t *loads, uint64_t *changes);

#endif
