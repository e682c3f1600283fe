/*
 * srv.c -- listeners, hand-off, loop threads, sweep and drain of the
 * multi-loop TCP server (see srv.h).
 */
#include "srv.h"

#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "addr.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "sched.h"

#define SRV_ACCEPT_BURST 64
#define SRV_ACCEPT_PAUSE_NS 100000000u /* out of descriptors: 100 ms */
#define SRV_SWEEP_MIN_NS 10000000ull   /* 10 ms */
#define SRV_SWEEP_MAX_NS 1000000000ull /* 1 s */

/* ---- hand-off queue ---- */

/* See srv.h. */
void
srv_hand_init(struct srv_hand *h)
{
    memset(h, 0, sizeof(*h));
    pthread_mutex_init(&h->mu, NULL);
    atomic_init(&h->len, 0);
}

/* See srv.h.  No other thread may use h any more. */
void
srv_hand_free(struct srv_hand *h)
{
    struct srv_hand_item it;

    while (srv_hand_pop(h, &it))
        close(it.fd);
    pthread_mutex_destroy(&h->mu);
}

/* See srv.h. */
bool
srv_hand_push(struct srv_hand *h, int fd, const struct sockaddr_storage *peer,
              socklen_t peer_len, uint64_t accepted_ns)
{
    size_t n;
    bool ok = false;

    pthread_mutex_lock(&h->mu);
    n = atomic_load(&h->len);
    if (n < SRV_HAND_MAX) {
        struct srv_hand_item *it = &h->items[(h->head + n) % SRV_HAND_MAX];
        it->fd = fd;
        it->peer = *peer;
        it->peer_len = peer_len;
        it->accepted_ns = accepted_ns;
        atomic_store(&h->len, n + 1);
        ok = true;
    }
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* See srv.h. */
bool
srv_hand_pop(struct srv_hand *h, struct srv_hand_item *out)
{
    size_t n;
    bool ok = false;

    if (atomic_load_explicit(&h->len, memory_order_acquire) == 0)
        return false;
    pthread_mutex_lock(&h->mu);
    n = atomic_load(&h->len);
    if (n > 0) {
        *out = h->items[h->head];
        h->head = (h->head + 1) % SRV_HAND_MAX;
        atomic_store(&h->len, n - 1);
        ok = true;
    }
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* ---- the server ---- */

struct srv_loop {
    struct srv *s; /* borrowed */
    int idx;
    struct loop *l; /* borrowed: the user's, NULL until attached */
    void *arg;      /* borrowed: passed to the callbacks */
    int lfd;        /* owned listener; -1 once closed */
    bool draining;
    struct srv_hand hand; /* connections other loops accepted for it */
    _Atomic size_t load;  /* its connections, queued ones included */
    uint64_t handed;      /* accepted here, queued to another loop */
    struct loop_timer accept_timer; /* re-enables accepts after EMFILE */
    struct loop_timer sweep_timer;
    struct loop_timer drain_timer;
    pthread_t th;
    bool started;
};

struct srv {
    struct srv_cfg cfg;
    struct sockaddr_storage bound;
    char desc[64];
    struct srv_loop *loops; /* owned, cfg.nloops */
    atomic_bool stopping;
    _Atomic size_t open; /* given by on_conn, not yet done: cfg.conns_max */
    pthread_mutex_t mu;  /* guards the start handshake below */
    pthread_cond_t cv;
    int nready;           /* threads past their scheduling set-up */
    struct mt_err rt_err; /* the first thread's refusal; code 0 if none */
};

/* See srv.h. */
int
srv_loops_count(int want, int max)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    if (max > SRV_LOOPS_MAX || max < 1)
        max = SRV_LOOPS_MAX;
    if (want <= 0)
        want = n > 0 ? (n > max ? max : (int)n) : 1;
    return want > max ? max : want;
}

/* See srv.h. */
uint64_t
srv_sweep_period_ns(uint64_t idle_ns, uint64_t msg_timeout_ns)
{
    uint64_t m = idle_ns;

    if (msg_timeout_ns && (m == 0 || msg_timeout_ns < m))
        m = msg_timeout_ns;
    if (m == 0)
        return 0;
    m /= 4;
    return m < SRV_SWEEP_MIN_NS   ? SRV_SWEEP_MIN_NS
           : m > SRV_SWEEP_MAX_NS ? SRV_SWEEP_MAX_NS
                                  : m;
}

/* One socket on ss: a listener with SO_REUSEPORT, else a bound probe. */
static int
srv_socket(const struct sockaddr_storage *ss, socklen_t len, bool reuseport,
           const char *desc, struct mt_err *err)
{
    int one = 1, fd, rc;

    fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return mt_err_set(err, -errno, 0, "socket: %s", strerror(errno));
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if ((reuseport &&
         setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) ||
        bind(fd, (const struct sockaddr *)ss, len) < 0 ||
        (reuseport && listen(fd, SRV_BACKLOG) < 0)) {
        rc = -errno;
        close(fd);
        return mt_err_set(err, rc, 0, "cannot listen on %s: %s", desc,
                          strerror(-rc));
    }
    return fd;
}

/* The probe, then one listener per loop, all on the port the first got. */
static int
srv_listen(struct srv *s, struct mt_err *err)
{
    struct sockaddr_storage ss = s->cfg.addr;
    socklen_t len = s->cfg.addr_len;
    char want[64];
    int fd;

    mt_addr_format((const struct sockaddr *)&ss, want, sizeof(want));
    fd = srv_socket(&ss, len, false, want, err);
    if (fd < 0)
        return fd;
    close(fd);
    for (int i = 0; i < s->cfg.nloops; i++) {
        fd = srv_socket(&ss, len, true, want, err);
        if (fd < 0)
            return fd;
        s->loops[i].lfd = fd;
        if (i == 0) { /* port 0: the others join the port the kernel chose */
            len = sizeof(ss);
            if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
                return mt_err_set(err, -errno, 0, "getsockname: %s",
                                  strerror(errno));
        }
    }
    s->bound = ss;
    mt_addr_format((const struct sockaddr *)&ss, s->desc, sizeof(s->desc));
    return 0;
}

/* See srv.h. */
struct srv *
srv_new(const struct srv_cfg *cfg, struct mt_err *err)
{
    struct srv *s;

    MT_ASSERT(cfg->nloops >= 1 && cfg->nloops <= SRV_LOOPS_MAX);
    MT_ASSERT(cfg->on_conn != NULL);
    s = mt_calloc(1, sizeof(*s));
    if (s != NULL)
        s->loops = mt_calloc((size_t)cfg->nloops, sizeof(*s->loops));
    if (s == NULL || s->loops == NULL) {
        mt_free(s);
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    atomic_init(&s->stopping, false);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    for (int i = 0; i < cfg->nloops; i++) {
        struct srv_loop *sl = &s->loops[i];
        sl->s = s;
        sl->idx = i;
        sl->lfd = -1;
        srv_hand_init(&sl->hand);
        atomic_init(&sl->load, 0);
        loop_timer_init(&sl->accept_timer);
        loop_timer_init(&sl->sweep_timer);
        loop_timer_init(&sl->drain_timer);
    }
    if (srv_listen(s, err) < 0) {
        srv_free(s);
        return NULL;
    }
    return s;
}

static void
srv_close_listener(struct srv_loop *sl)
{
    if (sl->lfd < 0)
        return;
    if (sl->l != NULL)
        loop_fd_del(sl->l, sl->lfd);
    close(sl->lfd);
    sl->lfd = -1;
}

/* See srv.h. */
void
srv_free(struct srv *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->cfg.nloops; i++) {
        struct srv_loop *sl = &s->loops[i];
        srv_close_listener(sl);
        if (sl->l != NULL) {
            loop_timer_stop(sl->l, &sl->accept_timer);
            loop_timer_stop(sl->l, &sl->sweep_timer);
            loop_timer_stop(sl->l, &sl->drain_timer);
        }
        srv_hand_free(&sl->hand); /* closes connections never taken */
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    mt_free(s->loops);
    mt_free(s);
}

/* See srv.h. */
const char *
srv_desc(const struct srv *s)
{
    return s->desc;
}

/* See srv.h. */
uint16_t
srv_port(const struct srv *s)
{
    if (s->bound.ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)&s->bound)->sin6_port);
    return ntohs(((const struct sockaddr_in *)&s->bound)->sin_port);
}

