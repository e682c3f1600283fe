/*
 * pconn.c -- a proxied connection (see pconn.h).
 *
 * Per direction (d = TRACE_DIR_C2S: client -> server, TRACE_DIR_S2C:
 * server -> client) the stream has three offsets, in bytes since the
 * connection opened: in_off (read from the source), out_off (written to the
 * destination) and rel_off (bytes the destination may have: UINT64_MAX,
 * except for replies under --delay-ms).  Bytes in [out_off, in_off) wait in
 * the direction's out buffer.
 *
 * --delay-ms: when a reply's last byte arrives at t, a hold {ready = t +
 * delay, end = in_off} is queued; the connection's timer fires at the
 * earliest ready and moves rel_off to that end (DESIGN.md rule 3: a
 * deadline on the timer heap, not a sleep, so pipelined replies do not
 * queue behind each other's delays).  Bytes of an incomplete reply at the
 * tail wait with it.  Each hold also measures the achieved delay: from
 * arrival to the moment its last byte was handed to the client socket.
 */
#include "pconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/wire.h"
#include "pbuf.h"
#include "pframe.h"

/* A direction's out buffer: the backlog bound, plus one held reply that
 * is still arriving, plus one read. */
#define PCONN_OUT_MAX (PCONN_OUT_HWM + WIRE_MSG_LEN_MAX + PCONN_READ_LEN)

struct phold {
    uint64_t ready_ns, end_off, arrival_ns;
};

struct pdir {
    struct pbuf out;
    uint64_t in_off, out_off, rel_off;
    uint64_t msg_end_off; /* end of the last complete message */
    bool eof;             /* source said EOF */
    bool shut;            /* destination shut down for writing */
    bool wblocked;
    struct pframer fr;
};

struct pconn {
    struct ploop *pl; /* borrowed */
    struct pconn *prev, *next;
    uint64_t id;
    int cfd, sfd; /* owned */
    bool connecting;
    bool paused; /* waiting for queue room */
    bool dead;
    uint8_t reason; /* when dead */
    struct pdir d[2];
    struct phold *holds;                    /* owned ring */
    size_t holds_cap, h_done, h_rel, h_end; /* monotonic indices */
    struct loop_timer hold_timer;
    uint64_t nmsgs[2];     /* complete messages per direction */
    uint64_t last_io_ns;   /* last read or send progress, either side */
    uint64_t msg_start_ns; /* a client message is incomplete since; or 0 */
    char client[64];
};

static void pconn_after(struct pconn *c);

/* ---- helpers ---- */

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

static const char *
pconn_side(int d)
{
    return d == TRACE_DIR_C2S ? "client" : "server";
}

static void
pconn_die(struct pconn *c, uint8_t reason)
{
    if (!c->dead) {
        c->dead = true;
        c->reason = reason;
    }
}

/* Adds a record to the loop's batch (queued before the loop sleeps, or
 * now when the batch is large, so back-pressure sees it). */
static void
pconn_push(struct pconn *c, struct recq_item *it)
{
    struct ploop *pl = c->pl;

    if (recq_batch_add(&pl->batch, it))
        recq_push_batch(pl->p->q, &pl->batch);
}

static bool
pconn_delayed(const struct pconn *c, int d)
{
    return d == TRACE_DIR_S2C && c->pl->p->delay_ns > 0;
}

/* ---- framing the copy ---- */

static void pconn_hold_add(struct pconn *c, uint64_t t_ns, uint64_t end_off);

struct pconn_fctx {
    struct pconn *c;
    int d;
    uint64_t t_ns;
};

static void
pconn_too_big(struct pconn *c, uint32_t len)
{
    if (c->dead)
        return;
    mt_warn("capture: conn %llu from %s: the client announced a message of "
            "%u bytes, over --max-msg-bytes %u, at stream offset %llu; "
            "closing the connection",
            (unsigned long long)c->id, c->client, len, c->pl->p->msg_max,
            (unsigned long long)c->d[TRACE_DIR_C2S].msg_end_off);
    c->pl->st.too_big++;
    pconn_die(c, TRACE_CLOSE_ERROR);
}

