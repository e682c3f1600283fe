/*
 * fuzz_pcap.c -- the whole pcap path from bytes: link decoding, TCP
 * reassembly, message framing / resync / decompression, flow table, and
 * the trace writer.  In memory (libpcap's testprogs/fuzz/fuzz_pcap.c
 * style): no temp files.
 *
 * Input, first byte M:
 *   M & 1 == 0: the rest is a pcap or pcapng file, read by libpcap from
 *               fmemopen (also probed by pcap_src_precision_ns).
 *   M & 1 == 1: the rest is packets of link type dlts[byte 1 % n], each
 *               caplen[2 LE] extra[1] bytes[caplen]; wirelen = caplen+extra.
 *   M & 2: a trace writer to /dev/null validates every record (slower).
 *   M & 4: tiny limits (4 flows, 64 out-of-order bytes, 1 s idle); else
 *          the defaults but 256 flows (a 65,536-flow table is 512 KiB to
 *          zero and sweep per input; no input here opens 256 flows).
 *
 * The writer is one per process, as in a capture: each input's records are
 * flushed as a frame of their own; a new writer every WRITER_INPUTS inputs
 * bounds its frame index.  (A writer per input spent most of the time
 * creating a zstd context.)
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/pcap_flow.h"
#include "capture/pcap_src.h"
#include "core/log.h"
#include "core/rd.h"
#include "core/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WRITER_INPUTS 65536

static const int dlts[] = {DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_NULL,
                           DLT_LOOP,   DLT_RAW,       DLT_IPV4,       DLT_IPV6};

static void
run_file(struct pflow_table *t, const uint8_t *p, size_t n)
{
    char eb[PCAP_ERRBUF_SIZE];
    struct pcap_pkthdr *ph;
    const u_char *pkt;
    FILE *f;
    pcap_t *pc;
    int dlt;

    (void)pcap_src_precision_ns(p, n);
    if (n == 0 || (f = fmemopen((void *)(uintptr_t)p, n, "rb")) == NULL)
        return;
    pc = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO,
                                                  eb);
    if (pc == NULL) {
        fclose(f);
        return;
    }
    dlt = pcap_datalink(pc);
    while (pcap_next_ex(pc, &ph, &pkt) == 1) {
        uint64_t ts =
            (uint64_t)ph->ts.tv_sec * 1000000000ull + (uint64_t)ph->ts.tv_usec;
        if (pflow_packet(t, dlt, ts, pkt, ph->caplen, ph->len, NULL) < 0)
            break;
    }
    pcap_close(pc); /* closes f */
}

static void
run_packets(struct pflow_table *t, const uint8_t *p, size_t n)
{
    struct rd r = rd_init(p, n);
    uint8_t sel, extra;
    uint16_t cap;
    const uint8_t *pkt;
    uint64_t ts = 1000000000ull;

    if (!rd_u8(&r, &sel))
        return;
    while (rd_le16(&r, &cap) && rd_u8(&r, &extra) && rd_bytes(&r, cap, &pkt)) {
        ts += 1000000ull * (1 + extra);
        if (pflow_packet(t, dlts[sel % (sizeof(dlts) / sizeof(dlts[0]))], ts,
                         pkt, cap, (size_t)cap + extra, NULL) < 0)
            break;
    }
}

static FILE *null_fp;
static struct trace_writer *writer;
static size_t writer_uses;

/* The process's writer to /dev/null, renewed every WRITER_INPUTS uses. */
static struct trace_writer *
writer_get(void)
{
    struct trace_header h;

    if (writer != NULL && ++writer_uses < WRITER_INPUTS)
        return writer;
    if (writer != NULL && trace_writer_close(writer) < 0)
        abort();
    writer = NULL;
    writer_uses = 0;
    if (null_fp == NULL && (null_fp = fopen("/dev/null", "wb")) == NULL)
        abort();
    memset(&h, 0, sizeof(h));
    h.source = TRACE_SRC_PCAP;
    h.ts_precision_ns = 1000;
    writer = trace_writer_open_fp(null_fp, &h, NULL);
    if (writer == NULL)
        abort();
    return writer;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trace_writer *w = NULL;
    struct pflow_table *t;
    struct pflow_opts o;
    uint8_t mode;

    if (size < 1)
        return 0;
    mt_log_set_level(MT_LOG_ERROR);
    mode = data[0];
    memset(&o, 0, sizeof(o));
    o.port_filter = false;
    o.flows_max = 256;
    if (mode & 4) {
        o.flows_max = 4;
        o.ooo_max = 64;
        o.idle_ns = 1000000000ull;
    }
    if (mode & 2)
        w = writer_get();
    t = pflow_new(&o, w);
    if (t != NULL) {
        if (mode & 1)
            run_packets(t, data + 1, size - 1);
        else
            run_file(t, data + 1, size - 1);
        pflow_finish(t, 2000000000ull, TRACE_CLOSE_IDLE, NULL);
        pflow_free(t);
    }
    if (w != NULL && trace_writer_flush(w) < 0)
        abort(); /* /dev/null takes every frame */
    return 0;
}
