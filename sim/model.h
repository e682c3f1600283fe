/*
 * model.h -- the client-contention model: client threads under CPython's
 * GIL or free-threaded, a driver lock (threading.Lock), a connection pool
 * and a session pool, shared CPU cores with wake-up latency, a proxy
 * (deadline or serial) and a server.  docs/sim-model.md states every rule
 * and its source.
 *
 * sim_model_run() runs one scenario with one seed: latencies out.
 */
#ifndef MT_SIM_MODEL_H
#define MT_SIM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/rng.h"
#include "engine.h"
#include "params.h"

/* What one run produced. */
struct sim_result {
    uint64_t *lat_ns; /* owned: reported call latencies, completion order */
    size_t n;
    uint64_t end_ns;       /* simulated time when the last thread finished */
    uint64_t events;       /* events processed */
    uint64_t calls;        /* calls completed (reported or not) */
    uint64_t gil_switches; /* the GIL changed holder */
    uint64_t gil_drop_requests; /* waiter timeouts that set the drop request */
    uint64_t gil_futile;        /* woken GIL waiters that found it taken */
    uint64_t lock_blocks;       /* driver-lock acquires that blocked */
    uint64_t lock_resleeps;     /* ... woken, found it taken, slept again */
    uint64_t sessions_created;
    uint64_t xcore_segments; /* Python segments run on another core */
    /* a thread blocked (a voluntary context switch, getrusage's
     * ru_nvcsw): a receive, a GIL, switch_cond or lock wait, a timed-out
     * wait that waits again, a pool wait, a connection's round trip */
    uint64_t sleeps;
    uint64_t conns_opened;
    uint64_t pool_waits; /* checkouts that waited for a connection */
    double util_gil;     /* GIL held time / end */
    double util_cores;   /* busy core time / (cores * end) */
    double util_lock;    /* driver lock held time / end */
    double util_pool;    /* connections checked out / (pool_max * end) */
};

/* Summary statistics of a latency sample (ms; stdev is the sample stdev). */
struct sim_stats {
    size_t n;
    double mean_ms, stdev_ms, stdev_pct, p10_ms, p50_ms, p90_ms, p99_ms, max_ms;
};

/*
 * Runs the scenario p with seed p->seed to completion.  Deterministic: the
 * result depends only on p.  res is filled (res->lat_ns owned by the
 * caller: sim_result_free).  Returns 0, -ENOMEM, or MT_ELIMIT when an
 * internal bound is hit (err says which).  Cost: O(events log threads).
 */
int sim_model_run(const struct sim_params *p, struct sim_result *res,
                  struct mt_err *err);

/* Releases res->lat_ns.  NULL-safe. */
void sim_result_free(struct sim_result *res);

/* Mean, sample stdev, nearest-rank percentiles of lat_ns[0..n).  Sorts a
 * copy; returns 0 or -ENOMEM. */
int sim_stats_compute(const uint64_t *lat_ns, size_t n, struct sim_stats *st);

/* The server's time for one request as the model draws it without
 * contention (us): mean and variance, from the trace samples when given,
 * else server_us / server_cv; plus the proxy's delay. */
double sim_model_server_mean_us(const struct sim_params *p);
double sim_model_server_var_us2(const struct sim_params *p);

/* ---- internals shared by model.c and gil.c ---- */

enum sim__kind {
    SIM_EV_CPU_DONE = 1, /* id: thread, gen: its job */
    SIM_EV_WAKE,         /* id: thread, gen: its wake-up */
    SIM_EV_GIL_TIMEOUT,  /* id: thread, gen: its GIL wait */
    SIM_EV_REPLY         /* id: connection */
};

/* A call's steps (model.c build_ops). */
enum sim__opk {
    OP_PY = 0,      /* Python, GIL held: us of CPU (times the call's factor) */
    OP_LOCK_ACQ,    /* driver lock acquire */
    OP_LOCK_REL,    /* driver lock release */
    OP_SESSION_GET, /* check a server session out (create one if none) */
    OP_SESSION_PUT,
    OP_CONN_GET, /* check a connection out of the pool */
    OP_SEND,     /* sendall: a GIL release of sys_us */
    OP_WAIT,     /* recv: GIL released, blocks for the reply, us of CPU */
    OP_SYS,      /* another receive: a GIL release of sys_us */
    OP_CONN_PUT,
    OP_END
};

#define SIM_OPS_MAX 400

struct sim__op {
    uint8_t op; /* enum sim__opk */
    double us;
};

/* What a thread does when its CPU job or wake-up completes. */
enum sim__cont {
    C_NONE = 0,
    C_START,        /* first run: take the GIL, begin the first call */
    C_PY_DONE,      /* Python segment done: next step */
    C_SENT,         /* sendall done: the request leaves; retake the GIL */
    C_REL_DONE,     /* a GIL-released step done: retake the GIL */
    C_REPLY_WOKEN,  /* woken by the reply: switch-in + recv CPU */
    C_WOKEN,        /* woken with a connection: switch-in CPU */
    C_GIL_WOKEN,    /* GIL waiter signalled or timed out: switch-in CPU */
    C_GIL_CHECK,    /* ... then re-checks gil->locked */
    C_SWITCH_WOKEN, /* forced dropper woken from switch_cond */
    C_LOCK_WOKEN,   /* lock waiter woken by a release: tries the lock */
    C_LOCK_CHECK    /* ... then tries the lock again */
};

