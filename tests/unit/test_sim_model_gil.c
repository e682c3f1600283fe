/*
 * test_sim_model_gil.c -- the costs the contention model charges around
 * CPython's GIL (sim/gil.c, client.c), against hand-computable cases: the
 * hand-off, the take-over stretch, the working set's move between cores
 * (gil_xcore_cpu_us) and its going cold while the client ran no Python
 * (py_cold_cpu_us), the waiters' block/wake CPU, the wake-up preemption at
 * a send, the forced switch.  The GIL's rules themselves are in
 * test_sim_gil.c, the rest of the model in test_sim_model.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "core/err.h"
#include "sim/fit.h"
#include "sim/model.h"
#include "sim/params.h"

#include "sim_fixtures.h"

/* The case of test_sim_model_one_core_is_a_fifo_mutex (test_sim_model.c)
 * with the GIL and enough cores: the GIL serialises the Python
 * segments and each hand-off costs gil_handoff_us. */
static void
test_sim_model_gil_serialises_with_handoff_cost(void **state)
{
    struct sim_params p;
    struct sim_result r;

    quiet_params(&p);
    set(&p, "threads", "4");
    set(&p, "calls", "1");
    set(&p, "pool_initial", "4");
    set(&p, "py_pre_frac", "0");
    set(&p, "py_post_frac", "1");
    set(&p, "sys_us", "0");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "0");
    set(&p, "thread_start_us", "20");
    set(&p, "server_us", "1000");
    set(&p, "server_cpu_frac", "0");
    /* thread i starts at 20 i, its reply is in at 1000 + 20 i; the GIL is
     * released at 1100, 1210, 1320 and each waiter runs 10 us later:
     * latencies 1100, 1190, 1280, 1370 */
    assert_float_equal(run(&p, &r).mean_ms, 1235 / 1e3, 1e-9);
    assert_int_equal(r.gil_switches, 8); /* at each start, then at each reply */
    sim_result_free(&r);
}

/* gil_switch_stretch: a Python segment that runs after another thread has
 * held the GIL since the thread's previous segment takes (1 + s) times its
 * CPU.  One thread never sees another holder: no change.  Four threads as
 * above with releases = 2 (pre 0, send, mid 0, wait, post 100): every post
 * segment follows the others' turns, so it takes 150 us with s = 0.5:
 * thread 0 ends at 1000 + 150, thread 1 runs at 1150 + 10 and ends at 1310,
 * then 1470, 1630: latencies 1150, 1290, 1430, 1570 (mean 1360); without
 * the stretch 1100, 1190, 1280, 1370 (mean 1235). */
static void
test_sim_model_gil_switch_stretch(void **state)
{
    struct sim_params p;

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "gil_switch_stretch", "0.5");
    assert_float_equal(run(&p, NULL).mean_ms, 0.184, 1e-9);

    quiet_params(&p);
    set(&p, "threads", "4");
    set(&p, "calls", "1");
    set(&p, "pool_initial", "4");
    set(&p, "releases", "2");
    set(&p, "py_pre_frac", "0");
    set(&p, "py_post_frac", "1");
    set(&p, "sys_us", "0");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "0");
    set(&p, "thread_start_us", "20");
    set(&p, "server_us", "1000");
    set(&p, "server_cpu_frac", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 1235 / 1e3, 1e-9);
    set(&p, "gil_switch_stretch", "0.5");
    assert_float_equal(run(&p, NULL).mean_ms, 1360 / 1e3, 1e-9);
    set(&p, "runtime", "free-threaded"); /* no GIL: no take-over, no stretch */
    assert_float_equal(run(&p, NULL).mean_ms, 1100 / 1e3, 1e-9);
}

/* gil_xcore_cpu_us: a Python segment with share f of the call's Python,
 * run by a thread whose home core (index % cores) last ended that segment
 * before W us of Python ran on other cores, pays C x f x min(1, W /
 * py_call_us) first.  Two threads (homes 0 and 1 of 4 cores), one call
 * each, py_call_us 100 all after the last receive (the other segments are
 * 0 us), every other cost 0 but the 10 us hand-off, replies 1000 us after
 * the send, thread 1 starting at 20:
 *   0, 20  both send with W = 0 (no Python has run yet)
 *   1000  thread 0's reply: W = 0, post 100: ends at 1100 (latency 1100)
 *   1020  thread 1's reply: GIL held by thread 0; signalled at 1100, takes
 *         it at 1110; its post segment (f = 1) sees W = 100 us run on core
 *         0: pays C, then 100: ends at 1210 + C (latency 1190 + C)
 * Mean 1145 + C / 2: 1.160 ms for C = 30, one segment charged.  One core
 * (both homes 0), one thread or free-threaded: nothing. */
