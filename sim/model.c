/*
 * model.c -- the contention model's run loop: CPU cores, client threads
 * and their calls, the connection and session pools, the server and the
 * proxy.  The GIL and the driver lock are in gil.c.  Rules and sources:
 * docs/sim-model.md.
 *
 * A call is a fixed list of steps (build_ops): Python segments (CPU with
 * the GIL held), the driver-lock sections, the connection checkout, the
 * send, the wait for the reply and the other receives (each a GIL
 * release costing sys_us of CPU), the check-in, the end.  A client thread
 * runs its steps in order; a step that waits (GIL, lock, reply, pool)
 * parks the thread until an event resumes it.  Cores are FIFO and not
 * preemptive, except that a GIL drop request cuts the holder's Python.
 */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

uint64_t
sim__ns(double us)
{
    if (!(us > 0))
        return 0;
    if (us > 1e12)
        return (uint64_t)1e15;
    return (uint64_t)llround(us * 1000.0);
}

uint64_t
sim__lat(struct sim_model *m, double mean_us)
{
    return mean_us > 0 ? sim__ns(mt_rng_exp(&m->rng_wake, mean_us)) : 0;
}

void
sim__push(struct sim_model *m, uint64_t delay_ns, uint32_t kind, uint32_t id,
          uint64_t gen)
{
    int rc = sim_engine_after(&m->eng, delay_ns, kind, id, gen);

    if (rc != 0 && m->rc == 0)
        m->rc = rc;
}

void
sim__wake(struct sim_model *m, uint32_t t, uint64_t delay_ns, uint8_t cont)
{
    struct sim__thr *th = &m->th[t];

    if (cont != C_START) /* every other wake ends a sleep */
        m->res->sleeps++;
    th->wake_cont = cont;
    th->wake_gen++;
    sim__push(m, delay_ns, SIM_EV_WAKE, t, th->wake_gen);
}

/* ---- cores: FIFO, one job per thread ---- */

/* idle_frac(g): the idle curve at g us (params.h). */
static double
idle_frac(const struct sim_params *p, double g)
{
    int64_t n = p->idle_n, k;

    if (n <= 0 || g <= p->idle_gap_us[0])
        return n > 0 ? p->idle_frac[0] : 0;
    for (k = 1; k < n && g > p->idle_gap_us[k]; k++)
        ;
    if (k == n)
        return p->idle_frac[n - 1];
    return p->idle_frac[k - 1] +
           (p->idle_frac[k] - p->idle_frac[k - 1]) *
               (g - p->idle_gap_us[k - 1]) /
               (p->idle_gap_us[k] - p->idle_gap_us[k - 1]);
}

/*
 * The core t's job runs on: the one its last job ran on when that is free
 * (the scheduler's wake-up affinity), else the lowest free one.  A Python
 * segment (one step of the call) costs more when its code and the driver
 * objects it touches are not in the core's cache:
 *   - xcore_frac more when the step last ran, in any thread, on another
 *     core (they are in that core's cache), or when its thread's previous
 *     step did (the call's own objects, its frames and its connection are);
 *   - idle_frac(g) more when the core idled g us since the step last ran
 *     on it (py_call_us measured at several delays);
 * the larger of the two.  Checked once per step: the rest of a step
 * resumed after a forced drop is not checked again.
 */
