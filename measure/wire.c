/* Length-prefixed frames (measure/wire.h): encoding and the incremental
 * decoder.  The decoder never trusts a length prefix: it checks every prefix
 * (and version and type byte) as soon as those bytes are in its buffer, and
 * only ever holds bytes that actually arrived, so a peer claiming a 1 GiB
 * frame is refused after 4 bytes without anything being allocated for it. */
#include "measure/wire.h"

#include <stdlib.h>
#include <string.h>

const char *dt_msg_name(dt_msg_type t)
{
    switch (t) {
    case DT_MSG_HELLO: return "HELLO";
    case DT_MSG_AUTH: return "AUTH";
    case DT_MSG_AUTH_OK: return "AUTH_OK";
    case DT_MSG_BATCH: return "BATCH";
    case DT_MSG_RESULT: return "RESULT";
    case DT_MSG_ERROR: return "ERROR";
    case DT_MSG_PING: return "PING";
    case DT_MSG_PONG: return "PONG";
    }
    return "?";
}

static int dt_msg_known(unsigned t) { return t >= DT_MSG_HELLO && t <= DT_MSG_PONG; }

uint32_t dt_wire_frame_len(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int dt_wire_encode(dt_msg_type type, const json_t *payload, uint8_t **out, size_t *len,
                   dt_err *e)
{
    *out = NULL;
    *len = 0;
    if (!dt_msg_known((unsigned)type))
        return dt_errf(e, DT_EINVAL, "cannot encode a frame of unknown type %d", (int)type);
    if (!json_is_object(payload))
        return dt_errf(e, DT_EINVAL, "%s payload must be a JSON object", dt_msg_name(type));
    size_t n = json_dumpb(payload, NULL, 0, JSON_COMPACT);
    if (n == 0)
        return dt_errf(e, DT_ENOMEM, "cannot serialise the %s payload", dt_msg_name(type));
    if (n > DT_WIRE_MAX_FRAME - 2)
        return dt_errf(e, DT_EINVAL, "%s payload of %zu bytes exceeds the frame limit of %u",
                       dt_msg_name(type), n, DT_WIRE_MAX_FRAME);
    uint8_t *buf = malloc(DT_WIRE_HEADER + n);
    if (!buf)
        return dt_errf(e, DT_ENOMEM, "out of memory encoding a %s frame", dt_msg_name(type));
    if (json_dumpb(payload, (char *)buf + DT_WIRE_HEADER, n, JSON_COMPACT) != n) {
        free(buf);
        return dt_errf(e, DT_ENOMEM, "cannot serialise the %s payload", dt_msg_name(type));
    }
    uint32_t flen = (uint32_t)(n + 2);
    buf[0] = (uint8_t)(flen >> 24);
    buf[1] = (uint8_t)(flen >> 16);
    buf[2] = (uint8_t)(flen >> 8);
    buf[3] = (uint8_t)flen;
    buf[4] = DT_WIRE_VERSION;
    buf[5] = (uint8_t)type;
    *out = buf;
    *len = DT_WIRE_HEADER + n;
    return 0;
}

void dt_wire_decoder_init(dt_wire_decoder *d) { memset(d, 0, sizeof *d); }

void dt_wire_decoder_free(dt_wire_decoder *d)
{
    free(d->buf);
    memset(d, 0, sizeof *d);
}

enum { DT_BAD_LENGTH, DT_BAD_VERSION, DT_BAD_TYPE };

static int dt_wire_fail(dt_wire_decoder *d, dt_err *e, int what, unsigned long v)
{
    d->failed = 1;
    switch (what) {
    case DT_BAD_LENGTH:
        return dt_errf(e, DT_EINVAL, "frame length %lu is outside 2..%u bytes", v,
                       DT_WIRE_MAX_FRAME);
    case DT_BAD_VERSION:
        return dt_errf(e, DT_EINVAL, "frame version %lu is not the supported version %d", v,
                       DT_WIRE_VERSION);
    default:
        return dt_errf(e, DT_EINVAL, "unknown frame type %lu", v);
    }
}

/* Checks the header bytes present at p (avail of them): length, version,
 * type, as far as they have arrived. */
static int dt_wire_check_header(dt_wire_decoder *d, const uint8_t *p, size_t avail, dt_err *e)
{
    if (avail >= 4) {
        uint32_t flen = dt_wire_frame_len(p);
        if (flen < 2 || flen > DT_WIRE_MAX_FRAME)
            return dt_wire_fail(d, e, DT_BAD_LENGTH, flen);
    }
    if (avail >= 5 && p[4] != DT_WIRE_VERSION)
        return dt_wire_fail(d, e, DT_BAD_VERSION, p[4]);
    if (avail >= 6 && !dt_msg_known(p[5]))
        return dt_wire_fail(d, e, DT_BAD_TYPE, p[5]);
    return 0;
}

int dt_wire_feed(dt_wire_decoder *d, const void *data, size_t n, dt_err *e)
{
    if (d->failed)
        return dt_errf(e, DT_EINVAL, "the stream already had a protocol error");
    if (n == 0)
        return 0;
    if (d->len + n > d->cap) {
        size_t cap = d->cap ? d->cap : 256;
        while (cap < d->len + n)
            cap *= 2;
        uint8_t *nb = realloc(d->buf, cap);
        if (!nb) {
            d->failed = 1;
            return dt_errf(e, DT_ENOMEM, "out of memory buffering %zu bytes", d->len + n);
        }
        d->buf = nb;
        d->cap = cap;
    }
    memcpy(d->buf + d->len, data, n);
    d->len += n;
    /* Walk the buffered frames (the buffer starts at a frame boundary) and
     * check each header that has arrived, complete frame or not. */
    size_t off = 0;
    while (off < d->len) {
        size_t avail = d->len - off;
        int rc = dt_wire_check_header(d, d->buf + off, avail, e);
        if (rc)
            return rc;
        if (avail < 4)
            break;
        size_t flen = dt_wire_frame_len(d->buf + off);
        if (avail < 4 + flen)
            break;
        off += 4 + flen;
    }
    return 0;
}

int dt_wire_next(dt_wire_decoder *d, dt_msg_type *type, json_t **payload, dt_err *e)
{
    *payload = NULL;
    if (d->failed)
        return dt_errf(e, DT_EINVAL, "the stream already had a protocol error");
    int rc = dt_wire_check_header(d, d->buf, d->len, e);
    if (rc)
        return rc;
    if (d->len < DT_WIRE_HEADER)
        return 0;
    size_t flen = dt_wire_frame_len(d->buf);
    if (d->len < 4 + flen)
        return 0;
    dt_msg_type t = (dt_msg_type)d->buf[5];
    json_error_t jerr;
    json_t *j = json_loadb((const char *)d->buf + DT_WIRE_HEADER, flen - 2,
                           JSON_REJECT_DUPLICATES, &jerr);
    if (!j) {
        d->failed = 1;
        return dt_errf(e, DT_EINVAL, "%s payload is not valid JSON: %s (at byte %d)",
                       dt_msg_name(t), jerr.text, jerr.position);
    }
    if (!json_is_object(j)) {
        json_decref(j);
        d->failed = 1;
        return dt_errf(e, DT_EINVAL, "%s payload is not a JSON object", dt_msg_name(t));
    }
    size_t used = 4 + flen;
    memmove(d->buf, d->buf + used, d->len - used);
    d->len -= used;
    /* give back the memory of a large frame once it is consumed */
    if (d->len == 0 && d->cap > (64u << 10)) {
        free(d->buf);
        d->buf = NULL;
        d->cap = 0;
    }
    *type = t;
    *payload = j;
    return 1;
}
