/*
 * test_sim_model.c -- sim/model.c, sim/gil.c, sim/fit.c and sim/predict.c
 * against hand-computable cases: one thread, the driver lock as a FIFO
 * mutex, back-to-back sections, the lock's section time, the operational-law
 * bound when one resource saturates, the proxy modes, determinism, the
 * calibration's inverse, and the session-pool convoy's direction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fit.h"
#include "sim/predict.h"
#include "sim_fixtures.h"

/* One thread, nothing random: every call takes py + releases * sys + server
 * (wake-up and switch-in 0), under the GIL and free-threaded; it blocks once
 * a call, on the reply. */
static void
test_sim_model_one_thread_is_the_sum(void **state)
{
    struct sim_params p;
    struct sim_result res;

    (void)state;
    for (int rt = 0; rt < 2; rt++) {
        quiet_params(&p);
        set(&p, "runtime", rt ? "free-threaded" : "gil");
        set(&p, "calls", "50");
        run(&p, &res);
        assert_int_equal(res.n, 50);
        for (size_t i = 0; i < res.n; i++)
            assert_int_equal(res.lat_ns[i], (120 + 3 * 5 + 50) * 1000);
        assert_true(fabs(sim_fit_seq_mean_ms(&p) - 0.185) < 1e-12);
        assert_int_equal(res.gil_switches, 0);
        assert_int_equal(res.sleeps, 50);
        sim_result_free(&res);
    }
}

/* The wake-up and switch-in of the reply wait add once per call. */
static void
test_sim_model_one_thread_wake_and_ctx(void **state)
{
    struct sim_params p;
    struct sim_result res;

    (void)state;
    quiet_params(&p);
    set(&p, "calls", "4000");
    set(&p, "ctx_cpu_us", "3");
    set(&p, "wake_us", "7"); /* exponential: the mean */
    run(&p, &res);
    assert_true(fabs(mean_us(&res) - (185 + 3 + 7)) < 0.5);
    assert_true(fabs(sim_fit_seq_mean_ms(&p) - 0.195) < 1e-12);
    sim_result_free(&res);
}

/* Free-threaded, 4 threads on 4 cores, one call each whose Python is all
 * inside one driver-lock section (100 us); releases 1 (one send), server
 * 1000 us; every connection and session pooled. */
static void
fifo_params(struct sim_params *p)
{
    quiet_params(p);
    set(p, "runtime", "free-threaded");
    set(p, "threads", "4");
    set(p, "calls", "1");
    set(p, "releases", "1");
    set(p, "sys_us", "0");
    set(p, "server_us", "1000");
    set(p, "lock_sections", "1");
    set(p, "lock_hold_us", "100");
    set(p, "py_call_us", "100");
    set(p, "pool_initial", "4");
    set(p, "session_prefill", "4");
}

/* The k-th thread to get the lock takes 1100 + step * k us, k = 0..3 each
 * once; 3 acquires blocked.  Frees res. */
static void
check_fifo(struct sim_result *res, uint64_t step)
{
    uint64_t seen = 0;

    assert_int_equal(res->n, 4);
    for (size_t i = 0; i < res->n; i++) {
        uint64_t k = (res->lat_ns[i] / 1000 - 1100) / step;
        assert_true(k < 4);
        assert_int_equal(res->lat_ns[i], (1100 + step * k) * 1000);
        seen |= 1u << k;
    }
    assert_int_equal(seen, 0xF);
    assert_int_equal(res->lock_blocks, 3);
    sim_result_free(res);
}

/* Free-threaded, 4 threads on 4 cores, one call each whose Python is all
 * inside one driver-lock section (100 us): the lock is a FIFO mutex,
 * thread k gets it at k * 100 us, so its call takes (k + 1) * 100 us plus
 * the round trip (releases 1: one send, server 1000 us).  The threads
 * block 7 times: threads 1-3 on the lock, each of the four on its reply. */
static void
test_sim_model_lock_is_a_fifo_mutex(void **state)
{
    struct sim_params p;
    struct sim_result res;

    (void)state;
    fifo_params(&p);
    run(&p, &res);
    assert_int_equal(res.sleeps, 7);
    check_fifo(&res, 100);
}

