/*
 * params.c -- the parameter table, defaults and value parsing.  Sources of
 * the defaults are in docs/sim-model.md ("Parameters").
 */
#include "params.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P(key, type, field, lo, hi, unit, help)                                \
    {                                                                          \
        key, type, offsetof(struct sim_params, field), lo, hi, unit, help      \
    }

const struct sim_param_desc sim_param_table[] = {
    P("name", SIM_P_STR, name, 0, 0, "", "scenario label"),
    P("runtime", SIM_P_RUNTIME, runtime, 0, 1, "", "gil | free-threaded"),
    P("threads", SIM_P_INT, threads, 1, 4096, "", "client threads"),
    P("calls", SIM_P_INT, calls, 1, 10000000, "", "calls per thread"),
    P("exclude_first", SIM_P_INT, exclude_first, 0, 1000000, "",
      "first calls of each thread left out of the statistics"),
    P("releases", SIM_P_INT, releases, 2, 16, "",
      "GIL releases per call (pymongo 3.11: 3, pymongo 4.x: 5)"),
    P("py_call_us", SIM_P_DBL, py_call_us, 0, 1e6, "us",
      "Python CPU per call with the GIL held"),
    P("py_cv", SIM_P_DBL, py_cv, 0, 10, "",
      "coefficient of variation of a Python segment"),
    P("py_pre_frac", SIM_P_DBL, py_pre_frac, 0, 1, "",
      "share of py_call_us before the send"),
    P("py_post_frac", SIM_P_DBL, py_post_frac, 0, 1, "",
      "share after the last receive"),
    P("py_loop_us", SIM_P_DBL, py_loop_us, 0, 1e6, "us",
      "loop work between timed calls"),
    P("think_us", SIM_P_DBL, think_us, 0, 1e9, "us",
      "mean exponential pause between calls, GIL released (0: none)"),
    P("ft_slowdown", SIM_P_DBL, ft_slowdown, 0.1, 10, "x",
      "free-threaded: factor applied to Python CPU"),
    P("sys_us", SIM_P_DBL, sys_us, 0, 1e6, "us",
      "CPU of one GIL-released socket syscall"),
    P("switch_interval_us", SIM_P_DBL, switch_interval_us, 1, 1e7, "us",
      "GIL switch interval (sys.getswitchinterval)"),
    P("gil_handoff_us", SIM_P_DBL, gil_handoff_us, 0, 1e6, "us",
      "drop_gil signal to the woken waiter running"),
    P("gil_switch_stretch", SIM_P_DBL, gil_switch_stretch, 0, 10, "x",
      "a Python segment run after another thread held the GIL takes "
      "(1 + this) times its CPU"),
    P("gil_xcore_cpu_us", SIM_P_DBL, gil_xcore_cpu_us, 0, 1e6, "us",
      "extra CPU of a Python segment (GIL held) when threads of other home "
      "cores (thread index % cores) ran a call's Python since this core "
      "last did; pro rata below that: the working set's move"),
    P("py_cold_cpu_us", SIM_P_DBL, py_cold_cpu_us, 0, 1e6, "us",
      "extra CPU per call when the home core ran no Python of the client "
      "for >= py_cold_hi_us since it last ran that segment (cold caches); "
      "pro rata from py_cold_lo_us; not added to gil_xcore_cpu_us (max)"),
    P("py_cold_lo_us", SIM_P_DBL, py_cold_lo_us, 0, 1e9, "us",
      "time without the client's Python at which the cold charge starts"),
    P("py_cold_hi_us", SIM_P_DBL, py_cold_hi_us, 0, 1e9, "us",
      "time without the client's Python at which the charge is whole"),
    P("gil_wake_cpu_us", SIM_P_DBL, gil_wake_cpu_us, 0, 1e6, "us",
      "CPU of one block/wake cycle of a GIL waiter (futex, gil->mutex); "
      "who pays it: gil_wake_cpu_waiter"),
    P("gil_wake_cpu_waiter", SIM_P_INT, gil_wake_cpu_waiter, 0, 1, "",
      "0: the next GIL taker pays gil_wake_cpu_us with the GIL held; 1: a "
      "woken waiter that finds the GIL taken pays it on its own core"),
    P("send_preempt_p", SIM_P_DBL, send_preempt_p, 0, 1, "",
      "share of sends whose woken peer (server or proxy) runs first on the "
      "sender's core, the sender off-CPU with the GIL released, when "
      "another core is idle"),
    P("send_preempt_busy_p", SIM_P_DBL, send_preempt_busy_p, 0, 1, "",
      "the same when every other core is busy (the wake-up lands on the "
      "sender's core)"),
    P("gil_mutex_signal_us", SIM_P_DBL, gil_mutex_signal_us, 0, 1e6, "us",
      "drop_gil holds gil->mutex this long while it signals a waiter (its "
      "CPU, before the syscall); takers and the woken waiter block on the "
      "mutex meanwhile; the signalled waiter then wakes after wake_us, not "
      "gil_handoff_us; 0: off"),
    P("cpu_pick", SIM_P_INT, cpu_pick, 0, 2, "",
      "1: cores have identities: a job takes the core it is handed (the "
      "one a woken peer preempts, the one a continuing thread holds), else "
      "its last core if free, else the lowest free one; the working-set "
      "terms go by that core; 0: by home core (thread index % cores); 2: "
      "1 plus per-core run queues: with no core free a job queues on its "
      "last core and an idle core pulls it only once it is no longer "
      "cache-hot (sched_migration_cost_us)"),
    P("sched_migration_cost_us", SIM_P_DBL, sched_migration_cost_us, 0, 1e7,
      "us",
      "cpu_pick 2: a queued job whose entity last ran on a core less than "
      "this long ago stays on its core's queue (fair.c task_hot, "
      "newidle_balance)"),
    P("wake_busy_us", SIM_P_DBL, wake_busy_us, 0, 1e6, "us",
      "cpu_pick 2: wake-up latency when no core is idle at the wake-up "
      "(the wakee is queued at once, no IPI to a halted CPU); 0: wake_us"),
    P("ctx_busy_cpu_us", SIM_P_DBL, ctx_busy_cpu_us, 0, 1e6, "us",
      "cpu_pick 2: CPU of a wake-up when no core is idle at the wake-up, "
      "instead of ctx_cpu_us; 0: ctx_cpu_us"),
    P("wake_preempt", SIM_P_INT, wake_preempt, 0, 1, "",
      "cpu_pick 2: a client thread woken while no core is idle switches out "
      "the job running on its previous core (EEVDF wake-up preemption); "
      "that job (a GIL holder keeps the GIL) resumes first when the core "
      "frees; 0: off"),
    P("gil_wake_idle_us", SIM_P_DBL, gil_wake_idle_us, 0, 1e6, "us",
      "cpu_pick 2: mean latency of a GIL waiter woken by another thread "
      "(gil->cond signal, gil->mutex unlock) while a core is idle: it lands "
      "on the idle CPU (select_idle_sibling); 0: the usual draw"),
    P("idle_wake_cpu_us", SIM_P_DBL, idle_wake_cpu_us, 0, 1e6, "us",
      "extra CPU of a client thread's first job after a wake-up that finds "
      "a core idle (it runs there: an idle period, on a VM a halted vCPU); "
      "a wake-up that queues behind a running job does not pay it; 0: off"),
    P("idle_wake_min_us", SIM_P_DBL, idle_wake_min_us, -1, 1e6, "us",
      "idle_wake_cpu_us is paid only when a core has been free at least "
      "this long (the one free longest; the wakee takes it); -1: free since "
      "before the wake-up was issued"),
    P("gil_mutex_relock_p", SIM_P_DBL, gil_mutex_relock_p, 0, 1, "",
      "with gil_mutex_signal_us: share of signalled GIL waiters that block "
      "re-locking gil->mutex (woken wake_us after the signal's hold); 0: "
      "they block when their wake_us draw ends inside the hold"),
    P("gil_mutex_cs_us", SIM_P_DBL, gil_mutex_cs_us, 0, 1e6, "us",
      "with gil_mutex_signal_us: take_gil's first section (check, _ready or "
      "the cond wait's entry) and a woken waiter's re-check hold gil->mutex "
      "this long (a window); others block on it meanwhile; 0: off"),
    P("gil_cond_quiesce", SIM_P_INT, gil_cond_quiesce, 0, 1, "",
      "with gil_mutex_signal_us: 1: a signal that finds the condvar's group "
      "G1 exhausted switches groups (glibc "
      "__condvar_quiesce_and_switch_g1) and, while a waiter signalled "
      "earlier has not run yet, the dropper blocks with gil->mutex held "
      "until it has, then signals; 0: off"),
    P("send_affine_waiter", SIM_P_INT, send_affine_waiter, 0, 1, "",
      "1: a send is not preempted while the GIL waiter its drop_gil woke "
      "is still waking or queued and has the sender's home core (fair.c "
      "wake_affine_idle: sync && nr_running == 1 fails); 0: off"),
    P("send_switch_busy", SIM_P_INT, send_switch_busy, 0, 1, "",
      "1: the two switches of a preempted send (the peer in, the sender "
      "back) cost ctx_busy_cpu_us, a switch on a running CPU, instead of "
      "ctx_cpu_us (round 15); no effect while ctx_busy_cpu_us is 0"),
    P("send_preempt_cpu_us", SIM_P_DBL, send_preempt_cpu_us, 0, 1e6, "us",
      "client CPU a call does not pay when its send is preempted (the reply "
      "is there at the recv: no block, no wake-up on a halted vCPU), taken "
      "off its next Python; 0: off (round 15)"),
    P("wake_us", SIM_P_DBL, wake_us, 0, 1e6, "us",
      "wake-up latency of a blocked thread"),
    P("wake_cv", SIM_P_DBL, wake_cv, 0, 10, "",
      "coefficient of variation of wake-ups"),
    P("ctx_cpu_us", SIM_P_DBL, ctx_cpu_us, 0, 1e6, "us",
      "CPU cost of one wake-up"),
    P("cores", SIM_P_INT, cores, 1, 4096, "",
      "CPU cores shared by client, server, proxy"),
    P("bg_load", SIM_P_DBL, bg_load, 0, 4096, "cores",
      "other processes: mean number of the cores they keep busy (0: none)"),
    P("bg_job_us", SIM_P_DBL, bg_job_us, 1, 1e7, "us",
      "other processes: mean length of one CPU burst on a core"),
    P("cpu_slice_us", SIM_P_DBL, cpu_slice_us, 0, 1e7, "us",
      "scheduler base slice (x 1+log2(min(cores,8))): an entity that keeps "
      "its core this long gives it to a queued one (0: never)"),
    P("thread_start_us", SIM_P_DBL, thread_start_us, 0, 1e6, "us",
      "interval between Thread.start() calls"),
    P("pool_max", SIM_P_INT, pool_max, 1, 100000, "",
      "connection pool maxPoolSize"),
    P("pool_initial", SIM_P_INT, pool_initial, 0, 100000, "",
      "connections open at start"),
    P("connect_us", SIM_P_DBL, connect_us, 0, 1e6, "us",
      "CPU of connect() for a new connection"),
    P("server_us", SIM_P_DBL, server_us, 0, 1e7, "us",
      "server service time mean (ignored when a trace gives samples)"),
    P("server_cv", SIM_P_DBL, server_cv, 0, 10, "",
      "coefficient of variation of service"),
    P("server_cpu_frac", SIM_P_DBL, server_cpu_frac, 0, 1, "",
      "share of the service time that uses a core"),
    P("server_cpu_us", SIM_P_DBL, server_cpu_us, 0, 1e7, "us",
      "if > 0: server CPU per request = min(service, this), the rest waits"),
    P("server_wake_in_trace", SIM_P_INT, server_wake_in_trace, 0, 1, "",
      "1: a trace's request->reply samples hold the server's wake-up and "
      "switch-in, which its jobs then do not add (wake_us, ctx_cpu_us)"),
    P("server_shares_cores", SIM_P_INT, server_shares_cores, 0, 1, "",
      "1: the server runs on the client's cores"),
    P("net_us", SIM_P_DBL, net_us, 0, 1e6, "us",
      "one-way transit between processes"),
    P("proxy", SIM_P_PROXY, proxy, 0, 2, "", "none | deadline | serial-go"),
    P("proxy_inline", SIM_P_INT, proxy_inline, 0, 1, "",
      "1: deadline delay applied by the server itself (mtrace replay)"),
    P("proxy_delay_ms", SIM_P_DBL, proxy_delay_ms, 0, 1e5, "ms",
      "delay added to each reply"),
    P("proxy_cpu_us", SIM_P_DBL, proxy_cpu_us, 0, 1e6, "us",
      "proxy CPU per forwarded message"),
    P("proxy_timer_us", SIM_P_DBL, proxy_timer_us, 0, 1e6, "us",
      "deadline mode: extra latency of the release timer"),
    P("go_timer_slack_us", SIM_P_DBL, go_timer_slack_us, 0, 1e6, "us",
      "serial-go: slack of the netpoller's epoll_wait timeout"),
    P("seed", SIM_P_INT, seed, 0, 9.2e18, "", "the one seed"),
};
const size_t sim_param_count =
    sizeof(sim_param_table) / sizeof(sim_param_table[0]);