/* A whole message was framed: stamp, queue, maybe hold. */
static void
pconn_msg_done(void *arg, struct recq_item *it, uint64_t end_off)
{
    struct pconn_fctx *x = arg;
    struct pconn *c = x->c;
    int d = x->d;

    it->u.msg.conn_id = c->id;
    it->u.msg.t_ns = x->t_ns;
    it->u.msg.dir = (uint8_t)d;
    c->pl->st.msgs[d]++;
    c->nmsgs[d]++;
    c->pl->st.rec_bytes[d] += it->u.msg.wire_len;
    c->d[d].msg_end_off = end_off;
    if (d == TRACE_DIR_C2S && it->u.msg.wire_len > c->pl->p->msg_max)
        pconn_too_big(c, it->u.msg.wire_len);
    pconn_push(c, it);
    if (pconn_delayed(c, d))
        pconn_hold_add(c, x->t_ns, end_off);
}

static void
pconn_frame_error(struct pconn *c, int d, const struct mt_err *err)
{
    struct rd r = rd_init(c->d[d].fr.hdr, WIRE_HEADER_LEN);
    int32_t len = 0, op = 0;

    if (err->code == -ENOMEM) {
        mt_error("capture: conn %llu: out of memory framing a message; "
                 "closing the connection",
                 (unsigned long long)c->id);
        c->pl->st.lost_items++;
        pconn_die(c, TRACE_CLOSE_ERROR);
        return;
    }
    rd_le32s(&r, &len);
    rd_skip(&r, 8);
    rd_le32s(&r, &op);
    mt_warn("capture: conn %llu: the %s sent bytes that are not MongoDB wire "
            "protocol at stream offset %llu (messageLength %d, opCode %d: %s);"
            " closing the connection",
            (unsigned long long)c->id, pconn_side(d),
            (unsigned long long)(c->d[d].msg_end_off), len, op,
            err->msg[0] ? err->msg : mt_strerror(err->code));
    c->pl->st.garbage++;
    pconn_die(c, TRACE_CLOSE_ERROR);
}

/* After framing client bytes: when did the incomplete message start, and
 * does the length it announces fit --max-msg-bytes? */
static void
pconn_frame_check(struct pconn *c, uint64_t msgs_before, uint64_t t_ns)
{
    const struct pframer *fr = &c->d[TRACE_DIR_C2S].fr;
    struct rd r = rd_init(fr->hdr, fr->hdr_len);
    uint32_t len;

    if (pframe_idle(fr)) {
        c->msg_start_ns = 0;
        return;
    }
    if (c->nmsgs[TRACE_DIR_C2S] != msgs_before || c->msg_start_ns == 0)
        c->msg_start_ns = t_ns;
    if (rd_le32(&r, &len) && len > c->pl->p->msg_max)
        pconn_too_big(c, len);
}

/*
 * Frames n bytes just read in direction d (stream offset base), copying
 * them into records; t_ns is when the read returned.
 */
static void
pconn_frame(struct pconn *c, int d, const uint8_t *p, size_t n, uint64_t base,
            uint64_t t_ns)
{
    struct pconn_fctx x = {c, d, t_ns};
    struct mt_err err = {0};
    size_t left = 0;
    bool was_broken = c->d[d].fr.broken;
    uint64_t before = c->nmsgs[d];
    int rc =
        pframe_feed(&c->d[d].fr, p, n, base, pconn_msg_done, &x, &left, &err);

    if (rc == 0) {
        if (d == TRACE_DIR_C2S)
            pconn_frame_check(c, before, t_ns);
        return;
    }
    c->pl->st.unframed[d] += left;
    if (!was_broken) {
        /* what the broken framer holds is never recorded either */
        const struct pframer *fr = &c->d[d].fr;
        c->pl->st.unframed[d] += fr->cur != NULL ? fr->cur_len : fr->hdr_len;
        pconn_frame_error(c, d, &err);
    }
}

