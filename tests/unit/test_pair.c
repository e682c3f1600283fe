/*
 * test_pair.c -- core/pair.c: the pending-request table of request->reply
 * pairing, and the header fields it reads from a recorded message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/err.h"
#include "core/pair.h"
#include "core/trace.h"

/* A value bigger than a word, with its bytes checked on the way out. */
struct val {
    uint64_t t_ns;
    char tag[40];
};

/* Many puts and takes in a small table: every entry is found exactly once
 * (exercises backward-shift deletion across wrap-around). */
static void
test_pair_table_put_take(void **state)
{
    struct pair_table p;
    struct val v = {0}, out;
    int n = 5000;

    pair_table_init(&p, sizeof(v), (size_t)n);
    for (int i = 0; i < n; i++) {
        v.t_ns = (uint64_t)i;
        snprintf(v.tag, sizeof(v.tag), "r%d", i);
        assert_int_equal(pair_table_put(&p, (uint64_t)(i % 7), i, &v), 0);
    }
    assert_int_equal(pair_table_put(&p, 99, 99, &v), MT_ELIMIT);
    assert_int_equal(p.n, (size_t)n);
    for (int i = 0; i < n; i += 2) {
        char want[40];
        assert_true(pair_table_take(&p, (uint64_t)(i % 7), i, &out));
        assert_int_equal(out.t_ns, (uint64_t)i);
        snprintf(want, sizeof(want), "r%d", i);
        assert_string_equal(out.tag, want);
    }
    for (int i = 0; i < n; i++) {
        bool there = pair_table_take(&p, (uint64_t)(i % 7), i, &out);
        assert_int_equal(there, i % 2 == 1);
        if (there)
            assert_int_equal(out.t_ns, (uint64_t)i);
    }
    assert_int_equal(p.n, 0);
    assert_false(pair_table_take(&p, 1, 1, &out));
    pair_table_free(&p);
    pair_table_init(&p, sizeof(v), 4); /* empty table: lookups are safe */
    assert_false(pair_table_take(&p, 0, 0, &out));
    assert_false(pair_table_take(&p, 0, 0, NULL));
    pair_table_free(&p);
    pair_table_free(&p); /* twice: a no-op */
}

/* A second put of the same key replaces its value; the count stays. */
static void
test_pair_table_put_replaces(void **state)
{
    struct pair_table p;
    uint64_t t = 1, out = 0;

    pair_table_init(&p, sizeof(t), 1);
    assert_int_equal(pair_table_put(&p, 3, -5, &t), 0);
    t = 2;
    assert_int_equal(pair_table_put(&p, 3, -5, &t), 0); /* full, but there */
    assert_int_equal(p.n, 1);
    assert_true(pair_table_take(&p, 3, -5, &out));
    assert_int_equal(out, 2);
    pair_table_free(&p);
}

static void
count_val(void *val, void *ctx)
{
    *(uint64_t *)ctx += *(uint64_t *)val;
}

/* drop_conn removes exactly one connection's entries, calling fn on each,
 * and keeps every other entry findable (removals shift runs). */
static void
test_pair_table_drop_conn(void **state)
{
    struct pair_table p;
    uint64_t sum = 0, want = 0, all = 0;

    pair_table_init(&p, sizeof(uint64_t), 100000);
    pair_table_drop_conn(&p, 1, count_val, &sum); /* empty: nothing */
    assert_int_equal(sum, 0);
    for (int i = 0; i < 3000; i++) {
        uint64_t v = (uint64_t)i + 1;
        assert_int_equal(pair_table_put(&p, (uint64_t)(i % 5), i, &v), 0);
        if (i % 5 == 2)
            want += v;
    }
    pair_table_drop_conn(&p, 2, count_val, &sum);
    assert_int_equal(sum, want);
    assert_int_equal(p.n, 3000 - 600);
    for (int i = 0; i < 3000; i++) {
        uint64_t out = 0;
        bool there = pair_table_take(&p, (uint64_t)(i % 5), i, &out);
        assert_int_equal(there, i % 5 != 2);
        if (there) {
            assert_int_equal(out, (uint64_t)i + 1);
            all++;
        }
    }
    assert_int_equal(all, 2400);
    assert_int_equal(p.n, 0);
    pair_table_drop_conn(&p, 0, NULL, NULL);
    pair_table_free(&p);
}

