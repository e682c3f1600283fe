/*
 * delay.c -- delay distributions and the seeded PRNG (see delay.h).
 */
#include "delay.h"

#include <math.h>
#include <string.h>

#include "core/err.h"

static const char *const dist_names[] = {"fixed", "uniform", "normal",
                                         "lognormal"};

void
delay_cfg_init(struct delay_cfg *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->dist = DELAY_DIST_FIXED;
    cfg->timing = DELAY_TIMING_NONE;
    cfg->mode = DELAY_MODE_DEADLINE;
    cfg->speed = 1.0;
    cfg->seed = 1;
}

int
delay_dist_parse(const char *s, enum delay_dist *out)
{
    for (size_t i = 0; i < sizeof(dist_names) / sizeof(dist_names[0]); i++) {
        if (strcmp(s, dist_names[i]) == 0) {
            *out = (enum delay_dist)i;
            return 0;
        }
    }
    return MT_EUSAGE;
}

const char *
delay_dist_name(enum delay_dist d)
{
    if ((unsigned)d < sizeof(dist_names) / sizeof(dist_names[0]))
        return dist_names[d];
    return "unknown";
}

static double
draw_base(const struct delay_cfg *cfg, struct mt_rng *rng)
{
    double d = (double)cfg->delay_ns, j = (double)cfg->jitter_ns;

    switch (cfg->dist) {
    case DELAY_DIST_FIXED:
        return d;
    case DELAY_DIST_UNIFORM:
        return d - j + 2.0 * j * mt_rng_uniform(rng);
    case DELAY_DIST_NORMAL:
        return d + j * mt_rng_normal(rng);
    case DELAY_DIST_LOGNORMAL:
        if (d <= 0)
            return 0;
        /* median d; sigma of the log chosen so the spread ~ j/d */
        return d * exp((j / d) * mt_rng_normal(rng));
    }
    return d;
}

uint64_t
delay_draw_ns(const struct delay_cfg *cfg, struct mt_rng *rng,
              uint64_t recorded_ns)
{
    double v = draw_base(cfg, rng);

    if (cfg->timing == DELAY_TIMING_RECORDED && cfg->speed > 0)
        v += (double)recorded_ns / cfg->speed;
    if (!(v > 0))
        return 0;
    if (v > 1e18)
        return (uint64_t)1e18;
    return (uint64_t)v;
}