static void
test_sim_model_gil_xcore(void **state)
{
    struct sim_params p;
    struct sim_result r;

    quiet_params(&p);
    set(&p, "threads", "2");
    set(&p, "calls", "1");
    set(&p, "pool_initial", "2");
    set(&p, "py_pre_frac", "0");
    set(&p, "py_post_frac", "1");
    set(&p, "sys_us", "0");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "0");
    set(&p, "thread_start_us", "20");
    set(&p, "server_us", "1000");
    set(&p, "server_cpu_frac", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 1145 / 1e3, 1e-9);
    set(&p, "gil_xcore_cpu_us", "30");
    assert_float_equal(run(&p, &r).mean_ms, 1160 / 1e3, 1e-9);
    assert_int_equal(r.gil_xcore, 1);
    sim_result_free(&r);
    /* The fractions: releases = 2, pre 30 us (f 0.3), post 70 us (f 0.7).
     * Thread 0 runs pre 0..30 (W = 0) and blocks; thread 1, waiting for
     * the GIL since 20, starts its call at 40: pre sees W = 30 run on core
     * 0 (0.3 x 0.3 C), sends at 70 + 0.09 C; thread 0's reply at 1030:
     * post sees W = 30 run on core 1 (its own 30 us of pre do not count:
     * 0.7 x 0.3 C), ends at 1100 + 0.21 C; thread 1 takes the GIL 10 us
     * later, post sees W = 100 (0.7 C): ends at 1180 + 0.91 C, latency
     * 1140 + 0.91 C.  Mean 1120 + 0.56 C = 1136.8 us for C = 30 (1151.5
     * without the min(1, W / py_call_us) factor). */
    set(&p, "releases", "2");
    set(&p, "py_pre_frac", "0.3");
    set(&p, "py_post_frac", "0.7");
    assert_float_equal(run(&p, &r).mean_ms, 1136.8 / 1e3, 1e-9);
    assert_int_equal(r.gil_xcore, 3);
    sim_result_free(&r);
    set(&p, "gil_xcore_cpu_us", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 1120 / 1e3, 1e-9);
    set(&p, "gil_xcore_cpu_us", "30");
    set(&p, "releases", "3");
    set(&p, "py_pre_frac", "0");
    set(&p, "py_post_frac", "1");
    set(&p, "cores", "1"); /* one home core: no cross-core hand-over */
    assert_float_equal(run(&p, NULL).mean_ms, 1145 / 1e3, 1e-9);
    set(&p, "cores", "4");
    /* cpu_pick: cores have identities; thread 0's post runs on
     * core 0 (the lowest free), thread 1's at 1110 too (no core of its
     * own yet, core 0 free again): W = 0 on core 0, nothing charged. */
    set(&p, "cpu_pick", "1");
    assert_float_equal(run(&p, &r).mean_ms, 1145 / 1e3, 1e-9);
    assert_int_equal(r.gil_xcore, 0);
    sim_result_free(&r);
    set(&p, "cpu_pick", "0");
    set(&p, "runtime", "free-threaded");
    assert_float_equal(run(&p, NULL).mean_ms, 1100 / 1e3, 1e-9);

    quiet_params(&p); /* one thread: the GIL never changes holder */
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    double base = run(&p, NULL).mean_ms;
    set(&p, "gil_xcore_cpu_us", "30");
    assert_float_equal(run(&p, NULL).mean_ms, base, 1e-12);
    set(&p, "cpu_pick", "1"); /* it keeps its core: still nothing */
    assert_float_equal(run(&p, NULL).mean_ms, base, 1e-12);
    set(&p, "send_preempt_busy_p", "1");
    set(&p, "send_preempt_p", "1"); /* the server on its core, then back */
    set(&p, "server_cpu_frac", "1");
    set(&p, "cpu_pick", "0");
    base = run(&p, NULL).mean_ms;
    set(&p, "cpu_pick", "1");
    assert_float_equal(run(&p, NULL).mean_ms, base, 1e-12);
}

