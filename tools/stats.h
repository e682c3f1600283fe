/*
 * stats.h -- aggregation behind `mtrace stats`: counts by opcode and by
 * command, request->reply latency per command (a reply is paired with the
 * request on the same connection whose requestID equals its responseTo),
 * unmatched requests and replies, and the trace's capture statistics.
 */
#ifndef MT_STATS_H
#define MT_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/pair.h"
#include "core/trace.h"
#include "tools/msginfo.h"

#define STATS_CMD_MAX 256 /* distinct command names; more: "(other)" */
#define STATS_OP_MAX 16   /* distinct opcodes; more: OP_UNKNOWN */
#define STATS_SAMPLES_MAX (1u << 24) /* latency samples kept per command */
#define STATS_SAMPLES_TOTAL_MAX (1u << 25) /* ... and over all commands */
#define STATS_PENDING_MAX (1u << 20)       /* requests awaiting a reply */
#define STATS_CLOSE_REASONS 8
#define STATS_ERR_MAX 64   /* distinct (command, code) pairs; more: counted */
#define STATS_TOP_MAX 1000 /* --top N at most */

struct stats_cmd {
    char name[64];
    uint64_t requests;     /* requests seen */
    uint64_t replies;      /* replies paired with one of them */
    uint64_t unmatched;    /* requests that never got a reply */
    uint64_t errors;       /* replies saying the command failed */
    uint64_t write_errors; /* ok: 1 with writeErrors / writeConcernError */
    uint64_t *lat_ns;      /* owned: latency samples (lat_n of them) */
    size_t lat_n, lat_cap;
    uint64_t lat_dropped;  /* samples beyond STATS_SAMPLES_MAX */
    uint64_t lat_count;    /* every sample, kept or not */
    double mean_ns, m2_ns; /* Welford's running mean and squared sum */
    uint64_t max_ns;
};

struct stats_op {
    int32_t op_code;
    uint64_t n;
};

/* Failed replies (errors and write errors) of one command with one code. */
struct stats_err {
    char cmd[64];
    char code_name[48];
    int32_t code;
    bool write; /* a write error (the command itself succeeded) */
    uint64_t n;
};

/* One of the slowest exchanges (--top). */
struct stats_slow {
    uint64_t lat_ns, t_ns; /* latency; the request's time */
    uint64_t conn_id;
    int32_t request_id;
    bool error;
    char cmd[64];
    char ns[64];
};

/* TLS handshakes of one leg (docs/trace-format.md 2.7). */
#define STATS_TLS_NAMES 16 /* distinct versions, ciphers; more: "(other)" */
struct stats_tls_name {
    char name[64];
    uint64_t n;
};
struct stats_tls {
    uint64_t handshakes; /* completed */
    uint64_t failed;
    uint64_t resumed, peer_cert, peer_verified; /* of the completed ones */
    struct stats_cmd time; /* handshake_ns of the completed ones (no name) */
    struct stats_tls_name versions[STATS_TLS_NAMES];
    struct stats_tls_name ciphers[STATS_TLS_NAMES];
    size_t nversions, nciphers;
};

/* A latency summary in milliseconds. */
struct stats_sum {
    uint64_t count;
    double mean_ms, stdev_pct, p50_ms, p90_ms, p99_ms, max_ms;
};

struct stats {
    struct trace_header hdr;
    uint64_t conns_opened, conns_closed;
    uint64_t close_reasons[STATS_CLOSE_REASONS]; /* last: other */
    uint64_t msgs, msgs_c2s, msgs_s2c, bytes;
    uint64_t malformed;        /* messages that did not parse */
    uint64_t auth_msgs;        /* authentication conversation messages */
    uint64_t compressed;       /* OP_COMPRESSED on the wire */
    uint64_t by_compressor[4]; /* of those: noop, snappy, zlib, zstd (ids) */
    uint64_t t_first, t_last;  /* message times */
    struct stats_op ops[STATS_OP_MAX];
    size_t nops;
    struct stats_cmd *cmds; /* owned: ncmds of STATS_CMD_MAX */
    size_t ncmds;
    uint64_t unmatched_requests, unmatched_replies;
    uint64_t no_reply_expected; /* requests with moreToCome */
    uint64_t exhaust_replies;   /* later replies of an exhaust stream */
    uint64_t pending_overflow;  /* requests not tracked: table full */
    uint64_t clock_backwards;   /* replies stamped before their request */
    uint64_t samples;           /* latency samples kept, all commands */
    uint64_t samples_dropped;   /* beyond the limits: percentiles then
                                   come from the kept ones */
    struct stats_err errs[STATS_ERR_MAX];
    size_t nerrs;
    uint64_t errs_other;     /* failed replies beyond STATS_ERR_MAX pairs */
    struct stats_slow *slow; /* owned: a min-heap of the top slowest */
    size_t nslow, top;
    struct trace_stats capture; /* last value of each capture statistic */
    struct stats_tls tls[2];    /* by leg: client, target */
    uint64_t records;
    bool ended;             /* the end record was read */
    struct pair_table pend; /* owned */
    struct mt_buf scratch;  /* owned: decompressed messages */
};

/* 0 or -ENOMEM. */
int stats_init(struct stats *s);
void stats_free(struct stats *s);

/* Keeps the n (<= STATS_TOP_MAX) slowest exchanges.  0 or -ENOMEM. */
int stats_set_top(struct stats *s, size_t n);

/* Sorts the kept slowest exchanges, slowest first (after the last add). */
void stats_sort_slow(struct stats *s);

/* Accounts for one record.  0 or -ENOMEM. */
int stats_add(struct stats *s, const struct trace_rec *rec);

/* Counts the requests still waiting as unmatched.  Call once, at the end. */
void stats_finish(struct stats *s);

/* Sorts c's samples and fills sum (count 0: no sample). */
void stats_summarize(struct stats_cmd *c, struct stats_sum *sum);

/* Nearest-rank percentile of n sorted samples (p in 0..100). */
uint64_t stats_percentile(const uint64_t *sorted, size_t n, double p);

#endif
