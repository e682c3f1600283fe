/*
 * predict.c -- operational-law bounds and the distribution of a
 * prediction over seeds and calibrations.
 */
#include "predict.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

static const char *const res_names[SIM_RES__N] = {"gil", "cores", "lock",
                                                  "pool"};

const char *
sim_res_name(int res)
{
    return res >= 0 && res < SIM_RES__N ? res_names[res] : "delay";
}

void
sim_bound_compute(const struct sim_params *p, struct sim_bound *b)
{
    double cpu =
        p->py_call_us + (double)p->releases * p->sys_us + p->ctx_cpu_us;
    double n = (double)p->threads, dmax = 0, x;
    int arg = SIM_RES_GIL;

    memset(b, 0, sizeof(*b));
    b->r0_us = cpu + p->wake_us + sim_model_server_mean_us(p);
    b->demand_us[SIM_RES_GIL] = p->runtime == SIM_RT_GIL ? p->py_call_us : 0;
    b->demand_us[SIM_RES_CORES] = cpu / (double)p->cores;
    b->demand_us[SIM_RES_LOCK] = (double)p->lock_sections * p->lock_hold_us;
    b->demand_us[SIM_RES_POOL] = b->r0_us / (double)p->pool_max;
    for (int k = 0; k < SIM_RES__N; k++)
        if (b->demand_us[k] > dmax) {
            dmax = b->demand_us[k];
            arg = k;
        }
    x = b->r0_us > 0 ? n / b->r0_us : 0;
    if (dmax > 0 && 1.0 / dmax < x)
        x = 1.0 / dmax;
    b->x_max_per_s = x * 1e6;
    b->r_min_us = n * dmax > b->r0_us ? n * dmax : b->r0_us;
    for (int k = 0; k < SIM_RES__N; k++)
        b->util[k] = x * b->demand_us[k];
    b->binding = n * dmax > b->r0_us ? arg : SIM_BIND_DELAY;
}

static int
cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank quantile of v[0..n) sorted in place. */
static double
quant(double *v, size_t n, double q)
{
    size_t k = (size_t)ceil(q * (double)n);

    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

static struct sim_dist
dist_of(double *v, size_t n)
{
    struct sim_dist d;

    qsort(v, n, sizeof(*v), cmp_dbl);
    d.mid = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    d.lo = quant(v, n, 0.05);
    d.hi = quant(v, n, 0.95);
    return d;
}

enum {
    V_MEAN,
    V_SD,
    V_P50,
    V_P99,
    V_UG,
    V_UC,
    V_UL,
    V_UP,
    V_LB,
    V_SW,
    V_XC,
    V_CPU,
    V_SLEEP,
    V_N
};

int
sim_predict(const struct sim_params *const *cal, size_t ncal,
            struct sim_pred *out, struct mt_err *err)
{
    size_t seeds = (size_t)cal[0]->seeds, runs = ncal * seeds, r = 0;
    double *v = mt_calloc(runs * V_N, sizeof(*v));
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (v == NULL)
        return -ENOMEM;
    sim_bound_compute(cal[0], &out->bound);
    for (size_t c = 0; c < ncal && rc == 0; c++)
        for (size_t k = 0; k < seeds; k++, r++) {
            struct sim_params p = *cal[c];
            struct sim_result res;
            struct sim_stats st;
            double calls;

            p.seed = cal[0]->seed + (int64_t)k;
            rc = sim_model_run(&p, &res, err);
            if (rc == 0)
                rc = sim_stats_compute(res.lat_ns, res.n, &st);
            if (rc != 0) {
                sim_result_free(&res);
                break;
            }
            calls = res.calls > 0 ? (double)res.calls : 1;
            v[V_MEAN * runs + r] = st.mean_ms;
            v[V_SD * runs + r] = st.stdev_pct;
            v[V_P50 * runs + r] = st.p50_ms;
            v[V_P99 * runs + r] = st.p99_ms;
            v[V_UG * runs + r] = res.util_gil;
            v[V_UC * runs + r] = res.util_cores;
            v[V_UL * runs + r] = res.util_lock;
            v[V_UP * runs + r] = res.util_pool;
            v[V_LB * runs + r] = (double)res.lock_blocks / calls;
            v[V_SW * runs + r] = (double)res.gil_switches / calls;
            v[V_XC * runs + r] = (double)res.xcore_segments / calls;
            v[V_SLEEP * runs + r] = (double)res.sleeps / calls;
            v[V_CPU * runs + r] = res.util_cores * (double)p.cores *
                                  (double)res.end_ns / 1000.0 / calls;
            out->events += res.events;
            if (r == 0)
                out->first = res;
            else
                sim_result_free(&res);
        }
    if (rc == 0) {
        out->runs = runs;
        out->mean_ms = dist_of(v + V_MEAN * runs, runs);
        out->stdev_pct = dist_of(v + V_SD * runs, runs);
        out->p50_ms = dist_of(v + V_P50 * runs, runs);
        out->p99_ms = dist_of(v + V_P99 * runs, runs);
        for (int k = 0; k < SIM_RES__N; k++)
            out->util[k] = dist_of(v + (V_UG + k) * runs, runs).mid;
        out->lock_blocks_per_call = dist_of(v + V_LB * runs, runs).mid;
        out->gil_switches_per_call = dist_of(v + V_SW * runs, runs).mid;
        out->xcore_per_call = dist_of(v + V_XC * runs, runs).mid;
        out->cpu_us_per_call = dist_of(v + V_CPU * runs, runs).mid;
        out->sleeps_per_call = dist_of(v + V_SLEEP * runs, runs).mid;
    }
    mt_free(v);
    if (rc != 0)
        sim_pred_free(out);
    return rc;
}

void
sim_pred_free(struct sim_pred *pr)
{
    if (pr == NULL)
        return;
    sim_result_free(&pr->first);
}