/* py_cold_cpu_us: a segment with share f pays C x f x the ramp (A - lo) /
 * (hi - lo), clamped to [0, 1], A = the time since its home core last ended
 * that segment less the client's Python CPU on that core since (extra CPU
 * included).  One thread, the parts of the first test of test_sim_model.c
 * with all the Python before the send (50 us) and after the last receive
 * (50 us), none overlapping the round trip: 189 us per call, 100 of them
 * Python, so every segment sees A = 89 us whatever the charge (it
 * lengthens the period and the Python CPU alike).  lo 0, hi 178: half the
 * charge, 0.5 C per call; hi 89: all of it; lo 89: none; hi <= lo: off.
 * Two threads as in test_sim_model_gil_xcore (post segment only, f = 1),
 * lo 0, hi 900: thread 0's post (W = 0) finds its core unused for ~1000 us
 * and pays the cold C' = 10: ends at 1110; thread 1 takes the GIL at 1120,
 * its post has W = 100 (xcore 30) and A > 900 (cold 10): it pays the
 * larger, 30, not 40: latencies 1110 and 1110 - 20 + 10 + 30 + 100 = 1230:
 * mean 1170 (1175 if the two were added). */
static void
test_sim_model_py_cold(void **state)
{
    struct sim_params p;
    struct sim_result r;

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "py_pre_frac", "0.5");
    set(&p, "py_post_frac", "0.5");
    assert_float_equal(run(&p, NULL).mean_ms, 0.189, 1e-9);
    set(&p, "py_cold_cpu_us", "40");
    set(&p, "py_cold_lo_us", "0");
    set(&p, "py_cold_hi_us", "178");
    assert_float_equal(run(&p, &r).mean_ms, 0.209, 1e-9);
    assert_true(r.py_cold >= 50 * 2); /* pre and post of every call */
    sim_result_free(&r);
    set(&p, "py_cold_hi_us", "89");
    assert_float_equal(run(&p, NULL).mean_ms, 0.229, 1e-9);
    set(&p, "py_cold_lo_us", "89");
    set(&p, "py_cold_hi_us", "178");
    assert_float_equal(run(&p, NULL).mean_ms, 0.189, 1e-9);
    set(&p, "py_cold_hi_us", "89"); /* hi <= lo: off */
    assert_float_equal(run(&p, NULL).mean_ms, 0.189, 1e-9);
    set(&p, "runtime", "free-threaded"); /* the caches are not the GIL's */
    set(&p, "py_cold_lo_us", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 0.229, 1e-9);

    quiet_params(&p);
    set(&p, "threads", "2");
    set(&p, "calls", "1");
    set(&p, "pool_initial", "2");
    set(&p, "py_pre_frac", "0");
    set(&p, "py_post_frac", "1");
    set(&p, "sys_us", "0");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "0");
    set(&p, "thread_start_us", "20");
    set(&p, "server_us", "1000");
    set(&p, "server_cpu_frac", "0");
    set(&p, "gil_xcore_cpu_us", "30");
    set(&p, "py_cold_cpu_us", "10");
    set(&p, "py_cold_lo_us", "0");
    set(&p, "py_cold_hi_us", "900");
    assert_float_equal(run(&p, &r).mean_ms, 1170 / 1e3, 1e-9);
    assert_int_equal(r.gil_xcore, 1);
    assert_int_equal(r.py_cold, 1);
    sim_result_free(&r);
}

/* gil_wake_cpu_us: each GIL waiter's block/wake cycle is paid, GIL held, by
 * the next thread that takes the GIL.  Two threads, releases = 3 (pre 0,
 * send, mid 25, wait, mid 25, sys, post 50), thread 1 starting 30 us after
 * thread 0, replies 1000 us after the send, every other cost 0 but the
 * 10 us GIL hand-off, C = gil_wake_cpu_us:
 *   0     thread 0 takes the free GIL, sends, mid 0..25, blocks in recv
 *   30    thread 1 likewise (the GIL is free): sends, mid 30..55, blocks
 *   1000  thread 0's reply: takes the GIL (nobody woken: pays 0), mid 25,
 *         drops for its recv at 1025 (nobody waits), takes it back, post
 *         50: ends at 1075 (latency 1075)
 *   1030  thread 1's reply: GIL locked, waits on gil->cond
 *   1075  thread 0 exits, signalling thread 1 (1 woken); thread 1 takes
 *         the GIL 10 us later, pays C, mid 25, its recv drop signals
 *         nobody, post 50: ends at 1160 + C (latency 1130 + C)
 * Mean 1102.5 + C / 2: 1.1025 ms for C = 0, 1.1175 ms for C = 30.  One
 * thread never has a waiter; free-threaded has no GIL (1075 each). */
