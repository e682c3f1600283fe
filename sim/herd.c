/*
 * herd.c -- thundering herd on a shared listening socket (seed 001).
 *
 * Rules:
 * - Each uWSGI worker without the thunder lock waits in epoll_wait on its
 *   own epoll instance watching the shared listening socket.  A new
 *   connection wakes every one of them (ep_poll_callback wakes the waiters
 *   of every epoll instance the socket is in; EPOLLEXCLUSIVE, Linux 4.5,
 *   was not used).  Each woken worker, after its wake-up latency and when a
 *   core is free, calls accept(): the first gets the connection, the
 *   others get EAGAIN and spend futile_cpu_us for nothing.
 * - With --thunder-lock only the worker holding the lock waits in
 *   epoll_wait; the others sleep on the lock (a futex: unlock wakes one).
 *   After accept it unlocks, which wakes one next waiter.
 * - ab is one single-threaded process: each completed response costs it
 *   ab_cpu_us (read, close, socket, connect, write) before the next
 *   connection of that slot starts.  Everything runs on `cores` cores, FIFO,
 *   without preemption.
 * - The wake-up walk (walk_us): a connection that completes its handshake
 *   calls the listening socket's sk_data_ready (sock_def_readable), which
 *   walks the socket's wait queue under its lock: one ep_poll_callback per
 *   epoll instance watching the socket, each waking the process sleeping
 *   in that instance's epoll_wait (try_to_wake_up).  On loopback the
 *   handshake completes in softirq on the connecting CPU, inside ab's
 *   connect(): ab pays walk_us per sleeping waiter woken, serially, on its
 *   next CPU job.  With the thunder lock only the lock holder sleeps in
 *   epoll_wait: one wake-up.  (EPOLLEXCLUSIVE, Linux 4.5, would wake one
 *   waiter; uWSGI 2014 did not use it.)  Entries of instances with no
 *   sleeper cost far less (~0.03 us here) and are not charged.
 */
#include "herd.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "engine.h"
#include "core/rng.h"

/* ---- the model ---- */

enum {
    H_CPU_DONE = 1,
    H_WAKE,
    H_ARRIVE,
    H_SLEEP_DONE,
    H_CLEANUP_DONE,
    H_AB_GOT
};
enum { HW_IDLE, HW_WOKEN, HW_BUSY, HW_LOCKWAIT };
enum { J_ACCEPT = 1, J_SERVE1, J_SERVE2, J_AB };

struct herd {
    const struct herd_params *p;
    struct sim_engine eng;
    struct mt_rng rng;
    uint8_t *wstate; /* owned: per worker */
    uint8_t *job;    /* owned: per entity (workers, then ab) */
    uint32_t *runq;  /* owned ring */
    size_t rq_head, rq_n, nent;
    int64_t busy;
    uint64_t backlog; /* connections waiting in the accept queue */
    uint32_t *lockq;  /* owned: lock waiters FIFO ring */
    size_t lq_head, lq_n;
    int64_t lock_holder; /* -1: free */
    uint64_t ab_pending; /* completions ab has not processed */
    uint64_t ab_walk_ns; /* wake-up walks ab owes (paid on its next job) */
    uint64_t ab_job_ns;  /* duration of ab's current or queued job */
    bool ab_busy;
    uint64_t started, done;
    uint32_t *idle; /* owned: workers waiting in epoll_wait */
    size_t idle_n;
    struct herd_result *res;
};

static uint64_t
hus(double us)
{
    return us <= 0 ? 0 : (uint64_t)llround(us * 1000.0);
}

static void
hpush(struct herd *h, uint64_t d, uint32_t kind, uint32_t id)
{
    int rc = sim_engine_after(&h->eng, d, kind, id, 0);
    MT_ASSERT(rc == 0);
}

