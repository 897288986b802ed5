/* `dtune db`: create, migrate and inspect a dtune database. */
#include "cli/cli.h"
#include "cli/cmd_db_upkeep.h"
#include "db/db.h"
#include "dispatch/dispatch.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char db_usage[] =
    "Usage: dtune db COMMAND [OPTIONS]\n"
    "\n"
    "Create, migrate or inspect a dtune database (an SQLite file).\n"
    "\n"
    "Commands:\n"
    "  init     create the database, or migrate it to the current schema\n"
    "  stats    show the schema version, size and row count of each table\n"
    "  backup   copy the database to a new file, safely beside a running daemon\n"
    "  check    look for damage and list every problem (exit 2 when any)\n"
    "  prune    delete records, models and jobs nothing needs, then VACUUM\n"
    "  merge    merge databases tuned on other machines into this one\n"
    "\n"
    "Run 'dtune db COMMAND --help' for the options of a command.\n";

static const char init_usage[] =
    "Usage: dtune db init [--db PATH]\n"
    "\n"
    "Create the database at PATH, or migrate an existing dtune database to the\n"
    "schema of this dtune.  A database that is already current is left as is.\n"
    "An existing database is also checked for damage (SQLite's quick_check and\n"
    "its tables against the schema); a damaged one is reported and exits 2.\n"
    "A migrated one gets every check of 'dtune db check' after its migration\n"
    "(which rewrites no row): rows a query could not serve (schedule ranges\n"
    "reversed, overlapping or naming other variables, ...) are listed on stderr\n"
    "and it exits 2; the file stays migrated and every other schedule is served.\n"
    "\n"
    "Options:\n"
    "  --db PATH    database file (default: $DTUNE_DB, else ./dtune.db)\n"
    "  -h, --help   show this help\n";

static const char stats_usage[] =
    "Usage: dtune db stats [--db PATH] [--json]\n"
    "\n"
    "Show the schema version, journal mode, file size and the number of rows\n"
    "of each table.  The database is opened read-only and must exist.\n"
    "\n"
    "Options:\n"
    "  --db PATH    database file (default: $DTUNE_DB, else ./dtune.db)\n"
    "  --json       print one JSON object instead of a table\n"
    "  -h, --help   show this help\n";

static const char backup_usage[] =
    "Usage: dtune db backup DEST [--db PATH] [--json]\n"
    "\n"
    "Copy the database to the new file DEST with SQLite's online backup: one\n"
    "consistent state of the database, taken in a single read transaction, so\n"
    "it is safe while a daemon or a tune writes (they are not blocked).  DEST\n"
    "is written beside its final name and appears only when complete; it is\n"
    "then opened and checked for damage (as 'dtune db init' does).  An\n"
    "existing DEST is never overwritten (exit 2).\n"
    "\n"
    "Options:\n"
    "  --db PATH    database file (default: $DTUNE_DB, else ./dtune.db)\n"
    "  --json       print one JSON object instead of a line\n"
    "  -h, --help   show this help\n";

typedef struct {
    const char *db;
    const char *arg; /* the positional argument, where the command takes one */
    bool json;
    bool help;
} db_opts;

/* Parses the options of `dtune db <sub>`; allow_json says whether --json
 * is accepted.  Returns 0 or the usage-error exit code. */
static int parse_opts_arg(const char *cmd, int argc, char **argv, bool allow_json,
                          bool allow_arg, db_opts *o)
{
    *o = (db_opts){.db = dt_cli_default_db()};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            o->help = true;
        } else if (!strcmp(a, "--db")) {
            if (i + 1 >= argc)
                return dt_cli_usage_error(cmd, "option '--db' needs a PATH");
            o->db = argv[++i];
        } else if (!strncmp(a, "--db=", 5)) {
            o->db = a + 5;
        } else if (allow_json && !strcmp(a, "--json")) {
            o->json = true;
        } else if (a[0] == '-') {
            return dt_cli_usage_error(cmd, "unknown option '%s'", a);
        } else if (allow_arg && !o->arg) {
            o->arg = a;
        } else {
            return dt_cli_usage_error(cmd, "unexpected argument '%s'", a);
        }
    }
    if (!*o->db)
        return dt_cli_usage_error(cmd, "the database path is empty");
    return 0;
}

static int parse_opts(const char *cmd, int argc, char **argv, bool allow_json, db_opts *o)
{
    return parse_opts_arg(cmd, argc, argv, allow_json, false, o);
}

