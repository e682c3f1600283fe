/*
 * buf.c -- see buf.h.
 */
#include "buf.h"

#include <errno.h>
#include <string.h>

#include "err.h"
#include "mem.h"

void
mt_buf_init(struct mt_buf *b, size_t len_max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->len_max = len_max;
}

void
mt_buf_free(struct mt_buf *b)
{
    mt_free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

int
mt_buf_reserve(struct mt_buf *b, size_t n)
{
    size_t want, cap;
    uint8_t *p;

    if (n > b->len_max - b->len)
        return MT_ETOOBIG;
    want = b->len + n;
    if (want <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 256;
    while (cap < want)
        cap = cap > SIZE_MAX / 2 ? want : cap * 2;
    if (cap > b->len_max)
        cap = b->len_max;
    p = mt_realloc(b->data, cap);
    if (p == NULL)
        return -ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int
mt_buf_append(struct mt_buf *b, const void *p, size_t n)
{
    int rc;

    if (n == 0)
        return 0;
    rc = mt_buf_reserve(b, n);
    if (rc < 0)
        return rc;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void
mt_buf_consume(struct mt_buf *b, size_t n)
{
    MT_ASSERT(n <= b->len);
    if (n < b->len)
        memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

void
mt_buf_reset(struct mt_buf *b)
{
    b->len = 0;
}
