/* shape/box: corners, membership and distance, the boxes of a run, and
 * the partition of a labelled shape set (checked shape by shape). */
#include <stdlib.h>
#include <string.h>

#include "shape/box.h"
#include "tests/dt_test.h"

static dt_workload *parse(const char *key)
{
    dt_workload *w = NULL;
    dt_err e;
    if (dt_workload_parse_key(key, &w, &e))
        CU_FAIL_FATAL(e.msg);
    return w;
}

static void test_corners_and_distance(void)
{
    dt_workload *w = parse("dense(M=b*s,N=32,K=32;b={1,2,4,8},s=1..6)");
    dt_box b;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_box_parse(w, "b=2,s=2", "b=8,s=4", &b, &e), 0);
    CU_ASSERT_EQUAL(b.lo[0], 1);
    CU_ASSERT_EQUAL(b.hi[0], 3);
    CU_ASSERT_EQUAL(b.lo[1], 1);
    CU_ASSERT_EQUAL(b.hi[1], 3);
    CU_ASSERT_EQUAL(dt_box_nshapes(w, &b), 9);
    char lo[64], hi[64];
    dt_box_format(w, &b, lo, sizeof lo, hi, sizeof hi);
    CU_ASSERT_STRING_EQUAL(lo, "b=2,s=2");
    CU_ASSERT_STRING_EQUAL(hi, "b=8,s=4");
    int64_t in[2] = {2, 2}, out[2] = {0, 5};
    CU_ASSERT_TRUE(dt_box_contains(w, &b, in));
    CU_ASSERT_EQUAL(dt_box_gap(w, &b, in), 0);
    CU_ASSERT_FALSE(dt_box_contains(w, &b, out));
    CU_ASSERT_EQUAL(dt_box_gap(w, &b, out), 1 + 2); /* one step in b, two in s */
    /* shapes of the box, in order, and back */
    int64_t prev = -1;
    for (int64_t j = 0; j < dt_box_nshapes(w, &b); j++) {
        int64_t s = dt_box_shape(w, &b, j), idx[DT_MAX_VARS];
        CU_ASSERT_TRUE(s > prev);
        prev = s;
        dt_box_split(w, s, idx);
        CU_ASSERT_TRUE(dt_box_contains(w, &b, idx));
        CU_ASSERT_EQUAL(dt_box_join(w, idx), s);
        CU_ASSERT_EQUAL(dt_box_position(w, &b, s), j);
    }
    CU_ASSERT_EQUAL(dt_box_position(w, &b, 0), -1);
    /* refusals: a reversed variable, a corner outside the set */
    CU_ASSERT_EQUAL(dt_box_parse(w, "b=2,s=4", "b=8,s=2", &b, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reversed in s"));
    CU_ASSERT_EQUAL(dt_box_parse(w, "b=3,s=1", "b=8,s=2", &b, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "not in the workload's shape set"));
    dt_workload_free(w);
}

/* Every shape of a..b in exactly one box, nothing else in any. */
static void check_run(const dt_workload *w, int64_t a, int64_t b)
{
    dt_box boxes[DT_BOX_RUN_MAX];
    int n = dt_box_from_run(w, a, b, boxes);
    CU_ASSERT_TRUE(n >= 1 && n <= 2 * w->nvars - 1 + (w->nvars == 0));
    for (int64_t s = 0; s < dt_workload_nshapes(w); s++) {
        int64_t idx[DT_MAX_VARS];
        dt_box_split(w, s, idx);
        int hits = 0;
        for (int i = 0; i < n; i++)
            hits += dt_box_contains(w, &boxes[i], idx);
        CU_ASSERT_EQUAL(hits, s >= a && s <= b);
    }
    for (int i = 1; i < n; i++)
        CU_ASSERT_TRUE(dt_box_before(w, &boxes[i - 1], &boxes[i]));
}

static void test_runs_become_boxes(void)
{
    dt_workload *w = parse("batch_matmul(B=h,M=seq,N=seq,K=c;c={8,16},h={1,2,4},seq=1..5)");
    int64_t ns = dt_workload_nshapes(w);
    CU_ASSERT_EQUAL_FATAL(ns, 30);
    for (int64_t a = 0; a < ns; a++)
        for (int64_t b = a; b < ns; b++)
            check_run(w, a, b);
    dt_workload_free(w);
    /* one variable: the run is the box */
    w = parse("dense(M=1..9,N=8,K=8)");
    dt_box b[DT_BOX_RUN_MAX];
    CU_ASSERT_EQUAL(dt_box_from_run(w, 2, 6, b), 1);
    CU_ASSERT_EQUAL(b[0].lo[0], 2);
    CU_ASSERT_EQUAL(b[0].hi[0], 6);
    dt_workload_free(w);
}

/* The partition of labels: disjoint boxes covering the set, one label each. */
static void check_partition(const dt_workload *w, const int *label)
{
    dt_box *boxes = NULL;
    int *lab = NULL, n = 0;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_box_partition(w, label, &boxes, &lab, &n, &e), 0);
    int64_t ns = dt_workload_nshapes(w);
    int *seen = calloc((size_t)ns, sizeof *seen);
    for (int i = 0; i < n; i++) {
        if (i > 0)
            CU_ASSERT_TRUE(dt_box_before(w, &boxes[i - 1], &boxes[i]));
        for (int64_t j = 0; j < dt_box_nshapes(w, &boxes[i]); j++) {
            int64_t s = dt_box_shape(w, &boxes[i], j);
            CU_ASSERT_EQUAL(seen[s], 0);
            seen[s] = 1;
            CU_ASSERT_EQUAL(label[s], lab[i]);
        }
    }
    for (int64_t s = 0; s < ns; s++)
        CU_ASSERT_EQUAL(seen[s], 1);
    free(seen);
    free(boxes);
    free(lab);
}

