/*
 * test_wire.c -- core/wire.c: framing, parsing and command lookup.
 * Encoders and OP_COMPRESSED are in test_wire_enc.c, CRC-32C in
 * test_wire_crc.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/err.h"
#include "core/wire.h"

/* ---- fixtures ---- */

/* clang-format off */

/* OP_MSG {find: "c", $db: "d"}, 49 bytes. */
static const uint8_t msg_find[] = {
    0x31, 0x00, 0x00, 0x00,       /*  0 messageLength 49 */
    0x01, 0x00, 0x00, 0x00,       /*  4 requestID 1 */
    0x00, 0x00, 0x00, 0x00,       /*  8 responseTo 0 */
    0xdd, 0x07, 0x00, 0x00,       /* 12 opCode 2013 OP_MSG */
    0x00, 0x00, 0x00, 0x00,       /* 16 flagBits 0 */
    0x00,                         /* 20 section kind 0 */
    0x1c, 0x00, 0x00, 0x00,       /* 21 body length 28 */
    0x02, 'f', 'i', 'n', 'd', 0,  /* 25 utf8 "find" */
    0x02, 0x00, 0x00, 0x00,       /* 31   string length 2 */
    'c', 0,                       /* 35   "c" */
    0x02, '$', 'd', 'b', 0,       /* 37 utf8 "$db" */
    0x02, 0x00, 0x00, 0x00,       /* 42   string length 2 */
    'd', 0,                       /* 46   "d" */
    0x00,                         /* 48 end of body */
};

/* OP_MSG checksumPresent, body {insert: "c", $db: "d"}, one kind-1
 * "documents" section with {_id: 1}.  The CRC-32C at 80 was computed
 * independently with python3-crcmod ('crc-32c'). 84 bytes. */
static const uint8_t msg_insert_crc[] = {
    0x54, 0x00, 0x00, 0x00,       /*  0 messageLength 84 */
    0x07, 0x00, 0x00, 0x00,       /*  4 requestID 7 */
    0x00, 0x00, 0x00, 0x00,       /*  8 responseTo 0 */
    0xdd, 0x07, 0x00, 0x00,       /* 12 opCode 2013 OP_MSG */
    0x01, 0x00, 0x00, 0x00,       /* 16 flagBits checksumPresent */
    0x00,                         /* 20 section kind 0 */
    0x1e, 0x00, 0x00, 0x00,       /* 21 body length 30 */
    0x02, 'i', 'n', 's', 'e', 'r', 't', 0, /* 25 utf8 "insert" */
    0x02, 0x00, 0x00, 0x00,       /* 33   string length 2 */
    'c', 0,                       /* 37   "c" */
    0x02, '$', 'd', 'b', 0,       /* 39 utf8 "$db" */
    0x02, 0x00, 0x00, 0x00,       /* 44   string length 2 */
    'd', 0,                       /* 48   "d" */
    0x00,                         /* 50 end of body */
    0x01,                         /* 51 section kind 1 */
    0x1c, 0x00, 0x00, 0x00,       /* 52 size 28 */
    'd', 'o', 'c', 'u', 'm', 'e', 'n', 't', 's', 0, /* 56 identifier */
    0x0e, 0x00, 0x00, 0x00,       /* 66 document length 14 */
    0x10, '_', 'i', 'd', 0,       /* 70 int32 "_id" */
    0x01, 0x00, 0x00, 0x00,       /* 75   1 */
    0x00,                         /* 79 end of document */
    0x94, 0x8e, 0x1d, 0x1f,       /* 80 CRC-32C 0x1f1d8e94 */
};

/* OP_QUERY admin.$cmd {isMaster: 1}, as pymongo 3.11 opens, 58 bytes. */
static const uint8_t query_ismaster[] = {
    0x3a, 0x00, 0x00, 0x00,       /*  0 messageLength 58 */
    0x02, 0x00, 0x00, 0x00,       /*  4 requestID 2 */
    0x00, 0x00, 0x00, 0x00,       /*  8 responseTo 0 */
    0xd4, 0x07, 0x00, 0x00,       /* 12 opCode 2004 OP_QUERY */
    0x04, 0x00, 0x00, 0x00,       /* 16 flags SlaveOk */
    'a', 'd', 'm', 'i', 'n', '.', '$', 'c', 'm', 'd', 0, /* 20 ns */
    0x00, 0x00, 0x00, 0x00,       /* 31 numberToSkip 0 */
    0xff, 0xff, 0xff, 0xff,       /* 35 numberToReturn -1 */
    0x13, 0x00, 0x00, 0x00,       /* 39 query length 19 */
    0x10, 'i', 's', 'M', 'a', 's', 't', 'e', 'r', 0, /* 43 int32 key */
    0x01, 0x00, 0x00, 0x00,       /* 53   1 */
    0x00,                         /* 57 end of query */
};

