/*
 * test_trace_read.c -- core/trace_read: recovery from a damaged header frame,
 * the checksum frame's messages, an unknown seek-index version.
 *
 * A trace of four frames (header, two message frames, end) is written with
 * the real writer into an open_memstream buffer, then damaged byte by byte
 * and read back from memory and through a FILE *.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "core/err.h"
#include "core/log.h"
#include "core/rd.h"
#include "core/trace.h"
#include "core/trace_read.h"

#define MSGS_PER_FRAME 5

struct tally {
    unsigned msgs, headers, ends, errors;
    struct mt_err first;
    int first_rc;
};

static void
write_msgs(struct trace_writer *w, uint64_t conn, uint64_t t0)
{
    uint8_t wire[64];
    struct trace_msg m = {.conn_id = conn, .dir = TRACE_DIR_C2S};

    memset(wire, 0x5a, sizeof(wire));
    wr_le32(wire, sizeof(wire));
    wr_le32(wire + 12, 2013);
    m.wire = wire;
    m.wire_len = sizeof(wire);
    for (int i = 0; i < MSGS_PER_FRAME; i++) {
        m.t_ns = t0 + (uint64_t)i * 100;
        assert_int_equal(trace_writer_msg(w, &m), 0);
    }
}

/* The whole trace in a malloc'ed buffer; offs[i] is frame i's offset
 * (offs[4]: the seek index). */
static uint8_t *
build_trace(size_t *len, size_t offs[5])
{
    struct trace_header h;
    struct trace_conn_open o = {.conn_id = 1, .t_ns = 1500};
    struct mt_err err;
    struct trace_writer *w;
    char *buf = NULL;
    size_t n = 0, at = 0, z;
    FILE *fp = open_memstream(&buf, &n);

    assert_non_null(fp);
    memset(&h, 0, sizeof(h));
    snprintf(h.tool_version, sizeof(h.tool_version), "mtrace test");
    snprintf(h.source_desc, sizeof(h.source_desc), "test_trace_read.c");
    h.source = TRACE_SRC_SYNTH;
    h.start_mono_ns = 1000;
    h.ts_precision_ns = 1;
    w = trace_writer_open_fp(fp, &h, &err);
    assert_non_null(w);
    snprintf(o.client, sizeof(o.client), "127.0.0.1:5000");
    snprintf(o.server, sizeof(o.server), "127.0.0.1:27017");
    assert_int_equal(trace_writer_conn_open(w, &o), 0);
    write_msgs(w, 1, 2000);
    assert_int_equal(trace_writer_flush(w), 0);
    write_msgs(w, 1, 5000);
    assert_int_equal(trace_writer_flush(w), 0);
    assert_int_equal(trace_writer_close(w), 0);
    assert_int_equal(fclose(fp), 0);
    for (int i = 0; i < 5; i++) {
        offs[i] = at;
        if (i == 4)
            break;
        z = ZSTD_findFrameCompressedSize(buf + at, n - at);
        assert_false(ZSTD_isError(z));
        at += z + 16; /* the checksum frame */
    }
    *len = n;
    return (uint8_t *)buf;
}

static void
tally_reader(struct trace_reader *r, struct tally *t)
{
    struct trace_rec rec;
    struct mt_err err;
    int rc;

    while ((rc = trace_reader_next(r, &rec, &err)) != MT_END) {
        if (rc < 0) {
            if (t->errors++ == 0) {
                t->first = err;
                t->first_rc = rc;
            }
            assert_true(rc == MT_ECORRUPT || rc == MT_ETOOBIG ||
                        rc == MT_ETRUNC);
            if (rc == MT_ETRUNC)
                break;
            continue;
        }
        t->msgs += rec.type == TRACE_REC_MSG;
        t->headers += rec.type == TRACE_REC_HEADER;
        t->ends += rec.type == TRACE_REC_END;
    }
}

/* Reads buf from memory and through a FILE *; both must agree.  NULL
 * reader: returns -1 with the open error in t->first. */
static int
read_both(const uint8_t *buf, size_t len, struct tally *t, bool *lost_hdr)
{
    struct tally t2;
    struct mt_err err;
    struct trace_reader *r = trace_reader_open_mem(buf, len, &err);
    FILE *fp;

    memset(t, 0, sizeof(*t));
    memset(&t2, 0, sizeof(t2));
    fp = fmemopen((void *)(uintptr_t)buf, len, "rb");
    assert_non_null(fp);
    if (r == NULL) {
        t->first = err;
        assert_null(trace_reader_open_fp(fp, &err));
        fclose(fp);
        return -1;
    }
    *lost_hdr = trace_reader_header_lost(r);
    if (*lost_hdr) {
        assert_string_equal(trace_reader_header(r)->tool_version,
                            "(header lost)");
        assert_int_equal(trace_reader_header(r)->source, TRACE_SRC_UNKNOWN);
    }
    tally_reader(r, t);
    trace_reader_free(r);
    r = trace_reader_open_fp(fp, &err);
    assert_non_null(r);
    tally_reader(r, &t2);
    trace_reader_free(r);
    fclose(fp);
    assert_int_equal(t->msgs, t2.msgs);
    assert_int_equal(t->errors, t2.errors);
    return 0;
}

