/*
 * client.c -- benchmark client threads (seed 000's 2-benchmark.py) and the
 * driver's connection pool.
 *
 * A thread runs `calls` calls back to back.  A call is timed from
 * perf_counter() (the thread holds the GIL) to perf_counter() after it
 * returns, and is a list of ops:
 *
 *   PY(pre) SEND PY(mid) WAIT PY(mid) SYS [PY(mid) SYS]... PY(post)
 *
 * PY ops are Python CPU with the GIL held; SEND, WAIT and SYS release it
 * (Py_BEGIN_ALLOW_THREADS around sendall/poll/recv_into in
 * Modules/socketmodule.c) and take it back after the syscall.  `releases`
 * counts them: pymongo 3.11 network.py does sendall, recv_into(header),
 * recv_into(body) = 3 (no poll: application sockets have no
 * cancel_context); pymongo 4.x receive_data() sets a socket timeout, so
 * each recv_into is preceded by a poll: 1 + 2 + 2 = 5.  WAIT is the first
 * receive: it blocks until the reply is in the socket.
 *
 * A send may wake its peer onto the sender's core (send_preempted below):
 * the sender then waits, GIL released, until the peer's job ends.
 *
 * Pool: a call checks a connection out (pymongo's pool is a LIFO deque)
 * and in again at its end; with none idle and fewer than pool_max open it
 * opens one, inside the timed call: connect() plus a hello round trip that
 * goes through the same path (proxy delay included) and costs one call's
 * Python CPU (assumption).  At pool_max, it waits (GIL released) for a
 * check-in.
 */
#include "client.h"
#include "model.h"

#include <errno.h>
#include <math.h>

#include "core/mem.h"

static size_t
build_ops(const struct sim_params *p, struct sim__opdesc *ops, bool hs)
{
    size_t n = 0, mids = (size_t)p->releases - 1;
    double mid = (1.0 - p->py_pre_frac - p->py_post_frac) / (double)mids;

    if (mid < 0)
        mid = 0;
    if (hs)
        ops[n++] = (struct sim__opdesc){OP_CONNECT, 0};
    ops[n++] = (struct sim__opdesc){OP_PY, p->py_pre_frac};
    ops[n++] = (struct sim__opdesc){OP_SEND, 0};
    ops[n++] = (struct sim__opdesc){OP_PY, mid};
    ops[n++] = (struct sim__opdesc){OP_WAIT, 0};
    for (int64_t r = 2; r < p->releases; r++) {
        ops[n++] = (struct sim__opdesc){OP_PY, mid};
        ops[n++] = (struct sim__opdesc){OP_SYS, 0};
    }
    ops[n++] = (struct sim__opdesc){OP_PY, p->py_post_frac};
    ops[n++] = (struct sim__opdesc){OP_END, 0};
    return n;
}

static double
think(struct sim_model *m)
{
    return m->p.think_us > 0 ? mt_rng_exp(&m->rng_py, m->p.think_us) : 0.0;
}

