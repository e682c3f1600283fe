/*
 * fit.c -- calibration from a sequential run (fit.h).
 */
#include "fit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

static double
overhead_us(const struct sim_params *p)
{
    return (double)p->releases * p->sys_us + p->ctx_cpu_us + p->wake_us +
           sim_model_server_mean_us(p);
}

double
sim_fit_seq_mean_ms(const struct sim_params *p)
{
    return (p->py_call_us + overhead_us(p)) / 1000.0;
}

/* The idle curve of p from in's CPU per call at several delays (fit.h);
 * *py gets the smallest delay's py_call_us, *d0 that delay. */
static int
idle_curve(struct sim_params *p, const struct sim_params *s,
           const struct sim_fit_in *in, double own, double *py, double *d0,
           struct mt_err *err)
{
    size_t n = in->at_n, ord[SIM_IDLE_MAX];

    if (n > SIM_IDLE_MAX)
        return mt_err_set(err, MT_EUSAGE, 0, "--seq-cpu-at: at most %d delays",
                          SIM_IDLE_MAX);
    for (size_t i = 0; i < n; i++) { /* by delay */
        size_t j = i;
        while (j > 0 && in->at_delay_ms[ord[j - 1]] > in->at_delay_ms[i]) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = i;
    }
    for (size_t k = 0; k < n; k++) {
        struct sim_params q = *s;
        double c = in->at_cpu_us[ord[k]], d = in->at_delay_ms[ord[k]];

        if (k > 0 && !(d > in->at_delay_ms[ord[k - 1]]))
            return mt_err_set(err, MT_EUSAGE, 0,
                              "--seq-cpu-at: delay %g ms given twice", d);
        if (!(c > own))
            return mt_err_set(err, MT_EUSAGE, 0,
                              "--seq-cpu-at: the CPU per call %.1f us at "
                              "%g ms is not more than releases * sys_us + "
                              "ctx_cpu_us = %.1f us",
                              c, d, own);
        q.proxy_delay_ms = d;
        p->idle_gap_us[k] = sim_model_server_mean_us(&q) + p->wake_us;
        if (k == 0) {
            *py = c - own;
            *d0 = d;
            p->idle_frac[k] = 0;
        } else {
            p->idle_frac[k] = (c - own) / *py - 1;
            if (p->idle_frac[k] < 0)
                p->idle_frac[k] = 0;
        }
    }
    p->idle_n = (int64_t)n;
    return 0;
}

int
sim_fit_seq(struct sim_params *p, const struct sim_params *seq,
            const struct sim_fit_in *in, struct mt_err *err)
{
    struct sim_params s = *seq;
    int ic = sim_params_find("py_call_us"), iv = sim_params_find("py_cv");
    double py = 0, own = (double)p->releases * p->sys_us + p->ctx_cpu_us;
    int rc;

    /* the host facts and workload facts are p's; the setup is seq's */
    s.releases = p->releases;
    s.sys_us = p->sys_us;
    s.ctx_cpu_us = p->ctx_cpu_us;
    s.wake_us = p->wake_us;
    if (!isnan(in->cpu_us)) {
        py = in->cpu_us - own;
        if (!(py > 0))
            return mt_err_set(err, MT_EUSAGE, 0,
                              "the sequential CPU per call %.1f us is not "
                              "more than releases * sys_us + ctx_cpu_us = "
                              "%.1f us: check the host facts",
                              in->cpu_us, own);
        snprintf(p->note[ic], SIM_NOTE_MAX,
                 "sequential client CPU %.2f us per call - %lld x sys_us - "
                 "ctx_cpu_us",
                 in->cpu_us, (long long)p->releases);
    } else if (!isnan(in->mean_ms)) {
        py = in->mean_ms * 1000.0 - overhead_us(&s);
        if (!(py > 0))
            return mt_err_set(err, MT_EUSAGE, 0,
                              "the sequential mean %.4f ms is not more than "
                              "the host facts and the server already take "
                              "(%.1f us): check --host and --trace",
                              in->mean_ms, overhead_us(&s));
        snprintf(p->note[ic], SIM_NOTE_MAX,
                 "solved so the sequential mean is %.4f ms", in->mean_ms);
    } else if (in->at_n == 0) {
        return 0;
    }
    p->origin[ic] = SIM_OR_CALIBRATED;
    p->idle_n = 0;
    if (in->at_n > 0) {
        double d0 = 0;

        if ((rc = idle_curve(p, &s, in, own, &py, &d0, err)) != 0)
            return rc;
        snprintf(p->note[ic], SIM_NOTE_MAX,
                 "sequential client CPU %.2f us per call at delay %g ms - "
                 "%lld x sys_us - ctx_cpu_us; idle curve from %zu delays",
                 py + own, d0, (long long)p->releases, in->at_n);
    }
    if (!isnan(in->xcore_cpu_us)) {
        int ix = sim_params_find("xcore_frac");
        /* the sequential CPU per call, as py_call_us came from it */
        double u = !isnan(in->pinned_cpu_us) ? in->pinned_cpu_us : py + own;

        if (!(u > own))
            return mt_err_set(err, MT_EUSAGE, 0,
                              "--seq-pinned-cpu-us %.1f is not more than "
                              "releases * sys_us + ctx_cpu_us = %.1f us",
                              u, own);
        p->xcore_frac =
            in->xcore_cpu_us > u ? (in->xcore_cpu_us - u) / (u - own) : 0.0;
        p->origin[ix] = SIM_OR_CALIBRATED;
        snprintf(p->note[ix], SIM_NOTE_MAX,
                 "%.2f us per call, its segments on alternating cores, "
                 "against %.2f on one (%s), less the syscalls' and switch-in",
                 in->xcore_cpu_us, u,
                 !isnan(in->pinned_cpu_us) ? "interleaved" : "sequential");
    }
    if (p->runtime == SIM_RT_FREE && seq->runtime != SIM_RT_FREE) {
        py *= p->ft_slowdown;
        snprintf(p->note[ic] + strlen(p->note[ic]),
                 SIM_NOTE_MAX - strlen(p->note[ic]), ", x ft_slowdown");
    }
    p->py_call_us = py;
    if (!isnan(in->cpu_cv) && !isnan(in->cpu_us)) {
        p->py_cv = in->cpu_cv * in->cpu_us / (in->cpu_us - own);
        p->origin[iv] = SIM_OR_CALIBRATED;
        snprintf(p->note[iv], SIM_NOTE_MAX,
                 "the sequential client CPU's cv %.3f, as a share of "
                 "py_call_us",
                 in->cpu_cv);
    } else if (!isnan(in->stdev_pct) && !isnan(in->mean_ms)) {
        double sd = in->stdev_pct / 100.0 * in->mean_ms * 1000.0;
        double var = sd * sd - sim_model_server_var_us2(&s);

        p->py_cv = var > 0
                       ? sqrt(var) / (py / (p->runtime == SIM_RT_FREE &&
                                                    seq->runtime != SIM_RT_FREE
                                                ? p->ft_slowdown
                                                : 1.0))
                       : 0;
        if (p->py_cv > 10)
            p->py_cv = 10;
        p->origin[iv] = SIM_OR_CALIBRATED;
        snprintf(p->note[iv], SIM_NOTE_MAX,
                 "solved from the sequential stdev %.2f%% less the "
                 "server's",
                 in->stdev_pct);
    }
    return 0;
}
