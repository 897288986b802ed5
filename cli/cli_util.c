#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dt_cli_default_db(void)
{
    const char *env = getenv("DTUNE_DB");
    return (env && *env) ? env : "dtune.db";
}

int dt_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dtune %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'dtune %s --help'.\n", cmd);
    va_end(ap);
    return DT_EXIT_USAGE;
}

int dt_cli_fail(const dt_err *e)
{
    fprintf(stderr, "dtune: error: %s\n", e->msg[0] ? e->msg : dt_strerror(e->code));
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
