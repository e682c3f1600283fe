/*
 * pconn.c -- a proxied connection: its sockets (see pconn.h).
 *
 * Per direction (d = TRACE_DIR_C2S: client -> server, TRACE_DIR_S2C:
 * server -> client) what is read, forwarded, framed and held is a struct
 * pstream (pstream.h: no sockets there); this file reads the source, sends
 * what the stream says may go, and follows the sockets' ends and resets.
 * --delay-ms's timer is pdelay.c; recording's records are precord.c.
 */
#include "pconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/srv.h"
#include "core/tls.h"
#include "core/wire.h"
#include "pdelay.h"
#include "precord.h"
#include "prst.h"
#include "ptls.h"

/* A direction's out buffer: the backlog bound, plus one held reply that
 * is still arriving, plus one read. */
#define PCONN_OUT_MAX (PCONN_OUT_HWM + WIRE_MSG_LEN_MAX + PCONN_READ_LEN)

/*
 * Both sockets are registered once, edge-triggered, for reading and
 * writing: no epoll_ctl per event, and the kernel does not re-poll a
 * socket the proxy has drained.  EPOLLOUT edges are acted on only while
 * a direction is write-blocked (after EAGAIN).
 */
#define PCONN_FD_EVENTS                                                        \
    (LOOP_READ | LOOP_WRITE | LOOP_EDGE | LOOP_RDHUP | LOOP_PRI)

/*
 * TCP urgent data (MSG_OOB) stays in the stream (SO_OOBINLINE): the
 * MongoDB protocol has none, and without it the kernel would take the
 * urgent byte out of what the proxy reads, forwards and records.  recv()
 * still stops short at the urgent mark: LOOP_PRI marks the source "not
 * drained by a short read" (pdir.fin) until its next EAGAIN.
 */
static void
pconn_sock_opts(int fd)
{
    int one = 1;

    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    (void)setsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one));
}

/* ---- helpers ---- */

/*
 * recv()/send() on the forwarding path, without glibc's cancellation
 * bracket: its recv and send are cancellation points and, in a threaded
 * process, update the thread's cancel state atomically before and after
 * each syscall (__pthread_enable/disable_asynccancel: ~4 % of the proxy's
 * CPU samples at 256 connections, perf cpu-clock).  The proxy never
 * cancels a thread.  Same return value and errno as recv/send.
 */
static inline ssize_t
pconn_sys_recv(int fd, void *buf, size_t len)
{
    return syscall(SYS_recvfrom, fd, buf, len, 0, NULL, NULL);
}

static inline ssize_t
pconn_sys_send(int fd, const void *buf, size_t len)
{
    return syscall(SYS_sendto, fd, buf, len, MSG_NOSIGNAL, NULL, 0);
}

/*
 * Sends to the destination of d: the syscall, or TLS when that socket is
 * a TLS one (--tls-cert, --target-tls).  One test of a pointer c already
 * has in cache; plain connections take no other extra step.
 */
static inline ssize_t
pconn_send(const struct pconn *c, int d, const void *buf, size_t len)
{
    if (__builtin_expect(c->tls[1 - d] != NULL, 0))
        return tls_send(c->tls[1 - d], buf, len);
    return pconn_sys_send(d == TRACE_DIR_C2S ? c->sfd : c->cfd, buf, len);
}

static int
pconn_src_fd(const struct pconn *c, int d)
{
    return d == TRACE_DIR_C2S ? c->cfd : c->sfd;
}

static int
pconn_dst_fd(const struct pconn *c, int d)
{
    return d == TRACE_DIR_C2S ? c->sfd : c->cfd;
}

/* The destination of d reset: nothing more can be sent to it. */
static bool
pconn_dst_gone(const struct pconn *c, int d)
{
    return c->d[1 - d].rst || c->d[1 - d].tx_rst;
}

static void pconn_on_reset(struct pconn *c, int d);

