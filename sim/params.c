/*
 * params.c -- the parameter table, its defaults and value parsing.  Each
 * entry carries its default, the default's origin and the source of the
 * value; docs/sim-model.md ("Parameters") prints the same table.
 */
#include "params.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E(key, type, cls, field, lo, hi, unit, def, or, help, src)             \
    {                                                                          \
        key, type, cls, offsetof(struct sim_params, field), lo, hi, unit, def, \
            or, help, src                                                      \
    }
#define S(key, type, field, lo, hi, unit, def, help)                           \
    E(key, type, SIM_PC_SETUP, field, lo, hi, unit, def, SIM_OR_SCENARIO,      \
      help, "the experiment's setup")
#define M(key, type, field, lo, hi, unit, def, or, help, src)                  \
    E(key, type, SIM_PC_MODEL, field, lo, hi, unit, def, or, help, src)
#define HS(key, field, lo, hi, unit, def, help)                                \
    E("herd." key, SIM_P_INT, SIM_PC_HERD_SETUP, herd.field, lo, hi, unit,     \
      def, SIM_OR_SCENARIO, help, "the experiment's setup")
#define HSD(key, field, lo, hi, unit, def, help)                               \
    E("herd." key, SIM_P_DBL, SIM_PC_HERD_SETUP, herd.field, lo, hi, unit,     \
      def, SIM_OR_SCENARIO, help, "the application's code")
#define HM(key, field, lo, hi, unit, def, help, src)                           \
    E("herd." key, SIM_P_DBL, SIM_PC_HERD_MODEL, herd.field, lo, hi, unit,     \
      def, SIM_OR_ASSUMPTION, help, src)

