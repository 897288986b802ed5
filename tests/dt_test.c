#include "tests/dt_test.h"

#include "common/clock.h"
#include "db/db.h"
#include "common/file.h"
#include "microkernel/codegen.h"
#include "microkernel/mk_op.h"
#include "microkernel/reference.h"
#include "space/annotation.h"
#include "backends/backend.h"
#include "dtypes/dtype.h"
#include "shape/model.h"
#include "shape/workload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The suite's skips: distinct reasons with their counts (a test binary is
 * one process, and CUnit runs its tests one after the other). */
enum { DT_TEST_MAX_SKIPS = 32 };
static struct {
    char why[200];
    int count;
} g_skips[DT_TEST_MAX_SKIPS];
static int g_nskips, g_skipped;

static void report_line(const char *kind, const char *a, const char *b, const char *c)
{
    const char *path = getenv("DTUNE_TEST_REPORT");
    if (!path || !*path)
        return;
    char line[600];
    int n = snprintf(line, sizeof line, "%s\t%s\t%s%s%s\n", kind, a, b, c ? "\t" : "",
                     c ? c : "");
    if (n <= 0)
        return;
    /* one write of a short line with O_APPEND: suites run in parallel */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    ssize_t w = write(fd, line, strlen(line));
    (void)w;
    close(fd);
}

static void count_skip(const char *why)
{
    g_skipped++;
    report_line("skip", program_invocation_short_name, why, NULL);
    for (int i = 0; i < g_nskips; i++)
        if (!strcmp(g_skips[i].why, why)) {
            g_skips[i].count++;
            return;
        }
    if (g_nskips < DT_TEST_MAX_SKIPS) {
        snprintf(g_skips[g_nskips].why, sizeof g_skips[0].why, "%s", why);
        g_skips[g_nskips++].count = 1;
    }
}

void dt_test_skip(const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    printf("\n    skipped: %s\n", why);
    count_skip(why);
}

void dt_test_backend(const char *name, const char *why)
{
    if (!why) {
        report_line("backend", name, "ran", NULL);
        return;
    }
    char what[200];
    snprintf(what, sizeof what, "back-end %s: %s", name, why);
    printf("\n    skipped: %s\n", what);
    count_skip(what);
    report_line("backend", name, "skipped", why);
}

void dt_test_isa_backends(const char *dtype, dt_isa top)
{
    char name[64], why[96];
    snprintf(why, sizeof why, "this CPU's target runs at most %s", dt_isa_name(top));
    for (int isa = 0; isa < DT_ISA_COUNT; isa++) {
        snprintf(name, sizeof name, "%s %s", dtype, dt_isa_name((dt_isa)isa));
        dt_test_backend(name, isa <= (int)top ? NULL : why);
    }
}

static void print_skips(void)
{
    printf("\n%s: skipped %d", program_invocation_short_name, g_skipped);
    for (int i = 0; i < g_nskips; i++) {
        printf("%s%s", i ? "; " : ": ", g_skips[i].why);
        if (g_skips[i].count > 1)
            printf(" (x%d)", g_skips[i].count);
    }
    printf("\n");
}

int dt_test_main(CU_SuiteInfo *suites)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    if (CU_register_suites(suites) != CUE_SUCCESS) {
        fprintf(stderr, "suite registration failed: %s\n", CU_get_error_msg());
        CU_cleanup_registry();
        return 2;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
    unsigned ran = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    print_skips();
    return (failed == 0 && ran > 0) ? 0 : 1;
}

char *dt_test_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/dtune-test-XXXXXX", (base && *base) ? base : "/tmp");
    if (!mkdtemp(tmpl))
        return NULL;
    return strdup(tmpl);
}

const char *dt_test_shared_kernel_cache(void)
{
    const char *d = getenv("DTUNE_TEST_KERNEL_CACHE");
    return (d && *d) ? d : NULL;
}

