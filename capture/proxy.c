/*
 * proxy.c -- listeners, loop threads, shutdown and summary of the recording
 * proxy (see proxy.h; connections themselves are in pconn.c).
 *
 * Threads: one per event loop, plus the trace-writer thread (recq.c).  The
 * caller's thread only waits; its signal handlers call proxy_stop(), which
 * sets a flag and wakes every loop.  Each loop then, in its before-sleep
 * hook, closes its listener, closes connections as they go quiet (nothing
 * buffered, held or half-received, every request answered) and, one second
 * later, closes what remains with reason "shutdown".
 */
#include "proxy.h"

#include <errno.h>
#include <netinet/in.h>
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
#include "core/sched.h"
#include "core/trace.h"
#include "core/wire.h"
#include "pconn.h"
#include "pdelay.h"
#include "ppin.h"
#include "ptls.h"
#include "recq.h"

#define PROXY_DRAIN_NS 1000000000u
#define PROXY_ACCEPT_BURST 64
#define PROXY_BACKLOG 4096

static struct proxy *_Atomic proxy_running;
static atomic_bool proxy_stop_early;

/* See proxy.h. */
void
proxy_stop(void)
{
    struct proxy *p = atomic_load(&proxy_running);

    atomic_store(&proxy_stop_early, true);
    if (p == NULL)
        return;
    atomic_store(&p->stopping, true);
    for (int i = 0; i < p->nloops; i++)
        if (p->loops[i].l != NULL)
            loop_wake(p->loops[i].l);
}

/* ---- listening ---- */