/* OP_REPLY to request 2 with one document {ok: 1.0}, 53 bytes. */
static const uint8_t reply_ok[] = {
    0x35, 0x00, 0x00, 0x00,       /*  0 messageLength 53 */
    0x09, 0x00, 0x00, 0x00,       /*  4 requestID 9 */
    0x02, 0x00, 0x00, 0x00,       /*  8 responseTo 2 */
    0x01, 0x00, 0x00, 0x00,       /* 12 opCode 1 OP_REPLY */
    0x08, 0x00, 0x00, 0x00,       /* 16 responseFlags AwaitCapable */
    0x00, 0x00, 0x00, 0x00,       /* 20 cursorID 0 (low) */
    0x00, 0x00, 0x00, 0x00,       /* 24 cursorID 0 (high) */
    0x00, 0x00, 0x00, 0x00,       /* 28 startingFrom 0 */
    0x01, 0x00, 0x00, 0x00,       /* 32 numberReturned 1 */
    0x11, 0x00, 0x00, 0x00,       /* 36 document length 17 */
    0x01, 'o', 'k', 0,            /* 40 double "ok" */
    0, 0, 0, 0, 0, 0, 0xf0, 0x3f, /* 44   1.0 */
    0x00,                         /* 52 end of document */
};

/* Captured bytes (mongo-tools compressed.pcap, mongo shell 3.3 to mongod):
 * OP_COMPRESSED (snappy) of OP_COMMAND admin whatsmyuri. 16 bytes per line.
 * 0 header (62 bytes, requestID 1, opCode 2012); 16 originalOpcode 2010;
 * 20 uncompressedSize 43; 24 compressorId 1 (snappy); 25 payload. */
static const uint8_t real_snappy_whatsmyuri[] = {
    0x3e, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, /*  0 */
    0x00, 0x00, 0x00, 0x00, 0xdc, 0x07, 0x00, 0x00, /*  8 */
    0xda, 0x07, 0x00, 0x00, 0x2b, 0x00, 0x00, 0x00, /* 16 */
    0x01, 0x2b, 0x54, 0x61, 0x64, 0x6d, 0x69, 0x6e, /* 24 */
    0x00, 0x77, 0x68, 0x61, 0x74, 0x73, 0x6d, 0x79, /* 32 */
    0x75, 0x72, 0x69, 0x00, 0x15, 0x00, 0x00, 0x00, /* 40 */
    0x10, 0x1d, 0x10, 0x24, 0x01, 0x00, 0x00, 0x00, /* 48 */
    0x00, 0x05, 0x00, 0x00, 0x00, 0x00,             /* 56 */
};

/* Captured bytes (DeepTrace mongo-msg.pcap): a driver's OP_MSG find on
 * sky-test.query with lsid and $clusterTime. 0 header (230 bytes,
 * requestID 40); 16 flagBits 0; 20 kind 0; 21 body (209 bytes). */
static const uint8_t real_msg_find[] = {
    0xe6, 0x00, 0x00, 0x00, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xdd, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd1, 0x00, 0x00,
    0x00, 0x02, 0x66, 0x69, 0x6e, 0x64, 0x00, 0x06, 0x00, 0x00, 0x00, 0x71,
    0x75, 0x65, 0x72, 0x79, 0x00, 0x03, 0x66, 0x69, 0x6c, 0x74, 0x65, 0x72,
    0x00, 0x18, 0x00, 0x00, 0x00, 0x02, 0x6e, 0x61, 0x6d, 0x65, 0x00, 0x09,
    0x00, 0x00, 0x00, 0x64, 0x72, 0x70, 0x61, 0x6e, 0x64, 0x61, 0x35, 0x00,
    0x00, 0x03, 0x6c, 0x73, 0x69, 0x64, 0x00, 0x1e, 0x00, 0x00, 0x00, 0x05,
    0x69, 0x64, 0x00, 0x10, 0x00, 0x00, 0x00, 0x04, 0x66, 0x77, 0x32, 0xcf,
    0x46, 0xce, 0x41, 0xc8, 0xbc, 0x3d, 0x4a, 0x0c, 0x0e, 0xb8, 0xe9, 0xd4,
    0x00, 0x03, 0x24, 0x63, 0x6c, 0x75, 0x73, 0x74, 0x65, 0x72, 0x54, 0x69,
    0x6d, 0x65, 0x00, 0x58, 0x00, 0x00, 0x00, 0x11, 0x63, 0x6c, 0x75, 0x73,
    0x74, 0x65, 0x72, 0x54, 0x69, 0x6d, 0x65, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x64, 0x65, 0x2c, 0x67, 0x03, 0x73, 0x69, 0x67, 0x6e, 0x61, 0x74, 0x75,
    0x72, 0x65, 0x00, 0x33, 0x00, 0x00, 0x00, 0x05, 0x68, 0x61, 0x73, 0x68,
    0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x76, 0x8e, 0x8a, 0x97, 0x39, 0x81,
    0xe0, 0x97, 0x87, 0xc5, 0x9a, 0x12, 0x72, 0xc4, 0xc1, 0x89, 0xa5, 0x0f,
    0x2b, 0xe7, 0x12, 0x6b, 0x65, 0x79, 0x49, 0x64, 0x00, 0x02, 0x00, 0x00,
    0x00, 0xaa, 0x35, 0x5d, 0x66, 0x00, 0x00, 0x02, 0x24, 0x64, 0x62, 0x00,
    0x09, 0x00, 0x00, 0x00, 0x73, 0x6b, 0x79, 0x2d, 0x74, 0x65, 0x73, 0x74,
    0x00, 0x00,
};

