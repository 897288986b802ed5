/* dtune's own invariants over the rows of a database (dt_db_check_all):
 * what the writers guarantee beyond SQLite's constraints, which a file
 * written by hand, by a damaged disk or by another tool may break.
 * docs/database.md, "Upkeep", lists them. */
#include "db/db_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A rule: a query whose rows are problems, column 0 the message. */
typedef struct {
    const char *kind;
    const char *sql;
} rule;

/* A stored time is a finite positive number; TIME_TEXT prints one as
 * stored (quoted when text or a blob). */
#define TIME_OK(c) \
    "(typeof(" c ") IN ('integer', 'real') AND " c " > 0 AND " c " < 9e999)"
#define TIME_TEXT(c) \
    " CASE WHEN typeof(" c ") IN ('integer', 'real') THEN printf('%g', " c ") ELSE quote(" c ") END"

static const rule rules[] = {
    {"workload",
     "SELECT printf('workloads row %d (%s) has op %s, its key names %s', id, key, op,"
     " substr(key, 1, instr(key, '(') - 1)) FROM workloads"
     " WHERE instr(key, '(') = 0 OR substr(key, 1, instr(key, '(') - 1) <> op ORDER BY id"},
    {"kernel",
     "SELECT printf('the %s of kernels row %d is not a JSON object', c, id) FROM ("
     " SELECT id, 'attrs' AS c FROM kernels WHERE json_valid(attrs) AND json_type(attrs) <> 'object'"
     " UNION ALL SELECT id, 'annotation' FROM kernels"
     "  WHERE json_valid(annotation) AND json_type(annotation) <> 'object') ORDER BY id"},
    {"measurement",
     "SELECT printf('measurements row %d has the unknown status ''%s''', id, status)"
     " FROM measurements WHERE status NOT IN ('ok', 'compile_error', 'compile_timeout',"
     " 'run_crash', 'run_timeout', 'wrong_answer', 'worker_lost') ORDER BY id"},
    /* an ok record's times are finite positive numbers (SQLite stores NaN
     * as NULL, keeps +-inf as REAL and text or a blob in a REAL column as
     * they are: text compares above every number, so "NOT x > 0" alone
     * lets text and +inf through) */
    {"measurement",
     "SELECT printf('measurements row %d is ok but its times are not positive finite numbers"
     " (min_ns %s, median_ns %s)', id," TIME_TEXT("min_ns") "," TIME_TEXT("median_ns") ")"
     " FROM measurements WHERE status = 'ok' AND NOT (" TIME_OK("min_ns") " AND "
     TIME_OK("median_ns") ") ORDER BY id"},
    {"measurement",
     "SELECT printf('measurements row %d has min_ns %s above its median_ns %s', id,"
     TIME_TEXT("min_ns") "," TIME_TEXT("median_ns") ") FROM measurements"
     " WHERE typeof(min_ns) IN ('integer', 'real') AND typeof(median_ns) IN ('integer', 'real')"
     " AND min_ns > median_ns AND (status <> 'ok' OR (" TIME_OK("min_ns") " AND "
     TIME_OK("median_ns") ")) ORDER BY id"},
    {"measurement",
     "SELECT printf('measurements row %d has %d threads', id, threads) FROM measurements"
     " WHERE NOT threads >= 1 ORDER BY id"},
    {"measurement",
     "SELECT printf('measurements row %d measured kernel %d (op %s) on workload %d (op %s)',"
     " m.id, k.id, k.op, w.id, w.op) FROM measurements m JOIN kernels k ON k.id = m.kernel_id"
     " JOIN workloads w ON w.id = m.workload_id WHERE k.op <> w.op ORDER BY m.id"},
    {"schedule",
     "SELECT printf('schedules row %d has %d threads', id, threads) FROM schedules"
     " WHERE NOT threads >= 1 ORDER BY id"},
    {"schedule",
     "SELECT printf('schedules row %d has %s %g', id, c, v) FROM ("
     " SELECT id, 'predicted_ns' AS c, predicted_ns AS v FROM schedules WHERE NOT predicted_ns > 0"
     " UNION ALL SELECT id, 'measured_ns', measured_ns FROM schedules WHERE NOT measured_ns > 0)"
     " ORDER BY id"},
    /* the column's CHECK, for files written without it */
    {"schedule",
     "SELECT printf('schedules row %d has box %s, neither 1 (a box) nor 0 (a schema-2 run)', id,"
     " quote(box)) FROM schedules WHERE box IS NOT 0 AND box IS NOT 1 ORDER BY id"},
    {"schedule",
     "SELECT printf('schedules row %d dispatches workload %d (op %s) to kernel %d of op %s',"
     " s.id, w.id, w.op, k.id, k.op) FROM schedules s JOIN kernels k ON k.id = s.kernel_id"
     " JOIN workloads w ON w.id = s.workload_id WHERE k.op <> w.op ORDER BY s.id"},
    {"cost_model",
     "SELECT printf('cost_models row %d has %s', id, CASE WHEN length(model) = 0"
     " THEN 'an empty model' ELSE printf('n_records %d', n_records) END) FROM cost_models"
     " WHERE length(model) = 0 OR n_records < 0 ORDER BY id"},
    {"job",
     "SELECT printf('jobs row %d has the unknown state ''%s''', id, state) FROM jobs"
     " WHERE state NOT IN ('queued', 'running', 'done', 'failed', 'cancelled') ORDER BY id"},
    {"job",
     "SELECT printf('the spec of jobs row %d is not a JSON object', id) FROM jobs"
     " WHERE json_valid(spec) AND json_type(spec) <> 'object' ORDER BY id"},
    {"job",
     "SELECT printf('jobs row %d was updated (%d) before it was created (%d)', id, updated_at,"
     " created_at) FROM jobs WHERE updated_at < created_at ORDER BY id"},
};

