/* The dtune database: one SQLite file holding targets, workloads, kernels,
 * measurement records, dispatch schedules, cost models and daemon jobs.
 * docs/database.md describes the schema and the migration policy.
 *
 * This header is the only way into the database: no SQL exists outside db/.
 *
 * Conventions
 * - Every function returning int returns DT_OK (0) or a negative DT_E* code
 *   and fills the caller-owned dt_err (may be NULL) with what was being done,
 *   the database path and SQLite's message.  SQLITE_BUSY past the busy
 *   timeout is DT_EBUSY; a violated constraint (foreign key, CHECK, NOT NULL)
 *   is DT_EINVAL; a missing row asked for by key or id is DT_ENOTFOUND.
 * - Every write runs in a transaction: inside the caller's one when
 *   dt_db_begin() is active (as a savepoint, so a failed call leaves the
 *   caller's earlier writes intact), else in its own BEGIN IMMEDIATE.
 * - Ids are SQLite rowids (> 0).  Timestamps are unix seconds.
 * - JSON columns hold JSON text; writers check that it parses (DT_EINVAL if
 *   not).  Kernel annotations are stored canonical (compact, keys sorted) so
 *   that equal annotations give the same kernel.
 * - Shapes are canonical text written by shape/ ("M=37", "batch=2,seq=37");
 *   the database compares them as strings only.
 * - Ownership: strings passed in are only read during the call.  Structs
 *   filled by a get/list/load function own their strings (and blobs) until
 *   the matching *_free() function; the caller owns the struct itself.
 *   Structs passed to a callback borrow everything for that call only.
 * - A dt_db handle is used by one thread at a time; open one per thread.
 *   Any number of processes may open the same file: WAL mode lets readers
 *   run while one writer writes. */
#ifndef DT_DB_H
#define DT_DB_H

#include "common/error.h"
#include "common/trial_status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PRAGMA application_id of every dtune database: "dtun" in ASCII. */
#define DT_DB_APPLICATION_ID 0x6474756e
/* PRAGMA user_version this build creates and understands. */
#define DT_DB_SCHEMA_VERSION 3
/* Default wait for another connection's lock before DT_EBUSY. */
#define DT_DB_BUSY_TIMEOUT_MS 5000

typedef struct dt_db dt_db;

/* ---- open, close, schema --------------------------------------------- */

enum {
    DT_DB_READONLY = 1u << 0,  /* never writes; the file must exist and be current */
    DT_DB_CREATE = 1u << 1,    /* create the file if missing */
    /* Open without applying migrations: the handle may be at an older schema
     * version (0 for a new file).  For tests and tools; see dt_db_migrate_to. */
    DT_DB_NOMIGRATE = 1u << 2,
};

/* Opens (or with DT_DB_CREATE creates) the database at path and brings its
 * schema up to DT_DB_SCHEMA_VERSION.  The file is identified before anything
 * is written, and is left byte-for-byte unchanged when it is refused:
 *   - missing file without DT_DB_CREATE             -> DT_ENOTFOUND
 *   - not SQLite, or SQLite but not dtune's         -> DT_ENOTDTUNE
 *   - dtune schema newer than this build            -> DT_EVERSION
 *   - DT_DB_READONLY on an older (or empty) schema  -> DT_EVERSION
 * An empty file (0 bytes, or SQLite without any table and without an
 * application_id) counts as schema version 0 and is initialised.
 * Permission and I/O failures are DT_EIO ("cannot read database ...").
 * An open that finds the file busy (another process creating or migrating
 * it) is retried with back-off for up to DT_DB_BUSY_TIMEOUT_MS.
 * DT_DB_READONLY never creates or writes any file, the -wal and -shm side
 * files included, and needs no write access to the directory
 * (docs/database.md, "Read-only opens").
 * On success *out is a handle the caller closes with dt_db_close. */
int dt_db_open(const char *path, unsigned flags, dt_db **out, dt_err *e);

/* Closes the handle (NULL is allowed); rolls back an unfinished transaction. */
void dt_db_close(dt_db *db);

/* The path given to dt_db_open; owned by db. */
const char *dt_db_path(const dt_db *db);

