/*
 * calibrate_gilmutex.c -- drop_gil's signal under gil->mutex, measured
 * (mtrace calibrate; round 9).  See calibrate_gilmutex.h.
 *
 * Why: traced with perf (sim/attrib_blocks.sh, docs/sim-history.md round
 * 9), pymongo threads under the GIL block 0.8-1.6 times per call on
 * gil->mutex (a futex word inside _PyRuntime.ceval.gil) besides their
 * waits on gil->cond; drop_gil (Python/ceval_gil.h, 3.11) calls
 * COND_SIGNAL(gil->cond) -- glibc's pthread_cond_signal, a FUTEX_WAKE
 * syscall when a waiter sleeps -- with gil->mutex held, and the woken
 * waiter must re-lock gil->mutex before it can re-check gil->locked.
 */
#include "calibrate_gilmutex.h"
#include "calibrate.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "core/clock.h"
#include "core/mem.h"

struct gm {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int locked;  /* the "GIL", under mu */
    int waiting; /* the waiter is in its wait loop, under mu */
    int stop;
    uint64_t sig_ns; /* when the signaller called pthread_cond_signal */
    int n, cap;
    double *ready; /* ns */
    long *vcsw;
};

static long
thread_vcsw(void)
{
    struct rusage r;

    return getrusage(RUSAGE_THREAD, &r) == 0 ? r.ru_nvcsw : 0;
}

/* take_gil's loop: wait on cv while locked, 5 ms timeout, mutex held. */
static void *
gm_waiter(void *arg)
{
    struct gm *g = arg;

    pthread_mutex_lock(&g->mu);
    while (!g->stop && g->n < g->cap) {
        long v0 = thread_vcsw();

        g->waiting = 1;
        while (g->locked && !g->stop) {
            struct timespec dl;

            clock_gettime(CLOCK_MONOTONIC, &dl);
            dl.tv_nsec += 5000000;
            if (dl.tv_nsec >= 1000000000) {
                dl.tv_sec++;
                dl.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&g->cv, &g->mu, &dl);
        }
        if (g->stop)
            break;
        g->ready[g->n] = (double)(mt_now_ns() - g->sig_ns);
        g->vcsw[g->n] = thread_vcsw() - v0;
        g->n++;
        g->waiting = 0;
        g->locked = 1; /* holds the "GIL"; waits again at once */
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* drop_gil: lock, locked = 0, signal, unlock; returns the signal->unlock
 * window (ns), or -1 when the waiter was not waiting yet. */
static double
gm_drop(struct gm *g)
{
    uint64_t t;

    pthread_mutex_lock(&g->mu);
    if (!g->waiting || !g->locked) {
        pthread_mutex_unlock(&g->mu);
        return -1;
    }
    g->locked = 0;
    g->sig_ns = mt_now_ns();
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    t = mt_now_ns();
    return (double)(t - g->sig_ns);
}

static int
gm_init(struct gm *g, int rounds)
{
    pthread_condattr_t ca;

    g->cap = rounds;
    g->locked = 1;
    g->ready = mt_malloc((size_t)rounds * sizeof(*g->ready));
    g->vcsw = mt_malloc((size_t)rounds * sizeof(*g->vcsw));
    if (g->ready == NULL || g->vcsw == NULL)
        return -1;
    /* CPython 3.11 (Python/condvar.h) waits on CLOCK_MONOTONIC */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g->mu, NULL);
    return 0;
}

int
sim_calibrate_gilmutex(int rounds, struct sim_cal_gilmutex *r)
{
    static struct gm g;
    struct timespec idle = {0, SIM_CAL_GM_IDLE_US * 1000};
    pthread_t th;
    double *hold = mt_malloc((size_t)rounds * sizeof(*hold));
    int nh = 0, relock = 0;
    long vs = 0;

    r->rounds = 0;
    g = (struct gm){0};
    if (hold == NULL || gm_init(&g, rounds) < 0 ||
        pthread_create(&th, NULL, gm_waiter, &g) != 0) {
        mt_free(hold), mt_free(g.ready), mt_free(g.vcsw);
        errno = ENOMEM;
        return -1;
    }
    for (int i = 0; nh < rounds && i < 4 * rounds; i++) {
        double h;

        nanosleep(&idle, NULL);
        if ((h = gm_drop(&g)) >= 0)
            hold[nh++] = h;
    }
    nanosleep(&idle, NULL);
    pthread_mutex_lock(&g.mu);
    g.stop = 1;
    pthread_cond_signal(&g.cv);
    pthread_mutex_unlock(&g.mu);
    pthread_join(th, NULL);
    for (int i = 0; i < g.n; i++) {
        relock += g.vcsw[i] >= 2;
        vs += g.vcsw[i];
    }
    if (nh > 10 && g.n > 10) {
        double cv;

        sim_calibrate_trimmed_stats(hold, nh, INFINITY, &r->hold_us,
                                    &r->hold_cv);
        sim_calibrate_trimmed_stats(g.ready, g.n, INFINITY, &r->ready_us, &cv);
        r->hold_us /= 1e3;
        r->ready_us /= 1e3;
        r->relock_share = (double)relock / g.n;
        r->vcsw_per_wait = (double)vs / g.n;
        r->rounds = g.n;
    }
    pthread_mutex_destroy(&g.mu);
    pthread_cond_destroy(&g.cv);
    mt_free(hold), mt_free(g.ready), mt_free(g.vcsw);
    return r->rounds > 0 ? 0 : (errno = EAGAIN, -1);
}

void
sim_calibrate_gilmutex_print(FILE *out, const struct sim_cal_gilmutex *g)
{
    if (g->rounds == 0)
        return;
    fprintf(out,
            "gil_mutex_signal_us = %.3f [measured] C threads on CPython "
            "3.11's gil->mutex/gil->cond protocol (ceval_gil.h drop_gil): "
            "pthread_cond_signal with a waiter blocked %d us -> "
            "pthread_mutex_unlock done, the time gil->mutex is held while the "
            "waiter is woken; mean of %d less the top 1%% (cv %.2f)\n",
            g->hold_us, SIM_CAL_GM_IDLE_US, g->rounds, g->hold_cv);
    fprintf(out,
            "# gil->mutex check, the same run: %.4f of the woken waiter's "
            "waits had a second voluntary switch (RUSAGE_THREAD: it blocked "
            "again re-locking gil->mutex), %.2f switches per wait, back with "
            "the mutex %.3f us after the signal (the model's rule: blocked "
            "when its wake_us draw ends inside the hold; --set "
            "gil_mutex_relock_p=X applies the share instead)\n",
            g->relock_share, g->vcsw_per_wait, g->ready_us);
}
