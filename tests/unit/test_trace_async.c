/*
 * test_trace_async.c -- core/trace: the writer's compression thread
 * (trace_writer_set_async).
 *
 * The same records written with and without the thread, under a fixed
 * clock (so that frames end at the same records), must give the same
 * bytes; a full "disk" (a fixed-size fmemopen buffer: a real ENOSPC) must
 * give the error at a flush or close, sticky, with the complete frames
 * readable; levels can change while the thread runs.  Run under TSan by
 * `make tsan`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/err.h"
#include "core/rd.h"
#include "core/trace.h"

static uint64_t
fixed_now(const struct mt_clock *clk)
{
    (void)clk;
    return 5000; /* frames end by size only */
}

static const struct mt_clock fixed_clock = {fixed_now, NULL};

static void
mk_header(struct trace_header *h)
{
    memset(h, 0, sizeof(*h));
    snprintf(h->tool_version, sizeof(h->tool_version), "mtrace test");
    h->source = TRACE_SRC_SYNTH;
    snprintf(h->source_desc, sizeof(h->source_desc), "test_trace_async.c");
    h->start_wall_ns = 1700000000123456789ull;
    h->start_mono_ns = 1000;
    h->ts_precision_ns = 1;
}

/* Message i: n bytes, an OP_MSG header, half repeated text, half noise. */
static void
mk_wire(uint8_t *p, size_t n, uint32_t i)
{
    uint32_t x = i * 2654435761u + 1;

    for (size_t k = 0; k < n; k++) {
        x = x * 1103515245u + 12345u;
        p[k] = k % 2 ? (uint8_t)(x >> 16) : (uint8_t)('a' + k % 23);
    }
    wr_le32(p, (uint32_t)n);
    wr_le32(p + 4, i);
    wr_le32(p + 12, 2013);
}

/*
 * Writes msgs messages (a flush every flush_every, 0: none) through a
 * writer on a memory "disk" of cap bytes; async turns the thread on.
 * Returns the first error of the writes, flushes and close (0 if none);
 * *len: bytes on the disk; *ok_msgs: messages whose flush succeeded.
 */
static int
write_trace(uint8_t *disk, size_t cap, bool async, int msgs, int flush_every,
            size_t *len, int *ok_msgs)
{
    static uint8_t wire[3000];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    FILE *fp = fmemopen(disk, cap, "w");
    int rc = 0, rc2;

    assert_non_null(fp);
    setvbuf(fp, NULL, _IONBF, 0);
    mk_header(&h);
    w = trace_writer_open_fp(fp, &h, &err);
    assert_non_null(w);
    trace_writer_set_clock(w, &fixed_clock);
    assert_int_equal(trace_writer_set_level(w, -3), 0);
    if (async) {
        assert_int_equal(trace_writer_set_async(w), 0);
        assert_int_equal(trace_writer_set_async(w), 0); /* idempotent */
    }
    *ok_msgs = 0;
    for (int i = 0; i < msgs && rc == 0; i++) {
        struct trace_msg m = {.conn_id = 1 + (uint64_t)i % 3,
                              .t_ns = 10000 + (uint64_t)i * 100,
                              .dir = (uint8_t)(i % 2),
                              .wire = wire,
                              .wire_len = 200 + (uint32_t)(i * 37) % 2800};
        mk_wire(wire, m.wire_len, (uint32_t)i);
        rc = trace_writer_msg(w, &m);
        if (rc == 0 && i == msgs / 2) /* a level change mid-stream */
            rc = trace_writer_set_level(w, 1);
        if (rc == 0 && flush_every > 0 && i % flush_every == 0) {
            rc = trace_writer_flush(w);
            if (rc == 0)
                *ok_msgs = i + 1;
        }
    }
    rc2 = trace_writer_close(w);
    if (rc == 0)
        rc = rc2;
    if (rc == 0)
        *ok_msgs = msgs;
    *len = (size_t)ftell(fp);
    fclose(fp);
    return rc;
}

/* Counts the messages of a trace in memory; returns the final code. */
static int
count_msgs(const uint8_t *buf, size_t len, int *msgs)
{
    struct mt_err err;
    struct trace_reader *r = trace_reader_open_mem(buf, len, &err);
    struct trace_rec rec;
    int rc;

    *msgs = 0;
    if (r == NULL)
        return err.code;
    while ((rc = trace_reader_next(r, &rec, &err)) == MT_OK)
        *msgs += rec.type == TRACE_REC_MSG;
    trace_reader_free(r);
    return rc;
}

/* Several MB in many frames: byte-identical with and without the thread,
 * and every message reads back. */
static void
test_trace_async_same_bytes(void **state)
{
    size_t cap = 64u << 20, len_sync, len_async;
    uint8_t *a = calloc(1, cap), *b = calloc(1, cap);
    int ok_a, ok_b, n;

    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(write_trace(a, cap, false, 6000, 1000, &len_sync, &ok_a),
                     0);
    assert_int_equal(write_trace(b, cap, true, 6000, 1000, &len_async, &ok_b),
                     0);
    assert_true(len_sync > 1000000); /* several frames */
    assert_int_equal(len_sync, len_async);
    assert_memory_equal(a, b, len_sync);
    assert_int_equal(count_msgs(b, len_async, &n), MT_END);
    assert_int_equal(n, 6000);
    free(a);
    free(b);
}

/* A full disk while the thread writes: the error reaches the caller at a
 * flush or close, is sticky, and the disk holds the complete frames. */
static void
test_trace_async_enospc(void **state)
{
    size_t cap = 256 * 1024, len;
    uint8_t *disk = calloc(1, cap);
    int ok, n, rc;

    assert_non_null(disk);
    rc = write_trace(disk, cap, true, 6000, 50, &len, &ok);
    assert_int_equal(rc, -ENOSPC);
    assert_true(ok > 50);
    assert_true(ok < 6000);
    rc = count_msgs(disk, cap, &n);
    assert_true(rc < 0); /* the partial frame at the end */
    assert_true(n >= ok);
    assert_true(n < 6000);
    free(disk);
}

/* Without flushes: the error comes from close (or the frame hand-off). */
static void
test_trace_async_enospc_at_close(void **state)
{
    size_t cap = 128 * 1024, len;
    uint8_t *disk = calloc(1, cap);
    int ok;

    assert_non_null(disk);
    assert_int_equal(write_trace(disk, cap, true, 6000, 0, &len, &ok), -ENOSPC);
    assert_int_equal(ok, 0);
    free(disk);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_async_same_bytes),
        cmocka_unit_test(test_trace_async_enospc),
        cmocka_unit_test(test_trace_async_enospc_at_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
