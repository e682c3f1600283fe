/*
 * test_trace_tls.c -- core/trace: the TLS handshake record (type 7,
 * docs/trace-format.md 2.7): writer -> reader round trip, the decoder on
 * every prefix of a payload and on hand-made bad payloads, appended
 * fields, the writer's refusals, and a frame that starts with a TLS
 * record after a damaged header frame.
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

#include "core/buf.h"
#include "core/err.h"
#include "core/rd.h"
#include "core/trace.h"
#include "core/trace_read.h"
#include "core/trace_rec.h"

static void
put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void
mk_header(struct trace_header *h)
{
    memset(h, 0, sizeof(*h));
    snprintf(h->tool_version, sizeof(h->tool_version), "mtrace test");
    h->source = TRACE_SRC_SYNTH;
    snprintf(h->source_desc, sizeof(h->source_desc), "test_trace_tls.c");
    h->start_mono_ns = 1000;
    h->ts_precision_ns = 1;
}

/* A completed handshake, every string at its longest. */
static void
mk_tls_long(struct trace_tls *t)
{
    memset(t, 0, sizeof(*t));
    t->conn_id = 0x0102030405060708ull;
    t->t_ns = 0x1112131415161718ull;
    t->leg = TRACE_TLS_TARGET;
    t->handshake_ns = 0x2122232425262728ull;
    t->flags = TRACE_TLS_PEER_CERT | TRACE_TLS_PEER_VERIFIED | 0x80;
    memset(t->version, 'v', sizeof(t->version) - 1);
    memset(t->cipher, 'c', sizeof(t->cipher) - 1);
    memset(t->group, 'g', sizeof(t->group) - 1);
    memset(t->sni, 's', sizeof(t->sni) - 1);
    memset(t->error, 'e', sizeof(t->error) - 1);
}

static void
mk_tls_failed(struct trace_tls *t)
{
    memset(t, 0, sizeof(*t));
    t->conn_id = 9;
    t->t_ns = 5000;
    t->leg = TRACE_TLS_CLIENT;
    t->handshake_ns = 1234;
    t->flags = TRACE_TLS_FAILED;
    snprintf(t->error, sizeof(t->error), "wrong version number");
}

static void
assert_tls_equal(const struct trace_tls *a, const struct trace_tls *b)
{
    assert_true(a->conn_id == b->conn_id);
    assert_true(a->t_ns == b->t_ns);
    assert_int_equal(a->leg, b->leg);
    assert_true(a->handshake_ns == b->handshake_ns);
    assert_int_equal(a->flags, b->flags);
    assert_string_equal(a->version, b->version);
    assert_string_equal(a->cipher, b->cipher);
    assert_string_equal(a->group, b->group);
    assert_string_equal(a->sni, b->sni);
    assert_string_equal(a->error, b->error);
}

/* The payload of t's encoding (without the 5-byte prefix) in out. */
static void
encode_payload(const struct trace_tls *t, struct mt_buf *out)
{
    struct trace_rec rec = {.type = TRACE_REC_TLS};
    struct mt_err err;
    struct mt_buf b;

    rec.u.tls = *t;
    mt_buf_init(&b, 1 << 16);
    assert_int_equal(trace__rec_encode(&b, &rec, &err), 0);
    assert_int_equal(b.data[0], TRACE_REC_TLS);
    {
        struct rd r = rd_init(b.data + 1, 4);
        uint32_t len = 0;
        assert_true(rd_le32(&r, &len));
        assert_int_equal(len, b.len - TRACE_REC_PREFIX_LEN);
    }
    mt_buf_init(out, 1 << 16);
    assert_int_equal(
        mt_buf_append(out, b.data + TRACE_REC_PREFIX_LEN, b.len - 5), 0);
    mt_buf_free(&b);
}

/* Decodes n bytes copied to a buffer of exactly n bytes (ASan catches a
 * read past it). */
