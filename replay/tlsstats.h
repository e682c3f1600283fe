/*
 * tlsstats.h -- TLS handshake statistics of a replay with --tls-cert.
 *
 * Each loop counts its own connections' handshakes in its struct
 * replay_stats (replay_stats.h; no lock, one thread), and server_stats merges
 * the loops at exit, like every other statistic.  A connection is counted once:
 * completed (with its protocol version and how long its handshake took)
 * when its handshake completes, else when it closes before that, failed
 * by cause or aborted (replay stopped first).  So with --tls-cert,
 * connections = completed + failed + aborted.
 */
#ifndef MT_REPLAY_TLSSTATS_H
#define MT_REPLAY_TLSSTATS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tls.h"
#include "delay.h"

/* Why a handshake failed (docs/replay.md, "Statistics"). */
enum tlsstats_fail {
    TLSSTATS_NOT_TLS,        /* the client did not speak TLS */
    TLSSTATS_NO_CLIENT_CERT, /* --tls-ca: the client sent no certificate */
    TLSSTATS_CLIENT_CERT,    /* --tls-ca: its certificate did not verify */
    TLSSTATS_SERVER_CERT,    /* the client refused --tls-cert (its alert) */
    TLSSTATS_CLOSED,         /* the client closed or reset the connection */
    TLSSTATS_TIMEOUT,        /* not complete after --msg-timeout-s */
    TLSSTATS_OTHER,          /* any other TLS error */
    TLSSTATS_FAIL_N,
};

/* Negotiated protocol versions counted apart. */
enum tlsstats_version {
    TLSSTATS_TLS12,
    TLSSTATS_TLS13,
    TLSSTATS_VERSION_OTHER,
    TLSSTATS_VERSION_N,
};

struct tlsstats {
    uint64_t completed;                   /* handshakes completed */
    uint64_t version[TLSSTATS_VERSION_N]; /* ... by negotiated version */
    uint64_t failed[TLSSTATS_FAIL_N];     /* handshakes failed, by cause */
    uint64_t aborted;                     /* cut short by replay stopping */
    struct delay_hist time;               /* of completed handshakes: the
                                             loop clock from accept() to
                                             the completing step */
};

void tlsstats_init(struct tlsstats *t);

/* dst += src. */
void tlsstats_merge(struct tlsstats *dst, const struct tlsstats *src);

/* A handshake completed: version as tls_conn_version() gives it, took_ns
 * from accept. */
void tlsstats_add_completed(struct tlsstats *t, int version, uint64_t took_ns);

/*
 * A connection closed before its handshake completed: failed with cause
 * (tls_conn_cause()), else timed out when timed_out, else aborted (replay
 * closed it: the server stopping).
 */
void tlsstats_add_unfinished(struct tlsstats *t, enum tls_cause cause,
                             bool timed_out);

/* The sum of failed[]. */
uint64_t tlsstats_failed(const struct tlsstats *t);

/* Names of a cause: the JSON key ("not_tls") and the summary's words
 * ("not TLS"); of a version ("TLSv1.3", "other"). */
const char *tlsstats_fail_key(enum tlsstats_fail f);
const char *tlsstats_fail_text(enum tlsstats_fail f);
const char *tlsstats_version_name(enum tlsstats_version v);

#endif
