/*
 * sconn.c -- the socket side of one replay connection (see sconn.h).
 */
#include "sconn.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/rd.h"
#include "core/tls.h"
#include "tlsstats.h"

#define READ_CHUNK (64u * 1024)
#define IN_MAX ((size_t)WIRE_MSG_LEN_MAX + READ_CHUNK)
#define OUT_MAX ((size_t)64 << 20)

/* ---- writing ---- */

static void
sconn_watch(struct sconn *c, unsigned ev)
{
    if (ev == c->watching || c->dead)
        return;
    if (loop_fd_mod(c->l, c->fd, ev) == 0)
        c->watching = ev;
}

static void
sconn_flush(struct sconn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t n = c->tls != NULL ? tls_send(c->tls, c->out.data + c->out_off,
                                              c->out.len - c->out_off)
                                   : write(c->fd, c->out.data + c->out_off,
                                           c->out.len - c->out_off);
        if (c->write_t0_ns != 0) { /* a delayed reply: time its write() */
            delay_hist_add(&c->core.w->st.write, mt_now_ns() - c->write_t0_ns);
            c->write_t0_ns = 0;
        }
        if (n > 0) {
            c->out_off += (size_t)n;
            c->last_io_ns = loop_now_ns(c->l);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (c->tls != NULL && errno == EPROTO)
            mt_warn("replay: conn %lld from %s: TLS error writing: %s",
                    (long long)c->core.id, c->peer, tls_conn_why(c->tls));
        c->dead = true;
        return;
    }
    if (c->out_off == c->out.len) {
        mt_buf_reset(&c->out);
        c->out_off = 0;
    }
    sconn_watch(c,
                (c->out.len - c->out_off > SERVER_OUT_PAUSE ? 0 : LOOP_READ) |
                    (c->out_off < c->out.len ||
                             (c->tls != NULL && tls_wants_write(c->tls))
                         ? LOOP_WRITE
                         : 0));
}

static void on_timer(struct loop *l, struct loop_timer *t, void *arg);
static void on_conn_io(struct loop *l, int fd, void *arg, unsigned events);

/* A timer release at now, at position pos of its loop's timer batch:
 * which lateness histogram it belongs to (server-side diagnosis of
 * lateness at many connections; docs/replay.md). */
static void
release_batch_stats(struct sconn *c, const struct replay_reply *r, uint64_t now,
                    uint32_t pos)
{
    struct replay_stats *st = &c->core.w->st;
    uint64_t late = now > r->ready_at_ns ? now - r->ready_at_ns : 0;

    if (r->no_stats)
        return;
    delay_hist_add(pos == 0 ? &st->late_first : &st->late_queued, late);
    if (pos + 1u > st->batch_max)
        st->batch_max = pos + 1u;
}

/*
 * Queues r's bytes for writing and records its delay sample: the achieved
 * delay ends at now, the moment just before the write() that carries the
 * reply (the caller flushes right after).  A streamed hello is re-armed.
 * batch_pos: r's position in its timer batch, or -1 (not a timer release).
 */
static void
release(struct sconn *c, struct replay_reply *r, int64_t batch_pos)
{
    int rc = mt_buf_append(&c->out, r->bytes, r->len);
    uint64_t now = mt_now_ns();

    if (batch_pos >= 0)
        release_batch_stats(c, r, now, (uint32_t)batch_pos);
    if (rc < 0) {
        replay_conn_release(&c->core, r, now);
        replay_reply_free(r);
        c->dead = true;
        return;
    }
    if (replay_conn_release(&c->core, r, now))
        loop_timer_start(c->l, &r->timer, r->ready_at_ns, on_timer, r);
    else
        replay_reply_free(r);
}

/* r's release time: the loop (with its spin) calls this at ready_at. */
static void
on_timer(struct loop *l, struct loop_timer *t, void *arg)
{
    struct replay_reply *r = arg;
    struct sconn *c = (struct sconn *)r->conn;

    (void)t;
    release(c, r, loop_timer_batch_pos(l));
    if (!c->dead) {
        c->write_t0_ns = mt_now_ns();
        sconn_flush(c);
        c->write_t0_ns = 0;
    }
    if (c->dead) {
        sconn_close(c, "write failed");
        return;
    }
    if (c->tls != NULL && tls_pending(c->tls) && (c->watching & LOOP_READ))
        on_conn_io(l, c->fd, c, LOOP_READ); /* reading resumed: may close c */
}

