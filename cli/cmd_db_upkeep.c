/* `dtune db check`, `dtune db prune` and `dtune db merge`: the upkeep of a
 * database used for months and on several machines (docs/database.md,
 * "Upkeep"). */
#include "cli/cmd_db_upkeep.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "db/db.h"
#include "dispatch/dispatch.h"
#include "shape/box.h"
#include "shape/workload.h"

static const char check_usage[] =
    "Usage: dtune db check [--db PATH] [--json]\n"
    "\n"
    "Look for damage and list every problem found: SQLite's integrity_check,\n"
    "the tables against the schema, references to missing rows, JSON that does\n"
    "not parse, and dtune's own invariants (schedules' ranges ordered and not\n"
    "overlapping, every schedule row read against its workload's variables as\n"
    "a query reads it, records and schedules naming kernels of their workload's\n"
    "op, ok records with positive times, known statuses and job states, ...).\n"
    "The database is opened read-only.\n"
    "\n"
    "Exit codes: 0 clean, 2 damage found (or not a dtune database, or missing),\n"
    "3 the check could not run (I/O, busy, or a schema version this dtune does\n"
    "not check: migrate an older file with 'dtune db init', which checks it too).\n"
    "\n"
    "Options:\n"
    "  --db PATH    database file (default: $DTUNE_DB, else ./dtune.db)\n"
    "  --json       print {\"path\", \"ok\", \"problems\": [{\"kind\", \"message\"}], \"count\"}\n"
    "  -h, --help   show this help\n";

static const char prune_usage[] =
    "Usage: dtune db prune [--db PATH] [--keep N] [--keep-failed N] [--keep-jobs SPEC]\n"
    "                      [--dry-run] [--no-vacuum] [--json]\n"
    "\n"
    "Delete what the schedules, the tuner and the cost models do not need, in one\n"
    "transaction, then VACUUM.  Kept: per (workload, target, threads, shape) the\n"
    "best N ok records (one per kernel); every ok record of a kernel a schedule\n"
    "uses, on that schedule's workload, target and threads; per (workload, target,\n"
    "threads) the newest failures that say something about the kernel (not\n"
    "worker_lost), so the tuner does not try them again; the newest cost model\n"
    "of each (target, op); finished jobs within SPEC; kernels something refers\n"
    "to (or created in the last 7 days).  Safe beside a running daemon.\n"
    "\n"
    "Options:\n"
    "  --db PATH          database file (default: $DTUNE_DB, else ./dtune.db)\n"
    "  --keep N           best ok records kept per shape (default 8)\n"
    "  --keep-failed N    failed records kept per workload, target, threads (default 256)\n"
    "  --keep-jobs SPEC   finished jobs kept: an age (30d, 12h, 90m, 3600s), a count\n"
    "                     (500) or 'all' (default 30d)\n"
    "  --dry-run          report what would be deleted; delete nothing\n"
    "  --no-vacuum        do not VACUUM afterwards (the file keeps its size)\n"
    "  --json             print one JSON object\n"
    "  -h, --help         show this help\n";

static const char merge_usage[] =
    "Usage: dtune db merge SRC.db... [--db DEST] [--json]\n"
    "\n"
    "Merge databases tuned on other machines into DEST: targets, workloads and\n"
    "kernels by their keys, records by trial id, cost models newer than DEST's,\n"
    "and schedules by (workload, target, threads).  When both have a schedule,\n"
    "the one with the lower weighted objective wins: the sum over the shapes of\n"
    "weight x the fastest merged record of the range's kernel on that shape\n"
    "(else the range's measured, else predicted ns); DEST's on a tie or when\n"
    "one is unknown.  Running it again adds nothing.  Each source is read\n"
    "read-only and must have this dtune's schema (migrate an older one with\n"
    "'dtune db init --db SRC'; a newer one needs a newer dtune).\n"
    "\n"
    "Options:\n"
    "  --db DEST    database to merge into (default: $DTUNE_DB, else ./dtune.db);\n"
    "               created if missing\n"
    "  --json       print one JSON object\n"
    "  -h, --help   show this help\n";

