/*
 * test_play.c -- play/: the latency histogram, reply shapes, the
 * remapping of recorded requests (cursors, legacy OP_GET_MORE and
 * OP_KILL_CURSORS ids, sessions, cluster time, $db and legacy
 * fullCollectionName renames, the plain copy of a request with nothing to
 * rewrite), the reader thread against core/trace's reader
 * and the SCRAM client against the RFC 7677 and MongoDB auth spec example
 * conversations (client nonce injected).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/wire.h"
#include "core/loop.h"
#include "core/trace.h"
#include "play/auth.h"
#include "play/horizon.h"
#include "play/play.h"
#include "play/reader.h"
#include "play/remap.h"
#include "core/runcmp.h"

static void
test_play_hist_percentiles(void **state)
{
    struct runcmp_hist h = {0};

    (void)state;
    assert_int_equal(runcmp_hist_pct(&h, 50), 0);
    for (uint64_t i = 1; i <= 1000; i++)
        assert_int_equal(runcmp_hist_add(&h, i * 1000), 0);
    /* nearest rank 500 -> 500 us, within one bucket (1/64) above */
    uint64_t p50 = runcmp_hist_pct(&h, 50);
    assert_true(p50 >= 500000 && p50 <= 500000 + 500000 / 64 + 1);
    uint64_t p99 = runcmp_hist_pct(&h, 99);
    assert_true(p99 >= 990000 && p99 <= 990000 + 990000 / 64 + 1);
    assert_int_equal(runcmp_hist_pct(&h, 100), 1000000); /* clamped to max */
    assert_int_equal(h.count, 1000);
    runcmp_hist_free(&h);
    /* small values are exact */
    assert_int_equal(runcmp_hist_add(&h, 7), 0);
    assert_int_equal(runcmp_hist_pct(&h, 50), 7);
    runcmp_hist_free(&h);
}

/* Encodes body as an OP_MSG (reply when response_to != 0) and parses it. */
static void
msg_of(bson_t *body, int32_t response_to, struct mt_buf *b, struct wire_msg *m)
{
    size_t used;
    struct mt_err err;

    mt_buf_reset(b);
    assert_int_equal(wire_encode_msg(b, 7, response_to, 0, body, NULL, 0), 0);
    assert_int_equal(wire_msg_parse(b->data, b->len, m, &used, &err), MT_OK);
}

static void
test_play_shape_of_cursor_and_error(void **state)
{
    struct mt_buf b;
    struct wire_msg m;
    struct runcmp_shape a, e;
    bson_t *r;

    (void)state;
    mt_buf_init(&b, 1 << 20);
    r = BCON_NEW("cursor", "{", "id", BCON_INT64(0), "ns", "d.c", "firstBatch",
                 "[", "{", "}", "{", "}", "{", "}", "]", "}", "ok",
                 BCON_DOUBLE(1));
    msg_of(r, 1, &b, &m);
    runcmp_shape_of(&m, &a);
    assert_true(a.valid && a.cursor && a.exhausted && !a.error);
    assert_int_equal(a.ndocs, 3);
    bson_destroy(r);
    r = BCON_NEW("ok", BCON_DOUBLE(0), "errmsg", "x", "code", BCON_INT32(2));
    msg_of(r, 1, &b, &m);
    runcmp_shape_of(&m, &e);
    assert_true(e.valid && e.error && !e.cursor);
    assert_int_equal(e.code, 2);
    assert_true(runcmp_shape_differs(&a, &e));
    assert_false(runcmp_shape_differs(&a, &a));
    bson_destroy(r);
    mt_buf_free(&b);
}

/* remap_msg of body into out, parsed back into *doc (a view of out). */
static enum remap_result
remap_doc(struct remap *rm, uint32_t copy, bson_t *body, struct mt_buf *in,
          struct mt_buf *out, bson_t *doc)
{
    struct wire_msg m, o;
    enum remap_result res;
    int64_t cur;
    size_t used;
    struct mt_err err;

    msg_of(body, 0, in, &m);
    mt_buf_reset(out);
    assert_int_equal(remap_msg(rm, copy, &m, 42, out, &res, &cur), 0);
    if (res == REMAP_OK) {
        assert_int_equal(wire_msg_parse(out->data, out->len, &o, &used, &err),
                         MT_OK);
        assert_int_equal(o.h.request_id, 42);
        assert_true(bson_init_static(doc, o.body, o.body_len));
    }
    return res;
}

