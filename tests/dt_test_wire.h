/* The wire as a fake worker speaks it, for the suites that stand one up
 * (test_pool, test_e2e_workers): whole frames out, one message in.
 * Header-only, as dt_test_measurer.h: dt_test.c is also linked into suites
 * without measure/. */
#ifndef DT_TEST_WIRE_H
#define DT_TEST_WIRE_H

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "measure/wire.h"

/* Sends all n bytes; 0, or -1 when the peer is gone. */
static inline int send_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Sends one message (payload's reference taken); 0 or -1. */
static inline int fake_send(int fd, dt_msg_type type, json_t *payload)
{
    uint8_t *buf;
    size_t len;
    int rc = dt_wire_encode(type, payload, &buf, &len, NULL);
    json_decref(payload);
    if (rc)
        return -1;
    rc = send_all(fd, buf, len);
    free(buf);
    return rc;
}

/* Receives the next message: 1 with *type and *payload, -1 when the peer
 * closed or sent garbage. */
static inline int fake_recv(int fd, dt_wire_decoder *d, dt_msg_type *type, json_t **payload)
{
    for (;;) {
        int r = dt_wire_next(d, type, payload, NULL);
        if (r != 0)
            return r == 1 ? 1 : -1;
        char buf[65536];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0 || dt_wire_feed(d, buf, (size_t)n, NULL) != 0)
            return -1;
    }
}

#endif
