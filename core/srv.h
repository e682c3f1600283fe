/*
 * srv.h -- the multi-loop TCP server scaffold of `mtrace capture` (the
 * proxy) and `mtrace replay`: listeners, the spreading of accepted
 * connections over loops, loop threads, the timeout sweep and the drain
 * on stop.  Addresses are parsed and formatted by core/addr.h.
 *
 * One event loop per thread, each with its own SO_REUSEPORT listener on
 * the same address (DESIGN.md rule 4: the kernel gives each connection to
 * one loop, no loop is woken for another's accept).  A plain bind first
 * checks that no other process listens there (SO_REUSEPORT would share
 * the port with it silently); port 0 picks one port for every loop.
 *
 * SO_REUSEPORT spreads connections by a hash of their addresses, not by
 * load: 64 connections from one client came out anywhere from 32/32 to
 * 24/40 over two loops, and the busier loop serves its connections later.
 * A loop that accepts a connection while another holds fewer queues it to
 * that loop (struct srv_hand) and wakes only that loop; the loops stay
 * within one connection of each other.
 *
 * The user owns the loops (struct loop, created with its own settings),
 * attaches each to the server (srv_loop_attach), calls srv_loop_tick()
 * from the loop's before-sleep hook and srv_conn_done() when one of the
 * connections it was given ends.  Callbacks run on the loop's thread.
 *
 * --max-conns: with conns_max, a connection accepted while conns_max
 * given by on_conn are not yet done is closed at once (on_refused says
 * so); the count is over all loops.
 *
 * Threads: srv_start() starts one per loop with SIGINT/SIGTERM (all
 * signals) blocked, optionally pinned (--pin-loops); each sets 1 ns timer
 * slack, --rt-prio (SCHED_FIFO) or --batch-loops (SCHED_BATCH) on itself
 * before it runs its loop.  srv_stop() (async-signal-safe) makes every
 * loop close its listener and drain: the user closes connections as they
 * go quiet, and after drain_ns what remains (on_drain_end); the loop
 * stops when it has none left.
 */
#ifndef MT_SRV_H
#define MT_SRV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "err.h"

struct loop;

#define SRV_LOOPS_MAX 256
#define SRV_HAND_MAX 256 /* connections queued to one loop; then kept */
#define SRV_BACKLOG 4096

/* ---- hand-off queue: accepted connections on their way to a loop ---- */

struct srv_hand_item {
    int fd; /* owned by the queue while queued */
    socklen_t peer_len;
    struct sockaddr_storage peer;
    uint64_t accepted_ns; /* the accepting loop's clock at accept() */
};

/* A bounded FIFO under a mutex (only accepts go through it); its length
 * is also kept in an atomic so that an empty check costs no lock. */
struct srv_hand {
    pthread_mutex_t mu;
    struct srv_hand_item items[SRV_HAND_MAX]; /* ring */
    size_t head;                              /* under mu */
    _Atomic size_t len;                       /* written under mu */
};

void srv_hand_init(struct srv_hand *h);
/* Closes the fds still queued. */
void srv_hand_free(struct srv_hand *h);

/* Thread-safe: queues fd (ownership passes to the queue) with its peer
 * address and accept time; false when the queue is full (the caller keeps
 * fd). */
bool srv_hand_push(struct srv_hand *h, int fd,
                   const struct sockaddr_storage *peer, socklen_t peer_len,
                   uint64_t accepted_ns);

/* Thread-safe: the oldest queued connection (its fd passes to the
 * caller), or false when empty.  Lock-free when empty. */
bool srv_hand_pop(struct srv_hand *h, struct srv_hand_item *out);

/* ---- the server ---- */

/* A new connection of loop arg: fd (non-blocking, close-on-exec) passes to
 * the callee, which calls srv_conn_done() once when it ends, refused or
 * not.  accepted_ns: the accepting loop's clock at accept(). */
typedef void srv_conn_fn(void *arg, int fd, const struct sockaddr_storage *peer,
                         socklen_t peer_len, uint64_t accepted_ns);
/* Periodic: close the connections whose timeouts expired at now_ns. */
typedef void srv_sweep_fn(void *arg, uint64_t now_ns);
/* The loop's own hook (drain deadline; after loop_run on its thread). */
typedef void srv_loop_fn(void *arg);
/* A connection of loop arg was refused at conns_max (its fd is closed);
 * open: the connections open then. */
