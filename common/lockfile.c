/* Process-lifetime exclusive locks on a file (common/lockfile.h). */
#include "common/lockfile.h"
#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

struct dt_lockfile {
    int fd;
    int file_fd; /* the locked file F of F.lock, -1 when none */
};

void dt_lockfile_parse(const char *text, dt_lock_holder *h)
{
    memset(h, 0, sizeof *h);
    const char *line = text;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[320];
        if (n >= sizeof buf)
            n = sizeof buf - 1;
        memcpy(buf, line, n);
        buf[n] = '\0';
        /* control characters from a foreign file must not reach a message */
        for (char *p = buf; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7F)
                *p = ' ';
        if (!strncmp(buf, "pid ", 4)) {
            char *stop;
            long v = strtol(buf + 4, &stop, 10);
            if (stop != buf + 4 && v > 0)
                h->pid = v;
        } else if (!strncmp(buf, "host ", 5)) {
            snprintf(h->host, sizeof h->host, "%.*s", (int)sizeof h->host - 1, buf + 5);
        } else if (!strncmp(buf, "started ", 8)) {
            snprintf(h->started, sizeof h->started, "%.*s", (int)sizeof h->started - 1, buf + 8);
        }
        line = end ? end + 1 : NULL;
    }
}

/* The holder lines of the file open at fd; 1 when a pid was found. */
static int read_holder(int fd, dt_lock_holder *h)
{
    char text[1024];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    dt_lockfile_parse(text, h);
    return h->pid > 0;
}

static int write_holder(int fd)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "unknown");
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32] = "?";
    if (gmtime_r(&now, &tm))
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char text[512];
    int n = snprintf(text, sizeof text, "pid %ld\nhost %s\nstarted %s\n",
                     (long)getpid(), host, stamp);
    if (n < 0 || (size_t)n >= sizeof text)
        n = (int)strlen(text);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n)
        return -1;
    return 0;
}

/* The pid holding an flock(2) write lock on the inode (dev, ino), from
 * /proc/locks ("1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF", the
 * device in hex); 0 when not found.  The device a file system reports to
 * stat may differ from the one /proc/locks names (btrfs subvolumes,
 * overlayfs), so an inode matched alone counts when it is the only one. */
static long flock_holder(dev_t dev, ino_t ino)
{
    FILE *f = fopen("/proc/locks", "re");
    if (!f)
        return 0;
    char line[256];
    long exact = 0, by_ino = 0;
    int n_ino = 0;
    while (fgets(line, sizeof line, f)) {
        long pid;
        unsigned maj, min;
        unsigned long i;
        char kind[16], mode[16];
        if (sscanf(line, "%*d: %15s %*s %15s %ld %x:%x:%lu", kind, mode, &pid, &maj, &min, &i) !=
                6 ||
            strcmp(kind, "FLOCK") || strcmp(mode, "WRITE") || (ino_t)i != ino || pid <= 0)
            continue;
        if (maj == major(dev) && min == minor(dev))
            exact = pid;
        by_ino = pid;
        n_ino++;
    }
    fclose(f);
    return exact ? exact : n_ino == 1 ? by_ino : 0;
}

/* The file F a lock file F.lock guards (malloc'ed), NULL when path is not
 * named so. */
static char *guarded_path(const char *path)
{
    size_t n = strlen(path);
    if (n <= 5 || strcmp(path + n - 5, ".lock") || path[n - 6] == '/')
        return NULL;
    char *g = malloc(n - 4);
    if (g) {
        memcpy(g, path, n - 5);
        g[n - 5] = '\0';
    }
    return g;
}

/* Locks the file F itself (flock, open read-only, created empty when
 * missing, symbolic links followed): its identity, device and inode, is the
 * same under every name.  0 and *out (-1 when F is not a regular file: the
 * database open refuses it anyway); 1 when F was replaced meanwhile (try
 * again); a DT_E* code. */
