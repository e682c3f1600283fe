/*
 * fit.c -- solve py_call_us and py_cv from a sequential run (fit.h).
 */
#include "fit.h"

#include <math.h>
#include <stdio.h>

#include "model.h"

static int
seq_stats(const struct sim_params *p, struct sim_stats *st, struct mt_err *err)
{
    struct sim_result r;
    int rc = sim_model_run(p, &r, err);

    if (rc < 0)
        return rc;
    rc = sim_stats_compute(r.lat_ns, r.n, st);
    sim_result_free(&r);
    return rc < 0 ? mt_err_set(err, rc, 0, "fit: out of memory") : 0;
}

/* Round 11: the sequential model's client wake-ups onto an idle core per
 * call (each pays idle_wake_cpu_us) at the current py_call_us; round 15:
 * and its preempted sends per call (each saves send_preempt_cpu_us). */
static int
seq_idle_wakes(const struct sim_params *p, double *per_call,
               double *preempts_per_call, struct mt_err *err)
{
    struct sim_result r;
    int rc = sim_model_run(p, &r, err);

    if (rc < 0)
        return rc;
    *per_call = (double)r.idle_wakes / ((double)p->threads * (double)p->calls);
    *preempts_per_call =
        (double)r.send_preempts / ((double)p->threads * (double)p->calls);
    sim_result_free(&r);
    return 0;
}

static int
fit_mean(struct sim_params *p, double target_ms, struct mt_err *err)
{
    struct sim_stats st;
    double x0 = 0, f0, x1, f1;
    int rc;

    p->py_call_us = 0;
    if ((rc = seq_stats(p, &st, err)) < 0)
        return rc;
    f0 = st.mean_ms;
    if (f0 >= target_ms)
        return mt_err_set(
            err, MT_EUSAGE, 0,
            "calibration: without any Python CPU the model already takes "
            "%.4f ms > measured %.4f ms; check the host facts and server time",
            f0, target_ms);
    x1 = (target_ms - f0) * 1000.0;
    for (int i = 0; i < 12; i++) {
        p->py_call_us = x1;
        if ((rc = seq_stats(p, &st, err)) < 0)
            return rc;
        f1 = st.mean_ms;
        if (fabs(f1 - target_ms) <= 1e-4 * target_ms)
            break;
        double slope = (f1 - f0) / (x1 - x0);
        double nx = slope > 1e-9 ? x1 + (target_ms - f1) / slope
                                 : x1 + (target_ms - f1) * 1000.0;
        x0 = x1;
        f0 = f1;
        x1 = nx < 0 ? 0 : nx;
    }
    p->py_call_us = x1;
    return 0;
}

static int
fit_cv(struct sim_params *p, double target_pct, struct mt_err *err)
{
    struct sim_stats st;
    double lo = 0, hi = 3;
    int rc;

    p->py_cv = 0;
    if ((rc = seq_stats(p, &st, err)) < 0)
        return rc;
    if (st.stdev_pct >= target_pct)
        return 0; /* other noise already accounts for it */
    for (int i = 0; i < 20; i++) {
        p->py_cv = (lo + hi) / 2;
        if ((rc = seq_stats(p, &st, err)) < 0)
            return rc;
        if (st.stdev_pct < target_pct)
            lo = p->py_cv;
        else
            hi = p->py_cv;
    }
    p->py_cv = (lo + hi) / 2;
    return 0;
}

int
sim_fit_seq_cpu(struct sim_params *p, double cpu_us, double stdev_pct,
                struct mt_err *err)
{
    char note[SIM_NOTE_MAX];
    int i_call = sim_params_find("py_call_us"), i_cv = sim_params_find("py_cv");
    double base =
        (double)p->releases * p->sys_us + p->ctx_cpu_us + p->py_loop_us;
    double other = base, idle = 0, pre = 0;
    int rc;

