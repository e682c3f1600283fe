/*
 * fuzz_scram.c -- the SCRAM server on arbitrary bytes (replay/scram.c,
 * replay/auth.c).  Nothing may crash or over-read; errors are fine.
 * Properties checked (abort when broken):
 *   - a parsed client message's views lie inside it: client-first is its
 *     gs2 header then its bare part, the nonce (4 bytes or more) inside
 *     the bare part; client-final ends with ",p=" and its proof;
 *   - a conversation starts only on a client-first that parses, and its
 *     server-first is "r=" client nonce + server nonce ",s=" ... ",i=" ...;
 *   - a client-final that authenticates fails with SCRAM_FAIL_PROOF once
 *     the first character of its proof is changed (same conversation
 *     state): success rests on the proof;
 *   - the answer to an accepted client-final is "v=" (the server
 *     signature), and *done comes with SCRAM_ST_DONE only.
 *
 * Input: one flag byte, then
 *   flag & 4 == 0: client messages separated by NUL (a SCRAM message
 *                  never holds one): client-first, client-final, the
 *                  empty step; each also goes through both parsers.
 *                  flag & 1: SCRAM-SHA-256 (else SHA-1); flag & 2:
 *                  skipEmptyExchange.  The user "user" of admin has the
 *                  RFC 5802 / RFC 7677 keys and the server nonces are the
 *                  RFCs', so the RFC conversations (in the seed corpus)
 *                  reach the success path.
 *   flag & 4:      a BSON command document given to auth_command (as
 *                  saslStart, saslContinue or its own first key) and to
 *                  auth_hello_append, twice on one session.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/auth.h"
#include "scram_rfc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct scram_user user;
static struct scram_creds creds = {&user, 1};

static void
init_user(void)
{
    if (user.db[0] == '\0')
        scram_rfc_user(&user, "pencil"); /* RFC 5802's SCRAM-SHA-1 keys */
}

static void
check(bool ok)
{
    if (!ok)
        abort();
}

/* Whether [v, v + vn) lies inside [p, p + n). */
static bool
inside(const void *v, size_t vn, const uint8_t *p, size_t n)
{
    const uint8_t *b = v;

    return b >= p && (size_t)(b - p) <= n && vn <= n - (size_t)(b - p);
}

/* The parsers' views, on every message of the input. */
static void
check_parsers(const uint8_t *p, size_t len, struct scram_client_first *f1,
              bool *f1_ok)
{
    struct scram_client_final f2;
    struct mt_err err;

    *f1_ok = scram_parse_client_first(p, len, f1, &err) == 0;
    if (*f1_ok) {
        check(f1->gs2_len + f1->bare_len == len);
        check((const uint8_t *)f1->bare == p + f1->gs2_len);
        check(inside(f1->nonce, f1->nonce_len, (const uint8_t *)f1->bare,
                     f1->bare_len));
        check(f1->nonce_len >= 4);
        check(strlen(f1->user) == f1->user_len);
        check(f1->authzid == NULL ||
              inside(f1->authzid, f1->authzid_len, p, f1->gs2_len));
    }
    if (scram_parse_client_final(p, len, &f2, &err) == 0) {
        check(inside(f2.cbind, f2.cbind_len, p, len));
        check(inside(f2.nonce, f2.nonce_len, p, len));
        check((const uint8_t *)f2.proof + f2.proof_len == p + len);
        check(f2.without_proof_len + 3 + f2.proof_len == len);
        check(memcmp(p + f2.without_proof_len, ",p=", 3) == 0);
    }
}

/* The server-first of a conversation started on f1 with snonce. */
static void
check_server_first(const struct scram_client_first *f1, const char *snonce,
                   const char *out, size_t olen)
{
    size_t sn = strlen(snonce);

    check(strlen(out) == olen);
    check(olen > 2 + f1->nonce_len + sn && memcmp(out, "r=", 2) == 0);
    check(memcmp(out + 2, f1->nonce, f1->nonce_len) == 0);
    check(memcmp(out + 2 + f1->nonce_len, snonce, sn) == 0);
    check(strstr(out, ",s=") != NULL && strstr(out, ",i=") != NULL);
}

