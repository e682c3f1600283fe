/*
 * tcp_reasm.h -- TCP reassembly of one direction of one flow.
 *
 * Pure: fed decoded segments (sequence number, captured bytes, length on
 * the wire), it calls back with in-order byte runs and with gap events
 * (bytes that will never be seen).  No pcap, no I/O; unit-testable.
 *
 * Handles out-of-order segments (buffered, at most ooo_max bytes),
 * retransmissions and overlaps (trimmed: the first copy of a byte wins),
 * 32-bit sequence wraparound (serial-number arithmetic, RFC 1982), streams
 * whose SYN was not captured (the first data segment sets the origin),
 * segments truncated by the snap length (captured prefix delivered, the
 * rest is a gap), and lost segments (a gap when the peer acknowledges
 * bytes we never saw, when the buffer limit is reached, or at flush).
 */
#ifndef MT_TCP_REASM_H
#define MT_TCP_REASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TCP_REASM_OOO_MAX_DEFAULT (4u * 1024 * 1024)

/* Callbacks.  A negative return aborts the current call with that code. */
struct tcp_reasm_ops {
    /* n in-order bytes; p borrowed for the call.  t_ns: arrival of the
     * segment that completed them. */
    int (*data)(void *ctx, const uint8_t *p, size_t n, uint64_t t_ns);
    /* n bytes were lost at this point of the stream. */
    int (*gap)(void *ctx, uint64_t n, uint64_t t_ns);
};

/* Counters, shareable between streams (the caller owns them). */
struct tcp_reasm_stats {
    uint64_t out_of_order;  /* segments buffered ahead of a hole */
    uint64_t retransmitted; /* segments wholly or partly seen before */
    uint64_t gaps;          /* holes declared */
    uint64_t gap_bytes;     /* bytes in those holes */
    uint64_t truncated;     /* segments cut by the snap length */
};

struct tcp_seg; /* buffered out-of-order segment (tcp_reasm.c) */

struct tcp_reasm {
    bool have_seq;       /* next is meaningful */
    bool saw_syn;        /* origin from a SYN (else: mid-stream start) */
    bool have_fin;       /* fin_seq is meaningful */
    uint32_t fin_seq;    /* sequence number the FIN occupies */
    uint32_t next;       /* sequence number of the next in-order byte */
    struct tcp_seg *ooo; /* owned: sorted by seq, non-overlapping starts */
    size_t ooo_bytes;    /* captured bytes buffered in ooo */
    size_t ooo_max;
    const struct tcp_reasm_ops *ops; /* borrowed */
    void *ctx;                       /* borrowed */
    struct tcp_reasm_stats *st;      /* borrowed */
};

/* Initialises r; nothing is allocated until a segment must wait. */
void tcp_reasm_init(struct tcp_reasm *r, size_t ooo_max,
                    const struct tcp_reasm_ops *ops, void *ctx,
                    struct tcp_reasm_stats *st);

/* Frees buffered segments (without delivering them). */
void tcp_reasm_free(struct tcp_reasm *r);

/* A SYN with initial sequence number isn: the stream starts at isn + 1.
 * A repeated SYN is ignored. */
void tcp_reasm_syn(struct tcp_reasm *r, uint32_t isn);

/*
 * One segment: payload bytes p[0..cap) of a segment of len bytes on the
 * wire (cap <= len; cap < len when the snap length cut it) starting at
 * sequence number seq.  Delivers whatever became in-order.  Returns 0, a
 * callback's negative code, or -ENOMEM.
 */
int tcp_reasm_segment(struct tcp_reasm *r, uint32_t seq, const uint8_t *p,
                      size_t cap, size_t len, uint64_t t_ns);

/*
 * The peer acknowledged everything before ack.  Bytes up to ack that were
 * never captured are declared a gap (the peer got them; we will not).
 */
int tcp_reasm_ack(struct tcp_reasm *r, uint32_t ack, uint64_t t_ns);

/* A FIN at sequence number fin_seq (seq + payload length of the FIN
 * segment): acknowledgements past it are not lost data. */
void tcp_reasm_fin(struct tcp_reasm *r, uint32_t fin_seq);

/* End of stream (FIN, RST, idle, end of input): delivers every buffered
 * segment, declaring the holes between them as gaps. */
int tcp_reasm_flush(struct tcp_reasm *r, uint64_t t_ns);

/* Serial-number comparisons (RFC 1982 for 32-bit sequence numbers). */
static inline bool
tcp_seq_lt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

static inline bool
tcp_seq_le(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) <= 0;
}

#endif
