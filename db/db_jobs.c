/* The daemon's job queue. */
#include "db/db_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Must match the CHECK constraint on jobs.state (db_schema.c). */
static const char *const state_names[DT_JOB_N_STATES] = {
    [DT_JOB_QUEUED] = "queued",
    [DT_JOB_RUNNING] = "running",
    [DT_JOB_DONE] = "done",
    [DT_JOB_FAILED] = "failed",
    [DT_JOB_CANCELLED] = "cancelled",
};

const char *dt_job_state_name(dt_job_state s)
{
    return (unsigned)s < DT_JOB_N_STATES ? state_names[s] : NULL;
}

int dt_job_state_parse(const char *name, dt_job_state *out)
{
    for (int i = 0; name && i < DT_JOB_N_STATES; i++)
        if (strcmp(name, state_names[i]) == 0) {
            DT_ASSERT(dt_job_state_name((dt_job_state)i) == state_names[i],
                      "a job state's name is the one its value prints as");
            *out = (dt_job_state)i;
            return DT_OK;
        }
    return DT_EINVAL;
}

#define JOB_COLS "id, state, spec, options, checkpoint, progress, error, created_at, updated_at"

int dt_db_job_create(dt_db *db, const char *spec_json, const char *options_json, int64_t *id,
                     dt_err *e)
{
    static const char what[] = "queueing job";
    int rc = dt_json_check(spec_json, false, "job spec", e);
    if (rc == DT_OK)
        rc = dt_json_check(options_json, true, "job options", e);
    if (rc)
        return rc;
    dt_tx tx;
    rc = dt_tx_begin(db, &tx, e, what);
    sqlite3_stmt *st = NULL;
    if (rc == DT_OK)
        rc = dt_db_prepare(db,
                           "INSERT INTO jobs (state, spec, options, created_at, updated_at)"
                           " VALUES ('queued', ?1, ?2, ?3, ?3) RETURNING id",
                           &st, e, what);
    if (rc == DT_OK) {
        int b = dt_bind_text(st, 1, spec_json);
        DT_BIND(b, dt_bind_text(st, 2, options_json));
        DT_BIND(b, sqlite3_bind_int64(st, 3, dt_db_now()));
        rc = dt_db_step_id(db, st, b, id, e, what);
    }
    return dt_tx_end(db, &tx, rc, e);
}

/* Fills *j from the current row (strings copied); DT_ENOMEM or DT_EDB. */
static int read_job(sqlite3_stmt *st, void *out)
{
    dt_db_job *j = out;
    j->id = sqlite3_column_int64(st, 0);
    j->created_at = sqlite3_column_int64(st, 7);
    j->updated_at = sqlite3_column_int64(st, 8);
    if (dt_job_state_parse(dt_col_text(st, 1), &j->state) != DT_OK)
        return DT_EDB;
    int rc = dt_col_dup(st, 2, &j->spec);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 3, &j->options);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 4, &j->checkpoint);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 5, &j->progress);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 6, &j->error);
    return rc;
}

int dt_db_job_get(dt_db *db, int64_t id, dt_db_job *out, dt_err *e)
{
    static const char what[] = "reading job";
    *out = (dt_db_job){0};
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, "SELECT " JOB_COLS " FROM jobs WHERE id = ?1", &st, e, what);
    if (rc)
        return rc;
    rc = dt_db_get_row(db, st, sqlite3_bind_int64(st, 1, id), read_job, out, e, what,
                       "job with id %lld", (long long)id);
    if (rc)
        dt_db_job_free(out);
    return rc;
}

void dt_db_job_free(dt_db_job *j)
{
    if (!j)
        return;
    free((void *)j->spec);
    free((void *)j->options);
    free((void *)j->checkpoint);
    free((void *)j->progress);
    free((void *)j->error);
    *j = (dt_db_job){0};
}

/* Prepares the list query for mask: "state IN (?1, ?2, ...)" over the
 * states in the mask, bound to their names. */