/* clang-format on */

struct fixture {
    const uint8_t *p;
    size_t n;
};

static const struct fixture valid[] = {
    {msg_find, sizeof(msg_find)},
    {msg_insert_crc, sizeof(msg_insert_crc)},
    {query_ismaster, sizeof(query_ismaster)},
    {reply_ok, sizeof(reply_ok)},
    {real_snappy_whatsmyuri, sizeof(real_snappy_whatsmyuri)},
    {real_msg_find, sizeof(real_msg_find)},
};

/* ---- helpers ---- */

static void
set_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Parses buf and expects failure with code, offset and a message part. */
static void
expect_err(const uint8_t *buf, size_t n, int code, size_t offset,
           const char *part)
{
    struct wire_msg m;
    struct mt_err err = {0};
    size_t used = 12345;
    int rc = wire_msg_parse(buf, n, &m, &used, &err);

    if (rc != code || err.offset != offset || strstr(err.msg, part) == NULL)
        print_error("rc %d (want %d) offset %zu (want %zu) msg \"%s\" "
                    "(want \"%s\")\n",
                    rc, code, err.offset, offset, err.msg, part);
    assert_int_equal(rc, code);
    assert_int_equal(err.code, code);
    assert_int_equal(err.offset, offset);
    assert_non_null(strstr(err.msg, part));
}

/* ---- valid ---- */

static void
test_wire_frame_two_messages(void **state)
{
    uint8_t two[2 * sizeof(msg_find)];
    size_t len;

    memcpy(two, msg_find, sizeof(msg_find));
    memcpy(two + sizeof(msg_find), msg_find, sizeof(msg_find));
    assert_int_equal(wire_frame(two, sizeof(two), 0, &len, NULL), MT_OK);
    assert_int_equal(len, 49);
    assert_int_equal(wire_frame(two + len, sizeof(two) - len, 0, &len, NULL),
                     MT_OK);
    assert_int_equal(len, 49);
    /* A smaller len_max refuses the same message. */
    assert_int_equal(wire_frame(two, sizeof(two), 48, &len, NULL), MT_ETOOBIG);
}

static void
test_wire_msg_parse_op_msg_find(void **state)
{
    struct wire_msg m;
    struct wire_cmd cmd;
    size_t used;

    assert_int_equal(
        wire_msg_parse(msg_find, sizeof(msg_find), &m, &used, NULL), MT_OK);
    assert_int_equal(used, 49);
    assert_int_equal(m.h.message_length, 49);
    assert_int_equal(m.h.request_id, 1);
    assert_int_equal(m.h.op_code, WIRE_OP_MSG);
    assert_ptr_equal(m.body, msg_find + 21);
    assert_int_equal(m.body_len, 28);
    assert_int_equal(m.nseq, 0);
    assert_false(m.has_checksum);
    assert_int_equal(wire_msg_command(&m, &cmd), 0);
    assert_string_equal(cmd.name, "find");
    assert_string_equal(cmd.db, "d");
    assert_string_equal(cmd.coll, "c");
    assert_false(cmd.is_hello);
}

static void
test_wire_msg_parse_checksum_and_sequence(void **state)
{
    struct wire_msg m;
    struct wire_cmd cmd;
    size_t used;

    assert_int_equal(
        wire_msg_parse(msg_insert_crc, sizeof(msg_insert_crc), &m, &used, NULL),
        MT_OK);
    assert_int_equal(used, 84);
    assert_true(m.has_checksum);
    assert_int_equal(m.checksum, 0x1f1d8e94u);
    assert_int_equal(m.flags, WIRE_MSG_CHECKSUM_PRESENT);
    assert_int_equal(m.body_len, 30);
    assert_int_equal(m.nseq, 1);
    assert_string_equal(m.seq[0].identifier, "documents");
    assert_ptr_equal(m.seq[0].docs, msg_insert_crc + 66);
    assert_int_equal(m.seq[0].docs_len, 14);
    assert_int_equal(wire_msg_command(&m, &cmd), 0);
    assert_string_equal(cmd.name, "insert");
    assert_string_equal(cmd.coll, "c");
    assert_string_equal(cmd.db, "d");
}

static void
test_wire_msg_parse_flags_exhaust_more_to_come(void **state)
{
    uint8_t b[sizeof(msg_find)];
    struct wire_msg m;
    size_t used;

    memcpy(b, msg_find, sizeof(b));
    set_le32(b + 16, WIRE_MSG_MORE_TO_COME | WIRE_MSG_EXHAUST_ALLOWED);
    assert_int_equal(wire_msg_parse(b, sizeof(b), &m, &used, NULL), MT_OK);
    assert_int_equal(m.flags, WIRE_MSG_MORE_TO_COME | WIRE_MSG_EXHAUST_ALLOWED);
    set_le32(b + 16, 1u << 20); /* optional bits 16-31 are allowed */
    assert_int_equal(wire_msg_parse(b, sizeof(b), &m, &used, NULL), MT_OK);
}

