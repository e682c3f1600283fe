/*
 * test_pframe.c -- capture/pframe.c (stream framing for the recorder) and
 * capture/recq.c (record queue, back-pressure, writer thread).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capture/pframe.h"
#include "capture/recq.h"
#include "core/mem.h"
#include "core/trace.h"
#include "pframe_fixtures.h"

struct got {
    int n;
    uint64_t ends[4];
    uint8_t bytes[4][32];
    uint32_t lens[4];
};

static void
on_msg(void *arg, struct recq_item *it, uint64_t end_off)
{
    struct got *g = arg;
    assert_true(g->n < 4);
    assert_true(it->u.msg.wire_len <= 32);
    g->ends[g->n] = end_off;
    g->lens[g->n] = it->u.msg.wire_len;
    memcpy(g->bytes[g->n], it->data, it->u.msg.wire_len);
    g->n++;
    recq_item_free(it);
}

static void
check_two(const struct got *g)
{
    assert_int_equal(g->n, 2);
    assert_int_equal(g->lens[0], 26);
    assert_int_equal(g->lens[1], 26);
    assert_int_equal(g->ends[0], 26);
    assert_int_equal(g->ends[1], 52);
    assert_memory_equal(g->bytes[0], stream, 26);
    assert_memory_equal(g->bytes[1], stream + 26, 26);
}

static void
test_pframe_feed_every_split(void **state)
{
    /* every way of cutting the stream in two reads gives the same result */
    for (size_t cut = 0; cut <= sizeof(stream); cut++) {
        struct pframer fr;
        struct got g;
        struct mt_err err = {0};
        size_t left = 99;
        uint32_t plen = 0;
        struct recq_item *part;

        memset(&fr, 0, sizeof(fr));
        memset(&g, 0, sizeof(g));
        assert_int_equal(
            pframe_feed(&fr, stream, cut, 0, on_msg, &g, &left, &err), 0);
        assert_int_equal(left, 0);
        assert_int_equal(pframe_feed(&fr, stream + cut, sizeof(stream) - cut,
                                     cut, on_msg, &g, &left, &err),
                         0);
        check_two(&g);
        assert_false(pframe_idle(&fr));
        part = pframe_take_partial(&fr, &plen);
        assert_non_null(part);
        assert_int_equal(plen, 10);
        assert_int_equal(part->u.msg.wire_len, 10);
        assert_true(part->u.msg.flags & TRACE_MSG_PARTIAL);
        assert_memory_equal(part->data, stream + 52, 10);
        recq_item_free(part);
        assert_true(pframe_idle(&fr));
        pframe_free(&fr);
    }
}

static void
test_pframe_feed_byte_by_byte(void **state)
{
    struct pframer fr;
    struct got g;
    struct mt_err err = {0};
    size_t left;

    memset(&fr, 0, sizeof(fr));
    memset(&g, 0, sizeof(g));
    for (size_t i = 0; i < 52; i++) {
        assert_int_equal(
            pframe_feed(&fr, stream + i, 1, i, on_msg, &g, &left, &err), 0);
        assert_int_equal(pframe_idle(&fr), i == 25 || i == 51);
    }
    check_two(&g);
    pframe_free(&fr);
}

static void
test_pframe_bad_header_breaks(void **state)
{
    static const uint8_t http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    static const uint8_t tiny[] = {
        0x0f, 0x00, 0x00, 0x00, /* messageLength 15 < 16 */
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0xdd, 0x07, 0x00, 0x00, /* OP_MSG */
    };
    struct pframer fr;
    struct got g;
    struct mt_err err = {0};
    size_t left = 0;
    uint32_t plen = 99;
    int rc;

    memset(&fr, 0, sizeof(fr));
    memset(&g, 0, sizeof(g));
    rc = pframe_feed(&fr, http, sizeof(http) - 1, 0, on_msg, &g, &left, &err);
    assert_true(rc < 0);
    assert_true(fr.broken);
    assert_int_equal(left, sizeof(http) - 1 - 16); /* after the header */
    assert_int_equal(g.n, 0);
    assert_int_equal(pframe_feed(&fr, stream, 26, 0, on_msg, &g, &left, &err),
                     MT_ECLOSED);
    assert_int_equal(left, 26);
    assert_null(pframe_take_partial(&fr, &plen));
    assert_int_equal(plen, 0);

    memset(&fr, 0, sizeof(fr));
    rc = pframe_feed(&fr, tiny, sizeof(tiny), 0, on_msg, &g, &left, &err);
    assert_true(rc < 0);
    assert_int_equal(g.n, 0);
    pframe_free(&fr);
}