static void test_partition(void)
{
    /* one variable: exactly the runs */
    dt_workload *w = parse("dense(M=1..10,N=8,K=8)");
    int l1[10] = {0, 0, 1, 1, 1, 0, 2, 2, 0, 0};
    dt_box *boxes = NULL;
    int *lab = NULL, n = 0;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_box_partition(w, l1, &boxes, &lab, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 5);
    static const int64_t los[] = {0, 2, 5, 6, 8}, his[] = {1, 4, 5, 7, 9};
    for (int i = 0; i < n && i < 5; i++) {
        CU_ASSERT_EQUAL(boxes[i].lo[0], los[i]);
        CU_ASSERT_EQUAL(boxes[i].hi[0], his[i]);
    }
    free(boxes);
    free(lab);
    dt_workload_free(w);
    /* two variables: rectangles of one label merge into one box each */
    w = parse("dense(M=b*s,N=8,K=8;b=1..4,s=1..6)");
    int l2[24];
    for (int s = 0; s < 24; s++)
        l2[s] = (s / 6 >= 2) * 2 + (s % 6 >= 3); /* four quadrants */
    CU_ASSERT_EQUAL_FATAL(dt_box_partition(w, l2, &boxes, &lab, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 4);
    free(boxes);
    free(lab);
    check_partition(w, l2);
    dt_workload_free(w);
    /* random labels over three variables, few and many labels */
    w = parse("batch_matmul(B=h,M=seq,N=seq,K=c;c={8,16,32},h={1,2,4},seq=1..7)");
    int64_t ns = dt_workload_nshapes(w);
    int *l3 = malloc((size_t)ns * sizeof *l3);
    srand(7);
    for (int round = 0; round < 20; round++) {
        int k = 1 + round % 5;
        for (int64_t s = 0; s < ns; s++) /* runs of labels, so boxes grow */
            l3[s] = s > 0 && rand() % 4 ? l3[s - 1] : rand() % k;
        check_partition(w, l3);
    }
    free(l3);
    dt_workload_free(w);
    /* no variables: one box */
    w = parse("dense(M=4,N=8,K=8)");
    int l0[1] = {3};
    CU_ASSERT_EQUAL_FATAL(dt_box_partition(w, l0, &boxes, &lab, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(lab[0], 3);
    free(boxes);
    free(lab);
    dt_workload_free(w);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"corners, shapes, membership and distance", test_corners_and_distance},
        {"schema-2 runs become boxes (every run of a 3-variable set)", test_runs_become_boxes},
        {"partition: runs in 1-D, boxes of one label in n-D", test_partition},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"box", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
