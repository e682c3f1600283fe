/*
 * test_sim_model.c -- the contention model (sim/model.c, client.c, net.c),
 * calibration (fit.c), scenario files and the herd model, against
 * hand-computable cases.  The GIL's costs (hand-off, take-over stretch,
 * the working set's moves, waiters' CPU, send preemption, forced switch)
 * are in test_sim_model_gil.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "sim/fit.h"
#include "sim/herd.h"
#include "sim/model.h"
#include "sim/params.h"
#include "sim/scenario.h"

#include "sim_fixtures.h"

/* One thread: py + 3 syscalls + 2 transits + service + 2 wake-ups, less the
 * Python segment between send and wait (it overlaps the round trip). */
static void
test_sim_model_one_thread_is_the_sum_of_its_parts(void **state)
{
    struct sim_params p;
    struct sim_stats st;

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    st = run(&p, NULL);
    assert_int_equal(st.n, 49);
    assert_float_equal(st.mean_ms,
                       (100 - 5 + 3 * 5 + 2 * 2 + 50 + 2 * 10) / 1e3, 1e-9);
    assert_float_equal(st.stdev_ms, 0, 1e-12);
    set(&p, "runtime", "free-threaded"); /* one thread: no GIL effect */
    assert_float_equal(run(&p, NULL).mean_ms, 0.184, 1e-9);
}

/* server_wake_in_trace: a service time taken on the wire (request
 * packet -> reply packet) already holds the server's wake-up and switch-in.
 * The one-thread call of 184 us with ctx_cpu_us = 3 pays 3 at the client's
 * and 3 at the server's wake-up: 190.  From trace samples (50 us each) with
 * the option, the server's 10 us wake-up and 3 us switch-in go: 177.  The
 * option leaves the lognormal server (no trace) alone: 190. */
static void
test_sim_model_server_wake_in_trace(void **state)
{
    struct sim_params p;
    double samples[8] = {50, 50, 50, 50, 50, 50, 50, 50};

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    set(&p, "ctx_cpu_us", "3");
    assert_float_equal(run(&p, NULL).mean_ms, 0.190, 1e-9);
    set(&p, "server_wake_in_trace", "1");
    assert_float_equal(run(&p, NULL).mean_ms, 0.190, 1e-9);
    p.server_samples_us = samples;
    p.server_samples_n = 8;
    assert_float_equal(run(&p, NULL).mean_ms, 0.177, 1e-9);
    set(&p, "server_wake_in_trace", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 0.190, 1e-9);
}

/* One core, T threads whose replies arrive together: the core is a FIFO
 * mutex, thread i finishes after (i + 1) Python segments. */
static void
test_sim_model_one_core_is_a_fifo_mutex(void **state)
{
    struct sim_params p;

    fifo_mutex_params(&p, "0", "0");
    /* latencies 1100, 1200, 1300, 1400 */
    assert_float_equal(run(&p, NULL).mean_ms, (1000 + 100 * 5 / 2.0) / 1e3,
                       1e-9);
}

/* The same mutex with the threads started 10 us apart: thread i's reply
 * arrives at 1000 + 10 i.  Any serving order gives the same mean, so the
 * order is read from the latencies in completion order: first come, first
 * served gives 1100, 1200 - 10, 1300 - 20, 1400 - 30; serving the newest
 * waiter first would give 1100, 1200 - 30, 1300 - 20, 1400 - 10. */
static void
test_sim_model_one_core_serves_in_arrival_order(void **state)
{
    static const uint64_t want_us[4] = {1100, 1190, 1280, 1370};
    struct sim_params p;
    struct sim_result r;

    fifo_mutex_params(&p, "0", "10");
    run(&p, &r);
    assert_int_equal(r.n, 4);
    for (size_t i = 0; i < 4; i++)
        if (r.lat_ns[i] != want_us[i] * 1000)
            fail_msg("completion %zu: %.3f us, FIFO gives %llu us", i + 1,
                     (double)r.lat_ns[i] / 1e3, (unsigned long long)want_us[i]);
    sim_result_free(&r);
}

/* The connection pool (client.c): one call alone takes 184 us (the case
 * above).  A connection opened inside a call costs connect_us of CPU plus a
 * hello exchange that takes a call's whole path: 30 + 2 x 184 = 398 us,
 * once; the next calls reuse it.  Two threads with pool_max 1: the second
 * waits for the first's check-in at 184, wakes (10 us) and runs its call:
 * 184 + 10 + 184 = 378 us, opening nothing.  With room in the pool it opens
 * a second connection instead: 398 us. */
