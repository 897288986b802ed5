/* The canonical target key (see target.h and docs/targets.md):
 *
 *     key   := arch '-' isa '-' cores 'c' '-' size '.' size '.' size
 *     arch  := [a-z0-9_]{1,31}
 *     isa   := "generic" | "avx2" | "avx512"
 *     cores := [1-9][0-9]{0,8}
 *     size  := '0' | [1-9][0-9]* ('K' | 'M' | 'G')?      L1d, L2, L3 bytes
 *
 * A size uses the largest binary suffix that divides it exactly, so every
 * byte count has exactly one spelling and parsing accepts only that one. */
#include "common/target.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define DT_KEY_MAX_CORES 999999999

static int dt_arch_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static int dt_arch_valid(const char *arch)
{
    size_t n = strlen(arch);
    if (n == 0 || n >= DT_TARGET_ARCH_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!dt_arch_char(arch[i]))
            return 0;
    return 1;
}

int dt_target_size_format(uint64_t bytes, char *buf, size_t n)
{
    static const char suffix[] = {'G', 'M', 'K'};
    static const unsigned shift[] = {30, 20, 10};
    for (int i = 0; bytes && i < 3; i++) {
        uint64_t unit = UINT64_C(1) << shift[i];
        if (bytes % unit == 0)
            return snprintf(buf, n, "%" PRIu64 "%c", bytes / unit, suffix[i]);
    }
    return snprintf(buf, n, "%" PRIu64, bytes);
}

void dt_target_key_parts_of(const dt_target *t, dt_target_key_parts *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->arch, sizeof out->arch, "%s", t->arch);
    out->isa = t->isa;
    out->cores = t->cores;
    out->l1d = t->l1d.size;
    out->l2 = t->l2.size;
    out->l3 = t->l3.size;
}

int dt_target_key_format(const dt_target_key_parts *p, char *buf, size_t n)
{
    char l1d[32], l2[32], l3[32];
    if (!buf || !n) /* no room even for the NUL (and no NULL to write to) */
        return DT_EINVAL;
    if (!dt_arch_valid(p->arch) || (unsigned)p->isa >= DT_ISA_COUNT || p->cores < 1 ||
        p->cores > DT_KEY_MAX_CORES)
        return DT_EINVAL;
    dt_target_size_format(p->l1d, l1d, sizeof l1d);
    dt_target_size_format(p->l2, l2, sizeof l2);
    dt_target_size_format(p->l3, l3, sizeof l3);
    int len = snprintf(buf, n, "%s-%s-%dc-%s.%s.%s", p->arch, dt_isa_name(p->isa), p->cores, l1d,
                       l2, l3);
    return (len < 0 || (size_t)len >= n) ? DT_EINVAL : 0;
}

int dt_target_key(const dt_target *t, char *buf, size_t n)
{
    dt_target_key_parts p;
    dt_target_key_parts_of(t, &p);
    return dt_target_key_format(&p, buf, n);
}

/* ---- parsing ----------------------------------------------------------------- */

typedef struct {
    const char *s;
    size_t pos;
    dt_err *e;
} dt_key_cursor;

static int dt_key_fail(const dt_key_cursor *c, const char *what)
{
    return dt_errf(c->e, DT_EINVAL, "malformed target key '%.*s' at column %zu: %s",
                   DT_TARGET_KEY_MAX, c->s, c->pos + 1, what);
}

static int dt_key_expect(dt_key_cursor *c, char want, const char *what)
{
    if (c->s[c->pos] != want)
        return dt_key_fail(c, what);
    c->pos++;
    return 0;
}

static int dt_key_arch(dt_key_cursor *c, dt_target_key_parts *out)
{
    size_t n = 0;
    while (dt_arch_char(c->s[c->pos + n]))
        n++;
    if (n == 0)
        return dt_key_fail(c, "expected an architecture ([a-z0-9_]+)");
    if (n >= sizeof out->arch)
        return dt_key_fail(c, "architecture name longer than 31 characters");
    memcpy(out->arch, c->s + c->pos, n);
    out->arch[n] = '\0';
    c->pos += n;
    return dt_key_expect(c, '-', "expected '-' after the architecture");
}

