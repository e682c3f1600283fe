/*
 * test_redact.c -- core/redact.c on hand-built messages: SASL payloads in
 * requests, replies and speculativeAuthenticate, named fields at the top,
 * nested and in kind-1 documents, OP_QUERY / OP_REPLY, checksums,
 * OP_COMPRESSED, partial and malformed messages, option errors.  Every
 * rebuilt message must parse (full validation) with messageLength equal to
 * its size, and keep everything that was not redacted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/redact.h"
#include "core/wire.h"

static const char secret[] = "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL";

/* Parses b (exactly one message, fully validated) into m. */
static void
parse_one(const uint8_t *p, size_t n, struct wire_msg *m)
{
    struct mt_err err = {0};
    size_t used = 0;
    struct rd r = rd_init(p, n);
    int32_t len = 0;
    int rc = wire_msg_parse(p, n, m, &used, &err);

    if (rc != MT_OK)
        print_error("parse: %d %s\n", rc, err.msg);
    assert_int_equal(rc, MT_OK);
    assert_int_equal(used, n);
    assert_true(rd_le32s(&r, &len));
    assert_int_equal((size_t)len, n);
}

/* True if the bytes of s occur in p[0..n). */
static bool
contains(const uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, s, k) == 0)
            return true;
    return false;
}

static void
encode_msg(struct mt_buf *b, int32_t resp_to, uint32_t flags, bson_t *body,
           const struct wire_seq *seq, size_t nseq)
{
    mt_buf_init(b, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_msg(b, 41, resp_to, flags, body, seq, nseq),
                     0);
    bson_destroy(body);
}

/* Redacts b with cfg; expects want (1 changed, 0 not) and, when changed, a
 * valid message in out parsed into m. */
static void
redact_expect(const struct redact_cfg *cfg, const struct mt_buf *b,
              struct mt_buf *out, int want, struct wire_msg *m)
{
    struct mt_err err = {0};
    int rc;

    mt_buf_init(out, WIRE_MSG_LEN_MAX);
    rc = redact_msg(cfg, b->data, b->len, out, &err);
    if (rc < 0)
        print_error("redact: %d %s\n", rc, err.msg);
    assert_int_equal(rc, want);
    if (want == 1)
        parse_one(out->data, out->len, m);
}

/* The binary value at dotted path in doc is the redaction mark. */
static void
assert_bin_mark(const uint8_t *doc, size_t len, const char *path)
{
    bson_iter_t it, f;
    const uint8_t *bin;
    uint32_t bl;
    bson_subtype_t st;

    assert_true(bson_iter_init_from_data(&it, doc, len));
    assert_true(bson_iter_find_descendant(&it, path, &f));
    assert_true(BSON_ITER_HOLDS_BINARY(&f));
    bson_iter_binary(&f, &st, &bl, &bin);
    assert_int_equal(bl, strlen(REDACT_MARK));
    assert_memory_equal(bin, REDACT_MARK, bl);
}

static const char *
utf8_at(const uint8_t *doc, size_t len, const char *path)
{
    bson_iter_t it, f;

    assert_true(bson_iter_init_from_data(&it, doc, len));
    if (!bson_iter_find_descendant(&it, path, &f) || !BSON_ITER_HOLDS_UTF8(&f))
        return NULL;
    return bson_iter_utf8(&f, NULL);
}

static void
test_sasl_start_request(void **state)
{
    struct redact_cfg cfg = {0};
    struct mt_buf b, out;
    struct wire_msg m;

    (void)state;
    encode_msg(&b, 0, WIRE_MSG_CHECKSUM_PRESENT,
               BCON_NEW("saslStart", BCON_INT32(1), "mechanism",
                        "SCRAM-SHA-256", "payload",
                        BCON_BIN(BSON_SUBTYPE_BINARY, (const uint8_t *)secret,
                                 (uint32_t)strlen(secret)),
                        "autoAuthorize", BCON_INT32(1), "$db", "admin"),
               NULL, 0);
    assert_true(contains(b.data, b.len, secret));
    redact_expect(&cfg, &b, &out, 1, &m);
    assert_false(contains(out.data, out.len, secret));
    assert_true(m.has_checksum); /* recomputed: parse verified it */
    assert_int_equal(m.h.request_id, 41);
    assert_bin_mark(m.body, m.body_len, "payload");
    assert_string_equal(utf8_at(m.body, m.body_len, "mechanism"),
                        "SCRAM-SHA-256");
    assert_string_equal(utf8_at(m.body, m.body_len, "$db"), "admin");
    mt_buf_free(&b);
    mt_buf_free(&out);
}