int
sim__client_init(struct sim_model *m)
{
    m->th = mt_calloc(m->nth, sizeof(*m->th));
    m->conn = mt_calloc(m->nconn, sizeof(*m->conn));
    m->idle = mt_calloc(m->nconn, sizeof(*m->idle));
    m->pool_wait = mt_calloc(m->nth, sizeof(*m->pool_wait));
    m->nhome = m->nth < (size_t)m->p.cores ? m->nth : (size_t)m->p.cores;
    if (m->p.cpu_pick) /* the working-set terms go by the core itself */
        m->nhome = (size_t)m->p.cores;
    if (m->nhome == 0)
        m->nhome = 1;
    m->py_home_ns = mt_calloc(m->nhome, sizeof(*m->py_home_ns));
    m->py_seen_ns = mt_calloc(m->nhome * SIM_XC_SLOTS, sizeof(uint64_t));
    m->py_seen_own_ns = mt_calloc(m->nhome * SIM_XC_SLOTS, sizeof(uint64_t));
    m->py_seen_at_ns = mt_calloc(m->nhome * SIM_XC_SLOTS, sizeof(uint64_t));
    m->py_busy_ns = mt_calloc(m->nhome, sizeof(*m->py_busy_ns));
    m->py_seen_busy_ns = mt_calloc(m->nhome * SIM_XC_SLOTS, sizeof(uint64_t));
    if (!m->th || !m->conn || !m->idle || !m->pool_wait || !m->py_home_ns ||
        !m->py_seen_ns || !m->py_seen_own_ns || !m->py_seen_at_ns ||
        !m->py_busy_ns || !m->py_seen_busy_ns)
        return -ENOMEM;
    MT_ASSERT(m->p.releases >= 2 && m->p.releases <= 10);
    build_ops(&m->p, m->ops, false);
    build_ops(&m->p, m->hs_ops, true);
    for (size_t c = 0; c < m->nconn; c++) {
        m->conn[c].owner = -1;
        m->conn[c].preempted = -1;
    }
    for (int64_t c = m->p.pool_initial - 1; c >= 0; c--)
        m->idle[m->idle_n++] = (int32_t)c;
    m->conn_open = (size_t)m->p.pool_initial;
    for (size_t t = 0; t < m->nth; t++) {
        m->th[t].conn = -1;
        sim__push(m, sim__us(m->p.thread_start_us * (double)t + think(m)),
                  SIM_EV_THREAD_START, (uint32_t)t, 0);
    }
    return 0;
}

/*
 * The working set's move between cores, under the GIL: thread t runs on
 * its home core t % cores.  A segment with share frac of the call's Python
 * touches that share of the working set; W = the Python CPU that other
 * cores ran since this core last ended the same segment of a call (slot)
 * wrote those objects (refcounts, allocator pools, driver state) in their
 * caches, so the segment pays gil_xcore_cpu_us x frac x min(1, W /
 * py_call_us): a call's worth of work elsewhere moves the whole working
 * set, as in the calibration (one thread, consecutive calls on
 * alternating cores: every segment sees W = one call, the call pays
 * gil_xcore_cpu_us).  A sequential run has W = 0.  Extra CPU in us.
 */
static double
xcore_us(struct sim_model *m, size_t h, size_t i, double frac)
{
    double w;

    if (m->p.runtime == SIM_RT_FREE || m->nhome < 2 ||
        m->p.gil_xcore_cpu_us <= 0 || m->p.py_call_us <= 0 || frac <= 0)
        return 0;
    w = (double)((m->py_total_ns - m->py_seen_ns[i]) -
                 (m->py_home_ns[h] - m->py_seen_own_ns[i])) /
        1e3;
    if (w <= 0)
        return 0;
    return m->p.gil_xcore_cpu_us * frac * fmin(1.0, w / m->p.py_call_us);
}

/*
 * The working set gone cold: A = the time since home core h last ended
 * this segment (slot i) less the Python CPU the client ran since on h,
 * extra CPU of misses included (time in which h ran none of the client's
 * Python: it idled, ran syscalls or other
 * processes, which evict its private caches).  The segment pays
 * py_cold_cpu_us x frac x the ramp (A - py_cold_lo_us) / (py_cold_hi_us -
 * py_cold_lo_us), clamped to [0, 1]: calibrated from two sequential runs
 * of the same client, a short wait (A = lo, nothing charged) and a long
 * one (A = hi, the call pays py_cold_cpu_us).  Extra CPU in us.
 */
static double
cold_us(struct sim_model *m, size_t h, size_t i, double frac)
{
    double a, span = m->p.py_cold_hi_us - m->p.py_cold_lo_us;

    if (m->p.py_cold_cpu_us <= 0 || span <= 0 || frac <= 0)
        return 0;
    a = ((double)(m->eng.now_ns - m->py_seen_at_ns[i]) -
         (double)(m->py_busy_ns[h] - m->py_seen_busy_ns[i])) /
        1e3;
    return m->p.py_cold_cpu_us * frac *
           fmin(1.0, fmax(0.0, (a - m->p.py_cold_lo_us) / span));
}

