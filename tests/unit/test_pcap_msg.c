/*
 * test_pcap_msg.c -- capture/pcap_msg.c: framing a reassembled stream,
 * header plausibility for resynchronisation, gaps inside and between
 * messages, decompression.  Counts only (no trace writer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "capture/pcap_msg.h"
#include "core/trace.h"
#include "core/wire.h"

/* An OP_MSG {name: 1, pad: "xxx..."} of about len bytes, appended to b. */
static size_t
msg(struct mt_buf *b, const char *name, size_t pad)
{
    bson_t d = BSON_INITIALIZER;
    char *s = malloc(pad + 1);
    size_t before = b->len;

    memset(s, 'x', pad);
    s[pad] = 0;
    BSON_APPEND_INT32(&d, name, 1);
    BSON_APPEND_UTF8(&d, "pad", s);
    assert_int_equal(wire_encode_msg(b, 7, 0, 0, &d, NULL, 0), 0);
    bson_destroy(&d);
    free(s);
    return b->len - before;
}

struct fx {
    struct pmsg_sink s;
    struct pmsg_dir d;
    struct mt_buf b;
};

static void
fx_init(struct fx *f, bool midstream)
{
    pmsg_sink_init(&f->s, NULL);
    pmsg_dir_init(&f->d, 1, TRACE_DIR_C2S, midstream);
    mt_buf_init(&f->b, 1 << 20);
}

static void
fx_free(struct fx *f)
{
    pmsg_dir_free(&f->d);
    pmsg_sink_free(&f->s);
    mt_buf_free(&f->b);
}

static void
feed(struct fx *f, size_t from, size_t n)
{
    assert_int_equal(pmsg_dir_data(&f->d, &f->s, f->b.data + from, n, 0), 0);
}

static void
test_pcap_msg_frames_any_split(void **state)
{
    /* three messages delivered in every possible 2-piece split */
    for (size_t cut = 0; cut <= 3 * 80; cut++) {
        struct fx f;
        size_t total;
        fx_init(&f, false);
        msg(&f.b, "ping", 40);
        msg(&f.b, "find", 10);
        msg(&f.b, "insert", 25);
        total = f.b.len;
        if (cut > total)
            cut = total;
        feed(&f, 0, cut);
        feed(&f, cut, total - cut);
        assert_int_equal(f.s.messages, 3);
        assert_int_equal(pmsg_dir_partial(&f.d), 0);
        fx_free(&f);
        if (cut == total)
            break;
    }
}

static void
test_pcap_msg_midstream_resyncs(void **state)
{
    struct fx f;
    size_t a;

    fx_init(&f, true);
    a = msg(&f.b, "ping", 60);
    msg(&f.b, "find", 10);
    feed(&f, 30, f.b.len - 30); /* the first 30 bytes were not captured */
    assert_int_equal(f.s.messages, 1);
    assert_int_equal(f.s.resyncs, 1);
    assert_int_equal(f.s.skipped_bytes, a - 30);
    fx_free(&f);
}

static void
test_pcap_msg_gap_inside_message_skips_exactly(void **state)
{
    struct fx f;
    size_t a;

    fx_init(&f, false);
    a = msg(&f.b, "ping", 100);
    msg(&f.b, "find", 10);
    feed(&f, 0, 20);
    pmsg_dir_gap(&f.d, &f.s, 50); /* bytes 20..70 lost */
    feed(&f, 70, f.b.len - 70);
    assert_int_equal(f.s.messages, 1); /* "find" only */
    assert_int_equal(f.s.resyncs, 0);  /* no scan was needed */
    assert_int_equal(f.d.pending, 0);
    (void)a;
    fx_free(&f);
}

static void
test_pcap_msg_gap_at_boundary_resyncs(void **state)
{
    struct fx f;
    size_t a, b;

    fx_init(&f, false);
    a = msg(&f.b, "ping", 100);
    b = msg(&f.b, "find", 100);
    msg(&f.b, "insert", 10);
    feed(&f, 0, a);
    pmsg_dir_gap(&f.d, &f.s, 16); /* header of "find" lost */
    feed(&f, a + 16, f.b.len - a - 16);
    assert_int_equal(f.s.messages, 2); /* ping, insert */
    assert_int_equal(f.s.resyncs, 1);
    assert_int_equal(f.s.skipped_bytes, b - 16);
    fx_free(&f);
}

