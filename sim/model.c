/*
 * model.c -- run loop of the contention model and its shared CPU cores.
 *
 * Cores: everything that runs (client threads, server, proxy) takes a core
 * for each CPU job.  A job that finds no free core waits in one FIFO run
 * queue.  An entity whose job ends and which immediately has more CPU work
 * (a Python segment followed by a syscall) keeps its core, except that
 * (1) the peer a client's send wakes takes it over (client.c
 * send_preempted, net.c sim__net_send_sync, through m->holding), and (2)
 * an entity that has kept a core for a whole time slice (cpu_slice_us x
 * (1 + ilog2(min(cores, 8))), Linux's scaled base slice) while others wait
 * goes to the back of the run queue (cpu_enqueue).  Jobs here are 1..300
 * us, so (2) only matters to threads that seldom block.  An entity that was
 * blocked becomes runnable only after a wake-up latency, and its first job pays
 * ctx_cpu_us.
 *
 * Background load (bg_load > 0): other processes on the same cores, as one
 * on/off source per core: exponential bursts of mean bg_job_us separated by
 * exponential pauses, so that the sources keep bg_load cores busy on
 * average.  Their bursts queue for cores like everything else.
 */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

uint64_t
sim__us(double us)
{
    double ns = us * 1000.0;

    if (ns <= 0.0)
        return 0;
    if (ns >= 1.8e19)
        return UINT64_MAX / 4;
    return (uint64_t)llround(ns);
}

void
sim__push(struct sim_model *m, uint64_t delay_ns, uint32_t kind, uint32_t id,
          uint64_t gen)
{
    int rc = sim_engine_after(&m->eng, delay_ns, kind, id, gen);

    if (rc < 0 && m->rc == 0)
        m->rc = rc;
}

uint64_t
sim__wake_ns(struct sim_model *m, double mean_us)
{
    return sim__us(mt_rng_lognormal(&m->rng_wake, mean_us, m->p.wake_cv));
}

/* A core became free now (m->busy was decremented). */
static void
core_freed(struct sim_model *m)
{
    if (m->free_at == NULL) /* idle_wake off, or a hand-built model */
        return;
    MT_ASSERT(m->nfree < (size_t)m->p.cores);
    m->free_at[m->nfree++] = m->eng.now_ns; /* times only grow: sorted */
}

/* A core is taken: the one free the longest when `oldest` (a wake-up that
 * paid idle_wake_cpu_us runs on the core that idled), else the one freed
 * last (a job that continues or follows another takes the warm core). */
static void
core_taken(struct sim_model *m, bool oldest)
{
    if (m->free_at == NULL)
        return;
    MT_ASSERT(m->nfree > 0);
    m->nfree--;
    if (oldest)
        memmove(m->free_at, m->free_at + 1, m->nfree * sizeof(*m->free_at));
}

/* cpu_pick: e takes core `prefer` if free, else its last core if free,
 * else the lowest free one (kernel/sched/fair.c select_idle_sibling
 * tries the previous CPU first, then an idle one). */
static void
core_take(struct sim_model *m, struct sim__ent *x, int32_t prefer)
{
    int32_t c = -1;

    if (prefer >= 0 && !m->core_busy[prefer])
        c = prefer;
    else if (x->last_core >= 0 && !m->core_busy[x->last_core])
        c = x->last_core;
    for (int32_t k = 0; c < 0 && k < (int32_t)m->p.cores; k++)
        if (!m->core_busy[k])
            c = k;
    MT_ASSERT(c >= 0);
    m->core_busy[c] = 1;
    x->core = (int16_t)c;
    x->last_core = (int16_t)c;
}

/* cpu_pick: the core held by the entity whose job just ended is free. */
static void
hold_core_free(struct sim_model *m)
{
    if (m->core_busy && m->hold_core >= 0)
        m->core_busy[m->hold_core] = 0;
    m->hold_core = -1;
}

