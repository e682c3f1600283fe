/*
 * play_conn.c -- a live connection of `mtrace play`: connect, handshake,
 * authentication, scheduled sends, replies (see play_conn.h).
 */
#include "play_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "handshake.h"
#include "core/mem.h"

#define READ_CHUNK 65536

static void conn_io(struct loop *l, int fd, void *arg, unsigned events);
static void conn_timer(struct loop *l, struct loop_timer *t, void *arg);

struct play_conn *
play_conn_new(struct player *pl, struct play_rconn *rc, uint32_t copy,
              uint64_t open_ns)
{
    struct play_conn *c = mt_calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->pl = pl;
    c->rc = rc;
    c->copy = copy;
    c->fd = -1;
    c->open_ns = open_ns;
    c->next_rid = 1;
    mt_buf_init(&c->rb, WIRE_MSG_LEN_MAX + READ_CHUNK);
    mt_buf_init(&c->wb, 4u * WIRE_MSG_LEN_MAX);
    loop_timer_init(&c->tm);
    /* the recorded id for the first copy, so that `mtrace stats --compare`
     * pairs the connections; other copies carry their number above */
    c->out_id = ((uint64_t)copy << 32) | (rc->id & 0xffffffffu);
    c->next_all = pl->conns;
    pl->conns = c;
    pl->nconns++;
    loop_timer_start(pl->loop, &c->tm, open_ns, conn_timer, c);
    return c;
}

void
play_conn__rec_msg(struct play_conn *c, uint8_t dir, const uint8_t *wire,
                   size_t len, const uint8_t *plain, size_t plain_len)
{
    struct trace_msg m = {.conn_id = c->out_id,
                          .t_ns = loop_now_ns(c->pl->loop),
                          .dir = dir,
                          .wire = wire,
                          .wire_len = (uint32_t)len,
                          .plain = plain,
                          .plain_len = (uint32_t)plain_len};
    int rc;

    if (c->pl->w == NULL)
        return;
    rc = trace_writer_msg(c->pl->w, &m);
    if (rc < 0)
        play__fail(c->pl, "%s: writing the trace: %s", c->pl->o->out,
                   mt_strerror(rc));
}

void
play_conn_close(struct play_conn *c, uint8_t reason)
{
    struct player *pl = c->pl;

    loop_timer_stop(pl->loop, &c->tm);
    if (c->st == PLAY_CONN_CLOSED)
        return;
    if (c->fd >= 0) {
        loop_fd_del(pl->loop, c->fd);
        tls_conn_free(c->tls);
        c->tls = NULL;
        close(c->fd);
        c->fd = -1;
        if (pl->w != NULL) {
            struct trace_conn_close rec = {.conn_id = c->out_id,
                                           .t_ns = loop_now_ns(pl->loop),
                                           .reason = reason};
            (void)trace_writer_conn_close(pl->w, &rec);
        }
    }
    c->st = PLAY_CONN_CLOSED;
    play_auth_free(c->auth);
    c->auth = NULL;
    pl->nconns--;
}

void
play_conn_free(struct play_conn *c)
{
    if (c == NULL)
        return;
    if (c->st != PLAY_CONN_CLOSED)
        play_conn_close(c, TRACE_CLOSE_SHUTDOWN);
    play_conn_reap(c, true);
    mt_buf_free(&c->rb);
    mt_buf_free(&c->wb);
    mt_free(c);
}

/* Writes what wb holds; watches for writability while some is left. */
void
play_conn__flush(struct play_conn *c)
{
    while (c->wb.len > 0) {
        ssize_t n = c->tls != NULL ? tls_send(c->tls, c->wb.data, c->wb.len)
                                   : write(c->fd, c->wb.data, c->wb.len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0) {
            play__fail(c->pl, "%s: sending to the server: %s", c->pl->o->target,
                       c->tls != NULL && errno == EPROTO ? tls_conn_why(c->tls)
                                                         : strerror(errno));
            return;
        }
        mt_buf_consume(&c->wb, (size_t)n);
    }
    (void)loop_fd_mod(c->pl->loop, c->fd,
                      LOOP_READ | (c->wb.len > 0 ? LOOP_WRITE : 0));
}

