/*
 * fit.h -- calibration from a sequential run: the client's CPU per call
 * (py_call_us) and its spread (py_cv), from the run's measured thread CPU
 * per call or, without it, from its mean latency; never from a threaded
 * result.  One thread has no contention, so a sequential call takes
 *
 *     py_call_us + releases * sys_us + ctx_cpu_us + wake_us + server
 *
 * (server: the trace's or server_us, with the delay as the proxy applies
 * it), which the unit tests check against the simulation.
 */
#ifndef MT_SIM_FIT_H
#define MT_SIM_FIT_H

#include "core/err.h"
#include "params.h"

/* One sequential repetition (NaN: not measured). */
struct sim_fit_in {
    double mean_ms;       /* its mean latency */
    double stdev_pct;     /* its stdev% */
    double cpu_us;        /* the calling thread's CPU per call */
    double cpu_cv;        /* cv of that CPU over the calls */
    double xcore_cpu_us;  /* its CPU per call with every call on another
                             core than the previous one's */
    double pinned_cpu_us; /* ... and with the calls interleaved with those
                             on one core (NaN: the sequential CPU) */
    /* sequential runs of the same client at several delays: their CPU per
     * call (the idle curve); at_n 0: none */
    size_t at_n;
    const double *at_delay_ms, *at_cpu_us;
};

/*
 * Solves py_call_us and py_cv of p from repetition in, measured in the
 * setup seq (threads 1: its runtime, proxy, delay, server samples; host
 * facts as p's).  cpu_us given: py_call_us = cpu_us - releases * sys_us -
 * ctx_cpu_us; else from mean_ms by the sum above.  py_cv from cpu_cv (as
 * a share of py_call_us), else from stdev_pct less the server's variance,
 * else left as it is.  With the CPU at several delays (at_n > 0):
 * py_call_us from the smallest delay's, and the idle curve: at each delay
 * D, the idle time of the sequential run's core between two runs of a step
 * (the server's time + D + wake_us) and idle_frac = its py / py_call_us -
 * 1 (0 at the smallest delay and when not more).  xcore_frac from
 * xcore_cpu_us A: (A - P) / (P - releases * sys_us - ctx_cpu_us), 0 when
 * A is not more, P being pinned_cpu_us (else the sequential CPU per call
 * py_call_us came from: py_call_us + releases * sys_us + ctx_cpu_us).
 * When p is free-threaded and seq is not, py_call_us is multiplied by
 * ft_slowdown.  Returns 0, or MT_EUSAGE when nothing is
 * left for the client (err gives the figures).
 */
int sim_fit_seq(struct sim_params *p, const struct sim_params *seq,
                const struct sim_fit_in *in, struct mt_err *err);

/* The sequential mean (ms) the model gives p with one thread. */
double sim_fit_seq_mean_ms(const struct sim_params *p);

#endif