static void
test_sim_model_gil_wake_cpu(void **state)
{
    struct sim_params p;
    struct sim_result r;

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "gil_wake_cpu_us", "30");
    assert_float_equal(run(&p, NULL).mean_ms, 0.184, 1e-9);

    quiet_params(&p);
    set(&p, "gil_wake_cpu_waiter", "0"); /* the taker pays */
    set(&p, "threads", "2");
    set(&p, "calls", "1");
    set(&p, "pool_initial", "2");
    set(&p, "releases", "3");
    set(&p, "py_pre_frac", "0");
    set(&p, "py_post_frac", "0.5");
    set(&p, "sys_us", "0");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "0");
    set(&p, "thread_start_us", "30");
    set(&p, "server_us", "1000");
    set(&p, "server_cpu_frac", "0");
    assert_float_equal(run(&p, &r).mean_ms, 1102.5 / 1e3, 1e-9);
    assert_int_equal(r.gil_wakes, 1);
    assert_int_equal(r.gil_wake_takes, 0); /* C = 0: nothing charged */
    sim_result_free(&r);
    set(&p, "gil_wake_cpu_us", "30");
    assert_float_equal(run(&p, &r).mean_ms, 1117.5 / 1e3, 1e-9);
    assert_int_equal(r.gil_wakes, 1);
    assert_int_equal(r.gil_wake_takes, 1);
    sim_result_free(&r);
    set(&p, "runtime", "free-threaded"); /* 1075 each */
    assert_float_equal(run(&p, NULL).mean_ms, 1075 / 1e3, 1e-9);
}

/*
 * Wake-up preemption at a send (client.c send_preempted, net.c
 * sim__net_send_sync): the peer the send woke runs first on the sender's
 * core, with no wake-up latency; the sender, GIL released, runs again when
 * that job ends.
 * (a) One thread, the parts of the first test but server_cpu_frac 1 (the
 * service is 50 us of server CPU): without preemption 184 us (pre 50, send
 * 5, transit 2, server wake 10, server 50, transit 2, client wake 10, recv
 * 5, mid 5, sys 5, post 40).  With it: pre 50, send 5, the server's 50 us
 * on the sender's core (55..105), the reply in the socket at 107, the
 * sender back at 105: mid 5 (110), the reply is there (no block, no
 * wake-up), recv 5, mid 5, sys 5, post 40: 165 us.  Which probability
 * applies: send_preempt_p when another core is idle (4 cores),
 * send_preempt_busy_p when none is (1 core).
 * (b) Two threads, GIL: pre 40, mid 20, post 40, releases 2, sys 5, no
 * transit or wake-up latency, 10 us GIL hand-off, server CPU 100 us,
 * thread 1 starting at 20 (waits for the GIL; a call's clock starts when
 * its thread holds the GIL, as perf_counter() does).  Without preemption
 * thread 0 drops the GIL for its send at 40 (signals thread 1, due at 50),
 * is back at 45 and takes it again (take-if-free): thread 1 wakes to a
 * taken GIL (futile) and gets it only at thread 0's wait (65 + 10), ends
 * at 265: latencies 190 and 190.  With it thread 0 is off its core
 * 45..145 while its server runs: thread 1 takes the free GIL at 50 (no
 * futile wake), sends at 90 and is preempted 95..195; thread 0 runs mid,
 * recv, post 145..210; thread 1, back at 195, waits for the GIL until
 * thread 0 ends (210 + 10): mid, recv, post 220..285: latencies 210 and
 * 235.
 */
static void
test_sim_model_send_preempt(void **state)
{
    struct sim_params p;
    struct sim_result r;
    struct sim_stats st;

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "server_cpu_frac", "1");
    set(&p, "send_preempt_p", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 0.184, 1e-9);
    set(&p, "send_preempt_p", "1");
    assert_float_equal(run(&p, &r).mean_ms, 0.165, 1e-9);
    assert_int_equal(r.send_preempts, 51); /* + the new connection's hello */
    assert_int_equal(r.client_blocks, 0);  /* the reply is always there */
    sim_result_free(&r);
    set(&p, "cores", "1"); /* no other core: send_preempt_busy_p applies */
    set(&p, "send_preempt_busy_p", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 0.184, 1e-9);
    set(&p, "send_preempt_p", "0");
    set(&p, "send_preempt_busy_p", "1");
    assert_float_equal(run(&p, NULL).mean_ms, 0.165, 1e-9);

    quiet_params(&p);
    set(&p, "threads", "2");
    set(&p, "calls", "1");
    set(&p, "pool_initial", "2");
    set(&p, "releases", "2");
    set(&p, "py_pre_frac", "0.4");
    set(&p, "py_post_frac", "0.4");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "0");
    set(&p, "thread_start_us", "20");
    set(&p, "server_us", "100");
    set(&p, "server_cpu_frac", "1");
    set(&p, "send_preempt_p", "0");
    assert_float_equal(run(&p, &r).mean_ms, 190 / 1e3, 1e-9);
    assert_int_equal(r.gil_futile, 1);
    assert_int_equal(r.send_preempts, 0);
    /* hand-overs per release: none at the send (each sender takes the GIL
     * back), both at the wait (the other thread ran meanwhile) */
    assert_int_equal(r.handover[0], 0);
    assert_int_equal(r.handover[1], 2);
    sim_result_free(&r);
    set(&p, "send_preempt_p", "1");
    st = run(&p, &r);
    assert_float_equal(st.p50_ms, 210 / 1e3, 1e-9);
    assert_float_equal(st.max_ms, 235 / 1e3, 1e-9);
    assert_int_equal(r.gil_futile, 0);
    assert_int_equal(r.send_preempts, 2);
    /* both hand-overs at the send (each sender was preempted while the
     * other ran), none at the wait (the reply was there) */
    assert_int_equal(r.handover[0], 2);
    assert_int_equal(r.handover[1], 0);
    sim_result_free(&r);
}

