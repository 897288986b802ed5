/* End-to-end: the real `dtune` binary — help, version, exit codes,
 * `dtune workloads` on the bundled BERT-base models, and `dtune query` /
 * `dtune export` on a damaged database and as another uid.  The schedules
 * are written with the db API; the damage is done with sqlite3 directly. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/target.h"
#include "db/db.h"
#include "microkernel/build.h"
#include "space/annotation.h"
#include "backends/backend.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

#define MODEL(name) DTUNE_SOURCE_DIR "/models/" name

static void test_version_and_help(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "--version"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "dtune " DTUNE_VERSION));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "--help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "Commands:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "Exit codes"));
    dt_test_proc_free(&p);
    static const char *cmds[] = {"info",  "workloads", "db",     "db init",
                                 "db stats", "bench", "measure", "worker"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "%s --help", cmds[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "Usage: dtune"));
        CU_ASSERT_STRING_EQUAL(p.err, "");
        dt_test_proc_free(&p);
    }
}

static void test_usage_errors(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "%s", ""), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "Usage"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "frobnicate"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "unknown command 'frobnicate'"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "--frob"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "expected one MODEL.json"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads --frob " MODEL("bert-base.json")), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--frob"));
    dt_test_proc_free(&p);
}

static void test_workloads_table(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads " MODEL("bert-base.json")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "model bert-base: 6 distinct workloads, 128 shapes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "dense(M=1..128,N=768,K=3072,epilogue=bias)"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(p.out, "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT;seq=1..128)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "expected work per model run"));
    dt_test_proc_free(&p);
}

static void test_workloads_json(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads --json --shapes " MODEL("bert-base-batched.json")), 0);
    json_error_t jerr;
    json_t *root = json_loads(p.out, 0, &jerr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(root, "model")), "bert-base-batched");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(root, "shapes")), 1024);
    json_t *wls = json_object_get(root, "workloads");
    CU_ASSERT_EQUAL_FATAL(json_array_size(wls), 6);
    json_t *qkv = json_array_get(wls, 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(qkv, "key")),
                           "dense(M=batch*seq,N=2304,K=768,epilogue=bias;batch=1..8,seq=1..128)");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(qkv, "count")), 12);
    json_t *shapes = json_object_get(qkv, "shape_set");
    CU_ASSERT_EQUAL_FATAL(json_array_size(shapes), 1024);
    double total = 0;
    size_t i;
    json_t *s;
    json_array_foreach(shapes, i, s) total += json_real_value(json_object_get(s, "weight"));
    CU_ASSERT_DOUBLE_EQUAL(total, 1.0, 1e-9);
    json_t *last = json_array_get(shapes, 1023);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(last, "dims"), "M")), 1024);
    /* max GFLOP of the QKV projection: 2*1024*2304*768 */
    double gmax = json_real_value(json_object_get(json_object_get(qkv, "gflop"), "max"));
    CU_ASSERT_DOUBLE_EQUAL(gmax, 2.0 * 1024 * 2304 * 768 * 1e-9, 1e-6);
    json_decref(root);
    dt_test_proc_free(&p);
}

static void test_workloads_bad_input(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads /nonexistent/model.json"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "/nonexistent/model.json"));
    dt_test_proc_free(&p);
    char *dir = dt_test_tmpdir();
    char *bad = dt_test_write_file(dir, "bad.json",
                                   "{\"name\": \"m\",\n \"ops\": [{\"op\": \"dense\", \"M\": \"seq\","
                                   " \"N\": 1, \"K\": 1}]}\n");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s'", bad), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "bad.json:2:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "unknown variable 'seq'"));
    CU_ASSERT_STRING_EQUAL(p.out, "");
    dt_test_proc_free(&p);
    char *garbage = dt_test_write_file(dir, "garbage.json", "\x01\x02 not json");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s'", garbage), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "malformed JSON"));
    dt_test_proc_free(&p);
    /* a directory where a model file belongs is bad input (2), not a runtime failure */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s'", dir), 2);
    CU_ASSERT(strstr(p.err, "is not a regular file") != NULL);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '%s' --db '%s/t.db' --trials 5", dir, dir), 2);
    CU_ASSERT(strstr(p.err, "is not a regular file") != NULL);
    dt_test_proc_free(&p);
    free(bad);
    free(garbage);
    dt_test_rmtree(dir);
    free(dir);
}

/* ---- dtune query and export on a tuned database --------------------------------- */

#define QKEY "dense(M=1..64,N=64,K=32)"
#define NOBODY 65534

static char g_tkey[DT_TARGET_KEY_MAX];

