/* Response serialisation and the JSON error body (daemon/http_msg.h). */
#include "daemon/http_msg.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strbuf.h"

const char *dt_http_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

int dt_http_format_response(int status, const char *content_type, const char *body,
                            size_t body_len, int keep_alive, int head,
                            const char *extra_headers, char **out, size_t *out_len, dt_err *e)
{
    char date[64] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_sb_appendf(&sb,
                  "HTTP/1.1 %d %s\r\nServer: %s\r\nDate: %s\r\nContent-Type: %s\r\n"
                  "Content-Length: %zu\r\nConnection: %s\r\n",
                  status, dt_http_reason(status), DT_HTTP_SERVER_NAME, date,
                  content_type ? content_type : "application/json", body ? body_len : 0,
                  keep_alive ? "keep-alive" : "close");
    if (extra_headers)
        dt_sb_append(&sb, extra_headers);
    dt_sb_append(&sb, "\r\n");
    if (body && body_len && !head)
        dt_sb_appendn(&sb, body, body_len);
    size_t len = sb.len;
    char *s = dt_sb_take(&sb);
    if (!s)
        return dt_errf(e, DT_ENOMEM, "out of memory formatting a %d response", status);
    *out = s;
    *out_len = len;
    return 0;
}

/* Length of the well-formed UTF-8 sequence at s[0..n), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; /* range of the second byte */
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* over U+10FFFF */
    } else {
        return 0; /* a continuation byte, 0xc0, 0xc1, 0xf5..0xff */
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

size_t dt_http_utf8_bad(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_seq(u + i, n - i);
        if (!k)
            return i;
        i += k;
    }
    return n;
}

char *dt_http_utf8_text(const char *in, char *out, size_t n)
{
    const unsigned char *u = (const unsigned char *)(in ? in : "");
    size_t len = strlen((const char *)u), o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq(u + i, len - i);
        if (k) {
            if (o + k >= n)
                break;
            memcpy(out + o, u + i, k);
            o += k;
            i += k;
        } else {
            if (o + 4 >= n)
                break;
            snprintf(out + o, n - o, "\\x%02x", u[i]);
            o += 4;
            i++;
        }
    }
    out[o] = '\0';
    return out;
}

char *dt_http_error_json(int status, const char *message, size_t *len)
{
    char text[1024];
    if (message && dt_http_utf8_bad(message, strlen(message)) != strlen(message))
        message = dt_http_utf8_text(message, text, sizeof text);
    json_t *o = json_pack("{s:{s:i,s:s}}", "error", "status", status, "message",
                          message ? message : dt_http_reason(status));
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (s && len)
        *len = strlen(s);
    return s;
}
