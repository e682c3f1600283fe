/*
 * test_trace.c -- core/trace: the writer and the streaming reader on what
 * the writer makes.
 *
 * Traces are written to files under a mkdtemp directory, to /dev/full and to
 * fixed-size fmemopen buffers (a real ENOSPC), and read back from a path, a
 * FILE * and memory.  test_trace_recover.c reads what the writer never
 * produces.
 */
#include "trace_testlib.h"

static void
write_every_type(struct trace_writer *w, const uint8_t *big, size_t big_len,
                 const uint8_t *plain, size_t plain_len)
{
    struct trace_conn_open o = {.conn_id = 7, .t_ns = 2000};
    struct trace_conn_close c = {.conn_id = 7,
                                 .t_ns = 9000,
                                 .reason = 2,
                                 .partial_c2s = 3,
                                 .partial_s2c = 4};
    struct trace_msg m = {.conn_id = 7,
                          .t_ns = 3000,
                          .dir = TRACE_DIR_C2S,
                          .flags = TRACE_MSG_GAP_BEFORE};
    struct trace_stats s = {.t_ns = 9500, .n = 2};
    uint8_t small[40];

    snprintf(o.client, sizeof(o.client), "127.0.0.1:53412");
    snprintf(o.server, sizeof(o.server), "[::1]:27017");
    assert_int_equal(trace_writer_conn_open(w, &o), 0);
    memset(small, 0xab, sizeof(small));
    wr_le32(small, sizeof(small));
    wr_le32(small + 12, 2013);
    m.wire = small;
    m.wire_len = sizeof(small);
    assert_int_equal(trace_writer_msg(w, &m), 0);
    m.dir = TRACE_DIR_S2C;
    m.t_ns = 4000;
    m.flags = 0;
    m.wire = big;
    m.wire_len = (uint32_t)big_len;
    m.plain = plain;
    m.plain_len = (uint32_t)plain_len;
    assert_int_equal(trace_writer_msg(w, &m), 0);
    assert_int_equal(trace_writer_conn_close(w, &c), 0);
    snprintf(s.s[0].name, sizeof(s.s[0].name), "packets");
    s.s[0].value = 12345678901ull;
    snprintf(s.s[1].name, sizeof(s.s[1].name), "gaps");
    s.s[1].value = 0;
    assert_int_equal(trace_writer_stats(w, &s), 0);
}

static void
check_every_type(struct trace_reader *r, const uint8_t *big, size_t big_len,
                 const uint8_t *plain, size_t plain_len)
{
    struct trace_rec rec;
    struct mt_err err;

    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_HEADER);
    assert_string_equal(rec.u.header.tool_version, "mtrace test");
    assert_string_equal(rec.u.header.source_desc, "test_trace.c");
    assert_int_equal(rec.u.header.source, TRACE_SRC_SYNTH);
    assert_true(rec.u.header.start_wall_ns == 1700000000123456789ull);
    assert_int_equal(rec.u.header.start_mono_ns, 1000);
    assert_int_equal(rec.u.header.ts_precision_ns, 1);
    assert_int_equal(rec.offset, 0);

    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_CONN_OPEN);
    assert_int_equal(rec.u.open.conn_id, 7);
    assert_int_equal(rec.u.open.t_ns, 2000);
    assert_string_equal(rec.u.open.client, "127.0.0.1:53412");
    assert_string_equal(rec.u.open.server, "[::1]:27017");
    assert_true(rec.offset > 0);

    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_MSG);
    assert_int_equal(rec.u.msg.dir, TRACE_DIR_C2S);
    assert_int_equal(rec.u.msg.flags, TRACE_MSG_GAP_BEFORE);
    assert_int_equal(rec.u.msg.wire_len, 40);
    assert_int_equal(rec.u.msg.wire[20], 0xab);
    assert_null(rec.u.msg.plain);
    assert_int_equal(rec.u.msg.plain_len, 0);

    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_MSG);
    assert_int_equal(rec.u.msg.dir, TRACE_DIR_S2C);
    assert_int_equal(rec.u.msg.t_ns, 4000);
    assert_int_equal(rec.u.msg.wire_len, big_len);
    assert_memory_equal(rec.u.msg.wire, big, big_len);
    assert_int_equal(rec.u.msg.plain_len, plain_len);
    assert_memory_equal(rec.u.msg.plain, plain, plain_len);

    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_CONN_CLOSE);
    assert_int_equal(rec.u.close.reason, TRACE_CLOSE_SERVER_RESET);
    assert_int_equal(rec.u.close.partial_c2s, 3);
    assert_int_equal(rec.u.close.partial_s2c, 4);
    assert_int_equal(rec.u.close.t_ns, 9000);

    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_STATS);
    assert_int_equal(rec.u.stats.n, 2);
    assert_string_equal(rec.u.stats.s[0].name, "packets");
    assert_true(rec.u.stats.s[0].value == 12345678901ull);
    assert_string_equal(rec.u.stats.s[1].name, "gaps");

    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_END);
    assert_int_equal(rec.u.end.records, 6);
    assert_int_equal(rec.u.end.t_ns, 9500);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_END);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_END);
    assert_int_equal(trace_reader_lost_bytes(r), 0);
    assert_int_equal(trace_reader_records(r), 7);
}

