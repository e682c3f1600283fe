/*
 * scram.h -- the server side of SCRAM-SHA-1 and SCRAM-SHA-256 as mongod
 * speaks it: the users of --credentials with their derived keys, a strict
 * parser of the two client messages, and one conversation's state.
 *
 * Specs: RFC 5802 (SCRAM), RFC 7677 (SCRAM-SHA-256), and MongoDB's auth
 * spec (https://github.com/mongodb/specifications/blob/master/source/auth/
 * auth.md): SCRAM-SHA-1 uses hex(MD5("user:mongo:password")) as its
 * password (not SASLprep'd), SCRAM-SHA-256 the SASLprep'd password
 * (libidn's stringprep); no channel binding.
 *
 *     client-first  n,,n=user,r=CNONCE                  (saslStart payload)
 *     server-first  r=CNONCE+SNONCE,s=SALT,i=ITER
 *     client-final  c=biws,r=CNONCE+SNONCE,p=PROOF       (saslContinue)
 *     server-final  v=SIGNATURE
 *     (client empty, server empty, done)      unless skipEmptyExchange
 *
 * Every crypto primitive is libcrypto's (PKCS5_PBKDF2_HMAC, HMAC, EVP
 * digests, RAND_bytes, EVP_EncodeBlock/DecodeBlock); keys are derived once
 * per user at start, as mongod stores them, so a conversation costs two
 * HMACs and a hash.
 */
#ifndef MT_REPLAY_SCRAM_H
#define MT_REPLAY_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/scram.h"

/* mongod's defaults: the server parameters scramIterationCount (10000)
 * and scramSHA256IterationCount (15000), src/mongo/db/auth/sasl_options
 * .idl, each at least 5000 there).  --scram-iterations takes 4096 and up:
 * the auth spec makes drivers refuse fewer. */
#define SCRAM_ITER_SHA1_DEFAULT 10000u
#define SCRAM_ITER_SHA256_DEFAULT 15000u
#define SCRAM_ITER_MIN 4096u /* drivers refuse fewer (auth spec) */
#define SCRAM_ITER_MAX 100000000u

#define SCRAM_HASH_MAX 32   /* SHA-256 */
#define SCRAM_MSG_MAX 1024  /* longest client message accepted */
#define SCRAM_NAME_MAX 256  /* user name bytes (decoded) */
#define SCRAM_DB_MAX 128    /* like match_req.db */
#define SCRAM_USERS_MAX 256 /* --credentials */
#define SCRAM_SNONCE_RAW                                                       \
    24 /* random bytes of the server nonce, as mongod:                         \
          32 base64 characters */

/* What a server stores per user and mechanism (RFC 5802 section 3). */
struct scram_secret {
    uint32_t iterations;
    char salt_b64[64];
    uint8_t stored_key[SCRAM_HASH_MAX];
    uint8_t server_key[SCRAM_HASH_MAX];
};

struct scram_user {
    char db[SCRAM_DB_MAX];
    char name[SCRAM_NAME_MAX + 1];
    struct scram_secret sec[SCRAM_MECHS];
};

struct scram_creds {
    struct scram_user *users; /* owned */
    size_t n;
};

/*
 * Derives the stored and server keys from pass (the bytes Hi() takes: the
 * MongoDB digest for SHA-1, the SASLprep'd password for SHA-256), salt and
 * iterations.  The test seam for RFC vectors.  0 or MT_ECORRUPT (libcrypto
 * failed).  Cost: `iterations` HMACs.
 */
int scram_secret_derive(enum scram_mech m, const char *pass, size_t pass_len,
                        const uint8_t *salt, size_t salt_len,
                        uint32_t iterations, struct scram_secret *out);

/*
 * Adds user `name` of database db with password; iterations[] per
 * mechanism.  Fresh random salts (RAND_bytes; mongod's lengths, hash
 * length - 4); keys derived at once.  0, MT_EUSAGE (empty name or
 * password, too long, duplicate, refused password), MT_ELIMIT or -ENOMEM.
 */
int scram_creds_add(struct scram_creds *c, const char *db, const char *name,
                    const char *password,
                    const uint32_t iterations[SCRAM_MECHS], struct mt_err *err);

/* The user name (len bytes) of database db; NULL if none. */
const struct scram_user *scram_creds_find(const struct scram_creds *c,
                                          const char *db, const char *name,
                                          size_t len);
void scram_creds_free(struct scram_creds *c);

/* ---- parsing (views into the message; nothing is copied but the user) */

