/*
 * sim_grid.c -- from scenarios to the runs a prediction needs: --set and
 * --sweep applied, each scenario calibrated from its sequential run
 * (fit.c), and the what-if grid expanded (sim_grid.h).
 */
#include "sim_grid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"

#define SWEEP_VALS_MAX 40

/* "key=value" -> applied with origin cli. */
int
sim_grid_apply_kv(struct sim_scenario *sc, const char *kv, const char *note,
                  struct mt_err *err)
{
    char key[64];
    const char *eq = strchr(kv, '=');

    if (eq == NULL || eq == kv || (size_t)(eq - kv) >= sizeof(key))
        return mt_err_set(err, MT_EUSAGE, 0, "expected KEY=VALUE, got '%s'",
                          kv);
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    if ((strcmp(key, "delay") == 0 || strcmp(key, "proxy_delay_ms") == 0) &&
        sc->p.proxy == SIM_PROXY_NONE && strtod(eq + 1, NULL) > 0) {
        int rc = sim_scenario_apply(sc, "proxy", "deadline", SIM_OR_CLI,
                                    "a delay is a deadline", err);
        if (rc < 0)
            return rc;
    }
    return sim_scenario_apply(sc, key, eq + 1, SIM_OR_CLI, note, err);
}

/* Keys that describe the experiment rather than the host: a --sweep of one
 * of them does not change the setup a calibration was measured in. */
static bool
is_setup_key(const char *kv)
{
    size_t n = strcspn(kv, "=");
    char key[64];
    int i;

    if (n >= sizeof(key))
        return false;
    memcpy(key, kv, n);
    key[n] = '\0';
    if (strcmp(key, "delay") == 0)
        return true;
    i = sim_params_find(key);
    return i >= 0 && sim_param_table[i].pclass == SIM_PC_SETUP;
}

static int
fit_one(struct sim_scenario *sc, const struct sim_params *seq,
        const struct sim_cal_in *cal, struct mt_err *err)
{
    struct sim_params p0 = sc->p;

    sc->ncal = 0;
    for (size_t k = 0; k < cal->n; k++) {
        struct sim_fit_in in = {
            cal->mean_ms[k], cal->stdev_pct[k],    cal->cpu_us[k],
            cal->cpu_cv[k],  cal->xcore_cpu_us[k], cal->pinned_cpu_us[k],
            cal->at_n,       cal->at_delay_ms,     cal->at_cpu_us};
        struct sim_params p = p0;
        int rc;

        if (isnan(in.mean_ms) && isnan(in.cpu_us) && in.at_n == 0)
            return mt_err_set(err, MT_EUSAGE, 0,
                              "scenario '%s': calibration %zu has neither a "
                              "mean nor a CPU per call",
                              sc->p.name, k + 1);
        if ((rc = sim_fit_seq(&p, seq, &in, err)) < 0) {
            char msg[sizeof(err->msg)];
            snprintf(msg, sizeof(msg), "%s", err->msg);
            return mt_err_set(err, rc, 0, "scenario '%s': %s", sc->p.name, msg);
        }
        if (k == 0)
            sc->p = p; /* origins and notes of the first */
        sc->cal_py_us[k] = p.py_call_us;
        sc->cal_py_cv[k] = p.py_cv;
        sc->cal_xcore[k] = p.xcore_frac;
        sc->ncal++;
    }
    return 0;
}

/* The setup the one-liner's sequential run had: one thread, its delay. */
static void
oneliner_seq(const struct sim_scenario *sc, const struct sim_seq_in *o,
             struct sim_params *seq)
{
    *seq = sc->cal_p;
    seq->threads = 1;
    seq->proxy = o->delay_ms > 0 ? SIM_PROXY_DEADLINE : SIM_PROXY_NONE;
    if (sc->cal_p.proxy == SIM_PROXY_SERIAL && o->delay_ms > 0)
        seq->proxy = SIM_PROXY_SERIAL;
    seq->proxy_delay_ms = o->delay_ms;
    if (o->runtime)
        seq->runtime =
            strcmp(o->runtime, "gil") == 0 ? SIM_RT_GIL : SIM_RT_FREE;
}

int
sim_grid_calibrate(struct sim_scenario_set *set, const struct sim_seq_in *o,
                   struct mt_err *err)
{
    int rc;