static const char *const origin_names[SIM_OR__COUNT] = {
    "constant",   "assumption", "measured", "trace",
    "calibrated", "scenario",   "cli"};

const char *
sim_origin_name(int origin)
{
    return origin >= 0 && origin < SIM_OR__COUNT ? origin_names[origin] : "?";
}

int
sim_origin_parse(const char *s)
{
    for (int i = 0; i < SIM_OR__COUNT; i++)
        if (strcmp(s, origin_names[i]) == 0)
            return i;
    return -1;
}

const char *
sim_runtime_name(int rt)
{
    return rt == SIM_RT_FREE ? "free-threaded" : "gil";
}

const char *
sim_proxy_name(int proxy)
{
    return proxy == SIM_PROXY_DEADLINE    ? "deadline"
           : proxy == SIM_PROXY_SERIAL_GO ? "serial-go"
                                          : "none";
}

int
sim_params_find(const char *key)
{
    for (size_t i = 0; i < sim_param_count; i++)
        if (strcmp(sim_param_table[i].key, key) == 0)
            return (int)i;
    return -1;
}

static void
set_default(struct sim_params *p, const char *key, const char *val, int origin,
            const char *note)
{
    int rc = sim_params_set(p, key, val, origin, note, NULL);
    MT_ASSERT(rc == 0);
}

