/* The parent side of the local runner (measure/runner.h): builds the batch,
 * then runs its trials in `dtune __run-trials` children, one trial at a time
 * in order, reading one result line per trial.  A child that dies or goes
 * silent costs only the trial it was running: that trial is classified
 * (run_crash / run_timeout) and a fresh child carries on with the rest.
 * docs/measurement.md describes the protocol and the classification. */
#include "measure/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/strbuf.h"

extern char **environ;

#define STDERR_KEEP 4096           /* bytes of a child's stderr kept for the error text */
#define LINE_MAX_BYTES (1u << 20)  /* longest protocol line accepted */
#define STARTUP_LIMIT_S 30.0       /* exec + reading the batch + loading the kernel */
#define KILL_DRAIN_S 5.0           /* after SIGKILL, wait this long for the pipes to close */
#define COMPILE_LOG_KEEP 16384     /* bytes of compiler output in a compile_error */

int dt_runner_init(dt_runner *r, const dt_builder *b, const char *exe, dt_err *e)
{
    memset(r, 0, sizeof *r);
    r->builder = b;
    if (exe) {
        if (strlen(exe) >= sizeof r->exe)
            return dt_errf(e, DT_EINVAL, "runner executable path is too long");
        snprintf(r->exe, sizeof r->exe, "%s", exe);
    } else {
        ssize_t n = readlink("/proc/self/exe", r->exe, sizeof r->exe - 1);
        if (n < 0)
            return dt_errf(e, DT_EIO, "cannot find this executable (/proc/self/exe): %s",
                           strerror(errno));
        r->exe[n] = '\0';
    }
    if (access(r->exe, X_OK) != 0)
        return dt_errf(e, DT_EIO, "runner executable %s is not executable: %s", r->exe,
                       strerror(errno));
    return 0;
}

/* ---- results ------------------------------------------------------------- */

static void result_set(dt_trial_result *r, dt_trial_status st, const char *msg)
{
    r->status = st;
    r->min_ns = r->median_ns = NAN;
    r->repeats = 0;
    free(r->error);
    r->error = strdup(msg && *msg ? msg : dt_trial_status_name(st));
}

static void results_set_all(dt_trial_result *res, int from, int n, dt_trial_status st,
                            const char *msg)
{
    for (int i = from; i < n; i++)
        result_set(&res[i], st, msg);
}

/* "prefix" + "; stderr: <text>" when the child wrote anything. */
static char *with_stderr(const char *prefix, const char *err, size_t errlen)
{
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_sb_append(&sb, prefix);
    while (errlen && (err[errlen - 1] == '\n' || err[errlen - 1] == ' '))
        errlen--;
    if (errlen) {
        dt_sb_append(&sb, "; stderr: ");
        dt_sb_appendn(&sb, err, errlen);
    }
    return dt_sb_take(&sb);
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (segmentation fault)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic exception)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGABRT: return "SIGABRT (abort)";
    case SIGKILL: return "SIGKILL (killed, e.g. by the out-of-memory killer)";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS (bad system call)";
    case SIGXCPU: return "SIGXCPU (CPU time limit)";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
    }
}

/* ---- one child ---------------------------------------------------------- */

typedef struct {
    pid_t pid;
    int in_fd, out_fd, err_fd;
} child_proc;

