/*
 * test_stats.c -- tools/stats.c (percentiles, pairing, exhaust streams)
 * and tools/msginfo.c (JSON strings, message decoding, auth
 * detection), with real wire messages from core/wire's encoders.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/trace.h"
#include "core/wire.h"
#include "tools/msginfo.h"
#include "tools/stats.h"

#define MS 1000000ull

static void
test_stats_percentile_nearest_rank(void **state)
{
    uint64_t v[100];

    for (int i = 0; i < 100; i++)
        v[i] = (uint64_t)i + 1;
    assert_int_equal(stats_percentile(v, 100, 50), 50);
    assert_int_equal(stats_percentile(v, 100, 90), 90);
    assert_int_equal(stats_percentile(v, 100, 99), 99);
    assert_int_equal(stats_percentile(v, 100, 100), 100);
    assert_int_equal(stats_percentile(v, 100, 0), 1);
    assert_int_equal(stats_percentile(v, 1, 99), 1);
    assert_int_equal(stats_percentile(v, 3, 50), 2); /* ceil(1.5) = 2 */
    assert_int_equal(stats_percentile(v, 0, 50), 0);
}

static void
test_stats_json_str_escapes(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    msginfo_json_str(f, "a\"b\\c\n\x01 \xc3\xa9 \xff x");
    fclose(f);
    assert_string_equal(buf,
                        "\"a\\\"b\\\\c\\u000a\\u0001 \xc3\xa9 \\u00ff x\"");
    free(buf);
}

static void
test_stats_printable(void **state)
{
    char out[8];

    assert_string_equal(msginfo_printable(out, sizeof(out), "a\x1b[2Jb"),
                        "a?[2Jb");
    assert_string_equal(msginfo_printable(out, sizeof(out), "0123456789"),
                        "0123456"); /* truncated, NUL-terminated */
    assert_string_equal(msginfo_printable(out, 1, "abc"), "");
}

struct fixture {
    struct mt_buf b;
    struct stats st;
};

static void
add_msg(struct fixture *fx, uint64_t conn, uint64_t t, uint8_t dir)
{
    struct trace_rec rec;

    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_MSG;
    rec.u.msg.conn_id = conn;
    rec.u.msg.t_ns = t;
    rec.u.msg.dir = dir;
    rec.u.msg.wire = fx->b.data;
    rec.u.msg.wire_len = (uint32_t)fx->b.len;
    assert_int_equal(stats_add(&fx->st, &rec), 0);
    mt_buf_reset(&fx->b);
}

static void
enc(struct fixture *fx, int32_t req, int32_t to, uint32_t flags, bson_t *doc)
{
    assert_int_equal(wire_encode_msg(&fx->b, req, to, flags, doc, NULL, 0), 0);
    bson_destroy(doc);
}

/* Pairing by (connection, responseTo): same request ids on two
 * connections, replies out of order, an exhaust stream, a fire-and-forget
 * write, an unmatched request and reply. */