/* cv accepted client-final p (before, a copy of cv before that step):
 * the same step with the proof's first character changed must fail. */
static void
check_proof_matters(const struct scram_conv *before, const uint8_t *p,
                    size_t len)
{
    struct scram_client_final f2;
    struct scram_conv cv = *before;
    struct mt_err err;
    enum scram_fail why;
    char out[SCRAM_OUT_MAX];
    uint8_t msg[SCRAM_MSG_MAX + 1];
    size_t olen, at;
    bool done;

    if (len > sizeof(msg) || scram_parse_client_final(p, len, &f2, &err) != 0 ||
        f2.proof_len == 0)
        return;
    memcpy(msg, p, len);
    at = (size_t)((const uint8_t *)f2.proof - p);
    msg[at] = msg[at] == 'A' ? 'B' : 'A';
    check(scram_conv_step(&cv, msg, len, out, &olen, &done, &why, &err) < 0);
    check(why == SCRAM_FAIL_PROOF);
    check(!done && cv.state == SCRAM_ST_FAILED);
}

static void
conversation(uint8_t flag, const uint8_t *p, size_t n)
{
    enum scram_mech mech = (flag & 1) ? SCRAM_SHA256 : SCRAM_SHA1;
    const char *snonce =
        mech == SCRAM_SHA1 ? SCRAM_RFC5802_SNONCE : SCRAM_RFC7677_SNONCE;
    struct scram_client_first f1;
    struct scram_conv cv;
    struct mt_err err;
    enum scram_fail why;
    char out[SCRAM_OUT_MAX];
    size_t len, olen;
    bool done;
    int step = 0;

    while (n > 0 || step == 0) {
        const uint8_t *z = memchr(p, 0, n);
        bool f1_ok;
        len = z != NULL ? (size_t)(z - p) : n;
        check_parsers(p, len, &f1, &f1_ok);
        if (step == 0) {
            if (scram_conv_start(&cv, &creds, mech, "admin", (flag & 2) != 0, p,
                                 len, snonce, out, &olen, &why, &err) < 0)
                return;
            check(f1_ok);
            check_server_first(&f1, snonce, out, olen);
        } else {
            struct scram_conv before = cv;
            if (scram_conv_step(&cv, p, len, out, &olen, &done, &why, &err) <
                0) {
                check(!done && cv.state == SCRAM_ST_FAILED);
                return;
            }
            check(!done || cv.state == SCRAM_ST_DONE);
            if (before.state == SCRAM_ST_FIRST_SENT) {
                check(olen > 2 && memcmp(out, "v=", 2) == 0);
                check(done == before.skip_empty);
                check_proof_matters(&before, p, len);
            }
        }
        step++;
        if (z == NULL)
            break;
        p += len + 1;
        n -= len + 1;
    }
}

static void
commands(const uint8_t *p, size_t n)
{
    static const char *const names[] = {"saslStart", "saslContinue", NULL};
    struct auth_cfg cfg = {.enabled = true, .test_snonce = "snonce"};
    struct auth_session s = {0};
    struct match_req req;
    enum auth_result r;
    bson_t b, out;
    bson_iter_t it;
    char why[256];

    if (!bson_init_static(&b, p, n) || !bson_validate(&b, 0, NULL))
        return;
    cfg.creds = creds;
    memset(&req, 0, sizeof(req));
    memcpy(req.db, "admin", 6);
    req.cmd = p;
    req.cmd_len = n;
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < 3; i++) {
            const char *name = names[i];
            if (name == NULL) {
                if (!bson_iter_init(&it, &b) || !bson_iter_next(&it))
                    break;
                name = bson_iter_key(&it);
            }
            snprintf(req.name, sizeof(req.name), "%s", name);
            bson_init(&out);
            (void)auth_command(&cfg, &s, &req, &out, why, sizeof(why));
            bson_destroy(&out);
        }
        bson_init(&out);
        (void)auth_hello_append(&cfg, &s, &req, &out, &r, why, sizeof(why));
        bson_destroy(&out);
    }
    auth_session_free(&s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    init_user();
    if (data[0] & 4)
        commands(data + 1, size - 1);
    else
        conversation(data[0], data + 1, size - 1);
    return 0;
}
