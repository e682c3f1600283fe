/*
 * delayfwd.c -- the floor of `mtrace capture --delay-ms`: a minimal TCP
 * forwarder that holds every chunk the server sends for a fixed delay and
 * does nothing else (no framing, no recording, no trace writer), with the
 * same timer method as mtrace's loops.  bench_delay_floor.sh runs it and
 * mtrace capture side by side: what the floor achieves on a host is the
 * best any user-space proxy with that method can do there, so it tells a
 * target the host cannot meet from a gap in mtrace.
 *
 *     delayfwd --target HOST:PORT --delay-us D [--spin-us S] [--threads T]
 *              [--listen HOST:PORT]
 *
 * Prints "READY <port>" on stdout once listening.  The main thread accepts,
 * connects to the target and hands the pair to loop (n mod T), so the
 * loops hold equal numbers of connections (as mtrace's hand-over does).
 * Each loop: epoll; client bytes are forwarded at once; each read from the
 * server is one hold released at arrival + D (arrival: the clock read just
 * after the read returned, as mtrace stamps a message's last byte), from
 * one FIFO per loop (one delay for all: arrival order is release order).
 * Timer: a timerfd (absolute CLOCK_MONOTONIC, 1 ns timer slack) armed S us
 * before the first release, then epoll_wait(0) until it is due, and the
 * clock checked after every event (mtrace's loop: core/loop.c).  Achieved
 * delay = the clock just before the release's send() - arrival, as
 * mtrace's summary measures it.  On SIGINT/SIGTERM it prints
 *
 *     delayfwd: achieved p50_us=.. p99_us=.. max_us=.. n=..
 *
 * on stderr and exits.  A bench helper: a write that would block waits in
 * poll (replies here are ~100 bytes); errors close the pair.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include "core/addr.h"
#include "core/clock.h"

#define DF_THREADS_MAX 16
#define DF_READ 65536

struct df_conn;

struct df_end {
    struct df_conn *c;
    int side; /* 0 client, 1 server */
};

struct df_conn {
    int fd[2];
    struct df_end end[2];
    uint8_t *buf; /* server bytes not yet sent */
    size_t len, cap;
    uint64_t in_off, sent_off; /* stream offsets of the server's bytes */
    int dead;
    struct df_conn *next; /* the loop's list (freed at exit) */
};

struct df_hold {
    struct df_conn *c;
    uint64_t end_off, ready_ns, arrival_ns;
};

struct df_loop {
    int ep, tfd;
    pthread_t th;
    struct df_hold *q;
    size_t qh, qn, qcap; /* ring */
    uint64_t *samples;
    size_t ns, ncap;
    struct df_conn *conns;
    uint64_t armed_ns;
};

static struct df_loop df_loops[DF_THREADS_MAX];
static int df_nloops = 2;
static uint64_t df_delay_ns, df_spin_ns = 100000;
static volatile sig_atomic_t df_stop;
static int df_timer_tag; /* its address marks the timerfd's events */

static void
df_die(const char *what)
{
    fprintf(stderr, "delayfwd: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *
df_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    if (n == *cap)
        return p;
    p = realloc(p, n * elem);
    if (p == NULL)
        df_die("realloc");
    *cap = n;
    return p;
}

/* Sends all of p; waits in poll when the socket is full.  0 or -1. */
static int
df_send_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            struct pollfd pf = {fd, POLLOUT, 0};
            (void)poll(&pf, 1, 1000);
            continue;
        }
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void
df_kill(struct df_loop *l, struct df_conn *c)
{
    if (c->dead)
        return;
    c->dead = 1;
    for (int i = 0; i < 2; i++) {
        epoll_ctl(l->ep, EPOLL_CTL_DEL, c->fd[i], NULL);
        close(c->fd[i]);
    }
}