/*
 * A send to the destination of d failed with errno err.  A reset
 * (ECONNRESET, EPIPE) is read from that socket as its source side: it
 * may still hold bytes sent before the reset, which the other side gets
 * first (pconn_on_reset).  Other errors close c.
 */
static void
pconn_send_failed(struct pconn *c, int d, int err)
{
    if (c->tls[1 - d] != NULL && err == EPROTO)
        ptls_log_error(c, 1 - d, "sending to");
    if ((err == ECONNRESET || err == EPIPE) && c->d[1 - d].eof) {
        pconn_on_reset(c, 1 - d); /* it had ended: nothing left to read */
        return;
    }
    if (err == ECONNRESET || err == EPIPE) {
        c->d[1 - d].tx_rst = true;
        c->d[1 - d].rpend = true;
        c->d[1 - d].fin = true;
        return;
    }
    c->pl->st.resets++;
    pconn__die(c, d == TRACE_DIR_C2S ? TRACE_CLOSE_SERVER_RESET
                                     : TRACE_CLOSE_CLIENT_RESET);
}

/* See pconn.h. */
const char *
pconn__side(int d)
{
    return d == TRACE_DIR_C2S ? "client" : "server";
}

/* See pconn.h. */
void
pconn__die(struct pconn *c, uint8_t reason)
{
    if (!c->dead) {
        c->dead = true;
        c->reason = reason;
    }
}

/* See pconn.h: queued before the loop sleeps, or now when the batch is
 * large, so back-pressure sees it. */
void
pconn__push(struct pconn *c, struct recq_item *it)
{
    struct ploop *pl = c->pl;

    if (recq_batch_add(&pl->batch, it))
        recq_push_batch(pl->p->q, &pl->batch);
}

/* ---- forwarding ---- */

/* See pconn.h. */
void
pconn__flush(struct pconn *c, int d)
{
    struct pdir *pd = &c->d[d];
    int dst = pconn_dst_fd(c, d);
    uint64_t t_send = 0;

    if ((d == TRACE_DIR_C2S && c->connecting) || pconn_dst_gone(c, d))
        return; /* the destination reset: what waits counts as unsent */
    if (pstream_releasing(&pd->s))
        t_send = mt_now_ns();
    while (pbuf_len(&pd->s.out) > 0 && !c->dead) {
        size_t n = pstream_sendable(&pd->s);
        ssize_t w;
        if (n == 0)
            break;
        w = pconn_send(c, d, pd->s.out.data + pd->s.out.head, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pd->wblocked = true;
            break;
        }
        if (w < 0) {
            pconn_send_failed(c, d, errno);
            break;
        }
        pstream_sent(&pd->s, (size_t)w, true);
        c->pl->st.fwd_bytes[d] += (uint64_t)w;
        c->last_io_ns = loop_now_ns(c->pl->l);
        /* a short write: the next send says EAGAIN, which arms the
         * EPOLLOUT edge (or sends more) */
    }
    if (t_send != 0)
        pstream_written(&pd->s, t_send, &c->pl->hist);
    if (pbuf_len(&pd->s.out) == 0 && pd->eof && !pd->shut && !c->dead) {
        pd->shut = true;
        if (pd->rst) {
            prst_wait(c, d); /* all delivered: reset dst in turn */
        } else {
            if (c->tls[1 - d] != NULL)
                ptls_notify(c, d); /* close_notify, then the FIN */
            shutdown(dst, SHUT_WR);
        }
    }
}

static bool
pconn_want_read(const struct pconn *c, int d)
{
    const struct pdir *pd = &c->d[d];
    if (pd->eof || c->paused || c->dead || c->connecting ||
        pconn_dst_gone(c, d))
        return false;
    if (pstream_backlog(&pd->s) >= PCONN_OUT_HWM)
        return false;
    if (pdelay_on(c, d) &&
        pd->s.h_end - pd->s.h_done >
            PSTREAM_HOLDS_MAX - PCONN_READ_LEN / WIRE_HEADER_LEN)
        return false;
    return true;
}