static int
decode_exact(const uint8_t *p, size_t n, struct trace_rec *rec,
             struct mt_err *err)
{
    uint8_t *copy = malloc(n ? n : 1);
    int rc;

    assert_non_null(copy);
    memcpy(copy, p, n);
    memset(rec, 0, sizeof(*rec));
    rc = trace__rec_decode(TRACE_REC_TLS, copy, n, rec, err);
    free(copy);
    return rc;
}

/* ---- valid ---- */

static void
test_trace_tls_roundtrip(void **state)
{
    struct trace_header h;
    struct trace_tls a, b;
    struct trace_conn_open o = {.conn_id = 9, .t_ns = 3766};
    struct trace_rec rec;
    struct trace_writer *w;
    struct trace_reader *r;
    struct mt_err err;
    char *buf = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&buf, &n);

    assert_non_null(fp);
    mk_header(&h);
    mk_tls_long(&a);
    mk_tls_failed(&b);
    w = trace_writer_open_fp(fp, &h, &err);
    assert_non_null(w);
    assert_int_equal(trace_writer_conn_open(w, &o), 0);
    assert_int_equal(trace_writer_tls(w, &a), 0);
    assert_int_equal(trace_writer_tls(w, &b), 0);
    assert_int_equal(trace_writer_records(w), 4);
    assert_int_equal(trace_writer_close(w), 0);
    assert_int_equal(fclose(fp), 0);

    r = trace_reader_open_mem(buf, n, &err);
    assert_non_null(r);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK); /* header */
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_CONN_OPEN);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_TLS);
    assert_tls_equal(&rec.u.tls, &a);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_TLS);
    assert_tls_equal(&rec.u.tls, &b);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_OK);
    assert_int_equal(rec.type, TRACE_REC_END);
    assert_int_equal(rec.u.end.records, 4);
    /* the end record's t_ns is the largest: the first TLS record's */
    assert_true(rec.u.end.t_ns == a.t_ns);
    assert_int_equal(trace_reader_next(r, &rec, &err), MT_END);
    assert_int_equal(trace_reader_lost_bytes(r), 0);
    trace_reader_free(r);
    free(buf);
    assert_string_equal(trace_tls_leg_name(TRACE_TLS_CLIENT), "client");
    assert_string_equal(trace_tls_leg_name(TRACE_TLS_TARGET), "target");
    assert_string_equal(trace_tls_leg_name(2), "unknown");
}

/* The layout of docs/trace-format.md 2.7, byte by byte. */
static void
test_trace_tls_layout(void **state)
{
    static const uint8_t want[] = {
        9,    0,    0,   0,   0,   0,   0,   0, /* 0: conn_id 9 */
        0x88, 0x13, 0,   0,   0,   0,   0,   0, /* 8: t_ns 5000 */
        0,                                      /* 16: leg 0 (client) */
        0xd2, 0x04, 0,   0,   0,   0,   0,   0, /* 17: handshake_ns 1234 */
        0x01,                                   /* 25: flags FAILED */
        0,    0,                                /* 26: version "" */
        0,    0,                                /* 28: cipher "" */
        0,    0,                                /* 30: group "" */
        0,    0,                                /* 32: sni "" */
        20,   0,                                /* 34: error, 20 bytes */
        'w',  'r',  'o', 'n', 'g', ' ', 'v', 'e', 'r', 's', /* 36 */
        'i',  'o',  'n', ' ', 'n', 'u', 'm', 'b', 'e', 'r', /* 46..55 */
    };
    struct trace_tls t;
    struct mt_buf p;
    struct trace_rec rec;
    struct mt_err err;

    mk_tls_failed(&t);
    encode_payload(&t, &p);
    assert_int_equal(p.len, sizeof(want));
    assert_memory_equal(p.data, want, sizeof(want));
    assert_int_equal(decode_exact(want, sizeof(want), &rec, &err), 0);
    assert_tls_equal(&rec.u.tls, &t);
    mt_buf_free(&p);
}