/* Releases every hold that is due. */
static void
df_release(struct df_loop *l)
{
    while (l->qn > 0) {
        struct df_hold *h = &l->q[l->qh];
        struct df_conn *c = h->c;
        uint64_t t = mt_now_ns();
        size_t n;

        if (h->ready_ns > t)
            return;
        l->qh = (l->qh + 1) % l->qcap;
        l->qn--;
        if (c->dead)
            continue;
        n = (size_t)(h->end_off - c->sent_off);
        if (df_send_all(c->fd[0], c->buf, n) < 0) {
            df_kill(l, c);
            continue;
        }
        memmove(c->buf, c->buf + n, c->len - n);
        c->len -= n;
        c->sent_off = h->end_off;
        l->samples = df_grow(l->samples, &l->ncap, l->ns + 1, sizeof(uint64_t));
        l->samples[l->ns++] = t - h->arrival_ns;
    }
}

static void
df_read(struct df_loop *l, struct df_conn *c, int side)
{
    uint8_t tmp[DF_READ];
    ssize_t n = recv(c->fd[side], tmp, sizeof(tmp), 0);
    uint64_t t = mt_now_ns();
    struct df_hold *h;

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        df_kill(l, c);
        return;
    }
    if (side == 0) {
        if (df_send_all(c->fd[1], tmp, (size_t)n) < 0)
            df_kill(l, c);
        return;
    }
    c->buf = df_grow(c->buf, &c->cap, c->len + (size_t)n, 1);
    memcpy(c->buf + c->len, tmp, (size_t)n);
    c->len += (size_t)n;
    c->in_off += (uint64_t)n;
    if (l->qn == l->qcap) { /* grow the ring, unwrapping it */
        size_t old = l->qcap;
        struct df_hold *q = NULL;
        size_t cap = 0;
        q = df_grow(q, &cap, old + 1, sizeof(*q));
        for (size_t i = 0; i < l->qn; i++)
            q[i] = l->q[(l->qh + i) % old];
        free(l->q);
        l->q = q;
        l->qcap = cap;
        l->qh = 0;
    }
    h = &l->q[(l->qh + l->qn) % l->qcap];
    h->c = c;
    h->end_off = c->in_off;
    h->arrival_ns = t;
    h->ready_ns = t + df_delay_ns;
    l->qn++;
}