/* At close: a message cut short is recorded with what arrived. */
static uint32_t
pconn_frame_flush_partial(struct pconn *c, int d, uint64_t t_ns)
{
    uint32_t len;
    struct recq_item *it = pframe_take_partial(&c->d[d].fr, &len);

    if (len == 0)
        return 0;
    c->pl->st.partial[d]++;
    c->pl->st.partial_bytes[d] += len;
    if (it == NULL) {
        c->pl->st.lost_items++;
        return len;
    }
    it->u.msg.conn_id = c->id;
    it->u.msg.t_ns = t_ns;
    it->u.msg.dir = (uint8_t)d;
    pconn_push(c, it);
    return len;
}

/* ---- holding replies (--delay-ms) ---- */

static int
pconn_holds_grow(struct pconn *c)
{
    size_t cap = c->holds_cap ? c->holds_cap * 2 : 16;
    struct phold *h;

    if (cap > PCONN_HOLDS_MAX)
        return MT_ELIMIT;
    h = mt_malloc(cap * sizeof(*h));
    if (h == NULL)
        return -ENOMEM;
    for (size_t i = c->h_done; i < c->h_end; i++)
        h[i % cap] = c->holds[i % c->holds_cap];
    mt_free(c->holds);
    c->holds = h;
    c->holds_cap = cap;
    return 0;
}

static void pconn_on_hold_timer(struct loop *l, struct loop_timer *t,
                                void *arg);

/* Holds the reply bytes up to end_off until t_ns + delay.  arrival_ns 0:
 * not a whole reply (the tail at EOF), not measured. */
static void
pconn_hold_add(struct pconn *c, uint64_t arrival_ns, uint64_t end_off)
{
    struct phold *h;
    uint64_t t = arrival_ns ? arrival_ns : loop_now_ns(c->pl->l);

    if (c->h_end - c->h_done == c->holds_cap && pconn_holds_grow(c) < 0) {
        mt_error("capture: conn %llu: more than %u replies held; closing",
                 (unsigned long long)c->id, PCONN_HOLDS_MAX);
        pconn_die(c, TRACE_CLOSE_ERROR);
        return;
    }
    h = &c->holds[c->h_end % c->holds_cap];
    h->ready_ns = t + c->pl->p->delay_ns;
    h->end_off = end_off;
    h->arrival_ns = arrival_ns;
    c->h_end++;
    if (!loop_timer_active(&c->hold_timer))
        loop_timer_start(c->pl->l, &c->hold_timer, h->ready_ns,
                         pconn_on_hold_timer, c);
}

/* Measures the achieved delay of each held reply now fully written: from
 * the arrival of its last byte to t_send, when the send that completed it
 * began (the hand-off to the client socket). */
static void
pconn_holds_written(struct pconn *c, uint64_t t_send)
{
    while (c->h_done < c->h_rel) {
        struct phold *h = &c->holds[c->h_done % c->holds_cap];
        if (h->end_off > c->d[TRACE_DIR_S2C].out_off)
            break;
        if (h->arrival_ns != 0)
            phist_add(&c->pl->hist, t_send - h->arrival_ns);
        c->h_done++;
    }
}

/* ---- forwarding ---- */