static void
cpu_start_on(struct sim_model *m, uint32_t e, int32_t prefer)
{
    struct sim__ent *x = &m->ent[e];

    if (e < m->nth && x->what == W_PY_DONE && sim__gil_start_check(m, e))
        return; /* forced to drop the GIL before running: blocked now */
    x->on_core = x->shared && x->dur_ns > 0; /* zero CPU needs no core */
    if (x->on_core) {
        m->busy++;
        core_taken(m, x->pick_oldest);
        x->held_ns = m->eng.now_ns;
        if (m->core_busy)
            core_take(m, x, prefer);
    }
    x->state = ES_RUNNING;
    x->end_ns = m->eng.now_ns + x->dur_ns;
    sim__push(m, x->dur_ns, SIM_EV_CPU_DONE, e, x->gen);
}

static void
cpu_start(struct sim_model *m, uint32_t e)
{
    cpu_start_on(m, e, -1);
}

/* cpu_pick 2: position in the run queue of the first job core k may run:
 * one queued on k or on no core, else the first that is no longer
 * cache-hot (its entity last ran >= sched_migration_cost_us ago: Linux's
 * task_hot() keeps a recently run task where it is queued, and
 * newidle_balance() does not pull when the CPU's average idle time is
 * below that cost); *cold_ns: the earliest time a hot one turns cold. */
static size_t
rq_pick(const struct sim_model *m, int32_t k, uint64_t *cold_ns)
{
    uint64_t hot = sim__us(m->p.sched_migration_cost_us), now = m->eng.now_ns;
    size_t cold = SIZE_MAX;

    for (size_t i = 0; i < m->rq_n; i++) {
        const struct sim__ent *x = &m->ent[m->runq[(m->rq_head + i) % m->nent]];

        if (x->rq_core < 0 || x->rq_core == k)
            return i;
        if (now - x->ran_ns >= hot || x->ran_ns == 0) {
            if (cold == SIZE_MAX)
                cold = i;
        } else if (x->ran_ns + hot < *cold_ns) {
            *cold_ns = x->ran_ns + hot;
        }
    }
    return cold;
}

/* Removes position i of the run queue; returns its entity. */
static uint32_t
rq_remove(struct sim_model *m, size_t i)
{
    uint32_t e = m->runq[(m->rq_head + i) % m->nent];

    for (; i + 1 < m->rq_n; i++)
        m->runq[(m->rq_head + i) % m->nent] =
            m->runq[(m->rq_head + i + 1) % m->nent];
    m->rq_n--;
    return e;
}

/* cpu_pick 2: per-core run queues.  Each free core runs what is queued on
 * it, else pulls a job that is no longer cache-hot from another core's
 * queue; when only hot jobs wait elsewhere it idles, and a SIM_EV_BALANCE
 * comes back when the first of them turns cold. */
static void
cpu_fill_percore(struct sim_model *m)
{
    uint64_t cold_ns = UINT64_MAX;

    for (int32_t k = 0; k < (int32_t)m->p.cores; k++) {
        while (!m->core_busy[k] && m->rq_n > 0 && m->busy < m->p.cores) {
            size_t i = rq_pick(m, k, &cold_ns);

            if (i == SIZE_MAX)
                break;
            cpu_start_on(m, rq_remove(m, i), k);
        }
    }
    if (m->rq_n > 0 && m->busy < m->p.cores && cold_ns != UINT64_MAX &&
        (m->balance_ns == 0 || cold_ns < m->balance_ns)) {
        m->balance_ns = cold_ns;
        sim__push(m, cold_ns - m->eng.now_ns, SIM_EV_BALANCE, 0, 0);
    }
}

static void
cpu_fill(struct sim_model *m)
{
    if (m->p.cpu_pick == 2) {
        cpu_fill_percore(m);
        return;
    }
    while (m->rq_n > 0 && m->busy < m->p.cores) {
        uint32_t e = m->runq[m->rq_head];
        m->rq_head = (m->rq_head + 1) % m->nent;
        m->rq_n--;
        cpu_start(m, e);
    }
}