/* The same four threads with lock_block_cpu_us = 30: each acquire that
 * blocked runs its section 30 us longer, so thread k >= 1 gets the lock
 * at 100 + (k - 1) * 130 us and its call takes 1100 + 130 k us; thread 0,
 * which did not block, 1100 us. */
static void
test_sim_model_lock_block_cpu(void **state)
{
    struct sim_params p;
    struct sim_result res;

    (void)state;
    fifo_params(&p);
    set(&p, "lock_block_cpu_us", "30");
    run(&p, &res);
    check_fifo(&res, 130);
}

/* Two threads, free-threaded, one call each of three back-to-back
 * sections before the send (10 us each, no Python between them), wake-ups
 * 0: thread 0 holds the lock 0-30 us; thread 1 blocks at 0, is woken by
 * each of the first two releases (10, 20 us) and finds the lock taken
 * again by thread 0's next section at the same instant (a release and the
 * next acquire leave the lock no time free): two re-sleeps, one block;
 * it gets the lock at 30 us.  Calls: 30 + 1000 and 60 + 1000 us. */
static void
test_sim_model_lock_back_to_back_sections(void **state)
{
    struct sim_params p;
    struct sim_result res;

    (void)state;
    fifo_params(&p);
    set(&p, "threads", "2");
    set(&p, "pool_initial", "2");
    set(&p, "session_prefill", "2");
    set(&p, "lock_sections", "3");
    set(&p, "lock_before", "3");
    set(&p, "lock_hold_us", "10");
    set(&p, "py_call_us", "30");
    run(&p, &res);
    assert_int_equal(res.n, 2);
    assert_int_equal(res.lock_blocks, 1);
    assert_int_equal(res.lock_resleeps, 2);
    assert_int_equal(res.lat_ns[0] < res.lat_ns[1] ? res.lat_ns[0]
                                                   : res.lat_ns[1],
                     1030 * 1000);
    assert_int_equal(res.lat_ns[0] < res.lat_ns[1] ? res.lat_ns[1]
                                                   : res.lat_ns[0],
                     1060 * 1000);
    sim_result_free(&res);
}

/* One thread: lock sections add exactly their CPU (it is py_call_us's),
 * under the GIL and free-threaded; none blocks. */
static void
test_sim_model_lock_one_thread_adds_its_sections(void **state)
{
    struct sim_params p;
    struct sim_result a, b;

    (void)state;
    for (int rt = 0; rt < 2; rt++) {
        quiet_params(&p);
        set(&p, "runtime", rt ? "free-threaded" : "gil");
        set(&p, "calls", "20");
        run(&p, &a);
        set(&p, "lock_sections", "3");
        set(&p, "lock_hold_us", "10");
        set(&p, "py_call_us", "150");
        run(&p, &b);
        for (size_t i = 0; i < a.n; i++)
            assert_int_equal(b.lat_ns[i], a.lat_ns[i] + 30 * 1000);
        assert_int_equal(b.lock_blocks, 0);
        sim_result_free(&a);
        sim_result_free(&b);
    }
}

/* lock_before places the sections: all before the send or all after the
 * reply, the call takes the same time alone; the session is checked out in
 * the first section and in whichever section is last. */
static void
test_sim_model_lock_before_places_sections(void **state)
{
    struct sim_params p;
    struct sim_result a, b;

    (void)state;
    quiet_params(&p);
    set(&p, "calls", "5");
    set(&p, "py_call_us", "150");
    set(&p, "lock_sections", "3");
    set(&p, "lock_hold_us", "10");
    set(&p, "lock_before", "3");
    run(&p, &a);
    set(&p, "lock_before", "0");
    run(&p, &b);
    assert_int_equal(a.lat_ns[3], 215 * 1000);
    assert_int_equal(b.lat_ns[3], 215 * 1000);
    assert_int_equal(a.sessions_created + b.sessions_created, 0);
    sim_result_free(&a);
    sim_result_free(&b);
}

/* Without a pooled session the first call creates one inside its lock
 * section: os.urandom, a GIL release of sys_us. */
static void
test_sim_model_session_creation_costs_a_syscall(void **state)
{
    struct sim_params p;
    struct sim_result res;

    (void)state;
    quiet_params(&p);
    set(&p, "calls", "3");
    set(&p, "lock_sections", "2");
    set(&p, "lock_hold_us", "15");
    set(&p, "session_prefill", "0");
    run(&p, &res);
    assert_int_equal(res.sessions_created, 1);
    assert_int_equal(res.lat_ns[0], (185 + 5) * 1000);
    assert_int_equal(res.lat_ns[1], 185 * 1000);
    sim_result_free(&res);
}

