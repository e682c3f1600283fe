/*
 * model.h -- the client-contention model: client threads under CPython's
 * GIL or free-threaded, a connection pool, shared CPU cores with wake-up
 * latency, a proxy (deadline or serial-go) and a server.  docs/sim-model.md
 * states every rule and its source.
 *
 * sim_model_run() is the public entry: one scenario in, latencies out.
 * The struct sim_model and the sim__* functions are internals shared by
 * model.c (run loop, CPU cores), gil.c, client.c and net.c.
 */
#ifndef MT_SIM_MODEL_H
#define MT_SIM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "engine.h"
#include "params.h"
#include "core/rng.h"

/* Releases per call whose hand-overs are counted (sim_result.handover). */
#define SIM_HANDOVER_MAX 10

/* What one run produced. */
struct sim_result {
    uint64_t *lat_ns; /* owned: reported call latencies, in completion order */
    size_t n;
    uint64_t end_ns;       /* simulated time when the last thread finished */
    uint64_t events;       /* events processed */
    uint64_t gil_switches; /* GIL changed holder */
    uint64_t gil_drop_requests; /* waiter timeouts that set gil_drop_request */
    uint64_t gil_forced; /* forced switches (holder waited on switch_cond) */
    uint64_t gil_wakes;  /* GIL waiters woken from gil->cond (signalled, or
                            timed out with the GIL free) */
    uint64_t gil_wake_takes; /* takes that paid gil_wake_cpu_us (for the
                                wake-ups since the previous take) */
    uint64_t gil_futile;     /* woken waiters that found the GIL taken again */
    uint64_t gil_mutex_blocks; /* blocks on gil->mutex (gil_mutex_signal_us) */
    uint64_t gil_quiesce; /* gil_cond_quiesce: signals whose dropper blocked
                             for the old group's woken waiters */
    uint64_t py_cold;     /* Python segments whose cold charge (py_cold_cpu_us)
                             was larger than the xcore one */
    /* [r]: segments after release r that found another GIL holder had run
     * since the thread released it (a hand-over) */
    uint64_t handover[SIM_HANDOVER_MAX];
    uint64_t gil_xcore;        /* Python segments that paid gil_xcore_cpu_us
                                  (work ran on other home cores meanwhile) */
    uint64_t send_preempts;    /* sends whose woken peer ran first on the
                                  sender's core (client.c send_preempted) */
    uint64_t send_affine_kept; /* sends not preempted by send_affine_waiter:
                                  the woken GIL waiter on the sender's core */
    uint64_t wake_preempts;    /* wake_preempt: running jobs a woken client
                                  thread switched out (cpu_pick 2) */
    uint64_t idle_wakes;       /* client wake-ups that found a core idle
                                  (each paid idle_wake_cpu_us) */
    uint64_t slice_ends;       /* entities sent to the back of the run queue
                                  at the end of a time slice (cpu_slice_us) */
    uint64_t client_blocks;    /* times a client thread blocked: on gil->cond
                                  (each wait, re-waits included), for a reply,
                                  on switch_cond, for a pooled connection */
    uint64_t conns_opened;
    uint64_t client_cpu_ns; /* CPU of the client threads' jobs (Python,
                               syscalls, wake-ups, GIL costs) */
    double cpu_util;        /* busy core-time / (cores * end) */
};

/* Summary statistics of a latency sample (ms; stdev is the sample stdev). */
struct sim_stats {
    size_t n;
    double mean_ms, stdev_ms, stdev_pct, p10_ms, p50_ms, p90_ms, p99_ms, max_ms;
};

/*
 * Runs the scenario p to completion.  Deterministic: the result depends only
 * on p (p->seed included).  res is filled (res->lat_ns owned by the caller:
 * release with sim_result_free).  Returns 0, -ENOMEM, or MT_ELIMIT when an
 * internal bound is hit (err says which).
 */
int sim_model_run(const struct sim_params *p, struct sim_result *res,
                  struct mt_err *err);

/* Releases res->lat_ns.  NULL-safe. */
void sim_result_free(struct sim_result *res);