static int dt_key_isa(dt_key_cursor *c, dt_target_key_parts *out)
{
    char name[16];
    size_t n = strspn(c->s + c->pos, "abcdefghijklmnopqrstuvwxyz0123456789");
    if (n == 0 || n >= sizeof name)
        return dt_key_fail(c, "expected an ISA (generic, avx2 or avx512)");
    memcpy(name, c->s + c->pos, n);
    name[n] = '\0';
    if (dt_isa_from_name(name, &out->isa))
        return dt_key_fail(c, "unknown ISA (expected generic, avx2 or avx512)");
    c->pos += n;
    return dt_key_expect(c, '-', "expected '-' after the ISA");
}

/* Reads [0-9]+ at the cursor into *v; -1 past max_digits or on overflow. */
static int dt_key_digits(dt_key_cursor *c, size_t max_digits, uint64_t *v)
{
    size_t n = 0;
    *v = 0;
    for (; isdigit((unsigned char)c->s[c->pos + n]); n++) {
        unsigned d = (unsigned)(c->s[c->pos + n] - '0');
        if (n >= max_digits || *v > (UINT64_MAX - d) / 10)
            return -1;
        *v = *v * 10 + d;
    }
    return (int)n;
}

static int dt_key_cores(dt_key_cursor *c, dt_target_key_parts *out)
{
    uint64_t v;
    int n = dt_key_digits(c, 9, &v);
    if (n < 0)
        return dt_key_fail(c, "core count too large");
    if (n == 0)
        return dt_key_fail(c, "expected a core count");
    if (c->s[c->pos] == '0')
        return dt_key_fail(c, "core count must be a positive integer without leading zeros");
    out->cores = (int)v;
    c->pos += (size_t)n;
    if (dt_key_expect(c, 'c', "expected 'c' after the core count"))
        return DT_EINVAL;
    return dt_key_expect(c, '-', "expected '-' after the core count");
}

static unsigned dt_suffix_shift(char s)
{
    return s == 'K' ? 10 : s == 'M' ? 20 : s == 'G' ? 30 : 0;
}

static int dt_key_size(dt_key_cursor *c, const char *level, uint64_t *out)
{
    char msg[96];
    uint64_t v;
    int n = dt_key_digits(c, 20, &v);
    if (n == 0) {
        snprintf(msg, sizeof msg, "expected the %s size", level);
        return dt_key_fail(c, msg);
    }
    if (n < 0 || (n > 1 && c->s[c->pos] == '0')) {
        snprintf(msg, sizeof msg, "%s size: %s", level,
                 n < 0 ? "too large" : "leading zeros are not canonical");
        return dt_key_fail(c, msg);
    }
    size_t start = c->pos;
    c->pos += (size_t)n;
    unsigned shift = dt_suffix_shift(c->s[c->pos]);
    if (shift && v > (UINT64_MAX >> shift)) {
        c->pos = start;
        snprintf(msg, sizeof msg, "%s size too large", level);
        return dt_key_fail(c, msg);
    }
    /* Canonical: no suffix on 0, and never a count the next suffix divides. */
    if ((v == 0 && shift) || (v != 0 && v % 1024 == 0 && shift < 30)) {
        c->pos = start;
        snprintf(msg, sizeof msg, "%s size not canonical (use the largest exact K/M/G suffix)",
                 level);
        return dt_key_fail(c, msg);
    }
    c->pos += shift != 0;
    *out = v << shift;
    return 0;
}

int dt_target_key_parse(const char *key, dt_target_key_parts *out, dt_err *e)
{
    if (!key)
        return dt_errf(e, DT_EINVAL, "missing target key");
    dt_key_cursor c = {key, 0, e};
    dt_target_key_parts p;
    memset(&p, 0, sizeof p);
    if (dt_key_arch(&c, &p) || dt_key_isa(&c, &p) || dt_key_cores(&c, &p) ||
        dt_key_size(&c, "L1d", &p.l1d) ||
        dt_key_expect(&c, '.', "expected '.' between the L1d and L2 sizes") ||
        dt_key_size(&c, "L2", &p.l2) ||
        dt_key_expect(&c, '.', "expected '.' between the L2 and L3 sizes") ||
        dt_key_size(&c, "L3", &p.l3))
        return DT_EINVAL;
    if (key[c.pos] != '\0')
        return dt_key_fail(&c, "unexpected characters after the L3 size");
    *out = p;
    return 0;
}
