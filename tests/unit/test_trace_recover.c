/*
 * test_trace_recover.c -- core/trace_read on what the writer never
 * produces: hand-made frames with unknown record types and appended
 * fields, other versions, bad magic, empty and zero-length files, a cut at
 * every offset, corrupt frames resynchronised, bad record lengths, the frame
 * limit; and a file and the same bytes in memory read alike.  Every
 * complete record before the damage is kept.
 */
#include "trace_testlib.h"

static void
test_trace_unknown_type_and_appended_fields(void **state)
{
    struct mt_buf content, file, one;
    struct trace_rec rec;
    struct trace_reader *r;
    struct mt_err err;
    uint8_t junk[300], ext[256];
    size_t base;

    mt_buf_init(&content, 1 << 20);
    mt_buf_init(&file, 1 << 20);
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_HEADER;
    mk_header(&rec.u.header);
    encode(&content, &rec);
    memset(junk, 0x5a, sizeof(junk));
    append_rec(&content, 42, junk, sizeof(junk)); /* unknown: skipped */
    append_rec(&content, 255, junk, 0);           /* empty unknown */
    /* a conn open with 7 bytes appended by a "newer writer" */
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_CONN_OPEN;
    rec.u.open.conn_id = 99;
    snprintf(rec.u.open.client, sizeof(rec.u.open.client), "a:1");
    snprintf(rec.u.open.server, sizeof(rec.u.open.server), "b:2");
    mt_buf_init(&one, 1 << 16);
    encode(&one, &rec);
    base = one.len - 5;
    memcpy(ext, one.data + 5, base);
    memcpy(ext + base, "NEWDATA", 7);
    append_rec(&content, TRACE_REC_CONN_OPEN, ext, (uint32_t)(base + 7));
    mt_buf_free(&one);
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_END;
    rec.u.end.records = 4;
    encode(&content, &rec);
    append_frame(&file, content.data, content.len);

    r = trace_reader_open_mem(file.data, file.len, &err);
    assert_non_null(r);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_HEADER);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_CONN_OPEN);
    assert_int_equal(rec.u.open.conn_id, 99);
    assert_string_equal(rec.u.open.server, "b:2");
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_END);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_END);
    assert_int_equal(trace_reader_records(r), 5); /* 2 unknown counted */
    trace_reader_free(r);
    mt_buf_free(&content);
    mt_buf_free(&file);
}

/* A header with a given version (and otherwise valid). */
static void
build_versioned(struct mt_buf *file, uint16_t version)
{
    struct mt_buf content;
    struct trace_rec rec;

    mt_buf_init(&content, 1 << 16);
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_HEADER;
    mk_header(&rec.u.header);
    encode(&content, &rec);
    content.data[5 + TRACE_MAGIC_LEN] = (uint8_t)version;
    content.data[5 + TRACE_MAGIC_LEN + 1] = (uint8_t)(version >> 8);
    append_frame(file, content.data, content.len);
    mt_buf_free(&content);
}

/* ---- invalid: damaged or foreign input ---- */

static void
test_trace_bad_version(void **state)
{
    struct mt_buf file;
    struct mt_err err;

    mt_buf_init(&file, 1 << 16);
    build_versioned(&file, 2);
    assert_null(trace_reader_open_mem(file.data, file.len, &err));
    assert_int_equal(err.code, MT_EVERSION);
    assert_non_null(strstr(err.msg, "version 2"));
    mt_buf_reset(&file);
    build_versioned(&file, TRACE_VERSION); /* control: same bytes, v1 */
    struct trace_reader *r = trace_reader_open_mem(file.data, file.len, &err);
    assert_non_null(r);
    trace_reader_free(r);
    mt_buf_free(&file);
}

