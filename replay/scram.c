/*
 * scram.c -- SCRAM-SHA-1 / SCRAM-SHA-256 server (see scram.h).
 *
 * RFC 5802 section 7 grammar, the parts a client sends:
 *
 *   client-first-message = gs2-header client-first-message-bare
 *   gs2-header     = gs2-cbind-flag "," [ authzid ] ","
 *   gs2-cbind-flag = ("p=" cb-name) / "n" / "y"
 *   authzid        = "a=" saslname
 *   client-first-message-bare = [reserved-mext ","] username "," nonce
 *                               ["," extensions]
 *   username = "n=" saslname     saslname = 1*(value-safe-char / "=2C" / "=3D")
 *   nonce    = "r=" c-nonce      printable = %x21-2B / %x2D-7E
 *   client-final-message = channel-binding "," nonce ["," extensions]
 *                          "," proof
 *   channel-binding = "c=" base64    proof = "p=" base64
 *
 * Every message is bounded (SCRAM_MSG_MAX) and read by index against its
 * length; nothing is NUL-terminated on input.
 */
#include "scram.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <stringprep.h>

#include "core/mem.h"
#include "core/wire.h" /* libbson, its warnings silenced */

static const EVP_MD *
mech_md(enum scram_mech m)
{
    return m == SCRAM_SHA1 ? EVP_sha1() : EVP_sha256();
}

static size_t
mech_hlen(enum scram_mech m)
{
    return m == SCRAM_SHA1 ? 20 : 32;
}

int
scram_secret_derive(enum scram_mech m, const char *pass, size_t pass_len,
                    const uint8_t *salt, size_t salt_len, uint32_t iterations,
                    struct scram_secret *out)
{
    const EVP_MD *md = mech_md(m);
    size_t hl = mech_hlen(m);
    uint8_t salted[SCRAM_HASH_MAX], ckey[SCRAM_HASH_MAX];
    unsigned int l = 0;
    int rc = MT_ECORRUPT;

    memset(out, 0, sizeof(*out));
    if (iterations == 0 || iterations > SCRAM_ITER_MAX || salt_len > 40)
        return MT_EUSAGE;
    out->iterations = iterations;
    scram_b64_encode(salt, salt_len, out->salt_b64);
    if (PKCS5_PBKDF2_HMAC(pass, (int)pass_len, salt, (int)salt_len,
                          (int)iterations, md, (int)hl, salted) != 1)
        goto out;
    if (HMAC(md, salted, (int)hl, (const unsigned char *)"Client Key", 10, ckey,
             &l) == NULL ||
        l != hl)
        goto out;
    if (EVP_Digest(ckey, hl, out->stored_key, &l, md, NULL) != 1 || l != hl)
        goto out;
    if (HMAC(md, salted, (int)hl, (const unsigned char *)"Server Key", 10,
             out->server_key, &l) == NULL ||
        l != hl)
        goto out;
    rc = 0;
out:
    OPENSSL_cleanse(salted, sizeof(salted));
    OPENSSL_cleanse(ckey, sizeof(ckey));
    return rc;
}

int
scram_creds_add(struct scram_creds *c, const char *db, const char *name,
                const char *password, const uint32_t iterations[SCRAM_MECHS],
                struct mt_err *err)
{
    struct scram_user *u, *grown;
    uint8_t salt[SCRAM_HASH_MAX];
    char hex[33], *prepped = NULL;
    int rc;

