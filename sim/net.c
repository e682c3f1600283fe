/*
 * net.c -- what lies between the client's socket and the reply: loopback
 * transit, an optional proxy, and the server.
 *
 * Server: each connection is served in order (one request at a time, as
 * mongod's thread-per-connection and mtrace replay's per-connection state
 * do).  A service time S is drawn from the trace's request->reply latencies
 * (or a lognormal); server_cpu_frac * S (or min(S, server_cpu_us) when
 * that is set) runs on a core after the server thread's wake-up, the rest is
 * latency without CPU (e.g. mtrace replay's delay).
 *
 * Proxy, deadline mode (mtrace replay, DESIGN.md rule 3): a reply is
 * released at max(arrival, request_read_at + delay) by a timer; replies
 * are independent.  proxy_inline = 1 models mtrace replay as the server
 * itself: no extra hop, the deadline counts from the server's read, and
 * the timer's write (proxy_cpu_us after a wake-up) sends the reply.
 *
 * Proxy, serial-go mode (seed 000's mongoproxy): per connection, the reply
 * goroutine reads a reply, calls time.Sleep(delay), writes it, and only
 * then reads the next.  Go timers are run by the scheduler: whenever the
 * process handles an event (checkTimers in schedule/findRunnable) and when
 * the netpoller's epoll_wait times out.  runtime/netpoll_epoll.go netpoll()
 * turns the time to the next timer into a millisecond timeout: 0 < d < 1 ms
 * -> 1 ms, otherwise floor(d / 1 ms); the kernel then adds up to
 * timer_slack_ns (50 us) to the epoll_wait hrtimer (fs/select.c
 * select_estimate_accuracy).
 */
#include "model.h"
#include "net.h"

static uint64_t
server_sample_ns(struct sim_model *m)
{
    const struct sim_params *p = &m->p;

    if (p->server_samples_n > 0)
        return sim__us(p->server_samples_us[mt_rng_below(&m->rng_srv,
                                                         p->server_samples_n)]);
    return sim__us(mt_rng_lognormal(&m->rng_srv, p->server_us, p->server_cv));
}

/* How a server or proxy job starts: it continues (was running), it was
 * blocked (a wake-up latency), or a send woke it onto the sender's core
 * (no latency, one context switch of CPU). */
enum start_how { START_CONT = 0, START_WOKEN, START_SYNC };

static uint64_t
start_wake_ns(struct sim_model *m, int how)
{
    return how == START_WOKEN ? sim__wake_ns(m, m->p.wake_us) : 0;
}

/* The CPU of one switch at a preempted send (the peer in on the sender's
 * core, the sender back): ctx_cpu_us, or with send_switch_busy (round 15)
 * the measured switch on a running CPU, ctx_busy_cpu_us.  ctx_cpu_us is a
 * ping-pong between two processes left where the scheduler puts them, so
 * on a VM whose idle vCPUs halt it holds the halted vCPU's wake-up; the
 * switches of a preemption happen on a CPU that is running. */
static double
sync_ctx_us(const struct sim_model *m)
{
    return m->p.send_switch_busy && m->p.ctx_busy_cpu_us > 0
               ? m->p.ctx_busy_cpu_us
               : m->p.ctx_cpu_us;
}

static uint64_t
start_ctx_ns(struct sim_model *m, int how)
{
    return how == START_SYNC ? sim__us(sync_ctx_us(m)) : 0;
}

/* Round 14: a request->reply sample taken on the wire (a sniffed or
 * proxied trace) runs from the request's packet to the reply's, so it
 * already holds the server's wake-up latency and the CPU of its switch-in;
 * with server_wake_in_trace the job adds neither (a woken server starts
 * its sample at once, as one that continues does). */
static int
server_how(const struct sim_model *m, int how)
{
    if (m->p.server_wake_in_trace && m->p.server_samples_n > 0)
        return START_CONT;
    return how;
}

static void
server_start(struct sim_model *m, uint32_t c, int how)
{
    struct sim__conn *cn = &m->conn[c];
    uint64_t s = server_sample_ns(m);
    uint64_t cpu = (uint64_t)((double)s * m->p.server_cpu_frac);

    how = server_how(m, how);

    if (m->p.server_cpu_us > 0) /* a fixed CPU cost; the rest is waiting */
        cpu = s < sim__us(m->p.server_cpu_us) ? s : sim__us(m->p.server_cpu_us);

    cn->srv_busy = true;
    cn->srv_lat_ns = s - cpu;
    sim__cpu_submit(m, sim__ent_srv(m, c), cpu + start_ctx_ns(m, how),
                    W_SRV_CPU, start_wake_ns(m, how));
}

