/*
 * clock.c -- real and manual clocks (see clock.h).
 */
#include "clock.h"

#include <time.h>

uint64_t
mt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
mt_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t
real_now(const struct mt_clock *clk)
{
    (void)clk;
    return mt_now_ns();
}

const struct mt_clock *
mt_clock_real(void)
{
    static const struct mt_clock real = {real_now, 0};
    return &real;
}

static uint64_t
manual_now(const struct mt_clock *clk)
{
    return *(const uint64_t *)clk->ctx;
}

void
mt_clock_manual(struct mt_clock *clk, uint64_t *t)
{
    clk->now_ns = manual_now;
    clk->ctx = t;
}
