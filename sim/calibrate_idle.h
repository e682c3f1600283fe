/*
 * calibrate_idle.h -- what an idle period costs the thread that next runs
 * on the idle CPU (mtrace calibrate --idle-ab; round 11, docs/sim-model.md
 * "CPU cores and wake-ups"), and how busy the host is while calibrating.
 */
#ifndef MT_SIM_CALIBRATE_IDLE_H
#define MT_SIM_CALIBRATE_IDLE_H

#include <stdio.h>

#define SIM_CAL_IDLE_PAIRS 5

struct sim_cal_idle {
    int pairs;        /* phase pairs measured (0: not measured) */
    double halt_us;   /* loop CPU per iteration, no request held (median) */
    double poll_us;   /* the same with a PM QoS request of 0 held */
    double vcsw_halt; /* voluntary switches per iteration, no request */
    double vcsw_poll; /* ... with the request */
    double diff_us;   /* median of the pairs' halt - poll */
    double diff_lo, diff_hi;
    int held_before; /* the kernel's bound before we asked (-1: unknown) */
    char why[160];   /* why not measured, when pairs == 0 */
};

/*
 * Runs `python script --idle-loop` (gil_pingpong.py: one thread pinned to
 * the first CPU, Python work, a blocking socket round trip to an echo
 * process pinned to the second CPU that spins 50 us, Python work; thread
 * CPU per iteration) SIM_CAL_IDLE_PAIRS times without and with a PM QoS
 * CPU wake-up latency request of 0 held (core/pmqos.h: idle CPUs poll
 * instead of halting), alternating.  The request is GLOBAL while held
 * (about 1 s in all).  Returns 0, or -1 with r->why filled.
 */
int sim_calibrate_idle(const char *python, const char *script,
                       struct sim_cal_idle *r);

/* Writes comments: idle_wake_cpu_us as measured (not applied: the rule is
 * off by default, round 11) and the two phases' figures, or why it was not
 * measured. */
void sim_calibrate_idle_print(FILE *out, const struct sim_cal_idle *r,
                              const char *python);

/*
 * Cores' worth of CPU that other processes used over 2 s while this one
 * sleeps (/proc/stat busy jiffies, steal included, all CPUs): NAN when
 * /proc/stat cannot be read.
 */
double sim_calibrate_bg_load(void);

/* The 1-minute load average, NAN when /proc/loadavg cannot be read. */
double sim_calibrate_loadavg(void);

#endif