/* After a thread takes the GIL. */
enum sim__after { AG_ADVANCE = 0, AG_BEGIN, AG_RESUME };

enum sim__job { JOB_NONE = 0, JOB_QUEUED, JOB_RUNNING };

struct sim__thr {
    uint32_t op;       /* current step */
    uint8_t cont;      /* continuation of the CPU job */
    uint8_t wake_cont; /* continuation of the pending wake-up */
    uint8_t after;     /* enum sim__after: once the GIL is taken */
    uint8_t job_state; /* enum sim__job */
    bool waiting_reply, done, in_cond, py_job;
    int32_t conn;           /* checked-out connection, -1 */
    uint64_t call;          /* calls completed */
    uint64_t t_start_ns;    /* perf_counter() at the call's start */
    double factor;          /* the call's CPU factor (py_cv) */
    uint64_t job_ns;        /* pending or running job's CPU */
    uint64_t job_start_ns;  /* running: when it got the core */
    uint64_t job_gen;       /* stale CPU_DONE check */
    uint64_t wake_gen;      /* stale WAKE check */
    bool timer_pending;     /* a GIL_TIMEOUT event is queued */
    uint64_t deadline_ns;   /* its current timed wait ends then */
    uint64_t saved_switch;  /* switch_number when its timed wait began */
    uint64_t resume_ns;     /* Python left after a forced drop */
    uint64_t conn_since_ns; /* connection checked out then */
    uint64_t block_ns; /* lock_block_cpu_us owed: added to the next Python */
    int32_t core;      /* core of its last job (preferred next), -1 */
    int32_t py_core;   /* core its last Python step ran on, -1 */
    bool xcore_seen;   /* its current step's core was checked (xcore_frac) */
};

struct sim__conn {
    int32_t owner; /* thread, or -1 */
    bool reply_ready;
    uint64_t serial_free_ns; /* serial proxy: its last reply released then */
};

/* CPython's GIL state (Python/ceval_gil.c struct _gil_runtime_state). */
struct sim__gil {
    bool locked;
    int32_t holder, last_holder; /* -1: none */
    uint64_t switch_number;
    bool drop_request;
    int32_t switch_waiter; /* forced dropper on switch_cond, -1 */
    uint32_t *q;           /* owned: gil->cond waiters, FIFO ring */
    size_t q_head, q_n;
    uint64_t held_since_ns, held_ns;
};

/* The driver lock: a threading.Lock (a semaphore: release wakes one
 * waiter, which competes with any thread trying meanwhile). */
struct sim__lock {
    int32_t owner; /* -1: free */
    uint32_t *q;   /* owned: blocked acquirers, FIFO ring */
    size_t q_head, q_n;
    uint64_t held_since_ns, held_ns;
};

struct sim_model {
    struct sim_params p; /* copy */
    struct sim_engine eng;
    struct mt_rng rng_py, rng_srv, rng_wake;
    struct sim__op ops[SIM_OPS_MAX];
    size_t nops;
    struct sim__thr *th; /* owned */
    size_t nth, threads_done;
    uint32_t *rq; /* owned: run queue ring (threads waiting for a core) */
    size_t rq_head, rq_n;
    int64_t busy;              /* cores in use */
    uint8_t *core_busy;        /* owned: per core, 1 while it runs a job */
    uint64_t *core_idle_since; /* owned: per core, when it last went idle */
    uint64_t *core_idle_ns;    /* owned: per core, idle time so far */
    uint64_t *op_mark; /* owned: [op * cores + core]: core_idle_ns when the
                          step last ran there; UINT64_MAX: never */
    int32_t op_core[SIM_OPS_MAX]; /* per step: the core that last ran it */
    uint64_t busy_ns;             /* core time used */
    struct sim__conn *conn;       /* owned */
    size_t nconn, conn_open;
    int32_t *idle; /* owned: idle connections, LIFO */
    size_t idle_n;
    uint32_t *pool_wait; /* owned: threads waiting for a connection, FIFO */
    size_t pool_wait_n;
    uint64_t conn_busy_ns;
    int64_t sessions; /* server sessions in the driver's pool */
    struct sim__gil gil;
    struct sim__lock lock;
    uint64_t *lat; /* owned */
    size_t lat_n, lat_cap;
    struct sim_result *res;
    int rc; /* first error */
};

uint64_t sim__ns(double us);
/* A wake-up latency: exponential with mean mean_us (ns). */
uint64_t sim__lat(struct sim_model *m, double mean_us);
void sim__push(struct sim_model *m, uint64_t delay_ns, uint32_t kind,
               uint32_t id, uint64_t gen);
/* Thread t resumes with cont after delay_ns (a wake-up; cancels the
 * previous pending one). */
void sim__wake(struct sim_model *m, uint32_t t, uint64_t delay_ns,
               uint8_t cont);
/* A CPU job of dur_ns for t (FIFO cores), then cont. */
void sim__cpu_submit(struct sim_model *m, uint32_t t, uint64_t dur_ns,
                     uint8_t cont);
/* Takes t's job off its core or out of the queue; returns its CPU left. */
uint64_t sim__cpu_cancel(struct sim_model *m, uint32_t t);
/* Runs t's steps from th->op until one waits. */
void sim__advance(struct sim_model *m, uint32_t t);
/* Runs continuation cont of thread t. */
void sim__continue(struct sim_model *m, uint32_t t, uint8_t cont);

#include "gil.h"

#endif
