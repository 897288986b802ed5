/* One kernel's translation unit inside the exported file.
 *
 * dt_codegen writes a complete translation unit per kernel: macros (MR, NR,
 * VLOAD, ...), static helpers (dt_pack_b, dt_tile, ...), types (vf, dt_item)
 * and the dtk_* entry points.  Several of them in one file would clash, so
 * each is wrapped, unchanged:
 *   - before it, every file-scope name it uses that starts with dt_ or dtk_
 *     (and the vector types vf, vi, vx) is #define'd to NAME_k<i>_<name>, and
 *     DT_EXPORT to `static` (the prelude keeps a DT_EXPORT defined before it);
 *   - after it, every macro it #define'd and every rename is #undef'd.
 * The names are found by scanning the generated text, so a helper added to
 * the templates later is renamed too.  The code the compiler sees is the
 * code the tuner built and measured, with other names. */
#include "export/export_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char (*v)[64];
    int n, cap;
} name_set;

static int set_has(const name_set *s, const char *p, size_t len)
{
    for (int i = 0; i < s->n; i++)
        if (strlen(s->v[i]) == len && memcmp(s->v[i], p, len) == 0)
            return 1;
    return 0;
}

static int set_add(name_set *s, const char *p, size_t len)
{
    if (len >= sizeof s->v[0] || set_has(s, p, len))
        return 0;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        void *nv = realloc(s->v, (size_t)cap * sizeof *s->v);
        if (!nv)
            return DT_ENOMEM;
        s->v = nv;
        s->cap = cap;
    }
    memcpy(s->v[s->n], p, len);
    s->v[s->n++][len] = '\0';
    return 0;
}

static int is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static int is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Skips a comment, string or character literal at s; returns the end. */
static const char *skip_literal(const char *s)
{
    if (s[0] == '/' && s[1] == '*') {
        const char *end = strstr(s + 2, "*/");
        return end ? end + 2 : s + strlen(s);
    }
    if (s[0] == '/' && s[1] == '/') {
        while (*s && *s != '\n')
            s++;
        return s;
    }
    char q = *s++;
    while (*s && *s != q) {
        if (*s == '\\' && s[1])
            s++;
        s++;
    }
    return *s ? s + 1 : s;
}

/* The macro names the source #define's and the file-scope names to rename. */
static int scan(const char *src, name_set *macros, name_set *renames)
{
    int rc = 0, line_start = 1;
    /* pass 1: macros (a line "#  define NAME") */
    for (const char *s = src; *s && !rc; s++) {
        if (line_start) {
            const char *t = s;
            while (*t == ' ' || *t == '\t')
                t++;
            if (*t == '#') {
                t++;
                while (*t == ' ' || *t == '\t')
                    t++;
                if (strncmp(t, "define", 6) == 0 && (t[6] == ' ' || t[6] == '\t')) {
                    t += 6;
                    while (*t == ' ' || *t == '\t')
                        t++;
                    const char *n0 = t;
                    while (is_ident_char(*t))
                        t++;
                    if (t > n0)
                        rc = set_add(macros, n0, (size_t)(t - n0));
                }
            }
        }
        line_start = *s == '\n';
    }
    /* pass 2: identifiers outside comments and literals */
    for (const char *s = src; *s && !rc;) {
        if ((s[0] == '/' && (s[1] == '*' || s[1] == '/')) || *s == '"' || *s == '\'') {
            s = skip_literal(s);
        } else if (isdigit((unsigned char)*s)) {
            while (is_ident_char(*s) || *s == '.')
                s++;
        } else if (is_ident_start(*s)) {
            const char *n0 = s;
            while (is_ident_char(*s))
                s++;
            size_t len = (size_t)(s - n0);
            int want = (len > 3 && strncmp(n0, "dt_", 3) == 0) ||
                       (len > 4 && strncmp(n0, "dtk_", 4) == 0) ||
                       (len == 2 && (strncmp(n0, "vf", 2) == 0 || strncmp(n0, "vi", 2) == 0 ||
                                     strncmp(n0, "vx", 2) == 0));
            if (want && !set_has(macros, n0, len))
                rc = set_add(renames, n0, len);
        } else {
            s++;
        }
    }
    return rc;
}

int dt_export_emit_kernel(dt_strbuf *sb, const dt_export_plan *p, int k, dt_err *e)
{
    const dt_export_kernel *ek = &p->k[k];
    char *src = NULL;
    int rc = dt_codegen(&p->kop, &ek->ann, &src, e);
    if (rc)
        return dt_err_prefix(e, "kernel %lld", (long long)ek->id);
    name_set macros = {0}, renames = {0};
    if (scan(src, &macros, &renames)) {
        free(src);
        free(macros.v);
        free(renames.v);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    char *ann = dt_annotation_to_string(&ek->ann);
    dt_sb_appendf(sb, "\n/* ==== kernel %s_k%d: dtune kernel %lld ====\n * %s\n * ranges:",
                  p->name, k, (long long)ek->id, ann ? ann : "");
    free(ann);
    for (int r = 0; r < p->d->n; r++)
        if (p->range_kernel[r] == k)
            dt_sb_appendf(sb, " %s..%s", p->d->r[r].shape_lo, p->d->r[r].shape_hi);
    dt_sb_append(sb, " */\n#pragma GCC diagnostic push\n"
                     "#pragma GCC diagnostic ignored \"-Wunused-function\"\n"
                     "#pragma GCC diagnostic ignored \"-Wunused-parameter\"\n"
                     "#pragma GCC diagnostic ignored \"-Wunused-variable\"\n"
                     "#pragma GCC diagnostic ignored \"-Wunused-const-variable\"\n"
                     "#if defined(__GNUC__) && !defined(__clang__)\n"
                     "/* GCC's constant propagation into the packing loops notes the int64\n"
                     " * overflow of impossible trip counts (~2^63 / NR) */\n"
                     "#pragma GCC diagnostic ignored \"-Waggressive-loop-optimizations\"\n"
                     "#endif\n"
                     "#define DT_EXPORT static __attribute__((unused))\n");
    for (int i = 0; i < renames.n; i++)
        dt_sb_appendf(sb, "#define %s %s_k%d_%s\n", renames.v[i], p->name, k, renames.v[i]);
    dt_sb_append(sb, "\n");
    dt_sb_append(sb, src);
    dt_sb_append(sb, "\n/* end of the kernel: its macros and names go */\n");
    for (int i = 0; i < renames.n; i++)
        dt_sb_appendf(sb, "#undef %s\n", renames.v[i]);
    for (int i = 0; i < macros.n; i++)
        dt_sb_appendf(sb, "#undef %s\n", macros.v[i]);
    dt_sb_append(sb, "#undef DT_EXPORT\n#pragma GCC diagnostic pop\n");
    free(src);
    free(macros.v);
    free(renames.v);
    return 0;
}
