/*
 * sim_fixtures.h -- helpers shared by the simulator's unit tests
 * (test_sim_model.c, test_sim_predict.c).  Include after <cmocka.h>.
 * static inline: a test file need not use all of them.
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

/* Everything deterministic: no spread, no wake-up latency, no switch-in
 * CPU, no extra CPU on another core; py 120 us, sys 5 us, server 50 us,
 * 4 cores. */
static inline void
quiet_params(struct sim_params *p)
{
    sim_params_default(p);
    set(p, "py_cv", "0");
    set(p, "server_cv", "0");
    set(p, "ctx_cpu_us", "0");
    set(p, "wake_us", "0");
    set(p, "gil_handoff_us", "0");
    set(p, "lock_block_cpu_us", "0");
    set(p, "xcore_frac", "0");
    set(p, "py_call_us", "120");
    set(p, "sys_us", "5");
    set(p, "server_us", "50");
    set(p, "cores", "4");
}

/* Runs p; fails the test on error.  The caller frees res. */
static inline void
run(const struct sim_params *p, struct sim_result *res)
{
    struct mt_err err = {0};
    int rc = sim_model_run(p, res, &err);
    if (rc != 0)
        fail_msg("sim_model_run: %d %s", rc, err.msg);
}

static inline double
mean_us(const struct sim_result *res)
{
    double s = 0;
    for (size_t i = 0; i < res->n; i++)
        s += (double)res->lat_ns[i];
    return res->n ? s / (double)res->n / 1000.0 : 0;
}

#endif