typedef struct {
    const char *db;
    const char **args;
    int nargs;
    bool json, help, dry_run, no_vacuum;
    int keep, keep_failed;
    const char *keep_jobs;
} up_opts;

/* flags: which options the command takes. */
enum { OPT_PRUNE = 1, OPT_ARGS = 2 };

static int parse(const char *cmd, int argc, char **argv, unsigned flags, up_opts *o)
{
    *o = (up_opts){.db = dt_cli_default_db(), .keep = DT_DB_PRUNE_KEEP_DEFAULT,
                   .keep_failed = DT_DB_PRUNE_KEEP_FAILED_DEFAULT,
                   .keep_jobs = DT_DB_KEEP_JOBS_DEFAULT};
    o->args = calloc((size_t)argc + 1, sizeof *o->args);
    if (!o->args)
        return DT_EXIT_RUNTIME;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            o->help = true;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--db") || !strncmp(a, "--db=", 5)) {
            if (a[4] == '=')
                o->db = a + 5;
            else if (!val)
                return dt_cli_usage_error(cmd, "option '--db' needs a PATH");
            else
                o->db = argv[++i];
        } else if ((flags & OPT_PRUNE) && !strcmp(a, "--dry-run")) {
            o->dry_run = true;
        } else if ((flags & OPT_PRUNE) && !strcmp(a, "--no-vacuum")) {
            o->no_vacuum = true;
        } else if ((flags & OPT_PRUNE) && !strcmp(a, "--keep")) {
            if (!val)
                return dt_cli_usage_error(cmd, "option '--keep' needs N");
            rc = dt_cli_int_opt(cmd, "--keep", argv[++i], 1, 1000000, &o->keep);
        } else if ((flags & OPT_PRUNE) && !strcmp(a, "--keep-failed")) {
            if (!val)
                return dt_cli_usage_error(cmd, "option '--keep-failed' needs N");
            rc = dt_cli_int_opt(cmd, "--keep-failed", argv[++i], 0, 100000000, &o->keep_failed);
        } else if ((flags & OPT_PRUNE) && !strcmp(a, "--keep-jobs")) {
            if (!val)
                return dt_cli_usage_error(cmd, "option '--keep-jobs' needs a SPEC");
            o->keep_jobs = argv[++i];
        } else if (a[0] == '-') {
            return dt_cli_usage_error(cmd, "unknown option '%s'", a);
        } else if (flags & OPT_ARGS) {
            o->args[o->nargs++] = a;
        } else {
            return dt_cli_usage_error(cmd, "unexpected argument '%s'", a);
        }
        if (rc)
            return rc;
    }
    if (!*o->db)
        return dt_cli_usage_error(cmd, "the database path is empty");
    return 0;
}

static int print_json(json_t *j)
{
    if (dt_cli_print_json(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER)) {
        dt_err e;
        dt_errf(&e, DT_ENOMEM, "cannot format the result as JSON");
        return dt_cli_fail(&e);
    }
    return DT_EXIT_OK;
}

/* ---- check ------------------------------------------------------------------- */

typedef struct {
    json_t *list; /* --json */
} check_ctx;

static void on_problem(const char *kind, const char *message, void *ud)
{
    check_ctx *c = ud;
    if (c->list)
        json_array_append_new(c->list, json_pack("{s:s, s:s}", "kind", kind, "message", message));
    else
        printf("%-12s %s\n", kind, dt_cli_safe(message)); /* it quotes stored text */
}

