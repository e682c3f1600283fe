/*
 * test_scram.c -- replay/scram.c: the RFC 5802 (SCRAM-SHA-1), RFC 7677
 * (SCRAM-SHA-256) and MongoDB auth spec example conversations reproduced
 * byte for byte (salt, iterations and server nonce injected), wrong
 * proofs, and malformed client messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "replay/scram.h"

/* One example conversation. */
struct vec {
    enum scram_mech mech;
    const char *pass; /* what Hi() takes */
    const char *salt_b64;
    uint32_t iterations;
    const char *client_first, *snonce, *server_first;
    const char *client_final, *server_final;
};

/* RFC 5802 section 5 (SCRAM-SHA-1, the plain password). */
static const struct vec rfc5802 = {
    SCRAM_SHA1,
    "pencil",
    "QSXCR+Q6sek8bf92",
    4096,
    "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "3rfcNHYJY1ZVvWVs7j",
    "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
    "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,"
    "p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
};

/* RFC 7677 section 3 (SCRAM-SHA-256). */
static const struct vec rfc7677 = {
    SCRAM_SHA256,
    "pencil",
    "W22ZaJ0SNY7soEsUEjb6gQ==",
    4096,
    "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
};

/* MongoDB's auth spec, SCRAM-SHA-1: the password is
 * hex(MD5("user:mongo:pencil")); pass is filled in by the test. */
static const struct vec spec_sha1 = {
    SCRAM_SHA1,
    NULL,
    "rQ9ZY3MntBeuP3E1TDVC4w==",
    10000,
    "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "Ho+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE",
    "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"
    "s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000",
    "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"
    "p=MC2T8BvbmWRckDw8oWl5IVghwCY=",
    "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=",
};

/* creds with one user "user" of admin holding v's secret (both slots). */
static void
creds_for(const struct vec *v, const char *pass, struct scram_user *u,
          struct scram_creds *c)
{
    uint8_t salt[64];
    int n =
        scram_b64_decode(v->salt_b64, strlen(v->salt_b64), salt, sizeof(salt));

    assert_true(n > 0);
    memset(u, 0, sizeof(*u));
    snprintf(u->db, sizeof(u->db), "admin");
    snprintf(u->name, sizeof(u->name), "user");
    assert_int_equal(scram_secret_derive(v->mech, pass, strlen(pass), salt,
                                         (size_t)n, v->iterations,
                                         &u->sec[v->mech]),
                     0);
    assert_string_equal(u->sec[v->mech].salt_b64, v->salt_b64);
    c->users = u;
    c->n = 1;
}

static const uint8_t *
b(const char *s)
{
    return (const uint8_t *)s;
}

/* Runs v to the end; skip: skipEmptyExchange. */
static void
run_vec(const struct vec *v, const char *pass, bool skip)
{
    struct scram_user u;
    struct scram_creds c;
    struct scram_conv cv;
    struct mt_err err;
    enum scram_fail why;
    char out[SCRAM_OUT_MAX];
    size_t n = 0;
    bool done = true;

    creds_for(v, pass, &u, &c);
    assert_int_equal(scram_conv_start(&cv, &c, v->mech, "admin", skip,
                                      b(v->client_first),
                                      strlen(v->client_first), v->snonce, out,
                                      &n, &why, &err),
                     0);
    assert_string_equal(out, v->server_first);
    assert_int_equal(n, strlen(v->server_first));
    assert_int_equal(scram_conv_step(&cv, b(v->client_final),
                                     strlen(v->client_final), out, &n, &done,
                                     &why, &err),
                     0);
    assert_string_equal(out, v->server_final);
    assert_int_equal(done, skip);
    if (!skip) { /* the empty exchange */
        assert_int_equal(
            scram_conv_step(&cv, b(""), 0, out, &n, &done, &why, &err), 0);
        assert_true(done);
        assert_int_equal(n, 0);
    }
    /* a conversation is used once */
    assert_int_equal(scram_conv_step(&cv, b(v->client_final),
                                     strlen(v->client_final), out, &n, &done,
                                     &why, &err),
                     MT_EPROTO);
    assert_int_equal(why, SCRAM_FAIL_STATE);
    assert_false(done);
}

static void
test_scram_rfc5802_sha1(void **state)
{
    (void)state;
    run_vec(&rfc5802, rfc5802.pass, true);
    run_vec(&rfc5802, rfc5802.pass, false);
}

