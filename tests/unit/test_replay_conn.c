/*
 * test_replay_conn.c -- replay/conn.c, the socket-free connection core,
 * with replay/handshake.c and replay/index.c: bytes in, replies out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/rd.h"
#include "replay_fixtures.h"

static void
record(struct index *idx, int32_t rid, const char *req, const char *reply)
{
    struct mt_buf q, p;
    struct mt_err err;

    encode(&q, rid, 0, 0, req);
    encode(&p, 500 + rid, rid, 0, reply);
    assert_int_equal(index_add(idx, q.data, q.len, p.data, p.len, 250000, &err),
                     0);
    mt_buf_free(&q);
    mt_buf_free(&p);
}

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct match_rules r;

    match_rules_default(&r);
    index_init(&f->idx, &r);
    record(&f->idx, 1, "{\"hello\": 1, \"$db\": \"admin\"}",
           "{\"isWritablePrimary\": true, \"topologyVersion\": {\"processId\": "
           "{\"$oid\": \"650000000000000000000001\"}, \"counter\": "
           "{\"$numberLong\": "
           "\"0\"}}, \"maxWireVersion\": 21, \"compression\": [\"zstd\"], "
           "\"connectionId\": 99, \"ok\": 1}");
    record(&f->idx, 2,
           "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"$db\": \"d\"}",
           "{\"cursor\": {\"id\": {\"$numberLong\": \"0\"}, \"firstBatch\": "
           "[{\"_id\": 1}]}, \"ok\": 1}");
    record(&f->idx, 3, "{\"find\": \"m\", \"$db\": \"d\"}",
           "{\"cursor\": {\"id\": {\"$numberLong\": \"88\"}, \"firstBatch\": "
           "[{\"b\": 1}]}, \"ok\": 1}");
    record(&f->idx, 4,
           "{\"getMore\": {\"$numberLong\": \"88\"}, \"collection\": \"m\", "
           "\"$db\": \"d\"}",
           "{\"cursor\": {\"id\": {\"$numberLong\": \"88\"}, \"nextBatch\": "
           "[{\"b\": 2}]}, \"ok\": 1}");
    record(&f->idx, 5,
           "{\"getMore\": {\"$numberLong\": \"88\"}, \"collection\": \"m\", "
           "\"$db\": \"d\"}",
           "{\"cursor\": {\"id\": {\"$numberLong\": \"0\"}, \"nextBatch\": "
           "[{\"b\": 3}]}, \"ok\": 1}");
    fixture_start(f, 1000000, 7); /* replies 1 ms late; conn ids from 7 */
    *state = f;
    return 0;
}

/* Feeds one JSON command as OP_MSG; returns the number of new replies. */
static size_t
send_cmd(struct fixture *f, int32_t rid, uint32_t flags, const char *js,
         uint64_t t)
{
    struct mt_buf m;
    size_t used, before = f->nout;

    encode(&m, rid, 0, flags, js);
    assert_int_equal(replay_conn_input(&f->c, m.data, m.len, t, &used, NULL),
                     0);
    assert_int_equal(used, m.len);
    mt_buf_free(&m);
    return f->nout - before;
}

/* The reply's parsed message and body. */
static void
reply_of(struct replay_reply *r, struct wire_msg *w, bson_t *body)
{
    size_t used;

    assert_int_equal(wire_msg_parse(r->bytes, r->len, w, &used, NULL), MT_OK);
    assert_true(bson_init_static(body, w->body, w->body_len));
}

static bool
has(const bson_t *b, const char *key)
{
    return bson_has_field(b, key);
}

static void
test_conn_legacy_ismaster(void **state)
{
    struct fixture *f = *state;
    bson_t *q = json("{\"isMaster\": 1, \"helloOk\": true, \"client\": {}}");
    struct mt_buf m;
    struct wire_msg w;
    bson_t body;
    size_t used;

    mt_buf_init(&m, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_query(&m, 41, 0, "admin.$cmd", 0, -1, q), 0);
    assert_int_equal(replay_conn_input(&f->c, m.data, m.len, 1000, &used, NULL),
                     0);
    assert_int_equal(f->nout, 1);
    reply_of(f->out[0], &w, &body);
    assert_int_equal(w.h.op_code, WIRE_OP_REPLY);
    assert_int_equal(w.h.response_to, 41);
    assert_true(has(&body, "ismaster"));
    assert_false(has(&body, "isWritablePrimary"));
    assert_false(has(&body, "compression")); /* the client asked for none */
    assert_true(has(&body, "helloOk"));
    assert_true(has(&body, "localTime"));
    assert_int_equal(i64_at(&body, "connectionId"), 7);
    assert_int_equal(i64_at(&body, "maxWireVersion"), 21);
    assert_int_equal(f->out[0]->ready_at_ns, 1000 + 1000000);
    mt_buf_free(&m);
    bson_destroy(q);
}