static int prepare_job_list(dt_db *db, unsigned mask, sqlite3_stmt **st, dt_err *e,
                            const char *what)
{
    char sql[256], in[64] = "";
    size_t len = 0;
    for (int s = 0; s < DT_JOB_N_STATES; s++)
        if (mask & DT_JOB_MASK(s))
            len += (size_t)snprintf(in + len, sizeof in - len, "%s?%d", len ? ", " : "", s + 1);
    DT_ASSERT(len > 0 && len < sizeof in, "a job list asks for at least one state, in full");
    snprintf(sql, sizeof sql, "SELECT " JOB_COLS " FROM jobs WHERE state IN (%s) ORDER BY id",
             in);
    int rc = dt_db_prepare(db, sql, st, e, what);
    if (rc)
        return rc;
    int b = SQLITE_OK;
    for (int s = 0; s < DT_JOB_N_STATES; s++)
        if (mask & DT_JOB_MASK(s))
            DT_BIND(b, dt_bind_text(*st, s + 1, state_names[s]));
    if (b != SQLITE_OK) {
        rc = dt_db_fail(db, b, e, "%s", what);
        sqlite3_finalize(*st);
        *st = NULL;
    }
    return rc;
}

int dt_db_job_list(dt_db *db, unsigned state_mask, dt_db_job **out, size_t *n, dt_err *e)
{
    static const char what[] = "listing jobs";
    *out = NULL;
    *n = 0;
    state_mask &= DT_JOB_MASK_ALL;
    if (state_mask == 0)
        state_mask = DT_JOB_MASK_ALL;
    sqlite3_stmt *st;
    int rc = prepare_job_list(db, state_mask, &st, e, what);
    if (rc)
        return rc;
    void *jobs = NULL;
    size_t len = 0;
    rc = dt_db_list_rows(db, st, SQLITE_OK, read_job, sizeof(dt_db_job), &jobs, &len, e, what);
    if (rc) {
        dt_db_jobs_free(jobs, len);
        return rc;
    }
    const dt_db_job *jl = jobs;
    for (size_t i = 0; i < len; i++) {
        DT_ASSERT(state_mask & DT_JOB_MASK(jl[i].state), "a listed job is in a state asked for");
        DT_ASSERT(i == 0 || jl[i - 1].id < jl[i].id, "a job list is sorted by id, ids distinct");
    }
    *out = jobs;
    *n = len;
    return DT_OK;
}

int dt_db_job_counts(dt_db *db, int64_t counts[DT_JOB_N_STATES], dt_err *e)
{
    static const char what[] = "counting jobs";
    for (int s = 0; s < DT_JOB_N_STATES; s++)
        counts[s] = 0;
    sqlite3_stmt *st = NULL;
    int rc = dt_db_prepare(db, "SELECT state, count(*) FROM jobs GROUP BY state", &st, e, what);
    while (rc == DT_OK && (rc = dt_db_step_row(db, st, SQLITE_OK, e, what)) == DT_OK) {
        dt_job_state s;
        if (dt_job_state_parse(dt_col_text(st, 0), &s) != DT_OK) {
            rc = dt_errf(e, DT_EDB, "%s in %s: unknown state '%s'", what, db->path,
                         dt_col_text(st, 0) ? dt_col_text(st, 0) : "(null)");
            break;
        }
        DT_ASSERT(counts[s] == 0, "GROUP BY state gives each state one count");
        counts[s] = sqlite3_column_int64(st, 1);
        DT_ASSERT(counts[s] >= 1, "a state's group holds at least one job");
    }
    if (st)
        sqlite3_finalize(st);
    if (rc == DT_ENOTFOUND)
        return DT_OK;
    for (int s = 0; s < DT_JOB_N_STATES; s++)
        counts[s] = -1;
    return rc;
}

int dt_db_job_list_unfinished(dt_db *db, dt_db_job **out, size_t *n, dt_err *e)
{
    return dt_db_job_list(db, DT_JOB_MASK_UNFINISHED, out, n, e);
}

void dt_db_jobs_free(dt_db_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dt_db_job_free(&jobs[i]);
    free(jobs);
}

static int check_job_update(const dt_db_job_update *u, dt_err *e)
{
    if (!u)
        return dt_errf(e, DT_EINVAL, "no job update given");
    if (u->set_state && !dt_job_state_name(u->state))
        return dt_errf(e, DT_EINVAL, "invalid job state %d", (int)u->state);
    int rc = dt_json_check(u->progress, true, "job progress", e);
    if (rc == DT_OK)
        rc = dt_json_check(u->checkpoint, true, "job checkpoint", e);
    return rc;
}