static void
test_scram_rfc7677_sha256(void **state)
{
    (void)state;
    run_vec(&rfc7677, rfc7677.pass, true);
    run_vec(&rfc7677, rfc7677.pass, false);
}

static void
test_scram_mongo_digest_spec_sha1(void **state)
{
    char hex[33];

    (void)state;
    assert_int_equal(scram_mongo_digest("user", "pencil", hex), 0);
    assert_string_equal(hex, "1c33006ec1ffd90f9cadcbcc0e118200");
    run_vec(&spec_sha1, hex, true);
}

static void
test_scram_wrong_proof_rejected(void **state)
{
    const struct vec *v = &rfc7677;
    struct scram_user u;
    struct scram_creds c;
    struct scram_conv cv;
    struct mt_err err;
    enum scram_fail why;
    char out[SCRAM_OUT_MAX], fin[256];
    size_t n;
    bool done = true;

    (void)state;
    /* the proof of another password */
    creds_for(v, "pencil2", &u, &c);
    assert_int_equal(scram_conv_start(&cv, &c, v->mech, "admin", true,
                                      b(v->client_first),
                                      strlen(v->client_first), v->snonce, out,
                                      &n, &why, &err),
                     0);
    assert_int_equal(scram_conv_step(&cv, b(v->client_final),
                                     strlen(v->client_final), out, &n, &done,
                                     &why, &err),
                     -EACCES);
    assert_int_equal(why, SCRAM_FAIL_PROOF);
    assert_false(done);
    assert_int_equal(cv.state, SCRAM_ST_FAILED);
    /* one bit of the right proof flipped */
    creds_for(v, "pencil", &u, &c);
    snprintf(fin, sizeof(fin), "%s", v->client_final);
    fin[strlen(fin) - 3] ^= 0x01; /* 'V' -> 'W', still base64 */
    assert_int_equal(scram_conv_start(&cv, &c, v->mech, "admin", true,
                                      b(v->client_first),
                                      strlen(v->client_first), v->snonce, out,
                                      &n, &why, &err),
                     0);
    assert_int_equal(
        scram_conv_step(&cv, b(fin), strlen(fin), out, &n, &done, &why, &err),
        -EACCES);
    assert_int_equal(why, SCRAM_FAIL_PROOF);
}

static void
test_scram_unknown_user_or_db(void **state)
{
    const struct vec *v = &rfc7677;
    struct scram_user u;
    struct scram_creds c;
    struct scram_conv cv;
    struct mt_err err;
    enum scram_fail why;
    char out[SCRAM_OUT_MAX];
    size_t n;

    (void)state;
    creds_for(v, "pencil", &u, &c);
    assert_int_equal(scram_conv_start(&cv, &c, v->mech, "test", true,
                                      b(v->client_first),
                                      strlen(v->client_first), v->snonce, out,
                                      &n, &why, &err),
                     MT_ENOMATCH);
    assert_int_equal(why, SCRAM_FAIL_NO_USER);
    assert_int_equal(scram_conv_start(&cv, &c, v->mech, "admin", true,
                                      b("n,,n=usr,r=abcdefgh"), 19, v->snonce,
                                      out, &n, &why, &err),
                     MT_ENOMATCH);
    assert_non_null(strstr(err.msg, "no user 'usr'"));
}

/* ---- malformed client messages ---- */

struct bad_case {
    const char *msg;
    const char *err; /* a substring of err.msg */
};

static const struct bad_case bad_first[] = {
    {"", "empty"},
    {"p=tls-unique,,n=user,r=abcdef", "channel binding"},
    {"x,,n=user,r=abcdef", "gs2 channel binding flag"},
    {"n", "expected ','"},
    {"n,", "ending the gs2 header"},
    {"n,b=user,n=user,r=abcdef", "ending the gs2 header"},
    {"n,a=other,n=user,r=abcdef", "authzid is not the user"},
    {"n,,m=ext,n=user,r=abcdef", "mandatory extension"},
    {"n,,r=abcdef", "user name 'n='"},
    {"n,,n=,r=abcdef", "empty SCRAM name"},
    {"n,,n=us=2Dr,r=abcdef", "'=' escape"},
    {"n,,n=us=2", "'=' escape"},
    {"n,,n=user", "after the SCRAM user name"},
    {"n,,n=user,", "nonce 'r='"},
    {"n,,n=user,x=abcdef", "nonce 'r='"},
    {"n,,n=user,r=abc", "nonce too short"},
    {"n,,n=user,r=ab\x01"
     "cdef",
     "non-printable"},
    {"n,,n=user,r=abcdef,", "malformed SCRAM attribute"},
    {"n,,n=user,r=abcdef,1=x", "malformed SCRAM attribute"},
    {"n,,n=user,r=abcdef,e=", "empty SCRAM attribute"},
    {"n,,n=\xff\xfe,r=abcdef", "not UTF-8"},
};

