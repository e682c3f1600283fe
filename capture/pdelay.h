/*
 * pdelay.h -- the timer that releases server replies for `mtrace capture
 * --delay-ms` (DESIGN.md rule 3: a deadline on the loop's timer heap, not
 * a sleep).  The holds are kept by the server->client stream (pstream.h:
 * ready = arrival + delay, end = stream offset after the reply); the
 * connection's timer fires at the earliest ready and releases what is
 * due, so pipelined replies do not queue behind each other's delays.
 * The achieved delay runs from arrival to the start of the send() that
 * handed the reply's last byte to the client socket.
 */
#ifndef MT_CAPTURE_PDELAY_H
#define MT_CAPTURE_PDELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "pconn.h"

/* True when direction d of c is held (server->client under --delay-ms). */
bool pdelay_on(const struct pconn *c, int d);

/* After holds were added or released in c's server->client stream:
 * counts them in c's loop and arms c's timer for the earliest. */
void pdelay_arm(struct pconn *c);

/* The server ended at now_ns: its incomplete tail is held too. */
void pdelay_eof(struct pconn *c, uint64_t now_ns);

/* More than PSTREAM_HOLDS_MAX replies held (or no memory for more): c
 * dies, logged. */
void pdelay_full(struct pconn *c);

/* At close: stops c's timer and un-counts its holds. */
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
