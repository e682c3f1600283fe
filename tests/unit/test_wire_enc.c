/*
 * test_wire_enc.c -- core/wire_enc.c: encoders round-trip through the
 * parser; OP_COMPRESSED with every compressor; decompression bombs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/wire.h"

static const uint8_t compressors[] = {
    WIRE_COMPRESSOR_NOOP, WIRE_COMPRESSOR_SNAPPY, WIRE_COMPRESSOR_ZLIB,
    WIRE_COMPRESSOR_ZSTD};

/* Parses the message in b (expects exactly one) into m. */
static void
parse_one(const struct mt_buf *b, struct wire_msg *m)
{
    struct mt_err err = {0};
    size_t used;
    int rc = wire_msg_parse(b->data, b->len, m, &used, &err);

    if (rc != MT_OK)
        print_error("parse: %d %s\n", rc, err.msg);
    assert_int_equal(rc, MT_OK);
    assert_int_equal(used, b->len);
}

/* Builds a find with a kind-1 sequence of two documents, encoded with
 * flags, into b. */
static void
encode_insert(struct mt_buf *b, uint32_t flags)
{
    bson_t *body = BCON_NEW("insert", "test_col", "ordered", BCON_BOOL(true),
                            "$db", "benchmark_db");
    bson_t *d1 = BCON_NEW("_id", BCON_INT32(1));
    bson_t *d2 = BCON_NEW("_id", BCON_INT32(2), "x", "[", "y", "]");
    uint8_t docs[256];
    struct wire_seq seq;

    memcpy(docs, bson_get_data(d1), d1->len);
    memcpy(docs + d1->len, bson_get_data(d2), d2->len);
    seq.identifier = "documents";
    seq.docs = docs;
    seq.docs_len = d1->len + d2->len;
    assert_int_equal(wire_encode_msg(b, 77, 0, flags, body, &seq, 1), 0);
    bson_destroy(body);
    bson_destroy(d1);
    bson_destroy(d2);
}

/* ---- valid ---- */

static void
test_wire_encode_msg_round_trip(void **state)
{
    uint32_t flags[] = {0, WIRE_MSG_CHECKSUM_PRESENT,
                        WIRE_MSG_MORE_TO_COME | WIRE_MSG_EXHAUST_ALLOWED};

    for (size_t i = 0; i < 3; i++) {
        struct mt_buf b;
        struct wire_msg m;
        struct wire_cmd cmd;

        mt_buf_init(&b, 1 << 16);
        encode_insert(&b, flags[i]);
        parse_one(&b, &m);
        assert_int_equal(m.h.request_id, 77);
        assert_int_equal(m.flags, flags[i]);
        assert_int_equal(m.has_checksum, i == 1);
        if (i == 1)
            assert_int_equal(m.checksum, wire_crc32c(0, b.data, b.len - 4));
        assert_int_equal(m.nseq, 1);
        assert_string_equal(m.seq[0].identifier, "documents");
        assert_int_equal(wire_msg_command(&m, &cmd), 0);
        assert_string_equal(cmd.name, "insert");
        assert_string_equal(cmd.coll, "test_col");
        assert_string_equal(cmd.db, "benchmark_db");
        mt_buf_free(&b);
    }
}

static void
test_wire_encode_query_round_trip(void **state)
{
    bson_t *q =
        BCON_NEW("$query", "{", "ismaster", BCON_INT32(1), "}",
                 "$readPreference", "{", "mode", "secondaryPreferred", "}");
    struct mt_buf b;
    struct wire_msg m;
    struct wire_cmd cmd;

    mt_buf_init(&b, 1 << 16);
    assert_int_equal(wire_encode_query(&b, 5, 4, "admin.$cmd", 0, -1, q), 0);
    parse_one(&b, &m);
    assert_int_equal(m.h.op_code, WIRE_OP_QUERY);
    assert_int_equal(m.query_flags, 4);
    assert_string_equal(m.full_collection, "admin.$cmd");
    assert_int_equal(m.number_to_return, -1);
    assert_int_equal(m.body_len, q->len);
    assert_int_equal(wire_msg_command(&m, &cmd), 0);
    assert_string_equal(cmd.name, "ismaster"); /* unwrapped from $query */
    assert_string_equal(cmd.db, "admin");
    assert_true(cmd.is_hello);
    bson_destroy(q);
    mt_buf_free(&b);
}

