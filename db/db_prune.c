/* dt_db_prune: deletes what neither the schedules, the tuner nor the cost
 * models need (docs/database.md, "Prune policy"), in one transaction, then
 * VACUUMs.  A dry run runs the same deletes and rolls them back, so what it
 * reports is exactly what a real run deletes. */
#include "db/db_internal.h"

#include <stdio.h>
#include <sys/stat.h>

int64_t dt_db_file_bytes(const char *path)
{
    struct stat sb;
    int64_t n = stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (stat(wal, &sb) == 0)
        n += (int64_t)sb.st_size;
    return n;
}

dt_db_prune_opts dt_db_prune_defaults(void)
{
    dt_db_prune_opts o = {.keep = DT_DB_PRUNE_KEEP_DEFAULT,
                          .keep_failed = DT_DB_PRUNE_KEEP_FAILED_DEFAULT,
                          .vacuum = true};
    dt_db_job_retention_parse(DT_DB_KEEP_JOBS_DEFAULT, &o.jobs, NULL);
    return o;
}

/* The measurements kept, into temp.prune_keep:
 * 1. per (workload, target, threads, shape) the best `keep` ok records,
 *    one per kernel (its fastest);
 * 2. every ok record of a kernel a schedule names, on that schedule's
 *    workload, target and threads (the selection's evidence);
 * 3. per (workload, target, threads) the newest `keep_failed` records of
 *    deterministic failures (not worker_lost), so that the tuner does not
 *    try a known-bad kernel again. */
static const char keep_sql[] =
    "DROP TABLE IF EXISTS temp.prune_keep;"
    "CREATE TEMP TABLE prune_keep (id INTEGER PRIMARY KEY);"
    "INSERT OR IGNORE INTO temp.prune_keep SELECT id FROM ("
    "  SELECT id, row_number() OVER (PARTITION BY workload_id, target_id, threads, shape"
    "    ORDER BY min_ns, id) AS r FROM ("
    "    SELECT id, workload_id, target_id, threads, shape, min_ns, row_number() OVER ("
    "      PARTITION BY workload_id, target_id, threads, shape, kernel_id ORDER BY min_ns, id)"
    "      AS kr FROM measurements WHERE status = 'ok') WHERE kr = 1)"
    "  WHERE r <= ?1;"
    "INSERT OR IGNORE INTO temp.prune_keep SELECT m.id FROM measurements m"
    "  JOIN (SELECT DISTINCT workload_id, target_id, threads, kernel_id FROM schedules) s"
    "  ON s.workload_id = m.workload_id AND s.target_id = m.target_id"
    "  AND s.threads = m.threads AND s.kernel_id = m.kernel_id WHERE m.status = 'ok';"
    "INSERT OR IGNORE INTO temp.prune_keep SELECT id FROM ("
    "  SELECT id, row_number() OVER (PARTITION BY workload_id, target_id, threads"
    "    ORDER BY id DESC) AS r FROM measurements"
    "  WHERE status NOT IN ('ok', 'worker_lost')) WHERE r <= ?2;";

/* Per table: what is dropped, and the payload of a row (column lengths,
 * 8 bytes per number). */
static const struct {
    const char *table, *where, *payload;
} drops[DT_PRUNE_N_TABLES] = {
    [DT_PRUNE_MEASUREMENTS] = {"measurements", " WHERE id NOT IN (SELECT id FROM temp.prune_keep)",
                               "length(shape) + length(status) + coalesce(length(error), 0)"
                               " + length(trial_uid) + 64"},
    [DT_PRUNE_KERNELS] = {"kernels",
                          " WHERE created_at < ?1 AND id NOT IN (SELECT kernel_id FROM"
                          " measurements) AND id NOT IN (SELECT kernel_id FROM schedules)",
                          "length(op) + length(dtype) + length(attrs) + length(sketch)"
                          " + length(annotation) + coalesce(length(source_hash), 0) + 16"},
    [DT_PRUNE_COST_MODELS] = {"cost_models",
                              " WHERE id NOT IN (SELECT max(id) FROM cost_models"
                              " GROUP BY target_id, op)",
                              "length(op) + length(model) + coalesce(length(metrics), 0) + 32"},
    [DT_PRUNE_JOBS] = {"jobs", JOB_DROP_WHERE,
                       "length(state) + length(spec) + coalesce(length(options), 0)"
                       " + coalesce(length(checkpoint), 0) + coalesce(length(progress), 0)"
                       " + coalesce(length(error), 0) + 24"},
};

/* Binds the parameters a table's WHERE uses. */
static int bind_drop(sqlite3_stmt *st, int t, const dt_db_prune_opts *o, int64_t now)
{
    if (t == DT_PRUNE_KERNELS)
        return sqlite3_bind_int64(st, 1, now - DT_DB_PRUNE_KERNEL_GRACE_S);
    if (t != DT_PRUNE_JOBS)
        return SQLITE_OK;
    int b = sqlite3_bind_int64(st, 1, o->jobs.max_age_s);
    DT_BIND(b, sqlite3_bind_int64(st, 2, now - (o->jobs.max_age_s > 0 ? o->jobs.max_age_s : 0)));
    DT_BIND(b, sqlite3_bind_int64(st, 3, o->jobs.max_count));
    return b;
}