static void
test_conn_matched_reply_and_header(void **state)
{
    struct fixture *f = *state;
    struct wire_msg w;
    bson_t body;
    bson_iter_t it;

    assert_int_equal(send_cmd(f, 9, 0,
                              "{\"find\": \"c\", \"filter\": {\"_id\": 1}, "
                              "\"lsid\": {\"id\": 5}, \"$db\": \"d\"}",
                              50),
                     1);
    reply_of(f->out[0], &w, &body);
    assert_int_equal(w.h.op_code, WIRE_OP_MSG);
    assert_int_equal(w.h.response_to, 9);
    assert_int_not_equal(w.h.request_id, 502); /* a new requestID */
    assert_true(bson_iter_init(&it, &body));
    assert_true(bson_iter_find_descendant(&it, "cursor.firstBatch.0._id", &it));
    assert_int_equal(bson_iter_as_int64(&it), 1);
    assert_int_equal(f->out[0]->ready_at_ns, 50 + 1000000);
    assert_int_equal(f->w.st.matched, 1);
}

static void
test_conn_keycache_hits_only_equal_requests(void **state)
{
    struct fixture *f = *state;
    struct wire_msg w;
    bson_t body;

    send_cmd(f, 1, 0,
             "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"lsid\": {\"id\": "
             "1}, \"$db\": \"d\"}",
             0);
    send_cmd(f, 2, 0,
             "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"lsid\": {\"id\": "
             "2}, \"$db\": \"d\"}",
             0);
    assert_int_equal(f->w.kc.hits, 1); /* lsid is ignored: same raw bytes */
    assert_int_equal(f->w.st.matched, 2);
    /* same bytes, other database: not a hit, and a miss */
    send_cmd(f, 3, 0,
             "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"lsid\": {\"id\": "
             "2}, \"$db\": \"e\"}",
             0);
    assert_int_equal(f->w.kc.hits, 1);
    reply_of(f->out[2], &w, &body);
    assert_int_equal(i64_at(&body, "code"), REPLAY_MISS_CODE);
    /* a different filter value of the same length: not a hit */
    send_cmd(f, 4, 0,
             "{\"find\": \"c\", \"filter\": {\"_id\": 2}, \"$db\": \"d\"}", 0);
    reply_of(f->out[3], &w, &body);
    assert_int_equal(i64_at(&body, "code"), REPLAY_MISS_CODE);
    assert_int_equal(f->w.kc.hits, 1);
}

static void
test_conn_cursor_served_per_client(void **state)
{
    struct fixture *f = *state;
    struct wire_msg w;
    bson_t body;
    int64_t id;
    char cmd[160];

    send_cmd(f, 1, 0, "{\"find\": \"m\", \"$db\": \"d\"}", 0);
    reply_of(f->out[0], &w, &body);
    id = i64_at(&body, "cursor.id");
    assert_true(id != 0 && id != 88);
    snprintf(cmd, sizeof(cmd),
             "{\"getMore\": {\"$numberLong\": \"%lld\"}, "
             "\"collection\": \"m\", \"$db\": \"d\"}",
             (long long)id);
    send_cmd(f, 2, 0, cmd, 0);
    reply_of(f->out[1], &w, &body);
    assert_int_equal(i64_at(&body, "cursor.id"), id);
    assert_int_equal(i64_at(&body, "cursor.nextBatch.0.b"), 2);
    send_cmd(f, 3, 0, cmd, 0);
    reply_of(f->out[2], &w, &body);
    assert_int_equal(i64_at(&body, "cursor.id"), 0);
    assert_int_equal(i64_at(&body, "cursor.nextBatch.0.b"), 3);
    send_cmd(f, 4, 0, cmd, 0);
    reply_of(f->out[3], &w, &body);
    assert_int_equal(i64_at(&body, "ok"), 0);
    assert_int_equal(i64_at(&body, "code"), 43);
    /* killCursors */
    send_cmd(f, 5, 0, "{\"find\": \"m\", \"$db\": \"d\"}", 0);
    reply_of(f->out[4], &w, &body);
    id = i64_at(&body, "cursor.id");
    snprintf(cmd, sizeof(cmd),
             "{\"killCursors\": \"m\", \"cursors\": "
             "[{\"$numberLong\": \"%lld\"}, {\"$numberLong\": \"5\"}], "
             "\"$db\": \"d\"}",
             (long long)id);
    send_cmd(f, 6, 0, cmd, 0);
    reply_of(f->out[5], &w, &body);
    assert_int_equal(i64_at(&body, "cursorsKilled.0"), id);
    assert_int_equal(i64_at(&body, "cursorsNotFound.0"), 5);
    assert_int_equal(cursor_count(&f->cursors), 0);
}