struct order {
    uint64_t last, n;
    bool ascending;
};

static void
check_order(void *val, void *ctx)
{
    struct order *o = ctx;
    uint64_t v = *(uint64_t *)val;

    if (o->n++ > 0 && v <= o->last)
        o->ascending = false;
    o->last = v;
}

/* The foreach visits every entry once, oldest first, also after the
 * table grew and takes moved entries between slots. */
static void
test_pair_table_foreach_all(void **state)
{
    struct pair_table p;
    struct order o = {0, 0, true};
    uint64_t sum = 0;

    pair_table_init(&p, sizeof(uint64_t), 1000);
    for (int i = 1; i <= 100; i++) {
        uint64_t v = (uint64_t)i;
        assert_int_equal(pair_table_put(&p, 7, i, &v), 0);
    }
    pair_table_foreach(&p, count_val, &sum);
    assert_int_equal(sum, 5050);
    for (int i = 101; i <= 900; i++) {
        uint64_t v = (uint64_t)i;
        assert_int_equal(pair_table_put(&p, (uint64_t)i % 3, i, &v), 0);
        if (i % 4 == 0)
            assert_true(
                pair_table_take(&p, (uint64_t)(i / 2) % 3, i / 2, NULL) ||
                i / 2 <= 100);
    }
    pair_table_foreach(&p, check_order, &o);
    assert_true(o.ascending);
    assert_int_equal(o.n, p.n);
    pair_table_free(&p);
}

/* Header of an OP_MSG request with moreToCome, read from the plain form
 * when one is recorded and from the wire form otherwise. */
static void
test_pair_msg_header_plain_first(void **state)
{
    static const uint8_t plain[] = {
        21,   0,    0, 0, /* 0: messageLength */
        7,    0,    0, 0, /* 4: requestID 7 */
        0,    0,    0, 0, /* 8: responseTo 0 */
        0xdd, 0x07, 0, 0, /* 12: OP_MSG (2013) */
        2,    0,    0, 0, /* 16: flagBits: moreToCome */
        0,                /* 20: section kind 0 (body cut) */
    };
    static const uint8_t wire[] = {
        16, 0, 0, 0, /* 0: messageLength */
        9,  0, 0, 0, /* 4: requestID 9 */
        7,  0, 0, 0, /* 8: responseTo 7 */
        1,  0, 0, 0, /* 12: OP_REPLY */
    };
    struct trace_msg m = {0};
    struct pair_hdr h;

    m.wire = wire;
    m.wire_len = sizeof(wire);
    assert_true(pair_msg_header(&m, &h));
    assert_int_equal(h.request_id, 9);
    assert_int_equal(h.response_to, 7);
    assert_int_equal(h.op_code, 1);
    assert_false(h.more_to_come);
    m.plain = plain;
    m.plain_len = sizeof(plain);
    assert_true(pair_msg_header(&m, &h));
    assert_int_equal(h.request_id, 7);
    assert_int_equal(h.op_code, 2013);
    assert_true(h.more_to_come);
}

/* Every prefix shorter than the header is refused, never over-read. */
static void
test_pair_msg_header_short(void **state)
{
    static const uint8_t wire[16] = {16, 0, 0, 0, 1};
    struct trace_msg m = {0};
    struct pair_hdr h;

    m.wire = wire;
    for (uint32_t n = 0; n < sizeof(wire); n++) {
        m.wire_len = n;
        assert_false(pair_msg_header(&m, &h));
    }
    m.wire_len = sizeof(wire);
    assert_true(pair_msg_header(&m, &h));
}

int
main(void)
{
    const struct CMUnitTest valid[] = {
        cmocka_unit_test(test_pair_table_put_take),
        cmocka_unit_test(test_pair_table_put_replaces),
        cmocka_unit_test(test_pair_table_drop_conn),
        cmocka_unit_test(test_pair_table_foreach_all),
        cmocka_unit_test(test_pair_msg_header_plain_first),
    };
    const struct CMUnitTest invalid[] = {
        cmocka_unit_test(test_pair_msg_header_short),
    };
    int rc = cmocka_run_group_tests_name("pair valid", valid, NULL, NULL);
    return rc |
           cmocka_run_group_tests_name("pair invalid", invalid, NULL, NULL);
}