static void
test_wire_msg_parse_op_query_ismaster(void **state)
{
    struct wire_msg m;
    struct wire_cmd cmd;
    size_t used;

    assert_int_equal(
        wire_msg_parse(query_ismaster, sizeof(query_ismaster), &m, &used, NULL),
        MT_OK);
    assert_int_equal(m.query_flags, 4);
    assert_string_equal(m.full_collection, "admin.$cmd");
    assert_int_equal(m.number_to_skip, 0);
    assert_int_equal(m.number_to_return, -1);
    assert_ptr_equal(m.body, query_ismaster + 39);
    assert_int_equal(wire_msg_command(&m, &cmd), 0);
    assert_string_equal(cmd.name, "isMaster");
    assert_string_equal(cmd.db, "admin");
    assert_true(cmd.is_hello);
}

static void
test_wire_msg_parse_op_reply(void **state)
{
    struct wire_msg m;
    struct wire_cmd cmd;
    size_t used;

    assert_int_equal(
        wire_msg_parse(reply_ok, sizeof(reply_ok), &m, &used, NULL), MT_OK);
    assert_int_equal(m.h.response_to, 2);
    assert_int_equal(m.response_flags, 8);
    assert_int_equal(m.cursor_id, 0);
    assert_int_equal(m.number_returned, 1);
    assert_ptr_equal(m.body, reply_ok + 36);
    assert_int_equal(m.body_len, 17);
    assert_int_equal(m.docs_len, 17);
    assert_int_equal(wire_msg_command(&m, &cmd), 0);
    assert_string_equal(cmd.name, ""); /* a reply names no command */
}

static void
test_wire_msg_parse_real_snappy_op_command(void **state)
{
    struct wire_msg m, inner;
    struct wire_cmd cmd;
    struct mt_buf out;
    struct mt_err err;
    size_t used;

    assert_int_equal(wire_msg_parse(real_snappy_whatsmyuri,
                                    sizeof(real_snappy_whatsmyuri), &m, &used,
                                    &err),
                     MT_OK);
    assert_int_equal(m.original_opcode, WIRE_OP_COMMAND);
    assert_int_equal(m.uncompressed_size, 43);
    assert_int_equal(m.compressor_id, WIRE_COMPRESSOR_SNAPPY);
    assert_int_equal(m.compressed_len, 62 - 25);
    assert_int_equal(wire_msg_command(&m, &cmd), MT_EUNSUPPORTED);
    mt_buf_init(&out, 4096);
    assert_int_equal(wire_decompress(&m, &out, &err), 0);
    assert_int_equal(out.len, 16 + 43);
    assert_int_equal(wire_msg_parse(out.data, out.len, &inner, &used, &err),
                     MT_OK);
    assert_int_equal(inner.h.op_code, WIRE_OP_COMMAND);
    assert_int_equal(inner.h.request_id, 1);
    assert_string_equal(inner.command_db, "admin");
    assert_string_equal(inner.command_name, "whatsmyuri");
    assert_int_equal(wire_msg_command(&inner, &cmd), 0);
    assert_string_equal(cmd.name, "whatsmyuri");
    assert_string_equal(cmd.db, "admin");
    mt_buf_free(&out);
}

static void
test_wire_msg_parse_real_driver_find(void **state)
{
    struct wire_msg m;
    struct wire_cmd cmd;
    size_t used;

    assert_int_equal(
        wire_msg_parse(real_msg_find, sizeof(real_msg_find), &m, &used, NULL),
        MT_OK);
    assert_int_equal(wire_msg_command(&m, &cmd), 0);
    assert_string_equal(cmd.name, "find");
    assert_string_equal(cmd.coll, "query");
    assert_string_equal(cmd.db, "sky-test");
}

/* Builds an OP_MSG whose body is `body` into out (cap bytes). */
static size_t
wrap_body(uint8_t *out, size_t cap, const bson_t *body)
{
    size_t n = 21 + body->len;

    assert_true(n <= cap);
    memset(out, 0, 21);
    set_le32(out, (uint32_t)n);
    set_le32(out + 12, WIRE_OP_MSG);
    memcpy(out + 21, bson_get_data(body), body->len);
    return n;
}

/* {$db: "x", a: {a: {a: ...}}} with `depth` documents including the top. */
static bson_t *
nested(int depth)
{
    bson_t *docs = bson_malloc0(sizeof(bson_t) * (size_t)depth);
    bson_t *top;

    bson_init(&docs[0]);
    BSON_APPEND_UTF8(&docs[0], "ping", "x");
    for (int i = 1; i < depth; i++)
        bson_append_document_begin(&docs[i - 1], "a", 1, &docs[i]);
    for (int i = depth - 1; i > 0; i--)
        bson_append_document_end(&docs[i - 1], &docs[i]);
    top = bson_copy(&docs[0]);
    bson_destroy(&docs[0]);
    bson_free(docs);
    return top;
}

static void
test_wire_msg_parse_depth_100_accepted(void **state)
{
    static uint8_t buf[4096];
    bson_t *b = nested(WIRE_BSON_DEPTH_MAX);
    struct wire_msg m;
    struct wire_cmd cmd;
    size_t n = wrap_body(buf, sizeof(buf), b), used;

    assert_int_equal(wire_msg_parse(buf, n, &m, &used, NULL), MT_OK);
    assert_int_equal(wire_msg_command(&m, &cmd), 0);
    assert_string_equal(cmd.name, "ping");
    bson_destroy(b);
}