static void
test_stats_pairing(void **state)
{
    struct fixture fx;
    struct stats_sum sum;
    struct stats_cmd *find = NULL, *hello = NULL;

    mt_buf_init(&fx.b, 1 << 20);
    assert_int_equal(stats_init(&fx.st), 0);
    enc(&fx, 1, 0, 0, BCON_NEW("find", "c", "$db", "d"));
    add_msg(&fx, 1, 0, TRACE_DIR_C2S);
    enc(&fx, 1, 0, 0, BCON_NEW("find", "c", "$db", "d"));
    add_msg(&fx, 2, 1 * MS, TRACE_DIR_C2S);
    enc(&fx, 2, 0, 0, BCON_NEW("find", "c", "$db", "d"));
    add_msg(&fx, 1, 2 * MS, TRACE_DIR_C2S);
    enc(&fx, 50, 2, 0, BCON_NEW("ok", BCON_DOUBLE(1))); /* conn 1 req 2 */
    add_msg(&fx, 1, 5 * MS, TRACE_DIR_S2C);
    enc(&fx, 51, 1, 0, BCON_NEW("ok", BCON_DOUBLE(1))); /* conn 2 req 1 */
    add_msg(&fx, 2, 11 * MS, TRACE_DIR_S2C);
    enc(&fx, 52, 1, 0, BCON_NEW("ok", BCON_DOUBLE(1))); /* conn 1 req 1 */
    add_msg(&fx, 1, 20 * MS, TRACE_DIR_S2C);
    /* exhaust hello: request 7, replies 60 (moreToCome) -> 61 answers 60 */
    enc(&fx, 7, 0, WIRE_MSG_EXHAUST_ALLOWED,
        BCON_NEW("hello", BCON_INT32(1), "$db", "admin"));
    add_msg(&fx, 3, 30 * MS, TRACE_DIR_C2S);
    enc(&fx, 60, 7, WIRE_MSG_MORE_TO_COME, BCON_NEW("ok", BCON_DOUBLE(1)));
    add_msg(&fx, 3, 33 * MS, TRACE_DIR_S2C);
    enc(&fx, 61, 60, WIRE_MSG_MORE_TO_COME, BCON_NEW("ok", BCON_DOUBLE(1)));
    add_msg(&fx, 3, 10033 * MS, TRACE_DIR_S2C);
    /* w:0 insert, a ping never answered, a reply to nothing */
    enc(&fx, 8, 0, WIRE_MSG_MORE_TO_COME, BCON_NEW("insert", "c", "$db", "d"));
    add_msg(&fx, 3, 40 * MS, TRACE_DIR_C2S);
    enc(&fx, 9, 0, 0, BCON_NEW("ping", BCON_INT32(1), "$db", "admin"));
    add_msg(&fx, 3, 41 * MS, TRACE_DIR_C2S);
    enc(&fx, 70, 12345, 0, BCON_NEW("ok", BCON_DOUBLE(1)));
    add_msg(&fx, 3, 42 * MS, TRACE_DIR_S2C);
    stats_finish(&fx.st);

    for (size_t i = 0; i < fx.st.ncmds; i++) {
        if (strcmp(fx.st.cmds[i].name, "find") == 0)
            find = &fx.st.cmds[i];
        if (strcmp(fx.st.cmds[i].name, "hello") == 0)
            hello = &fx.st.cmds[i];
    }
    assert_non_null(find);
    assert_non_null(hello);
    assert_int_equal(find->requests, 3);
    assert_int_equal(find->replies, 3);
    stats_summarize(find, &sum);
    assert_int_equal(sum.count, 3); /* 20, 10, 3 ms */
    assert_true(sum.p50_ms == 10.0 && sum.max_ms == 20.0);
    assert_true(sum.mean_ms == 11.0);
    assert_int_equal(hello->replies, 1); /* 3 ms; the 10 s wait is not one */
    stats_summarize(hello, &sum);
    assert_true(sum.max_ms == 3.0);
    assert_int_equal(fx.st.exhaust_replies, 1);
    assert_int_equal(fx.st.no_reply_expected, 1);
    assert_int_equal(fx.st.unmatched_requests, 1); /* the ping */
    assert_int_equal(fx.st.unmatched_replies, 1);
    assert_int_equal(fx.st.msgs, 12);
    stats_free(&fx.st);
    mt_buf_free(&fx.b);
}

/* OP_COMPRESSED without a recorded plain form is inflated; a SCRAM
 * exchange and a hello with speculativeAuthenticate are marked auth;
 * a truncated message yields an error, not a crash. */