static void
cpu_enqueue(struct sim_model *m, uint32_t e)
{
    struct sim__ent *x = &m->ent[e];

    if (m->holding == (int32_t)e) { /* continues on the core it holds */
        uint64_t since = x->held_ns;
        int32_t c = m->hold_core;

        m->holding = -1;
        m->busy--;
        core_freed(m);
        hold_core_free(m);
        if (m->rq_n == 0 || !x->shared || x->dur_ns == 0 ||
            m->eng.now_ns - since < m->slice_ns) {
            cpu_start_on(m, e, c);
            if (x->on_core)
                x->held_ns = since; /* the same stretch on the core */
            return;
        }
        /* Its slice is used up and others wait: to the back of the queue. */
        MT_ASSERT(m->rq_n < m->nent);
        x->rq_core = (int16_t)c;
        m->runq[(m->rq_head + m->rq_n) % m->nent] = e;
        m->rq_n++;
        x->state = ES_QUEUED;
        m->res->slice_ends++;
        cpu_fill(m);
        return;
    }
    if (!x->shared || x->dur_ns == 0 || m->busy < m->p.cores) {
        cpu_start(m, e);
        return;
    }
    /* cpu_pick 2, no core idle: queued on its previous CPU (fair.c
     * wake_affine_weight's WA_BIAS keeps a wakee on prev_cpu when the loads
     * are about equal; select_idle_sibling finds nothing idle) */
    x->rq_core = m->p.cpu_pick == 2 ? x->last_core : -1;
    MT_ASSERT(m->rq_n < m->nent);
    m->runq[(m->rq_head + m->rq_n) % m->nent] = e;
    m->rq_n++;
    x->state = ES_QUEUED;
}

void
sim__cpu_submit(struct sim_model *m, uint32_t e, uint64_t dur_ns, uint32_t what,
                uint64_t wake_ns)
{
    struct sim__ent *x = &m->ent[e];

    MT_ASSERT(x->state == ES_IDLE);
    x->what = what;
    x->dur_ns = dur_ns;
    x->gen++;
    x->pick_oldest = false;
    if (wake_ns > 0) {
        double ctx = m->p.ctx_cpu_us;

        x->wake_from_ns = m->eng.now_ns;

        /* cpu_pick 2: with no core idle the wakee is queued at once on a
         * running CPU (no halted vCPU to bring back): the same-CPU
         * hand-over's latency (at most) and CPU, as calibrate measures */
        if (m->p.cpu_pick == 2 && m->busy >= m->p.cores) {
            if (m->p.wake_busy_us > 0 && wake_ns > sim__us(m->p.wake_busy_us))
                wake_ns = sim__us(m->p.wake_busy_us);
            if (m->p.ctx_busy_cpu_us > 0)
                ctx = m->p.ctx_busy_cpu_us;
        }
        x->dur_ns += sim__us(ctx);
        x->state = ES_WAKING;
        sim__push(m, wake_ns, SIM_EV_WAKE, e, x->gen);
        return;
    }
    cpu_enqueue(m, e);
}

uint64_t
sim__cpu_preempt(struct sim_model *m, uint32_t e)
{
    struct sim__ent *x = &m->ent[e];
    uint64_t rem;

    MT_ASSERT(x->state == ES_RUNNING);
    rem = x->end_ns - m->eng.now_ns;
    m->busy_ns += x->dur_ns - rem;
    if (e < m->nth)
        m->res->client_cpu_ns += x->dur_ns - rem;
    x->gen++;
    x->state = ES_IDLE;
    if (x->on_core) {
        m->busy--;
        core_freed(m);
    }
    if (x->on_core && m->core_busy && x->core >= 0)
        m->core_busy[x->core] = 0;
    if (x->on_core)
        x->ran_ns = m->eng.now_ns;
    x->core = -1;
    x->on_core = false;
    cpu_fill(m);
    return rem;
}

/* Next burst of background source e, after a pause. */
static void
bg_schedule(struct sim_model *m, uint32_t e)
{
    sim__push(m, sim__us(mt_rng_exp(&m->rng_bg, m->bg_off_us)), SIM_EV_BG, e,
              0);
}

static void
bg_init(struct sim_model *m)
{
    double rho;

    if (m->nbg == 0)
        return;
    rho = m->p.bg_load / (double)m->nbg; /* per source, < 1 */
    m->bg_off_us = m->p.bg_job_us * (1.0 - rho) / rho;
    for (size_t i = 0; i < m->nbg; i++)
        bg_schedule(m, (uint32_t)(m->bg_base + i));
}

