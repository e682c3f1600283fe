/*
 * test_ppend.c -- capture/ppend.c, the proxy loop's pending list: FIFO
 * order, rounds (an entry added while a round runs waits for the next),
 * and removal of entries the round has not reached yet -- the case where
 * serving one connection closes another (pconn_serve_pending).  The
 * elements are heap-allocated and freed when removed, as connections are,
 * so a walk through a stale copy of the list is a use-after-free that
 * ASan reports (and a wrong order or count fails the asserts).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "capture/ppend.h"
#include "core/mem.h"

#define NELEM 5

struct elem {
    int id;
    struct ppend_node node;
};

static struct elem *
elem_of(struct ppend_node *n)
{
    return (struct elem *)((char *)n - offsetof(struct elem, node));
}

static struct elem *
elem_new(int id)
{
    struct elem *e = mt_calloc(1, sizeof(*e));
    assert_non_null(e);
    e->id = id;
    return e;
}

/* Serves one round, writing the ids served into out; returns how many.
 * serve(e) runs for each, like pconn__after. */
static int
round_run(struct ppend *q, int *out, int out_max,
          void (*serve)(struct ppend *, struct elem *, void *), void *arg)
{
    struct ppend_node *n;
    int k = 0;

    ppend_round_begin(q);
    while ((n = ppend_round_next(q)) != NULL) {
        struct elem *e = elem_of(n);
        assert_false(n->on);
        assert_true(k < out_max);
        out[k++] = e->id;
        if (serve != NULL)
            serve(q, e, arg);
    }
    return k;
}

/* Added in order, served in order, list empty after. */
static void
test_ppend_round_fifo(void **state)
{
    struct ppend q = {0};
    struct elem *e[NELEM];
    int got[NELEM], n;

    (void)state;
    for (int i = 0; i < NELEM; i++) {
        e[i] = elem_new(i);
        ppend_add(&q, &e[i]->node);
        ppend_add(&q, &e[i]->node); /* twice: no-op */
    }
    assert_int_equal(q.len, NELEM);
    n = round_run(&q, got, NELEM, NULL, NULL);
    assert_int_equal(n, NELEM);
    for (int i = 0; i < NELEM; i++)
        assert_int_equal(got[i], i);
    assert_true(ppend_empty(&q));
    assert_int_equal(q.len, 0);
    assert_null(q.tail);
    for (int i = 0; i < NELEM; i++)
        mt_free(e[i]);
}

/* Each served entry re-adds itself (budget spent): served once per round,
 * back on the list for the next round, same order. */
static void
serve_readd(struct ppend *q, struct elem *e, void *arg)
{
    (void)arg;
    ppend_add(q, &e->node);
}

static void
test_ppend_round_readd(void **state)
{
    struct ppend q = {0};
    struct elem *e[NELEM];
    int got[NELEM];

    (void)state;
    for (int i = 0; i < NELEM; i++) {
        e[i] = elem_new(i);
        ppend_add(&q, &e[i]->node);
    }
    for (int r = 0; r < 3; r++) {
        assert_int_equal(round_run(&q, got, NELEM, serve_readd, NULL), NELEM);
        for (int i = 0; i < NELEM; i++)
            assert_int_equal(got[i], i);
        assert_int_equal(q.len, NELEM);
    }
    for (int i = 0; i < NELEM; i++) {
        ppend_del(&q, &e[i]->node);
        mt_free(e[i]);
    }
    assert_true(ppend_empty(&q));
}

/* Serving entry 0 closes entries 1, 3 and 4 (removed and freed, as
 * pconn_close does) and adds a new entry 9: the round serves 0 and 2 only,
 * the next round serves 9. */
struct closer {
    struct elem **e;
    struct elem *added;
};

static void
serve_close_others(struct ppend *q, struct elem *e, void *arg)
{
    struct closer *k = arg;
    static const int victims[] = {1, 3, 4};

    if (e->id != 0)
        return;
    for (size_t i = 0; i < sizeof(victims) / sizeof(victims[0]); i++) {
        struct elem *v = k->e[victims[i]];
        ppend_del(q, &v->node);
        mt_free(v);
        k->e[victims[i]] = NULL;
    }
    k->added = elem_new(9);
    ppend_add(q, &k->added->node);
}

static void
test_ppend_round_close_other(void **state)
{
    struct ppend q = {0};
    struct elem *e[NELEM];
    struct closer k = {e, NULL};
    int got[NELEM], n;

    (void)state;
    for (int i = 0; i < NELEM; i++) {
        e[i] = elem_new(i);
        ppend_add(&q, &e[i]->node);
    }
    n = round_run(&q, got, NELEM, serve_close_others, &k);
    assert_int_equal(n, 2);
    assert_int_equal(got[0], 0);
    assert_int_equal(got[1], 2);
    assert_int_equal(q.len, 1);
    n = round_run(&q, got, NELEM, NULL, NULL);
    assert_int_equal(n, 1);
    assert_int_equal(got[0], 9);
    assert_true(ppend_empty(&q));
    mt_free(k.added);
    mt_free(e[0]);
    mt_free(e[2]);
}

/* Removing the head, the tail and a middle entry keeps the links right. */
static void
test_ppend_del_positions(void **state)
{
    struct ppend q = {0};
    struct elem *e[NELEM];
    int got[NELEM], n;

    (void)state;
    for (int i = 0; i < NELEM; i++) {
        e[i] = elem_new(i);
        ppend_add(&q, &e[i]->node);
    }
    ppend_del(&q, &e[0]->node);
    ppend_del(&q, &e[4]->node);
    ppend_del(&q, &e[2]->node);
    ppend_del(&q, &e[2]->node); /* twice: no-op */
    assert_int_equal(q.len, 2);
    assert_ptr_equal(q.head, &e[1]->node);
    assert_ptr_equal(q.tail, &e[3]->node);
    ppend_add(&q, &e[0]->node); /* back, at the tail */
    n = round_run(&q, got, NELEM, NULL, NULL);
    assert_int_equal(n, 3);
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 3);
    assert_int_equal(got[2], 0);
    for (int i = 0; i < NELEM; i++)
        mt_free(e[i]);
}

/* A round begun on an empty list ends at once; so does one whose every
 * entry was added after it began. */
static void
test_ppend_round_empty(void **state)
{
    struct ppend q = {0};
    struct elem *e = elem_new(1);

    (void)state;
    ppend_round_begin(&q);
    assert_null(ppend_round_next(&q));
    ppend_add(&q, &e->node);
    assert_null(ppend_round_next(&q)); /* added during this round */
    ppend_round_begin(&q);
    assert_ptr_equal(ppend_round_next(&q), &e->node);
    assert_null(ppend_round_next(&q));
    mt_free(e);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ppend_round_fifo),
        cmocka_unit_test(test_ppend_round_readd),
        cmocka_unit_test(test_ppend_round_close_other),
        cmocka_unit_test(test_ppend_del_positions),
        cmocka_unit_test(test_ppend_round_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