void
sim_params_default(struct sim_params *p)
{
    memset(p, 0, sizeof(*p));
    MT_ASSERT(sim_param_count <= SIM_PARAMS_N);
    set_default(p, "name", "scenario", SIM_OR_SCENARIO, "label");
    set_default(p, "runtime", "gil", SIM_OR_SCENARIO, "setup");
    set_default(p, "threads", "1", SIM_OR_SCENARIO, "setup");
    set_default(p, "calls", "100", SIM_OR_SCENARIO, "setup");
    set_default(p, "exclude_first", "0", SIM_OR_SCENARIO, "setup");
    set_default(
        p, "releases", "3", SIM_OR_CONSTANT,
        "pymongo 3.11 network.py: sendall, recv_into(header), recv_into(body)");
    set_default(p, "py_call_us", "150", SIM_OR_ASSUMPTION,
                "placeholder until calibrated from a sequential run");
    set_default(p, "py_cv", "0.05", SIM_OR_ASSUMPTION,
                "placeholder until calibrated from the sequential stdev");
    set_default(
        p, "py_pre_frac", "0.5", SIM_OR_ASSUMPTION,
        "find_one: cursor setup, command and BSON encode precede sendall");
    set_default(
        p, "py_post_frac", "0.4", SIM_OR_ASSUMPTION,
        "reply unpack, BSON decode, cursor and pool check-in follow recv");
    set_default(p, "py_loop_us", "1", SIM_OR_ASSUMPTION,
                "perf_counter, list append, loop: ~1 us of bytecode");
    set_default(p, "think_us", "0", SIM_OR_SCENARIO,
                "seed 000's loop has no pause");
    set_default(p, "ft_slowdown", "1", SIM_OR_ASSUMPTION,
                "1 unless a free-threaded Python was measured");
    set_default(p, "sys_us", "4", SIM_OR_ASSUMPTION,
                "small loopback send/recv");
    set_default(p, "switch_interval_us", "5000", SIM_OR_CONSTANT,
                "CPython default sys.getswitchinterval() = 0.005 s");
    set_default(p, "gil_handoff_us", "15", SIM_OR_ASSUMPTION,
                "placeholder until measured by mtrace calibrate (a "
                "signalled GIL waiter's latency: cold 2-thread hand-off)");
    set_default(p, "gil_switch_stretch", "0", SIM_OR_ASSUMPTION,
                "0 until measured by mtrace calibrate");
    set_default(p, "gil_xcore_cpu_us", "0", SIM_OR_ASSUMPTION,
                "0 until measured (mtrace calibrate, or the sequential run "
                "with alternating cores)");
    set_default(p, "py_cold_cpu_us", "0", SIM_OR_ASSUMPTION,
                "0 until measured (sequential runs of the same client with "
                "a short and a long wait: sim/validate_report.py)");
    set_default(p, "py_cold_lo_us", "0", SIM_OR_ASSUMPTION,
                "with py_cold_cpu_us");
    set_default(p, "py_cold_hi_us", "0", SIM_OR_ASSUMPTION,
                "with py_cold_cpu_us");
    set_default(p, "gil_wake_cpu_us", "0", SIM_OR_ASSUMPTION,
                "0 until measured by mtrace calibrate");
    set_default(p, "gil_wake_cpu_waiter", "1", SIM_OR_ASSUMPTION,
                "1: the futile waiter pays it on its own thread, where "
                "ceval_gil.c take_gil runs the cycle (docs/sim-model.md)");
    set_default(p, "send_preempt_p", "0", SIM_OR_ASSUMPTION,
                "an idle core takes the peer woken by a send "
                "(kernel/sched/fair.c select_idle_sibling); until measured");
    set_default(p, "send_preempt_busy_p", "1", SIM_OR_ASSUMPTION,
                "no idle core: a sync wake-up lands on the waker's core "
                "(fair.c wake_affine_idle) and preempts it; until measured");
    set_default(p, "gil_mutex_signal_us", "0", SIM_OR_ASSUMPTION,
                "off: gil->mutex not modelled (docs/sim-model.md, round 9); "
                "mtrace calibrate measures it");
    set_default(p, "cpu_pick", "0", SIM_OR_ASSUMPTION,
                "0: home cores (rounds 5-8); 1 is round 9's option, 2 "
                "round 10's (docs/sim-model.md)");
    set_default(p, "sched_migration_cost_us", "500", SIM_OR_CONSTANT,
                "Linux sysctl_sched_migration_cost 0.5 ms "
                "(kernel/sched/fair.c task_hot, newidle_balance)");
    set_default(p, "wake_busy_us", "0", SIM_OR_ASSUMPTION,
                "0: wake_us for every wake-up; mtrace calibrate measures "
                "the same-CPU hand-over");
    set_default(p, "ctx_busy_cpu_us", "0", SIM_OR_ASSUMPTION,
                "0: ctx_cpu_us for every wake-up; mtrace calibrate measures "
                "the same-CPU hand-over's CPU");
    set_default(p, "wake_preempt", "0", SIM_OR_ASSUMPTION,
                "off (round 10's option, docs/sim-model.md)");
    set_default(p, "gil_wake_idle_us", "0", SIM_OR_ASSUMPTION,
                "0: wake_us (or gil_handoff_us); mtrace calibrate measures "
                "the cross-CPU hand-over onto an idle CPU");
    set_default(p, "idle_wake_cpu_us", "0", SIM_OR_ASSUMPTION,
                "0 (off) until measured by mtrace calibrate --idle-ab");
    set_default(p, "idle_wake_min_us", "0", SIM_OR_ASSUMPTION,
                "0: any idle core (haltpoll with guest_halt_poll_ns 0 halts "
                "an idle vCPU at once)");
    set_default(p, "gil_mutex_relock_p", "0", SIM_OR_ASSUMPTION,
                "0: by timing; mtrace calibrate measures it");
    set_default(p, "gil_mutex_cs_us", "0", SIM_OR_ASSUMPTION,
                "off (round 13's option, docs/sim-model.md): the sections "
                "are user-space only (ceval_gil.c take_gil)");
    set_default(p, "gil_cond_quiesce", "1", SIM_OR_CONSTANT,
                "glibc 2.36 pthread_cond_signal: a signal that finds G1 "
                "exhausted waits for the old group's woken waiters "
                "(__condvar_quiesce_and_switch_g1), gil->mutex held "
                "(round 13)");
    set_default(p, "send_affine_waiter", "0", SIM_OR_ASSUMPTION,
                "off: kernel/sched/fair.c wake_affine_idle's nr_running == 1 "
                "rule, experimental (docs/sim-model.md, round 8)");
    set_default(p, "send_switch_busy", "0", SIM_OR_ASSUMPTION,
                "off: a preempted send's switches cost ctx_cpu_us (round "
                "15's option, docs/sim-model.md)");
    set_default(p, "send_preempt_cpu_us", "0", SIM_OR_ASSUMPTION,
                "0 (off): a call whose send is preempted pays the same "
                "client CPU (round 15's option, docs/sim-model.md)");
    set_default(p, "wake_us", "10", SIM_OR_ASSUMPTION,
                "placeholder until measured by mtrace calibrate");
    set_default(p, "wake_cv", "0.5", SIM_OR_ASSUMPTION, "placeholder");
    set_default(p, "ctx_cpu_us", "2", SIM_OR_ASSUMPTION,
                "a Linux context switch costs a few microseconds of CPU");
    set_default(p, "cores", "2", SIM_OR_ASSUMPTION,
                "placeholder until measured");
    set_default(p, "bg_load", "0", SIM_OR_ASSUMPTION,
                "0: no other process competes for the cores");
    set_default(p, "bg_job_us", "750", SIM_OR_ASSUMPTION,
                "Linux EEVDF base slice 0.75 ms (sysctl_sched_base_slice): "
                "how long a CPU-bound task keeps a core before a waiting one "
                "is picked");
    set_default(p, "cpu_slice_us", "750", SIM_OR_CONSTANT,
                "Linux EEVDF sysctl_sched_base_slice 0.75 ms, scaled by "
                "1 + ilog2(min(ncpus, 8)) (kernel/sched/fair.c "
                "update_sysctl, SCHED_TUNABLESCALING_LOG)");
    set_default(p, "thread_start_us", "100", SIM_OR_ASSUMPTION,
                "Thread.start() creates an OS thread and waits for its start");
    set_default(p, "pool_max", "100", SIM_OR_CONSTANT,
                "pymongo maxPoolSize default");
    set_default(p, "pool_initial", "0", SIM_OR_SCENARIO, "setup");
    set_default(p, "connect_us", "30", SIM_OR_ASSUMPTION,
                "socket() + connect() on loopback");
    set_default(p, "server_us", "50", SIM_OR_ASSUMPTION,
                "placeholder without a trace");
    set_default(p, "server_cv", "0.2", SIM_OR_ASSUMPTION,
                "placeholder without a trace");
    set_default(p, "server_cpu_frac", "0.7", SIM_OR_ASSUMPTION,
                "most of a loopback service time is the server's own CPU");
    set_default(p, "server_cpu_us", "0", SIM_OR_ASSUMPTION,
                "0: use server_cpu_frac");
    set_default(p, "server_wake_in_trace", "0", SIM_OR_ASSUMPTION,
                "0: the server's wake-up and switch-in are added to each "
                "sample (round 14, docs/sim-model.md)");
    set_default(p, "server_shares_cores", "1", SIM_OR_SCENARIO,
                "server on the same host");
    set_default(p, "net_us", "2", SIM_OR_ASSUMPTION,
                "loopback: the send syscall does the delivery; wake-up is "
                "modelled apart");
    set_default(p, "proxy", "none", SIM_OR_SCENARIO, "setup");
    set_default(p, "proxy_inline", "0", SIM_OR_SCENARIO, "setup");
    set_default(p, "proxy_delay_ms", "0", SIM_OR_SCENARIO, "setup");
    set_default(p, "proxy_cpu_us", "10", SIM_OR_ASSUMPTION,
                "read + write of a small message in a proxy");
    set_default(p, "proxy_timer_us", "0", SIM_OR_ASSUMPTION,
                "timerfd fires on time; its wake-up is wake_us");
    set_default(
        p, "go_timer_slack_us", "50", SIM_OR_CONSTANT,
        "Linux default timer_slack_ns = 50000 (epoll_wait hrtimer range)");
    set_default(p, "seed", "1", SIM_OR_SCENARIO, "setup");
}

