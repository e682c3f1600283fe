/*
 * rd.h -- the one bounded reader for untrusted bytes (socket data, pcap
 * packets, trace files).
 *
 * Every accessor checks the requested length against what is left before
 * touching memory, decodes with memcpy plus little-endian conversion (no
 * unaligned loads, no pointer arithmetic past the end), and advances only
 * on success.  Bounds are tested as `n > left`, never as `p + n > end`
 * (tcpdump's ND_TTEST_LEN; zstd mem.h MEM_readLE32).
 */
#ifndef MT_RD_H
#define MT_RD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct rd {
    const uint8_t *p; /* borrowed: the caller's buffer */
    size_t left;      /* bytes readable from p */
};

static inline struct rd
rd_init(const void *p, size_t len)
{
    struct rd r = {(const uint8_t *)p, len};
    return r;
}

static inline bool
rd_skip(struct rd *r, size_t n)
{
    if (n > r->left)
        return false;
    r->p += n;
    r->left -= n;
    return true;
}

static inline bool
rd_u8(struct rd *r, uint8_t *v)
{
    if (r->left < 1)
        return false;
    *v = r->p[0];
    r->p++;
    r->left--;
    return true;
}

static inline bool
rd_le16(struct rd *r, uint16_t *v)
{
    if (r->left < 2)
        return false;
    *v = (uint16_t)(r->p[0] | (uint16_t)r->p[1] << 8);
    r->p += 2;
    r->left -= 2;
    return true;
}

static inline bool
rd_be16(struct rd *r, uint16_t *v)
{
    if (r->left < 2)
        return false;
    *v = (uint16_t)((uint16_t)r->p[0] << 8 | r->p[1]);
    r->p += 2;
    r->left -= 2;
    return true;
}

static inline bool
rd_le32(struct rd *r, uint32_t *v)
{
    if (r->left < 4)
        return false;
    *v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
         (uint32_t)r->p[3] << 24;
    r->p += 4;
    r->left -= 4;
    return true;
}

static inline bool
rd_be32(struct rd *r, uint32_t *v)
{
    if (r->left < 4)
        return false;
    *v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 |
         (uint32_t)r->p[2] << 8 | (uint32_t)r->p[3];
    r->p += 4;
    r->left -= 4;
    return true;
}

static inline bool
rd_le32s(struct rd *r, int32_t *v)
{
    uint32_t u;
    if (!rd_le32(r, &u))
        return false;
    memcpy(v, &u, sizeof(*v));
    return true;
}

static inline bool
rd_le64(struct rd *r, uint64_t *v)
{
    uint32_t lo, hi;
    if (r->left < 8)
        return false;
    rd_le32(r, &lo);
    rd_le32(r, &hi);
    *v = (uint64_t)hi << 32 | lo;
    return true;
}

static inline bool
rd_le64s(struct rd *r, int64_t *v)
{
    uint64_t u;
    if (!rd_le64(r, &u))
        return false;
    memcpy(v, &u, sizeof(*v));
    return true;
}

/* A view of the next n bytes; *out is borrowed from the buffer. */
static inline bool
rd_bytes(struct rd *r, size_t n, const uint8_t **out)
{
    if (n > r->left)
        return false;
    *out = r->p;
    r->p += n;
    r->left -= n;
    return true;
}

/* A NUL-terminated string wholly inside the buffer; *out borrowed, *len
 * excludes the NUL. */
static inline bool
rd_cstr(struct rd *r, const char **out, size_t *len)
{
    const uint8_t *nul;
    size_t n;
    if (r->left == 0)
        return false;
    nul = (const uint8_t *)memchr(r->p, 0, r->left);
    if (nul == NULL)
        return false;
    n = (size_t)(nul - r->p);
    *out = (const char *)r->p;
    if (len != NULL)
        *len = n;
    r->p += n + 1;
    r->left -= n + 1;
    return true;
}

/* Little-endian stores for encoders (dst must hold the bytes). */
static inline void
wr_le32(uint8_t *dst, uint32_t v)
{
    dst[0] = (uint8_t)v;
    dst[1] = (uint8_t)(v >> 8);
    dst[2] = (uint8_t)(v >> 16);
    dst[3] = (uint8_t)(v >> 24);
}

static inline void
wr_le64(uint8_t *dst, uint64_t v)
{
    wr_le32(dst, (uint32_t)v);
    wr_le32(dst + 4, (uint32_t)(v >> 32));
}

#endif
