/*
 * conn.h -- one client connection of a replay, without sockets.
 *
 * Bytes in, scheduled replies out: replay_conn_input() takes what was read
 * from the socket, answers every complete message (matching, handshake,
 * cursors, built-ins, miss errors) and hands each reply to the emit
 * callback stamped with ready_at_ns = read_at_ns + delay (DESIGN.md rule
 * 3).  The server puts it on the loop's timer heap and calls
 * replay_conn_release() when it writes it; the fuzz target and unit tests
 * drive the same code with no socket at all.
 *
 * Threading: a conn and its worker belong to one loop thread; the shared
 * part (index, cursor table, handshake, configuration) is read-only or
 * locked (cursor table) or atomic (round-robin counters, connection ids).
 */
#ifndef MT_REPLAY_CONN_H
#define MT_REPLAY_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"
#include "auth.h"
#include "cursor.h"
#include "delay.h"
#include "handshake.h"
#include "index.h"
#include "keycache.h"
#include "match.h"
#include "replay_stats.h"
#include "tlsstats.h"

#define REPLAY_MISS_CODE 47 /* NoMatchingDocument */
#define REPLAY_MISS_CODENAME "NoMatchingDocument"
#define REPLAY_REPLIES_MAX 4096  /* pending replies per connection */
#define REPLAY_MISS_LOG_FIRST 20 /* then one miss line per 1000 */

/* What every loop shares; read-only once the server runs. */
struct replay_shared {
    struct index *idx;            /* borrowed */
    struct cursor_table *cursors; /* borrowed */
    struct handshake hs;
    struct delay_cfg delay;
    const struct auth_cfg *auth; /* borrowed: --credentials; NULL: none */
    _Atomic int64_t next_conn_id;
    _Atomic uint64_t misses_logged;
};

/* Per loop thread. */
struct replay_worker {
    struct replay_shared *sh; /* borrowed */
    struct mt_rng rng;
    struct replay_stats st;
    struct mt_buf key;     /* scratch: the current request's key */
    struct mt_buf scratch; /* scratch: decompressed requests */
    struct keycache kc;    /* raw-bytes fast path to groups */
};

struct replay_conn;

/* One reply waiting for its release time. */
struct replay_reply {
    struct loop_timer timer;          /* the server's; free for its use */
    struct replay_conn *conn;         /* borrowed: the owner */
    struct replay_reply *prev, *next; /* the conn's pending list */
    uint64_t read_at_ns, ready_at_ns, requested_ns;
    uint8_t *bytes; /* owned: the complete reply message */
    size_t len;
    bool no_stats; /* held hello: not a delay sample */
    bool stream;   /* exhaust hello: another follows after period_ns */
    uint64_t period_ns;
    int32_t request_id; /* this reply's requestID */
    bool hello_cmd;     /* stream: the request said "hello" (not isMaster) */
    bool hello_ok;      /* stream: the request asked for helloOk */
};

typedef void replay_emit_fn(struct replay_conn *c, struct replay_reply *r,
                            void *arg);

struct replay_conn {
    struct replay_worker *w; /* borrowed */
    int64_t id;              /* connectionId in hello replies */
    int32_t next_request_id;
    uint64_t serial_free_ns;   /* serial mode: when the previous reply left */
    struct replay_reply *head; /* owned: pending replies */
    size_t npending;
    replay_emit_fn *emit;
    void *emit_arg; /* borrowed */
    char self[64];  /* the address the client connected to ("ip:port"),
                       named in replica-set hello replies; "" unknown */
    struct auth_session auth; /* SASL conversation, authenticated user */
    bool spec_auth;           /* the conversation began in hello */
};

/* 0 or -ENOMEM. */
int replay_worker_init(struct replay_worker *w, struct replay_shared *sh,
                       uint64_t seed);
void replay_worker_free(struct replay_worker *w);

void replay_conn_init(struct replay_conn *c, struct replay_worker *w,
                      replay_emit_fn *emit, void *arg);

/*
 * Answers every complete message at the start of data (len bytes, read at
 * read_at_ns).  *consumed: bytes used; the rest is an incomplete message to
 * keep for the next call.  A negative return (MT_EPROTO, MT_ETOOBIG,
 * MT_EBSON, ...) means the peer sent bad bytes: err says what and at which
 * offset; the caller closes the connection.  Replies already emitted stay
 * valid.  Cost: one parse and one key per message.
 */
int replay_conn_input(struct replay_conn *c, const uint8_t *data, size_t len,
                      uint64_t read_at_ns, size_t *consumed,
                      struct mt_err *err);

/*
 * The server is writing r at now_ns: records delay statistics, unlinks r.
 * For a streamed hello, r is rebuilt as the next reply (ready_at = now +
 * period) and true is returned: emit it again.  Otherwise false: the
 * caller frees r with replay_reply_free().
 */
bool replay_conn_release(struct replay_conn *c, struct replay_reply *r,
                         uint64_t now_ns);

/* Unlinks and frees every pending reply; cancel(r) first (e.g. stop its
 * timer) when not NULL. */
void replay_conn_close(struct replay_conn *c,
                       void (*cancel)(struct replay_reply *r, void *arg),
                       void *arg);

void replay_reply_free(struct replay_reply *r);

#endif
