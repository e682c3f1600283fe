/*
 * params.h -- the one parameter table of mtrace sim: every setup value and
 * model parameter of the contention model and of the herd model, with its
 * unit, default, origin, meaning and source.  The table drives the
 * defaults, the scenario parser, --set, --list-params and the parameter
 * block every report prints, so a value cannot be used without being
 * printed with where it came from.  docs/sim-model.md, "Parameters".
 */
#ifndef MT_SIM_PARAMS_H
#define MT_SIM_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "herd.h"

enum sim_runtime { SIM_RT_GIL = 0, SIM_RT_FREE = 1 };
enum sim_proxy { SIM_PROXY_NONE = 0, SIM_PROXY_DEADLINE, SIM_PROXY_SERIAL };

/* Where a value came from (printed beside it). */
enum sim_origin {
    SIM_OR_SOURCE = 0, /* a source line (driver, CPython) */
    SIM_OR_ASSUMPTION, /* chosen and justified, not measured */
    SIM_OR_MEASURED,   /* host facts file (mtrace calibrate) */
    SIM_OR_TRACE,      /* from the trace of the sequential run */
    SIM_OR_CALIBRATED, /* from the sequential run (CPU, mean, lock) */
    SIM_OR_SCENARIO,   /* set by the scenario (setup of the experiment) */
    SIM_OR_CLI,        /* set on the command line */
    SIM_OR__COUNT
};

/* What a table entry is. */
enum sim_pclass {
    SIM_PC_SETUP = 0, /* the experiment's setup, not a model parameter */
    SIM_PC_MODEL,     /* a contention-model parameter (15 at most) */
    SIM_PC_HERD_SETUP,
    SIM_PC_HERD_MODEL
};

#define SIM_PARAMS_N 48
#define SIM_IDLE_MAX 8 /* points of py_call_us's idle curve */
#define SIM_NOTE_MAX 160

struct sim_params {
    char name[64]; /* scenario label */
    /* setup */
    int runtime;               /* enum sim_runtime */
    int64_t threads;           /* client threads */
    int64_t calls;             /* calls per thread */
    int64_t exclude_first;     /* first calls of each thread not reported */
    int proxy;                 /* enum sim_proxy */
    double proxy_delay_ms;     /* delay added to each reply */
    int64_t pool_max;          /* maxPoolSize */
    int64_t pool_initial;      /* connections open at the start */
    int64_t session_prefill;   /* server sessions pooled at the start */
    int64_t session_reuse;     /* 0: a call's session is not put back */
    double switch_interval_us; /* sys.getswitchinterval() */
    int64_t seed;              /* the one seed */
    int64_t seeds; /* runs (seeds seed, seed+1, ...) per prediction */
    /* the contention model */
    double py_call_us;        /* client CPU per call with the GIL held */
    double py_cv;             /* its coefficient of variation */
    int64_t releases;         /* GIL releases per call */
    double sys_us;            /* CPU of one GIL-released syscall */
    int64_t cores;            /* CPU cores */
    double wake_us;           /* blocked -> running */
    double ctx_cpu_us;        /* CPU of one block/wake cycle */
    double gil_handoff_us;    /* drop_gil signal -> waiter running */
    int64_t lock_sections;    /* driver-lock sections per call */
    int64_t lock_before;      /* of those before the send; -1: half */
    double lock_hold_us;      /* CPU inside one section (GIL held) */
    double lock_block_cpu_us; /* CPU a blocked acquire adds (GIL held) */
    double server_us;         /* server time mean (no trace) */
    double server_cv;         /* its coefficient of variation */
    double ft_slowdown;       /* free-threaded CPU / GIL CPU per call */
    double xcore_frac;        /* extra CPU share of Python on another core */
    /* py_call_us measured at several delays (fit.c, --seq-cpu-at): a step
     * whose core idled g us since the step last ran there costs
     * (1 + idle_frac(g)) x its share, idle_frac linear between the points
     * (idle_frac 0 at the first), flat beyond the last; 0 points: none */
    int64_t idle_n;
    double idle_gap_us[SIM_IDLE_MAX], idle_frac[SIM_IDLE_MAX];
    /* the herd model (seed 001) */
    struct herd_params herd;
    uint8_t origin[SIM_PARAMS_N];          /* enum sim_origin per entry */
    char note[SIM_PARAMS_N][SIM_NOTE_MAX]; /* justification per entry */
    const double *server_samples_us;       /* borrowed: trace, or NULL */
    size_t server_samples_n;
};

enum sim_ptype { SIM_P_INT, SIM_P_DBL, SIM_P_RUNTIME, SIM_P_PROXY, SIM_P_STR };

struct sim_param_desc {
    const char *key;
    int type;   /* enum sim_ptype */
    int pclass; /* enum sim_pclass */
    size_t off; /* offsetof(struct sim_params, field) */
    double min, max;
    const char *unit;
    const char *def;    /* default value, as text */
    int def_origin;     /* enum sim_origin of the default */
    const char *help;   /* meaning */
    const char *source; /* what measures it, or the source line */
};

extern const struct sim_param_desc sim_param_table[];
extern const size_t sim_param_count;

/* Fills p with the table's defaults (origin and source note of each). */
void sim_params_default(struct sim_params *p);

/* Index of key in the table, or -1. */
int sim_params_find(const char *key);

/* Number of entries of class pclass (enum sim_pclass). */
size_t sim_params_class_count(int pclass);

/*
 * Parses value for key and stores it with origin and note (note may be
 * NULL).  Returns 0, or MT_EUSAGE with err saying which key and why.
 */
int sim_params_set(struct sim_params *p, const char *key, const char *value,
                   int origin, const char *note, struct mt_err *err);

/*
 * Copies a justification note (NULL: "") into dst of cap bytes (cap >= 8).
 * A longer note is cut at a UTF-8 character boundary and ends with "...".
 */
void sim_note_copy(char *dst, size_t cap, const char *src);

/* Formats entry i's value into buf (cap bytes). */
void sim_params_format(const struct sim_params *p, size_t i, char *buf,
                       size_t cap);

/* Reads entry i as a double (enums and ints converted). */
double sim_params_get(const struct sim_params *p, size_t i);

/* "source", "assumption", ... and the inverse (-1 when unknown). */
const char *sim_origin_name(int origin);
int sim_origin_parse(const char *s);

const char *sim_runtime_name(int rt);
const char *sim_proxy_name(int proxy);

#endif