    if (p->threads != 1)
        return mt_err_set(
            err, MT_EUSAGE, 0,
            "calibration needs a sequential scenario (threads = 1), not %lld",
            (long long)p->threads);
    if (cpu_us <= other)
        return mt_err_set(err, MT_EUSAGE, 0,
                          "calibration: client CPU %.2f us per call does not "
                          "cover the model's own %.2f us (syscalls, wake-up)",
                          cpu_us, other);
    p->py_call_us =
        (cpu_us - other) / (p->runtime == SIM_RT_FREE ? p->ft_slowdown : 1.0);
    /* Round 11: the sequential run paid idle_wake_cpu_us at each wake-up
     * onto an idle core; count them in the model (they hardly depend on
     * py_call_us: twice is enough) and leave that CPU out of Python's.
     * Round 15: its preempted sends did not pay send_preempt_cpu_us, which
     * the model takes off their Python: add it back. */
    for (int i = 0;
         i < 2 && (p->idle_wake_cpu_us > 0 || p->send_preempt_cpu_us > 0);
         i++) {
        if ((rc = seq_idle_wakes(p, &idle, &pre, err)) < 0)
            return rc;
        other =
            base + idle * p->idle_wake_cpu_us - pre * p->send_preempt_cpu_us;
        if (cpu_us <= other)
            return mt_err_set(err, MT_EUSAGE, 0,
                              "calibration: client CPU %.2f us per call does "
                              "not cover the model's own %.2f us (syscalls, "
                              "wake-ups, %.2f idle wake-ups)",
                              cpu_us, other, idle);
        p->py_call_us = (cpu_us - other) /
                        (p->runtime == SIM_RT_FREE ? p->ft_slowdown : 1.0);
    }
    if (!isnan(stdev_pct)) {
        if ((rc = fit_cv(p, stdev_pct, err)) < 0)
            return rc;
        snprintf(note, sizeof(note), "solved so the sequential stdev is %.2f%%",
                 stdev_pct);
        p->origin[i_cv] = SIM_OR_CALIBRATED;
        snprintf(p->note[i_cv], SIM_NOTE_MAX, "%s", note);
    }
    if (idle > 0 || pre > 0)
        snprintf(note, sizeof(note),
                 "sequential client CPU %.2f us/call less %.2f us of syscall "
                 "and wake-up CPU (%.2f idle wake-ups/call, %.2f preempted "
                 "sends/call)",
                 cpu_us, other, idle, pre);
    else
        snprintf(note, sizeof(note),
                 "sequential client CPU %.2f us/call less %.2f us of syscall "
                 "and wake-up CPU",
                 cpu_us, other);
    p->origin[i_call] = SIM_OR_CALIBRATED;
    snprintf(p->note[i_call], SIM_NOTE_MAX, "%s", note);
    return 0;
}

int
sim_fit_cv_cpu(struct sim_params *p, double cpu_us, double cpu_cv,
               struct mt_err *err)
{
    int i_cv = sim_params_find("py_cv");
    double mids = (double)(p->releases - 1), ss, mid;

    if (!(cpu_cv >= 0) || p->py_call_us <= 0 || mids < 1)
        return mt_err_set(err, MT_EUSAGE, 0,
                          "calibration: client CPU cv %g (needs >= 0) or no "
                          "Python CPU to vary",
                          cpu_cv);
    mid = fmax(0.0, (1.0 - p->py_pre_frac - p->py_post_frac) / mids);
    ss = p->py_pre_frac * p->py_pre_frac + p->py_post_frac * p->py_post_frac +
         mids * mid * mid;
    if (ss <= 0)
        ss = 1;
    p->py_cv = fmin(10.0, cpu_cv * cpu_us / (p->py_call_us * sqrt(ss)));
    p->origin[i_cv] = SIM_OR_CALIBRATED;
    snprintf(p->note[i_cv], SIM_NOTE_MAX,
             "from the sequential client CPU's cv %.3f per call (segments "
             "independent: x cpu / (py_call_us sqrt(sum of shares^2)))",
             cpu_cv);
    return 0;
}

int
sim_fit_seq(struct sim_params *p, double mean_ms, double stdev_pct,
            struct mt_err *err)
{
    char note[SIM_NOTE_MAX];
    int rc;
    int i_call = sim_params_find("py_call_us"), i_cv = sim_params_find("py_cv");

    if (p->threads != 1)
        return mt_err_set(
            err, MT_EUSAGE, 0,
            "calibration needs a sequential scenario (threads = 1), not %lld",
            (long long)p->threads);
    if ((rc = fit_mean(p, mean_ms, err)) < 0)
        return rc;
    if (!isnan(stdev_pct)) {
        if ((rc = fit_cv(p, stdev_pct, err)) < 0)
            return rc;
        if ((rc = fit_mean(p, mean_ms, err)) <
            0) /* cv moves the mean a little */
            return rc;
        snprintf(note, sizeof(note), "solved so the sequential stdev is %.2f%%",
                 stdev_pct);
        p->origin[i_cv] = SIM_OR_CALIBRATED;
        snprintf(p->note[i_cv], SIM_NOTE_MAX, "%s", note);
    }
    snprintf(note, sizeof(note), "solved so the sequential mean is %.4f ms",
             mean_ms);
    p->origin[i_call] = SIM_OR_CALIBRATED;
    snprintf(p->note[i_call], SIM_NOTE_MAX, "%s", note);
    return 0;
}
