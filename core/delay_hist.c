/*
 * delay_hist.c -- log-linear delay histogram (see delay_hist.h).
 */
#include "delay_hist.h"

#include <math.h>
#include <string.h>

#include "core/mem.h"

/* See delay_hist.h. */
void
delay_hist_init(struct delay_hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min_ns = UINT64_MAX;
}

/* See delay_hist.h. */
struct delay_hist *
delay_hist_new(void)
{
    struct delay_hist *h = mt_calloc(1, sizeof(*h));

    if (h != NULL)
        h->min_ns = UINT64_MAX;
    return h;
}

/* See delay_hist.h. */
void
delay_hist_free(struct delay_hist *h)
{
    mt_free(h);
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

/* See delay_hist.h. */
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

/* See delay_hist.h. */
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

/* The bucket holding the ceil(q * n)-th smallest value (rank at least 1);
 * h is not empty. */
static size_t
rank_bucket(const struct delay_hist *h, double q)
{
    double r = ceil(q * (double)h->n);
    uint64_t rank, seen = 0;

    if (!(r >= 1.0)) /* also NaN */
        rank = 1;
    else if (r >= (double)h->n)
        rank = h->n;
    else
        rank = (uint64_t)r;

    for (size_t i = 0; i < DELAY_HIST_BINS; i++) {
        seen += h->bins[i];
        if (seen >= rank)
            return i;
    }
    return DELAY_HIST_BINS - 1;
}

/* See delay_hist.h. */
uint64_t
delay_hist_quantile(const struct delay_hist *h, double q)
{
    size_t i;
    uint64_t lo, hi, mid;

    if (h->n == 0)
        return 0;
    if (q >= 1.0)
        return h->max_ns;
    if (q <= 0.0)
        return h->min_ns;
    i = rank_bucket(h, q);
    lo = bucket_low(i);
    hi = bucket_low(i + 1);
    mid = lo + (hi - lo) / 2;
    if (mid > h->max_ns)
        mid = h->max_ns;
    if (mid < h->min_ns)
        mid = h->min_ns;
    return mid;
}

/* See delay_hist.h. */
uint64_t
delay_hist_quantile_upper(const struct delay_hist *h, double q)
{
    uint64_t up;

    if (h->n == 0)
        return 0;
    /* bucket_low of the bucket after the last wraps to 0: UINT64_MAX */
    up = bucket_low(rank_bucket(h, q) + 1) - 1;
    return up > h->max_ns ? h->max_ns : up;
}
