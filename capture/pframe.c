/*
 * pframe.c -- stream framing for the recorder (see pframe.h).
 */
#include "pframe.h"

#include <errno.h>
#include <string.h>

#include "core/mem.h"

#define PFRAME_ALLOC_MIN 4096u

/* Grows the message being received to hold n more bytes. */
static int
pframe_room(struct pframer *fr, size_t n)
{
    struct recq_item *it = fr->cur;
    size_t want = fr->cur_len + n, cap;

    if (want <= it->cap)
        return 0;
    cap = it->cap * 2 > want ? it->cap * 2 : want;
    if (cap > fr->cur_need)
        cap = fr->cur_need;
    it = mt_realloc(it, sizeof(*it) + cap);
    if (it == NULL)
        return -ENOMEM;
    it->cap = cap;
    fr->cur = it;
    return 0;
}

/* Starts a message once its 16-byte header is in fr->hdr. */
static int
pframe_start(struct pframer *fr, struct mt_err *err)
{
    size_t need = 0;
    int rc = wire_frame(fr->hdr, WIRE_HEADER_LEN, WIRE_MSG_LEN_MAX, &need, err);

    if (rc < 0)
        return rc;
    if (fr->pool != NULL && need <= RECQ_ITEM_SMALL)
        fr->cur = recq_batch_item(fr->pool, RECQ_MSG, need);
    else
        fr->cur = recq_item_new(
            RECQ_MSG, need < PFRAME_ALLOC_MIN ? need : PFRAME_ALLOC_MIN);
    if (fr->cur == NULL)
        return mt_err_set(err, -ENOMEM, 0, "out of memory framing a message");
    memcpy(fr->cur->data, fr->hdr, WIRE_HEADER_LEN);
    fr->cur_len = WIRE_HEADER_LEN;
    fr->cur_need = (uint32_t)need;
    return 0;
}

/* See pframe.h.  Cost: one copy of the bytes; an allocation per message. */
int
pframe_feed(struct pframer *fr, const uint8_t *p, size_t n, uint64_t base,
            pframe_msg_fn *cb, void *arg, size_t *left, struct mt_err *err)
{
    size_t k;
    int rc;

    *left = n;
    if (fr->broken)
        return MT_ECLOSED;
    while (n > 0) {
        if (fr->cur == NULL) {
            k = WIRE_HEADER_LEN - fr->hdr_len;
            k = k < n ? k : n;
            memcpy(fr->hdr + fr->hdr_len, p, k);
            fr->hdr_len += (uint32_t)k;
            p += k, n -= k, base += k;
            if (fr->hdr_len < WIRE_HEADER_LEN)
                break;
            if ((rc = pframe_start(fr, err)) < 0)
                goto broken;
        } else {
            k = fr->cur_need - fr->cur_len;
            k = k < n ? k : n;
            if ((rc = pframe_room(fr, k)) < 0) {
                mt_err_set(err, rc, 0, "out of memory framing a message");
                goto broken;
            }
            memcpy(fr->cur->data + fr->cur_len, p, k);
            fr->cur_len += (uint32_t)k;
            p += k, n -= k, base += k;
        }
        if (fr->cur_len == fr->cur_need) {
            struct recq_item *it = fr->cur;
            it->u.msg.wire_len = fr->cur_len;
            fr->cur = NULL;
            fr->hdr_len = 0;
            fr->cur_len = fr->cur_need = 0;
            cb(arg, it, base);
        }
    }
    *left = 0;
    return 0;
broken:
    fr->broken = true;
    *left = n;
    return rc;
}

/* See pframe.h. */
bool
pframe_idle(const struct pframer *fr)
{
    return fr->hdr_len == 0 && fr->cur == NULL;
}

/* See pframe.h. */
struct recq_item *
pframe_take_partial(struct pframer *fr, uint32_t *len)
{
    struct recq_item *it = fr->cur;

    *len = 0;
    if (fr->broken) {
        pframe_free(fr);
        return NULL;
    }
    if (it == NULL && fr->hdr_len == 0)
        return NULL;
    if (it == NULL) {
        *len = fr->hdr_len;
        it = recq_item_new(RECQ_MSG, fr->hdr_len);
        if (it != NULL)
            memcpy(it->data, fr->hdr, fr->hdr_len);
    } else {
        *len = fr->cur_len;
    }
    fr->cur = NULL;
    fr->hdr_len = 0;
    fr->cur_len = fr->cur_need = 0;
    if (it != NULL) {
        it->u.msg.flags = TRACE_MSG_PARTIAL;
        it->u.msg.wire_len = *len;
    }
    return it;
}

/* See pframe.h. */
void
pframe_free(struct pframer *fr)
{
    recq_item_free(fr->cur);
    fr->cur = NULL;
    fr->hdr_len = 0;
    fr->cur_len = fr->cur_need = 0;
}