/* The source of d may hold bytes and d may read them now. */
static bool
pconn_read_more(const struct pconn *c, int d)
{
    return c->d[d].rpend && pconn_want_read(c, d);
}

/* Queues c to be read again before its loop sleeps. */
static void
pconn_pend_add(struct pconn *c)
{
    ppend_add(&c->pl->pend, &c->pend);
}

/* ---- reading ---- */

/* Forwards n bytes read into scratch directly; keeps what dst refused. */
static void
pconn_forward_direct(struct pconn *c, int d, const uint8_t *p, size_t n)
{
    struct pdir *pd = &c->d[d];
    ssize_t w;

    if (pconn_dst_gone(c, d))
        return; /* the destination reset: counted as unsent */
    do
        w = pconn_send(c, d, p, n);
    while (w < 0 && errno == EINTR);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        pconn_send_failed(c, d, errno);
        return;
    }
    if (w < 0) {
        w = 0;
        pd->wblocked = true; /* EAGAIN: an EPOLLOUT edge will come */
    }
    pstream_sent(&pd->s, (size_t)w, false);
    c->pl->st.fwd_bytes[d] += (uint64_t)w;
    if ((size_t)w == n)
        return;
    if (pbuf_reserve(&pd->s.out, n - (size_t)w, PCONN_OUT_MAX) < 0) {
        mt_error("capture: conn %llu: out of memory buffering %zu bytes; "
                 "closing the connection",
                 (unsigned long long)c->id, n - (size_t)w);
        pconn__die(c, TRACE_CLOSE_ERROR);
        return;
    }
    memcpy(pd->s.out.data + pd->s.out.tail, p + w, n - (size_t)w);
    pd->s.out.tail += n - (size_t)w;
    if (w > 0)
        pconn__flush(c, d); /* a short write: send until EAGAIN */
}

static void
pconn_on_eof(struct pconn *c, int d)
{
    struct pdir *pd = &c->d[d];

    pd->eof = true;
    if (pdelay_on(c, d)) /* the incomplete tail follows */
        pdelay_eof(c, loop_update_time(c->pl->l));
    pconn__flush(c, d);
}

/* ---- a source that reset ---- */

/*
 * The source of d reset (recv failed with ECONNRESET or another error)
 * after the bytes read so far: those still go to the destination (Linux
 * lets a reader have the bytes queued before a reset, and so does the
 * proxy), then prst_wait resets the destination.  Nothing more is
 * read from the other side (its destination is gone); when both sides
 * reset, c closes at once.
 */
static void
pconn_on_reset(struct pconn *c, int d)
{
    struct pdir *pd = &c->d[d];

    c->pl->st.resets++;
    pd->rst = true;
    pd->rpend = false;
    if (c->d[1 - d].rst) {
        pconn__die(c, d == TRACE_DIR_C2S ? TRACE_CLOSE_CLIENT_RESET
                                         : TRACE_CLOSE_SERVER_RESET);
        return;
    }
    if (!pd->eof)
        pconn_on_eof(c, d); /* holds the incomplete tail (--delay-ms) */
    else if (pd->shut)
        prst_wait(c, d); /* data and FIN were delivered: reset after them */
    pconn__flush(c, d);  /* when it empties: prst_wait (pconn__flush) */
}

/*
 * One read from the source of direction d.  Undelayed, with nothing
 * waiting: read into the loop's scratch buffer, send at once, then frame
 * the copy.  Otherwise read behind what waits and frame before flushing
 * (framing creates the holds that release delayed replies).
 */