static void
pconn_flush(struct pconn *c, int d)
{
    struct pdir *pd = &c->d[d];
    int dst = pconn_dst_fd(c, d);
    uint64_t t_send = 0;

    if (d == TRACE_DIR_C2S && c->connecting)
        return;
    if (d == TRACE_DIR_S2C && c->h_done < c->h_rel)
        t_send = mt_now_ns();
    while (pbuf_len(&pd->out) > 0 && !c->dead) {
        size_t n = pbuf_len(&pd->out);
        ssize_t w;
        if (pd->rel_off != UINT64_MAX)
            n = pd->rel_off <= pd->out_off
                    ? 0
                    : (pd->rel_off - pd->out_off < n ? pd->rel_off - pd->out_off
                                                     : n);
        if (n == 0)
            break;
        w = send(dst, pd->out.data + pd->out.head, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pd->wblocked = true;
            break;
        }
        if (w < 0) {
            c->pl->st.resets++;
            pconn_die(c, d == TRACE_DIR_C2S ? TRACE_CLOSE_SERVER_RESET
                                            : TRACE_CLOSE_CLIENT_RESET);
            break;
        }
        pd->out_off += (uint64_t)w;
        c->pl->st.fwd_bytes[d] += (uint64_t)w;
        c->last_io_ns = loop_now_ns(c->pl->l);
        pbuf_consume(&pd->out, (size_t)w);
        if ((size_t)w < n) {
            pd->wblocked = true;
            break;
        }
    }
    if (t_send != 0)
        pconn_holds_written(c, t_send);
    if (pbuf_len(&pd->out) == 0 && pd->eof && !pd->shut && !c->dead) {
        shutdown(dst, SHUT_WR);
        pd->shut = true;
    }
}

static void
pconn_on_hold_timer(struct loop *l, struct loop_timer *t, void *arg)
{
    struct pconn *c = arg;
    struct pdir *pd = &c->d[TRACE_DIR_S2C];
    uint64_t now = loop_now_ns(l);

    while (c->h_rel < c->h_end) {
        struct phold *h = &c->holds[c->h_rel % c->holds_cap];
        if (h->ready_ns > now) {
            loop_timer_start(l, t, h->ready_ns, pconn_on_hold_timer, c);
            break;
        }
        pd->rel_off = h->end_off;
        c->h_rel++;
    }
    pconn_flush(c, TRACE_DIR_S2C);
    pconn_after(c);
}

/* Bytes waiting that count against PCONN_OUT_HWM (not an incomplete held
 * reply: it must be able to complete). */
static size_t
pconn_backlog(const struct pconn *c, int d)
{
    const struct pdir *pd = &c->d[d];
    size_t n = pbuf_len(&pd->out);
    if (pconn_delayed(c, d) && pd->in_off - pd->msg_end_off <= n)
        n -= (size_t)(pd->in_off - pd->msg_end_off);
    return n;
}

static bool
pconn_want_read(const struct pconn *c, int d)
{
    const struct pdir *pd = &c->d[d];
    if (pd->eof || c->paused || c->dead || c->connecting)
        return false;
    if (pconn_backlog(c, d) >= PCONN_OUT_HWM)
        return false;
    if (pconn_delayed(c, d) &&
        c->h_end - c->h_done >
            PCONN_HOLDS_MAX - PCONN_READ_LEN / WIRE_HEADER_LEN)
        return false;
    return true;
}

/* Re-registers c's fds for what each direction can do now. */
static void
pconn_update(struct pconn *c)
{
    struct loop *l = c->pl->l;
    unsigned cev = 0, sev = 0;

    if (c->connecting) {
        sev = LOOP_WRITE;
    } else {
        if (pconn_want_read(c, TRACE_DIR_C2S))
            cev |= LOOP_READ;
        if (pconn_want_read(c, TRACE_DIR_S2C))
            sev |= LOOP_READ;
        if (c->d[TRACE_DIR_S2C].wblocked)
            cev |= LOOP_WRITE;
        if (c->d[TRACE_DIR_C2S].wblocked)
            sev |= LOOP_WRITE;
    }
    (void)loop_fd_mod(l, c->cfd, cev);
    (void)loop_fd_mod(l, c->sfd, sev);
}

/* ---- reading ---- */