static void
test_scram_bad_client_first(void **state)
{
    struct scram_client_first f;
    struct mt_err err;
    char nul[] = "n,,n=us\0er,r=abcdef";

    (void)state;
    for (size_t i = 0; i < sizeof(bad_first) / sizeof(bad_first[0]); i++) {
        const char *m = bad_first[i].msg;
        memset(&err, 0, sizeof(err));
        if (scram_parse_client_first(b(m), strlen(m), &f, &err) != MT_EPROTO)
            fail_msg("accepted: %s", m);
        if (strstr(err.msg, bad_first[i].err) == NULL)
            fail_msg("%s: got '%s', want '%s'", m, err.msg, bad_first[i].err);
    }
    assert_int_equal(
        scram_parse_client_first(b(nul), sizeof(nul) - 1, &f, &err), MT_EPROTO);
    /* accepted: escapes, authzid of the same user, y flag, extensions */
    assert_int_equal(scram_parse_client_first(
                         b("y,a=u=2Cv,n=u=2Cv,r=abcd,x=1,y=2"), 32, &f, &err),
                     0);
    assert_string_equal(f.user, "u,v");
    assert_int_equal(f.gs2_len, 10);
    assert_int_equal(f.nonce_len, 4);
    assert_int_equal(f.bare_len, 22);
}

static const struct bad_case bad_final[] = {
    {"", "empty"},
    {"r=abc,p=AAAA", "channel binding 'c='"},
    {"c=,r=abc,p=AAAA", "empty SCRAM channel binding"},
    {"c=biws", "no nonce"},
    {"c=biws,r=abc", "no SCRAM proof"},
    {"c=biws,p=AAAA", "nonce 'r='"},
    {"c=biws,r=abc,q=AAAA", "proof 'p=' last"},
    {"c=biws,r=abc,p=", "proof 'p=' last"},
    {"c=biws,r=abc,,p=AAAA", "malformed SCRAM attribute"},
    {"c=biws,r=a\x7f"
     "bc,p=AAAA",
     "non-printable"},
};

static void
test_scram_bad_client_final(void **state)
{
    struct scram_client_final f;
    struct mt_err err;

    (void)state;
    for (size_t i = 0; i < sizeof(bad_final) / sizeof(bad_final[0]); i++) {
        const char *m = bad_final[i].msg;
        memset(&err, 0, sizeof(err));
        if (scram_parse_client_final(b(m), strlen(m), &f, &err) != MT_EPROTO)
            fail_msg("accepted: %s", m);
        if (strstr(err.msg, bad_final[i].err) == NULL)
            fail_msg("%s: got '%s', want '%s'", m, err.msg, bad_final[i].err);
    }
    assert_int_equal(
        scram_parse_client_final(b("c=biws,r=abc,e=x,p=AAAA"), 23, &f, &err),
        0);
    assert_int_equal(f.without_proof_len, 16);
    assert_int_equal(f.proof_len, 4);
}

/* The client-final of rfc7677 with one part replaced. */
static void
final_fails(const char *fin, enum scram_fail want, const char *msg)
{
    const struct vec *v = &rfc7677;
    struct scram_user u;
    struct scram_creds c;
    struct scram_conv cv;
    struct mt_err err;
    enum scram_fail why;
    char out[SCRAM_OUT_MAX];
    size_t n;
    bool done;

    creds_for(v, "pencil", &u, &c);
    assert_int_equal(scram_conv_start(&cv, &c, v->mech, "admin", true,
                                      b(v->client_first),
                                      strlen(v->client_first), v->snonce, out,
                                      &n, &why, &err),
                     0);
    assert_true(scram_conv_step(&cv, b(fin), strlen(fin), out, &n, &done, &why,
                                &err) < 0);
    assert_int_equal(why, want);
    if (strstr(err.msg, msg) == NULL)
        fail_msg("%s: got '%s', want '%s'", fin, err.msg, msg);
    assert_int_equal(cv.state, SCRAM_ST_FAILED);
}

