/* Logging to stderr.  The level is the only process-wide mutable state in
 * dtune (DESIGN.md, Conventions); it is set once at start-up from --verbose /
 * --quiet or the DTUNE_LOG environment variable (error|warn|info|debug). */
#ifndef DT_COMMON_LOG_H
#define DT_COMMON_LOG_H

typedef enum { DT_LOG_ERROR = 0, DT_LOG_WARN, DT_LOG_INFO, DT_LOG_DEBUG } dt_log_level;

void dt_log_set_level(dt_log_level level);
dt_log_level dt_log_get_level(void);
/* Reads DTUNE_LOG (error|warn|info|debug, any case; unset or empty: the level
 * stays).  Another value keeps the level, prints one warning on stderr
 * naming the value and the accepted ones (once per process), and removes
 * DTUNE_LOG from the environment so that child processes do not repeat it.
 * Call it at start-up, before threads exist (it may call unsetenv). */
void dt_log_init_from_env(void);
/* One line "dtune HH:MM:SS.mmm LEVEL: message" on stderr.  The message is
 * escaped (common/escape.h): control characters in names or in a worker's
 * error text come out as "\x1b", "\n", ..., never raw. */
void dt_log(dt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define dt_log_error(...) dt_log(DT_LOG_ERROR, __VA_ARGS__)
#define dt_log_warn(...) dt_log(DT_LOG_WARN, __VA_ARGS__)
#define dt_log_info(...) dt_log(DT_LOG_INFO, __VA_ARGS__)
#define dt_log_debug(...) dt_log(DT_LOG_DEBUG, __VA_ARGS__)

#endif