/* True when dt_db_open found the file missing or empty (0 bytes) and
 * created its schema (of several processes creating it at once, the one
 * that did); with DT_DB_NOMIGRATE, when it found it missing or empty. */
bool dt_db_was_created(const dt_db *db);

/* Schema version found by dt_db_open, before any migration (read again
 * under the write lock when it migrates). */
int dt_db_opened_version(const dt_db *db);

/* Current schema version (PRAGMA user_version) or a negative DT_E* code. */
int dt_db_schema_version(dt_db *db);

/* Applies the forward migrations from the current version up to version
 * (<= DT_DB_SCHEMA_VERSION), each in its own BEGIN IMMEDIATE transaction
 * that also stamps user_version and application_id.  Going down is
 * DT_EINVAL; so is calling it on a read-only handle or inside dt_db_begin. */
int dt_db_migrate_to(dt_db *db, int version, dt_err *e);

/* What dt_db_backup copied. */
typedef struct {
    int pages;     /* database pages copied */
    int64_t bytes; /* size of the copy */
} dt_db_backup_info;

/* Writes a consistent copy of db to the new file dest with SQLite's online
 * backup (one read transaction: safe beside a running daemon or tune, which
 * it does not block).  The copy is written beside dest and linked into place
 * only when complete, so dest is never partial; an existing dest (a link
 * too, dangling or not) is DT_EINVAL (never overwritten), and so is a dest
 * another program would overwrite or apply to the copy: a name ending in
 * -wal, -shm or -journal (a database's side file), one ending in .lock (the
 * daemon's lock file of a database), or one whose own -wal, -shm or
 * -journal exists.  Works on read-only handles.  out may be NULL. */
int dt_db_backup(dt_db *db, const char *dest, dt_db_backup_info *out, dt_err *e);

/* Looks for damage: SQLite's quick_check (reads the whole file), every
 * table of the file's schema version (columns, foreign keys, indexes)
 * against what the migrations create, then rows no writer stores: a
 * reference to a missing row, JSON that does not parse.  DT_EINVAL with a
 * message that says what is wrong ("database PATH is damaged: table jobs is
 * missing"). */
int dt_db_check(dt_db *db, dt_err *e);

/* PRAGMA data_version: changes when another connection commits to the file
 * (readers use it to notice new schedules without re-reading them).  On a
 * read-only snapshot handle (docs/database.md, "Read-only opens") a file
 * that moved on is reopened first, and the value changes too. */
int dt_db_data_version(dt_db *db, int64_t *out, dt_err *e);

/* Replaces the busy timeout (ms) set by dt_db_open. */
void dt_db_set_busy_timeout(dt_db *db, int ms);

/* ---- transactions ----------------------------------------------------- */

/* BEGIN IMMEDIATE: takes the write lock now (DT_EBUSY after the timeout).
 * DT_EINVAL when a transaction is already open or the handle is read-only. */
int dt_db_begin(dt_db *db, dt_err *e);
/* COMMIT; on failure the transaction is rolled back and the error returned. */
int dt_db_commit(dt_db *db, dt_err *e);
/* ROLLBACK; DT_OK when no transaction is open. */
int dt_db_rollback(dt_db *db, dt_err *e);

/* ---- targets ----------------------------------------------------------- */

typedef struct {
    int64_t id;
    const char *key;   /* canonical target key, unique */
    const char *isa;   /* e.g. "avx512", "avx2", "generic" */
    const char *info;  /* JSON: cores, caches, ... */
    int64_t created_at;
} dt_db_target;

/* Inserts the target, or updates isa/info of the one with this key;
 * *id (may be NULL) receives its id.  info may be NULL (stored as {}). */
int dt_db_target_upsert(dt_db *db, const char *key, const char *isa, const char *info_json,
                        int64_t *id, dt_err *e);
/* Fills *out (free with dt_db_target_free); DT_ENOTFOUND if no such key. */
int dt_db_target_get(dt_db *db, const char *key, dt_db_target *out, dt_err *e);
void dt_db_target_free(dt_db_target *t);

