/*
 * phist.c -- achieved-delay histogram (see phist.h).
 */
#include "phist.h"

#include <errno.h>
#include <string.h>

#include "core/mem.h"

/* Records ns (the achieved delay of one reply) in h. */
void
phist_add(struct phist *h, uint64_t ns)
{
    uint64_t us = ns / 1000;
    if (h->b == NULL) {
        h->b = mt_calloc(PHIST_US_MAX + 1, sizeof(*h->b));
        if (h->b == NULL)
            return;
    }
    h->b[us > PHIST_US_MAX ? PHIST_US_MAX : us]++;
    h->n++;
    h->sum_ns += ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
}

/* Adds src's counts to dst. 0 or -ENOMEM. */
int
phist_merge(struct phist *dst, const struct phist *src)
{
    if (src->b == NULL)
        return 0;
    if (dst->b == NULL) {
        dst->b = mt_calloc(PHIST_US_MAX + 1, sizeof(*dst->b));
        if (dst->b == NULL)
            return -ENOMEM;
    }
    for (size_t i = 0; i <= PHIST_US_MAX; i++)
        dst->b[i] += src->b[i];
    dst->n += src->n;
    dst->sum_ns += src->sum_ns;
    if (src->max_ns > dst->max_ns)
        dst->max_ns = src->max_ns;
    return 0;
}

/* The q-quantile in ns (bucket midpoint, 1 us resolution); 0 if empty. */
uint64_t
phist_quantile(const struct phist *h, double q)
{
    uint64_t rank, seen = 0;

    if (h->b == NULL || h->n == 0)
        return 0;
    rank = (uint64_t)(q * (double)(h->n - 1)) + 1;
    for (size_t i = 0; i <= PHIST_US_MAX; i++) {
        seen += h->b[i];
        if (seen >= rank)
            return i == PHIST_US_MAX ? h->max_ns : i * 1000 + 500;
    }
    return h->max_ns;
}

/* Frees h's buckets. */
void
phist_free(struct phist *h)
{
    mt_free(h->b);
    memset(h, 0, sizeof(*h));
}
