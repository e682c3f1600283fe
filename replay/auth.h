/*
 * auth.h -- authentication in replay, as mongod --auth does it.
 *
 * With --credentials, replay is a SCRAM server (scram.h) for the users
 * given: saslStart / saslContinue, hello's saslSupportedMechs and
 * speculativeAuthenticate, and commands refused with Unauthorized (13)
 * until the connection has authenticated (hello, saslStart,
 * saslContinue, authenticate, logout, ping and buildInfo are allowed
 * before, as mongod's requiresAuth() says).  Without --credentials,
 * authentication commands are refused with AuthenticationFailed (18)
 * naming --credentials, and every command is served.
 *
 * Server side: src/mongo/db/auth/sasl_commands.cpp,
 * authentication_session.cpp and sasl_scram_server_conversation.cpp in
 * mongodb/mongo; the client side: the auth spec
 * (https://github.com/mongodb/specifications/blob/master/source/auth/
 * auth.md).
 */
#ifndef MT_REPLAY_AUTH_H
#define MT_REPLAY_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/wire.h" /* libbson, its warnings silenced */
#include "match.h"
#include "scram.h"

#define AUTH_FAILED_CODE 18
#define AUTH_FAILED_MSG "Authentication failed." /* mongod's, for any cause */
#define AUTH_UNAUTHORIZED_CODE 13
#define AUTH_REFUSED_MSG                                                       \
    "mtrace replay was started without --credentials, so it does not "         \
    "authenticate: start it with --credentials USER:PASSWORD (and "            \
    "--auth-source DB if the users are not in admin) to authenticate like "    \
    "mongod --auth, or connect without credentials"

/* Read-only once the server runs. */
struct auth_cfg {
    struct scram_creds creds; /* owned (auth_cfg_free) */
    bool enabled;             /* --credentials given */
    const char *test_snonce;  /* borrowed; NULL: random server nonces
                                 (unit tests fix them) */
};

/* One connection's authentication state. */
struct auth_session {
    struct scram_conv *conv;       /* owned: the conversation in progress */
    const struct scram_user *user; /* borrowed: authenticated as; NULL */
};

/* What one authentication command did, for statistics and the log. */
enum auth_result {
    AUTH_NONE,      /* nothing asked (a hello without speculation) */
    AUTH_STEP,      /* answered, conversation goes on */
    AUTH_SUCCEEDED, /* the connection is now authenticated */
    AUTH_FAILED,    /* answered with an error */
};

void auth_cfg_free(struct auth_cfg *cfg);

/* Frees the conversation in progress (the connection closes). */
void auth_session_free(struct auth_session *s);

/* saslStart, saslContinue, authenticate, getnonce. */
bool auth_is_auth_cmd(const char *name);

/* A command mongod runs before authentication (requiresAuth() false). */
bool auth_allowed_unauthenticated(const char *name);

/*
 * Answers the authentication command req into out (initialised by the
 * caller): the SASL reply, or {ok: 0, errmsg, code, codeName} as mongod
 * would send it.  why (why_len bytes) gets the reason of a failure, for
 * replay's log (the client sees mongod's generic message).
 */
enum auth_result auth_command(const struct auth_cfg *cfg,
                              struct auth_session *s,
                              const struct match_req *req, bson_t *out,
                              char *why, size_t why_len);

/*
 * Appends to a hello reply: saslSupportedMechs for the user the request
 * names (saslSupportedMechs: "db.user"; nothing for an unknown user, as
 * mongod), and speculativeAuthenticate answering the request's
 * speculative saslStart (nothing when it fails, as mongod; *result says
 * what happened: AUTH_STEP when answered, AUTH_FAILED when dropped,
 * AUTH_NONE when none was asked for).  0 or MT_EBSON.
 */
int auth_hello_append(const struct auth_cfg *cfg, struct auth_session *s,
                      const struct match_req *req, bson_t *out,
                      enum auth_result *result, char *why, size_t why_len);

#endif