static void
test_trace_roundtrip_every_type(void **state)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    struct trace_reader *r;
    size_t big_len = 5u * 1024 * 1024 + 3, plain_len = 6u * 1024 * 1024;
    uint8_t *big = mk_wire(big_len, 2012, 1),
            *plain = mk_wire(plain_len, 2013, 2);
    uint8_t *file;
    size_t file_len;
    FILE *fp;

    tmp_path(path, sizeof(path), "every.zst");
    mk_header(&h);
    w = trace_writer_open(path, 0, &h, &err);
    assert_non_null(w);
    write_every_type(w, big, big_len, plain, plain_len);
    assert_int_equal(trace_writer_records(w), 6);
    assert_int_equal(trace_writer_close(w), 0);

    r = trace_reader_open(path, &err); /* by path */
    assert_non_null(r);
    assert_string_equal(trace_reader_header(r)->source_desc, "test_trace.c");
    check_every_type(r, big, big_len, plain, plain_len);
    trace_reader_free(r);

    fp = fopen(path, "rb"); /* by FILE * */
    assert_non_null(fp);
    r = trace_reader_open_fp(fp, &err);
    assert_non_null(r);
    check_every_type(r, big, big_len, plain, plain_len);
    trace_reader_free(r);
    fclose(fp);

    file = slurp(path, &file_len); /* from memory */
    r = trace_reader_open_mem(file, file_len, &err);
    assert_non_null(r);
    check_every_type(r, big, big_len, plain, plain_len);
    trace_reader_free(r);
    free(file);
    free(big);
    free(plain);
}

/* Every zstd level writes the same records; a level zstd refuses is
 * refused and changes nothing. */
static void
test_trace_writer_levels(void **state)
{
    const int levels[] = {
        TRACE_ZSTD_LEVEL_DEFAULT, TRACE_ZSTD_LEVEL_IMPORT, 1, -1, -7, 19,
        trace_zstd_level_min()};
    size_t big_len = 300000, plain_len = 200000, len;
    uint8_t *big = mk_wire(big_len, 2012, 1),
            *plain = mk_wire(plain_len, 2013, 2), *file;
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    struct trace_reader *r;

    mk_header(&h);
    assert_true(trace_zstd_level_min() < 0);
    assert_true(trace_zstd_level_max() >= 19);
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        tmp_path(path, sizeof(path), "level.zst");
        w = trace_writer_open(path, 0, &h, &err);
        assert_non_null(w);
        assert_int_equal(trace_writer_set_level(w, levels[i]), 0);
        assert_int_equal(trace_writer_set_level(w, trace_zstd_level_max() + 1),
                         MT_EUSAGE);
        assert_int_equal(trace_writer_set_level(w, trace_zstd_level_min() - 1),
                         MT_EUSAGE);
        write_every_type(w, big, big_len, plain, plain_len);
        assert_int_equal(trace_writer_close(w), 0);
        file = slurp(path, &len);
        r = trace_reader_open_mem(file, len, &err);
        assert_non_null(r);
        check_every_type(r, big, big_len, plain, plain_len);
        trace_reader_free(r);
        free(file);
    }
    free(big);
    free(plain);
}

