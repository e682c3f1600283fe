/*
 * server.c -- loops, listeners, threads, the spreading of connections over
 * loops and their timeouts (see server.h); the socket side of each
 * connection is sconn.c.
 */
#include "server.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/sched.h"
#include "handoff.h"
#include "sconn.h"
#include "sock.h"

#define SWEEP_MIN_NS 10000000ull   /* 10 ms */
#define SWEEP_MAX_NS 1000000000ull /* 1 s */

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

/* sconn_close's last step: c leaves its loop's list and is freed. */
static void
on_closed(struct sconn *c, void *arg)
{
    struct sloop *sl = arg;

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

/* Takes fd as one of sl's connections; the caller has counted it in
 * sl->load (undone here if it cannot be kept). */
static void
accept_one(struct sloop *sl, int fd, const struct sockaddr_storage *ss,
           uint64_t accepted_ns)
{
    struct sconn *c;

    if (atomic_fetch_add(&sl->srv->nconns, 1) >= sl->srv->o.conns_max ||
        (c = mt_calloc(1, sizeof(*c))) == NULL) {
        atomic_fetch_sub(&sl->srv->nconns, 1);
        atomic_fetch_sub(&sl->load, 1);
        mt_warn("replay: connection refused: %zu connections open (limit)",
                sl->srv->o.conns_max);
        close(fd);
        return;
    }
    if (sconn_open(c, sl->l, &sl->w, &sl->srv->o, fd, ss, accepted_ns,
                   on_closed, sl) < 0) {
        atomic_fetch_sub(&sl->srv->nconns, 1);
        atomic_fetch_sub(&sl->load, 1);
        mt_warn("replay: cannot watch connection fd %d; closed", fd);
        close(fd);
        mt_free(c);
        return;
    }
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
accept_route(struct sloop *sl, int fd, const struct sockaddr_storage *ss,
             uint64_t accepted_ns)
{
    struct sloop *t = sloop_pick(sl);

    if (t != sl) {
        atomic_fetch_add(&t->load, 1);
        if (handoff_push(&t->ho, fd, ss, accepted_ns)) {
            loop_wake(t->l);
            return;
        }
        atomic_fetch_sub(&t->load, 1); /* its queue is full: keep it */
    }
    atomic_fetch_add(&sl->load, 1);
    accept_one(sl, fd, ss, accepted_ns);
}

/* Before the loop sleeps: the connections other loops passed to it. */
static void
on_before_sleep(struct loop *l, void *arg)
{
    struct sloop *sl = arg;
    struct sockaddr_storage ss;
    uint64_t accepted_ns;
    int fd;

    (void)l;
    while (handoff_pop(&sl->ho, &fd, &ss, &accepted_ns))
        accept_one(sl, fd, &ss, accepted_ns);
}

static void
on_accept(struct loop *l, int lfd, void *arg, unsigned events)
{
    struct sloop *sl = arg;

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
        /* the start of a TLS handshake's time (one clock read) */
        accept_route(sl, fd, &ss, loop_update_time(l));
    }
}

/* ---- timeouts ---- */

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
    s->sh.auth = o->auth;
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
