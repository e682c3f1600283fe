/*
 * test_sim_model_idle.c -- the idle-period cost (sim/model.c
 * cpu_idle_wake, idle_wake_cpu_us / idle_wake_min_us) and its removal from
 * the sequential calibration (sim/fit.c), against hand-computable cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/err.h"
#include "sim/fit.h"
#include "sim/model.h"
#include "sim/params.h"

#include "sim_fixtures.h"

/* idle_wake_cpu_us: a client wake-up that finds a core idle pays
 * it on its first job; one that queues behind a running job does not.
 * (1) One thread on 4 cores: each call's reply wake-up finds a core idle,
 * so the call takes 184 us (the one-thread test) + 20.  (2) The FIFO mutex
 * of one core (test_sim_model_one_core_is_a_fifo_mutex), 1 us wake-ups:
 * the 4 threads' starts wake at 1; thread 0's finds the core idle and pays
 * 20 (its start job takes the core until 21, its call begins then); the
 * starts of threads 1-3 find it busy, pay nothing and, of zero CPU, begin
 * their calls at 1.  Their replies wake them at 1002: thread 1 finds the
 * core idle, pays 20 and runs 20 + 100 (latency 1121); threads 2 and 3
 * queue behind it (1221, 1321); thread 0's reply (1022) queues behind them
 * and runs 1322-1422 (latency 1401): mean 1266 (2 idle wake-ups; without
 * the term 1251).  (3) The calibration from the client CPU leaves the
 * sequential run's idle wake-ups out of Python's CPU: 170 us per call less
 * 3 syscalls of 5 us less 52 idle wake-ups of 20 us in 50 calls = 134.2 us
 * of Python (135, as in test_sim_fit_from_client_cpu without the term, but
 * for the thread's start and the first call's hello: 1.04 per call; over a
 * sequential run of 1,000 calls they weigh 0.04 us). */
static void
test_sim_model_idle_wake(void **state)
{
    struct sim_params p;
    struct sim_result r;
    struct mt_err err = {0};

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "idle_wake_cpu_us", "20");
    assert_float_equal(run(&p, &r).mean_ms, (184 + 20) / 1e3, 1e-9);
    /* + the thread's start and the first call's hello reply */
    assert_int_equal(r.idle_wakes, 52);
    sim_result_free(&r);

    fifo_mutex_params(&p, "1", "0");
    set(&p, "idle_wake_cpu_us", "20");
    assert_float_equal(run(&p, &r).mean_ms, 1.266, 1e-9);
    assert_int_equal(r.idle_wakes, 2);
    sim_result_free(&r);

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "idle_wake_cpu_us", "20");
    assert_int_equal(sim_fit_seq_cpu(&p, 170, NAN, &err), 0);
    assert_float_equal(p.py_call_us, 134.2, 1e-9);
    assert_non_null(strstr(p.note[sim_params_find("py_call_us")],
                           "1.04 idle wake-ups/call"));
    assert_float_equal(run(&p, NULL).mean_ms,
                       (134.2 * 0.95 + 3 * 5 + 2 * 2 + 50 + 2 * 10 + 20) / 1e3,
                       1e-9);
}

/* idle_wake_min_us: the wakee pays only when the core free the longest has
 * been free that long.  One thread as in the first case of
 * test_sim_model_idle_wake (every call's reply wake-up pays: 184 + 20 us
 * on 4 cores).  On one core the core frees when the server's 35 us of CPU
 * end, and the client's wake-up follows the server's 15 us without CPU, the
 * 2 us transit and its 10 us wake-up: idle 27 us at most, so a threshold of
 * 100 us charges nothing (the mean is the 172 us of one core without the
 * term) and 0 charges every call (+20); -1 (free since before the wake-up
 * was issued, at the reply's arrival) charges every call too.  On 4 cores
 * the idle cores have been free since the start: 100 us charges. */
static void
test_sim_model_idle_wake_min(void **state)
{
    struct sim_params p;

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "cores", "1");
    assert_float_equal(run(&p, NULL).mean_ms, 0.172, 1e-9);
    set(&p, "idle_wake_cpu_us", "20");
    set(&p, "idle_wake_min_us", "100");
    assert_float_equal(run(&p, NULL).mean_ms, 0.172, 1e-9);
    set(&p, "idle_wake_min_us", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 0.192, 1e-9);
    set(&p, "idle_wake_min_us", "-1");
    assert_float_equal(run(&p, NULL).mean_ms, 0.192, 1e-9);
    set(&p, "cores", "4");
    set(&p, "idle_wake_min_us", "100");
    assert_float_equal(run(&p, NULL).mean_ms, 0.204, 1e-9);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_model_idle_wake),
        cmocka_unit_test(test_sim_model_idle_wake_min),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
