/*
 * test_pstream.c -- capture/pstream.c: one direction of a proxied
 * connection without sockets, fed bytes and told what was sent.
 *
 * Valid group: two messages and a cut third at every split point (records,
 * stamps, offsets, the incomplete message's start), every prefix of a
 * message (nothing recorded, nothing lost), the holds of --delay-ms
 * (released at their deadline, pipelined replies independent, achieved
 * delay measured once written, the tail at EOF held but not measured), the
 * backlog bound that leaves an incomplete held reply out, and the hold
 * limit.  Invalid group: bytes that are not wire protocol at every split
 * point (the message before them recorded, nothing after), a message over
 * msg_max reported as soon as its length is in.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "capture/pstream.h"
#include "core/trace.h"
#include "pframe_fixtures.h"

/* A message, then a header whose messageLength (3) is under 16. */
static const uint8_t garbage[] = {
    0x1a, 0x00, 0x00, 0x00, /*  0: messageLength 26 */
    0x01, 0x00, 0x00, 0x00, /*  4: requestID 1 */
    0x00, 0x00, 0x00, 0x00, /*  8: responseTo 0 */
    0xdd, 0x07, 0x00, 0x00, /* 12: OP_MSG */
    0x00, 0x00, 0x00, 0x00, /* 16: flagBits */
    0x00,                   /* 20: kind 0 */
    0x05, 0x00, 0x00, 0x00, /* 21: {} */
    0x00,                   /* 25: EOO */
    0x03, 0x00, 0x00, 0x00, /* 26: messageLength 3: bad */
    0x09, 0x00, 0x00, 0x00, /* 30: requestID */
    0x00, 0x00, 0x00, 0x00, /* 34: responseTo */
    0xdd, 0x07, 0x00, 0x00, /* 38: OP_MSG */
    0xee, 0xee,             /* 42: what follows */
};

struct got {
    int n;
    uint64_t t[4];
    uint32_t len[4];
    uint8_t bytes[4][32];
};

static void
on_emit(void *arg, struct recq_item *it)
{
    struct got *g = arg;

    assert_true(g->n < 4);
    assert_int_equal(it->kind, RECQ_MSG);
    assert_int_equal(it->u.msg.conn_id, 7);
    assert_true(it->u.msg.wire_len <= 32);
    g->t[g->n] = it->u.msg.t_ns;
    g->len[g->n] = it->u.msg.wire_len;
    memcpy(g->bytes[g->n], it->data, it->u.msg.wire_len);
    g->n++;
    recq_item_free(it);
}

/* Counts and frees (the hold-limit test emits 65 537 messages). */
static void
on_emit_count(void *arg, struct recq_item *it)
{
    (*(uint64_t *)arg)++;
    recq_item_free(it);
}

/* What pconn.c does with a read that cannot go out at once: the bytes
 * join out, then are framed. */
static unsigned
feed_out(struct pstream *s, const uint8_t *p, size_t n, uint64_t t)
{
    struct mt_err err = {0};

    assert_int_equal(pbuf_reserve(&s->out, n, 1u << 20), 0);
    memcpy(s->out.data + s->out.tail, p, n);
    s->out.tail += n;
    return pstream_in(s, p, n, t, &err);
}

/* ---- valid ---- */

/* Split at every point k: the records, their stamps (the time of the read
 * that brought their last byte), the offsets and the incomplete third
 * message's start time. */
static void
test_pstream_in_every_split(void **state)
{
    (void)state;
    for (size_t k = 0; k <= sizeof(stream); k++) {
        struct pstream s;
        struct got g = {0};
        struct mt_err err = {0};

        pstream_init(&s, 7, TRACE_DIR_C2S, 0, 0, NULL, on_emit, &g);
        assert_true(pstream_direct(&s));
        assert_int_equal(pstream_in(&s, stream, k, 100, &err), PSTREAM_OK);
        assert_int_equal(
            pstream_in(&s, stream + k, sizeof(stream) - k, 200, &err),
            PSTREAM_OK);
        assert_int_equal(g.n, 2);
        assert_int_equal(g.len[0], 26);
        assert_int_equal(g.len[1], 26);
        assert_memory_equal(g.bytes[0], stream, 26);
        assert_memory_equal(g.bytes[1], stream + 26, 26);
        assert_int_equal(g.t[0], k >= 26 ? 100 : 200);
        assert_int_equal(g.t[1], k >= 52 ? 100 : 200);
        assert_int_equal(s.in_off, sizeof(stream));
        assert_int_equal(s.msg_end_off, 52);
        assert_int_equal(s.msgs, 2);
        assert_int_equal(s.rec_bytes, 52);
        /* the third started in the read after the second completed */
        assert_int_equal(s.msg_start_ns, k > 52 ? 100 : 200);
        assert_false(pstream_idle(&s));
        /* undelayed, nothing kept in out: everything goes out directly */
        assert_true(pstream_direct(&s));
        assert_int_equal(pstream_sendable(&s), 0);
        pstream_sent(&s, sizeof(stream), false);
        assert_int_equal(s.out_off, sizeof(stream));
        pstream_free(&s);
    }
}