/* dir/name: a database with this machine's 1-thread schedule of QKEY:
 * M=1..16 -> kernel 1 (measured), M=17..64 -> kernel 2 (not measured).
 * Returns the malloc'ed path, NULL on failure. */
static char *make_tuned_db(const char *dir, const char *name)
{
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    dt_err e;
    dt_target tg;
    dt_workload *w = NULL;
    dt_db *db = NULL;
    int64_t wid, tid, k1, k2;
    int rc;
    if ((rc = dt_target_detect(&tg, &e)) ||
        (rc = dt_target_key(&tg, g_tkey, sizeof g_tkey)) ||
        (rc = dt_workload_parse_key(QKEY, &w, &e)) ||
        (rc = dt_db_open(path, DT_DB_CREATE, &db, &e)))
        goto out;
    char *ss = dt_workload_shape_set_json(w);
    rc = dt_db_workload_upsert(db, QKEY, "dense", ss, &wid, &e);
    free(ss);
    if (rc || (rc = dt_db_target_upsert(db, g_tkey, dt_isa_name(tg.isa), NULL, &tid, &e)) ||
        (rc = dt_test_add_sampled_kernel(db, &tg, DT_SKETCH_STREAM, 1, &k1, &e)) ||
        (rc = dt_test_add_sampled_kernel(db, &tg, DT_SKETCH_BLOCKED, 2, &k2, &e)))
        goto out;
    dt_db_schedule rows[] = {
        {.shape_lo = "M=1", .shape_hi = "M=16", .kernel_id = k1, .predicted_ns = 100,
         .measured_ns = 110},
        {.shape_lo = "M=17", .shape_hi = "M=64", .kernel_id = k2, .predicted_ns = 300,
         .measured_ns = NAN},
    };
    rc = dt_db_schedule_replace(db, wid, tid, 1, rows, 2, &e);
    if (rc == DT_OK && (k1 != 1 || k2 != 2))
        rc = dt_errf(&e, DT_EINVAL, "kernel ids %lld, %lld", (long long)k1, (long long)k2);
out:
    if (rc)
        fprintf(stderr, "fixture %s: %s\n", path, e.msg);
    dt_db_close(db);
    dt_workload_free(w);
    if (rc) {
        free(path);
        return NULL;
    }
    return path;
}

/* Damage done with plain sqlite3, as a broken tool or a disk would. */
static void tamper(const char *path, const char *sql)
{
    sqlite3 *s;
    CU_ASSERT_FATAL(sqlite3_open(path, &s) == SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);
}

/* A range without a measured time says so, in text and as JSON null. */
static void test_query_not_measured(void)
{
    char *dir = dt_test_tmpdir();
    char *db = make_tuned_db(dir, "t.db");
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" QKEY "' --db '%s' --threads 1 --shape M=3 "
                                          "--shape M=40", db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "predicted 0.10 us, measured 0.11 us (range means)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "predicted 0.30 us, not measured (range means)"));
    CU_ASSERT_PTR_NULL(strstr(p.out, "nan"));
    CU_ASSERT_PTR_NULL(strstr(p.out, "annotation ?"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "\n  backend    f32/"));
    dt_test_proc_free(&p);
    char args[8192];
    snprintf(args, sizeof args, "query '" QKEY "' --db '%s' --shape M=40 --json", db);
    int code;
    json_t *root = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    json_t *o = json_array_get(root, 0);
    CU_ASSERT_TRUE(json_is_null(json_object_get(o, "measured_ns")));
    CU_ASSERT_TRUE(json_is_real(json_object_get(o, "predicted_ns")));
    CU_ASSERT_TRUE(json_is_object(json_object_get(o, "annotation")));
    /* the back-end is the row the stored annotation names for f32 */
    dt_annotation a;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_annotation_from_json(json_object_get(o, "annotation"), &a, &e), 0);
    const dt_backend *row = dt_backend_of_ann(DT_DTYPE_F32, &a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    char want[48];
    dt_backend_full_name(row, want, sizeof want);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(o, "backend")), want);
    json_decref(root);
    free(db);
    dt_test_rmtree(dir);
    free(dir);
}

