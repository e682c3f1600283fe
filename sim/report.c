/*
 * report.c -- table / CSV / JSON lines / gnuplot output (report.h).
 */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/mem.h"

void
sim_report_params(FILE *out, const struct sim_scenario *sc)
{
    char v[128];
    bool herd = sc->model == SIM_MODEL_HERD;

    fprintf(out, "# scenario '%s' (model %s)\n", sc->p.name,
            herd ? "herd" : "contention");
    for (size_t i = 0; i < sim_param_count; i++) {
        int pc = sim_param_table[i].pclass;
        bool hk = pc == SIM_PC_HERD_SETUP || pc == SIM_PC_HERD_MODEL;

        if (hk != herd &&
            !(herd && strcmp(sim_param_table[i].key, "seed") == 0))
            continue;
        sim_params_format(&sc->p, i, v, sizeof(v));
        fprintf(out, "#   %-20s = %-12s [%s] %s\n", sim_param_table[i].key, v,
                sim_origin_name(sc->p.origin[i]), sc->p.note[i]);
    }
    if (!herd && sc->p.idle_n > 0) {
        fprintf(out, "#   idle curve (core idle since a step last ran there "
                     "-> its extra CPU):");
        for (int64_t k = 0; k < sc->p.idle_n; k++)
            fprintf(out, "%s %.0f us +%.1f%%", k ? "," : "",
                    sc->p.idle_gap_us[k], 100 * sc->p.idle_frac[k]);
        fputc('\n', out);
    }
    if (!herd && sc->ncal > 1) {
        fprintf(out, "#   %zu calibrations: py_call_us", sc->ncal);
        for (size_t k = 0; k < sc->ncal; k++)
            fprintf(out, " %.1f", sc->cal_py_us[k]);
        fprintf(out, "; py_cv");
        for (size_t k = 0; k < sc->ncal; k++)
            fprintf(out, " %.3f", sc->cal_py_cv[k]);
        fprintf(out, "; xcore_frac");
        for (size_t k = 0; k < sc->ncal; k++)
            fprintf(out, " %.3f", sc->cal_xcore[k]);
        fputc('\n', out);
    }
    if (sc->trace[0])
        fprintf(out, "#   server service times: %zu samples from trace %s\n",
                sc->p.server_samples_n, sc->trace);
}

void
sim_report_header(FILE *out, int fmt, int model)
{
    if (model == SIM_MODEL_HERD) {
        if (fmt == SIM_FMT_TABLE)
            fprintf(out, "%-28s %6s %5s %8s %10s %12s %10s %10s %6s\n",
                    "scenario", "procs", "lock", "requests", "total_s",
                    "wakeups", "futile", "meas_s", "seed");
        else if (fmt == SIM_FMT_CSV)
            fprintf(out, "scenario,procs,lock,requests,total_s,wakeups,futile,"
                         "measured_total_s,seed\n");
        return;
    }
    if (fmt == SIM_FMT_TABLE)
        fprintf(out,
                "%-24s %-4s %5s %4s %-19s %-15s %7s %7s %-6s %-14s %8s %6s\n",
                "scenario", "rt", "delay", "thr", "mean_ms [range]",
                "stdev% [range]", "p50_ms", "p99_ms", "binds",
                "util gil/cpu/lk", "meas_ms", "meas%");
    else if (fmt == SIM_FMT_CSV)
        fprintf(out, "scenario,runtime,proxy,proxy_delay_ms,threads,calls,"
                     "runs,mean_ms,mean_lo_ms,mean_hi_ms,stdev_pct,"
                     "stdev_pct_lo,stdev_pct_hi,p50_ms,p50_lo_ms,p50_hi_ms,"
                     "p99_ms,p99_lo_ms,p99_hi_ms,binding,util_gil,util_cores,"
                     "util_lock,util_pool,bound_r_min_ms,measured_mean_ms,"
                     "measured_stdev_pct,seed\n");
}

static void
json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(out, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(out, "\\u%04x", *s);
        else
            fputc(*s, out);
    }
    fputc('"', out);
}

/* prec < 0: %g */
static void
json_num(FILE *out, const char *key, double v, int prec)
{
    fprintf(out, ",\"%s\":", key);
    if (isnan(v))
        fputs("null", out);
    else if (prec < 0)
        fprintf(out, "%g", v);
    else
        fprintf(out, "%.*f", prec, v);
}

