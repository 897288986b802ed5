#include "common/mem.h"

#include <stdlib.h>

void *dt_alloc64(size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}
