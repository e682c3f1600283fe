/*
 * play.h -- `mtrace play`: sends a trace's client requests to a live
 * server, one live connection per recorded one, on the recorded schedule
 * (or as fast as the server answers), and compares what the server
 * answered with what was recorded.  docs/play.md.
 *
 * One core/loop on one thread; on a schedule the trace is decompressed on
 * a reader thread of its own (play/reader.h), so that a frame's
 * decompression does not hold the loop's timers.  The trace is streamed:
 * records are taken only as far ahead as the schedule needs (PLAY_LOOKAHEAD_NS
 * of play time beyond the live schedule's advance over the recorded clock,
 * horizon.h) and while the queued requests are fewer than PLAY_QUEUE_REQS_MAX
 * and hold less than PLAY_QUEUE_BYTES_MAX, so memory follows the connections in
 * flight, not the trace's size.
 */
#ifndef MT_PLAY_H
#define MT_PLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "remap.h"

#define PLAY_LOOKAHEAD_NS (200u * 1000 * 1000)
#define PLAY_QUEUE_BYTES_MAX (32u * 1024 * 1024)
#define PLAY_QUEUE_REQS_MAX 16384u
#define PLAY_CMDS_MAX 32 /* --only-commands names */

struct play_opts {
    const char *trace;  /* borrowed: the trace to play */
    const char *target; /* borrowed: HOST:PORT */
    const char *out;    /* borrowed: -o trace, or NULL */
    bool force;         /* overwrite out */
    double speed;       /* 1: recorded pace */
    bool max_speed;     /* send when the predecessor is answered */
    uint32_t repeat;    /* runs of the whole trace, one after another */
    uint32_t copies;    /* live connections per recorded one */
    const char *only[PLAY_CMDS_MAX]; /* borrowed: --only-commands */
    size_t nonly;
    bool skip_writes;
    const char *db_from[REMAP_DB_MAX]; /* borrowed: --db OLD=NEW */
    const char *db_to[REMAP_DB_MAX];
    size_t ndb;
    const char *username;  /* borrowed: SCRAM user, or NULL */
    const char *password;  /* borrowed */
    const char *auth_db;   /* borrowed: default "admin" */
    const char *mechanism; /* borrowed: SCRAM-SHA-256 (default) or -1 */
    uint64_t timeout_ns;   /* a reply (or a connect) later than this fails */
    bool tls;              /* TLS to the target */
    const char *tls_ca;    /* borrowed: CA file (NULL: system CAs) */
    bool tls_insecure;     /* no certificate verification */
    const char *tls_cert;  /* borrowed: client certificate (PEM), or NULL */
    bool json;             /* the summary as JSON on stdout */
    int rt_prio;           /* --rt-prio: SCHED_FIFO of the loop and the
                            * reader thread; 0: normal scheduling */
    int dma_lat_us;        /* --cpu-dma-latency: PM QoS bound; -1: none */
};

/*
 * Plays o->trace against o->target.  Prints the summary (stdout) and one
 * line per failure (stderr, "mtrace play: ...").  Returns 0 when every
 * request was sent and every expected reply came; 1 when the trace was
 * damaged or empty, the target failed, refused the handshake or the
 * credentials, or replies were missing, or --rt-prio or
 * --cpu-dma-latency was refused (then before anything is opened).
 */
int play_run(const struct play_opts *o);

#endif