    for (size_t i = 0; i < set->n; i++) {
        struct sim_scenario *sc = &set->v[i];
        struct sim_params seq;

        if (sc->model != SIM_MODEL_CONTENTION)
            continue;
        if (o->cal.n > 0) { /* --seq-*: every scenario */
            oneliner_seq(sc, o, &seq);
            rc = fit_one(sc, &seq, &o->cal, err);
        } else if (sc->cal.n > 0) { /* the scenario is a sequential run */
            seq = sc->cal_p;
            rc = fit_one(sc, &seq, &sc->cal, err);
        } else {
            rc = 0;
        }
        if (rc < 0)
            return rc;
    }
    for (size_t i = 0; i < set->n && o->cal.n == 0; i++) {
        struct sim_scenario *sc = &set->v[i];
        const struct sim_scenario *src;
        size_t k;

        if (sc->cal_from[0] == '\0')
            continue;
        for (k = 0; k < set->n && strcmp(set->v[k].p.name, sc->cal_from) != 0;
             k++)
            ;
        if (k == set->n || set->v[k].cal.n == 0)
            return mt_err_set(err, MT_EUSAGE, 0,
                              "scenario '%s': calibrate_from '%s' is not a "
                              "calibrated scenario",
                              sc->p.name, sc->cal_from);
        src = &set->v[k];
        if ((rc = fit_one(sc, &src->cal_p, &src->cal, err)) < 0)
            return rc;
        {
            int ic = sim_params_find("py_call_us");
            size_t len = strlen(sc->p.note[ic]);
            snprintf(sc->p.note[ic] + len, SIM_NOTE_MAX - len,
                     " (sequential run '%.30s')", sc->cal_from);
        }
    }
    return 0;
}

int
sim_grid_expand(const struct sim_scenario_set *set, const char *const *sweeps,
                size_t nsweeps, struct sim_scenario_set *out,
                struct mt_err *err)
{
    char vals[SWEEP_AXES_MAX][SWEEP_VALS_MAX][32], keys[SWEEP_AXES_MAX][32];
    size_t nv[SWEEP_AXES_MAX], idx[SWEEP_AXES_MAX] = {0};
    int rc;

    for (size_t a = 0; a < nsweeps; a++) {
        const char *eq = strchr(sweeps[a], '='), *p;
        if (eq == NULL || eq == sweeps[a] || eq - sweeps[a] >= 32)
            return mt_err_set(err, MT_EUSAGE, 0,
                              "--sweep wants KEY=V1,V2,..: '%s'", sweeps[a]);
        snprintf(keys[a], sizeof(keys[a]), "%.*s", (int)(eq - sweeps[a]),
                 sweeps[a]);
        nv[a] = 0;
        for (p = eq + 1; *p;) {
            size_t len = strcspn(p, ",");
            if (len == 0 || len >= 32 || nv[a] == SWEEP_VALS_MAX)
                return mt_err_set(err, MT_EUSAGE, 0,
                                  "--sweep %s: bad value list", keys[a]);
            snprintf(vals[a][nv[a]++], 32, "%.*s", (int)len, p);
            p += len + (p[len] == ',');
        }
        if (nv[a] == 0)
            return mt_err_set(err, MT_EUSAGE, 0, "--sweep %s: no values",
                              keys[a]);
    }
    for (size_t i = 0; i < set->n; i++) {
        for (;;) {
            struct sim_scenario sc = set->v[i];
            char name[64], kv[80];
            size_t len = (size_t)snprintf(name, sizeof(name), "%s", sc.p.name);
            for (size_t a = 0; a < nsweeps; a++) {
                snprintf(kv, sizeof(kv), "%s=%s", keys[a], vals[a][idx[a]]);
                if ((rc = sim_grid_apply_kv(&sc, kv, "sweep", err)) < 0)
                    return rc;
                if (!is_setup_key(kv)) { /* a host fact: calibrate with it */
                    struct sim_scenario tmp = sc;
                    tmp.p = sc.cal_p;
                    if ((rc = sim_grid_apply_kv(&tmp, kv, "sweep", err)) < 0)
                        return rc;
                    sc.cal_p = tmp.p;
                }
                if (len < sizeof(name))
                    len += (size_t)snprintf(name + len, sizeof(name) - len,
                                            " %s", kv);
            }
            if (sc.cal_from[0] &&
                len > strlen(sc.p.name)) { /* same grid point */
                char from[64];
                snprintf(from, sizeof(from), "%s%s", sc.cal_from,
                         name + strlen(sc.p.name));
                snprintf(sc.cal_from, sizeof(sc.cal_from), "%s", from);
            }
            snprintf(sc.p.name, sizeof(sc.p.name), "%s", name);
            if ((rc = sim_scenario_add(out, &sc)) < 0)
                return mt_err_set(err, rc, 0, "too many scenarios (max %d)",
                                  SIM_SCN_MAX);
            size_t a = 0; /* odometer */
            while (a < nsweeps && ++idx[a] == nv[a])
                idx[a++] = 0;
            if (a == nsweeps)
                break;
        }
    }
    return 0;
}