    if (db[0] == '\0' || strlen(db) >= SCRAM_DB_MAX)
        return mt_err_set(err, MT_EUSAGE, 0, "bad database name '%s'", db);
    if (name[0] == '\0' || strlen(name) > SCRAM_NAME_MAX)
        return mt_err_set(err, MT_EUSAGE, 0, "user name empty or over %d bytes",
                          SCRAM_NAME_MAX);
    if (!bson_utf8_validate(name, strlen(name), false))
        return mt_err_set(err, MT_EUSAGE, 0, "user name is not UTF-8");
    if (password[0] == '\0')
        return mt_err_set(err, MT_EUSAGE, 0,
                          "empty password (mongod refuses "
                          "one too)");
    if (scram_creds_find(c, db, name, strlen(name)) != NULL)
        return mt_err_set(err, MT_EUSAGE, 0, "user '%s' given twice for %s",
                          name, db);
    if (c->n >= SCRAM_USERS_MAX)
        return mt_err_set(err, MT_ELIMIT, 0, "more than %d users",
                          SCRAM_USERS_MAX);
    if (!bson_utf8_validate(password, strlen(password), false))
        return mt_err_set(err, MT_EUSAGE, 0, "password is not UTF-8");
    TRY(scram_saslprep(password, &prepped, err));
    grown = mt_realloc(c->users, (c->n + 1) * sizeof(*c->users));
    if (grown == NULL) {
        rc = mt_err_set(err, -ENOMEM, 0, "out of memory");
        goto out;
    }
    c->users = grown;
    u = &c->users[c->n];
    memset(u, 0, sizeof(*u));
    snprintf(u->db, sizeof(u->db), "%s", db);
    snprintf(u->name, sizeof(u->name), "%s", name);
    TRY(scram_mongo_digest(name, password, hex));
    for (int m = 0; m < SCRAM_MECHS; m++) {
        /* mongod's Presecrets::saltLength(): hash length - 4 (16, 28) */
        size_t salt_len = mech_hlen((enum scram_mech)m) - 4;
        /* SHA-1: the digest of the raw password (auth spec: not
         * SASLprep'd); SHA-256: the SASLprep'd password */
        const char *pass = m == SCRAM_SHA1 ? hex : prepped;
        if (RAND_bytes(salt, (int)salt_len) != 1) {
            rc = mt_err_set(err, MT_ECORRUPT, 0, "RAND_bytes failed");
            goto out;
        }
        rc = scram_secret_derive((enum scram_mech)m, pass, strlen(pass), salt,
                                 salt_len, iterations[m], &u->sec[m]);
        if (rc < 0) {
            mt_err_set(err, rc, 0, "deriving %s keys failed",
                       scram_mech_name((enum scram_mech)m));
            goto out;
        }
    }
    c->n++;
out:
    OPENSSL_cleanse(hex, sizeof(hex));
    scram_saslprep_free(prepped);
    return rc < 0 ? rc : 0;
}

const struct scram_user *
scram_creds_find(const struct scram_creds *c, const char *db, const char *name,
                 size_t len)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->users[i].db, db) == 0 &&
            strlen(c->users[i].name) == len &&
            memcmp(c->users[i].name, name, len) == 0)
            return &c->users[i];
    return NULL;
}

void
scram_creds_free(struct scram_creds *c)
{
    if (c->users != NULL)
        OPENSSL_cleanse(c->users, c->n * sizeof(*c->users));
    mt_free(c->users);
    c->users = NULL;
    c->n = 0;
}

/* ---- parsing ---- */

static int
bad(struct mt_err *err, size_t at, const char *what)
{
    return mt_err_set(err, MT_EPROTO, at, "%s at byte %zu", what, at);
}

static bool
has(const uint8_t *p, size_t len, size_t i, const char *lit)
{
    size_t n = strlen(lit);
    return i <= len && n <= len - i && memcmp(p + i, lit, n) == 0;
}

/* A saslname from *i up to ',' or the end, decoded into out (cap bytes
 * plus NUL) when out is not NULL.  Advances *i. */
static int
saslname(const uint8_t *p, size_t len, size_t *i, char *out, size_t cap,
         size_t *out_len, struct mt_err *err)
{
    size_t n = 0, start = *i;

    while (*i < len && p[*i] != ',') {
        char ch = (char)p[*i];
        if (ch == '=') {
            if (has(p, len, *i, "=2C"))
                ch = ',';
            else if (has(p, len, *i, "=3D"))
                ch = '=';
            else
                return bad(err, *i, "bad '=' escape in a SCRAM name");
            *i += 2;
        }
        if (out != NULL) {
            if (n >= cap)
                return bad(err, *i, "SCRAM user name too long");
            out[n] = ch;
        }
        n++;
        (*i)++;
    }
    if (*i == start)
        return bad(err, start, "empty SCRAM name");
    if (out != NULL)
        out[n] = '\0';
    if (out_len != NULL)
        *out_len = n;
    return 0;
}

/* "r=" printable nonce up to ',' or the end; at least min characters. */
static int
nonce_attr(const uint8_t *p, size_t len, size_t *i, size_t min,
           const char **nonce, size_t *nonce_len, struct mt_err *err)
{
    size_t start;

    if (!has(p, len, *i, "r="))
        return bad(err, *i, "expected the SCRAM nonce 'r='");
    *i += 2;
    start = *i;
    while (*i < len && p[*i] != ',') {
        if (p[*i] < 0x21 || p[*i] > 0x7e)
            return bad(err, *i, "non-printable character in the SCRAM nonce");
        (*i)++;
    }
    if (*i - start < min)
        return bad(err, start, "SCRAM nonce too short");
    *nonce = (const char *)p + start;
    *nonce_len = *i - start;
    return 0;
}

