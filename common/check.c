/* dt_assert_fail (common/check.h). */
#include "common/check.h"

#include <stdio.h>
#include <stdlib.h>

void dt_assert_fail(const char *cond, const char *why, const char *file, int line,
                    const char *func)
{
    /* stderr directly: the logger may be what is broken */
    fprintf(stderr, "dtune: invariant broken at %s:%d (%s): %s — %s\n", file, line, func, cond,
            why ? why : "");
    fflush(stderr);
    abort();
}