/* Sends one command document on OP_MSG (handshake and authentication:
 * never compressed, as the compression spec wants). */
void
play_conn__ready(struct play_conn *c)
{
    uint64_t now = loop_update_time(c->pl->loop);

    c->st = PLAY_CONN_READY;
    c->last_reply_ns = c->last_send_ns = now;
    c->wait_since_ns = 0;
    play_conn_pump(c);
}

static void
conn_connect(struct play_conn *c)
{
    struct player *pl = c->pl;
    int one = 1;

    c->fd =
        socket(pl->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        play__fail(pl, "socket: %s", strerror(errno));
        return;
    }
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c->fd, (const struct sockaddr *)&pl->ss, pl->sslen) < 0 &&
        errno != EINPROGRESS) {
        play__fail(pl, "cannot connect to %s: %s", pl->o->target,
                   strerror(errno));
        return;
    }
    c->st = PLAY_CONN_CONNECTING;
    c->wait_since_ns = loop_now_ns(pl->loop);
    if (loop_fd_add(pl->loop, c->fd, LOOP_READ | LOOP_WRITE, conn_io, c) < 0)
        play__fail(pl, "cannot watch a socket (too many connections?)");
}

/* The TCP connect completed (or failed). */
static void
conn_connected(struct play_conn *c)
{
    struct player *pl = c->pl;
    int err = 0;
    socklen_t len = sizeof(err);
    struct sockaddr_storage me;
    socklen_t melen = sizeof(me);
    struct trace_conn_open rec = {.conn_id = c->out_id};
    char host[INET6_ADDRSTRLEN] = "?";

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err != 0) {
        play__fail(pl, "cannot connect to %s: %s", pl->o->target,
                   strerror(err));
        return;
    }
    pl->conns_opened++;
    if (pl->w != NULL) {
        rec.t_ns = loop_now_ns(pl->loop);
        if (getsockname(c->fd, (struct sockaddr *)&me, &melen) == 0) {
            if (me.ss_family == AF_INET) {
                struct sockaddr_in *a = (struct sockaddr_in *)&me;
                inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
                snprintf(rec.client, sizeof(rec.client), "%s:%u", host,
                         ntohs(a->sin_port));
            } else if (me.ss_family == AF_INET6) {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)&me;
                inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
                snprintf(rec.client, sizeof(rec.client), "[%s]:%u", host,
                         ntohs(a->sin6_port));
            }
        }
        snprintf(rec.server, sizeof(rec.server), "%s", pl->o->target);
        (void)trace_writer_conn_open(pl->w, &rec);
    }
    play_hs_start(c);
}

/* Encodes r as sent live into wb (and the trace).  *res as remap_msg. */
static int
conn_send_req(struct play_conn *c, struct play_req *r, enum remap_result *res)
{
    struct player *pl = c->pl;
    struct mt_buf *t = &pl->tmp;
    struct wire_msg m;
    struct mt_err err;
    size_t used, start = c->wb.len;
    int64_t cursor;
    int rc;

    if (r->plain && !(r->compressed && c->compressor != 0)) {
        /* nothing to remap: the recorded bytes, a new requestID */
        r->live_rid = c->next_rid++;
        rc = remap_plain_copy(r->msg, r->len, r->live_rid, &c->wb);
        if (rc < 0)
            return rc;
        play_conn__rec_msg(c, TRACE_DIR_C2S, c->wb.data + start, r->len, NULL,
                           0);
        *res = REMAP_OK;
        r->gm_cursor = 0;
        return 0;
    }
    /* validated in full when it was read from the trace */
    rc = wire_msg_parse_opts(r->msg, r->len,
                             WIRE_PARSE_SHALLOW | WIRE_PARSE_NO_CHECKSUM, &m,
                             &used, &err);
    if (rc != MT_OK)
        return rc < 0 ? rc : MT_EPROTO;
    mt_buf_reset(t);
    r->live_rid = c->next_rid;
    remap_set_unknown_waits(pl->rm, play__cursor_may_come(pl, r->rec_t_ns));
    rc = remap_msg(pl->rm, c->copy, &m, r->live_rid, t, res, &cursor);
    if (rc < 0 || *res != REMAP_OK)
        return rc;
    c->next_rid++;
    if (r->compressed && c->compressor != 0) {
        rc = wire_encode_compressed(&c->wb, t->data, t->len, c->compressor,
                                    &err);
        if (rc < 0)
            return rc;
        play_conn__rec_msg(c, TRACE_DIR_C2S, c->wb.data + start,
                           c->wb.len - start, t->data, t->len);
    } else {
        rc = mt_buf_append(&c->wb, t->data, t->len);
        if (rc < 0)
            return rc;
        play_conn__rec_msg(c, TRACE_DIR_C2S, t->data, t->len, NULL, 0);
    }
    /* a getMore's reply says whether the recorded cursor lives on */
    r->gm_cursor = cursor;
    return 0;
}