/* Mean, sample stdev, nearest-rank percentiles of lat_ns[0..n).  Sorts a
 * copy; returns 0 or -ENOMEM. */
int sim_stats_compute(const uint64_t *lat_ns, size_t n, struct sim_stats *st);

/* ---- internals ---- */

enum sim__kind {
    SIM_EV_CPU_DONE = 1,
    SIM_EV_WAKE,
    SIM_EV_GIL_TIMEOUT,
    SIM_EV_THREAD_START,
    SIM_EV_AT_PROXY_REQ,
    SIM_EV_AT_SERVER,
    SIM_EV_SERVER_LAT,
    SIM_EV_AT_PROXY_REP,
    SIM_EV_PROXY_RELEASE,
    SIM_EV_GO_POLL,
    SIM_EV_AT_CLIENT,
    SIM_EV_BG,        /* a background burst arrives */
    SIM_EV_GIL_MUTEX, /* gil->mutex released by a drop_gil's signal */
    SIM_EV_BALANCE,   /* cpu_pick 2: a queued job stops being cache-hot */
};

/* Continuations: what an entity does when its CPU job completes. */
enum sim__what {
    W_NONE = 0,
    W_START,        /* thread: first run */
    W_PY_DONE,      /* Python segment */
    W_LOOP_DONE,    /* benchmark loop work between calls */
    W_SEND_DONE,    /* sendall syscall */
    W_SYS_DONE,     /* other GIL-released syscall */
    W_GIL_CHECK,    /* woken GIL waiter re-checks gil->locked */
    W_GIL_TAKEN,    /* taker paid the waiters' block/wake CPU */
    W_GIL_REWAIT,   /* futile waiter paid its block/wake CPU: waits again */
    W_PREEMPT_BACK, /* sender back on its core after the peer its send
                       woke ran there first: takes the GIL */
    W_SWITCHED,     /* forced holder woken from switch_cond */
    W_POOL_GOT,     /* pool waiter handed a connection */
    W_SRV_CPU,      /* server CPU part done */
    W_UP_SENT,      /* proxy forwarded a request */
    W_DOWN_READ,    /* serial-go: reply read, now sleep */
    W_DOWN_SENT,    /* proxy wrote a reply to the client */
    W_BG,           /* background burst done */
    W_GIL_MUTEX,    /* woken from gil->mutex (its unlock's FUTEX_WAKE) */
    W_DROP_SIGNAL,  /* dropper's COND_SIGNAL under gil->mutex done */
};

enum sim__estate { ES_IDLE = 0, ES_WAKING, ES_QUEUED, ES_RUNNING };

struct sim__ent {
    uint32_t what;         /* enum sim__what: continuation of the pending job */
    uint8_t state;         /* enum sim__estate */
    bool shared;           /* uses the shared cores */
    bool on_core;          /* running job holds one of the shared cores */
    bool pick_oldest;      /* idle_wake: takes the core free the longest */
    uint64_t wake_from_ns; /* when its pending wake-up was issued */
    uint64_t dur_ns;       /* pending or running job */
    uint64_t end_ns;       /* running: completion time */
    uint64_t gen;          /* bumped to cancel CPU_DONE / WAKE events */
    uint64_t held_ns;      /* on a core without a break since (time slice) */
    int16_t core;          /* cpu_pick: the core its running job holds, -1 */
    int16_t last_core;     /* cpu_pick: the core it last ran on, -1 */
    int16_t rq_core; /* cpu_pick 2: the core whose queue it waits on, -1 */
    uint64_t ran_ns; /* cpu_pick 2: when its last job on a core ended */
};

enum sim__op { OP_PY, OP_SEND, OP_WAIT, OP_SYS, OP_CONNECT, OP_END };

struct sim__opdesc {
    uint8_t type; /* enum sim__op */
    double frac;  /* OP_PY: share of py_call_us */
};

/* After the GIL is acquired / after a forced switch. */
enum sim__after {
    AT_NONE = 0,
    AT_NEXT_OP,
    AT_RESUME_PY,
    AT_BEGIN_CALL,
    AT_ADVANCE,
    AT_DO_OP
};