static void
test_sim_model_pool_opens_on_demand(void **state)
{
    struct sim_params p;
    struct sim_result r;

    quiet_params(&p);
    set(&p, "calls", "3");
    set(&p, "connect_us", "30");
    run(&p, &r); /* pool_initial 0 by default */
    assert_int_equal(r.n, 3);
    assert_int_equal(r.lat_ns[0], 398000);
    assert_int_equal(r.lat_ns[1], 184000);
    assert_int_equal(r.lat_ns[2], 184000);
    assert_int_equal(r.conns_opened, 1);
    sim_result_free(&r);

    quiet_params(&p);
    set(&p, "runtime", "free-threaded");
    set(&p, "threads", "2");
    set(&p, "calls", "1");
    set(&p, "pool_initial", "1");
    set(&p, "thread_start_us", "0");
    set(&p, "connect_us", "30");
    set(&p, "pool_max", "1");
    run(&p, &r);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.lat_ns[0], 184000);
    assert_int_equal(r.lat_ns[1], 378000);
    assert_int_equal(r.conns_opened, 0);
    sim_result_free(&r);

    set(&p, "pool_max", "100");
    run(&p, &r);
    assert_int_equal(r.lat_ns[1], 398000);
    assert_int_equal(r.conns_opened, 1);
    sim_result_free(&r);
}

/* Background load: one core, other processes keep it busy half the time
 * with exponential bursts of 100 us (bg_load 0.5).  A 1 us job arriving at
 * a random moment (exponential pauses before each call) finds the core busy
 * with probability 0.5 and then waits the burst's residual, 100 us on
 * average (exponential: memoryless): mean latency 1 + 0.5 * 100 = 51 us.
 * The core is busy ~50 % of the time; without bg_load the call takes 1 us. */
static void
test_sim_model_background_load(void **state)
{
    struct sim_params p;
    struct sim_result r;
    double got;

    quiet_params(&p);
    set(&p, "runtime", "free-threaded");
    set(&p, "cores", "1");
    set(&p, "calls", "20000");
    set(&p, "releases", "2");
    set(&p, "py_pre_frac", "1");
    set(&p, "py_post_frac", "0");
    set(&p, "py_call_us", "1");
    set(&p, "sys_us", "0");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "0");
    set(&p, "server_us", "0");
    set(&p, "think_us", "2000");
    set(&p, "exclude_first", "1"); /* the first call opens the connection */
    assert_float_equal(run(&p, NULL).mean_ms, 1 / 1e3, 1e-9);
    set(&p, "bg_load", "0.5");
    set(&p, "bg_job_us", "100");
    got = run(&p, &r).mean_ms * 1e3;
    if (fabs(got - 51) > 0.05 * 51)
        fail_msg("background wait %.2f us, expected 51 us", got);
    assert_true(fabs(r.cpu_util - 0.5) < 0.03);
    sim_result_free(&r);
}

/* M/D/1: Poisson arrivals (many threads with exponential pauses), one core
 * serving D = 100 us at rho = 0.5: mean response D + rho D / (2 (1 - rho)).
 * Long runs keep the ramp-down at the end (threads finishing) small. */
static void
test_sim_model_md1_queue_mean(void **state)
{
    struct sim_params p;
    double want = 100 + 0.5 * 100 / (2 * 0.5);

    quiet_params(&p);
    set(&p, "runtime", "free-threaded");
    set(&p, "threads", "100");
    set(&p, "calls", "500");
    set(&p, "pool_initial", "100");
    set(&p, "cores", "1");
    set(&p, "py_call_us", "0");
    set(&p, "sys_us", "0");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "0");
    set(&p, "thread_start_us", "0");
    set(&p, "think_us", "20000"); /* lambda = 100 / 0.02 s = 5000/s */
    set(&p, "server_us", "100");
    set(&p, "server_cpu_frac", "1");
    double got = run(&p, NULL).mean_ms * 1e3;
    if (fabs(got - want) > 0.04 * want)
        fail_msg("M/D/1 mean %.2f us, formula %.2f us", got, want);
}

/* Serial-go: 1 ms time.Sleep served by the netpoller: 1 ms epoll_wait
 * timeout + 50 us slack, then the goroutine's wake-up and write. */
