/*
 * handshake.h -- what a live connection of `mtrace play` does before its
 * first recorded request (internal to play/): the TLS handshake with
 * --tls, its own hello (client.application.name "mtrace play", the
 * compressors the recorded hello offered; the compressor the server picks
 * is kept in c->compressor), then with --username a SCRAM conversation
 * (play/auth.h).  Then play_conn__ready.  Every failure ends the run
 * (play__fail) with one line: not MongoDB, handshake refused, credentials
 * refused, TLS failed.
 */
#ifndef MT_PLAY_HANDSHAKE_H
#define MT_PLAY_HANDSHAKE_H

#include "play_conn.h"

/* The TCP connection is up: TLS or the hello. */
void play_hs_start(struct play_conn *c);
/* The socket is ready during the TLS handshake. */
void play_hs_tls_step(struct play_conn *c);
/* A reply in state PLAY_CONN_HELLO or PLAY_CONN_AUTH (m parsed, plain). */
void play_hs_reply(struct play_conn *c, const struct wire_msg *m);

#endif