static void
core_pick(struct sim_model *m, struct sim__thr *th)
{
    int32_t c = th->core;
    uint64_t *mark;
    double f = 0;

    if (c < 0 || m->core_busy[c]) {
        for (c = 0; c < m->p.cores && m->core_busy[c]; c++)
            ;
        MT_ASSERT(c < m->p.cores);
    }
    m->core_busy[c] = 1;
    m->core_idle_ns[c] += m->eng.now_ns - m->core_idle_since[c];
    th->core = c;
    if (!th->py_job || th->xcore_seen)
        return;
    th->xcore_seen = true;
    mark = &m->op_mark[(size_t)th->op * (size_t)m->p.cores + (size_t)c];
    if ((m->op_core[th->op] >= 0 && m->op_core[th->op] != c) ||
        (th->py_core >= 0 && th->py_core != c)) {
        f = m->p.xcore_frac;
        if (f > 0)
            m->res->xcore_segments++;
    }
    if (*mark != UINT64_MAX && m->p.idle_n > 0) {
        double fi =
            idle_frac(&m->p, (double)(m->core_idle_ns[c] - *mark) / 1000.0);
        if (fi > f)
            f = fi;
    }
    if (f > 0)
        th->job_ns += (uint64_t)llround((double)th->job_ns * f);
    m->op_core[th->op] = c;
    th->py_core = c;
    *mark = m->core_idle_ns[c];
}

static void
core_free(struct sim_model *m, int32_t c)
{
    m->core_busy[c] = 0;
    m->core_idle_since[c] = m->eng.now_ns;
}

static void
cpu_start(struct sim_model *m, uint32_t t)
{
    struct sim__thr *th = &m->th[t];

    core_pick(m, th);
    m->busy++;
    th->job_state = JOB_RUNNING;
    th->job_start_ns = m->eng.now_ns;
    th->job_gen++;
    sim__push(m, th->job_ns, SIM_EV_CPU_DONE, t, th->job_gen);
}

static void
cpu_fill(struct sim_model *m)
{
    while (m->busy < m->p.cores && m->rq_n > 0) {
        uint32_t t = m->rq[m->rq_head];

        m->rq_head = (m->rq_head + 1) % m->nth;
        m->rq_n--;
        cpu_start(m, t);
    }
}

void
sim__cpu_submit(struct sim_model *m, uint32_t t, uint64_t dur_ns, uint8_t cont)
{
    struct sim__thr *th = &m->th[t];

    MT_ASSERT(th->job_state == JOB_NONE);
    th->job_ns = dur_ns;
    th->cont = cont;
    if (m->busy < m->p.cores && m->rq_n == 0) {
        cpu_start(m, t);
        return;
    }
    MT_ASSERT(m->rq_n < m->nth);
    m->rq[(m->rq_head + m->rq_n) % m->nth] = t;
    m->rq_n++;
    th->job_state = JOB_QUEUED;
}

uint64_t
sim__cpu_cancel(struct sim_model *m, uint32_t t)
{
    struct sim__thr *th = &m->th[t];
    uint64_t left = th->job_ns;

    if (th->job_state == JOB_RUNNING) {
        uint64_t ran = m->eng.now_ns - th->job_start_ns;

        left = th->job_ns > ran ? th->job_ns - ran : 0;
        m->busy_ns += ran;
        m->busy--;
        core_free(m, th->core);
        th->job_gen++; /* its CPU_DONE is stale now */
        th->job_state = JOB_NONE;
        cpu_fill(m);
    } else if (th->job_state == JOB_QUEUED) {
        size_t n = m->rq_n, k = 0;

        for (size_t i = 0; i < n; i++) { /* drop t, keep the order */
            uint32_t x = m->rq[(m->rq_head + i) % m->nth];
            if (x != t)
                m->rq[(m->rq_head + k++) % m->nth] = x;
        }
        m->rq_n = k;
        th->job_state = JOB_NONE;
    }
    return left;
}

static void
on_cpu_done(struct sim_model *m, uint32_t t, uint64_t gen)
{
    struct sim__thr *th = &m->th[t];

    if (gen != th->job_gen || th->job_state != JOB_RUNNING)
        return;
    m->busy_ns += th->job_ns;
    m->busy--;
    core_free(m, th->core);
    th->job_state = JOB_NONE;
    cpu_fill(m);
    sim__continue(m, t, th->cont);
}

/* ---- the call's steps ---- */

static void
add_op(struct sim_model *m, uint8_t op, double us)
{
    MT_ASSERT(m->nops < SIM_OPS_MAX);
    m->ops[m->nops].op = op;
    m->ops[m->nops].us = us;
    m->nops++;
}