/* A damaged kernels table: exit 2 naming the kernel and what is wrong. */
static void test_query_damaged(void)
{
    char *dir = dt_test_tmpdir();
    char *db = make_tuned_db(dir, "t.db");
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    dt_test_proc p;
    /* a damaged stored row is exit 3 (runtime), not 2: the caller's input
     * is fine (issue 42, defect 4's rule) */
    tamper(db, "UPDATE kernels SET annotation = '{\"MR\": 6' WHERE id = 1");
    const char *json[] = {"", " --json"};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" QKEY "' --db '%s' --shape M=3%s", db,
                                          json[i]), 3);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "is damaged"));
        CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "dtune db check"));
        CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "kernel 1"));
        CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "annotation is not JSON"));
        CU_ASSERT_STRING_EQUAL(p.out, "");
        dt_test_proc_free(&p);
    }
    /* valid JSON, but not an annotation */
    tamper(db, "UPDATE kernels SET annotation = '{\"MR\": \"six\"}' WHERE id = 1");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" QKEY "' --db '%s' --shape M=3", db), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "is damaged"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "kernel 1"));
    dt_test_proc_free(&p);
    /* the other range's kernel is intact */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" QKEY "' --db '%s' --shape M=40", db), 0);
    dt_test_proc_free(&p);
    /* a kernel the schedule names is gone */
    tamper(db, "DELETE FROM kernels WHERE id = 2");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" QKEY "' --db '%s' --shape M=40", db), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "names kernel 2, which is not in its kernels table"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "M=17 .. M=64"));
    dt_test_proc_free(&p);
    free(db);
    dt_test_rmtree(dir);
    free(dir);
}

/* ---- a schema-1 file of the previous dtune (tests/data/v1/README.md) ------- */

#define V1_TARGET "x86_64-avx512-2c-32K.1M.32M"
#define V1_GELU "dense(M=1..8,N=32,K=32,epilogue=bias+gelu)"

/* dt_hash_strings of text with "dtune kernel <id> ====" as "dtune kernel  ====":
 * a kernel's id is the one thing the migration may change in an export. */
static void export_hash(char *text, char out[65])
{
    char *p = text, *q = text;
    while (*p) {
        if (!strncmp(p, "dtune kernel ", 13)) {
            memmove(q, p, 13);
            q += 13;
            p += 13;
            char *d = p;
            while (*d >= '0' && *d <= '9')
                d++;
            if (d > p && !strncmp(d, " ====", 5))
                p = d;
            continue;
        }
        *q++ = *p++;
    }
    *q = 0;
    const char *t = text;
    dt_hash_strings(&t, 1, out);
}

static void test_v1_migration(void)
{
    char *dir = dt_test_tmpdir();
    char db[4096], cmd[8192 + 256];
    snprintf(db, sizeof db, "%s/v1.db", dir);
    snprintf(cmd, sizeof cmd, "cp '%s/tests/data/v1/v1.db' '%s'", DTUNE_SOURCE_DIR, db);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    dt_test_proc p;
    /* read-only commands refuse it and say how to migrate */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" V1_GELU "' --db '%s' --shape M=1 --target "
                                          V1_TARGET, db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "dtune db init"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db init --db '%s'", db), 0);
    char migrated[64];
    snprintf(migrated, sizeof migrated, "from schema 1 to %d", DT_DB_SCHEMA_VERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, migrated));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db init --db '%s'", db), 0); /* and it checks out */
    snprintf(migrated, sizeof migrated, "up to date (schema %d)", DT_DB_SCHEMA_VERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, migrated));
    dt_test_proc_free(&p);

    /* export writes what v1 wrote (kernel ids aside) */
    char path[4096], line[512];
    /* exports-now.txt: v1's exports as this dtune writes them (the templates
     * became dtype-generic after v1; exports.txt keeps v1's own hashes) */
    snprintf(path, sizeof path, "%s/tests/data/v1/exports-now.txt", DTUNE_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *ext = strchr(line, ' '), *want;
        CU_ASSERT_FATAL(ext != NULL);
        *ext++ = 0;
        want = strchr(ext, ' ');
        CU_ASSERT_FATAL(want != NULL);
        *want++ = 0;
        char c_file[4096 + 16];
        snprintf(c_file, sizeof c_file, "%s/ex%d.c", dir, n / 2 + 1);
        if (*ext == 'c') {
            CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "export '%s' -o '%s' --db '%s' --target "
                                                  V1_TARGET, line, c_file, db), 0);
            dt_test_proc_free(&p);
        } else {
            c_file[strlen(c_file) - 1] = 'h';
        }
        char *text = dt_test_slurp(c_file), hash[65];
        export_hash(text, hash);
        if (strcmp(hash, want)) /* for tests/data/v1/README.md's refresh */
            fprintf(stderr, "\n  exports-now: %s -> %s\n", want, hash);
        CU_ASSERT_STRING_EQUAL(hash, want);
        free(text);
        n++;
    }
    fclose(f);
    CU_ASSERT_EQUAL(n, 6);

    /* query: v1's kernel 8 served both epilogues at M=1; the gelu workload
     * now has its own row (32), with kernel 8's sketch and annotation */
    json_t *k8 = NULL;
    const char *keys[] = {"dense(M=1..8,N=32,K=32)", V1_GELU};
    for (int i = 0; i < 2; i++) {
        int code;
        snprintf(cmd, sizeof cmd, "query '%s' --db '%s' --shape M=1 --json --target " V1_TARGET,
                 keys[i], db);
        json_t *q = dt_test_run_dtune_json(&code, cmd);
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        json_t *r = json_array_get(q, 0);
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(r, "kernel_id")), i ? 32 : 8);
        if (i == 0)
            k8 = json_incref(json_object_get(r, "annotation"));
        else
            CU_ASSERT(json_equal(k8, json_object_get(r, "annotation")));
        json_decref(q);
    }
    json_decref(k8);
    dt_test_rmtree(dir);
    free(dir);
}

