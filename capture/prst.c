/*
 * prst.c -- resetting the other side of a proxied connection after one
 * side reset and its data was delivered (see prst.h).
 *
 * With a direct connection, Linux lets the reader have the bytes queued
 * before a reset (tcp_recvmsg returns queued data before sk_err), then
 * reports ECONNRESET.  The proxy reproduces that: pconn.c delivers what
 * it read, then this file waits until the destination's send queue is
 * empty -- unsent plus unacknowledged bytes, SIOCOUTQ -- because a close
 * with SO_LINGER 0 would throw away bytes still in it, and only then
 * closes with a reset.
 */
#include "prst.h"

#include <sys/ioctl.h>
#include <sys/socket.h>

#include <linux/sockios.h>

#include "core/trace.h"

static void
prst_poll(struct loop *l, struct loop_timer *t, void *arg)
{
    struct pconn *c = arg;
    int d = c->d[TRACE_DIR_C2S].rst ? TRACE_DIR_C2S : TRACE_DIR_S2C;
    int dst = d == TRACE_DIR_C2S ? c->sfd : c->cfd;
    int outq = 0;

    (void)t;
    if (ioctl(dst, SIOCOUTQ, &outq) < 0 || outq <= 0) {
        pconn__die(c, d == TRACE_DIR_C2S ? TRACE_CLOSE_CLIENT_RESET
                                         : TRACE_CLOSE_SERVER_RESET);
        pconn__after(c); /* closes c */
        return;
    }
    if (outq != c->rst_outq) {
        c->rst_outq = outq;
        c->last_io_ns = loop_now_ns(l); /* the peer is reading */
    }
    loop_timer_start(l, &c->rst_timer, loop_deadline_after(l, PRST_POLL_NS),
                     prst_poll, c);
}

/* See prst.h. */
void
prst_wait(struct pconn *c, int d)
{
    MT_ASSERT(c->d[d].rst);
    c->rst_wait = true;
    c->rst_outq = -1;
    loop_timer_start(c->pl->l, &c->rst_timer, loop_now_ns(c->pl->l), prst_poll,
                     c);
}

/* See prst.h. */
void
prst_linger0(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};

    if (fd >= 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}