/* Forwards n bytes read into scratch directly; keeps what dst refused. */
static void
pconn_forward_direct(struct pconn *c, int d, const uint8_t *p, size_t n)
{
    struct pdir *pd = &c->d[d];
    ssize_t w;

    do
        w = send(pconn_dst_fd(c, d), p, n, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        c->pl->st.resets++;
        pconn_die(c, d == TRACE_DIR_C2S ? TRACE_CLOSE_SERVER_RESET
                                        : TRACE_CLOSE_CLIENT_RESET);
        return;
    }
    if (w < 0)
        w = 0;
    pd->out_off += (uint64_t)w;
    c->pl->st.fwd_bytes[d] += (uint64_t)w;
    if ((size_t)w == n)
        return;
    pd->wblocked = true;
    if (pbuf_reserve(&pd->out, n - (size_t)w, PCONN_OUT_MAX) < 0) {
        mt_error("capture: conn %llu: out of memory buffering %zu bytes; "
                 "closing the connection",
                 (unsigned long long)c->id, n - (size_t)w);
        pconn_die(c, TRACE_CLOSE_ERROR);
        return;
    }
    memcpy(pd->out.data + pd->out.tail, p + w, n - (size_t)w);
    pd->out.tail += n - (size_t)w;
}

static void
pconn_on_eof(struct pconn *c, int d)
{
    struct pdir *pd = &c->d[d];

    pd->eof = true;
    loop_update_time(c->pl->l);
    if (pconn_delayed(c, d) && pd->in_off > pd->msg_end_off)
        pconn_hold_add(c, 0, pd->in_off); /* the incomplete tail follows */
    pconn_flush(c, d);
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
    bool direct;
    uint8_t *p;
    ssize_t n;
    uint64_t t, base;

    if (!force && recq_over(c->pl->p->q)) {
        c->paused = true;
        c->pl->paused_any = true;
        return;
    }
    direct = pbuf_len(&pd->out) == 0 && pd->rel_off == UINT64_MAX;
    if (direct) {
        p = c->pl->scratch;
    } else {
        if (pbuf_reserve(&pd->out, PCONN_READ_LEN, PCONN_OUT_MAX) < 0) {
            mt_error("capture: conn %llu: out of memory for the %s stream; "
                     "closing the connection",
                     (unsigned long long)c->id, pconn_side(d));
            pconn_die(c, TRACE_CLOSE_ERROR);
            return;
        }
        p = pd->out.data + pd->out.tail;
    }
    do
        n = recv(pconn_src_fd(c, d), p, PCONN_READ_LEN, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        c->pl->st.resets++;
        pconn_die(c, d == TRACE_DIR_C2S ? TRACE_CLOSE_CLIENT_RESET
                                        : TRACE_CLOSE_SERVER_RESET);
        return;
    }
    if (n == 0) {
        pconn_on_eof(c, d);
        return;
    }
    t = loop_update_time(c->pl->l);
    c->last_io_ns = t;
    base = pd->in_off;
    pd->in_off += (uint64_t)n;
    c->pl->st.read_bytes[d] += (uint64_t)n;
    if (direct) {
        pconn_forward_direct(c, d, p, (size_t)n);
        pconn_frame(c, d, p, (size_t)n, base, t);
    } else {
        pd->out.tail += (size_t)n;
        pconn_frame(c, d, p, (size_t)n, base, t);
        pconn_flush(c, d);
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

    if (!pd->eof) {
        pconn_read(c, d, true);
        return;
    }
    /* The source already ended; make sure the error is not spinning. */
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr) {
        c->pl->st.resets++;
        pconn_die(c, d == TRACE_DIR_C2S ? TRACE_CLOSE_CLIENT_RESET
                                        : TRACE_CLOSE_SERVER_RESET);
        return;
    }
    pconn_flush(c, 1 - d);
    n = recv(fd, &b, 1, MSG_PEEK);
    if (n <= 0 && !c->dead)
        pconn_die(c, TRACE_CLOSE_NORMAL); /* hung up both ways */
}

static void
pconn_on_client(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct pconn *c = arg;

    if (ev & LOOP_WRITE) {
        c->d[TRACE_DIR_S2C].wblocked = false;
        pconn_flush(c, TRACE_DIR_S2C);
    }
    if ((ev & LOOP_READ) && !c->dead)
        pconn_read(c, TRACE_DIR_C2S, false);
    else if ((ev & LOOP_ERROR) && !c->dead)
        pconn_on_error(c, TRACE_DIR_C2S);
    pconn_after(c);
}

