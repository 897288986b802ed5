/* Shared pieces of the `dtune` command line: the command entry points and
 * the helpers that keep messages and exit codes uniform.
 *
 * Exit codes (documented in README.md):
 *   0 ok, 1 usage error, 2 bad input, 3 runtime failure. */
#ifndef DT_CLI_H
#define DT_CLI_H

#include <jansson.h>
#include <stdint.h>

#include "backends/backend.h"
#include "common/error.h"
#include "common/target.h"
#include "space/annotation.h"
#include "shape/workload.h"

struct dt_db;

enum { DT_EXIT_OK = 0, DT_EXIT_USAGE = 1, DT_EXIT_INPUT = 2, DT_EXIT_RUNTIME = 3 };

/* Database used when --db is not given: $DTUNE_DB, else ./dtune.db. */
const char *dt_cli_default_db(void);

/* Opens the database at path (NULL: dt_cli_default_db()) with dt_db_open's
 * flags: 0, or the exit code after printing the error (dt_cli_fail). */
int dt_cli_open_db(const char *path, unsigned flags, struct dt_db **db);
/* Opens the existing database at path (NULL: dt_cli_default_db()) with
 * dt_db_open's flags; a missing file is DT_ENOTFOUND "no database at PATH;
 * run dtune MADE_BY first" (made_by: the command that writes one). */
int dt_cli_open_existing_db(const char *path, unsigned flags, const char *made_by,
                            struct dt_db **db, dt_err *e);

/* After a command's option parsing returned rc and its help flag: true when
 * the command is done, parsing failed (return rc) or --help was asked for
 * (usage printed on stdout; rc is 0). */
int dt_cli_parse_done(int rc, int help, const char *usage);

/* s escaped for a terminal (common/escape.h: control characters as "\x1b",
 * "\n", ...): for names, paths and other text from outside that go into a
 * table or a message.  The result lives in a ring of 8 buffers, so up to 8
 * may be used at once (in one printf); the CLI prints from one thread. */
const char *dt_cli_safe(const char *s);

/* A model workload's count (shape/model.h: a mean when an op's count is an
 * expression): a JSON integer when it is one, else a real; the text "12" or
 * "64.5" in buf. */
json_t *dt_cli_count_json(double count);
const char *dt_cli_count_text(double count, char buf[32]);

/* Prints "dtune CMD: <message>" (escaped) and a pointer to --help on
 * stderr; returns 1. */
int dt_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "dtune: error: <e->msg>" (escaped) on stderr; returns the exit
 * code for e. */
int dt_cli_fail(const dt_err *e);

/* Option values: on a bad value they print the usage error for cmd and
 * return DT_EXIT_USAGE, else store the value and return 0.
 * An integer in [lo, hi]: */
int dt_cli_int_opt(const char *cmd, const char *flag, const char *text, long lo, long hi,
                   int *out);
/* A --seed: */
int dt_cli_seed_opt(const char *cmd, const char *text, uint64_t *out);
/* Milliseconds in (0, hi]: */
int dt_cli_ms_opt(const char *cmd, const char *flag, const char *text, double hi, double *out);

/* A duration: seconds, or a number with s, m or h ("90s", "25m", "2h"): */
int dt_cli_duration_opt(const char *cmd, const char *flag, const char *text, double *out);

/* Writes root (reference stolen; NULL allowed) to stdout with jansson's
 * flags and a newline.  0, or DT_ENOMEM when the JSON could not be built. */
int dt_cli_print_json(json_t *root, size_t flags);

/* True when argv[1..] contains -h or --help before any "--". */
int dt_cli_wants_help(int argc, char **argv);

/* The kernels of a run: the annotations of a JSON file (one object or an
 * array; each validated for t) when path is set, else `sample` (default 16)
 * random valid ones from seed for workload w (every back-end t runs for its
 * dtype: dt_annotation_sample_dtype; every third one of the op's own
 * sketch where it offers one, as the tuner draws them), all with `threads`
 * threads.  *out is malloc'ed. */
int dt_cli_kernels(const char *path, int sample, uint64_t seed, int threads, const dt_target *t,
                   const dt_workload *w, dt_annotation **out, int *n, dt_err *e);

/* The shapes of a run as variable values (*n × w->nvars, malloc'ed): the
 * --shapes domain of a one-variable workload, the grid of "NAME=DOMAIN;…"
 * (every variable once) of one with several, else the workload's shape
 * set; at most max shapes. */
int dt_cli_shapes(const dt_workload *w, const char *text, int max, int64_t **out, int *n,
                  dt_err *e);

/* Command entry points: argv[0] is the command name; they return an exit code. */
/* Warns once per dtype when w's dtype does not run natively on target t
 * ("dtype bf16 is not native on this CPU (portable (no avx512_bf16)): its
 * portable back-end is used"); returns the target as w's kernels see it
 * (dtypes/dtype.h, dt_dtype_target). */
dt_target dt_cli_dtype_target(const dt_workload *w, const dt_target *t);

int dt_cmd_info(int argc, char **argv);
int dt_cmd_workloads(int argc, char **argv);
int dt_cmd_import(int argc, char **argv);
int dt_cmd_db(int argc, char **argv);
int dt_cmd_bench(int argc, char **argv);
int dt_cmd_worker(int argc, char **argv);
int dt_cmd_measure(int argc, char **argv);
int dt_cmd_model(int argc, char **argv);
int dt_cmd_tune(int argc, char **argv);
int dt_cmd_query(int argc, char **argv);
int dt_cmd_export(int argc, char **argv);
int dt_cmd_daemon(int argc, char **argv);

#endif
