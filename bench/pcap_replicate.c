/*
 * pcap_replicate.c -- make a large capture out of a small one for
 * bench/bench_pcap.sh: the input's TCP flows are copied again and again,
 * each copy with the low 16 bits of its client address rewritten (and,
 * past 60000 copies, its client port) so that every copy is a distinct
 * flow, and
 * its timestamps shifted after the previous copy.  Checksums are left as
 * they are (neither mtrace nor tshark verifies them by default).
 *
 *   pcap_replicate IN OUT MIN_BYTES [SERVER_PORT]   (default 27017)
 *
 * Writes at least MIN_BYTES of packet data (whole copies), prints
 * "copies N packets N bytes N".
 *
 *   pcap_replicate --read FILE
 *
 * Reads FILE through libpcap exactly as `mtrace capture --pcap` does
 * (capture/sniff.c: glibc's mmap-mode FILE, pcap_dispatch in batches of
 * 4096) and does nothing with the packets: the floor of an import's
 * reading cost for bench_pcap.sh.  Prints "packets N bytes N".
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "capture/linkdec.h"
#include "core/mem.h"

struct pkt {
    struct pcap_pkthdr h;
    uint8_t *data;
    long cli_port_off; /* -1: not TCP, left alone */
    long cli_addr_off; /* the last 2 bytes of the client address */
};

static void
put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static size_t
load(const char *path, uint16_t sport, struct pkt **out, int *dlt)
{
    char eb[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_open_offline_with_tstamp_precision(
        path, PCAP_TSTAMP_PRECISION_NANO, eb);
    struct pcap_pkthdr *h;
    const u_char *d;
    size_t n = 0, cap = 1024;
    struct pkt *v = mt_malloc(cap * sizeof(*v));

    if (p == NULL || v == NULL) {
        fprintf(stderr, "pcap_replicate: %s: %s\n", path, eb);
        exit(1);
    }
    *dlt = pcap_datalink(p);
    while (pcap_next_ex(p, &h, &d) == 1) {
        struct linkdec_pkt k;
        struct pkt *q;
        if (n == cap && (v = mt_realloc(v, (cap *= 2) * sizeof(*v))) == NULL)
            exit(1);
        q = &v[n++];
        q->h = *h;
        q->data = mt_malloc(h->caplen);
        memcpy(q->data, d, h->caplen);
        q->cli_port_off = q->cli_addr_off = -1;
        if (linkdec_decode(*dlt, d, h->caplen, h->len, &k, NULL) != 0)
            continue;
        int src_cli = k.dport == sport;
        size_t alen = k.family == 4 ? 4 : 16;
        q->cli_port_off = (long)k.tcp_off + (src_cli ? 0 : 2);
        q->cli_addr_off = (long)k.ip_off + (k.family == 4 ? 12 : 8) +
                          (long)(src_cli ? 0 : alen) + (long)alen - 2;
    }
    pcap_close(p);
    *out = v;
    return n;
}

static void
read_cb(u_char *user, const struct pcap_pkthdr *h, const u_char *d)
{
    unsigned long long *c = (unsigned long long *)user;

    c[0]++;
    c[1] += h->caplen;
    c[2] += h->caplen > 0 ? d[h->caplen / 2] : 0; /* the packet is there */
}

/* pcap_replicate --read FILE: see the top of the file. */
static int
read_only(const char *path)
{
    char eb[PCAP_ERRBUF_SIZE] = "";
    unsigned long long c[3] = {0, 0, 0};
    FILE *f = fopen(path, "rbm");
    pcap_t *p;
    int rc;

    if (f == NULL) {
        perror(path);
        return 1;
    }
    __fsetlocking(f, FSETLOCKING_BYCALLER);
    p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO,
                                                 eb);
    if (p == NULL) {
        fprintf(stderr, "pcap_replicate: %s: %s\n", path, eb);
        fclose(f);
        return 1;
    }
    while ((rc = pcap_dispatch(p, 4096, read_cb, (u_char *)c)) > 0)
        ;
    pcap_close(p);
    if (rc < 0) {
        fprintf(stderr, "pcap_replicate: %s: read error\n", path);
        return 1;
    }
    printf("packets %llu bytes %llu (check %llu)\n", c[0], c[1], c[2]);
    return 0;
}

int
main(int argc, char **argv)
{
    struct pkt *v;
    int dlt;
    size_t n;
    unsigned long long want, bytes = 0, pkts = 0, copies = 0;
    uint16_t sport = 27017;
    uint64_t span_ns;
    pcap_t *dead;
    pcap_dumper_t *d;
    uint8_t *buf = mt_malloc(262144);

    if (argc == 3 && strcmp(argv[1], "--read") == 0)
        return read_only(argv[2]);
    if (argc < 4) {
        fprintf(stderr, "usage: pcap_replicate IN OUT MIN_BYTES [PORT] | "
                        "--read FILE\n");
        return 2;
    }
    want = strtoull(argv[3], NULL, 10);
    if (argc > 4)
        sport = (uint16_t)strtoul(argv[4], NULL, 10);
    n = load(argv[1], sport, &v, &dlt);
    if (n == 0)
        return 1;
#define TS(p)                                                                  \
    ((uint64_t)(p).h.ts.tv_sec * 1000000000ull + (uint64_t)(p).h.ts.tv_usec)
    span_ns = TS(v[n - 1]) - TS(v[0]) + 1000000;
    dead = pcap_open_dead_with_tstamp_precision(dlt, 262144,
                                                PCAP_TSTAMP_PRECISION_NANO);
    d = pcap_dump_open(dead, argv[2]);
    if (d == NULL) {
        fprintf(stderr, "pcap_replicate: %s\n", pcap_geterr(dead));
        return 1;
    }
    while (bytes < want) {
        for (size_t i = 0; i < n; i++) {
            struct pcap_pkthdr h = v[i].h;
            uint64_t t = TS(v[i]) + copies * span_ns;
            memcpy(buf, v[i].data, h.caplen);
            if (v[i].cli_port_off >= 0 &&
                (size_t)v[i].cli_port_off + 2 <= h.caplen &&
                (size_t)v[i].cli_addr_off + 2 <= h.caplen) {
                uint16_t port = (uint16_t)(buf[v[i].cli_port_off] << 8 |
                                           buf[v[i].cli_port_off + 1]);
                put16(buf + v[i].cli_port_off,
                      (uint16_t)(port + 7 * (copies / 60000)));
                put16(buf + v[i].cli_addr_off, (uint16_t)(2 + copies % 60000));
            }
            h.ts.tv_sec = (time_t)(t / 1000000000ull);
            h.ts.tv_usec = (suseconds_t)(t % 1000000000ull);
            pcap_dump((u_char *)d, &h, buf);
            bytes += h.caplen + 16;
            pkts++;
        }
        copies++;
    }
    pcap_dump_close(d);
    printf("copies %llu packets %llu bytes %llu\n", copies, pkts, bytes);
    return 0;
}
