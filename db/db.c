/* Opening and closing a dtune database, and caller transactions.
 *
 * Opening never writes to a file it is going to refuse: the file is first
 * identified (its header by hand, then application_id, user_version and the
 * schema through one read-only statement), and only then are the settings
 * that write (journal_mode=WAL) and the migrations applied.
 *
 * Read-only opens never create, write or take ownership of a file
 * (docs/database.md, "Read-only opens"): with a -wal file present they read
 * it and the -shm through SQLite's read-only WAL support (mode=ro,
 * readonly_shm=1, and the "dtune-ro" VFS below that never creates the -wal);
 * without one the main file holds every commit and is read as an immutable
 * snapshot, which is reopened as soon as the file moves on.
 *
 * A whole open is retried with back-off while SQLite reports the file busy
 * (two processes creating or migrating it at once), for at most the busy
 * timeout. */
#include "db/db_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"

/* The first 16 bytes of every SQLite 3 database file. */
static const char sqlite_magic[16] = "SQLite format 3";
/* Bytes of the header dt_db_open reads: the magic and the file format
 * versions at offsets 18 and 19 (2 and 2 in WAL mode). */
#define HEADER_BYTES 20

/* What dt_db_open learns about the path before SQLite touches it. */
typedef enum { DT_FILE_MISSING, DT_FILE_EMPTY, DT_FILE_SQLITE } dt_file_kind;

/* ---- probing the file by hand ------------------------------------------------ */

static int read_header(const char *path, unsigned char *buf, size_t n, ssize_t *got, dt_err *e)
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

/* Classifies path: missing, empty (0 bytes) or carrying an SQLite header
 * (*wal: in WAL mode); anything else is DT_ENOTDTUNE. */
static int probe_file(const char *path, dt_file_kind *kind, bool *wal, dt_err *e)
{
    struct stat sb;
    *wal = false;
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
    unsigned char head[HEADER_BYTES];
    ssize_t got = 0;
    int rc = read_header(path, head, sizeof head, &got, e);
    if (rc)
        return rc;
    if (got < (ssize_t)sizeof sqlite_magic || memcmp(head, sqlite_magic, sizeof sqlite_magic))
        return dt_errf(e, DT_ENOTDTUNE, "%s is not a dtune database (not an SQLite file)",
                       path);
    *wal = got == HEADER_BYTES && head[18] == 2 && head[19] == 2;
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

/* path + suffix in buf; false when it does not fit. */
static bool side_path(const char *path, const char *suffix, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s%s", path, suffix);
    return n > 0 && (size_t)n < size;
}

static bool side_exists(const char *path, const char *suffix)
{
    char p[4200];
    struct stat sb;
    return side_path(path, suffix, p, sizeof p) && stat(p, &sb) == 0;
}

static int64_t side_size(const char *path, const char *suffix)
{
    char p[4200];
    struct stat sb;
    if (!side_path(path, suffix, p, sizeof p) || stat(p, &sb) != 0)
        return -1;
    return (int64_t)sb.st_size;
}

static bool file_id(const char *path, dt_db_file_id *id)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return false;
    *id = (dt_db_file_id){.dev = sb.st_dev, .ino = sb.st_ino, .size = sb.st_size,
                          .mtime = sb.st_mtim, .ctime = sb.st_ctim};
    return true;
}

static bool same_file_id(const dt_db_file_id *a, const dt_db_file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
           a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* True while the file a snapshot was read from is unchanged and no writer
 * has opened it (a WAL writer creates the -wal first). */
static bool snapshot_current(const dt_db *db)
{
    dt_db_file_id now;
    return file_id(db->path, &now) && same_file_id(&now, &db->seen) &&
           !side_exists(db->path, "-wal");
}

/* ---- the read-only VFS ---------------------------------------------------------- */

/* "dtune-ro" is the default VFS except that a WAL file is opened read-only
 * and never created.  SQLite opens (and creates if missing) the -wal of a
 * WAL database even on a read-only connection; through this VFS a missing
 * -wal is SQLITE_CANTOPEN instead, so a reader never leaves a -wal owned by
 * its own uid behind (the owner could not write it any more). */
#define RO_VFS_NAME "dtune-ro"

static sqlite3_vfs ro_vfs;
static sqlite3_vfs *ro_base;
static int ro_vfs_rc = SQLITE_ERROR;
static pthread_once_t ro_once = PTHREAD_ONCE_INIT;

static int ro_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)vfs;
    if (flags & SQLITE_OPEN_WAL)
        flags = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY;
    return ro_base->xOpen(ro_base, name, f, flags, out);
}

