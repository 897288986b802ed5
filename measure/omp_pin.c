/* Pinning the OpenMP thread pool (see omp_pin.h). */
#include "measure/omp_pin.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

int dt_omp_pin_threads(int threads)
{
    cpu_set_t allowed;
    if (threads < 2 || sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return 0;
    int cpus[CPU_SETSIZE], n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed))
            cpus[n++] = c;
    if (threads > n)
        return 0;
    int pinned = 0;
#pragma omp parallel num_threads(threads) reduction(+ : pinned)
    {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[omp_get_thread_num()], &one);
        pinned += pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
    }
    return pinned == threads;
}