/* Counts the rows of table t, measures those to drop, deletes them. */
static int drop_table(dt_db *db, int t, const dt_db_prune_opts *o, int64_t now,
                      dt_db_prune_info *out, dt_err *e)
{
    char sql[1024], what[64];
    snprintf(what, sizeof what, "pruning %s", drops[t].table);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", drops[t].table);
    int rc = dt_db_query_int(db, sql, &out->tables[t].rows, e, what);
    if (t == DT_PRUNE_JOBS && o->jobs.max_age_s < 0 && o->jobs.max_count < 0)
        return rc;
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql, "SELECT count(*), coalesce(sum(%s), 0) FROM %s%s", drops[t].payload,
             drops[t].table, drops[t].where);
    if (rc == DT_OK && (rc = dt_db_prepare(db, sql, &st, e, what)) == DT_OK) {
        rc = dt_db_step_row(db, st, bind_drop(st, t, o, now), e, what);
        if (rc == DT_OK) {
            out->tables[t].deleted = sqlite3_column_int64(st, 0);
            out->tables[t].bytes = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    }
    snprintf(sql, sizeof sql, "DELETE FROM %s%s", drops[t].table, drops[t].where);
    if (rc == DT_OK && out->tables[t].deleted > 0 &&
        (rc = dt_db_prepare(db, sql, &st, e, what)) == DT_OK)
        rc = dt_db_step_done(db, st, bind_drop(st, t, o, now), e, what);
    return rc;
}

int dt_db_prune(dt_db *db, const dt_db_prune_opts *o, dt_db_prune_info *out, dt_err *e)
{
    *out = (dt_db_prune_info){0};
    for (int t = 0; t < DT_PRUNE_N_TABLES; t++)
        out->tables[t].table = drops[t].table;
    if (o->keep < 1 || o->keep_failed < 0)
        return dt_errf(e, DT_EINVAL, "pruning %s: keep must be >= 1 and keep_failed >= 0",
                       db->path);
    int64_t now = o->now ? o->now : dt_db_now();
    /* a damaged file is not pruned: deleting by rules over rows that break
     * them (impossible times rank first, a damaged index hides rows) would
     * lose what the damage report needs, and VACUUM rewrites every page */
    char doing[DT_ERR_MSG_MAX / 2];
    snprintf(doing, sizeof doing, "prune %s", db->path);
    int rc = dt_db_require_sound(db, doing, o->on_problem, o->problem_ud, e);
    if (rc)
        return rc;
    out->size_before = out->size_after = dt_db_file_bytes(db->path);
    if ((rc = dt_db_begin(db, e)))
        return rc;
    sqlite3_stmt *st = NULL;
    const char *tail = keep_sql;
    /* keep_sql holds several statements; ?1 and ?2 are bound in each that has them */
    while (rc == DT_OK && tail && *tail) {
        if (sqlite3_prepare_v2(db->sql, tail, -1, &st, &tail) != SQLITE_OK) {
            rc = dt_db_fail(db, sqlite3_errcode(db->sql), e, "choosing the records to keep");
            break;
        }
        if (!st)
            break;
        int b = SQLITE_OK;
        if (sqlite3_bind_parameter_index(st, "?1"))
            b = sqlite3_bind_int(st, 1, o->keep);
        if (sqlite3_bind_parameter_index(st, "?2"))
            DT_BIND(b, sqlite3_bind_int(st, 2, o->keep_failed));
        rc = dt_db_step_done(db, st, b, e, "choosing the records to keep");
    }
    /* measurements first: the kernels' rule looks at what is left */
    for (int t = 0; rc == DT_OK && t < DT_PRUNE_N_TABLES; t++)
        rc = drop_table(db, t, o, now, out, e);
    sqlite3_exec(db->sql, "DROP TABLE IF EXISTS temp.prune_keep", NULL, NULL, NULL);
    if (rc || o->dry_run) {
        int r2 = dt_db_rollback(db, rc ? NULL : e);
        return rc ? rc : r2;
    }
    if ((rc = dt_db_commit(db, e)))
        return rc;
    if (o->vacuum) {
        if ((rc = dt_db_exec(db, "VACUUM", e, "vacuuming after the prune")))
            return rc;
        /* the main file shrinks when the WAL is checkpointed; a reader that
         * holds an old snapshot may keep it from being truncated now */
        sqlite3_wal_checkpoint_v2(db->sql, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        out->vacuumed = true;
    }
    out->size_after = dt_db_file_bytes(db->path);
    return DT_OK;
}
