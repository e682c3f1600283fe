/*
 * test_sim_calibrate.c -- the pure parts of `mtrace calibrate`
 * (sim/calibrate.c): the cold wake-up sampler rejects impossible samples;
 * the trimmed mean and cv; the rule for a lock block's CPU.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim/calibrate.h"

/* A reader whose clock is behind the writer's stamp (a VM's CPUs disagree
 * by a few ns) gives a negative difference: unsigned it wrapped to
 * ~1.8e19 ns, which once made calibrate write wake_us = 2.6e13.  Rejected,
 * as are a zero difference and anything over SIM_CAL_WAKE_MAX_NS; *ns is
 * left alone on rejection. */
static void
test_sim_calibrate_wake_sample_rejects_impossible(void **state)
{
    double ns = -1;

    (void)state;
    assert_false(sim_calibrate_wake_sample(1000, 995, &ns));  /* behind */
    assert_false(sim_calibrate_wake_sample(1000, 1000, &ns)); /* zero */
    assert_false(sim_calibrate_wake_sample(UINT64_MAX - 3, 2, &ns)); /* wrap */
    assert_false(
        sim_calibrate_wake_sample(5, 5 + SIM_CAL_WAKE_MAX_NS + 1, &ns));
    assert_true(ns == -1);
}

static void
test_sim_calibrate_wake_sample_accepts_wakeups(void **state)
{
    double ns = -1;

    (void)state;
    assert_true(sim_calibrate_wake_sample(1000, 1001, &ns));
    assert_true(ns == 1.0);
    assert_true(sim_calibrate_wake_sample(7000000000ull, 7000004200ull, &ns));
    assert_true(ns == 4200.0);
    assert_true(sim_calibrate_wake_sample(5, 5 + SIM_CAL_WAKE_MAX_NS, &ns));
    assert_true(ns == (double)SIM_CAL_WAKE_MAX_NS);
}

/* The trimmed statistics every sampled fact uses: the top 1 % of the
 * samples (a thread that waited for a core other processes held) is left
 * out, the rest gives the mean and the cv; v is sorted in place.  200
 * samples: 198 of 10 and 12 alternating, two outliers of 1e6 -> mean 11,
 * cv 1/11 (pstdev 1); the cv cap applies. */
static void
test_sim_calibrate_trimmed_stats_drops_top_percent(void **state)
{
    double v[200], mean = 0, cv = 0;

    (void)state;
    for (int i = 0; i < 198; i++)
        v[i] = i % 2 ? 12.0 : 10.0;
    v[198] = v[199] = 1e6;
    sim_calibrate_trimmed_stats(v, 200, 10.0, &mean, &cv);
    assert_true(fabs(mean - 11.0) < 1e-9);
    assert_true(fabs(cv - 1.0 / 11.0) < 1e-9);
    assert_true(v[0] == 10.0 && v[199] == 1e6); /* sorted */
    for (int i = 0; i < 200; i++)
        v[i] = i % 2 ? 1.0 : 100.0;
    sim_calibrate_trimmed_stats(v, 200, 0.5, &mean, &cv);
    assert_true(cv == 0.5); /* capped */
}

/* lock_block_cpu_us = the convoy's extra CPU per block - its extra CPU
 * per switch: 31.5 us per block and 15 us per switch leave 16.5 us (the
 * GIL wait's switch is charged by the GIL's rules); never below 0. */
static void
test_sim_calibrate_lock_block_rule(void **state)
{
    (void)state;
    assert_true(fabs(sim_calibrate_lock_block_us(31.5, 15.0) - 16.5) < 1e-12);
    assert_true(sim_calibrate_lock_block_us(10.0, 10.0) == 0.0);
    assert_true(sim_calibrate_lock_block_us(3.0, 10.0) == 0.0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_calibrate_wake_sample_rejects_impossible),
        cmocka_unit_test(test_sim_calibrate_wake_sample_accepts_wakeups),
        cmocka_unit_test(test_sim_calibrate_trimmed_stats_drops_top_percent),
        cmocka_unit_test(test_sim_calibrate_lock_block_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
