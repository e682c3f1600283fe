/*
 * test_wire_bad.c -- core/wire.c on bad input: each malformed case fails
 * with its code, offset and message; valid input is in test_wire.c.
 * Encoders and OP_COMPRESSED are in test_wire_enc.c, CRC-32C in
 * test_wire_crc.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/err.h"
#include "core/wire.h"
#include "wire_fixtures.h"

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

    return cmocka_run_group_tests_name("wire_invalid", invalid_tests, NULL,
                                       NULL);
}
