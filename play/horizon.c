/*
 * horizon.c -- the trace reader's horizon of `mtrace play` (horizon.h).
 */
#include "horizon.h"

uint64_t
play_horizon_note(uint64_t ahead_ns, uint64_t sched_rec_ns, uint64_t live_ns)
{
    if (sched_rec_ns > live_ns && sched_rec_ns - live_ns > ahead_ns)
        return sched_rec_ns - live_ns;
    return ahead_ns;
}

uint64_t
play_horizon_wake(uint64_t due_ns, uint64_t ahead_ns, uint64_t lookahead_ns)
{
    uint64_t advance = ahead_ns > UINT64_MAX - lookahead_ns
                           ? UINT64_MAX
                           : ahead_ns + lookahead_ns;

    return due_ns > advance ? due_ns - advance : 0;
}
