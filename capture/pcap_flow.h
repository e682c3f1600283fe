/*
 * pcap_flow.h -- the packet path of `mtrace capture --pcap/--iface`: a flow
 * table keyed by TCP 4-tuple, each flow with two reassembled directions cut
 * into messages, written as the same trace records the proxy writes.
 *
 * Independent of libpcap (fed raw packets with their link type), so the
 * fuzzer and the tests drive it from memory.
 */
#ifndef MT_PCAP_FLOW_H
#define MT_PCAP_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/trace.h"

#define PFLOW_FLOWS_MAX_DEFAULT 65536
#define PFLOW_IDLE_NS_DEFAULT (300ull * 1000 * 1000 * 1000)

struct redact_cfg;

struct pflow_opts {
    const uint16_t *ports; /* borrowed: server ports (none: 27017) */
    size_t nports;
    bool port_filter; /* ignore TCP that touches none of the ports */
    size_t flows_max; /* open flows (0: default); the idlest is evicted */
    size_t ooo_max;   /* out-of-order bytes per direction (0: default) */
    uint64_t idle_ns; /* packet-time idleness before a flow is closed */
    const struct redact_cfg *redact; /* borrowed; NULL: record as seen */
};

/* Capture counters.  Names as written into the trace's stats record. */
struct pflow_stats {
    uint64_t packets, bytes, flows, midstream, messages;
    uint64_t gaps, gap_bytes, resyncs, skipped_bytes;
    uint64_t truncated, out_of_order, retransmitted;
    uint64_t non_tcp, malformed, malformed_msgs, ignored;
    uint64_t evicted, idle_closed;
};

struct pflow_table;

/* A table writing into w (borrowed; NULL: count only).  NULL on ENOMEM. */
struct pflow_table *pflow_new(const struct pflow_opts *o,
                              struct trace_writer *w);

/* Closes nothing, writes nothing: frees.  NULL is a no-op. */
void pflow_free(struct pflow_table *t);

/*
 * One captured packet of link type dlt, caplen bytes captured of wirelen.
 * Bad packets are counted, never fatal.  Returns 0, or a negative code for
 * a fatal error (trace writer, memory) with err filled.
 */
int pflow_packet(struct pflow_table *t, int dlt, uint64_t t_ns,
                 const uint8_t *pkt, size_t caplen, size_t wirelen,
                 struct mt_err *err);

/* Closes every open flow with reason (enum trace_close_reason) at t_ns. */
int pflow_finish(struct pflow_table *t, uint64_t t_ns, uint8_t reason,
                 struct mt_err *err);

/* The counters so far. */
void pflow_stats_get(const struct pflow_table *t, struct pflow_stats *out);

/* Counters as a stats record (name/value pairs). */
void pflow_stats_record(const struct pflow_stats *s, uint64_t t_ns,
                        struct trace_stats *rec);

#endif
