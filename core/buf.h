/*
 * buf.h -- a growable byte buffer with a hard maximum set at init (curl's
 * DYNBUF toobig): reaching the maximum is an error, not another realloc.
 */
#ifndef MT_BUF_H
#define MT_BUF_H

#include <stddef.h>
#include <stdint.h>

struct mt_buf {
    uint8_t *data;  /* owned; NULL until the first append */
    size_t len;     /* bytes in use, starting at data */
    size_t cap;     /* bytes allocated */
    size_t len_max; /* appends that would exceed this fail with MT_ETOOBIG */
};

void mt_buf_init(struct mt_buf *b, size_t len_max);
void
mt_buf_free(struct mt_buf *b); /* releases data; b may be reused after init */

/*
 * The growth of mt_buf and of capture's FIFO (capture/pbuf.h): *data (of
 * *cap bytes, owned) is reallocated to *cap (first when 0) doubled until it
 * holds want bytes, at most len_max; want <= len_max.  Nothing is done
 * when *cap >= want.  0, or -ENOMEM with *data and *cap unchanged.
 */
int mt_buf_grow(uint8_t **data, size_t *cap, size_t first, size_t want,
                size_t len_max);

/* Ensures room for n more bytes. 0, MT_ETOOBIG or -ENOMEM. */
int mt_buf_reserve(struct mt_buf *b, size_t n);

/* Appends n bytes. 0, MT_ETOOBIG or -ENOMEM (b unchanged on failure). */
int mt_buf_append(struct mt_buf *b, const void *p, size_t n);

/* Drops the first n bytes (n <= len), moving the rest to the front. */
void mt_buf_consume(struct mt_buf *b, size_t n);

/* Empties the buffer, keeping its memory. */
void mt_buf_reset(struct mt_buf *b);

#endif
