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
 * origin is one of source, assumption, measured, trace, calibrated,
 * scenario (the default) or cli.  Besides the parameters (params.h) a
 * scenario may set:
 *     model = contention | herd
 *     calibrate.seq_mean_ms = X[,X2..]   sequential runs measured at these
 *     calibrate.seq_stdev_pct = Y[,..]   means / stdev%: py_call_us and
 *     calibrate.seq_cpu_us = Z[,..]      py_cv solved from them, or taken
 *     calibrate.seq_cpu_cv = V[,..]      from their client CPU per call and
 *                                        its cv (fit.h); one calibration
 *                                        per position of the lists
 *     calibrate.seq_xcore_cpu_us = A[,..] their CPU per call on alternating
 *     calibrate.seq_pinned_cpu_us = P[,..] cores and on one, interleaved:
 *                                        xcore_frac (fit.h)
 *     calibrate.seq_cpu_at = D:C[,D:C..] CPU per call of sequential runs at
 *                                        delays D ms: the idle curve
 *     calibrate_from = NAME              calibrations of scenario NAME
 *     measured.mean_ms = X               the measured result, printed beside
 *     measured.stdev_pct = Y             the prediction (never used by the
 *     measured.total_s = X               model; total_s: herd)
 *     trace = PATH                       server service times from a trace
 *     delay = X                          alias of proxy_delay_ms
 * A host facts file holds parameters only; a key that is not one is
 * skipped with a warning (a newer or older mtrace calibrate).
 * Lines are at most 1023 bytes; at most SIM_SCN_MAX scenarios.
 */
#ifndef MT_SIM_SCENARIO_H
#define MT_SIM_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "params.h"

#define SIM_SCN_MAX 256
#define SIM_PATH_MAX 512

enum sim_model_kind { SIM_MODEL_CONTENTION = 0, SIM_MODEL_HERD = 1 };

#define SIM_CAL_MAX 32

/* The sequential runs a scenario is calibrated from (NaN: not given). */
struct sim_cal_in {
    size_t n; /* repetitions: the longest of the lists */
    double mean_ms[SIM_CAL_MAX], stdev_pct[SIM_CAL_MAX];
    double cpu_us[SIM_CAL_MAX], cpu_cv[SIM_CAL_MAX];
    double xcore_cpu_us[SIM_CAL_MAX], pinned_cpu_us[SIM_CAL_MAX];
    /* one idle curve for all of them (--seq-cpu-at): CPU per call of
     * sequential runs at several delays; at_n 0: none */
    size_t at_n;
    double at_delay_ms[SIM_IDLE_MAX], at_cpu_us[SIM_IDLE_MAX];
};

struct sim_scenario {
    int model; /* enum sim_model_kind */
    struct sim_params p;
    struct sim_params cal_p; /* the sequential run's setup (threads 1) */
    struct sim_cal_in cal;   /* its measurements */
    size_t ncal;             /* calibrations solved (0: p as it is) */
    double cal_py_us[SIM_CAL_MAX], cal_py_cv[SIM_CAL_MAX];
    double cal_xcore[SIM_CAL_MAX];
    char cal_from[64];   /* "" or a scenario name */
    double meas_mean_ms; /* NaN unless given */
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

/*
 * Parses "X[,X2..]" (non-negative numbers, at most SIM_CAL_MAX) into out,
 * NaN after the last, and raises cal->n to the list's length.  0 or
 * MT_EUSAGE (err names key).
 */
int sim_scenario_parse_list(struct sim_cal_in *cal, const char *key,
                            const char *val, double *out, struct mt_err *err);
/* cal with no repetition: every figure NaN (not measured), no curve. */
void sim_cal_in_init(struct sim_cal_in *cal);
/* "D:C[,D:C..]" into cal's idle curve (calibrate.seq_cpu_at). */
int sim_scenario_parse_at(struct sim_cal_in *cal, const char *key,
                          const char *val, struct mt_err *err);

/* Appends a copy of sc; MT_ELIMIT past SIM_SCN_MAX, -ENOMEM. */
int sim_scenario_add(struct sim_scenario_set *s, const struct sim_scenario *sc);

#endif