static void
test_wire_encode_reply_round_trip(void **state)
{
    bson_t *a = BCON_NEW("ismaster", BCON_BOOL(true), "ok", BCON_DOUBLE(1));
    bson_t *c = BCON_NEW("n", BCON_INT32(3));
    const bson_t *docs[] = {a, c};
    struct mt_buf b;
    struct wire_msg m;

    mt_buf_init(&b, 1 << 16);
    assert_int_equal(
        wire_encode_reply(&b, 9, 5, 8, 1234567890123LL, 3, docs, 2), 0);
    assert_int_equal(wire_encode_reply(&b, 10, 6, 0, 0, 0, NULL, 0), 0);
    parse_one(&(struct mt_buf){b.data, b.len - 36, 0, 0}, &m);
    assert_int_equal(m.h.response_to, 5);
    assert_int_equal(m.cursor_id, 1234567890123LL);
    assert_int_equal(m.starting_from, 3);
    assert_int_equal(m.number_returned, 2);
    assert_int_equal(m.body_len, a->len);
    assert_int_equal(m.docs_len, a->len + c->len);
    parse_one(&(struct mt_buf){b.data + b.len - 36, 36, 0, 0}, &m);
    assert_int_equal(m.number_returned, 0);
    assert_null(m.body);
    bson_destroy(a);
    bson_destroy(c);
    mt_buf_free(&b);
}

static void
test_wire_encode_compressed_round_trip(void **state)
{
    for (size_t i = 0; i < sizeof(compressors); i++) {
        struct mt_buf plain, z, back;
        struct wire_msg m, inner;
        struct wire_cmd cmd;
        struct mt_err err;

        mt_buf_init(&plain, 1 << 16);
        mt_buf_init(&z, 1 << 16);
        mt_buf_init(&back, 1 << 16);
        encode_insert(&plain, WIRE_MSG_CHECKSUM_PRESENT);
        assert_int_equal(wire_encode_compressed(&z, plain.data, plain.len,
                                                compressors[i], &err),
                         0);
        parse_one(&z, &m);
        assert_int_equal(m.h.op_code, WIRE_OP_COMPRESSED);
        assert_int_equal(m.h.request_id, 77);
        assert_int_equal(m.original_opcode, WIRE_OP_MSG);
        assert_int_equal(m.uncompressed_size, (int32_t)plain.len - 16);
        assert_int_equal(m.compressor_id, compressors[i]);
        assert_int_equal(wire_decompress(&m, &back, &err), 0);
        assert_int_equal(back.len, plain.len);
        assert_memory_equal(back.data, plain.data, plain.len);
        parse_one(&back, &inner);
        assert_int_equal(wire_msg_command(&inner, &cmd), 0);
        assert_string_equal(cmd.name, "insert");
        mt_buf_free(&plain);
        mt_buf_free(&z);
        mt_buf_free(&back);
    }
}

/* Other opcodes wrap and unwrap too (OP_QUERY, OP_REPLY). */
static void
test_wire_encode_compressed_legacy(void **state)
{
    bson_t *q = BCON_NEW("isMaster", BCON_INT32(1));
    const bson_t *docs[] = {q};
    struct mt_buf plain, z, back;
    struct wire_msg m;

    for (size_t i = 0; i < sizeof(compressors); i++) {
        for (int op = 0; op < 2; op++) {
            mt_buf_init(&plain, 1 << 16);
            mt_buf_init(&z, 1 << 16);
            mt_buf_init(&back, 1 << 16);
            if (op == 0)
                assert_int_equal(
                    wire_encode_query(&plain, 1, 0, "admin.$cmd", 0, -1, q), 0);
            else
                assert_int_equal(
                    wire_encode_reply(&plain, 2, 1, 8, 0, 0, docs, 1), 0);
            assert_int_equal(wire_encode_compressed(&z, plain.data, plain.len,
                                                    compressors[i], NULL),
                             0);
            parse_one(&z, &m);
            assert_int_equal(wire_decompress(&m, &back, NULL), 0);
            assert_int_equal(back.len, plain.len);
            assert_memory_equal(back.data, plain.data, plain.len);
            mt_buf_free(&plain);
            mt_buf_free(&z);
            mt_buf_free(&back);
        }
    }
    bson_destroy(q);
}

