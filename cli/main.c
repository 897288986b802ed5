/* The `dtune` entry point: global options, then one command. */
#include "cli/cli.h"
#include "common/log.h"
#include "measure/runner.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} dt_command;

static const dt_command commands[] = {
    {"info", dt_cmd_info, "show the detected target (ISA, cores, caches) and its key"},
    {"workloads", dt_cmd_workloads, "list a model's distinct workloads and shape sets"},
    {"import", dt_cmd_import, "turn an ONNX model into a model spec (dynamic dims as variables)"},
    {"db", dt_cmd_db, "create or inspect a dtune database (init, stats)"},
    {"bench", dt_cmd_bench, "time micro-kernels against oneDNN, OpenBLAS, LIBXSMM"},
    {"measure", dt_cmd_measure, "measure kernels on shapes (locally or on workers) into the db"},
    {"worker", dt_cmd_worker, "serve measurements to tuners over TCP"},
    {"tune", dt_cmd_tune, "tune a model's workloads (or one workload) into dispatch schedules"},
    {"query", dt_cmd_query, "the kernel dispatched for a workload's shape, from the db"},
    {"model", dt_cmd_model, "train the cost model on recorded measurements; show its quality"},
    {"export", dt_cmd_export, "write a tuned workload as self-contained C (kernels + dispatcher)"},
    {"daemon", dt_cmd_daemon, "serve tuning jobs and schedule queries over HTTP"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void print_help(FILE *out)
{
    fprintf(out,
            "Usage: dtune [--verbose|--quiet] COMMAND [ARGS...]\n"
            "\n"
            "dtune tunes tensor operators with dynamic shapes (DietCode-style\n"
            "shape-generic micro-kernels for CPUs) and serves the schedules.\n"
            "\n"
            "Commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n"
            "Global options:\n"
            "  -h, --help       show this help (or 'dtune COMMAND --help')\n"
            "  -V, --version    print the version and exit\n"
            "  -v, --verbose    log progress to stderr (DTUNE_LOG=info|debug also works)\n"
            "  -q, --quiet      log errors only\n"
            "\n"
            "Environment:\n"
            "  DTUNE_DB         database used when --db is not given (default ./dtune.db)\n"
            "  DTUNE_LOG        log level: error, warn, info, debug\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad input, 3 runtime failure.\n");
}

int main(int argc, char **argv)
{
    dt_log_init_from_env();
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            print_help(stdout);
            return DT_EXIT_OK;
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("dtune %s\n", DTUNE_VERSION);
            return DT_EXIT_OK;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            dt_log_set_level(dt_log_get_level() < DT_LOG_INFO ? DT_LOG_INFO : DT_LOG_DEBUG);
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            dt_log_set_level(DT_LOG_ERROR);
        } else {
            fprintf(stderr, "dtune: unknown option '%s'\nTry 'dtune --help'.\n", dt_cli_safe(a));
            return DT_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        print_help(stderr);
        return DT_EXIT_USAGE;
    }
    /* internal: the isolated child of the local runner (measure/runner.h) */
    if (!strcmp(argv[i], "__run-trials"))
        return dt_runner_child_main(argc - i, argv + i);
    for (size_t c = 0; c < N_COMMANDS; c++)
        if (!strcmp(argv[i], commands[c].name))
            return commands[c].run(argc - i, argv + i);
    fprintf(stderr, "dtune: unknown command '%s'\nTry 'dtune --help'.\n", dt_cli_safe(argv[i]));
    return DT_EXIT_USAGE;
}
