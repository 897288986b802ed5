/* Socket addresses for the libuv servers (daemon/http.c, measure/worker.c):
 * their text form and listening on one.
 *
 * Threads: any; dt_net_listen on the loop's thread (or before it runs). */
#ifndef DT_NET_ADDR_H
#define DT_NET_ADDR_H

#include <stddef.h>
#include <uv.h>

/* "1.2.3.4:5678", "[::1]:5678", or "?" for another family; into buf (size n). */
void dt_net_addr_name(const struct sockaddr_storage *ss, char *buf, size_t n);
/* The peer of a connected handle as dt_net_addr_name; "?" when unknown. */
void dt_net_peer_name(const uv_tcp_t *tcp, char *buf, size_t n);

/* Initialises tcp on loop (tcp->data = data), binds it to addr and listens
 * with cb (backlog 128).  0 with the bound port in *port, or the negative uv
 * code of the bind or listen; tcp is initialised either way, so the caller
 * closes it. */
int dt_net_listen(uv_loop_t *loop, uv_tcp_t *tcp, void *data, const struct sockaddr *addr,
                  uv_connection_cb cb, int *port);

#endif
