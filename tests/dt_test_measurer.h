/* A measurement session for the selection suites (test_tuner,
 * test_select_budget).  Header-only and kept out of dt_test.c: dt_test.c is
 * also linked into test_libdtune, which has no tuner or measure library. */
#ifndef DT_TEST_MEASURER_H
#define DT_TEST_MEASURER_H

#include <stdio.h>
#include <string.h>

#include "tuner/measurer.h"

/* A session whose every trial fails at once (a runner that runs nothing):
 * which requests were made shows in the failure records; NULL (reported)
 * when it cannot open. */
static inline dt_measurer *dt_test_failing_measurer(dt_db *db, const dt_target *tg,
                                                    const char *tkey)
{
    dt_measurer_opts o;
    memset(&o, 0, sizeof o);
    o.min_time_s = 0.0005;
    o.runner_exe = "/bin/false";
    dt_measurer *m = NULL;
    dt_err e;
    if (dt_measurer_open(&o, db, tg, tkey, &m, &e)) {
        fprintf(stderr, "measurer: %s\n", e.msg);
        return NULL;
    }
    return m;
}

#endif
