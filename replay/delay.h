/*
 * delay.h -- what delay each reply gets, and how close the server came.
 *
 * A reply's release time is request_read_at + delay (DESIGN.md rule 3); this
 * module only decides the delay: fixed, or drawn from a seeded distribution
 * (xoshiro256** PRNG, so a run is reproducible with --seed), or the
 * recorded server latency scaled by --speed.  Requested and achieved
 * delays are counted in core/delay_hist.h.
 */
#ifndef MT_REPLAY_DELAY_H
#define MT_REPLAY_DELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/delay_hist.h"
#include "core/rng.h"

enum delay_dist {
    DELAY_DIST_FIXED = 0,
    DELAY_DIST_UNIFORM = 1,   /* delay +- jitter, flat */
    DELAY_DIST_NORMAL = 2,    /* mean delay, standard deviation jitter */
    DELAY_DIST_LOGNORMAL = 3, /* median delay, sd of the log ~ jitter/delay */
};

enum delay_timing {
    DELAY_TIMING_NONE = 0,     /* only --delay-ms (+ jitter) */
    DELAY_TIMING_RECORDED = 1, /* recorded latency / speed, + --delay-ms */
};

enum delay_mode {
    DELAY_MODE_DEADLINE = 0, /* every reply independent: read_at + delay */
    DELAY_MODE_SERIAL = 1,   /* seed 000's Go proxy: replies queue per conn */
};

struct delay_cfg {
    uint64_t delay_ns;
    uint64_t jitter_ns;
    enum delay_dist dist;
    enum delay_timing timing;
    double speed; /* > 0; recorded latency is divided by it */
    enum delay_mode mode;
    uint64_t seed;
};

/* Default configuration: no delay, fixed, deadline mode, speed 1, seed 1. */
void delay_cfg_init(struct delay_cfg *cfg);

/* Parses "fixed|uniform|normal|lognormal". 0 or MT_EUSAGE. */
int delay_dist_parse(const char *s, enum delay_dist *out);
const char *delay_dist_name(enum delay_dist d);

/*
 * The delay in ns for one reply whose recorded server latency was
 * recorded_ns (ignored unless timing is recorded).  Never negative:
 * draws below zero are clamped to 0.  Cost: O(1).
 */
uint64_t delay_draw_ns(const struct delay_cfg *cfg, struct mt_rng *rng,
                       uint64_t recorded_ns);

#endif
