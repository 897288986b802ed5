/* Private to db/: the handle and the helpers every accessor file shares.
 * Nothing outside db/ includes this header. */
#ifndef DT_DB_INTERNAL_H
#define DT_DB_INTERNAL_H

#include "db/db.h"

#include "common/check.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>

/* The file a read-only snapshot handle was opened on (db.c). */
typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
} dt_db_file_id;

struct dt_db {
    sqlite3 *sql;
    char *path;          /* as given to dt_db_open, for messages */
    unsigned flags;      /* DT_DB_* */
    bool created;        /* this open created the schema in a new or empty file */
    int opened_version;  /* user_version found by dt_db_open */
    /* Read-only handles (docs/database.md, "Read-only opens"). */
    bool ready;          /* dt_db_open finished: statements may revalidate */
    bool wal_file;       /* the file header says WAL */
    bool snapshot;       /* immutable=1 (no -wal existed): reopened when the file moves on */
    dt_db_file_id seen;  /* the file the snapshot was read from */
    int64_t generation;  /* reopenings of a snapshot handle (part of data_version) */
    /* how the layer above reads a schedule (dt_db_set_schedule_reader) */
    dt_db_schedule_reader_fn reader;
    void *reader_ud;
};

/* DT_E* code for an SQLite result code. */
int dt_db_code(int sqlite_rc);

/* Fills e with "<what> in PATH: <SQLite message>" and returns the mapped
 * code of sqlite_rc.  what is a printf format. */
