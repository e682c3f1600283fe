/*
 * fuzz_scram.c -- the SCRAM server on arbitrary bytes (replay/scram.c,
 * replay/auth.c).  Nothing may crash or over-read; errors are fine.
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
conversation(uint8_t flag, const uint8_t *p, size_t n)
{
    enum scram_mech mech = (flag & 1) ? SCRAM_SHA256 : SCRAM_SHA1;
    const char *snonce =
        mech == SCRAM_SHA1 ? SCRAM_RFC5802_SNONCE : SCRAM_RFC7677_SNONCE;
    struct scram_client_first f1;
    struct scram_client_final f2;
    struct scram_conv cv;
    struct mt_err err;
    enum scram_fail why;
    char out[SCRAM_OUT_MAX];
    size_t len, olen;
    bool done;
    int step = 0;

    while (n > 0 || step == 0) {
        const uint8_t *z = memchr(p, 0, n);
        len = z != NULL ? (size_t)(z - p) : n;
        (void)scram_parse_client_first(p, len, &f1, &err);
        (void)scram_parse_client_final(p, len, &f2, &err);
        if (step == 0) {
            if (scram_conv_start(&cv, &creds, mech, "admin", (flag & 2) != 0, p,
                                 len, snonce, out, &olen, &why, &err) < 0)
                return;
        } else if (scram_conv_step(&cv, p, len, out, &olen, &done, &why, &err) <
                   0) {
            return;
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
