/*
 * replay_stats.h -- the statistics of a replay, declared once.
 *
 * Each loop counts into its own struct replay_stats (conn.h struct
 * replay_worker; no lock, one thread); server_stats merges the loops at
 * exit and replay_summary.c prints the result as text and JSON.  The
 * counters and the delay histograms are listed once below; the struct,
 * the merge and both outputs are made from those lists, so that a counter
 * added here is summed and printed everywhere.  docs/replay.md
 * ("Statistics") describes every field.
 */
#ifndef MT_REPLAY_STATS_H
#define MT_REPLAY_STATS_H

#include <stdint.h>

#include "core/loop.h"
#include "delay.h"
#include "tlsstats.h"

/*
 * XX(field, json_key, line, text): counters summed over the loops, in
 * the order of their JSON keys.  line: the text summary line that shows
 * the counter (REPLAY_STATS_LINE_*; 0: none); text: its piece of that
 * line, printf-style with one %llu, the pieces of a line in list order
 * (a plain "%llu" for a counter on no line).
 */
#define REPLAY_STATS_LINE_COUNTS 1 /* "N requests on N connections: ..." */
#define REPLAY_STATS_LINE_AUTH 2   /* "authentication: ..." */
#define REPLAY_STATS_COUNTERS(XX)                                              \
    XX(requests, "requests", 1, "%llu requests")                               \
    XX(conns, "connections", 1, " on %llu connections: ")                      \
    XX(served, "served", 1, "served %llu ")                                    \
    XX(matched, "matched", 1, "(matched %llu, ")                               \
    XX(builtin, "builtin", 1, "built-in %llu, ")                               \
    XX(hello, "hello", 1, "hello %llu), ")                                     \
    XX(missed, "missed", 1, "missed %llu, ")                                   \
    XX(unacked, "unacknowledged", 1, "unacknowledged %llu, ")                  \
    XX(bad_input, "bad_input", 1, "bad input %llu, ")                          \
    XX(timeouts, "timeouts", 1, "timed out %llu; ")                            \
    XX(early, "early", 0, "%llu")                                              \
    XX(compressed, "compressed", 1, "compressed replies %llu")                 \
    XX(auth_ok, "auth_ok", 2, "%llu succeeded ")                               \
    XX(speculative, "auth_speculative", 2, "(%llu begun in hello), ")          \
    XX(auth_failed, "auth_failed", 2, "%llu failed; ")                         \
    XX(unauthorized, "unauthorized", 2,                                        \
       "%llu commands refused before authentication")

/*
 * Counters kept per loop and merged, not part of the summary:
 * awaited: awaitable hellos held; streamed: exhaust hello replies re-sent;
 * cursor_ops: getMore / killCursors answered from the cursor table.
 */
#define REPLAY_STATS_INTERNAL(XX)                                              \
    XX(awaited)                                                                \
    XX(streamed)                                                               \
    XX(cursor_ops)

/* XH(field, json_key): delay histograms merged over the loops, in the
 * order of their JSON keys. */
#define REPLAY_STATS_HISTS(XH)                                                 \
    XH(requested, "requested")                                                 \
    XH(achieved, "achieved")                                                   \
    XH(late, "late")                                                           \
    XH(write, "write")                                                         \
    XH(read_lag, "read_lag")                                                   \
    XH(late_first, "late_first")                                               \
    XH(late_queued, "late_queued")

struct replay_stats {
#define XX(field, key, line, text) uint64_t field;
    REPLAY_STATS_COUNTERS(XX)
#undef XX
#define XX(field) uint64_t field;
    REPLAY_STATS_INTERNAL(XX)
#undef XX
    /* requested: delays asked for (held hellos excluded); achieved:
     * write() start - request read time; late: achieved - requested, 0
     * if early; write: duration of a timed reply's write(); read_lag:
     * kernel receive of a request's last byte -> the read() that stamped
     * it; late_first: late of timer releases first in their batch (the
     * loop woke, or got the CPU, late); late_queued: late of timer
     * releases behind others of the same batch (loop.h
     * loop_timer_batch_pos) */
#define XH(field, key) struct delay_hist field;
    REPLAY_STATS_HISTS(XH)
#undef XH
    uint64_t batch_max;          /* most timer releases in one batch */
    uint64_t loop_conns_min;     /* server_stats: fewest / most */
    uint64_t loop_conns_max;     /* connections accepted by one loop */
    struct loop_wake_stats wake; /* the loop's timer wake-ups; merged:
                                    counts summed, max the maximum, the
                                    rest the busiest loop's */
    uint64_t wake_top_n;         /* merge: that loop's wake-ups + 1 */
    struct tlsstats tls;         /* --tls-cert: handshakes (sconn.c) */
};

/* Zero counters, empty histograms. */
void replay_stats_init(struct replay_stats *s);

/* Adds src (one loop's) into dst: counters and histograms summed, the
 * largest batch the largest, the wake-up figures as struct wake says.
 * loop_conns_min / max are server_stats'. */
void replay_stats_merge(struct replay_stats *dst,
                        const struct replay_stats *src);

#endif
