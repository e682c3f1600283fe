/*
 * bench_sim.c -- events per second of mtrace sim's event engine and of the
 * full contention model, per second of this thread's CPU time (the machine
 * may be shared; clocks are read here only, never in sim/).
 *
 *   engine hold: the classic "hold" benchmark of event-set algorithms: a
 *     heap of N pending events; pop the earliest, push one at now + Exp(1 us).
 *   model: seed 000's GIL threaded scenario (10 threads x 100 calls) run
 *     repeatedly; events processed / time.
 * Usage: bench_sim [--seconds S]   (default 1 s per measurement)
 * Target: >= 10 M events/s on one core.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "core/clock.h"
#include "sim/engine.h"
#include "sim/model.h"
#include "sim/params.h"
#include "sim/predict.h"
#include "core/rng.h"

/* CPU time of this thread: the machine is shared, "one core" is what counts. */
static uint64_t
cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define NDELTA 4096

static double
hold(size_t n, double seconds)
{
    struct sim_engine e;
    struct mt_rng r;
    struct sim_ev ev;
    uint64_t t0, done = 0, deadline;
    static uint64_t delta[NDELTA]; /* exponential, mean 1 us: drawn up front */

    if (sim_engine_init(&e, n + 1) != 0)
        return 0;
    mt_rng_seed(&r, 1);
    for (size_t i = 0; i < NDELTA; i++)
        delta[i] = (uint64_t)mt_rng_exp(&r, 1000.0) + 1;
    for (size_t i = 0; i < n; i++)
        sim_engine_push(&e, delta[i % NDELTA], 0, (uint32_t)i, 0);
    t0 = cpu_ns();
    deadline = t0 + (uint64_t)(seconds * 1e9);
    for (;;) {
        for (int k = 0; k < 100000; k++) {
            sim_engine_pop(&e, &ev);
            sim_engine_after(&e, delta[k % NDELTA], 0, ev.id, 0);
        }
        done += 100000;
        if (cpu_ns() >= deadline)
            break;
    }
    double rate = (double)done / ((double)(cpu_ns() - t0) / 1e9);
    sim_engine_free(&e);
    return rate;
}

static double
model(double seconds, int threads)
{
    struct sim_params p;
    struct sim_result res;
    uint64_t t0 = cpu_ns(), events = 0;
    char v[16];

    sim_params_default(&p);
    snprintf(v, sizeof(v), "%d", threads);
    sim_params_set(&p, "threads", v, SIM_OR_CLI, NULL, NULL);
    sim_params_set(&p, "calls", "100", SIM_OR_CLI, NULL, NULL);
    while (cpu_ns() - t0 < (uint64_t)(seconds * 1e9)) {
        if (sim_model_run(&p, &res, NULL) != 0)
            return 0;
        events += res.events;
        sim_result_free(&res);
        p.seed++;
    }
    return (double)events / ((double)(cpu_ns() - t0) / 1e9);
}

/* The what-if sweep: 40 points (runtime 2 x threads 2,4,10,20,40 x delay
 * 0,0.5,1,2), each a prediction of 10 seeds; CPU seconds for all. */
static double
sweep_cpu_s(void)
{
    static const char *const thr[] = {"2", "4", "10", "20", "40"};
    static const char *const dly[] = {"0", "0.5", "1", "2"};
    uint64_t t0 = cpu_ns();

    for (int rt = 0; rt < 2; rt++)
        for (size_t t = 0; t < 5; t++)
            for (size_t d = 0; d < 4; d++) {
                struct sim_params p;
                const struct sim_params *cal[1] = {&p};
                struct sim_pred pr;

                sim_params_default(&p);
                sim_params_set(&p, "runtime", rt ? "free-threaded" : "gil",
                               SIM_OR_CLI, NULL, NULL);
                sim_params_set(&p, "threads", thr[t], SIM_OR_CLI, NULL, NULL);
                sim_params_set(&p, "proxy", "deadline", SIM_OR_CLI, NULL, NULL);
                sim_params_set(&p, "proxy_delay_ms", dly[d], SIM_OR_CLI, NULL,
                               NULL);
                sim_params_set(&p, "lock_sections", "4", SIM_OR_CLI, NULL,
                               NULL);
                sim_params_set(&p, "lock_hold_us", "5", SIM_OR_CLI, NULL, NULL);
                if (sim_predict(cal, 1, &pr, NULL) != 0)
                    return -1;
                sim_pred_free(&pr);
            }
    return (double)(cpu_ns() - t0) / 1e9;
}

int
main(int argc, char **argv)
{
    double s = 1.0;

    if (argc == 3 && strcmp(argv[1], "--seconds") == 0)
        s = strtod(argv[2], NULL);
    printf("%-36s %14s\n", "measurement", "M events/CPU-s");
    for (size_t n = 10; n <= 100000; n *= 10) {
        char name[64];
        snprintf(name, sizeof(name), "engine hold, %zu pending", n);
        printf("%-36s %14.1f\n", name, hold(n, s) / 1e6);
    }
    printf("%-36s %14.1f\n", "model, GIL, 10 threads x 100 calls",
           model(s, 10) / 1e6);
    printf("%-36s %14.1f\n", "model, GIL, 100 threads x 100 calls",
           model(s, 100) / 1e6);
    printf("%-36s %14.3f\n", "40-point sweep x 10 seeds (CPU s)",
           sweep_cpu_s());
    return 0;
}
