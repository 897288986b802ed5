#include "microkernel/build.h"
#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

void dt_hash_strings(const char *const *parts, int n, char out[65])
{
    crypto_generichash_state st;
    unsigned char h[32];
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    for (int i = 0; i < n; i++)
        crypto_generichash_update(&st, (const unsigned char *)parts[i], strlen(parts[i]) + 1);
    crypto_generichash_final(&st, h, sizeof h);
    sodium_bin2hex(out, 65, h, sizeof h);
}

const char *dt_build_status_name(dt_build_status s)
{
    switch (s) {
    case DT_BUILD_OK: return "ok";
    case DT_BUILD_COMPILE_ERROR: return "compile_error";
    case DT_BUILD_TIMEOUT: return "compile_timeout";
    default: return "system_error";
    }
}

void dt_build_result_free(dt_build_result *r)
{
    if (r) {
        free(r->log);
        r->log = NULL;
    }
}

/* mkdir -p */
static int make_dirs(const char *path, dt_err *e)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return dt_errf(e, DT_EIO, "cannot create %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return dt_errf(e, DT_EIO, "cannot create %s: %s", tmp, strerror(errno));
    return 0;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0)
        n = 0;
    if (n > 65536)
        n = 65536; /* the start of a compiler log says what matters */
    char *buf = malloc((size_t)n + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

/* Splits a flags string on spaces into argv entries (no quoting needed for
 * compiler flags); returns the count added. */
static int split_flags(char *flags, char **argv, int max)
{
    int n = 0;
    for (char *tok = strtok(flags, " \t"); tok && n < max; tok = strtok(NULL, " \t"))
        argv[n++] = tok;
    return n;
}

/* Spawns `cc flags -o out src` in its own process group with its output
 * going to log_path. */
static int spawn_cc(const dt_builder *b, const char *src, const char *out, const char *log_path,
                    pid_t *pid, dt_err *e)
{
    char flags[sizeof b->flags];
    snprintf(flags, sizeof flags, "%s", b->flags);
    char cc[sizeof b->cc];
    snprintf(cc, sizeof cc, "%s", b->cc);
    char *argv[80];
    int n = 0;
    argv[n++] = cc;
    n += split_flags(flags, argv + n, 70);
    argv[n++] = "-o";
    argv[n++] = (char *)out;
    argv[n++] = (char *)src;
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0); /* so a timeout kills cc1, as and ld too */
    int rc = posix_spawnp(pid, cc, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0)
        return dt_errf(e, DT_EIO, "cannot run compiler '%s': %s", b->cc, strerror(rc));
    return 0;
}