static void
test_sim_model_serial_go_sleep_overshoots(void **state)
{
    struct sim_params p;

    quiet_params(&p);
    set(&p, "calls", "20");
    set(&p, "exclude_first", "1");
    set(&p, "proxy", "serial-go");
    set(&p, "proxy_delay_ms", "1");
    set(&p, "proxy_cpu_us", "10");
    /* direct 184 + 2 transits + up (10 + 10) + read (10 + 5) + 1050 + write (10
     * + 5) */
    assert_float_equal(run(&p, NULL).mean_ms,
                       (184 + 4 + 20 + 15 + 1050 + 15) / 1e3, 1e-9);
}

/* Deadline inline (mtrace replay): the reply leaves request-read + delay. */
static void
test_sim_model_deadline_inline(void **state)
{
    struct sim_params p;

    quiet_params(&p);
    set(&p, "calls", "20");
    set(&p, "exclude_first", "1");
    set(&p, "proxy", "deadline");
    set(&p, "proxy_inline", "1");
    set(&p, "proxy_delay_ms", "1");
    set(&p, "proxy_cpu_us", "10");
    /* py 100 - 5 (overlap) + 3 sys + net + 1000 + timer wake 10 + write 10 +
     * net
     * + client wake 10 */
    assert_float_equal(run(&p, NULL).mean_ms,
                       (95 + 15 + 2 + 1000 + 10 + 10 + 2 + 10) / 1e3, 1e-9);
}

static void
test_sim_model_same_seed_same_output(void **state)
{
    struct sim_params p;
    struct sim_result a, b, c;

    sim_params_default(&p);
    set(&p, "threads", "10");
    set(&p, "calls", "100");
    set(&p, "seed", "77");
    set(&p, "gil_wake_cpu_us", "20"); /* its path is deterministic too */
    set(&p, "gil_wake_cpu_waiter", "0");
    set(&p, "send_preempt_p", "0.5"); /* and the send preemption's draws */
    run(&p, &a);
    run(&p, &b);
    set(&p, "seed", "78");
    run(&p, &c);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.lat_ns, b.lat_ns, a.n * sizeof(*a.lat_ns));
    assert_int_equal(a.events, b.events);
    assert_true(a.gil_wake_takes > 0);
    assert_true(a.send_preempts > 0 && a.send_preempts < 1000);
    assert_int_equal(a.send_preempts, b.send_preempts);
    assert_int_equal(a.gil_wake_takes, b.gil_wake_takes);
    assert_true(a.n != c.n ||
                memcmp(a.lat_ns, c.lat_ns, a.n * sizeof(*a.lat_ns)) != 0);
    sim_result_free(&a);
    sim_result_free(&b);
    sim_result_free(&c);
}

static void
test_sim_model_gil_slower_than_free_threaded(void **state)
{
    struct sim_params p;
    double gil, ft;

    sim_params_default(&p);
    set(&p, "threads", "10");
    set(&p, "calls", "100");
    set(&p, "cores", "8");
    gil = run(&p, NULL).mean_ms;
    set(&p, "runtime", "free-threaded");
    ft = run(&p, NULL).mean_ms;
    assert_true(gil > 2 * ft);
}

/* Calibration from the client CPU: 150 us per call less 3 syscalls of
 * 5 us (no context-switch or loop CPU in quiet_params) = 135 us of Python;
 * free-threaded with a 1.5x slowdown: 90 us.  Below the syscall CPU: an
 * error. */
static void
test_sim_fit_from_client_cpu(void **state)
{
    struct sim_params p;
    struct mt_err err = {0};

    quiet_params(&p);
    set(&p, "calls", "50");
    set(&p, "exclude_first", "1");
    assert_int_equal(sim_fit_seq_cpu(&p, 150, NAN, &err), 0);
    assert_float_equal(p.py_call_us, 135, 1e-9);
    assert_string_equal(
        sim_origin_name(p.origin[sim_params_find("py_call_us")]), "calibrated");
    /* the mean is now a prediction: as in the one-thread test, Python less
     * its mid segment between send and wait (5 % overlaps the round trip)
     * plus 3 syscalls, 2 transits, service and 2 wake-ups */
    assert_float_equal(run(&p, NULL).mean_ms,
                       (135 * 0.95 + 3 * 5 + 2 * 2 + 50 + 2 * 10) / 1e3, 1e-9);
    set(&p, "runtime", "free-threaded");
    set(&p, "ft_slowdown", "1.5");
    assert_int_equal(sim_fit_seq_cpu(&p, 150, NAN, &err), 0);
    assert_float_equal(p.py_call_us, 90, 1e-9);
    assert_int_equal(sim_fit_seq_cpu(&p, 15, NAN, &err), MT_EUSAGE);
    assert_non_null(strstr(err.msg, "does not cover"));
}