/* Every prefix of one message: nothing recorded, nothing lost, the
 * message pending since the read; the rest completes it. */
static void
test_pstream_in_every_prefix(void **state)
{
    (void)state;
    for (size_t k = 1; k < 26; k++) {
        struct pstream s;
        struct got g = {0};
        struct mt_err err = {0};

        pstream_init(&s, 7, TRACE_DIR_C2S, 0, 1000, NULL, on_emit, &g);
        assert_int_equal(pstream_in(&s, stream, k, 5, &err), PSTREAM_OK);
        assert_int_equal(g.n, 0);
        assert_int_equal(s.msg_start_ns, 5);
        assert_false(pstream_idle(&s));
        assert_int_equal(pstream_in(&s, stream + k, 26 - k, 6, &err),
                         PSTREAM_OK);
        assert_int_equal(g.n, 1);
        assert_memory_equal(g.bytes[0], stream, 26);
        assert_int_equal(s.msg_start_ns, 0);
        assert_true(pstream_idle(&s));
        pstream_free(&s);
    }
}

/* --delay-ms: two replies read together are released together at their
 * deadline, the cut third waits; the achieved delay of each is measured
 * when written; at EOF the tail is held from then and not measured. */
static void
test_pstream_delay_release(void **state)
{
    static struct delay_hist h;
    struct pstream s;
    struct got g = {0};

    (void)state;
    delay_hist_init(&h);
    pstream_init(&s, 7, TRACE_DIR_S2C, 1000, 0, NULL, on_emit, &g);
    assert_false(pstream_direct(&s));
    assert_int_equal(feed_out(&s, stream, sizeof(stream), 100), PSTREAM_OK);
    assert_int_equal(g.n, 2);
    assert_int_equal(pstream_held(&s), 2);
    assert_int_equal(pstream_sendable(&s), 0);
    assert_int_equal(pstream_next_ready(&s), 1100);
    assert_int_equal(pstream_release(&s, 1099), 0);
    assert_int_equal(pstream_release(&s, 1100), 2);
    assert_int_equal(pstream_next_ready(&s), 0);
    assert_int_equal(pstream_sendable(&s), 52); /* not the cut third */
    assert_true(pstream_releasing(&s));
    pstream_sent(&s, 30, true);
    pstream_written(&s, 1150, &h);
    assert_int_equal(h.n, 1); /* the first is all out, the second not */
    pstream_sent(&s, pstream_sendable(&s), true);
    pstream_written(&s, 1160, &h);
    assert_int_equal(h.n, 2);
    assert_int_equal(h.min_ns, 1050);
    assert_int_equal(h.max_ns, 1060);
    assert_false(pstream_releasing(&s));
    assert_false(pstream_idle(&s)); /* 10 bytes of the third wait */
    assert_int_equal(pstream_eof(&s, 2000), PSTREAM_OK);
    assert_int_equal(pstream_next_ready(&s), 3000);
    assert_int_equal(pstream_release(&s, 3000), 1);
    assert_int_equal(pstream_sendable(&s), 10);
    pstream_sent(&s, 10, true);
    pstream_written(&s, 3001, &h);
    assert_int_equal(h.n, 2); /* the tail is not a reply: not measured */
    assert_int_equal(s.out_off, sizeof(stream));
    assert_int_equal(pbuf_len(&s.out), 0);
    pstream_free(&s);
}

/* Pipelined replies: each is held from its own arrival, not behind the
 * other's delay; the incomplete one is out of the backlog bound. */
static void
test_pstream_delay_pipelined(void **state)
{
    struct pstream s;
    struct got g = {0};

    (void)state;
    pstream_init(&s, 7, TRACE_DIR_S2C, 1000, 0, NULL, on_emit, &g);
    assert_int_equal(feed_out(&s, stream, 30, 100), PSTREAM_OK);
    assert_int_equal(pstream_backlog(&s), 26); /* 4 bytes of the second */
    assert_int_equal(feed_out(&s, stream + 30, 22, 500), PSTREAM_OK);
    assert_int_equal(pstream_backlog(&s), 52);
    assert_int_equal(g.t[0], 100);
    assert_int_equal(g.t[1], 500);
    assert_int_equal(pstream_release(&s, 1100), 1);
    assert_int_equal(pstream_sendable(&s), 26);
    assert_int_equal(pstream_next_ready(&s), 1500);
    assert_int_equal(pstream_release(&s, 1500), 1);
    assert_int_equal(pstream_sendable(&s), 52);
    pstream_sent(&s, 52, true);
    assert_true(pstream_idle(&s));
    pstream_free(&s);
}