/* A problem of a migrated file, on stderr as `dtune db check` prints it. */
static void print_problem(const char *kind, const char *message, void *ud)
{
    (void)ud;
    fprintf(stderr, "%-12s %s\n", kind, dt_cli_safe(message));
}

/* Every check of `dtune db check` on a file just migrated: the migration
 * keeps every row as it was, damage included, and an older dtune never
 * checked what it wrote as this one reads it.  The problems are listed;
 * the file stays migrated (a migration is never undone, and refusing it
 * would leave the sound schedules unserved as well).  Exit 0 or 2 (3 when
 * the check could not run). */
static int check_migrated(dt_db *db, const char *path, int from, int to)
{
    dt_err e;
    int64_t n = 0;
    dt_dispatch_attach_reader(db);
    if (dt_db_check_all(db, print_problem, NULL, &n, &e) != DT_OK) {
        dt_err_prefix(&e, "migrated %s from schema %d to %d, then checking it", path, from, to);
        return dt_cli_fail(&e);
    }
    if (n == 0)
        return DT_EXIT_OK;
    dt_errf(&e, DT_EINVAL,
            "database %s is damaged: %lld problem%s (listed above), kept by its migration "
            "from schema %d to %d, which rewrites no row; the rest of the file is migrated "
            "and served; re-tune the workloads of the schedules listed (or delete their rows), "
            "then run 'dtune db check --db %s'",
            path, (long long)n, n == 1 ? "" : "s", from, to, path);
    return dt_cli_fail(&e);
}

static int db_init(int argc, char **argv)
{
    db_opts o;
    int rc = parse_opts("db init", argc, argv, false, &o);
    if (dt_cli_parse_done(rc, o.help, init_usage))
        return rc;
    dt_err e;
    dt_db *db;
    if ((rc = dt_cli_open_db(o.db, DT_DB_CREATE, &db)))
        return rc;
    int from = dt_db_opened_version(db), to = dt_db_schema_version(db);
    bool migrated = !dt_db_was_created(db) && from < to;
    /* A file that was already there is checked for damage: opening only
     * reads its header.  A migrated one gets the full check, after saying
     * it was migrated. */
    if (!dt_db_was_created(db) && !migrated && dt_db_check(db, &e) != DT_OK) {
        dt_db_close(db);
        return dt_cli_fail(&e);
    }
    rc = DT_EXIT_OK;
    if (dt_db_was_created(db)) {
        printf("created %s (schema %d)\n", o.db, to);
    } else if (migrated) {
        printf("migrated %s from schema %d to %d\n", o.db, from, to);
        fflush(stdout);
        rc = check_migrated(db, o.db, from, to);
    } else {
        printf("%s is up to date (schema %d)\n", o.db, to);
    }
    dt_db_close(db);
    return rc;
}

static void print_stats_text(const dt_db_stats_info *s)
{
    printf("database  %s\n", s->path);
    printf("schema    %d\n", s->schema_version);
    printf("journal   %s\n", s->journal_mode);
    printf("size      %lld bytes (+ %lld bytes of WAL)\n", (long long)s->size_bytes,
           (long long)s->wal_bytes);
    printf("\n%-14s %12s\n", "table", "rows");
    for (int i = 0; i < DT_DB_N_TABLES; i++) {
        if (s->tables[i].rows >= 0)
            printf("%-14s %12lld\n", s->tables[i].name, (long long)s->tables[i].rows);
        else
            printf("%-14s %12s\n", s->tables[i].name, "(missing)");
    }
}

static int print_stats_json(const dt_db_stats_info *s)
{
    json_t *tables = json_object();
    for (int i = 0; tables && i < DT_DB_N_TABLES; i++)
        if (s->tables[i].rows >= 0)
            json_object_set_new(tables, s->tables[i].name, json_integer(s->tables[i].rows));
    json_t *root = json_pack("{s:s, s:i, s:s, s:I, s:I, s:o}", "path", s->path,
                             "schema_version", s->schema_version, "journal_mode",
                             s->journal_mode, "size_bytes", (json_int_t)s->size_bytes,
                             "wal_bytes", (json_int_t)s->wal_bytes, "tables", tables);
    int ok = root && json_dumpf(root, stdout, JSON_INDENT(2)) == 0;
    json_decref(root);
    if (!ok) {
        dt_err e;
        dt_errf(&e, DT_ENOMEM, "cannot format the statistics as JSON");
        return dt_cli_fail(&e);
    }
    putchar('\n');
    return DT_EXIT_OK;
}

