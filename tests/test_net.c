/* The libuv connection set (net/conn.h) and addresses (net/addr.h) on their
 * own: one loop on this thread, plain blocking sockets as peers, the loop
 * turned with UV_RUN_NOWAIT until what a test waits for has happened.  Every
 * test ends with the loop closed cleanly (no handle left behind) and, under
 * ASan, nothing leaked. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "net/addr.h"
#include "common/clock.h"
#include "net/conn.h"
#include "tests/dt_test.h"

/* ---- a tiny server on the set ----------------------------------------------- */

typedef struct tconn {
    dt_net_conn nc; /* first */
    int evictable;
    int eof_seen;
    size_t got;     /* bytes read from the peer */
    char rbuf[4096];
    int *released;  /* counts release calls of this connection */
} tconn;

typedef struct tsrv {
    uv_loop_t loop;
    uv_tcp_t listen;
    int port;
    dt_net_set set;
    dt_net_conn *last;  /* the newest accepted */
    int accepted;
    int released, gone, linger_fired;
    int writes_ok, writes_cancelled, writes_failed;
    int refuse_next;    /* accept by dt_net_refuse instead */
    char refused_peer[96];
    int refused;
} tsrv;

static void t_release(dt_net_conn *nc)
{
    tsrv *t = nc->set->ud;
    t->released++;
    if (t->last == nc)
        t->last = NULL;
}

static void t_gone(dt_net_set *s) { ((tsrv *)s->ud)->gone++; }

static void t_write_done(dt_net_conn *nc, int status)
{
    tsrv *t = nc->set->ud;
    if (status == 0)
        t->writes_ok++;
    else if (status == UV_ECANCELED)
        t->writes_cancelled++;
    else
        t->writes_failed++;
}

static int t_evictable(const dt_net_conn *nc) { return ((const tconn *)nc)->evictable; }

static void t_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    tconn *c = h->data;
    (void)suggested;
    buf->base = c->rbuf;
    buf->len = sizeof c->rbuf;
}

/* Counts input (a draining connection's too); the peer's end closes. */
static void t_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    tconn *c = st->data;
    (void)buf;
    if (nread > 0) {
        c->got += (size_t)nread;
        return;
    }
    if (nread == 0 || c->nc.closing)
        return;
    c->eof_seen = 1;
    c->nc.peer_eof = 1;
    dt_net_conn_close(&c->nc);
}

static void t_linger(uv_timer_t *tm)
{
    tconn *c = tm->data;
    ((tsrv *)c->nc.set->ud)->linger_fired++;
    dt_net_conn_close(&c->nc);
}

static void t_on_connection(uv_stream_t *server, int status)
{
    tsrv *t = server->data;
    if (status < 0)
        return;
    if (t->refuse_next) {
        if (dt_net_refuse(server, t->refused_peer, sizeof t->refused_peer) == 0)
            t->refused++;
        return;
    }
    tconn *c = (tconn *)dt_net_conn_new(&t->set);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    if (dt_net_conn_accept(&c->nc, server) != 0) {
        dt_net_conn_close(&c->nc);
        return;
    }
    t->last = &c->nc;
    t->accepted++;
    CU_ASSERT_EQUAL(uv_read_start((uv_stream_t *)&c->nc.tcp, t_alloc, t_read), 0);
}

static tsrv *srv_start(void)
{
    tsrv *t = calloc(1, sizeof *t);
    CU_ASSERT_EQUAL_FATAL(uv_loop_init(&t->loop), 0);
    dt_net_ops ops = {.conn_size = sizeof(tconn), .release = t_release,
                      .write_done = t_write_done, .evictable = t_evictable, .gone = t_gone};
    dt_net_set_init(&t->set, &t->loop, &ops, t);
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    int r = dt_net_listen(&t->loop, &t->listen, t, (const struct sockaddr *)&a, t_on_connection,
                          &t->port);
    CU_ASSERT_EQUAL_FATAL(r, 0);
    CU_ASSERT_TRUE(t->port > 0);
    CU_ASSERT_PTR_EQUAL(t->listen.data, t);
    return t;
}

/* Turns the loop until *flag reaches want or timeout_s passes; 1 when it did. */
static int spin_until(tsrv *t, const int *flag, int want, double timeout_s)
{
    double end = dt_now_s() + timeout_s;
    while (*flag < want && dt_now_s() < end) {
        uv_run(&t->loop, UV_RUN_NOWAIT);
        if (*flag < want)
            usleep(2000);
    }
    return *flag >= want;
}

