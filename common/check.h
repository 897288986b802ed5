/* DT_ASSERT: an invariant that holds whatever the input (a bug if it does
 * not), checked in every build type — unlike assert(), which NDEBUG removes
 * and which stays for the costly checks only.
 *
 * Bad input is never an invariant: it is an error returned with a message
 * (common/error.h).  DT_ASSERT states what the code around it relies on —
 * a registry row consistent with its table, a box inside its domain, a
 * packed layout's size — where the cost is a compare or two.  When one is
 * broken the process prints where and why on stderr and aborts (a core to
 * debug, never a wrong schedule stored).
 *
 *   DT_ASSERT(b->kg >= 1, "a K group has at least one element");
 *
 * The message says the invariant in words; scripts/check_invariants.sh
 * counts them and refuses a DT_ASSERT without one. */
#ifndef DT_COMMON_CHECK_H
#define DT_COMMON_CHECK_H

_Noreturn void dt_assert_fail(const char *cond, const char *why, const char *file, int line,
                              const char *func);

#define DT_ASSERT(cond, why)                                                                   \
    do {                                                                                       \
        if (__builtin_expect(!(cond), 0))                                                      \
            dt_assert_fail(#cond, (why), __FILE__, __LINE__, __func__);                        \
    } while (0)

#endif
