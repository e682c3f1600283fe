/*
 * ptls.h -- TLS legs of the capture proxy (--tls-cert, --target-tls).
 *
 * The proxy terminates TLS on either side or both: it accepts TLS from
 * the application with its own certificate and/or originates TLS to the
 * target, and frames and records the plaintext in between.  The TLS
 * itself is core/tls.h (OpenSSL).  Plain connections never come here:
 * pconn.c tests c->tls[side] (NULL for a plain socket) before each
 * recv/send and calls the syscall directly when it is NULL.
 *
 * A connection with a TLS side stays "connecting" (nothing forwarded,
 * nothing read for recording) until the upstream TCP connection is up
 * and every TLS handshake completed.  Each handshake that ends, completed
 * or failed, is recorded as a tls record of its leg (version, cipher,
 * time from the accept / the upstream connect; docs/trace-format.md 2.7).
 * A failed handshake is also logged with OpenSSL's reason and closes the
 * connection (trace: conn_close reason `error` for the client side,
 * `upstream-fail` for the target side); the proxy keeps serving.
 */
#ifndef MT_CAPTURE_PTLS_H
#define MT_CAPTURE_PTLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/err.h"
#include "pconn.h"
#include "proxy.h"

/* Builds p's TLS contexts from o (certificate files read now: a bad file
 * fails before anything listens).  0 or a negative code with err set. */
int ptls_init(struct proxy *p, const struct proxy_opts *o, struct mt_err *err);

/* Frees p's TLS contexts (after every connection closed). */
void ptls_free(struct proxy *p);

/* "client TLS, target TLS verified"-like text (with paren: " (...)", for
 * the start-up line and the trace header) into out (n bytes); "" when
 * both sides are plain. */
void ptls_desc(const struct proxy *p, bool paren, char *out, size_t n);

/* After c's sockets exist (sfd may still be connecting): creates the TLS
 * side(s) p asks for.  0, or -ENOMEM. */
int ptls_conn_init(struct pconn *c);

/* Drives c's handshakes, recording each one that ends; when all are
 * done, c stops connecting.  On a failure logs it and marks c dead. */
void ptls_step(struct pconn *c);

/* close_notify to the destination of d (before its shutdown(SHUT_WR)). */
void ptls_notify(struct pconn *c, int d);

/* Logs a TLS error (errno EPROTO) met reading from ("from") or writing to
 * ("sending to") the socket of side (0 client, 1 server) of c. */
void ptls_log_error(const struct pconn *c, int side, const char *how);

/* While c's handshakes run: true (logged, counted, recorded as failed
 * tls records) when --msg-timeout-s has passed since c was accepted; the
 * caller closes c. */
bool ptls_expired(struct pconn *c, uint64_t now_ns);

/* Frees c's TLS state (before its sockets close). */
void ptls_conn_free(struct pconn *c);

#endif