/* N threads, all CPU Python under the GIL (server 10 us): the GIL
 * saturates, Little's law gives a mean of N * py_call_us, which is the
 * bound's r_min, and the bound names the GIL.  The signalled waiter gets
 * there (hand-off 0) before the dropper is back from its 1 us syscall, so
 * the GIL goes round FIFO and every thread finishes at the end. */
static void
test_sim_model_bound_equals_mean_when_gil_saturates(void **state)
{
    struct sim_params p;
    struct sim_result res;
    struct sim_bound b;

    (void)state;
    quiet_params(&p);
    set(&p, "threads", "8");
    set(&p, "calls", "400");
    set(&p, "py_call_us", "1000");
    set(&p, "sys_us", "1");
    set(&p, "server_us", "10");
    set(&p, "cores", "8");
    set(&p, "switch_interval_us", "10000000");
    set(&p, "exclude_first", "20");
    run(&p, &res);
    sim_bound_compute(&p, &b);
    assert_int_equal(b.binding, SIM_RES_GIL);
    assert_true(fabs(b.r_min_us - 8000) < 1e-9);
    if (fabs(mean_us(&res) / b.r_min_us - 1) >= 0.02)
        fail_msg("mean %.1f us, bound %.1f us", mean_us(&res), b.r_min_us);
    assert_true(res.util_gil > 0.98);
    sim_result_free(&res);
}

/* Free-threaded on 2 cores, 8 threads: the cores saturate; mean = N * CPU
 * per call / cores. */
static void
test_sim_model_bound_equals_mean_when_cores_saturate(void **state)
{
    struct sim_params p;
    struct sim_result res;
    struct sim_bound b;

    (void)state;
    quiet_params(&p);
    set(&p, "runtime", "free-threaded");
    set(&p, "threads", "8");
    set(&p, "calls", "400");
    set(&p, "py_call_us", "1000");
    set(&p, "sys_us", "0");
    set(&p, "server_us", "10");
    set(&p, "cores", "2");
    set(&p, "exclude_first", "20");
    run(&p, &res);
    sim_bound_compute(&p, &b);
    assert_int_equal(b.binding, SIM_RES_CORES);
    assert_true(fabs(b.r_min_us - 4000) < 1e-9);
    assert_true(fabs(mean_us(&res) / b.r_min_us - 1) < 0.02);
    assert_true(res.util_cores > 0.98);
    sim_result_free(&res);
}

/* Few threads and a long delay: nothing saturates, the delay binds and
 * the bound is the call alone. */
static void
test_sim_model_bound_delay_binds(void **state)
{
    struct sim_params p;
    struct sim_bound b;

    (void)state;
    quiet_params(&p);
    set(&p, "threads", "2");
    set(&p, "proxy", "deadline");
    set(&p, "proxy_delay_ms", "2");
    sim_bound_compute(&p, &b);
    assert_int_equal(b.binding, SIM_BIND_DELAY);
    assert_true(fabs(b.r0_us - (185 + 2000)) < 1e-9);
    assert_true(fabs(b.r_min_us - b.r0_us) < 1e-9);
    assert_string_equal(sim_res_name(b.binding), "delay");
}

/* One call in flight per connection: deadline and serial both add the
 * delay to the server's time. */
static void
test_sim_model_proxy_modes(void **state)
{
    struct sim_params p;
    struct sim_result res;

    (void)state;
    quiet_params(&p);
    set(&p, "calls", "5");
    set(&p, "proxy", "deadline");
    set(&p, "proxy_delay_ms", "1");
    run(&p, &res);
    assert_int_equal(res.lat_ns[2], (185 + 1000) * 1000);
    sim_result_free(&res);
    set(&p, "proxy", "serial");
    run(&p, &res);
    assert_int_equal(res.lat_ns[2], (185 + 1000) * 1000);
    sim_result_free(&res);
}

