/* Whole-file reads with a size limit and a clear error. */
#ifndef DT_COMMON_FILE_H
#define DT_COMMON_FILE_H

#include <stddef.h>

#include "common/error.h"

/* Reads path into a malloc'ed, NUL-terminated buffer (*out, owned by the
 * caller) of *len bytes.  Files over max bytes are refused (DT_EINVAL); a
 * missing file is DT_ENOTFOUND, other failures DT_EIO. */
int dt_read_file(const char *path, size_t max, char **out, size_t *len, dt_err *e);

#endif