int dt_db_fail(dt_db *db, int sqlite_rc, dt_err *e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* sqlite3_prepare_v2 with error reporting. */
int dt_db_prepare(dt_db *db, const char *sql, sqlite3_stmt **st, dt_err *e, const char *what);
/* Runs SQL text without results (may hold several statements). */
int dt_db_exec(dt_db *db, const char *sql, dt_err *e, const char *what);
/* The step helpers take bind_rc, the result of binding the parameters
 * (see DT_BIND): when it is not SQLITE_OK they report it instead. */

/* Steps a statement that must finish without rows, then finalizes it. */
int dt_db_step_done(dt_db *db, sqlite3_stmt *st, int bind_rc, dt_err *e, const char *what);
/* Steps st expecting one row: DT_OK with the row current, DT_ENOTFOUND
 * (e untouched) when there is none, else the error.  Does not finalize. */
int dt_db_step_row(dt_db *db, sqlite3_stmt *st, int bind_rc, dt_err *e, const char *what);
/* Steps st (an INSERT ... RETURNING id or a SELECT id), stores column 0 in
 * *id (may be NULL), then finalizes st. */
int dt_db_step_id(dt_db *db, sqlite3_stmt *st, int bind_rc, int64_t *id, dt_err *e,
                  const char *what);
/* A row reader of the get and list accessors: fills out from st's current
 * row; DT_OK, DT_ENOMEM, or DT_EDB for a value it does not know. */
typedef int (*dt_db_row_fn)(sqlite3_stmt *st, void *out);
/* The one-row read of a get accessor: steps st (bind_rc as for
 * dt_db_step_row), reads the row into out with read and finalizes st.  The
 * errors name the row by name_fmt and its arguments ("target 'KEY'",
 * "kernel with id N"): "no NAME in PATH" (DT_ENOTFOUND), "out of memory
 * reading NAME", "reading NAME in PATH: unknown value in a column" (DT_EDB),
 * or the step's.  out is left as read (the caller frees it on failure). */
int dt_db_get_row(dt_db *db, sqlite3_stmt *st, int bind_rc, dt_db_row_fn read, void *out,
                  dt_err *e, const char *what, const char *name_fmt, ...)
    __attribute__((format(printf, 8, 9)));
/* The read of a list accessor: steps st (bind_rc as for dt_db_step_row)
 * to the end, each row read with read into a new zeroed element of elem
 * bytes at the end of the malloc'ed array *rows of *n elements (both start
 * NULL and 0), then finalizes st.  On failure ("out of memory WHAT", "WHAT in
 * PATH: row ID holds an unknown value" for DT_EDB, or the step's error)
 * *rows and *n still hold every element read, for the caller to free. */
int dt_db_list_rows(dt_db *db, sqlite3_stmt *st, int bind_rc, dt_db_row_fn read, size_t elem,
                    void **rows, size_t *n, dt_err *e, const char *what);
/* Runs a one-row, one-column integer query such as "PRAGMA user_version". */
int dt_db_query_int(dt_db *db, const char *sql, int64_t *out, dt_err *e, const char *what);

/* DT_EINVAL unless db was opened for writing. */
int dt_db_require_writable(dt_db *db, dt_err *e, const char *what);

/* The write scope of one accessor: its own BEGIN IMMEDIATE transaction, or
 * a savepoint when the caller already holds a transaction (dt_db_begin). */
typedef struct {
    bool owned;   /* we began the transaction (else: savepoint) */
    bool active;
} dt_tx;

int dt_tx_begin(dt_db *db, dt_tx *tx, dt_err *e, const char *what);
/* Commits (rc == 0) or rolls back (rc < 0) the scope; returns rc, or the
 * commit's error when rc was 0 and the commit failed. */
int dt_tx_end(dt_db *db, dt_tx *tx, int rc, dt_err *e);

/* Binds text or NULL (SQLITE_STATIC: s must outlive the step). */
int dt_bind_text(sqlite3_stmt *st, int idx, const char *s);
/* Binds a double, or NULL when v is NaN. */
int dt_bind_real(sqlite3_stmt *st, int idx, double v);
/* Evaluates binds in order, keeping the first failure in rc. */
#define DT_BIND(rc, call)             \
    do {                              \
        if ((rc) == SQLITE_OK)        \
            (rc) = (call);            \
    } while (0)

/* *out = strdup of column col, or NULL for SQL NULL; DT_ENOMEM on failure. */
int dt_col_dup(sqlite3_stmt *st, int col, const char **out);
/* Column col as text, NULL for SQL NULL; valid until the next step. */
const char *dt_col_text(sqlite3_stmt *st, int col);
/* Column col as double, NAN for SQL NULL. */
double dt_col_real(sqlite3_stmt *st, int col);

/* Checks that text parses as JSON; NULL is DT_EINVAL unless nullable. */
int dt_json_check(const char *text, bool nullable, const char *field, dt_err *e);
/* Malloc'ed canonical JSON (compact, keys sorted) of text, or DT_EINVAL. */
int dt_json_canonical(const char *text, const char *field, char **out, dt_err *e);

/* Makes room for one more element in the malloc'ed array arr of len
 * elements of size elem (doubling *cap).  Returns the array, possibly
 * moved, or NULL when out of memory (arr is then still valid). */
void *dt_grow(void *arr, size_t *cap, size_t len, size_t elem);

/* DT_EINVAL unless s is a non-empty string. */
int dt_require_text(const char *s, const char *field, dt_err *e);

/* Current unix time in seconds. */
int64_t dt_db_now(void);

/* Applies the forward migrations (db_schema.c).  *found (may be NULL)
 * receives the version the first step read under the write lock: above
 * from when another process migrated the file first. */
int dt_db_migrate(dt_db *db, int from, int to, int *found, dt_err *e);

/* A new in-memory database holding the schema of `version` as the
 * migrations create it, to compare a file against (db_check.c). */
int dt_db_reference_schema(int version, sqlite3 **out, dt_err *e);

/* A snapshot handle whose file moved on (a writer appeared or wrote) is
 * reopened here, when no statement is active; others return DT_OK. */
int dt_db_revalidate(dt_db *db, dt_err *e);

/* Reports the problems of dt_db_check and dt_db_check_all (db_check.c,
 * db_invariants.c).  all: every problem to cb; else the first one becomes
 * DT_EINVAL "database PATH is damaged: ..." in e. */
typedef struct {
    dt_db *db;
    bool all;
    dt_db_problem_cb cb;
    void *ud;
    int64_t problems;
    dt_err *e;
} dt_db_checker;

/* One problem of a rule; *seen counts that rule's problems, past
 * DT_DB_CHECK_MAX_PER_RULE they are counted and not reported.  DT_OK (all)
 * or DT_EINVAL (first). */
int dt_db_problem(dt_db_checker *c, const char *kind, int64_t *seen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Closes a rule: "... and N more" when it hid some. */
void dt_db_problem_end(dt_db_checker *c, const char *kind, int64_t seen);
/* dtune's own invariants over the rows (db_invariants.c). */
int dt_db_check_invariants(dt_db_checker *c);

/* Size of the main file plus its -wal (0 for what is missing). */
int64_t dt_db_file_bytes(const char *path);

/* The finished jobs a dt_db_job_retention drops (db_jobs.c, db_prune.c):
 * older than ?1 = max_age_s (?2 = now - max_age_s), or past the newest
 * ?3 = max_count (by updated_at, then id); a limit < 0 is none. */
#define JOB_DROP_WHERE                                                                 \
    " WHERE state IN ('done', 'failed', 'cancelled') AND ((?1 >= 0 AND updated_at < ?2)" \
    " OR (?3 >= 0 AND id NOT IN (SELECT id FROM jobs WHERE state IN ('done', 'failed',"  \
    " 'cancelled') ORDER BY updated_at DESC, id DESC LIMIT max(?3, 0))))"

#endif
