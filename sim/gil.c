/*
 * gil.c -- CPython's GIL as Python/ceval_gil.c implements it (3.11-3.13,
 * FORCE_SWITCHING defined):
 *
 *   take_gil: if gil->locked is 0 the caller takes it at once, even when
 *     other threads are waiting (take-if-free: a thread returning from a
 *     syscall can cut ahead of a woken waiter).  Otherwise it waits on
 *     gil->cond with a timeout of gil->interval (sys.getswitchinterval(),
 *     5 ms).  When a wait times out, the GIL is still locked and
 *     gil->switch_number has not moved since the wait began, it sets
 *     gil_drop_request on the holder, then waits again.  On success it
 *     bumps switch_number if the holder changed, signals switch_cond and
 *     clears any drop request.
 *   drop_gil: gil->locked = 0 and COND_SIGNAL(gil->cond): one waiter is
 *     woken.  If a drop request is pending and this thread is still
 *     last_holder, it waits on switch_cond until another thread has taken
 *     the GIL (the forced-switch handshake) before it goes on.
 *   The holder sees gil_drop_request at its next eval-breaker check (every
 *     few bytecodes): here, at once.
 *
 * The cost of moving the GIL is the woken waiter's latency (gil_handoff_us,
 * measured by a Python ping-pong in mtrace calibrate).
 *
 * The CPU of a waiter's block/wake cycle (gil_wake_cpu_us): a thread that
 * finds the GIL locked blocks in pthread_cond_timedwait (a futex wait with
 * the 5 ms timeout armed); drop_gil's COND_SIGNAL wakes it with a futex
 * wake, usually of a thread on another core; it returns by re-locking
 * gil->mutex and re-checks gil->locked, and when another thread took the
 * GIL meanwhile (take-if-free) it blocks again.  Both ends of that cycle
 * run under gil->mutex (drop_gil signals while holding it; the woken
 * waiter re-checks holding it), and take_gil needs gil->mutex before it
 * can set gil->locked, so the cycle may delay the next take: with
 * gil_wake_cpu_waiter = 0 the model charges each woken waiter's cycle to
 * the next thread that takes the GIL, as CPU it runs with the GIL held
 * before its next Python (sim__gil_take_cost, client.c).  With
 * gil_wake_cpu_waiter = 1 (the default) the cycle is paid where the
 * source runs it: by the woken waiter that finds
 * the GIL taken (a futile wake-up), on its own core with the GIL not held,
 * before it waits again (sim__gil_recheck, W_GIL_REWAIT).  A sequential
 * run has no waiters and pays nothing.  mtrace calibrate measures the
 * cycle's CPU (docs/sim-model.md).
 *
 * gil->mutex (gil_mutex_signal_us > 0): held by drop_gil's signal, by
 * take_gil's own sections with gil_mutex_cs_us (round 13, off), and, with
 * gil_cond_quiesce (round 13, on), by a dropper whose signal must switch
 * glibc's condvar groups while a woken waiter has not run yet
 * (quiesce_start / quiesce_end).  The mutex is a window with an owner:
 * mutex_until_ns, mutex_owner.
 *
 * The working set's move between cores (gil_xcore_cpu_us) is charged on
 * the Python segments themselves: client.c py_ns.
 *
 * Free-threaded runtimes have no GIL: take always succeeds and drop never
 * waits.
 */
#include "gil.h"
#include "model.h"

#include <errno.h>
#include <string.h>

#include "core/mem.h"

int
sim__gil_init(struct sim_model *m)
{
    m->gil.holder = -1;
    m->gil.last_holder = -1;
    m->gil.last_signalled = -1;
    m->gil.switch_waiter = -1;
    m->gil.mutex_owner = -1;
    m->gil.quiescing = -1;
    m->gil.q = mt_calloc(m->nth, sizeof(*m->gil.q));
    m->gil.mq = mt_calloc(m->nth, sizeof(*m->gil.mq));
    return m->gil.q && m->gil.mq ? 0 : -ENOMEM;
}

/* gil->mutex held right now by a thread other than t (-1: by anyone): a
 * drop_gil's signal, or with gil_mutex_cs_us a take_gil section. */