static int lock_guarded(const char *file, int *out, dt_lock_holder *holder, dt_err *e)
{
    *out = -1;
    int fd = open(file, O_RDONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
    if (fd < 0)
        return dt_errf(e, DT_EIO, "cannot open %s to lock it: %s", file, strerror(errno));
    struct stat a, b;
    if (fstat(fd, &a) != 0 || !S_ISREG(a.st_mode)) {
        close(fd);
        return 0;
    }
    int r;
    while ((r = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR)
        ;
    if (r != 0) {
        int err = errno;
        close(fd);
        if (err != EWOULDBLOCK)
            return dt_errf(e, DT_EIO, "cannot lock %s: %s", file, strerror(err));
        dt_lock_holder h;
        memset(&h, 0, sizeof h);
        h.pid = flock_holder(a.st_dev, a.st_ino);
        /* flock is local to this kernel: the holder runs on this host */
        if (gethostname(h.host, sizeof h.host - 1) != 0)
            h.host[0] = '\0';
        if (holder)
            *holder = h;
        char pid[32] = "an unknown pid";
        if (h.pid > 0)
            snprintf(pid, sizeof pid, "pid %ld", h.pid);
        return dt_errf(e, DT_EBUSY,
                       "%s is locked by %s%s%s (the same file, device %lu inode %lu, under "
                       "another name)",
                       file, pid, h.host[0] ? " on host " : "", h.host,
                       (unsigned long)a.st_dev, (unsigned long)a.st_ino);
    }
    if (stat(file, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
        close(fd);
        return 1;
    }
    *out = fd;
    return 0;
}

int dt_lockfile_acquire(const char *path, dt_lockfile **out, dt_lock_holder *holder, dt_err *e)
{
    *out = NULL;
    if (holder)
        memset(holder, 0, sizeof *holder);
    /* a few rounds only when someone replaces the file under us */
    for (int round = 0; round < 5; round++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
            return dt_errf(e, DT_EIO, "cannot open the lock file %s: %s", path,
                           strerror(errno));
        int r;
        while ((r = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR)
            ;
        if (r != 0) {
            int err = errno;
            if (err != EWOULDBLOCK) {
                close(fd);
                return dt_errf(e, DT_EIO, "cannot lock %s: %s", path, strerror(err));
            }
            /* the holder writes its lines right after it takes the lock */
            dt_lock_holder h;
            for (int i = 0; i < 50 && !read_holder(fd, &h); i++)
                dt_sleep_ms(10);
            close(fd);
            if (holder)
                *holder = h;
            char pid[32] = "an unknown pid";
            if (h.pid > 0)
                snprintf(pid, sizeof pid, "pid %ld", h.pid);
            return dt_errf(e, DT_EBUSY, "%s is locked by %s%s%s%s%s", path, pid,
                           h.host[0] ? " on host " : "", h.host,
                           h.started[0] ? ", started " : "", h.started);
        }
        /* the file locked must still be the one at path */
        struct stat a, b;
        if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_dev != b.st_dev ||
            a.st_ino != b.st_ino) {
            close(fd);
            continue;
        }
        /* F.lock names one spelling of F; F's own lock covers every name */
        int file_fd = -1;
        char *file = guarded_path(path);
        if (file) {
            r = lock_guarded(file, &file_fd, holder, e);
            free(file);
            if (r != 0) {
                close(fd);
                if (r == 1)
                    continue;
                return r;
            }
        }
        if (write_holder(fd) != 0) {
            int err = errno;
            if (file_fd >= 0)
                close(file_fd);
            close(fd);
            return dt_errf(e, DT_EIO, "cannot write the lock file %s: %s", path,
                           strerror(err));
        }
        dt_lockfile *l = calloc(1, sizeof *l);
        if (!l) {
            if (file_fd >= 0)
                close(file_fd);
            close(fd);
            return dt_errf(e, DT_ENOMEM, "out of memory");
        }
        l->fd = fd;
        l->file_fd = file_fd;
        *out = l;
        return 0;
    }
    return dt_errf(e, DT_EIO, "cannot lock %s: the file keeps being replaced", path);
}

void dt_lockfile_release(dt_lockfile *l)
{
    if (!l)
        return;
    if (ftruncate(l->fd, 0) != 0) {
        /* the lines stay; only the lock means anything */
    }
    if (l->file_fd >= 0)
        close(l->file_fd);
    close(l->fd);
    free(l);
}
