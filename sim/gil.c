/*
 * gil.c -- CPython's GIL and the driver's threading.Lock.
 *
 * GIL (Python/ceval_gil.c, CPython 3.x, FORCE_SWITCHING):
 * - take_gil: a thread finding the GIL free takes it at once (a thread
 *   back from a syscall can take it before a signalled waiter gets there);
 *   else it waits on gil->cond with a timeout of the switch interval.  A
 *   wait that times out with the GIL still held and switch_number
 *   unchanged sets gil_drop_request, and waits again.
 * - The holder sees the drop request at its next eval-breaker check (at
 *   once, in the model), drops the GIL and waits on switch_cond until
 *   another thread took it; then it asks for the GIL again.
 * - drop_gil signals gil->cond: one waiter (FIFO) wakes after
 *   gil_handoff_us, pays its switch-in CPU (ctx_cpu_us) and re-checks
 *   gil->locked: free, it takes it; taken (by a thread back from a
 *   syscall), it waits again (a futile wake-up).
 * Free-threaded: none of this; Python runs on the cores directly.
 *
 * The driver lock is a threading.Lock (Modules/_threadmodule.c
 * acquire_timed): acquire first tries without blocking, GIL held; when
 * that fails it releases the GIL (Py_BEGIN_ALLOW_THREADS) and blocks on
 * the lock's semaphore; once it has the lock it retakes the GIL
 * (Py_END_ALLOW_THREADS) while holding the lock.  release posts the
 * semaphore (Python/thread_pthread.h: sem_post, a futex wake): one
 * blocked acquirer wakes after wake_us and competes with any thread
 * trying meanwhile: a thread that takes the lock first sends it back to
 * sleep.  An acquire that blocked costs its thread lock_block_cpu_us of
 * CPU in all for its sleeps on the lock (its wake-ups charge no
 * ctx_cpu_us), run with the GIL held inside the section once it has the
 * lock and the GIL back; the GIL wait after the lock is the GIL's rules'
 * (lock_contend.py's convoy measures both: the extra CPU per block less
 * that of one switch).
 */
#include "model.h"

#include <errno.h>
#include <string.h>

#include "core/mem.h"

static bool
gil_on(const struct sim_model *m)
{
    return m->p.runtime == SIM_RT_GIL;
}

int
sim__gil_init(struct sim_model *m)
{
    m->gil.holder = m->gil.last_holder = m->gil.switch_waiter = -1;
    m->lock.owner = -1;
    m->gil.q = mt_calloc(m->nth, sizeof(*m->gil.q));
    m->lock.q = mt_calloc(m->nth, sizeof(*m->lock.q));
    return m->gil.q && m->lock.q ? 0 : -ENOMEM;
}

void
sim__gil_free(struct sim_model *m)
{
    mt_free(m->gil.q);
    mt_free(m->lock.q);
    m->gil.q = m->lock.q = NULL;
}

static void
ring_push(uint32_t *q, size_t cap, size_t head, size_t *n, uint32_t t)
{
    MT_ASSERT(*n < cap);
    q[(head + *n) % cap] = t;
    (*n)++;
}

static uint32_t
ring_pop(const uint32_t *q, size_t cap, size_t *head, size_t *n)
{
    uint32_t t;

    MT_ASSERT(*n > 0);
    t = q[*head];
    *head = (*head + 1) % cap;
    (*n)--;
    return t;
}

static void
after_take(struct sim_model *m, uint32_t t)
{
    struct sim__thr *th = &m->th[t];

    switch (th->after) {
    case AG_BEGIN:
        sim__begin_call(m, t);
        sim__advance(m, t);
        break;
    case AG_RESUME:
        sim__run_python(m, t, th->resume_ns);
        break;
    default:
        sim__advance(m, t);
        break;
    }
}

