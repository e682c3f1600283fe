/*
 * pbuf.h -- the proxy's per-direction out buffer: bytes read from one side
 * that the other side has not accepted yet, in [head, tail) of data.
 * Grows on demand (64 KiB first; core/buf.h's mt_buf_grow), compacts
 * before growing, never past the max the caller passes.  Not an mt_buf:
 * consuming moves head (O(1)) and the waiting bytes move only when room is
 * needed, where mt_buf keeps its bytes at data and moves them on every
 * consume (its users parse from data[0]).
 */
#ifndef MT_CAPTURE_PBUF_H
#define MT_CAPTURE_PBUF_H

#include <stddef.h>
#include <stdint.h>

struct pbuf {
    uint8_t *data; /* owned; NULL until the first reserve */
    size_t cap, head, tail;
};

/* Bytes waiting. */
static inline size_t
pbuf_len(const struct pbuf *b)
{
    return b->tail - b->head;
}

/*
 * Makes room for n more bytes at data + tail, keeping pbuf_len() + n <=
 * len_max.  0, MT_ETOOBIG or -ENOMEM (b unchanged but maybe compacted).
 */
int pbuf_reserve(struct pbuf *b, size_t n, size_t len_max);

/* Drops the first n waiting bytes; an emptied buffer restarts at 0. */
void pbuf_consume(struct pbuf *b, size_t n);

/* Frees data; b is empty afterwards. */
void pbuf_free(struct pbuf *b);

#endif