static void
test_sasl_reply_and_continue(void **state)
{
    struct redact_cfg cfg = {0};
    struct mt_buf b, out;
    struct wire_msg m;

    (void)state;
    /* the server's reply: identified by conversationId */
    encode_msg(&b, 41, 0,
               BCON_NEW("conversationId", BCON_INT32(1), "done",
                        BCON_BOOL(false), "payload",
                        BCON_BIN(BSON_SUBTYPE_BINARY, (const uint8_t *)secret,
                                 (uint32_t)strlen(secret)),
                        "ok", BCON_DOUBLE(1)),
               NULL, 0);
    redact_expect(&cfg, &b, &out, 1, &m);
    assert_false(contains(out.data, out.len, secret));
    assert_int_equal(m.h.response_to, 41);
    assert_bin_mark(m.body, m.body_len, "payload");
    mt_buf_free(&b);
    mt_buf_free(&out);

    /* saslContinue */
    encode_msg(&b, 0, 0,
               BCON_NEW("saslContinue", BCON_INT32(1), "conversationId",
                        BCON_INT32(1), "payload",
                        BCON_BIN(BSON_SUBTYPE_BINARY, (const uint8_t *)secret,
                                 (uint32_t)strlen(secret)),
                        "$db", "admin"),
               NULL, 0);
    redact_expect(&cfg, &b, &out, 1, &m);
    assert_false(contains(out.data, out.len, secret));
    mt_buf_free(&b);
    mt_buf_free(&out);

    /* a `payload` in an ordinary command stays */
    encode_msg(&b, 0, 0,
               BCON_NEW("insert", "c", "payload", "not a secret", "$db", "d"),
               NULL, 0);
    redact_expect(&cfg, &b, &out, 0, &m);
    assert_int_equal(out.len, 0);
    mt_buf_free(&b);
    mt_buf_free(&out);
}

static void
test_speculative_authenticate(void **state)
{
    struct redact_cfg cfg = {0};
    struct mt_buf b, out;
    struct wire_msg m;

    (void)state;
    encode_msg(&b, 0, 0,
               BCON_NEW("hello", BCON_INT32(1), "speculativeAuthenticate", "{",
                        "saslStart", BCON_INT32(1), "mechanism",
                        "SCRAM-SHA-256", "payload",
                        BCON_BIN(BSON_SUBTYPE_BINARY, (const uint8_t *)secret,
                                 (uint32_t)strlen(secret)),
                        "db", "admin", "}", "$db", "admin"),
               NULL, 0);
    redact_expect(&cfg, &b, &out, 1, &m);
    assert_false(contains(out.data, out.len, secret));
    assert_bin_mark(m.body, m.body_len, "speculativeAuthenticate.payload");
    assert_string_equal(
        utf8_at(m.body, m.body_len, "speculativeAuthenticate.mechanism"),
        "SCRAM-SHA-256");
    mt_buf_free(&b);
    mt_buf_free(&out);
}

static void
test_named_fields(void **state)
{
    struct redact_cfg cfg = {0};
    struct mt_err err = {0};
    struct mt_buf b, out;
    struct wire_msg m;
    bson_t *d1 = BCON_NEW("_id", BCON_INT32(1), "ssn", "111-22-3333", "card",
                          "{", "number", "4111111111111111", "}");
    bson_t *d2 = BCON_NEW("_id", BCON_INT32(2), "ssn", "999-88-7777", "tags",
                          "[", "{", "ssn", "555", "}", "]");
    uint8_t docs[512];
    struct wire_seq seq = {"documents", docs, 0};
    bson_iter_t it;
    uint32_t first_len;

    (void)state;
    memcpy(docs, bson_get_data(d1), d1->len);
    memcpy(docs + d1->len, bson_get_data(d2), d2->len);
    seq.docs_len = d1->len + d2->len;
    assert_int_equal(redact_cfg_add(&cfg, "ssn", &err), 0);
    assert_int_equal(redact_cfg_add(&cfg, "card.number", &err), 0);
    assert_int_equal(redact_cfg_add(&cfg, "filter.password", &err), 0);
    encode_msg(&b, 0, 0,
               BCON_NEW("insert", "people", "comment", "keep me", "$db", "hr"),
               &seq, 1);
    redact_expect(&cfg, &b, &out, 1, &m);
    assert_false(contains(out.data, out.len, "111-22-3333"));
    assert_false(contains(out.data, out.len, "999-88-7777"));
    assert_false(contains(out.data, out.len, "555"));
    assert_false(contains(out.data, out.len, "4111111111111111"));
    assert_true(contains(out.data, out.len, "keep me"));
    assert_int_equal(m.nseq, 1);
    assert_string_equal(m.seq[0].identifier, "documents");
    memcpy(&first_len, m.seq[0].docs, 4); /* little-endian host */
    assert_true(first_len < m.seq[0].docs_len);
    assert_true(bson_iter_init_from_data(&it, m.seq[0].docs, first_len));
    assert_string_equal(utf8_at(m.seq[0].docs, first_len, "ssn"), REDACT_MARK);
    assert_string_equal(utf8_at(m.seq[0].docs, first_len, "card.number"),
                        REDACT_MARK);
    assert_string_equal(utf8_at(m.seq[0].docs + first_len,
                                m.seq[0].docs_len - first_len, "ssn"),
                        REDACT_MARK);
    mt_buf_free(&b);
    mt_buf_free(&out);

    /* nested path: only filter.password, not a top-level password */
    encode_msg(&b, 0, 0,
               BCON_NEW("find", "users", "filter", "{", "password", "hunter2",
                        "name", "bob", "}", "password", "top", "$db", "a"),
               NULL, 0);
    redact_expect(&cfg, &b, &out, 1, &m);
    assert_false(contains(out.data, out.len, "hunter2"));
    assert_string_equal(utf8_at(m.body, m.body_len, "password"), "top");
    assert_string_equal(utf8_at(m.body, m.body_len, "filter.name"), "bob");
    mt_buf_free(&b);
    mt_buf_free(&out);
    bson_destroy(d1);
    bson_destroy(d2);
}