/* A reply was built: due already (no delay) -> written once the input is
 * processed; else on the timer heap at exactly its ready time. */
static void
on_emit(struct replay_conn *core, struct replay_reply *r, void *arg)
{
    struct sconn *c = arg;

    (void)core;
    if (r->ready_at_ns > mt_now_ns()) {
        loop_timer_start(c->l, &r->timer, r->ready_at_ns, on_timer, r);
        return;
    }
    release(c, r, -1); /* flushed when the input is processed */
}

/* ---- reading ---- */

static void
cancel_timer(struct replay_reply *r, void *arg)
{
    loop_timer_stop(arg, &r->timer);
}

void
sconn_close(struct sconn *c, const char *why)
{
    if (why != NULL)
        mt_info("replay: conn %lld from %s closed: %s", (long long)c->core.id,
                c->peer, why);
    loop_fd_del(c->l, c->fd);
    if (c->tls != NULL) {
        if (!tls_conn_ready(c->tls)) /* failed, timed out, or stopped */
            tlsstats_add_unfinished(&c->core.w->st.tls, tls_conn_cause(c->tls),
                                    c->tls_expired);
        tls_close_notify(c->tls); /* best effort */
        tls_conn_free(c->tls);
    }
    close(c->fd);
    replay_conn_close(&c->core, cancel_timer, c->l);
    mt_buf_free(&c->in);
    mt_buf_free(&c->out);
    c->closed(c, c->closed_arg); /* unlinks and frees c */
}

/* The incomplete message at the head of c->in must fit --max-msg-bytes
 * (checked as soon as its length is in: nothing more is buffered). */
static bool
sconn_check_len(struct sconn *c, char *tmp, size_t tmp_n, const char **why)
{
    struct rd r = rd_init(c->in.data, c->in.len);
    int32_t len;

    if (!rd_le32s(&r, &len) || len < 0 || (size_t)len <= c->o->msg_max)
        return true; /* negative lengths: refused by wire_frame already */
    snprintf(tmp, tmp_n,
             "bad input: messageLength %d exceeds --max-msg-bytes %zu "
             "(at byte 0 of a message)",
             len, c->o->msg_max);
    c->core.w->st.bad_input++;
    *why = tmp;
    return false;
}

/*
 * read() with the kernel's receive time of the last byte read
 * (SO_TIMESTAMPNS, CLOCK_REALTIME ns; 0 when the kernel gave none).
 */
