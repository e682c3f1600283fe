/*
 * linkdec.h -- decode one captured packet: link layer, IPv4 / IPv6, TCP.
 *
 * Pure and bounded: every byte is read through core/rd.h, never past the
 * captured length (caplen).  Link types: Ethernet (802.1Q / 802.1ad VLAN
 * tags, up to 4), Linux cooked v1 and v2, BSD NULL / OpenBSD LOOP, raw IP
 * (DLT_RAW, DLT_IPV4, DLT_IPV6).
 */
#ifndef MT_LINKDEC_H
#define MT_LINKDEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* linkdec_decode() status: the packet is fine but is not a TCP segment we
 * can use (ARP, UDP, ICMP, an IP fragment, an unknown ethertype). */
#define LINKDEC_SKIP 3
/* The IP/TCP headers themselves were cut by the snap length. */
#define LINKDEC_TRUNC 4

#define LINKDEC_FIN 0x01
#define LINKDEC_SYN 0x02
#define LINKDEC_RST 0x04
#define LINKDEC_PSH 0x08
#define LINKDEC_ACK 0x10

struct linkdec_pkt {
    uint8_t family;  /* 4 or 6 */
    uint8_t src[16]; /* IPv4 in the first 4 bytes */
    uint8_t dst[16];
    uint16_t sport;
    uint16_t dport;
    uint32_t seq;
    uint32_t ack;
    uint8_t flags;          /* LINKDEC_FIN ... */
    const uint8_t *payload; /* borrowed: the packet buffer */
    size_t payload_cap;     /* payload bytes captured */
    size_t payload_len;     /* payload bytes on the wire (>= payload_cap) */
    uint16_t vlan;          /* outermost VLAN id, 0 if none */
    size_t ip_off;          /* offset of the IP header in the packet */
    size_t tcp_off;         /* offset of the TCP header in the packet */
};

/*
 * Decodes pkt[0..caplen) of link type dlt (a DLT_ value from
 * pcap_datalink()).  wirelen is the packet's length on the wire.  Returns
 * MT_OK with out filled, LINKDEC_SKIP (not a usable TCP segment),
 * LINKDEC_TRUNC (headers cut by the snap length), MT_EUNSUPPORTED (link
 * type) or MT_EPROTO (malformed header; err says which and where).
 * out->payload borrows from pkt.  Cost: O(headers), no allocation.
 */
int linkdec_decode(int dlt, const uint8_t *pkt, size_t caplen, size_t wirelen,
                   struct linkdec_pkt *out, struct mt_err *err);

/* True if linkdec_decode() knows link type dlt. */
int linkdec_dlt_supported(int dlt);

#endif
