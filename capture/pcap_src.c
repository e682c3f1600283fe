/*
 * pcap_src.c -- native timestamp precision of pcap / pcapng files.
 *
 * pcap (https://www.ietf.org/archive/id/draft-ietf-opsawg-pcap-03.html):
 *   magic a1b2c3d4 = microseconds, a1b23c4d = nanoseconds, either order.
 * pcapng (https://www.ietf.org/archive/id/draft-ietf-opsawg-pcapng-01.html):
 *   blocks: type[4] length[4] body length[4]; SHB 0x0a0d0d0a with the
 *   byte-order magic 1a2b3c4d; IDB type 1: linktype[2] rsvd[2] snaplen[4]
 *   options (code[2] len[2] value, padded to 4); if_tsresol = code 9, one
 *   byte: bit 7 clear -> 10^-v s, set -> 2^-v s; absent -> 10^-6.
 * libpcap opened with PCAP_TSTAMP_PRECISION_NANO always reports nano, so
 * the file's own precision is read here, through core/rd.h.
 */
#include "pcap_src.h"

#include <stdbool.h>

#include "core/rd.h"

#define BLOCKS_MAX 16

static bool
rd_u32o(struct rd *r, bool be, uint32_t *v)
{
    return be ? rd_be32(r, v) : rd_le32(r, v);
}

static bool
rd_u16o(struct rd *r, bool be, uint16_t *v)
{
    return be ? rd_be16(r, v) : rd_le16(r, v);
}

static uint32_t
tsresol_ns(uint8_t v)
{
    uint64_t ns = 1000000000ull;

    if (v & 0x80) { /* 2^-v seconds */
        v &= 0x7f;
        return v >= 30 ? 1 : (uint32_t)(ns >> v ? ns >> v : 1);
    }
    for (uint8_t i = 0; i < v && ns > 1; i++)
        ns /= 10;
    return (uint32_t)ns;
}

/* Options of an IDB body (after linktype, reserved, snaplen). */
static uint32_t
idb_precision(struct rd r, bool be)
{
    uint16_t code, len;
    const uint8_t *val;

    while (rd_u16o(&r, be, &code) && rd_u16o(&r, be, &len)) {
        if (code == 0)
            break;
        if (!rd_bytes(&r, len, &val) || !rd_skip(&r, (4 - len % 4) % 4))
            break;
        if (code == 9 && len >= 1)
            return tsresol_ns(val[0]);
    }
    return 1000;
}

static uint32_t
pcapng_precision(struct rd r)
{
    uint32_t type, blen, bom;
    bool be = false;
    struct rd body;

    for (int i = 0; i < BLOCKS_MAX; i++) {
        struct rd hdr = r;
        if (!rd_le32(&hdr, &type))
            break;
        if (i == 0) {
            struct rd b2 = hdr;
            if (!rd_skip(&b2, 4) || !rd_le32(&b2, &bom))
                break;
            be = bom == 0x4d3c2b1a;
        }
        if (!rd_u32o(&r, be, &type) || !rd_u32o(&r, be, &blen))
            break;
        if (blen < 12 || blen % 4 != 0 || blen - 8 > r.left)
            break;
        body = rd_init(r.p, blen - 12);
        if (type == 1 && rd_skip(&body, 8))
            return idb_precision(body, be);
        rd_skip(&r, blen - 8);
    }
    return 1000;
}

uint32_t
pcap_src_precision_ns(const uint8_t *p, size_t n)
{
    struct rd r = rd_init(p, n), t = r;
    uint32_t magic;

    if (!rd_le32(&t, &magic))
        return 1000;
    switch (magic) {
    case 0xa1b2c3d4:
    case 0xd4c3b2a1:
        return 1000;
    case 0xa1b23c4d:
    case 0x4d3cb2a1:
        return 1;
    case 0x0a0d0d0a:
        return pcapng_precision(r);
    default:
        return 1000;
    }
}
