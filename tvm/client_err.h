/* The TVM client's error text: a message formatted into the caller's
 * buffer, and -1 (the client's files fail this way; client.c then raises
 * it as a TVM error). */
#ifndef DTUNE_TVM_CLIENT_ERR_H
#define DTUNE_TVM_CLIENT_ERR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

__attribute__((format(printf, 3, 4))) static inline int dt_tvm_fail(char *err, size_t n,
                                                                    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

#endif
