/*
 * pbuf.c -- the proxy's out buffer (see pbuf.h).
 */
#include "pbuf.h"

#include <errno.h>
#include <string.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/mem.h"

/* See pbuf.h.  Cost: a memmove of the waiting bytes when compacting. */
int
pbuf_reserve(struct pbuf *b, size_t n, size_t len_max)
{
    size_t len = pbuf_len(b);

    if (b->cap - b->tail >= n)
        return 0;
    if (b->head > 0) {
        memmove(b->data, b->data + b->head, len);
        b->head = 0;
        b->tail = len;
        if (b->cap - b->tail >= n)
            return 0;
    }
    if (n > len_max - len)
        return MT_ETOOBIG;
    return mt_buf_grow(&b->data, &b->cap, 64 * 1024, len + n, len_max);
}

/* See pbuf.h. */
void
pbuf_consume(struct pbuf *b, size_t n)
{
    b->head += n;
    if (b->head == b->tail)
        b->head = b->tail = 0;
}

/* See pbuf.h. */
void
pbuf_free(struct pbuf *b)
{
    mt_free(b->data);
    memset(b, 0, sizeof(*b));
}
