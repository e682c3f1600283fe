/*
 * test_tcp_reasm.c -- capture/tcp_reasm.c: in-order delivery, out-of-order,
 * retransmission, overlap, wraparound, truncation, gaps (ack, limit, flush).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "capture/tcp_reasm.h"

/* What the callbacks saw: bytes, with '#' standing for each lost byte. */
struct sink {
    char out[4096];
    size_t n;
    int gaps;
    uint64_t last_t; /* t_ns of the last data callback */
};

static int
on_data(void *ctx, const uint8_t *p, size_t n, uint64_t t_ns)
{
    struct sink *s = ctx;
    assert_true(s->n + n < sizeof(s->out));
    memcpy(s->out + s->n, p, n);
    s->n += n;
    s->last_t = t_ns;
    return 0;
}

static int
on_gap(void *ctx, uint64_t n, uint64_t t_ns)
{
    struct sink *s = ctx;
    assert_true(s->n + n < sizeof(s->out));
    memset(s->out + s->n, '#', n);
    s->n += n;
    s->gaps++;
    return 0;
}

static const struct tcp_reasm_ops ops = {on_data, on_gap};

struct fx {
    struct tcp_reasm r;
    struct tcp_reasm_stats st;
    struct sink s;
};

static void
fx_init(struct fx *f, size_t ooo_max)
{
    memset(f, 0, sizeof(*f));
    tcp_reasm_init(&f->r, ooo_max, &ops, &f->s, &f->st);
}

/* Segment of text at stream offset off (ISN 1000, data from 1001). */
static void
seg(struct fx *f, uint32_t isn, uint32_t off, const char *text)
{
    size_t n = strlen(text);
    assert_int_equal(
        tcp_reasm_segment(&f->r, isn + 1 + off, (const uint8_t *)text, n, n, 0),
        0);
}

static void
expect(struct fx *f, const char *want)
{
    f->s.out[f->s.n] = 0;
    assert_string_equal(f->s.out, want);
}