static int
proxy_listen_one(const struct sockaddr *sa, socklen_t len, bool reuseport,
                 const char *desc, struct mt_err *err)
{
    int one = 1, fd, rc;

    fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return mt_err_set(err, -errno, 0, "socket: %s", strerror(errno));
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (reuseport &&
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
        goto fail;
    if (bind(fd, sa, len) < 0 || listen(fd, PROXY_BACKLOG) < 0)
        goto fail;
    return fd;
fail:
    rc = -errno;
    close(fd);
    return mt_err_set(err, rc, 0, "cannot listen on %s: %s", desc,
                      strerror(-rc));
}

/*
 * One SO_REUSEPORT listener per loop.  A plain bind first checks that no
 * other process listens there (SO_REUSEPORT would otherwise silently share
 * the port with another proxy of the same user).  Port 0 picks one port.
 */
static int
proxy_listen(struct proxy *p, const struct proxy_opts *o, char *desc,
             size_t desc_len, struct mt_err *err)
{
    struct sockaddr_storage ss = o->listen;
    socklen_t len = o->listen_len;
    char want[64];
    int fd;

    pconn_format_addr((const struct sockaddr *)&o->listen, want, sizeof(want));
    fd = proxy_listen_one((const struct sockaddr *)&ss, len, false, want, err);
    if (fd < 0)
        return fd;
    close(fd);
    for (int i = 0; i < p->nloops; i++) {
        fd = proxy_listen_one((const struct sockaddr *)&ss, len, true, want,
                              err);
        if (fd < 0)
            return fd;
        p->loops[i].lfd = fd;
        if (i == 0) { /* port 0: the others join the port the kernel chose */
            len = sizeof(ss);
            if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
                return mt_err_set(err, -errno, 0, "getsockname: %s",
                                  strerror(errno));
        }
    }
    pconn_format_addr((const struct sockaddr *)&ss, desc, desc_len);
    return 0;
}

static void proxy_on_accept(struct loop *l, int fd, void *arg, unsigned ev);

/* ---- balancing accepted connections between loops ---- */

static unsigned
proxy_load(struct ploop *pl)
{
    return atomic_load_explicit(&pl->load, memory_order_relaxed) +
           atomic_load_explicit(&pl->handing, memory_order_relaxed);
}

/*
 * SO_REUSEPORT spreads connections by a hash of their addresses: with 16
 * connections and 2 loops a 11/5 split is common, and the busier loop
 * then serves its connections later than the other.  A loop that accepts
 * a connection while another loop has fewer hands it over (through that
 * loop's hand-off queue and one loop_wake): loops stay within one
 * connection of each other.  Only the receiving loop is woken.  Returns
 * true when cfd was handed over.
 */
static bool
proxy_hand_off(struct ploop *pl, int cfd, const struct sockaddr_storage *peer,
               socklen_t len)
{
    struct proxy *p = pl->p;
    struct ploop *to = NULL;
    unsigned best = proxy_load(pl);
    bool queued = false;

    if (p->nloops < 2 || atomic_load(&p->stopping))
        return false;
    for (int i = 0; i < p->nloops; i++) {
        unsigned v = proxy_load(&p->loops[i]);
        if (&p->loops[i] != pl && v < best) {
            best = v;
            to = &p->loops[i];
        }
    }
    if (to == NULL)
        return false;
    pthread_mutex_lock(&to->hand_mu);
    if (to->hand_n < PLOOP_HAND_MAX) {
        struct phand *h = &to->hand[to->hand_n++];
        h->fd = cfd;
        h->peer = *peer;
        h->peer_len = len;
        atomic_fetch_add(&to->handing, 1);
        queued = true;
    }
    pthread_mutex_unlock(&to->hand_mu);
    if (queued) {
        pl->st.handed++;
        loop_wake(to->l);
    }
    return queued;
}

/* Before sleeping: adopts the connections other loops handed over. */
static void
proxy_take_hand_offs(struct ploop *pl)
{
    struct phand h[PLOOP_HAND_MAX];
    size_t n;

    if (atomic_load(&pl->handing) == 0)
        return;
    pthread_mutex_lock(&pl->hand_mu);
    n = pl->hand_n;
    memcpy(h, pl->hand, n * sizeof(h[0]));
    pl->hand_n = 0;
    pthread_mutex_unlock(&pl->hand_mu);
    for (size_t i = 0; i < n; i++) {
        atomic_fetch_sub(&pl->handing, 1);
        if (pl->draining)
            close(h[i].fd);
        else
            pconn_accept(pl, h[i].fd, (const struct sockaddr *)&h[i].peer,
                         h[i].peer_len);
    }
}

static void
proxy_on_accept_retry(struct loop *l, struct loop_timer *t, void *arg)
{
    struct ploop *pl = arg;
    if (pl->lfd >= 0)
        (void)loop_fd_mod(l, pl->lfd, LOOP_READ);
}

static void
proxy_on_accept(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct ploop *pl = arg;

    for (int i = 0; i < PROXY_ACCEPT_BURST && !pl->draining; i++) {
        struct sockaddr_storage peer;
        socklen_t len = sizeof(peer);
        int cfd = accept4(fd, (struct sockaddr *)&peer, &len,
                          SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd >= 0) {
            if (!proxy_hand_off(pl, cfd, &peer, len))
                pconn_accept(pl, cfd, (const struct sockaddr *)&peer, len);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
            errno == ENOMEM) {
            /* Out of descriptors: stop accepting for 100 ms, not spin. */
            mt_warn("capture: accept: %s; pausing accepts for 100 ms",
                    strerror(errno));
            (void)loop_fd_mod(l, fd, 0);
            loop_timer_start(l, &pl->accept_timer,
                             loop_deadline_after(l, 100000000u),
                             proxy_on_accept_retry, pl);
        }
        break;
    }
}

/* ---- loop threads ---- */

/* Sweep period: a quarter of the shortest timeout, within 10 ms..1 s. */
static uint64_t
proxy_sweep_period(const struct proxy *p)
{
    uint64_t m = p->idle_ns;

    if (p->msg_timeout_ns && (m == 0 || p->msg_timeout_ns < m))
        m = p->msg_timeout_ns;
    if (m == 0)
        return 0;
    m /= 4;
    if (m < 10000000u)
        return 10000000u;
    return m > 1000000000u ? 1000000000u : m;
}

static void
proxy_on_sweep(struct loop *l, struct loop_timer *t, void *arg)
{
    struct ploop *pl = arg;
    uint64_t now = loop_update_time(l);
    struct pconn *c, *next;

    for (c = pl->conns; c != NULL; c = next) {
        next = pconn_next(c);
        (void)pconn_sweep(c, now);
    }
    loop_timer_start(l, t, now + pl->sweep_ns, proxy_on_sweep, pl);
}

static void
proxy_on_drain_deadline(struct loop *l, struct loop_timer *t, void *arg)
{
    struct ploop *pl = arg;

    while (pl->conns != NULL)
        pconn_close(pl->conns, TRACE_CLOSE_SHUTDOWN);
    loop_stop(l);
}

static void
proxy_begin_drain(struct ploop *pl)
{
    pl->draining = true;
    if (pl->lfd >= 0) {
        loop_fd_del(pl->l, pl->lfd);
        close(pl->lfd);
        pl->lfd = -1;
    }
    loop_timer_start(pl->l, &pl->drain_timer,
                     loop_deadline_after(pl->l, PROXY_DRAIN_NS),
                     proxy_on_drain_deadline, pl);
}

static void
proxy_before_sleep(struct loop *l, void *arg)
{
    struct ploop *pl = arg;
    struct pconn *c, *next;

    if (atomic_exchange(&pl->resume_pending, false) && pl->paused_any) {
        pl->paused_any = false;
        for (c = pl->conns; c != NULL; c = pconn_next(c))
            pconn_resume(c);
    }
    /* edge-triggered sockets left readable (read budget, back-pressure
     * lifted): read them now */
    (void)pconn_serve_pending(pl);
    proxy_take_hand_offs(pl);
    if (atomic_load(&pl->p->stopping)) {
        if (!pl->draining)
            proxy_begin_drain(pl);
        for (c = pl->conns; c != NULL; c = next) {
            next = pconn_next(c);
            if (pconn_quiet(c))
                pconn_close(c, TRACE_CLOSE_SHUTDOWN);
        }
        if (pl->conns == NULL)
            loop_stop(l);
    }
    /* some still readable (budget spent, or a hand-off just taken): the
     * loop must not block on epoll_wait before reading them */
    if (!ppend_empty(&pl->pend))
        loop_poll_next(l);
    if (pl->p->rt_prio > 0 && pl->p->delay_ns > 0)
        pdelay_bound_spin(pl); /* a FIFO loop must not spin non-stop */
    /* this tick's records, in one hand-off to the writer */
    recq_push_batch(pl->p->q, &pl->batch);
}

static void *
proxy_thread(void *arg)
{
    struct ploop *pl = arg;
    int rc;

    /* 1 ns timer slack: the default 50 us would blur --delay-ms. */
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    /* --rt-prio: this thread, not its creator (which stays normal) */
    rc = sched_set_realtime(pl->p->rt_prio, &pl->rt_err);
    if (rc < 0) {
        proxy_stop(); /* proxy_threads_run reports pl->rt_err */
        pl->draining = true;
        proxy_take_hand_offs(pl);
        return NULL;
    }
    /* --batch-loops (excludes --rt-prio): no wake-up preemption (sched.h) */
    if (pl->p->batch_loops && sched_set_batch() < 0)
        mt_warn("capture: event loop %d: SCHED_BATCH refused; it stays "
                "normal",
                pl->idx);
    rc = loop_run(pl->l);
    if (rc < 0)
        mt_error("capture: event loop %d failed: %s", pl->idx, mt_strerror(rc));
    while (pl->conns != NULL)
        pconn_close(pl->conns, TRACE_CLOSE_SHUTDOWN);
    pl->draining = true;
    proxy_take_hand_offs(pl); /* closes what was handed over meanwhile */
    recq_push_batch(pl->p->q, &pl->batch);
    return NULL;
}

/* Writer thread -> loops: the queue has room again. */
static void
proxy_resume(void *arg)
{
    struct proxy *p = arg;
    for (int i = 0; i < p->nloops; i++) {
        atomic_store(&p->loops[i].resume_pending, true);
        loop_wake(p->loops[i].l);
    }
}

static int
proxy_loops_init(struct proxy *p, struct mt_err *err)
{
    for (int i = 0; i < p->nloops; i++) {
        struct ploop *pl = &p->loops[i];
        pl->p = p;
        pl->idx = i;
        loop_timer_init(&pl->drain_timer);
        loop_timer_init(&pl->accept_timer);
        loop_timer_init(&pl->sweep_timer);
        atomic_init(&pl->resume_pending, false);
        atomic_init(&pl->load, 0);
        atomic_init(&pl->handing, 0);
        pl->l = loop_new(NULL, 0, err);
        if (pl->l == NULL)
            return err->code;
        pl->sweep_ns = proxy_sweep_period(p);
        if (pl->sweep_ns)
            loop_timer_start(pl->l, &pl->sweep_timer,
                             loop_deadline_after(pl->l, pl->sweep_ns),
                             proxy_on_sweep, pl);
        pl->scratch = mt_malloc(PCONN_READ_LEN);
        if (pl->scratch == NULL)
            return mt_err_set(err, -ENOMEM, 0, "out of memory");
        loop_set_before_sleep(pl->l, proxy_before_sleep, pl);
        pl->spin_cur_ns = p->spin_ns;
        if (p->delay_ns > 0 && p->spin_auto)
            loop_set_timer_spin_auto(pl->l, p->spin_ns);
        else if (p->delay_ns > 0)
            loop_set_timer_spin(pl->l, p->spin_ns);
        int rc = loop_fd_add(pl->l, pl->lfd, LOOP_READ, proxy_on_accept, pl);
        if (rc < 0)
            return mt_err_set(err, rc, 0, "cannot watch the listener: %s",
                              mt_strerror(rc));
    }
    return 0;
}

static void
proxy_loops_free(struct proxy *p)
{
    if (p->loops == NULL)
        return;
    for (int i = 0; i < p->nloops; i++) {
        struct ploop *pl = &p->loops[i];
        if (pl->lfd >= 0)
            close(pl->lfd);
        for (size_t k = 0; k < pl->hand_n; k++)
            close(pl->hand[k].fd);
        pthread_mutex_destroy(&pl->hand_mu);
        recq_batch_free(&pl->batch);
        loop_free(pl->l);
        mt_free(pl->scratch);
        phist_free(&pl->hist);
    }
    mt_free(p->loops);
    p->loops = NULL;
}

/* Starts the loop threads with SIGINT/SIGTERM blocked in them (pinned
 * with --pin-loops). */
static int
proxy_threads_run(struct proxy *p, pthread_t *th, struct mt_err *err)
{
    sigset_t block, old;
    cpu_set_t allowed;
    int started = 0, rc = 0;

    CPU_ZERO(&allowed);
    if (p->pin_loops && sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
        rc = errno;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (; rc == 0 && started < p->nloops; started++) {
        pthread_attr_t attr;

        pthread_attr_init(&attr);
        if (p->pin_loops)
            rc = ppin_attr_set(&attr, &allowed, started);
        if (rc == 0)
            rc = pthread_create(&th[started], &attr, proxy_thread,
                                &p->loops[started]);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        mt_err_set(err, -rc, 0, "cannot start a loop thread%s: %s",
                   p->pin_loops ? " pinned to a CPU (--pin-loops)" : "",
                   strerror(rc));
        proxy_stop();
    }
    if (atomic_load(&proxy_stop_early))
        proxy_stop();
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (rc != 0)
        return -rc;
    for (int i = 0; i < started; i++)
        if (p->loops[i].rt_err.code != 0) {
            *err = p->loops[i].rt_err;
            return err->code;
        }
    return 0;
}

/* ---- summary ---- */

static void
proxy_sum(const struct proxy *p, struct pstats *t, struct phist *h)
{
    memset(t, 0, sizeof(*t));
    for (int i = 0; i < p->nloops; i++) {
        const struct pstats *s = &p->loops[i].st;
        t->accepted += s->accepted;
        t->refused += s->refused;
        t->upstream_fail += s->upstream_fail;
        t->garbage += s->garbage;
        t->resets += s->resets;
        t->lost_items += s->lost_items;
        t->timeouts += s->timeouts;
        t->too_big += s->too_big;
        t->handed += s->handed;
        t->tls_fail += s->tls_fail;
        for (int d = 0; d < 2; d++) {
            t->msgs[d] += s->msgs[d];
            t->rec_bytes[d] += s->rec_bytes[d];
            t->partial[d] += s->partial[d];
            t->partial_bytes[d] += s->partial_bytes[d];
            t->read_bytes[d] += s->read_bytes[d];
            t->fwd_bytes[d] += s->fwd_bytes[d];
            t->unframed[d] += s->unframed[d];
            t->unsent[d] += s->unsent[d];
        }
        (void)phist_merge(h, &p->loops[i].hist);
    }
}

static void
proxy_stats_record(struct trace_writer *w, const struct pstats *t,
                   uint64_t dropped)
{
    struct trace_stats st;
    const struct {
        const char *name;
        uint64_t v;
    } kv[] = {
        {"connections", t->accepted},
        {"refused", t->refused},
        {"upstream_fail", t->upstream_fail},
        {"not_mongodb", t->garbage},
        {"timeouts", t->timeouts},
        {"too_big", t->too_big},
        {"msgs_c2s", t->msgs[0]},
        {"msgs_s2c", t->msgs[1]},
        {"bytes_c2s", t->read_bytes[0]},
        {"bytes_s2c", t->read_bytes[1]},
        {"fwd_bytes_c2s", t->fwd_bytes[0]},
        {"fwd_bytes_s2c", t->fwd_bytes[1]},
        {"partial", t->partial[0] + t->partial[1]},
        {"tls_handshake_fail", t->tls_fail},
        {"dropped", dropped},
    };

    memset(&st, 0, sizeof(st));
    st.t_ns = mt_now_ns();
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
        snprintf(st.s[i].name, sizeof(st.s[i].name), "%s", kv[i].name);
        st.s[i].value = kv[i].v;
    }
    st.n = sizeof(kv) / sizeof(kv[0]);
    (void)trace_writer_stats(w, &st);
}

static void
proxy_print_summary(const struct proxy *p, const struct pstats *t,
                    const struct phist *h, const struct recq_stats *qs,
                    uint64_t dropped, double secs, const char *out)
{
    static const char *const dn[2] = {"client->server", "server->client"};
    uint64_t rec = 0, fwd = 0;

    fprintf(stderr,
            "mtrace capture: %.1f s, trace %s: %llu records\n"
            "  connections: %llu accepted, %llu refused (--max-conns), "
            "%llu upstream failures, %llu resets, %llu not MongoDB, "
            "%llu timed out, %llu over --max-msg-bytes\n",
            secs, out, (unsigned long long)qs->records,
            (unsigned long long)t->accepted, (unsigned long long)t->refused,
            (unsigned long long)t->upstream_fail, (unsigned long long)t->resets,
            (unsigned long long)t->garbage, (unsigned long long)t->timeouts,
            (unsigned long long)t->too_big);
    if (p->nloops > 1) {
        fprintf(stderr, "  loops: %d, connections per loop:", p->nloops);
        for (int i = 0; i < p->nloops; i++)
            fprintf(stderr, "%s%llu", i ? " / " : " ",
                    (unsigned long long)p->loops[i].st.accepted);
        fprintf(stderr, " (%llu handed over between loops)\n",
                (unsigned long long)t->handed);
    }
    if (p->tls_accept != NULL || p->tls_connect != NULL) {
        char td[96];
        ptls_desc(p, false, td, sizeof(td));
        fprintf(stderr,
                "  tls: %s; %llu client handshakes failed (target "
                "handshake failures count as upstream failures)\n",
                td, (unsigned long long)t->tls_fail);
    }
    if (qs->redacted > 0)
        fprintf(stderr, "  redacted: %llu messages (--redact)\n",
                (unsigned long long)qs->redacted);
    for (int d = 0; d < 2; d++) {
        uint64_t r = t->rec_bytes[d] + t->partial_bytes[d];
        rec += r;
        fwd += t->fwd_bytes[d];
        fprintf(stderr,
                "  %s: %llu messages (+%llu partial), %llu bytes read, %llu "
                "forwarded, %llu recorded\n",
                dn[d], (unsigned long long)t->msgs[d],
                (unsigned long long)t->partial[d],
                (unsigned long long)t->read_bytes[d],
                (unsigned long long)t->fwd_bytes[d], (unsigned long long)r);
    }
    fprintf(stderr,
            "  record queue: peak %llu bytes, reading paused %llu times "
            "(back-pressure)\n",
            (unsigned long long)qs->max_bytes, (unsigned long long)qs->pauses);
    fprintf(stderr,
            "  recorded %llu bytes %s forwarded %llu bytes (unsent %llu, not "
            "framed %llu); dropped %llu\n",
            (unsigned long long)rec,
            rec == fwd ? "=" : "!=", (unsigned long long)fwd,
            (unsigned long long)(t->unsent[0] + t->unsent[1]),
            (unsigned long long)(t->unframed[0] + t->unframed[1]),
            (unsigned long long)dropped);
    if (p->delay_ns > 0)
        fprintf(stderr,
                "  delay: requested %.3f ms; achieved p50 %.3f ms, p99 %.3f "
                "ms, max %.3f ms over %llu replies\n",
                (double)p->delay_ns / 1e6, (double)phist_quantile(h, 0.5) / 1e6,
                (double)phist_quantile(h, 0.99) / 1e6, (double)h->max_ns / 1e6,
                (unsigned long long)h->n);
}

/* ---- run ---- */

static unsigned
proxy_nthreads(unsigned want)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (want > 0)
        return want > PROXY_THREADS_MAX ? PROXY_THREADS_MAX : want;
    if (n < 1)
        return 1;
    return n > PROXY_THREADS_MAX ? PROXY_THREADS_MAX : (unsigned)n;
}

