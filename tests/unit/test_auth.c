/*
 * test_auth.c -- replay/auth.c through the connection core (replay/conn.c):
 * saslStart / saslContinue as mongod answers them, hello's
 * saslSupportedMechs and speculativeAuthenticate, Unauthorized before
 * authentication, and mongod's error codes.  The server nonce is fixed
 * (auth_cfg.test_snonce) so the RFC 7677 and auth spec conversations run
 * byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "replay_fixtures.h"

/* RFC 7677 (SCRAM-SHA-256) and the auth spec's SCRAM-SHA-1 example. */
#define CF256 "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
#define SN256 "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
#define SF256                                                                  \
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"                    \
    "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define CL256                                                                  \
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"             \
    "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
#define SV256 "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
#define CF1 "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"
#define SN1 "Ho+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE"
#define SF1                                                                    \
    "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"              \
    "s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000"
#define CL1                                                                    \
    "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"       \
    "p=MC2T8BvbmWRckDw8oWl5IVghwCY="
#define SV1 "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0="

static void
derive(struct scram_secret *s, enum scram_mech m, const char *pass,
       const char *salt_b64, uint32_t it)
{
    uint8_t salt[64];
    int n = scram_b64_decode(salt_b64, strlen(salt_b64), salt, sizeof(salt));

    assert_true(n > 0);
    assert_int_equal(
        scram_secret_derive(m, pass, strlen(pass), salt, (size_t)n, it, s), 0);
}

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct match_rules r;
    struct mt_buf q, p;
    struct mt_err err;
    char hex[33];

    match_rules_default(&r);
    index_init(&f->idx, &r);
    encode(&q, 1, 0, 0, "{\"find\": \"c\", \"$db\": \"d\"}");
    encode(&p, 2, 1, 0,
           "{\"cursor\": {\"id\": {\"$numberLong\": \"0\"}, \"firstBatch\": "
           "[{\"_id\": 1}]}, \"ok\": 1}");
    assert_int_equal(index_add(&f->idx, q.data, q.len, p.data, p.len, 0, &err),
                     0);
    mt_buf_free(&q);
    mt_buf_free(&p);
    /* a recorded conversation is not indexed (its nonces never recur) */
    encode(&q, 3, 0, 0,
           "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", \"payload\": "
           "{\"$binary\": {\"base64\": \"AA==\", \"subType\": \"00\"}}, "
           "\"$db\": \"admin\"}");
    encode(&p, 4, 3, 0, "{\"conversationId\": 1, \"done\": false, \"ok\": 1}");
    assert_int_equal(index_add(&f->idx, q.data, q.len, p.data, p.len, 0, &err),
                     0);
    mt_buf_free(&q);
    mt_buf_free(&p);
    assert_int_equal(f->idx.st.auth, 1);
    assert_int_equal(f->idx.st.groups, 1);

    snprintf(f->user.db, sizeof(f->user.db), "admin");
    snprintf(f->user.name, sizeof(f->user.name), "user");
    assert_int_equal(scram_mongo_digest("user", "pencil", hex), 0);
    derive(&f->user.sec[SCRAM_SHA1], SCRAM_SHA1, hex,
           "rQ9ZY3MntBeuP3E1TDVC4w==", 10000);
    derive(&f->user.sec[SCRAM_SHA256], SCRAM_SHA256, "pencil",
           "W22ZaJ0SNY7soEsUEjb6gQ==", 4096);
    f->auth.creds.users = &f->user; /* not freed: the fixture's */
    f->auth.creds.n = 1;
    f->auth.enabled = true;
    f->auth.test_snonce = SN256;
    assert_null(f->idx.hello); /* the built-in hello, as before */
    f->sh.auth = &f->auth;
    fixture_start(f, 0, 1);
    *state = f;
    return 0;
}

/* Sends one command (JSON; "%s" in it replaced by base64 of msg when msg
 * is not NULL) and returns the body of its one reply (valid until
 * teardown). */
static bson_t
call(struct fixture *f, const char *js, const char *msg)
{
    char b64[2048], doc[4096];
    struct wire_msg w;
    struct mt_buf m;
    size_t used;
    bson_t body;

    if (msg != NULL) {
        scram_b64_encode((const uint8_t *)msg, strlen(msg), b64);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(doc, sizeof(doc), js, b64); /* the tests' own formats */
#pragma GCC diagnostic pop
        js = doc;
    }
    encode(&m, 100 + (int32_t)f->nout, 0, 0, js);
    assert_int_equal(replay_conn_input(&f->c, m.data, m.len, 0, &used, NULL),
                     0);
    assert_int_equal(used, m.len);
    mt_buf_free(&m);
    assert_true(f->nout > 0);
    assert_int_equal(wire_msg_parse(f->out[f->nout - 1]->bytes,
                                    f->out[f->nout - 1]->len, &w, &used, NULL),
                     MT_OK);
    assert_true(bson_init_static(&body, w.body, w.body_len));
    return body;
}