/* The message fast path encodes the same bytes as the generic encoder,
 * whether the buffer has room or must grow, and refuses the same records;
 * at the buffer's maximum it refuses and leaves the buffer unchanged. */
static void
test_trace_msg_encode_same_bytes(void **state)
{
    uint8_t *wire = mk_wire(300, 2012, 3), *plain = mk_wire(500, 2013, 4);
    struct trace_rec rec;
    struct mt_buf a, b;
    struct mt_err err;

    mt_buf_init(&a, 1 << 20);
    mt_buf_init(&b, 1 << 20);
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_MSG;
    rec.u.msg = (struct trace_msg){.conn_id = 0x0102030405060708ull,
                                   .t_ns = 0x1112131415161718ull,
                                   .dir = TRACE_DIR_S2C,
                                   .flags = TRACE_MSG_RESYNC,
                                   .wire = wire,
                                   .wire_len = 300,
                                   .plain = plain,
                                   .plain_len = 500};
    assert_int_equal(trace__rec_encode(&a, &rec, &err), 0);
    assert_int_equal(trace__msg_encode(&b, &rec.u.msg, &err), 0);
    rec.u.msg.plain = NULL; /* and without a plain form */
    rec.u.msg.plain_len = 0;
    assert_int_equal(trace__rec_encode(&a, &rec, &err), 0);
    assert_int_equal(trace__msg_encode(&b, &rec.u.msg, &err), 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    rec.u.msg.dir = 2; /* invalid: both refuse, nothing appended */
    assert_int_equal(trace__rec_encode(&a, &rec, &err), MT_ECORRUPT);
    assert_int_equal(trace__msg_encode(&b, &rec.u.msg, &err), MT_ECORRUPT);
    rec.u.msg.dir = 0;
    rec.u.msg.wire_len = TRACE_MSG_LEN_MAX + 1;
    assert_int_equal(trace__msg_encode(&b, &rec.u.msg, &err), MT_ETOOBIG);
    assert_int_equal(a.len, b.len);
    /* Many records of every size up to 300 (an empty wire included), so
     * that the buffer grows both ways: room left, and room made. */
    for (uint32_t i = 0; i < 2000; i++) {
        rec.u.msg.wire_len = (i * 7919u) % 301u;
        rec.u.msg.t_ns = i;
        assert_int_equal(trace__rec_encode(&a, &rec, &err), 0);
        assert_int_equal(trace__msg_encode(&b, &rec.u.msg, &err), 0);
    }
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    /* A buffer at its maximum: refused, unchanged, with a message. */
    mt_buf_free(&b);
    mt_buf_init(&b, 5 + 29 + 300 - 1);
    rec.u.msg.wire_len = 300;
    err.msg[0] = 0;
    assert_int_equal(trace__msg_encode(&b, &rec.u.msg, &err), MT_ETOOBIG);
    assert_int_equal(b.len, 0);
    assert_non_null(strstr(err.msg, "no room"));
    rec.u.msg.wire_len = 299;
    assert_int_equal(trace__msg_encode(&b, &rec.u.msg, &err), 0);
    assert_int_equal(b.len, 5 + 29 + 299);
    mt_buf_free(&a);
    mt_buf_free(&b);
    free(wire);
    free(plain);
}

/* The default clock (CLOCK_MONOTONIC_COARSE) ages frames on the same time
 * base as the CLOCK_MONOTONIC values callers pass to trace_writer_tick. */
static void
test_trace_writer_default_clock(void **state)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    uint8_t *wire = mk_wire(200, 2013, 6);
    struct trace_msg m = {
        .conn_id = 1, .dir = TRACE_DIR_C2S, .wire = wire, .wire_len = 200};
    uint64_t b0;

    tmp_path(path, sizeof(path), "clock.zst");
    mk_header(&h);
    w = trace_writer_open(path, 0, &h, &err);
    assert_non_null(w);
    b0 = trace_writer_bytes(w);
    assert_int_equal(trace_writer_msg(w, &m), 0);
    assert_int_equal(trace_writer_bytes(w), b0);
    assert_int_equal(trace_writer_tick(w, mt_now_ns() + TRACE_FLUSH_NS), 0);
    assert_true(trace_writer_bytes(w) > b0);
    assert_int_equal(trace_writer_close(w), 0);
    free(wire);
}