static struct trace_writer *
proxy_open_trace(const struct proxy *p, const struct proxy_opts *o,
                 const char *ldesc, struct mt_err *err)
{
    struct trace_header hdr;
    struct trace_writer *w;
    char td[96];

    memset(&hdr, 0, sizeof(hdr));
    snprintf(hdr.tool_version, sizeof(hdr.tool_version), "mtrace %s",
             MT_VERSION);
    hdr.source = TRACE_SRC_PROXY;
    ptls_desc(p, true, td,
              sizeof(td)); /* which legs were TLS: all connections */
    if (o->delay_ns > 0)
        snprintf(hdr.source_desc, sizeof(hdr.source_desc),
                 "proxy %s -> %s%s, delay %.3f ms", ldesc, o->target_desc, td,
                 (double)o->delay_ns / 1e6);
    else
        snprintf(hdr.source_desc, sizeof(hdr.source_desc), "proxy %s -> %s%s",
                 ldesc, o->target_desc, td);
    hdr.start_wall_ns = mt_wall_ns();
    hdr.start_mono_ns = mt_now_ns();
    hdr.ts_precision_ns = 1;
    w = trace_writer_open(o->out_path, o->trace_flags, &hdr, err);
    if (w != NULL &&
        trace_writer_set_level(w, o->zstd_level ? o->zstd_level
                                                : PROXY_ZSTD_LEVEL) < 0)
        mt_warn("capture: zstd level %d refused; using the default",
                o->zstd_level);
    return w;
}