/* ---- workloads --------------------------------------------------------- */

typedef struct {
    int64_t id;
    const char *key;        /* canonical, e.g. "dense(M=1..128,N=768,K=768)" */
    const char *op;         /* "dense", "batch_matmul", ... */
    const char *shape_set;  /* JSON: variable ranges and weights */
    int64_t created_at;
} dt_db_workload;

/* Inserts the workload, or updates op/shape_set of the one with this key. */
int dt_db_workload_upsert(dt_db *db, const char *key, const char *op,
                          const char *shape_set_json, int64_t *id, dt_err *e);
/* By key / by id; DT_ENOTFOUND if absent.  Free with dt_db_workload_free. */
int dt_db_workload_get(dt_db *db, const char *key, dt_db_workload *out, dt_err *e);
int dt_db_workload_get_by_id(dt_db *db, int64_t id, dt_db_workload *out, dt_err *e);
void dt_db_workload_free(dt_db_workload *w);
/* All workloads by id; *out is a malloc'ed array (NULL when *n is 0) that
 * the caller frees with dt_db_workloads_free(*out, *n). */
int dt_db_workload_list(dt_db *db, dt_db_workload **out, size_t *n, dt_err *e);
void dt_db_workloads_free(dt_db_workload *ws, size_t n);

/* ---- kernels (micro-kernels: op + dtype + attributes + sketch + annotation) */

/* A kernel's identity is (op, dtype, attrs, sketch, annotation): the row
 * alone decides its generated source (docs/database.md, "kernels").  One
 * sketch and annotation generated for two attribute sets (dense with two
 * epilogues) are two rows. */
typedef struct {
    int64_t id;
    const char *op;
    const char *dtype;        /* element type name: "f32" */
    const char *attrs;        /* canonical JSON object: the op's attribute values by name */
    const char *sketch;       /* sketch name */
    const char *annotation;   /* canonical JSON: MR, NR, KC, ... */
    const char *source_hash;  /* hash of the generated C source; may be NULL */
    int64_t created_at;
} dt_db_kernel;

/* Returns the id of the kernel (op, dtype, attrs, sketch, annotation),
 * inserting it if new.  attrs and the annotation are canonicalised first, so
 * key order and whitespace do not matter; attrs must be a JSON object (NULL:
 * "{}", the op's default attribute values); dtype NULL is "f32".
 * source_hash (may be NULL) is only stored on insert. */
int dt_db_kernel_intern_attrs(dt_db *db, const char *op, const char *dtype, const char *attrs_json,
                              const char *sketch, const char *annotation_json,
                              const char *source_hash, int64_t *id, dt_err *e);
/* dt_db_kernel_intern_attrs with dtype f32 and attrs "{}" (the op's
 * defaults): for hand-made kernels and tests.  The tuner stores the
 * attributes it generated with. */
int dt_db_kernel_intern(dt_db *db, const char *op, const char *sketch,
                        const char *annotation_json, const char *source_hash, int64_t *id,
                        dt_err *e);
/* DT_ENOTFOUND if absent.  Free with dt_db_kernel_free. */
int dt_db_kernel_get(dt_db *db, int64_t id, dt_db_kernel *out, dt_err *e);
void dt_db_kernel_free(dt_db_kernel *k);

/* ---- measurements (trial records) --------------------------------------- */

/* measurements.status is a dt_trial_status (common/trial_status.h): the one
 * status enum, shared with measure/; dt_trial_status_name gives the stored
 * names. */

typedef struct {
    int64_t id;           /* set by the database */
    int64_t kernel_id;
    int64_t target_id;
    int64_t workload_id;
    const char *shape;    /* canonical shape text */
    int threads;
    dt_trial_status status;
    double min_ns;        /* NAN when not measured (required when status is ok) */
    double median_ns;     /* NAN when not measured (required when status is ok) */
    const char *error;    /* failure detail, or NULL */
    const char *trial_uid; /* unique per trial: a trial is recorded once */
    int64_t created_at;   /* set by the database */
} dt_db_measurement;

