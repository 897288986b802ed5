/* AMX tile permission (common/amx.h). */
#include "common/amx.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/target_probe.h"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#define DT_AMX_LINUX_X86 1
#endif

static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static int amx_code;                 /* 0 or DT_EUNSUPPORTED, set once */
static char amx_why[DT_ERR_MSG_MAX]; /* why not, set once; "" when granted */

#define F(x) DT_FEAT_BIT(DT_FEAT_##x)
static const uint32_t amx_all = F(AMX_TILE) | F(AMX_BF16) | F(AMX_INT8);
#undef F

static void amx_refuse(const char *why)
{
    amx_code = DT_EUNSUPPORTED;
    snprintf(amx_why, sizeof amx_why, "%s", why);
}

static void amx_ask(void)
{
#ifdef DT_AMX_LINUX_X86
    dt_cpuid_info id;
    dt_probe_cpuid(&id);
    if (!(id.features & DT_FEAT_BIT(DT_FEAT_AMX_TILE))) {
        amx_refuse("this CPU has no AMX");
        return;
    }
    /* XCR0 bit 17 XTILECFG, bit 18 XTILEDATA */
    const uint64_t tile_state = UINT64_C(3) << 17;
    if ((id.xcr0 & tile_state) != tile_state) {
        amx_refuse("the OS does not enable AMX tile state in XCR0 (bits 17-18)");
        return;
    }
    unsigned long perm = 0;
    const unsigned long want = 1UL << DT_XFEATURE_XTILEDATA;
    if (syscall(SYS_arch_prctl, DT_ARCH_GET_XCOMP_PERM, &perm) == 0 && (perm & want)) {
        amx_code = 0; /* granted before (an earlier request, or the parent's) */
        return;
    }
    if (syscall(SYS_arch_prctl, DT_ARCH_REQ_XCOMP_PERM, DT_XFEATURE_XTILEDATA) != 0) {
        int err = errno;
        amx_code = DT_EUNSUPPORTED;
        snprintf(amx_why, sizeof amx_why,
                 "Linux refused AMX tile data: arch_prctl(ARCH_REQ_XCOMP_PERM): %s%s",
                 strerror(err), err == EINVAL ? " (Linux before 5.16 has no AMX support)" : "");
        return;
    }
    perm = 0;
    if (syscall(SYS_arch_prctl, DT_ARCH_GET_XCOMP_PERM, &perm) != 0 || !(perm & want)) {
        amx_refuse("Linux accepted the AMX request but ARCH_GET_XCOMP_PERM does not show "
                   "XTILEDATA");
        return;
    }
    amx_code = 0;
#else
    amx_refuse("AMX needs x86-64 Linux");
#endif
}

int dt_amx_request(dt_err *e)
{
    pthread_once(&amx_once, amx_ask);
    if (amx_code)
        return dt_errf(e, amx_code, "AMX unusable: %s", amx_why);
    return 0;
}

int dt_amx_present(const dt_target *t)
{
    return (t->cpu_features & amx_all) == amx_all;
}

int dt_amx_usable(const dt_target *t, const char **why)
{
    const char *reason = NULL;
    if (!dt_amx_present(t))
        reason = (t->cpu_features & amx_all) ? "this CPU has only part of AMX "
                                               "(dtune needs amx_tile, amx_bf16 and amx_int8)"
                                             : "this CPU has no AMX";
    else if ((t->features & amx_all) != amx_all)
        reason = "the OS does not enable AMX tile state in XCR0 (bits 17-18)";
    else if (dt_amx_request(NULL))
        reason = amx_why; /* written once, read-only afterwards */
    if (why)
        *why = reason;
    return reason == NULL;
}