static void
test_play_remap_cursors(void **state)
{
    const char *from[] = {"prod"}, *to[] = {"stage"};
    struct remap *rm = remap_new(from, to, 1);
    struct mt_buf in, out;
    bson_t *gm, *kc, doc;
    bson_iter_t it, arr;

    (void)state;
    mt_buf_init(&in, 1 << 20);
    mt_buf_init(&out, 1 << 20);
    gm = BCON_NEW("getMore", BCON_INT64(555), "collection", "c", "$db", "prod");
    /* unknown cursor: not sent */
    assert_int_equal(remap_doc(rm, 0, gm, &in, &out, &doc), REMAP_NOCURSOR);
    /* its find awaits the live reply: wait */
    assert_int_equal(remap_cursor_open(rm, 0, 555), 0);
    assert_int_equal(remap_doc(rm, 0, gm, &in, &out, &doc), REMAP_WAIT);
    remap_cursor_set(rm, 0, 555, 9001);
    assert_int_equal(remap_doc(rm, 0, gm, &in, &out, &doc), REMAP_OK);
    assert_true(bson_iter_init_find(&it, &doc, "getMore"));
    assert_int_equal(bson_iter_as_int64(&it), 9001);
    assert_true(bson_iter_init_find(&it, &doc, "$db"));
    assert_string_equal(bson_iter_utf8(&it, NULL), "stage");
    /* another copy has its own cursors */
    assert_int_equal(remap_doc(rm, 1, gm, &in, &out, &doc), REMAP_NOCURSOR);
    /* killCursors keeps the live ids only, and kills them */
    kc = BCON_NEW("killCursors", "c", "cursors", "[", BCON_INT64(555),
                  BCON_INT64(777), "]", "$db", "prod");
    assert_int_equal(remap_doc(rm, 0, kc, &in, &out, &doc), REMAP_OK);
    assert_true(bson_iter_init_find(&it, &doc, "cursors") &&
                bson_iter_recurse(&it, &arr) && bson_iter_next(&arr));
    assert_int_equal(bson_iter_as_int64(&arr), 9001);
    assert_false(bson_iter_next(&arr));
    assert_int_equal(remap_doc(rm, 0, gm, &in, &out, &doc), REMAP_NOCURSOR);
    assert_int_equal(remap_doc(rm, 0, kc, &in, &out, &doc), REMAP_NOCURSOR);
    bson_destroy(gm);
    bson_destroy(kc);
    mt_buf_free(&in);
    mt_buf_free(&out);
    remap_free(rm);
}

/* A legacy message: header (requestID 5) and body bytes. */
static void
legacy(struct mt_buf *b, int32_t op, const uint8_t *body, size_t n,
       struct wire_msg *m)
{
    uint8_t h[16];
    int32_t len = (int32_t)(16 + n), rid = 5, to = 0;
    size_t used;
    struct mt_err err;

    memcpy(h, &len, 4);
    memcpy(h + 4, &rid, 4);
    memcpy(h + 8, &to, 4);
    memcpy(h + 12, &op, 4);
    mt_buf_reset(b);
    assert_int_equal(mt_buf_append(b, h, 16), 0);
    assert_int_equal(mt_buf_append(b, body, n), 0);
    assert_int_equal(wire_msg_parse(b->data, b->len, m, &used, &err), MT_OK);
}