static void
test_stats_msginfo_decode(void **state)
{
    struct mt_buf b, scratch, z;
    struct mt_err err;
    struct msginfo mi;
    struct trace_msg m = {.conn_id = 1, .dir = TRACE_DIR_C2S};
    bson_t *doc = BCON_NEW("saslStart", BCON_INT32(1), "$db", "admin");

    mt_buf_init(&b, 1 << 20);
    mt_buf_init(&z, 1 << 20);
    mt_buf_init(&scratch, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_msg(&b, 5, 0, 0, doc, NULL, 0), 0);
    bson_destroy(doc);
    assert_int_equal(
        wire_encode_compressed(&z, b.data, b.len, WIRE_COMPRESSOR_ZSTD, &err),
        0);
    m.wire = z.data;
    m.wire_len = (uint32_t)z.len;
    msginfo_decode(&m, &scratch, &mi);
    assert_true(mi.parsed);
    assert_true(mi.compressed);
    assert_int_equal(mi.compressor, WIRE_COMPRESSOR_ZSTD);
    assert_int_equal(mi.op_code, WIRE_OP_MSG);
    assert_string_equal(mi.cmd.name, "saslStart");
    assert_true(mi.auth);
    for (uint32_t cut = 0; cut < z.len; cut++) { /* every prefix */
        m.wire_len = cut;
        msginfo_decode(&m, &scratch, &mi);
        assert_false(mi.parsed);
        assert_true(mi.error[0] != '\0');
    }
    mt_buf_reset(&b);
    doc = BCON_NEW("hello", BCON_INT32(1), "speculativeAuthenticate", "{",
                   "saslStart", BCON_INT32(1), "}", "$db", "admin");
    assert_int_equal(wire_encode_msg(&b, 6, 0, 0, doc, NULL, 0), 0);
    bson_destroy(doc);
    m.wire = b.data;
    m.wire_len = (uint32_t)b.len;
    msginfo_decode(&m, &scratch, &mi);
    assert_true(mi.parsed && mi.cmd.is_hello && mi.auth);
    mt_buf_free(&b);
    mt_buf_free(&z);
    mt_buf_free(&scratch);
}

/* A request and its reply (ids req / 1000 + req) on conn 1. */
static void
exchange(struct fixture *fx, int32_t req, uint64_t t, uint64_t lat, bson_t *cmd,
         bson_t *reply)
{
    enc(fx, req, 0, 0, cmd);
    add_msg(fx, 1, t, TRACE_DIR_C2S);
    enc(fx, 1000 + req, req, 0, reply);
    add_msg(fx, 1, t + lat, TRACE_DIR_S2C);
}

static const struct stats_err *
err_of(const struct stats *s, const char *cmd, int32_t code)
{
    for (size_t i = 0; i < s->nerrs; i++)
        if (strcmp(s->errs[i].cmd, cmd) == 0 && s->errs[i].code == code)
            return &s->errs[i];
    return NULL;
}

/* Failed replies by command and code: ok 0 (as a double, an int, false),
 * writeErrors and writeConcernError with ok 1, a legacy QueryFailure; a
 * success carrying a code field is not an error. */
