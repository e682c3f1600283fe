/*
 * pframe.h -- framing a copy of one direction of a proxied stream into
 * record-queue items, as the bytes arrive.
 *
 * The 16-byte header is collected first and checked with wire_frame()
 * (length 16..WIRE_MSG_LEN_MAX, known opCode); nothing else is parsed.  The
 * message's item then grows as its bytes arrive (a header that announces
 * 48 MB does not allocate 48 MB up front).  A bad header breaks the framer
 * for good: a byte stream has no resynchronisation point.
 */
#ifndef MT_CAPTURE_PFRAME_H
#define MT_CAPTURE_PFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/wire.h"
#include "recq.h"

struct pframer {
    uint8_t hdr[WIRE_HEADER_LEN]; /* header of the message being received */
    uint32_t hdr_len;
    struct recq_item *cur; /* owned: the message being received, or NULL */
    uint32_t cur_len, cur_need;
    bool broken;             /* a framing error or ENOMEM: no more framing */
    struct recq_batch *pool; /* borrowed: recycled items for messages of
                                up to RECQ_ITEM_SMALL bytes; NULL: malloc */
};

/*
 * Called for each complete message: it (ownership passes) holds the bytes
 * in data[], it->u.msg.wire_len set; end_off is the stream offset just past
 * the message.
 */
typedef void pframe_msg_fn(void *arg, struct recq_item *it, uint64_t end_off);

/*
 * Frames n bytes at stream offset base.  0 when all were taken; otherwise
 * MT_EPROTO / MT_ETOOBIG (bad header: err says why, hdr[] holds it) or
 * -ENOMEM, fr->broken set and *left = bytes of p not framed.  On a broken
 * framer returns MT_ECLOSED with *left = n.
 */
int pframe_feed(struct pframer *fr, const uint8_t *p, size_t n, uint64_t base,
                pframe_msg_fn *cb, void *arg, size_t *left, struct mt_err *err);

/* True between messages (nothing half-received). */
bool pframe_idle(const struct pframer *fr);

/*
 * The bytes of a message cut short (header prefix or more) as an item with
 * wire_len set and TRACE_MSG_PARTIAL, ownership to the caller; NULL when
 * there is none (or on ENOMEM: *len still says how many bytes were lost).
 * The framer is empty afterwards.
 */
struct recq_item *pframe_take_partial(struct pframer *fr, uint32_t *len);

/* Frees what the framer holds. */
void pframe_free(struct pframer *fr);

#endif