static void
test_conn_miss_error_names_keys(void **state)
{
    struct fixture *f = *state;
    struct wire_msg w;
    bson_t body;
    bson_iter_t it;
    const char *msg;

    send_cmd(f, 1, 0,
             "{\"find\": \"c\", \"filter\": {\"_id\": 2}, \"$db\": \"d\"}", 0);
    reply_of(f->out[0], &w, &body);
    assert_int_equal(i64_at(&body, "ok"), 0);
    assert_int_equal(i64_at(&body, "code"), REPLAY_MISS_CODE);
    assert_true(bson_iter_init_find(&it, &body, "errmsg"));
    msg = bson_iter_utf8(&it, NULL);
    assert_non_null(strstr(msg, "filter={\"_id\":2}"));
    assert_non_null(
        strstr(msg, "closest recorded key [d find=\"c\" filter={\"_id\":1}]"));
    assert_non_null(strstr(msg, "(filter differs)"));
    assert_int_equal(f->w.st.missed, 1);
    /* a command the trace never saw says so */
    send_cmd(f, 3, 0, "{\"dbStats\": 1, \"$db\": \"d\"}", 0);
    reply_of(f->out[1], &w, &body);
    assert_true(bson_iter_init_find(&it, &body, "errmsg"));
    msg = bson_iter_utf8(&it, NULL);
    assert_non_null(strstr(msg, "the trace has no 'dbStats' request"));
    assert_int_equal(f->w.st.missed, 2);
    /* authentication is refused as such, not as a miss of some key */
    send_cmd(f, 4, 0,
             "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", "
             "\"payload\": {\"$binary\": {\"base64\": \"AA==\", "
             "\"subType\": \"00\"}}, \"$db\": \"admin\"}",
             0);
    reply_of(f->out[2], &w, &body);
    assert_int_equal(i64_at(&body, "code"), AUTH_FAILED_CODE);
    assert_true(bson_iter_init_find(&it, &body, "errmsg"));
    assert_non_null(strstr(bson_iter_utf8(&it, NULL), "--credentials"));
    assert_int_equal(f->w.st.missed, 2); /* an auth failure, not a miss */
    assert_int_equal(f->w.st.auth_failed, 1);
    /* a built-in command the trace lacks */
    send_cmd(f, 2, 0, "{\"ping\": 1, \"$db\": \"admin\"}", 0);
    reply_of(f->out[3], &w, &body);
    assert_int_equal(i64_at(&body, "ok"), 1);
    assert_int_equal(f->w.st.builtin, 1);
}

/* Another driver's cursor shape: served when a server would answer
 * alike, else a miss naming both shapes (also on a key-cache hit). */
static void
test_conn_cursor_shapes(void **state)
{
    struct fixture *f = *state;
    struct wire_msg w;
    bson_t body;
    bson_iter_t it;

    for (int i = 0; i < 2; i++) { /* the second: a key-cache hit */
        send_cmd(f, 1 + i, 0,
                 "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"limit\": 1, "
                 "\"singleBatch\": true, \"$db\": \"d\"}",
                 0);
        reply_of(f->out[2 * i], &w, &body);
        assert_int_equal(i64_at(&body, "ok"), 1);
        send_cmd(f, 3 + i, 0,
                 "{\"find\": \"m\", \"batchSize\": 5, \"$db\": \"d\"}", 0);
        reply_of(f->out[2 * i + 1], &w, &body);
        assert_int_equal(i64_at(&body, "code"), REPLAY_MISS_CODE);
        assert_true(bson_iter_init_find(&it, &body, "errmsg"));
        assert_non_null(strstr(bson_iter_utf8(&it, NULL),
                               "[d find=\"m\"] with batchSize=5: the trace has "
                               "it with no limit, batchSize or singleBatch (a "
                               "first batch of 1, cursor left open)"));
    }
    assert_int_equal(f->w.st.matched, 2);
    assert_int_equal(f->w.st.missed, 2);
    assert_int_equal(f->w.sh->cursors->opened, 0);
}

static void
test_conn_unacknowledged_gets_no_reply(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(
        send_cmd(
            f, 1, WIRE_MSG_MORE_TO_COME,
            "{\"insert\": \"c\", \"$db\": \"d\", \"writeConcern\": {\"w\": 0}}",
            0),
        0);
    assert_int_equal(f->w.st.unacked, 1);
}