static void
test_play_remap_legacy_cursor_ids(void **state)
{
    /* OP_GET_MORE: int32 0, "d.c", int32 numberToReturn 2, int64 cursor */
    static const uint8_t gm[] = {0, 0, 0,    0,    'd', '.', 'c', 0, 2, 0,
                                 0, 0, 0x2b, 0x02, 0,   0,   0,   0, 0, 0};
    /* OP_KILL_CURSORS: int32 0, int32 2 ids, 555 and 777 */
    static const uint8_t kc[] = {0,    0,    0, 0, 2, 0, 0, 0,
                                 0x2b, 0x02, 0, 0, 0, 0, 0, 0,
                                 0x09, 0x03, 0, 0, 0, 0, 0, 0};
    struct remap *rm = remap_new(NULL, NULL, 0);
    struct mt_buf in, out;
    struct wire_msg m;
    enum remap_result res;
    int64_t cur, v;
    int32_t rid;

    (void)state;
    mt_buf_init(&in, 1 << 16);
    mt_buf_init(&out, 1 << 16);
    legacy(&in, WIRE_OP_GET_MORE, gm, sizeof(gm), &m);
    assert_int_equal(remap_msg(rm, 0, &m, 9, &out, &res, &cur), 0);
    assert_int_equal(res, REMAP_NOCURSOR);
    assert_int_equal(out.len, 0);
    assert_int_equal(remap_cursor_open(rm, 0, 555), 0);
    remap_cursor_set(rm, 0, 555, 123456789);
    assert_int_equal(remap_msg(rm, 0, &m, 9, &out, &res, &cur), 0);
    assert_int_equal(res, REMAP_OK);
    assert_int_equal(cur, 555);
    assert_int_equal(out.len, in.len);
    memcpy(&rid, out.data + 4, 4);
    assert_int_equal(rid, 9);
    memcpy(&v, out.data + out.len - 8, 8);
    assert_int_equal(v, 123456789);
    /* the live one of the two ids goes out, patched, and is killed; the
     * other is left out (count and length rewritten) */
    mt_buf_reset(&out);
    legacy(&in, WIRE_OP_KILL_CURSORS, kc, sizeof(kc), &m);
    assert_int_equal(remap_msg(rm, 0, &m, 10, &out, &res, &cur), 0);
    assert_int_equal(res, REMAP_OK);
    assert_int_equal(out.len, 32);
    memcpy(&rid, out.data, 4);
    assert_int_equal(rid, 32);
    memcpy(&rid, out.data + 20, 4);
    assert_int_equal(rid, 1);
    memcpy(&v, out.data + 24, 8);
    assert_int_equal(v, 123456789);
    mt_buf_reset(&out);
    assert_int_equal(remap_msg(rm, 0, &m, 11, &out, &res, &cur), 0);
    assert_int_equal(res, REMAP_NOCURSOR);
    /* a body too short to hold its count: no cursor, nothing read past it */
    legacy(&in, WIRE_OP_KILL_CURSORS, kc, 2, &m);
    assert_int_equal(remap_msg(rm, 0, &m, 12, &out, &res, &cur), 0);
    assert_int_equal(res, REMAP_NOCURSOR);
    assert_int_equal(out.len, 0);
    mt_buf_free(&in);
    mt_buf_free(&out);
    remap_free(rm);
}

/* remap_is_plain: a request with nothing to rewrite is copied (header
 * and checksum renewed), one with a key rebuild_body rewrites is not. */
static void
test_play_remap_plain_copy(void **state)
{
    const char *from[] = {"prod"}, *to[] = {"stage"};
    struct remap *none = remap_new(NULL, NULL, 0),
                 *ren = remap_new(from, to, 1);
    struct mt_buf in, out;
    struct wire_msg m, back;
    struct mt_err err;
    enum remap_result res;
    bson_t *find = BCON_NEW("find", "c", "filter", "{", "_id", BCON_INT32(1),
                            "}", "$db", "prod");
    bson_t *sess = BCON_NEW("find", "c", "lsid", "{", "id", BCON_INT32(1), "}",
                            "$db", "prod");
    bson_t *ct =
        BCON_NEW("ping", BCON_INT32(1), "$clusterTime", "{", "}", "$db", "x");
    int64_t cur;
    int32_t rid;
    size_t used;

    (void)state;
    mt_buf_init(&in, 1 << 16);
    mt_buf_init(&out, 1 << 16);
    /* with a checksum: the copy carries a new requestID and a valid CRC */
    assert_int_equal(
        wire_encode_msg(&in, 77, 0, WIRE_MSG_CHECKSUM_PRESENT, find, NULL, 0),
        0);
    assert_int_equal(wire_msg_parse(in.data, in.len, &m, &used, &err), MT_OK);
    assert_true(remap_is_plain(none, &m));
    assert_false(remap_is_plain(ren, &m)); /* its $db is renamed */
    assert_int_equal(remap_msg(none, 0, &m, 9, &out, &res, &cur), 0);
    assert_int_equal(res, REMAP_OK);
    assert_int_equal(out.len, in.len);
    memcpy(&rid, out.data + 4, 4);
    assert_int_equal(rid, 9);
    assert_memory_equal(out.data + 16, in.data + 16, in.len - 20);
    assert_int_equal(wire_msg_parse(out.data, out.len, &back, &used, &err),
                     MT_OK); /* the checksum is verified */
    mt_buf_reset(&out);
    assert_int_equal(remap_plain_copy(in.data, in.len, 10, &out), 0);
    assert_int_equal(wire_msg_parse(out.data, out.len, &back, &used, &err),
                     MT_OK);
    assert_int_equal(back.h.request_id, 10);
    assert_int_equal(back.h.response_to, 0);
    /* keys that are rewritten */
    mt_buf_reset(&in);
    assert_int_equal(wire_encode_msg(&in, 1, 0, 0, sess, NULL, 0), 0);
    assert_int_equal(wire_msg_parse(in.data, in.len, &m, &used, &err), MT_OK);
    assert_false(remap_is_plain(none, &m));
    mt_buf_reset(&in);
    assert_int_equal(wire_encode_msg(&in, 1, 0, 0, ct, NULL, 0), 0);
    assert_int_equal(wire_msg_parse(in.data, in.len, &m, &used, &err), MT_OK);
    assert_false(remap_is_plain(none, &m));
    assert_false(remap_is_plain(ren, &m));
    bson_destroy(find);
    bson_destroy(sess);
    bson_destroy(ct);
    mt_buf_free(&in);
    mt_buf_free(&out);
    remap_free(none);
    remap_free(ren);
}