/*
 * Extra CPU of a Python segment whose working set is not in this core's
 * caches: moved to the other core (xcore_us) or evicted while the client
 * ran no Python (cold_us).  A cache line is either of the two, so the
 * segment pays the larger (measured: the delay-1 sequential run's --xcore
 * extra is 13-104 us against 48-163 us at delay 0, docs/sim-model.md).
 */
/* The core whose caches t's next Python segment uses: its home core, or
 * with cpu_pick the core it will run on by model.c's rule (the one it
 * holds; else its last core if free; else the lowest free one; with none
 * free, its last core). */
static size_t
seg_core(const struct sim_model *m, uint32_t t)
{
    int16_t c = m->ent[t].last_core;

    if (!m->p.cpu_pick)
        return t % m->nhome;
    if (m->holding == (int32_t)t && m->hold_core >= 0)
        return (size_t)m->hold_core;
    if (c >= 0 && !m->core_busy[c])
        return (size_t)c;
    for (size_t k = 0; k < m->nhome; k++)
        if (!m->core_busy[k])
            return k;
    return c >= 0 ? (size_t)c : t % m->nhome;
}

static double
miss_us(struct sim_model *m, uint32_t t, unsigned slot, double frac)
{
    size_t h = seg_core(m, t), i = h * SIM_XC_SLOTS + slot;
    double x, c;

    MT_ASSERT(slot < SIM_XC_SLOTS);
    m->th[t].py_slot = (uint8_t)slot;
    m->th[t].py_core = (uint16_t)h;
    x = xcore_us(m, h, i, frac);
    c = cold_us(m, h, i, frac);
    if (x > 0 && x >= c)
        m->res->gil_xcore++;
    else if (c > 0)
        m->res->py_cold++;
    return fmax(x, c);
}

/*
 * One Python segment of thread t (lognormal, cv py_cv).  Under the GIL a
 * segment that runs after another thread has held the GIL since t's
 * previous segment ended (gil.switch_number moved) takes
 * (1 + gil_switch_stretch) times as long: the measured cost of taking over
 * from another thread (caches refilled after the other thread's work, the
 * holder preempted by threads woken meanwhile; mtrace calibrate); plus
 * miss_us.
 */
static uint64_t
py_ns(struct sim_model *m, uint32_t t, unsigned slot, double frac)
{
    struct sim__thread *th = &m->th[t];
    double us = m->p.py_call_us * frac;
    uint64_t ns;

    if (m->p.runtime == SIM_RT_FREE)
        us *= m->p.ft_slowdown;
    else if (th->ran_py && th->seen_switch != m->gil.switch_number) {
        us *= 1.0 + m->p.gil_switch_stretch;
        /* the segment after release r is op 2r + 2 (SEND/WAIT/SYS at odd
         * ops): another thread held the GIL since t released it */
        if (slot >= 2 && slot % 2 == 0 && slot < SIM_XC_LOOP &&
            slot / 2 - 1 < SIM_HANDOVER_MAX)
            m->res->handover[slot / 2 - 1]++;
    }
    ns = sim__us(mt_rng_lognormal(&m->rng_py, us, m->p.py_cv));
    if (th->py_credit_ns > 0) { /* send_preempt_cpu_us (round 15) */
        uint64_t d = th->py_credit_ns < ns ? th->py_credit_ns : ns;
        ns -= d;
        th->py_credit_ns -= d;
    }
    th->py_seg_ns = ns;
    th->py_miss_ns = sim__us(miss_us(m, t, slot, frac));
    return ns + th->py_miss_ns;
}

/* A Python segment of t ended: remember the GIL's switch count and count
 * its CPU as work done on t's home core. */
static void
py_ended(struct sim_model *m, uint32_t t)
{
    size_t h = m->p.cpu_pick ? m->th[t].py_core : t % m->nhome;
    size_t i = h * SIM_XC_SLOTS + m->th[t].py_slot;

    m->th[t].ran_py = true;
    m->th[t].seen_switch = m->gil.switch_number;
    m->py_total_ns += m->th[t].py_seg_ns;
    m->py_home_ns[h] += m->th[t].py_seg_ns;
    m->py_seen_ns[i] = m->py_total_ns;
    m->py_seen_own_ns[i] = m->py_home_ns[h];
    m->py_busy_ns[h] += m->th[t].py_seg_ns + m->th[t].py_miss_ns;
    m->py_seen_busy_ns[i] = m->py_busy_ns[h];
    m->py_seen_at_ns[i] = m->eng.now_ns;
}