static void
test_op_query_and_reply(void **state)
{
    struct redact_cfg cfg = {0};
    struct mt_err err = {0};
    struct mt_buf b, out;
    struct wire_msg m;
    bson_t *q = BCON_NEW("$query", "{", "saslStart", BCON_INT32(1), "payload",
                         BCON_BIN(BSON_SUBTYPE_BINARY, (const uint8_t *)secret,
                                  (uint32_t)strlen(secret)),
                         "}");
    bson_t r1; /* on the stack: bson_t wants 128-byte alignment */
    const bson_t *docs[1] = {&r1};

    (void)state;
    bson_init(&r1);
    BSON_APPEND_INT32(&r1, "conversationId", 1);
    BSON_APPEND_BINARY(&r1, "payload", BSON_SUBTYPE_BINARY,
                       (const uint8_t *)secret, (uint32_t)strlen(secret));
    BSON_APPEND_DOUBLE(&r1, "ok", 1);
    BSON_APPEND_UTF8(&r1, "ssn", "123-45-6789");
    mt_buf_init(&b, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_query(&b, 5, 0, "admin.$cmd", 0, -1, q), 0);
    redact_expect(&cfg, &b, &out, 1, &m);
    assert_int_equal(m.h.op_code, WIRE_OP_QUERY);
    assert_string_equal(m.full_collection, "admin.$cmd");
    assert_int_equal(m.number_to_return, -1);
    assert_false(contains(out.data, out.len, secret));
    assert_bin_mark(m.body, m.body_len, "$query.payload");
    mt_buf_free(&b);
    mt_buf_free(&out);

    assert_int_equal(redact_cfg_add(&cfg, "ssn", &err), 0);
    mt_buf_init(&b, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_reply(&b, 9, 5, 8, 0, 0, docs, 1), 0);
    redact_expect(&cfg, &b, &out, 1, &m);
    assert_int_equal(m.h.op_code, WIRE_OP_REPLY);
    assert_int_equal(m.h.response_to, 5);
    assert_int_equal(m.number_returned, 1);
    assert_int_equal(m.response_flags, 8);
    assert_false(contains(out.data, out.len, "123-45-6789"));
    assert_false(contains(out.data, out.len, secret)); /* legacy SASL reply */
    assert_bin_mark(m.docs, m.docs_len, "payload");
    mt_buf_free(&b);
    mt_buf_free(&out);
    bson_destroy(q);
    bson_destroy(&r1);
}

