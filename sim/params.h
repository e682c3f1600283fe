/*
 * params.h -- every parameter of the contention model, with its unit, its
 * default, and where its value came from.  One table (sim_param_table)
 * drives the scenario parser, --set, --help and the "origins" block that
 * every report prints, so a parameter cannot be used without being
 * printed.  docs/sim-model.md gives the source of each default.
 */
#ifndef MT_SIM_PARAMS_H
#define MT_SIM_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

enum sim_runtime { SIM_RT_GIL = 0, SIM_RT_FREE = 1 };
enum sim_proxy {
    SIM_PROXY_NONE = 0,
    SIM_PROXY_DEADLINE = 1,
    SIM_PROXY_SERIAL_GO = 2
};

/* Where a value came from (printed beside it). */
enum sim_origin {
    SIM_OR_CONSTANT = 0, /* documented constant (source in docs/sim-model.md) */
    SIM_OR_ASSUMPTION,   /* chosen and justified, not measured */
    SIM_OR_MEASURED,     /* host facts file (mtrace calibrate) */
    SIM_OR_TRACE,        /* from the trace of the sequential run */
    SIM_OR_CALIBRATED,   /* solved from the sequential run's mean / stdev */
    SIM_OR_SCENARIO,     /* set by the scenario (setup of the experiment) */
    SIM_OR_CLI,          /* set on the command line */
    SIM_OR__COUNT
};

#define SIM_PARAMS_N 72
#define SIM_NOTE_MAX 160

struct sim_params {
    char name[64];         /* scenario label */
    int runtime;           /* enum sim_runtime */
    int64_t threads;       /* client threads */
    int64_t calls;         /* calls per thread */
    int64_t exclude_first; /* first calls of each thread not reported */
    int64_t releases;      /* GIL releases per call (send, wait, recv...) */
    double py_call_us;     /* Python CPU per call (GIL held) */
    double py_cv;          /* coefficient of variation of a Python segment */
    double py_pre_frac;    /* share of py_call_us before the send */
    double py_post_frac;   /* share after the last receive */
    double py_loop_us;     /* benchmark loop work outside the timed call */
    double think_us;       /* mean exponential pause between calls (0: none) */
    double ft_slowdown;    /* free-threaded: factor on Python CPU */
    double sys_us;         /* CPU of one GIL-released socket syscall */
    double switch_interval_us;      /* sys.getswitchinterval() */
    double gil_handoff_us;          /* drop_gil signal -> waiter running */
    double gil_mutex_signal_us;     /* drop_gil holds gil->mutex this long while
                                       it signals a waiter; 0: not modelled */
    int64_t cpu_pick;               /* 1: cores have identities (below); 2:
                                       also per-core run queues (round 10) */
    double sched_migration_cost_us; /* cpu_pick 2: a queued task that ran
                                       this recently is cache-hot and is
                                       not pulled by an idle core */
    double wake_busy_us;            /* cpu_pick 2: wake-up latency of a thread
                                       woken when no core is idle (no IPI to a
                                       halted CPU); 0: wake_us */
    double ctx_busy_cpu_us;         /* cpu_pick 2: its CPU instead of
                                       ctx_cpu_us; 0: ctx_cpu_us */
    int64_t wake_preempt;           /* cpu_pick 2: a woken client thread with
                                       no core idle preempts the job on its
                                       previous core (EEVDF) */
    double gil_wake_idle_us;        /* cpu_pick 2: latency of a GIL waiter woken
                                       (cond, mutex) while a core is idle: it
                                       lands there; 0: wake_us */
    double idle_wake_cpu_us;        /* extra CPU of a client thread's first
                                       job after a wake-up onto an idle core
                                       (round 11); 0: off */
    double idle_wake_min_us;        /* ... only after a core idled this
                                       long; -1: since before the wake */
    double gil_mutex_relock_p;      /* share of signalled waiters that block on
                                       gil->mutex's re-lock; 0: by timing */
    double gil_mutex_cs_us;         /* round 13: take_gil's and a woken
                                       waiter's sections hold gil->mutex this
                                       long; 0: off */
    int64_t gil_cond_quiesce;       /* round 13: a drop_gil signal that
                                       switches glibc's condvar groups waits,
                                       mutex held, for the old group's woken
                                       waiters; 0: off */
    double gil_switch_stretch;      /* extra share of a Python segment run after
                                       another thread held the GIL */
    double gil_xcore_cpu_us;        /* extra CPU of a Python segment after a
                                       call's Python ran on other home cores
                                       (the working set's move; client.c) */
    double py_cold_cpu_us;          /* extra CPU per call when the call's
                                       working set went cold: the home core ran
                                       no Python of the client for
                                       >= py_cold_hi_us (client.c) */
    double py_cold_lo_us;           /* that idle time at which nothing is
                                       cold (the ramp's start) */
    double py_cold_hi_us;           /* ... at which all of it is cold */
    int64_t gil_wake_cpu_waiter;    /* 1: a futile waiter pays it, GIL free */
    double gil_wake_cpu_us;         /* CPU of one GIL waiter's block/wake cycle:
                                       the next taker pays it, GIL held, or (with
                                       gil_wake_cpu_waiter) the futile waiter */
    double send_preempt_p;          /* share of sends whose woken peer preempts
                                       the sender on its core (another core
                                       idle in the model) */
    double send_preempt_busy_p;     /* the same when no other core is idle */
    int64_t send_affine_waiter;     /* 1: no preemption at a send while the GIL
                                       waiter its drop_gil woke is still waking
                                       or queued on the sender's home core */
    int64_t send_switch_busy;       /* round 15: 1: a preempted send's two
                                       switches cost ctx_busy_cpu_us */
    double send_preempt_cpu_us;     /* round 15: client CPU a call does not
                                       pay when its send is preempted */
    double wake_us;    /* blocked thread made runnable -> running */
    double wake_cv;    /* its coefficient of variation */
    double ctx_cpu_us; /* CPU a wake-up costs (context switch) */
    int64_t cores;     /* CPU cores shared by everything */
    double bg_load;    /* cores' worth of CPU other processes take (mean) */
    double bg_job_us;  /* mean length of one of their CPU bursts */
    double
        cpu_slice_us; /* base time slice before a queued entity gets the core */
    double thread_start_us; /* main thread: Thread.start() to next start */
    int64_t pool_max;       /* maxPoolSize */
    int64_t pool_initial;   /* connections already open at the start */
    double connect_us;      /* CPU of connect() for a new connection */
    double server_us;       /* server service time mean (or from trace) */
    double server_cv;       /* its coefficient of variation */
    double server_cpu_frac; /* share of the service time using a core */
    double server_cpu_us;   /* if > 0: CPU per request = min(S, this) instead */
    int64_t server_wake_in_trace; /* round 14: 1: trace samples already hold
                                     the server's wake-up and switch-in */
    int64_t server_shares_cores;  /* 1: server runs on the client's cores */
    double net_us;                /* one-way loopback transit */
    int proxy;                    /* enum sim_proxy */
    int64_t proxy_inline;     /* 1: the delay is applied by the server itself */
    double proxy_delay_ms;    /* added delay */
    double proxy_cpu_us;      /* proxy CPU per forwarded message */
    double proxy_timer_us;    /* deadline mode: timer fire -> reply sent */
    double go_timer_slack_us; /* epoll_wait timeout slack (timer_slack_ns) */
    int64_t seed;             /* the one seed */
    uint8_t origin[SIM_PARAMS_N];          /* enum sim_origin per table entry */
    char note[SIM_PARAMS_N][SIM_NOTE_MAX]; /* justification per entry */
    const double *server_samples_us; /* borrowed: trace latencies, or NULL */
    size_t server_samples_n;
};