/*
 * send_preempt_cpu_us: a call whose send was preempted does not
 * pay that much CPU (measured: the sequential client's CPU per call with
 * the server pinned to another, halting CPU minus pinned to its own), taken
 * off its next Python segments.  One thread, the parts of
 * test_sim_model_send_preempt's call (a) with all the Python before the
 * send (50 us) and after the last receive (50 us): pre 50, send 5, the
 * server's 50 us on the sender's core (55..105), the sender back at 105
 * reaches its receive before the reply (107: transit 2) and blocks, wakes
 * at 117, recv 5, sys 5, post 50: 177 us.  With 20 us the post is 30: 157;
 * with 60 it is 0 and the 10 left does not carry to the next call: 127;
 * not preempted, nothing changes: 189 (pre 50, send 5, transit 2, the
 * server's wake-up 10 and 50 us, transit 2, the client's wake-up 10, recv
 * 5, sys 5, post 50).  The calibration from the client CPU adds the sequential
 * model's preempted sends back: 200 us of CPU, 3 x 5 of syscalls, 51 preempted
 * sends in 50 calls (the hello's too) x 20: py_call_us = 200 - 15 + 1.02 x 20 =
 * 205.4.
 */
static void
test_sim_model_send_preempt_cpu(void **state)
{
    struct sim_params p;
    struct mt_err err = {0};

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "server_cpu_frac", "1");
    set(&p, "py_post_frac", "0.5");
    set(&p, "send_preempt_p", "1");
    assert_float_equal(run(&p, NULL).mean_ms, 0.177, 1e-9);
    set(&p, "send_preempt_cpu_us", "20");
    assert_float_equal(run(&p, NULL).mean_ms, 0.157, 1e-9);
    set(&p, "send_preempt_cpu_us", "60");
    assert_float_equal(run(&p, NULL).mean_ms, 0.127, 1e-9);
    set(&p, "send_preempt_p", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 0.189, 1e-9);
    set(&p, "send_preempt_p", "1");
    set(&p, "send_preempt_cpu_us", "20");
    assert_int_equal(sim_fit_seq_cpu(&p, 200, NAN, &err), 0);
    assert_float_equal(p.py_call_us, 205.4, 1e-9);
}

/*
 * send_switch_busy: the two switches of a preempted send (the
 * peer switched in on the sender's core, the sender switched back) cost
 * ctx_busy_cpu_us, the measured switch on a running CPU, instead of
 * ctx_cpu_us.  test_sim_model_send_preempt's one-thread call (a) with
 * ctx_cpu_us 10: preempted, pre 50, send 5, the server's switch-in 10 and
 * 50 us of CPU on the sender's core (55..115), the sender's switch back 10
 * (115..125), mid 5, recv 5, mid 5, sys 5, post 40: 185 us (165 + 2 x 10).
 * With the option and ctx_busy_cpu_us 2: 165 + 2 x 2 = 169.  Without a
 * figure (ctx_busy_cpu_us 0) nothing changes, nor without preemption
 * (184 + the server's and the client's wake-up, 2 x 10 = 204).
 */
