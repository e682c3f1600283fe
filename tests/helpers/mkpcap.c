/*
 * mkpcap.c -- writes the synthetic captures of tests/integration/
 * test_pcap_synth.sh with libpcap's dump API (pcap_open_dead +
 * pcap_dump_open + pcap_dump): one conversation (SYN handshake, N OP_MSG
 * request/reply pairs split into small segments, FIN), then damaged on
 * purpose per case: reordered, duplicated, overlapping, lost, truncated,
 * wrapped sequence numbers, mid-stream start, IPv6, VLAN, cooked v1/v2,
 * NULL, raw IP, nanosecond timestamps, reset, compressed, several flows.
 *
 *   mkpcap DIR            writes DIR/<case>.pcap for every case
 *   mkpcap DIR CASE...    only those
 *   mkpcap --list         case names
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/wire.h" /* <bson/bson.h> without its warnings */

#define SEGS_MAX 512
#define MSS 100
#define NMSG 4
#define SERVER_PORT 27017
#define CLIENT_PORT 40000
#define T0_S 1700000000u

enum { C2S = 0, S2C = 1 };
#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_PSH 0x08
#define F_ACK 0x10

struct seg {
    int dir;
    uint32_t seq, ack;
    uint8_t flags;
    uint8_t data[2048];
    size_t len;
    size_t snap;   /* captured payload bytes (len if not cut) */
    int flow;      /* 0, or 1 for the second flow of "multi" */
    int raw;       /* 1: data[] is a whole IP packet (non-TCP tests) */
    int msg, part; /* which message and which piece of it (-1: none) */
    int pause_s;   /* seconds of silence before this packet */
    size_t cut;    /* if not 0: capture only this many bytes of the frame */
};

struct conv {
    struct seg s[SEGS_MAX];
    size_t n;
    uint32_t next[2]; /* next sequence number per direction */
    int flow;
};

static const char *cmds[NMSG] = {"ping", "find", "insert", "aggregate"};

static struct seg *
add(struct conv *c, int dir, uint8_t flags, const uint8_t *p, size_t len)
{
    struct seg *s;

    if (c->n >= SEGS_MAX || len > sizeof(s->data)) {
        fprintf(stderr, "mkpcap: too many segments\n");
        exit(1);
    }
    s = &c->s[c->n++];
    memset(s, 0, sizeof(*s));
    s->dir = dir;
    s->seq = c->next[dir];
    s->ack = c->next[dir ^ 1];
    s->flags = flags;
    if (len)
        memcpy(s->data, p, len);
    s->len = s->snap = len;
    s->flow = c->flow;
    s->msg = s->part = -1;
    c->next[dir] += (uint32_t)len + ((flags & (F_SYN | F_FIN)) ? 1 : 0);
    return s;
}

/* One wire message: OP_MSG {cmd: 1 | ok: 1, n: i, pad: "..."}; compressor
 * >= 0 wraps it in OP_COMPRESSED. */
static void
message(struct mt_buf *out, int i, int reply, int compressor)
{
    bson_t b = BSON_INITIALIZER;
    struct mt_buf m;
    char pad[256];
    size_t plen = 60 + (size_t)i * 40 + (reply ? 30 : 0);

    if (plen >= sizeof(pad))
        plen = sizeof(pad) - 1; /* i < NMSG keeps it <= 210 */
    memset(pad, 'a' + i, plen);
    pad[plen] = 0;
    if (reply) {
        BSON_APPEND_DOUBLE(&b, "ok", 1.0);
        BSON_APPEND_INT32(&b, "n", i);
    } else {
        BSON_APPEND_INT32(&b, cmds[i % NMSG], 1);
        BSON_APPEND_UTF8(&b, "$db", "test");
    }
    BSON_APPEND_UTF8(&b, "pad", pad);
    mt_buf_init(&m, 1 << 20);
    if (wire_encode_msg(&m, 100 + i * 2 + reply, reply ? 100 + i * 2 : 0, 0, &b,
                        NULL, 0) != 0)
        exit(1);
    if (compressor < 0) {
        mt_buf_append(out, m.data, m.len);
    } else if (wire_encode_compressed(out, m.data, m.len, (uint8_t)compressor,
                                      NULL) != 0) {
        fprintf(stderr, "mkpcap: compress failed\n");
        exit(1);
    }
    mt_buf_free(&m);
    bson_destroy(&b);
}