static void
df_arm(struct df_loop *l, uint64_t at)
{
    struct itimerspec its;

    if (l->armed_ns == at)
        return;
    memset(&its, 0, sizeof(its));
    its.it_value.tv_sec = (time_t)(at / 1000000000u);
    its.it_value.tv_nsec = (long)(at % 1000000000u);
    if (timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
        df_die("timerfd_settime");
    l->armed_ns = at;
}

static void *
df_run(void *arg)
{
    struct df_loop *l = arg;
    struct epoll_event evs[64];

    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    while (!df_stop) {
        int timeout = 100, n;
        if (l->qn > 0) {
            uint64_t next = l->q[l->qh].ready_ns, now = mt_now_ns();
            if (next <= now || next - now <= df_spin_ns)
                timeout = 0; /* due, or busy-poll the last stretch */
            else
                df_arm(l, next - df_spin_ns);
        }
        n = epoll_wait(l->ep, evs, 64, timeout);
        if (n < 0 && errno != EINTR)
            df_die("epoll_wait");
        df_release(l);
        for (int i = 0; i < n; i++) {
            struct df_end *e = evs[i].data.ptr;
            if (evs[i].data.ptr == &df_timer_tag) {
                uint64_t v;
                (void)read(l->tfd, &v, sizeof(v));
                l->armed_ns = 0;
            } else if (!e->c->dead) {
                df_read(l, e->c, e->side);
            }
            if (df_spin_ns > 0)
                df_release(l); /* fell due during that event */
        }
    }
    return NULL;
}

static void
df_on_signal(int sig)
{
    (void)sig;
    df_stop = 1;
}

static int
df_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
    const char *listen_spec = "127.0.0.1:0", *target = NULL;
    struct sockaddr_storage ls, ts;
    socklen_t llen, tlen;
    int lfd, one = 1;
    uint64_t total = 0, *all;
    size_t k = 0;
    struct sigaction sa;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--target") == 0 && i + 1 < argc)
            target = argv[++i];
        else if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen_spec = argv[++i];
        else if (strcmp(argv[i], "--delay-us") == 0 && i + 1 < argc)
            df_delay_ns = (uint64_t)(strtod(argv[++i], NULL) * 1000);
        else if (strcmp(argv[i], "--spin-us") == 0 && i + 1 < argc)
            df_spin_ns = (uint64_t)(strtod(argv[++i], NULL) * 1000);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            df_nloops = (int)strtol(argv[++i], NULL, 10);
        else
            target = NULL, i = argc;
    }
    if (target == NULL || df_delay_ns == 0 || df_nloops < 1 ||
        df_nloops > DF_THREADS_MAX) {
        fprintf(stderr, "usage: delayfwd --target HOST:PORT --delay-us D "
                        "[--spin-us S] [--threads 1..16] [--listen "
                        "HOST:PORT]\n");
        return 2;
    }
    if (mt_addr_resolve(target, &ts, &tlen) < 0 ||
        mt_addr_resolve(listen_spec, &ls, &llen) < 0) {
        fprintf(stderr, "delayfwd: cannot resolve %s or %s\n", target,
                listen_spec);
        return 2;
    }
    lfd = socket(ls.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&ls, llen) < 0 ||
        listen(lfd, 4096) < 0)
        df_die("listen");
    llen = sizeof(ls);
    getsockname(lfd, (struct sockaddr *)&ls, &llen);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = df_on_signal; /* no SA_RESTART: accept() returns */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < df_nloops; i++) {
        struct df_loop *l = &df_loops[i];
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &df_timer_tag};
        l->ep = epoll_create1(EPOLL_CLOEXEC);
        l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (l->ep < 0 || l->tfd < 0 ||
            epoll_ctl(l->ep, EPOLL_CTL_ADD, l->tfd, &ev) < 0)
            df_die("epoll");
        pthread_create(&l->th, NULL, df_run, l);
    }
    printf("READY %d\n", ntohs(((struct sockaddr_in *)&ls)->sin_port));
    fflush(stdout);
    for (uint64_t n = 0; !df_stop; n++) {
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), sfd;
        struct df_loop *l = &df_loops[n % (uint64_t)df_nloops];
        struct df_conn *c;
        if (cfd < 0) {
            n--;
            continue;
        }
        sfd = socket(ts.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (sfd < 0 || connect(sfd, (struct sockaddr *)&ts, tlen) < 0) {
            fprintf(stderr, "delayfwd: connect %s: %s\n", target,
                    strerror(errno));
            close(cfd);
            if (sfd >= 0)
                close(sfd);
            continue;
        }
        c = calloc(1, sizeof(*c));
        if (c == NULL)
            df_die("calloc");
        c->fd[0] = cfd;
        c->fd[1] = sfd;
        for (int s = 0; s < 2; s++) {
            struct epoll_event ev = {.events = EPOLLIN};
            setsockopt(c->fd[s], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            fcntl(c->fd[s], F_SETFL, fcntl(c->fd[s], F_GETFL) | O_NONBLOCK);
            c->end[s].c = c;
            c->end[s].side = s;
            ev.data.ptr = &c->end[s];
            /* the conn list is only walked after the loops are joined */
            if (s == 0) {
                c->next = l->conns;
                l->conns = c;
            }
            if (epoll_ctl(l->ep, EPOLL_CTL_ADD, c->fd[s], &ev) < 0)
                df_die("epoll_ctl");
        }
    }
    for (int i = 0; i < df_nloops; i++) {
        pthread_join(df_loops[i].th, NULL);
        total += df_loops[i].ns;
    }
    all = malloc((total ? total : 1) * sizeof(*all));
    if (all == NULL)
        df_die("malloc");
    for (int i = 0; i < df_nloops; i++) {
        memcpy(all + k, df_loops[i].samples, df_loops[i].ns * sizeof(uint64_t));
        k += df_loops[i].ns;
    }
    qsort(all, total, sizeof(*all), df_cmp);
    if (total == 0)
        fprintf(stderr, "delayfwd: achieved n=0\n");
    else
        fprintf(stderr,
                "delayfwd: achieved p50_us=%.1f p99_us=%.1f max_us=%.1f "
                "n=%llu\n",
                all[(total - 1) / 2] / 1e3, all[(total * 99 - 1) / 100] / 1e3,
                all[total - 1] / 1e3, (unsigned long long)total);
    return 0;
}