static void
test_sim_model_send_switch_busy(void **state)
{
    struct sim_params p;

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "server_cpu_frac", "1");
    set(&p, "ctx_cpu_us", "10");
    set(&p, "send_preempt_p", "1");
    assert_float_equal(run(&p, NULL).mean_ms, 0.185, 1e-9);
    set(&p, "send_switch_busy", "1");
    assert_float_equal(run(&p, NULL).mean_ms, 0.185, 1e-9); /* no figure */
    set(&p, "ctx_busy_cpu_us", "2");
    assert_float_equal(run(&p, NULL).mean_ms, 0.169, 1e-9);
    set(&p, "send_preempt_p", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 0.204, 1e-9);
    set(&p, "send_switch_busy", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 0.204, 1e-9);
}

/*
 * Who has the GIL after a preempted send.  Two threads, two
 * cores, everything deterministic: 100 us of Python per call (pre 50, mid
 * 10, mid 10, post 30), sendall / recv(header) / recv(body) each 1 us of
 * CPU, the server's 20 us of CPU runs on the sender's core (send_preempt_p
 * = 1), so the sender is back 21 us after its drop_gil with the reply
 * already there.  The other thread waits on gil->cond; drop_gil signals it
 * and it runs gil_handoff_us later (take_gil's re-check of gil->locked).
 *
 * H = 5 < 21: the waiter takes the GIL while the sender is preempted; the
 * sender, back, finds it taken and waits (take_gil); the new holder's
 * header and body drops signal nobody or a waiter that arrives after the
 * 1 us recv (futile); its next send signals the old sender.  One hand-over
 * per call, at the send; each call spans the other's GIL turn too:
 * 2 x (100 + 2 x 1 + 5) = 214 us.
 *
 * H = 30 > 21: the signalled waiter always arrives while the sender holds
 * the GIL again (take-if-free: take_gil's `if (!locked) goto _ready` lets
 * the returning sender in first) and waits again with a fresh interval and
 * switch count, so the 5 ms drop request never fires: one thread runs all
 * its calls at 100 + 2 + 21 = 123 us, then the other (its first call,
 * which waited for all of them, is excluded).  A convoy.
 */
static void
test_sim_model_send_preempt_convoy(void **state)
{
    struct sim_params p;
    struct sim_result r;
    struct sim_stats st;

    quiet_params(&p);
    set(&p, "threads", "2");
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "pool_initial", "2");
    set(&p, "cores", "2");
    set(&p, "releases", "3");
    set(&p, "py_pre_frac", "0.5");
    set(&p, "py_post_frac", "0.3");
    set(&p, "sys_us", "1");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "5");
    set(&p, "thread_start_us", "0");
    set(&p, "server_us", "20");
    set(&p, "server_cpu_frac", "1");
    set(&p, "send_preempt_p", "1");
    set(&p, "send_preempt_busy_p", "1");

    set(&p, "gil_handoff_us", "5");
    st = run(&p, &r);
    assert_int_equal(st.n, 98);
    assert_float_equal(st.p10_ms, 0.214, 1e-9);
    assert_float_equal(st.max_ms, 0.214, 1e-9);
    /* one hand-over per call (100 calls, the first two start it), at the
     * send; one futile wake per call (the body drop's signal) */
    assert_in_range(r.handover[0], 98, 100);
    assert_int_equal(r.handover[1], 0);
    assert_int_equal(r.handover[2], 0);
    assert_in_range(r.gil_switches, 100, 102);
    assert_in_range(r.gil_futile, 98, 100);
    assert_int_equal(r.gil_drop_requests, 0);
    sim_result_free(&r);

    set(&p, "gil_handoff_us", "30");
    st = run(&p, &r);
    assert_int_equal(st.n, 98);
    assert_float_equal(st.p10_ms, 0.123, 1e-9);
    assert_float_equal(st.max_ms, 0.123, 1e-9);
    assert_int_equal(r.handover[0] + r.handover[1] + r.handover[2], 0);
    assert_int_equal(r.gil_switches, 2); /* the first take, and the end */
    assert_int_equal(r.gil_drop_requests, 0);
    assert_int_equal(r.gil_forced, 0);
    sim_result_free(&r);
}