/* Section 3: bytes after the known fields (a newer writer's) are ignored. */
static void
test_trace_tls_appended_fields(void **state)
{
    struct trace_tls t;
    struct mt_buf p;
    struct trace_rec rec;
    struct mt_err err;

    mk_tls_long(&t);
    encode_payload(&t, &p);
    assert_int_equal(mt_buf_append(&p, "\x00\x07NEWDATA", 9), 0);
    assert_int_equal(decode_exact(p.data, p.len, &rec, &err), 0);
    assert_tls_equal(&rec.u.tls, &t);
    mt_buf_free(&p);
}

/* ---- invalid ---- */

/* Every proper prefix of a payload is corrupt, never an over-read. */
static void
test_trace_tls_every_prefix(void **state)
{
    struct trace_tls t;
    struct mt_buf p;
    struct trace_rec rec;
    struct mt_err err;

    for (int k = 0; k < 2; k++) {
        if (k == 0)
            mk_tls_long(&t);
        else
            mk_tls_failed(&t);
        encode_payload(&t, &p);
        for (size_t n = 0; n < p.len; n++) {
            memset(&err, 0, sizeof(err));
            assert_int_equal(decode_exact(p.data, n, &rec, &err), MT_ECORRUPT);
            assert_non_null(strstr(err.msg, "malformed record of type 7"));
            assert_true(err.offset <= n);
        }
        assert_int_equal(decode_exact(p.data, p.len, &rec, &err), 0);
        mt_buf_free(&p);
    }
}

/* The fixed fields of fixed[26], then the 5 strings, empty but the f-th:
 * n bytes 'x'.  Returns the payload length. */
static size_t
build_strings(uint8_t *out, const uint8_t *fixed, size_t f, size_t n)
{
    size_t at = 26;

    memcpy(out, fixed, 26);
    for (size_t i = 0; i < 5; i++) {
        size_t len = i == f ? n : 0;
        put_le16(out + at, (uint16_t)len);
        memset(out + at + 2, 'x', len);
        at += 2 + len;
    }
    return at;
}

/* A string one byte over its limit, a length past the payload, a NUL in
 * a string, leg 2: each corrupt. */
static void
test_trace_tls_bad_fields(void **state)
{
    static const size_t caps[] = {16, 64, 32, 256, 192};
    struct trace_tls t;
    struct trace_rec rec;
    struct mt_err err;
    struct mt_buf p;
    uint8_t fixed[26], big[26 + 5 * 2 + 256];
    size_t n, str;

    mk_tls_failed(&t);
    encode_payload(&t, &p);
    memcpy(fixed, p.data, 26);
    mt_buf_free(&p);
    for (size_t f = 0; f < 5; f++) {
        str = 26 + 2 * (f + 1); /* where the f-th string's bytes start */
        /* caps[f] bytes: its array would have no room for the NUL */
        n = build_strings(big, fixed, f, caps[f]);
        assert_int_equal(decode_exact(big, n, &rec, &err), MT_ECORRUPT);
        /* one byte shorter fits */
        n = build_strings(big, fixed, f, caps[f] - 1);
        assert_int_equal(decode_exact(big, n, &rec, &err), 0);
        /* a NUL inside */
        big[str + 3] = '\0';
        assert_int_equal(decode_exact(big, n, &rec, &err), MT_ECORRUPT);
        /* a length past the end of the payload */
        n = build_strings(big, fixed, f, caps[f] - 1);
        put_le16(big + str - 2, 0xffff);
        assert_int_equal(decode_exact(big, n, &rec, &err), MT_ECORRUPT);
    }
    fixed[16] = 2; /* leg */
    n = build_strings(big, fixed, 0, 0);
    assert_int_equal(decode_exact(big, n, &rec, &err), MT_ECORRUPT);
    assert_non_null(strstr(err.msg, "TLS leg 2"));
}

