#include "backends/backend.h"
#include "cli/cli.h"
#include "common/escape.h"
#include "common/log.h"
#include "db/db.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *dt_cli_default_db(void)
{
    const char *env = getenv("DTUNE_DB");
    return (env && *env) ? env : "dtune.db";
}

int dt_cli_open_db(const char *path, unsigned flags, dt_db **db)
{
    dt_err e;
    if (dt_db_open(path ? path : dt_cli_default_db(), flags, db, &e) != DT_OK)
        return dt_cli_fail(&e);
    return DT_EXIT_OK;
}

int dt_cli_open_existing_db(const char *path, unsigned flags, const char *made_by, dt_db **db,
                            dt_err *e)
{
    if (!path)
        path = dt_cli_default_db();
    if (access(path, F_OK) != 0)
        return dt_errf(e, DT_ENOTFOUND, "no database at %s; run dtune %s first", path, made_by);
    return dt_db_open(path, flags, db, e);
}

int dt_cli_parse_done(int rc, int help, const char *usage)
{
    if (help && !rc)
        fputs(usage, stdout);
    return rc || help;
}

const char *dt_cli_safe(const char *s)
{
    static char *ring[8];
    static unsigned next;
    unsigned i = next++ % 8;
    free(ring[i]);
    ring[i] = dt_escape_dup(s);
    return ring[i] ? ring[i] : "(out of memory)";
}

int dt_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "dtune %s: %s\nTry 'dtune %s --help'.\n", dt_cli_safe(cmd), dt_cli_safe(msg),
            dt_cli_safe(cmd));
    return DT_EXIT_USAGE;
}

int dt_cli_fail(const dt_err *e)
{
    fprintf(stderr, "dtune: error: %s\n",
            dt_cli_safe(e->msg[0] ? e->msg : dt_strerror(e->code)));
    return dt_exit_code(e->code);
}

int dt_cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

int dt_cli_int_opt(const char *cmd, const char *flag, const char *text, long lo, long hi,
                   int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || errno == ERANGE || v < lo || v > hi)
        return dt_cli_usage_error(cmd, "%s takes %ld..%ld, not '%s'", flag, lo, hi, text);
    *out = (int)v;
    return 0;
}

int dt_cli_seed_opt(const char *cmd, const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || *end || errno == ERANGE || text[0] == '-')
        return dt_cli_usage_error(cmd, "--seed takes a non-negative integer, not '%s'", text);
    *out = (uint64_t)v;
    return 0;
}

int dt_cli_ms_opt(const char *cmd, const char *flag, const char *text, double hi, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v > 0) || v > hi)
        return dt_cli_usage_error(cmd, "%s takes a time in ms above 0 and up to %g, not '%s'",
                                  flag, hi, text);
    *out = v;
    return 0;
}

int dt_cli_duration_opt(const char *cmd, const char *flag, const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    double unit = 1;
    if (end != text && *end && !end[1]) {
        switch (*end) {
        case 's': unit = 1; end++; break;
        case 'm': unit = 60; end++; break;
        case 'h': unit = 3600; end++; break;
        default: break;
        }
    }
    if (end == text || *end || !(v > 0) || v * unit > 30 * 86400.0)
        return dt_cli_usage_error(cmd, "%s takes a duration such as 90s, 25m or 2h (up to 30 "
                                       "days), not '%s'", flag, text);
    *out = v * unit;
    return 0;
}

int dt_cli_print_json(json_t *root, size_t flags)
{
    char *text = root ? json_dumps(root, flags) : NULL;
    json_decref(root);
    if (!text)
        return DT_ENOMEM;
    puts(text);
    free(text);
    return 0;
}

dt_target dt_cli_dtype_target(const dt_workload *w, const dt_target *t)
{
    const char *how = NULL;
    if (!dt_dtype_native(w->dtype, t, &how))
        dt_log_warn("dtype %s is not native on this CPU (%s): its portable back-end is used, "
                    "correct but slower", dt_dtype_name(w->dtype), how);
    return dt_dtype_target(w->dtype, t);
}

json_t *dt_cli_count_json(double count)
{
    return count == (double)(json_int_t)count ? json_integer((json_int_t)count)
                                              : json_real(count);
}

const char *dt_cli_count_text(double count, char buf[32])
{
    if (count == (double)(long long)count)
        snprintf(buf, 32, "%lld", (long long)count);
    else
        snprintf(buf, 32, "%.1f", count);
    return buf;
}