/* --db renames the database of a legacy fullCollectionName: OP_QUERY
 * commands ("prod.$cmd") and queries ("prod.c"), OP_GET_MORE, OP_INSERT; other
 * databases and a database that only starts with the name are kept. */
static void
test_play_remap_legacy_db_rename(void **state)
{
    const char *from[] = {"prod"}, *to[] = {"staging"};
    struct remap *rm = remap_new(from, to, 1);
    struct mt_buf in, out;
    struct wire_msg m, back;
    struct mt_err err;
    enum remap_result res;
    bson_t *q = BCON_NEW("isMaster", BCON_INT32(1));
    static const char *const names[] = {"prod.$cmd", "prod.c", "production.c",
                                        "other.$cmd", "prod"};
    static const char *const want[] = {"staging.$cmd", "staging.c",
                                       "production.c", "other.$cmd", "staging"};
    /* OP_GET_MORE: int32 0, "prod.c", int32 numberToReturn 2, int64 555 */
    static const uint8_t gm[] = {0,    0,   0, 0, 'p', 'r', 'o', 'd',
                                 '.',  'c', 0, 2, 0,   0,   0,   0x2b,
                                 0x02, 0,   0, 0, 0,   0,   0};
    /* OP_INSERT: int32 flags 0, "prod.c", one empty document */
    static const uint8_t ins[] = {0,   0,   0, 0, 'p', 'r', 'o', 'd',
                                  '.', 'c', 0, 5, 0,   0,   0,   0};
    int64_t cur, v;
    size_t used;

    (void)state;
    mt_buf_init(&in, 1 << 16);
    mt_buf_init(&out, 1 << 16);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        mt_buf_reset(&in);
        mt_buf_reset(&out);
        assert_int_equal(wire_encode_query(&in, 3, 4, names[i], 0, -1, q), 0);
        assert_int_equal(wire_msg_parse(in.data, in.len, &m, &used, &err),
                         MT_OK);
        assert_int_equal(remap_is_plain(rm, &m), i >= 2 && i <= 3);
        assert_int_equal(remap_msg(rm, 0, &m, 8, &out, &res, &cur), 0);
        assert_int_equal(res, REMAP_OK);
        assert_int_equal(wire_msg_parse(out.data, out.len, &back, &used, &err),
                         MT_OK);
        assert_int_equal(used, out.len);
        assert_int_equal(back.h.request_id, 8);
        assert_string_equal(back.full_collection, want[i]);
        assert_int_equal(back.query_flags, 4);
        assert_int_equal(back.number_to_return, -1);
        assert_int_equal(back.body_len, m.body_len);
        assert_memory_equal(back.body, m.body, m.body_len);
    }
    /* OP_GET_MORE: renamed, and its cursor id still patched at the end */
    legacy(&in, WIRE_OP_GET_MORE, gm, sizeof(gm), &m);
    assert_int_equal(remap_cursor_open(rm, 0, 555), 0);
    remap_cursor_set(rm, 0, 555, 4242);
    mt_buf_reset(&out);
    assert_int_equal(remap_msg(rm, 0, &m, 9, &out, &res, &cur), 0);
    assert_int_equal(res, REMAP_OK);
    assert_int_equal(out.len, in.len + 3);
    assert_int_equal(wire_msg_parse(out.data, out.len, &back, &used, &err),
                     MT_OK);
    assert_string_equal(back.full_collection, "staging.c");
    memcpy(&v, out.data + out.len - 8, 8);
    assert_int_equal(v, 4242);
    /* OP_INSERT (and OP_UPDATE / OP_DELETE, the same layout up to the
     * name): not plain, renamed, its document kept */
    legacy(&in, WIRE_OP_INSERT, ins, sizeof(ins), &m);
    assert_false(remap_is_plain(rm, &m));
    mt_buf_reset(&out);
    assert_int_equal(remap_msg(rm, 0, &m, 10, &out, &res, &cur), 0);
    assert_int_equal(res, REMAP_OK);
    assert_int_equal(wire_msg_parse(out.data, out.len, &back, &used, &err),
                     MT_OK);
    assert_int_equal(back.h.op_code, WIRE_OP_INSERT);
    assert_string_equal(back.full_collection, "staging.c");
    assert_int_equal(out.len, in.len + 3);
    assert_memory_equal(out.data + out.len - 5, in.data + in.len - 5, 5);
    bson_destroy(q);
    mt_buf_free(&in);
    mt_buf_free(&out);
    remap_free(rm);
}