static void
gil_acquire(struct sim_model *m, uint32_t t)
{
    struct sim__gil *g = &m->gil;

    g->locked = true;
    g->holder = (int32_t)t;
    if (g->last_holder != (int32_t)t) {
        if (g->last_holder >= 0)
            m->res->gil_switches++;
        g->last_holder = (int32_t)t;
    }
    g->switch_number++;
    g->held_since_ns = m->eng.now_ns;
    g->drop_request = false;
    if (g->switch_waiter >= 0 && g->switch_waiter != (int32_t)t) {
        uint32_t w = (uint32_t)g->switch_waiter;

        g->switch_waiter = -1; /* COND_SIGNAL(gil->switch_cond) */
        sim__wake(m, w, sim__lat(m, m->p.wake_us), C_SWITCH_WOKEN);
    }
}

/* A waiter's timed wait ends switch_interval_us after it began.  One
 * timer event per thread is outstanding at most: an early one is pushed
 * again to the current deadline when it fires. */
static void
arm_timer(struct sim_model *m, uint32_t t)
{
    struct sim__thr *th = &m->th[t];

    th->deadline_ns = m->eng.now_ns + sim__ns(m->p.switch_interval_us);
    if (th->timer_pending)
        return;
    th->timer_pending = true;
    sim__push(m, th->deadline_ns - m->eng.now_ns, SIM_EV_GIL_TIMEOUT, t, 0);
}

static void
wait_start(struct sim_model *m, uint32_t t)
{
    struct sim__thr *th = &m->th[t];

    th->in_cond = true;
    ring_push(m->gil.q, m->nth, m->gil.q_head, &m->gil.q_n, t);
    th->saved_switch = m->gil.switch_number;
    arm_timer(m, t);
}

void
sim__gil_take(struct sim_model *m, uint32_t t, uint8_t after)
{
    m->th[t].after = after;
    if (!gil_on(m)) {
        after_take(m, t);
        return;
    }
    if (!m->gil.locked) {
        gil_acquire(m, t);
        after_take(m, t);
        return;
    }
    wait_start(m, t);
}

void
sim__gil_drop(struct sim_model *m, uint32_t t)
{
    struct sim__gil *g = &m->gil;

    if (!gil_on(m) || g->holder != (int32_t)t)
        return;
    g->held_ns += m->eng.now_ns - g->held_since_ns;
    g->locked = false;
    g->holder = -1;
    if (g->q_n > 0) { /* COND_SIGNAL(gil->cond): the oldest waiter */
        uint32_t w = ring_pop(g->q, m->nth, &g->q_head, &g->q_n);

        m->th[w].in_cond = false; /* its timed wait is over */
        sim__wake(m, w, sim__lat(m, m->p.gil_handoff_us), C_GIL_WOKEN);
    }
}

/* The holder drops the GIL on a drop request, leaving rem_ns of its
 * Python for later, and waits on switch_cond. */
static void
forced_drop(struct sim_model *m, uint32_t h, uint64_t rem_ns)
{
    struct sim__thr *th = &m->th[h];

    th->resume_ns = rem_ns;
    th->py_job = false;
    m->gil.drop_request = false;
    sim__gil_drop(m, h);
    m->gil.switch_waiter = (int32_t)h;
}

static void
request_drop(struct sim_model *m)
{
    int32_t h = m->gil.holder;

    m->gil.drop_request = true;
    m->res->gil_drop_requests++;
    if (h < 0 || !m->th[h].py_job || m->th[h].job_state == JOB_NONE)
        return; /* seen when its next Python starts */
    forced_drop(m, (uint32_t)h, sim__cpu_cancel(m, (uint32_t)h));
}

static void
cond_remove(struct sim_model *m, uint32_t t)
{
    struct sim__gil *g = &m->gil;
    size_t n = g->q_n, k = 0;

    for (size_t i = 0; i < n; i++) {
        uint32_t x = g->q[(g->q_head + i) % m->nth];
        if (x != t)
            g->q[(g->q_head + k++) % m->nth] = x;
    }
    g->q_n = k;
    m->th[t].in_cond = false;
}

