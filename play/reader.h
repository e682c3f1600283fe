/*
 * reader.h -- the trace reader of `mtrace play`, on a thread of its own.
 *
 * A trace is a sequence of zstd frames of about 1 MiB of records each
 * (core/trace.h); decompressing one takes a few hundred microseconds,
 * during which a reader on the event loop's thread would hold every timer
 * of the schedule.  The thread reads ahead and copies the records play
 * uses (connection open, message, connection close) into a queue of at
 * most PLAY_READER_BYTES_MAX bytes, waiting while it is full until half
 * of it is free (one wake-up per half queue, not per record); the loop
 * takes them without blocking and is woken (loop_wake) when a record
 * arrives after it found the queue empty.
 */
#ifndef MT_PLAY_READER_H
#define MT_PLAY_READER_H

#include <stdbool.h>

#include "core/err.h"
#include "core/loop.h"
#include "core/trace.h"

#define PLAY_READER_BYTES_MAX (8u * 1024 * 1024)

struct play_reader;

/*
 * Opens path (trace_reader_open, in the caller's thread: a file that cannot
 * be opened or has no valid header fails here, err filled) and, when
 * threaded, starts the thread; else play_reader_next reads in the
 * caller's thread (at --max-speed, where a pause costs no precision and
 * the copy and the hand-off would cost throughput).  l: the loop to wake
 * (borrowed; it outlives the reader).  NULL on failure.
 */
struct play_reader *play_reader_open(const char *path, struct loop *l,
                                     bool threaded, struct mt_err *err);

/*
 * The next record, never blocking when threaded.  MT_OK: *rec is filled,
 * its pointers borrowed until the next call.  MT_PARTIAL (threaded only):
 * none read yet; loop_wake(l) follows once one is.  MT_END, or a negative code
 * with err filled, as trace_reader_next returned them in order (after
 * MT_ECORRUPT or MT_ETOOBIG more records may follow; after any other, MT_END).
 */
int play_reader_next(struct play_reader *r, struct trace_rec *rec,
                     struct mt_err *err);

/* Stops and joins the thread, frees r (NULL is a no-op). */
void play_reader_free(struct play_reader *r);

#endif