static void
test_pframe_alloc_failure(void **state)
{
    struct pframer fr;
    struct got g;
    struct mt_err err = {0};
    size_t left = 0;

    memset(&fr, 0, sizeof(fr));
    memset(&g, 0, sizeof(g));
    mt_mem_fail_after(1);
    assert_int_equal(pframe_feed(&fr, stream, 30, 0, on_msg, &g, &left, &err),
                     -ENOMEM);
    mt_mem_fail_after(0);
    assert_int_equal(left, 14); /* bytes after the header */
    assert_true(fr.broken);
    pframe_free(&fr);
}

/* ---- recq ---- */

static int resumes;

static void
on_resume(void *arg)
{
    (void)arg;
    __atomic_fetch_add(&resumes, 1, __ATOMIC_SEQ_CST);
}

static struct recq_item *
msg_item(uint64_t conn, const uint8_t *p, size_t n)
{
    struct recq_item *it = recq_item_new(RECQ_MSG, n);
    assert_non_null(it);
    memcpy(it->data, p, n);
    it->u.msg.conn_id = conn;
    it->u.msg.wire_len = (uint32_t)n;
    return it;
}

static void
test_recq_backpressure_and_order(void **state)
{
    struct trace_header hdr;
    struct mt_err err = {0};
    struct recq_stats st;
    struct trace_writer *w;
    struct trace_reader *r;
    struct trace_rec rec;
    struct recq *q;
    FILE *fp = tmpfile();
    uint64_t next = 1;

    assert_non_null(fp);
    memset(&hdr, 0, sizeof(hdr));
    hdr.source = TRACE_SRC_SYNTH;
    w = trace_writer_open_fp(fp, &hdr, &err);
    assert_non_null(w);
    /* a bound of 4 records; the writer starts after 50 pushes */
    q = recq_new(w, 1u << 30, 4, on_resume, NULL, RECQ_NO_START, &err);
    assert_non_null(q);
    resumes = 0;
    for (uint64_t i = 1; i <= 50; i++) {
        recq_push(q, msg_item(i, stream, 26));
        assert_int_equal(recq_over(q), i > 4); /* producers must pause */
    }
    assert_int_equal(recq_start(q, &err), 0);
    /* the writer drains it and calls resume once it is under half */
    for (int k = 0; k < 500 && recq_over(q); k++) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    assert_false(recq_over(q));
    assert_int_equal(recq_close(q, &st), 0);
    assert_true(__atomic_load_n(&resumes, __ATOMIC_SEQ_CST) >= 1);
    assert_true(st.pauses >= 1);
    assert_int_equal(st.msgs, 50);
    assert_int_equal(st.msg_bytes, 50 * 26);
    assert_int_equal(trace_writer_close(w), 0);

    rewind(fp);
    r = trace_reader_open_fp(fp, &err);
    assert_non_null(r);
    while (trace_reader_next(r, &rec, &err) == MT_OK) {
        if (rec.type != TRACE_REC_MSG)
            continue;
        assert_int_equal(rec.u.msg.conn_id, next); /* queue order kept */
        assert_int_equal(rec.u.msg.wire_len, 26);
        assert_memory_equal(rec.u.msg.wire, stream, 26);
        next++;
    }
    assert_int_equal(next, 51);
    trace_reader_free(r);
    fclose(fp);
}

/* Batches keep queue order with single pushes around them, count towards
 * the bound when pushed, and report when they are full. */
