/*
 * scram.c -- SCRAM primitives both sides use (see scram.h): mechanism
 * names, base64, SASLprep, MongoDB's SCRAM-SHA-1 password digest.
 */
#include "scram.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stringprep.h>

int
scram_mech_parse(const char *name)
{
    if (strcmp(name, "SCRAM-SHA-1") == 0)
        return SCRAM_SHA1;
    if (strcmp(name, "SCRAM-SHA-256") == 0)
        return SCRAM_SHA256;
    return -1;
}

const char *
scram_mech_name(enum scram_mech m)
{
    return m == SCRAM_SHA1 ? "SCRAM-SHA-1" : "SCRAM-SHA-256";
}

size_t
scram_b64_encode(const uint8_t *in, size_t n, char *out)
{
    return (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

static bool
b64_char(unsigned char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
           (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';
}

int
scram_b64_decode(const char *s, size_t len, uint8_t *out, size_t cap)
{
    size_t pad = 0;
    int n;

    if (len % 4 != 0 || len > 4 * 1024 || len / 4 * 3 > cap)
        return -1;
    if (len == 0)
        return 0;
    if (s[len - 1] == '=')
        pad = s[len - 2] == '=' ? 2 : 1;
    for (size_t i = 0; i < len - pad; i++)
        if (!b64_char((unsigned char)s[i]))
            return -1;
    n = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
    if (n < 0 || (size_t)n < pad)
        return -1;
    return n - (int)pad;
}

int
scram_saslprep(const char *password, char **out, struct mt_err *err)
{
    char *p = NULL;
    int rc =
        stringprep_profile(password, &p, "SASLprep", STRINGPREP_NO_UNASSIGNED);

    *out = NULL;
    if (rc != STRINGPREP_OK) {
        free(p);
        return mt_err_set(err, MT_EUSAGE, 0,
                          "SASLprep (RFC 4013) refuses the password: %s",
                          stringprep_strerror((Stringprep_rc)rc));
    }
    if (p[0] == '\0') {
        free(p);
        return mt_err_set(err, MT_EUSAGE, 0,
                          "the password is empty after SASLprep");
    }
    *out = p;
    return 0;
}

void
scram_saslprep_free(char *s)
{
    if (s == NULL)
        return;
    OPENSSL_cleanse(s, strlen(s));
    free(s); /* libidn's allocation */
}

int
scram_mongo_digest(const char *name, const char *password, char hex[33])
{
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    uint8_t d[16];
    unsigned int l = 0;
    bool ok = x != NULL && EVP_DigestInit_ex(x, EVP_md5(), NULL) == 1 &&
              EVP_DigestUpdate(x, name, strlen(name)) == 1 &&
              EVP_DigestUpdate(x, ":mongo:", 7) == 1 &&
              EVP_DigestUpdate(x, password, strlen(password)) == 1 &&
              EVP_DigestFinal_ex(x, d, &l) == 1 && l == 16;

    EVP_MD_CTX_free(x);
    if (!ok)
        return MT_ECORRUPT;
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return 0;
}