int dt_cmd_db_check(int argc, char **argv)
{
    up_opts o;
    int rc = parse("db check", argc, argv, 0, &o);
    free(o.args);
    if (dt_cli_parse_done(rc, o.help, check_usage))
        return rc;
    dt_err e;
    dt_db *db;
    if ((rc = dt_db_open(o.db, DT_DB_READONLY, &db, &e))) {
        /* an older or newer schema is not damage: it was not checked (a
         * read-only open never migrates), so exit 3, not 2 */
        if (rc != DT_EVERSION)
            return dt_cli_fail(&e);
        dt_err_prefix(&e, "cannot check %s", o.db);
        dt_cli_fail(&e);
        return DT_EXIT_RUNTIME;
    }
    /* every schedule read as a query will read it */
    dt_dispatch_attach_reader(db);
    check_ctx c = {.list = o.json ? json_array() : NULL};
    int64_t n = 0;
    rc = dt_db_check_all(db, on_problem, &c, &n, &e);
    dt_db_close(db);
    if (rc != DT_OK) {
        json_decref(c.list);
        return dt_cli_fail(&e);
    }
    if (o.json) {
        rc = print_json(json_pack("{s:s, s:b, s:I, s:o}", "path", o.db, "ok", n == 0, "count",
                                  (json_int_t)n, "problems", c.list));
        if (rc)
            return rc;
    } else if (n == 0) {
        printf("%s: no problems found\n", o.db);
    } else {
        printf("%s: %lld problem%s found\n", o.db, (long long)n, n == 1 ? "" : "s");
    }
    if (n > 0 && !o.json)
        fprintf(stderr, "dtune: error: database %s is damaged: %lld problem%s\n", o.db,
                (long long)n, n == 1 ? "" : "s");
    return n == 0 ? DT_EXIT_OK : DT_EXIT_INPUT;
}

/* ---- prune ------------------------------------------------------------------- */

/* A problem of a file merge or prune refuses, on stderr (as db check prints it). */
static void print_problem(const char *kind, const char *message, void *ud)
{
    (void)ud;
    fprintf(stderr, "%-12s %s\n", kind, dt_cli_safe(message));
}

