/*
 * calibrate_idle.c -- the CPU an idle (halted) CPU costs the thread it
 * wakes for, against an idle CPU that polls (mtrace calibrate --idle-ab;
 * round 11), and how busy the host is (moved from calibrate.c).  See
 * calibrate_idle.h.
 *
 * Why: on this Firecracker VM (cpuidle haltpoll, guest_halt_poll_ns 0) an
 * idle vCPU halts at once, and the sequential pymongo client's CPU per
 * call is ~60 us higher than with a PM QoS request of 0 held (200 against
 * 138 us, docs/sim-model.md table 1 and sim-history.md round 9): a cost
 * per idle period, which threaded runs whose CPUs seldom idle avoid.  The
 * model charges it per wake-up onto an idle core (idle_wake_cpu_us) and
 * the sequential calibration subtracts what the sequential run paid.
 */
#include "calibrate_idle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/pmqos.h"

static int
cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One run of the loop: its CPU per iteration and switches; 0 or -1. */
static int
idle_loop(const char *python, const char *script, double *cpu, double *vcsw)
{
    char cmd[1200], line[256], key[64], val[64];
    FILE *f;
    int got = 0;

    snprintf(cmd, sizeof(cmd), "'%s' '%s' --idle-loop 2>/dev/null", python,
             script);
    if ((f = popen(cmd, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%63s %63s", key, val) != 2)
            continue;
        if (strcmp(key, "idle_loop_cpu_us") == 0)
            *cpu = strtod(val, NULL), got++;
        else if (strcmp(key, "idle_loop_vcsw") == 0)
            *vcsw = strtod(val, NULL), got++;
    }
    return pclose(f) == 0 && got == 2 && *cpu > 0 ? 0 : -1;
}

int
sim_calibrate_idle(const char *python, const char *script,
                   struct sim_cal_idle *r)
{
    double h[SIM_CAL_IDLE_PAIRS], p[SIM_CAL_IDLE_PAIRS], d[SIM_CAL_IDLE_PAIRS];
    double vh[SIM_CAL_IDLE_PAIRS], vp[SIM_CAL_IDLE_PAIRS];
    struct pmqos q;
    struct mt_err err = {0};
    int n = 0, rc;

    memset(r, 0, sizeof(*r));
    if (pmqos_current(&r->held_before) < 0)
        r->held_before = -1;
    pmqos_init(&q);
    for (n = 0; n < SIM_CAL_IDLE_PAIRS; n++) {
        if (idle_loop(python, script, &h[n], &vh[n]) < 0) {
            snprintf(r->why, sizeof(r->why),
                     "%s %s --idle-loop failed "
                     "(fewer than 2 CPUs, or no fork)",
                     python, script);
            return -1;
        }
        if ((rc = pmqos_hold(&q, 0, &err)) < 0) {
            snprintf(r->why, sizeof(r->why), "no PM QoS request: %s",
                     err.msg[0] ? err.msg : "cannot open " PMQOS_DEV);
            return -1;
        }
        rc = idle_loop(python, script, &p[n], &vp[n]);
        pmqos_release(&q);
        if (rc < 0) {
            snprintf(r->why, sizeof(r->why),
                     "%s --idle-loop failed with "
                     "the request held",
                     python);
            return -1;
        }
        d[n] = h[n] - p[n];
    }
    r->pairs = n;
    r->diff_us = median(d, n); /* sorts d */
    r->diff_lo = d[0];
    r->diff_hi = d[n - 1];
    r->halt_us = median(h, n);
    r->poll_us = median(p, n);
    r->vcsw_halt = median(vh, n);
    r->vcsw_poll = median(vp, n);
    return 0;
}

void
sim_calibrate_idle_print(FILE *out, const struct sim_cal_idle *r,
                         const char *python)
{
    if (r->pairs == 0) {
        fprintf(out,
                "# idle_wake_cpu_us not measured (%s); mtrace "
                "calibrate --idle-ab measures it\n",
                r->why[0] ? r->why : "no --idle-ab");
        return;
    }
    /* A comment, not a host fact: the rule is off by default (round 11:
     * with this figure it made the threaded rows worse on every kept
     * halting data set, docs/sim-history.md); --set applies it. */
    fprintf(out,
            "# idle_wake_cpu_us = %.3f (measured; not applied: --set "
            "idle_wake_cpu_us=X, round 11) %s: extra thread CPU of a "
            "loop iteration (Python, a blocking socket round trip to an echo "
            "process on the other CPU that spins 50 us, Python; one idle "
            "period of its CPU per iteration) with idle CPUs left to halt "
            "over with a PM QoS request of 0 held; median of %d alternating "
            "pairs (range %.1f..%.1f)%s\n",
            fmax(r->diff_us, 0.0), python, r->pairs, r->diff_lo, r->diff_hi,
            r->diff_us < 0 ? "; measured below 0, written as 0" : "");
    fprintf(out,
            "# idle periods, the same run: loop CPU per iteration %.1f us "
            "halting, %.1f polling; voluntary switches per iteration %.2f / "
            "%.2f; PM QoS bound before the run %d us%s\n",
            r->halt_us, r->poll_us, r->vcsw_halt, r->vcsw_poll, r->held_before,
            r->held_before == 0 ? " (already 0: both phases polled, so ~0 "
                                  "is expected)"
                                : "");
}

/* busy and total jiffies of all CPUs, and their count, from /proc/stat */
static int
cpu_jiffies(double *busy, double *total, int *ncpu)
{
    char line[512];
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");

    if (f == NULL)
        return -1;
    *ncpu = 0;
    *busy = *total = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "cpu ", 4) == 0 &&
            sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
            /* user nice system idle iowait irq softirq steal */
            *busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]);
            *total = *busy + (double)(v[3] + v[4]);
        } else if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' &&
                   line[3] <= '9') {
            (*ncpu)++;
        }
    }
    fclose(f);
    return *total > 0 && *ncpu > 0 ? 0 : -1;
}

/* Cores' worth of CPU other processes used over 2 s; see calibrate_idle.h. */
double
sim_calibrate_bg_load(void)
{
    double b0, t0, b1, t1;
    int n0, n1;
    struct timespec ts = {2, 0};

    if (cpu_jiffies(&b0, &t0, &n0) < 0)
        return NAN;
    nanosleep(&ts, NULL);
    if (cpu_jiffies(&b1, &t1, &n1) < 0 || t1 <= t0)
        return NAN;
    return (b1 - b0) / (t1 - t0) * (double)n1;
}

/* The 1-minute load average; see calibrate_idle.h. */
double
sim_calibrate_loadavg(void)
{
    double v = NAN;
    FILE *f = fopen("/proc/loadavg", "r");

    if (f) {
        if (fscanf(f, "%lf", &v) != 1)
            v = NAN;
        fclose(f);
    }
    return v;
}