static char *tmpdir_with_cache(int may_share)
{
    char *dir = dt_test_tmpdir();
    if (!dir)
        return NULL;
    const char *shared = may_share ? dt_test_shared_kernel_cache() : NULL;
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    mkdir(cache, 0700);
    setenv("DTUNE_CACHE_DIR", shared ? shared : cache, 1);
    return dir;
}

char *dt_test_tmpdir_with_cache(void) { return tmpdir_with_cache(1); }
char *dt_test_tmpdir_with_private_cache(void) { return tmpdir_with_cache(0); }

int dt_test_for_each_file(const char *rel, void (*fn)(const char *path, void *ud), void *ud)
{
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/%s", DTUNE_SOURCE_DIR, rel);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int files = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) || !S_ISREG(st.st_mode))
            continue;
        fn(path, ud);
        files++;
    }
    closedir(d);
    return files;
}

int64_t dt_test_count_records(const char *path)
{
    dt_db *db = NULL;
    dt_err e;
    int64_t n = -1;
    if (access(path, F_OK) == 0 && dt_db_open(path, DT_DB_READONLY, &db, &e) == 0) {
        if (dt_db_measurement_count(db, NULL, &n, &e) != 0)
            n = -1;
        dt_db_close(db);
    }
    return n;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void dt_test_rmtree(const char *path)
{
    if (path)
        nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *dt_test_write_file(const char *dir, const char *name, const char *text)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

char *dt_test_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

int dt_test_run_dtune(dt_test_proc *p, const char *fmt, ...)
{
    char args[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char *dir = dt_test_tmpdir();
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s/out' 2>'%s/err' </dev/null", DTUNE_BIN, args, dir,
             dir);
    int st = system(cmd);
    if (st == -1)
        p->exit_code = -1;
    else if (WIFEXITED(st))
        p->exit_code = WEXITSTATUS(st);
    else
        p->exit_code = 128 + WTERMSIG(st);
    char path[4200];
    snprintf(path, sizeof path, "%s/out", dir);
    p->out = dt_test_slurp(path);
    snprintf(path, sizeof path, "%s/err", dir);
    p->err = dt_test_slurp(path);
    dt_test_rmtree(dir);
    free(dir);
    return p->exit_code;
}

void dt_test_proc_free(dt_test_proc *p)
{
    free(p->out);
    free(p->err);
    p->out = p->err = NULL;
}

json_t *dt_test_run_dtune_json(int *code, const char *args)
{
    dt_test_proc p;
    *code = dt_test_run_dtune(&p, "%s", args);
    json_error_t jerr;
    json_t *root = *code == 0 ? json_loads(p.out, 0, &jerr) : NULL;
    if (*code != 0)
        fprintf(stderr, "\n  dtune %s: exit %d: %s\n", args, *code, p.err);
    dt_test_proc_free(&p);
    return root;
}

int dt_test_check_curve(const json_t *curve, int64_t max_trials)
{
    if (!json_is_array(curve)) {
        fprintf(stderr, "\n  curve: not an array\n");
        return -1;
    }
    double el = 0;
    json_int_t tr = 0;
    size_t i;
    const json_t *p;
    json_array_foreach(curve, i, p) {
        const json_t *e = json_object_get(p, "elapsed_s"), *t = json_object_get(p, "trials");
        const char *w = json_string_value(json_object_get(p, "workload"));
        if (!json_is_number(e) || !json_is_integer(t) || !w || !*w ||
            json_integer_value(json_object_get(p, "round")) < 1 ||
            !json_object_get(p, "objective_ns") || !json_object_get(p, "model_latency_ns")) {
            fprintf(stderr, "\n  curve point %zu: a field is missing\n", i);
            return -1;
        }
        if (json_number_value(e) < el || json_integer_value(t) < tr ||
            json_integer_value(t) > max_trials) {
            fprintf(stderr, "\n  curve point %zu: %.3f s, %lld trials after %.3f s, %lld "
                            "(at most %lld)\n",
                    i, json_number_value(e), (long long)json_integer_value(t), el,
                    (long long)tr, (long long)max_trials);
            return -1;
        }
        el = json_number_value(e);
        tr = json_integer_value(t);
    }
    return (int)json_array_size(curve);
}

int dt_test_start_worker(const dt_test_worker_opts *o, pid_t *pid, char *target_key,
                         size_t key_size)
{
    const char *argv[32] = {DTUNE_BIN, "worker", "--listen", "127.0.0.1:0", "--token-file",
                            o->token_path};
    int argc = 6;
    for (int i = 0; o->extra_args && o->extra_args[i] && argc < 31; i++)
        argv[argc++] = o->extra_args[i];
    argv[argc] = NULL;
    int fd = open(o->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    *pid = fork();
    if (*pid < 0) {
        close(fd);
        *pid = 0;
        return -1;
    }
    if (*pid == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(fd, 2);
        if (o->log_level)
            setenv("DTUNE_LOG", o->log_level, 1);
        execv(DTUNE_BIN, (char *const *)argv);
        _exit(127);
    }
    close(fd);
    static const char ready[] = "dtune worker listening on 127.0.0.1:";
    double t0 = dt_now_s();
    for (;;) {
        char *log = dt_test_slurp(o->log_path);
        const char *at = strstr(log, ready);
        int port = -1;
        if (at) {
            char key[256] = "";
            int n = sscanf(at + strlen(ready), "%d (target %255[^)])", &port, key);
            if (n < 1 || port <= 0 || (target_key && n != 2))
                port = -1;
            else if (target_key)
                snprintf(target_key, key_size, "%s", key);
        }
        free(log);
        if (at)
            return port;
        if (waitpid(*pid, NULL, WNOHANG) == *pid) {
            *pid = 0;
            return -1;
        }
        if (dt_now_s() - t0 > o->timeout_s)
            return -1;
        dt_sleep_ms(50);
    }
}

void dt_test_signal_fd(int fd)
{
    char c = 1;
    if (write(fd, &c, 1) != 1)
        perror("dt_test_signal_fd");
}

bool dt_test_await_fd(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    return poll(&p, 1, 20000) == 1 && read(fd, &c, 1) == 1;
}

int dt_test_add_sampled_kernel(dt_db *db, const dt_target *tg, int sketch, uint64_t seed,
                               int64_t *id, dt_err *e)
{
    dt_rng r;
    dt_rng_seed(&r, seed);
    dt_annotation a;
    int rc = dt_annotation_sample(&r, tg, sketch, 1, &a, e);
    if (rc)
        return rc;
    char *ann = dt_annotation_to_string(&a);
    rc = dt_db_kernel_intern(db, "dense", dt_sketch_name(a.sketch), ann, NULL, id, e);
    free(ann);
    return rc;
}

static int kernel_setup(char **dir, dt_target *t, dt_builder *b, const char *flags, int may_share)
{
    dt_err e;
    *dir = dt_test_tmpdir();
    if (!*dir || dt_target_detect(t, &e))
        return 1;
    const char *shared = may_share ? dt_test_shared_kernel_cache() : NULL;
    return dt_builder_init(b, NULL, flags, shared ? shared : *dir, &e) ? 1 : 0;
}

int dt_test_kernel_setup(char **dir, dt_target *t, dt_builder *b, const char *flags)
{
    return kernel_setup(dir, t, b, flags, 1);
}

int dt_test_kernel_setup_private(char **dir, dt_target *t, dt_builder *b, const char *flags)
{
    return kernel_setup(dir, t, b, flags, 0);
}

void dt_test_amx_emulation(const dt_builder *b, const dt_target *t, dt_builder *emu,
                           dt_target *amx)
{
    *emu = *b;
    snprintf(emu->flags, sizeof emu->flags, "%.400s -DDT_AMX_EMULATE", b->flags);
    *amx = *t;
    amx->features |= DT_FEAT_BIT(DT_FEAT_AMX_TILE) | DT_FEAT_BIT(DT_FEAT_AMX_BF16) |
                     DT_FEAT_BIT(DT_FEAT_AMX_INT8);
    amx->cpu_features |= amx->features;
}

void dt_test_verify_dtype_sampled(dt_dtype d, const char *const *ops, int nops, int per,
                                  uint64_t seed, const dt_builder *b, const dt_target *t)
{
    dt_kernel_op *kops = calloc((size_t)(DT_SKETCH_COUNT * per), sizeof *kops);
    dt_annotation *anns = calloc((size_t)(DT_SKETCH_COUNT * per), sizeof *anns);
    CU_ASSERT_FATAL(kops && anns);
    int n = 0;
    dt_rng rng;
    dt_rng_seed(&rng, seed);
    dt_target dt = dt_dtype_target(d, t);
    for (int sk = 0; sk < DT_SKETCH_COUNT; sk++)
        for (int i = 0; i < per; i++) {
            dt_err e;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample_dtype(&rng, &dt, d, sk, 0, &anns[n], &e),
                                  0);
            kops[n] = dt_test_kop(ops[(i + sk * 3) % nops]);
            CU_ASSERT_EQUAL_FATAL(kops[n].dtype, d);
            CU_ASSERT_PTR_NOT_NULL(dt_backend_of_ann(d, &anns[n]));
            n++;
        }
    dt_test_build_and_verify(b, kops, anns, n, NULL);
    free(kops);
    free(anns);
}

int dt_test_verify_dtype_rows(dt_dtype d, const char *const *ops, int nops, int per,
                              uint64_t seed, const dt_builder *b, const dt_builder *emu,
                              const dt_target *t, const dt_target *amx,
                              dt_test_kernel_check check)
{
    int rows = 0;
    for (int i = 0; i < dt_backend_count(); i++) {
        const dt_backend *be = dt_backend_at(i);
        if (be->dtype != d)
            continue;
        rows++;
        char name[64];
        dt_backend_full_name(be, name, sizeof name);
        const int tiles = be->unit == DT_UNIT_AMX;
        dt_target rt = tiles ? *amx : *t;
        dt_target_set_isa(&rt, be->isa);
        const char *why = NULL;
        if (!dt_backend_isa_admits(t, be->isa))
            why = "the CPU's isa is below the row's";
        else if (!tiles)
            (void)dt_backend_usable(be, t, &why);
        char label[96];
        snprintf(label, sizeof label, "%s%s", name, tiles ? " emulated" : "");
        dt_test_backend(label, why);
        if (why)
            continue;
        dt_kernel_op *kops = calloc((size_t)(DT_SKETCH_COUNT * per), sizeof *kops);
        dt_annotation *anns = calloc((size_t)(DT_SKETCH_COUNT * per), sizeof *anns);
        CU_ASSERT_FATAL(kops && anns);
        int n = 0;
        dt_rng rng;
        dt_rng_seed(&rng, seed + (uint64_t)i);
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++)
            for (int j = 0; j < per; j++) {
                dt_err e;
                CU_ASSERT_EQUAL_FATAL(dt_annotation_sample_unit(&rng, &rt, be->unit, sk, 0,
                                                                &anns[n], &e), 0);
                CU_ASSERT_PTR_EQUAL(dt_backend_of_ann(d, &anns[n]), be);
                kops[n] = dt_test_kop(ops[(j + sk * 2 + i) % nops]);
                CU_ASSERT_EQUAL(kops[n].dtype, d);
                n++;
            }
        dt_test_build_and_verify(tiles ? emu : b, kops, anns, n, check);
        if (tiles) {
            const char *nwhy = NULL;
            int native = dt_backend_usable(be, t, &nwhy);
            snprintf(label, sizeof label, "%s native", name);
            dt_test_backend(label, native ? NULL : nwhy);
            if (native)
                dt_test_build_and_verify(b, kops, anns, n, check);
        }
        free(kops);
        free(anns);
    }
    return rows;
}

void dt_test_bf16_vector_kernel_json(const dt_target *t, char *buf, size_t n)
{
    dt_target bt = dt_dtype_target(DT_DTYPE_BF16, t);
    const dt_backend *geo = dt_backend_geometry(bt.isa);
    CU_ASSERT_PTR_NOT_NULL_FATAL(geo);
    snprintf(buf, n,
             "{\"sketch\":\"stream\",\"isa\":\"%s\",\"mr\":4,\"nr\":%d,\"kc\":0,\"mc\":0,"
             "\"nc\":%d,\"unroll\":1,\"prefetch\":0,\"store\":\"mask\",\"order\":\"m_inner\","
             "\"par\":\"n\",\"threads\":1}",
             dt_isa_name(bt.isa), 2 * geo->vec_floats, 4 * geo->vec_floats);
}

int dt_test_kernel_teardown(char **dir)
{
    dt_test_rmtree(*dir);
    free(*dir);
    *dir = NULL;
    return 0;
}

dt_kernel_op dt_test_kop(const char *key)
{
    dt_workload *w = NULL;
    dt_err e;
    dt_kernel_op k = {0};
    if (dt_workload_parse_key(key, &w, &e) == 0)
        k = dt_kernel_op_of_workload(w);
    else
        fprintf(stderr, "\n  %s: %s\n", key, e.msg);
    dt_workload_free(w);
    return k;
}

int dt_test_verify_boundaries(const dt_kernel *k, const dt_kernel_op *kop, const dt_annotation *a,
                              dt_err *e)
{
    const int64_t kc = a->kc > 0 ? a->kc : 48, mblk = a->mc > 0 ? a->mc : a->mr;
    const int64_t u4 = 4 * a->unroll; /* an unrolled step of int8's 4-k groups */
    const int64_t cases[][4] = {
        /* batch, M, N, K */
        {1, 1, a->nr, kc},
        {2, a->mr > 1 ? a->mr - 1 : 1, 2 * a->nr + 3, kc + u4 + 1},
        {3, 37, a->nr + 1, 2 * kc + 3},
        {2, 2 * mblk + 3, 3 * a->nr - 5 > 0 ? 3 * a->nr - 5 : 1, 13},
        {1, 5, 7, 1},
        {2, 2 * a->mr + 1, 17, 2 * kc + 2 * a->unroll + 1},
        {1, a->mr + 1, a->nr, 3 * u4 + 2},
        {1, 3, 2 * a->nr, 3 * u4 + 4},
        {1, 2 * a->mr, 5, kc + 7},
        {1, 3, 200, 9 * a->unroll + 7},
    };
    for (int t = 1; t <= 2; t++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            int rc = dt_verify_kernel(k, kop, cases[i][0], cases[i][1], cases[i][2],
                                      cases[i][3], t, 1000 + i, e);
            if (rc)
                return rc;
        }
    return 0;
}

char *dt_test_suite_dir;

int dt_test_suite_init(void)
{
    dt_test_suite_dir = dt_test_tmpdir();
    return dt_test_suite_dir ? 0 : 1;
}

int dt_test_suite_init_with_cache(void)
{
    dt_test_suite_dir = dt_test_tmpdir_with_cache();
    return dt_test_suite_dir ? 0 : 1;
}

int dt_test_suite_cleanup(void)
{
    dt_test_rmtree(dt_test_suite_dir);
    free(dt_test_suite_dir);
    dt_test_suite_dir = NULL;
    return 0;
}

const char *dt_test_path(const char *name)
{
    static char bufs[8][4096];
    static int next;
    char *p = bufs[next++ % 8];
    snprintf(p, sizeof bufs[0], "%s/%s", dt_test_suite_dir, name);
    return p;
}

dt_model *dt_test_load_model(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", DTUNE_SOURCE_DIR, rel);
    char *text;
    size_t len;
    dt_err e;
    if (dt_read_file(path, DT_MODEL_MAX_BYTES, &text, &len, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return NULL;
    }
    dt_model *m = NULL;
    if (dt_model_parse(text, len, rel, &m, &e))
        fprintf(stderr, "%s\n", e.msg);
    free(text);
    return m;
}

int dt_test_build_load(const dt_builder *b, const dt_kernel_op *kops, const dt_annotation *anns,
                       int n, dt_kernel *ks)
{
    char **src = calloc((size_t)n, sizeof *src);
    dt_build_result *res = calloc((size_t)n, sizeof *res);
    CU_ASSERT_FATAL(src && res);
    dt_err e;
    for (int i = 0; i < n; i++)
        CU_ASSERT_EQUAL_FATAL(dt_codegen(&kops[i], &anns[i], &src[i], &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_build_many(b, (const char *const *)src, n, 0, res, &e), 0);
    int loaded = 0;
    for (int i = 0; i < n; i++) {
        memset(&ks[i], 0, sizeof ks[i]);
        char *ann = dt_annotation_to_string(&anns[i]);
        char what[128];
        dt_kernel_op_describe(&kops[i], what, sizeof what);
        if (res[i].status != DT_BUILD_OK) {
            fprintf(stderr, "\n  build failed for %s %s:\n%.3000s\n", what, ann, res[i].log);
            CU_FAIL("build failed");
        } else if (dt_kernel_load(res[i].so_path, &ks[i], &e) != 0) {
            fprintf(stderr, "\n  load failed for %s %s: %s\n", what, ann, e.msg);
            CU_FAIL("load failed");
            memset(&ks[i], 0, sizeof ks[i]);
        } else {
            CU_ASSERT_PTR_EQUAL(ks[i].op, dt_mk_op_for(kops[i].op, kops[i].dtype, &anns[i]));
            CU_ASSERT_TRUE(dt_kernel_computes(&ks[i], &kops[i]));
            loaded++;
        }
        free(ann);
        free(src[i]);
        dt_build_result_free(&res[i]);
    }
    free(src);
    free(res);
    return loaded;
}

void dt_test_unload_all(dt_kernel *ks, int n)
{
    for (int i = 0; i < n; i++)
        if (ks[i].handle)
            dt_kernel_unload(&ks[i]);
}

void dt_test_build_and_verify(const dt_builder *b, const dt_kernel_op *kops,
                              const dt_annotation *anns, int n, dt_test_kernel_check check)
{
    dt_kernel *ks = calloc((size_t)n, sizeof *ks);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ks);
    dt_test_build_load(b, kops, anns, n, ks);
    for (int i = 0; i < n; i++) {
        if (!ks[i].handle)
            continue;
        char *ann = dt_annotation_to_string(&anns[i]);
        char what[128];
        dt_kernel_op_describe(&kops[i], what, sizeof what);
        if (getenv("DT_TEST_TRACE"))
            fprintf(stderr, "\n  verifying %s %s\n", what, ann);
        dt_err e;
        int rc = (check ? check : dt_test_verify_boundaries)(&ks[i], &kops[i], &anns[i], &e);
        if (rc)
            fprintf(stderr, "\n  %s %s: %s\n", what, ann, e.msg);
        CU_ASSERT_EQUAL(rc, 0);
        free(ann);
    }
    dt_test_unload_all(ks, n);
    free(ks);
}

int dt_test_verify_conv_shapes(const dt_kernel *k, const dt_kernel_op *kop,
                               const int64_t (*shapes)[DT_TEST_CONV_SHAPE], size_t n,
                               uint64_t seed, dt_err *e)
{
    for (int t = 1; t <= 2; t++)
        for (size_t i = 0; i < n; i++) {
            dt_kernel_op op = *kop;
            for (int x = 0; x < 4; x++) /* stride, pad, dilation, groups */
                op.attrs[x] = (int)shapes[i][7 + x];
            for (int x = 0; x < 8; x++) /* stride_w dilation_w pad_w pad_b pad_r, transpose
                                         * out_pad out_pad_w */
                op.attrs[5 + x] = (int)shapes[i][11 + x];
            int rc = dt_verify_kernel_dims(k, &op, shapes[i], t, seed + i, e);
            if (rc)
                return dt_err_prefix(e, "shape %zu", i);
        }
    return 0;
}

int dt_test_golden_attrs(const struct dt_op_desc *op, const int *attrs)
{
    for (int a = 0; a < op->nattrs; a++)
        if (!strcmp(op->attrs[a].name, "epilogue") && attrs[a] >= 6)
            return 0;
    return 1;
}
