/*
 * scenario.h -- scenario files for mtrace sim.
 *
 * Format (docs/sim-model.md, "Scenario files"): UTF-8 text, one setting a
 * line, '#' starts a comment line.
 *
 *     key = value [origin] justification...
 *     [NAME]                  starts a scenario; settings before the first
 *                             [NAME] are common to all scenarios
 *
 * origin is one of constant, assumption, measured, trace, calibrated,
 * scenario (the default).  Besides the model parameters (params.h, herd.h)
 * a scenario may set:
 *     model = contention | herd
 *     calibrate.seq_mean_ms = X     this is a sequential run measured at X:
 *     calibrate.seq_stdev_pct = Y   solve py_call_us (and py_cv) from it
 *     calibrate.seq_cpu_us = Z      and its client CPU per call: py_call_us
 *                                   from Z instead of from X (fit.h)
 *     calibrate_from = NAME         take py_call_us/py_cv from scenario NAME
 *     measured.mean_ms = X          the measured result, printed beside the
 *     measured.stdev_pct = Y        prediction (never used by the model)
 *     measured.total_s = X          (herd)
 *     trace = PATH                  server service times from a trace
 * Lines are at most 1023 bytes; at most SIM_SCN_MAX scenarios.
 */
#ifndef MT_SIM_SCENARIO_H
#define MT_SIM_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "herd.h"
#include "params.h"

#define SIM_SCN_MAX 256
#define SIM_PATH_MAX 512

enum sim_model_kind { SIM_MODEL_CONTENTION = 0, SIM_MODEL_HERD = 1 };

struct sim_scenario {
    int model; /* enum sim_model_kind */
    struct sim_params p;
    struct sim_params cal_p; /* the measured run's setup, for calibration:
                                p without setup changes made by --sweep */
    struct herd_params hp;
    double cal_mean_ms;   /* NaN unless a calibration source */
    double cal_stdev_pct; /* NaN unless given */
    double cal_cpu_us;    /* NaN unless given: client CPU per call */
    double cal_cpu_cv;    /* NaN unless given: its coefficient of variation
                             over the calls (py_cv from it, fit.h) */
    char cal_from[64];    /* "" or a scenario name */
    double meas_mean_ms;  /* NaN unless given */
    double meas_stdev_pct;
    double meas_total_s;
    char trace[SIM_PATH_MAX]; /* "" or a trace path */
};

struct sim_scenario_set {
    struct sim_scenario base; /* common settings */
    struct sim_scenario *v;   /* owned */
    size_t n;
};

/* Empty set with defaults in base. */
void sim_scenario_set_init(struct sim_scenario_set *s);
void sim_scenario_set_free(struct sim_scenario_set *s);

/*
 * Reads settings from path into s.  host = true: a host facts file (every
 * line goes to base, default origin "measured", [NAME] refused).  Returns 0
 * or MT_EUSAGE / -errno with err giving file:line and the reason.
 */
int sim_scenario_load(struct sim_scenario_set *s, const char *path, bool host,
                      struct mt_err *err);

/*
 * Applies one "key=value" (or key = value [origin] note) to sc with the
 * given default origin.  Returns 0 or MT_EUSAGE (err says why).
 */
int sim_scenario_apply(struct sim_scenario *sc, const char *key,
                       const char *val, int origin, const char *note,
                       struct mt_err *err);

/* Appends a copy of sc; MT_ELIMIT past SIM_SCN_MAX, -ENOMEM. */
int sim_scenario_add(struct sim_scenario_set *s, const struct sim_scenario *sc);

#endif