/* After the loops stopped: drain the queue, close the trace, summarise.
 * Closes w.  Returns rc, or the first trace error when rc is 0. */
static int
proxy_finish(struct proxy *p, struct trace_writer *w,
             const struct proxy_opts *o, int rc, uint64_t t0,
             struct mt_err *err)
{
    struct recq_stats qs;
    struct pstats tot;
    struct phist h = {0};
    uint64_t dropped;
    int crc;

    memset(&qs, 0, sizeof(qs));
    recq_close(p->q, &qs);
    p->q = NULL;
    proxy_sum(p, &tot, &h);
    dropped = tot.lost_items + qs.write_errors;
    proxy_stats_record(w, &tot, dropped);
    crc = trace_writer_close(w);
    if (qs.first_error < 0 && rc == 0)
        rc = mt_err_set(err, qs.first_error, 0,
                        "writing the trace %s failed: %s; it is readable up "
                        "to its last complete frame",
                        o->out_path, mt_strerror(qs.first_error));
    if (crc < 0 && rc == 0)
        rc = mt_err_set(err, crc, 0, "closing the trace %s failed: %s",
                        o->out_path, mt_strerror(crc));
    if (!o->quiet)
        proxy_print_summary(p, &tot, &h, &qs, dropped,
                            (double)(mt_now_ns() - t0) / 1e9, o->out_path);
    phist_free(&h);
    return rc;
}