static int spawn_child(const dt_runner *r, const char *so_path, child_proc *c, dt_err *e)
{
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
    if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC)) {
        int err = errno;
        for (int i = 0; i < 2; i++) {
            if (pin[i] >= 0)
                close(pin[i]);
            if (pout[i] >= 0)
                close(pout[i]);
            if (perr[i] >= 0)
                close(perr[i]);
        }
        return dt_errf(e, DT_EIO, "cannot create pipes for the trial runner: %s", strerror(err));
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
    posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
    posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
    posix_spawnattr_init(&at);
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    /* signals a host process (libuv, a daemon) may ignore or catch */
    int sigs[] = {SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&dfl, sigs[i]);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setpgroup(&at, 0); /* its own group: a time-out kills all of it */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    char arg1[] = "__run-trials";
    char *argv[] = {(char *)r->exe, arg1, (char *)so_path, NULL};
    int rc = posix_spawn(&c->pid, r->exe, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(pin[0]);
    close(pout[1]);
    close(perr[1]);
    if (rc != 0) {
        close(pin[1]);
        close(pout[0]);
        close(perr[0]);
        return dt_errf(e, DT_EIO, "cannot start the trial runner %s: %s", r->exe, strerror(rc));
    }
    c->in_fd = pin[1];
    c->out_fd = pout[0];
    c->err_fd = perr[0];
    fcntl(c->in_fd, F_SETFL, fcntl(c->in_fd, F_GETFL) | O_NONBLOCK);
    return 0;
}

/* State of one child's run over trials [cur, n). */
typedef struct {
    const dt_batch *batch;
    dt_trial_result *results;
    int cur;                 /* the trial in progress (next result expected) */
    int ready;
    char protocol_err[512];  /* set on a line that is not a valid answer */
    char *line;              /* partial protocol line */
    size_t line_len, line_cap;
    char err[STDERR_KEEP];   /* child's stderr since the last result */
    size_t err_len;
} run_state;

/* Handles one complete protocol line; returns 0, or -1 on a protocol error. */
static int handle_line(run_state *s, const char *text, size_t len)
{
    if (len == 0)
        return 0;
    json_error_t jerr;
    json_t *j = json_loadb(text, len, 0, &jerr);
    if (!j) {
        snprintf(s->protocol_err, sizeof s->protocol_err, "unreadable line from the child: %.200s",
                 jerr.text);
        return -1;
    }
    if (json_object_get(j, "ready")) {
        s->ready = 1;
        json_decref(j);
        return 0;
    }
    dt_trial_result r;
    dt_err e;
    int rc = dt_trial_result_from_json(j, &r, &e);
    json_decref(j);
    if (rc) {
        snprintf(s->protocol_err, sizeof s->protocol_err, "bad result from the child: %.400s",
                 e.msg);
        return -1;
    }
    if (s->cur >= s->batch->ntrials || strcmp(r.uid, s->batch->trials[s->cur].uid) != 0) {
        snprintf(s->protocol_err, sizeof s->protocol_err,
                 "the child answered trial %s out of order", r.uid);
        dt_trial_result_free(&r);
        return -1;
    }
    dt_trial_result_free(&s->results[s->cur]);
    s->results[s->cur] = r;
    s->cur++;
    s->err_len = 0; /* stderr from here on belongs to the next trial */
    return 0;
}

/* Appends stdout bytes and handles every complete line. */
static int take_output(run_state *s, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            if (handle_line(s, s->line, s->line_len))
                return -1;
            s->line_len = 0;
            continue;
        }
        if (s->line_len + 1 >= s->line_cap) {
            if (s->line_cap >= LINE_MAX_BYTES) {
                snprintf(s->protocol_err, sizeof s->protocol_err,
                         "protocol line longer than %u bytes", LINE_MAX_BYTES);
                return -1;
            }
            size_t cap = s->line_cap ? s->line_cap * 2 : 4096;
            char *nl = realloc(s->line, cap);
            if (!nl) {
                snprintf(s->protocol_err, sizeof s->protocol_err, "out of memory");
                return -1;
            }
            s->line = nl;
            s->line_cap = cap;
        }
        s->line[s->line_len++] = buf[i];
    }
    return 0;
}

/* The child's batch: trials [next, n) of b, without the source (it loads
 * the built kernel), as compact JSON (malloc'ed), or NULL when out of
 * memory. */
static char *child_input(const dt_batch *b, int next)
{
    dt_batch sub = *b;
    char empty[1] = "";
    sub.source = empty;
    sub.trials = b->trials + next;
    sub.ntrials = b->ntrials - next;
    json_t *j = dt_batch_to_json(&sub);
    char *input = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return input;
}

/* What run_child watches while the child runs: its input still to write,
 * the deadline and how the child ended. */
typedef struct child_watch {
    const char *input;
    size_t in_len, in_off;
    int got_epipe;   /* a write met EPIPE: a SIGPIPE may be pending */
    double t_run;    /* the per-trial limit */
    double deadline; /* of the trial in progress (or of the start-up) */
    int last_cur, killed, timed_out, exited;
    double kill_time;
    siginfo_t info;  /* the child's exit when exited */
} child_watch;

/* Writes what the child's stdin takes of the input; closes it when all is
 * written or the child no longer reads. */
static void feed_input(child_proc *c, child_watch *w)
{
    ssize_t n = write(c->in_fd, w->input + w->in_off, w->in_len - w->in_off);
    if (n > 0)
        w->in_off += (size_t)n;
    if ((n < 0 && errno != EAGAIN && errno != EINTR) || w->in_off == w->in_len) {
        if (n < 0 && errno == EPIPE)
            w->got_epipe = 1;
        close(c->in_fd);
        c->in_fd = -1;
    }
}

