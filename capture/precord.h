/*
 * precord.h -- what a proxied connection records: each complete message
 * (framed on a copy of the stream, stamped with the time its last byte
 * was read), partial messages at close, open/close and TLS records.
 */
#ifndef MT_CAPTURE_PRECORD_H
#define MT_CAPTURE_PRECORD_H

#include <stddef.h>
#include <stdint.h>

#include "core/trace.h"
#include "pconn.h"

/*
 * Frames the n bytes p just read from direction d of c (pstream_read
 * counted them), copying them into records queued on c's loop; t_ns is
 * when the read returned.  Holds complete replies under --delay-ms.  Bytes
 * that are not MongoDB wire protocol, or a client message over
 * --max-msg-bytes, mark c dead (logged and counted).
 */
void precord_frame(struct pconn *c, int d, const uint8_t *p, size_t n,
                   uint64_t t_ns);

/* pstream_emit_fn of c's streams: a complete message joins c's loop's
 * batch (the first reply is checked for a replica set). */
void precord_emit(void *arg, struct recq_item *it);

/* Records c's opening (both endpoints), stamped with c->open_ns (the
 * accept). */
void precord_open(struct pconn *c);

/* Records one TLS handshake of c (t copied; queued like the other
 * records, never dropped but for lack of memory, which is counted). */
void precord_tls(struct pconn *c, const struct trace_tls *t);

/* Records what c's framers hold as partial messages, then its closing
 * with reason (enum trace_close_reason), stamped now. */
void precord_close(struct pconn *c, uint8_t reason);

#endif