static void spin_for(tsrv *t, double s)
{
    double end = dt_now_s() + s;
    while (dt_now_s() < end) {
        uv_run(&t->loop, UV_RUN_NOWAIT);
        usleep(2000);
    }
}

/* Closes whatever is left, then the loop: it must close cleanly. */
static void srv_stop(tsrv *t)
{
    for (dt_net_conn *nc = t->set.head; nc; nc = nc->next)
        dt_net_conn_close(nc);
    uv_close((uv_handle_t *)&t->listen, NULL);
    uv_run(&t->loop, UV_RUN_DEFAULT);
    CU_ASSERT_EQUAL(dt_net_set_count(&t->set), 0);
    CU_ASSERT_EQUAL(t->released, t->gone);
    CU_ASSERT_EQUAL(uv_loop_close(&t->loop), 0);
    free(t);
}

static int cl_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The client's own "127.0.0.1:PORT". */
static void cl_name(int fd, char *buf, size_t n)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    snprintf(buf, n, "127.0.0.1:%d", ntohs(a.sin_port));
}

/* Reads what is there without blocking: bytes, 0 at EOF, -1 nothing yet. */
static ssize_t cl_read(int fd, char *buf, size_t n)
{
    ssize_t k = recv(fd, buf, n, MSG_DONTWAIT);
    if (k < 0)
        return errno == ECONNRESET ? 0 : -1;
    return k;
}

/* Spins the loop until the client sees EOF (after data); the data read is
 * appended to buf.  1 on EOF. */
static int cl_wait_eof(tsrv *t, int fd, char *buf, size_t n, size_t *len, double timeout_s)
{
    double end = dt_now_s() + timeout_s;
    while (dt_now_s() < end) {
        uv_run(&t->loop, UV_RUN_NOWAIT);
        for (;;) {
            char tmp[65536];
            ssize_t k = cl_read(fd, tmp, sizeof tmp);
            if (k == 0)
                return 1;
            if (k < 0)
                break;
            if (buf && *len + (size_t)k < n) {
                memcpy(buf + *len, tmp, (size_t)k);
                *len += (size_t)k;
                buf[*len] = '\0';
            }
        }
        usleep(2000);
    }
    return 0;
}

