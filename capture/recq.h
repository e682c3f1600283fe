/*
 * recq.h -- the proxy's record queue and trace-writer thread.
 *
 * Event loops hand complete records (connection open/close, messages,
 * TLS handshakes) to
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
/* The writer thread runs this much nicer than the process (setpriority on
 * its thread id): its zstd compression comes in bursts of milliseconds,
 * and on a busy machine a forwarding loop woken by a packet or a release
 * timer then preempts it at once instead of waiting in the run queue. */
#define RECQ_WRITER_NICE 10

/* RECQ_TLS: data[] holds a struct trace_tls (copied in and out with
 * memcpy; one per TLS handshake, so its ~600 bytes stay out of the union
 * every message item carries). */
enum recq_kind { RECQ_OPEN, RECQ_CLOSE, RECQ_MSG, RECQ_TLS };

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

/*
 * Records a producer (one event loop) collects without locking and queues
 * with one lock per loop tick (recq_push_batch from the before-sleep hook):
 * the queue's lock and cache lines are touched once per tick instead of
 * once per message.  A batch that holds RECQ_BATCH_BYTES bytes should be
 * pushed at once, so back-pressure still sees what was read.
 */
struct recq_batch {
    struct recq_item *head, *tail; /* owned until pushed */
    size_t count, bytes;
    struct recq_item *spare; /* owned: recycled items (recq_batch_item) */
    size_t nspare;
};

#define RECQ_BATCH_BYTES (1u << 20)

/*
 * Small records are recycled instead of going through malloc/free once
 * each: the writer keeps the items it wrote whose data[] holds exactly
 * RECQ_ITEM_SMALL bytes (at most RECQ_SPARE_MAX of them), and a loop with
 * none left takes them all back when it pushes its next batch (under the
 * lock it takes anyway).
 */
#define RECQ_ITEM_SMALL 512
#define RECQ_SPARE_MAX 8192

/* A zeroed item of kind with room for len bytes: a recycled one from b
 * when len <= RECQ_ITEM_SMALL (cap is then RECQ_ITEM_SMALL), else
 * recq_item_new.  NULL on ENOMEM.  Only b's producer may call it. */
struct recq_item *recq_batch_item(struct recq_batch *b, enum recq_kind kind,
                                  size_t len);

/* Appends it to b (ownership passes to b).  Not thread-safe: b belongs to
 * one producer.  True when b reached RECQ_BATCH_BYTES (push it now). */
bool recq_batch_add(struct recq_batch *b, struct recq_item *it);

/* Queues everything in b, in order, under one lock, and empties b.
 * Thread-safe with respect to q.  An empty batch costs nothing. */
void recq_push_batch(struct recq *q, struct recq_batch *b);

/* Frees the items of a batch that will not be pushed and its recycled
 * items; b is empty after. */
void recq_batch_free(struct recq_batch *b);

/* True while the queue is over its bound: stop reading sockets. Lock-free. */
bool recq_over(const struct recq *q);

/*
 * Writes everything queued, stops the thread, flushes the trace (not
 * closed), fills *st and frees q.  Returns 0 or the first write error.
 */
int recq_close(struct recq *q, struct recq_stats *st);

#endif