static void
on_cpu_done(struct sim_model *m, uint32_t e)
{
    struct sim__ent *x = &m->ent[e];

    x->state = ES_IDLE;
    m->busy_ns += x->dur_ns;
    if (e < m->nth)
        m->res->client_cpu_ns += x->dur_ns;
    m->holding =
        x->on_core ? (int32_t)e : -1; /* set only when it holds a core */
    m->hold_core = x->on_core ? x->core : -1;
    if (x->on_core)
        x->ran_ns = m->eng.now_ns;
    x->core = -1;
    x->on_core = false;
    if (e < m->nth)
        sim__client_job_done(m, e, x->what);
    else if (m->nbg > 0 && e >= m->bg_base)
        bg_schedule(m, e);
    else
        sim__net_job_done(m, e, x->what);
    if (m->holding == (int32_t)e) {
        m->holding = -1;
        m->busy--;
        core_freed(m);
        hold_core_free(m);
    }
    cpu_fill(m);
}

/* Round 11: client thread e, woken, finds a core idle and runs there at
 * once (cpu_enqueue starts it): its first job pays idle_wake_cpu_us, the
 * measured extra CPU of a wake-up onto an idle CPU (on this VM a halted
 * vCPU; mtrace calibrate --idle-ab).  A wake-up that has to queue behind a
 * running job lands on a busy CPU and does not pay it. */
static void
cpu_idle_wake(struct sim_model *m, uint32_t e)
{
    struct sim__ent *x = &m->ent[e];

    if (m->p.idle_wake_cpu_us <= 0 || e >= m->nth || !x->shared ||
        m->busy >= m->p.cores || m->nfree == 0)
        return; /* a job of zero CPU pays it too: it then takes the core */
    /* idle_wake_min_us < 0: the core must have been free before the
     * wake-up was issued (one freed since, by the waker's job, would in
     * Linux run the wakee queued on it without idling) */
    if (m->p.idle_wake_min_us < 0
            ? m->free_at[0] >= x->wake_from_ns
            : m->eng.now_ns - m->free_at[0] < sim__us(m->p.idle_wake_min_us))
        return;
    x->dur_ns += sim__us(m->p.idle_wake_cpu_us);
    x->pick_oldest = true;
    m->res->idle_wakes++;
}

/* cpu_pick 2 with wake_preempt: client thread e, woken while no core is
 * idle, preempts the job running on its previous core, as EEVDF's wake-up
 * preemption does for a task that slept (kernel/sched/fair.c
 * check_preempt_wakeup_fair: the wakee, eligible with an earlier virtual
 * deadline, is picked); the switched-out job keeps what it holds (a GIL
 * holder keeps the GIL), goes to the head of that core's queue with its
 * remaining CPU plus one switch (ctx_busy_cpu_us, else ctx_cpu_us) and
 * resumes when the core frees.  Returns false when it does not apply. */
static bool
cpu_wake_preempt(struct sim_model *m, uint32_t e)
{
    struct sim__ent *x = &m->ent[e], *y = NULL;
    int32_t k = x->last_core;
    uint64_t rem;
    uint32_t r = 0;

    if (m->p.cpu_pick != 2 || !m->p.wake_preempt || e >= m->nth || k < 0 ||
        !x->shared || x->dur_ns == 0 || m->busy < m->p.cores)
        return false;
    for (r = 0; r < m->nent && !y; r++)
        if (m->ent[r].on_core && m->ent[r].core == k &&
            m->ent[r].state == ES_RUNNING)
            y = &m->ent[r];
    if (y == NULL || y == x)
        return false;
    r--;
    rem = y->end_ns - m->eng.now_ns;
    m->busy_ns += y->dur_ns - rem;
    if (r < m->nth)
        m->res->client_cpu_ns += y->dur_ns - rem;
    y->gen++; /* cancels its CPU_DONE */
    y->on_core = false;
    y->core = -1;
    y->ran_ns = m->eng.now_ns;
    y->dur_ns = rem + sim__us(m->p.ctx_busy_cpu_us > 0 ? m->p.ctx_busy_cpu_us
                                                       : m->p.ctx_cpu_us);
    y->state = ES_QUEUED;
    y->rq_core = (int16_t)k;
    MT_ASSERT(m->rq_n < m->nent);
    m->rq_head = (m->rq_head + m->nent - 1) % m->nent; /* the queue's head */
    m->runq[m->rq_head] = r;
    m->rq_n++;
    m->busy--;
    core_freed(m);
    m->core_busy[k] = 0;
    m->res->wake_preempts++;
    cpu_start_on(m, e, k);
    cpu_fill(m); /* k again, if e was forced to drop the GIL instead */
    return true;
}

