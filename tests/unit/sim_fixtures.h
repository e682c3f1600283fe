/*
 * sim_fixtures.h -- helpers shared by the simulator's unit tests
 * (test_sim_model.c, test_sim_model_gil.c, test_sim_model_idle.c,
 * test_sim_gil.c).  Include after <cmocka.h>.  static inline: a test file
 * need not use all of them.
 */
#ifndef MT_TEST_SIM_FIXTURES_H
#define MT_TEST_SIM_FIXTURES_H

#include "core/err.h"
#include "sim/model.h"
#include "sim/params.h"

/* Sets one parameter as a scenario file would; fails the test if refused. */
static inline void
set(struct sim_params *p, const char *k, const char *v)
{
    struct mt_err err = {0};
    int rc = sim_params_set(p, k, v, SIM_OR_SCENARIO, NULL, &err);
    if (rc != 0)
        fail_msg("set %s=%s: %s", k, v, err.msg);
}

/* Everything deterministic: no variation, no context-switch CPU. */
static inline void
quiet_params(struct sim_params *p)
{
    sim_params_default(p);
    set(p, "py_cv", "0");
    set(p, "wake_cv", "0");
    set(p, "server_cv", "0");
    set(p, "ctx_cpu_us", "0");
    set(p, "py_loop_us", "0");
    set(p, "py_call_us", "100");
    set(p, "sys_us", "5");
    set(p, "net_us", "2");
    set(p, "server_us", "50");
    set(p, "wake_us", "10");
    set(p, "gil_handoff_us", "10");
    set(p, "cores", "4");
}

/* One core shared by 4 free-threaded threads making one call each, all
 * Python after the reply (server 1000 us without CPU, no syscall or
 * network cost): the core is a FIFO mutex over the replies.  wake_us and
 * thread_start_us are the cases' variables. */
static inline void
fifo_mutex_params(struct sim_params *p, const char *wake_us,
                  const char *thread_start_us)
{
    quiet_params(p);
    set(p, "runtime", "free-threaded");
    set(p, "threads", "4");
    set(p, "calls", "1");
    set(p, "pool_initial", "4");
    set(p, "cores", "1");
    set(p, "py_pre_frac", "0");
    set(p, "py_post_frac", "1");
    set(p, "sys_us", "0");
    set(p, "net_us", "0");
    set(p, "wake_us", wake_us);
    set(p, "thread_start_us", thread_start_us);
    set(p, "server_us", "1000");
    set(p, "server_cpu_frac", "0");
}

/* Runs the model; returns the latency statistics and, if keep is not NULL,
 * hands the result over to the caller (who frees it). */
static inline struct sim_stats
run(const struct sim_params *p, struct sim_result *keep)
{
    struct sim_result r;
    struct sim_stats st;
    struct mt_err err = {0};

    if (sim_model_run(p, &r, &err) != 0)
        fail_msg("sim_model_run: %s", err.msg);
    assert_int_equal(sim_stats_compute(r.lat_ns, r.n, &st), 0);
    if (keep)
        *keep = r;
    else
        sim_result_free(&r);
    return st;
}

#endif
