/*
 * fuzz_play_auth.c -- the client side of SCRAM (play/auth.c, `mtrace play
 * --username`) on arbitrary server replies.  Nothing may crash or
 * over-read; errors are fine.  Properties checked (abort when broken):
 *   - a step that fails leaves *done false and no command to send; one that
 *     succeeds either reports done or gives a saslContinue whose payload is
 *     the client-final (after the server-first) or empty (after it);
 *   - the client-final answers the server-first it was given: it is
 *     "c=biws,r=" + that message's nonce + ",p=" + a base64 proof, and the
 *     nonce extends the client's;
 *   - a server-final verifies, and done comes, only in the example
 *     conversation: RFC 7677's (SCRAM-SHA-256) or the MongoDB auth spec's
 *     SCRAM-SHA-1 one, its server-first byte for byte (the signature is an
 *     HMAC of the exchange: no other server-first can be answered by a
 *     signature the fuzzer finds); done never before a verified one.
 *
 * Input: one flag byte, then
 *   flag & 2 == 0: server SCRAM messages separated by NUL, each wrapped as
 *                  {conversationId: 1, done: D, payload: BinData, ok: 1}
 *                  (D: bit k + 3 of the flag for message k, the last one's
 *                  also when k >= 5);
 *   flag & 2:      whole reply documents, each a BSON document taken from
 *                  the input by its own length prefix (what does not fit is
 *                  given as it is, once).
 *   flag & 1: SCRAM-SHA-1 (the spec's example), else SCRAM-SHA-256
 *   (RFC 7677's).  The client is "user" with password "pencil", its nonce
 *   the example's; at most 8 steps.  A server-first that would reach the
 *   key derivation (r extending the client's nonce, printable; i from 4096
 *   to 10^8; s base64) is given only when it is the example's: one PBKDF2
 *   costs a millisecond under the sanitizers, and the code after it is the
 *   same for every salt.  Everything before it sees every input.
 *
 * Seeds (tests/data/corpus/play_auth/): both example conversations
 * in each form, written by hand from the RFC and the spec.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/scram.h"
#include "core/wire.h" /* libbson, without its -Wcast-qual */
#include "play/auth.h"

#define STEPS_MAX 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct ex {
    const char *mech, *cnonce, *server_first, *server_final;
} EX[2] = {
    {"SCRAM-SHA-256", "rOprNGfwEbeRWgbNEkqO",
     "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
     "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
     "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="},
    {"SCRAM-SHA-1", "fyko+d2lbbFgONRv9qkxdawL",
     "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"
     "s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000",
     "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0="},
};

static void
check(int ok)
{
    if (!ok)
        abort();
}

/* The value of "key=" in a SCRAM message of len bytes, as play/auth.c
 * reads it: the first comma-separated attribute that starts with it. */
static bool
attr_of(const char *msg, size_t len, char key, const char **v, size_t *vlen)
{
    size_t i = 0;

    while (i < len) {
        size_t j = i;
        while (j < len && msg[j] != ',')
            j++;
        if (j - i >= 2 && msg[i] == key && msg[i + 1] == '=') {
            *v = msg + i + 2;
            *vlen = j - i - 2;
            return true;
        }
        i = j + 1;
    }
    return false;
}

/* The payload of a reply document, or NULL. */
static const uint8_t *
payload_of(const uint8_t *doc, size_t len, uint32_t *plen)
{
    bson_t b;
    bson_iter_t it;
    const uint8_t *p = NULL;

    *plen = 0;
    if (!bson_init_static(&b, doc, len) || !bson_iter_init(&it, &b))
        return NULL;
    while (bson_iter_next(&it))
        if (strcmp(bson_iter_key(&it), "payload") == 0 &&
            BSON_ITER_HOLDS_BINARY(&it))
            bson_iter_binary(&it, NULL, plen, &p);
    return p;
}

/* Whether play/auth.c's client_final would run the key derivation on
 * this server-first (its checks before PBKDF2, as it makes them). */
static bool
derives(const uint8_t *p, uint32_t n, const char *cnonce)
{
    const char *r, *s, *i;
    size_t rl, sl, il;
    char num[16], *end;
    uint8_t salt[96];
    long iter;

    if (p == NULL || memchr(p, 0, n) != NULL ||
        !attr_of((const char *)p, n, 'r', &r, &rl) ||
        !attr_of((const char *)p, n, 's', &s, &sl) ||
        !attr_of((const char *)p, n, 'i', &i, &il) || il >= sizeof(num) ||
        rl < strlen(cnonce) || memcmp(r, cnonce, strlen(cnonce)) != 0)
        return false;
    for (size_t k = 0; k < rl; k++)
        if (r[k] < 0x21 || r[k] > 0x7e)
            return false;
    memcpy(num, i, il);
    num[il] = '\0';
    iter = strtol(num, &end, 10);
    return *end == '\0' && iter >= 4096 && iter <= 100000000 &&
           scram_b64_decode(s, sl, salt, sizeof(salt)) >= 0;
}

