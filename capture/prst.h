/*
 * prst.h -- the end of a proxied connection one side of which reset:
 * after the bytes read from that side before the reset have been
 * delivered to the other side, the other side is reset too, once its
 * peer has every byte (pconn.c calls these; see docs/capture.md,
 * "Guarantees").
 */
#ifndef MT_CAPTURE_PRST_H
#define MT_CAPTURE_PRST_H

#include "pconn.h"

/* How often the destination's send queue is polled. */
#define PRST_POLL_NS 1000000ull

/*
 * The source of direction d reset and everything read from it has been
 * written to d's destination.  Polls (SIOCOUTQ, every PRST_POLL_NS on
 * c's loop timer rst_timer) until the destination's send queue is empty,
 * then marks c dead with the reset reason of d and closes it
 * (pconn__after); pconn_close resets the destination (prst_linger0).  A
 * peer that reads updates c->last_io_ns; one that never reads keeps c
 * open (--idle-timeout-s closes it).  c->rst_wait is true from now on.
 */
void prst_wait(struct pconn *c, int d);

/* Makes close(fd) send a reset (SO_LINGER on, 0 s) instead of a FIN;
 * fd < 0 is ignored. */
void prst_linger0(int fd);

#endif