static ssize_t
sconn_recv(struct sconn *c, uint64_t *rx_ns, bool *more)
{
    union {
        char buf[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {c->in.data + c->in.len, c->in.cap - c->in.len};
    struct msghdr mh;
    struct cmsghdr *cm;
    ssize_t n;

    *more = false;
    if (c->tls != NULL) {
        *rx_ns = 0;
        return tls_recv(c->tls, iov.iov_base, iov.iov_len, more);
    }
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof(ctl.buf);
    *rx_ns = 0;
    n = recvmsg(c->fd, &mh, 0);
    if (n <= 0)
        return n;
    for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
        struct timespec ts;
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_TIMESTAMPNS ||
            cm->cmsg_len < CMSG_LEN(sizeof(ts)))
            continue;
        memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
        if (ts.tv_sec > 0)
            *rx_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
    return n;
}

/* Records how long the request's last byte sat in the socket before the
 * read() whose time becomes its read time (a diagnostic: the delay is
 * counted from the read). */
static void
sconn_read_lag(struct sconn *c, uint64_t rx_ns)
{
    uint64_t now = mt_wall_ns();

    if (rx_ns != 0 && now >= rx_ns && now - rx_ns < 10000000000ull)
        delay_hist_add(&c->core.w->st.read_lag, now - rx_ns);
}

/* Reads once; false when the connection must close (reason in *why).
 * *more: TLS bytes may wait inside OpenSSL (read again, no event comes). */
static bool
sconn_read(struct sconn *c, const char **why, char *tmp, size_t tmp_n,
           bool *more)
{
    struct mt_err err = {0};
    uint64_t rx_ns;
    size_t used;
    ssize_t n;
    int rc;

    if (mt_buf_reserve(&c->in, READ_CHUNK) < 0) {
        *why = "request larger than maxMessageSizeBytes";
        return false;
    }
    n = sconn_recv(c, &rx_ns, more);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return true;
        if (c->tls != NULL && errno == EPROTO) {
            snprintf(tmp, tmp_n, "TLS error: %s", tls_conn_why(c->tls));
            *why = tmp;
            return false;
        }
        if (errno != ECONNRESET) /* a driver's close: not worth a line */
            *why = strerror(errno);
        return false;
    }
    if (n == 0) {
        if (c->in.len > 0) {
            snprintf(tmp, tmp_n,
                     "peer closed mid-message (%zu bytes of an "
                     "incomplete message dropped)",
                     c->in.len);
            *why = tmp;
        }
        return false;
    }
    c->in.len += (size_t)n;
    c->last_io_ns = loop_update_time(c->l);
    rc = replay_conn_input(&c->core, c->in.data, c->in.len, c->last_io_ns,
                           &used, &err);
    if (used > 0)
        sconn_read_lag(c, rx_ns);
    mt_buf_consume(&c->in, used);
    if (rc < 0) {
        snprintf(tmp, tmp_n, "bad input: %s (%s, at byte %zu)",
                 err.msg[0] ? err.msg : mt_strerror(rc), mt_strerror(rc),
                 err.offset);
        *why = tmp;
        return false;
    }
    if (c->in.len == 0)
        c->msg_start_ns = 0;
    else if (used > 0 || c->msg_start_ns == 0)
        c->msg_start_ns = c->last_io_ns;
    return sconn_check_len(c, tmp, tmp_n, why);
}

/*
 * One handshake step of a TLS connection (no request is read before it is
 * done); false when it failed (logged).  Until it is done, c is watched
 * for what OpenSSL waits for, and --msg-timeout-s bounds it (msg_start_ns).
 */
static bool
sconn_tls_handshake(struct sconn *c)
{
    int rc = tls_handshake(c->tls);

    if (rc == -EAGAIN) {
        sconn_watch(c, tls_wants_write(c->tls) ? LOOP_READ | LOOP_WRITE
                                               : LOOP_READ);
        return true;
    }
    if (rc < 0) {
        mt_warn("replay: conn %lld from %s: TLS handshake failed: %s; "
                "closing the connection (a client without tls=true, or one "
                "that does not trust --tls-cert, fails here)",
                (long long)c->core.id, c->peer, tls_conn_why(c->tls));
        return false;
    }
    c->msg_start_ns = 0;
    c->last_io_ns = loop_update_time(c->l);
    tlsstats_add_completed(&c->core.w->st.tls, tls_conn_version(c->tls),
                           c->last_io_ns - c->accepted_ns);
    sconn_watch(c, LOOP_READ);
    return true;
}

static void
on_conn_io(struct loop *l, int fd, void *arg, unsigned events)
{
    struct sconn *c = arg;
    const char *why = NULL;
    char tmp[256];
    bool keep = true;

    (void)l;
    (void)fd;
    if (c->tls != NULL && !tls_conn_ready(c->tls)) {
        if (!sconn_tls_handshake(c)) {
            sconn_close(c, NULL); /* logged */
            return;
        }
        if (!tls_conn_ready(c->tls))
            return; /* watching what OpenSSL waits for */
    }
    if (c->tls != NULL && (events & LOOP_WRITE) && tls_wants_write(c->tls))
        events |= LOOP_READ; /* OpenSSL had to write before reading on */
    if (events & (LOOP_READ | LOOP_ERROR)) {
        bool more = false;
        keep = sconn_read(c, &why, tmp, sizeof(tmp), &more);
        /* decrypted bytes the input buffer could not take at once */
        while (keep && more && !c->dead &&
               c->out.len - c->out_off <= SERVER_OUT_PAUSE)
            keep = sconn_read(c, &why, tmp, sizeof(tmp), &more);
    }
    if (c->out.len > c->out_off)
        sconn_flush(c);
    else if (keep)
        sconn_watch(c, LOOP_READ);
    /* TLS: reading resumed (output drained) with bytes OpenSSL decrypted
     * earlier: no socket event will announce them */
    while (keep && !c->dead && c->tls != NULL && tls_pending(c->tls) &&
           (c->watching & LOOP_READ)) {
        bool more = false;
        keep = sconn_read(c, &why, tmp, sizeof(tmp), &more);
        if (c->out.len > c->out_off)
            sconn_flush(c);
    }
    if (!keep || c->dead)
        sconn_close(c, why ? why : (c->dead ? "write failed" : NULL));
}