#define NONCE "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
#define PROOF "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="

static void
test_scram_bad_final_in_conversation(void **state)
{
    (void)state;
    /* bad base64 in the proof and in the channel binding */
    final_fails("c=biws,r=" NONCE ",p=dHzb*apWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7A"
                "ndVQ=",
                SCRAM_FAIL_MALFORMED, "proof is not 32 bytes");
    final_fails("c=biws,r=" NONCE ",p=dHzb", SCRAM_FAIL_MALFORMED,
                "proof is not 32 bytes");
    final_fails("c=bi!s,r=" NONCE "," PROOF, SCRAM_FAIL_MALFORMED,
                "not the gs2 header");
    /* c= of another gs2 header ("y,,") */
    final_fails("c=eSws,r=" NONCE "," PROOF, SCRAM_FAIL_MALFORMED,
                "not the gs2 header");
    /* the nonce must be the combined one, not the client's alone, nor
     * extended */
    final_fails("c=biws,r=rOprNGfwEbeRWgbNEkqO," PROOF, SCRAM_FAIL_MALFORMED,
                "nonce is not the one sent");
    final_fails("c=biws,r=" NONCE "x," PROOF, SCRAM_FAIL_MALFORMED,
                "nonce is not the one sent");
    final_fails("n,,n=user,r=rOprNGfwEbeRWgbNEkqO", SCRAM_FAIL_MALFORMED,
                "channel binding 'c='");
}

static void
test_scram_b64_strict(void **state)
{
    uint8_t out[16];

    (void)state;
    assert_int_equal(scram_b64_decode("biws", 4, out, sizeof(out)), 3);
    assert_memory_equal(out, "n,,", 3);
    assert_int_equal(scram_b64_decode("AA==", 4, out, sizeof(out)), 1);
    assert_int_equal(scram_b64_decode("AAA=", 4, out, sizeof(out)), 2);
    assert_int_equal(scram_b64_decode("", 0, out, sizeof(out)), 0);
    assert_int_equal(scram_b64_decode("AAA", 3, out, sizeof(out)), -1);
    assert_int_equal(scram_b64_decode("A===", 4, out, sizeof(out)), -1);
    assert_int_equal(scram_b64_decode("====", 4, out, sizeof(out)), -1);
    assert_int_equal(scram_b64_decode("A=AA", 4, out, sizeof(out)), -1);
    assert_int_equal(scram_b64_decode(" AAA", 4, out, sizeof(out)), -1);
    assert_int_equal(
        scram_b64_decode("AAAAAAAAAAAAAAAAAAAAAAAA", 24, out, sizeof(out)),
        -1); /* 18 bytes do not fit in 16 */
}

/* Every prefix of valid messages: an error or a parse, never a crash
 * (each prefix copied to the end of a buffer whose next page is
 * inaccessible, so an over-read faults). */
static void
test_scram_every_prefix_guard_page(void **state)
{
    const char *msgs[] = {rfc7677.client_first, rfc7677.client_final,
                          "y,a=u=2Cv,n=u=2Cv,r=abcd,x=1,y=2",
                          "c=biws,r=abc,e=x,p=AAAA"};
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *mem = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct scram_client_first f1;
    struct scram_client_final f2;
    struct mt_err err;

    (void)state;
    assert_true(mem != MAP_FAILED);
    assert_int_equal(mprotect(mem + pg, (size_t)pg, PROT_NONE), 0);
    for (size_t k = 0; k < 4; k++) {
        size_t len = strlen(msgs[k]);
        for (size_t i = 0; i <= len; i++) {
            uint8_t *p = mem + pg - i;
            memcpy(p, msgs[k], i);
            (void)scram_parse_client_first(p, i, &f1, &err);
            (void)scram_parse_client_final(p, i, &f2, &err);
            /* "n,,n=user,r=" and a nonce of 4 at least */
            if (k == 0)
                assert_int_equal(scram_parse_client_first(p, i, &f1, &err) == 0,
                                 i >= 16);
        }
    }
    munmap(mem, (size_t)pg * 2);
}