int dt_builder_init(dt_builder *b, const char *cc, const char *flags, const char *cache_dir,
                    dt_err *e)
{
    memset(b, 0, sizeof *b);
    if (sodium_init() < 0)
        return dt_errf(e, DT_EIO, "libsodium failed to initialise");
    const char *env_cc = getenv("CC");
    snprintf(b->cc, sizeof b->cc, "%s", cc ? cc : (env_cc && *env_cc) ? env_cc : "cc");
    snprintf(b->flags, sizeof b->flags, "%s", flags ? flags : DT_BUILD_DEFAULT_FLAGS);
    b->timeout_s = DT_BUILD_DEFAULT_TIMEOUT;
    const char *d = cache_dir ? cache_dir : getenv("DTUNE_CACHE_DIR");
    if (d && *d) {
        snprintf(b->cache_dir, sizeof b->cache_dir, "%s", d);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg)
            snprintf(b->cache_dir, sizeof b->cache_dir, "%s/dtune/kernels", xdg);
        else if (home && *home)
            snprintf(b->cache_dir, sizeof b->cache_dir, "%s/.cache/dtune/kernels", home);
        else
            snprintf(b->cache_dir, sizeof b->cache_dir, "/tmp/dtune-cache-%d/kernels",
                     (int)getuid());
    }
    if (strlen(b->cache_dir) >= sizeof b->cache_dir - 1)
        return dt_errf(e, DT_EINVAL, "cache directory path is too long (max %zu bytes)",
                       sizeof b->cache_dir - 2);
    int rc = make_dirs(b->cache_dir, e);
    if (rc)
        return rc;
    /* the compiler's identity is part of every cache key */
    char log[PATH_MAX + 64];
    snprintf(log, sizeof log, "%s/.version.%d.log", b->cache_dir, (int)getpid());
    char vflags[] = "--version";
    char *argv[] = {b->cc, vflags, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int src = posix_spawnp(&pid, b->cc, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    int st = 0;
    if (src != 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        unlink(log);
        return dt_errf(e, DT_EIO, "cannot run the C compiler '%s --version'%s%s", b->cc,
                       src ? ": " : "", src ? strerror(src) : "");
    }
    char *text = read_all(log);
    unlink(log);
    if (!text)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    text[strcspn(text, "\n")] = '\0';
    snprintf(b->cc_identity, sizeof b->cc_identity, "%s", text);
    free(text);
    return 0;
}

/* A build in flight. */
typedef struct {
    int index;
    pid_t pid;
    double started;
    char src[PATH_MAX], tmp_so[PATH_MAX], log[PATH_MAX];
} job;

static void set_paths(const dt_builder *b, const char *source, dt_build_result *r)
{
    const char *parts[] = {b->cc_identity, b->flags, source};
    dt_hash_strings(parts, 3, r->hash);
    snprintf(r->so_path, sizeof r->so_path, "%s/%s.so", b->cache_dir, r->hash);
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    ok &= fclose(f) == 0;
    return ok ? 0 : -1;
}

/* "cannot <what> <path>: <errno text>" as a system error. */
static void fail_result(dt_build_result *r, const char *what, const char *path)
{
    char msg[PATH_MAX + 256];
    snprintf(msg, sizeof msg, "cannot %s %s: %s", what, path, strerror(errno));
    r->status = DT_BUILD_SYSTEM_ERROR;
    r->log = strdup(msg);
}

/* Starts a build; on a cache hit or a failure to start, r is final and 0
 * is returned with j->pid == 0. */
static void start_job(const dt_builder *b, const char *source, job *j, dt_build_result *r)
{
    j->pid = 0;
    if (access(r->so_path, R_OK) == 0) {
        r->cache_hit = 1;
        r->status = DT_BUILD_OK;
        return;
    }
    /* unique temporary names: several processes may build the same kernel */
    unsigned tag = randombytes_random();
    snprintf(j->src, sizeof j->src, "%s/%s.%d.%08x.c", b->cache_dir, r->hash, (int)getpid(), tag);
    snprintf(j->tmp_so, sizeof j->tmp_so, "%s/%s.%d.%08x.so.tmp", b->cache_dir, r->hash,
             (int)getpid(), tag);
    snprintf(j->log, sizeof j->log, "%s/%s.%d.%08x.log", b->cache_dir, r->hash, (int)getpid(),
             tag);
    if (write_text(j->src, source) != 0) {
        fail_result(r, "write", j->src);
        unlink(j->src);
        return;
    }
    dt_err e;
    if (spawn_cc(b, j->src, j->tmp_so, j->log, &j->pid, &e)) {
        r->status = DT_BUILD_SYSTEM_ERROR;
        r->log = strdup(e.msg);
        j->pid = 0;
        unlink(j->src);
        return;
    }
    j->started = dt_now_s();
}

/* Turns a finished compiler process into a result and cleans up. */
static void finish_job(const dt_builder *b, job *j, int wstatus, int timed_out, dt_build_result *r)
{
    r->seconds = dt_now_s() - j->started;
    if (timed_out) {
        r->status = DT_BUILD_TIMEOUT;
        char msg[128];
        snprintf(msg, sizeof msg, "compiler killed after %.0f s", b->timeout_s);
        r->log = strdup(msg);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        if (rename(j->tmp_so, r->so_path) != 0) {
            fail_result(r, "publish", r->so_path);
        } else {
            char keep[PATH_MAX];
            snprintf(keep, sizeof keep, "%s/%s.c", b->cache_dir, r->hash);
            rename(j->src, keep); /* keep the source beside its build */
            r->status = DT_BUILD_OK;
        }
    } else {
        r->status = DT_BUILD_COMPILE_ERROR;
        r->log = read_all(j->log);
    }
    unlink(j->src);
    unlink(j->tmp_so);
    unlink(j->log);
}

int dt_build_many(const dt_builder *b, const char *const *sources, int n, int jobs,
                  dt_build_result *results, dt_err *e)
{
    if (jobs <= 0)
        jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1)
        jobs = 1;
    job *running = calloc((size_t)jobs, sizeof *running);
    if (!running)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        set_paths(b, sources[i], &results[i]);
    }
    int next = 0, active = 0;
    while (next < n || active > 0) {
        /* fill free slots */
        for (int s = 0; s < jobs && next < n; s++) {
            if (running[s].pid)
                continue;
            running[s].index = next;
            start_job(b, sources[next], &running[s], &results[next]);
            next++;
            if (running[s].pid)
                active++;
        }
        /* reap finished or overdue builds */
        int progressed = 0;
        for (int s = 0; s < jobs; s++) {
            job *j = &running[s];
            if (!j->pid)
                continue;
            int st = 0;
            pid_t w = waitpid(j->pid, &st, WNOHANG);
            int timed_out = 0;
            if (w == 0 && dt_now_s() - j->started > b->timeout_s) {
                kill(-j->pid, SIGKILL);
                waitpid(j->pid, &st, 0);
                timed_out = 1;
                w = j->pid;
            }
            if (w == j->pid || (w < 0 && errno == ECHILD)) {
                finish_job(b, j, st, timed_out, &results[j->index]);
                j->pid = 0;
                active--;
                progressed = 1;
            }
        }
        if (!progressed && active > 0) {
            dt_sleep_ms(2);
        }
    }
    free(running);
    return 0;
}

int dt_build_one(const dt_builder *b, const char *source, dt_build_result *r, dt_err *e)
{
    return dt_build_many(b, &source, 1, 1, r, e);
}