static void
test_trace_bad_magic(void **state)
{
    static const uint8_t gz[] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0};
    struct mt_buf content, file;
    struct mt_err err;
    struct trace_rec rec;

    assert_null(trace_reader_open_mem(gz, sizeof(gz), &err));
    assert_int_equal(err.code, MT_ECORRUPT);
    assert_non_null(strstr(err.msg, "not an mtrace trace"));

    /* a valid zstd frame whose content is not a trace */
    mt_buf_init(&content, 1 << 16);
    mt_buf_init(&file, 1 << 16);
    assert_int_equal(mt_buf_append(&content, "hello, world\n", 13), 0);
    append_frame(&file, content.data, content.len);
    assert_null(trace_reader_open_mem(file.data, file.len, &err));
    assert_int_equal(err.code, MT_ECORRUPT);
    assert_non_null(strstr(err.msg, "magic"));

    /* a header record with one magic byte changed */
    mt_buf_reset(&content);
    mt_buf_reset(&file);
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_HEADER;
    mk_header(&rec.u.header);
    encode(&content, &rec);
    content.data[5 + 7] ^= 1;
    append_frame(&file, content.data, content.len);
    assert_null(trace_reader_open_mem(file.data, file.len, &err));
    assert_non_null(strstr(err.msg, "not an mtrace trace"));
    mt_buf_free(&content);
    mt_buf_free(&file);
}

static void
test_trace_empty_and_zero_length(void **state)
{
    struct mt_buf file, content;
    struct mt_err err;
    struct trace_rec rec;
    struct trace_reader *r;
    char path[128];
    FILE *fp;

    assert_null(trace_reader_open_mem("", 0, &err));
    assert_int_equal(err.code, MT_ETRUNC);
    assert_non_null(strstr(err.msg, "empty file"));
    assert_null(trace_reader_open_mem(NULL, 0, &err));
    assert_int_equal(err.code, MT_ETRUNC);
    tmp_path(path, sizeof(path), "empty.zst");
    fp = fopen(path, "wb");
    fclose(fp);
    assert_null(trace_reader_open(path, &err));
    assert_int_equal(err.code, MT_ETRUNC);
    assert_null(trace_reader_open("/nonexistent/x.zst", &err));
    assert_int_equal(err.code, -ENOENT);
    assert_non_null(strstr(err.msg, "/nonexistent/x.zst"));

    /* zero-length zstd frames only: no records */
    mt_buf_init(&file, 1 << 16);
    mt_buf_init(&content, 1 << 16);
    append_frame(&file, (const uint8_t *)"", 0);
    append_frame(&file, (const uint8_t *)"", 0);
    assert_null(trace_reader_open_mem(file.data, file.len, &err));
    assert_int_equal(err.code, MT_ETRUNC);
    assert_non_null(strstr(err.msg, "no records"));
    /* ... then a header frame, an empty frame, an end frame: all fine */
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_HEADER;
    mk_header(&rec.u.header);
    encode(&content, &rec);
    append_frame(&file, content.data, content.len);
    append_frame(&file, (const uint8_t *)"", 0);
    mt_buf_reset(&content);
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_END;
    encode(&content, &rec);
    append_frame(&file, content.data, content.len);
    r = trace_reader_open_mem(file.data, file.len, &err);
    assert_non_null(r);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_END);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_END);
    trace_reader_free(r);
    mt_buf_free(&file);
    mt_buf_free(&content);
}