/* See srv.h. */
int
srv_nloops(const struct srv *s)
{
    return s->cfg.nloops;
}

/* See srv.h. */
uint64_t
srv_loop_handed(const struct srv *s, int i)
{
    return s->loops[i].handed;
}

/* See srv.h. */
void
srv_conn_done(struct srv *s, int i)
{
    atomic_fetch_sub_explicit(&s->loops[i].load, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&s->open, 1, memory_order_relaxed);
}

/* See srv.h. */
size_t
srv_conns_open(const struct srv *s)
{
    return atomic_load_explicit(&s->open, memory_order_relaxed);
}

/* The loop that should own a new connection: the least loaded, sl on a
 * tie. */
static struct srv_loop *
srv_pick(struct srv_loop *sl)
{
    struct srv *s = sl->s;
    struct srv_loop *best = sl;
    size_t least = atomic_load_explicit(&sl->load, memory_order_relaxed);

    for (int i = 0; i < s->cfg.nloops && least > 0; i++) {
        size_t n =
            atomic_load_explicit(&s->loops[i].load, memory_order_relaxed);
        if (n < least) {
            least = n;
            best = &s->loops[i];
        }
    }
    return best;
}

/* Gives fd to sl's user, or queues it for a less loaded loop and wakes
 * that loop. */
