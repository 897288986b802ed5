/* Pinning the OpenMP thread pool that runs micro-kernels (and, in
 * `dtune bench`, the peers, which share the process's libgomp pool).
 *
 * A process's second OpenMP thread can start on the first one's CPU; until
 * the scheduler moves it, every parallel region costs a time slice.  Seen
 * here: 2-thread trials at the start of a runner batch read 8.0 ms for 10-µs
 * kernels, and one shape of a 2-thread `dtune bench` ran dtune and oneDNN at
 * a third of their speed in all three repeats. */
#ifndef DT_MEASURE_OMP_PIN_H
#define DT_MEASURE_OMP_PIN_H

/* Pins the `threads` threads of an OpenMP parallel region of that size to
 * distinct CPUs of this process's affinity mask, thread i to the i-th
 * allowed CPU; later regions of at most that size reuse those threads.
 * Returns 1 when pinned, 0 when not (threads < 2, or more threads than
 * allowed CPUs: then nothing is changed). */
int dt_omp_pin_threads(int threads);

#endif