static void advance(struct sim_model *m, uint32_t t);

static void
do_op(struct sim_model *m, uint32_t t)
{
    struct sim__thread *th = &m->th[t];
    const struct sim__opdesc *op =
        &(th->handshake ? m->hs_ops : m->ops)[th->op];
    struct sim__conn *c = &m->conn[th->conn];

    switch (op->type) {
    case OP_SEND:
        sim__cpu_submit(m, t, sim__us(m->p.sys_us), W_SEND_DONE, 0);
        break;
    case OP_CONNECT:
        sim__cpu_submit(m, t, sim__us(m->p.connect_us), W_SYS_DONE, 0);
        break;
    case OP_WAIT:
        if (!c->reply_ready) {
            th->waiting_reply = true; /* blocks in recv_into: core released */
            m->res->client_blocks++;
            break;
        }
        c->reply_ready = false;
        sim__cpu_submit(m, t, sim__us(m->p.sys_us), W_SYS_DONE, 0);
        break;
    default:
        sim__cpu_submit(m, t, sim__us(m->p.sys_us), W_SYS_DONE, 0);
        break;
    }
}

static void
pool_checkin(struct sim_model *m, uint32_t t)
{
    int32_t c = m->th[t].conn;

    m->conn[c].owner = -1;
    m->th[t].conn = -1;
    if (m->pool_wait_n > 0) {
        uint32_t w = (uint32_t)m->pool_wait[0];
        for (size_t i = 1; i < m->pool_wait_n; i++)
            m->pool_wait[i - 1] = m->pool_wait[i];
        m->pool_wait_n--;
        m->th[w].conn = c;
        m->conn[c].owner = (int32_t)w;
        sim__cpu_submit(m, w, 0, W_POOL_GOT, sim__wake_ns(m, m->p.wake_us));
        return;
    }
    m->idle[m->idle_n++] = c;
}

static void
call_begin(struct sim_model *m, uint32_t t)
{
    struct sim__thread *th = &m->th[t];

    th->py_credit_ns = 0; /* what a preempted send left does not carry */
    th->t_start_ns = m->eng.now_ns;
    th->op = 0;
    th->handshake = false;
    if (m->idle_n > 0) {
        th->conn = m->idle[--m->idle_n];
    } else if (m->conn_open < m->nconn) {
        th->conn = (int32_t)m->conn_open++;
        th->handshake = true;
        m->res->conns_opened++;
    } else { /* wait for a check-in, GIL released */
        m->pool_wait[m->pool_wait_n++] = (int32_t)t;
        m->res->client_blocks++;
        sim__gil_drop(m, t, true); /* no forced-switch wait: see model doc */
        return;
    }
    m->conn[th->conn].owner = (int32_t)t;
    advance(m, t);
}

static void
call_end(struct sim_model *m, uint32_t t)
{
    struct sim__thread *th = &m->th[t];

    if (th->call >= (uint64_t)m->p.exclude_first) {
        MT_ASSERT(m->lat_n < m->lat_cap);
        m->lat[m->lat_n++] = m->eng.now_ns - th->t_start_ns;
    }
    pool_checkin(m, t);
    th->call++;
    if (th->call < (uint64_t)m->p.calls &&
        m->p.think_us > 0) { /* sleep, GIL released */
        sim__gil_drop(m, t, true);
        sim__push(m, sim__us(think(m)), SIM_EV_THREAD_START, t, 0);
        return;
    }
    if (th->call < (uint64_t)m->p.calls) {
        sim__cpu_submit(m, t,
                        py_ns(m, t, SIM_XC_LOOP,
                              m->p.py_loop_us /
                                  (m->p.py_call_us > 0 ? m->p.py_call_us : 1)),
                        W_LOOP_DONE, 0);
        return;
    }
    th->done = true;
    m->threads_done++;
    sim__gil_drop(m, t, true);
}

