/* `dtune worker`: serve measurements to tuners over TCP (measure/worker.h). */
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/target.h"
#include "measure/runner.h"
#include "measure/wire.h"
#include "measure/worker.h"
#include "microkernel/build.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune worker --token-file FILE [--listen HOST:PORT] [--max-batch N]\n"
            "                    [--name NAME] [--auth-timeout SECONDS]\n"
            "\n"
            "Serves measurements to tuners over TCP: announces this machine's target,\n"
            "authenticates every client with the shared token (HMAC challenge-response;\n"
            "unauthenticated peers get nothing), compiles the kernel sources it is sent\n"
            "and measures them one batch at a time with the isolated local runner.\n"
            "SIGTERM or Ctrl-C finishes the running batch, sends its result and exits.\n"
            "See docs/workers.md.\n"
            "\n"
            "Options:\n"
            "  --listen HOST:PORT     address to listen on (default 127.0.0.1:7720);\n"
            "                         IPv4, [IPv6], localhost or a host name; port 0 = any\n"
            "  --token-file FILE      the shared secret, at least %d bytes, mode 600; make\n"
            "                         one with: head -c 32 /dev/urandom | base64 > FILE\n"
            "  --max-batch N          most trials accepted in one batch (default 256, <= %d)\n"
            "  --name NAME            name announced to clients (default: the host name)\n"
            "  --auth-timeout SECONDS close connections that do not authenticate in time\n"
            "                         (default 10)\n"
            "  -h, --help             show this help\n"
            "\n"
            "When ready it prints 'dtune worker listening on HOST:PORT (target KEY)' on\n"
            "stderr.  Kernels are cached in $DTUNE_CACHE_DIR (default ~/.cache/dtune/kernels).\n"
            "\n"
            "Exit codes: 0 stopped by a signal, 1 usage error, 2 bad token file or\n"
            "address, 3 runtime failure (cannot listen, no compiler).\n",
            DT_TOKEN_MIN, DT_BATCH_MAX_TRIALS);
}

typedef struct {
    const char *listen; /* as given */
    char target_key[DT_TARGET_KEY_MAX];
} dt_worker_cli;

static void on_listening(int port, void *ud)
{
    const dt_worker_cli *cli = ud;
    const char *colon = strrchr(cli->listen, ':');
    int hl = colon ? (int)(colon - cli->listen) : (int)strlen(cli->listen);
    fprintf(stderr, "dtune worker listening on %.*s:%d (target %s)\n", hl, cli->listen, port,
            cli->target_key);
    fflush(stderr);
}

int dt_cmd_worker(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"token-file", required_argument, NULL, 't'},
        {"max-batch", required_argument, NULL, 'b'},
        {"name", required_argument, NULL, 'n'},
        {"auth-timeout", required_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *listen_at = DT_WORKER_DEFAULT_LISTEN, *token_file = NULL, *name = NULL;
    int max_batch = 256;
    double auth_timeout = 10;
    if (dt_cli_wants_help(argc, argv)) {
        usage(stdout);
        return DT_EXIT_OK;
    }
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'l': listen_at = optarg; break;
        case 't': token_file = optarg; break;
        case 'n': name = optarg; break;
        case 'h': usage(stdout); return DT_EXIT_OK;
        case 'b': {
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > DT_BATCH_MAX_TRIALS)
                return dt_cli_usage_error("worker", "--max-batch takes 1..%d, not '%s'",
                                          DT_BATCH_MAX_TRIALS, optarg);
            max_batch = (int)v;
            break;
        }
        case 'a':
            auth_timeout = strtod(optarg, &end);
            if (!*optarg || *end || !(auth_timeout > 0) || auth_timeout > 86400)
                return dt_cli_usage_error("worker", "--auth-timeout takes 0 < SECONDS <= 86400, "
                                                    "not '%s'",
                                          optarg);
            break;
        case ':':
            return dt_cli_usage_error("worker", "option '%s' needs a value", argv[optind - 1]);
        default:
            return dt_cli_usage_error("worker", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return dt_cli_usage_error("worker", "unexpected argument '%s'", argv[optind]);
    if (!token_file)
        return dt_cli_usage_error("worker", "--token-file is required (a worker runs the code "
                                            "it is sent, so it never serves unauthenticated "
                                            "peers)");

    dt_err e;
    dt_err_clear(&e);
    /* a bad address is reported as such, before the token, compiler, ... */
    if (dt_worker_check_listen(listen_at, &e))
        return dt_cli_fail(&e);
    char *token = NULL;
    size_t token_len = 0;
    if (dt_token_read(token_file, &token, &token_len, &e))
        return dt_cli_fail(&e);

    dt_worker_cli cli = {.listen = listen_at};
    dt_target t;
    dt_builder builder;
    dt_runner runner;
    int rc = dt_target_detect_key(&t, cli.target_key, sizeof cli.target_key, &e);
    if (!rc)
        rc = dt_builder_init(&builder, NULL, NULL, NULL, &e);
    if (!rc)
        rc = dt_runner_init(&runner, &builder, NULL, &e);
    if (!rc) {
        dt_worker_opts o = {
            .listen = listen_at,
            .token = token,
            .token_len = token_len,
            .max_batch = max_batch,
            .auth_timeout_s = auth_timeout,
            .runner = &runner,
            .name = name,
            .on_listening = on_listening,
            .ud = &cli,
        };
        rc = dt_worker_run(&o, &e);
    }
    sodium_memzero(token, token_len);
    free(token);
    return rc ? dt_cli_fail(&e) : DT_EXIT_OK;
}
