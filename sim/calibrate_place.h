/*
 * calibrate_place.h -- the cost of a GIL-style hand-over by where the
 * kernel puts the woken thread: on the signaller's own (busy) CPU or on
 * another, idle CPU (mtrace calibrate; round 10, docs/sim-model.md).
 */
#ifndef MT_SIM_CALIBRATE_PLACE_H
#define MT_SIM_CALIBRATE_PLACE_H

#include <stdio.h>

#define SIM_CAL_PLACE_ROUNDS 2000
#define SIM_CAL_PLACE_SPIN_US 50

enum { SIM_CAL_PLACE_SAME = 0, SIM_CAL_PLACE_CROSS = 1, SIM_CAL_PLACE_N };

struct sim_cal_place {
    int rounds;    /* hand-overs kept (0: not measured) */
    double lat_us; /* signal -> the woken thread running with the mutex,
                      mean less the top 1 % */
    double lat_cv;
    double cpu_us; /* the two threads' CPU per hand-over beyond the spin */
};

/*
 * Two C threads pass a "GIL" (a flag under a mutex and a condition
 * variable, CPython 3.11's gil->mutex / gil->cond protocol) back and
 * forth: the holder spins SIM_CAL_PLACE_SPIN_US (its Python), then locks,
 * hands the flag to the other, signals, unlocks and waits on the cond
 * itself (a GIL holder going into a blocking syscall).  The woken thread
 * times signal -> running with the mutex.  `where` SIM_CAL_PLACE_SAME pins
 * both threads to one CPU (the wakee is queued on the busy signaller's
 * CPU and runs when it blocks); SIM_CAL_PLACE_CROSS pins them to two CPUs
 * (the wakee's CPU idled during the spin: an IPI wakes it).  Returns 0, or
 * -1 with errno (EINVAL: fewer than 2 CPUs allowed for CROSS).
 */
int sim_calibrate_place(int where, int rounds, struct sim_cal_place *r);

/* Writes host facts lines: wake_busy_us [measured] from the same-CPU
 * latency and a comment with both placements; nothing when the same-CPU
 * run was not measured. */
void sim_calibrate_place_print(FILE *out, const struct sim_cal_place *r);

#endif
