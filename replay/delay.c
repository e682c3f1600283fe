/*
 * delay.c -- delay distributions, seeded PRNG and delay histograms (see
 * delay.h).
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

void
delay_hist_init(struct delay_hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min_ns = UINT64_MAX;
}

static size_t
bucket_of(uint64_t v)
{
    int e;

    if (v < DELAY_HIST_SUB)
        return (size_t)v;
    e = 63 - __builtin_clzll(v); /* >= 9 */
    return (size_t)(e - 8) * DELAY_HIST_SUB +
           (size_t)((v >> (e - 9)) & (DELAY_HIST_SUB - 1));
}

static uint64_t
bucket_low(size_t b)
{
    size_t oct = b / DELAY_HIST_SUB, sub = b % DELAY_HIST_SUB;

    if (oct == 0)
        return sub;
    return (uint64_t)(DELAY_HIST_SUB + sub) << (oct - 1);
}

void
delay_hist_add(struct delay_hist *h, uint64_t ns)
{
    h->bins[bucket_of(ns)]++;
    h->n++;
    h->sum_ns += (double)ns;
    if (ns < h->min_ns)
        h->min_ns = ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
}

void
delay_hist_merge(struct delay_hist *dst, const struct delay_hist *src)
{
    if (src->n == 0)
        return;
    for (size_t i = 0; i < DELAY_HIST_BINS; i++)
        dst->bins[i] += src->bins[i];
    dst->n += src->n;
    dst->sum_ns += src->sum_ns;
    if (src->min_ns < dst->min_ns)
        dst->min_ns = src->min_ns;
    if (src->max_ns > dst->max_ns)
        dst->max_ns = src->max_ns;
}

uint64_t
delay_hist_quantile(const struct delay_hist *h, double q)
{
    uint64_t rank, seen = 0;

    if (h->n == 0)
        return 0;
    if (q >= 1.0)
        return h->max_ns;
    if (q <= 0.0)
        return h->min_ns;
    rank = (uint64_t)ceil(q * (double)h->n);
    if (rank == 0)
        rank = 1;
    for (size_t i = 0; i < DELAY_HIST_BINS; i++) {
        seen += h->bins[i];
        if (seen >= rank) {
            uint64_t lo = bucket_low(i), hi = bucket_low(i + 1);
            uint64_t mid = lo + (hi - lo) / 2;
            if (mid > h->max_ns)
                mid = h->max_ns;
            if (mid < h->min_ns)
                mid = h->min_ns;
            return mid;
        }
    }
    return h->max_ns;
}