static void
test_wire_msg_parse_legacy_and_getmore(void **state)
{
    static const uint8_t insert[] = {
        0x1c, 0x00, 0x00, 0x00, /*  0 messageLength 28 */
        0x01, 0x00, 0x00, 0x00, /*  4 requestID */
        0x00, 0x00, 0x00, 0x00, /*  8 responseTo */
        0xd2, 0x07, 0x00, 0x00, /* 12 opCode 2002 OP_INSERT */
        0x00, 0x00, 0x00, 0x00, /* 16 flags */
        'd',  'b',  '.',  'c',  'o',
        'l',  'l',  0, /* 20 ns (documents omitted:
                          not deep-parsed) */
    };
    bson_t *gm = BCON_NEW("getMore", BCON_INT64(42), "collection", "many",
                          "$db", "benchmark_db");
    uint8_t buf[256];
    struct wire_msg m;
    struct wire_cmd cmd;
    size_t used, n;

    assert_int_equal(wire_msg_parse(insert, sizeof(insert), &m, &used, NULL),
                     MT_OK);
    assert_string_equal(m.full_collection, "db.coll");
    assert_int_equal(wire_msg_command(&m, &cmd), 0);
    assert_string_equal(cmd.name, "insert");
    assert_string_equal(cmd.db, "db");
    assert_string_equal(cmd.coll, "coll");

    n = wrap_body(buf, sizeof(buf), gm);
    assert_int_equal(wire_msg_parse(buf, n, &m, &used, NULL), MT_OK);
    assert_int_equal(wire_msg_command(&m, &cmd), 0);
    assert_string_equal(cmd.name, "getMore");
    assert_string_equal(cmd.coll, "many");
    assert_string_equal(cmd.db, "benchmark_db");
    bson_destroy(gm);
}

/* Every prefix of every valid message is MT_PARTIAL, with the total. */
static void
test_wire_msg_parse_every_prefix_partial(void **state)
{
    for (size_t f = 0; f < sizeof(valid) / sizeof(valid[0]); f++) {
        for (size_t n = 0; n < valid[f].n; n++) {
            uint8_t *copy = test_malloc(n ? n : 1); /* exact size for ASan */
            struct wire_msg m;
            size_t used = 0, framed = 0;

            memcpy(copy, valid[f].p, n);
            assert_int_equal(wire_msg_parse(copy, n, &m, &used, NULL),
                             MT_PARTIAL);
            assert_int_equal(wire_frame(copy, n, 0, &framed, NULL), MT_PARTIAL);
            assert_int_equal(used, n < 16 ? 16 : valid[f].n);
            assert_int_equal(framed, used);
            test_free(copy);
        }
    }
}

/* Each message, and each of its prefixes, ends exactly at a PROT_NONE
 * page: any read past the end faults. */
static void
test_wire_msg_parse_guard_page(void **state)
{
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *map = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
    for (size_t f = 0; f < sizeof(valid) / sizeof(valid[0]); f++) {
        for (size_t n = 0; n <= valid[f].n; n++) {
            uint8_t *at = map + pg - n;
            struct wire_msg m;
            struct wire_cmd cmd;
            size_t used;
            int rc;

            memcpy(at, valid[f].p, n);
            rc = wire_msg_parse(at, n, &m, &used, NULL);
            assert_int_equal(rc, n == valid[f].n ? MT_OK : MT_PARTIAL);
            if (rc == MT_OK && m.h.op_code != WIRE_OP_COMPRESSED)
                assert_int_equal(wire_msg_command(&m, &cmd), 0);
            if (rc == MT_OK && m.h.op_code == WIRE_OP_COMPRESSED) {
                struct mt_buf out; /* the payload ends at the guard too */
                mt_buf_init(&out, 4096);
                assert_int_equal(wire_decompress(&m, &out, NULL), 0);
                mt_buf_free(&out);
            }
        }
    }
    munmap(map, (size_t)pg * 2);
}

/* ---- invalid ---- */

static void
test_wire_frame_bad_lengths(void **state)
{
    uint8_t b[sizeof(msg_find)];
    size_t len;
    struct mt_err err;

    memcpy(b, msg_find, sizeof(b));
    set_le32(b, (uint32_t)-5);
    expect_err(b, sizeof(b), MT_EPROTO, 0, "messageLength -5 at offset 0");
    /* Refused as soon as the 4 length bytes are in. */
    assert_int_equal(wire_frame(b, 4, 0, &len, &err), MT_EPROTO);
    set_le32(b, 15);
    expect_err(b, sizeof(b), MT_EPROTO, 0, "messageLength 15 at offset 0");
    set_le32(b, WIRE_MSG_LEN_MAX + 1);
    expect_err(b, sizeof(b), MT_ETOOBIG, 0, "messageLength 48000001 exceeds");
    set_le32(b, 0x7fffffff);
    expect_err(b, 4, MT_ETOOBIG, 0, "exceeds maximum");
}