static void
pconn_connected(struct pconn *c)
{
    int soerr = 0;
    socklen_t len = sizeof(soerr);

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
        pconn_die(c, TRACE_CLOSE_UPSTREAM_FAIL);
        return;
    }
    c->connecting = false;
}

static void
pconn_on_server(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct pconn *c = arg;

    if (c->connecting) {
        pconn_connected(c);
    } else {
        if (ev & LOOP_WRITE) {
            c->d[TRACE_DIR_C2S].wblocked = false;
            pconn_flush(c, TRACE_DIR_C2S);
        }
        if ((ev & LOOP_READ) && !c->dead)
            pconn_read(c, TRACE_DIR_S2C, false);
        else if ((ev & LOOP_ERROR) && !c->dead)
            pconn_on_error(c, TRACE_DIR_S2C);
    }
    pconn_after(c);
}

/* Closes c when it is dead or both directions are done; else re-arms. */
static void
pconn_after(struct pconn *c)
{
    if (c->dead)
        pconn_close(c, c->reason);
    else if (c->d[0].eof && c->d[0].shut && c->d[1].eof && c->d[1].shut)
        pconn_close(c, TRACE_CLOSE_NORMAL);
    else
        pconn_update(c);
}

/* ---- life cycle ---- */

/* Formats sa as "1.2.3.4:5" or "[::1]:5" into out. */
void
pconn_format_addr(const struct sockaddr *sa, char *out, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        snprintf(out, len, "%s:%u", ip, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(out, len, "[%s]:%u", ip, ntohs(in6->sin6_port));
    } else {
        snprintf(out, len, "?");
    }
}

static void
pconn_record_open(struct pconn *c)
{
    struct recq_item *it = recq_batch_item(&c->pl->batch, RECQ_OPEN, 0);

    if (it == NULL) {
        c->pl->st.lost_items++;
        return;
    }
    it->u.open.conn_id = c->id;
    it->u.open.t_ns = loop_update_time(c->pl->l);
    snprintf(it->u.open.client, sizeof(it->u.open.client), "%s", c->client);
    snprintf(it->u.open.server, sizeof(it->u.open.server), "%s",
             c->pl->p->target_desc);
    pconn_push(c, it);
}

static int
pconn_connect(struct pconn *c)
{
    const struct proxy *p = c->pl->p;
    int one = 1;

    c->sfd = socket(p->target.ss_family,
                    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->sfd < 0)
        return -errno;
    (void)setsockopt(c->sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c->sfd, (const struct sockaddr *)&p->target, p->target_len) ==
        0)
        return 0;
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
    int one = 1, rc;

    if (atomic_fetch_add(&p->nconns, 1) >= p->max_conns) {
        atomic_fetch_sub(&p->nconns, 1);
        if (pl->st.refused++ == 0)
            mt_warn("capture: --max-conns %u reached; refusing new "
                    "connections until some close",
                    p->max_conns);
        close(cfd);
        return;
    }
    c = mt_calloc(1, sizeof(*c));
    if (c == NULL) {
        mt_error("capture: out of memory accepting a connection");
        atomic_fetch_sub(&p->nconns, 1);
        close(cfd);
        return;
    }
    c->pl = pl;
    c->id = atomic_fetch_add(&p->next_id, 1);
    c->cfd = cfd;
    c->sfd = -1;
    c->d[TRACE_DIR_C2S].rel_off = UINT64_MAX;
    c->d[TRACE_DIR_S2C].rel_off = p->delay_ns > 0 ? 0 : UINT64_MAX;
    c->d[TRACE_DIR_C2S].fr.pool = &pl->batch;
    c->d[TRACE_DIR_S2C].fr.pool = &pl->batch;
    loop_timer_init(&c->hold_timer);
    c->last_io_ns = loop_update_time(pl->l);
    pconn_format_addr(peer, c->client, sizeof(c->client));
    (void)peer_len;
    (void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->next = pl->conns;
    if (pl->conns != NULL)
        pl->conns->prev = c;
    pl->conns = c;
    pl->nconns++;
    atomic_fetch_add(&pl->load, 1);
    pl->st.accepted++;
    pconn_record_open(c);

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
    if ((rc = loop_fd_add(pl->l, cfd, 0, pconn_on_client, c)) < 0 ||
        (rc = loop_fd_add(pl->l, c->sfd, 0, pconn_on_server, c)) < 0) {
        mt_error("capture: conn %llu: cannot watch its sockets: %s; closing",
                 (unsigned long long)c->id, mt_strerror(rc));
        pconn_close(c, TRACE_CLOSE_ERROR);
        return;
    }
    pconn_update(c);
}

