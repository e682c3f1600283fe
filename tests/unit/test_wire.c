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
#include "wire_fixtures.h"

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
    return cmocka_run_group_tests_name("wire_valid", valid_tests, NULL, NULL);
}
