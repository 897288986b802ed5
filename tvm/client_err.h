/* The TVM client's errors, in libdtune's style (include/dtune/dtune.h,
 * "Conventions"): a call returns a DTUNE_E* code and leaves its message
 * in a thread-local buffer, dt_tvm_errmsg(); client.c then raises it as a
 * TVM error.  A failed libdtune call's message is carried over as it is. */
#ifndef DTUNE_TVM_CLIENT_ERR_H
#define DTUNE_TVM_CLIENT_ERR_H

/* Sets the calling thread's message; returns code (a DTUNE_E*). */
int dt_tvm_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The calling thread's message of its last failed client call; never NULL. */
const char *dt_tvm_errmsg(void);

#endif
