/*
 * sconn.h -- the socket side of one replay connection.
 *
 * A struct sconn wraps the socket-free core (conn.h) with its socket:
 * reads with the kernel's receive times (SO_TIMESTAMPNS, for the read-lag
 * statistic), input bounded by --max-msg-bytes, replies released at their
 * ready time by the loop's timer heap (or at once when due) and written
 * with the write() timed, output flow control (reading pauses above
 * SERVER_OUT_PAUSE queued bytes), and the idle / incomplete-message
 * timeout check.  Which loop a connection belongs to, the loop's list of
 * connections and the connection limits are the server's (server.c): it
 * allocates each sconn, and the closed callback gives it back.
 *
 * With --tls-cert (server_opts.tls) every connection is TLS: the
 * handshake runs first (bounded by --msg-timeout-s), then requests are
 * read and replies written through core/tls.h; bytes OpenSSL decrypted
 * but the input buffer could not take are read on without waiting for an
 * event (epoll cannot see them).  Such reads have no kernel receive time.
 * Each connection's handshake is counted once in its loop's statistics
 * (tlsstats.h): completed, with its time from accept(), or failed / aborted
 * when the connection closes before it completed.
 *
 * Threading: a sconn is used only by the thread of its loop.
 */
#ifndef MT_REPLAY_SCONN_H
#define MT_REPLAY_SCONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conn.h"
#include "core/buf.h"
#include "core/loop.h"
#include "server.h"

struct sconn;
struct tls_conn;

/* Called once by sconn_close(), last: the owner unlinks and frees c. */
typedef void sconn_closed_fn(struct sconn *c, void *arg);

struct sconn {
    struct replay_conn core;     /* first: replies name it as their conn */
    struct loop *l;              /* borrowed: its loop */
    const struct server_opts *o; /* borrowed: the server's options */
    sconn_closed_fn *closed;     /* the owner's */
    void *closed_arg;            /* borrowed */
    int fd;                      /* owned */
    struct tls_conn *tls;        /* owned: with --tls-cert; else NULL */
    struct mt_buf in, out;       /* owned */
    size_t out_off;              /* bytes of out already written */
    unsigned watching;           /* LOOP_READ / LOOP_WRITE */
    bool dead;                   /* close once the current callback returns */
    bool in_input;               /* inside replay_conn_input */
    uint64_t write_t0_ns;        /* a timed release's write() starts, or 0 */
    uint64_t last_io_ns;         /* last read or write progress */
    uint64_t msg_start_ns; /* first byte of the incomplete message, or 0 */
    uint64_t accepted_ns;  /* the loop clock at accept() */
    bool tls_expired;      /* TLS: the handshake outlived --msg-timeout-s */
    char peer[64];
    struct sconn *prev, *next; /* the owner's list */
};

/*
 * Takes the socket fd, accepted at accepted_ns (loop clock), as connection
 * c (zeroed by the caller): TCP_NODELAY and SO_TIMESTAMPNS, buffers, the
 * core connection (a new connectionId from w's shared part), and
 * LOOP_READ on l.  o and w must outlive c.  0, or the negative code of
 * loop_fd_add(): then nothing is watched and the caller closes fd and
 * frees c (no closed callback).
 */
int sconn_open(struct sconn *c, struct loop *l, struct replay_worker *w,
               const struct server_opts *o, int fd,
               const struct sockaddr_storage *ss, uint64_t accepted_ns,
               sconn_closed_fn *closed, void *closed_arg);

/*
 * Closes c now: logs why (info level; NULL: nothing logged), stops
 * watching and closes its socket, drops its pending replies (their timers
 * stopped), frees its buffers, and last calls c->closed, which frees c.
 */
void sconn_close(struct sconn *c, const char *why);

/*
 * Why c must close at now (the reason written into tmp, tmp_n bytes), or
 * NULL: a message incomplete for --msg-timeout-s, or no progress for
 * --idle-timeout-s.  A connection we stopped reading (its client does not
 * read its replies) is not charged for a slow message; one whose output
 * makes no progress counts as idle.  The caller closes c when it returns
 * a reason (a TLS handshake's timeout is counted as such then).
 */
const char *sconn_expired(struct sconn *c, uint64_t now, char *tmp,
                          size_t tmp_n);

#endif
