/*
 * predict.h -- a prediction: the operational-law bounds of a scenario
 * (Little's law, bottleneck analysis) and the distribution of the
 * simulated statistics over seeds and calibrations.
 */
#ifndef MT_SIM_PREDICT_H
#define MT_SIM_PREDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "model.h"
#include "params.h"

/* The queueing resources a call uses. */
enum sim_res {
    SIM_RES_GIL = 0,
    SIM_RES_CORES,
    SIM_RES_LOCK,
    SIM_RES_POOL,
    SIM_RES__N
};
#define SIM_BIND_DELAY (-1) /* no resource saturates: the round trip binds */

struct sim_bound {
    double demand_us[SIM_RES__N]; /* service demand per call at each */
    double r0_us;       /* a call alone: every demand plus server and delay */
    double x_max_per_s; /* throughput bound: min(N / r0, 1 / Dmax) */
    double r_min_us;    /* response-time bound: max(r0, N * Dmax) */
    double util[SIM_RES__N]; /* at the throughput bound: X * D */
    int binding;             /* enum sim_res, or SIM_BIND_DELAY */
};

/*
 * The bounds of scenario p (N = p->threads closed-loop threads without
 * think time).  Demands: GIL = py_call_us (GIL runtime only); cores =
 * (py_call_us + releases*sys_us + ctx_cpu_us) / cores; lock =
 * lock_sections * lock_hold_us; pool = r0 / pool_max.  Cost: O(1) without
 * a trace, O(samples) with one.
 */
void sim_bound_compute(const struct sim_params *p, struct sim_bound *b);

/* "gil", "cores", "lock", "pool", "delay". */
const char *sim_res_name(int res);

/* A value over the runs: median and the 5th..95th percentile range. */
struct sim_dist {
    double mid, lo, hi;
};

struct sim_pred {
    size_t runs;
    struct sim_dist mean_ms, stdev_pct, p50_ms, p99_ms;
    double util[SIM_RES__N]; /* simulated, median over runs */
    double lock_blocks_per_call, gil_switches_per_call; /* median */
    double xcore_per_call;   /* Python segments on another core, median */
    double cpu_us_per_call;  /* client CPU (core time) per call, median */
    double sleeps_per_call;  /* voluntary switches per call, median */
    uint64_t events;         /* all runs */
    struct sim_bound bound;  /* of the first calibration */
    struct sim_result first; /* owned lat_ns: the first run (plots) */
};

/*
 * Runs each of the ncal parameter sets (one per calibration) with
 * p->seeds seeds (p->seed, p->seed + 1, ...) and summarises.  out->first
 * holds the first run's latencies (sim_pred_free).  Returns 0 or the
 * first run's error (err says which).
 */
int sim_predict(const struct sim_params *const *cal, size_t ncal,
                struct sim_pred *out, struct mt_err *err);

void sim_pred_free(struct sim_pred *pr);

#endif
