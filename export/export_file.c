/* Writing the exported files: each to a temporary name beside it, flushed,
 * then renamed into place once every file was written, so an error leaves
 * no partial file behind. */
#include "export/export_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_tmp(const char *path, const char *text, char *tmp, size_t tmpn, dt_err *e)
{
    if ((size_t)snprintf(tmp, tmpn, "%s.tmp.%ld", path, (long)getpid()) >= tmpn)
        return dt_errf(e, DT_EINVAL, "output path %s is too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return dt_errf(e, DT_EIO, "cannot write %s: %s", path, strerror(errno));
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n;
    bad |= fflush(f) != 0;
    bad |= fclose(f) != 0;
    if (bad) {
        int err = errno;
        unlink(tmp);
        return dt_errf(e, DT_EIO, "cannot write %s: %s", path, strerror(err));
    }
    return 0;
}

/* Puts the written temporaries in place.  A file that already exists is
 * first hard-linked to a backup name, so that when a later rename fails
 * (NAME.h is a directory, the disk is read-only, ...) the files already
 * renamed are put back as they were: all files change, or none. */
static int install(const char *const *paths, char (*tmp)[4096], int n, dt_err *e)
{
    char bak[8][4096 + 32];
    int had[8] = {0}, rc = 0, i = 0;
    for (; i < n; i++) {
        snprintf(bak[i], sizeof bak[i], "%s.bak.%ld", paths[i], (long)getpid());
        unlink(bak[i]);
        had[i] = link(paths[i], bak[i]) == 0;
        if (rename(tmp[i], paths[i]) != 0) {
            rc = dt_errf(e, DT_EIO, "cannot rename %s to %s: %s", tmp[i], paths[i],
                         strerror(errno));
            if (had[i])
                unlink(bak[i]);
            break;
        }
    }
    if (!rc) {
        for (int j = 0; j < n; j++)
            if (had[j])
                unlink(bak[j]);
        return 0;
    }
    for (int j = 0; j < i; j++) { /* undo the renames that were done */
        if (had[j])
            rename(bak[j], paths[j]);
        else
            unlink(paths[j]);
    }
    for (int j = i; j < n; j++)
        unlink(tmp[j]);
    return rc;
}

int dt_export_write_files(const char *const *paths, const char *const *texts, int n,
                          dt_err *e)
{
    char tmp[8][4096];
    if (n > 8)
        return dt_errf(e, DT_EINVAL, "too many files");
    int rc = 0, written = 0;
    for (; written < n; written++)
        if ((rc = write_tmp(paths[written], texts[written], tmp[written], sizeof tmp[written], e)))
            break;
    if (rc) {
        for (int i = 0; i < written; i++)
            unlink(tmp[i]);
        return rc;
    }
    return install(paths, tmp, n, e);
}