/* Records one trial; id and created_at of *m are ignored.  If a record with
 * the same trial_uid exists nothing is inserted, *already (may be NULL) is
 * set to true and *id receives the existing record's id; this is DT_OK, so
 * a trial retried after a lost worker is recorded exactly once. */
int dt_db_measurement_insert(dt_db *db, const dt_db_measurement *m, int64_t *id,
                             bool *already, dt_err *e);

/* Which records to list or count; a 0 id matches any. */
typedef struct {
    int64_t workload_id;
    int64_t target_id;
    int64_t kernel_id;
    bool ok_only;  /* only status ok */
} dt_db_measurement_filter;

/* Called once per record, in id order.  *m and its strings are borrowed
 * for the call.  Return 0 to continue, > 0 to stop (the list call then
 * returns DT_OK), or a negative DT_E* code to abort: the list call returns
 * that code with a generic message (keep your own details in ud). */
typedef int (*dt_db_measurement_cb)(const dt_db_measurement *m, void *ud);

int dt_db_measurement_list(dt_db *db, const dt_db_measurement_filter *f,
                           dt_db_measurement_cb cb, void *ud, dt_err *e);
int dt_db_measurement_count(dt_db *db, const dt_db_measurement_filter *f, int64_t *n,
                            dt_err *e);

/* ---- schedules (dispatch table of a workload on a target) ---------------- */

typedef struct {
    int64_t id;
    int64_t workload_id;
    int64_t target_id;
    const char *shape_lo;  /* first corner of the box (canonical shape text) */
    const char *shape_hi;  /* last corner */
    int box;               /* 1: shape_lo..shape_hi are a box's corners (shape/box.h,
                            * what dtune writes); 0: a run of consecutive shapes in
                            * shape-set order (schema 2 rows; the same with one variable) */
    int64_t kernel_id;
    int threads;
    double predicted_ns;   /* NAN when unknown */
    double measured_ns;    /* NAN when unknown */
    int64_t created_at;
} dt_db_schedule;

/* Replaces the schedule of (workload_id, target_id) for `threads` threads
 * (>= 1) with rows[0..n) in one transaction: either all rows are stored or
 * the old schedule stays; schedules for other thread counts are kept.
 * id, workload_id, target_id, threads and created_at of the rows are
 * ignored; a row's box is 0 or 1 (DT_EINVAL otherwise).  n == 0 deletes the
 * schedule. */
int dt_db_schedule_replace(dt_db *db, int64_t workload_id, int64_t target_id, int threads,
                           const dt_db_schedule *rows, size_t n, dt_err *e);
/* The rows of (workload_id, target_id) for `threads` threads (0: every
 * thread count, ordered by threads), in the order they were given; *out is
 * malloc'ed (NULL when *n is 0), freed with dt_db_schedules_free. */
int dt_db_schedule_list(dt_db *db, int64_t workload_id, int64_t target_id, int threads,
                        dt_db_schedule **out, size_t *n, dt_err *e);
void dt_db_schedules_free(dt_db_schedule *rows, size_t n);

/* ---- cost models ------------------------------------------------------- */

typedef struct {
    int64_t id;
    int64_t target_id;
    const char *op;
    const void *model;    /* serialised XGBoost model */
    size_t model_size;
    int64_t n_records;    /* records it was trained on */
    const char *metrics;  /* JSON, or NULL */
    int64_t created_at;
} dt_db_cost_model;

/* Stores a new model for (target_id, op); older ones are kept as history.
 * size must be > 0.  metrics_json may be NULL. */
int dt_db_cost_model_save(dt_db *db, int64_t target_id, const char *op, const void *model,
                          size_t size, int64_t n_records, const char *metrics_json,
                          int64_t *id, dt_err *e);
/* The most recently saved model of (target_id, op); DT_ENOTFOUND if none.
 * Free with dt_db_cost_model_free. */
int dt_db_cost_model_load_latest(dt_db *db, int64_t target_id, const char *op,
                                 dt_db_cost_model *out, dt_err *e);
void dt_db_cost_model_free(dt_db_cost_model *m);

/* ---- jobs (daemon queue) ----------------------------------------------- */

