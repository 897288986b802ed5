/* A growable string: for generated source and other text built piecewise.
 * The buffer is owned by the dt_strbuf; dt_sb_take hands it to the caller. */
#ifndef DT_COMMON_STRBUF_H
#define DT_COMMON_STRBUF_H

#include <stddef.h>

typedef struct dt_strbuf {
    char *data; /* NUL-terminated, or NULL before the first append */
    size_t len, cap;
    int oom;    /* set once an allocation failed; later appends are ignored */
} dt_strbuf;

void dt_sb_init(dt_strbuf *sb);
void dt_sb_free(dt_strbuf *sb);
void dt_sb_append(dt_strbuf *sb, const char *s);
void dt_sb_appendn(dt_strbuf *sb, const char *s, size_t n);
void dt_sb_appendf(dt_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns the malloc'ed string (caller frees) and resets sb; NULL if an
 * allocation failed along the way. */
char *dt_sb_take(dt_strbuf *sb);

#endif
