/*
 * delay_hist.h -- the one histogram of delays and latencies (ns) behind
 * the exit summaries of `mtrace capture` (achieved --delay-ms) and
 * `mtrace replay` (requested, achieved, late, write, read lag).
 *
 * Log-linear: values below 512 ns have a bucket each, then 512
 * sub-buckets per power of two, so a quantile is within 0.2 % of the
 * value (relative).  Fixed size (~229 KB), no allocation; one per loop,
 * merged at the end.  Also the per-command latencies of core/runcmp.h
 * (`mtrace play`, `stats --compare`), allocated with delay_hist_new.
 */
#ifndef MT_DELAY_HIST_H
#define MT_DELAY_HIST_H

#include <stdint.h>

#define DELAY_HIST_SUB 512
#define DELAY_HIST_BINS ((64 - 9 + 1) * DELAY_HIST_SUB)

struct delay_hist {
    uint64_t n;
    uint64_t min_ns;
    uint64_t max_ns;
    double sum_ns;
    uint64_t bins[DELAY_HIST_BINS];
};

/* An empty histogram. */
void delay_hist_init(struct delay_hist *h);
/* An empty histogram on the heap (calloc: a bin's page is touched only
 * when a value lands in it), or NULL when out of memory.  The caller owns
 * it: delay_hist_free. */
struct delay_hist *delay_hist_new(void);
/* Frees a histogram from delay_hist_new; NULL is a no-op. */
void delay_hist_free(struct delay_hist *h);
/* Counts ns.  O(1). */
void delay_hist_add(struct delay_hist *h, uint64_t ns);
/* dst += src.  O(DELAY_HIST_BINS). */
void delay_hist_merge(struct delay_hist *dst, const struct delay_hist *src);
/* The q-quantile (0 <= q <= 1), accurate to one bucket (the bucket's
 * middle, within min..max); 0 when empty. */
uint64_t delay_hist_quantile(const struct delay_hist *h, double q);
/* The nearest-rank q-quantile rounded up: the largest value of the bucket
 * holding the ceil(q * n)-th smallest value, clamped to max_ns; never below
 * that value, at most 0.2 % above it; 0 when empty.  O(DELAY_HIST_BINS). */
uint64_t delay_hist_quantile_upper(const struct delay_hist *h, double q);

#endif