static int run_rule(dt_db_checker *c, const rule *r)
{
    sqlite3_stmt *st;
    char what[64];
    snprintf(what, sizeof what, "checking the %s rows", r->kind);
    int rc = dt_db_prepare(c->db, r->sql, &st, c->e, what);
    if (rc)
        return rc;
    int64_t seen = 0;
    while (rc == DT_OK && (rc = dt_db_step_row(c->db, st, SQLITE_OK, c->e, what)) == DT_OK)
        rc = dt_db_problem(c, r->kind, &seen, "%s", dt_col_text(st, 0));
    if (rc == DT_ENOTFOUND)
        rc = DT_OK;
    dt_db_problem_end(c, r->kind, seen);
    sqlite3_finalize(st);
    return rc;
}

/* A shape "a=1,b=2" as its values, in the order written (the workload's
 * variable order, the first the most significant: shape/workload.c).
 * Returns the number of values, or -1 when it does not parse. */
#define MAX_VALS 16
static int parse_shape(const char *s, long long *vals)
{
    int n = 0;
    if (!s)
        return -1;
    while (*s) { /* "": the one shape of a workload without variables */
        const char *eq = strchr(s, '=');
        if (!eq || eq == s || n == MAX_VALS)
            return -1;
        char *end;
        vals[n++] = strtoll(eq + 1, &end, 10);
        if (end == eq + 1 || (*end && *end != ','))
            return -1;
        s = *end ? end + 1 : end;
    }
    return n;
}

static int cmp_shape(const long long *a, const long long *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* The name of the k-th variable of shape text s (checked by parse_shape). */
static void shape_var(const char *s, int k, char *buf, size_t n)
{
    for (; k > 0 && s; k--)
        if ((s = strchr(s, ',')))
            s++;
    size_t len = s ? strcspn(s, "=") : 0;
    snprintf(buf, n, "%.*s", (int)len, s ? s : "");
}

/* A box row of the schedule being read: its corners' values. */
typedef struct {
    int64_t id;
    int n;
    long long lo[MAX_VALS], hi[MAX_VALS];
} box_row;

static bool boxes_overlap(const box_row *a, const box_row *b)
{
    for (int v = 0; v < a->n; v++)
        if (a->hi[v] < b->lo[v] || b->hi[v] < a->lo[v])
            return false;
    return true;
}

/* One schedule (workload, target, threads) as read so far, for the handle's
 * schedule reader (dt_db_set_schedule_reader): its rows as
 * dt_db_schedule_list gives them. */
typedef struct {
    dt_db_checker *c;
    dt_db_schedule *rows;
    bool *reported;     /* per row: db/'s own rules reported it already */
    size_t n, cap, rcap;
    int64_t row_problems; /* c->problems before the last row was checked */
    const char *wkey, *tkey; /* the workload's and the target's keys; NULL when missing */
    int64_t problems;   /* c->problems before its first row was checked */
    int64_t seen;       /* the reader's problems, every schedule */
    int rc;             /* the first failure to report one */
} sched;

static void sched_clear(sched *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free((void *)g->rows[i].shape_lo);
        free((void *)g->rows[i].shape_hi);
    }
    g->n = 0;
    free((void *)g->wkey);
    free((void *)g->tkey);
    g->wkey = g->tkey = NULL;
}

/* A problem the reader found in row i of the schedule; a row db/'s own
 * rules reported is reported once (a reversed range, say, is reversed to
 * both). */