/* CPU of entity e's job (ab's was fixed when it was submitted). */
static uint64_t
job_ns(const struct herd *h, uint8_t job)
{
    return job == J_ACCEPT ? hus(h->p->futile_cpu_us)
           : job == J_AB   ? h->ab_job_ns
                           : hus(h->p->req_cpu_us / 2);
}

static void
cpu_run(struct herd *h, uint32_t e, uint8_t job)
{
    uint64_t d;

    if (job == J_AB) { /* ab's request work plus the walks it owes */
        h->ab_job_ns = hus(h->p->ab_cpu_us) + h->ab_walk_ns;
        h->ab_walk_ns = 0;
    }
    d = job_ns(h, job);
    h->job[e] = job;
    if (h->busy < h->p->cores) {
        h->busy++;
        hpush(h, d, H_CPU_DONE, e);
        return;
    }
    h->runq[(h->rq_head + h->rq_n++) % h->nent] = e;
}

static void
wake_worker(struct herd *h, uint32_t w)
{
    h->wstate[w] = HW_WOKEN;
    h->res->wakeups++;
    hpush(h, hus(mt_rng_lognormal(&h->rng, h->p->wake_us, 0.5)), H_WAKE, w);
}

/* A connection is in the accept queue: wake the epoll waiters; the
 * connecting process (ab) owes walk_us per sleeper woken. */
static void
herd_notify(struct herd *h)
{
    if (h->p->lock) {
        if (h->lock_holder >= 0 && h->wstate[h->lock_holder] == HW_IDLE) {
            wake_worker(h, (uint32_t)h->lock_holder);
            h->ab_walk_ns += hus(h->p->walk_us);
        }
        return;
    }
    for (size_t i = 0; i < h->idle_n; i++)
        wake_worker(h, h->idle[i]);
    h->ab_walk_ns += hus(h->p->walk_us * (double)h->idle_n);
    h->idle_n = 0;
}

static void
worker_idle(struct herd *h, uint32_t w)
{
    if (h->p->lock) {
        if (h->lock_holder < 0 || h->lock_holder == (int64_t)w) {
            h->lock_holder = w;
            h->wstate[w] = HW_IDLE;
            if (h->backlog > 0)
                wake_worker(h, w);
        } else {
            h->wstate[w] = HW_LOCKWAIT;
            h->lockq[(h->lq_head + h->lq_n++) % h->nent] = w;
        }
        return;
    }
    if (h->backlog > 0) { /* epoll_wait returns at once: still in the CPU job */
        h->wstate[w] = HW_WOKEN;
        cpu_run(h, w, J_ACCEPT);
        return;
    }
    h->wstate[w] = HW_IDLE;
    h->idle[h->idle_n++] = w;
}

static void
lock_release(struct herd *h)
{
    h->lock_holder = -1;
    if (h->lq_n > 0) {
        uint32_t w = h->lockq[h->lq_head];
        h->lq_head = (h->lq_head + 1) % h->nent;
        h->lq_n--;
        h->lock_holder = w;
        wake_worker(h, w); /* it then waits in epoll_wait */
    }
}

static double
uni_ms(struct herd *h, double lo, double hi)
{
    return (lo + (hi - lo) * mt_rng_uniform(&h->rng)) * 1000.0;
}

static void
ab_start_conn(struct herd *h)
{
    if (h->started >= (uint64_t)h->p->requests)
        return;
    h->started++;
    hpush(h, hus(h->p->net_us), H_ARRIVE, 0);
}

