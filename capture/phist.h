/*
 * phist.h -- the proxy's achieved-delay histogram: 1 us buckets up to
 * PHIST_US_MAX, one per event loop, merged for the summary.
 */
#ifndef MT_CAPTURE_PHIST_H
#define MT_CAPTURE_PHIST_H

#include <stdint.h>

#define PHIST_US_MAX 200000 /* buckets: 0..200 ms, then one overflow */

struct phist {
    uint32_t *b; /* owned: PHIST_US_MAX + 1 buckets, NULL until first use */
    uint64_t n, sum_ns, max_ns;
};

/* Records ns in h (buckets allocated on first use; dropped on ENOMEM). */
void phist_add(struct phist *h, uint64_t ns);

/* Adds src into dst. 0 or -ENOMEM. */
int phist_merge(struct phist *dst, const struct phist *src);

/* The q-quantile (0..1) in ns, 1 us resolution; 0 if empty. */
uint64_t phist_quantile(const struct phist *h, double q);

/* Frees h's buckets and zeroes it. */
void phist_free(struct phist *h);

#endif
