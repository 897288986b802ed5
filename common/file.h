/* Reading the files a user names (model specs, ONNX models, kernel JSON):
 * one checked path for all of them.  Only regular files are read (after
 * symlinks are followed): a FIFO, a device (/dev/zero, /dev/stdin on a
 * terminal), a socket or a directory is refused at once, and a FIFO is
 * opened without waiting for a writer.  Nothing past the size limit is
 * read, even when the file grows while it is read. */
#ifndef DT_COMMON_FILE_H
#define DT_COMMON_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Opens path read-only (O_CLOEXEC; O_NONBLOCK while opening, so a FIFO
 * without a writer does not block, then cleared) and checks with fstat that
 * it is a regular file.  On success *fd is the open descriptor (the caller
 * closes it) and *size its size at that moment.  A missing path (ENOENT,
 * ENOTDIR) is DT_ENOTFOUND; anything that is not a regular file DT_EINVAL ("PATH is not
 * a regular file (a FIFO)"); other failures DT_EIO.  *fd is -1 on error. */
int dt_open_regular(const char *path, int *fd, int64_t *size, dt_err *e);

/* Reads path (dt_open_regular) into a malloc'ed, NUL-terminated buffer
 * (*out, owned by the caller) of *len bytes.  Files over max bytes are
 * refused (DT_EINVAL, "at most MAX"), by their size or, should they grow,
 * after reading max + 1 bytes; a missing file is DT_ENOTFOUND, one that is
 * not a regular file DT_EINVAL, other failures DT_EIO. */
int dt_read_file(const char *path, size_t max, char **out, size_t *len, dt_err *e);

#endif
