#include "microkernel/loader.h"

#include <dlfcn.h>
#include <string.h>

#include "microkernel/codegen.h"

int dt_kernel_load(const char *so_path, dt_kernel *k, dt_err *e)
{
    memset(k, 0, sizeof *k);
    /* Kernels use OpenMP.  If this process did not link libgomp itself, the
     * first kernel loads it and closing the last kernel would unload it under
     * its own idle worker threads; pin it for the life of the process. */
    dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    void *h = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return dt_errf(e, DT_EIO, "cannot load kernel %s: %s", so_path, dlerror());
    const int *abi = dlsym(h, "dtk_abi_version");
    if (!abi || *abi != DT_KERNEL_ABI) {
        dlclose(h);
        return dt_errf(e, DT_EINVAL, "%s is not a dtune kernel of ABI %d", so_path,
                       DT_KERNEL_ABI);
    }
    k->handle = h;
    k->info = dlsym(h, "dtk_info");
    /* function pointers from dlsym: the POSIX-sanctioned conversion */
    *(void **)&k->packed_size = dlsym(h, "dtk_packed_size");
    *(void **)&k->pack = dlsym(h, "dtk_pack");
    *(void **)&k->dense = dlsym(h, "dtk_dense");
    *(void **)&k->bmm = dlsym(h, "dtk_bmm");
    int dense_ok = k->packed_size && k->pack && k->dense;
    if (!dense_ok && !k->bmm) {
        dt_kernel_unload(k);
        return dt_errf(e, DT_EINVAL, "%s exports no dtune entry point", so_path);
    }
    return 0;
}

void dt_kernel_unload(dt_kernel *k)
{
    if (k && k->handle)
        dlclose(k->handle);
    if (k)
        memset(k, 0, sizeof *k);
}