static char *dup_text(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    strcpy(d, s);
    return d;
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_accept_count_close(void)
{
    tsrv *t = srv_start();
    int fd1 = cl_open(t->port), fd2 = cl_open(t->port);
    CU_ASSERT_TRUE_FATAL(fd1 >= 0 && fd2 >= 0);
    CU_ASSERT_TRUE_FATAL(spin_until(t, &t->accepted, 2, 5));
    CU_ASSERT_EQUAL(dt_net_set_count(&t->set), 2);
    CU_ASSERT_EQUAL(dt_net_set_active(&t->set), 2);
    /* newest first, ids in the order made, peers named, handles point back */
    dt_net_conn *newest = t->set.head, *oldest = newest->next;
    CU_ASSERT_PTR_NOT_NULL_FATAL(oldest);
    CU_ASSERT_PTR_NULL(oldest->next);
    CU_ASSERT_PTR_EQUAL(oldest->prev, newest);
    CU_ASSERT_EQUAL(oldest->id, 1);
    CU_ASSERT_EQUAL(newest->id, 2);
    CU_ASSERT_PTR_EQUAL(newest->tcp.data, newest);
    CU_ASSERT_PTR_EQUAL(newest->timer.data, newest);
    char n1[96], n2[96];
    cl_name(fd1, n1, sizeof n1);
    cl_name(fd2, n2, sizeof n2);
    CU_ASSERT_STRING_EQUAL(oldest->peer, n1);
    CU_ASSERT_STRING_EQUAL(newest->peer, n2);

    /* closing: counted until the handles close, no longer active */
    CU_ASSERT_EQUAL(dt_net_conn_close(oldest), 1);
    CU_ASSERT_EQUAL(dt_net_conn_close(oldest), 0); /* once */
    CU_ASSERT_EQUAL(dt_net_set_count(&t->set), 2);
    CU_ASSERT_EQUAL(dt_net_set_active(&t->set), 1);
    CU_ASSERT_TRUE(spin_until(t, &t->gone, 1, 5));
    CU_ASSERT_EQUAL(t->released, 1);
    CU_ASSERT_EQUAL(dt_net_set_count(&t->set), 1);
    CU_ASSERT_PTR_EQUAL(t->set.head, newest);
    CU_ASSERT_PTR_NULL(newest->next);
    size_t len = 0;
    CU_ASSERT_TRUE(cl_wait_eof(t, fd1, NULL, 0, &len, 5)); /* the peer sees the close */

    /* the peer ending its side: the read callback closes it */
    close(fd2);
    CU_ASSERT_TRUE(spin_until(t, &t->gone, 2, 5));
    CU_ASSERT_EQUAL(dt_net_set_count(&t->set), 0);
    CU_ASSERT_PTR_NULL(t->set.head);
    close(fd1);
    srv_stop(t);
}

static void test_write(void)
{
    tsrv *t = srv_start();
    int fd = cl_open(t->port);
    CU_ASSERT_TRUE_FATAL(spin_until(t, &t->accepted, 1, 5));
    dt_net_conn *c = t->last;
    CU_ASSERT_EQUAL(dt_net_conn_write(c, dup_text("hello "), 6), 0);
    CU_ASSERT_EQUAL(dt_net_conn_write(c, dup_text("world"), 5), 0);
    CU_ASSERT_TRUE(spin_until(t, &t->writes_ok, 2, 5));
    char buf[64] = "";
    size_t len = 0;
    double end = dt_now_s() + 5;
    while (len < 11 && dt_now_s() < end) {
        ssize_t k = cl_read(fd, buf + len, sizeof buf - 1 - len);
        if (k > 0)
            len += (size_t)k;
        else
            usleep(2000);
    }
    buf[len] = '\0';
    CU_ASSERT_STRING_EQUAL(buf, "hello world");
    CU_ASSERT_EQUAL(dt_net_conn_unsent(c), 0);

    /* a closing connection takes nothing (and frees the buffer) */
    dt_net_conn_close(c);
    CU_ASSERT_EQUAL(dt_net_conn_write(c, dup_text("late"), 4), UV_ECANCELED);
    CU_ASSERT_TRUE(spin_until(t, &t->gone, 1, 5));
    CU_ASSERT_EQUAL(t->writes_ok, 2);
    CU_ASSERT_EQUAL(t->writes_cancelled + t->writes_failed, 0);
    close(fd);
    srv_stop(t);
}

/* A peer that does not read: the writes pile up (unsent), and closing cancels
 * them, each reported once to write_done. */
static void test_write_pending_cancelled(void)
{
    tsrv *t = srv_start();
    int fd = cl_open(t->port);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    CU_ASSERT_TRUE_FATAL(spin_until(t, &t->accepted, 1, 5));
    dt_net_conn *c = t->last;
    int n = 0;
    for (; n < 64 && dt_net_conn_unsent(c) == 0; n++) {
        size_t big = 1u << 20;
        char *data = calloc(1, big);
        CU_ASSERT_EQUAL_FATAL(dt_net_conn_write(c, data, big), 0);
        spin_for(t, 0.005);
    }
    CU_ASSERT_TRUE(dt_net_conn_unsent(c) > 0);
    dt_net_conn_close(c);
    CU_ASSERT_TRUE(spin_until(t, &t->gone, 1, 5));
    CU_ASSERT_TRUE(t->writes_cancelled >= 1);
    CU_ASSERT_EQUAL(t->writes_failed, 0);
    CU_ASSERT_EQUAL(t->writes_ok + t->writes_cancelled, n); /* each once */
    close(fd);
    srv_stop(t);
}

/* finish without drain: the last bytes reach the peer, then FIN, then the
 * connection closes by itself; the linger timer never fires. */
static void test_finish(void)
{
    tsrv *t = srv_start();
    int fd = cl_open(t->port);
    CU_ASSERT_TRUE_FATAL(spin_until(t, &t->accepted, 1, 5));
    dt_net_conn *c = t->last;
    CU_ASSERT_EQUAL(dt_net_conn_write(c, dup_text("bye"), 3), 0);
    dt_net_conn_finish(c, 0, 5.0, t_linger);
    CU_ASSERT_TRUE(c->shutting);
    CU_ASSERT_FALSE(c->drain);
    CU_ASSERT_EQUAL(dt_net_set_active(&t->set), 1); /* finishing still counts */
    dt_net_conn_finish(c, 1, 5.0, t_linger);          /* once */
    CU_ASSERT_FALSE(c->drain);
    char buf[64] = "";
    size_t len = 0;
    CU_ASSERT_TRUE(cl_wait_eof(t, fd, buf, sizeof buf, &len, 5));
    CU_ASSERT_STRING_EQUAL(buf, "bye");
    CU_ASSERT_TRUE(spin_until(t, &t->gone, 1, 5));
    CU_ASSERT_EQUAL(t->linger_fired, 0);
    close(fd);
    srv_stop(t);
}

/* finish with drain: after FIN the connection waits for the peer's end
 * (input still read), or for the linger timer. */
static void test_finish_drain_and_linger(void)
{
    tsrv *t = srv_start();
    int fd1 = cl_open(t->port);
    CU_ASSERT_TRUE_FATAL(spin_until(t, &t->accepted, 1, 5));
    tconn *c1 = (tconn *)t->last;
    dt_net_conn_finish(&c1->nc, 1, 5.0, t_linger);
    size_t len = 0;
    CU_ASSERT_TRUE(cl_wait_eof(t, fd1, NULL, 0, &len, 5)); /* FIN reached the peer */
    spin_for(t, 0.1);
    CU_ASSERT_EQUAL(t->gone, 0); /* still open: waiting for the peer */
    CU_ASSERT_EQUAL(send(fd1, "xyz", 3, MSG_NOSIGNAL), 3);
    spin_for(t, 0.1);
    CU_ASSERT_EQUAL(c1->got, 3); /* drained */
    close(fd1);
    CU_ASSERT_TRUE(spin_until(t, &t->gone, 1, 5));
    CU_ASSERT_EQUAL(t->linger_fired, 0);

    /* a peer that never ends its side: the linger timer closes it */
    int fd2 = cl_open(t->port);
    CU_ASSERT_TRUE_FATAL(spin_until(t, &t->accepted, 2, 5));
    dt_net_conn_finish(t->last, 1, 0.2, t_linger);
    CU_ASSERT_TRUE(spin_until(t, &t->linger_fired, 1, 5));
    CU_ASSERT_TRUE(spin_until(t, &t->gone, 2, 5));
    close(fd2);
    srv_stop(t);
}

static void test_victim(void)
{
    tsrv *t = srv_start();
    int fd[4];
    for (int i = 0; i < 4; i++) {
        fd[i] = cl_open(t->port);
        CU_ASSERT_TRUE_FATAL(spin_until(t, &t->accepted, i + 1, 5));
        spin_for(t, 0.02); /* distinct marks */
    }
    tconn *c[4]; /* c[0] oldest */
    int k = 3;
    for (dt_net_conn *nc = t->set.head; nc; nc = nc->next)
        c[k--] = (tconn *)nc;
    CU_ASSERT_EQUAL(c[0]->nc.id, 1);

    /* nothing is evictable yet */
    CU_ASSERT_PTR_NULL(dt_net_set_victim(&t->set, 0));
    for (int i = 0; i < 4; i++)
        c[i]->evictable = 1;
    /* nobody has waited an hour; everybody has waited 0 s */
    CU_ASSERT_PTR_NULL(dt_net_set_victim(&t->set, 3600));
    CU_ASSERT_PTR_EQUAL(dt_net_set_victim(&t->set, 0), &c[0]->nc);
    /* a fresh mark sends c[0] to the back, and below the least wait */
    spin_for(t, 0.3);
    dt_net_conn_mark(&c[0]->nc);
    CU_ASSERT_TRUE(dt_net_conn_waited_ms(&c[0]->nc) < dt_net_conn_waited_ms(&c[1]->nc));
    CU_ASSERT_TRUE(dt_net_conn_waited_ms(&c[1]->nc) >= 300);
    CU_ASSERT_PTR_EQUAL(dt_net_set_victim(&t->set, 0), &c[1]->nc);
    CU_ASSERT_PTR_EQUAL(dt_net_set_victim(&t->set, 0.2), &c[1]->nc);
    /* not evictable, finishing or closing: skipped */
    c[1]->evictable = 0;
    CU_ASSERT_PTR_EQUAL(dt_net_set_victim(&t->set, 0), &c[2]->nc);
    dt_net_conn_finish(&c[2]->nc, 1, 5.0, t_linger);
    CU_ASSERT_PTR_EQUAL(dt_net_set_victim(&t->set, 0), &c[3]->nc);
    dt_net_conn_close(&c[3]->nc);
    CU_ASSERT_EQUAL(dt_net_set_active(&t->set), 3);
    /* only c[0] is left, marked just now: it qualifies for no wait, not for 0.2 s */
    CU_ASSERT_PTR_EQUAL(dt_net_set_victim(&t->set, 0), &c[0]->nc);
    CU_ASSERT_PTR_NULL(dt_net_set_victim(&t->set, 0.2));
    for (int i = 0; i < 4; i++)
        close(fd[i]);
    srv_stop(t);
}

static void test_refuse(void)
{
    tsrv *t = srv_start();
    t->refuse_next = 1;
    int fd = cl_open(t->port);
    CU_ASSERT_TRUE_FATAL(spin_until(t, &t->refused, 1, 5));
    char me[96];
    cl_name(fd, me, sizeof me);
    CU_ASSERT_STRING_EQUAL(t->refused_peer, me);
    size_t len = 0;
    CU_ASSERT_TRUE(cl_wait_eof(t, fd, NULL, 0, &len, 5));
    CU_ASSERT_EQUAL(dt_net_set_count(&t->set), 0);
    close(fd);
    srv_stop(t);
}

/* The pool's use: a connection made by connecting, closed while the connect
 * is under way, and one connected and then closed. */
typedef struct {
    int status, calls;
} tconnect;

static void t_connected(uv_connect_t *req, int status)
{
    tconnect *r = req->data;
    r->status = status;
    r->calls++;
}

static void test_client_side(void)
{
    tsrv *t = srv_start();
    uv_connect_t creq[2];
    tconnect res[2] = {{0, 0}, {0, 0}};
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", t->port, &a);
    dt_net_conn *cc[2];
    for (int i = 0; i < 2; i++) {
        cc[i] = dt_net_conn_new(&t->set);
        CU_ASSERT_PTR_NOT_NULL_FATAL(cc[i]);
        CU_ASSERT_STRING_EQUAL(cc[i]->peer, "?");
        creq[i].data = &res[i];
        CU_ASSERT_EQUAL(uv_tcp_connect(&creq[i], &cc[i]->tcp, (const struct sockaddr *)&a,
                                       t_connected),
                        0);
    }
    /* the first is given up at once */
    dt_net_conn_close(cc[0]);
    CU_ASSERT_TRUE(spin_until(t, &res[0].calls, 1, 5));
    CU_ASSERT_EQUAL(res[0].status, UV_ECANCELED);
    CU_ASSERT_TRUE(spin_until(t, &res[1].calls, 1, 5));
    CU_ASSERT_EQUAL(res[1].status, 0);
    /* the server side accepted the second (and maybe the first) */
    CU_ASSERT_TRUE(spin_until(t, &t->accepted, 1, 5));
    CU_ASSERT_EQUAL(dt_net_conn_write(cc[1], dup_text("ping"), 4), 0);
    CU_ASSERT_TRUE(spin_until(t, &t->writes_ok, 1, 5));
    dt_net_conn_close(cc[1]);
    CU_ASSERT_TRUE(spin_until(t, &t->gone, 2, 5));
    srv_stop(t);
}

static void test_addr_and_listen(void)
{
    struct sockaddr_storage ss;
    char buf[96];
    memset(&ss, 0, sizeof ss);
    uv_ip4_addr("10.1.2.3", 7720, (struct sockaddr_in *)&ss);
    dt_net_addr_name(&ss, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "10.1.2.3:7720");
    memset(&ss, 0, sizeof ss);
    uv_ip6_addr("::1", 8710, (struct sockaddr_in6 *)&ss);
    dt_net_addr_name(&ss, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "[::1]:8710");
    memset(&ss, 0, sizeof ss);
    ss.ss_family = AF_UNIX;
    dt_net_addr_name(&ss, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "?");

    /* a port in use: the uv code, and the handle is still the caller's to close */
    tsrv *t = srv_start();
    uv_tcp_t second;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", t->port, &a);
    int port = -1;
    int r = dt_net_listen(&t->loop, &second, t, (const struct sockaddr *)&a, t_on_connection,
                          &port);
    CU_ASSERT_EQUAL(r, UV_EADDRINUSE);
    CU_ASSERT_EQUAL(port, 0);
    uv_close((uv_handle_t *)&second, NULL);
    /* a handle never connected has no peer */
    uv_tcp_t lone;
    uv_tcp_init(&t->loop, &lone);
    dt_net_peer_name(&lone, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "?");
    uv_close((uv_handle_t *)&lone, NULL);
    srv_stop(t);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"accept, list, counts, close", test_accept_count_close},
        {"writes", test_write},
        {"pending writes cancelled by a close", test_write_pending_cancelled},
        {"finish: flush, FIN, close", test_finish},
        {"finish with drain; linger", test_finish_drain_and_linger},
        {"eviction victim", test_victim},
        {"refuse", test_refuse},
        {"client side (connect)", test_client_side},
        {"addresses and listen errors", test_addr_and_listen},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"net_conn", NULL, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return dt_test_main(suites);
}