typedef enum {
    DT_JOB_QUEUED = 0,
    DT_JOB_RUNNING,
    DT_JOB_DONE,
    DT_JOB_FAILED,
    DT_JOB_CANCELLED,
    DT_JOB_N_STATES
} dt_job_state;

#define DT_JOB_MASK(state) (1u << (state))
#define DT_JOB_MASK_UNFINISHED (DT_JOB_MASK(DT_JOB_QUEUED) | DT_JOB_MASK(DT_JOB_RUNNING))
#define DT_JOB_MASK_ALL ((1u << DT_JOB_N_STATES) - 1u)

const char *dt_job_state_name(dt_job_state s);
int dt_job_state_parse(const char *name, dt_job_state *out);

typedef struct {
    int64_t id;
    dt_job_state state;
    const char *spec;        /* JSON: what to tune */
    const char *options;     /* JSON or NULL */
    const char *checkpoint;  /* JSON or NULL: where to resume */
    const char *progress;    /* JSON or NULL */
    const char *error;       /* why it failed, or NULL */
    int64_t created_at;
    int64_t updated_at;
} dt_db_job;

/* Queues a new job (state queued).  Job ids are never reused. */
int dt_db_job_create(dt_db *db, const char *spec_json, const char *options_json, int64_t *id,
                     dt_err *e);
/* DT_ENOTFOUND if absent.  Free with dt_db_job_free. */
int dt_db_job_get(dt_db *db, int64_t id, dt_db_job *out, dt_err *e);
void dt_db_job_free(dt_db_job *j);
/* Jobs whose state is in mask (DT_JOB_MASK bits; 0 means all), by id;
 * *out is malloc'ed (NULL when *n is 0), freed with dt_db_jobs_free. */
int dt_db_job_list(dt_db *db, unsigned state_mask, dt_db_job **out, size_t *n, dt_err *e);
/* Counts the jobs in each state in one query (SELECT state, count(*) ...
 * GROUP BY state): counts[s] is the number of jobs in state s, 0 for a state
 * with none.  counts must have DT_JOB_N_STATES elements; on failure they are
 * all set to -1. */
int dt_db_job_counts(dt_db *db, int64_t counts[DT_JOB_N_STATES], dt_err *e);
/* Queued and running jobs: what a restarted daemon resumes. */
int dt_db_job_list_unfinished(dt_db *db, dt_db_job **out, size_t *n, dt_err *e);
void dt_db_jobs_free(dt_db_job *jobs, size_t n);

/* What dt_db_job_update changes; a NULL string leaves its column as is. */
typedef struct {
    bool set_state;
    dt_job_state state;
    const char *progress;    /* JSON */
    const char *checkpoint;  /* JSON */
    const char *error;       /* text; "" clears it */
} dt_db_job_update;

/* Applies u to job id in one write and bumps updated_at; DT_ENOTFOUND if
 * there is no such job. */
int dt_db_job_update_fields(dt_db *db, int64_t id, const dt_db_job_update *u, dt_err *e);

/* ---- upkeep: check, prune, merge, job retention (docs/database.md, "Upkeep") */

/* One problem dt_db_check_all found: kind is a static word ("integrity",
 * "schema", "foreign_key", "json", "kernel", "measurement", "schedule",
 * "cost_model", "job", "workload"); message says what and where.  Both are
 * borrowed for the call. */
typedef void (*dt_db_problem_cb)(const char *kind, const char *message, void *ud);

/* ---- how the layer above reads a stored schedule -------------------------
 * db/ stores a schedule's corners as text and never parses a workload key
 * or a shape; the dispatch layer does (dispatch/dispatch.h).  A schedule
 * reader, set on a handle, lets dt_db_check_all ask that layer whether it
 * can serve each stored schedule, parsing it as a lookup will, so a row
 * whose corners name variables its workload does not have (or are not
 * shapes of its set) is found by `dtune db check` rather than by the next
 * query.
 *
 * The reader is called once per schedule (workload, target, threads) whose
 * workload row exists, with the workload's stored key and the schedule's
 * rows in stored order (ids, corners, box flags, kernels, threads: as
 * dt_db_schedule_list gives them).  It calls report(ctx, i, message) for
 * each problem, i the index in rows of the row it is about.  whole is
 * false when dt_db_check_all's own rules already reported a problem in
 * these rows: the reader then reads each row alone and not the table they
 * make (an overlap would be reported twice).  It returns DT_OK when it
 * could read the schedule, whatever it found, else a negative DT_E* code
 * with e filled (out of memory): the check then fails. */