static bool
mutex_busy(const struct sim_model *m, int32_t t)
{
    return m->p.gil_mutex_signal_us > 0 &&
           m->eng.now_ns < m->gil.mutex_until_ns && m->gil.mutex_owner != t;
}

/* t holds gil->mutex for ns from now (a window; SIM_EV_GIL_MUTEX at its
 * end wakes the first thread blocked on it).  A window already reaching
 * further is kept. */
static void
mutex_hold(struct sim_model *m, uint32_t t, uint64_t ns)
{
    struct sim__gil *g = &m->gil;

    if (ns == 0 || m->eng.now_ns + ns <= g->mutex_until_ns)
        return;
    g->mutex_until_ns = m->eng.now_ns + ns;
    g->mutex_owner = (int32_t)t;
    sim__push(m, ns, SIM_EV_GIL_MUTEX, 0, 0);
}

/* gil_mutex_cs_us: t's take_gil section (round 13). */
static void
mutex_section(struct sim_model *m, uint32_t t)
{
    if (m->p.gil_mutex_signal_us > 0 && m->p.gil_mutex_cs_us > 0)
        mutex_hold(m, t, sim__us(m->p.gil_mutex_cs_us));
}

/* t finds gil->mutex held: futex wait (__lll_lock_wait) at the back. */
static void
mutex_block(struct sim_model *m, uint32_t t, uint8_t kind)
{
    struct sim__gil *g = &m->gil;

    MT_ASSERT(g->mqn < m->nth);
    g->mq[g->mqn++] = (int32_t)t;
    m->th[t].mq_kind = kind;
    m->res->client_blocks++;
    m->res->gil_mutex_blocks++;
}

/* The latency of a GIL waiter woken by another client thread (cond
 * signal, mutex unlock), a draw of mean mean_us.  cpu_pick 2: while a core
 * is idle the kernel puts the wakee there (kernel/sched/fair.c
 * select_idle_sibling), on this VM a halted vCPU woken by an IPI:
 * gil_wake_idle_us, the cross-CPU hand-over mtrace calibrate measures
 * (calibrate_place.c); with no core idle sim__cpu_submit caps it at
 * wake_busy_us.  One draw either way. */
static uint64_t
gil_wake_ns(struct sim_model *m, double mean_us)
{
    if (m->p.cpu_pick == 2 && m->p.gil_wake_idle_us > 0 && m->busy < m->p.cores)
        mean_us = m->p.gil_wake_idle_us;
    return sim__wake_ns(m, mean_us);
}

/* An unlock of the contended mutex (glibc sets it to 2 after a wait, so
 * every unlock then does a FUTEX_WAKE of one waiter): the first blocked
 * thread becomes runnable after wake_us; one on its way at a time. */
static void
mutex_wake_next(struct sim_model *m)
{
    struct sim__gil *g = &m->gil;
    uint32_t w;

    if (g->mqn == 0 || g->mq_waking || mutex_busy(m, -1))
        return;
    w = (uint32_t)g->mq[0];
    memmove(&g->mq[0], &g->mq[1], (g->mqn - 1) * sizeof(*g->mq));
    g->mqn--;
    g->mq_waking = true;
    sim__cpu_submit(m, w, 0, W_GIL_MUTEX, gil_wake_ns(m, m->p.wake_us));
}

void
sim__gil_mutex_free(struct sim_model *m)
{
    mutex_wake_next(m);
}

bool
sim__gil_mutex_woken(struct sim_model *m, uint32_t t)
{
    uint8_t kind = m->th[t].mq_kind;
    bool took;

    m->gil.mq_waking = false;
    if (mutex_busy(m, (int32_t)t)) { /* held again meanwhile: wait again */
        mutex_block(m, t, kind);
        return false;
    }
    m->th[t].mq_kind = MQ_NONE;
    took = kind == MQ_RECHECK ? sim__gil_recheck(m, t) : sim__gil_take(m, t);
    mutex_wake_next(m); /* its own unlock wakes the next one */
    return took;
}

/* gil_cond_quiesce: w leaves gil->cond woken and holds a reference on
 * its group (__g_refs) until it runs (refs_drop). */
static void
refs_take(struct sim_model *m, uint32_t w)
{
    if (!m->p.gil_cond_quiesce || m->th[w].cond_refs)
        return;
    m->th[w].cond_refs = true;
    m->gil.refs_n++;
}