const struct sim_param_desc sim_param_table[] = {
    S("name", SIM_P_STR, name, 0, 0, "", "", "scenario label"),
    S("runtime", SIM_P_RUNTIME, runtime, 0, 1, "", "gil",
      "gil | free-threaded (the same model without the GIL)"),
    S("threads", SIM_P_INT, threads, 1, 4096, "", "1", "client threads"),
    S("calls", SIM_P_INT, calls, 1, 10000000, "", "100", "calls per thread"),
    S("exclude_first", SIM_P_INT, exclude_first, 0, 1000000, "", "0",
      "first calls of each thread left out of the statistics"),
    S("proxy", SIM_P_PROXY, proxy, 0, 2, "", "none",
      "none | deadline (reply released at read + delay, as mtrace replay) | "
      "serial (one reply at a time per connection, each after the delay)"),
    S("proxy_delay_ms", SIM_P_DBL, proxy_delay_ms, 0, 1e6, "ms", "0",
      "delay added to each reply"),
    E("pool_max", SIM_P_INT, SIM_PC_SETUP, pool_max, 1, 100000, "", "100",
      SIM_OR_SOURCE, "connection pool size (maxPoolSize)",
      "pymongo 3.11 common.py MAX_POOL_SIZE = 100"),
    S("pool_initial", SIM_P_INT, pool_initial, 0, 100000, "", "1",
      "connections open at the start (the sequential run left one)"),
    S("session_prefill", SIM_P_INT, session_prefill, 0, 100000, "", "1",
      "server sessions in the driver's session pool at the start; a call "
      "that finds it empty creates one inside its first lock section"),
    S("session_reuse", SIM_P_INT, session_reuse, 0, 1, "", "1",
      "1: a call puts its session back in the pool (the driver); 0: it "
      "does not, so every call creates one inside its first lock section "
      "(lock_contend.py's convoy arm \"in\")"),
    E("switch_interval_us", SIM_P_DBL, SIM_PC_SETUP, switch_interval_us, 1, 1e7,
      "us", "5000", SIM_OR_SOURCE,
      "the interpreter's switch interval (sys.setswitchinterval): a GIL "
      "waiter's timed wait before it sets gil_drop_request",
      "CPython Python/ceval_gil.c DEFAULT_INTERVAL 5000 us"),
    S("seed", SIM_P_INT, seed, 0, 9.2e18, "", "1",
      "the one seed: run k of a prediction uses seed + k"),
    S("seeds", SIM_P_INT, seeds, 1, 1000, "", "10",
      "runs per prediction and calibration: the interval is over them"),
    E("ft_slowdown", SIM_P_DBL, SIM_PC_SETUP, ft_slowdown, 0.1, 10, "x", "1",
      SIM_OR_ASSUMPTION,
      "a free-threaded row calibrated from a GIL sequential run: its CPU "
      "per call over the calibration's (a fact of the calibration the user "
      "has, as --seq-runtime)",
      "1 when a row is calibrated from a sequential run of its own runtime"),

    M("py_call_us", SIM_P_DBL, py_call_us, 0, 1e6, "us", "150",
      SIM_OR_ASSUMPTION,
      "client CPU per call with the GIL held (Python, lock sections "
      "included); with sequential runs at several delays a function of the "
      "core's idle time since a step last ran there (the idle curve)",
      "sequential run: thread CPU per call - releases*sys_us - ctx_cpu_us "
      "(--seq-cpu-us; at several delays: --seq-cpu-at), or solved from its "
      "mean (--seq-mean-ms)"),
    M("py_cv", SIM_P_DBL, py_cv, 0, 10, "", "0.1", SIM_OR_ASSUMPTION,
      "coefficient of variation of py_call_us over calls",
      "sequential run: cv of the CPU per call (--seq-cpu-cv) or solved from "
      "its stdev% (--seq-stdev-pct)"),
    M("releases", SIM_P_INT, releases, 1, 16, "", "3", SIM_OR_SOURCE,
      "GIL releases per call; each costs sys_us of CPU without the GIL, the "
      "first after the send waits for the reply",
      "pymongo 3.11 network.py: sock.sendall, then _receive_data_on_socket "
      "recv_into for the 16-byte header and for the body"),
    M("sys_us", SIM_P_DBL, sys_us, 0, 1e6, "us", "3", SIM_OR_ASSUMPTION,
      "CPU of one GIL-released socket syscall",
      "mtrace calibrate: small loopback send/recv"),
    M("cores", SIM_P_INT, cores, 1, 4096, "", "2", SIM_OR_ASSUMPTION,
      "CPU cores the client threads run on",
      "mtrace calibrate: sched_getaffinity CPU count"),
    M("wake_us", SIM_P_DBL, wake_us, 0, 1e6, "us", "5", SIM_OR_ASSUMPTION,
      "a blocked thread made runnable -> running (reply, connection, the "
      "driver lock's semaphore: Python/thread_pthread.h sem_post, a futex "
      "wake)",
      "mtrace calibrate: pipe ping-pong wake-up"),
    M("ctx_cpu_us", SIM_P_DBL, ctx_cpu_us, 0, 1e6, "us", "2", SIM_OR_ASSUMPTION,
      "CPU one block/wake cycle costs the woken thread",
      "mtrace calibrate: CPU per ping-pong hand-off"),
    M("gil_handoff_us", SIM_P_DBL, gil_handoff_us, 0, 1e6, "us", "8",
      SIM_OR_ASSUMPTION,
      "drop_gil's signal -> the waiting thread running with the GIL",
      "mtrace calibrate: 2-thread Python GIL ping-pong"),
    M("lock_sections", SIM_P_INT, lock_sections, 0, 64, "", "0",
      SIM_OR_ASSUMPTION, "driver-lock (threading.Lock) sections per call",
      "sequential run with the driver lock instrumented (pymongo 3.11 "
      "topology.py Topology._lock)"),
    M("lock_before", SIM_P_INT, lock_before, -1, 64, "", "-1",
      SIM_OR_ASSUMPTION,
      "of those, the sections before the send (the rest after the reply); "
      "-1: half of lock_sections, rounded up",
      "sequential run with the driver lock and the send instrumented"),
    M("lock_hold_us", SIM_P_DBL, lock_hold_us, 0, 1e6, "us", "0",
      SIM_OR_ASSUMPTION,
      "CPU (GIL held) inside one lock section, part of py_call_us",
      "sequential run with the driver lock instrumented"),
    M("lock_block_cpu_us", SIM_P_DBL, lock_block_cpu_us, 0, 1e6, "us", "16",
      SIM_OR_ASSUMPTION,
      "CPU an acquire that blocked on the driver lock costs for its sleeps "
      "on the lock, added to its section (GIL held, lock held); the GIL "
      "wait after it is charged as any GIL wait",
      "mtrace calibrate: lock_contend.py's convoy (uuid4 inside vs outside "
      "the lock): extra CPU per block - CPU per extra switch"),
    M("server_us", SIM_P_DBL, server_us, 0, 1e8, "us", "60", SIM_OR_ASSUMPTION,
      "server time of one request, send to reply (replaced by the trace's "
      "samples with --trace)",
      "trace of the sequential run: request->reply latencies"),
    M("server_cv", SIM_P_DBL, server_cv, 0, 10, "", "0.2", SIM_OR_ASSUMPTION,
      "its coefficient of variation (lognormal)",
      "trace of the sequential run"),
    M("xcore_frac", SIM_P_DBL, xcore_frac, 0, 100, "x", "0.77",
      SIM_OR_ASSUMPTION,
      "a step of the call (a Python segment) whose last run, in any thread, "
      "or whose thread's previous step ran on another core costs "
      "(1 + xcore_frac) x its CPU: its code, the driver objects and the "
      "call's own objects are in that core's cache",
      "sequential run, its calls in interleaved blocks with each Python "
      "segment moved to the other of two CPUs (before the call and before "
      "each receive) or kept on one (--seq-xcore-cpu-us, "
      "--seq-pinned-cpu-us): moved / kept - 1, of the Python's CPU; "
      "default: pymongo 3.11 on the 2-vCPU VM of docs/sim-model.md"),

    HS("procs", procs, 1, 100000, "", "16", "worker processes on the socket"),
    HS("clients", clients, 1, 100000, "", "32",
       "ab -c: concurrent connections"),
    HS("requests", requests, 1, 100000000, "", "10000", "ab -n: requests"),
    HS("lock", lock, 0, 1, "", "0",
       "1: a lock serialises accept (uWSGI --thunder-lock)"),
    HSD("sleep_min_ms", sleep_min_ms, 0, 1e6, "ms", "0",
        "the app's sleep per request, uniform in [sleep_min_ms, "
        "sleep_max_ms], between the two halves of herd.req_cpu_us"),
    HSD("sleep_max_ms", sleep_max_ms, 0, 1e6, "ms", "0",
        "upper end of the app's sleep"),
    HSD("cleanup_min_ms", cleanup_min_ms, 0, 1e6, "ms", "0",
        "sleep after the response, uniform in [cleanup_min_ms, "
        "cleanup_max_ms]"),
    HSD("cleanup_max_ms", cleanup_max_ms, 0, 1e6, "ms", "0",
        "upper end of the cleanup sleep"),
    E("herd.cores", SIM_P_INT, SIM_PC_HERD_MODEL, herd.cores, 1, 4096, "", "2",
      SIM_OR_ASSUMPTION, "CPU cores shared by the workers and ab",
      "the host's CPU count"),
    HM("req_cpu_us", req_cpu_us, 0, 1e7, "us", "100",
       "worker CPU per request, accept to close", "the server's CPU profile"),
    HM("futile_cpu_us", futile_cpu_us, 0, 1e6, "us", "5",
       "CPU of a woken worker whose accept() finds nothing (EAGAIN)",
       "a wake-up's CPU plus two syscalls"),
    HM("wake_us", wake_us, 0, 1e6, "us", "10", "wake-up latency of a process",
       "mtrace calibrate: wake_us"),
    HM("ab_cpu_us", ab_cpu_us, 0, 1e6, "us", "30",
       "ab CPU per request (one single-threaded process)",
       "ab's throughput on one core"),
    HM("net_us", net_us, 0, 1e6, "us", "20",
       "loopback connect and request transit", "loopback round trip"),
    HM("walk_us", walk_us, 0, 1e6, "us", "0",
       "CPU per sleeping epoll waiter a new connection wakes, paid by ab",
       "mtrace calibrate: the herd wake-up walk"),
};
const size_t sim_param_count =
    sizeof(sim_param_table) / sizeof(sim_param_table[0]);