static int
parse_num(const char *v, double *out)
{
    char *end;

    errno = 0;
    *out = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !isfinite(*out))
        return -1;
    return 0;
}

static int
parse_enum(int type, const char *v, int *out)
{
    if (type == SIM_P_RUNTIME) {
        if (strcmp(v, "gil") == 0)
            *out = SIM_RT_GIL;
        else if (strcmp(v, "free-threaded") == 0 || strcmp(v, "ft") == 0)
            *out = SIM_RT_FREE;
        else
            return -1;
        return 0;
    }
    if (strcmp(v, "none") == 0)
        *out = SIM_PROXY_NONE;
    else if (strcmp(v, "deadline") == 0)
        *out = SIM_PROXY_DEADLINE;
    else if (strcmp(v, "serial-go") == 0 || strcmp(v, "serial") == 0)
        *out = SIM_PROXY_SERIAL_GO;
    else
        return -1;
    return 0;
}

int
sim_params_set(struct sim_params *p, const char *key, const char *value,
               int origin, const char *note, struct mt_err *err)
{
    int i = sim_params_find(key);
    const struct sim_param_desc *d;
    char *field;
    double v;

    if (i < 0)
        return mt_err_set(err, MT_EUSAGE, 0, "unknown parameter '%s'", key);
    d = &sim_param_table[i];
    field = (char *)p + d->off;
    if (d->type == SIM_P_STR) {
        snprintf(field, sizeof(p->name), "%s", value);
    } else if (d->type == SIM_P_RUNTIME || d->type == SIM_P_PROXY) {
        if (parse_enum(d->type, value, (int *)(void *)field) < 0)
            return mt_err_set(err, MT_EUSAGE, 0, "%s: bad value '%s' (%s)", key,
                              value, d->help);
    } else {
        if (parse_num(value, &v) < 0 || v < d->min || v > d->max)
            return mt_err_set(err, MT_EUSAGE, 0,
                              "%s: '%s' is not a number in [%g, %g]", key,
                              value, d->min, d->max);
        if (d->type == SIM_P_INT) {
            if (v != floor(v))
                return mt_err_set(err, MT_EUSAGE, 0,
                                  "%s: '%s' is not an integer", key, value);
            *(int64_t *)(void *)field = (int64_t)v;
        } else {
            *(double *)(void *)field = v;
        }
    }
    p->origin[i] = (uint8_t)origin;
    sim_note_copy(p->note[i], SIM_NOTE_MAX, note);
    return 0;
}

