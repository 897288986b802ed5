/* AMX tiles and the operating system.
 *
 * Linux enables AMX tile data (XSAVE component 18, XTILEDATA) in XCR0 for the
 * whole system, but a process may only execute tile instructions after it
 * has asked for the permission:
 *     arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
 * (Linux >= 5.16; Documentation/arch/x86/xstate.rst).  Without it the first
 * tile instruction kills the process with SIGILL.  The permission belongs to
 * the process (every thread, present and future, may then use tiles; each
 * thread gets its own tile state, allocated on its first tile instruction);
 * it survives fork() and is dropped by execve(), so a program that runs
 * kernels in a child it exec's must request it again there.
 *
 * dt_amx_request asks once per process and remembers the answer; it is
 * thread-safe and cheap after the first call, so every thread about to use
 * tiles may (and should) call it.  docs/targets.md ("AMX"). */
#ifndef DT_COMMON_AMX_H
#define DT_COMMON_AMX_H

#include "common/error.h"
#include "common/target.h"

/* Linux's arch_prctl codes and the XSAVE component (asm/prctl.h, fpu/xstate.h). */
#define DT_ARCH_GET_XCOMP_PERM 0x1022
#define DT_ARCH_REQ_XCOMP_PERM 0x1023
#define DT_XFEATURE_XTILEDATA 18

/* 0 when this process may use AMX tiles (the CPU has AMX-TILE, the OS
 * enables XTILECFG and XTILEDATA in XCR0, and the kernel granted the
 * permission); else DT_EUNSUPPORTED with why in *e: "this CPU has no AMX",
 * "the OS does not enable AMX tile state in XCR0 (bits 17-18)", or "Linux
 * refused AMX tile data: arch_prctl(ARCH_REQ_XCOMP_PERM): <strerror>".
 * Idempotent and thread-safe: the first call asks, later calls return the
 * same answer.  e may be NULL. */
int dt_amx_request(dt_err *e);

/* 1 when the CPU reports AMX-TILE, AMX-BF16 and AMX-INT8 (whether or not
 * the OS enables them). */
int dt_amx_present(const dt_target *t);

/* 1 when t has AMX-TILE, AMX-BF16 and AMX-INT8 usable (XCR0) and
 * dt_amx_request succeeds in this process; else 0 and *why (when why is not
 * NULL) a static sentence saying why not.  t describes this machine
 * (dt_target_detect); the request itself checks the real CPU. */
int dt_amx_usable(const dt_target *t, const char **why);

#endif
