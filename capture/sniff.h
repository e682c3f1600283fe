/*
 * sniff.h -- capture from pcap / pcapng files and live interfaces (libpcap),
 * reassembling TCP into the same trace records the proxy writes.
 */
#ifndef MT_SNIFF_H
#define MT_SNIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

struct redact_cfg;

#define SNIFF_PORTS_MAX 16
/* Live capture's kernel ring (docs/capture-pcap.md "Live capture"): the
 * default and the largest --buffer-mb accepted, in MiB. */
#define SNIFF_BUFFER_MB_DEFAULT 64
#define SNIFF_BUFFER_MB_MAX 1024

struct sniff_opts {
    const char *pcap_path;           /* --pcap FILE, or NULL; borrowed */
    const char *iface;               /* --iface IF, or NULL; borrowed */
    uint16_t ports[SNIFF_PORTS_MAX]; /* --port N...; server side */
    size_t nports;                   /* 0: 27017 */
    const char *filter; /* --filter BPF (overrides the port filter); borrowed */
    double duration_s;  /* live: stop after this long (0: until signal) */
    uint64_t count;     /* live: stop after this many packets (0: no limit) */
    uint32_t buffer_mb; /* live: kernel ring in MiB (0: the default;
                           1..SNIFF_BUFFER_MB_MAX) */
    const char *out_path;            /* -o trace; borrowed */
    unsigned trace_flags;            /* TRACE_W_FORCE */
    bool quiet;                      /* no summary */
    const struct redact_cfg *redact; /* --redact; borrowed; NULL: none */
    int zstd_level;      /* trace compression; 0: TRACE_ZSTD_LEVEL_IMPORT for a
                            file, TRACE_ZSTD_LEVEL_DEFAULT live */
    int compress_thread; /* file: trace frames compressed on a second
                            thread (trace_writer_set_async)?  0: when the
                            process may run on 2+ CPUs; < 0: never; > 0:
                            always.  Live capture: never. */
};

/*
 * Runs a pcap file or live capture to completion (end of file, duration,
 * count, or sniff_stop()), writes the trace, prints the statistics summary
 * on stderr unless quiet.  Returns 0, or a negative code with err filled.
 */
int sniff_run(const struct sniff_opts *o, struct mt_err *err);

/* Async-signal-safe: asks a running sniff_run() to finish cleanly. */
void sniff_stop(void);

#endif
