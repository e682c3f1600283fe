/*
 * linkdec.c -- link layer, IPv4 / IPv6 and TCP header decoding for the pcap
 * path.  Every read goes through core/rd.h and stops at caplen.
 *
 * Link layers (https://www.tcpdump.org/linktypes.html):
 *   EN10MB     dst[6] src[6] type[2] (type 0x8100/0x88a8/0x9100: tci[2]
 * type[2]) LINUX_SLL  pkttype[2] hatype[2] halen[2] addr[8] protocol[2] (16
 * bytes) LINUX_SLL2 protocol[2] rsvd[2] ifindex[4] hatype[2] pkttype[1]
 *              halen[1] addr[8]                                       (20
 * bytes) NULL       family[4] in the capturing host's byte order LOOP family[4]
 * big-endian RAW/IPV4/IPV6  the IP header first (version nibble) IPv4: RFC 791;
 * IPv6: RFC 8200 (extension headers skipped, fragments are not reassembled);
 * TCP: RFC 9293 (data offset, flags, seq, ack).
 */
#include "linkdec.h"

#include <pcap/dlt.h>
#include <string.h>

#include "core/rd.h"

#define ETH_IPV4 0x0800
#define ETH_IPV6 0x86dd
#define ETH_VLAN 0x8100
#define ETH_QINQ 0x88a8
#define ETH_QINQ_OLD 0x9100
#define VLAN_TAGS_MAX 4
#define IPV6_EXT_MAX 8

/* The bytes after the link header: what the IP layer may read. */
struct ip_ctx {
    struct rd r;      /* captured bytes from the IP header on */
    size_t wire_left; /* bytes on the wire from the IP header on */
    size_t base;      /* offset of the IP header in the packet */
};

/* Big-endian fields inside a header view that rd_bytes checked whole. */
static inline uint16_t
view_be16(const uint8_t *h)
{
    return (uint16_t)((uint16_t)h[0] << 8 | h[1]);
}