static void
json_dist(FILE *out, const char *key, const char *unit,
          const struct sim_dist *d, int prec)
{
    char k[64];

    snprintf(k, sizeof(k), "%s%s", key, unit);
    json_num(out, k, d->mid, prec);
    snprintf(k, sizeof(k), "%s_lo%s", key, unit);
    json_num(out, k, d->lo, prec);
    snprintf(k, sizeof(k), "%s_hi%s", key, unit);
    json_num(out, k, d->hi, prec);
}

static void
row_herd(FILE *out, int fmt, const struct sim_row *r)
{
    const struct herd_params *h = &r->sc->p.herd;
    long long seed = (long long)r->sc->p.seed;

    if (fmt == SIM_FMT_TABLE) {
        fprintf(out,
                "%-28s %6lld %5lld %8lld %10.3f %12llu %10llu %10.3f %6lld\n",
                r->sc->p.name, (long long)h->procs, (long long)h->lock,
                (long long)h->requests, r->herd.total_s,
                (unsigned long long)r->herd.wakeups,
                (unsigned long long)r->herd.futile, r->sc->meas_total_s, seed);
    } else if (fmt == SIM_FMT_CSV) {
        fprintf(out, "%s,%lld,%lld,%lld,%.4f,%llu,%llu,%.4f,%lld\n",
                r->sc->p.name, (long long)h->procs, (long long)h->lock,
                (long long)h->requests, r->herd.total_s,
                (unsigned long long)r->herd.wakeups,
                (unsigned long long)r->herd.futile, r->sc->meas_total_s, seed);
    } else {
        fputs("{\"scenario\":", out);
        json_str(out, r->sc->p.name);
        fprintf(out,
                ",\"model\":\"herd\",\"procs\":%lld,\"lock\":%lld,\"requests\":"
                "%lld",
                (long long)h->procs, (long long)h->lock,
                (long long)h->requests);
        json_num(out, "total_s", r->herd.total_s, 4);
        fprintf(out, ",\"wakeups\":%llu,\"futile\":%llu",
                (unsigned long long)r->herd.wakeups,
                (unsigned long long)r->herd.futile);
        json_num(out, "measured_total_s", r->sc->meas_total_s, 4);
        fprintf(out, ",\"seed\":%lld}\n", seed);
    }
}

static void
row_json(FILE *out, const struct sim_row *r)
{
    const struct sim_params *p = &r->sc->p;
    const struct sim_pred *pr = &r->pr;
    const struct sim_bound *b = &pr->bound;

    fputs("{\"scenario\":", out);
    json_str(out, p->name);
    fprintf(out,
            ",\"model\":\"contention\",\"runtime\":\"%s\",\"proxy\":\"%s\"",
            sim_runtime_name(p->runtime), sim_proxy_name(p->proxy));
    json_num(out, "proxy_delay_ms", p->proxy_delay_ms, -1);
    fprintf(out,
            ",\"threads\":%lld,\"calls\":%lld,\"seeds\":%lld,"
            "\"calibrations\":%zu,\"runs\":%zu,\"n\":%zu",
            (long long)p->threads, (long long)p->calls, (long long)p->seeds,
            r->sc->ncal ? r->sc->ncal : 1, pr->runs, pr->first.n);
    json_dist(out, "mean", "_ms", &pr->mean_ms, 4);
    json_dist(out, "stdev_pct", "", &pr->stdev_pct, 2);
    json_dist(out, "p50", "_ms", &pr->p50_ms, 4);
    json_dist(out, "p99", "_ms", &pr->p99_ms, 4);
    fprintf(out, ",\"binding\":\"%s\",\"util\":{", sim_res_name(b->binding));
    for (int k = 0; k < SIM_RES__N; k++)
        fprintf(out, "%s\"%s\":%.4f", k ? "," : "", sim_res_name(k),
                pr->util[k]);
    fputs("},\"bound\":{\"demand_us\":{", out);
    for (int k = 0; k < SIM_RES__N; k++)
        fprintf(out, "%s\"%s\":%.3f", k ? "," : "", sim_res_name(k),
                b->demand_us[k]);
    fputs("},\"util\":{", out);
    for (int k = 0; k < SIM_RES__N; k++)
        fprintf(out, "%s\"%s\":%.4f", k ? "," : "", sim_res_name(k),
                b->util[k]);
    fprintf(out, "},\"r0_ms\":%.4f,\"r_min_ms\":%.4f,\"x_max_per_s\":%.1f}",
            b->r0_us / 1000.0, b->r_min_us / 1000.0, b->x_max_per_s);
    json_num(out, "lock_blocks_per_call", pr->lock_blocks_per_call, 3);
    json_num(out, "gil_switches_per_call", pr->gil_switches_per_call, 3);
    json_num(out, "xcore_per_call", pr->xcore_per_call, 3);
    json_num(out, "cpu_us_per_call", pr->cpu_us_per_call, 2);
    json_num(out, "vcsw_per_call", pr->sleeps_per_call, 3);
    json_num(out, "py_call_us", p->py_call_us, 2);
    json_num(out, "measured_mean_ms", r->sc->meas_mean_ms, 4);
    json_num(out, "measured_stdev_pct", r->sc->meas_stdev_pct, 2);
    fprintf(out, ",\"seed\":%lld}\n", (long long)p->seed);
}

