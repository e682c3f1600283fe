/*
 * calibrate_gilmutex.h -- how long drop_gil holds gil->mutex while it
 * signals a waiter, and how often the woken waiter then blocks on that
 * mutex (mtrace calibrate; round 9, docs/sim-model.md).
 */
#ifndef MT_SIM_CALIBRATE_GILMUTEX_H
#define MT_SIM_CALIBRATE_GILMUTEX_H

#include <stdio.h>

#define SIM_CAL_GM_ROUNDS 2000
#define SIM_CAL_GM_IDLE_US 200

struct sim_cal_gilmutex {
    int rounds;     /* samples kept (0: not measured) */
    double hold_us; /* COND_SIGNAL -> MUTEX_UNLOCK done, mean less top 1 % */
    double hold_cv;
    double ready_us;      /* COND_SIGNAL -> waiter back with the mutex, ditto */
    double relock_share;  /* waits that blocked again (>= 2 voluntary
                             switches inside pthread_cond_timedwait) */
    double vcsw_per_wait; /* voluntary switches per wait */
};

/*
 * CPython 3.11's gil->mutex / gil->cond protocol in C (Python/ceval_gil.h
 * take_gil / drop_gil): a waiter thread blocks in pthread_cond_timedwait
 * (5 ms timeout) holding the mutex as take_gil does; every
 * SIM_CAL_GM_IDLE_US the main thread locks the mutex, clears `locked`,
 * signals the cond and unlocks, as drop_gil does, and times the signal ->
 * unlock window (the time the mutex is held with a waiter being woken).
 * The waiter counts its voluntary context switches (RUSAGE_THREAD) across
 * the wait: one is the cond wait, a second means it blocked again
 * re-locking the mutex (__pthread_mutex_cond_lock) while the signaller
 * still held it.  Threads are left where the scheduler puts them.
 * Returns 0, or -1 with errno.
 */
int sim_calibrate_gilmutex(int rounds, struct sim_cal_gilmutex *r);

/* Writes r as host facts lines (gil_mutex_signal_us [measured] and a
 * comment with the re-lock share); nothing when r was not measured. */
void sim_calibrate_gilmutex_print(FILE *out, const struct sim_cal_gilmutex *r);

#endif
