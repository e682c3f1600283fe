/*
 * server.c -- loops, listeners, connections and reply release (see
 * server.h).
 */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/sched.h"
#include "handoff.h"
#include "sock.h"

#define READ_CHUNK (64u * 1024)
#define IN_MAX ((size_t)WIRE_MSG_LEN_MAX + READ_CHUNK)
#define OUT_MAX ((size_t)64 << 20)
#define SWEEP_MIN_NS 10000000ull   /* 10 ms */
#define SWEEP_MAX_NS 1000000000ull /* 1 s */

struct sloop;

struct sconn {
    struct replay_conn core;
    struct sloop *sl; /* borrowed: its loop */
    int fd;
    struct mt_buf in, out; /* owned */
    size_t out_off;        /* bytes of out already written */
    unsigned watching;     /* LOOP_READ / LOOP_WRITE */
    bool dead;             /* close once the current callback returns */
    bool in_input;         /* inside replay_conn_input */
    uint64_t write_t0_ns;  /* a timed release's write() starts, or 0 */
    uint64_t last_io_ns;   /* last read or write progress */
    uint64_t msg_start_ns; /* first byte of the incomplete message, or 0 */
    char peer[64];
    struct sconn *prev, *next; /* the loop's list */
};

struct sloop {
    struct server *srv; /* borrowed */
    struct loop *l;     /* owned */
    int lfd;            /* owned: this loop's listener */
    pthread_t th;
    bool started;
    struct replay_worker w;
    struct sconn *conns; /* owned list */
    size_t nconns;
    struct loop_timer sweep; /* idle / incomplete-message timeouts */
    uint64_t sweep_ns;       /* its period; 0: no timeouts */
    struct handoff ho;       /* connections other loops accepted for it */
    _Atomic size_t load;     /* its connections, queued ones included */
};

struct server {
    struct server_opts o;
    struct replay_shared sh;
    struct cursor_table cursors;
    struct sloop *loops; /* owned */
    int nloops;
    uint16_t port;
    _Atomic size_t nconns;
    pthread_mutex_t mu; /* guards the start handshake below */
    pthread_cond_t cv;
    int nstarted;         /* loop threads past their scheduling setup */
    struct mt_err rt_err; /* the first thread's refusal, code 0 if none */
};

static void sconn_close(struct sconn *c, const char *why);

/* ---- writing ---- */

static void
sconn_watch(struct sconn *c, unsigned ev)
{
    if (ev == c->watching || c->dead)
        return;
    if (loop_fd_mod(c->sl->l, c->fd, ev) == 0)
        c->watching = ev;
}

static void
sconn_flush(struct sconn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t n =
            write(c->fd, c->out.data + c->out_off, c->out.len - c->out_off);
        if (c->write_t0_ns != 0) { /* a delayed reply: time its write() */
            delay_hist_add(&c->sl->w.st.write, mt_now_ns() - c->write_t0_ns);
            c->write_t0_ns = 0;
        }
        if (n > 0) {
            c->out_off += (size_t)n;
            c->last_io_ns = loop_now_ns(c->sl->l);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        c->dead = true;
        return;
    }
    if (c->out_off == c->out.len) {
        mt_buf_reset(&c->out);
        c->out_off = 0;
    }
    sconn_watch(c,
                (c->out.len - c->out_off > SERVER_OUT_PAUSE ? 0 : LOOP_READ) |
                    (c->out_off < c->out.len ? LOOP_WRITE : 0));
}

static void on_timer(struct loop *l, struct loop_timer *t, void *arg);

/* A timer release at now, at position pos of its loop's timer batch:
 * which lateness histogram it belongs to (server-side diagnosis of
 * lateness at many connections; docs/replay.md). */
static void
release_batch_stats(struct sconn *c, const struct replay_reply *r, uint64_t now,
                    uint32_t pos)
{
    struct replay_stats *st = &c->sl->w.st;
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
        loop_timer_start(c->sl->l, &r->timer, r->ready_at_ns, on_timer, r);
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
    if (c->dead)
        sconn_close(c, "write failed");
}