/*
 * --rt-prio: tries SCHED_FIFO on the calling thread and puts it back, so
 * that a refusal (EPERM) is reported before the trace file is created.
 * A caller already under a real-time policy (chrt) is left alone.
 */
static int
proxy_rt_probe(int prio, struct mt_err *err)
{
    int rc;

    if (prio == 0 || sched_is_realtime())
        return 0;
    rc = sched_set_realtime(prio, err);
    if (rc < 0)
        return rc;
    return sched_set_normal();
}

static int
proxy_init(struct proxy *p, const struct proxy_opts *o, struct mt_err *err)
{
    memset(p, 0, sizeof(*p));
    p->target = o->target;
    p->target_len = o->target_len;
    snprintf(p->target_desc, sizeof(p->target_desc), "%s", o->target_desc);
    p->delay_ns = o->delay_ns;
    p->spin_ns = o->spin_ns;
    p->spin_auto = o->spin_auto;
    p->max_conns = o->max_conns;
    p->idle_ns = o->idle_ns;
    p->msg_timeout_ns = o->msg_timeout_ns;
    p->msg_max = o->msg_max ? o->msg_max : WIRE_MSG_LEN_MAX;
    p->rt_prio = o->rt_prio;
    p->pin_loops = o->pin_loops;
    p->batch_loops = o->batch_loops;
    atomic_init(&p->next_id, 1);
    atomic_init(&p->nconns, 0);
    atomic_init(&p->stopping, false);
    atomic_init(&p->warned_rs, false);
    p->nloops = (int)proxy_nthreads(o->threads);
    p->loops = mt_calloc((size_t)p->nloops, sizeof(*p->loops));
    if (p->loops == NULL)
        return mt_err_set(err, -ENOMEM, 0, "out of memory");
    for (int i = 0; i < p->nloops; i++) {
        p->loops[i].lfd = -1;
        pthread_mutex_init(&p->loops[i].hand_mu, NULL);
    }
    return 0;
}