/* The index skippable frame and footer at the end match the frames. */
static void
test_trace_index_and_footer(void **state)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    struct trace_msg m = {.conn_id = 1, .dir = TRACE_DIR_C2S};
    uint8_t *file, *wire = mk_wire(100, 2013, 3);
    size_t len;
    uint32_t nframes, size, c = 0, d = 0, k = 0;
    uint64_t t, off = 0, recs = 0;
    struct rd rd;

    tmp_path(path, sizeof(path), "index.zst");
    mk_header(&h);
    w = trace_writer_open(path, 0, &h, &err);
    assert_non_null(w);
    m.wire = wire;
    m.wire_len = 100;
    for (int i = 0; i < 3; i++) {
        m.t_ns = 5000 + (uint64_t)i;
        assert_int_equal(trace_writer_msg(w, &m), 0);
        assert_int_equal(trace_writer_flush(w), 0);
    }
    assert_int_equal(trace_writer_close(w), 0);
    file = slurp(path, &len);
    rd = rd_init(file + len - TRACE_FOOTER_LEN, TRACE_FOOTER_LEN);
    rd_le32(&rd, &nframes);
    rd_le32(&rd, &k);
    assert_int_equal(k, TRACE_INDEX_VERSION);
    rd_le32(&rd, &k);
    assert_int_equal(k, TRACE_FOOTER_MAGIC);
    assert_int_equal(nframes, 5); /* header, 3 messages, end */
    size = nframes * TRACE_INDEX_ENTRY_LEN + TRACE_FOOTER_LEN;
    rd = rd_init(file + len - size - 8, size + 8);
    rd_le32(&rd, &k);
    assert_int_equal(k, TRACE_INDEX_FRAME_MAGIC);
    rd_le32(&rd, &k);
    assert_int_equal(k, size);
    for (uint32_t i = 0; i < nframes; i++) {
        rd_le32(&rd, &c);
        rd_le32(&rd, &d);
        rd_le64(&rd, &t);
        rd_le32(&rd, &k);
        /* each frame is where the index says, decompresses to d, and is
         * followed by its checksum frame: CRC-32 and length of its bytes */
        assert_int_equal(ZSTD_findFrameCompressedSize(file + off, len - off),
                         c - TRACE_CRC_FRAME_LEN);
        assert_true(ZSTD_getFrameContentSize(file + off, c) == d);
        {
            struct rd cr = rd_init(file + off + c - TRACE_CRC_FRAME_LEN,
                                   TRACE_CRC_FRAME_LEN);
            uint32_t cm, cs, cc, cl;
            rd_le32(&cr, &cm);
            rd_le32(&cr, &cs);
            rd_le32(&cr, &cc);
            rd_le32(&cr, &cl);
            assert_int_equal(cm, TRACE_CRC_FRAME_MAGIC);
            assert_int_equal(cs, 8);
            assert_int_equal(cl, c - TRACE_CRC_FRAME_LEN);
            assert_int_equal(cc, crc32(0, file + off, cl));
        }
        if (i >= 1 && i <= 3)
            assert_int_equal(t, 5000 + i - 1);
        assert_int_equal(k, 1);
        off += c;
        recs += k;
    }
    assert_int_equal(off, len - size - 8);
    assert_int_equal(recs, 5);
    free(file);
    free(wire);
}