static void
test_conn_awaitable_and_exhaust_hello(void **state)
{
    struct fixture *f = *state;
    const char *hello =
        "{\"hello\": 1, \"topologyVersion\": {\"processId\": {\"$oid\": "
        "\"650000000000000000000001\"}, \"counter\": {\"$numberLong\": "
        "\"0\"}}, "
        "\"maxAwaitTimeMS\": 500, \"$db\": \"admin\"}";
    struct wire_msg w;
    bson_t body;
    int32_t rid;

    /* held for maxAwaitTimeMS (plus the delay) */
    send_cmd(f, 1, 0, hello, 100);
    assert_int_equal(f->out[0]->ready_at_ns, 100 + 500000000ull + 1000000);
    reply_of(f->out[0], &w, &body);
    assert_int_equal(w.flags & WIRE_MSG_MORE_TO_COME, 0);
    assert_true(has(&body, "topologyVersion"));
    /* exhaustAllowed: moreToCome, and the stream continues */
    send_cmd(f, 2, WIRE_MSG_EXHAUST_ALLOWED, hello, 100);
    reply_of(f->out[1], &w, &body);
    assert_int_not_equal(w.flags & WIRE_MSG_MORE_TO_COME, 0);
    assert_int_equal(w.h.response_to, 2);
    rid = w.h.request_id;
    assert_true(replay_conn_release(&f->c, f->out[1], 7000));
    assert_int_equal(f->out[1]->ready_at_ns, 7000 + 500000000ull);
    reply_of(f->out[1], &w, &body);
    assert_int_equal(w.h.response_to, rid); /* previous reply's requestID */
    assert_int_not_equal(w.flags & WIRE_MSG_MORE_TO_COME, 0);
    /* a stale topologyVersion: answered at once */
    send_cmd(f, 3, 0,
             "{\"hello\": 1, \"topologyVersion\": {\"processId\": {\"$oid\": "
             "\"650000000000000000000002\"}, \"counter\": 0}, "
             "\"maxAwaitTimeMS\": 500, "
             "\"$db\": \"admin\"}",
             100);
    assert_int_equal(f->out[2]->ready_at_ns, 100 + 1000000);
}

static void
test_conn_serial_mode_queues(void **state)
{
    struct fixture *f = *state;
    const char *q =
        "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"$db\": \"d\"}";

    f->sh.delay.mode = DELAY_MODE_SERIAL;
    send_cmd(f, 1, 0, q, 1000);
    send_cmd(f, 2, 0, q, 1000);
    assert_int_equal(f->out[0]->ready_at_ns, 1000 + 1000000);
    assert_int_equal(f->out[1]->ready_at_ns, 1000 + 2000000);
    f->sh.delay.mode = DELAY_MODE_DEADLINE;
    send_cmd(f, 3, 0, q, 1000);
    assert_int_equal(f->out[2]->ready_at_ns, 1000 + 1000000);
}

static void
test_conn_checksum_recomputed(void **state)
{
    struct fixture *f = *state;
    struct wire_msg w;
    bson_t body;

    send_cmd(f, 1, WIRE_MSG_CHECKSUM_PRESENT,
             "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"$db\": \"d\"}", 0);
    reply_of(f->out[0], &w, &body); /* parse verifies the CRC-32C */
    assert_true(w.has_checksum);
    send_cmd(f, 2, 0,
             "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"$db\": \"d\"}", 0);
    reply_of(f->out[1], &w, &body);
    assert_false(w.has_checksum);
}

static void
test_conn_every_prefix_waits(void **state)
{
    struct fixture *f = *state;
    struct mt_buf m;
    size_t used;

    encode(&m, 1, 0, 0,
           "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"$db\": \"d\"}");
    for (size_t n = 0; n < m.len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, m.data, n);
        assert_int_equal(replay_conn_input(&f->c, copy, n, 0, &used, NULL), 0);
        assert_int_equal(used, 0);
        free(copy);
    }
    assert_int_equal(f->nout, 0);
    mt_buf_free(&m);
}

/* An OP_COMMAND (2010) message by hand: header, database, commandName,
 * commandArgs, metadata {}, no inputDocs. */
static void
encode_op_command(struct mt_buf *m, int32_t rid, const char *db,
                  const char *name, const char *js)
{
    static const uint8_t empty_doc[5] = {5, 0, 0, 0, 0};
    bson_t *b = json(js);
    uint8_t h[16];
    size_t len = 16 + strlen(db) + 1 + strlen(name) + 1 + b->len + 5;

    mt_buf_init(m, WIRE_MSG_LEN_MAX);
    wr_le32(h, (uint32_t)len);     /*  0 messageLength */
    wr_le32(h + 4, (uint32_t)rid); /*  4 requestID */
    wr_le32(h + 8, 0);             /*  8 responseTo */
    wr_le32(h + 12, 2010);         /* 12 opCode OP_COMMAND */
    assert_int_equal(mt_buf_append(m, h, 16), 0);
    assert_int_equal(mt_buf_append(m, db, strlen(db) + 1), 0);
    assert_int_equal(mt_buf_append(m, name, strlen(name) + 1), 0);
    assert_int_equal(mt_buf_append(m, bson_get_data(b), b->len), 0);
    assert_int_equal(mt_buf_append(m, empty_doc, 5), 0);
    assert_int_equal(m->len, len);
    bson_destroy(b);
}

/* A recorded OP_COMMAND exchange is indexed under the same key as the
 * equivalent OP_MSG; an OP_COMMAND request is answered with
 * OP_COMMANDREPLY (responseTo, commandReply, empty metadata), whether the
 * recorded reply was OP_COMMANDREPLY or OP_MSG. */