static const char *
str_at(const bson_t *b, const char *path)
{
    bson_iter_t it;

    assert_true(bson_iter_init(&it, b));
    if (!bson_iter_find_descendant(&it, path, &it) ||
        !BSON_ITER_HOLDS_UTF8(&it))
        fail_msg("no string %s", path);
    return bson_iter_utf8(&it, NULL);
}

/* The payload at path (BinData) equals s. */
static void
payload_is(const bson_t *b, const char *path, const char *s)
{
    bson_iter_t it;
    const uint8_t *d;
    bson_subtype_t st;
    uint32_t l;

    assert_true(bson_iter_init(&it, b));
    if (!bson_iter_find_descendant(&it, path, &it) ||
        !BSON_ITER_HOLDS_BINARY(&it))
        fail_msg("no BinData %s", path);
    bson_iter_binary(&it, &st, &l, &d);
    assert_int_equal(st, BSON_SUBTYPE_BINARY);
    assert_int_equal(l, strlen(s));
    assert_memory_equal(d, s, l);
}

static void
error_is(const bson_t *b, int code, const char *name, const char *msg)
{
    assert_int_equal(i64_at(b, "ok"), 0);
    assert_int_equal(i64_at(b, "code"), code);
    assert_string_equal(str_at(b, "codeName"), name);
    if (strstr(str_at(b, "errmsg"), msg) == NULL)
        fail_msg("errmsg '%s' lacks '%s'", str_at(b, "errmsg"), msg);
}

#define START(mech, extra)                                                     \
    "{\"saslStart\": 1, \"mechanism\": \"" mech "\", \"payload\": "            \
    "{\"$binary\": {\"base64\": \"%s\", \"subType\": \"00\"}}" extra           \
    ", \"$db\": \"admin\"}"
#define CONT(id)                                                               \
    "{\"saslContinue\": 1, \"conversationId\": " id ", \"payload\": "          \
    "{\"$binary\": {\"base64\": \"%s\", \"subType\": \"00\"}}, \"$db\": "      \
    "\"admin\"}"
#define FIND "{\"find\": \"c\", \"$db\": \"d\"}"
#define SKIP ", \"options\": {\"skipEmptyExchange\": true}"

static void
test_auth_unauthenticated_refused(void **state)
{
    struct fixture *f = *state;
    bson_t b = call(f, FIND, NULL);

    error_is(&b, 13, "Unauthorized", "command find requires authentication");
    b = call(f,
             "{\"getMore\": {\"$numberLong\": \"5\"}, \"collection\": "
             "\"c\", \"$db\": \"d\"}",
             NULL);
    error_is(&b, 13, "Unauthorized", "command getMore requires");
    /* mongod runs these before authentication */
    b = call(f, "{\"ping\": 1, \"$db\": \"admin\"}", NULL);
    assert_int_equal(i64_at(&b, "ok"), 1);
    b = call(f, "{\"buildInfo\": 1, \"$db\": \"admin\"}", NULL);
    assert_int_equal(i64_at(&b, "ok"), 1);
    assert_int_equal(f->w.st.unauthorized, 2);
    assert_int_equal(f->w.st.missed, 0);
}

static void
test_auth_sha256_skip_empty(void **state)
{
    struct fixture *f = *state;
    bson_t b = call(f, START("SCRAM-SHA-256", SKIP), CF256);

    assert_int_equal(i64_at(&b, "ok"), 1);
    assert_int_equal(i64_at(&b, "conversationId"), 1);
    assert_false(i64_at(&b, "done"));
    payload_is(&b, "payload", SF256);
    b = call(f, CONT("1"), CL256);
    assert_int_equal(i64_at(&b, "ok"), 1);
    assert_true(i64_at(&b, "done"));
    payload_is(&b, "payload", SV256);
    b = call(f, FIND, NULL);
    assert_int_equal(i64_at(&b, "ok"), 1);
    assert_int_equal(i64_at(&b, "cursor.firstBatch.0._id"), 1);
    assert_int_equal(f->w.st.auth_ok, 1);
    assert_int_equal(f->w.st.auth_failed, 0);
    /* the conversation is over: another saslContinue has no session */
    b = call(f, CONT("1"), CL256);
    error_is(&b, 17, "ProtocolError", "No SASL session state found");
    /* logout drops the authentication */
    b = call(f, "{\"logout\": 1, \"$db\": \"admin\"}", NULL);
    assert_int_equal(i64_at(&b, "ok"), 1);
    b = call(f, FIND, NULL);
    error_is(&b, 13, "Unauthorized", "requires authentication");
}

