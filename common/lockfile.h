/* An exclusive, advisory lock on a file, held for the life of a process: the
 * `dtune daemon` takes DB.lock beside its database so that one daemon at a
 * time runs a database's jobs (docs/daemon.md, "One daemon per database").
 *
 * The lock is flock(2) on an open file description, not SQLite's own file
 * locks and not fcntl record locks (which a process loses when it closes any
 * descriptor of the file).  The kernel drops it when the holder exits in any
 * way, kill -9 included, so a lock file left behind never blocks a restart:
 * the file's existence means nothing, only the lock on it does.  The
 * descriptor is close-on-exec, so processes the holder starts (compilers,
 * trial runners) never hold it.
 *
 * While held, the file says who holds it, one "key value" per line:
 *   pid 12345
 *   host buildbox
 *   started 2024-05-01T12:00:00Z
 * and a process refused the lock reports those values.
 *
 * The file is never unlinked: removing it would let a later process lock a
 * new inode while an earlier one still holds the old one.
 *
 * A lock file named F.lock also locks F itself: flock(2) on F opened
 * read-only (symbolic links followed; created empty when missing, as the
 * daemon's database open would create it).  The name F.lock is one
 * spelling of F; F's own lock belongs to its device and inode, so a hard
 * link, a symbolic link or another path to the same file meets it (issue
 * 27: a daemon on a hard link of another's database ran beside it).  flock
 * does not conflict with SQLite's fcntl locks on F, but closing any
 * descriptor of F drops the process's fcntl locks on it: take the lock
 * before this process opens F with SQLite and release it after the last
 * such connection is closed (the daemon does both).  A process refused on
 * F's lock is told the holder's pid (from /proc/locks) and this host.
 *
 * Threads: acquire and release from one thread; the handle is not shared. */
#ifndef DT_COMMON_LOCKFILE_H
#define DT_COMMON_LOCKFILE_H

#include <sys/types.h>

#include "common/error.h"

typedef struct dt_lockfile dt_lockfile;

/* Who holds a lock, as its file says (fields empty / 0 when unknown). */
typedef struct dt_lock_holder {
    long pid;
    char host[256];
    char started[64];
} dt_lock_holder;

/* Creates path if needed (mode 0644) and takes its lock without waiting,
 * and F's when path is F.lock (above).  0 and *out on success (the file
 * then names this process); DT_EBUSY when another process holds either,
 * with the message "PATH is locked by pid P on host H, started T" (F's:
 * "F is locked by pid P on host H (the same file ... under another name)")
 * and *holder (may be NULL) filled; DT_EIO when a file cannot be opened,
 * locked or written. */
int dt_lockfile_acquire(const char *path, dt_lockfile **out, dt_lock_holder *holder, dt_err *e);

/* Clears the holder lines, releases the lock and frees l (NULL allowed). */
void dt_lockfile_release(dt_lockfile *l);

/* Parses the text of a lock file into *h (missing fields stay empty / 0). */
void dt_lockfile_parse(const char *text, dt_lock_holder *h);

#endif