/*
 * send_affine_waiter (client.c send_waiter_on_core): a send is
 * not preempted while the GIL waiter its own drop_gil woke is still waking
 * or queued on the sender's home core (kernel/sched/fair.c
 * wake_affine_idle: sync && nr_running == 1 fails, the peer goes
 * elsewhere).  One core (both threads share home core 0, every send finds
 * no idle core: send_preempt_busy_p = 1 applies), two threads, one call
 * each: pre 40, mid 20, post 40, releases 2 (send, recv), sys 5, no
 * transit, no wake-up latency, no context-switch CPU (zero-CPU jobs need
 * no core), gil_handoff_us 10, server CPU 100, thread 1 at 20.
 *
 * Off: thread 0 (GIL at 0) drops it for its send at 40 (signals thread 1,
 * due 50), is preempted at 45 by the server (45..145); thread 1 takes the
 * free GIL at 50 (its clock starts), waits for the core, runs pre
 * 145..185; thread 0, back at 145, waits on gil->cond.  Thread 1's send
 * (185..190) signals thread 0 (due 195) and is preempted (server
 * 190..290); thread 0 takes the GIL at 195, mid 290..310, drops it for its
 * recv (signals thread 1, due 320; reply there since 145), recv 310..315,
 * takes it back free, post 315..355: 355 us.  Thread 1's wake at 320 is
 * futile; it gets the GIL at 365 (thread 0's final drop + 10): mid, recv,
 * post 365..430: 380 us.  2 preempted sends, 1 futile wake, both
 * hand-overs at the send.
 *
 * On: at 45 thread 1 is still waking (due 50) on the sender's core, so the
 * send is not preempted: the request goes to the server (queued for the
 * core), thread 0 takes the free GIL at 45 (mid 45..65); thread 1's wake
 * at 50 is futile.  Thread 0's recv drop at 65 signals thread 1 (due 75)
 * and blocks for the reply: the server runs 65..165.  Thread 1 takes the
 * GIL at 75 (its clock starts), pre 165..205, send 205..210: no waiter was
 * signalled (thread 0 is queued for its recv's CPU, not on gil->cond), so
 * it is preempted (server 210..310).  Thread 0's recv CPU 310..315, then
 * it waits on gil->cond (thread 1 took the GIL back at 310); thread 1 mid
 * 315..335, recv drop (signals thread 0, due 345; reply there), recv
 * 335..340, takes it back, post 340..380: 305 us.  Thread 0's wake at 345
 * is futile; it gets the GIL at 390, post 390..430: 430 us.  1 preempted
 * send, 1 kept by the rule, 2 futile wakes, the one hand-over at the
 * recv.
 */
static void
test_sim_model_send_affine_waiter(void **state)
{
    struct sim_params p;
    struct sim_result r;
    struct sim_stats st;

    quiet_params(&p);
    set(&p, "threads", "2");
    set(&p, "calls", "1");
    set(&p, "pool_initial", "2");
    set(&p, "cores", "1");
    set(&p, "releases", "2");
    set(&p, "py_pre_frac", "0.4");
    set(&p, "py_post_frac", "0.4");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "0");
    set(&p, "thread_start_us", "20");
    set(&p, "server_us", "100");
    set(&p, "server_cpu_frac", "1");
    set(&p, "send_preempt_busy_p", "1");

    set(&p, "send_affine_waiter", "0");
    st = run(&p, &r);
    assert_float_equal(st.p10_ms, 0.355, 1e-9);
    assert_float_equal(st.max_ms, 0.380, 1e-9);
    assert_int_equal(r.send_preempts, 2);
    assert_int_equal(r.send_affine_kept, 0);
    assert_int_equal(r.gil_futile, 1);
    assert_int_equal(r.handover[0], 2);
    assert_int_equal(r.handover[1], 0);
    sim_result_free(&r);

    set(&p, "send_affine_waiter", "1");
    st = run(&p, &r);
    assert_float_equal(st.p10_ms, 0.305, 1e-9);
    assert_float_equal(st.max_ms, 0.430, 1e-9);
    assert_int_equal(r.send_preempts, 1);
    assert_int_equal(r.send_affine_kept, 1);
    assert_int_equal(r.gil_futile, 2);
    assert_int_equal(r.handover[0], 0);
    assert_int_equal(r.handover[1], 1);
    sim_result_free(&r);
}

/* A 20 ms Python segment: the waiter times out after the 5 ms interval, sets
 * gil_drop_request and the holder is forced to switch. */
static void
test_sim_model_gil_forced_switch(void **state)
{
    struct sim_params p;
    struct sim_result r;

    quiet_params(&p);
    set(&p, "threads", "2");
    set(&p, "calls", "3");
    set(&p, "py_call_us", "20000");
    run(&p, &r);
    assert_true(r.gil_drop_requests >= 1);
    assert_true(r.gil_forced >= 1);
    sim_result_free(&r);
    set(&p, "runtime", "free-threaded");
    run(&p, &r);
    assert_int_equal(r.gil_drop_requests, 0);
    sim_result_free(&r);
}