static uint64_t
scale(const struct player *pl, uint64_t ns)
{
    double v = (double)ns / pl->o->speed;
    return v >= 1.8e19 ? UINT64_MAX : (uint64_t)v;
}

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The time r is due (see play_conn.h). */
static uint64_t
req_deadline(const struct play_conn *c, const struct play_req *r)
{
    const struct player *pl = c->pl;
    uint64_t anchor = r->after_reply ? c->last_reply_ns : c->last_send_ns;

    if (pl->o->max_speed)
        return anchor;
    if (r->first)
        return sat_add(
            pl->t0_live,
            scale(pl, r->rec_t_ns > pl->t0_rec ? r->rec_t_ns - pl->t0_rec : 0));
    return sat_add(anchor, scale(pl, r->gap_ns));
}

void
play_conn_pump(struct play_conn *c)
{
    struct player *pl = c->pl;
    struct play_req *r;
    enum remap_result res;
    uint64_t now, dl;
    int rc;

    if (c->st != PLAY_CONN_READY || pl->stop)
        return;
    if (c->blocked) {
        c->blocked = false;
        pl->nblocked--;
    }
    while ((r = c->next) != NULL && c->exhaust == NULL) {
        if (r->after_reply && c->outstanding > 0)
            break;
        dl = req_deadline(c, r);
        now = loop_update_time(pl->loop);
        if (dl > now) {
            loop_timer_start(pl->loop, &c->tm, dl, conn_timer, c);
            break;
        }
        rc = conn_send_req(c, r, &res);
        if (rc < 0) {
            play__fail(pl, "a recorded %s request cannot be sent: %s", r->cmd,
                       mt_strerror(rc));
            return;
        }
        if (res == REMAP_WAIT) {
            c->blocked = true;
            pl->nblocked++;
            break;
        }
        c->next = r->next;
        if (res == REMAP_NOCURSOR) {
            r->nocursor = r->live_done = true;
            pl->nocursor++;
            continue;
        }
        r->sent = true;
        r->deadline_ns = dl;
        r->sent_ns = c->last_send_ns = now;
        pl->sent++;
        if (r->expects_reply) {
            if (c->outstanding++ == 0)
                c->wait_since_ns = now;
        } else {
            r->live_done = true;
            pl->no_reply++;
        }
    }
    if (c->wb.len > 0)
        play_conn__flush(c);
    if (pl->stop)
        return;
    play_conn_reap(c, false);
    if (c->next == NULL && c->rec_closed && c->outstanding == 0 &&
        c->exhaust == NULL && c->wb.len == 0 && c->head == NULL) {
        play_conn_close(c, TRACE_CLOSE_NORMAL);
        play__conn_done(pl);
    }
}

void
play_conn_push(struct play_conn *c, struct play_req *r)
{
    if (c->tail != NULL)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
    if (c->next == NULL)
        c->next = r;
    c->queued_bytes += r->len;
    c->pl->queued_bytes += r->len;
    c->pl->queued_reqs++;
    if (c->rec_scan == NULL && !r->rec_done)
        c->rec_scan = r;
    if (c->st == PLAY_CONN_READY && !loop_timer_active(&c->tm))
        play_conn_pump(c);
    else if (c->st == PLAY_CONN_WAIT && !loop_timer_active(&c->tm))
        conn_connect(c);
}

