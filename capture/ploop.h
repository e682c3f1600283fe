/*
 * ploop.h -- the recording proxy's shared settings (struct proxy) and one
 * event loop with what it owns (struct ploop): what core/srv.h's scaffold
 * calls on each loop (new connection, sweep, drain, the tick before it
 * sleeps), and the sum of the loops' counters for the summary.  proxy.c
 * runs them; the connections themselves are pconn.h.
 */
#ifndef MT_CAPTURE_PLOOP_H
#define MT_CAPTURE_PLOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/delay_hist.h"
#include "core/err.h"
#include "ppend.h"
#include "recq.h"

/* One read() at most. */
#define PCONN_READ_LEN (256u * 1024)

struct loop;
struct pconn;
struct proxy_opts;
struct srv;
struct tls_ctx;

/* Counters of one loop; summed by the proxy at the end. */
struct pstats {
    uint64_t accepted, refused, upstream_fail, garbage, resets;
    uint64_t msgs[2];      /* complete messages recorded, per direction */
    uint64_t rec_bytes[2]; /* their bytes */
    uint64_t partial[2];   /* partial messages recorded at close */
    uint64_t partial_bytes[2];
    uint64_t read_bytes[2]; /* bytes read from the source side */
    uint64_t fwd_bytes[2];  /* bytes written to the destination side */
    uint64_t unframed[2];   /* bytes after a framing error (not recorded) */
    uint64_t unsent[2];     /* read but never delivered (peer gone) */
    uint64_t lost_items;    /* records not queued: out of memory */
    uint64_t timeouts;      /* closed by --idle/--msg-timeout-s */
    uint64_t too_big;       /* closed by --max-msg-bytes */
    uint64_t handed;        /* accepted here, handed to another loop */
    uint64_t tls_fail;      /* client TLS handshakes that failed */
};

/* One event loop and everything it owns. */
struct ploop {
    struct loop *l;      /* owned */
    struct proxy *p;     /* borrowed: shared settings and queue */
    int idx;             /* its index in core/srv.h's server */
    uint8_t *scratch;    /* owned: PCONN_READ_LEN read buffer */
    struct pconn *conns; /* owned list */
    size_t nconns;
    struct ppend pend; /* conns with a readable socket to serve */
    bool paused_any;   /* some connection waits for queue room */
    atomic_bool resume_pending;
    struct pstats st;
    struct delay_hist hist;  /* achieved delays (pdelay.c) */
    struct recq_batch batch; /* records of this tick; pushed before sleep */
    size_t held;             /* replies held in its connections (pdelay.c) */
    uint64_t spin_cur_ns;    /* the loop's spin window (pdelay_bound_spin) */
};

/* Shared by every loop; set up by proxy.c, read-only while running except
 * the atomics. */
struct proxy {
    struct sockaddr_storage target;
    socklen_t target_len;
    char target_desc[64];
    uint64_t delay_ns; /* 0: no delay */
    uint64_t spin_ns;  /* loop timer spin when delaying */
    bool spin_auto;    /* spin_ns is the bound of an adaptive window */
    unsigned max_conns;
    uint64_t idle_ns, msg_timeout_ns; /* 0: never */
    uint32_t msg_max;                 /* largest client message */
    int rt_prio;                      /* loop threads' SCHED_FIFO prio, 0 */
    bool pin_loops;                   /* --pin-loops */
    bool batch_loops;                 /* --batch-loops: SCHED_BATCH */
    struct tls_ctx *tls_accept;       /* owned: --tls-cert; NULL: plain */
    struct tls_ctx *tls_connect;      /* owned: --target-tls; NULL: plain */
    char tls_host[256]; /* --target's host: SNI and name checked, or "" */
    struct recq *q;     /* owned */
    atomic_uint_fast64_t next_id;
    atomic_bool warned_rs; /* the replica-set warning was logged */
    struct ploop *loops;   /* owned array */
    int nloops;
    struct srv *srv; /* owned: listeners, hand-off, threads (core/srv.h) */
};

/*
 * Creates p->nloops loops, each with its scratch buffer, before-sleep hook
 * and timer spin, and attaches each to p->srv (which must exist).  0 or a
 * negative code with err filled; ploop_free_all undoes a partial set-up.
 */
int ploop_init_all(struct proxy *p, struct mt_err *err);

/* Frees p->srv, then the loops (their connections are closed). */
void ploop_free_all(struct proxy *p);

/*
 * The server for o on p->nloops loops (core/srv.h: listeners, hand-off,
 * threads, sweep, one second of drain).  0 or a negative code with err
 * filled ("cannot listen on ...").
 */
int ploop_listen(struct proxy *p, const struct proxy_opts *o,
                 struct mt_err *err);

/* recq's resume callback (arg: the proxy): every loop re-reads the
 * connections it paused for queue room.  Thread-safe. */
void ploop_resume_all(void *arg);

/* Sum of the loops' counters into *t, their achieved delays into h (NULL:
 * not summed).  After the loops stopped. */
void ploop_sum(const struct proxy *p, struct pstats *t, struct delay_hist *h);

#endif