static void
add_sections(struct sim_model *m, int64_t n, bool get, bool put, double h)
{
    for (int64_t k = 0; k < n; k++) {
        add_op(m, OP_LOCK_ACQ, 0);
        if (get && k == 0)
            add_op(m, OP_SESSION_GET, 0);
        add_op(m, OP_PY, h);
        if (put && k == n - 1)
            add_op(m, OP_SESSION_PUT, 0);
        add_op(m, OP_LOCK_REL, 0);
    }
}

/*
 * Steps of one call.  pymongo 3.11 checks a server session out and
 * selects the server before the send (Topology._lock sections), sends
 * (sock.sendall), receives at once (network.py receive_message: recv_into
 * of the header, then of the body), and checks the session in after the
 * reply.  The Python outside the lock sections is split evenly over the
 * segment before the send and the segments after each receive (none
 * between the send and the first receive, where pymongo runs almost
 * nothing): with one thread a call takes py_call_us + releases * sys_us +
 * ctx_cpu_us + wake_us + the server, which fit.c inverts.
 */
static void
build_ops(struct sim_model *m)
{
    const struct sim_params *p = &m->p;
    int64_t L = p->lock_sections, pre = (L + 1) / 2, post;
    int64_t R = p->releases, nseg = R >= 2 ? R : 2;
    double h = p->lock_hold_us, rest;

    if (p->lock_before >= 0)
        pre = p->lock_before < L ? p->lock_before : L;
    post = L - pre;
    if (L > 0 && h * (double)L > p->py_call_us)
        h = p->py_call_us / (double)L;
    rest = (p->py_call_us - h * (double)L) / (double)nseg;
    m->nops = 0;
    add_sections(m, pre, true, post == 0, h);
    add_op(m, OP_PY, rest);
    add_op(m, OP_CONN_GET, 0);
    add_op(m, OP_SEND, 0);
    add_op(m, OP_WAIT, R >= 2 ? p->sys_us : 0); /* R 1: the send's release */
    for (int64_t r = 2; r < R; r++) {
        add_op(m, OP_PY, rest);
        add_op(m, OP_SYS, 0);
    }
    add_op(m, OP_CONN_PUT, 0);
    add_op(m, OP_PY, rest);
    add_sections(m, post, false, true, h);
    add_op(m, OP_END, 0);
}

/* ---- server and proxy ---- */

static double
server_draw_us(struct sim_model *m)
{
    const struct sim_params *p = &m->p;

    if (p->server_samples_n > 0)
        return p
            ->server_samples_us[mt_rng_below(&m->rng_srv, p->server_samples_n)];
    if (p->server_cv > 0)
        return mt_rng_lognormal(&m->rng_srv, p->server_us, p->server_cv);
    return p->server_us;
}

/* When the reply to a request sent now on connection c reaches the
 * client.  The server time (a trace sample: the round trip at delay 0)
 * comes first; deadline: the delay adds to it (mtrace replay makes its
 * reply at once and holds it until read + delay; the transits stay
 * around it); serial: the same, one reply at a time per connection (the
 * proxy's reader sleeps), so a reply also waits for the previous one. */
static uint64_t
reply_at_ns(struct sim_model *m, struct sim__conn *c)
{
    uint64_t now = m->eng.now_ns, s = sim__ns(server_draw_us(m));
    uint64_t d = sim__ns(m->p.proxy_delay_ms * 1000.0), at;

    switch (m->p.proxy) {
    case SIM_PROXY_DEADLINE:
        return now + s + d;
    case SIM_PROXY_SERIAL:
        at = now + s;
        if (c->serial_free_ns > at)
            at = c->serial_free_ns;
        at += d;
        c->serial_free_ns = at;
        return at;
    default:
        return now + s + (m->p.proxy_delay_ms > 0 ? d : 0);
    }
}