static void
test_stats_failed_replies(void **state)
{
    struct fixture fx;
    const struct stats_err *e;
    int32_t flags_query_failure = 2;
    bson_t *doc;

    mt_buf_init(&fx.b, 1 << 20);
    assert_int_equal(stats_init(&fx.st), 0);
    exchange(&fx, 1, 0, MS, BCON_NEW("find", "c", "$db", "d"),
             BCON_NEW("ok", BCON_DOUBLE(0), "errmsg", "x", "code",
                      BCON_INT32(13), "codeName", "Unauthorized"));
    exchange(&fx, 2, 0, MS, BCON_NEW("find", "c", "$db", "d"),
             BCON_NEW("ok", BCON_INT32(0), "code", BCON_INT32(13), "codeName",
                      "Unauthorized"));
    exchange(&fx, 3, 0, MS, BCON_NEW("insert", "c", "$db", "d"),
             BCON_NEW("n", BCON_INT32(0), "writeErrors", "[", "{", "index",
                      BCON_INT32(0), "code", BCON_INT32(11000), "codeName",
                      "DuplicateKey", "}", "{", "index", BCON_INT32(1), "code",
                      BCON_INT32(2), "}", "]", "ok", BCON_DOUBLE(1)));
    exchange(&fx, 4, 0, MS, BCON_NEW("update", "c", "$db", "d"),
             BCON_NEW("n", BCON_INT32(1), "writeConcernError", "{", "code",
                      BCON_INT32(64), "codeName", "WriteConcernFailed", "}",
                      "ok", BCON_DOUBLE(1)));
    exchange(&fx, 5, 0, MS, BCON_NEW("ping", BCON_INT32(1), "$db", "d"),
             BCON_NEW("ok", BCON_BOOL(false)));
    exchange(&fx, 6, 0, MS, BCON_NEW("ping", BCON_INT32(1), "$db", "d"),
             BCON_NEW("ok", BCON_DOUBLE(1), "code", BCON_INT32(7)));
    /* legacy: OP_QUERY answered by an OP_REPLY flagged QueryFailure */
    doc = BCON_NEW("count", "c");
    assert_int_equal(wire_encode_query(&fx.b, 7, 0, "d.$cmd", 0, -1, doc), 0);
    bson_destroy(doc);
    add_msg(&fx, 1, 0, TRACE_DIR_C2S);
    doc = BCON_NEW("$err", "bad", "code", BCON_INT32(2));
    assert_int_equal(wire_encode_reply(&fx.b, 1007, 7, flags_query_failure, 0,
                                       0, (const bson_t *[]){doc}, 1),
                     0);
    add_msg(&fx, 1, MS, TRACE_DIR_S2C);
    bson_destroy(doc);

    assert_int_equal(fx.st.nerrs, 5);
    assert_non_null(e = err_of(&fx.st, "find", 13));
    assert_int_equal(e->n, 2);
    assert_false(e->write);
    assert_string_equal(e->code_name, "Unauthorized");
    assert_non_null(e = err_of(&fx.st, "insert", 11000)); /* the first */
    assert_true(e->write);
    assert_string_equal(e->code_name, "DuplicateKey");
    assert_non_null(e = err_of(&fx.st, "update", 64));
    assert_true(e->write);
    assert_non_null(e = err_of(&fx.st, "ping", 0)); /* ok: false, no code */
    assert_int_equal(e->n, 1);
    assert_null(err_of(&fx.st, "ping", 7)); /* ok: 1 with a code */
    assert_non_null(e = err_of(&fx.st, "count", 2));
    assert_false(e->write);
    for (size_t i = 0; i < fx.st.ncmds; i++) {
        const struct stats_cmd *c = &fx.st.cmds[i];
        if (strcmp(c->name, "find") == 0)
            assert_int_equal(c->errors, 2);
        if (strcmp(c->name, "insert") == 0)
            assert_true(c->errors == 0 && c->write_errors == 1);
        if (strcmp(c->name, "ping") == 0)
            assert_true(c->errors == 1 && c->write_errors == 0);
    }
    stats_free(&fx.st);
    mt_buf_free(&fx.b);
}

/* --top: the N slowest of many exchanges, slowest first, with the
 * request's connection, requestID and namespace. */
static void
test_stats_top_slowest(void **state)
{
    struct fixture fx;

    mt_buf_init(&fx.b, 1 << 20);
    assert_int_equal(stats_init(&fx.st), 0);
    assert_int_equal(stats_set_top(&fx.st, 3), 0);
    for (int i = 1; i <= 50; i++) /* latency (i * 37) % 50 + 1 ms */
        exchange(&fx, i, (uint64_t)i * 100 * MS,
                 (uint64_t)((i * 37) % 50 + 1) * MS,
                 BCON_NEW("find", "coll", "$db", "db"),
                 BCON_NEW("ok", BCON_DOUBLE(1)));
    stats_sort_slow(&fx.st);
    assert_int_equal(fx.st.nslow, 3);
    for (int k = 0; k < 3; k++) {
        const struct stats_slow *x = &fx.st.slow[k];
        assert_int_equal(x->lat_ns, (uint64_t)(50 - k) * MS);
        assert_int_equal((x->request_id * 37) % 50 + 1, 50 - k);
        assert_int_equal(x->t_ns, (uint64_t)x->request_id * 100 * MS);
        assert_int_equal(x->conn_id, 1);
        assert_string_equal(x->ns, "db.coll");
        assert_string_equal(x->cmd, "find");
    }
    stats_free(&fx.st);
    mt_buf_free(&fx.b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_percentile_nearest_rank),
        cmocka_unit_test(test_stats_json_str_escapes),
        cmocka_unit_test(test_stats_printable),
        cmocka_unit_test(test_stats_pairing),
        cmocka_unit_test(test_stats_failed_replies),
        cmocka_unit_test(test_stats_top_slowest),
        cmocka_unit_test(test_stats_msginfo_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
