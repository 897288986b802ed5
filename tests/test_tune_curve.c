/* The tuning curve (tuner/curve.h): a point per round event, other events
 * ignored; thinned to at most DT_CURVE_MAX points with the first and the
 * newest kept and time order preserved; JSON out and back (a resumed
 * daemon job), points of unknown workloads skipped; a resumed run's
 * offset added to its times. */
#include <math.h>
#include <string.h>

#include "dt_test.h"
#include "tuner/curve.h"

static void fake_tasks(dt_task *t, int n)
{
    memset(t, 0, (size_t)n * sizeof *t);
    for (int i = 0; i < n; i++) {
        snprintf(t[i].name, sizeof t[i].name, "w%d", i);
        t[i].objective = INFINITY;
    }
}

/* round r of task i at time s with trials n */
static dt_tune_event round_ev(dt_task *t, int i, double s, int64_t n)
{
    t[i].rounds++;
    t[i].objective = 1000.0 / t[i].rounds;
    return (dt_tune_event){.kind = DT_TUNE_EV_ROUND, .task = &t[i], .task_index = i,
                           .elapsed_s = s, .trials_used = n, .model_latency_ns = 2 * t[i].objective};
}

static void test_points(void)
{
    dt_task t[2];
    fake_tasks(t, 2);
    dt_tune_curve c;
    dt_tune_curve_init(&c);
    dt_tune_event ev = round_ev(t, 0, 0.5, 10);
    CU_ASSERT_EQUAL(dt_tune_curve_add(&c, &ev), 0);
    ev = round_ev(t, 1, 1.0, 20);
    CU_ASSERT_EQUAL(dt_tune_curve_add(&c, &ev), 0);
    dt_tune_event sel = {.kind = DT_TUNE_EV_SELECTED, .task = &t[0]};
    CU_ASSERT_EQUAL(dt_tune_curve_add(&c, &sel), 0);
    CU_ASSERT_EQUAL(c.n, 2);
    json_t *a = dt_tune_curve_json(&c, t, 2);
    CU_ASSERT_EQUAL_FATAL(dt_test_check_curve(a, 20), 2);
    json_t *p = json_array_get(a, 1);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(p, "workload")), "w1");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(p, "round")), 1);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(p, "objective_ns")), 1000, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(p, "model_latency_ns")), 2000, 1e-9);

    /* back from JSON into a resumed run: the old points, then the new ones
     * shifted by the earlier runs' time; a point naming another workload
     * and a malformed one are skipped */
    json_array_append_new(a, json_pack("{s:f, s:i, s:s, s:i}", "elapsed_s", 1.5, "trials", 25,
                                       "workload", "gone", "round", 1));
    json_array_append_new(a, json_pack("{s:s}", "workload", "w0"));
    dt_tune_curve r;
    dt_tune_curve_init(&r);
    r.offset_s = 2.0;
    dt_tune_curve_load_json(&r, a, t, 2);
    CU_ASSERT_EQUAL(r.n, 2);
    ev = round_ev(t, 0, 0.25, 30);
    CU_ASSERT_EQUAL(dt_tune_curve_add(&r, &ev), 0);
    CU_ASSERT_EQUAL(r.n, 3);
    CU_ASSERT_DOUBLE_EQUAL(r.p[2].elapsed_s, 2.25, 1e-12);
    CU_ASSERT_EQUAL(r.p[2].round, 2);
    json_t *b = dt_tune_curve_json(&r, t, 2);
    CU_ASSERT_EQUAL(dt_test_check_curve(b, 30), 3);
    /* null objectives (infinite: nothing measured yet) survive the trip */
    r.p[0].objective_ns = INFINITY;
    json_decref(b);
    b = dt_tune_curve_json(&r, t, 2);
    CU_ASSERT_TRUE(json_is_null(json_object_get(json_array_get(b, 0), "objective_ns")));
    dt_tune_curve q;
    dt_tune_curve_init(&q);
    dt_tune_curve_load_json(&q, b, t, 2);
    CU_ASSERT_EQUAL(q.n, 3);
    CU_ASSERT_TRUE(isnan(q.p[0].objective_ns));
    dt_tune_curve_free(&q);
    json_decref(a);
    json_decref(b);
    dt_tune_curve_free(&r);
    dt_tune_curve_free(&c);
}

static void test_thinning(void)
{
    dt_task t[1];
    fake_tasks(t, 1);
    dt_tune_curve c;
    dt_tune_curve_init(&c);
    int total = 5 * DT_CURVE_MAX + 3;
    for (int i = 0; i < total; i++) {
        dt_tune_event ev = round_ev(t, 0, 0.1 * i, 4 * (int64_t)i);
        CU_ASSERT_EQUAL_FATAL(dt_tune_curve_add(&c, &ev), 0);
        CU_ASSERT_FATAL(c.n <= DT_CURVE_MAX);
    }
    CU_ASSERT(c.n >= DT_CURVE_MAX / 4);
    CU_ASSERT_EQUAL(c.p[0].round, 1);
    CU_ASSERT_EQUAL(c.p[c.n - 1].round, total);
    for (size_t i = 1; i < c.n; i++)
        CU_ASSERT_FATAL(c.p[i].elapsed_s > c.p[i - 1].elapsed_s);
    json_t *a = dt_tune_curve_json(&c, t, 1);
    CU_ASSERT_EQUAL(dt_test_check_curve(a, 4 * (int64_t)total), (int)c.n);
    json_decref(a);
    dt_tune_curve_free(&c);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"points per round; JSON out and back; a resumed run's offset", test_points},
        {"thinned past DT_CURVE_MAX: first and newest kept, in order", test_thinning},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"tune curve", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