static void
test_trace_msg_compressed(void **state)
{
    struct redact_cfg cfg = {0};
    struct mt_buf b, c, plain, out;
    struct mt_err err = {0};
    struct wire_msg m, cm;
    struct trace_msg tm;
    size_t used;

    (void)state;
    encode_msg(&b, 0, 0,
               BCON_NEW("saslStart", BCON_INT32(1), "payload",
                        BCON_BIN(BSON_SUBTYPE_BINARY, (const uint8_t *)secret,
                                 (uint32_t)strlen(secret)),
                        "$db", "admin"),
               NULL, 0);
    mt_buf_init(&c, WIRE_MSG_LEN_MAX);
    mt_buf_init(&plain, WIRE_MSG_LEN_MAX);
    mt_buf_init(&out, WIRE_MSG_LEN_MAX);
    assert_int_equal(
        wire_encode_compressed(&c, b.data, b.len, WIRE_COMPRESSOR_NOOP, &err),
        0);
    assert_true(contains(c.data, c.len, secret)); /* noop: visible */
    assert_int_equal(wire_msg_parse(c.data, c.len, &cm, &used, &err), MT_OK);
    assert_int_equal(wire_decompress(&cm, &plain, &err), 0);

    memset(&tm, 0, sizeof(tm));
    tm.wire = c.data;
    tm.wire_len = (uint32_t)c.len;
    tm.plain = plain.data;
    tm.plain_len = (uint32_t)plain.len;
    assert_int_equal(redact_trace_msg(&cfg, &tm, &out), 1);
    assert_int_equal(tm.flags, TRACE_MSG_REDACTED | TRACE_MSG_DECOMPRESSED);
    assert_null(tm.plain);
    assert_false(contains(tm.wire, tm.wire_len, secret));
    parse_one(tm.wire, tm.wire_len, &m);
    assert_int_equal(m.h.op_code, WIRE_OP_MSG);

    /* not decompressed: only the header is kept */
    memset(&tm, 0, sizeof(tm));
    tm.wire = c.data;
    tm.wire_len = (uint32_t)c.len;
    assert_int_equal(redact_trace_msg(&cfg, &tm, &out), 1);
    assert_int_equal(tm.wire_len, WIRE_HEADER_LEN);
    assert_true(tm.flags & TRACE_MSG_PARTIAL);

    /* plain message with nothing to remove: untouched */
    mt_buf_free(&b);
    encode_msg(&b, 0, 0, BCON_NEW("ping", BCON_INT32(1), "$db", "admin"), NULL,
               0);
    memset(&tm, 0, sizeof(tm));
    tm.wire = b.data;
    tm.wire_len = (uint32_t)b.len;
    assert_int_equal(redact_trace_msg(&cfg, &tm, &out), 0);
    assert_ptr_equal(tm.wire, b.data);
    assert_int_equal(tm.flags, 0);

    /* partial and garbage: header only */
    tm.flags = TRACE_MSG_PARTIAL;
    tm.wire_len = 30;
    assert_int_equal(redact_trace_msg(&cfg, &tm, &out), 1);
    assert_int_equal(tm.wire_len, WIRE_HEADER_LEN);
    b.data[20] = 0x7f; /* corrupt the body's BSON */
    memset(&tm, 0, sizeof(tm));
    tm.wire = b.data;
    tm.wire_len = (uint32_t)b.len;
    assert_int_equal(redact_trace_msg(&cfg, &tm, &out), 1);
    assert_int_equal(tm.wire_len, WIRE_HEADER_LEN);
    assert_true(tm.flags & TRACE_MSG_MALFORMED);
    mt_buf_free(&b);
    mt_buf_free(&c);
    mt_buf_free(&plain);
    mt_buf_free(&out);
}

static void
test_cfg_errors(void **state)
{
    struct redact_cfg cfg = {0};
    struct mt_err err = {0};
    char name[16];

    (void)state;
    assert_int_equal(redact_cfg_add(&cfg, "", &err), MT_EUSAGE);
    assert_int_equal(redact_cfg_add(&cfg, "a..b", &err), MT_EUSAGE);
    assert_int_equal(redact_cfg_add(&cfg, ".a", &err), MT_EUSAGE);
    assert_int_equal(redact_cfg_add(&cfg, "a.", &err), MT_EUSAGE);
    assert_int_equal(cfg.npaths, 0);
    for (int i = 0; i < REDACT_FIELDS_MAX; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        assert_int_equal(redact_cfg_add(&cfg, name, &err), 0);
    }
    assert_int_equal(redact_cfg_add(&cfg, "one.more", &err), MT_ELIMIT);
    assert_int_equal(cfg.path[3].nparts, 1);
    assert_string_equal(cfg.path[3].part[0], "f3");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sasl_start_request),
        cmocka_unit_test(test_sasl_reply_and_continue),
        cmocka_unit_test(test_speculative_authenticate),
        cmocka_unit_test(test_named_fields),
        cmocka_unit_test(test_op_query_and_reply),
        cmocka_unit_test(test_trace_msg_compressed),
        cmocka_unit_test(test_cfg_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