static void
test_auth_sha1_empty_exchange(void **state)
{
    struct fixture *f = *state;
    bson_t b;

    f->auth.test_snonce = SN1;
    b = call(f, START("SCRAM-SHA-1", ""), CF1);
    payload_is(&b, "payload", SF1);
    b = call(f, CONT("1"), CL1);
    assert_false(i64_at(&b, "done")); /* no skipEmptyExchange */
    payload_is(&b, "payload", SV1);
    b = call(f, FIND, NULL);
    error_is(&b, 13, "Unauthorized", "requires authentication");
    b = call(f, CONT("1"), "");
    assert_true(i64_at(&b, "done"));
    payload_is(&b, "payload", "");
    b = call(f, FIND, NULL);
    assert_int_equal(i64_at(&b, "ok"), 1);
    assert_int_equal(f->w.st.auth_ok, 1);
}

static void
test_auth_hello_mechs_and_speculative(void **state)
{
    struct fixture *f = *state;
    char js[1024], b64[256];
    bson_t b;

    b = call(f,
             "{\"hello\": 1, \"saslSupportedMechs\": \"admin.user\", "
             "\"$db\": \"admin\"}",
             NULL);
    assert_string_equal(str_at(&b, "saslSupportedMechs.0"), "SCRAM-SHA-1");
    assert_string_equal(str_at(&b, "saslSupportedMechs.1"), "SCRAM-SHA-256");
    b = call(f,
             "{\"hello\": 1, \"saslSupportedMechs\": \"test.user\", "
             "\"$db\": \"admin\"}",
             NULL);
    assert_false(bson_has_field(&b, "saslSupportedMechs")); /* as mongod */
    scram_b64_encode((const uint8_t *)CF256, strlen(CF256), b64);
    snprintf(js, sizeof(js),
             "{\"hello\": 1, \"speculativeAuthenticate\": {\"saslStart\": 1, "
             "\"mechanism\": \"SCRAM-SHA-256\", \"payload\": {\"$binary\": "
             "{\"base64\": \"%s\", \"subType\": \"00\"}}, \"db\": \"admin\", "
             "\"options\": {\"skipEmptyExchange\": true}}, \"$db\": "
             "\"admin\"}",
             b64);
    b = call(f, js, NULL);
    assert_int_equal(i64_at(&b, "ok"), 1);
    assert_int_equal(i64_at(&b, "speculativeAuthenticate.conversationId"), 1);
    assert_false(i64_at(&b, "speculativeAuthenticate.done"));
    payload_is(&b, "speculativeAuthenticate.payload", SF256);
    b = call(f, CONT("1"), CL256);
    assert_true(i64_at(&b, "done"));
    payload_is(&b, "payload", SV256);
    assert_int_equal(f->w.st.auth_ok, 1);
    assert_int_equal(f->w.st.speculative, 1);
    /* a speculative saslStart of an unknown user is left out of hello;
     * the hello itself succeeds (mongod) */
    b = call(f,
             "{\"hello\": 1, \"speculativeAuthenticate\": {\"saslStart\": 1, "
             "\"mechanism\": \"SCRAM-SHA-256\", \"payload\": {\"$binary\": "
             "{\"base64\": \"biwsbj14LHI9YWJjZGVm\", \"subType\": \"00\"}}, "
             "\"db\": \"admin\"}, \"$db\": \"admin\"}",
             NULL);
    assert_int_equal(i64_at(&b, "ok"), 1);
    assert_false(bson_has_field(&b, "speculativeAuthenticate"));
    /* hello's conversation abandoned for a saslStart: not speculative */
    b = call(f, js, NULL);
    payload_is(&b, "speculativeAuthenticate.payload", SF256);
    b = call(f, START("SCRAM-SHA-256", SKIP), CF256);
    b = call(f, CONT("1"), CL256);
    assert_true(i64_at(&b, "done"));
    assert_int_equal(f->w.st.auth_ok, 2);
    assert_int_equal(f->w.st.speculative, 1);
}