/* See proxy.h. */
int
proxy_run(const struct proxy_opts *o, struct mt_err *err)
{
    struct proxy p;
    struct trace_writer *w = NULL;
    pthread_t *th = NULL;
    char ldesc[64], tdesc[96];
    uint64_t t0;
    int rc;

    TRY(proxy_init(&p, o, err));
    TRY(proxy_rt_probe(o->rt_prio, err));
    TRY(ptls_init(&p, o, err)); /* certificate files: before listening */
    th = mt_calloc((size_t)p.nloops, sizeof(*th));
    if (th == NULL) {
        rc = mt_err_set(err, -ENOMEM, 0, "out of memory");
        goto out;
    }
    TRY(proxy_listen(&p, o, ldesc, sizeof(ldesc), err));
    w = proxy_open_trace(&p, o, ldesc, err);
    if (w == NULL) {
        rc = err->code;
        goto out;
    }
    p.q = recq_new(w, o->queue_bytes ? o->queue_bytes : PROXY_QUEUE_BYTES,
                   PROXY_QUEUE_COUNT, proxy_resume, &p, RECQ_NO_START, err);
    if (p.q == NULL) {
        rc = err->code;
        goto out;
    }
    recq_set_redact(p.q, o->redact);
    TRY(recq_start(p.q, err));
    TRY(proxy_loops_init(&p, err));
    atomic_store(&proxy_running, &p);
    sched_warn_rt_cores("capture", o->rt_prio, p.nloops, "docs/capture.md");
    ptls_desc(&p, true, tdesc, sizeof(tdesc));
    mt_info("capture: proxy listening on %s -> %s%s with %d loop%s%s%s, "
            "recording to %s",
            ldesc, o->target_desc, tdesc, p.nloops, p.nloops > 1 ? "s" : "",
            o->rt_prio       ? " (SCHED_FIFO)"
            : o->batch_loops ? " (SCHED_BATCH)"
                             : "",
            o->delay_ns ? ", replies delayed" : "", o->out_path);
    t0 = mt_now_ns();
    rc = proxy_threads_run(&p, th, err);
    atomic_store(&proxy_running, NULL);
    rc = proxy_finish(&p, w, o, rc, t0, err);
    w = NULL;
out:
    atomic_store(&proxy_running, NULL);
    if (p.q != NULL)
        recq_close(p.q, NULL);
    if (w != NULL)
        trace_writer_close(w);
    proxy_loops_free(&p);
    ptls_free(&p);
    mt_free(th);
    return rc;
}