static void
srv_route(struct srv_loop *sl, int fd, const struct sockaddr_storage *peer,
          socklen_t len, uint64_t accepted_ns)
{
    struct srv *s = sl->s;
    struct srv_loop *t;
    size_t open = atomic_fetch_add(&s->open, 1);

    if (s->cfg.conns_max != 0 && open >= s->cfg.conns_max) {
        atomic_fetch_sub(&s->open, 1);
        close(fd);
        if (s->cfg.on_refused != NULL)
            s->cfg.on_refused(sl->arg, open);
        return;
    }
    t = atomic_load(&s->stopping) ? sl : srv_pick(sl);
    if (t != sl && t->l != NULL) {
        atomic_fetch_add(&t->load, 1);
        if (srv_hand_push(&t->hand, fd, peer, len, accepted_ns)) {
            sl->handed++;
            loop_wake(t->l);
            return;
        }
        atomic_fetch_sub(&t->load, 1); /* its queue is full: keep it */
    }
    atomic_fetch_add(&sl->load, 1);
    s->cfg.on_conn(sl->arg, fd, peer, len, accepted_ns);
}

static void
srv_on_accept_retry(struct loop *l, struct loop_timer *t, void *arg)
{
    struct srv_loop *sl = arg;

    (void)t;
    if (sl->lfd >= 0)
        (void)loop_fd_mod(l, sl->lfd, LOOP_READ);
}

static void
srv_on_accept(struct loop *l, int lfd, void *arg, unsigned ev)
{
    struct srv_loop *sl = arg;

    (void)ev;
    for (int i = 0; i < SRV_ACCEPT_BURST && !sl->draining; i++) {
        struct sockaddr_storage peer;
        socklen_t len = sizeof(peer);
        int fd = accept4(lfd, (struct sockaddr *)&peer, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            /* the start of a TLS handshake's time (one clock read) */
            srv_route(sl, fd, &peer, len, loop_update_time(l));
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
            errno == ENOMEM) {
            /* out of descriptors: stop accepting for a while, not spin */
            mt_warn("%s: accept: %s; pausing accepts for 100 ms",
                    sl->s->cfg.name, strerror(errno));
            (void)loop_fd_mod(l, lfd, 0);
            loop_timer_start(l, &sl->accept_timer,
                             loop_deadline_after(l, SRV_ACCEPT_PAUSE_NS),
                             srv_on_accept_retry, sl);
        } else if (errno != EAGAIN) {
            mt_warn("%s: accept: %s", sl->s->cfg.name, strerror(errno));
        }
        break;
    }
}

static void
srv_on_sweep(struct loop *l, struct loop_timer *t, void *arg)
{
    struct srv_loop *sl = arg;
    uint64_t now = loop_update_time(l);

    sl->s->cfg.on_sweep(sl->arg, now);
    loop_timer_start(l, t, now + sl->s->cfg.sweep_ns, srv_on_sweep, sl);
}

/* See srv.h. */
int
srv_loop_attach(struct srv *s, int i, struct loop *l, void *arg,
                struct mt_err *err)
{
    struct srv_loop *sl = &s->loops[i];
    int rc;

    MT_ASSERT(i >= 0 && i < s->cfg.nloops && sl->l == NULL);
    sl->arg = arg;
    rc = loop_fd_add(l, sl->lfd, LOOP_READ, srv_on_accept, sl);
    if (rc < 0)
        return mt_err_set(err, rc, 0, "cannot watch the listener: %s",
                          mt_strerror(rc));
    sl->l = l;
    if (s->cfg.sweep_ns > 0 && s->cfg.on_sweep != NULL)
        loop_timer_start(l, &sl->sweep_timer,
                         loop_deadline_after(l, s->cfg.sweep_ns), srv_on_sweep,
                         sl);
    return 0;
}

static void
srv_on_drain_deadline(struct loop *l, struct loop_timer *t, void *arg)
{
    struct srv_loop *sl = arg;

    (void)t;
    if (sl->s->cfg.on_drain_end != NULL)
        sl->s->cfg.on_drain_end(sl->arg);
    loop_stop(l);
}

