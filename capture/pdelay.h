/*
 * pdelay.h -- holding server replies for `mtrace capture --delay-ms`
 * (DESIGN.md rule 3: a deadline on the loop's timer heap, not a sleep).
 *
 * When a reply's last byte arrives at t, a hold {ready = t + delay, end =
 * stream offset after the reply} is queued on its connection; the
 * connection's timer fires at the earliest ready and moves the
 * direction's release offset to that end, so pipelined replies do not
 * queue behind each other's delays.  Each hold also measures the achieved
 * delay: from arrival to the start of the send() that handed its last byte
 * to the client socket.
 */
#ifndef MT_CAPTURE_PDELAY_H
#define MT_CAPTURE_PDELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "pconn.h"

/* True when direction d of c is held (server->client under --delay-ms). */
bool pdelay_on(const struct pconn *c, int d);

/*
 * Holds the reply bytes up to end_off until arrival_ns + delay; arrival_ns
 * 0: not a whole reply (the tail at EOF), held from now, not measured.
 * Arms c's timer.  More than PCONN_HOLDS_MAX holds, or no memory: c dies.
 */
void pdelay_hold_add(struct pconn *c, uint64_t arrival_ns, uint64_t end_off);

/* After a send() that began at t_send: records the achieved delay of each
 * released hold whose bytes are now all written. */
void pdelay_written(struct pconn *c, uint64_t t_send);

/* At close: stops c's timer, frees its holds, un-counts them. */
void pdelay_close(struct pconn *c);

/*
 * Called before pl's loop sleeps, with --rt-prio and --delay-ms: bounds
 * the spin window so that pl's busy-polling stays under half a CPU.  A
 * SCHED_FIFO loop that spins is never preempted by normal threads (the
 * client, the upstream); with n replies held, releases come about every
 * delay / n, and a fixed window longer than that spins without pause.
 * The window becomes min(--spin-us, (delay / 2) / n).
 */
void pdelay_bound_spin(struct ploop *pl);

#endif