/* A reply was built: due already (no delay) -> written once the input is
 * processed; else on the timer heap at exactly its ready time. */
static void
on_emit(struct replay_conn *core, struct replay_reply *r, void *arg)
{
    struct sconn *c = arg;

    (void)core;
    if (r->ready_at_ns > mt_now_ns()) {
        loop_timer_start(c->sl->l, &r->timer, r->ready_at_ns, on_timer, r);
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

static void
sconn_close(struct sconn *c, const char *why)
{
    struct sloop *sl = c->sl;

    if (why != NULL)
        mt_info("replay: conn %lld from %s closed: %s", (long long)c->core.id,
                c->peer, why);
    loop_fd_del(sl->l, c->fd);
    close(c->fd);
    replay_conn_close(&c->core, cancel_timer, sl->l);
    mt_buf_free(&c->in);
    mt_buf_free(&c->out);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        sl->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    sl->nconns--;
    atomic_fetch_sub(&sl->load, 1);
    atomic_fetch_sub(&sl->srv->nconns, 1);
    mt_free(c);
}

/* The incomplete message at the head of c->in must fit --max-msg-bytes
 * (checked as soon as its length is in: nothing more is buffered). */
static bool
sconn_check_len(struct sconn *c, char *tmp, size_t tmp_n, const char **why)
{
    struct rd r = rd_init(c->in.data, c->in.len);
    int32_t len;

    if (!rd_le32s(&r, &len) || len < 0 || (size_t)len <= c->sl->srv->o.msg_max)
        return true; /* negative lengths: refused by wire_frame already */
    snprintf(tmp, tmp_n,
             "bad input: messageLength %d exceeds --max-msg-bytes %zu "
             "(at byte 0 of a message)",
             len, c->sl->srv->o.msg_max);
    c->sl->w.st.bad_input++;
    *why = tmp;
    return false;
}

/*
 * read() with the kernel's receive time of the last byte read
 * (SO_TIMESTAMPNS, CLOCK_REALTIME ns; 0 when the kernel gave none).
 */
static ssize_t
sconn_recv(struct sconn *c, uint64_t *rx_ns)
{
    union {
        char buf[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {c->in.data + c->in.len, c->in.cap - c->in.len};
    struct msghdr mh;
    struct cmsghdr *cm;
    ssize_t n;

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
        delay_hist_add(&c->sl->w.st.read_lag, now - rx_ns);
}

/* Reads once; false when the connection must close (reason in *why). */
static bool
sconn_read(struct sconn *c, const char **why, char *tmp, size_t tmp_n)
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
    n = sconn_recv(c, &rx_ns);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return true;
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
    c->last_io_ns = loop_update_time(c->sl->l);
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

static void
on_conn_io(struct loop *l, int fd, void *arg, unsigned events)
{
    struct sconn *c = arg;
    const char *why = NULL;
    char tmp[256];
    bool keep = true;

    (void)l;
    (void)fd;
    if (events & (LOOP_READ | LOOP_ERROR))
        keep = sconn_read(c, &why, tmp, sizeof(tmp));
    if (c->out.len > c->out_off)
        sconn_flush(c);
    else if (keep)
        sconn_watch(c, LOOP_READ);
    if (!keep || c->dead)
        sconn_close(c, why ? why : (c->dead ? "write failed" : NULL));
}

/* Takes fd as one of sl's connections; the caller has counted it in
 * sl->load (undone here if it cannot be kept). */
/* The local address of an accepted connection: what the client connected
 * to, as hello replies of a replica-set trace name it. */
static void
set_self(int fd, struct replay_conn *c)
{
    struct sockaddr_storage me;
    socklen_t len = sizeof(me);

    if (getsockname(fd, (struct sockaddr *)&me, &len) == 0)
        sock_addr_text(&me, c->self, sizeof(c->self));
}

static void
accept_one(struct sloop *sl, int fd, const struct sockaddr_storage *ss)
{
    struct sconn *c;
    int one = 1;

    if (atomic_fetch_add(&sl->srv->nconns, 1) >= sl->srv->o.conns_max ||
        (c = mt_calloc(1, sizeof(*c))) == NULL) {
        atomic_fetch_sub(&sl->srv->nconns, 1);
        atomic_fetch_sub(&sl->load, 1);
        mt_warn("replay: connection refused: %zu connections open (limit)",
                sl->srv->o.conns_max);
        close(fd);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* receive times, for the read-lag statistic (ignored if refused) */
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
    c->sl = sl;
    c->fd = fd;
    c->last_io_ns = loop_update_time(sl->l);
    mt_buf_init(&c->in, IN_MAX);
    mt_buf_init(&c->out, OUT_MAX);
    sock_addr_text(ss, c->peer, sizeof(c->peer));
    replay_conn_init(&c->core, &sl->w, on_emit, c);
    set_self(fd, &c->core);
    if (loop_fd_add(sl->l, fd, LOOP_READ, on_conn_io, c) < 0) {
        atomic_fetch_sub(&sl->srv->nconns, 1);
        atomic_fetch_sub(&sl->load, 1);
        mt_warn("replay: cannot watch connection fd %d; closed", fd);
        close(fd);
        mt_free(c);
        return;
    }
    c->watching = LOOP_READ;
    c->next = sl->conns;
    if (sl->conns != NULL)
        sl->conns->prev = c;
    sl->conns = c;
    sl->nconns++;
}

/* The loop that should own a new connection: the least loaded, sl on a
 * tie (SO_REUSEPORT spreads connections by hash, not by load). */
static struct sloop *
sloop_pick(struct sloop *sl)
{
    struct server *s = sl->srv;
    struct sloop *best = sl;
    size_t least = atomic_load_explicit(&sl->load, memory_order_relaxed);

    for (int i = 0; i < s->nloops && least > 0; i++) {
        size_t n =
            atomic_load_explicit(&s->loops[i].load, memory_order_relaxed);
        if (n < least) {
            least = n;
            best = &s->loops[i];
        }
    }
    return best;
}

/* Keeps fd, or queues it for a less loaded loop and wakes that loop. */
static void
accept_route(struct sloop *sl, int fd, const struct sockaddr_storage *ss)
{
    struct sloop *t = sloop_pick(sl);

    if (t != sl) {
        atomic_fetch_add(&t->load, 1);
        if (handoff_push(&t->ho, fd, ss)) {
            loop_wake(t->l);
            return;
        }
        atomic_fetch_sub(&t->load, 1); /* its queue is full: keep it */
    }
    atomic_fetch_add(&sl->load, 1);
    accept_one(sl, fd, ss);
}

/* Before the loop sleeps: the connections other loops passed to it. */
static void
on_before_sleep(struct loop *l, void *arg)
{
    struct sloop *sl = arg;
    struct sockaddr_storage ss;
    int fd;

    (void)l;
    while (handoff_pop(&sl->ho, &fd, &ss))
        accept_one(sl, fd, &ss);
}

static void
on_accept(struct loop *l, int lfd, void *arg, unsigned events)
{
    struct sloop *sl = arg;

    (void)l;
    (void)events;
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage ss;
        socklen_t sl_len = sizeof(ss);
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sl_len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                mt_warn("replay: accept: %s", strerror(errno));
            return;
        }
        accept_route(sl, fd, &ss);
    }
}

/* ---- timeouts ---- */

/* Why c must close now (into tmp), or NULL.  A connection we stopped
 * reading (its client does not read its replies) is not charged for a
 * slow message; one whose output makes no progress counts as idle. */
static const char *
sconn_expired(struct sconn *c, uint64_t now, char *tmp, size_t tmp_n)
{
    const struct server_opts *o = &c->sl->srv->o;
    bool reading = (c->watching & LOOP_READ) != 0;

    if (c->msg_start_ns != 0 && !reading)
        c->msg_start_ns = now;
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

static void
on_sweep(struct loop *l, struct loop_timer *t, void *arg)
{
    struct sloop *sl = arg;
    uint64_t now = loop_update_time(l);
    struct sconn *c, *next;
    char tmp[192];

    for (c = sl->conns; c != NULL; c = next) {
        const char *why = sconn_expired(c, now, tmp, sizeof(tmp));
        next = c->next;
        if (why != NULL) {
            mt_warn("replay: conn %lld from %s: %s; closing it",
                    (long long)c->core.id, c->peer, why);
            sl->w.st.timeouts++;
            sconn_close(c, NULL);
        }
    }
    loop_timer_start(l, t, now + sl->sweep_ns, on_sweep, sl);
}

/* Sweep period: a quarter of the shortest timeout, within 10 ms..1 s. */
static uint64_t
sweep_period(const struct server_opts *o)
{
    uint64_t m = o->idle_ns;

    if (o->msg_timeout_ns && (m == 0 || o->msg_timeout_ns < m))
        m = o->msg_timeout_ns;
    if (m == 0)
        return 0;
    m /= 4;
    return m < SWEEP_MIN_NS   ? SWEEP_MIN_NS
           : m > SWEEP_MAX_NS ? SWEEP_MAX_NS
                              : m;
}

/* ---- listeners and threads ---- */

/* A loop thread's scheduling setup: --rt-prio applies to the thread
 * itself (not inherited from the main thread, which stays normal); the
 * result is handed to server_start, which waits for every thread. */
static int
loop_thread_setup(struct sloop *sl)
{
    struct server *s = sl->srv;
    struct mt_err err = {0};
    int rc;

    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* ns wake-ups, not 50 us */
    rc = sched_set_realtime(s->o.rt_prio, &err);
    pthread_mutex_lock(&s->mu);
    if (rc < 0 && s->rt_err.code == 0)
        mt_err_set(&s->rt_err, rc, 0, "--rt-prio %d: %s", s->o.rt_prio,
                   err.msg);
    s->nstarted++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void *
loop_thread(void *arg)
{
    struct sloop *sl = arg;
    int rc;

    if (loop_thread_setup(sl) < 0)
        return NULL; /* server_start reports it and stops the others */
    rc = loop_run(sl->l);
    if (rc < 0)
        mt_error("replay: event loop failed: %s", mt_strerror(rc));
    loop_wake_stats_get(sl->l, &sl->w.st.wake);
    return NULL;
}

static int
sloop_init(struct server *s, struct sloop *sl, uint64_t seed,
           struct mt_err *err)
{
    uint16_t bound = 0;

    sl->srv = s;
    sl->lfd = -1;
    if (replay_worker_init(&sl->w, &s->sh, seed) < 0)
        return mt_err_set(err, -ENOMEM, 0, "out of memory");
    sl->l = loop_new(NULL, 0, err);
    if (sl->l == NULL)
        return err->code ? err->code : -ENOMEM;
    if (s->o.spin_auto)
        loop_set_timer_spin_auto(sl->l, s->o.spin_ns);
    else
        loop_set_timer_spin(sl->l, s->o.spin_ns);
    if (s->port != 0 && sl == &s->loops[0]) {
        int probe = sock_listen_open(s->o.host, s->port, false, &bound, err);
        if (probe < 0)
            return probe;
        close(probe);
    }
    sl->lfd = sock_listen_open(s->o.host, s->port, true, &bound, err);
    if (sl->lfd < 0)
        return sl->lfd;
    s->port = bound; /* the first listener picks the port; the rest share it */
    loop_set_before_sleep(sl->l, on_before_sleep, sl);
    loop_timer_init(&sl->sweep);
    sl->sweep_ns = sweep_period(&s->o);
    if (sl->sweep_ns)
        loop_timer_start(sl->l, &sl->sweep,
                         loop_deadline_after(sl->l, sl->sweep_ns), on_sweep,
                         sl);
    return loop_fd_add(sl->l, sl->lfd, LOOP_READ, on_accept, sl);
}

static int
threads_start(struct server *s, struct mt_err *err)
{
    sigset_t all, old;
    int rc = 0, nstarted = 0;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (int i = 0; i < s->nloops; i++) {
        rc = pthread_create(&s->loops[i].th, NULL, loop_thread, &s->loops[i]);
        if (rc != 0) {
            rc = mt_err_set(err, -rc, 0, "pthread_create: %s", strerror(rc));
            break;
        }
        s->loops[i].started = true;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* wait for each started thread's scheduling setup (--rt-prio) */
    for (int i = 0; i < s->nloops; i++)
        nstarted += s->loops[i].started;
    pthread_mutex_lock(&s->mu);
    while (s->nstarted < nstarted)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (rc == 0 && s->rt_err.code != 0) {
        *err = s->rt_err;
        rc = err->code;
    }
    return rc;
}

struct server *
server_start(const struct server_opts *o, struct index *idx, struct mt_err *err)
{
    struct server *s = mt_calloc(1, sizeof(*s));
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int rc;

    if (s == NULL) {
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        return NULL;
    }
    s->o = *o;
    s->port = o->port;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->nloops = o->threads > 0 ? o->threads : (ncpu > 0 ? (int)ncpu : 1);
    if (s->nloops > SERVER_THREADS_MAX)
        s->nloops = SERVER_THREADS_MAX;
    if (s->o.conns_max == 0)
        s->o.conns_max = SERVER_CONNS_DEFAULT;
    if (s->o.msg_max == 0 || s->o.msg_max > WIRE_MSG_LEN_MAX)
        s->o.msg_max = WIRE_MSG_LEN_MAX;
    s->sh.idx = idx;
    s->sh.cursors = &s->cursors;
    s->sh.delay = o->delay;
    atomic_init(&s->sh.next_conn_id, 1);
    handshake_init(&s->sh.hs, idx->hello, idx->hello_len);
    s->sh.hs.compressors =
        o->compress_set ? o->compress_mask : idx->compressors;
    rc = cursor_table_init(&s->cursors, CURSOR_MAX_DEFAULT, o->delay.seed);
    s->loops = mt_calloc((size_t)s->nloops, sizeof(*s->loops));
    if (rc < 0 || s->loops == NULL) {
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        goto fail;
    }
    for (int i = 0; i < s->nloops; i++) {
        s->loops[i].lfd = -1;
        handoff_init(&s->loops[i].ho);
        atomic_init(&s->loops[i].load, 0);
    }
    for (int i = 0; i < s->nloops; i++) {
        rc = sloop_init(s, &s->loops[i], o->delay.seed + 7919u * (uint64_t)i,
                        err);
        if (rc < 0)
            goto fail;
    }
    if (threads_start(s, err) < 0)
        goto fail;
    return s;
fail:
    server_stop(s);
    server_free(s);
    return NULL;
}

uint16_t
server_port(const struct server *s)
{
    return s->port;
}

int
server_threads(const struct server *s)
{
    return s->nloops;
}

void
server_stop(struct server *s)
{
    if (s == NULL || s->loops == NULL)
        return;
    for (int i = 0; i < s->nloops; i++)
        if (s->loops[i].started)
            loop_stop(s->loops[i].l);
    for (int i = 0; i < s->nloops; i++) {
        struct sloop *sl = &s->loops[i];
        if (sl->started)
            pthread_join(sl->th, NULL);
        sl->started = false;
        while (sl->conns != NULL)
            sconn_close(sl->conns, NULL);
    }
}

void
server_stats(const struct server *s, struct replay_stats *out)
{
    replay_stats_init(out);
    for (int i = 0; i < s->nloops; i++) {
        uint64_t n = s->loops[i].w.st.conns;
        replay_stats_merge(out, &s->loops[i].w.st);
        if (i == 0 || n < out->loop_conns_min)
            out->loop_conns_min = n;
        if (n > out->loop_conns_max)
            out->loop_conns_max = n;
    }
}

void
server_free(struct server *s)
{
    if (s == NULL)
        return;
    for (int i = 0; s->loops != NULL && i < s->nloops; i++) {
        struct sloop *sl = &s->loops[i];
        if (sl->l != NULL && sl->lfd >= 0)
            loop_fd_del(sl->l, sl->lfd);
        if (sl->lfd >= 0)
            close(sl->lfd);
        handoff_free(&sl->ho); /* closes connections never taken */
        loop_free(sl->l);
        replay_worker_free(&sl->w);
    }
    mt_free(s->loops);
    cursor_table_free(&s->cursors);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    mt_free(s);
}