void
sim_report_row(FILE *out, int fmt, const struct sim_row *r)
{
    const struct sim_params *p = &r->sc->p;
    const struct sim_pred *pr = &r->pr;
    char mean[32], sd[32], util[32];

    if (r->sc->model == SIM_MODEL_HERD) {
        row_herd(out, fmt, r);
        return;
    }
    if (fmt == SIM_FMT_JSON) {
        row_json(out, r);
        return;
    }
    if (fmt == SIM_FMT_CSV) {
        fprintf(out,
                "%s,%s,%s,%g,%lld,%lld,%zu,%.4f,%.4f,%.4f,%.2f,%.2f,%.2f,"
                "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%s,%.4f,%.4f,%.4f,%.4f,%.4f,"
                "%.4f,%.2f,%lld\n",
                p->name, sim_runtime_name(p->runtime), sim_proxy_name(p->proxy),
                p->proxy_delay_ms, (long long)p->threads, (long long)p->calls,
                pr->runs, pr->mean_ms.mid, pr->mean_ms.lo, pr->mean_ms.hi,
                pr->stdev_pct.mid, pr->stdev_pct.lo, pr->stdev_pct.hi,
                pr->p50_ms.mid, pr->p50_ms.lo, pr->p50_ms.hi, pr->p99_ms.mid,
                pr->p99_ms.lo, pr->p99_ms.hi, sim_res_name(pr->bound.binding),
                pr->util[SIM_RES_GIL], pr->util[SIM_RES_CORES],
                pr->util[SIM_RES_LOCK], pr->util[SIM_RES_POOL],
                pr->bound.r_min_us / 1000.0, r->sc->meas_mean_ms,
                r->sc->meas_stdev_pct, (long long)p->seed);
        return;
    }
    snprintf(mean, sizeof(mean), "%.3f [%.3f-%.3f]", pr->mean_ms.mid,
             pr->mean_ms.lo, pr->mean_ms.hi);
    snprintf(sd, sizeof(sd), "%.1f [%.1f-%.1f]", pr->stdev_pct.mid,
             pr->stdev_pct.lo, pr->stdev_pct.hi);
    snprintf(util, sizeof(util), "%.2f/%.2f/%.2f", pr->util[SIM_RES_GIL],
             pr->util[SIM_RES_CORES], pr->util[SIM_RES_LOCK]);
    fprintf(out,
            "%-24s %-4s %5.3g %4lld %-19s %-15s %7.3f %7.3f %-6s %-14s "
            "%8.3f %6.1f\n",
            p->name, p->runtime == SIM_RT_FREE ? "ft" : "gil",
            p->proxy_delay_ms, (long long)p->threads, mean, sd, pr->p50_ms.mid,
            pr->p99_ms.mid, sim_res_name(pr->bound.binding), util,
            r->sc->meas_mean_ms, r->sc->meas_stdev_pct);
}

static int
cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Writes "latency_ms cumulative_fraction" lines of v (sorted in place). */
static int
write_cdf(const char *path, double *v, size_t n, struct mt_err *err)
{
    FILE *f = fopen(path, "w");

    if (f == NULL)
        return mt_err_set(err, -errno, 0, "plot: %s: %s", path,
                          strerror(errno));
    qsort(v, n, sizeof(*v), cmp_dbl);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.6f %.6f\n", v[i], (double)(i + 1) / (double)n);
    fclose(f);
    return 0;
}

#define PLOT_SERIES_MAX 64
#define PLOT_MEAS_MAX 1000000

struct series {
    char label[64];
    double *v; /* owned */
    size_t n, cap;
};

static int
series_add(struct series *s, double x)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        double *nv;
        if (nc > PLOT_MEAS_MAX)
            return MT_ELIMIT;
        nv = mt_realloc(s->v, nc * sizeof(*nv));
        if (nv == NULL)
            return -ENOMEM;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = x;
    return 0;
}

/* Reads "LABEL VALUE" or "VALUE" lines into series (by label). */
static int
read_measured(const char *path, struct series *ser, size_t *nser,
              struct mt_err *err)
{
    FILE *f = fopen(path, "r");
    char line[512], label[64];
    size_t lineno = 0;
    int rc = 0;

