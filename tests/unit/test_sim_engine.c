/*
 * test_sim_engine.c -- sim/engine.c event heap and sim/rng.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "sim/engine.h"
#include "core/rng.h"

static void
test_sim_engine_pop_orders_by_time(void **state)
{
    struct sim_engine e;
    struct mt_rng r;
    struct sim_ev ev;
    uint64_t last = 0;
    size_t n = 0;

    assert_int_equal(sim_engine_init(&e, 100000), 0);
    mt_rng_seed(&r, 7);
    for (int i = 0; i < 50000; i++)
        assert_int_equal(
            sim_engine_push(&e, mt_rng_below(&r, 1000000), 1, (uint32_t)i, 0),
            0);
    while (sim_engine_pop(&e, &ev)) {
        assert_true(ev.t_ns >= last);
        assert_int_equal(e.now_ns, ev.t_ns);
        last = ev.t_ns;
        n++;
    }
    assert_int_equal(n, 50000);
    sim_engine_free(&e);
}

static void
test_sim_engine_ties_fire_in_push_order(void **state)
{
    struct sim_engine e;
    struct sim_ev ev;

    assert_int_equal(sim_engine_init(&e, 64), 0);
    for (uint32_t i = 0; i < 40; i++) /* same time, interleaved with later */
        assert_int_equal(sim_engine_push(&e, i % 2 ? 500 : 100, 0, i, 0), 0);
    for (uint32_t i = 0; i < 40; i += 2) {
        assert_true(sim_engine_pop(&e, &ev));
        assert_int_equal(ev.t_ns, 100);
        assert_int_equal(ev.id, i);
    }
    for (uint32_t i = 1; i < 40; i += 2) {
        assert_true(sim_engine_pop(&e, &ev));
        assert_int_equal(ev.id, i);
    }
    assert_false(sim_engine_pop(&e, &ev));
    sim_engine_free(&e);
}

static void
test_sim_engine_after_is_relative_and_saturates(void **state)
{
    struct sim_engine e;
    struct sim_ev ev;

    assert_int_equal(sim_engine_init(&e, 8), 0);
    assert_int_equal(sim_engine_push(&e, 1000, 0, 0, 0), 0);
    assert_true(sim_engine_pop(&e, &ev));
    assert_int_equal(sim_engine_after(&e, 250, 3, 9, 42), 0);
    assert_int_equal(sim_engine_after(&e, UINT64_MAX, 4, 0, 0), 0);
    assert_true(sim_engine_pop(&e, &ev));
    assert_int_equal(ev.t_ns, 1250);
    assert_int_equal(ev.kind, 3);
    assert_int_equal(ev.id, 9);
    assert_int_equal(ev.gen, 42);
    assert_true(sim_engine_pop(&e, &ev));
    assert_int_equal(ev.t_ns, UINT64_MAX);
    sim_engine_free(&e);
}

static void
test_sim_engine_cap_max_is_an_error(void **state)
{
    struct sim_engine e;

    assert_int_equal(sim_engine_init(&e, 3), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sim_engine_push(&e, 5, 0, 0, 0), 0);
    assert_int_equal(sim_engine_push(&e, 5, 0, 0, 0), MT_ELIMIT);
    assert_int_equal(e.n, 3);
    sim_engine_free(&e);
    sim_engine_free(NULL);
}

static void
test_mt_rng_same_seed_same_stream(void **state)
{
    struct mt_rng a, b, c;

    mt_rng_seed(&a, 12345);
    mt_rng_seed(&b, 12345);
    mt_rng_seed(&c, 12346);
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = mt_rng_next(&a);
        assert_int_equal(x, mt_rng_next(&b));
        differ += x != mt_rng_next(&c);
    }
    assert_true(differ > 990);
}