/* The same parameters give the same latencies; another seed others. */
static void
test_sim_model_deterministic(void **state)
{
    struct sim_params p;
    struct sim_result a, b, c;

    (void)state;
    sim_params_default(&p);
    set(&p, "threads", "6");
    set(&p, "calls", "50");
    set(&p, "lock_sections", "3");
    set(&p, "lock_hold_us", "5");
    run(&p, &a);
    run(&p, &b);
    set(&p, "seed", "2");
    run(&p, &c);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.lat_ns, b.lat_ns, a.n * sizeof(*a.lat_ns));
    assert_int_equal(a.events, b.events);
    assert_true(memcmp(a.lat_ns, c.lat_ns, a.n * sizeof(*a.lat_ns)) != 0);
    sim_result_free(&a);
    sim_result_free(&b);
    sim_result_free(&c);
}

/* Calibration: py_call_us solved from a sequential mean gives that mean
 * back with one thread; from the CPU per call it is CPU - releases * sys -
 * ctx; a mean below the overhead is refused. */
static void
test_sim_fit_inverts_the_sequential_run(void **state)
{
    struct sim_params p, seq;
    struct sim_result res;
    struct sim_fit_in in = {0.3, NAN, NAN, NAN, NAN, NAN, 0, NULL, NULL};
    struct mt_err err = {0};

    (void)state;
    quiet_params(&p);
    set(&p, "calls", "3000");
    set(&p, "wake_us", "6");
    set(&p, "ctx_cpu_us", "2");
    set(&p, "py_cv", "0.2");
    seq = p;
    assert_int_equal(sim_fit_seq(&p, &seq, &in, &err), 0);
    assert_true(fabs(p.py_call_us - (300 - 15 - 2 - 6 - 50)) < 1e-9);
    run(&p, &res);
    assert_true(fabs(mean_us(&res) / 300 - 1) < 0.01);
    sim_result_free(&res);
    in.cpu_us = 150;
    assert_int_equal(sim_fit_seq(&p, &seq, &in, &err), 0);
    assert_true(fabs(p.py_call_us - (150 - 15 - 2)) < 1e-9);
    assert_true(p.xcore_frac == 0); /* quiet_params' */
    /* (A - P) / (P - 3 x sys_us - ctx_cpu_us), P the sequential CPU */
    in.xcore_cpu_us = 150 + 0.5 * 133;
    assert_int_equal(sim_fit_seq(&p, &seq, &in, &err), 0);
    assert_true(fabs(p.xcore_frac - 0.5) < 1e-9);
    in.pinned_cpu_us = 100 + 17; /* ... or the interleaved pinned calls' */
    in.xcore_cpu_us = 117 + 0.25 * 100;
    assert_int_equal(sim_fit_seq(&p, &seq, &in, &err), 0);
    assert_true(fabs(p.xcore_frac - 0.25) < 1e-9);
    in.xcore_cpu_us = 110; /* not more: 0 */
    assert_int_equal(sim_fit_seq(&p, &seq, &in, &err), 0);
    assert_true(p.xcore_frac == 0);
    in.xcore_cpu_us = in.pinned_cpu_us = NAN;
    in.cpu_us = NAN;
    in.mean_ms = 0.05;
    assert_int_equal(sim_fit_seq(&p, &seq, &in, &err), MT_EUSAGE);
    assert_non_null(strstr(err.msg, "0.0500 ms"));
}

/* The idle curve from sequential runs at delays 0 and 1 ms (135 and 195
 * us of CPU per call: py_call_us 120, and 180 at 1 ms: idle_frac 0.5 at
 * an idle of 50 + 1000 us, the server's and the delay).  One thread,
 * nothing random: each step's core idled exactly the server's time plus
 * the delay since the step last ran, so the model gives each sequential
 * run its own CPU back (latency = CPU + 50 + delay), and at 0.5 ms the
 * curve's midpoint (idle_frac 0.25: 120 x 1.25 + 15). */
