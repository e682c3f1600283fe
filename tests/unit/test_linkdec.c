/*
 * test_linkdec.c -- capture/linkdec.c: every link type, VLAN tags, IPv4
 * and IPv6 (extension headers, fragments), TCP header fields, truncation by
 * the snap length (every prefix of every packet), malformed headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pcap/dlt.h>
#include <stdlib.h>
#include <string.h>

#include "capture/linkdec.h"

/* IPv4 10.0.0.1:40000 -> 10.0.0.2:27017, seq 0x01020304, ack 0x0a0b0c0d,
 * PSH|ACK, 4 bytes of payload "abcd". */
static const uint8_t ip4_tcp[] = {
    0x45, 0x00, 0x00, 0x2c, /*  0: v4 ihl 5, total 44 */
    0x00, 0x00, 0x00, 0x00, /*  4: id, DF=0 offset 0 */
    0x40, 0x06, 0x00, 0x00, /*  8: ttl 64, proto TCP, csum */
    10,   0,    0,    1,    /* 12: src */
    10,   0,    0,    2,    /* 16: dst */
    0x9c, 0x40, 0x69, 0x89, /* 20: sport 40000, dport 27017 */
    0x01, 0x02, 0x03, 0x04, /* 24: seq */
    0x0a, 0x0b, 0x0c, 0x0d, /* 28: ack */
    0x50, 0x18, 0xff, 0xff, /* 32: offset 5, PSH|ACK, window */
    0x00, 0x00, 0x00, 0x00, /* 36: csum, urg */
    'a',  'b',  'c',  'd',  /* 40: payload */
};

/* IPv6 fd00::1 -> fd00::2 with a hop-by-hop header, same TCP segment. */
static const uint8_t ip6_tcp[] = {
    0x60, 0x00, 0x00, 0x00, /*  0: v6 */
    0x00, 0x20, 0x00, 0x40, /*  4: payload 32, next hop-by-hop */
    0xfd, 0,    0,    0,    0,    0,    0,    0,    0,    0,
    0,    0,    0,    0,    0,    1, /*  8: src */
    0xfd, 0,    0,    0,    0,    0,    0,    0,    0,    0,
    0,    0,    0,    0,    0,    2,             /* 24: dst */
    0x06, 0x00, 0x01, 0x04, 0,    0,    0,    0, /* 40: next TCP, len 0, PadN */
    0x9c, 0x40, 0x69, 0x89,                      /* 48: TCP as above */
    0x01, 0x02, 0x03, 0x04, 0x0a, 0x0b, 0x0c, 0x0d, 0x50, 0x18,
    0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 'a',  'b',  'c',  'd',
};

static size_t
frame(uint8_t *out, const uint8_t *hdr, size_t hlen, const uint8_t *ip,
      size_t iplen)
{
    memcpy(out, hdr, hlen);
    memcpy(out + hlen, ip, iplen);
    return hlen + iplen;
}

static void
check_tcp(const struct linkdec_pkt *k, int family)
{
    assert_int_equal(k->family, family);
    assert_int_equal(k->sport, 40000);
    assert_int_equal(k->dport, 27017);
    assert_int_equal(k->seq, 0x01020304u);
    assert_int_equal(k->ack, 0x0a0b0c0du);
    assert_int_equal(k->flags, LINKDEC_PSH | LINKDEC_ACK);
    assert_int_equal(k->payload_len, 4);
    assert_int_equal(k->payload_cap, 4);
    assert_memory_equal(k->payload, "abcd", 4);
    if (family == 4) {
        assert_memory_equal(k->src, "\x0a\0\0\x01", 4);
        assert_memory_equal(k->dst, "\x0a\0\0\x02", 4);
    } else {
        assert_int_equal(k->src[0], 0xfd);
        assert_int_equal(k->dst[15], 2);
    }
}

/*
 * Decodes pkt, then every prefix of it as a snap-length cut of the same
 * wire packet: never an error, never a read past caplen (the prefix is
 * copied into an exact-size heap block for ASan), and a payload cut shows
 * as payload_cap < payload_len.
 */