static void
test_trace_writer_mode_and_excl(void **state)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    struct stat st;

    tmp_path(path, sizeof(path), "excl.zst");
    mk_header(&h);
    umask(022);
    w = trace_writer_open(path, 0, &h, &err);
    assert_non_null(w);
    assert_int_equal(trace_writer_close(w), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_null(trace_writer_open(path, 0, &h, &err));
    assert_int_equal(err.code, -EEXIST);
    assert_non_null(strstr(err.msg, "--force"));
    chmod(path, 0644);
    w = trace_writer_open(path, TRACE_W_FORCE, &h, &err);
    assert_non_null(w);
    assert_int_equal(trace_writer_close(w), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_null(trace_writer_open("/nonexistent/dir/t.zst", 0, &h, &err));
    assert_int_equal(err.code, -ENOENT);
    assert_int_equal(trace_writer_close(NULL), 0);
}

/* --force on something that is not a regular file (a FIFO, a device such
 * as /dev/full): the writer neither chmods nor, when the header cannot be
 * written, unlinks it.  As root an unlink of OUT=/dev/full removed the
 * machine's device node. */
static void
test_trace_writer_force_not_regular(void **state)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    struct stat st;
    int rfd;

    (void)state;
    mk_header(&h);
    tmp_path(path, sizeof(path), "fifo");
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_int_equal(chmod(path, 0644), 0);
    rfd = open(path, O_RDONLY | O_NONBLOCK); /* so the writer's open returns */
    assert_true(rfd >= 0);
    w = trace_writer_open(path, TRACE_W_FORCE, &h, &err);
    assert_non_null(w);
    close(rfd); /* the close frame then fails: EPIPE */
    signal(SIGPIPE, SIG_IGN);
    (void)trace_writer_close(w);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0644);

    /* A node of /dev/full's device, made here (needs CAP_MKNOD): the header
     * write fails with ENOSPC, and the node stays, mode unchanged. */
    tmp_path(path, sizeof(path), "full");
    if (mknod(path, S_IFCHR | 0644, makedev(1, 7)) != 0)
        return; /* not root: the FIFO case above covers the chmod */
    assert_int_equal(chmod(path, 0644), 0);
    assert_null(trace_writer_open(path, TRACE_W_FORCE, &h, &err));
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0644);
    unlink(path);
}

static void
test_trace_writer_refuses_invalid(void **state)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    uint8_t wire[32] = {0};
    struct trace_msg m = {.conn_id = 1, .dir = 2, .wire = wire, .wire_len = 32};
    struct trace_stats s = {.n = TRACE_STATS_MAX + 1};
    struct trace_conn_open o = {0};
    uint64_t n0;

    tmp_path(path, sizeof(path), "invalid.zst");
    mk_header(&h);
    memset(h.source_desc, 'x', sizeof(h.source_desc)); /* no NUL */
    assert_null(trace_writer_open(path, 0, &h, &err));
    assert_int_equal(err.code, MT_ECORRUPT);
    tmp_path(path, sizeof(path), "invalid.zst");
    mk_header(&h);
    w = trace_writer_open(path, 0, &h, &err);
    assert_non_null(w);
    n0 = trace_writer_records(w);
    assert_int_equal(trace_writer_msg(w, &m), MT_ECORRUPT); /* dir 2 */
    m.dir = TRACE_DIR_C2S;
    m.wire_len = TRACE_MSG_LEN_MAX + 1;
    assert_int_equal(trace_writer_msg(w, &m), MT_ETOOBIG);
    m.wire_len = 32;
    m.plain = wire;
    m.plain_len = 32; /* plain form for a non-OP_COMPRESSED message */
    assert_int_equal(trace_writer_msg(w, &m), MT_ECORRUPT);
    assert_int_equal(trace_writer_stats(w, &s), MT_ETOOBIG);
    memset(o.client, 'a', sizeof(o.client));
    assert_int_equal(trace_writer_conn_open(w, &o), MT_ECORRUPT);
    assert_int_equal(trace_writer_records(w), n0);
    m.plain = NULL;
    m.plain_len = 0;
    assert_int_equal(trace_writer_msg(w, &m), 0);
    assert_int_equal(trace_writer_close(w), 0);
}

