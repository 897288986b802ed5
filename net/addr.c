/* Socket addresses as text, and listening (net/addr.h). */
#include "net/addr.h"

#include <stdio.h>

void dt_net_addr_name(const struct sockaddr_storage *ss, char *buf, size_t n)
{
    char ip[64] = "?";
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        uv_ip4_name(a, ip, sizeof ip);
        snprintf(buf, n, "%s:%d", ip, ntohs(a->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        uv_ip6_name(a, ip, sizeof ip);
        snprintf(buf, n, "[%s]:%d", ip, ntohs(a->sin6_port));
    } else {
        snprintf(buf, n, "?");
    }
}

void dt_net_peer_name(const uv_tcp_t *tcp, char *buf, size_t n)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &len) == 0)
        dt_net_addr_name(&ss, buf, n);
    else
        snprintf(buf, n, "?");
}

int dt_net_listen(uv_loop_t *loop, uv_tcp_t *tcp, void *data, const struct sockaddr *addr,
                  uv_connection_cb cb, int *port)
{
    *port = 0;
    uv_tcp_init(loop, tcp);
    tcp->data = data;
    int r = uv_tcp_bind(tcp, addr, 0);
    if (r == 0)
        r = uv_listen((uv_stream_t *)tcp, 128, cb);
    if (r)
        return r;
    struct sockaddr_storage bound;
    int blen = sizeof bound;
    if (uv_tcp_getsockname(tcp, (struct sockaddr *)&bound, &blen) == 0)
        *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                  : ((struct sockaddr_in *)&bound)->sin_port);
    return 0;
}