/* Extensions from *i (just after a ',') to end: attr-val *("," attr-val),
 * attr-val = ALPHA "=" 1*value-char. */
static int
extensions(const uint8_t *p, size_t end, size_t *i, struct mt_err *err)
{
    for (;;) {
        uint8_t a = *i < end ? p[*i] : 0;
        size_t v;
        if (!((a >= 'a' && a <= 'z') || (a >= 'A' && a <= 'Z')) ||
            !has(p, end, *i + 1, "="))
            return bad(err, *i, "malformed SCRAM attribute");
        *i += 2;
        v = *i;
        while (*i < end && p[*i] != ',')
            (*i)++;
        if (*i == v)
            return bad(err, v, "empty SCRAM attribute value");
        if (*i == end)
            return 0;
        (*i)++;
    }
}

/* Common checks: bounded, UTF-8 without NUL. */
static int
check_msg(const uint8_t *p, size_t len, struct mt_err *err)
{
    if (len == 0)
        return bad(err, 0, "empty SCRAM message");
    if (len > SCRAM_MSG_MAX)
        return mt_err_set(err, MT_EPROTO, SCRAM_MSG_MAX,
                          "SCRAM message of %zu bytes (at most %d)", len,
                          SCRAM_MSG_MAX);
    if (!bson_utf8_validate((const char *)p, len, false))
        return bad(err, 0, "SCRAM message is not UTF-8 (or has a NUL)");
    return 0;
}

int
scram_parse_client_first(const uint8_t *p, size_t len,
                         struct scram_client_first *out, struct mt_err *err)
{
    size_t i = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    TRY(check_msg(p, len, err));
    if (has(p, len, 0, "p="))
        return bad(err, 0, "SCRAM channel binding requested (unsupported)");
    if (p[0] != 'n' && p[0] != 'y')
        return bad(err, 0, "bad SCRAM gs2 channel binding flag");
    if (!has(p, len, 1, ","))
        return bad(err, 1, "expected ',' after the gs2 flag");
    i = 2;
    if (has(p, len, i, "a=")) {
        i += 2;
        out->authzid = (const char *)p + i;
        TRY(saslname(p, len, &i, NULL, 0, NULL, err));
        out->authzid_len = (size_t)((const char *)p + i - out->authzid);
    }
    if (!has(p, len, i, ","))
        return bad(err, i, "expected ',' ending the gs2 header");
    out->gs2_len = ++i;
    out->bare = (const char *)p + i;
    out->bare_len = len - i;
    if (has(p, len, i, "m="))
        return bad(err, i, "SCRAM mandatory extension (unsupported)");
    if (!has(p, len, i, "n="))
        return bad(err, i, "expected the SCRAM user name 'n='");
    i += 2;
    TRY(saslname(p, len, &i, out->user, SCRAM_NAME_MAX, &out->user_len, err));
    if (!has(p, len, i, ","))
        return bad(err, i, "expected ',' after the SCRAM user name");
    i++;
    TRY(nonce_attr(p, len, &i, 4, &out->nonce, &out->nonce_len, err));
    if (i < len) {
        i++; /* the ',' */
        TRY(extensions(p, len, &i, err));
    }
    if (out->authzid != NULL) {
        /* mongod: an authzid must name the user itself */
        char az[SCRAM_NAME_MAX + 1];
        size_t j = 0, az_len = 0;
        const uint8_t *a = (const uint8_t *)out->authzid;
        if (saslname(a, out->authzid_len, &j, az, SCRAM_NAME_MAX, &az_len,
                     err) < 0 ||
            az_len != out->user_len || memcmp(az, out->user, az_len) != 0)
            return bad(err, 4, "SCRAM authzid is not the user name");
    }
out:
    return rc;
}

int
scram_parse_client_final(const uint8_t *p, size_t len,
                         struct scram_client_final *out, struct mt_err *err)
{
    size_t i = 0, last;
    int rc;