static void sched_report(void *ctx, size_t i, const char *message)
{
    sched *g = ctx;
    if (i >= g->n)
        i = 0;
    if (g->rc != DT_OK || g->n == 0 || g->reported[i])
        return;
    const dt_db_schedule *r = &g->rows[i];
    g->rc = dt_db_problem(g->c, "schedule", &g->seen,
                          "schedules row %lld (workload %lld %s, target %lld %s, %d thread%s) "
                          "cannot be served: %s",
                          (long long)r->id, (long long)r->workload_id, g->wkey,
                          (long long)r->target_id, g->tkey ? g->tkey : "(missing)", r->threads,
                          r->threads == 1 ? "" : "s", message ? message : "");
}

/* Hands the schedule read so far to the reader, then forgets it.  A
 * schedule whose workload row is missing is not read (foreign_key says so). */
static int sched_flush(sched *g)
{
    dt_db_checker *c = g->c;
    int rc = DT_OK;
    if (g->n && c->problems > g->row_problems)
        g->reported[g->n - 1] = true;
    if (g->n && g->wkey && c->db->reader) {
        bool whole = c->problems == g->problems;
        rc = c->db->reader(g->wkey, g->rows, g->n, whole, sched_report, g, c->db->reader_ud,
                           c->e);
        if (rc == DT_OK)
            rc = g->rc;
    }
    sched_clear(g);
    return rc;
}

/* Starts the schedule of row st (the query of check_ranges) when it is not
 * the current one (the one before goes to the reader), and adds the row to
 * it.  DT_OK, or an error with e filled. */
static int sched_add(sched *g, sqlite3_stmt *st, bool first)
{
    dt_db_checker *c = g->c;
    if (!c->db->reader)
        return DT_OK;
    if (g->n && c->problems > g->row_problems)
        g->reported[g->n - 1] = true;
    if (first) {
        int rc = sched_flush(g);
        if (rc)
            return rc;
        g->problems = c->problems;
        if (dt_col_dup(st, 10, &g->wkey) || dt_col_dup(st, 11, &g->tkey))
            goto oom;
    }
    dt_db_schedule *grown = dt_grow(g->rows, &g->cap, g->n, sizeof *g->rows);
    if (!grown)
        goto oom;
    g->rows = grown;
    bool *rep = dt_grow(g->reported, &g->rcap, g->n, sizeof *g->reported);
    if (!rep)
        goto oom;
    g->reported = rep;
    g->reported[g->n] = false;
    g->row_problems = c->problems;
    dt_db_schedule *r = &g->rows[g->n];
    *r = (dt_db_schedule){
        .id = sqlite3_column_int64(st, 0),
        .workload_id = sqlite3_column_int64(st, 1),
        .target_id = sqlite3_column_int64(st, 2),
        .threads = sqlite3_column_int(st, 3),
        .box = sqlite3_column_int(st, 6),
        .kernel_id = sqlite3_column_int64(st, 7),
        .predicted_ns = dt_col_real(st, 8),
        .measured_ns = dt_col_real(st, 9),
    };
    if (dt_col_dup(st, 4, &r->shape_lo) || dt_col_dup(st, 5, &r->shape_hi)) {
        free((void *)r->shape_lo);
        goto oom;
    }
    g->n++;
    return DT_OK;
oom:
    return dt_errf(c->e, DT_ENOMEM, "out of memory checking the schedules of %s", c->db->path);
}

/* The rows of one schedule (workload, target, threads), in the order they
 * were stored.  A run (box 0, schema 2) goes from lo to hi in shape-set
 * order: lo <= hi < next run's lo, comparing values in the key's variable
 * order, the first the most significant.  A box (box 1) has lo <= hi in
 * every variable, comes after the previous box in the order of first
 * corners (how the tuner stores them) and shares no shape with another box:
 * the domains are ascending, so two boxes overlap when their value
 * intervals do in every variable.  With one variable a box is a run and is
 * checked as one.  A run of several variables is not compared with a box:
 * which shapes lie between its ends depends on the domains, which db/ does
 * not read (dispatch/dispatch.c refuses such an overlap when it loads).
 * Then each schedule goes to the handle's schedule reader, which reads its
 * corners against its workload's variables and domains as a lookup does. */