static void
pconn_read(struct pconn *c, int d, bool force)
{
    struct pdir *pd = &c->d[d];
    bool direct, more = false;
    uint8_t *p;
    ssize_t n;
    uint64_t t;

    if (!force && recq_over(c->pl->p->q)) {
        c->paused = true;
        c->pl->paused_any = true;
        return;
    }
    direct = pstream_direct(&pd->s);
    if (direct) {
        p = c->pl->scratch;
    } else {
        if (pbuf_reserve(&pd->s.out, PCONN_READ_LEN, PCONN_OUT_MAX) < 0) {
            mt_error("capture: conn %llu: out of memory for the %s stream; "
                     "closing the connection",
                     (unsigned long long)c->id, pconn__side(d));
            pconn__die(c, TRACE_CLOSE_ERROR);
            return;
        }
        p = pd->s.out.data + pd->s.out.tail;
    }
    if (__builtin_expect(c->tls[d] != NULL, 0))
        n = tls_recv(c->tls[d], p, PCONN_READ_LEN, &more);
    else
        do
            n = pconn_sys_recv(pconn_src_fd(c, d), p, PCONN_READ_LEN);
        while (n < 0 && errno == EINTR);
    if (n <= 0)
        pd->rpend = false; /* drained, at EOF, or dead */
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            pd->fin = false; /* drained: a later urgent mark is an edge */
            return;
        }
        if (c->tls[d] != NULL && errno == EPROTO)
            ptls_log_error(c, d, "from");
        pconn_on_reset(c, d);
        return;
    }
    if (n == 0) {
        if (pd->tx_rst)
            pconn_on_reset(c, d); /* the EOF of a socket that reset */
        else
            pconn_on_eof(c, d);
        return;
    }
    /* A short read emptied the receive queue: more data or a FIN that
     * comes later is a new edge.  Only a FIN (or error) reported before
     * this read may wait behind it, unseen, or bytes after an urgent
     * mark (recv stops there). */
    if (__builtin_expect(c->tls[d] != NULL, 0)) {
        if (!more) /* OpenSSL met EAGAIN: drained */
            pd->rpend = pd->fin = false;
    } else if ((size_t)n < PCONN_READ_LEN && !pd->fin) {
        pd->rpend = false;
    }
    t = loop_update_time(c->pl->l);
    c->last_io_ns = t;
    c->pl->st.read_bytes[d] += (uint64_t)n;
    pstream_read(&pd->s, (size_t)n);
    if (direct) {
        pconn_forward_direct(c, d, p, (size_t)n);
        precord_frame(c, d, p, (size_t)n, t);
    } else {
        pd->s.out.tail += (size_t)n;
        precord_frame(c, d, p, (size_t)n, t);
        pconn__flush(c, d);
    }
}

/* ---- events ---- */

static void
pconn_on_error(struct pconn *c, int d)
{
    struct pdir *pd = &c->d[d];
    int fd = pconn_src_fd(c, d), soerr = 0;
    socklen_t len = sizeof(soerr);
    uint8_t b;
    ssize_t n;

    if (pd->rst)
        return; /* its reset was read: prst_wait takes it from here */
    if (!pd->eof) {
        pconn_read(c, d, true);
        return;
    }
    /* The source already ended; make sure the error is not spinning. */
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr) {
        c->pl->st.resets++;
        pconn__die(c, d == TRACE_DIR_C2S ? TRACE_CLOSE_CLIENT_RESET
                                         : TRACE_CLOSE_SERVER_RESET);
        return;
    }
    pconn__flush(c, 1 - d);
    n = recv(fd, &b, 1, MSG_PEEK);
    if (n <= 0 && !c->dead)
        pconn__die(c, TRACE_CLOSE_NORMAL); /* hung up both ways */
}

/*
 * An event on the fd that is the source of direction d (and the
 * destination of 1 - d).  The fds are edge-triggered: what the event says
 * is remembered (rpend, fin) and pconn__after reads until EAGAIN or EOF,
 * or puts c on the pending list when it stops earlier.
 */