struct scram_client_first {
    size_t gs2_len;      /* "n,," or "y,," or "n,a=x,": the gs2 header */
    const char *authzid; /* borrowed, NULL if none; encoded saslname */
    size_t authzid_len;
    const char *bare; /* borrowed: client-first-message-bare */
    size_t bare_len;
    char user[SCRAM_NAME_MAX + 1]; /* decoded ("=2C" -> ",", "=3D" -> "=") */
    size_t user_len;
    const char *nonce; /* borrowed: the client nonce */
    size_t nonce_len;
};

/*
 * Parses a client-first-message (RFC 5802 section 7) strictly: gs2 flag
 * "n" or "y" ("p=": channel binding, refused), optional "a=" authzid that
 * must name the same user, no "m=" mandatory extension, "n=" saslname
 * (UTF-8, escapes only =2C and =3D), "r=" printable nonce of at least 4
 * characters (as mongod), then optional extensions.  0 or MT_EPROTO with
 * err (message and offset of the first bad byte).
 */
int scram_parse_client_first(const uint8_t *p, size_t len,
                             struct scram_client_first *out,
                             struct mt_err *err);

struct scram_client_final {
    const char *cbind; /* borrowed: the c= value (base64) */
    size_t cbind_len;
    const char *nonce; /* borrowed: the r= value */
    size_t nonce_len;
    const char *proof; /* borrowed: the p= value (base64) */
    size_t proof_len;
    size_t without_proof_len; /* client-final-message-without-proof */
};

/* Parses a client-final-message: "c=" base64 "," "r=" nonce
 * ["," extensions] "," "p=" base64.  0 or MT_EPROTO with err. */
int scram_parse_client_final(const uint8_t *p, size_t len,
                             struct scram_client_final *out,
                             struct mt_err *err);

/* ---- one conversation ---- */

enum scram_state {
    SCRAM_ST_FIRST_SENT, /* server-first sent; waiting for client-final */
    SCRAM_ST_FINAL_SENT, /* server-final sent; waiting for the empty step */
    SCRAM_ST_DONE,       /* authenticated */
    SCRAM_ST_FAILED,
};

struct scram_conv {
    enum scram_mech mech;
    enum scram_state state;
    bool skip_empty;               /* options.skipEmptyExchange */
    const struct scram_user *user; /* borrowed from the creds */
    char gs2[SCRAM_MSG_MAX];       /* the gs2 header, for c= */
    size_t gs2_len;
    char nonce[SCRAM_MSG_MAX + 64]; /* client + server nonce */
    size_t nonce_len;
    char auth[3 * SCRAM_MSG_MAX + 256]; /* AuthMessage so far */
    size_t auth_len;
};

/* Outcome of a failed step; scram_conv_* set it in *why. */
enum scram_fail {
    SCRAM_FAIL_NONE = 0,
    SCRAM_FAIL_MALFORMED, /* a client message that is not SCRAM */
    SCRAM_FAIL_NO_USER,   /* no such user in that database */
    SCRAM_FAIL_PROOF,     /* wrong password (proof mismatch) */
    SCRAM_FAIL_STATE,     /* a step after the conversation ended */
};

/* The longest server message: r= nonce, s= salt, i= count. */
#define SCRAM_OUT_MAX (SCRAM_MSG_MAX + 256)

/*
 * Starts a conversation on client-first (len bytes) for a user of db.
 * server_nonce: the server's part of the nonce, or NULL to draw 24
 * random bytes (base64; the test seam for RFC vectors).  Writes the
 * server-first-message to out (SCRAM_OUT_MAX bytes, NUL-terminated,
 * length in *out_len).  0, or MT_EPROTO / MT_ENOMATCH with err and *why.
 */
int scram_conv_start(struct scram_conv *cv, const struct scram_creds *c,
                     enum scram_mech mech, const char *db, bool skip_empty,
                     const uint8_t *msg, size_t len, const char *server_nonce,
                     char *out, size_t *out_len, enum scram_fail *why,
                     struct mt_err *err);

/*
 * The next step: the client-final-message (answered "v=" signature; the
 * conversation is done when skip_empty was set), or the empty exchange
 * after it (answered empty, done).  *done: the client is authenticated.
 * 0, or a negative code with err and *why (the conversation is then
 * SCRAM_ST_FAILED).
 */
int scram_conv_step(struct scram_conv *cv, const uint8_t *msg, size_t len,
                    char *out, size_t *out_len, bool *done,
                    enum scram_fail *why, struct mt_err *err);

#endif