struct sim__thread {
    uint64_t call;  /* calls completed */
    uint32_t op;    /* index of the current op */
    int32_t conn;   /* checked-out connection, -1 */
    bool handshake; /* running the new-connection ops */
    bool waiting_reply;
    bool done;
    uint64_t t_start_ns;   /* perf_counter() at call start */
    uint64_t resume_ns;    /* forced out mid-segment: remaining CPU */
    uint32_t resume_what;  /* W_PY_DONE or W_LOOP_DONE */
    uint64_t gil_gen;      /* cancels GIL_TIMEOUT events */
    uint64_t saved_switch; /* switch_number when the wait began */
    bool in_cond;          /* in the gil->cond wait queue */
    bool ran_py;           /* has run a Python segment */
    uint64_t seen_switch;  /* switch_number when its last segment ended */
    uint64_t py_seg_ns;    /* CPU of its current Python segment */
    uint64_t py_miss_ns;   /* its extra CPU (miss_us, client.c) */
    uint64_t py_credit_ns; /* send_preempt_cpu_us of this call's preempted
                              send not yet taken off its Python (round 15) */
    uint8_t py_slot;       /* which segment of the call (SIM_XC_SLOTS) */
    uint16_t py_core;      /* cpu_pick: the core that segment's charge used */
    uint8_t after_take;    /* enum sim__after */
    uint8_t after_switch;  /* enum sim__after */
    uint8_t mq_kind;       /* blocked on gil->mutex in: enum sim__mq */
    uint64_t drop_cpu_ns;  /* its last drop_gil's signal, to run before its
                              syscall (gil_mutex_signal_us) */
    bool drop_quiesce;     /* that drop blocked in the condvar's group
                              switch: gil.c resumes it (gil_cond_quiesce) */
    bool cond_g1;          /* in gil->cond's group G1 (gil_cond_quiesce) */
    bool cond_refs;        /* woken from gil->cond, not yet run: holds a
                              __g_refs reference (gil_cond_quiesce) */
};

/* Where a thread blocked on gil->mutex was (gil.c, gil_mutex_signal_us). */
enum sim__mq { MQ_NONE = 0, MQ_TAKE, MQ_RECHECK };

/* Python segments of a call told apart by gil_xcore_cpu_us (client.c):
 * the op index (ops[] has at most 24 entries), and the loop segment. */
#define SIM_XC_SLOTS 26
#define SIM_XC_LOOP 25

struct sim__conn {
    int32_t owner;        /* thread, or -1 */
    bool reply_ready;     /* reply waiting in the client socket */
    uint32_t srv_pending; /* requests at the server */
    bool srv_busy;
    uint64_t srv_lat_ns; /* non-CPU part of the current service */
    uint64_t req_at_proxy_ns;
    uint32_t down_pending; /* replies at the proxy not yet read */
    bool down_busy;
    bool timer_armed; /* serial-go: goroutine in time.Sleep */
    uint64_t timer_at_ns;
    int32_t preempted; /* thread whose send woke this connection's peer onto
                          its core: resumes when that job ends, or -1 */
};

struct sim__gil {
    bool locked;
    int32_t holder; /* thread holding it, -1 */
    int32_t last_holder;
    uint64_t switch_number;
    bool drop_req; /* gil_drop_request on the holder */
    int32_t *q;    /* owned: threads waiting on gil->cond, FIFO */
    size_t qn;
    int32_t switch_waiter;   /* thread waiting on switch_cond, -1 */
    int32_t last_signalled;  /* waiter woken by the last drop_gil, -1 */
    uint64_t wake_debt;      /* waiters woken since the last take: their
                                block/wake CPU is charged to the next taker */
    uint64_t mutex_until_ns; /* gil->mutex held by a drop_gil's signal */
    int32_t *mq;             /* owned: threads blocked on gil->mutex, FIFO */
    size_t mqn;
    bool mq_waking;      /* one of them was woken and is on its way */
    int32_t mutex_owner; /* thread whose section the window is, -1 */
    size_t g1_left;      /* gil_cond_quiesce: G1 waiters not signalled */
    size_t refs_n;       /* threads with cond_refs */
    int32_t quiescing;   /* dropper blocked in the group switch, -1 */
};