static void
test_wire_frame_unknown_opcode(void **state)
{
    uint8_t b[sizeof(msg_find)];

    memcpy(b, msg_find, sizeof(b));
    set_le32(b + 12, 9999);
    expect_err(b, sizeof(b), MT_EPROTO, 12, "unknown opCode 9999 at offset 12");
    set_le32(b + 12, 0);
    expect_err(b, 16, MT_EPROTO, 12, "unknown opCode 0");
}

static void
test_wire_msg_parse_bad_section_kind(void **state)
{
    uint8_t b[sizeof(msg_find)];

    memcpy(b, msg_find, sizeof(b));
    b[20] = 7;
    expect_err(b, sizeof(b), MT_EPROTO, 20,
               "OP_MSG section kind 7 at offset 20");
}

static void
test_wire_msg_parse_two_bodies(void **state)
{
    /* msg_find's body twice: 16 + 4 + 2 * 29 = 78 bytes. */
    uint8_t b[78];

    memcpy(b, msg_find, sizeof(msg_find));
    memcpy(b + 49, msg_find + 20, 29); /* 49: second kind 0 + body */
    set_le32(b, sizeof(b));
    expect_err(b, sizeof(b), MT_EPROTO, 49,
               "second kind-0 section at offset 49");
}

static void
test_wire_msg_parse_no_body(void **state)
{
    uint8_t b[20];

    memcpy(b, msg_find, 20);
    set_le32(b, 20);
    expect_err(b, sizeof(b), MT_EPROTO, 20, "without a kind-0 body");
    /* flagBits cut short: a 18-byte OP_MSG. */
    set_le32(b, 18);
    expect_err(b, 18, MT_EPROTO, 16, "flagBits truncated");
}

static void
test_wire_msg_parse_undefined_required_flag(void **state)
{
    uint8_t b[sizeof(msg_find)];

    memcpy(b, msg_find, sizeof(b));
    set_le32(b + 16, 1u << 2);
    expect_err(b, sizeof(b), MT_EPROTO, 16, "undefined required flagBits 0x4");
    set_le32(b + 16, 1u << 15);
    expect_err(b, sizeof(b), MT_EPROTO, 16, "flagBits 0x8000 at offset 16");
}

static void
test_wire_msg_parse_bad_checksum(void **state)
{
    uint8_t b[sizeof(msg_insert_crc)];
    struct wire_msg m;
    size_t used;

    memcpy(b, msg_insert_crc, sizeof(b));
    b[75] = 2; /* _id: 2, checksum left as it was */
    expect_err(b, sizeof(b), MT_ECHECKSUM, 80,
               "checksum 0x1f1d8e94 != computed 0x");
    /* NO_CHECKSUM reads but does not verify it. */
    assert_int_equal(wire_msg_parse_opts(b, sizeof(b), WIRE_PARSE_NO_CHECKSUM,
                                         &m, &used, NULL),
                     MT_OK);
    assert_int_equal(m.checksum, 0x1f1d8e94u);
    /* checksumPresent with no room for it. */
    memcpy(b, msg_find, 20);
    set_le32(b, 22);
    set_le32(b + 16, WIRE_MSG_CHECKSUM_PRESENT);
    expect_err(b, 22, MT_EPROTO, 20, "checksum missing");
}

static void
test_wire_msg_parse_bad_bson_lengths(void **state)
{
    uint8_t b[sizeof(msg_find)];

    memcpy(b, msg_find, sizeof(b));
    set_le32(b + 21, 99);
    expect_err(b, sizeof(b), MT_EBSON, 21,
               "BSON length 99 exceeds remaining 28 at offset 21");
    set_le32(b + 21, 3);
    expect_err(b, sizeof(b), MT_EBSON, 21, "BSON length 3 at offset 21");
    set_le32(b + 21, (uint32_t)-1);
    expect_err(b, sizeof(b), MT_EBSON, 21, "BSON length -1");
    set_le32(b + 21, WIRE_BSON_LEN_MAX + 1);
    expect_err(b, sizeof(b), MT_ETOOBIG, 21, "exceeds maximum");
    /* Body length 27: the "$db" string (length field at 42) now runs past
     * the document's end; libbson's iterator stops there. */
    memcpy(b, msg_find, sizeof(b));
    set_le32(b + 21, 27);
    expect_err(b, sizeof(b), MT_EBSON, 37, "BSON element corrupt at offset 37");
    memcpy(b, msg_find, sizeof(b));
    b[48] = 1;
    expect_err(b, sizeof(b), MT_EBSON, 48, "not NUL-terminated at offset 48");
}

static void
test_wire_msg_parse_bad_bson_element(void **state)
{
    uint8_t b[sizeof(msg_find)];
    struct wire_msg m;
    size_t used;

    memcpy(b, msg_find, sizeof(b));
    set_le32(b + 31, 200); /* "find" string length runs past the document */
    expect_err(b, sizeof(b), MT_EBSON, 25,
               "BSON element corrupt at offset 25 (unreadable from 31)");
    /* Shallow parsing only checks the length prefix, so it passes... */
    assert_int_equal(
        wire_msg_parse_opts(b, sizeof(b), WIRE_PARSE_SHALLOW, &m, &used, NULL),
        MT_OK);
    memcpy(b, msg_find, sizeof(b));
    b[37] = 0x42; /* element type 0x42 does not exist */
    expect_err(b, sizeof(b), MT_EBSON, 37,
               "BSON element corrupt at offset 37 (unreadable from 42)");
}