void
play_conn_rec_closed(struct play_conn *c)
{
    c->rec_closed = true;
    if (c->st == PLAY_CONN_WAIT && c->head == NULL) {
        /* never had a request: nothing to open */
        play_conn_close(c, TRACE_CLOSE_NORMAL);
        play__conn_done(c->pl);
        return;
    }
    if (c->st == PLAY_CONN_READY)
        play_conn_pump(c);
}

static void
req_report(struct player *pl, struct play_req *r)
{
    struct runcmp_cmd *cmd = r->rcmd;
    int rc;

    rc = runcmp_side_add(cmd, 0, r->rec_replied, r->rec_lat_ns, &r->rec_sh);
    if (rc == 0 && r->sent)
        rc = runcmp_side_add(cmd, 1, r->live_replied, r->live_lat_ns,
                             &r->live_sh);
    if (rc == 0 && r->sent)
        rc = runcmp_hist_add(&pl->rep.late, r->sent_ns > r->deadline_ns
                                                ? r->sent_ns - r->deadline_ns
                                                : 0);
    if (rc < 0)
        play__fail(pl, "out of memory");
    if (r->rec_replied && r->live_replied)
        runcmp_pair(&pl->rep, cmd, &r->rec_sh, &r->live_sh);
    if (r->sent && r->expects_reply && !r->live_replied)
        pl->unanswered++;
    if (!r->sent && !r->nocursor)
        pl->not_sent++;
}

void
play_conn_reap(struct play_conn *c, bool all)
{
    struct play_req *r;
    bool freed = false;

    while ((r = c->head) != NULL &&
           (all ||
            (r->live_done && r->rec_done && r != c->next && r != c->exhaust))) {
        c->head = r->next;
        if (c->head == NULL)
            c->tail = NULL;
        if (c->next == r)
            c->next = r->next;
        if (c->exhaust == r)
            c->exhaust = NULL;
        if (c->rec_scan == r)
            c->rec_scan = NULL;
        if (c->live_scan == r)
            c->live_scan = NULL;
        req_report(c->pl, r);
        c->queued_bytes -= r->len;
        c->pl->queued_bytes -= r->len;
        c->pl->queued_reqs--;
        mt_free(r);
        freed = true;
    }
    if (freed && !all)
        play__reaped(c->pl);
}

void
play_conn_reap_unread(struct play_conn *c)
{
    for (struct play_req *r = c->head;
         r != NULL && r->live_done && r != c->next && r != c->exhaust;
         r = r->next)
        if (!r->rec_done) {
            r->rec_done = true; /* its recorded reply, if read later, is
                                   ignored: it answers nothing queued */
            c->pl->rec_unread++;
        }
    c->rec_scan = NULL;
    play_conn_reap(c, false);
}

/* The request a live reply answers: replies come in order on a
 * connection, so the search starts at the oldest unanswered one. */
static struct play_req *
find_req(struct play_conn *c, int32_t response_to)
{
    struct play_req *r;

    if (c->exhaust != NULL && response_to == c->exhaust_rid)
        return c->exhaust;
    r = c->live_scan != NULL ? c->live_scan : c->head;
    while (r != NULL && r != c->next && (!r->sent || r->live_done))
        r = r->next;
    c->live_scan = r != c->next ? r : NULL;
    for (; r != NULL && r != c->next; r = r->next)
        if (r->sent && !r->live_done && r->live_rid == response_to)
            return r;
    return NULL;
}

