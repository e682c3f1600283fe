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

int
sim_fit_seq(struct sim_params *p, const struct sim_params *seq,
            const struct sim_fit_in *in, struct mt_err *err)
{
    struct sim_params s = *seq;
    int ic = sim_params_find("py_call_us"), iv = sim_params_find("py_cv");
    double py, own = (double)p->releases * p->sys_us + p->ctx_cpu_us;

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
    } else {
        return 0;
    }
    p->origin[ic] = SIM_OR_CALIBRATED;
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