static void
test_conn_op_command_indexed_and_answered(void **state)
{
    struct fixture *f = *state;
    struct mt_buf q, p, again;
    struct wire_msg w;
    struct mt_err err = {0};
    bson_t body, *rb = json("{\"n\": 3, \"ok\": 1}");
    const uint8_t empty_doc[5] = {5, 0, 0, 0, 0};
    size_t used;
    uint8_t h[16];

    /* record: OP_COMMAND count on db "old" -> OP_COMMANDREPLY {n: 3} */
    encode_op_command(&q, 70, "old", "count",
                      "{\"count\": \"c\", \"query\": {}}");
    mt_buf_init(&p, WIRE_MSG_LEN_MAX);
    wr_le32(h, (uint32_t)(16 + rb->len + 5));
    wr_le32(h + 4, 570);
    wr_le32(h + 8, 70);
    wr_le32(h + 12, 2011);
    assert_int_equal(mt_buf_append(&p, h, 16), 0);
    assert_int_equal(mt_buf_append(&p, bson_get_data(rb), rb->len), 0);
    assert_int_equal(mt_buf_append(&p, empty_doc, 5), 0);
    assert_int_equal(index_add(&f->idx, q.data, q.len, p.data, p.len, 1, &err),
                     0);

    /* the same request again, new requestID: OP_COMMANDREPLY {n: 3} */
    encode_op_command(&again, 71, "old", "count",
                      "{\"count\": \"c\", \"query\": {}}");
    assert_int_equal(
        replay_conn_input(&f->c, again.data, again.len, 10, &used, &err), 0);
    assert_int_equal(used, again.len);
    assert_int_equal(f->nout, 1);
    reply_of(f->out[0], &w, &body);
    assert_int_equal(w.h.op_code, WIRE_OP_COMMANDREPLY);
    assert_int_equal(w.h.response_to, 71);
    assert_int_equal(i64_at(&body, "n"), 3);
    assert_int_equal(f->out[0]->len, 16 + rb->len + 5);
    assert_int_equal(f->w.st.matched, 1);

    /* the same command as OP_MSG ($db old) matches the same group */
    assert_int_equal(
        send_cmd(f, 72, 0,
                 "{\"count\": \"c\", \"query\": {}, \"$db\": \"old\"}", 20),
        1);
    reply_of(f->out[1], &w, &body);
    assert_int_equal(w.h.op_code, WIRE_OP_MSG);
    assert_int_equal(i64_at(&body, "n"), 3);

    /* an OP_COMMAND find matching a recorded OP_MSG exchange */
    mt_buf_free(&again);
    encode_op_command(&again, 73, "d", "find",
                      "{\"find\": \"c\", \"filter\": {\"_id\": 1}}");
    assert_int_equal(
        replay_conn_input(&f->c, again.data, again.len, 30, &used, &err), 0);
    assert_int_equal(f->nout, 3);
    reply_of(f->out[2], &w, &body);
    assert_int_equal(w.h.op_code, WIRE_OP_COMMANDREPLY);
    assert_int_equal(w.h.response_to, 73);
    assert_int_equal(i64_at(&body, "cursor.firstBatch.0._id"), 1);
    assert_int_equal(f->w.st.missed, 0);
    mt_buf_free(&q);
    mt_buf_free(&p);
    mt_buf_free(&again);
    bson_destroy(rb);
}

static void
test_conn_garbage_is_an_error(void **state)
{
    struct fixture *f = *state;
    static const uint8_t bad[] = {
        0x20, 0,    0, 0, /* messageLength 32 */
        1,    0,    0, 0, /* requestID */
        0,    0,    0, 0, /* responseTo */
        0xdd, 0x07, 0, 0, /* OP_MSG */
        0,    0,    0, 0, /* flagBits */
        0,                /* kind 0 */
        0x40, 0,    0, 0, /* BSON length 64 > what is left */
        0,    0,    0, 0, 0, 0, 0,
    };
    struct mt_err err = {0};
    size_t used;

    assert_true(replay_conn_input(&f->c, bad, sizeof(bad), 0, &used, &err) < 0);
    assert_int_equal(used, 0);
    assert_true(err.msg[0] != '\0');
    assert_int_equal(f->nout, 0);
    assert_int_equal(f->w.st.bad_input, 1);
}

/* Feeds js as OP_MSG wrapped in OP_COMPRESSED with compressor id. */
static void
send_compressed(struct fixture *f, int32_t rid, uint8_t id, const char *js)
{
    struct mt_buf m, z;
    size_t used;

    encode(&m, rid, 0, 0, js);
    mt_buf_init(&z, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_compressed(&z, m.data, m.len, id, NULL), 0);
    assert_int_equal(replay_conn_input(&f->c, z.data, z.len, 10, &used, NULL),
                     0);
    mt_buf_free(&m);
    mt_buf_free(&z);
}