static void
decode_all_prefixes(int dlt, const uint8_t *pkt, size_t n, int family)
{
    struct linkdec_pkt k;
    struct mt_err err;

    assert_int_equal(linkdec_decode(dlt, pkt, n, n, &k, &err), MT_OK);
    check_tcp(&k, family);
    for (size_t cap = 0; cap < n; cap++) {
        uint8_t *p = malloc(cap ? cap : 1);
        int rc;
        memcpy(p, pkt, cap);
        rc = linkdec_decode(dlt, p, cap, n, &k, &err);
        if (cap >= n - 4) {
            assert_int_equal(rc, MT_OK);
            assert_int_equal(k.payload_len, 4);
            assert_int_equal(k.payload_cap, cap - (n - 4));
        } else {
            assert_int_equal(rc, LINKDEC_TRUNC);
        }
        free(p);
    }
}

static void
test_linkdec_ethernet(void **state)
{
    static const uint8_t eth4[14] = {2, 0, 0, 0, 0, 2,    2,
                                     0, 0, 0, 0, 1, 0x08, 0x00};
    static const uint8_t eth6[14] = {2, 0, 0, 0, 0, 2,    2,
                                     0, 0, 0, 0, 1, 0x86, 0xdd};
    uint8_t b[256];

    decode_all_prefixes(DLT_EN10MB, b,
                        frame(b, eth4, 14, ip4_tcp, sizeof(ip4_tcp)), 4);
    decode_all_prefixes(DLT_EN10MB, b,
                        frame(b, eth6, 14, ip6_tcp, sizeof(ip6_tcp)), 6);
}

static void
test_linkdec_vlan(void **state)
{
    static const uint8_t qinq[22] = {
        2,    0,    0,    0,    0, 2, 2, 0, 0, 0, 0, 1, /* macs */
        0x88, 0xa8, 0x00, 0x64,                         /* 802.1ad, vlan 100 */
        0x81, 0x00, 0x00, 0x65,                         /* 802.1Q, vlan 101 */
        0x08, 0x00};
    struct linkdec_pkt k;
    uint8_t b[256];
    size_t n = frame(b, qinq, sizeof(qinq), ip4_tcp, sizeof(ip4_tcp));

    decode_all_prefixes(DLT_EN10MB, b, n, 4);
    assert_int_equal(linkdec_decode(DLT_EN10MB, b, n, n, &k, NULL), MT_OK);
    assert_int_equal(k.vlan, 100);
    assert_int_equal(k.ip_off, 22);
    assert_int_equal(k.tcp_off, 42);
}

static void
test_linkdec_cooked(void **state)
{
    uint8_t sll[16] = {0, 0, 0x03, 0x04, 0, 6, 0,    0,
                       0, 0, 0,    0,    0, 0, 0x08, 0x00};
    uint8_t sll2[20] = {0x86, 0xdd, 0, 0, 0, 0, 0, 1, 0x03, 0x04,
                        0,    6,    0, 0, 0, 0, 0, 0, 0,    0};
    uint8_t b[256];

    decode_all_prefixes(DLT_LINUX_SLL, b,
                        frame(b, sll, 16, ip4_tcp, sizeof(ip4_tcp)), 4);
    decode_all_prefixes(DLT_LINUX_SLL2, b,
                        frame(b, sll2, 20, ip6_tcp, sizeof(ip6_tcp)), 6);
}

static void
test_linkdec_null_loop_raw(void **state)
{
    static const uint8_t null_le4[4] = {2, 0, 0, 0};
    static const uint8_t null_be6[4] = {0, 0, 0, 30}; /* macOS, big-endian */
    static const uint8_t loop6[4] = {0, 0, 0, 24};    /* OpenBSD */
    uint8_t b[256];

    decode_all_prefixes(DLT_NULL, b,
                        frame(b, null_le4, 4, ip4_tcp, sizeof(ip4_tcp)), 4);
    decode_all_prefixes(DLT_NULL, b,
                        frame(b, null_be6, 4, ip6_tcp, sizeof(ip6_tcp)), 6);
    decode_all_prefixes(DLT_LOOP, b,
                        frame(b, loop6, 4, ip6_tcp, sizeof(ip6_tcp)), 6);
    decode_all_prefixes(DLT_RAW, ip4_tcp, sizeof(ip4_tcp), 4);
    decode_all_prefixes(DLT_RAW, ip6_tcp, sizeof(ip6_tcp), 6);
    decode_all_prefixes(DLT_IPV4, ip4_tcp, sizeof(ip4_tcp), 4);
    decode_all_prefixes(DLT_IPV6, ip6_tcp, sizeof(ip6_tcp), 6);
}

