#include "common/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dt_sb_init(dt_strbuf *sb) { memset(sb, 0, sizeof *sb); }

void dt_sb_free(dt_strbuf *sb)
{
    free(sb->data);
    dt_sb_init(sb);
}

static int reserve(dt_strbuf *sb, size_t extra)
{
    if (sb->oom)
        return -1;
    if (sb->len + extra + 1 <= sb->cap)
        return 0;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *d = realloc(sb->data, cap);
    if (!d) {
        sb->oom = 1;
        return -1;
    }
    sb->data = d;
    sb->cap = cap;
    return 0;
}

void dt_sb_appendn(dt_strbuf *sb, const char *s, size_t n)
{
    if (reserve(sb, n))
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void dt_sb_append(dt_strbuf *sb, const char *s) { dt_sb_appendn(sb, s, strlen(s)); }

void dt_sb_appendf(dt_strbuf *sb, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0 && reserve(sb, (size_t)n) == 0) {
        vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
        sb->len += (size_t)n;
    }
    va_end(ap2);
}

char *dt_sb_take(dt_strbuf *sb)
{
    char *d = sb->oom ? NULL : sb->data;
    if (sb->oom)
        free(sb->data);
    else if (!d)
        d = calloc(1, 1);
    dt_sb_init(sb);
    return d;
}
