/*
 * calibrate_place.c -- a GIL-style hand-over's cost by placement of the
 * woken thread (mtrace calibrate; round 10).  See calibrate_place.h.
 *
 * Why: Linux's select_task_rq_fair (kernel/sched/fair.c) puts a woken
 * task on an idle CPU when it finds one (select_idle_sibling) and
 * otherwise on a busy run queue (its previous CPU or the waker's,
 * wake_affine).  On this VM an idle vCPU halts (cpuidle haltpoll), so the
 * two placements cost different wake-up latencies; mtrace sim's cpu_pick
 * 2 (per-core run queues) uses the busy-CPU figure as wake_busy_us.
 */
#include "calibrate_place.h"
#include "calibrate.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "core/clock.h"
#include "core/mem.h"

struct pl {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int turn; /* whose the "GIL" is, under mu */
    int stop;
    uint64_t sig_ns; /* when the last hand-over was signalled, under mu */
    int n, cap;
    double *lat;      /* ns */
    int cpu[2];       /* CPU each thread is pinned to */
    uint64_t tcpu[2]; /* thread CPU ns at exit */
    uint64_t spun[2]; /* ns spent spinning */
};

struct pl_arg {
    struct pl *g;
    int me;
};

static uint64_t
thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *
pl_thread(void *arg)
{
    struct pl_arg *a = arg;
    struct pl *g = a->g;
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(g->cpu[a->me], &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    pthread_mutex_lock(&g->mu);
    for (;;) {
        uint64_t t0;

        while (g->turn != a->me && !g->stop)
            pthread_cond_wait(&g->cv, &g->mu);
        if (g->stop)
            break;
        if (g->sig_ns && g->n < g->cap)
            g->lat[g->n++] = (double)(mt_now_ns() - g->sig_ns);
        if (g->n >= g->cap)
            g->stop = 1;
        pthread_mutex_unlock(&g->mu);
        /* the holder's Python: 50 us of its own CPU, so that a spin
         * stretched by another process running meanwhile (a loaded host)
         * is not counted as CPU beyond the spin (round 11: in wall time it
         * made cpu_us 0 under load) */
        t0 = thread_cpu_ns();
        while (thread_cpu_ns() - t0 < SIM_CAL_PLACE_SPIN_US * 1000u)
            ;
        g->spun[a->me] += thread_cpu_ns() - t0;
        pthread_mutex_lock(&g->mu); /* drop_gil: hand over, signal */
        g->turn = !a->me;
        g->sig_ns = mt_now_ns();
        pthread_cond_signal(&g->cv);
    }
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    g->tcpu[a->me] = thread_cpu_ns();
    return NULL;
}

/* The first two CPUs this process may run on; -1 when fewer. */
static int
two_cpus(int cpu[2])
{
    cpu_set_t set;
    int k = 0;

    if (sched_getaffinity(0, sizeof(set), &set) < 0)
        return -1;
    for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
        if (CPU_ISSET(c, &set))
            cpu[k++] = c;
    if (k == 1)
        cpu[1] = cpu[0];
    return k;
}

static int
pl_run(struct pl *g)
{
    struct pl_arg a[2] = {{g, 0}, {g, 1}};
    pthread_t th[2];

    if (pthread_create(&th[0], NULL, pl_thread, &a[0]) != 0)
        return -1;
    if (pthread_create(&th[1], NULL, pl_thread, &a[1]) != 0) {
        pthread_mutex_lock(&g->mu);
        g->stop = 1;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(th[0], NULL);
        return -1;
    }
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    return 0;
}

int
sim_calibrate_place(int where, int rounds, struct sim_cal_place *r)
{
    static struct pl g;
    int cpu[2];
    int k = two_cpus(cpu);

    r->rounds = 0;
    if (k < 1 || (where == SIM_CAL_PLACE_CROSS && k < 2))
        return (errno = EINVAL, -1);
    g = (struct pl){.cap = rounds};
    g.cpu[0] = cpu[0];
    g.cpu[1] = where == SIM_CAL_PLACE_SAME ? cpu[0] : cpu[1];
    g.lat = mt_malloc((size_t)rounds * sizeof(*g.lat));
    if (g.lat == NULL)
        return (errno = ENOMEM, -1);
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    if (pl_run(&g) == 0 && g.n > 10) {
        double over =
            (double)(g.tcpu[0] + g.tcpu[1]) - (double)(g.spun[0] + g.spun[1]);

        sim_calibrate_trimmed_stats(g.lat, g.n, INFINITY, &r->lat_us,
                                    &r->lat_cv);
        r->lat_us /= 1e3;
        r->cpu_us = fmax(over, 0.0) / 1e3 / g.n;
        r->rounds = g.n;
    }
    pthread_mutex_destroy(&g.mu);
    pthread_cond_destroy(&g.cv);
    mt_free(g.lat);
    return r->rounds > 0 ? 0 : (errno = EAGAIN, -1);
}

void
sim_calibrate_place_print(FILE *out, const struct sim_cal_place *r)
{
    const struct sim_cal_place *s = &r[SIM_CAL_PLACE_SAME],
                               *x = &r[SIM_CAL_PLACE_CROSS];

    if (s->rounds == 0)
        return;
    fprintf(out,
            "wake_busy_us = %.3f [measured] GIL-style hand-over (C threads, "
            "mutex + cond, the holder spins %d us, signals and blocks) with "
            "both threads pinned to one CPU: signal -> the wakee running "
            "with the mutex, mean of %d less the top 1%% (cv %.2f); used by "
            "cpu_pick 2 when no core is idle\n",
            s->lat_us, SIM_CAL_PLACE_SPIN_US, s->rounds, s->lat_cv);
    fprintf(out,
            "ctx_busy_cpu_us = %.3f [measured] the same run: the two "
            "threads' CPU per hand-over beyond the spin (signal, block, "
            "switch, re-lock); used by cpu_pick 2 instead of ctx_cpu_us when "
            "no core is idle\n",
            s->cpu_us);
    if (x->rounds == 0) {
        fprintf(out, "# hand-over placement: cross-CPU not measured (one "
                     "CPU allowed)\n");
        return;
    }
    fprintf(out,
            "gil_wake_idle_us = %.3f [measured] the same hand-over with the "
            "threads pinned to two CPUs (the wakee's CPU idle during the "
            "spin: on this VM it halts), signal -> the wakee running with "
            "the mutex, mean of %d less the top 1%% (cv %.2f); used by "
            "cpu_pick 2 for a GIL waiter woken while a core is idle\n",
            x->lat_us, x->rounds, x->lat_cv);
    fprintf(out,
            "# hand-over placement, the same run: same CPU %.3f us (CPU per "
            "hand-over beyond the spin %.3f us); other, idle CPU %.3f us "
            "(cv %.2f, CPU %.3f us)\n",
            s->lat_us, s->cpu_us, x->lat_us, x->lat_cv, x->cpu_us);
}