static void
advance(struct sim_model *m, uint32_t t)
{
    struct sim__thread *th = &m->th[t];

    for (;;) {
        const struct sim__opdesc *op =
            &(th->handshake ? m->hs_ops : m->ops)[th->op];
        switch (op->type) {
        case OP_PY:
            sim__cpu_submit(
                m, t, py_ns(m, t, th->op - (th->handshake ? 1u : 0u), op->frac),
                W_PY_DONE, 0);
            return;
        case OP_END:
            if (th->handshake) {
                th->handshake = false;
                th->op = 0;
                continue;
            }
            call_end(m, t);
            return;
        default:
            if (!sim__gil_drop(m, t, false)) {
                th->drop_cpu_ns = 0;
                th->after_switch = AT_DO_OP;
                return;
            }
            if (th->drop_quiesce) /* gil.c submits W_DROP_SIGNAL */
                return;
            if (th->drop_cpu_ns > 0) { /* the signal under gil->mutex */
                uint64_t ns = th->drop_cpu_ns;

                th->drop_cpu_ns = 0;
                sim__cpu_submit(m, t, ns, W_DROP_SIGNAL, 0);
                return;
            }
            do_op(m, t);
            return;
        }
    }
}

/* The thread holds the GIL now: carry on with what it was doing. */
static void
after_take(struct sim_model *m, uint32_t t)
{
    struct sim__thread *th = &m->th[t];
    uint8_t a = th->after_take;

    th->after_take = AT_NONE;
    switch (a) {
    case AT_NEXT_OP:
        th->op++;
        advance(m, t);
        break;
    case AT_RESUME_PY:
        sim__cpu_submit(m, t, th->resume_ns, th->resume_what, 0);
        break;
    case AT_BEGIN_CALL:
        call_begin(m, t);
        break;
    case AT_ADVANCE:
        advance(m, t);
        break;
    default:
        MT_ASSERT(0);
    }
}

/*
 * t has just taken the GIL: it first pays, GIL held, the block/wake CPU of
 * the GIL waiters woken since the previous take (gil.c,
 * sim__gil_take_cost), then carries on.
 */
static void
took_gil(struct sim_model *m, uint32_t t)
{
    uint64_t ns = sim__gil_take_cost(m);

    if (ns > 0)
        sim__cpu_submit(m, t, ns, W_GIL_TAKEN, 0);
    else
        after_take(m, t);
}

static void
take_then(struct sim_model *m, uint32_t t, uint8_t after)
{
    m->th[t].after_take = after;
    if (sim__gil_take(m, t))
        took_gil(m, t);
}

/*
 * send_affine_waiter (off by default; round 8): where the kernel put the
 * GIL waiter that t's own drop_gil woke just before send().  That futex
 * wake-up is not sync: fair.c wake_affine_idle has no choice when no CPU
 * is idle, wake_affine_weight's WA_BIAS keeps the wakee on its previous
 * CPU at about equal loads, select_idle_sibling finds nothing idle.  The
 * model's previous CPU is the home core (index % nhome).  If it is t's,
 * t's CPU has two runnable tasks when send()'s sync wake-up of the peer
 * is placed: wake_affine_idle's "sync && cpu_rq(this_cpu)->nr_running ==
 * 1" fails and the peer goes elsewhere; t is not preempted.  True then.
 */
static bool
send_waiter_on_core(const struct sim_model *m, uint32_t t)
{
    int32_t w = m->gil.last_signalled;

    if (!m->p.send_affine_waiter || w < 0 || (uint32_t)w == t)
        return false;
    if (m->ent[w].what != W_GIL_CHECK)
        return false;
    if (m->ent[w].state != ES_WAKING && m->ent[w].state != ES_QUEUED)
        return false;
    return (size_t)w % m->nhome == (size_t)t % m->nhome;
}