static void
test_sim_fit_recovers_sequential_mean(void **state)
{
    struct sim_params p;
    struct mt_err err = {0};

    sim_params_default(&p);
    set(&p, "calls", "1000");
    set(&p, "exclude_first", "1");
    assert_int_equal(sim_fit_seq(&p, 0.4, 4.0, &err), 0);
    struct sim_stats st = run(&p, NULL);
    assert_true(fabs(st.mean_ms - 0.4) < 0.4e-3);
    assert_true(fabs(st.stdev_pct - 4.0) < 0.5);
    assert_int_equal(p.origin[sim_params_find("py_call_us")],
                     SIM_OR_CALIBRATED);
    assert_int_equal(sim_fit_seq(&p, 0.01, NAN, &err),
                     MT_EUSAGE); /* too fast */
    assert_non_null(strstr(err.msg, "without any Python CPU"));
    set(&p, "threads", "2");
    assert_int_equal(sim_fit_seq(&p, 0.4, NAN, &err), MT_EUSAGE);
}

static char *
write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/test_sim_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void
test_sim_scenario_sections_and_origins(void **state)
{
    struct sim_scenario_set s;
    struct mt_err err = {0};
    char *path =
        write_tmp("# common\n"
                  "cores = 4 [assumption] EC2 size unknown\n"
                  "releases = 5 [constant] pymongo 4\n"
                  "\n[seq]\nthreads = 1\ncalibrate.seq_mean_ms = 0.297\n"
                  "[thr]\nthreads = 10\ncalibrate_from = seq\nmeasured.mean_ms "
                  "= 3.184\n");

    sim_scenario_set_init(&s);
    assert_int_equal(sim_scenario_load(&s, path, false, &err), 0);
    unlink(path);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.v[0].p.name, "seq");
    assert_int_equal(s.v[1].p.threads, 10);
    assert_int_equal(s.v[1].p.cores, 4);
    assert_int_equal(s.v[1].p.origin[sim_params_find("cores")],
                     SIM_OR_ASSUMPTION);
    assert_string_equal(s.v[1].p.note[sim_params_find("cores")],
                        "EC2 size unknown");
    assert_float_equal(s.v[0].cal_mean_ms, 0.297, 1e-12);
    assert_string_equal(s.v[1].cal_from, "seq");
    assert_float_equal(s.v[1].meas_mean_ms, 3.184, 1e-12);
    sim_scenario_set_free(&s);
}

/* A justification longer than the note buffer is cut where a UTF-8
 * character starts and ends with "...": the printed block shows that the
 * scenario file says more (its notes were cut mid-word). */
static void
test_sim_params_long_note_cut_visibly(void **state)
{
    struct sim_params p;
    char note[400], dst[16];
    size_t n;

    sim_params_default(&p);
    assert_int_equal(
        sim_params_set(&p, "cores", "4", SIM_OR_ASSUMPTION, "short", NULL), 0);
    assert_string_equal(p.note[sim_params_find("cores")], "short");
    memset(note, 'a', sizeof(note) - 1);
    note[sizeof(note) - 1] = '\0';
    assert_int_equal(
        sim_params_set(&p, "cores", "4", SIM_OR_ASSUMPTION, note, NULL), 0);
    n = strlen(p.note[sim_params_find("cores")]);
    assert_int_equal(n, SIM_NOTE_MAX - 1);
    assert_string_equal(p.note[sim_params_find("cores")] + n - 3, "...");
    /* exactly cap - 1 bytes fit whole */
    sim_note_copy(dst, sizeof(dst), "0123456789abcde");
    assert_string_equal(dst, "0123456789abcde");
    /* "\xc2\xb5" (micro sign) across the cut at byte 12: dropped whole */
    sim_note_copy(dst, sizeof(dst), "0123456789a\xc2\xb5s and more");
    assert_string_equal(dst, "0123456789a...");
    sim_note_copy(dst, sizeof(dst), NULL);
    assert_string_equal(dst, "");
}

