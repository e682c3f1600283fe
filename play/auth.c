/*
 * auth.c -- SCRAM client conversation (see auth.h).
 */
#include "auth.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "core/mem.h"
#include "core/scram.h"

#define AUTH_MSG_MAX 1024
#define HASH_MAX 32

struct play_auth {
    enum scram_mech mech;
    char db[128];
    char *pass; /* owned: SASLprep'd (SHA-256) or the MongoDB digest */
    char first_bare[AUTH_MSG_MAX]; /* n=USER,r=CNONCE */
    char nonce[64];                /* CNONCE */
    uint8_t server_sig[HASH_MAX];
    int step;     /* 0 saslStart sent, 1 client-final sent, 2 verified */
    int32_t conv; /* conversationId */
};

static const EVP_MD *
md_of(const struct play_auth *a)
{
    return a->mech == SCRAM_SHA1 ? EVP_sha1() : EVP_sha256();
}

static size_t
hlen_of(const struct play_auth *a)
{
    return a->mech == SCRAM_SHA1 ? 20 : 32;
}

struct play_auth *
play_auth_new(const char *mech, const char *user, const char *password,
              const char *db, struct mt_err *err)
{
    struct play_auth *a;
    char *prepped = NULL, hex[33];
    int m = scram_mech_parse(mech != NULL ? mech : "SCRAM-SHA-256");
    size_t len = 0;

    if (m < 0) {
        mt_err_set(err, MT_EUSAGE, 0, "unknown mechanism %s", mech);
        return NULL;
    }
    a = mt_calloc(1, sizeof(*a));
    if (a == NULL) {
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        return NULL;
    }
    a->mech = (enum scram_mech)m;
    snprintf(a->db, sizeof(a->db), "%s", db);
    if (a->mech == SCRAM_SHA256) {
        if (scram_saslprep(password, &prepped, err) < 0) {
            mt_free(a);
            return NULL;
        }
        a->pass = mt_strdup(prepped);
        scram_saslprep_free(prepped);
    } else if (scram_mongo_digest(user, password, hex) == 0) {
        a->pass = mt_strdup(hex);
        OPENSSL_cleanse(hex, sizeof(hex));
    }
    if (a->pass == NULL) {
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        mt_free(a);
        return NULL;
    }
    /* the user name with '=' and ',' escaped (RFC 5802 saslname) */
    len = (size_t)snprintf(a->first_bare, sizeof(a->first_bare), "n=");
    for (const char *p = user; *p && len + 4 < sizeof(a->first_bare); p++) {
        if (*p == '=' || *p == ',') {
            memcpy(a->first_bare + len, *p == '=' ? "=3D" : "=2C", 3);
            len += 3;
        } else {
            a->first_bare[len++] = *p;
        }
    }
    a->first_bare[len] = '\0';
    return a;
}

void
play_auth_free(struct play_auth *a)
{
    if (a == NULL)
        return;
    if (a->pass != NULL) {
        OPENSSL_cleanse(a->pass, strlen(a->pass));
        mt_free(a->pass);
    }
    OPENSSL_cleanse(a, sizeof(*a));
    mt_free(a);
}

static void
append_payload(bson_t *cmd, const char *s)
{
    bson_append_binary(cmd, "payload", -1, BSON_SUBTYPE_BINARY,
                       (const uint8_t *)s, (uint32_t)strlen(s));
}

int
play_auth_start_nonce(struct play_auth *a, const char *nonce, bson_t *cmd)
{
    char first[AUTH_MSG_MAX + 8];
    bson_t opts;
    size_t len = strlen(a->first_bare);

    snprintf(a->nonce, sizeof(a->nonce), "%s", nonce);
    snprintf(a->first_bare + len, sizeof(a->first_bare) - len, ",r=%s",
             a->nonce);
    snprintf(first, sizeof(first), "n,,%s", a->first_bare);
    bson_init(cmd);
    bson_append_int32(cmd, "saslStart", -1, 1);
    bson_append_utf8(cmd, "mechanism", -1, scram_mech_name(a->mech), -1);
    append_payload(cmd, first);
    bson_append_bool(cmd, "autoAuthorize", -1, true);
    bson_append_document_begin(cmd, "options", -1, &opts);
    bson_append_bool(&opts, "skipEmptyExchange", -1, true);
    bson_append_document_end(cmd, &opts);
    bson_append_utf8(cmd, "$db", -1, a->db, -1);
    a->step = 0;
    return 0;
}