/*
 * gil_mutex_signal_us (gil.c mutex_*): drop_gil holds gil->mutex
 * for the signal's FUTEX_WAKE (the dropper's CPU, before its syscall); a
 * thread that reaches take_gil or the cond wait's re-lock meanwhile blocks
 * on the mutex and is woken wake_us after it is free; the signalled
 * waiter's own wake-up is wake_us (not gil_handoff_us).  Two threads, one
 * call each, 4 cores, no variation: Python 100 us all before the send
 * (releases 2), syscalls and transit 0, server 1000 us without CPU, wake_us
 * 3, thread 1 starting at 20.  Off: thread 0 runs at 3 (its start's
 * wake-up), Python 3..103, drops the GIL for its send (signals thread 1,
 * which waits since 23); the request's path (server wake 3, server 1000,
 * client wake 3) makes D = 1006: latency 100 + D = 1106.  Thread 1 runs at
 * 103 + gil_handoff_us 10, sends at 213: 1106 too.
 * Hold 4: thread 0 spends 4 us signalling, sends at 107: 1110.  Thread 1
 * wakes at 103 + 3 = 106, finds the mutex held until 107, blocks (one
 * mutex block), is woken at 107 + 3 = 110 and takes the GIL there: 1106.
 * Hold 2: free at 105 before thread 1 arrives at 106: no block, 1108 and
 * 1106.  Hold 2 with gil_mutex_relock_p 1: thread 1 blocks at the signal
 * (103), is woken at 105 + 3 = 108: one block, 1108 and 1106; with
 * gil_mutex_relock_p 0.5 over many seeds about half of the draws block.
 */
static void
test_sim_model_gil_mutex_signal(void **state)
{
    struct sim_params p;
    struct sim_result r;
    struct sim_stats st;

    quiet_params(&p);
    set(&p, "threads", "2");
    set(&p, "calls", "1");
    set(&p, "pool_initial", "2");
    set(&p, "releases", "2");
    set(&p, "py_pre_frac", "1");
    set(&p, "py_post_frac", "0");
    set(&p, "sys_us", "0");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "3");
    set(&p, "thread_start_us", "20");
    set(&p, "server_us", "1000");
    set(&p, "server_cpu_frac", "0");
    st = run(&p, &r);
    assert_float_equal(st.p10_ms, 1.106, 1e-9);
    assert_float_equal(st.max_ms, 1.106, 1e-9);
    assert_int_equal(r.gil_mutex_blocks, 0);
    sim_result_free(&r);

    set(&p, "gil_mutex_signal_us", "4");
    st = run(&p, &r);
    assert_float_equal(st.p10_ms, 1.106, 1e-9);
    assert_float_equal(st.max_ms, 1.110, 1e-9);
    assert_int_equal(r.gil_mutex_blocks, 1);
    assert_int_equal(r.client_blocks, 4); /* cond, mutex, 2 replies */
    sim_result_free(&r);

    set(&p, "gil_mutex_signal_us", "2");
    st = run(&p, &r);
    assert_float_equal(st.p10_ms, 1.106, 1e-9);
    assert_float_equal(st.max_ms, 1.108, 1e-9);
    assert_int_equal(r.gil_mutex_blocks, 0);
    sim_result_free(&r);

    set(&p, "gil_mutex_relock_p", "1");
    st = run(&p, &r);
    assert_float_equal(st.p10_ms, 1.106, 1e-9);
    assert_float_equal(st.max_ms, 1.108, 1e-9);
    assert_int_equal(r.gil_mutex_blocks, 1);
    sim_result_free(&r);

    set(&p, "gil_mutex_relock_p", "0.5");
    {
        uint64_t blocks = 0;
        char seed[16];

        for (int s = 1; s <= 200; s++) {
            snprintf(seed, sizeof(seed), "%d", s);
            set(&p, "seed", seed);
            run(&p, &r);
            blocks += r.gil_mutex_blocks;
            sim_result_free(&r);
        }
        assert_in_range(blocks, 70, 130);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_model_gil_serialises_with_handoff_cost),
        cmocka_unit_test(test_sim_model_gil_switch_stretch),
        cmocka_unit_test(test_sim_model_gil_xcore),
        cmocka_unit_test(test_sim_model_py_cold),
        cmocka_unit_test(test_sim_model_gil_wake_cpu),
        cmocka_unit_test(test_sim_model_send_preempt),
        cmocka_unit_test(test_sim_model_send_switch_busy),
        cmocka_unit_test(test_sim_model_send_preempt_cpu),
        cmocka_unit_test(test_sim_model_send_preempt_convoy),
        cmocka_unit_test(test_sim_model_send_affine_waiter),
        cmocka_unit_test(test_sim_model_gil_forced_switch),
        cmocka_unit_test(test_sim_model_gil_mutex_signal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