static void
on_reply(struct sim_model *m, uint32_t ci)
{
    struct sim__conn *c = &m->conn[ci];

    c->reply_ready = true;
    if (c->owner >= 0 && m->th[c->owner].waiting_reply) {
        m->th[c->owner].waiting_reply = false;
        sim__wake(m, (uint32_t)c->owner, sim__lat(m, m->p.wake_us),
                  C_REPLY_WOKEN);
    }
}

/* ---- steps ---- */

void
sim__begin_call(struct sim_model *m, uint32_t t)
{
    struct sim__thr *th = &m->th[t];

    th->op = 0;
    th->t_start_ns = m->eng.now_ns;
    th->factor =
        m->p.py_cv > 0 ? mt_rng_lognormal(&m->rng_py, 1.0, m->p.py_cv) : 1.0;
}

static void
end_call(struct sim_model *m, uint32_t t)
{
    struct sim__thr *th = &m->th[t];

    if (th->call >= (uint64_t)m->p.exclude_first) {
        MT_ASSERT(m->lat_n < m->lat_cap);
        m->lat[m->lat_n++] = m->eng.now_ns - th->t_start_ns;
    }
    th->call++;
    m->res->calls++;
    if (th->call < (uint64_t)m->p.calls) {
        sim__begin_call(m, t);
        return;
    }
    th->done = true;
    m->threads_done++;
    sim__gil_drop(m, t);
}

/* The thread gives the GIL up for a syscall of sys_us, then takes it back
 * and goes on (the op was advanced first). */
static void
release_for_cpu(struct sim_model *m, uint32_t t, double us, uint8_t cont)
{
    sim__gil_drop(m, t);
    sim__cpu_submit(m, t, sim__ns(us), cont);
}

static void
conn_get(struct sim_model *m, uint32_t t)
{
    struct sim__thr *th = &m->th[t];

    if (m->idle_n > 0) {
        th->conn = m->idle[--m->idle_n];
    } else if (m->conn_open < m->nconn) {
        /* a new connection: connect + handshake round trip, GIL released */
        th->conn = (int32_t)m->conn_open++;
        m->res->conns_opened++;
        th->op++;
        m->conn[th->conn].owner = (int32_t)t;
        th->conn_since_ns = m->eng.now_ns;
        sim__gil_drop(m, t);
        sim__wake(m, t,
                  sim__ns(server_draw_us(m) + m->p.sys_us) +
                      sim__lat(m, m->p.wake_us),
                  C_WOKEN);
        return;
    } else {
        m->res->pool_waits++;
        m->pool_wait[m->pool_wait_n++] = t;
        th->op++;
        sim__gil_drop(m, t);
        return;
    }
    m->conn[th->conn].owner = (int32_t)t;
    th->conn_since_ns = m->eng.now_ns;
    th->op++;
    sim__advance(m, t);
}

static void
conn_put(struct sim_model *m, uint32_t t)
{
    struct sim__thr *th = &m->th[t];
    int32_t c = th->conn;

    MT_ASSERT(c >= 0);
    m->conn_busy_ns += m->eng.now_ns - th->conn_since_ns;
    th->conn = -1;
    m->conn[c].owner = -1;
    if (m->pool_wait_n > 0) { /* FIFO hand-over to the oldest waiter */
        uint32_t w = m->pool_wait[0];

        memmove(m->pool_wait, m->pool_wait + 1,
                (m->pool_wait_n - 1) * sizeof(*m->pool_wait));
        m->pool_wait_n--;
        m->th[w].conn = c;
        m->conn[c].owner = (int32_t)w;
        m->th[w].conn_since_ns = m->eng.now_ns;
        sim__wake(m, w, sim__lat(m, m->p.wake_us), C_WOKEN);
    } else {
        m->idle[m->idle_n++] = c;
    }
}

