/*
 * gil.h -- CPython's GIL inside the contention model (gil.c).  Internal to
 * sim/ (sim__ prefix); the model is in model.h.
 */
#ifndef MT_SIM_GIL_H
#define MT_SIM_GIL_H

#include <stdbool.h>
#include <stdint.h>

struct sim_model;

/* Allocates the wait queue.  0 or -ENOMEM. */
int sim__gil_init(struct sim_model *m);

/* take_gil for thread t: true when t holds the GIL now (always when
 * free-threaded); false when t now waits on gil->cond (with a timeout). */
bool sim__gil_take(struct sim_model *m, uint32_t t);

/* A woken waiter t re-checks gil->locked (take_gil's loop): true when it
 * took the GIL.  Otherwise (a futile wake-up, counted) it waits on
 * gil->cond again, at the back, with a new interval; with
 * gil_wake_cpu_waiter it first spends gil_wake_cpu_us on its own core
 * (W_GIL_REWAIT, then sim__gil_rewait_done). */
bool sim__gil_recheck(struct sim_model *m, uint32_t t);

/* The futile waiter t has paid its block/wake CPU: it waits again (false),
 * or takes the GIL if it was dropped meanwhile (true). */
bool sim__gil_rewait_done(struct sim_model *m, uint32_t t);

/* Called by a thread that has just taken the GIL: the CPU (ns) it must
 * spend, GIL held, before its next Python: gil_wake_cpu_us for each GIL
 * waiter woken since the previous take (their block/wake cycles ran under
 * gil->mutex; with gil_wake_cpu_waiter = 0).  Resets that count; 0 when
 * free-threaded. */
uint64_t sim__gil_take_cost(struct sim_model *m);

/* drop_gil by holder t: signals one waiter.  Returns false when t must wait
 * on switch_cond first (a drop request was pending); final: thread exit.
 * With gil_cond_quiesce the signal may have to wait for woken waiters to
 * run: then m->th[t].drop_quiesce is set, and gil.c later submits t's
 * W_DROP_SIGNAL itself. */
bool sim__gil_drop(struct sim_model *m, uint32_t t, bool final);

/* gil->mutex (gil_mutex_signal_us > 0): the hold of a drop_gil's signal
 * ended (SIM_EV_GIL_MUTEX): wakes the first thread blocked on it. */
void sim__gil_mutex_free(struct sim_model *m);

/* t, blocked on gil->mutex, was woken (W_GIL_MUTEX): blocks again if a
 * new signal holds the mutex, else goes on where it blocked (take_gil's
 * first lock, or a woken cond waiter's re-lock).  True when t took the
 * GIL. */
bool sim__gil_mutex_woken(struct sim_model *m, uint32_t t);

/* A waiter's switch-interval timeout (stale when gen is old). */
void sim__gil_timeout(struct sim_model *m, uint32_t t, uint64_t gen);

/* Called when t's Python job is about to start: true when a pending drop
 * request makes t drop the GIL instead (t is then blocked). */
bool sim__gil_start_check(struct sim_model *m, uint32_t t);

#endif