static void
test_trace_writer_flush_interval(void **state)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    struct mt_clock clk;
    uint64_t now = 1000000, b0, b1;
    uint8_t *wire = mk_wire(200, 2013, 6), *file;
    struct trace_msg m = {
        .conn_id = 1, .dir = TRACE_DIR_C2S, .wire = wire, .wire_len = 200};
    struct tally t;
    size_t len;

    tmp_path(path, sizeof(path), "tick.zst");
    mk_header(&h);
    w = trace_writer_open(path, 0, &h, &err);
    assert_non_null(w);
    mt_clock_manual(&clk, &now);
    trace_writer_set_clock(w, &clk);
    b0 = trace_writer_bytes(w);
    assert_true(b0 > 0); /* the header frame is on disk at once */
    assert_int_equal(trace_writer_msg(w, &m), 0);
    assert_int_equal(trace_writer_bytes(w), b0); /* pending */
    assert_int_equal(trace_writer_tick(w, now + TRACE_FLUSH_NS - 1), 0);
    assert_int_equal(trace_writer_bytes(w), b0);
    assert_int_equal(trace_writer_tick(w, now + TRACE_FLUSH_NS), 0);
    b1 = trace_writer_bytes(w);
    assert_true(b1 > b0);
    /* what a crash now would leave: the header and the message */
    file = slurp(path, &len);
    assert_int_equal(len, b1);
    assert_int_equal(read_all_mem(file, len, &t, true), MT_ETRUNC);
    assert_int_equal(t.cnt[TRACE_REC_MSG], 1);
    assert_non_null(strstr(t.err.msg, "without an end record"));
    free(file);
    /* a write after a quiet 100 ms ends the frame by itself */
    assert_int_equal(trace_writer_msg(w, &m), 0);
    assert_int_equal(trace_writer_bytes(w), b1);
    now += TRACE_FLUSH_NS;
    assert_int_equal(trace_writer_msg(w, &m), 0);
    assert_true(trace_writer_bytes(w) > b1);
    /* a frame ends when it holds 1 MiB, whatever the clock */
    b1 = trace_writer_bytes(w);
    for (int i = 0; i < 6000 && trace_writer_bytes(w) == b1; i++)
        assert_int_equal(trace_writer_msg(w, &m), 0);
    assert_true(trace_writer_bytes(w) > b1);
    assert_int_equal(trace_writer_close(w), 0);
    free(wire);
}

static void
test_trace_writer_dev_full(void **state)
{
    struct trace_header h;
    struct mt_err err;
    struct stat st;
    /* Opened without O_CREAT: where /dev/full is missing, the test must
     * not create a regular file in its place (which then fills). */
    int fd = open("/dev/full", O_WRONLY);
    FILE *fp;

    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        skip();
    }
    fp = fdopen(fd, "wb");
    assert_non_null(fp);
    mk_header(&h);
    assert_null(trace_writer_open_fp(fp, &h, &err));
    assert_int_equal(err.code, -ENOSPC);
    assert_non_null(strstr(err.msg, "No space left"));
    fclose(fp);
}

/* A full disk mid-trace: the error is reported and sticky; the bytes that
 * made it hold every record of the complete frames. */