void
sim__advance(struct sim_model *m, uint32_t t)
{
    struct sim__thr *th = &m->th[t];

    for (;;) {
        const struct sim__op *o = &m->ops[th->op];
        struct sim__conn *c;

        switch (o->op) {
        case OP_PY: {
            uint64_t extra = th->block_ns;

            th->block_ns = 0;
            sim__run_python(m, t, sim__ns(o->us * th->factor) + extra);
            return;
        }
        case OP_LOCK_ACQ:
            if (!sim__lock_acquire(m, t))
                return;
            th->op++;
            break;
        case OP_LOCK_REL:
            sim__lock_release(m, t);
            th->op++;
            break;
        case OP_SESSION_GET:
            th->op++;
            if (m->sessions > 0) {
                m->sessions--;
                break;
            }
            /* ServerSession(): uuid4 -> os.urandom, GIL released, inside
             * the lock section */
            m->res->sessions_created++;
            release_for_cpu(m, t, m->p.sys_us, C_REL_DONE);
            return;
        case OP_SESSION_PUT:
            if (m->p.session_reuse)
                m->sessions++;
            th->op++;
            break;
        case OP_CONN_GET:
            conn_get(m, t);
            return;
        case OP_SEND:
            th->op++;
            release_for_cpu(m, t, m->p.sys_us, C_SENT);
            return;
        case OP_WAIT:
            c = &m->conn[th->conn];
            sim__gil_drop(m, t);
            if (c->reply_ready) {
                c->reply_ready = false;
                th->op++;
                sim__cpu_submit(m, t, sim__ns(o->us), C_REL_DONE);
            } else {
                th->waiting_reply = true;
            }
            return;
        case OP_SYS:
            th->op++;
            release_for_cpu(m, t, m->p.sys_us, C_REL_DONE);
            return;
        case OP_CONN_PUT:
            conn_put(m, t);
            th->op++;
            break;
        case OP_END:
            end_call(m, t);
            if (th->done)
                return;
            break;
        default:
            MT_ASSERT(0);
        }
    }
}

void
sim__continue(struct sim_model *m, uint32_t t, uint8_t cont)
{
    struct sim__thr *th = &m->th[t];
    struct sim__conn *c;

    switch (cont) {
    case C_START:
        sim__gil_take(m, t, AG_BEGIN);
        break;
    case C_PY_DONE:
        th->py_job = false;
        th->xcore_seen = false;
        th->op++;
        sim__advance(m, t);
        break;
    case C_SENT:
        c = &m->conn[th->conn];
        sim__push(m, reply_at_ns(m, c) - m->eng.now_ns, SIM_EV_REPLY,
                  (uint32_t)th->conn, 0);
        sim__gil_take(m, t, AG_ADVANCE);
        break;
    case C_REL_DONE:
        sim__gil_take(m, t, AG_ADVANCE);
        break;
    case C_REPLY_WOKEN: /* back from the blocking recv: its CPU, the GIL */
        c = &m->conn[th->conn];
        c->reply_ready = false;
        th->op++;
        sim__cpu_submit(m, t, sim__ns(m->p.ctx_cpu_us + m->ops[th->op - 1].us),
                        C_REL_DONE);
        break;
    case C_WOKEN: /* pool hand-over, new connection: the switch-in CPU */
        sim__cpu_submit(m, t, sim__ns(m->p.ctx_cpu_us), C_REL_DONE);
        break;
    default:
        sim__gil_continue(m, t, cont);
        break;
    }
}

static void
dispatch(struct sim_model *m, const struct sim_ev *ev)
{
    struct sim__thr *th;

    switch (ev->kind) {
    case SIM_EV_CPU_DONE:
        on_cpu_done(m, ev->id, ev->gen);
        break;
    case SIM_EV_WAKE:
        th = &m->th[ev->id];
        if (ev->gen == th->wake_gen)
            sim__continue(m, ev->id, th->wake_cont);
        break;
    case SIM_EV_GIL_TIMEOUT:
        sim__gil_timeout(m, ev->id, ev->gen);
        break;
    case SIM_EV_REPLY:
        on_reply(m, ev->id);
        break;
    default:
        MT_ASSERT(0);
    }
}

