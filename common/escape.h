/* Escaping of text that came from outside (model and node names, file
 * paths, arguments, worker messages) before it is printed to a terminal or
 * written to a log: a name holding ESC, CR, LF or BEL must not move the
 * cursor, recolour the screen, forge a log line or ring the bell.
 *
 * What is escaped: the C0 controls and DEL (0x00..0x1F, 0x7F) as "\n",
 * "\r", "\t" or "\xHH" ("\x1b"); the C1 controls U+0080..U+009F, which some
 * terminals obey, as "\u0085"; bytes that are not part of valid UTF-8 as
 * "\xHH".  Everything else, valid UTF-8 included ("é", "注意"), is copied
 * unchanged, and so is a backslash: the output is for reading, not for
 * parsing back.  Thread-safe; no state. */
#ifndef DT_COMMON_ESCAPE_H
#define DT_COMMON_ESCAPE_H

#include <stddef.h>

/* Writes the escaped form of s (NULL reads as "") into buf[0..n), always
 * NUL-terminated when n > 0 and never cut inside an escape or a UTF-8
 * character.  Returns the length the whole escaped text needs (without the
 * NUL), like snprintf: it was cut when the result is >= n. */
size_t dt_escape(const char *s, char *buf, size_t n);

/* The escaped form of s in a malloc'ed string (the caller frees it); NULL
 * only when out of memory. */
char *dt_escape_dup(const char *s);

/* 1 when dt_escape would change s (it holds a byte to escape), else 0. */
int dt_escape_needed(const char *s);

#endif
