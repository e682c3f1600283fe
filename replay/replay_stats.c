/*
 * replay_stats.c -- initialising and merging the statistics of a replay
 * (see replay_stats.h).
 */
#include "replay_stats.h"

#include <string.h>

void
replay_stats_init(struct replay_stats *s)
{
    memset(s, 0, sizeof(*s));
#define XH(field, key) delay_hist_init(&s->field);
    REPLAY_STATS_HISTS(XH)
#undef XH
    tlsstats_init(&s->tls);
}

#define MAX_U64(a, b) ((a) > (b) ? (a) : (b))

void
replay_stats_merge(struct replay_stats *dst, const struct replay_stats *src)
{
#define XX(field, key, line, text) dst->field += src->field;
    REPLAY_STATS_COUNTERS(XX)
#undef XX
#define XX(field) dst->field += src->field;
    REPLAY_STATS_INTERNAL(XX)
#undef XX
#define XH(field, key) delay_hist_merge(&dst->field, &src->field);
    REPLAY_STATS_HISTS(XH)
#undef XH
    tlsstats_merge(&dst->tls, &src->tls);
    dst->batch_max = MAX_U64(dst->batch_max, src->batch_max);
    /* wake-up lateness and window: those of the busiest loop (most
     * timer wake-ups); an idle loop's rare wake-ups say little */
    if (src->wake.wakes + 1 > dst->wake_top_n) { /* top_n: wakes + 1 */
        struct loop_wake_stats keep = dst->wake;
        dst->wake = src->wake;
        dst->wake.wakes = keep.wakes;
        dst->wake.spins = keep.spins;
        dst->wake.max_ns = keep.max_ns;
        dst->wake_top_n = src->wake.wakes + 1;
    }
    dst->wake.wakes += src->wake.wakes;
    dst->wake.spins += src->wake.spins;
    dst->wake.max_ns = MAX_U64(dst->wake.max_ns, src->wake.max_ns);
}
