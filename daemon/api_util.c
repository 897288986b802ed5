/* JSON responses, errors, ids and query parameters for the API routes
 * (daemon/api_util.h). */
#include "daemon/api_util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/error.h"
#include "daemon/http_msg.h"

void dt_api_json(dt_http_response *res, int status, json_t *body)
{
    char *s = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    if (!s) {
        static const char oom[] = "{\"error\":{\"status\":500,\"message\":\"out of memory\"}}";
        res->status = 500;
        res->body = strdup(oom);
    } else {
        res->status = status;
        res->body = s;
    }
    res->body_len = res->body ? strlen(res->body) : 0;
    res->content_type = "application/json";
}

void dt_api_error(dt_http_response *res, int status, const char *fmt, ...)
{
    char msg[DT_ERR_MSG_MAX], text[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* a message quoting the request (or cut inside a character) may not be
     * UTF-8, which JSON strings must be: never a 500 for that */
    const char *m = msg;
    if (dt_http_utf8_bad(msg, strlen(msg)) != strlen(msg))
        m = dt_http_utf8_text(msg, text, sizeof text);
    dt_api_json(res, status, json_pack("{s:{s:i, s:s}}", "error", "status", status, "message", m));
}

int dt_api_status_of(int code)
{
    switch (code) {
    case DT_EINVAL:
    case DT_EOVERFLOW: return 400;
    case DT_ENOTFOUND: return 404;
    case DT_EBUSY: return 503;
    case DT_EUNSUPPORTED: return 422;
    default: return 500;
    }
}

int64_t dt_api_parse_id(const char *text)
{
    if (!text || !*text)
        return 0;
    int64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        int d = *p - '0';
        if (v > (INT64_MAX - d) / 10)
            return 0; /* over INT64_MAX */
        v = v * 10 + d;
    }
    return v;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int dt_api_decode(const char *s, size_t len, char *buf, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            int h = i + 2 < len ? hexval(s[i + 1]) : -1, l = i + 2 < len ? hexval(s[i + 2]) : -1;
            if (h < 0 || l < 0 || (h == 0 && l == 0))
                return -1;
            ch = h * 16 + l;
            i += 2;
        }
        if (o + 1 >= n)
            return -1;
        buf[o++] = (char)ch;
    }
    buf[o] = 0;
    return dt_http_utf8_bad(buf, o) == o ? 0 : -1;
}

int dt_api_query_param(const char *query, const char *name, char *buf, size_t n)
{
    size_t nl = strlen(name);
    for (const char *p = query ? query : ""; *p;) {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=')
            return dt_api_decode(p + nl + 1, len - nl - 1, buf, n) ? -1 : 1;
        p += len;
        if (*p == '&')
            p++;
    }
    return 0;
}