typedef void (*dt_db_schedule_problem_fn)(void *ctx, size_t row, const char *message);
typedef int (*dt_db_schedule_reader_fn)(const char *workload_key, const dt_db_schedule *rows,
                                        size_t n, bool whole, dt_db_schedule_problem_fn report,
                                        void *ctx, void *ud, dt_err *e);

/* Sets (fn NULL: clears) db's schedule reader; ud is passed to every call.
 * dt_db_check_all and everything built on it use it: dt_db_require_sound,
 * so dt_db_prune of db, and dt_db_merge, whose source gets the
 * destination's reader.  Without one the rows are checked by db/'s own
 * rules only.  dispatch/dispatch.h, dt_dispatch_attach_reader, sets the
 * dispatch layer's. */
void dt_db_set_schedule_reader(dt_db *db, dt_db_schedule_reader_fn fn, void *ud);

/* dt_db_check's checks with SQLite's full integrity_check, every one run to
 * the end, plus dtune's own invariants (docs/database.md lists them), and
 * every schedule read by the handle's schedule reader when it has one.  cb
 * (may be NULL) is called once per problem; at most DT_DB_CHECK_MAX_PER_RULE
 * rows are reported per rule, then one "... and N more" message, but
 * *problems counts them all.  DT_OK when the checks ran, whatever they
 * found; a negative code when they could not. */
#define DT_DB_CHECK_MAX_PER_RULE 20
int dt_db_check_all(dt_db *db, dt_db_problem_cb cb, void *ud, int64_t *problems, dt_err *e);

/* dt_db_check_all as a refusal, for what must not run on a damaged file
 * (merge reads its sources, prune its file with it).  DT_OK when nothing
 * was found; else DT_EINVAL "cannot DOING: database PATH is damaged (N
 * problems): ..." where ... is the problems themselves when cb is NULL (as
 * many as the message holds, then where to see them all), or "listed" when
 * cb (may be NULL) was given each of them.  Other codes: the check could
 * not run. */
int dt_db_require_sound(dt_db *db, const char *doing, dt_db_problem_cb cb, void *ud,
                        dt_err *e);

/* How long finished jobs (done, failed, cancelled) are kept. */
typedef struct {
    int64_t max_age_s; /* updated more than this long ago: deleted; < 0: no age limit */
    int64_t max_count; /* beyond the newest max_count: deleted; < 0: no count limit */
} dt_db_job_retention;

#define DT_DB_KEEP_JOBS_DEFAULT "30d"

/* Parses "30d", "12h", "90m", "3600s" (an age), "500" (a count) or "all"
 * (keep everything) into *out; DT_EINVAL with a message otherwise. */
int dt_db_job_retention_parse(const char *text, dt_db_job_retention *out, dt_err *e);
/* Formats r as dt_db_job_retention_parse reads it. */
void dt_db_job_retention_format(const dt_db_job_retention *r, char *buf, size_t size);

/* Deletes the finished jobs r does not keep (queued and running jobs are
 * never touched); now 0 is the clock.  With dry_run nothing is deleted.
 * *deleted (may be NULL) receives how many are (or would be) deleted. */
int dt_db_job_prune(dt_db *db, const dt_db_job_retention *r, int64_t now, bool dry_run,
                    int64_t *deleted, dt_err *e);

/* What dtune db prune keeps (docs/database.md, "Prune policy"). */
typedef struct {
    int keep;            /* best ok records per (workload, target, threads, shape); default 8 */
    int keep_failed;     /* newest deterministic failures per (workload, target, threads); 256 */
    dt_db_job_retention jobs;
    bool dry_run;        /* count only */
    bool vacuum;         /* VACUUM after deleting (not in a dry run) */
    int64_t now;         /* 0: the clock (for job ages and the kernels' grace period) */
    /* a damaged file is never pruned (dt_db_require_sound): its problems go
     * to on_problem when set, else into the error message */
    dt_db_problem_cb on_problem;
    void *problem_ud;
} dt_db_prune_opts;

