/* The one monotonic clock and sleep of dtune.  Durations, deadlines and
 * time-outs are measured with dt_now_s (CLOCK_MONOTONIC: never jumps with the
 * wall clock); wall time (log lines, pthread_cond_timedwait deadlines, stored
 * timestamps) is read where it is needed, with CLOCK_REALTIME or time(). */
#ifndef DT_COMMON_CLOCK_H
#define DT_COMMON_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (an arbitrary origin: only differences count). */
double dt_now_s(void);

/* Sleeps about `s` seconds (nothing for s <= 0); a signal may end it early. */
void dt_sleep_s(double s);

/* dt_sleep_s in milliseconds. */
void dt_sleep_ms(long ms);

#endif