/* Splits one message into MSS-sized segments in direction dir. */
static void
send_msg(struct conv *c, int dir, int i, int compressor)
{
    struct mt_buf m;

    mt_buf_init(&m, 1 << 20);
    message(&m, i, dir == S2C, compressor);
    for (size_t off = 0; off < m.len; off += MSS) {
        size_t n = m.len - off < MSS ? m.len - off : MSS;
        struct seg *s = add(c, dir, F_ACK | (off + n == m.len ? F_PSH : 0),
                            m.data + off, n);
        s->msg = i;
        s->part = (int)(off / MSS);
    }
    mt_buf_free(&m);
}

static void
handshake(struct conv *c, uint32_t cisn, uint32_t sisn)
{
    c->next[C2S] = cisn;
    c->next[S2C] = 0;
    add(c, C2S, F_SYN, NULL, 0)->ack = 0;
    c->next[S2C] = sisn;
    add(c, S2C, F_SYN | F_ACK, NULL, 0);
    add(c, C2S, F_ACK, NULL, 0);
}

static void
teardown(struct conv *c)
{
    add(c, C2S, F_FIN | F_ACK, NULL, 0);
    add(c, S2C, F_FIN | F_ACK, NULL, 0);
    add(c, C2S, F_ACK, NULL, 0);
}

/* The whole conversation: nmsg request/reply pairs. */
static void
conversation(struct conv *c, uint32_t cisn, uint32_t sisn, int compress,
             int fin)
{
    static const int comps[3] = {WIRE_COMPRESSOR_SNAPPY, WIRE_COMPRESSOR_ZLIB,
                                 WIRE_COMPRESSOR_ZSTD};
    handshake(c, cisn, sisn);
    for (int i = 0; i < NMSG; i++) {
        send_msg(c, C2S, i, compress ? comps[i % 3] : -1);
        send_msg(c, S2C, i, compress ? comps[(i + 1) % 3] : -1);
    }
    if (fin)
        teardown(c);
}

/* Index of piece `part` of message i in direction dir. */
static size_t
find_seg(const struct conv *c, int dir, int i, int part)
{
    for (size_t k = 0; k < c->n; k++)
        if (c->s[k].dir == dir && c->s[k].msg == i && c->s[k].part == part &&
            c->s[k].flow == c->flow)
            return k;
    fprintf(stderr, "mkpcap: no segment %d/%d/%d\n", dir, i, part);
    exit(1);
}

static void
drop_seg(struct conv *c, size_t k)
{
    memmove(&c->s[k], &c->s[k + 1], (c->n - k - 1) * sizeof(c->s[0]));
    c->n--;
}

static void
swap_seg(struct conv *c, size_t a, size_t b)
{
    struct seg t = c->s[a];
    c->s[a] = c->s[b];
    c->s[b] = t;
}

/* Inserts a copy of segment k at position at. */
static struct seg *
dup_seg(struct conv *c, size_t k, size_t at)
{
    struct seg t = c->s[k];
    memmove(&c->s[at + 1], &c->s[at], (c->n - at) * sizeof(c->s[0]));
    c->s[at] = t;
    c->n++;
    return &c->s[at];
}

/* ---- packet bytes ---- */

struct link {
    int dlt;
    int family; /* 4 or 6 */
    int vlans;  /* Ethernet: VLAN tags */
};

static size_t
put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return 2;
}

static size_t
put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
    return 4;
}

