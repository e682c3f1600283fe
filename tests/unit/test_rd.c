/*
 * test_rd.c -- core/rd.h bounded reader and core/buf.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/mem.h"
#include "core/rd.h"

static void
test_rd_le32_reads_and_advances(void **state)
{
    static const uint8_t in[] = {
        0x01, 0x02, 0x03, 0x04, /* 0: le32 0x04030201 */
        0xff,                   /* 4: one byte left */
    };
    struct rd r = rd_init(in, sizeof(in));
    uint32_t v;

    assert_true(rd_le32(&r, &v));
    assert_int_equal(v, 0x04030201u);
    assert_int_equal(r.left, 1);
    assert_false(rd_le32(&r, &v)); /* 1 < 4: refused, nothing consumed */
    assert_int_equal(r.left, 1);
}

static void
test_rd_le64s_negative(void **state)
{
    static const uint8_t in[] = {0xff, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff};
    struct rd r = rd_init(in, sizeof(in));
    int64_t v;

    assert_true(rd_le64s(&r, &v));
    assert_int_equal(v, -1);
    assert_int_equal(r.left, 0);
}

static void
test_rd_cstr_needs_nul(void **state)
{
    static const uint8_t ok[] = {'a', 'b', 0, 'x'};
    static const uint8_t bad[] = {'a', 'b'};
    struct rd r = rd_init(ok, sizeof(ok));
    const char *s;
    size_t n;

    assert_true(rd_cstr(&r, &s, &n));
    assert_string_equal(s, "ab");
    assert_int_equal(n, 2);
    assert_int_equal(r.left, 1);

    r = rd_init(bad, sizeof(bad));
    assert_false(rd_cstr(&r, &s, &n));
    assert_int_equal(r.left, 2);
    r = rd_init(bad, 0);
    assert_false(rd_cstr(&r, &s, &n));
}

static void
test_rd_bytes_huge_length(void **state)
{
    static const uint8_t in[4] = {0};
    struct rd r = rd_init(in, sizeof(in));
    const uint8_t *p;

    assert_false(rd_bytes(&r, SIZE_MAX, &p)); /* no pointer overflow */
    assert_false(rd_skip(&r, 5));
    assert_true(rd_skip(&r, 4));
    assert_int_equal(r.left, 0);
}

static void
test_buf_limit_is_an_error(void **state)
{
    struct mt_buf b;

    mt_buf_init(&b, 8);
    assert_int_equal(mt_buf_append(&b, "12345", 5), 0);
    assert_int_equal(mt_buf_append(&b, "6789", 4), MT_ETOOBIG);
    assert_int_equal(b.len, 5);
    mt_buf_consume(&b, 2);
    assert_memory_equal(b.data, "345", 3);
    assert_int_equal(mt_buf_append(&b, "6789", 4), 0);
    assert_int_equal(b.len, 7);
    mt_buf_free(&b);
}

static void
test_buf_alloc_failure(void **state)
{
    struct mt_buf b;

    mt_buf_init(&b, 1024);
    mt_mem_fail_after(1);
    assert_int_equal(mt_buf_append(&b, "x", 1), -ENOMEM);
    mt_mem_fail_after(0);
    assert_int_equal(b.len, 0);
    assert_int_equal(mt_buf_append(&b, "x", 1), 0);
    mt_buf_free(&b);
}

/* The growth mt_buf and capture/pbuf share: first, doubled until want
 * fits, capped at len_max; nothing when it fits; -ENOMEM leaves it. */
static size_t
grown(size_t cap, size_t first, size_t want, size_t len_max)
{
    uint8_t *data = cap ? mt_malloc(cap) : NULL;

    assert_int_equal(mt_buf_grow(&data, &cap, first, want, len_max), 0);
    assert_true(data != NULL || cap == 0);
    mt_free(data);
    return cap;
}

static void
test_buf_grow(void **state)
{
    uint8_t *data = NULL;
    size_t cap = 0;

    (void)state;
    assert_int_equal(grown(0, 256, 1, 1 << 20), 256);
    assert_int_equal(grown(0, 256, 257, 1 << 20), 512);
    assert_int_equal(grown(0, 65536, 100, 1 << 20), 65536);
    assert_int_equal(grown(0, 65536, 100, 1000), 1000);
    assert_int_equal(grown(512, 256, 513, 1 << 20), 1024);
    assert_int_equal(grown(512, 256, 5000, 5000), 5000);
    assert_int_equal(grown(512, 256, 512, 1 << 20), 512);
    mt_mem_fail_after(1);
    assert_int_equal(mt_buf_grow(&data, &cap, 256, 10, 100), -ENOMEM);
    mt_mem_fail_after(0);
    assert_null(data);
    assert_int_equal(cap, 0);
}

static void
test_err_strerror(void **state)
{
    struct mt_err e;

    assert_string_equal(mt_strerror(MT_EPROTO), "malformed wire message");
    assert_int_equal(mt_err_set(&e, MT_ETRUNC, 42, "lost %d", 7), MT_ETRUNC);
    assert_int_equal(e.offset, 42);
    assert_string_equal(e.msg, "lost 7");
    assert_int_equal(mt_err_set(NULL, MT_EBSON, 0, "x"), MT_EBSON);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rd_le32_reads_and_advances),
        cmocka_unit_test(test_rd_le64s_negative),
        cmocka_unit_test(test_rd_cstr_needs_nul),
        cmocka_unit_test(test_rd_bytes_huge_length),
        cmocka_unit_test(test_buf_limit_is_an_error),
        cmocka_unit_test(test_buf_alloc_failure),
        cmocka_unit_test(test_buf_grow),
        cmocka_unit_test(test_err_strerror),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