static void quiesce_end(struct sim_model *m);

/* w, woken from gil->cond, runs (its futex wait returned): it drops its
 * reference; the last one wakes a dropper blocked in the group switch. */
static void
refs_drop(struct sim_model *m, uint32_t w)
{
    if (!m->th[w].cond_refs)
        return;
    m->th[w].cond_refs = false;
    MT_ASSERT(m->gil.refs_n > 0);
    if (--m->gil.refs_n == 0 && m->gil.quiescing >= 0)
        quiesce_end(m);
}

/* Waiter w leaves gil->cond and becomes runnable delay + a draw of mean
 * wake_us_mean from now. */
static void
gil_wake(struct sim_model *m, uint32_t w, double wake_us_mean, uint64_t delay)
{
    m->res->gil_wakes++;
    if (!m->p.gil_wake_cpu_waiter)
        m->gil.wake_debt++;
    refs_take(m, w);
    sim__cpu_submit(m, w, 0, W_GIL_CHECK, delay + gil_wake_ns(m, wake_us_mean));
}

/*
 * The waiter w that a drop_gil signals while holding gil->mutex for hold
 * ns (gil_mutex_signal_us).  With gil_mutex_relock_p (measured by mtrace
 * calibrate: the share of such waiters that block re-locking the mutex in
 * pthread_cond_timedwait's return path) it blocks on the mutex with that
 * probability, else it re-checks gil->locked after max(wake_us draw,
 * hold).  Without it, it arrives after a wake_us draw and blocks if the
 * mutex is still held (sim__gil_recheck).
 */
static void
signal_wake(struct sim_model *m, uint32_t w, uint64_t hold, uint64_t delay)
{
    double p = m->p.gil_mutex_relock_p;
    uint64_t ns;

    if (p <= 0) {
        gil_wake(m, w, m->p.wake_us, delay);
        return;
    }
    m->res->gil_wakes++;
    if (!m->p.gil_wake_cpu_waiter)
        m->gil.wake_debt++;
    if (p >= 1 || mt_rng_uniform(&m->rng_mx) < p) {
        mutex_block(m, w, MQ_RECHECK); /* woken when the hold ends */
        return;
    }
    ns = gil_wake_ns(m, m->p.wake_us);
    sim__cpu_submit(m, w, 0, W_GIL_CHECK, delay + (ns > hold ? ns : hold));
}

static void
cond_remove(struct sim_model *m, uint32_t t)
{
    struct sim__gil *g = &m->gil;

    for (size_t i = 0; i < g->qn; i++) {
        if (g->q[i] == (int32_t)t) {
            memmove(&g->q[i], &g->q[i + 1], (g->qn - i - 1) * sizeof(*g->q));
            g->qn--;
            break;
        }
    }
    m->th[t].in_cond = false;
    if (m->th[t].cond_g1) {
        m->th[t].cond_g1 = false;
        MT_ASSERT(g->g1_left > 0);
        g->g1_left--;
    }
}

static void
cond_wait(struct sim_model *m, uint32_t t)
{
    struct sim__gil *g = &m->gil;
    struct sim__thread *th = &m->th[t];

    MT_ASSERT(g->qn < m->nth);
    g->q[g->qn++] = (int32_t)t;
    m->res->client_blocks++;
    th->in_cond = true;
    th->saved_switch = g->switch_number;
    th->gil_gen++;
    sim__push(m, sim__us(m->p.switch_interval_us), SIM_EV_GIL_TIMEOUT, t,
              th->gil_gen);
}

bool
sim__gil_take(struct sim_model *m, uint32_t t)
{
    struct sim__gil *g = &m->gil;

    if (m->p.runtime == SIM_RT_FREE)
        return true;
    if (mutex_busy(m, (int32_t)t)) { /* take_gil's MUTEX_LOCK(gil->mutex) */
        mutex_block(m, t, MQ_TAKE);
        return false;
    }
    mutex_section(m, t);
    if (g->locked) {
        cond_wait(m, t);
        return false;
    }
    g->locked = true;
    g->holder = (int32_t)t;
    if (g->last_holder != (int32_t)t) {
        g->last_holder = (int32_t)t;
        g->switch_number++;
        m->res->gil_switches++;
        if (g->switch_waiter >= 0 && g->switch_waiter != (int32_t)t) {
            uint32_t w = (uint32_t)g->switch_waiter;
            g->switch_waiter = -1;
            sim__cpu_submit(m, w, 0, W_SWITCHED, sim__wake_ns(m, m->p.wake_us));
        }
    }
    g->drop_req = false;
    return true;
}