/* Reads the child's stdout into the result lines (ignored after a protocol
 * error); closes it at the end. */
static void read_output(child_proc *c, run_state *s)
{
    char buf[65536];
    ssize_t got = read(c->out_fd, buf, sizeof buf);
    if (got > 0) {
        if (!s->protocol_err[0])
            take_output(s, buf, (size_t)got);
    } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(c->out_fd);
        c->out_fd = -1;
    }
}

/* Keeps the first STDERR_KEEP bytes of the child's stderr; closes it at the
 * end. */
static void read_stderr(child_proc *c, run_state *s)
{
    char buf[8192];
    ssize_t got = read(c->err_fd, buf, sizeof buf);
    if (got > 0) {
        size_t keep = STDERR_KEEP - s->err_len;
        if (keep > (size_t)got)
            keep = (size_t)got;
        memcpy(s->err + s->err_len, buf, keep);
        s->err_len += keep;
    } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(c->err_fd);
        c->err_fd = -1;
    }
}

/* One poll of the child's open pipes for at most wait_ms, then the I/O they
 * are ready for. */
static void poll_pipes(child_proc *c, run_state *s, child_watch *w, int wait_ms)
{
    struct pollfd pfd[3];
    int np = 0, iin = -1, iout = -1, ierr = -1;
    if (c->in_fd >= 0) {
        pfd[np] = (struct pollfd){.fd = c->in_fd, .events = POLLOUT};
        iin = np++;
    }
    if (c->out_fd >= 0) {
        pfd[np] = (struct pollfd){.fd = c->out_fd, .events = POLLIN};
        iout = np++;
    }
    if (c->err_fd >= 0) {
        pfd[np] = (struct pollfd){.fd = c->err_fd, .events = POLLIN};
        ierr = np++;
    }
    int pr = poll(pfd, (nfds_t)np, wait_ms);
    if (pr < 0 && errno != EINTR) {
        snprintf(s->protocol_err, sizeof s->protocol_err, "poll failed: %s", strerror(errno));
        return;
    }
    if (pr <= 0)
        return;
    if (iin >= 0 && pfd[iin].revents)
        feed_input(c, w);
    if (iout >= 0 && pfd[iout].revents)
        read_output(c, s);
    if (ierr >= 0 && pfd[ierr].revents)
        read_stderr(c, s);
}

/* Feeds the child and reads its results until it exits (w->exited, with
 * w->info), or it was killed at a deadline or a protocol error and its pipes
 * drained, or they stayed open KILL_DRAIN_S after the kill. */
static void watch_child(child_proc *c, run_state *s, child_watch *w, int n)
{
    for (;;) {
        /* the per-trial clock starts when the child is ready and restarts
         * with every result */
        if (s->ready && s->cur != w->last_cur) {
            w->last_cur = s->cur;
            w->deadline = dt_now_s() + w->t_run;
        }
        double t = dt_now_s();
        if (!w->killed && (t >= w->deadline || s->protocol_err[0])) {
            kill(-c->pid, SIGKILL);
            w->killed = 1;
            w->timed_out = !s->protocol_err[0] && s->cur < n;
            w->kill_time = t;
        }
        if (w->killed && t >= w->kill_time + KILL_DRAIN_S)
            break; /* something still holds the pipes: stop reading */
        int pipes_closed = c->out_fd < 0 && c->err_fd < 0;
        if (pipes_closed) {
            /* the child is exiting: wait for it without reaping yet */
            memset(&w->info, 0, sizeof w->info);
            int wr = waitid(P_PID, (id_t)c->pid, &w->info, WEXITED | WNOHANG | WNOWAIT);
            if (wr == 0 && w->info.si_pid == c->pid) {
                w->exited = 1;
                break;
            }
            if (wr < 0 && errno != EINTR)
                break; /* ECHILD: reaped elsewhere (SIGCHLD ignored) */
        }
        double until = w->killed ? w->kill_time + KILL_DRAIN_S : w->deadline;
        double wait_s = until - t;
        if (pipes_closed && wait_s > 0.005)
            wait_s = 0.005; /* polling for the exit */
        int wait_ms = wait_s > 0 ? (int)ceil(wait_s * 1000.0) : 0;
        poll_pipes(c, s, w, wait_ms);
    }
}