static void
test_sim_scenario_errors_say_where(void **state)
{
    static const char *bad[] = {"threads = -3\n",      "nosuchkey = 1\n",
                                "cores = 2 [guess]\n", "[]\n",
                                "threads\n",           "runtime = java\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sim_scenario_set s;
        struct mt_err err = {0};
        char text[128];
        snprintf(text, sizeof(text), "# x\n%s", bad[i]);
        char *path = write_tmp(text);
        sim_scenario_set_init(&s);
        assert_int_equal(sim_scenario_load(&s, path, false, &err), MT_EUSAGE);
        assert_non_null(strstr(err.msg, ":2:"));
        unlink(path);
        sim_scenario_set_free(&s);
    }
}

static double
herd_total(int64_t procs, int lock)
{
    struct herd_params hp;
    struct herd_result hr;
    struct mt_err err = {0};
    char v[32];

    herd_params_default(&hp);
    snprintf(v, sizeof(v), "%lld", (long long)procs);
    assert_int_equal(
        herd_params_set(&hp, "procs", v, SIM_OR_SCENARIO, NULL, &err), 0);
    assert_int_equal(herd_params_set(&hp, "lock", lock ? "1" : "0",
                                     SIM_OR_SCENARIO, NULL, &err),
                     0);
    assert_int_equal(
        herd_params_set(&hp, "requests", "2000", SIM_OR_SCENARIO, NULL, &err),
        0);
    assert_int_equal(herd_run(&hp, &hr, &err), 0);
    return hr.total_s;
}

static void
hset_ok(struct herd_params *hp, const char *k, const char *v)
{
    struct mt_err err = {0};

    if (herd_params_set(hp, k, v, SIM_OR_SCENARIO, NULL, &err) != 0)
        fail_msg("herd.%s=%s: %s", k, v, err.msg);
}

/* The wake-up walk: one ab client, 10 requests, 8 workers, no sleeps, no
 * wake-up latency, no futile CPU, cores enough: each request is transit 20
 * + service 100 + transit 20 (140 us), and ab's work between two requests
 * is ab_cpu 50 plus walk_us 2 per sleeper the connection woke: all 8
 * without the lock, the lock holder only with it.  The last reply ends the
 * run: 10 x 140 + 9 x (50 + 8 x 2) = 1994 us; with the lock 9 x (50 + 2):
 * 1868 us; walk_us 0: 1850 us either way. */
static void
test_sim_herd_walk_paid_by_ab(void **state)
{
    struct herd_params hp;
    struct herd_result hr;
    struct mt_err err = {0};
    static const char *kv[][2] = {{"procs", "8"},        {"clients", "1"},
                                  {"requests", "10"},    {"cores", "64"},
                                  {"req_cpu_us", "100"}, {"futile_cpu_us", "0"},
                                  {"wake_us", "0"},      {"ab_cpu_us", "50"},
                                  {"net_us", "20"},      {"walk_us", "2"}};

    herd_params_default(&hp);
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        hset_ok(&hp, kv[i][0], kv[i][1]);
    assert_int_equal(herd_run(&hp, &hr, &err), 0);
    assert_float_equal(hr.total_s, 1994e-6, 1e-12);
    hset_ok(&hp, "lock", "1");
    assert_int_equal(herd_run(&hp, &hr, &err), 0);
    assert_float_equal(hr.total_s, 1868e-6, 1e-12);
    hset_ok(&hp, "walk_us", "0");
    assert_int_equal(herd_run(&hp, &hr, &err), 0);
    assert_float_equal(hr.total_s, 1850e-6, 1e-12);
    hset_ok(&hp, "lock", "0");
    assert_int_equal(herd_run(&hp, &hr, &err), 0);
    assert_float_equal(hr.total_s, 1850e-6, 1e-12);
}

static void
test_sim_herd_grows_with_procs_without_lock(void **state)
{
    double h16 = herd_total(16, 0), h512 = herd_total(512, 0);
    double l16 = herd_total(16, 1), l512 = herd_total(512, 1);

    assert_true(h512 > 3 * h16); /* every idle worker is woken per connection */
    assert_true(l512 < 1.5 * l16); /* the lock wakes one */
    assert_true(l512 < h512);
}