static void
pconn_record_close(struct pconn *c, uint8_t reason)
{
    uint64_t t = loop_update_time(c->pl->l);
    uint32_t pc = pconn_frame_flush_partial(c, TRACE_DIR_C2S, t);
    uint32_t ps = pconn_frame_flush_partial(c, TRACE_DIR_S2C, t);
    struct recq_item *it = recq_batch_item(&c->pl->batch, RECQ_CLOSE, 0);

    if (it == NULL) {
        c->pl->st.lost_items++;
        return;
    }
    it->u.close.conn_id = c->id;
    it->u.close.t_ns = t;
    it->u.close.reason = reason;
    it->u.close.partial_c2s = pc;
    it->u.close.partial_s2c = ps;
    pconn_push(c, it);
}

/* See pconn.h.  Frees c. */
void
pconn_close(struct pconn *c, uint8_t reason)
{
    struct ploop *pl = c->pl;

    pconn_record_close(c, reason);
    for (int d = 0; d < 2; d++) {
        pl->st.unsent[d] += c->d[d].in_off - c->d[d].out_off;
        pbuf_free(&c->d[d].out);
    }
    loop_fd_del(pl->l, c->cfd);
    close(c->cfd);
    if (c->sfd >= 0) {
        loop_fd_del(pl->l, c->sfd);
        close(c->sfd);
    }
    loop_timer_stop(pl->l, &c->hold_timer);
    mt_free(c->holds);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        pl->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    pl->nconns--;
    atomic_fetch_sub(&pl->load, 1);
    atomic_fetch_sub(&pl->p->nconns, 1);
    mt_free(c);
}

/* See pconn.h. */
bool
pconn_quiet(const struct pconn *c)
{
    for (int d = 0; d < 2; d++) {
        const struct pdir *pd = &c->d[d];
        if (pbuf_len(&pd->out) > 0 || !pframe_idle(&pd->fr))
            return false;
    }
    if (c->h_rel < c->h_end || c->connecting)
        return false;
    /* a request still waits for its reply */
    return c->nmsgs[TRACE_DIR_C2S] <= c->nmsgs[TRACE_DIR_S2C];
}

/* See pconn.h. */
void
pconn_resume(struct pconn *c)
{
    if (!c->paused)
        return;
    c->paused = false;
    pconn_update(c);
}

/* See pconn.h. */
bool
pconn_sweep(struct pconn *c, uint64_t now_ns)
{
    const struct proxy *p = c->pl->p;
    uint8_t reason = TRACE_CLOSE_ERROR;
    /* replies wait for a client that does not read them */
    bool stuck =
        pbuf_len(&c->d[TRACE_DIR_S2C].out) > 0 && c->d[TRACE_DIR_S2C].wblocked;

    if (c->msg_start_ns != 0 && !pconn_want_read(c, TRACE_DIR_C2S))
        c->msg_start_ns = now_ns; /* not read by us: not the client's fault */
    if (p->msg_timeout_ns && c->msg_start_ns != 0 &&
        now_ns - c->msg_start_ns >= p->msg_timeout_ns) {
        mt_warn("capture: conn %llu from %s: incomplete client message "
                "(%llu bytes in, message not complete after %.1f s, "
                "--msg-timeout-s); closing the connection",
                (unsigned long long)c->id, c->client,
                (unsigned long long)(c->d[TRACE_DIR_C2S].in_off -
                                     c->d[TRACE_DIR_C2S].msg_end_off),
                (double)(now_ns - c->msg_start_ns) / 1e9);
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