/* The compressor of reply i (0: not OP_COMPRESSED) and its plain body. */
static uint8_t
unpack(struct fixture *f, size_t i, struct mt_buf *plain, bson_t *body)
{
    struct wire_msg w;
    size_t used;
    uint8_t id = 0;

    assert_int_equal(
        wire_msg_parse(f->out[i]->bytes, f->out[i]->len, &w, &used, NULL),
        MT_OK);
    mt_buf_init(plain, WIRE_MSG_LEN_MAX);
    if (w.h.op_code == WIRE_OP_COMPRESSED) {
        id = w.compressor_id;
        assert_int_equal(wire_decompress(&w, plain, NULL), 0);
    } else {
        assert_int_equal(mt_buf_append(plain, f->out[i]->bytes, f->out[i]->len),
                         0);
    }
    assert_int_equal(wire_msg_parse(plain->data, plain->len, &w, &used, NULL),
                     MT_OK);
    assert_true(bson_init_static(body, w.body, w.body_len));
    return id;
}

static void
test_conn_compression_negotiated(void **state)
{
    struct fixture *f = *state;
    static const char find[] =
        "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"$db\": \"d\"}";
    struct mt_buf plain;
    bson_t body;
    bson_iter_t it, el;
    unsigned mask;
    bool rec;

    /* the recorded server agreed to zstd: the client's list is cut to it */
    assert_int_equal(f->sh.hs.compressors, 1u << WIRE_COMPRESSOR_ZSTD);
    send_cmd(f, 1, 0,
             "{\"hello\": 1, \"compression\": [\"snappy\", \"zstd\", "
             "\"zlib\"], \"$db\": \"admin\"}",
             10);
    reply_of(f->out[0], &(struct wire_msg){0}, &body);
    assert_true(bson_iter_init_find(&it, &body, "compression"));
    assert_true(bson_iter_recurse(&it, &el));
    assert_true(bson_iter_next(&el));
    assert_string_equal(bson_iter_utf8(&el, NULL), "zstd");
    assert_false(bson_iter_next(&el));
    /* a zstd request gets a zstd reply, with the recorded body */
    send_compressed(f, 2, WIRE_COMPRESSOR_ZSTD, find);
    assert_int_equal(unpack(f, 1, &plain, &body), WIRE_COMPRESSOR_ZSTD);
    assert_int_equal(i64_at(&body, "cursor.firstBatch.0._id"), 1);
    mt_buf_free(&plain);
    /* a compressor not agreed to is decompressed and answered plain */
    send_compressed(f, 3, WIRE_COMPRESSOR_ZLIB, find);
    assert_int_equal(unpack(f, 2, &plain, &body), 0);
    mt_buf_free(&plain);
    assert_int_equal(f->w.st.compressed, 1);
    /* with none agreed, hello has no compression field */
    f->sh.hs.compressors = 0;
    send_cmd(f, 4, 0,
             "{\"hello\": 1, \"compression\": [\"zstd\"], \"$db\": "
             "\"admin\"}",
             10);
    reply_of(f->out[3], &(struct wire_msg){0}, &body);
    assert_false(has(&body, "compression"));
    /* --compressors values */
    assert_int_equal(handshake_parse_compressors("zlib,snappy", &mask, &rec),
                     0);
    assert_int_equal(mask, (1u << WIRE_COMPRESSOR_ZLIB) |
                               (1u << WIRE_COMPRESSOR_SNAPPY));
    assert_false(rec);
    assert_int_equal(handshake_parse_compressors("recorded", &mask, &rec), 0);
    assert_true(rec);
    assert_int_equal(handshake_parse_compressors("none", &mask, &rec), 0);
    assert_int_equal(mask, 0);
    assert_int_equal(handshake_parse_compressors("lz4", &mask, &rec),
                     MT_EUSAGE);
    assert_int_equal(handshake_parse_compressors("zlib,", &mask, &rec),
                     MT_EUSAGE);
    assert_int_equal(handshake_parse_compressors("", &mask, &rec), MT_EUSAGE);
}

static void
test_conn_replset_hello_names_replay(void **state)
{
    static const char *const recs[] = {
        "{\"ismaster\": true, \"setName\": \"rs0\", \"hosts\": [\"a:1\", "
        "\"b:1\"], \"arbiters\": [\"c:1\"], \"me\": \"a:1\", \"primary\": "
        "\"a:1\", \"ok\": 1}",
        "{\"ismaster\": false, \"secondary\": true, \"setName\": \"rs0\", "
        "\"hosts\": [\"a:1\", \"b:1\"], \"me\": \"b:1\", \"primary\": "
        "\"a:1\", \"ok\": 1}",
    };
    bson_t *q = json("{\"hello\": 1}");
    struct match_req req;
    struct handshake hs;
    bson_iter_t it;
    char *js;

    (void)state;
    memset(&req, 0, sizeof(req));
    snprintf(req.name, sizeof(req.name), "hello");
    req.cmd = bson_get_data(q);
    req.cmd_len = q->len;
    for (int i = 0; i < 2; i++) {
        bson_t *rec = json(recs[i]), out = BSON_INITIALIZER;
        handshake_init(&hs, bson_get_data(rec), rec->len);
        assert_int_equal(
            handshake_hello_reply(&hs, &req, 1, 0, "10.0.0.1:27017", &out), 0);
        assert_true(bson_iter_init_find(&it, &out, "setName"));
        js = bson_as_relaxed_extended_json(&out, NULL);
        assert_non_null(strstr(js, "\"hosts\" : [ \"10.0.0.1:27017\" ]"));
        assert_non_null(strstr(js, "\"me\" : \"10.0.0.1:27017\""));
        assert_null(strstr(js, "a:1"));
        assert_null(strstr(js, "arbiters"));
        /* the primary is replay only when the recorded member was it */
        assert_true((strstr(js, "\"primary\" : \"10.0.0.1:27017\"") != NULL) ==
                    (i == 0));
        bson_free(js);
        bson_destroy(&out);
        /* without the address, the recorded names stay */
        bson_init(&out);
        assert_int_equal(handshake_hello_reply(&hs, &req, 1, 0, NULL, &out), 0);
        js = bson_as_relaxed_extended_json(&out, NULL);
        assert_non_null(strstr(js, "a:1"));
        bson_free(js);
        bson_destroy(&out);
        bson_destroy(rec);
    }
    bson_destroy(q);
}

