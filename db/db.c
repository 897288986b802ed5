/* Opening and closing a dtune database, and caller transactions.
 *
 * Opening never writes to a file it is going to refuse: the file is first
 * identified (its header by hand, then application_id, user_version and the
 * schema through read-only statements), and only then are the settings that
 * write (journal_mode=WAL) and the migrations applied. */
#include "db/db_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first 16 bytes of every SQLite 3 database file. */
static const char sqlite_magic[16] = "SQLite format 3";

/* What dt_db_open learns about the path before SQLite touches it. */
typedef enum { DT_FILE_MISSING, DT_FILE_EMPTY, DT_FILE_SQLITE } dt_file_kind;

static int read_header(const char *path, char *buf, size_t n, ssize_t *got, dt_err *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return dt_errf(e, DT_EIO, "cannot open database %s: %s", path, strerror(errno));
    *got = read(fd, buf, n);
    int err = errno;
    close(fd);
    if (*got < 0)
        return dt_errf(e, DT_EIO, "cannot read database %s: %s", path, strerror(err));
    return DT_OK;
}

/* Classifies path: missing, empty (0 bytes) or carrying an SQLite header;
 * anything else is DT_ENOTDTUNE. */
static int probe_file(const char *path, dt_file_kind *kind, dt_err *e)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) {
            *kind = DT_FILE_MISSING;
            return DT_OK;
        }
        return dt_errf(e, DT_EIO, "cannot access database %s: %s", path, strerror(errno));
    }
    if (!S_ISREG(sb.st_mode))
        return dt_errf(e, DT_ENOTDTUNE, "%s is not a dtune database (not a regular file)",
                       path);
    if (sb.st_size == 0) {
        *kind = DT_FILE_EMPTY;
        return DT_OK;
    }
    char head[sizeof sqlite_magic];
    ssize_t got = 0;
    int rc = read_header(path, head, sizeof head, &got, e);
    if (rc)
        return rc;
    if (got != (ssize_t)sizeof head || memcmp(head, sqlite_magic, sizeof head) != 0)
        return dt_errf(e, DT_ENOTDTUNE, "%s is not a dtune database (not an SQLite file)",
                       path);
    *kind = DT_FILE_SQLITE;
    return DT_OK;
}

static int check_flags(const char *path, unsigned flags, dt_err *e)
{
    if (!path || !*path)
        return dt_errf(e, DT_EINVAL, "database path is empty");
    if (flags & ~(unsigned)(DT_DB_READONLY | DT_DB_CREATE | DT_DB_NOMIGRATE))
        return dt_errf(e, DT_EINVAL, "unknown database open flags 0x%x", flags);
    if ((flags & DT_DB_READONLY) && (flags & DT_DB_CREATE))
        return dt_errf(e, DT_EINVAL, "cannot create database %s read-only", path);
    return DT_OK;
}

/* Reads the identity of the open file and decides whether it is ours:
 * *version is its schema version (0 for an empty database). */
static int identify(dt_db *db, int *version, dt_err *e)
{
    int64_t app, ver, objects;
    int rc = dt_db_query_int(db, "PRAGMA application_id", &app, e, "reading application_id");
    if (rc == DT_OK)
        rc = dt_db_query_int(db, "PRAGMA user_version", &ver, e, "reading user_version");
    if (rc == DT_OK)
        rc = dt_db_query_int(db, "SELECT count(*) FROM sqlite_master", &objects, e,
                             "reading the schema");
    if (rc == DT_ENOTDTUNE || rc == DT_EDB)
        return dt_errf(e, DT_ENOTDTUNE, "%s is not a dtune database (%s)", db->path,
                       sqlite3_errmsg(db->sql));
    if (rc)
        return rc;

    if (app == DT_DB_APPLICATION_ID) {
        if (ver > DT_DB_SCHEMA_VERSION)
            return dt_errf(e, DT_EVERSION,
                           "database %s has schema version %lld, this dtune supports up to "
                           "%d; upgrade dtune",
                           db->path, (long long)ver, DT_DB_SCHEMA_VERSION);
        if (ver < 0)
            return dt_errf(e, DT_ENOTDTUNE, "%s is not a dtune database (schema version %lld)",
                           db->path, (long long)ver);
        *version = (int)ver;
        return DT_OK;
    }
    if (app == 0 && ver == 0 && objects == 0) {
        *version = 0;  /* empty SQLite database: ours to initialise */
        return DT_OK;
    }
    if (app != 0)
        return dt_errf(e, DT_ENOTDTUNE,
                       "%s is not a dtune database (SQLite application_id 0x%08x, expected "
                       "0x%08x)",
                       db->path, (unsigned)app, (unsigned)DT_DB_APPLICATION_ID);
    return dt_errf(e, DT_ENOTDTUNE,
                   "%s is not a dtune database (an SQLite database with %lld schema objects "
                   "and no dtune application_id)",
                   db->path, (long long)objects);
}

/* Settings applied after identification.  journal_mode=WAL writes the file
 * header, which is why it must wait until the file is known to be ours. */