static void
test_mt_rng_splitmix_reference(void **state)
{
    /* splitmix64 from seed 0: first output 0xe220a8397b1dcdaf (Vigna's
     * splitmix64.c); xoshiro256** state s[0] is that value. */
    struct mt_rng r;

    mt_rng_seed(&r, 0);
    assert_true(r.s[0] == 0xe220a8397b1dcdafull);
}

static void
test_mt_rng_distributions_have_their_mean(void **state)
{
    struct mt_rng r;
    double se = 0, sl = 0, sl2 = 0, su = 0;
    int n = 200000;

    mt_rng_seed(&r, 99);
    for (int i = 0; i < n; i++) {
        double l = mt_rng_lognormal(&r, 50.0, 0.3);
        se += mt_rng_exp(&r, 10.0);
        sl += l;
        sl2 += l * l;
        su += mt_rng_uniform(&r);
    }
    assert_true(fabs(se / n - 10.0) < 0.1);
    assert_true(fabs(sl / n - 50.0) < 0.3);
    assert_true(fabs(sqrt(sl2 / n - (sl / n) * (sl / n)) / (sl / n) - 0.3) <
                0.01);
    assert_true(fabs(su / n - 0.5) < 0.005);
    assert_true(mt_rng_lognormal(&r, 7.0, 0.0) == 7.0);
}

/* M/D/1 on the engine: Poisson arrivals (rate lambda), one server of fixed
 * service D, FIFO.  Mean wait in queue = rho * D / (2 (1 - rho)) (the
 * Pollaczek-Khinchine formula); rho = 0.5, D = 1000 ns -> 500 ns. */
static void
test_sim_engine_md1_mean_wait(void **state)
{
    enum { ARRIVE = 1, DONE = 2 };
    struct sim_engine e;
    struct sim_ev ev;
    struct mt_rng r;
    const double d_ns = 1000, mean_gap_ns = 2000;
    uint64_t *q, qh = 0, qn = 0, served = 0, n = 200000;
    double wait_sum = 0;
    bool busy = false;

    (void)state;
    q = calloc(n, sizeof(*q));
    assert_non_null(q);
    mt_rng_seed(&r, 7);
    assert_int_equal(sim_engine_init(&e, 16), 0);
    assert_int_equal(sim_engine_after(&e, 0, ARRIVE, 0, 0), 0);
    uint64_t arrivals = 0;
    while (served < n && sim_engine_pop(&e, &ev)) {
        if (ev.kind == ARRIVE) {
            if (++arrivals < n)
                assert_int_equal(
                    sim_engine_after(
                        &e, (uint64_t)llround(mt_rng_exp(&r, mean_gap_ns)),
                        ARRIVE, 0, 0),
                    0);
            if (!busy) {
                busy = true;
                assert_int_equal(
                    sim_engine_after(&e, (uint64_t)d_ns, DONE, 0, 0), 0);
            } else {
                q[(qh + qn++) % n] = e.now_ns;
            }
        } else {
            served++;
            if (qn > 0) {
                wait_sum += (double)(e.now_ns - q[qh]);
                qh = (qh + 1) % n;
                qn--;
                assert_int_equal(
                    sim_engine_after(&e, (uint64_t)d_ns, DONE, 0, 0), 0);
            } else {
                busy = false;
            }
        }
    }
    /* waits of the customers who found the server idle are 0 */
    assert_true(fabs(wait_sum / (double)served - 500.0) < 25.0);
    sim_engine_free(&e);
    free(q);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_engine_pop_orders_by_time),
        cmocka_unit_test(test_sim_engine_ties_fire_in_push_order),
        cmocka_unit_test(test_sim_engine_after_is_relative_and_saturates),
        cmocka_unit_test(test_sim_engine_cap_max_is_an_error),
        cmocka_unit_test(test_mt_rng_same_seed_same_stream),
        cmocka_unit_test(test_mt_rng_splitmix_reference),
        cmocka_unit_test(test_mt_rng_distributions_have_their_mean),
        cmocka_unit_test(test_sim_engine_md1_mean_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