static int check_ranges(dt_db_checker *c)
{
    static const char what[] = "checking the schedules' ranges";
    sqlite3_stmt *st;
    int rc = dt_db_prepare(c->db,
                           "SELECT s.id, s.workload_id, s.target_id, s.threads, s.shape_lo,"
                           " s.shape_hi, s.box, s.kernel_id, s.predicted_ns, s.measured_ns,"
                           " w.key, t.key FROM schedules s"
                           " LEFT JOIN workloads w ON w.id = s.workload_id"
                           " LEFT JOIN targets t ON t.id = s.target_id"
                           " ORDER BY s.workload_id, s.target_id, s.threads, s.id",
                           &st, c->e, what);
    if (rc)
        return rc;
    int64_t seen = 0, pw = -1, pt = -1, pid = 0;
    int pth = -1, pn = -1;
    long long prev_hi[MAX_VALS];
    box_row *boxes = NULL; /* the boxes of the current schedule so far */
    size_t nbox = 0, cap = 0;
    sched g = {.c = c};
    while (rc == DT_OK && (rc = dt_db_step_row(c->db, st, SQLITE_OK, c->e, what)) == DT_OK) {
        int64_t id = sqlite3_column_int64(st, 0), w = sqlite3_column_int64(st, 1),
                t = sqlite3_column_int64(st, 2);
        int th = sqlite3_column_int(st, 3);
        const char *lo_s = dt_col_text(st, 4), *hi_s = dt_col_text(st, 5);
        bool is_box = sqlite3_column_int(st, 6) == 1;
        box_row b = {.id = id};
        long long *lo = b.lo, *hi = b.hi;
        int nl = parse_shape(lo_s, lo), nh = parse_shape(hi_s, hi);
        bool first = !(w == pw && t == pt && th == pth);
        if (first) {
            pn = -1;
            nbox = 0;
        }
        pw = w, pt = t, pth = th;
        if ((rc = sched_add(&g, st, first)))
            break;
        if (nl < 0 || nh < 0 || nl != nh) {
            rc = dt_db_problem(c, "schedule", &seen,
                               "schedules row %lld has the range %s..%s, which is not two shapes "
                               "of the same variables",
                               (long long)id, lo_s ? lo_s : "NULL", hi_s ? hi_s : "NULL");
            pn = -1;
            continue;
        }
        b.n = nl;
        if (!is_box || nl == 1) {
            if (cmp_shape(lo, hi, nl) > 0)
                rc = dt_db_problem(c, "schedule", &seen,
                                   "schedules row %lld has the range %s..%s, which ends before "
                                   "it starts",
                                   (long long)id, lo_s, hi_s);
            else if (pn == nl && cmp_shape(prev_hi, lo, nl) >= 0)
                rc = dt_db_problem(c, "schedule", &seen,
                                   "schedules row %lld (%s..%s) overlaps or comes before row "
                                   "%lld of the same schedule (workload %lld, target %lld, %d "
                                   "threads)",
                                   (long long)id, lo_s, hi_s, (long long)pid, (long long)w,
                                   (long long)t, th);
            memcpy(prev_hi, hi, sizeof hi[0] * (size_t)nh);
            pn = nh;
            pid = id;
            continue;
        }
        int rev = 0;
        while (rev < nl && lo[rev] <= hi[rev])
            rev++;
        if (rev < nl) {
            char var[64];
            shape_var(lo_s, rev, var, sizeof var);
            rc = dt_db_problem(c, "schedule", &seen,
                               "schedules row %lld has the box %s..%s, whose %s interval ends "
                               "before it starts",
                               (long long)id, lo_s, hi_s, var);
            continue;
        }
        const box_row *over = NULL;
        for (size_t i = 0; i < nbox && !over; i++)
            if (boxes[i].n == nl && boxes_overlap(&boxes[i], &b))
                over = &boxes[i];
        const box_row *last = nbox ? &boxes[nbox - 1] : NULL;
        if (over)
            rc = dt_db_problem(c, "schedule", &seen,
                               "schedules row %lld (box %s..%s) overlaps row %lld of the same "
                               "schedule (workload %lld, target %lld, %d threads)",
                               (long long)id, lo_s, hi_s, (long long)over->id, (long long)w,
                               (long long)t, th);
        else if (last && last->n == nl && cmp_shape(last->lo, lo, nl) >= 0)
            rc = dt_db_problem(c, "schedule", &seen,
                               "schedules row %lld (box %s..%s) comes before row %lld of the "
                               "same schedule (workload %lld, target %lld, %d threads) in the "
                               "order of first corners",
                               (long long)id, lo_s, hi_s, (long long)last->id, (long long)w,
                               (long long)t, th);
        box_row *grown = dt_grow(boxes, &cap, nbox, sizeof *boxes);
        if (!grown) {
            rc = dt_errf(c->e, DT_ENOMEM, "out of memory %s of %s", what, c->db->path);
            break;
        }
        boxes = grown;
        boxes[nbox++] = b;
    }
    if (rc == DT_ENOTFOUND)
        rc = DT_OK;
    sqlite3_finalize(st);
    if (rc == DT_OK)
        rc = sched_flush(&g);
    sched_clear(&g);
    free(g.rows);
    free(g.reported);
    dt_db_problem_end(c, "schedule", seen);
    dt_db_problem_end(c, "schedule", g.seen);
    free(boxes);
    return rc;
}

int dt_db_check_invariants(dt_db_checker *c)
{
    int rc = DT_OK;
    for (size_t i = 0; rc == DT_OK && i < sizeof rules / sizeof rules[0]; i++)
        rc = run_rule(c, &rules[i]);
    if (rc == DT_OK)
        rc = check_ranges(c);
    return rc;
}