static uint16_t
ip_csum(const uint8_t *p, size_t n)
{
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < n; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* Link header; returns its length. */
static size_t
link_hdr(uint8_t *p, const struct link *l)
{
    uint16_t et = l->family == 4 ? 0x0800 : 0x86dd;
    size_t n = 0;

    switch (l->dlt) {
    case DLT_EN10MB:
        memcpy(p, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
        n = 12;
        for (int v = 0; v < l->vlans; v++) {
            n += put16(p + n, v == 0 && l->vlans > 1 ? 0x88a8 : 0x8100);
            n += put16(p + n, (uint16_t)(100 + v));
        }
        return n + put16(p + n, et);
    case DLT_LINUX_SLL:
        memset(p, 0, 16);
        put16(p + 2, 772); /* ARPHRD_LOOPBACK */
        put16(p + 4, 6);
        put16(p + 14, et);
        return 16;
    case DLT_LINUX_SLL2:
        memset(p, 0, 20);
        put16(p, et);
        put32(p + 4, 1); /* ifindex */
        put16(p + 8, 772);
        p[11] = 6;
        return 20;
    case DLT_NULL: /* host byte order: little-endian here */
        p[0] = l->family == 4 ? 2 : 10;
        p[1] = p[2] = p[3] = 0;
        return 4;
    default: /* DLT_RAW */
        return 0;
    }
}

/* IP + TCP headers and payload for segment s. */
static size_t
ip_tcp(uint8_t *p, const struct link *l, const struct seg *s)
{
    static const uint8_t a4[2][4] = {{10, 0, 0, 1}, {10, 0, 0, 2}};
    static const uint8_t a6[2][16] = {
        {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
        {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}};
    int src = s->dir == C2S ? 0 : 1;
    uint16_t cport = (uint16_t)(CLIENT_PORT + s->flow);
    size_t ih = l->family == 4 ? 20 : 48; /* v6: + hop-by-hop option */
    uint8_t *t = p + ih;

    if (l->family == 4) {
        memset(p, 0, 20);
        p[0] = 0x45;
        put16(p + 2, (uint16_t)(20 + 20 + s->len));
        p[8] = 64;
        p[9] = 6;
        memcpy(p + 12, a4[src], 4);
        memcpy(p + 16, a4[src ^ 1], 4);
        put16(p + 10, ip_csum(p, 20));
    } else {
        memset(p, 0, 48);
        p[0] = 0x60;
        put16(p + 4, (uint16_t)(8 + 20 + s->len));
        p[6] = 0; /* hop-by-hop, then TCP */
        p[7] = 64;
        memcpy(p + 8, a6[src], 16);
        memcpy(p + 24, a6[src ^ 1], 16);
        p[40] = 6; /* next header TCP, length 0 (8 bytes), PadN */
        p[42] = 1;
        p[43] = 4;
    }
    put16(t, s->dir == C2S ? cport : SERVER_PORT);
    put16(t + 2, s->dir == C2S ? SERVER_PORT : cport);
    put32(t + 4, s->seq);
    put32(t + 8, s->ack);
    t[12] = 5 << 4;
    t[13] = s->flags;
    put16(t + 14, 65535);
    put16(t + 16, 0);
    put16(t + 18, 0);
    memcpy(t + 20, s->data, s->len);
    return ih + 20 + s->len;
}

static void
write_pcap(const char *dir, const char *name, const struct link *l,
           const struct conv *c, int nano)
{
    char path[4096];
    pcap_t *pd = pcap_open_dead_with_tstamp_precision(
        l->dlt, 65535,
        nano ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO);
    pcap_dumper_t *d;
    static uint8_t pkt[4096];
    time_t pause = 0;

    snprintf(path, sizeof(path), "%s/%s.pcap", dir, name);
    d = pcap_dump_open(pd, path);
    if (d == NULL) {
        fprintf(stderr, "mkpcap: %s: %s\n", path, pcap_geterr(pd));
        exit(1);
    }
    for (size_t k = 0; k < c->n; k++) {
        const struct seg *s = &c->s[k];
        struct pcap_pkthdr h;
        size_t n = link_hdr(pkt, l), full;

        if (s->raw) {
            memcpy(pkt + n, s->data, s->len);
            full = n + s->len;
        } else {
            full = n + ip_tcp(pkt + n, l, s);
        }
        memset(&h, 0, sizeof(h));
        pause += s->pause_s;
        h.ts.tv_sec = T0_S + (time_t)(k / 1000) + pause;
        /* 1 ms apart; nanosecond files add k ns to show the precision */
        h.ts.tv_usec = (suseconds_t)((k % 1000) * (nano ? 1000000 : 1000) +
                                     (nano ? k : 0));
        h.len = (bpf_u_int32)full;
        h.caplen = (bpf_u_int32)(full - (s->len - s->snap));
        if (s->cut != 0 && s->cut < h.caplen)
            h.caplen = (bpf_u_int32)s->cut;
        pcap_dump((u_char *)d, &h, pkt);
    }
    pcap_dump_close(d);
    pcap_close(pd);
}

/* ---- cases ---- */

struct kase {
    const char *name;
    void (*build)(struct conv *c, struct link *l, int *nano);
};

static void
c_basic(struct conv *c, struct link *l, int *nano)
{
    conversation(c, 1000, 5000, 0, 1);
}

static void
c_reorder(struct conv *c, struct link *l, int *nano)
{
    conversation(c, 1000, 5000, 0, 1);
    swap_seg(c, find_seg(c, C2S, 1, 0), find_seg(c, C2S, 1, 1));
    swap_seg(c, find_seg(c, S2C, 2, 0), find_seg(c, S2C, 2, 2));
}

static void
c_dup(struct conv *c, struct link *l, int *nano)
{
    conversation(c, 1000, 5000, 0, 1);
    dup_seg(c, find_seg(c, C2S, 0, 0), find_seg(c, C2S, 0, 1) + 1);
    dup_seg(c, find_seg(c, S2C, 1, 1), find_seg(c, S2C, 1, 1) + 1);
}

static void
c_overlap(struct conv *c, struct link *l, int *nano)
{
    size_t p0, p1, p2;
    uint8_t all[3 * MSS];
    struct seg *s;

    conversation(c, 1000, 5000, 0, 1);
    p0 = find_seg(c, C2S, 2, 0);
    p1 = find_seg(c, C2S, 2, 1);
    p2 = find_seg(c, C2S, 2, 2);
    memcpy(all, c->s[p0].data, MSS);
    memcpy(all + MSS, c->s[p1].data, MSS);
    memcpy(all + 2 * MSS, c->s[p2].data, c->s[p2].len);
    /* [50,150) before [100,200): the second half is new, then trimmed */
    s = dup_seg(c, p0, p1);
    s->seq += 50;
    memcpy(s->data, all + 50, MSS);
    /* after the message: [150,end) again with other bytes (first wins) */
    p2 = find_seg(c, C2S, 2, 2);
    s = dup_seg(c, p2, p2 + 1);
    s->seq -= 50;
    s->len = s->snap = c->s[p2].len + 50;
    memset(s->data, 'Z', s->len);
}

static void
c_lost(struct conv *c, struct link *l, int *nano)
{
    conversation(c, 1000, 5000, 0, 1);
    drop_seg(c, find_seg(c, C2S, 1, 1)); /* tail of request 1 */
    drop_seg(c, find_seg(c, C2S, 2, 0)); /* header of request 2 */
}

static void
c_truncated(struct conv *c, struct link *l, int *nano)
{
    conversation(c, 1000, 5000, 0, 1);
    c->s[find_seg(c, S2C, 2, 1)].snap = 30;
    c->s[find_seg(c, S2C, 2, 2)].snap = 10;
    /* the client's last ACK cut inside its IP header (30 of 54 bytes) */
    c->s[c->n - 1].cut = 30;
}

static void
c_wrap(struct conv *c, struct link *l, int *nano)
{
    conversation(c, 0xffffff80u, 0xffffffa0u, 0, 1);
}

static void
c_midstream(struct conv *c, struct link *l, int *nano)
{
    size_t k;

    conversation(c, 1000, 5000, 0, 1);
    k = find_seg(c, C2S, 0, 1);
    memmove(&c->s[0], &c->s[k], (c->n - k) * sizeof(c->s[0]));
    c->n -= k;
}

static void
c_ipv6(struct conv *c, struct link *l, int *nano)
{
    l->family = 6;
    conversation(c, 1000, 5000, 0, 1);
}

static void
c_vlan(struct conv *c, struct link *l, int *nano)
{
    l->vlans = 1;
    conversation(c, 1000, 5000, 0, 1);
}

static void
c_qinq(struct conv *c, struct link *l, int *nano)
{
    l->vlans = 2;
    l->family = 6;
    conversation(c, 1000, 5000, 0, 1);
}

static void
c_sll(struct conv *c, struct link *l, int *nano)
{
    l->dlt = DLT_LINUX_SLL;
    conversation(c, 1000, 5000, 0, 1);
}

static void
c_sll2(struct conv *c, struct link *l, int *nano)
{
    l->dlt = DLT_LINUX_SLL2;
    l->family = 6;
    conversation(c, 1000, 5000, 0, 1);
}

static void
c_null(struct conv *c, struct link *l, int *nano)
{
    l->dlt = DLT_NULL;
    conversation(c, 1000, 5000, 0, 1);
}

static void
c_raw(struct conv *c, struct link *l, int *nano)
{
    l->dlt = DLT_RAW;
    conversation(c, 1000, 5000, 0, 1);
}

static void
c_nsec(struct conv *c, struct link *l, int *nano)
{
    *nano = 1;
    conversation(c, 1000, 5000, 0, 1);
}

static void
c_rst(struct conv *c, struct link *l, int *nano)
{
    conversation(c, 1000, 5000, 0, 0);
    add(c, S2C, F_RST | F_ACK, NULL, 0);
}

static void
c_compressed(struct conv *c, struct link *l, int *nano)
{
    conversation(c, 1000, 5000, 1, 1);
}

/* 400 s of silence (more than the 300 s idle timeout), then the client
 * speaks again on the same 4-tuple: the flow is closed as idle, and the
 * later traffic is a new, mid-stream connection. */
static void
c_idle(struct conv *c, struct link *l, int *nano)
{
    size_t k;

    conversation(c, 1000, 5000, 0, 0);
    k = c->n;
    send_msg(c, C2S, 1, -1);
    send_msg(c, S2C, 1, -1);
    c->s[k].pause_s = 400;
    teardown(c);
}

/* A new SYN on a 4-tuple still open (no FIN seen): the old connection is
 * closed and a new one opened. */
static void
c_reuse(struct conv *c, struct link *l, int *nano)
{
    conversation(c, 1000, 5000, 0, 0);
    handshake(c, 900000, 700000);
    send_msg(c, C2S, 0, -1);
    send_msg(c, S2C, 0, -1);
    teardown(c);
}

/* Two interleaved flows, plus UDP, another port and a broken IP header. */
static void
c_multi(struct conv *c, struct link *l, int *nano)
{
    static struct conv b;
    static const uint8_t udp[28] = {0x45, 0,    0,    28,   0, 0, 0,  0, 64, 17,
                                    0,    0,    10,   0,    0, 1, 10, 0, 0,  2,
                                    0x30, 0x39, 0x00, 0x35, 0, 8, 0,  0};
    static const uint8_t bad[40] = {0x43, 0, 0, 40, 0, 0, 0, 0, 64, 6};
    static const uint8_t http[45] = {
        0x45, 0, 0, 45, 0,   0,   0,   0,   64,   6,    0,    0,
        10,   0, 0, 1,  10,  0,   0,   2,   0x9c, 0x40, 0,    80,
        0,    0, 0, 1,  0,   0,   0,   1,   0x50, 0x18, 0xff, 0xff,
        0,    0, 0, 0,  'G', 'E', 'T', ' ', '/'};
    struct seg *s;
    size_t na;

    conversation(c, 1000, 5000, 0, 1);
    memset(&b, 0, sizeof(b));
    b.flow = 1;
    conversation(&b, 77777, 99999, 0, 1);
    na = c->n;
    for (size_t k = 0; k < b.n; k++) { /* interleave: a, b, a, b, ... */
        size_t at = 2 * k + 1 < c->n ? 2 * k + 1 : c->n;
        memmove(&c->s[at + 1], &c->s[at], (c->n - at) * sizeof(c->s[0]));
        c->s[at] = b.s[k];
        c->n++;
    }
    (void)na;
    s = add(c, C2S, 0, udp, sizeof(udp));
    s->raw = 1;
    s = add(c, C2S, 0, bad, sizeof(bad));
    s->raw = 1;
    s = add(c, C2S, 0, http, sizeof(http));
    s->raw = 1;
}

static const struct kase kases[] = {
    {"basic", c_basic}, {"reorder", c_reorder},
    {"dup", c_dup},     {"overlap", c_overlap},
    {"lost", c_lost},   {"truncated", c_truncated},
    {"wrap", c_wrap},   {"midstream", c_midstream},
    {"ipv6", c_ipv6},   {"vlan", c_vlan},
    {"qinq", c_qinq},   {"sll", c_sll},
    {"sll2", c_sll2},   {"null", c_null},
    {"raw", c_raw},     {"nsec", c_nsec},
    {"rst", c_rst},     {"compressed", c_compressed},
    {"multi", c_multi}, {"idle", c_idle},
    {"reuse", c_reuse},
};

static void
make_case(const char *dir, const struct kase *k)
{
    static struct conv c;
    struct link l = {DLT_EN10MB, 4, 0};
    int nano = 0;

    memset(&c, 0, sizeof(c));
    k->build(&c, &l, &nano);
    write_pcap(dir, k->name, &l, &c, nano);
}

int
main(int argc, char **argv)
{
    size_t nk = sizeof(kases) / sizeof(kases[0]);

    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < nk; i++)
            printf("%s\n", kases[i].name);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: mkpcap DIR [CASE...] | --list\n");
        return 2;
    }
    for (size_t i = 0; i < nk; i++) {
        bool want = argc == 2;
        for (int a = 2; a < argc; a++)
            want |= strcmp(argv[a], kases[i].name) == 0;
        if (want)
            make_case(argv[1], &kases[i]);
    }
    return 0;
}