static void
test_linkdec_ethernet_padding_ignored(void **state)
{
    /* a 60-byte minimum frame carrying a 40-byte IPv4 packet */
    uint8_t b[128] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00};
    struct linkdec_pkt k;
    uint8_t ip[40];

    memcpy(ip, ip4_tcp, 40);
    ip[3] = 40; /* no payload */
    memcpy(b + 14, ip, 40);
    memset(b + 54, 0xee, 6); /* padding */
    assert_int_equal(linkdec_decode(DLT_EN10MB, b, 60, 60, &k, NULL), MT_OK);
    assert_int_equal(k.payload_len, 0);
    assert_int_equal(k.payload_cap, 0);
}

static void
test_linkdec_skips_non_tcp(void **state)
{
    uint8_t p[sizeof(ip4_tcp)];
    struct linkdec_pkt k;
    static const uint8_t arp[14] = {2, 0, 0, 0, 0, 2,    2,
                                    0, 0, 0, 0, 1, 0x08, 0x06};

    memcpy(p, ip4_tcp, sizeof(p));
    p[9] = 17; /* UDP */
    assert_int_equal(linkdec_decode(DLT_RAW, p, sizeof(p), sizeof(p), &k, NULL),
                     LINKDEC_SKIP);
    memcpy(p, ip4_tcp, sizeof(p));
    p[6] = 0x20; /* MF: a fragment */
    assert_int_equal(linkdec_decode(DLT_RAW, p, sizeof(p), sizeof(p), &k, NULL),
                     LINKDEC_SKIP);
    assert_int_equal(linkdec_decode(DLT_EN10MB, arp, 14, 60, &k, NULL),
                     LINKDEC_SKIP);
}

static void
test_linkdec_rejects_malformed(void **state)
{
    uint8_t p[sizeof(ip4_tcp)];
    struct linkdec_pkt k;
    struct mt_err err;

    memcpy(p, ip4_tcp, sizeof(p));
    p[0] = 0x43; /* ihl 3 */
    assert_int_equal(linkdec_decode(DLT_RAW, p, sizeof(p), sizeof(p), &k, &err),
                     MT_EPROTO);
    memcpy(p, ip4_tcp, sizeof(p));
    p[3] = 200; /* total length beyond the frame */
    assert_int_equal(linkdec_decode(DLT_RAW, p, sizeof(p), sizeof(p), &k, &err),
                     MT_EPROTO);
    memcpy(p, ip4_tcp, sizeof(p));
    p[32] = 0x40; /* TCP data offset 4 words < 20 bytes */
    assert_int_equal(linkdec_decode(DLT_RAW, p, sizeof(p), sizeof(p), &k, &err),
                     MT_EPROTO);
    memcpy(p, ip4_tcp, sizeof(p));
    p[32] = 0xf0; /* 60-byte TCP header in a 24-byte IP payload */
    assert_int_equal(linkdec_decode(DLT_RAW, p, sizeof(p), sizeof(p), &k, &err),
                     MT_EPROTO);
    assert_int_equal(
        linkdec_decode(DLT_IEEE802_11, p, sizeof(p), sizeof(p), &k, &err),
        MT_EUNSUPPORTED);
    assert_false(linkdec_dlt_supported(DLT_IEEE802_11));
    assert_true(linkdec_dlt_supported(DLT_LINUX_SLL2));
}

int
main(void)
{
    const struct CMUnitTest valid[] = {
        cmocka_unit_test(test_linkdec_ethernet),
        cmocka_unit_test(test_linkdec_vlan),
        cmocka_unit_test(test_linkdec_cooked),
        cmocka_unit_test(test_linkdec_null_loop_raw),
        cmocka_unit_test(test_linkdec_ethernet_padding_ignored),
    };
    const struct CMUnitTest invalid[] = {
        cmocka_unit_test(test_linkdec_skips_non_tcp),
        cmocka_unit_test(test_linkdec_rejects_malformed),
    };
    return cmocka_run_group_tests(valid, NULL, NULL) |
           cmocka_run_group_tests(invalid, NULL, NULL);
}