typedef void srv_refused_fn(void *arg, size_t open);

struct srv_cfg {
    const char *name; /* borrowed: "capture" or "replay", for messages */
    struct sockaddr_storage addr; /* --listen */
    socklen_t addr_len;
    int nloops;           /* 1..SRV_LOOPS_MAX: srv_loops_count() */
    int rt_prio;          /* --rt-prio: SCHED_FIFO of the loop threads; 0 */
    bool pin_loops;       /* --pin-loops: loop i on the i-th allowed CPU */
    bool batch_loops;     /* --batch-loops: SCHED_BATCH loop threads */
    uint64_t sweep_ns;    /* sweep period (srv_sweep_period_ns); 0: none */
    uint64_t drain_ns;    /* after srv_stop; 0: stop the loops at once */
    size_t conns_max;     /* --max-conns: refused at accept; 0: none */
    srv_conn_fn *on_conn; /* required */
    srv_refused_fn *on_refused; /* with conns_max; NULL: refused quietly */
    srv_sweep_fn *on_sweep;     /* with sweep_ns */
    srv_loop_fn *on_drain_end;  /* drain_ns passed: close what remains */
    srv_loop_fn *on_exit;       /* on the loop's thread after it ran; NULL */
};

struct srv;

/* Loops for --threads want (<= 0: one per online CPU), at most max. */
int srv_loops_count(int want, int max);

/* Sweep period for the two timeouts (0: never): a quarter of the shorter,
 * within 10 ms..1 s; 0 when both are 0. */
uint64_t srv_sweep_period_ns(uint64_t idle_ns, uint64_t msg_timeout_ns);

/*
 * Binds the probe, then cfg->nloops listeners (copied cfg; callbacks kept).
 * NULL with err filled ("cannot listen on ADDR: why"; nothing left open).
 */
struct srv *srv_new(const struct srv_cfg *cfg, struct mt_err *err);

/* Closes the listeners and the queued connections (after srv_join, and
 * before the loops are freed).  NULL is a no-op. */
void srv_free(struct srv *s);

/* The address bound (the port chosen for port 0), formatted as
 * core/addr.h's mt_addr_format does. */
const char *srv_desc(const struct srv *s);
uint16_t srv_port(const struct srv *s);
int srv_nloops(const struct srv *s);

/*
 * Loop i (0 <= i < nloops) is l (borrowed: it outlives the server), arg is
 * passed to the callbacks.  Watches the listener and starts the sweep
 * timer on l.  0 or a negative code with err filled.
 */
int srv_loop_attach(struct srv *s, int i, struct loop *l, void *arg,
                    struct mt_err *err);

/*
 * From loop i's before-sleep hook: takes the connections other loops
 * queued to it (closed when draining) and, once srv_stop() was called,
 * begins the drain (listener closed, deadline started; with drain_ns 0
 * the loop stops).  True while stopping: the user then closes its quiet
 * connections and calls loop_stop() when none is left.
 */
bool srv_loop_tick(struct srv *s, int i);

/* Loop i's connection given by on_conn has ended (or was refused by its
 * user). */
void srv_conn_done(struct srv *s, int i);

/* Connections given by on_conn and not yet done, over all loops. */
size_t srv_conns_open(const struct srv *s);

/* Connections loop i accepted and queued to another loop. */
uint64_t srv_loop_handed(const struct srv *s, int i);

/*
 * Starts the loop threads and waits until each has set its scheduling.
 * Returns 0, or a negative code with err filled: a thread could not be
 * started (or pinned), or --rt-prio was refused (-EPERM, "--rt-prio N: "
 * and why; that thread does not run its loop).  On error call
 * srv_stop() and srv_join() as after success.
 */
int srv_start(struct srv *s, struct mt_err *err);

/* Async-signal-safe: every loop begins its drain.  NULL is a no-op. */
void srv_stop(struct srv *s);

/* True once srv_stop() was called. */
bool srv_stopping(const struct srv *s);

/* Waits for the loop threads started by srv_start. */
void srv_join(struct srv *s);

#endif
