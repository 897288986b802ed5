/* dtune db backup: a consistent copy of a database taken with SQLite's
 * online backup API.  The source may be open in a running daemon or tune:
 * the copy is one read transaction (WAL: writers are not blocked), written
 * to DEST.tmp.PID and renamed into place only once complete and checked, so
 * DEST is never a partial file. */
#include "db/db_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dt_db_backup(dt_db *db, const char *dest, dt_db_backup_info *out, dt_err *e)
{
    if (!dest || !*dest)
        return dt_errf(e, DT_EINVAL, "the backup destination is empty");
    /* SQLite treats NAME-wal, NAME-shm and NAME-journal as side files of
     * the database NAME: the next writer of NAME (dtune db init, a tune, the
     * daemon) deletes or overwrites one when it finds it stale, and a copy
     * named like the source's own would be taken for its write-ahead log */
    static const char *const sides[] = {"-wal", "-shm", "-journal"};
    size_t dl = strlen(dest);
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
        size_t sl = strlen(sides[i]);
        if (dl > sl && !strcmp(dest + dl - sl, sides[i]))
            return dt_errf(e, DT_EINVAL,
                           "%s ends in '%s', the name of an SQLite side file of the database "
                           "%.*s: its next writer would delete or overwrite the backup; "
                           "choose another name",
                           dest, sides[i], (int)(dl - sl), dest);
    }
    /* DEST.lock is the lock file of the database DEST (common/lockfile.h): a
     * daemon on DEST truncates it and writes its pid there */
    static const char lock[] = ".lock";
    size_t ll = sizeof lock - 1;
    if (dl > ll && !strcmp(dest + dl - ll, lock) && dest[dl - ll - 1] != '/')
        return dt_errf(e, DT_EINVAL,
                       "%s ends in '.lock', the name of the daemon's lock file of the database "
                       "%.*s: a daemon on %.*s would truncate the backup; choose another name",
                       dest, (int)(dl - ll), dest, (int)(dl - ll), dest);
    /* an existing DEST, or a name of one (a hard or symbolic link, dangling
     * too: link() below does not follow it), is never replaced */
    struct stat st;
    if (lstat(dest, &st) == 0)
        return dt_errf(e, DT_EINVAL, "%s already exists; a backup never overwrites a file", dest);
    /* side files of DEST left by an earlier database of that name: SQLite
     * would replay a stale DEST-wal or roll back a DEST-journal onto the
     * copy at its next open */
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
        char side[4200];
        if ((size_t)snprintf(side, sizeof side, "%s%s", dest, sides[i]) >= sizeof side)
            return dt_errf(e, DT_EINVAL, "backup path %s is too long", dest);
        if (lstat(side, &st) == 0)
            return dt_errf(e, DT_EINVAL,
                           "%s exists, a side file of an earlier database named %s: SQLite "
                           "would apply it to the backup when it opens it; remove it or choose "
                           "another name",
                           side, dest);
    }
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dest, (long)getpid()) >= sizeof tmp)
        return dt_errf(e, DT_EINVAL, "backup path %s is too long", dest);
    unlink(tmp);
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
        char side[4200];
        snprintf(side, sizeof side, "%s%s", tmp, sides[i]);
        unlink(side); /* our own name's, left by a crash: never the copy's */
    }
    sqlite3 *to = NULL;
    int src = sqlite3_open_v2(tmp, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (src != SQLITE_OK) {
        int code = dt_db_code(src);
        dt_errf(e, code ? code : DT_EIO, "cannot create %s: %s", dest,
                to ? sqlite3_errmsg(to) : sqlite3_errstr(src));
        sqlite3_close(to);
        unlink(tmp);
        return code ? code : DT_EIO;
    }
    sqlite3_busy_timeout(to, DT_DB_BUSY_TIMEOUT_MS);
    sqlite3_backup *b = sqlite3_backup_init(to, "main", db->sql, "main");
    int rc = DT_OK;
    if (!b) {
        rc = dt_errf(e, DT_EDB, "backing up %s: %s", db->path, sqlite3_errmsg(to));
    } else {
        /* all pages in one step: one read transaction, so the copy is one
         * consistent state of the source even while a writer commits */
        int step = sqlite3_backup_step(b, -1);
        int pages = sqlite3_backup_pagecount(b);
        int fin = sqlite3_backup_finish(b);
        if (step != SQLITE_DONE || fin != SQLITE_OK) {
            int r = step != SQLITE_DONE ? step : fin;
            int code = dt_db_code(r);
            rc = dt_errf(e, code ? code : DT_EDB, "backing up %s to %s: %s", db->path, dest,
                         sqlite3_errstr(r));
        } else if (out) {
            out->pages = pages;
        }
    }
    if (sqlite3_close(to) != SQLITE_OK && rc == DT_OK)
        rc = dt_errf(e, DT_EIO, "closing the backup %s", dest);
    if (rc == DT_OK && stat(tmp, &st) == 0 && out)
        out->bytes = (int64_t)st.st_size;
    if (rc == DT_OK && link(tmp, dest) != 0) /* link: never replaces a DEST made meanwhile */
        rc = dt_errf(e, errno == EEXIST ? DT_EINVAL : DT_EIO, "cannot put the backup at %s: %s",
                     dest, strerror(errno));
    unlink(tmp);
    char side[4200];
    snprintf(side, sizeof side, "%s-wal", tmp);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", tmp);
    unlink(side);
    snprintf(side, sizeof side, "%s-journal", tmp);
    unlink(side);
    return rc;
}