/* ---- setup ---- */

static int
model_alloc(struct sim_model *m)
{
    const struct sim_params *p = &m->p;
    size_t nth = (size_t)p->threads;
    size_t pool = (size_t)(p->pool_max < p->threads ? p->pool_max : p->threads);

    if ((size_t)p->pool_initial > pool)
        pool = (size_t)p->pool_initial;
    if (pool > (size_t)p->pool_max)
        pool = (size_t)p->pool_max;
    m->nth = nth;
    m->nconn = pool;
    m->lat_cap = nth * (size_t)p->calls;
    m->th = mt_calloc(nth, sizeof(*m->th));
    m->rq = mt_calloc(nth, sizeof(*m->rq));
    m->conn = mt_calloc(pool, sizeof(*m->conn));
    m->idle = mt_calloc(pool, sizeof(*m->idle));
    m->pool_wait = mt_calloc(nth, sizeof(*m->pool_wait));
    m->lat = mt_calloc(m->lat_cap ? m->lat_cap : 1, sizeof(*m->lat));
    m->core_busy = mt_calloc((size_t)p->cores, 1);
    m->core_idle_since = mt_calloc((size_t)p->cores, sizeof(uint64_t));
    m->core_idle_ns = mt_calloc((size_t)p->cores, sizeof(uint64_t));
    m->op_mark = mt_calloc(m->nops * (size_t)p->cores, sizeof(uint64_t));
    for (size_t i = 0; i < SIM_OPS_MAX; i++)
        m->op_core[i] = -1;
    for (size_t i = 0; i < m->nops * (size_t)p->cores; i++)
        m->op_mark[i] = UINT64_MAX;
    if (!m->th || !m->rq || !m->conn || !m->idle || !m->pool_wait || !m->lat ||
        !m->core_busy || !m->core_idle_since || !m->core_idle_ns || !m->op_mark)
        return -ENOMEM;
    if (sim__gil_init(m) != 0)
        return -ENOMEM;
    for (size_t i = 0; i < pool; i++)
        m->conn[i].owner = -1;
    m->conn_open = (size_t)p->pool_initial;
    if (m->conn_open > pool)
        m->conn_open = pool;
    for (size_t i = m->conn_open; i > 0; i--) /* LIFO: conn 0 on top */
        m->idle[m->idle_n++] = (int32_t)(i - 1);
    for (size_t i = 0; i < nth; i++)
        m->th[i].conn = m->th[i].core = m->th[i].py_core = -1;
    m->sessions = p->session_prefill;
    return sim_engine_init(&m->eng, 4 * nth + 4 * pool + 64);
}

static void
model_free(struct sim_model *m)
{
    sim_engine_free(&m->eng);
    sim__gil_free(m);
    mt_free(m->th);
    mt_free(m->rq);
    mt_free(m->conn);
    mt_free(m->idle);
    mt_free(m->pool_wait);
    mt_free(m->lat);
    mt_free(m->core_busy);
    mt_free(m->core_idle_since);
    mt_free(m->core_idle_ns);
    mt_free(m->op_mark);
}

int
sim_model_run(const struct sim_params *p, struct sim_result *res,
              struct mt_err *err)
{
    struct sim_model *m = mt_calloc(1, sizeof(*m));
    struct sim_ev ev;
    int rc;