static void
test_sim_model_idle_curve_gives_each_delay_its_cpu(void **state)
{
    static const double dl[] = {1, 0}, cpu[] = {195, 135};
    static const struct {
        const char *delay;
        double lat_us;
    } want[] = {{"0", 135 + 50}, {"1", 195 + 1050}, {"0.5", 165 + 550}};
    struct sim_params p, seq;
    struct sim_result res;
    struct sim_fit_in in = {NAN, NAN, NAN, NAN, NAN, NAN, 2, dl, cpu};
    struct mt_err err = {0};

    (void)state;
    quiet_params(&p);
    set(&p, "calls", "20");
    set(&p, "exclude_first", "1");
    set(&p, "proxy", "deadline");
    seq = p;
    assert_int_equal(sim_fit_seq(&p, &seq, &in, &err), 0);
    assert_true(fabs(p.py_call_us - 120) < 1e-9);
    assert_int_equal(p.idle_n, 2);
    assert_true(fabs(p.idle_gap_us[1] - 1050) < 1e-9);
    assert_true(fabs(p.idle_frac[1] - 0.5) < 1e-9);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        set(&p, "proxy_delay_ms", want[i].delay);
        run(&p, &res);
        assert_true(fabs(mean_us(&res) - want[i].lat_us) < 1e-6);
        sim_result_free(&res);
    }
    in.at_cpu_us = (const double[]){195, 10}; /* not more than 3 x sys_us */
    assert_int_equal(sim_fit_seq(&p, &seq, &in, &err), MT_EUSAGE);
    assert_non_null(strstr(err.msg, "--seq-cpu-at"));
    in.at_cpu_us = cpu;
    in.at_delay_ms = (const double[]){1, 1};
    assert_int_equal(sim_fit_seq(&p, &seq, &in, &err), MT_EUSAGE);
    assert_non_null(strstr(err.msg, "given twice"));
}

/* xcore_frac: one thread stays on its core, so a call takes what it takes
 * without it (120 us + 3 x 5 us of syscalls + the server's 50).  Free-threaded,
 * two threads on two cores, started together: each keeps its own core, and each
 * of a call's three Python segments (40 us: py_call_us 120 over releases 3)
 * last ran, in the other thread, on the other core: every call after a
 * thread's first pays 0.5 x 120 us more; the first call of the thread
 * that started first is the only one warm. */
static void
test_sim_model_xcore_costs_each_moved_step(void **state)
{
    struct sim_params p;
    struct sim_result res;

    (void)state;
    quiet_params(&p);
    set(&p, "xcore_frac", "0.5");
    set(&p, "calls", "50");
    run(&p, &res);
    assert_true(fabs(mean_us(&res) - 185) < 1e-6);
    assert_int_equal(res.xcore_segments, 0);
    sim_result_free(&res);
    set(&p, "runtime", "free-threaded");
    set(&p, "threads", "2");
    set(&p, "cores", "2");
    set(&p, "exclude_first", "1");
    run(&p, &res);
    assert_true(fabs(mean_us(&res) - (185 + 60)) < 1e-6);
    assert_int_equal(res.xcore_segments, 2 * 50 * 3 - 3);
    sim_result_free(&res);
}

/* The thread's own move: free-threaded, 3 threads on 2 cores, one call
 * each of two 60 us Python segments (releases 1: A before the send, B after
 * the reply; no syscall CPU), server 1000 us, xcore_frac 0.5.  At 0 thread
 * 0 runs A on core 0, thread 1 on core 1 (A last ran on core 0: 90 us);
 * thread 2 waits and runs A on core 0 at 60 (A last ran on core 1: 90 us,
 * to 150).  Thread 0's send takes the core free at 90 (core 1), so its
 * reply's switch-in and B run on core 1 at 1090: B never ran before, but
 * thread 0's previous step ran on core 0, so B costs 90 us (1180).  Thread
 * 1's switch-in finds core 1 taken and runs on core 0, B too (B last ran
 * on core 1: 90 us, 1180); thread 2's reply at 1150 waits for a core,
 * gets core 1 at 1180 and runs B there (last on core 0: 90 us, 1270).
 * Five steps charged, one by the thread's move alone; each thread blocks
 * once, on its reply. */
static void
test_sim_model_xcore_costs_a_thread_that_moved(void **state)
{
    static const uint64_t want_us[] = {1180, 1180, 1270};
    struct sim_params p;
    struct sim_result res;

    (void)state;
    quiet_params(&p);
    set(&p, "runtime", "free-threaded");
    set(&p, "threads", "3");
    set(&p, "cores", "2");
    set(&p, "calls", "1");
    set(&p, "releases", "1");
    set(&p, "sys_us", "0");
    set(&p, "server_us", "1000");
    set(&p, "pool_initial", "3");
    set(&p, "xcore_frac", "0.5");
    run(&p, &res);
    assert_int_equal(res.n, 3);
    for (size_t i = 0; i < res.n; i++)
        assert_int_equal(res.lat_ns[i], want_us[i] * 1000);
    assert_int_equal(res.xcore_segments, 5);
    assert_int_equal(res.sleeps, 3);
    sim_result_free(&res);
}

