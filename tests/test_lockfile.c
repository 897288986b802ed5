/* common/lockfile.c: the lock DB.lock also locks the database file itself,
 * so that every name of one file — a hard link, a symbolic link, a path
 * spelled differently — maps to one lock (issue 27: a daemon on a hard link
 * of a running daemon's database started, and a job was lost). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/lockfile.h"
#include "tests/dt_test.h"

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* In a child process (another daemon): 0 when acquiring lock is refused
 * with DT_EBUSY naming pid `holder`. */
static int refused_in_child(const char *lock, long holder)
{
    pid_t child = fork();
    if (child == 0) {
        dt_lockfile *c = NULL;
        dt_lock_holder h;
        dt_err e = {0};
        int rc = dt_lockfile_acquire(lock, &c, &h, &e);
        char want[64];
        snprintf(want, sizeof want, "pid %ld", holder);
        if (rc != DT_EBUSY || h.pid != holder || !strstr(e.msg, want))
            fprintf(stderr, "child: rc %d, holder %ld, %s\n", rc, h.pid, e.msg);
        _exit(rc == DT_EBUSY && h.pid == holder && strstr(e.msg, want) ? 0 : 1);
    }
    int st = 0;
    waitpid(child, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

static void test_one_file_many_names(void)
{
    char *dir = dt_test_tmpdir();
    char *db = path_in(dir, "db.db"), *lock = path_in(dir, "db.db.lock");
    char *hard = path_in(dir, "other.db"), *hard_lock = path_in(dir, "other.db.lock");
    char *sym = path_in(dir, "link.db"), *sym_lock = path_in(dir, "link.db.lock");
    char *sub = path_in(dir, "sub");
    CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0755), 0);
    char *far = path_in(sub, "far.db"), *far_lock = path_in(sub, "far.db.lock");
    FILE *f = fopen(db, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("SQLite format 3", f);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(link(db, hard), 0);
    CU_ASSERT_EQUAL_FATAL(symlink("db.db", sym), 0);
    CU_ASSERT_EQUAL_FATAL(link(db, far), 0);

    dt_lockfile *l = NULL, *l2 = NULL;
    dt_lock_holder h;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_lockfile_acquire(lock, &l, NULL, &e), 0);
    /* another daemon on each other name of the file is refused, told the pid */
    CU_ASSERT_EQUAL(refused_in_child(lock, (long)getpid()), 0);
    CU_ASSERT_EQUAL(refused_in_child(hard_lock, (long)getpid()), 0);
    CU_ASSERT_EQUAL(refused_in_child(sym_lock, (long)getpid()), 0);
    CU_ASSERT_EQUAL(refused_in_child(far_lock, (long)getpid()), 0);
    /* in this process too (another open file description) */
    CU_ASSERT_EQUAL(dt_lockfile_acquire(hard_lock, &l2, &h, &e), DT_EBUSY);
    CU_ASSERT_EQUAL(h.pid, (long)getpid());
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "under another name"));
    /* released: any name takes it */
    dt_lockfile_release(l);
    CU_ASSERT_EQUAL_FATAL(dt_lockfile_acquire(hard_lock, &l2, NULL, &e), 0);
    CU_ASSERT_EQUAL(refused_in_child(lock, (long)getpid()), 0);
    CU_ASSERT_EQUAL(refused_in_child(sym_lock, (long)getpid()), 0);
    dt_lockfile_release(l2);
    CU_ASSERT_EQUAL_FATAL(dt_lockfile_acquire(sym_lock, &l2, NULL, &e), 0);
    dt_lockfile_release(l2);

    /* a holder killed with SIGKILL leaves no lock on any name; the child
     * says it holds the lock through a pipe (polling for it instead raced:
     * the parent's probe could hold the lock just when the child tried) */
    int ready[2];
    CU_ASSERT_EQUAL_FATAL(pipe(ready), 0);
    pid_t child = fork();
    if (child == 0) {
        close(ready[0]);
        dt_lockfile *c = NULL;
        if (dt_lockfile_acquire(far_lock, &c, NULL, NULL) == 0) {
            if (write(ready[1], "1", 1) != 1)
                _exit(1);
            pause();
        }
        _exit(1);
    }
    close(ready[1]);
    char byte = 0;
    CU_ASSERT_EQUAL(read(ready[0], &byte, 1), 1);
    close(ready[0]);
    int held = dt_lockfile_acquire(lock, &l2, &h, &e) == DT_EBUSY && h.pid == (long)child;
    if (!held) {
        dt_lockfile_release(l2);
        l2 = NULL;
    }
    CU_ASSERT_TRUE(held);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CU_ASSERT_EQUAL(dt_lockfile_acquire(lock, &l2, NULL, &e), 0);
    dt_lockfile_release(l2);

    dt_test_rmtree(dir);
    free(dir), free(db), free(lock), free(hard), free(hard_lock), free(sym), free(sym_lock);
    free(sub), free(far), free(far_lock);
}

/* A database not created yet: a symbolic link to it and its own name are
 * one lock once the first daemon holds it (the file is made empty, as the
 * daemon's open would make it). */
static void test_missing_database(void)
{
    char *dir = dt_test_tmpdir();
    char *db = path_in(dir, "new.db"), *lock = path_in(dir, "new.db.lock");
    char *sym = path_in(dir, "alias.db"), *sym_lock = path_in(dir, "alias.db.lock");
    CU_ASSERT_EQUAL_FATAL(symlink("new.db", sym), 0);
    dt_lockfile *l = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_lockfile_acquire(sym_lock, &l, NULL, &e), 0);
    struct stat sb;
    CU_ASSERT_EQUAL(stat(db, &sb), 0);
    CU_ASSERT_EQUAL(sb.st_size, 0);
    CU_ASSERT_EQUAL(refused_in_child(lock, (long)getpid()), 0);
    dt_lockfile_release(l);
    /* a lock file not named NAME.lock locks only itself */
    char *plain = path_in(dir, "plain-lock");
    CU_ASSERT_EQUAL(dt_lockfile_acquire(plain, &l, NULL, &e), 0);
    dt_lockfile_release(l);
    char *nothing = path_in(dir, "plain-");
    CU_ASSERT_NOT_EQUAL(stat(nothing, &sb), 0);
    dt_test_rmtree(dir);
    free(dir), free(db), free(lock), free(sym), free(sym_lock), free(plain), free(nothing);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"one lock for a hard link, a symbolic link, another directory", test_one_file_many_names},
        {"a database not yet created, through a symbolic link", test_missing_database},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"lockfile", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