/* The child is dead or exiting: removes any straggler of its group, then
 * reaps it (its pid, and so the group id, stays reserved until reaped) and
 * closes its pipes; w->info says how it ended. */
static void reap_child(child_proc *c, child_watch *w)
{
    kill(-c->pid, SIGKILL);
    int status = 0;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!w->exited) {
        /* status from waitpid: we killed it or it exited while we gave up */
        memset(&w->info, 0, sizeof w->info);
        if (WIFSIGNALED(status)) {
            w->info.si_code = CLD_KILLED;
            w->info.si_status = WTERMSIG(status);
        } else {
            w->info.si_code = CLD_EXITED;
            w->info.si_status = WEXITSTATUS(status);
        }
    }
    if (c->in_fd >= 0)
        close(c->in_fd);
    if (c->out_fd >= 0)
        close(c->out_fd);
    if (c->err_fd >= 0)
        close(c->err_fd);
}

/* Classifies the trial in progress when the child ended (a time-out, a
 * protocol error, a crash or an early exit) with its stderr. */
static void classify_unfinished(const dt_batch *b, const run_state *s, const child_watch *w,
                                dt_trial_result *results)
{
    char head[768];
    dt_trial_status st = DT_TRIAL_RUN_CRASH;
    const dt_trial *t = &b->trials[s->cur];
    if (w->timed_out) {
        st = DT_TRIAL_RUN_TIMEOUT;
        if (s->ready)
            snprintf(head, sizeof head,
                     "no result within %.3g s at shape %s, threads %d: the runner was killed",
                     w->t_run, t->shape, t->threads);
        else
            snprintf(head, sizeof head,
                     "the trial runner did not load the kernel within %.3g s: it was killed",
                     w->t_run > STARTUP_LIMIT_S ? w->t_run : STARTUP_LIMIT_S);
    } else if (s->protocol_err[0]) {
        snprintf(head, sizeof head, "trial runner protocol error at shape %s: %.500s", t->shape,
                 s->protocol_err);
    } else if (w->info.si_code == CLD_KILLED || w->info.si_code == CLD_DUMPED) {
        snprintf(head, sizeof head, "the kernel crashed at shape %s, threads %d: %s", t->shape,
                 t->threads, signal_name(w->info.si_status));
    } else {
        snprintf(head, sizeof head,
                 "the trial runner exited with status %d at shape %s, threads %d, before "
                 "reporting a result",
                 w->info.si_status, t->shape, t->threads);
    }
    char *msg = with_stderr(head, s->err, s->err_len);
    result_set(&results[s->cur], st, msg ? msg : head);
    free(msg);
}

/* Consumes a SIGPIPE left pending by a write to a dead child (got_epipe),
 * then restores the thread's signal mask. */
static void unblock_sigpipe(const sigset_t *pipeset, const sigset_t *oldmask, int got_epipe)
{
    if (got_epipe) {
        sigset_t pending;
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) {
            struct timespec zero = {0, 0};
            sigtimedwait(pipeset, NULL, &zero);
        }
    }
    pthread_sigmask(SIG_SETMASK, oldmask, NULL);
}

/* Runs trials [*next, n) in one child until it finishes or dies; on return
 * *next is past every trial that got a result or a classification (at least
 * one more than before).  Negative only if no child could be started. */
static int run_child(const dt_runner *r, const dt_batch *b, const char *so_path,
                     dt_trial_result *results, int *next, dt_err *e)
{
    char *input = child_input(b, *next);
    if (!input)
        return dt_errf(e, DT_ENOMEM, "out of memory writing a batch for the trial runner");

    /* a write to a child that died must not SIGPIPE this process: block it
     * in this thread and consume the pending signal afterwards */
    sigset_t pipeset, oldmask;
    sigemptyset(&pipeset);
    sigaddset(&pipeset, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipeset, &oldmask);

    child_proc c;
    int rc = spawn_child(r, so_path, &c, e);
    if (rc) {
        free(input);
        pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
        return rc;
    }
    run_state s = {.batch = b, .results = results, .cur = *next};
    child_watch w;
    memset(&w, 0, sizeof w);
    w.input = input;
    w.in_len = strlen(input);
    w.t_run = b->timing.run_timeout_s;
    w.deadline = dt_now_s() + (w.t_run > STARTUP_LIMIT_S ? w.t_run : STARTUP_LIMIT_S);
    w.last_cur = -1;

    watch_child(&c, &s, &w, b->ntrials);
    reap_child(&c, &w);
    free(input);
    free(s.line);

    if (s.cur < b->ntrials) {
        classify_unfinished(b, &s, &w, results);
        s.cur++;
    }
    *next = s.cur;
    unblock_sigpipe(&pipeset, &oldmask, w.got_epipe);
    return 0;
}