static int db_stats(int argc, char **argv)
{
    db_opts o;
    int rc = parse_opts("db stats", argc, argv, true, &o);
    if (dt_cli_parse_done(rc, o.help, stats_usage))
        return rc;
    dt_err e;
    dt_db *db;
    if ((rc = dt_cli_open_db(o.db, DT_DB_READONLY, &db)))
        return rc;
    dt_db_stats_info s;
    rc = dt_db_stats(db, &s, &e);
    if (rc != DT_OK) {
        rc = dt_cli_fail(&e);
    } else if (o.json) {
        rc = print_stats_json(&s);
    } else {
        print_stats_text(&s);
        rc = DT_EXIT_OK;
    }
    dt_db_close(db);
    return rc;
}

static int db_backup(int argc, char **argv)
{
    db_opts o;
    int rc = parse_opts_arg("db backup", argc, argv, true, true, &o);
    if (dt_cli_parse_done(rc, o.help, backup_usage))
        return rc;
    if (!o.arg || !*o.arg)
        return dt_cli_usage_error("db backup", "missing DEST, the file to write");
    dt_err e;
    dt_db *db, *copy;
    if ((rc = dt_cli_open_db(o.db, DT_DB_READONLY, &db)))
        return rc;
    dt_db_backup_info info = {0};
    rc = dt_db_backup(db, o.arg, &info, &e);
    dt_db_close(db);
    if (rc != DT_OK)
        return dt_cli_fail(&e);
    /* the copy must open as a dtune database and pass the damage check */
    if ((rc = dt_cli_open_db(o.arg, DT_DB_READONLY, &copy)))
        return rc;
    rc = dt_db_check(copy, &e);
    int version = dt_db_schema_version(copy);
    dt_db_close(copy);
    if (rc == DT_EINVAL) {
        /* the copy is page for page the source: whose damage is it? */
        dt_err es;
        int src_rc = dt_db_open(o.db, DT_DB_READONLY, &db, &es);
        if (src_rc == DT_OK) {
            src_rc = dt_db_check(db, &es);
            dt_db_close(db);
        }
        if (src_rc == DT_EINVAL) {
            dt_errf(&e, DT_EINVAL,
                    "%s; the backup %s is a faithful copy of it, damage included (run 'dtune "
                    "db check --db %s' to see every problem)",
                    es.msg, o.arg, o.db);
        } else if (src_rc == DT_OK) {
            char msg[DT_ERR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", e.msg);
            dt_errf(&e, DT_EINVAL, "the backup is damaged though the source %s checks clean: "
                    "%s", o.db, msg);
        }
    }
    if (rc != DT_OK)
        return dt_cli_fail(&e);
    if (o.json) {
        json_t *j = json_pack("{s:s, s:s, s:i, s:I, s:i, s:b}", "source", o.db, "backup", o.arg,
                              "pages", info.pages, "bytes", (json_int_t)info.bytes,
                              "schema_version", version, "checked", 1);
        if (!j || json_dumpf(j, stdout, JSON_INDENT(2)) != 0) {
            json_decref(j);
            dt_errf(&e, DT_ENOMEM, "cannot format the result as JSON");
            return dt_cli_fail(&e);
        }
        json_decref(j);
        putchar('\n');
    } else {
        printf("backed up %s to %s: %d pages, %lld bytes, schema %d, checked\n", o.db, o.arg,
               info.pages, (long long)info.bytes, version);
    }
    return DT_EXIT_OK;
}

int dt_cmd_db(int argc, char **argv)
{
    if (argc < 2)
        return dt_cli_usage_error("db", "missing command (init, stats, backup, check, prune or merge)");
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
        fputs(db_usage, stdout);
        return DT_EXIT_OK;
    }
    if (!strcmp(sub, "init"))
        return db_init(argc - 1, argv + 1);
    if (!strcmp(sub, "stats"))
        return db_stats(argc - 1, argv + 1);
    if (!strcmp(sub, "backup"))
        return db_backup(argc - 1, argv + 1);
    if (!strcmp(sub, "check"))
        return dt_cmd_db_check(argc - 1, argv + 1);
    if (!strcmp(sub, "prune"))
        return dt_cmd_db_prune(argc - 1, argv + 1);
    if (!strcmp(sub, "merge"))
        return dt_cmd_db_merge(argc - 1, argv + 1);
    return dt_cli_usage_error("db", "unknown command '%s'", sub);
}
