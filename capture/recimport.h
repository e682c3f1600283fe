/*
 * recimport.h -- `mtrace capture --recording`: turns mongod's traffic
 * recordings (capture/recording.h) into an mtrace trace.  What maps to
 * what, and what a recording cannot tell, is in docs/recording.md.
 */
#ifndef MT_RECIMPORT_H
#define MT_RECIMPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "recording.h"

struct trace_writer;
struct redact_cfg;

/* What an import saw; `problems` counts everything that lost data. */
struct recimport_stats {
    uint64_t files, records, messages, c2s, s2c;
    uint64_t sessions, session_events, dup_starts, synthetic;
    uint64_t unknown, bad_records, truncated, bad_size, unread_bytes;
    uint64_t missing_files; /* in checksum.txt, not in the directory */
    uint64_t malformed, msg_crc_errors;
    uint64_t crc_ok, crc_bad, crc_unchecked;
    uint64_t order_min, order_max, order_missing;
    uint64_t t_max_ns;
    uint64_t problems;
};

struct recimport;

/*
 * An importer writing to w (borrowed) records of the given layout.  NULL
 * on ENOMEM.  redact borrowed (NULL: none).
 */
struct recimport *recimport_new(struct trace_writer *w, int layout,
                                const struct redact_cfg *redact);

/*
 * One record: a session event opens or closes its connection, a message
 * becomes a message record (direction from the event, or inferred in the
 * date layout; OP_COMPRESSED with its decompressed form; a request the
 * server made up for an exhaust stream dropped).  Messages that do not
 * parse are written flagged MALFORMED and counted (a problem).  Returns 0,
 * or the trace writer's error (fatal).
 */
int recimport_packet(struct recimport *im, const struct recording_packet *p,
                     struct mt_err *err);

/* Counts a problem of the input (for recimport_stats' `problems`) and
 * prints its line (at most a few dozen lines, then a count). */
void recimport_problem(struct recimport *im, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Closes the connections still open (reason shutdown, at the last time
 * seen) and writes the capture statistics.  0 or the writer's error. */
int recimport_finish(struct recimport *im, struct mt_err *err);

struct recimport_stats *recimport_stats(struct recimport *im);

/* Names the file (borrowed until the next call) and the record's offset
 * in it that problem lines cite. */
void recimport_set_where(struct recimport *im, const char *file, uint64_t off);

/* NULL is a no-op. */
void recimport_free(struct recimport *im);

#endif