static void
test_wire_msg_parse_nesting_101(void **state)
{
    static uint8_t buf[4096];
    bson_t *b = nested(WIRE_BSON_DEPTH_MAX + 1), *top;
    size_t n = wrap_body(buf, sizeof(buf), b);
    struct wire_msg m;
    size_t used;
    /* Top document at 21: length, "ping" element (12 bytes), then each
     * level adds type + "a\0" + length (7 bytes); level 2 starts at 40. */
    size_t inner = 40 + (size_t)(WIRE_BSON_DEPTH_MAX + 1 - 2) * 7;

    expect_err(buf, n, MT_EBSON, inner, "BSON nesting deeper than 100");
    assert_int_equal(
        wire_msg_parse_opts(buf, n, WIRE_PARSE_SHALLOW, &m, &used, NULL),
        MT_OK);
    bson_destroy(b);

    /* The scope of a code-with-scope value is a document too: the top
     * level plus a 100-deep scope is 101 deep. */
    b = nested(WIRE_BSON_DEPTH_MAX);
    top = BCON_NEW("ping", BCON_INT32(1));
    BSON_APPEND_CODE_WITH_SCOPE(top, "f", "return 1", b);
    n = wrap_body(buf, sizeof(buf), top);
    assert_int_equal(wire_msg_parse(buf, n, &m, &used, NULL), MT_EBSON);
    bson_destroy(top);
    bson_destroy(b);
}

static void
test_wire_msg_parse_bad_sequence(void **state)
{
    uint8_t b[sizeof(msg_insert_crc)];

    memcpy(b, msg_insert_crc, sizeof(b));
    set_le32(b + 16, 0); /* drop the checksum flag: 4 stray bytes at 80 */
    expect_err(b, sizeof(b), MT_EPROTO, 80, "section kind 148 at offset 80");
    set_le32(b, 80);
    set_le32(b + 52, 29); /* size one past the message */
    expect_err(b, 80, MT_EPROTO, 52, "kind-1 size 29 (remaining 28)");
    set_le32(b + 52, 4);
    expect_err(b, 80, MT_EPROTO, 52, "kind-1 size 4");
    set_le32(b + 52, 28);
    set_le32(b + 66, 15); /* document runs past its section */
    expect_err(b, 80, MT_EBSON, 66, "BSON length 15 exceeds remaining 14");
    set_le32(b + 66, 14);
    memset(b + 56, 'x', 24); /* identifier never terminated */
    expect_err(b, 80, MT_EPROTO, 56, "identifier not terminated");
}

static void
test_wire_msg_parse_too_many_sequences(void **state)
{
    /* body + 17 empty kind-1 sections "a" (size 6 each: 4 + "a\0"). */
    uint8_t b[49 + (WIRE_SEQ_MAX + 1) * 7];
    size_t at = 49;

    memcpy(b, msg_find, 49);
    for (int i = 0; i <= WIRE_SEQ_MAX; i++, at += 7) {
        b[at] = 1;
        set_le32(b + at + 1, 6);
        b[at + 5] = 'a';
        b[at + 6] = 0;
    }
    set_le32(b, sizeof(b));
    expect_err(b, sizeof(b), MT_ELIMIT, 49 + WIRE_SEQ_MAX * 7,
               "more than 16 kind-1 sections");
}

static void
test_wire_msg_parse_bad_reply(void **state)
{
    uint8_t b[sizeof(reply_ok) + 1];

    memcpy(b, reply_ok, sizeof(reply_ok));
    set_le32(b + 32, 2);
    expect_err(b, sizeof(reply_ok), MT_EPROTO, 32,
               "numberReturned 2 but 1 documents");
    set_le32(b + 32, (uint32_t)-1);
    expect_err(b, sizeof(reply_ok), MT_EPROTO, 32, "numberReturned -1");
    set_le32(b + 32, 1);
    set_le32(b, sizeof(b)); /* one trailing byte: too short for a document */
    b[53] = 0;
    expect_err(b, sizeof(b), MT_EPROTO, 53, "BSON length truncated");
    set_le32(b, 26); /* cursorID cut short */
    expect_err(b, 26, MT_EPROTO, 20, "cursorID truncated");
}

static void
test_wire_msg_parse_bad_query(void **state)
{
    uint8_t b[sizeof(query_ismaster) + 5];

    memcpy(b, query_ismaster, sizeof(query_ismaster));
    memcpy(b + 58, "\x05\x00\x00\x00\x00", 5); /* {} selector: fine */
    set_le32(b, sizeof(b));
    {
        struct wire_msg m;
        size_t used;
        assert_int_equal(wire_msg_parse(b, sizeof(b), &m, &used, NULL), MT_OK);
    }
    b[62] = 1; /* selector not NUL-terminated */
    expect_err(b, sizeof(b), MT_EBSON, 62, "returnFieldsSelector");
    set_le32(b, 60); /* 2 bytes after the query: too short for a selector */
    expect_err(b, 60, MT_EPROTO, 58, "BSON length truncated");
    memset(b + 20, 'x', 40); /* namespace never terminated */
    expect_err(b, 60, MT_EPROTO, 20, "fullCollectionName not NUL-terminated");
}