/* ---- the batch ------------------------------------------------------------ */

int dt_runner_run(const dt_runner *r, const dt_batch *batch, dt_trial_result *results, dt_err *e)
{
    const int n = batch->ntrials;
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        memcpy(results[i].uid, batch->trials[i].uid, sizeof results[i].uid);
        results[i].status = DT_TRIAL_WORKER_LOST;
        results[i].min_ns = results[i].median_ns = NAN;
    }
    if (n <= 0)
        return 0;

    /* the batch must be one the child accepts: check it here, once */
    {
        dt_batch sub = *batch;
        char empty[1] = "";
        sub.source = empty;
        json_t *j = dt_batch_to_json(&sub);
        dt_batch chk;
        int rc = j ? dt_batch_from_json(j, &chk, e)
                   : dt_errf(e, DT_ENOMEM, "out of memory checking a batch");
        json_decref(j);
        if (rc) {
            char msg[DT_ERR_MSG_MAX + 32];
            snprintf(msg, sizeof msg, "batch refused: %s", e->msg);
            results_set_all(results, 0, n, DT_TRIAL_WORKER_LOST, msg);
            return rc;
        }
        dt_batch_free(&chk);
    }

    dt_build_result br;
    int rc = dt_build_one(r->builder, batch->source ? batch->source : "", &br, e);
    if (rc || br.status == DT_BUILD_SYSTEM_ERROR) {
        char msg[DT_ERR_MSG_MAX + 64];
        snprintf(msg, sizeof msg, "cannot build the kernel: %.1000s",
                 rc ? e->msg : br.log ? br.log : "system error");
        if (!rc)
            rc = dt_errf(e, DT_EIO, "%s", msg);
        results_set_all(results, 0, n, DT_TRIAL_WORKER_LOST, msg);
        dt_build_result_free(&br);
        return rc;
    }
    if (br.status != DT_BUILD_OK) {
        const char *log = br.log && *br.log ? br.log : "(no compiler output)";
        dt_strbuf sb;
        dt_sb_init(&sb);
        if (br.status == DT_BUILD_TIMEOUT)
            dt_sb_appendf(&sb, "the compiler did not finish within %.3g s: ",
                          r->builder->timeout_s);
        else
            dt_sb_append(&sb, "the kernel does not compile: ");
        dt_sb_appendn(&sb, log, strnlen(log, COMPILE_LOG_KEEP));
        char *msg = dt_sb_take(&sb);
        results_set_all(results, 0, n,
                        br.status == DT_BUILD_TIMEOUT ? DT_TRIAL_COMPILE_TIMEOUT
                                                      : DT_TRIAL_COMPILE_ERROR,
                        msg ? msg : "the kernel does not compile");
        free(msg);
        dt_build_result_free(&br);
        return 0;
    }

    int next = 0;
    while (next < n) {
        int before = next;
        rc = run_child(r, batch, br.so_path, results, &next, e);
        if (rc) {
            char msg[DT_ERR_MSG_MAX + 32];
            snprintf(msg, sizeof msg, "not run: %s", e->msg);
            results_set_all(results, next, n, DT_TRIAL_WORKER_LOST, msg);
            dt_build_result_free(&br);
            return rc;
        }
        if (next <= before) /* cannot happen: every child settles a trial */
            next = before + 1;
    }
    dt_build_result_free(&br);
    return 0;
}

int dt_runner_build_many(const dt_runner *r, const dt_batch *const *batches, int n, dt_err *e)
{
    if (n <= 0)
        return 0;
    const char **src = calloc((size_t)n, sizeof *src);
    dt_build_result *res = calloc((size_t)n, sizeof *res);
    if (!src || !res) {
        free(src);
        free(res);
        return dt_errf(e, DT_ENOMEM, "out of memory building %d batches", n);
    }
    for (int i = 0; i < n; i++)
        src[i] = batches[i]->source ? batches[i]->source : "";
    int rc = dt_build_many(r->builder, src, n, 0, res, e);
    for (int i = 0; i < n; i++)
        dt_build_result_free(&res[i]);
    free(src);
    free(res);
    return rc;
}