int
play_auth_start(struct play_auth *a, bson_t *cmd, struct mt_err *err)
{
    uint8_t raw[24];
    char nonce[64];

    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return mt_err_set(err, MT_ECORRUPT, 0, "no randomness for a nonce");
    scram_b64_encode(raw, sizeof(raw), nonce);
    return play_auth_start_nonce(a, nonce, cmd);
}

/* The value of attribute key ("r", "s", "i", "v", "e") of a SCRAM
 * message, copied into out; false when absent or too long. */
static bool
attr(const char *msg, size_t len, char key, char *out, size_t cap)
{
    size_t i = 0;

    while (i < len) {
        size_t j = i;
        while (j < len && msg[j] != ',')
            j++;
        if (j - i >= 2 && msg[i] == key && msg[i + 1] == '=') {
            if (j - i - 2 >= cap)
                return false;
            memcpy(out, msg + i + 2, j - i - 2);
            out[j - i - 2] = '\0';
            return true;
        }
        i = j + 1;
    }
    return false;
}

/* Builds client-final from server-first (msg), keeping the expected
 * server signature. */
static int
client_final(struct play_auth *a, const char *msg, size_t len, char *out,
             size_t cap, struct mt_err *err)
{
    const EVP_MD *md = md_of(a);
    size_t hl = hlen_of(a);
    char nonce[256], salt_b64[128], iter_s[16], proof_b64[64];
    char authmsg[3 * AUTH_MSG_MAX], without_proof[300];
    uint8_t salt[96], salted[HASH_MAX], ckey[HASH_MAX], skey[HASH_MAX];
    uint8_t stored[HASH_MAX], sig[HASH_MAX];
    unsigned int l;
    long iter;
    char *end;
    int salt_len, rc = MT_ECORRUPT;

    if (!attr(msg, len, 'r', nonce, sizeof(nonce)) ||
        !attr(msg, len, 's', salt_b64, sizeof(salt_b64)) ||
        !attr(msg, len, 'i', iter_s, sizeof(iter_s)))
        return mt_err_set(err, MT_EPROTO, 0,
                          "the server's first SCRAM message lacks r, s or i");
    iter = strtol(iter_s, &end, 10);
    if (*end != '\0' || iter < 4096 || iter > 100000000)
        return mt_err_set(err, MT_EPROTO, 0, "bad iteration count %s", iter_s);
    if (strncmp(nonce, a->nonce, strlen(a->nonce)) != 0)
        return mt_err_set(err, MT_EPROTO, 0,
                          "the server's nonce does not extend ours");
    for (const char *p = nonce; *p; p++) /* RFC 5802: printable, no ',' */
        if (*p < 0x21 || *p > 0x7e)
            return mt_err_set(err, MT_EPROTO, 0,
                              "the server's nonce holds byte 0x%02x",
                              (unsigned)(unsigned char)*p);
    salt_len = scram_b64_decode(salt_b64, strlen(salt_b64), salt, sizeof(salt));
    if (salt_len < 0)
        return mt_err_set(err, MT_EPROTO, 0, "the salt is not base64");
    snprintf(without_proof, sizeof(without_proof), "c=biws,r=%s", nonce);
    snprintf(authmsg, sizeof(authmsg), "%s,%.*s,%s", a->first_bare, (int)len,
             msg, without_proof);
    if (PKCS5_PBKDF2_HMAC(a->pass, (int)strlen(a->pass), salt, salt_len,
                          (int)iter, md, (int)hl, salted) != 1 ||
        HMAC(md, salted, (int)hl, (const unsigned char *)"Client Key", 10, ckey,
             &l) == NULL ||
        EVP_Digest(ckey, hl, stored, &l, md, NULL) != 1 ||
        HMAC(md, stored, (int)hl, (const unsigned char *)authmsg,
             strlen(authmsg), sig, &l) == NULL ||
        HMAC(md, salted, (int)hl, (const unsigned char *)"Server Key", 10, skey,
             &l) == NULL ||
        HMAC(md, skey, (int)hl, (const unsigned char *)authmsg, strlen(authmsg),
             a->server_sig, &l) == NULL) {
        mt_err_set(err, MT_ECORRUPT, 0, "libcrypto failed");
        goto out;
    }
    for (size_t i = 0; i < hl; i++)
        ckey[i] ^= sig[i];
    scram_b64_encode(ckey, hl, proof_b64);
    snprintf(out, cap, "%s,p=%s", without_proof, proof_b64);
    rc = 0;
out:
    OPENSSL_cleanse(salted, sizeof(salted));
    OPENSSL_cleanse(ckey, sizeof(ckey));
    OPENSSL_cleanse(skey, sizeof(skey));
    return rc;
}