/* A trace of nconn connections x nmsg messages at path; the file size. */
static long
reader_trace(const char *path, int nconn, int nmsg)
{
    struct trace_header h = {.source = TRACE_SRC_SYNTH, .ts_precision_ns = 1};
    struct mt_err err;
    struct trace_writer *w = trace_writer_open(path, TRACE_W_FORCE, &h, &err);
    uint8_t msg[200];
    FILE *fp;
    long size;

    assert_non_null(w);
    for (int c = 1; c <= nconn; c++) {
        struct trace_conn_open o = {.conn_id = (uint64_t)c,
                                    .t_ns = (uint64_t)c};
        assert_int_equal(trace_writer_conn_open(w, &o), 0);
    }
    for (int i = 0; i < nmsg; i++)
        for (int c = 1; c <= nconn; c++) {
            struct trace_msg m = {.conn_id = (uint64_t)c,
                                  .t_ns = (uint64_t)(1000 + i),
                                  .dir = (uint8_t)(i & 1),
                                  .wire = msg,
                                  .wire_len = (uint32_t)(16 + (i % 150))};
            for (size_t k = 0; k < sizeof(msg); k++)
                msg[k] = (uint8_t)(k * 7 + (size_t)i + (size_t)c);
            assert_int_equal(trace_writer_msg(w, &m), 0);
        }
    for (int c = 1; c <= nconn; c++) {
        struct trace_conn_close cl = {.conn_id = (uint64_t)c, .t_ns = 99999};
        assert_int_equal(trace_writer_conn_close(w, &cl), 0);
    }
    assert_int_equal(trace_writer_close(w), 0);
    fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    size = ftell(fp);
    fclose(fp);
    return size;
}

/* Reads path through play/reader (the loop woken while it waits) and
 * trace_reader side by side: the same records, statuses and messages;
 * returns the last status (MT_END, or the error that ended the file). */
static int
reader_compare(const char *path, bool threaded)
{
    struct mt_err err, err2;
    struct loop *l = loop_new(NULL, 64, &err);
    struct play_reader *pr;
    struct trace_reader *tr;
    struct trace_rec a, b;
    int ra, rb, last = MT_END;

    assert_non_null(l);
    pr = play_reader_open(path, l, threaded, &err);
    tr = trace_reader_open(path, &err2);
    assert_non_null(pr);
    assert_non_null(tr);
    for (;;) {
        do {
            rb = trace_reader_next(tr, &b, &err2);
        } while (rb == MT_OK && b.type != TRACE_REC_CONN_OPEN &&
                 b.type != TRACE_REC_MSG && b.type != TRACE_REC_CONN_CLOSE);
        while ((ra = play_reader_next(pr, &a, &err)) == MT_PARTIAL)
            assert_true(loop_run_once(l, 2000000000ull) >= 0);
        assert_int_equal(ra, rb);
        if (ra == MT_END)
            break;
        if (ra < 0) {
            assert_int_equal(err.code, err2.code);
            assert_string_equal(err.msg, err2.msg);
            last = ra;
            continue;
        }
        assert_int_equal(a.type, b.type);
        if (a.type == TRACE_REC_MSG) {
            assert_int_equal(a.u.msg.conn_id, b.u.msg.conn_id);
            assert_int_equal(a.u.msg.t_ns, b.u.msg.t_ns);
            assert_int_equal(a.u.msg.wire_len, b.u.msg.wire_len);
            assert_memory_equal(a.u.msg.wire, b.u.msg.wire, a.u.msg.wire_len);
        } else if (a.type == TRACE_REC_CONN_OPEN) {
            assert_int_equal(a.u.open.conn_id, b.u.open.conn_id);
        } else {
            assert_int_equal(a.u.close.conn_id, b.u.close.conn_id);
        }
    }
    play_reader_free(pr);
    trace_reader_free(tr);
    loop_free(l);
    return last;
}

/* play/reader, threaded and not: the records of a many-frame trace (more
 * than its queue holds, so the thread waits for room) in order, and a
 * truncated copy's records, then MT_ETRUNC, as trace_reader gives them. */