/* Under the GIL a lock section whose session creation releases the GIL
 * lets other threads pile up on the lock: blocks per call without a
 * prefilled session pool, none with one (the lock's hold is short). */
static void
test_sim_model_session_prefill_removes_lock_blocks(void **state)
{
    struct sim_params p;
    struct sim_result a, b;

    (void)state;
    sim_params_default(&p);
    set(&p, "threads", "10");
    set(&p, "calls", "100");
    set(&p, "lock_sections", "4");
    set(&p, "lock_hold_us", "5");
    set(&p, "session_prefill", "1");
    run(&p, &a);
    set(&p, "session_prefill", "10");
    run(&p, &b);
    assert_true(a.sessions_created > 0);
    assert_int_equal(b.sessions_created, 0);
    assert_true(a.lock_blocks > 10 * b.lock_blocks + 100);
    sim_result_free(&a);
    sim_result_free(&b);
}

/* A waiter that times out sets the drop request and the holder switches:
 * two threads with long Python both progress. */
static void
test_sim_model_gil_forced_switching(void **state)
{
    struct sim_params p;
    struct sim_result res;

    (void)state;
    quiet_params(&p);
    set(&p, "threads", "2");
    set(&p, "calls", "5");
    set(&p, "py_call_us", "30000");
    set(&p, "releases", "1");
    run(&p, &res);
    assert_true(res.gil_drop_requests > 0);
    assert_true(res.gil_switches > res.gil_drop_requests / 2);
    assert_int_equal(res.n, 10);
    sim_result_free(&res);
}

/* sim_predict: seeds x calibrations runs; the interval holds the median. */
static void
test_sim_predict_distribution(void **state)
{
    struct sim_params a, b;
    const struct sim_params *cal[2] = {&a, &b};
    struct sim_pred pr;
    struct mt_err err = {0};

    (void)state;
    sim_params_default(&a);
    set(&a, "threads", "4");
    set(&a, "calls", "50");
    set(&a, "seeds", "5");
    b = a;
    set(&b, "py_call_us", "200");
    assert_int_equal(sim_predict(cal, 2, &pr, &err), 0);
    assert_int_equal(pr.runs, 10);
    assert_true(pr.mean_ms.lo <= pr.mean_ms.mid);
    assert_true(pr.mean_ms.mid <= pr.mean_ms.hi);
    assert_true(pr.mean_ms.lo < pr.mean_ms.hi);
    assert_true(pr.p99_ms.mid >= pr.p50_ms.mid);
    assert_int_equal(pr.first.n, 200);
    sim_pred_free(&pr);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_model_one_thread_is_the_sum),
        cmocka_unit_test(test_sim_model_one_thread_wake_and_ctx),
        cmocka_unit_test(test_sim_model_lock_is_a_fifo_mutex),
        cmocka_unit_test(test_sim_model_lock_block_cpu),
        cmocka_unit_test(test_sim_model_lock_back_to_back_sections),
        cmocka_unit_test(test_sim_model_lock_one_thread_adds_its_sections),
        cmocka_unit_test(test_sim_model_lock_before_places_sections),
        cmocka_unit_test(test_sim_model_session_creation_costs_a_syscall),
        cmocka_unit_test(test_sim_model_bound_equals_mean_when_gil_saturates),
        cmocka_unit_test(test_sim_model_bound_equals_mean_when_cores_saturate),
        cmocka_unit_test(test_sim_model_bound_delay_binds),
        cmocka_unit_test(test_sim_model_proxy_modes),
        cmocka_unit_test(test_sim_model_deterministic),
        cmocka_unit_test(test_sim_fit_inverts_the_sequential_run),
        cmocka_unit_test(test_sim_model_xcore_costs_each_moved_step),
        cmocka_unit_test(test_sim_model_xcore_costs_a_thread_that_moved),
        cmocka_unit_test(test_sim_model_idle_curve_gives_each_delay_its_cpu),
        cmocka_unit_test(test_sim_model_session_prefill_removes_lock_blocks),
        cmocka_unit_test(test_sim_model_gil_forced_switching),
        cmocka_unit_test(test_sim_predict_distribution),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