    memset(out, 0, sizeof(*out));
    TRY(check_msg(p, len, err));
    if (!has(p, len, 0, "c="))
        return bad(err, 0, "expected the SCRAM channel binding 'c='");
    i = 2;
    while (i < len && p[i] != ',')
        i++;
    out->cbind = (const char *)p + 2;
    out->cbind_len = i - 2;
    if (out->cbind_len == 0 || i == len)
        return bad(err, i, "empty SCRAM channel binding or no nonce");
    i++;
    TRY(nonce_attr(p, len, &i, 1, &out->nonce, &out->nonce_len, err));
    last = len;
    while (last > 0 && p[last - 1] != ',')
        last--;
    if (last == 0 || last - 1 < i)
        return bad(err, i, "no SCRAM proof 'p=' after the nonce");
    last--; /* the ',' before the proof */
    if (last > i) {
        i++;
        TRY(extensions(p, last, &i, err));
    }
    if (!has(p, len, last + 1, "p=") || len - last - 3 == 0)
        return bad(err, last + 1, "expected the SCRAM proof 'p=' last");
    out->proof = (const char *)p + last + 3;
    out->proof_len = len - last - 3;
    out->without_proof_len = last;
out:
    return rc;
}

/* ---- the conversation ---- */

static int
fail(struct scram_conv *cv, enum scram_fail *why, enum scram_fail w, int rc)
{
    cv->state = SCRAM_ST_FAILED;
    *why = w;
    return rc;
}

static bool
auth_add(struct scram_conv *cv, const char *s, size_t n)
{
    if (n > sizeof(cv->auth) - cv->auth_len)
        return false;
    memcpy(cv->auth + cv->auth_len, s, n);
    cv->auth_len += n;
    return true;
}

int
scram_conv_start(struct scram_conv *cv, const struct scram_creds *c,
                 enum scram_mech mech, const char *db, bool skip_empty,
                 const uint8_t *msg, size_t len, const char *server_nonce,
                 char *out, size_t *out_len, enum scram_fail *why,
                 struct mt_err *err)
{
    struct scram_client_first f;
    const struct scram_secret *sec;
    char snonce[4 * SCRAM_SNONCE_RAW / 3 + 1];
    uint8_t raw[SCRAM_SNONCE_RAW];
    int n;

    memset(cv, 0, sizeof(*cv));
    cv->mech = mech;
    cv->skip_empty = skip_empty;
    *why = SCRAM_FAIL_NONE;
    if (scram_parse_client_first(msg, len, &f, err) < 0)
        return fail(cv, why, SCRAM_FAIL_MALFORMED, MT_EPROTO);
    cv->user = scram_creds_find(c, db, f.user, f.user_len);
    if (cv->user == NULL) {
        mt_err_set(err, MT_ENOMATCH, 0, "no user '%s' in database '%s'", f.user,
                   db);
        return fail(cv, why, SCRAM_FAIL_NO_USER, MT_ENOMATCH);
    }
    if (server_nonce == NULL) {
        if (RAND_bytes(raw, sizeof(raw)) != 1) {
            mt_err_set(err, MT_ECORRUPT, 0, "RAND_bytes failed");
            return fail(cv, why, SCRAM_FAIL_MALFORMED, MT_ECORRUPT);
        }
        scram_b64_encode(raw, sizeof(raw), snonce);
        server_nonce = snonce;
    }
    sec = &cv->user->sec[mech];
    n = snprintf(cv->nonce, sizeof(cv->nonce), "%.*s%s", (int)f.nonce_len,
                 f.nonce, server_nonce);
    if (n < 0 || (size_t)n >= sizeof(cv->nonce)) {
        mt_err_set(err, MT_EPROTO, 0, "SCRAM nonce too long");
        return fail(cv, why, SCRAM_FAIL_MALFORMED, MT_EPROTO);
    }
    cv->nonce_len = (size_t)n;
    n = snprintf(out, SCRAM_OUT_MAX, "r=%s,s=%s,i=%u", cv->nonce, sec->salt_b64,
                 sec->iterations);
    if (n < 0 || n >= SCRAM_OUT_MAX || !auth_add(cv, f.bare, f.bare_len) ||
        !auth_add(cv, ",", 1) || !auth_add(cv, out, (size_t)n)) {
        mt_err_set(err, MT_EPROTO, 0, "SCRAM messages too long");
        return fail(cv, why, SCRAM_FAIL_MALFORMED, MT_EPROTO);
    }
    *out_len = (size_t)n;
    memcpy(cv->gs2, msg, f.gs2_len);
    cv->gs2_len = f.gs2_len;
    cv->state = SCRAM_ST_FIRST_SENT;
    return 0;
}

