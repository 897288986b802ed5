/* Error codes and messages shared by every module.
 *
 * Convention (see docs/architecture.md): a function that can fail returns 0 on
 * success or a negative DT_E* code, and fills the caller-owned dt_err with a
 * human-readable message that says what is wrong and where.  A NULL dt_err is
 * allowed: the message is then dropped. */
#ifndef DT_COMMON_ERROR_H
#define DT_COMMON_ERROR_H

#include <stddef.h>

enum {
    DT_OK = 0,
    DT_EINVAL = -1,       /* bad input: malformed key, spec, shape, argument */
    DT_ENOMEM = -2,       /* allocation failed */
    DT_EIO = -3,          /* file or system call failed */
    DT_EDB = -4,          /* SQLite failed, or a stored row is damaged (dispatch/) */
    DT_ENOTFOUND = -5,    /* the named thing does not exist */
    DT_ENOTDTUNE = -6,    /* the file is not a dtune database */
    DT_EVERSION = -7,     /* database schema newer than this binary */
    DT_EOVERFLOW = -8,    /* an integer computation would overflow int64 */
    DT_EUNSUPPORTED = -9, /* valid request this build or target cannot serve */
    DT_EBUSY = -10,       /* resource busy (database locked past the timeout) */
};

#define DT_ERR_MSG_MAX 1024

typedef struct dt_err {
    int code;
    char msg[DT_ERR_MSG_MAX];
} dt_err;

/* Sets *e (if not NULL) to code and the printf-style message; returns code. */
int dt_errf(dt_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to the message already in *e; returns e->code. */
int dt_err_prefix(dt_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clears *e to DT_OK and an empty message. */
void dt_err_clear(dt_err *e);

/* Short stable name of a code ("invalid input", "database error", ...). */
const char *dt_strerror(int code);

/* CLI exit code for an error code: 2 for bad input, 3 for runtime failures
 * (the exit codes are documented in README.md). */
int dt_exit_code(int code);

#endif