/* A recorded hello whose array has keys other than "0", "1", ... (a damaged
 * trace): the reply carries it renumbered, and libbson prints nothing (it
 * warned on every hello reply before). */
static void
test_conn_hello_damaged_array(void **state)
{
    bson_t *rec = bson_new(), arr, out = BSON_INITIALIZER;
    bson_t *q = json("{\"hello\": 1}");
    struct match_req req;
    struct handshake hs;
    bson_iter_t it, el;
    FILE *tmp = tmpfile();
    int saved = dup(2);

    (void)state;
    BSON_APPEND_BOOL(rec, "ismaster", true);
    bson_append_array_begin(rec, "hosts", -1, &arr);
    BSON_APPEND_UTF8(&arr, "x", "a:1");
    bson_append_array_end(rec, &arr);
    BSON_APPEND_DOUBLE(rec, "ok", 1);
    memset(&req, 0, sizeof(req));
    snprintf(req.name, sizeof(req.name), "hello");
    req.cmd = bson_get_data(q);
    req.cmd_len = q->len;
    handshake_init(&hs, bson_get_data(rec), rec->len);
    assert_non_null(tmp);
    assert_true(saved >= 0 && dup2(fileno(tmp), 2) == 2);
    assert_int_equal(handshake_hello_reply(&hs, &req, 1, 0, NULL, &out), 0);
    fflush(stderr);
    assert_true(dup2(saved, 2) == 2);
    close(saved);
    assert_int_equal(fseek(tmp, 0, SEEK_END), 0);
    assert_int_equal(ftell(tmp), 0);
    fclose(tmp);
    assert_true(bson_iter_init_find(&it, &out, "hosts"));
    assert_true(BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &el));
    assert_true(bson_iter_next(&el));
    assert_string_equal(bson_iter_key(&el), "0");
    assert_string_equal(bson_iter_utf8(&el, NULL), "a:1");
    bson_destroy(&out);
    bson_destroy(q);
    bson_destroy(rec);
}

/* Records a legacy find: OP_QUERY on ns with numberToReturn ntr, and its
 * OP_REPLY of the JSON documents docs (a JSON array). */
static void
record_legacy_find(struct index *idx, int32_t rid, const char *ns,
                   int32_t flags, int32_t ntr, const char *query,
                   const char *docs)
{
    bson_t *q = json(query), *arr = json(docs);
    const bson_t *d[8];
    bson_t el[8];
    struct mt_buf mq, mp;
    struct mt_err err;
    bson_iter_t it;
    size_t n = 0;

    mt_buf_init(&mq, WIRE_MSG_LEN_MAX);
    mt_buf_init(&mp, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_query(&mq, rid, flags, ns, 0, ntr, q), 0);
    assert_true(bson_iter_init(&it, arr));
    while (bson_iter_next(&it) && n < 8) {
        uint32_t l;
        const uint8_t *p;
        bson_iter_document(&it, &l, &p);
        assert_true(bson_init_static(&el[n], p, l));
        d[n] = &el[n];
        n++;
    }
    assert_int_equal(wire_encode_reply(&mp, 500 + rid, rid, 8, 0, 0, d, n), 0);
    assert_int_equal(
        index_add(idx, mq.data, mq.len, mp.data, mp.len, 250000, &err), 0);
    mt_buf_free(&mq);
    mt_buf_free(&mp);
    bson_destroy(q);
    bson_destroy(arr);
}

/* Sends a legacy find; returns its one reply, parsed. */
static void
legacy_find(struct fixture *f, int32_t rid, int32_t flags, int32_t ntr,
            const char *query, struct wire_msg *w)
{
    bson_t *q = json(query);
    struct mt_buf m;
    size_t used, before = f->nout;

    mt_buf_init(&m, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_query(&m, rid, flags, "d.people", 0, ntr, q),
                     0);
    assert_int_equal(replay_conn_input(&f->c, m.data, m.len, 1000, &used, NULL),
                     0);
    assert_int_equal(f->nout, before + 1);
    assert_int_equal(wire_msg_parse(f->out[before]->bytes, f->out[before]->len,
                                    w, &used, NULL),
                     MT_OK);
    assert_int_equal(w->h.op_code, WIRE_OP_REPLY);
    assert_int_equal(w->h.response_to, rid);
    mt_buf_free(&m);
    bson_destroy(q);
}