static void
on_cpu_done(struct herd *h, uint32_t e)
{
    uint32_t nw = (uint32_t)h->p->procs;
    uint8_t job = h->job[e];

    h->busy--;
    if (h->rq_n > 0) {
        uint32_t n = h->runq[h->rq_head];
        h->rq_head = (h->rq_head + 1) % h->nent;
        h->rq_n--;
        h->busy++;
        hpush(h, job_ns(h, h->job[n]), H_CPU_DONE, n);
    }
    if (e == nw) { /* ab handled a completion */
        h->ab_busy = false;
        ab_start_conn(h);
        if (h->ab_pending > 0) {
            h->ab_pending--;
            h->ab_busy = true;
            cpu_run(h, nw, J_AB);
        }
        return;
    }
    if (job == J_ACCEPT) {
        if (h->backlog == 0) {
            h->res->futile++;
            worker_idle(h, e);
            return;
        }
        h->backlog--;
        h->wstate[e] = HW_BUSY;
        if (h->p->lock)
            lock_release(h);
        cpu_run(h, e, J_SERVE1);
    } else if (job == J_SERVE1) {
        hpush(h, hus(uni_ms(h, h->p->sleep_min_ms, h->p->sleep_max_ms)),
              H_SLEEP_DONE, e);
    } else if (job == J_SERVE2) {
        hpush(h, hus(h->p->net_us), H_AB_GOT, 0);
        hpush(h, hus(uni_ms(h, h->p->cleanup_min_ms, h->p->cleanup_max_ms)),
              H_CLEANUP_DONE, e);
    }
}

static void
herd_event(struct herd *h, const struct sim_ev *ev)
{
    uint32_t nw = (uint32_t)h->p->procs;

    switch (ev->kind) {
    case H_CPU_DONE:
        on_cpu_done(h, ev->id);
        break;
    case H_WAKE:
        cpu_run(h, ev->id, J_ACCEPT);
        break;
    case H_ARRIVE:
        h->backlog++;
        herd_notify(h);
        break;
    case H_SLEEP_DONE:
        cpu_run(h, ev->id, J_SERVE2);
        break;
    case H_CLEANUP_DONE:
        worker_idle(h, ev->id);
        break;
    case H_AB_GOT:
        h->done++;
        if (h->ab_busy) {
            h->ab_pending++;
        } else {
            h->ab_busy = true;
            cpu_run(h, nw, J_AB);
        }
        break;
    default:
        MT_ASSERT(0);
    }
}

int
herd_run(const struct herd_params *p, struct herd_result *res,
         struct mt_err *err)
{
    struct herd h = {0};
    struct sim_ev ev;
    int rc = 0;

    memset(res, 0, sizeof(*res));
    h.p = p;
    h.res = res;
    h.nent = (size_t)p->procs + 1;
    h.lock_holder = -1;
    mt_rng_split(&h.rng, (uint64_t)p->seed, 101);
    h.wstate = mt_calloc(h.nent, 1);
    h.job = mt_calloc(h.nent, 1);
    h.runq = mt_calloc(h.nent, sizeof(*h.runq));
    h.lockq = mt_calloc(h.nent, sizeof(*h.lockq));
    h.idle = mt_calloc(h.nent, sizeof(*h.idle));
    if (!h.wstate || !h.job || !h.runq || !h.lockq || !h.idle ||
        sim_engine_init(&h.eng, 1u << 22) < 0) {
        rc = mt_err_set(err, -ENOMEM, 0, "herd: out of memory");
        goto out;
    }
    for (uint32_t w = 0; w < (uint32_t)p->procs; w++)
        worker_idle(&h, w);
    for (int64_t c = 0; c < p->clients; c++)
        ab_start_conn(&h);
    while (h.done < (uint64_t)p->requests && sim_engine_pop(&h.eng, &ev))
        herd_event(&h, &ev);
    if (h.done < (uint64_t)p->requests) {
        rc = mt_err_set(err, MT_ELIMIT, 0, "herd: stalled after %llu requests",
                        (unsigned long long)h.done);
        goto out;
    }
    res->total_s = (double)h.eng.now_ns / 1e9;
    res->events = h.eng.popped;
out:
    sim_engine_free(&h.eng);
    mt_free(h.wstate);
    mt_free(h.job);
    mt_free(h.runq);
    mt_free(h.lockq);
    mt_free(h.idle);
    return rc;
}