struct sim_model {
    struct sim_params p; /* copy */
    struct sim_engine eng;
    struct mt_rng rng_py, rng_wake, rng_srv, rng_bg, rng_pre;
    struct mt_rng rng_mx; /* gil_mutex_relock_p draws */
    size_t bg_base, nbg;  /* background sources: entities bg_base.. */
    double bg_off_us;     /* mean pause between a source's bursts */
    uint64_t slice_ns;    /* cpu_slice_us scaled by the core count */
    struct sim__ent *ent; /* owned: threads, servers, proxy up, proxy down */
    size_t nent;
    struct sim__thread *th; /* owned */
    size_t nth;
    struct sim__conn *conn; /* owned */
    size_t nconn, conn_open;
    int32_t *idle; /* owned: idle connections, LIFO */
    size_t idle_n;
    int32_t *pool_wait; /* owned: threads waiting for a connection, FIFO */
    size_t pool_wait_n;
    struct sim__gil gil;
    int64_t busy;   /* cores in use */
    uint32_t *runq; /* owned: ring of entities waiting for a core */
    size_t rq_head, rq_n;
    int32_t holding;    /* entity whose job just ended, still on its core */
    int32_t hold_core;  /* cpu_pick: that core */
    uint8_t *core_busy; /* owned (cpu_pick): per core, held by a job */
    uint64_t *free_at;  /* owned, only with idle_wake_cpu_us > 0: when each
                           free core freed, oldest first (cores - busy of
                           them; round 11) */
    size_t nfree;
    uint64_t balance_ns; /* cpu_pick 2: a SIM_EV_BALANCE is due then, 0 */
    uint64_t busy_ns;    /* core-time used */
    struct sim__opdesc ops[24], hs_ops[26];
    uint64_t go_poll_gen;
    uint64_t *lat; /* owned */
    size_t lat_n, lat_cap;
    size_t threads_done;
    uint64_t py_total_ns;      /* Python CPU run so far, all client threads */
    uint64_t *py_home_ns;      /* owned: per home core, Python CPU run there */
    uint64_t *py_seen_ns;      /* owned: [home][slot] py_total_ns when that
                                  core last ended that segment of a call */
    uint64_t *py_seen_own_ns;  /* owned: [home][slot] py_home_ns then */
    uint64_t *py_seen_at_ns;   /* owned: [home][slot] the time then */
    uint64_t *py_busy_ns;      /* owned: per home core, Python CPU run there
                                  with the extra CPU of misses */
    uint64_t *py_seen_busy_ns; /* owned: [home][slot] py_busy_ns then */
    size_t nhome;              /* home cores: min(cores, threads) */
    struct sim_result *res;
    int rc; /* first error */
};

/* Entity indexes. */
static inline uint32_t
sim__ent_srv(const struct sim_model *m, size_t c)
{
    return (uint32_t)(m->nth + c);
}
static inline uint32_t
sim__ent_up(const struct sim_model *m, size_t c)
{
    return (uint32_t)(m->nth + m->nconn + c);
}
static inline uint32_t
sim__ent_down(const struct sim_model *m, size_t c)
{
    return (uint32_t)(m->nth + 2 * m->nconn + c);
}

/* Schedules an event (records the first error in m->rc). */
void sim__push(struct sim_model *m, uint64_t delay_ns, uint32_t kind,
               uint32_t id, uint64_t gen);

/* A job of dur_ns for entity e; continuation what.  wake_ns > 0: the entity
 * was blocked and becomes runnable after wake_ns (plus ctx_cpu in the job). */
void sim__cpu_submit(struct sim_model *m, uint32_t e, uint64_t dur_ns,
                     uint32_t what, uint64_t wake_ns);
/* Cancels e's running job; returns its remaining ns. */
uint64_t sim__cpu_preempt(struct sim_model *m, uint32_t e);
/* A wake-up latency sample (ns) with mean mean_us. */
uint64_t sim__wake_ns(struct sim_model *m, double mean_us);
uint64_t sim__us(double us);

#include "client.h"
#include "gil.h"
#include "net.h"

#endif
