/* Finds where a value sits in JSON text, so that errors found after parsing
 * (unknown op, bad range, ...) can name a line and column.  jansson reports
 * positions for syntax errors only; this scanner walks the same (already
 * valid) text along a path of object keys and array indices. */
#ifndef DT_COMMON_JSON_LOCATE_H
#define DT_COMMON_JSON_LOCATE_H

#include <stddef.h>

typedef struct dt_json_seg {
    const char *key; /* object member name, or NULL for an array index */
    int index;
} dt_json_seg;

/* Sets *line and *col (1-based, col in characters) of the value at path, or
 * of its member name when want_key is set.  Returns 0, or -1 if the path is
 * not found (then line/col point at the deepest value that was found). */
int dt_json_locate(const char *text, size_t len, const dt_json_seg *path, int npath, int want_key,
                   int *line, int *col);

/* Line and column of byte offset off in text. */
void dt_text_line_col(const char *text, size_t off, int *line, int *col);

#endif
