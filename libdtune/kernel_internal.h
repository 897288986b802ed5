/* Private to libdtune/: the kernel handle behind dtune_kernel (kernel.c
 * loads it, kernel_run.c packs and runs it). */
#ifndef DT_LIBDTUNE_KERNEL_INTERNAL_H
#define DT_LIBDTUNE_KERNEL_INTERNAL_H

#include "libdtune/lib_internal.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"

struct dtune_kernel {
    dt_kernel k;          /* the loaded shared object and its entry points */
    dt_kernel_op kop;     /* what it computes, from its kernels row */
    dtune_kernel_info info;
};

#endif