static void
model_dispatch(struct sim_model *m, const struct sim_ev *ev)
{
    switch (ev->kind) {
    case SIM_EV_CPU_DONE:
        if (ev->gen == m->ent[ev->id].gen && m->ent[ev->id].state == ES_RUNNING)
            on_cpu_done(m, ev->id);
        break;
    case SIM_EV_WAKE:
        if (ev->gen == m->ent[ev->id].gen &&
            m->ent[ev->id].state == ES_WAKING && !cpu_wake_preempt(m, ev->id)) {
            cpu_idle_wake(m, ev->id);
            cpu_enqueue(m, ev->id);
        }
        break;
    case SIM_EV_GIL_TIMEOUT:
        sim__gil_timeout(m, ev->id, ev->gen);
        break;
    case SIM_EV_THREAD_START:
        sim__client_thread_start(m, ev->id);
        break;
    case SIM_EV_GIL_MUTEX:
        sim__gil_mutex_free(m);
        break;
    case SIM_EV_BALANCE:
        if (m->eng.now_ns >= m->balance_ns)
            m->balance_ns = 0;
        cpu_fill(m);
        break;
    case SIM_EV_BG:
        sim__cpu_submit(m, ev->id,
                        sim__us(mt_rng_exp(&m->rng_bg, m->p.bg_job_us)), W_BG,
                        0);
        break;
    default:
        sim__net_event(m, ev);
        break;
    }
}

static int
model_alloc(struct sim_model *m)
{
    m->nth = (size_t)m->p.threads;
    m->nconn = m->nth < (size_t)m->p.pool_max ? m->nth : (size_t)m->p.pool_max;
    if ((size_t)m->p.pool_initial > m->nconn)
        m->nconn = (size_t)m->p.pool_initial;
    m->bg_base = m->nth + 3 * m->nconn;
    /* one source per core, each busy bg_load / cores of the time (< 1) */
    m->nbg = 0;
    if (m->p.bg_load > 0) {
        m->nbg = (size_t)m->p.cores;
        while ((double)m->nbg <= m->p.bg_load)
            m->nbg++;
    }
    m->nent = m->bg_base + m->nbg;
    m->ent = mt_calloc(m->nent, sizeof(*m->ent));
    m->runq = mt_calloc(m->nent, sizeof(*m->runq));
    if (m->ent == NULL || m->runq == NULL)
        return -ENOMEM;
    for (size_t e = 0; e < m->nent; e++) {
        m->ent[e].shared =
            e < m->nth || e >= m->nth + m->nconn || m->p.server_shares_cores;
        m->ent[e].core = m->ent[e].last_core = m->ent[e].rq_core = -1;
    }
    m->hold_core = -1;
    /* Only idle_wake reads when cores freed: without it the bookkeeping
     * (core_freed / core_taken on every job) is skipped. */
    if (m->p.idle_wake_cpu_us > 0) {
        m->free_at = mt_calloc((size_t)m->p.cores, sizeof(*m->free_at));
        if (m->free_at == NULL)
            return -ENOMEM;
        m->nfree = (size_t)m->p.cores; /* all free since 0 */
    }
    if (m->p.cpu_pick) {
        m->core_busy = mt_calloc((size_t)m->p.cores, 1);
        if (m->core_busy == NULL)
            return -ENOMEM;
    }
    m->lat_cap = m->nth * (size_t)m->p.calls;
    m->lat = mt_malloc((m->lat_cap ? m->lat_cap : 1) * sizeof(*m->lat));
    if (m->lat == NULL)
        return -ENOMEM;
    return 0;
}