#define DT_DB_PRUNE_KEEP_DEFAULT 8
#define DT_DB_PRUNE_KEEP_FAILED_DEFAULT 256
/* Kernels no row refers to are deleted only when older than this: a running
 * tune may hold the id of a kernel it interned and has not recorded yet. */
#define DT_DB_PRUNE_KERNEL_GRACE_S (7 * 86400)

enum { DT_PRUNE_MEASUREMENTS, DT_PRUNE_KERNELS, DT_PRUNE_COST_MODELS, DT_PRUNE_JOBS,
       DT_PRUNE_N_TABLES };

typedef struct {
    struct {
        const char *table; /* static */
        int64_t rows;      /* before */
        int64_t deleted;   /* deleted (or, in a dry run, to delete) */
        int64_t bytes;     /* payload of those rows (column lengths): an estimate */
    } tables[DT_PRUNE_N_TABLES];
    int64_t size_before;   /* main file + -wal, bytes */
    int64_t size_after;    /* after the delete and the VACUUM (= before in a dry run) */
    bool vacuumed;
} dt_db_prune_info;

/* dt_db_prune_opts with the defaults. */
dt_db_prune_opts dt_db_prune_defaults(void);
/* Deletes what o does not keep in one transaction (or counts it, dry_run),
 * then VACUUMs and checkpoints the WAL when o->vacuum.  A file with any
 * problem dt_db_check_all finds is refused first (DT_EINVAL, nothing
 * written).  Safe beside a
 * running daemon or tune: it waits for their write lock like any writer. */
int dt_db_prune(dt_db *db, const dt_db_prune_opts *o, dt_db_prune_info *out, dt_err *e);

/* Scores a schedule of workload_key for a merge conflict: the objective,
 * lower is better, or NAN when unknown.  rows carry destination ids
 * (workload, target, kernel); db is the destination, inside the merge's
 * transaction, the source's records already merged into it. */
typedef double (*dt_db_schedule_score_fn)(dt_db *db, const char *workload_key,
                                          const dt_db_schedule *rows, size_t n, void *ud);

typedef struct {
    int64_t targets, workloads, kernels, measurements, cost_models; /* rows added */
    int64_t schedules_added;     /* (workload, target, threads) the destination lacked */
    int64_t schedules_replaced;  /* conflicts the source's schedule won */
    int64_t schedules_kept;      /* conflicts the destination's schedule won (or a tie) */
    int64_t schedules_same;      /* identical in both */
} dt_db_merge_info;

/* Merges the database at src_path into db (opened for writing) in one
 * transaction, by natural keys (docs/database.md, "Merge"): running it again
 * adds nothing.  The source is opened read-only and must be at this build's
 * schema version (DT_EVERSION otherwise); a source with any problem
 * dt_db_check_all finds (with db's schedule reader) is refused, DT_EINVAL,
 * nothing written.  score (may be NULL: the mean of the rows' measured_ns,
 * else predicted_ns) decides schedule conflicts. */
int dt_db_merge(dt_db *db, const char *src_path, dt_db_schedule_score_fn score, void *ud,
                dt_db_merge_info *out, dt_err *e);

/* ---- statistics -------------------------------------------------------- */

#define DT_DB_N_TABLES 7

typedef struct {
    int schema_version;
    const char *path;        /* owned by db */
    int64_t size_bytes;      /* main database file */
    int64_t wal_bytes;       /* the -wal file, 0 if absent */
    char journal_mode[16];   /* "wal", "delete", ... */
    struct {
        const char *name;    /* static */
        int64_t rows;        /* -1 when the table does not exist */
    } tables[DT_DB_N_TABLES];
} dt_db_stats_info;

int dt_db_stats(dt_db *db, dt_db_stats_info *out, dt_err *e);

#endif