/* client-final: checks binding, nonce and proof; "v=" signature to out. */
static int
client_final(struct scram_conv *cv, const uint8_t *msg, size_t len, char *out,
             size_t *out_len, enum scram_fail *why, struct mt_err *err)
{
    const struct scram_secret *sec = &cv->user->sec[cv->mech];
    const EVP_MD *md = mech_md(cv->mech);
    size_t hl = mech_hlen(cv->mech);
    struct scram_client_final f;
    uint8_t cb[SCRAM_MSG_MAX], proof[SCRAM_MSG_MAX];
    uint8_t sig[SCRAM_HASH_MAX], key[SCRAM_HASH_MAX], stored[SCRAM_HASH_MAX];
    unsigned int l = 0;
    int n;

    if (scram_parse_client_final(msg, len, &f, err) < 0)
        return fail(cv, why, SCRAM_FAIL_MALFORMED, MT_EPROTO);
    n = scram_b64_decode(f.cbind, f.cbind_len, cb, sizeof(cb));
    if (n < 0 || (size_t)n != cv->gs2_len || memcmp(cb, cv->gs2, cv->gs2_len)) {
        mt_err_set(err, MT_EPROTO, 2,
                   "SCRAM channel binding 'c=' is not the gs2 header");
        return fail(cv, why, SCRAM_FAIL_MALFORMED, MT_EPROTO);
    }
    if (f.nonce_len != cv->nonce_len ||
        memcmp(f.nonce, cv->nonce, cv->nonce_len) != 0) {
        mt_err_set(err, MT_EPROTO, 0, "SCRAM nonce is not the one sent");
        return fail(cv, why, SCRAM_FAIL_MALFORMED, MT_EPROTO);
    }
    n = scram_b64_decode(f.proof, f.proof_len, proof, sizeof(proof));
    if (n < 0 || (size_t)n != hl) {
        mt_err_set(err, MT_EPROTO, 0, "SCRAM proof is not %zu bytes of base64",
                   hl);
        return fail(cv, why, SCRAM_FAIL_MALFORMED, MT_EPROTO);
    }
    if (!auth_add(cv, ",", 1) ||
        !auth_add(cv, (const char *)msg, f.without_proof_len)) {
        mt_err_set(err, MT_EPROTO, 0, "SCRAM messages too long");
        return fail(cv, why, SCRAM_FAIL_MALFORMED, MT_EPROTO);
    }
    /* ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage) */
    if (HMAC(md, sec->stored_key, (int)hl, (const uint8_t *)cv->auth,
             cv->auth_len, sig, &l) == NULL)
        goto crypto;
    for (size_t i = 0; i < hl; i++)
        key[i] = proof[i] ^ sig[i];
    if (EVP_Digest(key, hl, stored, &l, md, NULL) != 1)
        goto crypto;
    if (CRYPTO_memcmp(stored, sec->stored_key, hl) != 0) {
        mt_err_set(err, -EACCES, 0, "SCRAM proof mismatch (wrong password)");
        return fail(cv, why, SCRAM_FAIL_PROOF, -EACCES);
    }
    if (HMAC(md, sec->server_key, (int)hl, (const uint8_t *)cv->auth,
             cv->auth_len, sig, &l) == NULL)
        goto crypto;
    memcpy(out, "v=", 2);
    *out_len = 2 + scram_b64_encode(sig, hl, out + 2);
    return 0;
crypto:
    mt_err_set(err, MT_ECORRUPT, 0, "libcrypto HMAC/digest failed");
    return fail(cv, why, SCRAM_FAIL_MALFORMED, MT_ECORRUPT);
}

int
scram_conv_step(struct scram_conv *cv, const uint8_t *msg, size_t len,
                char *out, size_t *out_len, bool *done, enum scram_fail *why,
                struct mt_err *err)
{
    int rc;

    *done = false;
    *why = SCRAM_FAIL_NONE;
    *out_len = 0;
    out[0] = '\0';
    switch (cv->state) {
    case SCRAM_ST_FIRST_SENT:
        rc = client_final(cv, msg, len, out, out_len, why, err);
        if (rc < 0)
            return rc;
        cv->state = cv->skip_empty ? SCRAM_ST_DONE : SCRAM_ST_FINAL_SENT;
        *done = cv->skip_empty;
        return 0;
    case SCRAM_ST_FINAL_SENT:
        /* mongod's third step ignores the payload (drivers send none) */
        cv->state = SCRAM_ST_DONE;
        *done = true;
        return 0;
    case SCRAM_ST_DONE:
    case SCRAM_ST_FAILED:
        break;
    }
    mt_err_set(err, MT_EPROTO, 0, "SCRAM step after the conversation ended");
    return fail(cv, why, SCRAM_FAIL_STATE, MT_EPROTO);
}