static void
pconn_on_event(struct pconn *c, int d, unsigned ev)
{
    struct pdir *src = &c->d[d], *back = &c->d[1 - d];

    if (ev & (LOOP_READ | LOOP_ERROR))
        src->rpend = true;
    if (ev & (LOOP_RDHUP | LOOP_ERROR | LOOP_PRI))
        src->fin = true;
    if (__builtin_expect(c->tls[d] != NULL, 0) && (ev & LOOP_WRITE) &&
        tls_wants_write(c->tls[d]))
        src->rpend = true; /* OpenSSL had to write before reading on */
    if (c->connecting)
        return;
    if ((ev & LOOP_WRITE) && back->wblocked) {
        back->wblocked = false;
        pconn__flush(c, 1 - d);
    }
    if ((ev & LOOP_ERROR) && !c->dead && (src->eof || !pconn_want_read(c, d)))
        pconn_on_error(c, d);
}

static void
pconn_on_client(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct pconn *c = arg;

    pconn_on_event(c, TRACE_DIR_C2S, ev);
    if (c->connecting && c->tls_hs)
        ptls_step(c);
    pconn__after(c);
}

static void
pconn_connected(struct pconn *c)
{
    int soerr = 0;
    socklen_t len = sizeof(soerr);

    if (c->tcp_up) {
        ptls_step(c); /* a TLS handshake is in progress */
        return;
    }
    if (getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
        soerr = errno;
    if (soerr == EINPROGRESS)
        return;
    if (soerr != 0) {
        mt_warn("capture: conn %llu from %s: cannot connect to the target "
                "%s: %s; closing the client connection",
                (unsigned long long)c->id, c->client, c->pl->p->target_desc,
                strerror(soerr));
        c->pl->st.upstream_fail++;
        pconn__die(c, TRACE_CLOSE_UPSTREAM_FAIL);
        return;
    }
    c->tcp_up = true;
    c->up_ns = loop_update_time(c->pl->l);
    if (c->tls_hs)
        ptls_step(c); /* c stops connecting once the handshakes are done */
    else
        c->connecting = false;
}

static void
pconn_on_server(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct pconn *c = arg;

    pconn_on_event(c, TRACE_DIR_S2C, ev); /* only remembers, if connecting */
    if (c->connecting)
        pconn_connected(c); /* then pconn__after reads what waits */
    pconn__after(c);
}

/*
 * See pconn.h: reads what each direction may read (at most
 * PCONN_READ_BUDGET reads; c joins the pending list if it stopped with
 * its socket still readable), then closes c when it is dead or both
 * directions are done.
 */
void
pconn__after(struct pconn *c)
{
    for (int d = 0; d < 2 && !c->dead; d++)
        for (int i = 0; i < PCONN_READ_BUDGET && pconn_read_more(c, d); i++)
            pconn_read(c, d, false);
    if (c->dead)
        pconn_close(c, c->reason);
    else if (c->d[0].eof && c->d[0].shut && c->d[1].eof && c->d[1].shut &&
             !c->rst_wait) /* a reset side: prst.c closes c */
        pconn_close(c, TRACE_CLOSE_NORMAL);
    else if (pconn_read_more(c, 0) || pconn_read_more(c, 1))
        pconn_pend_add(c);
}

/* ---- life cycle ---- */

static int
pconn_connect(struct pconn *c)
{
    const struct proxy *p = c->pl->p;

    c->sfd = socket(p->target.ss_family,
                    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->sfd < 0)
        return -errno;
    pconn_sock_opts(c->sfd);
    if (connect(c->sfd, (const struct sockaddr *)&p->target, p->target_len) ==
        0) {
        c->tcp_up = true;
        c->up_ns = loop_update_time(c->pl->l);
        return 0;
    }
    if (errno == EINPROGRESS) {
        c->connecting = true;
        return 0;
    }
    return -errno;
}

/* See pconn.h. */
void
pconn_accept(struct ploop *pl, int cfd, const struct sockaddr *peer,
             socklen_t peer_len)
{
    struct proxy *p = pl->p;
    struct pconn *c;
    int rc;

    c = mt_calloc(1, sizeof(*c));
    if (c == NULL) {
        mt_error("capture: out of memory accepting a connection");
        close(cfd);
        srv_conn_done(p->srv, pl->idx);
        return;
    }
    c->pl = pl;
    c->id = atomic_fetch_add(&p->next_id, 1);
    c->cfd = cfd;
    c->sfd = -1;
    pstream_init(&c->d[TRACE_DIR_C2S].s, c->id, TRACE_DIR_C2S, 0, p->msg_max,
                 &pl->batch, precord_emit, c);
    pstream_init(&c->d[TRACE_DIR_S2C].s, c->id, TRACE_DIR_S2C, p->delay_ns, 0,
                 &pl->batch, precord_emit, c);
    c->d[TRACE_DIR_C2S].rpend = true; /* unknown until its first EAGAIN */
    c->d[TRACE_DIR_S2C].rpend = true;
    loop_timer_init(&c->hold_timer);
    loop_timer_init(&c->rst_timer);
    c->last_io_ns = c->open_ns = loop_update_time(pl->l);
    mt_addr_format(peer, c->client, sizeof(c->client));
    (void)peer_len;
    pconn_sock_opts(cfd);
    c->next = pl->conns;
    if (pl->conns != NULL)
        pl->conns->prev = c;
    pl->conns = c;
    pl->nconns++;
    pl->st.accepted++;
    precord_open(c);

    rc = pconn_connect(c);
    if (rc < 0) {
        mt_warn("capture: conn %llu from %s: cannot connect to the target %s:"
                " %s; closing the client connection",
                (unsigned long long)c->id, c->client, p->target_desc,
                strerror(-rc));
        pl->st.upstream_fail++;
        pconn_close(c, TRACE_CLOSE_UPSTREAM_FAIL);
        return;
    }
    if ((p->tls_accept != NULL || p->tls_connect != NULL) &&
        ptls_conn_init(c) < 0) {
        mt_error("capture: conn %llu: out of memory for its TLS state; "
                 "closing",
                 (unsigned long long)c->id);
        pconn_close(c, TRACE_CLOSE_ERROR);
        return;
    }
    if ((rc = loop_fd_add(pl->l, cfd, PCONN_FD_EVENTS, pconn_on_client, c)) <
            0 ||
        (rc = loop_fd_add(pl->l, c->sfd, PCONN_FD_EVENTS, pconn_on_server, c)) <
            0) {
        mt_error("capture: conn %llu: cannot watch its sockets: %s; closing",
                 (unsigned long long)c->id, mt_strerror(rc));
        pconn_close(c, TRACE_CLOSE_ERROR);
        return;
    }
    if (c->tls_hs)
        ptls_step(c); /* the ClientHello may be in already */
    pconn__after(c);
}

/* See pconn.h.  Frees c. */
void
pconn_close(struct pconn *c, uint8_t reason)
{
    struct ploop *pl = c->pl;

    precord_close(c, reason);
    ppend_del(&pl->pend, &c->pend);
    for (int d = 0; d < 2; d++) {
        const struct pstream *s = &c->d[d].s;
        pl->st.unsent[d] += s->in_off - s->out_off;
        pl->st.msgs[d] += s->msgs;
        pl->st.rec_bytes[d] += s->rec_bytes;
        pl->st.unframed[d] += s->unframed;
        pstream_free(&c->d[d].s);
        if (c->d[d].rst && !c->d[1 - d].rst)
            prst_linger0(pconn_dst_fd(c, d)); /* as its source did */
    }
    loop_timer_stop(pl->l, &c->rst_timer);
    if (c->tls[0] != NULL || c->tls[1] != NULL)
        ptls_conn_free(c);
    loop_fd_del(pl->l, c->cfd);
    close(c->cfd);
    if (c->sfd >= 0) {
        loop_fd_del(pl->l, c->sfd);
        close(c->sfd);
    }
    pdelay_close(c);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        pl->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    pl->nconns--;
    srv_conn_done(pl->p->srv, pl->idx);
    mt_free(c);
}

/* See pconn.h. */
bool
pconn_quiet(const struct pconn *c)
{
    for (int d = 0; d < 2; d++)
        if (!pstream_idle(&c->d[d].s))
            return false;
    /* on the pending list: its socket still holds bytes (edge-triggered:
     * no event will say so again) */
    if (c->connecting || c->pend.on || c->rst_wait)
        return false;
    /* a request still waits for its reply */
    return c->d[TRACE_DIR_C2S].s.msgs <= c->d[TRACE_DIR_S2C].s.msgs;
}

/* See pconn.h. */
void
pconn_resume(struct pconn *c)
{
    if (!c->paused)
        return;
    c->paused = false;
    pconn_pend_add(c);
}

/*
 * See pconn.h.  Serves, one at a time from the live list, the connections
 * that were pending when it was called; those that stop again (budget, or
 * the queue filled again) rejoin pl->pend for the next turn.  Serving one
 * may close any other (pconn_close unlinks it from the live list).
 */
bool
pconn_serve_pending(struct ploop *pl)
{
    struct ppend_node *n;

    ppend_round_begin(&pl->pend);
    while ((n = ppend_round_next(&pl->pend)) != NULL) {
        struct pconn *c =
            (struct pconn *)((char *)n - offsetof(struct pconn, pend));
        pconn__after(c); /* may close c or put it back on pl->pend */
    }
    return !ppend_empty(&pl->pend);
}

/* See pconn.h. */
bool
pconn_sweep(struct pconn *c, uint64_t now_ns)
{
    const struct proxy *p = c->pl->p;
    uint8_t reason = TRACE_CLOSE_ERROR;
    /* replies wait for a client that does not read them */
    struct pstream *cs = &c->d[TRACE_DIR_C2S].s;
    bool stuck = (pbuf_len(&c->d[TRACE_DIR_S2C].s.out) > 0 &&
                  c->d[TRACE_DIR_S2C].wblocked) ||
                 c->rst_wait;

    if (cs->msg_start_ns != 0 && !pconn_want_read(c, TRACE_DIR_C2S))
        cs->msg_start_ns = now_ns; /* not read by us: not the client's fault */
    if (c->tls_hs && ptls_expired(c, now_ns)) {
        /* logged */
    } else if (p->msg_timeout_ns && cs->msg_start_ns != 0 &&
               now_ns - cs->msg_start_ns >= p->msg_timeout_ns) {
        mt_warn("capture: conn %llu from %s: incomplete client message "
                "(%llu bytes in, message not complete after %.1f s, "
                "--msg-timeout-s); closing the connection",
                (unsigned long long)c->id, c->client,
                (unsigned long long)(cs->in_off - cs->msg_end_off),
                (double)(now_ns - cs->msg_start_ns) / 1e9);
    } else if (p->idle_ns && now_ns - c->last_io_ns >= p->idle_ns &&
               (pconn_quiet(c) || stuck)) {
        mt_warn("capture: conn %llu from %s: idle for %.1f s "
                "(--idle-timeout-s)%s; closing the connection",
                (unsigned long long)c->id, c->client,
                (double)(now_ns - c->last_io_ns) / 1e9,
                stuck ? ", the client does not read its replies" : "");
        reason = TRACE_CLOSE_IDLE;
    } else {
        return false;
    }
    c->pl->st.timeouts++;
    pconn_close(c, reason);
    return true;
}

/* See pconn.h. */
struct pconn *
pconn_next(const struct pconn *c)
{
    return c->next;
}
