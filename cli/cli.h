/* Shared pieces of the `dtune` command line: the command entry points and
 * the helpers that keep messages and exit codes uniform.
 *
 * Exit codes (documented in README.md):
 *   0 ok, 1 usage error, 2 bad input, 3 runtime failure. */
#ifndef DT_CLI_H
#define DT_CLI_H

#include "common/error.h"

enum { DT_EXIT_OK = 0, DT_EXIT_USAGE = 1, DT_EXIT_INPUT = 2, DT_EXIT_RUNTIME = 3 };

/* Database used when --db is not given: $DTUNE_DB, else ./dtune.db. */
const char *dt_cli_default_db(void);

/* Prints "dtune CMD: <message>" and a pointer to --help on stderr; returns 1. */
int dt_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "dtune: error: <e->msg>" on stderr; returns the exit code for e. */
int dt_cli_fail(const dt_err *e);

/* True when argv[1..] contains -h or --help before any "--". */
int dt_cli_wants_help(int argc, char **argv);

/* Command entry points: argv[0] is the command name; they return an exit code. */
int dt_cmd_info(int argc, char **argv);
int dt_cmd_workloads(int argc, char **argv);
int dt_cmd_db(int argc, char **argv);
int dt_cmd_bench(int argc, char **argv);
int dt_cmd_worker(int argc, char **argv);
int dt_cmd_measure(int argc, char **argv);

#endif
