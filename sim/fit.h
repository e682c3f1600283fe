/*
 * fit.h -- calibration of the client's Python CPU from a sequential run.
 *
 * The only numbers taken from a measured client run are the sequential
 * mean (and stdev%) of that run: py_call_us is solved so the simulated
 * sequential scenario has the measured mean (secant method), and py_cv so
 * it has the measured stdev% (bisection).  Threaded measurements are never
 * inputs.
 */
#ifndef MT_SIM_FIT_H
#define MT_SIM_FIT_H

#include "core/err.h"
#include "params.h"

/*
 * Solves p->py_call_us for mean_ms (and p->py_cv for stdev_pct unless it is
 * NaN) on the scenario p (which must be sequential: threads = 1), sets
 * their origin to "calibrated" with a note.  Returns 0, or MT_EUSAGE when
 * the non-Python path alone is already slower than mean_ms (err says by
 * how much), or a sim_model_run error.
 */
int sim_fit_seq(struct sim_params *p, double mean_ms, double stdev_pct,
                struct mt_err *err);

/*
 * Calibration from the sequential run's client CPU instead of its mean:
 * cpu_us is the calling thread's CPU time per call (time.thread_time()
 * around each call).  py_call_us = (cpu_us - the CPU the model itself
 * charges the client thread per call: releases * sys_us for the socket
 * syscalls, ctx_cpu_us for the one wake-up per call, py_loop_us) /
 * ft_slowdown when free-threaded; py_cv is then solved for stdev_pct (unless
 * NaN).  The sequential mean is left to the model (a prediction).  Returns
 * 0, MT_EUSAGE when cpu_us does not cover the model's syscall CPU, or a
 * sim_model_run error.
 */
int sim_fit_seq_cpu(struct sim_params *p, double cpu_us, double stdev_pct,
                    struct mt_err *err);

/*
 * py_cv from the variation of the sequential run's client CPU per call
 * (cpu_cv: stdev / mean of time.thread_time() around each call), not from
 * its latency stdev% (which also holds the time the thread was off its
 * core: other processes, stalls).  The model draws each Python segment of
 * a call independently (lognormal, cv py_cv, mean py_call_us x its share
 * f_i) and charges the rest of cpu_us as constant syscall CPU, so the
 * call's CPU has cv = py_cv x py_call_us x sqrt(sum f_i^2) / cpu_us; py_cv
 * is solved from that (capped at 10).  Call after sim_fit_seq_cpu.
 * Returns 0 or MT_EUSAGE (cpu_cv < 0, no Python CPU).
 */
int sim_fit_cv_cpu(struct sim_params *p, double cpu_us, double cpu_cv,
                   struct mt_err *err);

#endif
