/*
 * timer_wake.c -- how late does a sleeping thread wake on this machine?
 *
 * Measures the lateness (wake-up time - deadline) of epoll_wait on a
 * timerfd, the way core/loop.c sleeps, for several variants: default timer
 * slack (50 us) vs PR_SET_TIMERSLACK 1 ns, absolute vs relative timerfd
 * deadlines; and the lateness of a core/loop timer with and without the
 * loop's adaptive spin.  Prints one markdown table (bench/bench_replay.sh
 * and docs/benchmarks.md use it).
 *
 *     timer_wake [--n N] [--delay-us D] [--rt-prio P] [--cpu-dma-latency US]
 *
 * --rt-prio P: run every variant under SCHED_FIFO P (core/sched.h), as
 * `mtrace replay --rt-prio P` runs its loops.
 * --cpu-dma-latency US: hold a PM QoS CPU wake-up latency request of US
 * microseconds (core/pmqos.h) for the whole run, as `mtrace replay
 * --cpu-dma-latency US` does (machine-wide while held).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/loop.h"
#include "core/pmqos.h"
#include "core/sched.h"
#include "replay/delay.h"

struct variant {
    const char *name;
    unsigned long slack_ns; /* 0: leave the process default */
    bool abs;
};

static double
cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void
row(const char *name, const struct delay_hist *h, double cpu, double wall)
{
    printf("| %s | %llu | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f%% |\n", name,
           (unsigned long long)h->n, delay_hist_quantile(h, 0.5) / 1e3,
           delay_hist_quantile(h, 0.9) / 1e3,
           delay_hist_quantile(h, 0.99) / 1e3,
           delay_hist_quantile(h, 0.999) / 1e3, h->max_ns / 1e3,
           100.0 * cpu / wall);
}

/* Sleeps n times for delay_ns on a timerfd through epoll_wait. */
static void
raw_variant(const struct variant *v, int n, uint64_t delay_ns)
{
    int ep = epoll_create1(0);
    int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    struct epoll_event ev = {.events = EPOLLIN}, out;
    struct delay_hist h;
    unsigned long old = (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    double c0, w0;

    if (ep < 0 || tfd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) < 0) {
        perror("timer_wake");
        exit(1);
    }
    if (v->slack_ns)
        prctl(PR_SET_TIMERSLACK, v->slack_ns, 0, 0, 0);
    delay_hist_init(&h);
    c0 = cpu_s();
    w0 = mt_now_ns() / 1e9;
    for (int i = 0; i < n; i++) {
        uint64_t now = mt_now_ns(), dl = now + delay_ns, t, x;
        struct itimerspec its;
        memset(&its, 0, sizeof(its));
        t = v->abs ? dl : delay_ns;
        its.it_value.tv_sec = (time_t)(t / 1000000000u);
        its.it_value.tv_nsec = (long)(t % 1000000000u);
        timerfd_settime(tfd, v->abs ? TFD_TIMER_ABSTIME : 0, &its, NULL);
        while (epoll_wait(ep, &out, 1, -1) < 0 && errno == EINTR)
            ;
        t = mt_now_ns();
        if (read(tfd, &x, sizeof(x)) < 0)
            perror("read");
        delay_hist_add(&h, t > dl ? t - dl : 0);
    }
    row(v->name, &h, cpu_s() - c0, mt_now_ns() / 1e9 - w0);
    prctl(PR_SET_TIMERSLACK, old, 0, 0, 0);
    close(tfd);
    close(ep);
}

struct lt {
    struct delay_hist h;
    uint64_t delay_ns;
    int left;
};

static void
on_lt(struct loop *l, struct loop_timer *t, void *arg)
{
    struct lt *s = arg;
    uint64_t now = loop_update_time(l);

    delay_hist_add(&s->h, now > t->deadline_ns ? now - t->deadline_ns : 0);
    if (--s->left > 0)
        loop_timer_start(l, t, now + s->delay_ns, on_lt, s);
    else
        loop_stop(l);
}

/* n core/loop timers in a row; spin: loop_set_timer_spin (UINT64_MAX: the
 * adaptive default). */
static void
loop_variant(const char *name, int n, uint64_t delay_ns, uint64_t spin_ns)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 64, &err);
    struct loop_timer t;
    struct lt s;
    double c0, w0;

    if (l == NULL) {
        fprintf(stderr, "timer_wake: %s\n", err.msg);
        exit(1);
    }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (spin_ns != UINT64_MAX)
        loop_set_timer_spin(l, spin_ns);
    else
        loop_set_timer_spin_auto(l, LOOP_SPIN_AUTO_MAX_NS);
    delay_hist_init(&s.h);
    s.delay_ns = delay_ns;
    s.left = n;
    loop_timer_init(&t);
    c0 = cpu_s();
    w0 = mt_now_ns() / 1e9;
    loop_timer_start(l, &t, loop_update_time(l) + delay_ns, on_lt, &s);
    loop_run(l);
    row(name, &s.h, cpu_s() - c0, mt_now_ns() / 1e9 - w0);
    if (spin_ns == UINT64_MAX)
        printf("|   (adaptive spin settled at %.1f us) | | | | | | | |\n",
               loop_timer_spin_ns(l) / 1e3);
    loop_free(l);
}

int
main(int argc, char **argv)
{
    static const struct variant vs[] = {
        {"timerfd abs, default slack", 0, true},
        {"timerfd rel, default slack", 0, false},
        {"timerfd abs, slack 1 ns", 1, true},
        {"timerfd rel, slack 1 ns", 1, false},
    };
    int n = 2000, rt = 0, dma = -1;
    struct pmqos q;
    uint64_t delay_ns = 1000000;
    struct mt_err err = {0};

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--n") == 0)
            n = (int)strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--delay-us") == 0)
            delay_ns = strtoull(argv[i + 1], NULL, 10) * 1000;
        else if (strcmp(argv[i], "--rt-prio") == 0)
            rt = (int)strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--cpu-dma-latency") == 0)
            dma = (int)strtol(argv[i + 1], NULL, 10);
    }
    pmqos_init(&q);
    if (dma >= 0 && pmqos_hold(&q, dma, &err) < 0) {
        fprintf(stderr, "timer_wake: --cpu-dma-latency: %s\n", err.msg);
        return 1;
    }
    if (sched_set_realtime(rt, &err) < 0) {
        fprintf(stderr, "timer_wake: %s\n", err.msg);
        return 1;
    }
    char pm[48] = "";

    if (dma >= 0)
        snprintf(pm, sizeof(pm), ", PM QoS %d us held", dma);
    printf("| sleep of %.0f us%s%s, lateness | n | p50 us | p90 us | p99 us | "
           "p99.9 us | max us | CPU |\n",
           delay_ns / 1e3, rt ? ", SCHED_FIFO" : "", pm);
    printf("|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
        raw_variant(&vs[i], n, delay_ns);
    loop_variant("core/loop timer, no spin", n, delay_ns, 0);
    loop_variant("core/loop timer, spin 50 us", n, delay_ns, 50000);
    loop_variant("core/loop timer, adaptive spin", n, delay_ns, UINT64_MAX);
    pmqos_release(&q);
    return 0;
}