static void
test_trace_writer_enospc_midway(void **state)
{
    size_t cap = 64 * 1024;
    uint8_t *disk = calloc(1, cap);
    FILE *fp = fmemopen(disk, cap, "w");
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    uint8_t *wire = mk_wire(1000, 2013, 7);
    struct trace_msg m = {
        .conn_id = 1, .dir = TRACE_DIR_C2S, .wire = wire, .wire_len = 1000};
    struct tally t;
    uint64_t good_bytes = 0, good_msgs = 0;
    int rc = 0, i;

    assert_non_null(fp);
    setvbuf(fp, NULL, _IONBF, 0);
    mk_header(&h);
    w = trace_writer_open_fp(fp, &h, &err);
    assert_non_null(w);
    for (i = 0; i < 1000 && rc == 0; i++) {
        wire[100] = (uint8_t)i;
        wire[500] = (uint8_t)(i >> 3); /* incompressible-ish */
        for (int k = 16; k < 1000; k += 7)
            wire[k] = (uint8_t)(wire[k] * 31 + i);
        rc = trace_writer_msg(w, &m);
        if (rc == 0)
            rc = trace_writer_flush(w);
        if (rc == 0) {
            good_bytes = trace_writer_bytes(w);
            good_msgs = (uint64_t)i + 1;
        }
    }
    assert_int_equal(rc, -ENOSPC);
    assert_true(good_msgs > 10);
    assert_int_equal(trace_writer_msg(w, &m), -ENOSPC); /* sticky */
    assert_int_equal(trace_writer_close(w), -ENOSPC);
    fclose(fp);
    /* the "disk": complete frames, then the partial one */
    rc = read_all_mem(disk, cap, &t, false);
    assert_true(rc < 0);
    assert_int_equal(t.cnt[TRACE_REC_MSG], good_msgs);
    assert_int_equal(read_all_mem(disk, good_bytes, &t, false), MT_ETRUNC);
    assert_int_equal(t.cnt[TRACE_REC_MSG], good_msgs);
    free(disk);
    free(wire);
}

/* Allocation failures anywhere in open/write/read: an error, no crash. */
static void
test_trace_alloc_failures(void **state)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    uint64_t offs[8];
    size_t len;
    uint8_t *file = build_frames("alloc.zst", 2, offs, &len);
    struct tally full, t;
    int rc;

    assert_int_equal(read_all_mem(file, len, &full, true), MT_END);
    mk_header(&h);
    mt_log_set_level(MT_LOG_ERROR); /* "seek index out of memory" is expected */
    for (uint64_t n = 1; n < 16; n++) {
        struct trace_writer *w;
        tmp_path(path, sizeof(path), "alloc2.zst");
        mt_mem_fail_after(n);
        w = trace_writer_open(path, 0, &h, &err);
        mt_mem_fail_after(0);
        if (w == NULL)
            assert_int_equal(err.code, -ENOMEM);
        else
            assert_int_equal(trace_writer_close(w), 0);
        mt_mem_fail_after(n);
        rc = read_all_mem(file, len, &t, true);
        mt_mem_fail_after(0);
        /* either everything, or a prefix and -ENOMEM (never records of a
         * half-decoded frame) */
        assert_true(rc == MT_END || rc == -ENOMEM);
        assert_true(t.total <= full.total);
        if (rc == MT_END)
            assert_true(t.total == full.total && t.wire_sum == full.wire_sum);
        else
            assert_true(t.errors <= 1); /* 0: open failed */
    }
    mt_log_set_level(MT_LOG_INFO);
    free(file);
}

int
main(void)
{
    const struct CMUnitTest valid[] = {
        cmocka_unit_test(test_trace_roundtrip_every_type),
        cmocka_unit_test(test_trace_index_and_footer),
        cmocka_unit_test(test_trace_writer_mode_and_excl),
        cmocka_unit_test(test_trace_writer_force_not_regular),
        cmocka_unit_test(test_trace_writer_flush_interval),
        cmocka_unit_test(test_trace_writer_levels),
        cmocka_unit_test(test_trace_writer_default_clock),
    };
    const struct CMUnitTest invalid[] = {
        cmocka_unit_test(test_trace_writer_refuses_invalid),
        cmocka_unit_test(test_trace_msg_encode_same_bytes),
        cmocka_unit_test(test_trace_writer_dev_full),
        cmocka_unit_test(test_trace_writer_enospc_midway),
        cmocka_unit_test(test_trace_alloc_failures),
    };
    int rc = cmocka_run_group_tests_name("trace: valid", valid, setup_dir,
                                         teardown_dir);
    rc |= cmocka_run_group_tests_name("trace: invalid", invalid, setup_dir,
                                      teardown_dir);
    return rc;
}