/* A reply to a request of the workload. */
static void
conn_reply(struct play_conn *c, const struct wire_msg *m)
{
    struct player *pl = c->pl;
    struct play_req *r = find_req(c, m->h.response_to);
    uint64_t now = loop_now_ns(pl->loop);
    bool more =
        m->h.op_code == WIRE_OP_MSG && (m->flags & WIRE_MSG_MORE_TO_COME) != 0;

    if (r == NULL)
        return; /* answers nothing we sent: ignored */
    if (m->body != NULL)
        remap_note_reply(pl->rm, m->body, m->body_len);
    if (!r->live_replied) {
        r->live_replied = true;
        r->live_lat_ns = now - r->sent_ns;
        runcmp_shape_of(m, &r->live_sh);
        if (r->rec_cursor != 0 && r->rec_done)
            remap_cursor_set(pl->rm, c->copy, r->rec_cursor,
                             r->live_sh.error ? 0 : r->live_sh.cursor_id);
        else if (r->gm_cursor != 0 &&
                 (r->live_sh.error || r->live_sh.exhausted))
            remap_cursor_set(pl->rm, c->copy, r->gm_cursor, 0);
        pl->answered++;
    }
    c->wait_since_ns = now;
    if (more) {
        c->exhaust = r;
        c->exhaust_rid = m->h.request_id;
        return;
    }
    if (c->exhaust == r)
        c->exhaust = NULL;
    r->live_done = true;
    c->outstanding--;
    c->last_reply_ns = now;
    if (r->rec_replied)
        play__note_ahead(pl, r->rec_t_ns + r->rec_lat_ns, now);
    if (c->outstanding == 0)
        c->wait_since_ns = 0;
}

/* One whole message at the start of p (len bytes). */
static void
conn_message(struct play_conn *c, const uint8_t *p, size_t len)
{
    struct player *pl = c->pl;
    struct wire_msg m;
    struct mt_err err;
    size_t used;
    /* a reply to the workload is only walked with libbson's bounded
     * iterator (its shape, $clusterTime) and recorded as it came: its
     * bounds are checked, not every element (as capture's hot path) */
    unsigned opts = c->st == PLAY_CONN_READY ? WIRE_PARSE_SHALLOW : 0;
    int rc = wire_msg_parse_opts(p, len, opts, &m, &used, &err);

    if (rc == MT_OK && m.h.op_code == WIRE_OP_COMPRESSED) {
        mt_buf_reset(&pl->scratch);
        rc = wire_decompress(&m, &pl->scratch, &err);
        if (rc == 0) {
            play_conn__rec_msg(c, TRACE_DIR_S2C, p, len, pl->scratch.data,
                               pl->scratch.len);
            rc = wire_msg_parse_opts(pl->scratch.data, pl->scratch.len, opts,
                                     &m, &used, &err);
        }
    } else if (rc == MT_OK) {
        play_conn__rec_msg(c, TRACE_DIR_S2C, p, len, NULL, 0);
    }
    if (rc != MT_OK) {
        play__fail(pl, "%s sent a malformed message%s: %s", pl->o->target,
                   c->st == PLAY_CONN_HELLO ? " (not a MongoDB server?)" : "",
                   rc == MT_PARTIAL ? "truncated" : err.msg);
        return;
    }
    switch (c->st) {
    case PLAY_CONN_HELLO:
    case PLAY_CONN_AUTH:
        play_hs_reply(c, &m);
        break;
    case PLAY_CONN_READY:
        conn_reply(c, &m);
        break;
    case PLAY_CONN_WAIT:
    case PLAY_CONN_CONNECTING:
    case PLAY_CONN_TLS:
    case PLAY_CONN_CLOSED:
        break;
    }
}

static const char *
state_name(enum play_conn_state st)
{
    switch (st) {
    case PLAY_CONN_CONNECTING:
        return " while connecting";
    case PLAY_CONN_TLS:
        return " during the TLS handshake";
    case PLAY_CONN_HELLO:
        return " during the handshake (not a MongoDB server?)";
    case PLAY_CONN_AUTH:
        return " during authentication";
    case PLAY_CONN_WAIT:
    case PLAY_CONN_READY:
    case PLAY_CONN_CLOSED:
        break;
    }
    return "";
}