static void
test_trace_truncated_every_offset(void **state)
{
    uint64_t offs[8];
    size_t len;
    uint8_t *file = build_frames("trunc.zst", 3, offs, &len);
    struct tally t;
    char want[96];
    int rc;

    /* Every cut inside the last message frame: the header and the two
     * earlier frames' 6 messages survive; the loss is reported. */
    snprintf(want, sizeof(want), "truncated zstd frame at offset %llu",
             (unsigned long long)offs[3]);
    for (uint64_t cut = offs[3] + 1; cut < offs[4]; cut++) {
        uint8_t *copy = malloc(cut); /* exact size: ASan sees overreads */
        memcpy(copy, file, cut);
        rc = read_all_mem(copy, cut, &t, true);
        assert_int_equal(rc, MT_ETRUNC);
        if (cut == offs[4] - TRACE_CRC_FRAME_LEN) {
            /* cut between the data frame and its checksum frame: the data
             * frame is whole, unverified, taken as it is (as a frame of a
             * writer without checksums) */
            assert_int_equal(t.cnt[TRACE_REC_MSG], 9);
            assert_non_null(strstr(t.err.msg, "without an end record"));
            free(copy);
            continue;
        }
        assert_int_equal(t.cnt[TRACE_REC_MSG], 6);
        assert_int_equal(t.cnt[TRACE_REC_HEADER], 1);
        assert_int_equal(t.errors, 1);
        assert_non_null(strstr(t.err.msg, want));
        assert_non_null(strstr(t.err.msg, "not recoverable"));
        assert_int_equal(t.err.offset, offs[3]);
        free(copy);
    }
    /* a cut at the frame boundary: no end record */
    rc = read_all_mem(file, offs[3], &t, true);
    assert_int_equal(rc, MT_ETRUNC);
    assert_int_equal(t.cnt[TRACE_REC_MSG], 6);
    assert_non_null(strstr(t.err.msg, "without an end record"));
    /* every cut in the end frame and the index: all 9 messages */
    for (uint64_t cut = offs[4]; cut < len; cut++) {
        uint64_t end_data = offs[5] - TRACE_CRC_FRAME_LEN;
        rc = read_all_mem(file, cut, &t, true);
        assert_int_equal(t.cnt[TRACE_REC_MSG], 9);
        /* just after the end frame (or its data frame, unverified): a
         * valid trace without an index */
        assert_int_equal(rc, cut == offs[5] || cut == end_data ? MT_END
                                                               : MT_ETRUNC);
        assert_int_equal(t.cnt[TRACE_REC_END],
                         cut >= offs[5] || cut == end_data ? 1 : 0);
    }
    /* every prefix of the whole file: never a crash */
    for (uint64_t cut = 0; cut < offs[3]; cut++) {
        rc = read_all_mem(file, cut, &t, true);
        assert_true(rc < 0);
    }
    rc = read_all_mem(file, len, &t, true);
    assert_int_equal(rc, MT_END);
    assert_int_equal(t.total, 11);
    free(file);
}

static void
test_trace_corrupt_frame_resync(void **state)
{
    uint64_t offs[8];
    size_t len;
    uint8_t *file = build_frames("corrupt.zst", 3, offs, &len);
    struct tally t;
    int rc, seen_resume = 0;

    /* A flipped byte anywhere in the second message frame, its checksum
     * frame (the last 16 bytes) included: its records are lost, the reader
     * reports it and resumes with the third frame. */
    for (uint64_t at = offs[2]; at < offs[3]; at++) {
        file[at] ^= 0x41;
        rc = read_all_mem(file, len, &t, true);
        file[at] ^= 0x41;
        assert_true(rc < 0);
        assert_int_equal(t.cnt[TRACE_REC_HEADER], 1);
        /* 6: frames 1 and 3; 3: a damaged frame header made the decoder
         * run into frame 3 too (it then resyncs on the end frame); 9: the
         * checksum frame's length field (its last 4 bytes) is damaged but
         * the CRC-32 of the frame matches: kept, and said. */
        if (at >= offs[3] - 4) {
            assert_int_equal(t.cnt[TRACE_REC_MSG], 9);
            assert_non_null(strstr(t.err.msg, "CRC-32 matches"));
            continue;
        }
        assert_true(t.cnt[TRACE_REC_MSG] == 6 || t.cnt[TRACE_REC_MSG] == 3);
        if (getenv("TRACE_TEST_VERBOSE"))
            fprintf(stderr, "flip at +%llu: %u msgs: %s\n",
                    (unsigned long long)(at - offs[2]), t.cnt[TRACE_REC_MSG],
                    t.err.msg);
        if (t.cnt[TRACE_REC_MSG] == 6 && t.cnt[TRACE_REC_END] == 1) {
            seen_resume++;
            assert_int_equal(t.err.offset, offs[2]);
            assert_non_null(strstr(t.err.msg, "resuming at offset"));
        }
    }
    assert_true(seen_resume > (int)(offs[3] - offs[2]) / 2);
    free(file);
}

