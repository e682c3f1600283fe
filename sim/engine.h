/*
 * engine.h -- the discrete-event core of mtrace sim: a binary min-heap of
 * plain-data events on integer nanoseconds.
 *
 * Events are ordered by (t_ns, seq): seq is a counter taken at push, so
 * events due at the same nanosecond fire in the order they were scheduled
 * (the libuv/redis timer rule, STYLE.md section 6).  The engine has no
 * callbacks: the model pops an event and switches on its kind, which keeps
 * an event at 32 bytes and the loop branch-predictable.  Cancelling is lazy:
 * models stamp events with a generation number and ignore stale ones.
 * Nothing here reads a clock; time only moves when an event is popped.
 */
#ifndef MT_SIM_ENGINE_H
#define MT_SIM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim_ev {
    uint64_t t_ns; /* due time */
    uint64_t seq;  /* push order: the tie-break */
    uint32_t kind; /* model-defined */
    uint32_t id;   /* model-defined (entity index) */
    uint64_t gen;  /* model-defined (stale-event check) */
};

struct sim_engine {
    struct sim_ev *heap; /* owned; heap[0] is the earliest */
    size_t n;            /* events queued */
    size_t cap;          /* slots allocated */
    size_t cap_max;      /* pushes beyond this fail with MT_ELIMIT */
    uint64_t now_ns;     /* time of the last popped event */
    uint64_t seq;        /* next sequence number */
    uint64_t popped;     /* events processed so far */
};

/* Initialises e at time 0 with room for at most cap_max queued events.
 * Returns 0 or -ENOMEM.  Cost: one allocation of min(cap_max, 1024). */
int sim_engine_init(struct sim_engine *e, size_t cap_max);

/* Releases the heap; e may be initialised again.  NULL-safe. */
void sim_engine_free(struct sim_engine *e);

/*
 * Schedules an event at t_ns (must be >= now_ns: asserted).  Returns 0,
 * MT_ELIMIT when cap_max events are queued, or -ENOMEM.  O(log n).
 */
int sim_engine_push(struct sim_engine *e, uint64_t t_ns, uint32_t kind,
                    uint32_t id, uint64_t gen);

/* Schedules an event delay_ns after now (saturating). Same returns. */
int sim_engine_after(struct sim_engine *e, uint64_t delay_ns, uint32_t kind,
                     uint32_t id, uint64_t gen);

/*
 * Removes the earliest event into *out and advances now_ns to its time.
 * Returns false when the queue is empty.  O(log n).
 */
bool sim_engine_pop(struct sim_engine *e, struct sim_ev *out);

#endif
