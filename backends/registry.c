/* The back-end registry: one line per back-end (its folder's registration,
 * backends/backend.h).  A new back-end is its folder and a line here. */
#include "backends/backend.h"

extern const dt_backend_reg dt_backend_generic;
extern const dt_backend_reg dt_backend_avx2;
extern const dt_backend_reg dt_backend_avx512;
extern const dt_backend_reg dt_backend_avx512_bf16;
extern const dt_backend_reg dt_backend_avx512_vnni;
extern const dt_backend_reg dt_backend_amx;
extern const dt_backend_reg dt_backend_avx512_fma;

static const dt_backend_reg *const registry[] = {
    &dt_backend_generic,     &dt_backend_avx2,        &dt_backend_avx512,
    &dt_backend_avx512_bf16, &dt_backend_avx512_vnni, &dt_backend_amx,
    &dt_backend_avx512_fma,
};

int dt_backend_reg_count(void) { return (int)(sizeof registry / sizeof registry[0]); }

const dt_backend_reg *dt_backend_reg_at(int i)
{
    return i >= 0 && i < dt_backend_reg_count() ? registry[i] : NULL;
}