/* Validate-before-write: nothing is written for a bad record. */
static void
test_trace_tls_writer_refuses(void **state)
{
    struct trace_header h;
    struct trace_tls t;
    struct trace_writer *w;
    struct mt_err err;
    FILE *fp = tmpfile();

    assert_non_null(fp);
    mk_header(&h);
    w = trace_writer_open_fp(fp, &h, &err);
    assert_non_null(w);
    mk_tls_failed(&t);
    t.leg = 2;
    assert_int_equal(trace_writer_tls(w, &t), MT_ECORRUPT);
    mk_tls_failed(&t);
    memset(t.sni, 's', sizeof(t.sni)); /* no NUL */
    assert_int_equal(trace_writer_tls(w, &t), MT_ECORRUPT);
    mk_tls_failed(&t);
    memset(t.version, 'v', sizeof(t.version));
    assert_int_equal(trace_writer_tls(w, &t), MT_ECORRUPT);
    assert_int_equal(trace_writer_records(w), 1); /* the header */
    mk_tls_failed(&t);
    assert_int_equal(trace_writer_tls(w, &t), 0);
    assert_int_equal(trace_writer_close(w), 0);
    fclose(fp);
}

/* A reader that lost the header frame accepts a next frame that starts
 * with a TLS record (docs/trace-format.md 5: types 2..7). */
static void
test_trace_tls_first_after_lost_header(void **state)
{
    struct trace_rec rec = {.type = TRACE_REC_HEADER};
    struct mt_buf content, file;
    struct trace_reader *r;
    struct mt_err err;
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    size_t z;
    int rc, tls = 0;

    /* zstd's content checksum: a flip in it loses the header frame */
    assert_non_null(cc);
    assert_false(
        ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)));
    mt_buf_init(&content, 1 << 16);
    mt_buf_init(&file, 1 << 16);
    mk_header(&rec.u.header);
    assert_int_equal(trace__rec_encode(&content, &rec, &err), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mt_buf_reserve(&file, 4096), 0);
        z = ZSTD_compress2(cc, file.data + file.len, 4096, content.data,
                           content.len);
        assert_false(ZSTD_isError(z));
        if (i == 0)
            file.data[file.len + z - 1] ^= 0xff; /* damage the header's */
        file.len += z;
        mt_buf_reset(&content);
        rec.type = TRACE_REC_TLS;
        mk_tls_failed(&rec.u.tls);
        assert_int_equal(trace__rec_encode(&content, &rec, &err), 0);
        rec.type = TRACE_REC_END;
        memset(&rec.u.end, 0, sizeof(rec.u.end));
        assert_int_equal(trace__rec_encode(&content, &rec, &err), 0);
    }
    r = trace_reader_open_mem(file.data, file.len, &err);
    assert_non_null(r);
    assert_true(trace_reader_header_lost(r));
    while ((rc = trace_reader_next(r, &rec, &err)) != MT_END)
        if (rc == MT_OK)
            tls += rec.type == TRACE_REC_TLS;
    assert_int_equal(tls, 1);
    trace_reader_free(r);
    ZSTD_freeCCtx(cc);
    mt_buf_free(&content);
    mt_buf_free(&file);
}

int
main(void)
{
    const struct CMUnitTest valid[] = {
        cmocka_unit_test(test_trace_tls_roundtrip),
        cmocka_unit_test(test_trace_tls_layout),
        cmocka_unit_test(test_trace_tls_appended_fields),
        cmocka_unit_test(test_trace_tls_first_after_lost_header),
    };
    const struct CMUnitTest invalid[] = {
        cmocka_unit_test(test_trace_tls_every_prefix),
        cmocka_unit_test(test_trace_tls_bad_fields),
        cmocka_unit_test(test_trace_tls_writer_refuses),
    };
    int rc = cmocka_run_group_tests_name("trace_tls valid", valid, NULL, NULL);
    return rc | cmocka_run_group_tests_name("trace_tls invalid", invalid, NULL,
                                            NULL);
}
