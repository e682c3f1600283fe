/*
 * play_conn.h -- one live connection of `mtrace play` and the requests
 * queued on it (internal to play/; play.c feeds the queues from the trace,
 * play_conn.c talks to the server).
 *
 * A request is sent when three things hold: its predecessors on the
 * connection are sent; when it was recorded after the previous reply, that
 * reply came from the live server; and its deadline passed.  The deadline
 * is the live time of the event the recorded request followed (the
 * previous reply, or the previous request when the client pipelined) plus
 * the recorded gap, divided by --speed; the first request of a connection
 * keeps its recorded offset from the start of the trace.
 */
#ifndef MT_PLAY_CONN_H
#define MT_PLAY_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/buf.h"
#include "core/loop.h"
#include "core/tls.h"
#include "core/trace.h"
#include "play.h"
#include "remap.h"
#include "core/runcmp.h"

struct play_req {
    struct play_req *next; /* owned by the connection's queue */
    uint8_t *msg;          /* borrowed: the recorded request, plain form, stored
                              after the struct in the same allocation */
    size_t len;
    struct runcmp_cmd *rcmd; /* borrowed from the player's report */
    uint64_t rec_t_ns;       /* recorded send time */
    uint64_t gap_ns;         /* recorded time since the event it followed */
    bool first;              /* the connection's first request */
    bool after_reply;        /* recorded after the previous request's reply */
    bool expects_reply;
    bool compressed; /* recorded as OP_COMPRESSED */
    bool plain;      /* nothing to remap (remap_is_plain): sent as recorded
                        with a new requestID */
    int32_t rec_rid, live_rid;
    char cmd[64];
    /* the recorded reply */
    bool rec_done; /* nothing more to learn from the trace */
    bool rec_replied;
    uint64_t rec_lat_ns;
    struct runcmp_shape rec_sh;
    int64_t rec_cursor; /* the recorded cursor its reply opened, or 0 */
    int64_t gm_cursor;  /* the recorded cursor a getMore reads, or 0 */
    /* the live side */
    bool sent, live_done, live_replied, nocursor;
    uint64_t deadline_ns, sent_ns, live_lat_ns;
    struct runcmp_shape live_sh;
};

enum play_conn_state {
    PLAY_CONN_WAIT,       /* not connected yet */
    PLAY_CONN_CONNECTING, /* connect() in progress */
    PLAY_CONN_TLS,        /* TLS handshake in progress */
    PLAY_CONN_HELLO,      /* our hello sent */
    PLAY_CONN_AUTH,       /* SCRAM conversation */
    PLAY_CONN_READY,
    PLAY_CONN_CLOSED,
};

/*
 * The summary's counters, declared once: XX(field, json_key, line, text).
 * line: the text line that shows it (1: "played ...:", 2: "never
 * re-sent: ...", 0: JSON only); text: its piece of that line,
 * printf-style with one %llu, the pieces of a line in list order.
 * cursors and sessions are copied from the remap tables at the end.
 */
#define PLAY_COUNTERS(XX)                                                      \
    XX(sent, "sent", 1, "%llu requests sent")                                  \
    XX(answered, "answered", 1, ", %llu answered")                             \
    XX(no_reply, "no_reply_expected", 1,                                       \
       ", %llu without reply by design (moreToCome)")                          \
    XX(unanswered, "unanswered", 1, ", %llu unanswered")                       \
    XX(not_sent, "not_sent", 1, ", %llu not sent")                             \
    XX(conns_opened, "connections", 1, ", over %llu connections")              \
    XX(hello_skipped, "handshakes_skipped", 2, "%llu recorded handshakes")     \
    XX(auth_skipped, "auth_skipped", 2, ", %llu authentication messages")      \
    XX(filtered, "filtered", 2, "; %llu filtered out")                         \
    XX(nocursor, "no_live_cursor", 2,                                          \
       "; %llu getMore/killCursors without a live cursor")                     \
    XX(rec_unread, "recorded_reply_unread", 2,                                 \
       "; %llu recorded replies left unread (past the queue)")                 \
    XX(cursors, "cursors_remapped", 2, "; %llu cursors")                       \
    XX(sessions, "sessions_remapped", 2, " and %llu sessions remapped")        \
    XX(requests_read, "requests_read", 0, "%llu")

struct play_rconn;
struct player;

struct play_conn {
    struct player *pl;     /* borrowed */
    struct play_rconn *rc; /* borrowed: the recorded connection; NULL
                              once it closed (it is freed then) */
    uint32_t copy;         /* workload copy: remap tables' key */
    uint64_t out_id;       /* connection id in the -o trace: copy << 32
                              | the recorded id */
    int fd;
    enum play_conn_state st;
    struct play_req *head, *tail; /* owned: requests not yet reported */
    struct play_req *next;        /* borrowed: the next one to send */
    struct play_req *rec_scan;    /* borrowed: the oldest whose recorded
                                     reply is not read yet, or NULL */
    struct play_req *live_scan;   /* borrowed: the oldest sent and not yet
                                     answered, or NULL */
    size_t queued_bytes;
    size_t outstanding;       /* sent, reply awaited */
    struct play_req *exhaust; /* borrowed: streaming replies to it */
    int32_t exhaust_rid;      /* the requestID the next one answers */
    uint64_t open_ns;         /* scheduled connect time */
    uint64_t last_reply_ns, last_send_ns;
    uint64_t wait_since_ns; /* a reply awaited since (0: none) */
    struct mt_buf rb, wb;   /* read and write buffers */
    struct loop_timer tm;
    uint8_t compressor; /* agreed by the server; 0: none */
    char offer[64];     /* compressors offered: "snappy,zstd" */
    int32_t next_rid, hs_rid;
    bool rec_closed;            /* the recorded connection closed */
    bool blocked;               /* a getMore waits for its cursor */
    struct play_auth *auth;     /* owned: SCRAM state while authenticating */
    struct tls_conn *tls;       /* owned: with --tls, else NULL */
    struct play_conn *next_all; /* the player's list */
};

