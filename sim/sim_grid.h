/*
 * sim_grid.h -- scenarios made ready to run: settings applied, each
 * calibrated from its sequential run, the what-if grid expanded
 * (docs/sim-model.md, "Inputs and outputs").
 */
#ifndef MT_SIM_GRID_H
#define MT_SIM_GRID_H

#include <stddef.h>

#include "core/err.h"
#include "scenario.h"

#define SWEEP_AXES_MAX 4

/* The sequential run the command line gives (--seq-*). */
struct sim_seq_in {
    struct sim_cal_in cal; /* its repetitions; cal.n 0: none */
    double delay_ms;       /* the delay it had */
    const char *runtime;   /* borrowed: "gil", "free-threaded", or NULL: the
                              row's */
};

/*
 * Applies "KEY=VALUE" to sc with origin cli and note; a delay on a
 * scenario without a proxy selects the deadline proxy.  0 or MT_EUSAGE.
 */
int sim_grid_apply_kv(struct sim_scenario *sc, const char *kv, const char *note,
                      struct mt_err *err);

/*
 * Solves py_call_us / py_cv of every contention scenario of set: from seq
 * when it has repetitions (all scenarios, in seq's setup), else from a
 * scenario's own calibrate.* lines, or from those of its calibrate_from
 * scenario.  0, or MT_EUSAGE with err naming the scenario.
 */
int sim_grid_calibrate(struct sim_scenario_set *set,
                       const struct sim_seq_in *seq, struct mt_err *err);

/*
 * Appends to out every scenario of set times the grid of the nsweeps axes
 * ("KEY=V1,V2,..", at most SWEEP_AXES_MAX); names get " KEY=V" per axis.
 * A swept host fact is applied to the calibration setup too; a swept setup
 * value is not.  0, MT_EUSAGE, MT_ELIMIT or -ENOMEM.
 */
int sim_grid_expand(const struct sim_scenario_set *set,
                    const char *const *sweeps, size_t nsweeps,
                    struct sim_scenario_set *out, struct mt_err *err);

#endif