void
sim__net_send_request(struct sim_model *m, uint32_t c)
{
    uint64_t net = sim__us(m->p.net_us);

    if (m->p.proxy == SIM_PROXY_NONE || m->p.proxy_inline)
        sim__push(m, net, SIM_EV_AT_SERVER, c, 0);
    else
        sim__push(m, net, SIM_EV_AT_PROXY_REQ, c, 0);
}

/* ---- serial-go timers ---- */

static void
go_fire_timers(struct sim_model *m)
{
    for (size_t c = 0; c < m->nconn; c++) {
        struct sim__conn *cn = &m->conn[c];
        if (cn->timer_armed && cn->timer_at_ns <= m->eng.now_ns) {
            cn->timer_armed = false;
            sim__cpu_submit(m, sim__ent_down(m, c),
                            sim__us(m->p.proxy_cpu_us / 2), W_DOWN_SENT,
                            sim__wake_ns(m, m->p.wake_us));
        }
    }
}

/* The netpoller goes (back) to sleep: its next wake-up. */
static void
go_rearm(struct sim_model *m)
{
    uint64_t next = UINT64_MAX, d, waitms;

    for (size_t c = 0; c < m->nconn; c++)
        if (m->conn[c].timer_armed && m->conn[c].timer_at_ns < next)
            next = m->conn[c].timer_at_ns;
    m->go_poll_gen++;
    if (next == UINT64_MAX)
        return;
    d = next > m->eng.now_ns ? next - m->eng.now_ns : 0;
    waitms = d == 0 ? 0 : d < 1000000 ? 1 : d / 1000000;
    sim__push(
        m, waitms == 0 ? 0 : waitms * 1000000 + sim__us(m->p.go_timer_slack_us),
        SIM_EV_GO_POLL, 0, m->go_poll_gen);
}

static void
go_event(struct sim_model *m)
{
    if (m->p.proxy != SIM_PROXY_SERIAL_GO)
        return;
    go_fire_timers(m);
    go_rearm(m);
}

static void
down_read_next(struct sim_model *m, uint32_t c, bool blocked)
{
    struct sim__conn *cn = &m->conn[c];

    cn->down_pending--;
    cn->down_busy = true;
    sim__cpu_submit(m, sim__ent_down(m, c), sim__us(m->p.proxy_cpu_us / 2),
                    W_DOWN_READ, blocked ? sim__wake_ns(m, m->p.wake_us) : 0);
}

static void
reply_at_proxy(struct sim_model *m, uint32_t c)
{
    struct sim__conn *cn = &m->conn[c];
    uint64_t now = m->eng.now_ns, due;

    if (m->p.proxy == SIM_PROXY_DEADLINE) {
        due = cn->req_at_proxy_ns + sim__us(m->p.proxy_delay_ms * 1000.0);
        sim__push(m, (due > now ? due - now : 0) + sim__us(m->p.proxy_timer_us),
                  SIM_EV_PROXY_RELEASE, c, 0);
        return;
    }
    cn->down_pending++;
    if (!cn->down_busy)
        down_read_next(m, c, true);
    go_event(m);
}

static void
proxy_up_start(struct sim_model *m, uint32_t c, int how)
{
    m->conn[c].req_at_proxy_ns = m->eng.now_ns;
    sim__cpu_submit(m, sim__ent_up(m, c),
                    sim__us(m->p.proxy_cpu_us) + start_ctx_ns(m, how),
                    W_UP_SENT, start_wake_ns(m, how));
    go_event(m);
}