static int configure(dt_db *db, dt_err *e)
{
    int rc = dt_db_exec(db, "PRAGMA foreign_keys = ON", e, "enabling foreign keys");
    if (rc || (db->flags & DT_DB_READONLY))
        return rc;
    sqlite3_stmt *st;
    rc = dt_db_prepare(db, "PRAGMA journal_mode = WAL", &st, e, "enabling WAL");
    if (rc)
        return rc;
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        rc = dt_db_fail(db, s, e, "enabling WAL");
        sqlite3_finalize(st);
        return rc;
    }
    sqlite3_finalize(st);
    return dt_db_exec(db, "PRAGMA synchronous = NORMAL", e, "setting synchronous");
}

static int open_sqlite(dt_db *db, dt_err *e)
{
    int oflags = (db->flags & DT_DB_READONLY) ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
    if (db->flags & DT_DB_CREATE)
        oflags |= SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(db->path, &db->sql, oflags, NULL);
    if (rc != SQLITE_OK)
        return dt_errf(e, dt_db_code(rc), "cannot open database %s: %s", db->path,
                       db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(db->sql, DT_DB_BUSY_TIMEOUT_MS);
    /* Closing the last connection of a WAL database checkpoints it, which
     * would write to a file we are about to refuse; re-enabled once the
     * file is known to be ours. */
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    return DT_OK;
}

/* Brings the opened, identified database to the version the flags ask for. */
static int bring_up_to_date(dt_db *db, dt_err *e)
{
    int v = db->opened_version;
    if (v == DT_DB_SCHEMA_VERSION || (db->flags & DT_DB_NOMIGRATE))
        return DT_OK;
    if (db->flags & DT_DB_READONLY) {
        if (v == 0)
            return dt_errf(e, DT_EVERSION,
                           "database %s is empty (schema version 0); run 'dtune db init "
                           "--db %s' first",
                           db->path, db->path);
        return dt_errf(e, DT_EVERSION,
                       "database %s has schema version %d, this dtune needs %d; run 'dtune "
                       "db init --db %s' to migrate it",
                       db->path, v, DT_DB_SCHEMA_VERSION, db->path);
    }
    return dt_db_migrate(db, v, DT_DB_SCHEMA_VERSION, e);
}

int dt_db_open(const char *path, unsigned flags, dt_db **out, dt_err *e)
{
    *out = NULL;
    int rc = check_flags(path, flags, e);
    if (rc)
        return rc;
    dt_file_kind kind;
    rc = probe_file(path, &kind, e);
    if (rc)
        return rc;
    if (kind == DT_FILE_MISSING && !(flags & DT_DB_CREATE))
        return dt_errf(e, DT_ENOTFOUND, "database %s does not exist", path);

    dt_db *db = calloc(1, sizeof *db);
    if (!db || !(db->path = strdup(path))) {
        free(db);
        return dt_errf(e, DT_ENOMEM, "out of memory opening %s", path);
    }
    db->flags = flags;
    db->created = kind != DT_FILE_SQLITE;
    rc = open_sqlite(db, e);
    if (rc == DT_OK)
        rc = identify(db, &db->opened_version, e);
    if (rc == DT_OK)
        rc = configure(db, e);
    if (rc == DT_OK && !(flags & DT_DB_READONLY))
        sqlite3_db_config(db->sql, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, (int *)NULL);
    if (rc == DT_OK)
        rc = bring_up_to_date(db, e);
    if (rc) {
        dt_db_close(db);
        return rc;
    }
    *out = db;
    return DT_OK;
}

void dt_db_close(dt_db *db)
{
    if (!db)
        return;
    if (db->sql) {
        if (!sqlite3_get_autocommit(db->sql))
            sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close_v2(db->sql);
    }
    free(db->path);
    free(db);
}

const char *dt_db_path(const dt_db *db)
{
    return db->path;
}

bool dt_db_was_created(const dt_db *db)
{
    return db->created;
}

int dt_db_opened_version(const dt_db *db)
{
    return db->opened_version;
}

int dt_db_schema_version(dt_db *db)
{
    int64_t v;
    int rc = dt_db_query_int(db, "PRAGMA user_version", &v, NULL, "reading user_version");
    return rc ? rc : (int)v;
}

int dt_db_data_version(dt_db *db, int64_t *out, dt_err *e)
{
    return dt_db_query_int(db, "PRAGMA data_version", out, e, "reading PRAGMA data_version");
}

void dt_db_set_busy_timeout(dt_db *db, int ms)
{
    sqlite3_busy_timeout(db->sql, ms);
}

/* ---- caller transactions ------------------------------------------------ */

int dt_db_begin(dt_db *db, dt_err *e)
{
    int rc = dt_db_require_writable(db, e, "beginning a transaction");
    if (rc)
        return rc;
    if (!sqlite3_get_autocommit(db->sql))
        return dt_errf(e, DT_EINVAL, "beginning a transaction in %s: one is already open",
                       db->path);
    return dt_db_exec(db, "BEGIN IMMEDIATE", e, "beginning a transaction");
}

int dt_db_commit(dt_db *db, dt_err *e)
{
    if (sqlite3_get_autocommit(db->sql))
        return dt_errf(e, DT_EINVAL, "committing in %s: no transaction is open", db->path);
    int rc = dt_db_exec(db, "COMMIT", e, "committing");
    if (rc && !sqlite3_get_autocommit(db->sql))
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int dt_db_rollback(dt_db *db, dt_err *e)
{
    if (sqlite3_get_autocommit(db->sql))
        return DT_OK;
    return dt_db_exec(db, "ROLLBACK", e, "rolling back");
}
