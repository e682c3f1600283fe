/*
 * recq.h -- the proxy's record queue and trace-writer thread.
 *
 * Event loops hand complete records (connection open/close, messages) to
 * one writer thread through a queue bounded in bytes and in records
 * (DESIGN.md rule 5).  A push never fails for lack of room: a loop checks
 * recq_over() before each socket read and, while the queue is over its
 * bound, stops reading (back-pressure) instead of dropping.  The overshoot
 * is at most what the loops read before their next check (one read per
 * connection).  When the writer brings the queue back under half its bound
 * it calls the resume callback so paused loops wake.
 *
 * The writer thread decompresses OP_COMPRESSED messages (so the loops never
 * pay for it), writes records in queue order, and calls trace_writer_tick
 * at least every RECQ_TICK_NS so a killed process loses at most the last
 * ~100 ms (DESIGN.md rule 6).
 */
#ifndef MT_CAPTURE_RECQ_H
#define MT_CAPTURE_RECQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/redact.h"
#include "core/trace.h"

#define RECQ_TICK_NS (20u * 1000 * 1000)

enum recq_kind { RECQ_OPEN, RECQ_CLOSE, RECQ_MSG };

/* One queued record; message bytes follow the struct. */
struct recq_item {
    struct recq_item *next; /* owned by the queue while queued */
    enum recq_kind kind;
    union {
        struct trace_conn_open open;
        struct trace_conn_close close;
        struct trace_msg msg; /* wire points into data[]; plain is NULL */
    } u;
    size_t cap; /* bytes allocated in data[] */
    uint8_t data[];
};

/* What the writer thread did (read after recq_close). */
struct recq_stats {
    uint64_t records;           /* records written */
    uint64_t msgs;              /* message records written */
    uint64_t msg_bytes;         /* wire bytes of those messages */
    uint64_t decompressed;      /* OP_COMPRESSED messages also stored plain */
    uint64_t decompress_failed; /* OP_COMPRESSED kept as seen only */
    uint64_t write_errors;      /* records the trace writer refused */
    uint64_t pauses;            /* times the queue went over its bound */
    uint64_t max_bytes;         /* high-water mark of queued bytes */
    uint64_t redacted;          /* messages changed by --redact */
    int first_error;            /* first write error code, 0 if none */
};

struct recq;

typedef void recq_resume_fn(void *arg);

#define RECQ_NO_START (1u << 0) /* recq_new: start the writer later */

/*
 * A queue in front of w (borrowed until recq_close; the caller closes w
 * after).  bytes_max/count_max bound the queue.  resume(arg) is called from
 * the writer thread when the queue drops under half its bound after having
 * been over it.  Starts the writer thread unless flags has RECQ_NO_START
 * (then recq_start; tests use it to fill the queue first).  NULL with err
 * on failure.
 */
struct recq *recq_new(struct trace_writer *w, size_t bytes_max,
                      size_t count_max, recq_resume_fn *resume, void *arg,
                      unsigned flags, struct mt_err *err);

/* Before recq_start: redact every message with cfg (borrowed; outlives
 * q) before it is written (core/redact.h).  NULL: no redaction. */
void recq_set_redact(struct recq *q, const struct redact_cfg *cfg);

/* Starts the writer thread of a RECQ_NO_START queue. 0 or -errno. */
int recq_start(struct recq *q, struct mt_err *err);

/* A message item with room for len bytes (data[]); NULL on ENOMEM. */
struct recq_item *recq_item_new(enum recq_kind kind, size_t len);
void recq_item_free(struct recq_item *it); /* NULL ok */

/* Queues it (ownership passes to the queue).  Thread-safe. */
void recq_push(struct recq *q, struct recq_item *it);

/* True while the queue is over its bound: stop reading sockets. Lock-free. */
bool recq_over(const struct recq *q);

/*
 * Writes everything queued, stops the thread, flushes the trace (not
 * closed), fills *st and frees q.  Returns 0 or the first write error.
 */
int recq_close(struct recq *q, struct recq_stats *st);

#endif