/*
 * Time slices (model.c cpu_enqueue, cpu_slice_us).  Three free-threaded
 * threads on two cores whose replies are always ready (every send is
 * preempted by the server, which runs at once on the sender's core, so no
 * recv blocks) never give a core up by themselves.  Without slices the
 * third thread waits, before its first call, until another thread has made
 * all its calls: no call ever waits inside, and every call takes the
 * one-thread time (0.16 ms here).  With the 0.75 ms base slice (x 2 on two
 * cores: 1.5 ms) a thread is sent to the back of the run queue mid-call
 * when its slice ends, and that call waits one slice of another thread.
 */
static void
test_sim_model_cpu_slice(void **state)
{
    struct sim_params p;
    struct sim_result r;
    struct sim_stats st;

    sim_params_default(&p); /* costs as measured on the 2-core test VM */
    set(&p, "runtime", "free-threaded");
    set(&p, "threads", "3");
    set(&p, "calls", "100");
    set(&p, "pool_initial", "3");
    set(&p, "cores", "2");
    set(&p, "py_call_us", "58.4");
    set(&p, "py_cv", "0");
    set(&p, "wake_us", "6.9");
    set(&p, "wake_cv", "0");
    set(&p, "ctx_cpu_us", "31.3");
    set(&p, "sys_us", "1.5");
    set(&p, "server_us", "50");
    set(&p, "server_cv", "0");
    set(&p, "server_cpu_frac", "0.7");
    set(&p, "send_preempt_p", "0");
    set(&p, "send_preempt_busy_p", "1");
    set(&p, "cpu_slice_us", "0");
    st = run(&p, &r);
    assert_true(st.max_ms < 0.2);
    assert_int_equal(r.slice_ends, 0);
    sim_result_free(&r);
    set(&p, "cpu_slice_us", "750");
    st = run(&p, &r);
    assert_true(st.max_ms > 1.5);
    assert_true(st.max_ms < 1.5 + 2 * 0.2);
    assert_true(r.slice_ends > 0);
    sim_result_free(&r);
}

/* cpu_pick 2: per-core run queues.  Free-threaded, 2 cores, 3
 * threads started 40 us apart, 2 calls each: a send (10 us), the reply
 * 1000 us later (no transit, no wake-up latency), the receive (10 us) and
 * 100 us of Python.  Call 1: every send runs on core 0 (t0 0-10, t1 40-50,
 * t2 80-90); t0's reply at 1010 takes core 0 (1010-1120), t1's at 1050
 * the idle core 1 (1050-1160), t2's at 1090 queues; at 1120 core 0 runs
 * it (1120-1230) and t0's next send (last core 0) queues: latencies 1120,
 * 1120, 1150.  At 1160 core 1 frees.  cpu_pick 1 (one queue): t0's send
 * takes it (1160-1170), t1's waits to 1170; call 2: t0 1160, t1 1130, t2
 * 1160; mean 6840 / 6 = 1140 us.  cpu_pick 2: t0 waits on core 0's queue
 * (it ran there 40 us ago, less than sched_migration_cost_us: cache-hot,
 * not pulled), t1's send takes core 1 at once; t0 sends at 1230 on core 0,
 * t2 on the idle core 1; call 2: t1 1120, t0 1230 (its reply at 2240),
 * t2 1160 (queued on core 1 behind t1 until 2280); mean 6900 / 6 = 1150
 * us.  A migration cost of 0 makes every queued job pullable: 1140 again.
 * A sequential run is the same with either. */
static void
test_sim_model_percore_queue(void **state)
{
    struct sim_params p;
    struct sim_result r;
    double base;

    (void)state;
    quiet_params(&p);
    set(&p, "runtime", "free-threaded");
    set(&p, "cores", "2");
    set(&p, "threads", "3");
    set(&p, "calls", "2");
    set(&p, "pool_initial", "3");
    set(&p, "releases", "2");
    set(&p, "py_pre_frac", "0");
    set(&p, "py_post_frac", "1");
    set(&p, "sys_us", "10");
    set(&p, "net_us", "0");
    set(&p, "wake_us", "0");
    set(&p, "thread_start_us", "40");
    set(&p, "server_us", "1000");
    set(&p, "server_cpu_frac", "0");
    set(&p, "cpu_pick", "1");
    assert_float_equal(run(&p, NULL).mean_ms, 1140 / 1e3, 1e-9);
    set(&p, "cpu_pick", "2");
    assert_float_equal(run(&p, &r).mean_ms, 1150 / 1e3, 1e-9);
    assert_int_equal(r.n, 6);
    assert_int_equal(r.lat_ns[4], 1230000); /* t0's second call */
    sim_result_free(&r);
    set(&p, "sched_migration_cost_us", "0");
    assert_float_equal(run(&p, NULL).mean_ms, 1140 / 1e3, 1e-9);

    quiet_params(&p); /* one thread under the GIL: nothing ever queues */
    set(&p, "calls", "50");
    set(&p, "cores", "2");
    set(&p, "cpu_pick", "1");
    base = run(&p, NULL).mean_ms;
    set(&p, "cpu_pick", "2");
    set(&p, "wake_busy_us", "1");
    set(&p, "ctx_busy_cpu_us", "1");
    assert_float_equal(run(&p, NULL).mean_ms, base, 1e-12);
}