static void ro_register(void)
{
    ro_base = sqlite3_vfs_find(NULL);
    if (!ro_base)
        return;
    ro_vfs = *ro_base;  /* every other method (and pAppData) as the default VFS */
    ro_vfs.pNext = NULL;
    ro_vfs.zName = RO_VFS_NAME;
    ro_vfs.xOpen = ro_open;
    ro_vfs_rc = sqlite3_vfs_register(&ro_vfs, 0);
}

/* "file:PATH?QUERY" with PATH percent-encoded (SQLite URI syntax). */
static char *make_uri(const char *path, const char *query)
{
    size_t n = strlen(path);
    char *uri = malloc(3 * n + strlen(query) + 16);
    if (!uri)
        return NULL;
    char *p = uri;
    strcpy(p, path[0] == '/' ? "file://" : "file:");
    p += strlen(p);
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
        if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
            strchr("/._-~", *s)) {
            *p++ = (char)*s;
        } else {
            *p++ = '%';
            *p++ = hex[*s >> 4];
            *p++ = hex[*s & 15];
        }
    }
    sprintf(p, "?%s", query);
    return uri;
}

/* ---- opening -------------------------------------------------------------------- */

/* How the SQLite connection is opened. */
typedef enum {
    OPEN_WRITE,     /* read-write (and create with DT_DB_CREATE) */
    OPEN_LIVE,      /* read-only through -wal and -shm, neither created nor written */
    OPEN_SNAPSHOT,  /* read-only, immutable: the main file alone */
} open_mode;