bool
sim__gil_recheck(struct sim_model *m, uint32_t t)
{
    refs_drop(m, t);
    if (mutex_busy(m, (int32_t)t)) { /* pthread_cond_timedwait's re-lock */
        mutex_block(m, t, MQ_RECHECK);
        return false;
    }
    if (!m->gil.locked)
        return sim__gil_take(m, t);
    mutex_section(m, t);
    m->res->gil_futile++;
    if (m->p.gil_wake_cpu_waiter && m->p.gil_wake_cpu_us > 0) {
        sim__cpu_submit(m, t, sim__us(m->p.gil_wake_cpu_us), W_GIL_REWAIT, 0);
        return false;
    }
    cond_wait(m, t);
    return false;
}

bool
sim__gil_rewait_done(struct sim_model *m, uint32_t t)
{
    /* Dropped meanwhile: still on its way into the futex wait, it finds
     * the GIL free (take_gil's loop) and takes it without blocking. */
    return sim__gil_take(m, t);
}

uint64_t
sim__gil_take_cost(struct sim_model *m)
{
    uint64_t n = m->gil.wake_debt;

    m->gil.wake_debt = 0;
    if (m->p.runtime == SIM_RT_FREE || n == 0 || m->p.gil_wake_cpu_us <= 0)
        return 0;
    m->res->gil_wake_takes++;
    return sim__us(m->p.gil_wake_cpu_us * (double)n);
}

/*
 * COND_SIGNAL(gil->cond) by dropper t under gil->mutex: the first waiter
 * w leaves the queue and wakes delay + its latency from now; t holds the
 * mutex for gil_mutex_signal_us from delay on (the FUTEX_WAKE syscall) and
 * runs that long (drop_cpu_ns, or W_DROP_SIGNAL after a quiesce).
 */
static void
cond_signal(struct sim_model *m, uint32_t t, uint64_t delay)
{
    struct sim__gil *g = &m->gil;
    uint64_t hold = sim__us(m->p.gil_mutex_signal_us);
    uint32_t w;

    mutex_hold(m, t, delay + hold);
    if (g->qn == 0)
        return;
    w = (uint32_t)g->q[0];
    cond_remove(m, w);
    m->th[w].gil_gen++;
    g->last_signalled = (int32_t)w;
    signal_wake(m, w, hold, delay);
}

/*
 * gil_cond_quiesce (round 13; glibc 2.36 nptl/pthread_cond_signal.c and
 * pthread_cond_common.c __condvar_quiesce_and_switch_g1): a signal finds
 * no unsignalled waiter left in group G1, so it makes the waiters since
 * the last switch (G2: here every waiter queued now) the new G1; before
 * that it waits (futex wait on __g_refs) until every waiter of the old
 * group that was woken has returned from its futex wait, i.e. has run.
 * The dropper blocks meanwhile with gil->mutex held.  True when it
 * blocked (quiesce_end resumes it).
 */
static bool
quiesce_start(struct sim_model *m, uint32_t t)
{
    struct sim__gil *g = &m->gil;

    if (g->g1_left > 0)
        return false;
    for (size_t i = 0; i < g->qn; i++)
        m->th[g->q[i]].cond_g1 = true;
    g->g1_left = g->qn;
    if (g->refs_n == 0)
        return false;
    g->quiescing = (int32_t)t;
    g->mutex_until_ns = UINT64_MAX; /* until quiesce_end */
    g->mutex_owner = (int32_t)t;
    m->th[t].drop_quiesce = true;
    m->res->gil_quiesce++;
    m->res->client_blocks++;
    return true;
}

/* The last woken waiter ran: its FUTEX_WAKE wakes the dropper, which
 * signals and goes on to its syscall (W_DROP_SIGNAL). */
