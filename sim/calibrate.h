/*
 * calibrate.h -- `mtrace calibrate`: measures the host and lock facts of
 * mtrace sim, each with its own microbenchmark, and writes them as a host
 * facts file (one "key = value [measured] method" a line): cores, sys_us,
 * wake_us, ctx_cpu_us here; switch_interval_us and gil_handoff_us by
 * sim/calibrate/gil_pingpong.py and lock_block_cpu_us by
 * sim/calibrate/lock_contend.py under a GIL CPython (default
 * /usr/bin/python3).  docs/sim-model.md explains each.
 */
#ifndef MT_SIM_CALIBRATE_H
#define MT_SIM_CALIBRATE_H

#include <stdbool.h>
#include <stdint.h>

/* The longest wake-up sample accepted (ns): a thread not run for a second
 * after its pipe became readable is a stalled host, not a wake-up. */
#define SIM_CAL_WAKE_MAX_NS 1000000000ull

/*
 * One cold wake-up sample: the writer stamped stamp_ns (CLOCK_MONOTONIC)
 * just before write(2); the woken reader read now_ns.  Stores the latency
 * in *ns and returns true when it is possible: 0 < now - stamp <=
 * SIM_CAL_WAKE_MAX_NS.  On a VM the monotonic clock read on another CPU can
 * be behind the writer's stamp (negative or zero difference: unsigned, it
 * wrapped to ~1.8e19 ns and once made calibrate write wake_us = 2.6e13);
 * such samples are rejected, not clamped.  Pure; no side effects.
 */
bool sim_calibrate_wake_sample(uint64_t stamp_ns, uint64_t now_ns, double *ns);

/*
 * Mean and coefficient of variation of v[0..n) without its top 1 % (v is
 * sorted in place), the cv capped at cv_max: on a shared machine a few
 * samples of tens of milliseconds (the thread waited for a core other
 * processes held) would dominate.  n > 0.
 */
void sim_calibrate_trimmed_stats(double *v, int n, double cv_max, double *mean,
                                 double *cv);

/*
 * The rule for a driver-lock block's CPU (lock_block_cpu_us, us) from
 * lock_contend.py's convoy: its extra CPU per block less its extra CPU per
 * voluntary switch.  A block puts its thread to sleep on the lock's
 * semaphore, then on the GIL (acquire_timed: Py_BEGIN_ALLOW_THREADS, then
 * Py_END_ALLOW_THREADS's take_gil); the model charges the GIL wait as any
 * (ctx_cpu_us at its wake-up), so one switch's CPU comes off.  Never below
 * 0.  Pure.
 */
double sim_calibrate_lock_block_us(double block_cpu_us, double switch_cpu_us);

/* CLI entry: argv[0] is "calibrate".  Returns the exit status. */
int sim_calibrate_main(int argc, char **argv);

#endif
