/*
 * scram_rfc.h -- the SCRAM user of RFC 5802's and RFC 7677's examples, for
 * the fuzz targets that run SCRAM conversations (fuzz_scram,
 * fuzz_replay_conn): "user" of admin, password "pencil", the RFCs' salts,
 * 4096 iterations, and their server nonces, so that the RFC conversations
 * in the seed corpora reach the proof check and succeed.
 */
#ifndef MT_TESTS_FUZZ_SCRAM_RFC_H
#define MT_TESTS_FUZZ_SCRAM_RFC_H

#include <stdlib.h>
#include <string.h>

#include "replay/scram.h"

#define SCRAM_RFC5802_SNONCE "3rfcNHYJY1ZVvWVs7j"
#define SCRAM_RFC7677_SNONCE "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"

/*
 * Fills u.  SCRAM-SHA-1's keys come from sha1_pass: "pencil" itself for
 * RFC 5802's conversation, MongoDB's digest of it (scram_mongo_digest)
 * for what a driver sends.
 */
static inline void
scram_rfc_user(struct scram_user *u, const char *sha1_pass)
{
    /* "QSXCR+Q6sek8bf92" (RFC 5802), "W22ZaJ0SNY7soEsUEjb6gQ==" (RFC 7677) */
    static const uint8_t s1[] = {0x41, 0x25, 0xc2, 0x47, 0xe4, 0x3a,
                                 0xb1, 0xe9, 0x3c, 0x6d, 0xff, 0x76};
    static const uint8_t s256[] = {0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12,
                                   0x35, 0x8e, 0xec, 0xa0, 0x4b, 0x14,
                                   0x12, 0x36, 0xfa, 0x81};

    memcpy(u->db, "admin", 6);
    memcpy(u->name, "user", 5);
    if (scram_secret_derive(SCRAM_SHA1, sha1_pass, strlen(sha1_pass), s1,
                            sizeof(s1), 4096, &u->sec[SCRAM_SHA1]) != 0 ||
        scram_secret_derive(SCRAM_SHA256, "pencil", 6, s256, sizeof(s256), 4096,
                            &u->sec[SCRAM_SHA256]) != 0)
        abort();
}

#endif
