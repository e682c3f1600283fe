/*
 * auth.h -- the client side of SCRAM-SHA-256 and SCRAM-SHA-1 as MongoDB
 * speaks it (saslStart / saslContinue), for `mtrace play --username`.
 *
 * Specs: RFC 5802, RFC 7677 and MongoDB's auth spec (see core/scram.h).
 * The conversation: client-first "n,,n=USER,r=CNONCE"; the server's
 * "r=NONCE,s=SALT,i=ITER"; client-final "c=biws,r=NONCE,p=PROOF"; the
 * server's "v=SIGNATURE", checked; then empty messages until done.
 * Crypto is libcrypto's (PKCS5_PBKDF2_HMAC, HMAC, EVP_Digest,
 * RAND_bytes).
 */
#ifndef MT_PLAY_AUTH_H
#define MT_PLAY_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/wire.h"

struct play_auth;

/*
 * A conversation for user/password on database db; mech
 * "SCRAM-SHA-256" (NULL: the same) or "SCRAM-SHA-1".  Strings are copied.
 * NULL with err set (unknown mechanism, a password SASLprep refuses,
 * -ENOMEM).
 */
struct play_auth *play_auth_new(const char *mech, const char *user,
                                const char *password, const char *db,
                                struct mt_err *err);
void play_auth_free(struct play_auth *a); /* NULL is a no-op */

/* Fills *cmd (initialised here; the caller destroys it) with saslStart.
 * 0 or MT_ECORRUPT (no randomness). */
int play_auth_start(struct play_auth *a, bson_t *cmd, struct mt_err *err);
/* The same with the client nonce given (the test seam for the RFC
 * example conversations); nonce is printable ASCII without ','. */
int play_auth_start_nonce(struct play_auth *a, const char *nonce, bson_t *cmd);

/*
 * The server's reply body (len bytes, borrowed).  *done: authenticated,
 * *cmd untouched; else *cmd (initialised here) is the next saslContinue.
 * Negative with err: the server refused (its errmsg and code), or its
 * answer is malformed, or its signature is wrong.
 */
int play_auth_step(struct play_auth *a, const uint8_t *body, size_t len,
                   bson_t *cmd, bool *done, struct mt_err *err);

#endif