int dt_cmd_db_prune(int argc, char **argv)
{
    up_opts o;
    int rc = parse("db prune", argc, argv, OPT_PRUNE, &o);
    free(o.args);
    if (dt_cli_parse_done(rc, o.help, prune_usage))
        return rc;
    dt_db_prune_opts po = dt_db_prune_defaults();
    dt_err e;
    if (dt_db_job_retention_parse(o.keep_jobs, &po.jobs, &e))
        return dt_cli_usage_error("db prune", "%s", e.msg);
    po.keep = o.keep;
    po.keep_failed = o.keep_failed;
    po.dry_run = o.dry_run;
    po.vacuum = !o.no_vacuum;
    /* identified read-only first: a file prune cannot use (missing, empty,
     * another version, not dtune's) is refused without writing anything */
    dt_db *db;
    struct stat sb;
    if (stat(o.db, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0) {
        dt_errf(&e, DT_ENOTDTUNE, "%s is not a dtune database: it is empty (0 bytes); nothing to "
                "prune", o.db);
        return dt_cli_fail(&e);
    }
    if ((rc = dt_cli_open_db(o.db, DT_DB_READONLY, &db)))
        return rc;
    dt_db_close(db);
    if ((rc = dt_cli_open_db(o.db, 0, &db)))
        return rc;
    dt_dispatch_attach_reader(db);
    po.on_problem = print_problem;
    dt_db_prune_info info;
    rc = dt_db_prune(db, &po, &info, &e);
    dt_db_close(db);
    if (rc)
        return dt_cli_fail(&e);
    char jobs[32];
    dt_db_job_retention_format(&po.jobs, jobs, sizeof jobs);
    int64_t rows = 0, bytes = 0;
    for (int t = 0; t < DT_PRUNE_N_TABLES; t++) {
        rows += info.tables[t].deleted;
        bytes += info.tables[t].bytes;
    }
    if (o.json) {
        json_t *tables = json_object();
        for (int t = 0; t < DT_PRUNE_N_TABLES; t++)
            json_object_set_new(tables, info.tables[t].table,
                                json_pack("{s:I, s:I, s:I}", "rows", (json_int_t)info.tables[t].rows,
                                          "deleted", (json_int_t)info.tables[t].deleted, "bytes",
                                          (json_int_t)info.tables[t].bytes));
        return print_json(json_pack(
            "{s:s, s:b, s:{s:i, s:i, s:s}, s:o, s:I, s:I, s:I, s:I, s:b}", "path", o.db,
            "dry_run", o.dry_run, "policy", "keep", po.keep, "keep_failed", po.keep_failed,
            "keep_jobs", jobs, "tables", tables, "deleted_rows", (json_int_t)rows,
            "deleted_bytes", (json_int_t)bytes, "size_before", (json_int_t)info.size_before,
            "size_after", (json_int_t)info.size_after, "vacuumed", info.vacuumed));
    }
    printf("%s %s (keep %d per shape, %d failures, jobs %s)\n",
           o.dry_run ? "dry run: would prune" : "pruned", o.db, po.keep, po.keep_failed, jobs);
    printf("%-14s %10s %10s %12s\n", "table", "rows", o.dry_run ? "to delete" : "deleted", "bytes");
    for (int t = 0; t < DT_PRUNE_N_TABLES; t++)
        printf("%-14s %10lld %10lld %12lld\n", info.tables[t].table,
               (long long)info.tables[t].rows, (long long)info.tables[t].deleted,
               (long long)info.tables[t].bytes);
    if (o.dry_run)
        printf("nothing deleted; the file is %lld bytes\n", (long long)info.size_before);
    else
        printf("file: %lld bytes before, %lld after%s\n", (long long)info.size_before,
               (long long)info.size_after, info.vacuumed ? " (vacuumed)" : "");
    return DT_EXIT_OK;
}

/* ---- merge ------------------------------------------------------------------- */

/* The fastest ok record of one kernel on each shape of a box. */
typedef struct {
    const dt_workload *w;
    int threads;
    const dt_box *box;
    double *best; /* [shapes of the box], NAN when none */
} box_best;

static int on_record(const dt_db_measurement *m, void *ud)
{
    box_best *r = ud;
    int64_t vals[DT_MAX_VARS], s, j;
    int in = 0;
    dt_err e;
    if (m->threads != r->threads || !m->shape || dt_shape_parse(r->w, m->shape, vals, &in, &e) ||
        !in || !dt_workload_shape_index(r->w, vals, &s, NULL) ||
        (j = dt_box_position(r->w, r->box, s)) < 0)
        return 0;
    double *b = &r->best[j];
    if (isnan(*b) || m->min_ns < *b)
        *b = m->min_ns;
    return 0;
}

/* The weighted objective of a schedule: Σ over the shapes of its boxes of
 * weight(shape) x time(shape), where time is the fastest ok record of the
 * box's kernel on that shape in db (the records of both machines are
 * merged by then), else the row's measured_ns (a mean over its shapes),
 * else its predicted_ns.  NAN when a shape has none of them or the rows do
 * not make a table (dispatch/dispatch.h reads schema-2 runs as boxes). */
static double score_schedule(dt_db *db, const char *key, const dt_db_schedule *rows, size_t n,
                             void *ud)
{
    (void)ud;
    dt_workload *w = NULL;
    dt_dispatch *d = NULL;
    dt_err e;
    if (dt_workload_parse_key(key, &w, &e))
        return NAN;
    double obj = n ? 0 : NAN;
    if (n && dt_dispatch_from_rows(w, rows[0].threads, rows, n, &d, &e))
        obj = NAN;
    for (int i = 0; d && i < d->n && !isnan(obj); i++) {
        const dt_dispatch_range *rg = &d->r[i];
        int64_t nb = dt_box_nshapes(w, &rg->box);
        box_best r = {.w = w, .threads = d->threads, .box = &rg->box};
        r.best = malloc((size_t)nb * sizeof *r.best);
        if (!r.best) {
            obj = NAN;
            break;
        }
        for (int64_t j = 0; j < nb; j++)
            r.best[j] = NAN;
        dt_db_measurement_filter f = {.workload_id = rows[0].workload_id,
                                      .target_id = rows[0].target_id,
                                      .kernel_id = rg->kernel_id, .ok_only = true};
        if (dt_db_measurement_list(db, &f, on_record, &r, &e))
            obj = NAN;
        double fallback = isnan(rg->measured_ns) ? rg->predicted_ns : rg->measured_ns;
        for (int64_t j = 0; j < nb && !isnan(obj); j++) {
            int64_t vals[DT_MAX_VARS];
            double wt = 1, t = r.best[j];
            dt_workload_shape_at(w, dt_box_shape(w, &rg->box, j), vals, &wt);
            obj += wt * (isnan(t) ? fallback : t);
        }
        free(r.best);
    }
    dt_dispatch_free(d);
    dt_workload_free(w);
    return obj;
}

int dt_cmd_db_merge(int argc, char **argv)
{
    up_opts o;
    int rc = parse("db merge", argc, argv, OPT_ARGS, &o);
    if (dt_cli_parse_done(rc, o.help, merge_usage)) {
        free(o.args);
        return rc;
    }
    if (o.nargs == 0) {
        free(o.args);
        return dt_cli_usage_error("db merge", "missing SRC.db, a database to merge");
    }
    dt_err e;
    dt_db *db;
    /* every source is opened and checked before the destination is opened
     * (or created): a source merge refuses (missing, another version,
     * damaged) leaves the destination as it was, even after other sources */
    for (int i = 0; i < o.nargs; i++) {
        dt_err e2;
        if ((rc = dt_db_open(o.args[i], DT_DB_READONLY, &db, &e2)) == DT_OK) {
            dt_dispatch_attach_reader(db);
            char doing[DT_ERR_MSG_MAX / 2];
            snprintf(doing, sizeof doing, "merge %s", o.args[i]);
            rc = dt_db_require_sound(db, doing, print_problem, NULL, &e);
            dt_db_close(db);
        } else {
            dt_errf(&e, rc, "cannot merge %s: %s", o.args[i], e2.msg);
        }
        if (rc) {
            rc = dt_cli_fail(&e);
            fprintf(stderr, "dtune: nothing was merged into %s\n", o.db);
            free(o.args);
            return rc;
        }
    }
    if ((rc = dt_cli_open_db(o.db, DT_DB_CREATE, &db))) {
        free(o.args);
        return rc;
    }
    dt_dispatch_attach_reader(db); /* dt_db_merge checks each source with it */
    json_t *sources = o.json ? json_array() : NULL;
    for (int i = 0; rc == 0 && i < o.nargs; i++) {
        dt_db_merge_info m;
        if (dt_db_merge(db, o.args[i], score_schedule, NULL, &m, &e)) {
            rc = dt_cli_fail(&e);
            break;
        }
        if (sources)
            json_array_append_new(
                sources,
                json_pack("{s:s, s:{s:I, s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I}}", "path",
                          o.args[i], "added", "targets", (json_int_t)m.targets, "workloads",
                          (json_int_t)m.workloads, "kernels", (json_int_t)m.kernels,
                          "measurements", (json_int_t)m.measurements, "cost_models",
                          (json_int_t)m.cost_models, "schedules", "added",
                          (json_int_t)m.schedules_added, "replaced",
                          (json_int_t)m.schedules_replaced, "kept", (json_int_t)m.schedules_kept,
                          "same", (json_int_t)m.schedules_same));
        else
            printf("merged %s into %s: added %lld targets, %lld workloads, %lld kernels, %lld "
                   "records, %lld cost models; schedules: %lld added, %lld replaced (better), "
                   "%lld kept, %lld identical\n",
                   o.args[i], o.db, (long long)m.targets, (long long)m.workloads,
                   (long long)m.kernels, (long long)m.measurements, (long long)m.cost_models,
                   (long long)m.schedules_added, (long long)m.schedules_replaced,
                   (long long)m.schedules_kept, (long long)m.schedules_same);
    }
    dt_db_close(db);
    free(o.args);
    if (sources && rc == 0)
        return print_json(json_pack("{s:s, s:o}", "destination", o.db, "sources", sources));
    json_decref(sources);
    return rc;
}