int dt_db_job_update_fields(dt_db *db, int64_t id, const dt_db_job_update *u, dt_err *e)
{
    static const char what[] = "updating job";
    int rc = check_job_update(u, e);
    if (rc)
        return rc;
    dt_tx tx;
    rc = dt_tx_begin(db, &tx, e, what);
    sqlite3_stmt *st = NULL;
    /* NULL parameters keep the column; an empty error string clears it. */
    if (rc == DT_OK)
        rc = dt_db_prepare(db,
                           "UPDATE jobs SET state = coalesce(?1, state),"
                           " progress = coalesce(?2, progress),"
                           " checkpoint = coalesce(?3, checkpoint),"
                           " error = CASE WHEN ?4 IS NULL THEN error ELSE nullif(?4, '') END,"
                           " updated_at = ?5 WHERE id = ?6",
                           &st, e, what);
    if (rc == DT_OK) {
        int b = dt_bind_text(st, 1, u->set_state ? state_names[u->state] : NULL);
        DT_BIND(b, dt_bind_text(st, 2, u->progress));
        DT_BIND(b, dt_bind_text(st, 3, u->checkpoint));
        DT_BIND(b, dt_bind_text(st, 4, u->error));
        DT_BIND(b, sqlite3_bind_int64(st, 5, dt_db_now()));
        DT_BIND(b, sqlite3_bind_int64(st, 6, id));
        rc = dt_db_step_done(db, st, b, e, what);
    }
    if (rc == DT_OK && sqlite3_changes(db->sql) == 0)
        rc = dt_errf(e, DT_ENOTFOUND, "no job with id %lld in %s", (long long)id, db->path);
    return dt_tx_end(db, &tx, rc, e);
}

/* ---- retention of finished jobs ----------------------------------------- */

int dt_db_job_retention_parse(const char *text, dt_db_job_retention *out, dt_err *e)
{
    *out = (dt_db_job_retention){-1, -1};
    if (text && strcmp(text, "all") == 0)
        return DT_OK;
    const char *p = text ? text : "";
    long long v = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 15; p++, digits++)
        v = v * 10 + (*p - '0');
    int64_t unit = 0; /* 0: a count */
    if (*p == 'd')
        unit = 86400;
    else if (*p == 'h')
        unit = 3600;
    else if (*p == 'm')
        unit = 60;
    else if (*p == 's')
        unit = 1;
    if (unit)
        p++;
    if (digits == 0 || *p)
        return dt_errf(e, DT_EINVAL,
                       "bad job retention '%s' (expected an age such as 30d, 12h, 90m, 3600s, a "
                       "count such as 500, or 'all')",
                       text ? text : "");
    if (unit)
        out->max_age_s = (int64_t)v * unit;
    else
        out->max_count = (int64_t)v;
    return DT_OK;
}

void dt_db_job_retention_format(const dt_db_job_retention *r, char *buf, size_t size)
{
    if (r->max_age_s >= 0 && r->max_age_s % 86400 == 0)
        snprintf(buf, size, "%lldd", (long long)(r->max_age_s / 86400));
    else if (r->max_age_s >= 0)
        snprintf(buf, size, "%llds", (long long)r->max_age_s);
    else if (r->max_count >= 0)
        snprintf(buf, size, "%lld", (long long)r->max_count);
    else
        snprintf(buf, size, "all");
}

int dt_db_job_prune(dt_db *db, const dt_db_job_retention *r, int64_t now, bool dry_run,
                    int64_t *deleted, dt_err *e)
{
    static const char what[] = "pruning finished jobs";
    if (deleted)
        *deleted = 0;
    if (!r)
        return dt_errf(e, DT_EINVAL, "no job retention given");
    if (r->max_age_s < 0 && r->max_count < 0)
        return DT_OK;
    if (now == 0)
        now = dt_db_now();
    dt_tx tx = {0};
    int rc = dry_run ? DT_OK : dt_tx_begin(db, &tx, e, what);
    sqlite3_stmt *st = NULL;
    if (rc == DT_OK)
        rc = dt_db_prepare(db,
                           dry_run ? "SELECT count(*) FROM jobs" JOB_DROP_WHERE
                                   : "DELETE FROM jobs" JOB_DROP_WHERE " RETURNING id",
                           &st, e, what);
    if (rc == DT_OK) {
        int b = sqlite3_bind_int64(st, 1, r->max_age_s);
        DT_BIND(b, sqlite3_bind_int64(st, 2, now - (r->max_age_s > 0 ? r->max_age_s : 0)));
        DT_BIND(b, sqlite3_bind_int64(st, 3, r->max_count));
        int64_t n = 0;
        while ((rc = dt_db_step_row(db, st, b, e, what)) == DT_OK)
            n += dry_run ? sqlite3_column_int64(st, 0) : 1;
        if (rc == DT_ENOTFOUND)
            rc = DT_OK;
        if (rc == DT_OK && deleted)
            *deleted = n;
        sqlite3_finalize(st);
    }
    return dry_run ? rc : dt_tx_end(db, &tx, rc, e);
}