/* The local address of an accepted connection: what the client connected
 * to, as hello replies of a replica-set trace name it. */
static void
set_self(int fd, struct replay_conn *c)
{
    struct sockaddr_storage me;
    socklen_t len = sizeof(me);

    if (getsockname(fd, (struct sockaddr *)&me, &len) == 0)
        mt_addr_format((const struct sockaddr *)&me, c->self, sizeof(c->self));
}

int
sconn_open(struct sconn *c, struct loop *l, struct replay_worker *w,
           const struct server_opts *o, int fd,
           const struct sockaddr_storage *ss, uint64_t accepted_ns,
           sconn_closed_fn *closed, void *closed_arg)
{
    int one = 1;
    int rc;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* receive times, for the read-lag statistic (ignored if refused) */
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
    c->l = l;
    c->o = o;
    c->closed = closed;
    c->closed_arg = closed_arg;
    c->fd = fd;
    c->last_io_ns = loop_update_time(l);
    /* a clock of another loop (hand-off): the same CLOCK_MONOTONIC */
    c->accepted_ns = accepted_ns <= c->last_io_ns ? accepted_ns : c->last_io_ns;
    mt_buf_init(&c->in, IN_MAX);
    mt_buf_init(&c->out, OUT_MAX);
    mt_addr_format((const struct sockaddr *)ss, c->peer, sizeof(c->peer));
    if (o->tls != NULL) {
        c->tls = tls_conn_new(o->tls, fd, NULL);
        if (c->tls == NULL) {
            mt_buf_free(&c->in);
            mt_buf_free(&c->out);
            return -ENOMEM;
        }
        c->msg_start_ns = c->last_io_ns; /* the handshake's time limit */
    }
    replay_conn_init(&c->core, w, on_emit, c);
    set_self(fd, &c->core);
    rc = loop_fd_add(l, fd, LOOP_READ, on_conn_io, c);
    if (rc < 0) {
        tls_conn_free(c->tls);
        c->tls = NULL;
        return rc;
    }
    c->watching = LOOP_READ;
    return 0;
}

const char *
sconn_expired(struct sconn *c, uint64_t now, char *tmp, size_t tmp_n)
{
    const struct server_opts *o = c->o;
    bool reading = (c->watching & LOOP_READ) != 0;

    if (c->msg_start_ns != 0 && !reading)
        c->msg_start_ns = now;
    if (o->msg_timeout_ns && c->msg_start_ns != 0 &&
        now - c->msg_start_ns >= o->msg_timeout_ns && c->tls != NULL &&
        !tls_conn_ready(c->tls)) {
        snprintf(tmp, tmp_n,
                 "TLS handshake not complete after %.1f s (--msg-timeout-s)",
                 (double)(now - c->msg_start_ns) / 1e9);
        c->tls_expired = true;
        return tmp;
    }
    if (o->msg_timeout_ns && c->msg_start_ns != 0 &&
        now - c->msg_start_ns >= o->msg_timeout_ns) {
        snprintf(tmp, tmp_n,
                 "incomplete message: %zu bytes received, message not "
                 "complete after %.1f s (--msg-timeout-s)",
                 c->in.len, (double)(now - c->msg_start_ns) / 1e9);
        return tmp;
    }
    if (o->idle_ns && c->core.npending == 0 &&
        (c->msg_start_ns == 0 || !reading) &&
        now - c->last_io_ns >= o->idle_ns) {
        snprintf(tmp, tmp_n, "idle for %.1f s (--idle-timeout-s)%s",
                 (double)(now - c->last_io_ns) / 1e9,
                 c->out_off < c->out.len ? "; the client does not read its "
                                           "replies"
                                         : "");
        return tmp;
    }
    return NULL;
}
