/* dtune daemon: the tuning service (daemon/daemon.h, docs/daemon.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "daemon/http_auth.h"
#include "db/db.h"
#include "measure/wire.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune daemon [--db PATH] [--listen HOST:PORT] [--threads T]\n"
            "                    [--workers HOST:PORT,... --token-file F]\n"
            "                    [--api-token-file F] [--request-timeout SECONDS]\n"
            "                    [--idle-timeout SECONDS] [--max-body BYTES]\n"
            "                    [--keep-jobs SPEC]\n"
            "\n"
            "Runs the tuning service: an HTTP/JSON API on one event loop and a job\n"
            "runner that tunes queued jobs one at a time, recording into the database\n"
            "while queries are answered. Jobs survive restarts: a starting daemon\n"
            "resumes every queued or running job from its records.\n"
            "\n"
            "API (docs/daemon.md):\n"
            "  POST   /v1/jobs                    queue a job: {\"model\": SPEC} or\n"
            "                                     {\"workload\": KEY}, with \"trials\",\n"
            "                                     \"time\", \"strategy\", \"threads\" -> 202\n"
            "  GET    /v1/jobs, /v1/jobs/{id}     state, progress, objectives\n"
            "  DELETE /v1/jobs/{id}               cancel (what was measured is kept)\n"
            "  GET    /v1/schedules?workload=KEY&M=37[&target=KEY][&threads=T]\n"
            "  GET    /v1/kernels/{id}/source     a kernel's C source\n"
            "  GET    /v1/workloads, /healthz, /metrics (Prometheus)\n"
            "\n"
            "Options:\n"
            "  --db PATH              database (default $DTUNE_DB, else ./dtune.db)\n"
            "  --listen HOST:PORT     address (default %s; port 0: any free port)\n"
            "  --threads T            threads of a job's kernels when it names none\n"
            "                         (default: all cores)\n"
            "  --workers LIST         measure on dtune workers (HOST:PORT,...)\n"
            "  --token-file FILE      the workers' shared token (mode 600)\n"
            "  --api-token-file FILE  bearer token (mode 600) required on POST and DELETE;\n"
            "                         mandatory when HOST is not a loopback address; one\n"
            "                         word of visible ASCII (head -c 32 /dev/urandom | base64)\n"
            "  --request-timeout S    a request must arrive whole within S seconds\n"
            "                         (default 10)\n"
            "  --idle-timeout S       keep-alive connections idle this long are closed\n"
            "                         (default 30)\n"
            "  --max-body BYTES       largest request body (default 1 MiB)\n"
            "  --keep-jobs SPEC       finished jobs kept: an age (30d, 12h), a count (500)\n"
            "                         or 'all' (default 30d); pruned at start and hourly\n"
            "  -h, --help             show this help\n"
            "\n"
            "When ready it prints 'dtune daemon listening on HOST:PORT (target KEY, db\n"
            "PATH)' on stdout. SIGTERM or SIGINT: the server closes, the running tune\n"
            "stops at its next round boundary (its job resumes at the next start) and\n"
            "the daemon exits 0. A second SIGTERM or SIGINT meanwhile exits at once\n"
            "with 143 (SIGTERM) or 130 (SIGINT); the job resumes at the next start.\n"
            "\n"
            "One daemon per database: it holds DB.lock (beside the database) while it\n"
            "runs; a second daemon on the same database is refused (exit 3) and told\n"
            "the pid of the first.\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad input (a bad --listen address, a\n"
            "non-loopback address without --api-token-file), 3 runtime failure (the\n"
            "database is held by another daemon, cannot bind, database I/O), 143 or 130\n"
            "after a second SIGTERM or SIGINT.\n",
            DT_DAEMON_DEFAULT_LISTEN);
}

typedef struct {
    dt_daemon_opts o;
    const char *api_token_file;
} daemon_args;

static int seconds_opt(const char *flag, const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v > 0) || v > 86400)
        return dt_cli_usage_error("daemon", "%s takes seconds in (0, 86400], not '%s'", flag,
                                  text);
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, daemon_args *a)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"listen", required_argument, NULL, 'l'},
        {"threads", required_argument, NULL, 't'},
        {"workers", required_argument, NULL, 'w'},
        {"token-file", required_argument, NULL, 'F'},
        {"api-token-file", required_argument, NULL, 'A'},
        {"request-timeout", required_argument, NULL, 'R'},
        {"idle-timeout", required_argument, NULL, 'I'},
        {"max-body", required_argument, NULL, 'B'},
        {"keep-jobs", required_argument, NULL, 'K'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    int c, v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'd': a->o.db_path = optarg; break;
        case 'l': a->o.listen = optarg; break;
        case 'w': a->o.workers = optarg; break;
        case 'F': a->o.token_file = optarg; break;
        case 'A': a->api_token_file = optarg; break;
        case 't': rc = dt_cli_int_opt("daemon", "--threads", optarg, 1, 1024, &a->o.threads); break;
        case 'R': rc = seconds_opt("--request-timeout", optarg, &a->o.request_timeout_s); break;
        case 'I': rc = seconds_opt("--idle-timeout", optarg, &a->o.idle_timeout_s); break;
        case 'B':
            rc = dt_cli_int_opt("daemon", "--max-body", optarg, 1024, 1 << 30, &v);
            a->o.max_body = (size_t)v;
            break;
        case 'K': {
            dt_db_job_retention r;
            dt_err e;
            if (dt_db_job_retention_parse(optarg, &r, &e))
                return dt_cli_usage_error("daemon", "--keep-jobs: %s", e.msg);
            a->o.keep_jobs = optarg;
            break;
        }
        case 'h': usage(stdout); return -1;
        default:
            return dt_cli_usage_error("daemon", "unknown option or missing value: '%s'",
                                      argv[optind - 1]);
        }
        if (rc)
            return rc;
    }
    if (!a->o.workers != !a->o.token_file)
        return dt_cli_usage_error("daemon", "--workers and --token-file go together");
    if (optind != argc)
        return dt_cli_usage_error("daemon", "unexpected argument '%s'", argv[optind]);
    return 0;
}

int dt_cmd_daemon(int argc, char **argv)
{
    daemon_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? DT_EXIT_OK : rc;
    dt_err e;
    dt_err_clear(&e);
    /* a bad address is reported as such (exit 2), not as a missing token */
    if (dt_daemon_check_listen(a.o.listen, &e))
        return dt_cli_fail(&e);
    char *token = NULL;
    size_t tlen = 0;
    if (a.api_token_file) {
        /* read with its length: a token that is set is always enforced, and
         * one that cannot be sent in an Authorization header is refused */
        char what[4200];
        snprintf(what, sizeof what, "token file %s", a.api_token_file);
        if ((rc = dt_token_read(a.api_token_file, &token, &tlen, &e)) ||
            (rc = dt_http_token_check(token, tlen, what, &e))) {
            if (token) {
                explicit_bzero(token, tlen);
                free(token);
            }
            dt_err_prefix(&e, "--api-token-file");
            return dt_cli_fail(&e);
        }
    }
    a.o.api_token = token;
    a.o.api_token_len = tlen;
    if (!a.o.db_path)
        a.o.db_path = dt_cli_default_db();
    rc = dt_daemon_run(&a.o, &e);
    if (token)
        explicit_bzero(token, tlen); /* not elided before free */
    free(token);
    return rc ? dt_cli_fail(&e) : DT_EXIT_OK;
}