static void
test_recq_batch_order(void **state)
{
    struct trace_header hdr;
    struct mt_err err = {0};
    struct recq_stats st;
    struct recq_batch b = {0}, big = {0};
    struct trace_writer *w;
    struct trace_reader *r;
    struct trace_rec rec;
    struct recq *q;
    FILE *fp = tmpfile();
    uint64_t next = 1;
    bool full = false;

    assert_non_null(fp);
    memset(&hdr, 0, sizeof(hdr));
    hdr.source = TRACE_SRC_SYNTH;
    w = trace_writer_open_fp(fp, &hdr, &err);
    assert_non_null(w);
    q = recq_new(w, 1u << 30, 10, on_resume, NULL, RECQ_NO_START, &err);
    assert_non_null(q);
    recq_push(q, msg_item(1, stream, 26));
    for (uint64_t i = 2; i <= 8; i++)
        assert_false(recq_batch_add(&b, msg_item(i, stream, 26)));
    assert_int_equal(b.count, 7);
    assert_false(recq_over(q)); /* nothing of the batch is queued yet */
    recq_push_batch(q, &b);
    assert_null(b.head);
    assert_int_equal(b.count, 0);
    recq_push_batch(q, &b); /* empty: a no-op */
    recq_push(q, msg_item(9, stream, 26));
    assert_false(recq_over(q)); /* 9 of 10 */
    for (uint64_t i = 10; i <= 12; i++)
        assert_false(recq_batch_add(&b, msg_item(i, stream, 26)));
    recq_push_batch(q, &b);
    assert_true(recq_over(q)); /* 12 of 10: producers must pause */
    /* a batch reports full at RECQ_BATCH_BYTES; freeing it drops nothing
     * that was queued */
    while (!full)
        full = recq_batch_add(&big, msg_item(99, stream, 26));
    assert_true(big.bytes >= RECQ_BATCH_BYTES);
    recq_batch_free(&big);
    assert_int_equal(big.count, 0);
    assert_int_equal(recq_start(q, &err), 0);
    assert_int_equal(recq_close(q, &st), 0);
    assert_int_equal(st.msgs, 12);
    assert_int_equal(trace_writer_close(w), 0);

    rewind(fp);
    r = trace_reader_open_fp(fp, &err);
    assert_non_null(r);
    while (trace_reader_next(r, &rec, &err) == MT_OK)
        if (rec.type == TRACE_REC_MSG)
            assert_int_equal(rec.u.msg.conn_id, next++);
    assert_int_equal(next, 13);
    trace_reader_free(r);
    recq_batch_free(&b);
    fclose(fp);
}

/* Small items come back to the producer once written, zeroed, and the
 * trace holds every message as it was when pushed. */
static void
test_recq_recycle(void **state)
{
    struct trace_header hdr;
    struct mt_err err = {0};
    struct recq_stats st;
    struct recq_batch b = {0};
    struct trace_writer *w;
    struct trace_reader *r;
    struct trace_rec rec;
    struct recq_item *it;
    struct recq *q;
    FILE *fp = tmpfile();
    uint64_t id = 0, next = 1;

    assert_non_null(fp);
    memset(&hdr, 0, sizeof(hdr));
    hdr.source = TRACE_SRC_SYNTH;
    w = trace_writer_open_fp(fp, &hdr, &err);
    assert_non_null(w);
    q = recq_new(w, 1u << 30, 100000, on_resume, NULL, 0, &err);
    assert_non_null(q);
    it = recq_batch_item(&b, RECQ_MSG, RECQ_ITEM_SMALL + 1);
    assert_int_equal(it->cap, RECQ_ITEM_SMALL + 1); /* large: not pooled */
    recq_item_free(it);
    /* push one pooled message per round until written items come back */
    for (int k = 0; k < 1000 && b.nspare == 0; k++) {
        it = recq_batch_item(&b, RECQ_MSG, 26);
        assert_non_null(it);
        assert_int_equal(it->cap, RECQ_ITEM_SMALL);
        assert_int_equal(it->u.msg.conn_id, 0); /* zeroed, recycled or not */
        memcpy(it->data, stream, 26);
        it->data[4] = (uint8_t)++id; /* requestID: which message */
        it->u.msg.conn_id = id;
        it->u.msg.wire_len = 26;
        (void)recq_batch_add(&b, it);
        recq_push_batch(q, &b);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    assert_true(b.nspare > 0);
    assert_int_equal(recq_close(q, &st), 0);
    assert_int_equal(st.msgs, id);
    assert_int_equal(trace_writer_close(w), 0);
    recq_batch_free(&b);

    rewind(fp);
    r = trace_reader_open_fp(fp, &err);
    assert_non_null(r);
    while (trace_reader_next(r, &rec, &err) == MT_OK) {
        if (rec.type != TRACE_REC_MSG)
            continue;
        assert_int_equal(rec.u.msg.conn_id, next);
        assert_int_equal(rec.u.msg.wire_len, 26);
        assert_int_equal(rec.u.msg.wire[4], (uint8_t)next);
        next++;
    }
    assert_int_equal(next, id + 1);
    trace_reader_free(r);
    fclose(fp);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pframe_feed_every_split),
        cmocka_unit_test(test_pframe_feed_byte_by_byte),
        cmocka_unit_test(test_pframe_bad_header_breaks),
        cmocka_unit_test(test_pframe_alloc_failure),
        cmocka_unit_test(test_recq_backpressure_and_order),
        cmocka_unit_test(test_recq_batch_order),
        cmocka_unit_test(test_recq_recycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