bool
sim__net_send_sync(struct sim_model *m, uint32_t c, uint32_t t)
{
    struct sim__conn *cn = &m->conn[c];
    bool direct = m->p.proxy == SIM_PROXY_NONE || m->p.proxy_inline;
    uint32_t e = direct ? sim__ent_srv(m, c) : sim__ent_up(m, c);

    if (m->ent[e].state != ES_IDLE || !m->ent[e].shared ||
        (direct && cn->srv_busy) || cn->preempted >= 0)
        return false;
    cn->preempted = (int32_t)t;
    m->res->send_preempts++;
    if (m->holding == (int32_t)t) /* the peer runs on t's core */
        m->holding = (int32_t)e;
    if (!direct) {
        proxy_up_start(m, c, START_SYNC);
        return true;
    }
    if (m->p.proxy_inline)
        cn->req_at_proxy_ns = m->eng.now_ns;
    cn->srv_pending++;
    server_start(m, c, START_SYNC);
    return true;
}

/* The peer's job that preempted a sender on connection c (entity e) has
 * ended: the sender runs again, on the core e leaves. */
static void
resume_sender(struct sim_model *m, uint32_t c, uint32_t e)
{
    int32_t t = m->conn[c].preempted;

    if (t < 0)
        return;
    m->conn[c].preempted = -1;
    if (m->holding == (int32_t)e)
        m->holding = t;
    sim__cpu_submit(m, (uint32_t)t, sim__us(sync_ctx_us(m)), W_PREEMPT_BACK, 0);
}

void
sim__net_event(struct sim_model *m, const struct sim_ev *ev)
{
    uint32_t c = ev->id;
    struct sim__conn *cn = &m->conn[c];

    switch (ev->kind) {
    case SIM_EV_AT_PROXY_REQ:
        proxy_up_start(m, c, START_WOKEN);
        break;
    case SIM_EV_AT_SERVER:
        if (m->p.proxy_inline)
            cn->req_at_proxy_ns = m->eng.now_ns;
        cn->srv_pending++;
        if (!cn->srv_busy)
            server_start(m, c, START_WOKEN);
        break;
    case SIM_EV_SERVER_LAT:
        cn->srv_pending--;
        if (m->p.proxy == SIM_PROXY_NONE)
            sim__push(m, sim__us(m->p.net_us), SIM_EV_AT_CLIENT, c, 0);
        else if (m->p.proxy_inline)
            reply_at_proxy(m, c);
        else
            sim__push(m, sim__us(m->p.net_us), SIM_EV_AT_PROXY_REP, c, 0);
        if (cn->srv_pending > 0)
            server_start(m, c, START_CONT);
        else
            cn->srv_busy = false;
        break;
    case SIM_EV_AT_PROXY_REP:
        reply_at_proxy(m, c);
        break;
    case SIM_EV_PROXY_RELEASE:
        sim__cpu_submit(m, sim__ent_down(m, c), sim__us(m->p.proxy_cpu_us),
                        W_DOWN_SENT, sim__wake_ns(m, m->p.wake_us));
        break;
    case SIM_EV_GO_POLL:
        if (ev->gen == m->go_poll_gen)
            go_event(m);
        break;
    case SIM_EV_AT_CLIENT:
        sim__client_reply(m, c);
        break;
    default:
        MT_ASSERT(0);
    }
}

void
sim__net_job_done(struct sim_model *m, uint32_t e, uint32_t what)
{
    uint32_t c;

    switch (what) {
    case W_SRV_CPU:
        c = e - sim__ent_srv(m, 0);
        sim__push(m, m->conn[c].srv_lat_ns, SIM_EV_SERVER_LAT, c, 0);
        resume_sender(m, c, e);
        break;
    case W_UP_SENT:
        c = e - sim__ent_up(m, 0);
        sim__push(m, sim__us(m->p.net_us), SIM_EV_AT_SERVER, c, 0);
        go_event(m);
        resume_sender(m, c, e);
        break;
    case W_DOWN_READ: /* serial-go: time.Sleep(delay) */
        c = e - sim__ent_down(m, 0);
        m->conn[c].timer_armed = true;
        m->conn[c].timer_at_ns =
            m->eng.now_ns + sim__us(m->p.proxy_delay_ms * 1000.0);
        go_event(m);
        break;
    case W_DOWN_SENT:
        c = e - sim__ent_down(m, 0);
        sim__push(m, sim__us(m->p.net_us), SIM_EV_AT_CLIENT, c, 0);
        if (m->p.proxy == SIM_PROXY_SERIAL_GO) {
            m->conn[c].down_busy = false;
            if (m->conn[c].down_pending > 0)
                down_read_next(m, c, false);
            go_event(m);
        }
        break;
    default:
        MT_ASSERT(0);
    }
}
