/*
 * clock.h -- an injected clock (TigerBeetle's src/testing/time.zig): real
 * components read time only through a struct mt_clock, so tests and the
 * simulator can substitute their own.
 */
#ifndef MT_CLOCK_H
#define MT_CLOCK_H

#include <stdint.h>

struct mt_clock {
    /* Monotonic nanoseconds. */
    uint64_t (*now_ns)(const struct mt_clock *clk);
    void *ctx; /* borrowed: implementation state */
};

/* The process's real monotonic clock (CLOCK_MONOTONIC). Static storage. */
const struct mt_clock *mt_clock_real(void);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t mt_now_ns(void);

/* CLOCK_REALTIME in nanoseconds since the Unix epoch. */
uint64_t mt_wall_ns(void);

/*
 * A manual clock for tests: now_ns returns *(uint64_t *)ctx.
 * Initialise with mt_clock_manual(&clk, &t).
 */
void mt_clock_manual(struct mt_clock *clk, uint64_t *t);

#endif