/* Threads decompress at once (zstd keeps one context per thread, CRC-32C
 * picks its implementation on first use): results stay exact.  Run under
 * `make tsan` this also checks for data races. */
struct thread_job {
    const struct mt_buf *z;
    const struct mt_buf *plain;
    int ok;
};

static void *
decompress_many(void *arg)
{
    struct thread_job *j = arg;
    struct mt_buf out;
    struct wire_msg m;
    size_t used;

    j->ok = 1;
    mt_buf_init(&out, 1 << 16);
    for (int i = 0; i < 200 && j->ok; i++) {
        mt_buf_reset(&out);
        j->ok =
            wire_msg_parse(j->z->data, j->z->len, &m, &used, NULL) == MT_OK &&
            wire_decompress(&m, &out, NULL) == 0 && out.len == j->plain->len &&
            memcmp(out.data, j->plain->data, out.len) == 0;
    }
    mt_buf_free(&out);
    return NULL;
}

static void
test_wire_decompress_threads(void **state)
{
    struct mt_buf plain, z[4];
    struct thread_job jobs[8];
    pthread_t t[8];

    mt_buf_init(&plain, 1 << 16);
    encode_insert(&plain, WIRE_MSG_CHECKSUM_PRESENT);
    for (int c = 0; c < 4; c++) {
        mt_buf_init(&z[c], 1 << 16);
        assert_int_equal(wire_encode_compressed(&z[c], plain.data, plain.len,
                                                compressors[c], NULL),
                         0);
    }
    for (int i = 0; i < 8; i++) {
        jobs[i] = (struct thread_job){&z[i % 4], &plain, 0};
        assert_int_equal(pthread_create(&t[i], NULL, decompress_many, &jobs[i]),
                         0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_true(jobs[i].ok);
    }
    for (int c = 0; c < 4; c++)
        mt_buf_free(&z[c]);
    mt_buf_free(&plain);
}

/* ---- invalid: decompression bombs and lies ---- */

/* An OP_COMPRESSED view over a payload, without a wire message. */
static struct wire_msg
view(uint8_t cid, int32_t usize, const uint8_t *payload, size_t n)
{
    struct wire_msg m;

    memset(&m, 0, sizeof(m));
    m.h.op_code = WIRE_OP_COMPRESSED;
    m.h.request_id = 3;
    m.original_opcode = WIRE_OP_MSG;
    m.compressor_id = cid;
    m.uncompressed_size = usize;
    m.compressed = payload;
    m.compressed_len = n;
    return m;
}

/* Compresses n bytes of `fill` with cid into a new buffer. */
static uint8_t *
squeeze(uint8_t cid, size_t n, uint8_t fill, size_t *out_len)
{
    uint8_t *src = test_malloc(n);
    struct mt_buf msg, z;
    struct wire_msg m;
    uint8_t *copy;

    memset(src, fill, n);
    mt_buf_init(&msg, n + 16);
    mt_buf_init(&z, n + 1024);
    wr_le32(src, (uint32_t)n); /* make src a "message": header + payload */
    wr_le32(src + 12, WIRE_OP_MSG);
    assert_int_equal(mt_buf_append(&msg, src, n), 0);
    assert_int_equal(wire_encode_compressed(&z, msg.data, msg.len, cid, NULL),
                     0);
    parse_one(&z, &m);
    *out_len = m.compressed_len;
    copy = test_malloc(m.compressed_len);
    memcpy(copy, m.compressed, m.compressed_len);
    test_free(src);
    mt_buf_free(&msg);
    mt_buf_free(&z);
    return copy;
}

static void
expect_decompress_err(const struct wire_msg *m, size_t buf_max, int code,
                      const char *part)
{
    struct mt_buf out;
    struct mt_err err = {0};
    int rc;

    mt_buf_init(&out, buf_max);
    rc = wire_decompress(m, &out, &err);
    if (rc != code || strstr(err.msg, part) == NULL)
        print_error("%s: rc %d (want %d) msg \"%s\" (want \"%s\")\n",
                    wire_compressor_name(m->compressor_id), rc, code, err.msg,
                    part);
    assert_int_equal(rc, code);
    assert_non_null(strstr(err.msg, part));
    assert_int_equal(out.len, 0); /* nothing appended */
    mt_buf_free(&out);
}

/* uncompressedSize says more than the payload holds. */
static void
test_wire_decompress_size_lies_high(void **state)
{
    static const char *want[] = {"noop payload 984 bytes != uncompressedSize "
                                 "1984",
                                 "snappy length 984 != uncompressedSize 1984",
                                 "zlib output 984 bytes != uncompressedSize "
                                 "1984",
                                 "zstd content size 984 != uncompressedSize "
                                 "1984"};
    for (size_t i = 0; i < sizeof(compressors); i++) {
        size_t n;
        uint8_t *p = squeeze(compressors[i], 1000, 'a', &n);
        struct wire_msg m = view(compressors[i], 1984, p, n);

        expect_decompress_err(&m, 1 << 20, MT_ECOMPRESS, want[i]);
        test_free(p);
    }
}

/* uncompressedSize says less than the payload expands to. */
static void
test_wire_decompress_size_lies_low(void **state)
{
    static const char *want[] = {"noop payload 984 bytes != uncompressedSize "
                                 "100",
                                 "snappy length 984 != uncompressedSize 100",
                                 "zlib output exceeds uncompressedSize 100",
                                 "zstd content size 984 != uncompressedSize "
                                 "100"};
    for (size_t i = 0; i < sizeof(compressors); i++) {
        size_t n;
        uint8_t *p = squeeze(compressors[i], 1000, 'a', &n);
        struct wire_msg m = view(compressors[i], 100, p, n);

        expect_decompress_err(&m, 1 << 20, MT_ECOMPRESS, want[i]);
        test_free(p);
    }
}

/* 40 MB of zeros in a few KB, declared as 1000 bytes: the output never
 * grows past the declared size. */
static void
test_wire_decompress_ratio_bomb(void **state)
{
    const size_t big = 40u * 1000 * 1000;
    uint8_t *zeros = test_calloc(1, big);
    uLongf zlen = compressBound(big);
    uint8_t *z = test_malloc(zlen);
    size_t zs_cap = ZSTD_compressBound(big), zs_len;
    uint8_t *zs = test_malloc(zs_cap);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    struct wire_msg m;
    struct mt_buf out;

    assert_int_equal(compress2(z, &zlen, zeros, big, 9), Z_OK);
    assert_true(zlen < 100000);
    m = view(WIRE_COMPRESSOR_ZLIB, 1000, z, zlen);
    expect_decompress_err(&m, 1 << 20, MT_ECOMPRESS, "zlib output exceeds");
    /* zstd without a content size in the frame header: bounded output. */
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
    zs_len = ZSTD_compress2(cctx, zs, zs_cap, zeros, big);
    assert_false(ZSTD_isError(zs_len));
    assert_int_equal(ZSTD_getFrameContentSize(zs, zs_len),
                     ZSTD_CONTENTSIZE_UNKNOWN);
    m = view(WIRE_COMPRESSOR_ZSTD, 1000, zs, zs_len);
    expect_decompress_err(&m, 1 << 20, MT_ECOMPRESS, "zstd: ");
    /* The same zstd frame declared at its true 40 MB, with a 1 MB buffer:
     * refused before anything is allocated. */
    m = view(WIRE_COMPRESSOR_ZSTD, (int32_t)big, zs, zs_len);
    mt_buf_init(&out, 1 << 20);
    assert_int_equal(wire_decompress(&m, &out, NULL), MT_ETOOBIG);
    assert_null(out.data);
    ZSTD_freeCCtx(cctx);
    test_free(zeros);
    test_free(z);
    test_free(zs);
}

static void
test_wire_decompress_limits(void **state)
{
    static const uint8_t none[1];
    struct wire_msg m =
        view(WIRE_COMPRESSOR_NOOP, WIRE_MSG_LEN_MAX - 15, none, 0);
    struct mt_buf out;

    expect_decompress_err(&m, SIZE_MAX, MT_ETOOBIG,
                          "uncompressedSize 47999985 exceeds maximum");
    m.uncompressed_size = -1;
    expect_decompress_err(&m, 1 << 20, MT_EPROTO, "uncompressedSize -1");
    m.uncompressed_size = 5000;
    expect_decompress_err(&m, 5000, MT_ETOOBIG, "exceeds buffer room 5000");
    m.compressor_id = 9;
    m.uncompressed_size = 0;
    expect_decompress_err(&m, 1 << 20, MT_EUNSUPPORTED, "compressorId 9");
    m.h.op_code = WIRE_OP_MSG;
    expect_decompress_err(&m, 1 << 20, MT_EUSAGE, "not OP_COMPRESSED");
    /* Out of memory: -ENOMEM and the buffer unchanged. */
    m = view(WIRE_COMPRESSOR_NOOP, 1, (const uint8_t *)"x", 1);
    mt_buf_init(&out, 1 << 20);
    mt_mem_fail_after(1);
    assert_int_equal(wire_decompress(&m, &out, NULL), -ENOMEM);
    mt_mem_fail_after(0);
    assert_int_equal(out.len, 0);
    assert_int_equal(wire_decompress(&m, &out, NULL), 0);
    assert_int_equal(out.len, 17);
    mt_buf_free(&out);
}

static void
test_wire_decompress_corrupt_payload(void **state)
{
    for (size_t i = 1; i < sizeof(compressors); i++) {
        size_t n;
        uint8_t *p = squeeze(compressors[i], 1000, 'q', &n);
        struct wire_msg m = view(compressors[i], 984, p, n);
        struct mt_buf out;

        /* Truncated payload. */
        m.compressed_len = n / 2;
        expect_decompress_err(&m, 1 << 20, MT_ECOMPRESS, "");
        /* Garbage payload. */
        memset(p, 0xa5, n);
        m.compressed_len = n;
        expect_decompress_err(&m, 1 << 20, MT_ECOMPRESS, "");
        test_free(p);
        /* An empty payload. */
        m.compressed_len = 0;
        mt_buf_init(&out, 1 << 20);
        assert_int_equal(wire_decompress(&m, &out, NULL), MT_ECOMPRESS);
        mt_buf_free(&out);
    }
}

static void
test_wire_encode_limits(void **state)
{
    bson_t *body = BCON_NEW("ping", BCON_INT32(1));
    struct mt_buf b;
    uint8_t bogus[16] = {20, 0, 0, 0};

    mt_buf_init(&b, 20); /* too small for any OP_MSG with this body */
    assert_int_equal(wire_encode_msg(&b, 1, 0, 0, body, NULL, 0), MT_ETOOBIG);
    assert_int_equal(b.len, 0);
    assert_int_equal(wire_encode_msg(&b, 1, 0, 1u << 3, body, NULL, 0),
                     MT_EUSAGE);
    mt_buf_free(&b);
    mt_buf_init(&b, 1 << 16);
    /* Not one complete message: length field says 20, 16 given. */
    assert_int_equal(wire_encode_compressed(&b, bogus, 16, 2, NULL), MT_EUSAGE);
    wr_le32(bogus, 16);
    wr_le32(bogus + 12, WIRE_OP_COMPRESSED);
    assert_int_equal(wire_encode_compressed(&b, bogus, 16, 2, NULL), MT_EUSAGE);
    wr_le32(bogus + 12, WIRE_OP_MSG);
    assert_int_equal(wire_encode_compressed(&b, bogus, 16, 7, NULL),
                     MT_EUNSUPPORTED);
    assert_int_equal(b.len, 0);
    bson_destroy(body);
    mt_buf_free(&b);
}

/* Bytes libbson printed on stderr while fn(arg) ran. */
static long
stderr_bytes(void (*fn)(void *), void *arg)
{
    FILE *tmp = tmpfile();
    int saved = dup(2);
    long n;

    assert_non_null(tmp);
    assert_true(saved >= 0 && dup2(fileno(tmp), 2) == 2);
    fn(arg);
    fflush(stderr);
    assert_true(dup2(saved, 2) == 2);
    close(saved);
    assert_int_equal(fseek(tmp, 0, SEEK_END), 0);
    n = ftell(tmp);
    fclose(tmp);
    return n;
}

struct append_case {
    const bson_t *in;
    bson_t *out;
};

static void
append_all(void *arg)
{
    struct append_case *c = arg;
    bson_iter_t it;

    assert_true(bson_iter_init(&it, c->in));
    while (bson_iter_next(&it))
        assert_true(wire_bson_append_iter(c->out, NULL, 0, &it));
}

/* An array whose keys are not "0", "1", ... (nested ones too) comes out
 * renumbered, without libbson's "invalid array detected" on stderr; a
 * well-formed one and everything else come out as they were. */
static void
test_wire_bson_append_iter_renumbers(void **state)
{
    bson_t *in = bson_new(), bad, inner, good, *want;
    bson_t out = BSON_INITIALIZER;
    struct append_case c = {in, &out};

    (void)state;
    bson_append_array_begin(in, "bad", -1, &bad);
    BSON_APPEND_INT32(&bad, "x", 1);
    bson_append_array_begin(&bad, "y", -1, &inner);
    BSON_APPEND_UTF8(&inner, "7", "q");
    bson_append_array_end(&bad, &inner);
    bson_append_array_end(in, &bad);
    bson_append_array_begin(in, "good", -1, &good);
    BSON_APPEND_INT32(&good, "0", 1);
    BSON_APPEND_INT32(&good, "1", 2);
    bson_append_array_end(in, &good);
    BSON_APPEND_UTF8(in, "s", "t");
    assert_int_equal(stderr_bytes(append_all, &c), 0);
    want = BCON_NEW("bad", "[", BCON_INT32(1), "[", BCON_UTF8("q"), "]", "]",
                    "good", "[", BCON_INT32(1), BCON_INT32(2), "]", "s",
                    BCON_UTF8("t"));
    assert_int_equal(out.len, want->len);
    assert_memory_equal(bson_get_data(&out), bson_get_data(want), want->len);
    bson_destroy(want);
    bson_destroy(&out);
    bson_destroy(in);
}

/* Damaged arrays nested deeper than WIRE_BSON_DEPTH_MAX: no recursion past
 * the bound (the rest is copied as it is), nothing lost. */
static void
test_wire_bson_append_iter_depth(void **state)
{
    enum { DEPTH = WIRE_BSON_DEPTH_MAX + 50 };
    bson_t *lv = NULL; /* bson_t wants its 128-byte alignment */
    bson_t out = BSON_INITIALIZER;
    struct append_case c = {NULL, &out};

    (void)state;
    assert_int_equal(posix_memalign((void **)&lv, BSON_ALIGNOF(bson_t),
                                    (DEPTH + 1) * sizeof(bson_t)),
                     0);
    memset(lv, 0, (DEPTH + 1) * sizeof(bson_t));
    bson_init(&lv[0]);
    for (int i = 0; i < DEPTH; i++)
        bson_append_array_begin(&lv[i], "k", -1, &lv[i + 1]);
    for (int i = DEPTH; i > 0; i--)
        bson_append_array_end(&lv[i - 1], &lv[i]);
    c.in = &lv[0];
    /* libbson's one warning: the array at the bound, copied as it is */
    assert_true(stderr_bytes(append_all, &c) > 0);
    assert_int_equal(out.len, lv[0].len); /* same size: keys "k" -> "0" */
    bson_destroy(&out);
    bson_destroy(&lv[0]);
    free(lv);
}

int
main(void)
{
    const struct CMUnitTest valid_tests[] = {
        cmocka_unit_test(test_wire_encode_msg_round_trip),
        cmocka_unit_test(test_wire_encode_query_round_trip),
        cmocka_unit_test(test_wire_encode_reply_round_trip),
        cmocka_unit_test(test_wire_encode_compressed_round_trip),
        cmocka_unit_test(test_wire_encode_compressed_legacy),
        cmocka_unit_test(test_wire_decompress_threads),
        cmocka_unit_test(test_wire_bson_append_iter_renumbers),
        cmocka_unit_test(test_wire_bson_append_iter_depth),
    };
    const struct CMUnitTest invalid_tests[] = {
        cmocka_unit_test(test_wire_decompress_size_lies_high),
        cmocka_unit_test(test_wire_decompress_size_lies_low),
        cmocka_unit_test(test_wire_decompress_ratio_bomb),
        cmocka_unit_test(test_wire_decompress_limits),
        cmocka_unit_test(test_wire_decompress_corrupt_payload),
        cmocka_unit_test(test_wire_encode_limits),
    };
    int fails = 0;

    fails +=
        cmocka_run_group_tests_name("wire_enc_valid", valid_tests, NULL, NULL);
    fails += cmocka_run_group_tests_name("wire_enc_invalid", invalid_tests,
                                         NULL, NULL);
    return fails ? 1 : 0;
}