void
sim__gil_timeout(struct sim_model *m, uint32_t t, uint64_t gen)
{
    struct sim__thr *th = &m->th[t];

    (void)gen;
    th->timer_pending = false;
    if (!th->in_cond)
        return;
    if (m->eng.now_ns < th->deadline_ns) { /* a later wait's deadline */
        th->timer_pending = true;
        sim__push(m, th->deadline_ns - m->eng.now_ns, SIM_EV_GIL_TIMEOUT, t, 0);
        return;
    }
    if (!m->gil.locked) { /* timed out with the GIL free: it wakes */
        cond_remove(m, t);
        sim__wake(m, t, sim__lat(m, m->p.wake_us), C_GIL_WOKEN);
        return;
    }
    if (m->gil.switch_number == th->saved_switch)
        request_drop(m);
    th->saved_switch = m->gil.switch_number;
    m->res->sleeps++; /* the timed wait returned; it waits again */
    arm_timer(m, t);
}

void
sim__run_python(struct sim_model *m, uint32_t t, uint64_t dur_ns)
{
    struct sim__thr *th = &m->th[t];

    if (gil_on(m) && m->gil.drop_request && m->gil.holder == (int32_t)t) {
        forced_drop(m, t, dur_ns);
        return;
    }
    th->py_job = true;
    sim__cpu_submit(m, t, dur_ns, C_PY_DONE);
}

bool
sim__lock_acquire(struct sim_model *m, uint32_t t)
{
    struct sim__lock *l = &m->lock;

    if (l->owner < 0) {
        l->owner = (int32_t)t;
        l->held_since_ns = m->eng.now_ns;
        return true;
    }
    m->res->lock_blocks++;
    ring_push(l->q, m->nth, l->q_head, &l->q_n, t);
    sim__gil_drop(m, t);
    return false;
}

void
sim__lock_release(struct sim_model *m, uint32_t t)
{
    struct sim__lock *l = &m->lock;

    MT_ASSERT(l->owner == (int32_t)t);
    l->held_ns += m->eng.now_ns - l->held_since_ns;
    l->owner = -1;
    if (l->q_n > 0) {
        uint32_t w = ring_pop(l->q, m->nth, &l->q_head, &l->q_n);

        sim__wake(m, w, sim__lat(m, m->p.wake_us), C_LOCK_WOKEN);
    }
}

void
sim__gil_continue(struct sim_model *m, uint32_t t, uint8_t cont)
{
    switch (cont) {
    case C_GIL_WOKEN:
        sim__cpu_submit(m, t, sim__ns(m->p.ctx_cpu_us), C_GIL_CHECK);
        break;
    case C_GIL_CHECK:
        if (!m->gil.locked) {
            gil_acquire(m, t);
            after_take(m, t);
        } else {
            m->res->gil_futile++;
            wait_start(m, t);
        }
        break;
    case C_SWITCH_WOKEN:
        sim__gil_take(m, t, AG_RESUME);
        break;
    case C_LOCK_WOKEN: /* its CPU is lock_block_cpu_us's, charged below */
    case C_LOCK_CHECK:
        if (m->lock.owner < 0) {
            m->lock.owner = (int32_t)t;
            m->lock.held_since_ns = m->eng.now_ns;
            m->th[t].op++; /* the acquire step is done */
            /* the block's CPU: the section's Python runs longer */
            m->th[t].block_ns += sim__ns(m->p.lock_block_cpu_us);
            sim__gil_take(m, t, AG_ADVANCE);
        } else { /* the same acquire sleeps again: not a new block */
            m->res->lock_resleeps++;
            ring_push(m->lock.q, m->nth, m->lock.q_head, &m->lock.q_n, t);
        }
        break;
    default:
        MT_ASSERT(0);
    }
}