static void
test_pcap_msg_garbage_is_skipped(void **state)
{
    struct fx f;
    uint8_t junk[300];

    fx_init(&f, false);
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    mt_buf_append(&f.b, junk, sizeof(junk));
    msg(&f.b, "ping", 10);
    feed(&f, 0, f.b.len);
    assert_int_equal(f.s.messages, 1);
    assert_int_equal(f.s.skipped_bytes, sizeof(junk));
    fx_free(&f);
}

static void
test_pcap_msg_false_positive_rejected(void **state)
{
    static const uint8_t fake[40] = {
        40,   0,    0,   0,   /*  0: messageLength 40 */
        1,    0,    0,   0,   /*  4: requestID */
        0,    0,    0,   0,   /*  8: responseTo */
        0xdd, 0x07, 0,   0,   /* 12: OP_MSG */
        0,    0,    0,   0,   /* 16: flagBits */
        0,                    /* 20: kind 0 */
        19,   0,    0,   0,   /* 21: BSON length 19: fits, so plausible */
        'x',  'x',  'x', 'x', /* 25: ... but not a document (no NUL end) */
        'x',  'x',  'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'};
    struct fx f;

    fx_init(&f, true); /* scanning from the start */
    assert_int_equal(pmsg_plausible(fake, sizeof(fake)), 1);
    mt_buf_append(&f.b, fake, sizeof(fake));
    msg(&f.b, "ping", 10);
    feed(&f, 0, f.b.len);
    assert_int_equal(f.s.messages, 1); /* the real one only */
    assert_int_equal(f.s.malformed, 0);
    assert_int_equal(f.s.resyncs, 1);
    assert_int_equal(f.s.skipped_bytes, sizeof(fake));
    fx_free(&f);
}

static void
test_pcap_msg_plausible(void **state)
{
    struct mt_buf b;
    uint8_t m[64];

    mt_buf_init(&b, 1 << 16);
    msg(&b, "ping", 5);
    assert_int_equal(pmsg_plausible(b.data, b.len), 1);
    assert_int_equal(pmsg_plausible(b.data, 10), -1); /* need more */
    memcpy(m, b.data, 40);
    m[16] = 0x04; /* an undefined required flag bit */
    assert_int_equal(pmsg_plausible(m, 40), 0);
    memcpy(m, b.data, 40);
    m[20] = 2; /* section kind 2 */
    assert_int_equal(pmsg_plausible(m, 40), 0);
    memcpy(m, b.data, 40);
    m[12] = 0x99; /* unknown opcode */
    assert_int_equal(pmsg_plausible(m, 40), 0);
    memcpy(m, b.data, 40);
    m[21] = 0xff; /* BSON longer than the message */
    assert_int_equal(pmsg_plausible(m, 40), 0);
    mt_buf_free(&b);
}

static void
test_pcap_msg_compressed_is_decompressed(void **state)
{
    struct fx f;
    struct mt_buf plain;

    fx_init(&f, false);
    mt_buf_init(&plain, 1 << 16);
    msg(&plain, "ping", 200);
    assert_int_equal(wire_encode_compressed(&f.b, plain.data, plain.len,
                                            WIRE_COMPRESSOR_ZLIB, NULL),
                     0);
    feed(&f, 0, f.b.len);
    assert_int_equal(f.s.messages, 1);
    assert_int_equal(f.s.malformed, 0);
    assert_int_equal(f.s.plain.len, plain.len);
    assert_memory_equal(f.s.plain.data, plain.data, plain.len);
    mt_buf_free(&plain);
    fx_free(&f);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pcap_msg_frames_any_split),
        cmocka_unit_test(test_pcap_msg_midstream_resyncs),
        cmocka_unit_test(test_pcap_msg_gap_inside_message_skips_exactly),
        cmocka_unit_test(test_pcap_msg_gap_at_boundary_resyncs),
        cmocka_unit_test(test_pcap_msg_garbage_is_skipped),
        cmocka_unit_test(test_pcap_msg_false_positive_rejected),
        cmocka_unit_test(test_pcap_msg_plausible),
        cmocka_unit_test(test_pcap_msg_compressed_is_decompressed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
