/*
 * gil.h -- CPython's GIL (Python/ceval_gil.c take_gil / drop_gil with
 * FORCE_SWITCHING) and the driver's threading.Lock
 * (Modules/_threadmodule.c acquire_timed), for model.c.  Internals of the
 * contention model: struct sim_model is in model.h.
 */
#ifndef MT_SIM_GIL_H
#define MT_SIM_GIL_H

#include <stdbool.h>
#include <stdint.h>

struct sim_model;

/* Allocates the wait queues (m->nth set).  0 or -ENOMEM. */
int sim__gil_init(struct sim_model *m);
void sim__gil_free(struct sim_model *m);

/* take_gil: t takes the GIL now, or waits on gil->cond; then does after
 * (enum sim__after).  Free-threaded: does after at once. */
void sim__gil_take(struct sim_model *m, uint32_t t, uint8_t after);

/* drop_gil: t gives the GIL up and signals one waiter.  No-op when t does
 * not hold it (free-threaded, or already dropped). */
void sim__gil_drop(struct sim_model *m, uint32_t t);

/* A GIL waiter's timed wait ended (SIM_EV_GIL_TIMEOUT). */
void sim__gil_timeout(struct sim_model *m, uint32_t t, uint64_t gen);

/* Continuations C_GIL_*, C_SWITCH_WOKEN, C_LOCK_* of thread t. */
void sim__gil_continue(struct sim_model *m, uint32_t t, uint8_t cont);

/* Runs dur_ns of Python for t (GIL held), or drops the GIL first when a
 * drop request is pending; then C_PY_DONE. */
void sim__run_python(struct sim_model *m, uint32_t t, uint64_t dur_ns);

/* threading.Lock.acquire(): true when t took the lock; false when t
 * blocked on it (the GIL released first). */
bool sim__lock_acquire(struct sim_model *m, uint32_t t);

/* threading.Lock.release() by its owner t: wakes one blocked acquirer. */
void sim__lock_release(struct sim_model *m, uint32_t t);

/* Starts t's call (perf_counter() before the call), in model.c. */
void sim__begin_call(struct sim_model *m, uint32_t t);

#endif
