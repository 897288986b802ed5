/* libdtune: the public C API of dtune.
 *
 * Compilers and runtimes use it to name workloads and (with the query issue)
 * to fetch tuned schedules from a dtune database.  Every symbol is prefixed
 * dtune_.  Strings passed in are borrowed; strings returned are owned as
 * documented on each function.  All functions are thread-safe. */
#ifndef DTUNE_DTUNE_H
#define DTUNE_DTUNE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DTUNE_API __attribute__((visibility("default")))
#else
#define DTUNE_API
#endif

/* Version of the library, e.g. "0.1.0" (static string). */
DTUNE_API const char *dtune_version(void);

/* Writes the canonical form of a workload key (docs/workload-keys.md) into
 * out[0..out_size).  Returns 0 on success; on a malformed key returns a
 * negative code and, if err is not NULL, writes the reason into
 * err[0..err_size).  A too-small out buffer is an error (-1). */
DTUNE_API int dtune_workload_canonical(const char *key, char *out, size_t out_size, char *err,
                                       size_t err_size);

/* Writes the key of the machine this process runs on (the target key under
 * which schedules are stored, e.g. "x86_64-avx512-2c-48K.1M.32M"; format in
 * docs/targets.md) into out[0..out_size).  Honours DTUNE_TARGET_ISA and
 * DTUNE_TARGET_CORES.  Returns 0, or a negative code with the reason in err. */
DTUNE_API int dtune_target_key(char *out, size_t out_size, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