static void
test_play_reader_thread(void **state)
{
    char dir[] = "/tmp/test_play.XXXXXX", path[64], cut[64];
    long size;
    FILE *in, *out;
    static uint8_t buf[1 << 16];
    long left;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/t.zst", dir);
    snprintf(cut, sizeof(cut), "%s/cut.zst", dir);
    size = reader_trace(path, 8, 12000);
    assert_int_equal(reader_compare(path, true), MT_END);
    assert_int_equal(reader_compare(path, false), MT_END);
    /* the first 60 % of the file */
    in = fopen(path, "rb");
    out = fopen(cut, "wb");
    assert_non_null(in);
    assert_non_null(out);
    for (left = size * 6 / 10; left > 0;) {
        size_t n = fread(
            buf, 1, left < (long)sizeof(buf) ? (size_t)left : sizeof(buf), in);
        assert_true(n > 0);
        assert_int_equal(fwrite(buf, 1, n, out), n);
        left -= (long)n;
    }
    fclose(in);
    fclose(out);
    assert_int_equal(reader_compare(cut, true), MT_ETRUNC);
    assert_int_equal(reader_compare(cut, false), MT_ETRUNC);
    unlink(path);
    unlink(cut);
    rmdir(dir);
}

static const uint8_t rec_uuid[16] = {1, 2,  3,  4,  5,  6,  7,  8,
                                     9, 10, 11, 12, 13, 14, 15, 16};

static bson_t *
txn_cmd(int64_t txn)
{
    bson_t *b = bson_new(), lsid, ct;

    bson_append_utf8(b, "find", -1, "c", -1);
    bson_append_document_begin(b, "lsid", -1, &lsid);
    bson_append_binary(&lsid, "id", -1, BSON_SUBTYPE_UUID, rec_uuid, 16);
    bson_append_document_end(b, &lsid);
    bson_append_int64(b, "txnNumber", -1, txn);
    bson_append_document_begin(b, "$clusterTime", -1, &ct);
    bson_append_timestamp(&ct, "clusterTime", -1, 111, 1);
    bson_append_document_end(b, &ct);
    BCON_APPEND(b, "readConcern", "{", "afterClusterTime",
                BCON_TIMESTAMP(111, 1), "}");
    bson_append_utf8(b, "$db", -1, "d", -1);
    return b;
}

/* The live lsid id of doc (16 bytes copied to out). */
static void
lsid_of(const bson_t *doc, uint8_t out[16])
{
    bson_iter_t it, sub;
    bson_subtype_t st;
    uint32_t len;
    const uint8_t *id;

    assert_true(bson_iter_init_find(&it, doc, "lsid") &&
                bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "id"));
    bson_iter_binary(&sub, &st, &len, &id);
    assert_int_equal(len, 16);
    memcpy(out, id, 16);
}

static void
test_play_remap_sessions_and_cluster_time(void **state)
{
    struct remap *rm = remap_new(NULL, NULL, 0);
    struct mt_buf in, out;
    bson_t *c, doc, *live;
    bson_iter_t it, sub;
    uint8_t a[16], b[16], other[16];
    uint32_t t, i;
    const int64_t rec_txn[] = {57, 57, 58, 3};
    const int64_t want_txn[] = {1, 1, 2, 3};

    (void)state;
    mt_buf_init(&in, 1 << 20);
    mt_buf_init(&out, 1 << 20);
    /* no live cluster time yet: recorded $clusterTime and afterClusterTime
     * are dropped */
    c = txn_cmd(57);
    assert_int_equal(remap_doc(rm, 0, c, &in, &out, &doc), REMAP_OK);
    assert_false(bson_iter_init_find(&it, &doc, "$clusterTime"));
    assert_true(bson_iter_init_find(&it, &doc, "readConcern") &&
                bson_iter_recurse(&it, &sub));
    assert_false(bson_iter_find(&sub, "afterClusterTime"));
    bson_destroy(c);
    live = BCON_NEW("ok", BCON_DOUBLE(1), "$clusterTime", "{", "clusterTime",
                    BCON_TIMESTAMP(999, 2), "}", "operationTime",
                    BCON_TIMESTAMP(998, 1));
    remap_note_reply(rm, bson_get_data(live), live->len);
    bson_destroy(live);
    for (size_t k = 0; k < 4; k++) {
        c = txn_cmd(rec_txn[k]);
        assert_int_equal(remap_doc(rm, 0, c, &in, &out, &doc), REMAP_OK);
        lsid_of(&doc, k == 0 ? a : b);
        assert_memory_not_equal(k == 0 ? a : b, rec_uuid, 16);
        if (k > 0)
            assert_memory_equal(a, b, 16);
        assert_true(bson_iter_init_find(&it, &doc, "txnNumber"));
        assert_int_equal(bson_iter_as_int64(&it), want_txn[k]);
        assert_true(bson_iter_init_find(&it, &doc, "$clusterTime") &&
                    bson_iter_recurse(&it, &sub) &&
                    bson_iter_find(&sub, "clusterTime"));
        bson_iter_timestamp(&sub, &t, &i);
        assert_int_equal(t, 999);
        assert_true(bson_iter_init_find(&it, &doc, "readConcern") &&
                    bson_iter_recurse(&it, &sub) &&
                    bson_iter_find(&sub, "afterClusterTime"));
        bson_iter_timestamp(&sub, &t, &i);
        assert_int_equal(t, 998);
        bson_destroy(c);
    }
    /* another copy: another live session for the same recorded one */
    c = txn_cmd(57);
    assert_int_equal(remap_doc(rm, 1, c, &in, &out, &doc), REMAP_OK);
    lsid_of(&doc, other);
    assert_memory_not_equal(other, a, 16);
    bson_destroy(c);
    mt_buf_free(&in);
    mt_buf_free(&out);
    remap_free(rm);
}