static void
test_wire_msg_parse_bad_compressed_header(void **state)
{
    uint8_t b[sizeof(real_snappy_whatsmyuri)];

    memcpy(b, real_snappy_whatsmyuri, sizeof(b));
    set_le32(b + 20, (uint32_t)-1);
    expect_err(b, sizeof(b), MT_EPROTO, 20, "uncompressedSize -1 at offset 20");
    set_le32(b + 20, WIRE_MSG_LEN_MAX);
    expect_err(b, sizeof(b), MT_ETOOBIG, 20, "uncompressedSize 48000000");
    set_le32(b + 20, 43);
    set_le32(b + 16, WIRE_OP_COMPRESSED);
    expect_err(b, sizeof(b), MT_EPROTO, 16, "originalOpcode 2012");
    set_le32(b + 16, 77);
    expect_err(b, sizeof(b), MT_EPROTO, 16, "originalOpcode 77");
    set_le32(b, 24);
    expect_err(b, 24, MT_EPROTO, 24, "compressorId truncated");
}

/* After framing, a bad message still says how long it is (skippable);
 * a framing error loses the stream (consumed 0). */
static void
test_wire_msg_parse_consumed_on_error(void **state)
{
    uint8_t b[sizeof(msg_find)];
    struct wire_msg m;
    size_t used = 99;

    memcpy(b, msg_find, sizeof(b));
    b[20] = 7;
    assert_int_equal(wire_msg_parse(b, sizeof(b), &m, &used, NULL), MT_EPROTO);
    assert_int_equal(used, sizeof(b));
    set_le32(b + 12, 1234);
    assert_int_equal(wire_msg_parse(b, sizeof(b), &m, &used, NULL), MT_EPROTO);
    assert_int_equal(used, 0);
}

static void
test_wire_msg_command_bad_body(void **state)
{
    uint8_t b[sizeof(msg_find)];
    struct wire_msg m;
    struct wire_cmd cmd;
    size_t used;

    memcpy(b, msg_find, sizeof(b));
    set_le32(b + 42, 100); /* "$db" string runs past the end */
    assert_int_equal(
        wire_msg_parse_opts(b, sizeof(b), WIRE_PARSE_SHALLOW, &m, &used, NULL),
        MT_OK);
    assert_int_equal(wire_msg_command(&m, &cmd), MT_EBSON);
    assert_string_equal(cmd.name, "find"); /* what came before is kept */
}

int
main(void)
{
    const struct CMUnitTest valid_tests[] = {
        cmocka_unit_test(test_wire_frame_two_messages),
        cmocka_unit_test(test_wire_msg_parse_op_msg_find),
        cmocka_unit_test(test_wire_msg_parse_checksum_and_sequence),
        cmocka_unit_test(test_wire_msg_parse_flags_exhaust_more_to_come),
        cmocka_unit_test(test_wire_msg_parse_op_query_ismaster),
        cmocka_unit_test(test_wire_msg_parse_op_reply),
        cmocka_unit_test(test_wire_msg_parse_real_snappy_op_command),
        cmocka_unit_test(test_wire_msg_parse_real_driver_find),
        cmocka_unit_test(test_wire_msg_parse_depth_100_accepted),
        cmocka_unit_test(test_wire_msg_parse_legacy_and_getmore),
        cmocka_unit_test(test_wire_msg_parse_every_prefix_partial),
        cmocka_unit_test(test_wire_msg_parse_guard_page),
    };
    const struct CMUnitTest invalid_tests[] = {
        cmocka_unit_test(test_wire_frame_bad_lengths),
        cmocka_unit_test(test_wire_frame_unknown_opcode),
        cmocka_unit_test(test_wire_msg_parse_bad_section_kind),
        cmocka_unit_test(test_wire_msg_parse_two_bodies),
        cmocka_unit_test(test_wire_msg_parse_no_body),
        cmocka_unit_test(test_wire_msg_parse_undefined_required_flag),
        cmocka_unit_test(test_wire_msg_parse_bad_checksum),
        cmocka_unit_test(test_wire_msg_parse_bad_bson_lengths),
        cmocka_unit_test(test_wire_msg_parse_bad_bson_element),
        cmocka_unit_test(test_wire_msg_parse_nesting_101),
        cmocka_unit_test(test_wire_msg_parse_bad_sequence),
        cmocka_unit_test(test_wire_msg_parse_too_many_sequences),
        cmocka_unit_test(test_wire_msg_parse_bad_reply),
        cmocka_unit_test(test_wire_msg_parse_bad_query),
        cmocka_unit_test(test_wire_msg_parse_bad_compressed_header),
        cmocka_unit_test(test_wire_msg_parse_consumed_on_error),
        cmocka_unit_test(test_wire_msg_command_bad_body),
    };
    int fails = 0;

    fails += cmocka_run_group_tests_name("wire_valid", valid_tests, NULL, NULL);
    fails +=
        cmocka_run_group_tests_name("wire_invalid", invalid_tests, NULL, NULL);
    return fails ? 1 : 0;
}