static void
conn_read(struct play_conn *c)
{
    struct player *pl = c->pl;
    size_t mlen;
    struct mt_err err;
    int rc, rd_errno = 0;
    bool eof = false;

    for (;;) {
        if ((rc = mt_buf_reserve(&c->rb, READ_CHUNK)) < 0) {
            play__fail(pl, "%s: a reply over the size limit", pl->o->target);
            return;
        }
        bool more = false;
        ssize_t n =
            c->tls != NULL
                ? tls_recv(c->tls, c->rb.data + c->rb.len, READ_CHUNK, &more)
                : read(c->fd, c->rb.data + c->rb.len, READ_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            /* what came before the end is answered first */
            eof = true;
            rd_errno = n < 0 ? errno : 0;
            if (c->tls != NULL && rd_errno == EPROTO)
                rd_errno = -1;
            break;
        }
        c->rb.len += (size_t)n;
        if (c->tls == NULL && (size_t)n < READ_CHUNK)
            break; /* drained: the next read would say EAGAIN (the watch
                      is level-triggered, so nothing is missed) */
    }
    loop_update_time(pl->loop);
    while (c->rb.len > 0 && !pl->stop) {
        rc = wire_frame(c->rb.data, c->rb.len, 0, &mlen, &err);
        if (rc == MT_PARTIAL)
            break;
        if (rc != MT_OK) {
            if (c->st == PLAY_CONN_HELLO)
                play__fail(pl,
                           "%s is not a MongoDB server: its answer to "
                           "hello is not a wire message (%s)",
                           pl->o->target, err.msg);
            else
                play__fail(pl,
                           "%s sent bytes that are not a MongoDB wire "
                           "message: %s",
                           pl->o->target, err.msg);
            return;
        }
        conn_message(c, c->rb.data, mlen);
        mt_buf_consume(&c->rb, mlen);
    }
    if (pl->stop)
        return;
    if (eof) {
        play__fail(pl, "%s closed the connection%s%s%s", pl->o->target,
                   state_name(c->st), rd_errno ? ": " : "",
                   rd_errno == -1  ? tls_conn_why(c->tls)
                   : rd_errno != 0 ? strerror(rd_errno)
                                   : "");
        return;
    }
    play_conn_pump(c);
    play__unblock(pl);
}

static void
conn_io(struct loop *l, int fd, void *arg, unsigned events)
{
    struct play_conn *c = arg;

    (void)l;
    (void)fd;
    if (c->st == PLAY_CONN_CONNECTING) {
        conn_connected(c);
        return;
    }
    if (c->st == PLAY_CONN_TLS) {
        play_hs_tls_step(c);
        return;
    }
    if (events & LOOP_WRITE)
        play_conn__flush(c);
    if (events & (LOOP_READ | LOOP_ERROR))
        conn_read(c);
}

static void
conn_timer(struct loop *l, struct loop_timer *t, void *arg)
{
    struct play_conn *c = arg;

    (void)l;
    (void)t;
    if (c->st == PLAY_CONN_WAIT) {
        if (c->head != NULL)
            conn_connect(c);
        return;
    }
    play_conn_pump(c);
}

void
play_conn_check_timeout(struct play_conn *c, uint64_t now_ns)
{
    struct player *pl = c->pl;
    const struct play_req *r;

    if (c->st == PLAY_CONN_WAIT && c->head != NULL &&
        !loop_timer_active(&c->tm)) {
        conn_connect(c);
        return;
    }
    if (c->wait_since_ns == 0 || now_ns - c->wait_since_ns < pl->o->timeout_ns)
        return;
    switch (c->st) {
    case PLAY_CONN_CONNECTING:
        play__fail(pl, "cannot connect to %s: no answer within %.1f s",
                   pl->o->target, (double)pl->o->timeout_ns / 1e9);
        return;
    case PLAY_CONN_TLS:
        play__fail(pl, "TLS handshake with %s: no answer within %.1f s",
                   pl->o->target, (double)pl->o->timeout_ns / 1e9);
        return;
    case PLAY_CONN_HELLO:
    case PLAY_CONN_AUTH:
        play__fail(pl,
                   "%s did not answer %s within %.1f s (not a MongoDB "
                   "server?)",
                   pl->o->target,
                   c->st == PLAY_CONN_HELLO ? "hello" : "authentication",
                   (double)pl->o->timeout_ns / 1e9);
        return;
    case PLAY_CONN_READY:
        r = c->exhaust;
        for (const struct play_req *q = c->head; r == NULL && q != NULL;
             q = q->next)
            if (q->sent && !q->live_done)
                r = q;
        play__fail(pl, "%s did not answer a %s request within %.1f s",
                   pl->o->target, r != NULL ? r->cmd : "?",
                   (double)pl->o->timeout_ns / 1e9);
        return;
    case PLAY_CONN_WAIT:
    case PLAY_CONN_CLOSED:
        return;
    }
}
