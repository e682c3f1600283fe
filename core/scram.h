/*
 * scram.h -- the SCRAM primitives the server side (replay/scram.c) and
 * the client side (play/auth.c) share: mechanism names, strict base64,
 * SASLprep and MongoDB's SCRAM-SHA-1 password digest.
 *
 * Specs: RFC 5802 (SCRAM), RFC 7677 (SCRAM-SHA-256), RFC 4013
 * (SASLprep), and MongoDB's auth spec
 * (https://github.com/mongodb/specifications/blob/master/source/auth/
 * auth.md): SCRAM-SHA-1 uses hex(MD5("user:mongo:password")) as its
 * password (not SASLprep'd), SCRAM-SHA-256 the SASLprep'd password.
 * Every primitive is libcrypto's or libidn's.
 */
#ifndef MT_SCRAM_H
#define MT_SCRAM_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum scram_mech { SCRAM_SHA1 = 0, SCRAM_SHA256 = 1 };
#define SCRAM_MECHS 2

/* "SCRAM-SHA-1" -> SCRAM_SHA1, "SCRAM-SHA-256" -> SCRAM_SHA256; else -1. */
int scram_mech_parse(const char *name);
const char *scram_mech_name(enum scram_mech m);

/* hex(MD5(name ":mongo:" password)), SCRAM-SHA-1's password in MongoDB
 * (auth spec), into hex (33 bytes).  0 or MT_ECORRUPT. */
int scram_mongo_digest(const char *name, const char *password, char hex[33]);

/*
 * SASLprep (RFC 4013) of a password for SCRAM-SHA-256, through libidn's
 * stringprep "SASLprep" profile for stored strings (unassigned code points
 * prohibited, as pymongo's saslprep() by default): mapping (non-ASCII
 * spaces to space, soft hyphen and the like to nothing), NFKC, prohibited
 * characters (controls, ...) and bidi rules.  *out (owned: the caller
 * frees it with scram_saslprep_free) is the prepared UTF-8.  0, or
 * MT_EUSAGE with err saying why (also when nothing is left).
 */
int scram_saslprep(const char *password, char **out, struct mt_err *err);
void scram_saslprep_free(char *s);

/* Strict base64 (RFC 4648 alphabet, padded, no whitespace) through
 * EVP_DecodeBlock: the decoded length, or -1 when s is not base64 or the
 * result would not fit in cap bytes. */
int scram_b64_decode(const char *s, size_t len, uint8_t *out, size_t cap);

/* base64 of n bytes into out (4 * ceil(n / 3) + 1 bytes, NUL-terminated,
 * EVP_EncodeBlock); the length written. */
size_t scram_b64_encode(const uint8_t *in, size_t n, char *out);

#endif