    if (f == NULL)
        return mt_err_set(err, -errno, 0, "%s: %s", path, strerror(errno));
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        char *tok = strtok(line, " \t\r\n"), *tok2, *end;
        double x;
        size_t i;
        lineno++;
        if (tok == NULL || *tok == '#')
            continue;
        tok2 = strtok(NULL, " \t\r\n");
        snprintf(label, sizeof(label), "measured %s", tok2 ? tok : "");
        x = strtod(tok2 ? tok2 : tok, &end);
        if (*end != '\0' || !isfinite(x)) {
            rc =
                mt_err_set(err, MT_EUSAGE, lineno,
                           "%s:%zu: expected [LABEL] LATENCY_MS", path, lineno);
            break;
        }
        for (i = 0; i < *nser && strcmp(ser[i].label, label) != 0; i++)
            ;
        if (i == *nser) {
            if (*nser == PLOT_SERIES_MAX) {
                rc = mt_err_set(err, MT_ELIMIT, lineno, "%s: too many labels",
                                path);
                break;
            }
            snprintf(ser[(*nser)++].label, sizeof(ser[0].label), "%s", label);
        }
        if ((rc = series_add(&ser[i], x)) < 0)
            mt_err_set(err, rc, lineno, "%s:%zu: too many samples", path,
                       lineno);
    }
    fclose(f);
    return rc;
}

static int
run_gnuplot(const char *script, struct mt_err *err)
{
    pid_t pid = fork();
    int st;

    if (pid < 0)
        return mt_err_set(err, -errno, 0, "plot: fork: %s", strerror(errno));
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    if (waitpid(pid, &st, 0) < 0)
        return mt_err_set(err, -errno, 0, "plot: waitpid: %s", strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return mt_err_set(
            err, MT_EUNSUPPORTED, 0,
            "plot: gnuplot failed (exit %d); is gnuplot installed?",
            WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

int
sim_report_plot(const struct sim_row *rows, size_t n, const char *measured_path,
                const char *png_path, struct mt_err *err)
{
    static struct series ser[PLOT_SERIES_MAX];
    char dir[] = "/tmp/mtrace-plot-XXXXXX", path[600], script[600];
    size_t nser = 0, npred = 0;
    FILE *f;
    int rc = 0;

    memset(ser, 0, sizeof(ser));
    for (size_t i = 0; i < n && nser < PLOT_SERIES_MAX; i++) {
        if (rows[i].sc->model != SIM_MODEL_CONTENTION)
            continue;
        snprintf(ser[nser].label, sizeof(ser[0].label), "%s",
                 rows[i].sc->p.name);
        for (size_t k = 0; k < rows[i].pr.first.n && rc == 0; k++)
            rc = series_add(&ser[nser],
                            (double)rows[i].pr.first.lat_ns[k] / 1e6);
        nser++;
    }
    npred = nser;
    if (rc == 0 && measured_path)
        rc = read_measured(measured_path, ser, &nser, err);
    if (rc < 0 || mkdtemp(dir) == NULL) {
        if (rc == 0)
            rc = mt_err_set(err, -errno, 0, "plot: mkdtemp: %s",
                            strerror(errno));
        goto out;
    }
    snprintf(script, sizeof(script), "%s/plot.gp", dir);
    f = fopen(script, "w");
    if (f == NULL) {
        rc =
            mt_err_set(err, -errno, 0, "plot: %s: %s", script, strerror(errno));
        goto out;
    }
    fprintf(f,
            "set terminal pngcairo size 1000,650\nset output '%s'\n"
            "set xlabel 'latency (ms)'\nset ylabel 'fraction of calls'\n"
            "set key bottom right\nset grid\nset logscale x\nplot ",
            png_path);
    for (size_t i = 0; i < nser && rc == 0; i++) {
        snprintf(path, sizeof(path), "%s/s%zu.dat", dir, i);
        rc = write_cdf(path, ser[i].v, ser[i].n, err);
        fprintf(f, "%s'%s' using 1:2 with lines lw 2 dt %d title '%s'",
                i ? ", " : "", path, i < npred ? 1 : 2, ser[i].label);
    }
    fprintf(f, "\n");
    fclose(f);
    if (rc == 0)
        rc = run_gnuplot(script, err);
    for (size_t i = 0; i < nser; i++) {
        snprintf(path, sizeof(path), "%s/s%zu.dat", dir, i);
        unlink(path);
    }
    unlink(script);
    rmdir(dir);
out:
    for (size_t i = 0; i < nser; i++)
        mt_free(ser[i].v);
    return rc;
}