static void
test_auth_failures_as_mongod(void **state)
{
    struct fixture *f = *state;
    char bad[256];
    bson_t b;

    /* wrong password: generic message; the conversation is gone */
    b = call(f, START("SCRAM-SHA-256", SKIP), CF256);
    snprintf(bad, sizeof(bad), "%s", CL256);
    bad[strlen(bad) - 3] ^= 1;
    b = call(f, CONT("1"), bad);
    error_is(&b, 18, "AuthenticationFailed", "Authentication failed.");
    b = call(f, CONT("1"), CL256);
    error_is(&b, 17, "ProtocolError", "No SASL session state found");
    /* unknown user; a user of another database */
    b = call(f, START("SCRAM-SHA-256", SKIP), "n,,n=nobody,r=abcdef");
    error_is(&b, 18, "AuthenticationFailed", "Authentication failed.");
    b = call(f,
             "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", "
             "\"payload\": {\"$binary\": {\"base64\": \"%s\", \"subType\": "
             "\"00\"}}, \"$db\": \"test\"}",
             CF256);
    error_is(&b, 18, "AuthenticationFailed", "Authentication failed.");
    /* malformed payloads */
    b = call(f, START("SCRAM-SHA-256", SKIP), "p=tls-unique,,n=user,r=abcdef");
    error_is(&b, 18, "AuthenticationFailed", "Authentication failed.");
    b = call(f, START("SCRAM-SHA-256", SKIP), "garbage");
    error_is(&b, 18, "AuthenticationFailed", "Authentication failed.");
    /* a mechanism replay does not offer */
    b = call(f, START("PLAIN", ""), "\0user\0pencil");
    error_is(&b, 334, "MechanismUnavailable", "mechanism PLAIN");
    /* conversationId other than 1 */
    b = call(f, START("SCRAM-SHA-256", SKIP), CF256);
    b = call(f, CONT("2"), CL256);
    error_is(&b, 17, "ProtocolError", "Mismatched conversation id");
    /* missing fields */
    b = call(f,
             "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", \"$db\": "
             "\"admin\"}",
             NULL);
    error_is(&b, 40414, "IDLFailedToParse", "saslStart.payload");
    b = call(f, "{\"saslStart\": 1, \"payload\": \"\", \"$db\": \"admin\"}",
             NULL);
    error_is(&b, 40414, "IDLFailedToParse", "saslStart.mechanism");
    assert_int_equal(f->w.st.auth_ok, 0);
    assert_int_equal(f->w.st.auth_failed, 10);
    assert_int_equal(f->w.st.missed, 0);
}

static void
test_auth_string_payload(void **state)
{
    struct fixture *f = *state;
    bson_t b = call(f,
                    "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", "
                    "\"payload\": \"%s\", \"$db\": \"admin\"}",
                    CF256);
    char want[256];

    scram_b64_encode((const uint8_t *)SF256, strlen(SF256), want);
    assert_string_equal(str_at(&b, "payload"), want);
}

static void
test_auth_disabled_refuses(void **state)
{
    struct fixture *f = *state;
    bson_t b;

    f->auth.enabled = false;
    b = call(f, FIND, NULL); /* served: no auth enforced */
    assert_int_equal(i64_at(&b, "ok"), 1);
    b = call(f, START("SCRAM-SHA-256", SKIP), CF256);
    error_is(&b, 18, "AuthenticationFailed", "--credentials");
    b = call(f,
             "{\"hello\": 1, \"saslSupportedMechs\": \"admin.user\", "
             "\"$db\": \"admin\"}",
             NULL);
    assert_false(bson_has_field(&b, "saslSupportedMechs"));
    assert_int_equal(f->w.st.auth_failed, 1);
    assert_int_equal(f->w.st.missed, 0);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest valid[] = {
        T(test_auth_sha256_skip_empty),
        T(test_auth_sha1_empty_exchange),
        T(test_auth_hello_mechs_and_speculative),
        T(test_auth_string_payload),
    };
    const struct CMUnitTest invalid[] = {
        T(test_auth_unauthenticated_refused),
        T(test_auth_failures_as_mongod),
        T(test_auth_disabled_refuses),
    };
    int rc = cmocka_run_group_tests_name("valid", valid, NULL, NULL);

    return rc + cmocka_run_group_tests_name("invalid", invalid, NULL, NULL);
}