/* More than PSTREAM_HOLDS_MAX replies waiting: reported, not held. */
static void
test_pstream_delay_hold_limit(void **state)
{
    struct pstream s;
    struct mt_err err = {0};
    uint64_t n = 0;
    unsigned st = PSTREAM_OK;

    (void)state;
    pstream_init(&s, 7, TRACE_DIR_S2C, 1000, 0, NULL, on_emit_count, &n);
    for (size_t i = 0; i < PSTREAM_HOLDS_MAX; i++)
        assert_int_equal(pstream_in(&s, stream, 26, 1, &err), PSTREAM_OK);
    assert_int_equal(pstream_held(&s), PSTREAM_HOLDS_MAX);
    st = pstream_in(&s, stream, 26, 1, &err);
    assert_int_equal(st, PSTREAM_HOLDS_FULL);
    assert_int_equal(n, PSTREAM_HOLDS_MAX + 1); /* recorded all the same */
    assert_int_equal(pstream_held(&s), PSTREAM_HOLDS_MAX);
    pstream_free(&s);
}

/* ---- invalid ---- */

/* Bytes that are not wire protocol, at every split point: the message
 * before them is recorded, GARBAGE is said once (with the reason), what
 * follows is counted as unframed and never recorded. */
static void
test_pstream_garbage_every_split(void **state)
{
    (void)state;
    for (size_t k = 0; k <= sizeof(garbage); k++) {
        struct pstream s;
        struct got g = {0};
        struct mt_err err = {0};
        unsigned a, b;

        pstream_init(&s, 7, TRACE_DIR_S2C, 0, 0, NULL, on_emit, &g);
        a = pstream_in(&s, garbage, k, 1, &err);
        b = pstream_in(&s, garbage + k, sizeof(garbage) - k, 2, &err);
        /* the bad header is complete at byte 42 */
        assert_int_equal(a, k >= 42 ? PSTREAM_GARBAGE : PSTREAM_OK);
        assert_int_equal(b, k >= 42 ? PSTREAM_OK : PSTREAM_GARBAGE);
        assert_int_equal(err.code, MT_EPROTO);
        assert_int_equal(g.n, 1);
        assert_memory_equal(g.bytes[0], garbage, 26);
        assert_int_equal(s.msg_end_off, 26);
        assert_int_equal(s.unframed, sizeof(garbage) - 26);
        assert_int_equal(pstream_in(&s, garbage, 5, 3, &err), PSTREAM_OK);
        assert_int_equal(s.unframed, sizeof(garbage) - 26 + 5);
        assert_int_equal(g.n, 1);
        pstream_free(&s);
    }
}

/* A client message over msg_max: TOO_BIG once its length is in (the
 * stream's first four bytes), with the length announced; a smaller one is
 * not. */
static void
test_pstream_too_big_every_split(void **state)
{
    (void)state;
    for (size_t k = 0; k <= 26; k++) {
        struct pstream s;
        struct got g = {0};
        struct mt_err err = {0};
        unsigned a, b;

        pstream_init(&s, 7, TRACE_DIR_C2S, 0, 25, NULL, on_emit, &g);
        a = pstream_in(&s, stream, k, 1, &err);
        b = pstream_in(&s, stream + k, 26 - k, 2, &err);
        assert_int_equal(a | b, PSTREAM_TOO_BIG);
        assert_int_equal(a, k >= 4 ? PSTREAM_TOO_BIG : PSTREAM_OK);
        assert_int_equal(s.too_big_len, 26);
        pstream_free(&s);
    }
    {
        struct pstream s;
        struct got g = {0};
        struct mt_err err = {0};

        pstream_init(&s, 7, TRACE_DIR_C2S, 0, 26, NULL, on_emit, &g);
        assert_int_equal(pstream_in(&s, stream, 52, 1, &err), PSTREAM_OK);
        assert_int_equal(g.n, 2);
        pstream_free(&s);
    }
}

int
main(void)
{
    const struct CMUnitTest valid[] = {
        cmocka_unit_test(test_pstream_in_every_split),
        cmocka_unit_test(test_pstream_in_every_prefix),
        cmocka_unit_test(test_pstream_delay_release),
        cmocka_unit_test(test_pstream_delay_pipelined),
        cmocka_unit_test(test_pstream_delay_hold_limit),
    };
    const struct CMUnitTest invalid[] = {
        cmocka_unit_test(test_pstream_garbage_every_split),
        cmocka_unit_test(test_pstream_too_big_every_split),
    };
    int rc = cmocka_run_group_tests_name("valid", valid, NULL, NULL);

    return rc + cmocka_run_group_tests_name("invalid", invalid, NULL, NULL);
}