static void
test_tcp_reasm_in_order(void **state)
{
    struct fx f;
    fx_init(&f, 1 << 20);
    tcp_reasm_syn(&f.r, 1000);
    seg(&f, 1000, 0, "hello ");
    seg(&f, 1000, 6, "world");
    expect(&f, "hello world");
    assert_int_equal(f.st.out_of_order, 0);
    assert_int_equal(f.st.retransmitted, 0);
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_out_of_order(void **state)
{
    struct fx f;
    fx_init(&f, 1 << 20);
    tcp_reasm_syn(&f.r, 1000);
    seg(&f, 1000, 6, "world");
    seg(&f, 1000, 11, "!");
    expect(&f, "");
    seg(&f, 1000, 0, "hello ");
    expect(&f, "hello world!");
    assert_int_equal(f.st.out_of_order, 2);
    assert_int_equal(f.r.ooo_bytes, 0);
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_retransmit_and_overlap(void **state)
{
    struct fx f;
    fx_init(&f, 1 << 20);
    tcp_reasm_syn(&f.r, 1000);
    seg(&f, 1000, 0, "abcd");
    seg(&f, 1000, 0, "abcd");  /* duplicate */
    seg(&f, 1000, 2, "XXef");  /* overlap: first copy of c,d wins */
    seg(&f, 1000, 8, "ij");    /* ahead */
    seg(&f, 1000, 8, "ij");    /* duplicate of a buffered one */
    seg(&f, 1000, 5, "YYhZZ"); /* fills 6..8, overlaps both sides */
    expect(&f, "abcdefYhij");
    assert_int_equal(f.st.retransmitted, 4);
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_wraparound(void **state)
{
    struct fx f;
    uint32_t isn = 0xfffffffau;
    fx_init(&f, 1 << 20);
    tcp_reasm_syn(&f.r, isn);
    seg(&f, isn, 8, "89");   /* seq wrapped: 0x00000003 */
    seg(&f, isn, 0, "0123"); /* 0xfffffffb.. */
    seg(&f, isn, 4, "4567"); /* crosses 2^32 */
    expect(&f, "0123456789");
    assert_true(tcp_seq_lt(0xfffffff0u, 5));
    assert_false(tcp_seq_lt(5, 0xfffffff0u));
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_midstream(void **state)
{
    struct fx f;
    fx_init(&f, 1 << 20);
    /* no SYN: the first segment sets the origin */
    assert_int_equal(
        tcp_reasm_segment(&f.r, 5000, (const uint8_t *)"xy", 2, 2, 0), 0);
    assert_false(f.r.saw_syn);
    assert_int_equal(
        tcp_reasm_segment(&f.r, 5002, (const uint8_t *)"z", 1, 1, 0), 0);
    expect(&f, "xyz");
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_truncated(void **state)
{
    struct fx f;
    fx_init(&f, 1 << 20);
    tcp_reasm_syn(&f.r, 0);
    /* 6 bytes on the wire, 2 captured */
    assert_int_equal(tcp_reasm_segment(&f.r, 1, (const uint8_t *)"ab", 2, 6, 0),
                     0);
    seg(&f, 0, 6, "gh");
    expect(&f, "ab####gh");
    assert_int_equal(f.st.truncated, 1);
    assert_int_equal(f.st.gaps, 0); /* a cut is not a hole */
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_gap_by_ack(void **state)
{
    struct fx f;
    fx_init(&f, 1 << 20);
    tcp_reasm_syn(&f.r, 0);
    seg(&f, 0, 0, "ab");
    seg(&f, 0, 5, "fg"); /* 2..5 lost */
    expect(&f, "ab");
    assert_int_equal(tcp_reasm_ack(&f.r, 1 + 7, 0), 0);
    expect(&f, "ab###fg");
    /* an ack past everything: the tail was lost too */
    assert_int_equal(tcp_reasm_ack(&f.r, 1 + 9, 0), 0);
    expect(&f, "ab###fg##");
    assert_int_equal(f.st.gaps, 2);
    assert_int_equal(f.st.gap_bytes, 5);
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_fin_ack_is_not_a_gap(void **state)
{
    struct fx f;
    fx_init(&f, 1 << 20);
    tcp_reasm_syn(&f.r, 0);
    seg(&f, 0, 0, "abc");
    tcp_reasm_fin(&f.r, 1 + 3);
    assert_int_equal(tcp_reasm_ack(&f.r, 1 + 4, 0), 0); /* acks the FIN */
    expect(&f, "abc");
    assert_int_equal(f.st.gaps, 0);
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_limit_forces_gap(void **state)
{
    struct fx f;
    fx_init(&f, 4); /* at most 4 bytes waiting */
    tcp_reasm_syn(&f.r, 0);
    seg(&f, 0, 2, "cd");
    seg(&f, 0, 5, "fgh"); /* 5 buffered > 4: give up on the first hole */
    expect(&f, "##cd");
    seg(&f, 0, 4, "e");
    expect(&f, "##cdefgh");
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_flush(void **state)
{
    struct fx f;
    fx_init(&f, 1 << 20);
    tcp_reasm_syn(&f.r, 0);
    seg(&f, 0, 3, "d");
    seg(&f, 0, 6, "g");
    assert_int_equal(tcp_reasm_flush(&f.r, 0), 0);
    expect(&f, "###d##g");
    assert_int_equal(f.r.ooo_bytes, 0);
    assert_null(f.r.ooo);
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_times(void **state)
{
    struct fx f;
    fx_init(&f, 1 << 20);
    tcp_reasm_syn(&f.r, 0);
    /* "cd" at t=20, "ef" at t=10 (reordered), hole "ab" filled at t=30:
     * everything became complete at 30 */
    tcp_reasm_segment(&f.r, 3, (const uint8_t *)"cd", 2, 2, 20);
    tcp_reasm_segment(&f.r, 5, (const uint8_t *)"ef", 2, 2, 10);
    tcp_reasm_segment(&f.r, 1, (const uint8_t *)"ab", 2, 2, 30);
    expect(&f, "abcdef");
    assert_int_equal(f.s.last_t, 30);
    /* a hole given up (flush at t=100): the bytes after it were complete
     * when the latest of them arrived (50), not at 100 */
    tcp_reasm_segment(&f.r, 9, (const uint8_t *)"ij", 2, 2, 50);
    tcp_reasm_segment(&f.r, 11, (const uint8_t *)"kl", 2, 2, 40);
    assert_int_equal(tcp_reasm_flush(&f.r, 100), 0);
    expect(&f, "abcdef##ijkl");
    assert_int_equal(f.s.last_t, 50);
    tcp_reasm_free(&f.r);
}

static void
test_tcp_reasm_free_discards(void **state)
{
    struct fx f;
    fx_init(&f, 1 << 20);
    tcp_reasm_syn(&f.r, 0);
    seg(&f, 0, 3, "d"); /* buffered, then freed undelivered (ASan: no leak) */
    tcp_reasm_free(&f.r);
    expect(&f, "");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp_reasm_in_order),
        cmocka_unit_test(test_tcp_reasm_out_of_order),
        cmocka_unit_test(test_tcp_reasm_retransmit_and_overlap),
        cmocka_unit_test(test_tcp_reasm_wraparound),
        cmocka_unit_test(test_tcp_reasm_midstream),
        cmocka_unit_test(test_tcp_reasm_truncated),
        cmocka_unit_test(test_tcp_reasm_gap_by_ack),
        cmocka_unit_test(test_tcp_reasm_fin_ack_is_not_a_gap),
        cmocka_unit_test(test_tcp_reasm_limit_forces_gap),
        cmocka_unit_test(test_tcp_reasm_flush),
        cmocka_unit_test(test_tcp_reasm_times),
        cmocka_unit_test(test_tcp_reasm_free_discards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