static bool
is_b64(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '='))
            return false;
    }
    return n > 0;
}

/* The client-final's shape against the server-first it answers. */
static void
check_final(const bson_t *cmd, const uint8_t *sf, uint32_t sflen,
            const char *cnonce)
{
    bson_iter_t it;
    const uint8_t *p;
    uint32_t n;
    const char *nonce, *proof;
    size_t nl;

    check(bson_iter_init_find(&it, cmd, "payload") &&
          BSON_ITER_HOLDS_BINARY(&it));
    bson_iter_binary(&it, NULL, &n, &p);
    check(attr_of((const char *)sf, sflen, 'r', &nonce, &nl));
    check(nl >= strlen(cnonce) && memcmp(nonce, cnonce, strlen(cnonce)) == 0);
    check(n > 9 + nl + 3 && memcmp(p, "c=biws,r=", 9) == 0 &&
          memcmp(p + 9, nonce, nl) == 0 && memcmp(p + 9 + nl, ",p=", 3) == 0);
    proof = (const char *)p + 9 + nl + 3;
    check(is_b64(proof, n - 9 - nl - 3));
}

static void
check_empty(const bson_t *cmd)
{
    bson_iter_t it;
    const uint8_t *p;
    uint32_t n;

    check(bson_iter_init_find(&it, cmd, "saslContinue"));
    check(bson_iter_init_find(&it, cmd, "payload") &&
          BSON_ITER_HOLDS_BINARY(&it));
    bson_iter_binary(&it, NULL, &n, &p);
    check(n == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mt_err err = {0};
    const struct ex *ex;
    struct play_auth *a;
    bson_t cmd;
    uint8_t flag;
    size_t off = 1;
    int step = 0, phase = 0; /* phase: server messages accepted so far */
    bool first_is_ex = false, verified_ex = false;

    if (size < 1)
        return 0;
    flag = data[0];
    ex = &EX[flag & 1];
    a = play_auth_new(ex->mech, "user", "pencil", "admin", &err);
    check(a != NULL);
    check(play_auth_start_nonce(a, ex->cnonce, &cmd) == 0);
    bson_destroy(&cmd);
    while (off <= size && step < STEPS_MAX) {
        bson_t *reply = NULL;
        const uint8_t *doc, *pl;
        size_t dlen;
        uint32_t plen;
        bool done = true;
        int rc;

        if (!(flag & 2)) {
            const uint8_t *m = data + off;
            const uint8_t *z = memchr(m, 0, size - off);
            size_t mlen = z != NULL ? (size_t)(z - m) : size - off;
            bool d = (flag >> (3 + (step < 5 ? step : 4))) & 1;

            if (off == size && step > 0)
                break;
            reply = bson_new();
            bson_append_int32(reply, "conversationId", -1, 1);
            bson_append_bool(reply, "done", -1, d);
            bson_append_binary(reply, "payload", -1, BSON_SUBTYPE_BINARY, m,
                               (uint32_t)mlen);
            bson_append_double(reply, "ok", -1, 1);
            doc = bson_get_data(reply);
            dlen = reply->len;
            off += mlen + 1;
        } else {
            uint32_t l;

            if (off >= size)
                break;
            dlen = size - off;
            if (dlen >= 4) {
                memcpy(&l, data + off, 4);
                l = BSON_UINT32_FROM_LE(l);
                if (l >= 5 && l <= dlen)
                    dlen = l;
            }
            doc = data + off;
            off += dlen;
        }
        pl = payload_of(doc, dlen, &plen);
        if (phase == 0 && derives(pl, plen, ex->cnonce) &&
            !(plen == strlen(ex->server_first) &&
              memcmp(pl, ex->server_first, plen) == 0)) {
            bson_destroy(reply);
            break;
        }
        rc = play_auth_step(a, doc, dlen, &cmd, &done, &err);
        step++;
        if (rc < 0) {
            check(!done);
            bson_destroy(reply);
            break;
        }
        if (done) {
            /* done only after the example's server-final verified */
            check(phase >= 1 && (phase == 1 ? first_is_ex : verified_ex));
            bson_destroy(reply);
            break;
        }
        if (phase == 0) {
            check_final(&cmd, pl, plen, ex->cnonce);
            first_is_ex = pl != NULL && plen == strlen(ex->server_first) &&
                          memcmp(pl, ex->server_first, plen) == 0;
        } else {
            /* the server-final verified: only the example's can */
            if (phase == 1) {
                check(first_is_ex);
                verified_ex = true;
            }
            check_empty(&cmd);
        }
        phase++;
        bson_destroy(&cmd);
        bson_destroy(reply);
    }
    play_auth_free(a);
    return 0;
}
