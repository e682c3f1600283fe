/*
 * replay_run.h -- `mtrace replay` after its options (replay_cli.c parses
 * them): the TLS context, the --summary-json file and the PM QoS request,
 * the trace loaded, the server run until SIGINT/SIGTERM, the exit summary
 * (replay_summary.h) and the exit status.
 */
#ifndef MT_REPLAY_RUN_H
#define MT_REPLAY_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "auth.h"
#include "match.h"
#include "scram.h"
#include "server.h"

struct tls_ctx;

/* The parsed options, and what replay_run builds from them. */
struct replay_opts {
    struct server_opts so;
    struct match_rules rules;
    bool strict;
    uint64_t spin_max_ns; /* bound of --spin-us auto */
    const char *summary_json;
    FILE *summary_fp; /* owned: --summary-json, opened before serving */
    const char *trace;
    int dma_lat_us;               /* --cpu-dma-latency; -1: no request */
    char *creds[SCRAM_USERS_MAX]; /* borrowed from argv: USER:PASSWORD */
    size_t ncreds;
    const char *auth_source; /* --auth-source; NULL: admin */
    uint32_t iterations;     /* --scram-iterations; 0: mongod's defaults */
    struct auth_cfg auth;    /* owned: the users, keys derived */
    /* TLS (--tls-cert ...): paths borrowed from argv; the context is
     * owned, built before the trace is read, given to the server. */
    const char *tls_cert, *tls_key, *tls_ca;
    struct tls_ctx *tls;
};

/*
 * Serves the trace of c as its options say until SIGINT or SIGTERM, then
 * prints the summary (and writes --summary-json).  Checks the TLS options
 * first (exit status 2 for bad usage); the TLS files, the summary file and
 * the PM QoS request before the trace is read, and the trace before
 * anything listens, so each refusal leaves nothing listening.  The
 * context and the file it opens are freed and closed before it returns;
 * c->auth stays the caller's.  Returns the exit status: 0; 1 runtime
 * failure or --strict with misses; 2 bad usage.
 */
int replay_run(struct replay_opts *c);

#endif
