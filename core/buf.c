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
mt_buf_grow(uint8_t **data, size_t *cap, size_t first, size_t want,
            size_t len_max)
{
    size_t c = *cap ? *cap : first;
    uint8_t *p;

    MT_ASSERT(want <= len_max);
    if (*cap >= want)
        return 0;
    while (c < want)
        c = c > SIZE_MAX / 2 ? want : c * 2;
    if (c > len_max)
        c = len_max;
    p = mt_realloc(*data, c);
    if (p == NULL)
        return -ENOMEM;
    *data = p;
    *cap = c;
    return 0;
}

int
mt_buf_reserve(struct mt_buf *b, size_t n)
{
    if (n > b->len_max - b->len)
        return MT_ETOOBIG;
    return mt_buf_grow(&b->data, &b->cap, 256, b->len + n, b->len_max);
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