/* One SCRAM example conversation, the server side's messages given. */
struct conv {
    const char *mech, *user, *password, *cnonce;
    const char *client_first, *server_first, *client_final, *server_final;
};

static const struct conv rfc7677 = {
    "SCRAM-SHA-256",
    "user",
    "pencil",
    "rOprNGfwEbeRWgbNEkqO",
    "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
};

/* MongoDB's auth spec, SCRAM-SHA-1 (password "pencil" through the
 * MongoDB digest). */
static const struct conv spec_sha1 = {
    "SCRAM-SHA-1",
    "user",
    "pencil",
    "fyko+d2lbbFgONRv9qkxdawL",
    "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"
    "s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000",
    "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"
    "p=MC2T8BvbmWRckDw8oWl5IVghwCY=",
    "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=",
};

static void
payload_is(const bson_t *cmd, const char *want)
{
    bson_iter_t it;
    const uint8_t *p;
    uint32_t len;

    assert_true(bson_iter_init_find(&it, cmd, "payload"));
    bson_iter_binary(&it, NULL, &len, &p);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(p, want, len);
}

static bson_t *
server_reply(const char *payload, bool done)
{
    bson_t *b = bson_new();

    bson_append_int32(b, "conversationId", -1, 1);
    bson_append_bool(b, "done", -1, done);
    bson_append_binary(b, "payload", -1, BSON_SUBTYPE_BINARY,
                       (const uint8_t *)payload, (uint32_t)strlen(payload));
    bson_append_double(b, "ok", -1, 1);
    return b;
}

static void
run_conv(const struct conv *v, const char *server_final, int want_rc)
{
    struct mt_err err = {0};
    struct play_auth *a =
        play_auth_new(v->mech, v->user, v->password, "admin", &err);
    bson_t cmd, *r;
    bool done = false;

    assert_non_null(a);
    assert_int_equal(play_auth_start_nonce(a, v->cnonce, &cmd), 0);
    payload_is(&cmd, v->client_first);
    bson_destroy(&cmd);
    r = server_reply(v->server_first, false);
    assert_int_equal(
        play_auth_step(a, bson_get_data(r), r->len, &cmd, &done, &err), 0);
    assert_false(done);
    payload_is(&cmd, v->client_final);
    bson_destroy(&cmd);
    bson_destroy(r);
    r = server_reply(server_final, true);
    int rc = play_auth_step(a, bson_get_data(r), r->len, &cmd, &done, &err);
    assert_int_equal(rc, want_rc);
    assert_int_equal(done, want_rc == 0);
    bson_destroy(r);
    play_auth_free(a);
}

static void
test_play_auth_rfc7677(void **state)
{
    (void)state;
    run_conv(&rfc7677, rfc7677.server_final, 0);
}

static void
test_play_auth_spec_sha1(void **state)
{
    (void)state;
    run_conv(&spec_sha1, spec_sha1.server_final, 0);
}

static void
test_play_auth_bad_server_signature(void **state)
{
    (void)state;
    run_conv(&rfc7677,
             "v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", MT_EPROTO);
}

/* A server-first that is not SCRAM text is refused before any key is
 * derived: a NUL inside it (which would cut the AuthMessage short), a
 * nonce byte outside RFC 5802's printable range. */