static void
model_free(struct sim_model *m)
{
    sim_engine_free(&m->eng);
    mt_free(m->ent);
    mt_free(m->runq);
    mt_free(m->th);
    mt_free(m->conn);
    mt_free(m->idle);
    mt_free(m->pool_wait);
    mt_free(m->gil.q);
    mt_free(m->gil.mq);
    mt_free(m->core_busy);
    mt_free(m->free_at);
    mt_free(m->py_seen_ns);
    mt_free(m->py_seen_own_ns);
    mt_free(m->py_seen_at_ns);
    mt_free(m->py_busy_ns);
    mt_free(m->py_seen_busy_ns);
    mt_free(m->py_home_ns);
    mt_free(m->lat);
}

static int
model_loop(struct sim_model *m, struct mt_err *err)
{
    struct sim_ev ev;
    uint64_t budget = 2000000000ull; /* events: a runaway guard */

    while (m->rc == 0 && m->threads_done < m->nth &&
           sim_engine_pop(&m->eng, &ev)) {
        if (--budget == 0)
            return mt_err_set(err, MT_ELIMIT, 0,
                              "sim: event budget exhausted (model loop?)");
        model_dispatch(m, &ev);
    }
    if (m->rc < 0)
        return mt_err_set(err, m->rc, 0, "sim: %s", mt_strerror(m->rc));
    if (m->threads_done < m->nth)
        return mt_err_set(err, MT_ELIMIT, 0,
                          "sim: deadlock: %zu of %zu threads never finished",
                          m->nth - m->threads_done, m->nth);
    return 0;
}

/* cpu_slice_us x (1 + ilog2(min(cores, 8))), as Linux scales its base slice
 * (SCHED_TUNABLESCALING_LOG); 0 turns slicing off. */
static uint64_t
slice_ns(const struct sim_params *p)
{
    int n = p->cores < 8 ? p->cores : 8, f = 1;

    if (p->cpu_slice_us <= 0)
        return UINT64_MAX;
    while (n > 1) {
        n >>= 1;
        f++;
    }
    return sim__us(p->cpu_slice_us * f);
}

int
sim_model_run(const struct sim_params *p, struct sim_result *res,
              struct mt_err *err)
{
    struct sim_model *m;
    int rc;

    memset(res, 0, sizeof(*res));
    m = mt_calloc(1, sizeof(*m));
    if (m == NULL)
        return mt_err_set(err, -ENOMEM, 0, "sim: out of memory");
    m->p = *p;
    m->res = res;
    m->holding = -1;
    m->slice_ns = slice_ns(p);
    mt_rng_split(&m->rng_py, (uint64_t)p->seed, 1);
    mt_rng_split(&m->rng_wake, (uint64_t)p->seed, 2);
    mt_rng_split(&m->rng_srv, (uint64_t)p->seed, 3);
    mt_rng_split(&m->rng_bg, (uint64_t)p->seed, 4);
    mt_rng_split(&m->rng_pre, (uint64_t)p->seed, 5);
    mt_rng_split(&m->rng_mx, (uint64_t)p->seed, 6);
    rc = sim_engine_init(&m->eng, 1u << 24);
    if (rc == 0)
        rc = model_alloc(m);
    if (rc == 0)
        rc = sim__gil_init(m);
    if (rc == 0)
        rc = sim__client_init(m);
    if (rc == 0)
        bg_init(m);
    if (rc < 0) {
        mt_err_set(err, rc, 0, "sim: out of memory");
        goto out;
    }
    rc = model_loop(m, err);
    if (rc < 0)
        goto out;
    res->lat_ns = m->lat;
    res->n = m->lat_n;
    m->lat = NULL;
    res->end_ns = m->eng.now_ns;
    res->events = m->eng.popped;
    res->cpu_util = res->end_ns ? (double)m->busy_ns /
                                      ((double)m->p.cores * (double)res->end_ns)
                                : 0;
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
