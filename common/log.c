#include "common/log.h"

#include "common/escape.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static _Atomic int g_level = DT_LOG_WARN;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

void dt_log_set_level(dt_log_level level) { atomic_store(&g_level, (int)level); }
dt_log_level dt_log_get_level(void) { return (dt_log_level)atomic_load(&g_level); }

void dt_log_init_from_env(void)
{
    static _Atomic int warned;
    const char *v = getenv("DTUNE_LOG");
    if (!v || !*v)
        return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcasecmp(v, names[i]) == 0) {
            dt_log_set_level((dt_log_level)i);
            return;
        }
    if (!atomic_exchange(&warned, 1)) {
        /* the value may be anything: print it as printable ASCII only */
        char shown[64];
        size_t n = 0;
        for (const char *p = v; *p && n < sizeof shown - 4; p++)
            shown[n++] = (*p >= 0x20 && *p < 0x7F) ? *p : '?';
        shown[n] = '\0';
        if (strlen(v) > n)
            strcat(shown, "...");
        pthread_mutex_lock(&g_lock);
        fprintf(stderr,
                "dtune: warning: DTUNE_LOG='%s' is not a log level (accepted: error, warn, "
                "info, debug); using the default, %s\n",
                shown, names[atomic_load(&g_level)]);
        pthread_mutex_unlock(&g_lock);
    }
    /* child processes (trial runners, whose stderr ends up in trial errors)
     * inherit the environment: they must not repeat the warning */
    unsetenv("DTUNE_LOG");
}

void dt_log(dt_log_level level, const char *fmt, ...)
{
    if ((int)level > atomic_load(&g_level))
        return;
    static const char *tags[] = {"error", "warn", "info", "debug"};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
    /* the message, then its escaped form: names and worker messages in it
     * came from outside, and one line must stay one line (common/escape.h) */
    char text[512], shown[1024];
    char *msg = text, *heap_msg = NULL, *heap_shown = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (len < 0) {
        text[0] = '\0';
    } else if ((size_t)len >= sizeof text && (heap_msg = malloc((size_t)len + 1))) {
        va_start(ap, fmt);
        vsnprintf(heap_msg, (size_t)len + 1, fmt, ap);
        va_end(ap);
        msg = heap_msg;
    }
    const char *out = shown;
    if (dt_escape(msg, shown, sizeof shown) >= sizeof shown && (heap_shown = dt_escape_dup(msg)))
        out = heap_shown;
    pthread_mutex_lock(&g_lock);
    fprintf(stderr, "dtune %s.%03ld %s: %s\n", stamp, ts.tv_nsec / 1000000L, tags[level], out);
    pthread_mutex_unlock(&g_lock);
    free(heap_shown);
    free(heap_msg);
}