/* Records whose length or fields do not fit are refused with the frame
 * offset; the reader goes on with the next frame. */
static void
test_trace_bad_record_lengths(void **state)
{
    static const uint8_t huge[] = {
        TRACE_REC_CONN_OPEN, /* 0: type */
        0xff,
        0xff,
        0xff,
        0xff, /* 1: length 4294967295 */
        0x00, /* 5: one byte of payload */
    };
    static const uint8_t short_msg[] = {
        TRACE_REC_MSG, /* 0: type */
        0x1d,
        0x00,
        0x00,
        0x00, /* 1: length 29 */
        1,
        0,
        0,
        0,
        0,
        0,
        0,
        0, /* 5: conn_id 1 */
        2,
        0,
        0,
        0,
        0,
        0,
        0,
        0, /* 13: t_ns 2 */
        0, /* 21: dir c2s */
        0,
        0,
        0,
        0, /* 22: flags */
        0xff,
        0xff,
        0xff,
        0x7f, /* 26: wire_len 2147483647 > what is left */
        0,    /* 30: (payload ends at 34) */
        0,
        0,
        0,
    };
    struct mt_buf content, file;
    struct trace_rec rec;
    struct tally t;
    size_t second;

    mt_buf_init(&content, 1 << 16);
    mt_buf_init(&file, 1 << 16);
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_HEADER;
    mk_header(&rec.u.header);
    encode(&content, &rec);
    append_frame(&file, content.data, content.len);
    second = file.len;
    append_frame(&file, huge, sizeof(huge));
    append_frame(&file, short_msg, sizeof(short_msg));
    mt_buf_reset(&content);
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_END;
    encode(&content, &rec);
    append_frame(&file, content.data, content.len);
    assert_int_equal(read_all_mem(file.data, file.len, &t, true), MT_ECORRUPT);
    assert_int_equal(t.errors, 2);
    assert_int_equal(t.err.offset, second);
    assert_non_null(strstr(t.err.msg, "length exceeds the frame"));
    assert_int_equal(t.cnt[TRACE_REC_END], 1); /* went on after both */
    assert_int_equal(t.lost, sizeof(huge) + sizeof(short_msg));
    mt_buf_free(&content);
    mt_buf_free(&file);
}

/* A frame over the reader's limit is refused and skipped. */
static void
test_trace_frame_limit(void **state)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    struct trace_reader *r;
    struct trace_rec rec;
    struct trace_msg m = {.conn_id = 1, .dir = TRACE_DIR_S2C};
    uint8_t *wire = mk_wire(400000, 2013, 5);
    int rc;

    tmp_path(path, sizeof(path), "limit.zst");
    mk_header(&h);
    w = trace_writer_open(path, 0, &h, &err);
    assert_non_null(w);
    m.wire = wire;
    m.wire_len = 400000;
    assert_int_equal(trace_writer_msg(w, &m), 0);
    assert_int_equal(trace_writer_close(w), 0);
    r = trace_reader_open(path, &err);
    assert_non_null(r);
    trace_reader_set_frame_max(r, 256 * 1024);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    rc = trace_reader_next(r, &rec, &err);
    assert_int_equal(rc, MT_ETOOBIG);
    assert_non_null(strstr(err.msg, "262144-byte limit"));
    assert_true(trace_reader_lost_bytes(r) > 0);
    trace_reader_free(r);
    free(wire);
}