/* wake_preempt (with cpu_pick 2): EEVDF wake-up preemption.
 * Free-threaded, one core, 2 threads started 50 us apart, one call each:
 * a 10 us send, the reply 1000 us later, a 10 us wake-up, a 10 us
 * receive, 100 us of Python.  t0 sends 0-10, is woken at 1020 and runs
 * 1020-1130 (latency 1130).  t1 sends 50-60, its reply comes at 1060 and
 * it is woken at 1070 with the core busy: off, it queues and runs
 * 1130-1240 (latency 1190; mean 1160); on, it switches t0 out (60 us of
 * t0's Python left), runs 1070-1180 (latency 1130), and t0 resumes first
 * when the core frees, 1180-1240 (latency 1240; mean 1185; one
 * preemption). */
static void
test_sim_model_wake_preempt(void **state)
{
    struct sim_params p;
    struct sim_result r;

    (void)state;
    quiet_params(&p);
    set(&p, "runtime", "free-threaded");
    set(&p, "cores", "1");
    set(&p, "threads", "2");
    set(&p, "calls", "1");
    set(&p, "pool_initial", "2");
    set(&p, "releases", "2");
    set(&p, "py_pre_frac", "0");
    set(&p, "py_post_frac", "1");
    set(&p, "sys_us", "10");
    set(&p, "net_us", "0");
    set(&p, "thread_start_us", "50");
    set(&p, "server_us", "1000");
    set(&p, "server_cpu_frac", "0");
    set(&p, "cpu_pick", "2");
    assert_float_equal(run(&p, NULL).mean_ms, 1160 / 1e3, 1e-9);
    set(&p, "wake_preempt", "1");
    assert_float_equal(run(&p, &r).mean_ms, 1185 / 1e3, 1e-9);
    assert_int_equal(r.wake_preempts, 1);
    assert_int_equal(r.lat_ns[0], 1130000); /* t1 first */
    assert_int_equal(r.lat_ns[1], 1240000);
    sim_result_free(&r);
    set(&p, "cpu_pick", "1"); /* needs cpu_pick 2 */
    assert_float_equal(run(&p, NULL).mean_ms, 1160 / 1e3, 1e-9);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_model_one_thread_is_the_sum_of_its_parts),
        cmocka_unit_test(test_sim_model_server_wake_in_trace),
        cmocka_unit_test(test_sim_model_one_core_is_a_fifo_mutex),
        cmocka_unit_test(test_sim_model_one_core_serves_in_arrival_order),
        cmocka_unit_test(test_sim_model_pool_opens_on_demand),
        cmocka_unit_test(test_sim_model_cpu_slice),
        cmocka_unit_test(test_sim_model_percore_queue),
        cmocka_unit_test(test_sim_model_wake_preempt),
        cmocka_unit_test(test_sim_model_background_load),
        cmocka_unit_test(test_sim_model_md1_queue_mean),
        cmocka_unit_test(test_sim_model_serial_go_sleep_overshoots),
        cmocka_unit_test(test_sim_model_deadline_inline),
        cmocka_unit_test(test_sim_model_same_seed_same_output),
        cmocka_unit_test(test_sim_model_gil_slower_than_free_threaded),
        cmocka_unit_test(test_sim_fit_recovers_sequential_mean),
        cmocka_unit_test(test_sim_fit_from_client_cpu),
        cmocka_unit_test(test_sim_scenario_sections_and_origins),
        cmocka_unit_test(test_sim_scenario_errors_say_where),
        cmocka_unit_test(test_sim_params_long_note_cut_visibly),
        cmocka_unit_test(test_sim_herd_grows_with_procs_without_lock),
        cmocka_unit_test(test_sim_herd_walk_paid_by_ab),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