/* Runs `dtune ARGS...` as uid with stdout/stderr into out/err (written by
 * this process, before the switch); returns the exit code. */
static int run_dtune_as(uid_t uid, const char *out, const char *err, const char *const *args)
{
    const char *argv[16] = {DTUNE_BIN};
    int n = 1;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fo, 1);
        dup2(fe, 2);
        if (setgroups(0, NULL) || setgid((gid_t)uid) || setuid(uid))
            _exit(99);
        execv(DTUNE_BIN, (char *const *)argv);
        _exit(98);
    }
    close(fo);
    close(fe);
    int st = -1;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool exists(const char *dir, const char *name)
{
    char p[8192];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

/* The case: the store in its owner's 0755 directory (root here),
 * `dtune query` and `dtune export` run by another uid. */
static void test_query_export_other_uid(void)
{
    if (geteuid() != 0) {
        dt_test_skip("switching uids needs root");
        return;
    }
    char *dir = dt_test_tmpdir();
    CU_ASSERT_EQUAL_FATAL(chmod(dir, 0755), 0);
    char svc[4200], out[4300], err[4300], outdir[4300], c_file[4400];
    snprintf(svc, sizeof svc, "%s/svc", dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(svc, 0755), 0);
    CU_ASSERT_EQUAL_FATAL(chmod(svc, 0755), 0);
    char *db = make_tuned_db(svc, "t.db");
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(outdir, sizeof outdir, "%s/export", dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(outdir, 0755), 0);
    CU_ASSERT_EQUAL_FATAL(chown(outdir, NOBODY, NOBODY), 0);
    snprintf(c_file, sizeof c_file, "%s/small.c", outdir);

    const char *query[] = {"query", QKEY, "--db", db, "--threads", "1", "--shape", "M=3",
                           "--shape", "M=40", NULL};
    int rc = run_dtune_as(NOBODY, out, err, query);
    char *o = dt_test_slurp(out), *er = dt_test_slurp(err);
    if (rc)
        fprintf(stderr, "\n  dtune query as uid %d: exit %d: %s", NOBODY, rc, er);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(o, QKEY " M=3 -> kernel 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o, QKEY " M=40 -> kernel 2"));
    free(o);
    free(er);

    const char *export[] = {"export", QKEY, "-o", c_file, "--db", db, NULL};
    rc = run_dtune_as(NOBODY, out, err, export);
    er = dt_test_slurp(err);
    if (rc)
        fprintf(stderr, "\n  dtune export as uid %d: exit %d: %s", NOBODY, rc, er);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_TRUE(exists(outdir, "small.c") && exists(outdir, "small.h"));
    free(er);
    /* nothing created beside the database */
    CU_ASSERT_FALSE(exists(svc, "t.db-wal"));
    CU_ASSERT_FALSE(exists(svc, "t.db-shm"));

    /* the database is the owner's alone: exit 3 with the reason */
    CU_ASSERT_EQUAL_FATAL(chmod(db, 0600), 0);
    rc = run_dtune_as(NOBODY, out, err, query);
    er = dt_test_slurp(err);
    CU_ASSERT_EQUAL(rc, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(er, "Permission denied"));
    CU_ASSERT_PTR_NULL(strstr(er, "not a dtune database"));
    free(er);
    free(db);
    dt_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"--version and --help of every command", test_version_and_help},
        {"usage errors exit 1", test_usage_errors},
        {"workloads: BERT-base table", test_workloads_table},
        {"workloads: JSON with shapes", test_workloads_json},
        {"workloads: bad input exits 2", test_workloads_bad_input},
        {"query: a range not measured says so", test_query_not_measured},
        {"query: a damaged kernels table exits 2 naming the kernel", test_query_damaged},
        {"query and export as another uid without write access", test_query_export_other_uid},
        {"a schema-1 file of the previous dtune: db init, export, query", test_v1_migration},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e cli", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
