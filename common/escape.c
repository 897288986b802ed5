#include "common/escape.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s (2..4), or 0 when the bytes
 * there are not one (overlong forms, surrogates and values past U+10FFFF
 * are not).  *cp receives its code point. */
static int utf8_seq(const unsigned char *s, uint32_t *cp)
{
    unsigned char c = s[0];
    int len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) /* also stops at the NUL */
            return 0;
        v = v << 6 | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

/* The escape of the unit at s into piece (NUL-terminated) and its length in
 * s, or 0 in *esc when the unit is copied as it is. */
static int unit(const unsigned char *s, char piece[8], int *esc)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char c = s[0];
    *esc = 1;
    if (c < 0x20 || c == 0x7F) {
        const char *short_form = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        if (short_form)
            memcpy(piece, short_form, 3);
        else
            memcpy(piece, (char[]){'\\', 'x', hex[c >> 4], hex[c & 15], 0}, 5);
        return 1;
    }
    if (c < 0x80) {
        *esc = 0;
        return 1;
    }
    uint32_t cp = 0;
    int len = utf8_seq(s, &cp);
    if (len == 0) { /* not UTF-8: the byte in hex */
        memcpy(piece, (char[]){'\\', 'x', hex[c >> 4], hex[c & 15], 0}, 5);
        return 1;
    }
    if (cp <= 0x9F) { /* a C1 control */
        memcpy(piece, (char[]){'\\', 'u', '0', '0', hex[cp >> 4], hex[cp & 15], 0}, 7);
        return len;
    }
    *esc = 0;
    return len;
}

size_t dt_escape(const char *s, char *buf, size_t n)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t need = 0, at = 0;
    int full = n == 0;
    while (*p) {
        char piece[8];
        int esc;
        int len = unit(p, piece, &esc);
        const char *src = esc ? piece : (const char *)p;
        size_t l = esc ? strlen(piece) : (size_t)len;
        if (!full && at + l < n) {
            memcpy(buf + at, src, l);
            at += l;
        } else {
            full = 1;
        }
        need += l;
        p += len;
    }
    if (n)
        buf[at] = '\0';
    return need;
}

char *dt_escape_dup(const char *s)
{
    size_t need = dt_escape(s, NULL, 0);
    char *out = malloc(need + 1);
    if (out)
        dt_escape(s, out, need + 1);
    return out;
}

int dt_escape_needed(const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        char piece[8];
        int esc;
        p += unit(p, piece, &esc);
        if (esc)
            return 1;
    }
    return 0;
}