static void
test_play_auth_bad_server_first(void **state)
{
    static const char nul[] =
        "r=rOprNGfwEbeRWgbNEkqO%hv\0YD,s=W22ZaJ0SNY7soEsUEjb6gQ==,"
        "i=4096";
    static const char ctl[] =
        "r=rOprNGfwEbeRWgbNEkqO%hv\001YD,s=W22ZaJ0SNY7soEsUEjb6gQ==,"
        "i=4096";
    static const struct {
        const char *msg;
        size_t len;
        const char *want;
    } bad[] = {{nul, sizeof(nul) - 1, "NUL byte at offset 25"},
               {ctl, sizeof(ctl) - 1, "nonce holds byte 0x01"}};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct mt_err err = {0};
        struct play_auth *a =
            play_auth_new(NULL, "user", "pencil", "admin", &err);
        bson_t cmd, *r = bson_new();
        bool done = true;

        assert_int_equal(play_auth_start_nonce(a, rfc7677.cnonce, &cmd), 0);
        bson_destroy(&cmd);
        bson_append_int32(r, "conversationId", -1, 1);
        bson_append_binary(r, "payload", -1, BSON_SUBTYPE_BINARY,
                           (const uint8_t *)bad[i].msg, (uint32_t)bad[i].len);
        bson_append_double(r, "ok", -1, 1);
        assert_int_equal(
            play_auth_step(a, bson_get_data(r), r->len, &cmd, &done, &err),
            MT_EPROTO);
        assert_false(done);
        assert_non_null(strstr(err.msg, bad[i].want));
        bson_destroy(r);
        play_auth_free(a);
    }
}

static void
test_play_auth_refused(void **state)
{
    struct mt_err err = {0};
    struct play_auth *a = play_auth_new(NULL, "u", "p", "admin", &err);
    bson_t cmd, *r;
    bool done;

    (void)state;
    assert_int_equal(play_auth_start(a, &cmd, &err), 0);
    bson_destroy(&cmd);
    r = BCON_NEW("ok", BCON_DOUBLE(0), "errmsg", "Authentication failed.",
                 "code", BCON_INT32(18));
    assert_int_equal(
        play_auth_step(a, bson_get_data(r), r->len, &cmd, &done, &err),
        MT_EUSAGE);
    assert_non_null(strstr(err.msg, "code 18"));
    bson_destroy(r);
    play_auth_free(a);
    assert_null(play_auth_new("PLAIN", "u", "p", "admin", &err));
}

/*
 * The reader's horizon against a live server much faster than the
 * recorded one: one connection whose recorded replies took 300 ms, think
 * time 1 ms, answered live in 50 us.  Each exchange puts the live schedule
 * ~300 ms further ahead of the recorded clock; the next request is due
 * (live) long before its recorded-clock time, far past the 200 ms
 * look-ahead, and must still be read by the time it is due.
 */
static void
test_play_horizon_live_ahead(void **state)
{
    const uint64_t ms = 1000000, look = PLAY_LOOKAHEAD_NS;
    uint64_t ahead = 0, rec_t = 0, live = 0;

    (void)state;
    /* t0: recorded and live clocks start together (sched(t) = t) */
    for (int i = 0; i < 50; i++) {
        uint64_t rec_reply = rec_t + 300 * ms, live_reply = live + 50000;
        uint64_t next_rec = rec_reply + ms, next_live = live_reply + ms;

        ahead = play_horizon_note(ahead, rec_reply, live_reply);
        assert_int_equal(ahead, rec_reply - live_reply);
        /* due live at next_live: read by then, so queued when due */
        assert_true(play_horizon_wake(next_rec, ahead, look) <= next_live);
        /* the recorded clock alone would hold it back from the 1st on */
        assert_true(play_horizon_wake(next_rec, 0, look) > next_live);
        rec_t = next_rec;
        live = next_live;
    }
    /* 50 exchanges: the live schedule ~15 s ahead */
    assert_true(ahead > 14000 * ms);
    /* a advance never shrinks within a run; a slower live reply keeps it */
    assert_int_equal(play_horizon_note(ahead, 10 * ms, 20 * ms), ahead);
    assert_int_equal(play_horizon_note(0, 10 * ms, 20 * ms), 0);
    /* saturation: no wrap below 0 or above UINT64_MAX */
    assert_int_equal(play_horizon_wake(5, UINT64_MAX, look), 0);
    assert_int_equal(play_horizon_wake(UINT64_MAX, 0, look), UINT64_MAX - look);
    assert_int_equal(play_horizon_wake(look + 7, 0, look), 7);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_play_hist_percentiles),
        cmocka_unit_test(test_play_shape_of_cursor_and_error),
        cmocka_unit_test(test_play_remap_cursors),
        cmocka_unit_test(test_play_remap_sessions_and_cluster_time),
        cmocka_unit_test(test_play_remap_legacy_cursor_ids),
        cmocka_unit_test(test_play_remap_plain_copy),
        cmocka_unit_test(test_play_remap_legacy_db_rename),
        cmocka_unit_test(test_play_reader_thread),
        cmocka_unit_test(test_play_auth_rfc7677),
        cmocka_unit_test(test_play_auth_spec_sha1),
        cmocka_unit_test(test_play_auth_bad_server_signature),
        cmocka_unit_test(test_play_auth_bad_server_first),
        cmocka_unit_test(test_play_auth_refused),
        cmocka_unit_test(test_play_horizon_live_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