/*
 * A trace bigger than the reader's 128 KiB input chunks, so that frame
 * magics, frame headers and resynchronisation scans straddle chunk
 * boundaries: reading it through a FILE * gives exactly what reading it
 * from memory gives, intact, truncated and with damage anywhere.
 */
static void
test_trace_file_and_memory_agree(void **state)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    uint8_t *wire = mk_wire(2000, 2013, 8), *file;
    struct trace_msg m = {
        .conn_id = 3, .dir = TRACE_DIR_S2C, .wire = wire, .wire_len = 2000};
    struct tally a, b;
    size_t len;
    int ra, rb;

    tmp_path(path, sizeof(path), "big.zst");
    mk_header(&h);
    w = trace_writer_open(path, 0, &h, &err);
    assert_non_null(w);
    for (int i = 0; i < 400; i++) {
        free(wire);
        wire = mk_wire(2000, 2013, 100 + (uint32_t)i); /* incompressible */
        m.wire = wire;
        m.t_ns = (uint64_t)i;
        assert_int_equal(trace_writer_msg(w, &m), 0);
        if (i % 2)
            assert_int_equal(trace_writer_flush(w), 0);
    }
    assert_int_equal(trace_writer_close(w), 0);
    file = slurp(path, &len);
    assert_true(len > 3 * 128 * 1024);

    ra = read_all_mem(file, len, &a, true);
    rb = read_all_fp(file, len, &b, true);
    assert_int_equal(ra, MT_END);
    assert_int_equal(rb, MT_END);
    assert_int_equal(a.cnt[TRACE_REC_MSG], 400);
    assert_int_equal(b.cnt[TRACE_REC_MSG], 400);
    assert_true(a.wire_sum == b.wire_sum);
    for (size_t at = 1; at < len; at += 997) {
        /* truncated at `at` */
        ra = read_all_mem(file, at, &a, true);
        rb = read_all_fp(file, at, &b, true);
        assert_int_equal(ra, rb);
        assert_int_equal(a.total, b.total);
        assert_true(a.wire_sum == b.wire_sum);
        assert_string_equal(a.err.msg, b.err.msg);
        /* one byte damaged at `at` */
        file[at] ^= 0x20;
        ra = read_all_mem(file, len, &a, true);
        rb = read_all_fp(file, len, &b, true);
        file[at] ^= 0x20;
        assert_int_equal(ra, rb);
        assert_int_equal(a.total, b.total);
        assert_int_equal(a.errors, b.errors);
        assert_true(a.wire_sum == b.wire_sum);
        assert_true(a.lost == b.lost);
        assert_string_equal(a.err.msg, b.err.msg);
        /* resync: at most the frame with the damage (2 messages) lost */
        assert_true(a.cnt[TRACE_REC_MSG] >= 398 || at < 200);
    }
    free(file);
    free(wire);
}

/* ---- writer ---- */

int
main(void)
{
    const struct CMUnitTest readable[] = {
        cmocka_unit_test(test_trace_unknown_type_and_appended_fields),
    };
    const struct CMUnitTest damaged[] = {
        cmocka_unit_test(test_trace_bad_version),
        cmocka_unit_test(test_trace_bad_magic),
        cmocka_unit_test(test_trace_empty_and_zero_length),
        cmocka_unit_test(test_trace_truncated_every_offset),
        cmocka_unit_test(test_trace_corrupt_frame_resync),
        cmocka_unit_test(test_trace_frame_limit),
        cmocka_unit_test(test_trace_bad_record_lengths),
        cmocka_unit_test(test_trace_file_and_memory_agree),
    };
    int rc = cmocka_run_group_tests_name("trace: readable", readable, setup_dir,
                                         teardown_dir);
    rc |= cmocka_run_group_tests_name("trace: damaged", damaged, setup_dir,
                                      teardown_dir);
    return rc;
}
