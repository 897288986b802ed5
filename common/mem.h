/* Aligned allocation for tensors and packed panels. */
#ifndef DT_COMMON_MEM_H
#define DT_COMMON_MEM_H

#include <stddef.h>

/* 64-byte aligned block of at least `bytes` (rounded up to a multiple of 64,
 * as aligned_alloc requires); free with free().  NULL when out of memory. */
void *dt_alloc64(size_t bytes);

#endif
