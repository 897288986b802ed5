#include "common/json_locate.h"

#include <string.h>

typedef struct {
    const char *s;
    size_t len, pos;
} scan;

static void ws(scan *c)
{
    while (c->pos < c->len &&
           (c->s[c->pos] == ' ' || c->s[c->pos] == '\t' || c->s[c->pos] == '\n' ||
            c->s[c->pos] == '\r'))
        c->pos++;
}

static int skip_string(scan *c)
{
    if (c->pos >= c->len || c->s[c->pos] != '"')
        return -1;
    for (c->pos++; c->pos < c->len; c->pos++) {
        if (c->s[c->pos] == '\\')
            c->pos++;
        else if (c->s[c->pos] == '"') {
            c->pos++;
            return 0;
        }
    }
    return -1;
}

static int skip_value(scan *c);

static int skip_container(scan *c, char close, int is_object)
{
    c->pos++;
    ws(c);
    if (c->pos < c->len && c->s[c->pos] == close) {
        c->pos++;
        return 0;
    }
    for (;;) {
        ws(c);
        if (is_object) {
            if (skip_string(c))
                return -1;
            ws(c);
            if (c->pos >= c->len || c->s[c->pos] != ':')
                return -1;
            c->pos++;
            ws(c);
        }
        if (skip_value(c))
            return -1;
        ws(c);
        if (c->pos >= c->len)
            return -1;
        if (c->s[c->pos] == ',') {
            c->pos++;
            continue;
        }
        if (c->s[c->pos] == close) {
            c->pos++;
            return 0;
        }
        return -1;
    }
}

static int skip_value(scan *c)
{
    ws(c);
    if (c->pos >= c->len)
        return -1;
    char ch = c->s[c->pos];
    if (ch == '"')
        return skip_string(c);
    if (ch == '{')
        return skip_container(c, '}', 1);
    if (ch == '[')
        return skip_container(c, ']', 0);
    /* number or literal: up to the next delimiter */
    while (c->pos < c->len && !strchr(",]} \t\r\n", c->s[c->pos]))
        c->pos++;
    return 0;
}

/* Compares the JSON string at c->pos (quotes included) with key.  Escaped
 * names are compared after decoding the simple escapes. */
static int key_equals(const scan *c, const char *key)
{
    size_t p = c->pos + 1;
    const char *k = key;
    while (p < c->len && c->s[p] != '"') {
        char ch = c->s[p];
        if (ch == '\\' && p + 1 < c->len) {
            p++;
            switch (c->s[p]) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case 'b': ch = '\b'; break;
            case 'f': ch = '\f'; break;
            case 'u': return 0; /* \u escapes: treat as no match */
            default: ch = c->s[p]; break;
            }
        }
        if (*k != ch)
            return 0;
        k++;
        p++;
    }
    return *k == '\0';
}

/* Moves c to the member `key` of the object at c->pos; *key_pos gets the
 * position of its name. */
static int find_member(scan *c, const char *key, size_t *key_pos)
{
    if (c->s[c->pos] != '{')
        return -1;
    c->pos++;
    for (;;) {
        ws(c);
        if (c->pos >= c->len || c->s[c->pos] != '"')
            return -1;
        size_t kp = c->pos;
        int match = key_equals(c, key);
        if (skip_string(c))
            return -1;
        ws(c);
        if (c->pos >= c->len || c->s[c->pos] != ':')
            return -1;
        c->pos++;
        ws(c);
        if (match) {
            *key_pos = kp;
            return 0;
        }
        if (skip_value(c))
            return -1;
        ws(c);
        if (c->pos >= c->len || c->s[c->pos] != ',')
            return -1;
        c->pos++;
    }
}

static int find_element(scan *c, int index)
{
    if (c->s[c->pos] != '[')
        return -1;
    c->pos++;
    for (int i = 0;; i++) {
        ws(c);
        if (c->pos >= c->len || c->s[c->pos] == ']')
            return -1;
        if (i == index)
            return 0;
        if (skip_value(c))
            return -1;
        ws(c);
        if (c->pos >= c->len || c->s[c->pos] != ',')
            return -1;
        c->pos++;
    }
}

void dt_text_line_col(const char *text, size_t off, int *line, int *col)
{
    int l = 1, cl = 1;
    for (size_t i = 0; i < off && text[i]; i++) {
        if (text[i] == '\n') {
            l++;
            cl = 1;
        } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
            cl++; /* count characters, not UTF-8 continuation bytes */
        }
    }
    *line = l;
    *col = cl;
}

int dt_json_locate(const char *text, size_t len, const dt_json_seg *path, int npath, int want_key,
                   int *line, int *col)
{
    scan c = {text, len, 0};
    ws(&c);
    size_t found = c.pos;
    int rc = 0;
    for (int i = 0; i < npath; i++) {
        size_t key_pos = c.pos;
        scan save = c;
        int r = path[i].key ? find_member(&c, path[i].key, &key_pos)
                            : find_element(&c, path[i].index);
        if (r) {
            c = save;
            rc = -1;
            break;
        }
        found = (want_key && i == npath - 1 && path[i].key) ? key_pos : c.pos;
    }
    dt_text_line_col(text, found, line, col);
    return rc;
}
