#include "common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a file";
}

int dt_open_regular(const char *path, int *fd, int64_t *size, dt_err *e)
{
    *fd = -1;
    *size = 0;
    if (!path)
        return dt_errf(e, DT_EINVAL, "no file name given");
    /* O_NONBLOCK: opening a FIFO with no writer would wait for one forever;
     * O_NOCTTY: a terminal must never become the controlling one */
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (f < 0) {
        int err = errno;
        if (err == EISDIR) /* not on Linux for O_RDONLY, but allowed by POSIX */
            return dt_errf(e, DT_EINVAL, "%s is not a regular file (a directory)", path);
        return dt_errf(e, err == ENOENT || err == ENOTDIR ? DT_ENOTFOUND : DT_EIO,
                       "cannot open %s: %s", path,
                       strerror(err));
    }
    struct stat st;
    if (fstat(f, &st) != 0) {
        int err = errno;
        close(f);
        return dt_errf(e, DT_EIO, "cannot read %s: %s", path, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return dt_errf(e, DT_EINVAL, "%s is not a regular file (%s)", path, kind_of(st.st_mode));
    }
    int flags = fcntl(f, F_GETFL);
    if (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(f);
        return dt_errf(e, DT_EIO, "cannot read %s: %s", path, strerror(err));
    }
    *fd = f;
    *size = (int64_t)st.st_size;
    return 0;
}

static int too_big(const char *path, long long size, size_t max, dt_err *e)
{
    if (size < 0)
        return dt_errf(e, DT_EINVAL, "%s is over %zu bytes; at most %zu are accepted", path, max,
                       max);
    return dt_errf(e, DT_EINVAL, "%s is %lld bytes; at most %zu are accepted", path, size, max);
}

int dt_read_file(const char *path, size_t max, char **out, size_t *len, dt_err *e)
{
    *out = NULL;
    *len = 0;
    if (max > SIZE_MAX / 4)
        max = SIZE_MAX / 4; /* max + 1 and the doubling below cannot overflow */
    int fd;
    int64_t size;
    int rc = dt_open_regular(path, &fd, &size, e);
    if (rc)
        return rc;
    if (size > 0 && (uint64_t)size > max) {
        close(fd);
        return too_big(path, (long long)size, max, e);
    }
    /* the size is a hint (files in /proc say 0, a file may grow): read up
     * to max + 1 bytes, growing the buffer, and refuse at max + 1 */
    size_t cap = (size_t)size + 1 < 4096 ? 4096 : (size_t)size + 1, n = 0;
    if (cap > max + 1)
        cap = max + 1;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            close(fd);
            return dt_errf(e, DT_ENOMEM, "out of memory reading %s", path);
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int err = errno;
            free(buf);
            close(fd);
            return dt_errf(e, DT_EIO, "cannot read %s: %s", path, strerror(err));
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n > max) {
            free(buf);
            close(fd);
            return too_big(path, -1, max, e);
        }
        if (n == cap) {
            size_t ncap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb)
                free(buf);
            buf = nb;
            cap = ncap;
        }
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}