static int
verify_server(struct play_auth *a, const char *msg, size_t len,
              struct mt_err *err)
{
    char v[64], e[128];
    uint8_t sig[HASH_MAX + 3];

    if (attr(msg, len, 'e', e, sizeof(e)))
        return mt_err_set(err, MT_EUSAGE, 0, "the server says %s", e);
    if (!attr(msg, len, 'v', v, sizeof(v)) ||
        scram_b64_decode(v, strlen(v), sig, sizeof(sig)) != (int)hlen_of(a) ||
        CRYPTO_memcmp(sig, a->server_sig, hlen_of(a)) != 0)
        return mt_err_set(err, MT_EPROTO, 0,
                          "the server's SCRAM signature is wrong");
    return 0;
}

int
play_auth_step(struct play_auth *a, const uint8_t *body, size_t len,
               bson_t *cmd, bool *done, struct mt_err *err)
{
    bson_t b;
    bson_iter_t it;
    const uint8_t *payload = NULL, *nul;
    uint32_t plen = 0;
    bool ok = false, sdone = false;
    const char *errmsg = "";
    int32_t code = 0;
    char final[AUTH_MSG_MAX];
    int rc;

    *done = false;
    if (!bson_init_static(&b, body, len) || !bson_iter_init(&it, &b))
        return mt_err_set(err, MT_EBSON, 0, "the reply is not BSON");
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (strcmp(k, "ok") == 0)
            ok = bson_iter_as_double(&it) == 1.0;
        else if (strcmp(k, "done") == 0)
            sdone = bson_iter_as_bool(&it);
        else if (strcmp(k, "conversationId") == 0)
            a->conv = (int32_t)bson_iter_as_int64(&it);
        else if (strcmp(k, "errmsg") == 0 && BSON_ITER_HOLDS_UTF8(&it))
            errmsg = bson_iter_utf8(&it, NULL);
        else if (strcmp(k, "code") == 0)
            code = (int32_t)bson_iter_as_int64(&it);
        else if (strcmp(k, "payload") == 0 && BSON_ITER_HOLDS_BINARY(&it))
            bson_iter_binary(&it, NULL, &plen, &payload);
    }
    if (!ok)
        return mt_err_set(err, MT_EUSAGE, 0, "%.80s (code %d)", errmsg,
                          (int)code);
    if (plen > AUTH_MSG_MAX)
        return mt_err_set(err, MT_EPROTO, 0, "SCRAM message too long");
    /* a SCRAM message is text (RFC 5802 section 7): a NUL would cut it
     * short in the AuthMessage the signatures are computed over */
    nul = payload != NULL ? memchr(payload, 0, plen) : NULL;
    if (nul != NULL)
        return mt_err_set(err, MT_EPROTO, 0,
                          "the server's SCRAM message holds a NUL byte at "
                          "offset %zu",
                          (size_t)(nul - payload));
    if (a->step == 0) {
        rc = client_final(a, (const char *)payload, plen, final, sizeof(final),
                          err);
        if (rc < 0)
            return rc;
        a->step = 1;
    } else if (a->step == 1) {
        if ((rc = verify_server(a, (const char *)payload, plen, err)) < 0)
            return rc;
        a->step = 2;
        if (sdone) {
            *done = true;
            return 0;
        }
        final[0] = '\0';
    } else {
        if (sdone) {
            *done = true;
            return 0;
        }
        final[0] = '\0';
    }
    bson_init(cmd);
    bson_append_int32(cmd, "saslContinue", -1, 1);
    bson_append_int32(cmd, "conversationId", -1, a->conv);
    append_payload(cmd, final);
    bson_append_utf8(cmd, "$db", -1, a->db, -1);
    return 0;
}