    memset(res, 0, sizeof(*res));
    if (m == NULL)
        return -ENOMEM;
    m->p = *p;
    m->res = res;
    build_ops(m);
    rc = model_alloc(m);
    if (rc != 0)
        goto out;
    mt_rng_split(&m->rng_py, (uint64_t)p->seed, 1);
    mt_rng_split(&m->rng_srv, (uint64_t)p->seed, 2);
    mt_rng_split(&m->rng_wake, (uint64_t)p->seed, 3);
    for (size_t i = 0; i < m->nth; i++)
        sim__wake(m, (uint32_t)i, 0, C_START);
    while (m->rc == 0 && m->threads_done < m->nth &&
           sim_engine_pop(&m->eng, &ev)) {
        res->events++;
        dispatch(m, &ev);
    }
    rc = m->rc;
    if (rc == 0 && m->threads_done != m->nth)
        rc = mt_err_set(err, MT_ELIMIT, 0,
                        "the model stalled: %zu of %zu threads finished",
                        m->threads_done, m->nth);
    if (rc != 0) {
        if (rc == MT_ELIMIT && err && !err->msg[0])
            mt_err_set(err, rc, 0, "too many events queued");
        goto out;
    }
    res->end_ns = m->eng.now_ns;
    res->lat_ns = m->lat;
    res->n = m->lat_n;
    m->lat = NULL;
    if (res->end_ns > 0) {
        double end = (double)res->end_ns;

        res->util_cores = (double)m->busy_ns / ((double)p->cores * end);
        res->util_gil = (double)m->gil.held_ns / end;
        res->util_lock = (double)m->lock.held_ns / end;
        res->util_pool = (double)m->conn_busy_ns / ((double)p->pool_max * end);
    }
out:
    model_free(m);
    mt_free(m);
    return rc;
}

void
sim_result_free(struct sim_result *res)
{
    if (res == NULL)
        return;
    mt_free(res->lat_ns);
    res->lat_ns = NULL;
    res->n = 0;
}

double
sim_model_server_mean_us(const struct sim_params *p)
{
    double s = p->server_us, d = p->proxy_delay_ms * 1000.0;

    if (p->server_samples_n > 0) {
        s = 0;
        for (size_t i = 0; i < p->server_samples_n; i++)
            s += p->server_samples_us[i];
        s /= (double)p->server_samples_n;
    }
    return s + d;
}

double
sim_model_server_var_us2(const struct sim_params *p)
{
    double mean = p->server_us, var = 0;

    if (p->server_samples_n > 0) {
        mean = 0;
        for (size_t i = 0; i < p->server_samples_n; i++)
            mean += p->server_samples_us[i];
        mean /= (double)p->server_samples_n;
        for (size_t i = 0; i < p->server_samples_n; i++)
            var += (p->server_samples_us[i] - mean) *
                   (p->server_samples_us[i] - mean);
        var = p->server_samples_n > 1 ? var / (double)(p->server_samples_n - 1)
                                      : 0;
    } else {
        var = (p->server_cv * mean) * (p->server_cv * mean);
    }
    return var;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double
rank_ms(const uint64_t *s, size_t n, double q)
{
    size_t k = (size_t)ceil(q * (double)n); /* nearest rank, 1-based */
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return (double)s[k - 1] / 1e6;
}

int
sim_stats_compute(const uint64_t *lat_ns, size_t n, struct sim_stats *st)
{
    uint64_t *s;
    double sum = 0, ss = 0, mean;

    memset(st, 0, sizeof(*st));
    st->n = n;
    if (n == 0)
        return 0;
    s = mt_malloc(n * sizeof(*s));
    if (s == NULL)
        return -ENOMEM;
    memcpy(s, lat_ns, n * sizeof(*s));
    qsort(s, n, sizeof(*s), cmp_u64);
    for (size_t i = 0; i < n; i++)
        sum += (double)s[i];
    mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += ((double)s[i] - mean) * ((double)s[i] - mean);
    st->mean_ms = mean / 1e6;
    st->stdev_ms = n > 1 ? sqrt(ss / (double)(n - 1)) / 1e6 : 0;
    st->stdev_pct = st->mean_ms > 0 ? 100.0 * st->stdev_ms / st->mean_ms : 0;
    st->p50_ms = rank_ms(s, n, 0.50);
    st->p10_ms = rank_ms(s, n, 0.10);
    st->p90_ms = rank_ms(s, n, 0.90);
    st->p99_ms = rank_ms(s, n, 0.99);
    st->max_ms = (double)s[n - 1] / 1e6;
    mt_free(s);
    return 0;
}
