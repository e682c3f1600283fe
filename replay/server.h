/*
 * server.h -- the replay server: N event loops, one thread each, each with
 * its own SO_REUSEPORT listener on the same address (core/srv.h; DESIGN.md
 * rule 4: the kernel spreads connections; no loop is woken for another's
 * work), and the socket side of connections (read, write, timers:
 * sconn.h).  Each
 * reply is released by its loop's timer heap at its ready time (rule 3);
 * replies that are due when emitted are written at once.
 */
#ifndef MT_REPLAY_SERVER_H
#define MT_REPLAY_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conn.h"
#include "delay.h"
#include "index.h"

struct tls_ctx;

#define SERVER_THREADS_MAX 256
#define SERVER_CONNS_DEFAULT 16384
#define SERVER_OUT_PAUSE (8u << 20) /* stop reading a conn above this */

struct server_opts {
    struct sockaddr_storage listen; /* --listen (core/addr.h); port 0: any
                                       free port (all loops share it) */
    socklen_t listen_len;
    int threads; /* loops; <= 0: one per online core */
    size_t conns_max;
    struct delay_cfg delay;
    uint64_t spin_ns;        /* busy-poll the last spin_ns before a release
                                (the bound of the window if spin_auto) */
    bool spin_auto;          /* window = measured wake-up lateness p99 */
    uint64_t idle_ns;        /* close a connection quiet this long; 0: never */
    uint64_t msg_timeout_ns; /* close a client whose message stays
                                incomplete this long; 0: never */
    size_t msg_max;          /* largest request accepted; 0: 48000000 */
    int rt_prio;             /* SCHED_FIFO priority of every loop thread
                                (core/sched.h), set by the thread itself
                                before it runs; 0: normal scheduling */
    bool pin_loops;          /* loop i on the i-th CPU the process may use */
    bool batch_loops;        /* SCHED_BATCH loop threads (not with rt_prio) */
    bool compress_set;       /* --compressors given: use compress_mask */
    unsigned compress_mask;  /* instead of the recorded server's list */
    const struct auth_cfg *auth; /* borrowed: --credentials; NULL: none */
    struct tls_ctx *tls;         /* borrowed: --tls-cert, every connection is
                                    TLS (sconn.c); NULL: plain TCP */
};

#define SERVER_MSG_TIMEOUT_DEFAULT_NS (30ull * 1000000000ull)

struct server;

/*
 * Binds the listeners and starts the loop threads (signals are blocked in
 * them), and waits until each thread has applied o->rt_prio to itself.
 * The index is borrowed and must outlive the server.  NULL with err filled
 * on failure (nothing left running); a refused real-time priority gives
 * err->code -EPERM (or the -errno of pthread_setschedparam).
 */
struct server *server_start(const struct server_opts *o, struct index *idx,
                            struct mt_err *err);

/* The port the listeners are bound to, and "IP:PORT" / "[V6]:PORT". */
uint16_t server_port(const struct server *s);
const char *server_desc(const struct server *s);
int server_threads(const struct server *s);

/* Stops every loop, joins the threads, closes every connection. */
void server_stop(struct server *s);

/* Sum of every loop's statistics (after server_stop). */
void server_stats(const struct server *s, struct replay_stats *out);

/* After server_stop. NULL is a no-op. */
void server_free(struct server *s);

#endif
