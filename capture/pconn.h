/*
 * pconn.h -- one proxied connection: forwarding both ways, framing a copy
 * of each stream for the recorder, holding replies for --delay-ms.
 *
 * A connection belongs to one event loop (struct ploop, ploop.h) and is
 * touched only
 * from that loop's thread.  Bytes read from one side are written to the
 * other at once (forwarding never waits for a message to be complete);
 * what the peer does not accept yet stays in the direction's out buffer.
 * Framing works on the bytes just read: a message is copied into a record
 * as it arrives and pushed to the record queue when its last byte came in,
 * stamped with the time of that read.
 */
#ifndef MT_CAPTURE_PCONN_H
#define MT_CAPTURE_PCONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/loop.h"
#include "ploop.h"
#include "ppend.h"
#include "pstream.h"
#include "recq.h"

/* A direction stops reading while this much waits for its peer. */
#define PCONN_OUT_HWM (4u * 1024 * 1024)
/* Reads of one direction per event or pending turn (then the loop serves
 * others and comes back: the sockets are edge-triggered). */
#define PCONN_READ_BUDGET 4

struct tls_conn;

/* ---- internals of pconn.c, precord.c and pdelay.c ---- */

/* One direction of a connection: its bytes (pstream.h), and the state of
 * its two sockets. */
struct pdir {
    struct pstream s; /* forwarding, framing, recording, holds */
    bool eof;         /* source said EOF */
    bool shut;        /* destination shut down for writing */
    bool wblocked;
    /* Edge-triggered source: it may still hold bytes or an EOF (no EAGAIN
     * or EOF seen since its last event); and a FIN, error or TCP urgent
     * mark (LOOP_PRI: recv stops short at it) was reported since the last
     * EAGAIN, so a short read does not mean drained. */
    bool rpend, fin;
    /* The source reset the connection (after the bytes read before it):
     * what waits is still delivered, then the destination is reset too. */
    bool rst;
    /* A send to this source (the other direction's destination) failed:
     * it reset.  Reads still find the bytes it sent before, then an EOF
     * or the error, either of which then counts as its reset. */
    bool tx_rst;
};

/* A proxied connection: pconn.c forwards, precord.c records, pdelay.c
 * holds replies; only they touch its fields, from its loop's thread. */
struct pconn {
    struct ploop *pl; /* borrowed */
    struct pconn *prev, *next;
    struct ppend_node pend; /* on pl->pend (pend.on) */
    uint64_t id;
    int cfd, sfd; /* owned */
    /* Owned, per socket: [0] the client's, [1] the server's (the source
     * of direction d is tls[d]); NULL for a plain socket (ptls.c). */
    struct tls_conn *tls[2];
    bool tls_hs; /* a TLS handshake is in progress (connecting too) */
    bool tcp_up; /* the upstream TCP connection is established */
    /* When c was accepted (its conn_open record's t_ns) and when the
     * upstream TCP connection came up: where the TLS handshake time of
     * each leg starts (ptls.c). */
    uint64_t open_ns, up_ns;
    /* Not forwarding yet: the upstream TCP connection or a TLS handshake
     * is in progress. */
    bool connecting;
    bool paused; /* waiting for queue room */
    bool dead;
    uint8_t reason; /* when dead */
    struct pdir d[2];
    struct loop_timer hold_timer; /* the next hold of d[S2C] (pdelay.c) */
    size_t held; /* d[S2C]'s waiting holds, as counted in pl->held */
    /* A source reset, its data delivered: polls until the destination's
     * send queue is empty (SIOCOUTQ), then resets it (prst.c). */
    struct loop_timer rst_timer;
    bool rst_wait;
    int rst_outq;        /* bytes in that send queue at the last poll */
    uint64_t last_io_ns; /* last read or send progress, either side */
    char client[64];
};

/* Marks c dead with reason (the first one wins); pconn__after closes it. */
void pconn__die(struct pconn *c, uint8_t reason);
/* Adds a record to c's loop batch (queued now when the batch is large). */
void pconn__push(struct pconn *c, struct recq_item *it);
/* Writes what direction d may send of its out buffer (rel_off). */
void pconn__flush(struct pconn *c, int d);
/* After an event: closes c if dead or done, else re-arms its fds. */
void pconn__after(struct pconn *c);
/* "client" for TRACE_DIR_C2S, else "server". */
const char *pconn__side(int d);

/* ---- the connection API used by proxy.c ---- */

/* Accepted client fd cfd (non-blocking) from peer: starts the upstream
 * connection.  Always consumes cfd (closed on failure); calls
 * srv_conn_done() once when the connection ends or is refused. */
void pconn_accept(struct ploop *pl, int cfd, const struct sockaddr *peer,
                  socklen_t peer_len);

/* Closes c with reason (enum trace_close_reason), recording what is left. */
void pconn_close(struct pconn *c, uint8_t reason);

/* True when nothing of c is in flight (drain at shutdown). */
bool pconn_quiet(const struct pconn *c);

/* Re-enables reading on c after the queue made room (c joins its loop's
 * pending list; served by pconn_serve_pending). */
void pconn_resume(struct pconn *c);

/* Reads what the pending connections of pl may read now (called before
 * the loop sleeps; may close connections).  True when some still wait
 * with a readable socket (the loop must not block). */
bool pconn_serve_pending(struct ploop *pl);

/* Closes c (logging why) when --idle-timeout-s or --msg-timeout-s has
 * expired at now_ns; true if it did (c is freed). */
bool pconn_sweep(struct pconn *c, uint64_t now_ns);

/* The next connection of pl's list (to iterate while closing). */
struct pconn *pconn_next(const struct pconn *c);

#endif