/* DESIGN rule 6: a flipped byte anywhere in the header frame (its checksum
 * frame included) loses the header, not the intact frames after it. */
static void
test_trace_read_header_frame_damage(void **state)
{
    size_t len, offs[5];
    uint8_t *file = build_trace(&len, offs);
    struct tally t;
    bool lost = false;
    unsigned recovered = 0;

    assert_int_equal(read_both(file, len, &t, &lost), 0);
    assert_false(lost);
    assert_int_equal(t.msgs, 2 * MSGS_PER_FRAME);
    assert_int_equal(t.errors, 0);
    for (size_t at = 4; at < offs[1]; at++) {
        file[at] ^= 0x41;
        lost = false;
        if (read_both(file, len, &t, &lost) < 0) {
            /* Only a damaged frame header can swallow the next frame; the
             * message must not claim a resumption. */
            assert_null(strstr(t.first.msg, "resuming"));
            file[at] ^= 0x41;
            continue;
        }
        file[at] ^= 0x41;
        assert_int_equal(t.ends, 1);
        assert_true(t.msgs == 2 * MSGS_PER_FRAME || t.msgs == MSGS_PER_FRAME);
        if (lost) {
            assert_int_equal(t.headers, 0);
            assert_true(t.errors >= 1);
            assert_non_null(strstr(t.first.msg, "header record lost"));
            if (strstr(t.first.msg, "resuming at offset") == NULL)
                fprintf(stderr, "at %zu: %s\n", at, t.first.msg);
            assert_non_null(strstr(t.first.msg, "resuming at offset"));
            recovered += t.msgs == 2 * MSGS_PER_FRAME;
        }
    }
    /* Most flips (e.g. any in the compressed block) lose only the header. */
    assert_true(recovered > (offs[1] - 4) / 2);
    free(file);
}

/* Damage in the header frame with nothing after it: open fails, and the
 * message says the bytes are lost up to the end. */
static void
test_trace_read_header_frame_only(void **state)
{
    size_t len, offs[5];
    uint8_t *file = build_trace(&len, offs);
    struct tally t;
    bool lost;

    file[offs[1] - 20] ^= 0x41; /* inside the zstd frame */
    assert_int_equal(read_both(file, offs[1], &t, &lost), -1);
    assert_null(strstr(t.first.msg, "resuming"));
    assert_non_null(strstr(t.first.msg, "up to the end"));
    free(file);
}

/* The checksum frame after a message frame: each field's damage is named;
 * a wrong length with a matching CRC keeps the frame's records. */
static void
test_trace_read_checksum_frame_fields(void **state)
{
    size_t len, offs[5];
    uint8_t *file = build_trace(&len, offs);
    size_t crc_at = offs[2] - 16;
    struct tally t;
    bool lost;

    file[crc_at + 12] ^= 0x10; /* recorded length */
    assert_int_equal(read_both(file, len, &t, &lost), 0);
    file[crc_at + 12] ^= 0x10;
    assert_int_equal(t.msgs, 2 * MSGS_PER_FRAME);
    assert_int_equal(t.errors, 1);
    assert_non_null(strstr(t.first.msg, "records length"));
    assert_non_null(strstr(t.first.msg, "CRC-32 matches"));

    file[crc_at + 8] ^= 0x10; /* the CRC itself */
    assert_int_equal(read_both(file, len, &t, &lost), 0);
    file[crc_at + 8] ^= 0x10;
    assert_int_equal(t.msgs, MSGS_PER_FRAME);
    assert_non_null(strstr(t.first.msg, "its checksum frame says"));
    {
        unsigned a = 0, b = 1;
        const char *p = strstr(t.first.msg, "CRC-32 0x");
        assert_non_null(p);
        assert_int_equal(
            sscanf(p, "CRC-32 0x%x, its checksum frame says 0x%x", &a, &b), 2);
        assert_true(a != b);
    }

    file[crc_at + 4] ^= 0x10; /* the skippable frame's size */
    assert_int_equal(read_both(file, len, &t, &lost), 0);
    file[crc_at + 4] ^= 0x10;
    assert_int_equal(t.msgs, MSGS_PER_FRAME);
    assert_non_null(strstr(t.first.msg, "size field"));
    free(file);
}

/* An index of an unknown version is not checked; the records read as they
 * are, with no error. */
static void
test_trace_read_index_version(void **state)
{
    size_t len, offs[5];
    uint8_t *file = build_trace(&len, offs);
    struct tally t;
    bool lost;

    assert_true(len > offs[4] + 12);
    file[len - 5] ^= 0x10; /* footer: version */
    mt_log_set_level(MT_LOG_ERROR);
    assert_int_equal(read_both(file, len, &t, &lost), 0);
    mt_log_set_level(MT_LOG_INFO);
    assert_int_equal(t.msgs, 2 * MSGS_PER_FRAME);
    assert_int_equal(t.errors, 0);
    free(file);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_read_header_frame_damage),
        cmocka_unit_test(test_trace_read_header_frame_only),
        cmocka_unit_test(test_trace_read_checksum_frame_fields),
        cmocka_unit_test(test_trace_read_index_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
