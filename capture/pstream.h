/*
 * pstream.h -- one direction of a proxied connection without sockets:
 * what is forwarded, framed, recorded and held for --delay-ms, fed the
 * bytes read and told what was sent.  capture/pconn.c does the syscalls
 * around it; tests and fuzzers feed it directly.
 *
 * Offsets count bytes since the connection opened: in_off (read from the
 * source), out_off (written to the destination), rel_off (what the
 * destination may have: UINT64_MAX unless replies are held) and
 * msg_end_off (the end of the last complete message).  Bytes in
 * [out_off, in_off) that were not forwarded at once wait in out.
 *
 * Framing (pframe.h) works on a copy of the bytes as they arrive: each
 * complete message becomes a record item stamped with the time of the read
 * that brought its last byte, passed to the emit callback.  With a delay,
 * each complete message also gets a hold {ready = arrival + delay, end}:
 * pstream_release() moves rel_off to the end of each hold that is due, so
 * pipelined replies never queue behind each other's delays (DESIGN.md
 * rule 3), and pstream_written() measures the achieved delay of each once
 * its last byte was sent.
 */
#ifndef MT_CAPTURE_PSTREAM_H
#define MT_CAPTURE_PSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/delay_hist.h"
#include "core/err.h"
#include "pbuf.h"
#include "pframe.h"
#include "recq.h"

/* Replies held per direction (--delay-ms). */
#define PSTREAM_HOLDS_MAX 65536

/* A complete message, ownership passes (stamped: conn_id, t_ns, dir). */
typedef void pstream_emit_fn(void *arg, struct recq_item *it);

/* What pstream_in found besides complete messages: bits. */
#define PSTREAM_OK 0u
#define PSTREAM_GARBAGE 1u    /* not MongoDB wire protocol: err says why */
#define PSTREAM_TOO_BIG 2u    /* a message announced over msg_max */
#define PSTREAM_NOMEM 4u      /* no memory for a record or a hold */
#define PSTREAM_HOLDS_FULL 8u /* more than PSTREAM_HOLDS_MAX replies held */

struct phold {
    uint64_t ready_ns, end_off, arrival_ns; /* arrival 0: the tail at EOF */
};

struct pstream {
    struct pbuf out; /* owned: bytes waiting for the destination */
    uint64_t in_off, out_off, rel_off, msg_end_off;
    struct pframer fr;
    /* set by pstream_init */
    uint64_t conn_id;
    uint8_t dir;
    uint64_t delay_ns; /* 0: forwarded as soon as read */
    uint32_t msg_max;  /* largest message accepted; 0: WIRE_MSG_LEN_MAX */
    pstream_emit_fn *emit;
    void *emit_arg;
    /* holds: a ring indexed by monotonic counters h_done <= h_rel <= h_end;
     * [h_rel, h_end) wait for their deadline, [h_done, h_rel) are released
     * but not all written */
    struct phold *holds; /* owned */
    size_t holds_cap, h_done, h_rel, h_end;
    uint64_t msgs;         /* complete messages framed */
    uint64_t rec_bytes;    /* their bytes */
    uint64_t unframed;     /* bytes after a framing error (not recorded) */
    uint64_t msg_start_ns; /* an incomplete message since; 0: none */
    uint32_t too_big_len;  /* the length announced, with PSTREAM_TOO_BIG */
};

/*
 * An empty stream of connection conn_id, direction dir (TRACE_DIR_*);
 * delay_ns > 0 holds each complete message that long.  pool: recycled
 * record items (borrowed), or NULL.
 */
void pstream_init(struct pstream *s, uint64_t conn_id, uint8_t dir,
                  uint64_t delay_ns, uint32_t msg_max, struct recq_batch *pool,
                  pstream_emit_fn *emit, void *emit_arg);

/* Frees the out buffer, the framer's item and the holds. */
void pstream_free(struct pstream *s);

/*
 * n bytes read at t_ns (p: the bytes, already appended to out by the
 * caller or about to be forwarded): advances in_off, frames the copy
 * (complete messages to emit, holds under a delay).  Returns PSTREAM_OK
 * or the PSTREAM_* bits of the problems found (framing stops for good
 * after GARBAGE, or NOMEM of a record; what follows counts as unframed).
 * Cost: O(n) plus the copy of each message.
 */
unsigned pstream_in(struct pstream *s, const uint8_t *p, size_t n,
                    uint64_t t_ns, struct mt_err *err);

/* pstream_in in two steps, so that bytes can be forwarded before they are
 * framed: n bytes were read (in_off advances); then the last n bytes read,
 * p, are framed. */
void pstream_read(struct pstream *s, size_t n);
unsigned pstream_frame(struct pstream *s, const uint8_t *p, size_t n,
                       uint64_t t_ns, struct mt_err *err);

/* The source ended at now_ns: under a delay, the incomplete tail is held
 * too (from now).  PSTREAM_OK, PSTREAM_HOLDS_FULL or PSTREAM_NOMEM. */
unsigned pstream_eof(struct pstream *s, uint64_t now_ns);

/* True when nothing read is waiting: bytes read now may go out at once. */
bool pstream_direct(const struct pstream *s);

/* Bytes of out the destination may have now (from out.data + out.head). */
size_t pstream_sendable(const struct pstream *s);

/* n bytes were written to the destination (from out when from_out, else
 * straight from the read). */
void pstream_sent(struct pstream *s, size_t n, bool from_out);

/* Bytes waiting that count against a backlog bound: not those of an
 * incomplete held message (it must be able to complete). */
size_t pstream_backlog(const struct pstream *s);

/* Holds waiting for their deadline. */
size_t pstream_held(const struct pstream *s);

/* True when released holds wait to be written (take t_send before). */
bool pstream_releasing(const struct pstream *s);

/* The earliest deadline of a waiting hold; 0 when none waits. */
uint64_t pstream_next_ready(const struct pstream *s);

/* Releases every hold due at now_ns (rel_off moves); how many. */
size_t pstream_release(struct pstream *s, uint64_t now_ns);

/* After sends that began at t_send: the achieved delay of each released
 * hold now written goes into hist (whole messages only). */
void pstream_written(struct pstream *s, uint64_t t_send,
                     struct delay_hist *hist);

/* True between messages, with nothing waiting. */
bool pstream_idle(const struct pstream *s);

#endif