_Static_assert(sizeof(sim_param_table) / sizeof(sim_param_table[0]) <=
                   SIM_PARAMS_N,
               "raise SIM_PARAMS_N");

static const char *const origin_names[SIM_OR__COUNT] = {
    "source",     "assumption", "measured", "trace",
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
    return proxy == SIM_PROXY_DEADLINE ? "deadline"
           : proxy == SIM_PROXY_SERIAL ? "serial"
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

size_t
sim_params_class_count(int pclass)
{
    size_t n = 0;

    for (size_t i = 0; i < sim_param_count; i++)
        n += sim_param_table[i].pclass == pclass;
    return n;
}

void
sim_params_default(struct sim_params *p)
{
    memset(p, 0, sizeof(*p));
    for (size_t i = 0; i < sim_param_count; i++) {
        const struct sim_param_desc *d = &sim_param_table[i];
        int rc =
            sim_params_set(p, d->key, d->def, d->def_origin, d->source, NULL);
        MT_ASSERT(rc == 0);
    }
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
    else if (strcmp(v, "serial") == 0)
        *out = SIM_PROXY_SERIAL;
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
        if (strlen(value) >= sizeof(p->name))
            return mt_err_set(err, MT_EUSAGE, 0,
                              "%s: '%.20s...' is longer than %zu bytes", key,
                              value, sizeof(p->name) - 1);
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

double
sim_params_get(const struct sim_params *p, size_t i)
{
    const struct sim_param_desc *d = &sim_param_table[i];
    const char *field = (const char *)p + d->off;

    switch (d->type) {
    case SIM_P_RUNTIME:
    case SIM_P_PROXY:
        return *(const int *)(const void *)field;
    case SIM_P_INT:
        return (double)*(const int64_t *)(const void *)field;
    case SIM_P_DBL:
        return *(const double *)(const void *)field;
    default:
        return 0;
    }
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