/*
 * Wake-up preemption at a send.  On loopback send(2) queues the data on
 * the receiver and wakes it synchronously (sock_def_readable ->
 * wake_up_interruptible_sync_poll).  Linux places a sync wake-up on the
 * waker's CPU when the waker runs alone there (kernel/sched/fair.c
 * wake_affine_idle) unless select_idle_sibling finds an idle CPU, and
 * the wake-up preemption check then runs the wakee first; the sender is
 * switched out on its way back from the syscall, the GIL still released
 * (Py_BEGIN_ALLOW_THREADS around send() in Modules/socketmodule.c), and
 * runs again when the peer blocks.  Probability: send_preempt_busy_p when
 * no other core is idle here, else send_preempt_p (both measured by
 * mtrace calibrate); with send_affine_waiter, not while the GIL waiter
 * t just signalled is waking on t's core (above).  True when the peer
 * now runs on t's core.
 */
static bool
send_preempted(struct sim_model *m, uint32_t t)
{
    int64_t others = m->busy - (m->holding == (int32_t)t ? 1 : 0);
    bool busy = others >= m->p.cores - 1;
    double p = busy ? m->p.send_preempt_busy_p : m->p.send_preempt_p;

    if (p <= 0 || (p < 1 && mt_rng_uniform(&m->rng_pre) >= p))
        return false;
    if (busy && send_waiter_on_core(m, t)) {
        m->res->send_affine_kept++;
        return false;
    }
    return sim__net_send_sync(m, (uint32_t)m->th[t].conn, t);
}

void
sim__client_thread_start(struct sim_model *m, uint32_t t)
{
    sim__cpu_submit(m, t, 0, W_START, sim__wake_ns(m, m->p.wake_us));
}

void
sim__client_reply(struct sim_model *m, uint32_t c)
{
    struct sim__conn *cn = &m->conn[c];
    int32_t t = cn->owner;

    if (t >= 0 && m->th[t].waiting_reply) {
        m->th[t].waiting_reply = false;
        sim__cpu_submit(m, (uint32_t)t, sim__us(m->p.sys_us), W_SYS_DONE,
                        sim__wake_ns(m, m->p.wake_us));
        return;
    }
    cn->reply_ready = true;
}

void
sim__client_job_done(struct sim_model *m, uint32_t t, uint32_t what)
{
    struct sim__thread *th = &m->th[t];

    switch (what) {
    case W_START:
        take_then(m, t, AT_BEGIN_CALL);
        break;
    case W_PY_DONE:
        py_ended(m, t);
        th->op++;
        advance(m, t);
        break;
    case W_LOOP_DONE:
        py_ended(m, t);
        call_begin(m, t);
        break;
    case W_SEND_DONE:
        if (send_preempted(m, t)) { /* resumes at W_PREEMPT_BACK */
            th->py_credit_ns += sim__us(m->p.send_preempt_cpu_us);
            break;
        }
        sim__net_send_request(m, (uint32_t)th->conn);
        take_then(m, t, AT_NEXT_OP);
        break;
    case W_PREEMPT_BACK:
        take_then(m, t, AT_NEXT_OP);
        break;
    case W_SYS_DONE:
        take_then(m, t, AT_NEXT_OP);
        break;
    case W_GIL_CHECK:
        if (sim__gil_recheck(m, t))
            took_gil(m, t);
        break;
    case W_GIL_REWAIT:
        if (sim__gil_rewait_done(m, t))
            took_gil(m, t);
        break;
    case W_GIL_TAKEN:
        after_take(m, t);
        break;
    case W_GIL_MUTEX:
        if (sim__gil_mutex_woken(m, t))
            took_gil(m, t);
        break;
    case W_DROP_SIGNAL:
        do_op(m, t);
        break;
    case W_SWITCHED:
        if (th->after_switch == AT_DO_OP) {
            th->after_switch = AT_NONE;
            do_op(m, t);
        } else if (th->after_switch == AT_RESUME_PY) {
            th->after_switch = AT_NONE;
            take_then(m, t, AT_RESUME_PY);
        }
        /* AT_NONE: a pool waiter; its W_POOL_GOT carries on. */
        break;
    case W_POOL_GOT:
        take_then(m, t, AT_ADVANCE);
        break;
    default:
        MT_ASSERT(0);
    }
}