/* A legacy driver's find (OP_QUERY on a collection) is answered from the
 * recording: the recorded OP_REPLY, every document, as recorded; a
 * numberToReturn of 1 gets the answer recorded for -1 (the server reads
 * 1 as -1); SlaveOk and a wrapped $readPreference are ignored; an
 * unrecorded query fails as a legacy server fails one (QueryFailure,
 * $err), never as a document; an OP_MSG find of the same filter does not
 * share the legacy key. */
static void
test_conn_legacy_find_from_recording(void **state)
{
    struct fixture *f = *state;
    struct wire_msg w;
    bson_t body;
    bson_iter_t it;

    record_legacy_find(&f->idx, 21, "d.people", 0, -1, "{\"name\": \"a\"}",
                       "[{\"_id\": 1, \"name\": \"a\"}]");
    record_legacy_find(&f->idx, 22, "d.people", 4, -2,
                       "{\"$query\": {}, \"$orderby\": {\"_id\": 1}, "
                       "\"$readPreference\": {\"mode\": "
                       "\"secondaryPreferred\"}}",
                       "[{\"_id\": 1}, {\"_id\": 2}]");
    record_legacy_find(&f->idx, 23, "d.empty", 0, -1, "{}", "[]");

    legacy_find(f, 61, 0, -1, "{\"name\": \"a\"}", &w);
    assert_int_equal(w.response_flags, 8);
    assert_int_equal(w.cursor_id, 0);
    assert_int_equal(w.number_returned, 1);
    assert_true(bson_init_static(&body, w.body, w.body_len));
    assert_true(bson_iter_init_find(&it, &body, "name"));
    assert_string_equal(bson_iter_utf8(&it, NULL), "a");

    legacy_find(f, 62, 0, 1, "{\"name\": \"a\"}", &w);
    assert_int_equal(w.number_returned, 1);

    legacy_find(f, 63, 0, -2, "{\"$query\": {}, \"$orderby\": {\"_id\": 1}}",
                &w);
    assert_int_equal(w.response_flags, 8);
    assert_int_equal(w.number_returned, 2);

    legacy_find(f, 64, 0, -1, "{\"name\": \"b\"}", &w);
    assert_int_equal(w.response_flags & 2, 2); /* QueryFailure */
    assert_int_equal(w.number_returned, 1);
    assert_true(bson_init_static(&body, w.body, w.body_len));
    assert_true(bson_iter_init_find(&it, &body, "$err"));
    assert_non_null(strstr(bson_iter_utf8(&it, NULL), "no recorded reply"));
    assert_false(has(&body, "ok"));

    /* no document recorded: none sent */
    {
        bson_t *q = json("{}");
        struct mt_buf m;
        size_t used, before = f->nout;
        mt_buf_init(&m, WIRE_MSG_LEN_MAX);
        assert_int_equal(wire_encode_query(&m, 65, 0, "d.empty", 0, -1, q), 0);
        assert_int_equal(
            replay_conn_input(&f->c, m.data, m.len, 1000, &used, NULL), 0);
        assert_int_equal(f->nout, before + 1);
        assert_int_equal(wire_msg_parse(f->out[before]->bytes,
                                        f->out[before]->len, &w, &used, NULL),
                         MT_OK);
        assert_int_equal(w.response_flags, 8);
        assert_int_equal(w.number_returned, 0);
        mt_buf_free(&m);
        bson_destroy(q);
    }

    /* the OP_MSG find of the recorded legacy filter: not the legacy key */
    assert_int_equal(send_cmd(f, 66, 0,
                              "{\"find\": \"people\", \"filter\": {\"name\": "
                              "\"a\"}, \"$db\": \"d\"}",
                              1000),
                     1);
    reply_of(f->out[f->nout - 1], &w, &body);
    assert_int_equal(w.h.op_code, WIRE_OP_MSG);
    assert_int_equal(i64_at(&body, "code"), 47);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_conn_legacy_ismaster, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_conn_legacy_find_from_recording,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_matched_reply_and_header,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_conn_keycache_hits_only_equal_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_cursor_served_per_client,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_cursor_shapes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_conn_miss_error_names_keys, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_conn_unacknowledged_gets_no_reply,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_awaitable_and_exhaust_hello,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_serial_mode_queues, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_conn_checksum_recomputed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_conn_every_prefix_waits, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_conn_op_command_indexed_and_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_garbage_is_an_error, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_conn_compression_negotiated, setup,
                                        teardown),
        cmocka_unit_test(test_conn_replset_hello_names_replay),
        cmocka_unit_test(test_conn_hello_damaged_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