void
sim_note_copy(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;

    MT_ASSERT(cap >= 8);
    if (n < cap) {
        memcpy(dst, src ? src : "", n + 1);
        return;
    }
    n = cap - 4; /* room for "..." and the NUL */
    while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
        n--; /* src[n] would start the cut: keep whole UTF-8 sequences */
    memcpy(dst, src, n);
    memcpy(dst + n, "...", 4);
}

void
sim_params_format(const struct sim_params *p, size_t i, char *buf, size_t cap)
{
    const struct sim_param_desc *d = &sim_param_table[i];
    const char *field = (const char *)p + d->off;

    switch (d->type) {
    case SIM_P_STR:
        snprintf(buf, cap, "%s", field);
        break;
    case SIM_P_RUNTIME:
        snprintf(buf, cap, "%s",
                 sim_runtime_name(*(const int *)(const void *)field));
        break;
    case SIM_P_PROXY:
        snprintf(buf, cap, "%s",
                 sim_proxy_name(*(const int *)(const void *)field));
        break;
    case SIM_P_INT:
        snprintf(buf, cap, "%lld",
                 (long long)*(const int64_t *)(const void *)field);
        break;
    default:
        snprintf(buf, cap, "%.6g", *(const double *)(const void *)field);
        break;
    }
}