static int open_sqlite(dt_db *db, open_mode mode, dt_err *e)
{
    int rc;
    if (mode == OPEN_WRITE) {
        int oflags = SQLITE_OPEN_READWRITE | ((db->flags & DT_DB_CREATE) ? SQLITE_OPEN_CREATE : 0);
        rc = sqlite3_open_v2(db->path, &db->sql, oflags, NULL);
    } else {
        if (mode == OPEN_LIVE) {
            pthread_once(&ro_once, ro_register);
            if (ro_vfs_rc != SQLITE_OK)
                return dt_errf(e, DT_EDB, "cannot open database %s: registering the read-only "
                                          "SQLite VFS failed", db->path);
        }
        char *uri = make_uri(db->path, mode == OPEN_LIVE ? "mode=ro&readonly_shm=1"
                                                         : "mode=ro&immutable=1");
        if (!uri)
            return dt_errf(e, DT_ENOMEM, "out of memory opening %s", db->path);
        rc = sqlite3_open_v2(uri, &db->sql, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                             mode == OPEN_LIVE ? RO_VFS_NAME : NULL);
        free(uri);
    }
    if (rc != SQLITE_OK)
        return dt_errf(e, dt_db_code(rc), "cannot open database %s: %s", db->path,
                       db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(db->sql, DT_DB_BUSY_TIMEOUT_MS);
    /* Closing the last connection of a WAL database checkpoints it, which
     * would write to a file we are about to refuse; re-enabled once the
     * file is known to be ours (and never for a read-only handle). */
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    return DT_OK;
}

static void close_sqlite(dt_db *db)
{
    if (!db->sql)
        return;
    if (!sqlite3_get_autocommit(db->sql))
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close_v2(db->sql);
    db->sql = NULL;
}

/* The error of the first read of a file: permission and I/O problems are
 * said as such (DT_EIO), a busy file is DT_EBUSY (retried by the caller),
 * anything else means the file is not a database dtune can use. */
static int first_read_error(dt_db *db, int s, dt_err *e)
{
    int ext = sqlite3_extended_errcode(db->sql);
    const char *msg = sqlite3_errmsg(db->sql);
    int err = sqlite3_system_errno(db->sql);
    switch (s & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return dt_db_fail(db, s, e, "reading the header");
    case SQLITE_NOMEM:
        return dt_errf(e, DT_ENOMEM, "out of memory reading %s", db->path);
    case SQLITE_READONLY:
        if (ext == SQLITE_READONLY_RECOVERY)  /* a writer is starting: try again */
            return dt_errf(e, DT_EBUSY, "reading %s: a writer is recovering its WAL (%s)",
                           db->path, msg);
        /* fall through */
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        if ((db->flags & DT_DB_READONLY) && side_size(db->path, "-wal") >= 0 &&
            side_size(db->path, "-wal") < 32 && !side_exists(db->path, "-shm"))
            /* a writer between creating the -wal and the -shm: try again */
            return dt_errf(e, DT_EBUSY,
                           "cannot read database %s: it has an empty write-ahead log "
                           "(%s-wal) but no %s-shm yet: a writer is starting (or died "
                           "starting; then run 'dtune db init --db %s' as its owner)",
                           db->path, db->path, db->path, db->path);
        if ((db->flags & DT_DB_READONLY) && side_size(db->path, "-wal") >= 0 &&
            !side_exists(db->path, "-shm"))
            return dt_errf(e, DT_EIO,
                           "cannot read database %s: it has a write-ahead log (%s-wal) but no "
                           "%s-shm, which a read-only open does not create; run 'dtune db "
                           "init --db %s' as its owner to checkpoint it",
                           db->path, db->path, db->path, db->path);
        if (err)
            return dt_errf(e, DT_EIO, "cannot read database %s: %s (%s)", db->path, msg,
                           strerror(err));
        return dt_errf(e, DT_EIO, "cannot read database %s: %s", db->path, msg);
    case SQLITE_CORRUPT:
        return dt_errf(e, DT_ENOTDTUNE, "%s is not a dtune database, or is damaged (%s)",
                       db->path, msg);
    default:
        return dt_errf(e, DT_ENOTDTUNE, "%s is not a dtune database (%s)", db->path, msg);
    }
}

/* Reads the identity of the open file in one statement (so another process
 * creating the schema cannot be seen half done) and decides whether it is
 * ours: *version is its schema version (0 for an empty database). */
static int identify(dt_db *db, int *version, dt_err *e)
{
    sqlite3_stmt *st = NULL;
    int s = sqlite3_prepare_v2(db->sql,
                               "SELECT (SELECT application_id FROM pragma_application_id),"
                               " (SELECT user_version FROM pragma_user_version),"
                               " (SELECT count(*) FROM sqlite_master)",
                               -1, &st, NULL);
    if (s == SQLITE_OK)
        s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        int rc = first_read_error(db, s, e);
        sqlite3_finalize(st);
        return rc;
    }
    int64_t app = sqlite3_column_int64(st, 0), ver = sqlite3_column_int64(st, 1),
            objects = sqlite3_column_int64(st, 2);
    sqlite3_finalize(st);

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

/* Brings the opened, identified database to the version the flags ask for.
 * new_file: the path was missing or empty when this attempt probed it. */
static int bring_up_to_date(dt_db *db, bool new_file, dt_err *e)
{
    int v = db->opened_version;
    if (db->flags & DT_DB_NOMIGRATE) {
        db->created = new_file;
        return DT_OK;
    }
    if (v == DT_DB_SCHEMA_VERSION)
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
    /* Another process may have migrated the file since identify(): what the
     * first step finds under the write lock is the version this open found. */
    int found = v;
    int rc = dt_db_migrate(db, v, DT_DB_SCHEMA_VERSION, &found, e);
    if (rc == DT_OK) {
        db->opened_version = found;
        if (found == 0 && new_file)
            db->created = true;
    }
    return rc;
}

static int open_readonly(dt_db *db, bool wal_file, dt_err *e)
{
    db->wal_file = wal_file;
    /* Without a -wal file the main file holds every commit (a WAL writer
     * creates the -wal before it writes): read it as a snapshot. */
    db->snapshot = wal_file && !side_exists(db->path, "-wal");
    if (db->snapshot && !file_id(db->path, &db->seen))
        return dt_errf(e, DT_EIO, "cannot access database %s: %s", db->path, strerror(errno));
    int rc = open_sqlite(db, db->snapshot ? OPEN_SNAPSHOT : OPEN_LIVE, e);
    if (rc == DT_OK)
        rc = identify(db, &db->opened_version, e);
    if (db->snapshot) {
        if (rc == DT_OK && !snapshot_current(db))
            rc = dt_errf(e, DT_EBUSY, "reading %s: a writer changed it while it was opened",
                         db->path);
    } else if (rc == DT_EIO && wal_file && !side_exists(db->path, "-wal")) {
        /* the last writer closed (and removed the -wal) while we opened */
        rc = dt_errf(e, DT_EBUSY, "reading %s: its writer closed while it was opened",
                     db->path);
    }
    return rc;
}

/* One attempt at opening db->path; DT_EBUSY means try again. */
static int open_once(dt_db *db, dt_err *e)
{
    dt_file_kind kind;
    bool wal_file;
    int rc = probe_file(db->path, &kind, &wal_file, e);
    if (rc)
        return rc;
    if (kind == DT_FILE_MISSING && !(db->flags & DT_DB_CREATE))
        return dt_errf(e, DT_ENOTFOUND, "database %s does not exist", db->path);
    if (db->flags & DT_DB_READONLY) {
        rc = open_readonly(db, wal_file, e);
    } else {
        rc = open_sqlite(db, OPEN_WRITE, e);
        /* SQLite quietly opens a file it may not write read-only. */
        if (rc == DT_OK && sqlite3_db_readonly(db->sql, "main") == 1)
            rc = dt_errf(e, DT_EIO, "cannot open database %s for writing: %s", db->path,
                         access(db->path, W_OK) != 0 ? strerror(errno) : "read-only file");
        if (rc == DT_OK)
            rc = identify(db, &db->opened_version, e);
    }
    if (rc == DT_OK)
        rc = configure(db, e);
    if (rc == DT_OK && !(db->flags & DT_DB_READONLY))
        sqlite3_db_config(db->sql, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, (int *)NULL);
    if (rc == DT_OK)
        rc = bring_up_to_date(db, kind != DT_FILE_SQLITE, e);
    return rc;
}

/* open_once until it succeeds, fails for good, or the busy timeout has
 * passed: SQLite's busy handler does not cover every step of creating a
 * file (switching it to WAL, another process's recovery), so a busy open
 * is closed and started again after a randomised, doubling pause. */
static int open_with_retries(dt_db *db, dt_err *e)
{
    double deadline = dt_now_s() + DT_DB_BUSY_TIMEOUT_MS / 1000.0;
    unsigned seed = (unsigned)getpid() ^ (unsigned)(dt_now_s() * 1000);
    int64_t pause_us = 1000;
    for (;;) {
        int rc = open_once(db, e);
        if (rc != DT_EBUSY || dt_now_s() >= deadline)
            return rc;
        close_sqlite(db);
        dt_sleep_s((double)(pause_us / 2 + rand_r(&seed) % (pause_us / 2 + 1)) / 1e6);
        if (pause_us < 64000)
            pause_us *= 2;
    }
}

int dt_db_open(const char *path, unsigned flags, dt_db **out, dt_err *e)
{
    *out = NULL;
    int rc = check_flags(path, flags, e);
    if (rc)
        return rc;
    dt_db *db = calloc(1, sizeof *db);
    if (!db || !(db->path = strdup(path))) {
        free(db);
        return dt_errf(e, DT_ENOMEM, "out of memory opening %s", path);
    }
    db->flags = flags;
    rc = open_with_retries(db, e);
    if (rc) {
        dt_db_close(db);
        return rc;
    }
    db->ready = true;
    *out = db;
    return DT_OK;
}

int dt_db_revalidate(dt_db *db, dt_err *e)
{
    if (!db->ready || !db->snapshot || snapshot_current(db))
        return DT_OK;
    /* Only between statements: a reopen would finalise a running one. */
    if (sqlite3_next_stmt(db->sql, NULL) || !sqlite3_get_autocommit(db->sql))
        return DT_OK;
    dt_db fresh = {.path = db->path, .flags = db->flags};
    int rc = open_with_retries(&fresh, e);
    if (rc) {
        close_sqlite(&fresh);
        if (e)
            dt_err_prefix(e, "reopening %s after it changed", db->path);
        return rc;
    }
    close_sqlite(db);
    db->sql = fresh.sql;
    db->wal_file = fresh.wal_file;
    db->snapshot = fresh.snapshot;
    db->seen = fresh.seen;
    db->generation++;
    return DT_OK;
}

void dt_db_close(dt_db *db)
{
    if (!db)
        return;
    close_sqlite(db);
    free(db->path);
    free(db);
}

void dt_db_set_schedule_reader(dt_db *db, dt_db_schedule_reader_fn fn, void *ud)
{
    db->reader = fn;
    db->reader_ud = fn ? ud : NULL;
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
    int64_t v;
    int rc = dt_db_query_int(db, "PRAGMA data_version", &v, e, "reading PRAGMA data_version");
    /* A reopened snapshot is a new connection with its own counter. */
    if (rc == DT_OK)
        *out = (db->generation << 40) + (v & ((INT64_C(1) << 40) - 1));
    return rc;
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
