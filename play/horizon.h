/*
 * horizon.h -- how far ahead of the recorded clock `mtrace play`'s trace
 * reader must read (internal to play/).
 *
 * A request's deadline follows the live server (the previous live reply
 * plus the recorded think time), but the trace is read in recorded order.
 * When the live server answers faster than the recorded one, a
 * connection's live schedule runs ahead of the recorded clock (the trace's
 * time mapped to live time, play.c's sched_of): by
 *     ahead = sched(recorded reply time) - live reply time
 * after each reply, and the next request on that connection is due
 * `ahead` before its place on the recorded clock.  The reader keeps the
 * largest such advance of the run (a running maximum: later records of any
 * connection are due no earlier than their recorded-clock time minus it)
 * and takes every record whose recorded-clock time falls within
 * PLAY_LOOKAHEAD_NS plus that advance.  Memory stays bounded by the queues'
 * caps (PLAY_QUEUE_BYTES_MAX, PLAY_QUEUE_REQS_MAX), not by the advance.
 */
#ifndef MT_PLAY_HORIZON_H
#define MT_PLAY_HORIZON_H

#include <stdint.h>

/* The advance after a reply recorded at sched_rec_ns (recorded clock, in
 * live time) came live at live_ns: ahead_ns, or the new advance if larger. */
uint64_t play_horizon_note(uint64_t ahead_ns, uint64_t sched_rec_ns,
                           uint64_t live_ns);

/* The live time from which a record at due_ns on the recorded clock must
 * be read: due_ns - lookahead_ns - ahead_ns, 0 at the earliest. */
uint64_t play_horizon_wake(uint64_t due_ns, uint64_t ahead_ns,
                           uint64_t lookahead_ns);

#endif
