#include "common/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int dt_read_file(const char *path, size_t max, char **out, size_t *len, dt_err *e)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return dt_errf(e, errno == ENOENT ? DT_ENOTFOUND : DT_EIO, "cannot open %s: %s", path,
                       strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return dt_errf(e, DT_EINVAL, "%s is not a regular file", path); /* bad input: exit 2 */
    }
    if ((size_t)st.st_size > max) {
        fclose(f);
        return dt_errf(e, DT_EINVAL, "%s is %lld bytes; at most %zu are accepted", path,
                       (long long)st.st_size, max);
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        fclose(f);
        return dt_errf(e, DT_ENOMEM, "out of memory reading %s", path);
    }
    size_t got = fread(buf, 1, (size_t)st.st_size, f);
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return dt_errf(e, DT_EIO, "cannot read %s", path);
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return 0;
}
