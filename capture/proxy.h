/*
 * proxy.h -- `mtrace capture` as a recording TCP proxy (DESIGN.md rules 3-5).
 *
 * proxy_run() listens on one address with one event loop per thread, each
 * loop on its own SO_REUSEPORT listening socket (no thundering herd: the
 * kernel hands each connection to one loop), connects every client to the
 * target, forwards bytes both ways as they arrive and records each complete
 * message, with connection open/close events, into a trace through the
 * writer thread (capture/recq.h).
 */
#ifndef MT_CAPTURE_PROXY_H
#define MT_CAPTURE_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/err.h"
#include "core/redact.h"

#define PROXY_THREADS_MAX 64
#define PROXY_QUEUE_BYTES (64u * 1024 * 1024) /* default record queue bound */
#define PROXY_QUEUE_COUNT 200000u
/* Trace compression of the proxy's writer thread (--zstd-level).  zstd
 * is most of the writer's CPU; on proxied request/reply streams -1 runs
 * ~1.4x faster than 3 for a trace ~2 % larger (docs/capture.md). */
#define PROXY_ZSTD_LEVEL (-1)

struct proxy_opts {
    struct sockaddr_storage listen; /* --listen */
    socklen_t listen_len;
    struct sockaddr_storage target; /* --target */
    socklen_t target_len;
    char target_desc[64];    /* "127.0.0.1:27017" */
    uint64_t delay_ns;       /* --delay-ms, 0: none */
    uint64_t spin_ns;        /* --spin-us: busy-poll before a release */
    bool spin_auto;          /* --spin-us auto: spin_ns is the bound */
    unsigned max_conns;      /* --max-conns */
    unsigned threads;        /* --threads, 0: one per online CPU */
    const char *out_path;    /* -o; borrowed */
    unsigned trace_flags;    /* TRACE_W_FORCE */
    bool quiet;              /* no summary */
    size_t queue_bytes;      /* 0: PROXY_QUEUE_BYTES */
    uint64_t idle_ns;        /* --idle-timeout-s: close quiet conns; 0 never */
    uint64_t msg_timeout_ns; /* --msg-timeout-s: a client's incomplete
                                message; 0 never */
    uint32_t msg_max;        /* --max-msg-bytes from a client; 0: 48e6 */
    const struct redact_cfg *redact; /* --redact; borrowed, NULL: none */
    int zstd_level;                  /* --zstd-level; 0: PROXY_ZSTD_LEVEL */
    int rt_prio;      /* --rt-prio: SCHED_FIFO priority of the loop threads;
                         0: they stay SCHED_OTHER */
    bool pin_loops;   /* --pin-loops: loop i on the i-th allowed CPU */
    bool batch_loops; /* --batch-loops: loop threads under SCHED_BATCH */
    /* TLS (capture/ptls.c); paths borrowed from argv.  tls_cert non-NULL:
     * clients must connect with TLS. */
    const char *tls_cert;        /* --tls-cert: PEM chain (may hold the key) */
    const char *tls_key;         /* --tls-key; NULL: the key is in tls_cert */
    const char *tls_ca;          /* --tls-ca: require client certificates */
    bool target_tls;             /* --target-tls: TLS to the target */
    const char *target_tls_ca;   /* --target-tls-ca; NULL: system CAs */
    bool target_tls_insecure;    /* --target-tls-insecure: no verification */
    const char *target_tls_cert; /* --target-tls-cert: client cert + key */
    char target_host[256];       /* --target's host (SNI, name check) */
};

#define PROXY_MSG_TIMEOUT_DEFAULT_NS (60ull * 1000000000ull)

/*
 * Runs the proxy until proxy_stop(): then stops accepting, lets what is in
 * flight finish for up to a second, closes the rest, writes and closes the
 * trace and prints the summary on stderr (unless quiet).  Call it with
 * SIGINT/SIGTERM handlers that call proxy_stop(); its threads block those
 * signals.  Returns 0, or a negative code with err filled (could not
 * listen, could not create the trace, the trace could not be written, or
 * --rt-prio was refused: -EPERM, checked before the trace is created).
 */
int proxy_run(const struct proxy_opts *o, struct mt_err *err);

/* Async-signal-safe: asks a running (or starting) proxy_run() to finish. */
void proxy_stop(void);

#endif