static inline uint32_t
view_be32(const uint8_t *h)
{
    return (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 |
           (uint32_t)h[3];
}

/* The fixed 20 bytes of the TCP header are read as one checked view (one
 * bound test per header instead of one per field). */
static int
decode_tcp(struct ip_ctx *c, size_t ip_payload_len, struct linkdec_pkt *out,
           struct mt_err *err)
{
    struct rd r = c->r;
    const uint8_t *h;
    uint16_t offflags;
    size_t thl;

    if (!rd_bytes(&r, 20, &h))
        return LINKDEC_TRUNC;
    out->tcp_off = c->base;
    offflags = view_be16(h + 12);
    thl = (size_t)(offflags >> 12) * 4;
    if (thl < 20 || thl > ip_payload_len)
        return mt_err_set(err, MT_EPROTO, c->base,
                          "TCP data offset %zu outside 20..%zu", thl,
                          ip_payload_len);
    r = c->r;
    if (!rd_skip(&r, thl))
        return LINKDEC_TRUNC;
    out->sport = view_be16(h);
    out->dport = view_be16(h + 2);
    out->seq = view_be32(h + 4);
    out->ack = view_be32(h + 8);
    out->flags = (uint8_t)(offflags & 0x3f);
    out->payload_len = ip_payload_len - thl;
    out->payload_cap = r.left < out->payload_len ? r.left : out->payload_len;
    out->payload = r.p;
    return MT_OK;
}

static int
decode_ipv4(struct ip_ctx *c, struct linkdec_pkt *out, struct mt_err *err)
{
    struct rd r = c->r;
    const uint8_t *h; /* the fixed 20 bytes, checked as one view */
    uint8_t vihl, proto;
    uint16_t total, frag;
    size_t ihl;

    if (!rd_bytes(&r, 20, &h))
        return LINKDEC_TRUNC;
    vihl = h[0];
    total = view_be16(h + 2);
    frag = view_be16(h + 6);
    proto = h[9];
    ihl = (size_t)(vihl & 0x0f) * 4;
    if ((vihl >> 4) != 4 || ihl < 20)
        return mt_err_set(err, MT_EPROTO, c->base,
                          "bad IPv4 version/header length 0x%02x", vihl);
    if (total == 0) /* TSO on the capturing host: trust the frame length */
        total = c->wire_left > 0xffff ? 0xffff : (uint16_t)c->wire_left;
    if (total < ihl || total > c->wire_left)
        return mt_err_set(err, MT_EPROTO, c->base,
                          "IPv4 total length %u outside %zu..%zu", total, ihl,
                          c->wire_left);
    if (proto != 6)
        return LINKDEC_SKIP;
    out->ip_off = c->base;
    if ((frag & 0x3fff) != 0) /* MF set or a non-zero offset */
        return LINKDEC_SKIP;
    out->family = 4;
    memcpy(out->src, h + 12, 4); /* the rest: zeroed by linkdec_decode */
    memcpy(out->dst, h + 16, 4);
    r = c->r;
    if (!rd_skip(&r, ihl))
        return LINKDEC_TRUNC;
    /* Ethernet padding past the IP datagram is not part of it. */
    if (r.left > total - ihl)
        r.left = total - ihl;
    c->r = r;
    c->base += ihl;
    return decode_tcp(c, total - ihl, out, err);
}

/* Skips IPv6 extension headers; *nh is the next header on return. */
static int
skip_ipv6_ext(struct ip_ctx *c, uint8_t *nh, size_t *plen, struct mt_err *err)
{
    for (int i = 0; i < IPV6_EXT_MAX; i++) {
        struct rd r = c->r;
        uint8_t next, hlen;
        uint16_t frag;
        size_t n;

        switch (*nh) {
        case 0:  /* hop-by-hop */
        case 43: /* routing */
        case 60: /* destination options */
        case 51: /* AH */
            if (!rd_u8(&r, &next) || !rd_u8(&r, &hlen))
                return LINKDEC_TRUNC;
            n = *nh == 51 ? ((size_t)hlen + 2) * 4 : ((size_t)hlen + 1) * 8;
            break;
        case 44: /* fragment */
            if (!rd_u8(&r, &next) || !rd_u8(&r, &hlen) || !rd_be16(&r, &frag))
                return LINKDEC_TRUNC;
            if ((frag & 0xfff9) != 0) /* offset or M flag: a real fragment */
                return LINKDEC_SKIP;
            n = 8;
            break;
        default:
            return MT_OK;
        }
        if (n > *plen)
            return mt_err_set(err, MT_EPROTO, c->base,
                              "IPv6 extension header %u longer than payload",
                              *nh);
        if (!rd_skip(&c->r, n))
            return LINKDEC_TRUNC;
        *plen -= n;
        c->base += n;
        *nh = next;
    }
    return LINKDEC_SKIP; /* absurd chain */
}

static int
decode_ipv6(struct ip_ctx *c, struct linkdec_pkt *out, struct mt_err *err)
{
    struct rd r = c->r;
    uint32_t vtcfl;
    uint16_t plen16;
    uint8_t nh, hops;
    const uint8_t *src, *dst;
    size_t plen;
    int rc;

    if (!rd_be32(&r, &vtcfl) || !rd_be16(&r, &plen16) || !rd_u8(&r, &nh) ||
        !rd_u8(&r, &hops) || !rd_bytes(&r, 16, &src) || !rd_bytes(&r, 16, &dst))
        return LINKDEC_TRUNC;
    if ((vtcfl >> 28) != 6)
        return mt_err_set(err, MT_EPROTO, c->base, "bad IPv6 version %u",
                          vtcfl >> 28);
    plen = plen16;
    if (plen == 0) /* jumbogram or TSO: trust the frame length */
        plen = c->wire_left - 40;
    if (plen > c->wire_left - 40)
        return mt_err_set(err, MT_EPROTO, c->base,
                          "IPv6 payload length %zu beyond frame (%zu)", plen,
                          c->wire_left - 40);
    out->family = 6;
    out->ip_off = c->base;
    memcpy(out->src, src, 16);
    memcpy(out->dst, dst, 16);
    if (r.left > plen)
        r.left = plen;
    c->r = r;
    c->base += 40;
    rc = skip_ipv6_ext(c, &nh, &plen, err);
    if (rc != MT_OK)
        return rc;
    if (nh != 6)
        return LINKDEC_SKIP;
    return decode_tcp(c, plen, out, err);
}

/* IP by version nibble (raw IP link types). */
static int
decode_ip_any(struct ip_ctx *c, struct linkdec_pkt *out, struct mt_err *err)
{
    if (c->r.left < 1)
        return LINKDEC_TRUNC;
    switch (c->r.p[0] >> 4) {
    case 4:
        return decode_ipv4(c, out, err);
    case 6:
        return c->wire_left < 40 ? LINKDEC_TRUNC : decode_ipv6(c, out, err);
    default:
        return LINKDEC_SKIP;
    }
}

static int
decode_ethertype(struct ip_ctx *c, uint16_t type, struct linkdec_pkt *out,
                 struct mt_err *err)
{
    for (int i = 0; i <= VLAN_TAGS_MAX; i++) {
        uint16_t tci;
        if (type == ETH_IPV4)
            return decode_ipv4(c, out, err);
        if (type == ETH_IPV6)
            return c->wire_left < 40 ? LINKDEC_TRUNC : decode_ipv6(c, out, err);
        if (type != ETH_VLAN && type != ETH_QINQ && type != ETH_QINQ_OLD)
            return LINKDEC_SKIP;
        if (!rd_be16(&c->r, &tci) || !rd_be16(&c->r, &type))
            return LINKDEC_TRUNC;
        if (out->vlan == 0)
            out->vlan = tci & 0x0fff;
        if (c->wire_left < 4)
            return LINKDEC_TRUNC;
        c->wire_left -= 4;
        c->base += 4;
    }
    return LINKDEC_SKIP; /* too many tags */
}

/* Strips a fixed link header of n bytes. */
static bool
strip(struct ip_ctx *c, size_t n)
{
    if (!rd_skip(&c->r, n) || c->wire_left < n)
        return false;
    c->wire_left -= n;
    c->base += n;
    return true;
}

static int
decode_null(struct ip_ctx *c, bool big_endian, struct linkdec_pkt *out,
            struct mt_err *err)
{
    struct rd r = c->r;
    uint32_t fam;

    if (!(big_endian ? rd_be32(&r, &fam) : rd_le32(&r, &fam)))
        return LINKDEC_TRUNC;
    if (!big_endian && fam > 0xffff) /* written on a big-endian host */
        fam = __builtin_bswap32(fam);
    strip(c, 4);
    switch (fam) {
    case 2: /* AF_INET everywhere */
        return decode_ipv4(c, out, err);
    case 10: /* Linux */
    case 24: /* NetBSD, OpenBSD */
    case 28: /* FreeBSD */
    case 30: /* macOS */
        return c->wire_left < 40 ? LINKDEC_TRUNC : decode_ipv6(c, out, err);
    default:
        return LINKDEC_SKIP;
    }
}

int
linkdec_dlt_supported(int dlt)
{
    switch (dlt) {
    case DLT_EN10MB:
    case DLT_LINUX_SLL:
    case DLT_LINUX_SLL2:
    case DLT_NULL:
    case DLT_LOOP:
    case DLT_RAW:
    case 14:  /* DLT_RAW on BSD/OS */
    case 101: /* LINKTYPE_RAW, if it ever reaches us unmapped */
    case DLT_IPV4:
    case DLT_IPV6:
        return 1;
    default:
        return 0;
    }
}

int
linkdec_decode(int dlt, const uint8_t *pkt, size_t caplen, size_t wirelen,
               struct linkdec_pkt *out, struct mt_err *err)
{
    struct ip_ctx c;
    uint16_t type;
    struct rd t;

    MT_ASSERT(out != NULL);
    memset(out, 0, sizeof(*out));
    c.r = rd_init(pkt, caplen);
    c.wire_left = wirelen < caplen ? caplen : wirelen;
    c.base = 0;
    switch (dlt) {
    case DLT_EN10MB:
        t = c.r;
        if (!rd_skip(&t, 12) || !rd_be16(&t, &type) || !strip(&c, 14))
            return LINKDEC_TRUNC;
        return decode_ethertype(&c, type, out, err);
    case DLT_LINUX_SLL:
        t = c.r;
        if (!rd_skip(&t, 14) || !rd_be16(&t, &type) || !strip(&c, 16))
            return LINKDEC_TRUNC;
        return decode_ethertype(&c, type, out, err);
    case DLT_LINUX_SLL2:
        t = c.r;
        if (!rd_be16(&t, &type) || !strip(&c, 20))
            return LINKDEC_TRUNC;
        return decode_ethertype(&c, type, out, err);
    case DLT_NULL:
        return decode_null(&c, false, out, err);
    case DLT_LOOP:
        return decode_null(&c, true, out, err);
    case DLT_RAW:
    case 14:
    case 101:
    case DLT_IPV4:
    case DLT_IPV6:
        return decode_ip_any(&c, out, err);
    default:
        return mt_err_set(err, MT_EUNSUPPORTED, 0,
                          "link type %d is not supported", dlt);
    }
}