/* RFC 4013 section 3's examples, and mongod's SCRAM-SHA-256 use of it. */
static void
test_scram_saslprep(void **state)
{
    static const struct {
        const char *in, *out; /* out NULL: refused */
    } v[] = {
        {"I\xc2\xadX", "IX"},      /* SOFT HYPHEN mapped to nothing */
        {"user", "user"},          /* no transformation */
        {"USER", "USER"},          /* case preserved */
        {"\xc2\xaa", "a"},         /* <U+00AA> output is NFKC */
        {"\xe2\x85\xa8", "IX"},    /* <U+2168> ROMAN NUMERAL NINE */
        {"\x07", NULL},            /* prohibited character */
        {"\330\2471", NULL},       /* bidirectional check (U+0627 1) */
        {"a\342\200\200b", "a b"}, /* EN QUAD: non-ASCII space -> space */
        {"p\xc3\xa4ss", "p\xc3\xa4ss"},
    };
    struct mt_err err;
    char *out;

    (void)state;
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        int rc = scram_saslprep(v[i].in, &out, &err);
        if (v[i].out == NULL) {
            assert_int_equal(rc, MT_EUSAGE);
            assert_null(out);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_string_equal(out, v[i].out);
        scram_saslprep_free(out);
    }
}

static void
test_scram_creds_add(void **state)
{
    const uint32_t it[SCRAM_MECHS] = {4096, 4096};
    struct scram_creds c = {0};
    struct mt_err err;

    (void)state;
    assert_int_equal(scram_creds_add(&c, "admin", "a", "p:w", it, &err), 0);
    assert_int_equal(scram_creds_add(&c, "test", "a", "x", it, &err), 0);
    assert_int_equal(scram_creds_add(&c, "admin", "a", "y", it, &err),
                     MT_EUSAGE);
    assert_non_null(strstr(err.msg, "given twice"));
    assert_int_equal(scram_creds_add(&c, "admin", "b", "", it, &err),
                     MT_EUSAGE);
    assert_int_equal(scram_creds_add(&c, "admin", "", "x", it, &err),
                     MT_EUSAGE);
    assert_int_equal(scram_creds_add(&c, "admin", "b", "a\tb", it, &err),
                     MT_EUSAGE);
    assert_non_null(strstr(err.msg, "SASLprep"));
    assert_int_equal(scram_creds_add(&c, "admin", "b", "\xff", it, &err),
                     MT_EUSAGE);
    assert_non_null(strstr(err.msg, "not UTF-8"));
    assert_int_equal(scram_creds_add(&c, "admin", "b", "\xc2\xad", it, &err),
                     MT_EUSAGE); /* a soft hyphen alone: empty after */
    assert_non_null(strstr(err.msg, "empty after SASLprep"));
    assert_int_equal(c.n, 2);
    assert_int_equal(scram_creds_add(&c, "admin", "b", "caf\xc3\xa9", it, &err),
                     0);
    assert_non_null(scram_creds_find(&c, "test", "a", 1));
    assert_null(scram_creds_find(&c, "test", "b", 1));
    /* fresh salts: 16 bytes for SHA-1, 28 for SHA-256 (base64 24, 40) */
    assert_int_equal(strlen(c.users[0].sec[SCRAM_SHA1].salt_b64), 24);
    assert_int_equal(strlen(c.users[0].sec[SCRAM_SHA256].salt_b64), 40);
    assert_string_not_equal(c.users[0].sec[SCRAM_SHA1].salt_b64,
                            c.users[1].sec[SCRAM_SHA1].salt_b64);
    scram_creds_free(&c);
    scram_creds_free(&c); /* twice is fine */
}

int
main(void)
{
    const struct CMUnitTest valid[] = {
        cmocka_unit_test(test_scram_rfc5802_sha1),
        cmocka_unit_test(test_scram_rfc7677_sha256),
        cmocka_unit_test(test_scram_mongo_digest_spec_sha1),
        cmocka_unit_test(test_scram_saslprep),
        cmocka_unit_test(test_scram_creds_add),
    };
    const struct CMUnitTest invalid[] = {
        cmocka_unit_test(test_scram_wrong_proof_rejected),
        cmocka_unit_test(test_scram_unknown_user_or_db),
        cmocka_unit_test(test_scram_bad_client_first),
        cmocka_unit_test(test_scram_bad_client_final),
        cmocka_unit_test(test_scram_bad_final_in_conversation),
        cmocka_unit_test(test_scram_b64_strict),
        cmocka_unit_test(test_scram_every_prefix_guard_page),
    };
    int rc = cmocka_run_group_tests_name("valid", valid, NULL, NULL);

    return rc + cmocka_run_group_tests_name("invalid", invalid, NULL, NULL);
}
