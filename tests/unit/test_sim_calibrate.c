/*
 * test_sim_calibrate.c -- the pure parts of `mtrace calibrate`
 * (sim/calibrate.c): the cold wake-up sampler rejects impossible samples.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_calibrate_wake_sample_rejects_impossible),
        cmocka_unit_test(test_sim_calibrate_wake_sample_accepts_wakeups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