struct play_rconn {
    struct play_rconn *next;   /* owned: hash chain */
    uint64_t id;               /* recorded connection id */
    uint64_t anchor_ns;        /* recorded time of the last event followed */
    bool anchor_reply;         /* ... which was the last request's reply */
    bool last_expects;         /* the last queued request expects a reply */
    int32_t last_rid;          /* its (or its exhaust stream's) requestID */
    bool any;                  /* a request was queued */
    struct play_conn **copies; /* owned array of copies (conns owned by the
                                  player's list) */
};

struct player {
    const struct play_opts *o; /* borrowed */
    struct loop *loop;         /* owned */
    struct sockaddr_storage ss;
    socklen_t sslen;
    struct remap *rm;        /* owned */
    struct tls_ctx *tls;     /* owned: client context with --tls */
    char host[256];          /* --target's host (TLS name check) */
    struct report rep;       /* owned */
    struct trace_writer *w;  /* owned, or NULL */
    struct play_conn *conns; /* owned list */
    size_t nconns;           /* open (not closed) */
    size_t queued_bytes;     /* over every queue */
    size_t queued_reqs;
    size_t nblocked;          /* connections whose getMore waits for a cursor */
    uint32_t gen;             /* --repeat run */
    uint64_t t0_rec, t0_live; /* schedule origin */
    bool t0_set;
    uint64_t ahead_ns;     /* the live schedule's largest advance over the
                              recorded clock in this run (horizon.h) */
    struct mt_buf scratch; /* owned: decompression */
    struct mt_buf tmp;     /* owned: encoding */
    bool failed, stop;
    char why[256]; /* the first failure */
    /* counters (PLAY_COUNTERS) */
#define XX(field, json, line, text) uint64_t field;
    PLAY_COUNTERS(XX)
#undef XX
};

/* New live connection for copy of rc, connecting at open_ns. NULL on
 * -ENOMEM. */
struct play_conn *play_conn_new(struct player *pl, struct play_rconn *rc,
                                uint32_t copy, uint64_t open_ns);
/* Queues r (ownership passes) and tries to send. */
void play_conn_push(struct play_conn *c, struct play_req *r);
/* The recorded connection closed: close once the queue is sent and
 * answered. */
void play_conn_rec_closed(struct play_conn *c);
/* Tries to make progress (after a cursor resolved, or a timer). */
void play_conn_pump(struct play_conn *c);
/* Reports and frees the requests at the head that are complete; with
 * all, every one left (the run ended). */
void play_conn_reap(struct play_conn *c, bool all);
/* Reaps the requests at the head that the live server answered without
 * waiting for their recorded replies, which the trace holds past what the
 * queues can hold (counted in rec_unread; the reader is stuck otherwise:
 * see play.c's queues_stuck). */
void play_conn_reap_unread(struct play_conn *c);
/* Closes the socket (if open) and records the close; idempotent. */
void play_conn_close(struct play_conn *c, uint8_t reason);
/* Frees c (its socket closed first). */
void play_conn_free(struct play_conn *c);
/* Checks for replies overdue past the timeout (called every tick). */
void play_conn_check_timeout(struct play_conn *c, uint64_t now_ns);

/* For play/handshake.c: records a message in the -o trace; writes what
 * the write buffer holds; the handshake is done, requests may go. */
void play_conn__rec_msg(struct play_conn *c, uint8_t dir, const uint8_t *wire,
                        size_t len, const uint8_t *plain, size_t plain_len);
void play_conn__flush(struct play_conn *c);
void play_conn__ready(struct play_conn *c);

/* The player stops with why (first failure kept); exit status 1. */
void play__fail(struct player *pl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A connection finished: the player may end a run, or read on. */
void play__conn_done(struct player *pl);
/* True while the trace may still hold the reply that opens a cursor a
 * request recorded at rec_t_ns reads: the reader is not at its end, has
 * room, and has not read PLAY_CURSOR_WAIT_NS past rec_t_ns. */
/* TRACE_FLUSH_NS: a capture loop's records reach the file within a
 * frame's age of each other. */
#define PLAY_CURSOR_WAIT_NS TRACE_FLUSH_NS
bool play__cursor_may_come(const struct player *pl, uint64_t rec_t_ns);
/* A reply recorded at rec_t_ns (trace time) came live at live_ns: the
 * reader's horizon widens by the live schedule's advance (horizon.h). */
void play__note_ahead(struct player *pl, uint64_t rec_t_ns, uint64_t live_ns);
/* Requests were freed: the reader may go on. */
void play__reaped(struct player *pl);
/* Wakes the connections blocked on a cursor. */
void play__unblock(struct player *pl);

#endif