/* See srv.h. */
bool
srv_loop_tick(struct srv *s, int i)
{
    struct srv_loop *sl = &s->loops[i];
    struct srv_hand_item it;

    while (srv_hand_pop(&sl->hand, &it)) {
        if (sl->draining) {
            close(it.fd);
            srv_conn_done(s, i);
        } else {
            s->cfg.on_conn(sl->arg, it.fd, &it.peer, it.peer_len,
                           it.accepted_ns);
        }
    }
    if (!atomic_load(&s->stopping))
        return false;
    if (!sl->draining) {
        sl->draining = true;
        srv_close_listener(sl);
        loop_timer_stop(sl->l, &sl->sweep_timer);
        if (s->cfg.drain_ns == 0)
            loop_stop(sl->l);
        else
            loop_timer_start(sl->l, &sl->drain_timer,
                             loop_deadline_after(sl->l, s->cfg.drain_ns),
                             srv_on_drain_deadline, sl);
    }
    return true;
}

/* ---- threads ---- */

/* Sets attr's CPU affinity to the (i mod n)-th of the n CPUs in allowed
 * (as HAProxy's cpu-map auto:1/1-N 0-(N-1) does).  0 or a positive
 * errno. */
static int
srv_pin_attr(pthread_attr_t *attr, const cpu_set_t *allowed, int i)
{
    int n = CPU_COUNT(allowed), k = 0;
    cpu_set_t one;

    if (n <= 0 || i < 0)
        return EINVAL;
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, allowed) && k++ == i % n) {
            CPU_SET(cpu, &one);
            break;
        }
    return pthread_attr_setaffinity_np(attr, sizeof(one), &one);
}

/* The thread's own scheduling (--rt-prio applies to the thread, not to
 * its creator, which stays normal); reported to srv_start. */
static int
srv_thread_setup(struct srv_loop *sl)
{
    struct srv *s = sl->s;
    struct mt_err err = {0};
    int rc;

    /* 1 ns timer slack: the default 50 us would blur delays */
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    rc = sched_set_realtime(s->cfg.rt_prio, &err);
    /* --batch-loops (excludes --rt-prio): no wake-up preemption */
    if (rc == 0 && s->cfg.batch_loops && sched_set_batch() < 0)
        mt_warn("%s: event loop %d: SCHED_BATCH refused; it stays normal",
                s->cfg.name, sl->idx);
    pthread_mutex_lock(&s->mu);
    if (rc < 0 && s->rt_err.code == 0)
        mt_err_set(&s->rt_err, rc, 0, "--rt-prio %d: %s", s->cfg.rt_prio,
                   err.msg);
    s->nready++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void *
srv_thread(void *arg)
{
    struct srv_loop *sl = arg;
    int rc;

    if (srv_thread_setup(sl) < 0)
        return NULL; /* srv_start reports it; the caller stops the others */
    rc = loop_run(sl->l);
    if (rc < 0)
        mt_error("%s: event loop %d failed: %s", sl->s->cfg.name, sl->idx,
                 mt_strerror(rc));
    if (sl->s->cfg.on_exit != NULL)
        sl->s->cfg.on_exit(sl->arg);
    return NULL;
}

/* See srv.h. */
int
srv_start(struct srv *s, struct mt_err *err)
{
    sigset_t all, old;
    cpu_set_t allowed;
    int rc = 0, nstarted = 0;

    CPU_ZERO(&allowed);
    if (s->cfg.pin_loops && sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
        rc = errno;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (int i = 0; rc == 0 && i < s->cfg.nloops; i++) {
        struct srv_loop *sl = &s->loops[i];
        pthread_attr_t attr;

        MT_ASSERT(sl->l != NULL);
        pthread_attr_init(&attr);
        if (s->cfg.pin_loops)
            rc = srv_pin_attr(&attr, &allowed, i);
        if (rc == 0)
            rc = pthread_create(&sl->th, &attr, srv_thread, sl);
        pthread_attr_destroy(&attr);
        if (rc == 0) {
            sl->started = true;
            nstarted++;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_mutex_lock(&s->mu);
    while (s->nready < nstarted)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (rc != 0)
        return mt_err_set(err, -rc, 0, "cannot start a loop thread%s: %s",
                          s->cfg.pin_loops ? " pinned to a CPU (--pin-loops)"
                                           : "",
                          strerror(rc));
    if (s->rt_err.code != 0) {
        *err = s->rt_err;
        return err->code;
    }
    return 0;
}

/* See srv.h. */
void
srv_stop(struct srv *s)
{
    if (s == NULL)
        return;
    atomic_store(&s->stopping, true);
    for (int i = 0; i < s->cfg.nloops; i++)
        if (s->loops[i].l != NULL)
            loop_wake(s->loops[i].l);
}

/* See srv.h. */
bool
srv_stopping(const struct srv *s)
{
    return atomic_load(&s->stopping);
}

/* See srv.h. */
void
srv_join(struct srv *s)
{
    for (int i = 0; i < s->cfg.nloops; i++)
        if (s->loops[i].started) {
            pthread_join(s->loops[i].th, NULL);
            s->loops[i].started = false;
        }
}