static void
quiesce_end(struct sim_model *m)
{
    struct sim__gil *g = &m->gil;
    uint32_t d = (uint32_t)g->quiescing;
    uint64_t wake = gil_wake_ns(m, m->p.wake_us);
    uint64_t hold = sim__us(m->p.gil_mutex_signal_us);

    g->quiescing = -1;
    g->mutex_until_ns = m->eng.now_ns;
    m->th[d].drop_quiesce = false;
    cond_signal(m, d, wake);
    sim__cpu_submit(m, d, hold, W_DROP_SIGNAL, wake);
}

bool
sim__gil_drop(struct sim_model *m, uint32_t t, bool final)
{
    struct sim__gil *g = &m->gil;
    bool forced;

    if (m->p.runtime == SIM_RT_FREE)
        return true;
    MT_ASSERT(g->locked && g->holder == (int32_t)t);
    m->th[t].drop_cpu_ns = 0;
    g->locked = false;
    g->holder = -1;
    g->last_signalled = -1;
    forced = !final && g->drop_req && g->last_holder == (int32_t)t;
    if (g->qn > 0 && m->p.gil_mutex_signal_us > 0) {
        /* COND_SIGNAL under gil->mutex: the FUTEX_WAKE syscall holds it;
         * the waiter's latency is built from wake_us and the mutex
         * (gil_handoff_us, measured through CPython, has both) */
        if (m->p.gil_cond_quiesce && !final && !forced && quiesce_start(m, t))
            return true;
        cond_signal(m, t, 0);
        m->th[t].drop_cpu_ns = sim__us(m->p.gil_mutex_signal_us);
    } else if (g->qn > 0) { /* COND_SIGNAL: wake one waiter */
        uint32_t w = (uint32_t)g->q[0];
        cond_remove(m, w);
        m->th[w].gil_gen++;
        g->last_signalled = (int32_t)w;
        gil_wake(m, w, m->p.gil_handoff_us, 0);
    } else {
        mutex_section(m, t); /* lock, locked = 0, no waiter, unlock */
    }
    if (forced) {
        g->drop_req = false;
        g->switch_waiter = (int32_t)t;
        m->res->gil_forced++;
        m->res->client_blocks++;
        return false;
    }
    return true;
}

/* Holder h must drop at its next eval-breaker check. */
static void
gil_request_drop(struct sim_model *m)
{
    struct sim__gil *g = &m->gil;
    uint32_t h;

    if (g->drop_req)
        return;
    g->drop_req = true;
    m->res->gil_drop_requests++;
    h = (uint32_t)g->holder;
    if (m->ent[h].state == ES_RUNNING &&
        (m->ent[h].what == W_PY_DONE || m->ent[h].what == W_LOOP_DONE)) {
        struct sim__thread *th = &m->th[h];
        th->resume_what = m->ent[h].what;
        th->resume_ns = sim__cpu_preempt(m, h);
        th->after_switch = AT_RESUME_PY;
        if (sim__gil_drop(m, h, false)) /* cannot happen: drop_req is set */
            MT_ASSERT(0);
    }
    /* A holder queued for a core drops when it starts (gil_start_check);
     * one between jobs drops at its next release. */
}

void
sim__gil_timeout(struct sim_model *m, uint32_t t, uint64_t gen)
{
    struct sim__gil *g = &m->gil;
    struct sim__thread *th = &m->th[t];

    if (gen != th->gil_gen || !th->in_cond)
        return;
    if (!g->locked) { /* timed out with the GIL free: wake and take it */
        cond_remove(m, t);
        th->gil_gen++;
        gil_wake(m, t, m->p.wake_us, 0);
        return;
    }
    if (g->switch_number == th->saved_switch)
        gil_request_drop(m); /* may signal t itself: then it is waking */
    if (!th->in_cond)
        return;
    cond_remove(m, t);
    cond_wait(m, t); /* waits again, at the back */
}

bool
sim__gil_start_check(struct sim_model *m, uint32_t t)
{
    struct sim__gil *g = &m->gil;
    struct sim__thread *th = &m->th[t];

    if (m->p.runtime == SIM_RT_FREE || !g->drop_req || g->holder != (int32_t)t)
        return false;
    m->ent[t].state = ES_IDLE;
    th->resume_what = W_PY_DONE;
    th->resume_ns = m->ent[t].dur_ns;
    th->after_switch = AT_RESUME_PY;
    if (sim__gil_drop(m, t, false))
        MT_ASSERT(0);
    return true;
}