enum sim_ptype { SIM_P_INT, SIM_P_DBL, SIM_P_RUNTIME, SIM_P_PROXY, SIM_P_STR };

struct sim_param_desc {
    const char *key;
    int type;   /* enum sim_ptype */
    size_t off; /* offsetof(struct sim_params, field) */
    double min, max;
    const char *unit;
    const char *help;
};

extern const struct sim_param_desc sim_param_table[];
extern const size_t sim_param_count;

/* Fills p with the defaults (origin and note of each set). */
void sim_params_default(struct sim_params *p);

/* Index of key in the table, or -1. */
int sim_params_find(const char *key);

/*
 * Parses value for key and stores it with origin and note (note may be
 * NULL).  Returns 0, or MT_EUSAGE with err saying which key and why.
 */
int sim_params_set(struct sim_params *p, const char *key, const char *value,
                   int origin, const char *note, struct mt_err *err);

/*
 * Copies a justification note (NULL: "") into dst of cap bytes (cap >= 8).
 * A longer note is cut at a UTF-8 character boundary and ends with "...",
 * so a printed parameter block shows that the scenario file says more.
 */
void sim_note_copy(char *dst, size_t cap, const char *src);

/* Formats parameter i's value into buf (cap bytes). */
void sim_params_format(const struct sim_params *p, size_t i, char *buf,
                       size_t cap);

/* "constant", "assumption", ... */
const char *sim_origin_name(int origin);
/* Inverse of sim_origin_name; -1 when unknown. */
int sim_origin_parse(const char *s);

const char *sim_runtime_name(int rt);
const char *sim_proxy_name(int proxy);

#endif
