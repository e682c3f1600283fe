/*
 * report.c -- table / CSV / JSON lines / gnuplot output (report.h).
 */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/mem.h"

void
sim_report_params(FILE *out, const struct sim_scenario *sc)
{
    char v[128];

    fprintf(out, "# scenario '%s' (model %s)\n", sc->p.name,
            sc->model == SIM_MODEL_HERD ? "herd" : "contention");
    if (sc->model == SIM_MODEL_HERD) {
        for (size_t i = 0; i < herd_params_count(); i++) {
            herd_params_format(&sc->hp, i, v, sizeof(v));
            fprintf(out, "#   herd.%-18s = %-12s [%s] %s\n", herd_params_key(i),
                    v, sim_origin_name(sc->hp.origin[i]), sc->hp.note[i]);
        }
        return;
    }
    for (size_t i = 0; i < sim_param_count; i++) {
        sim_params_format(&sc->p, i, v, sizeof(v));
        fprintf(out, "#   %-20s = %-12s [%s] %s\n", sim_param_table[i].key, v,
                sim_origin_name(sc->p.origin[i]), sc->p.note[i]);
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
                "%-30s %-13s %-9s %6s %7s %5s %6s %8s %7s %8s %8s %8s %8s %9s "
                "%9s %6s\n",
                "scenario", "runtime", "proxy", "delay", "threads", "calls",
                "n", "mean_ms", "stdev%", "p50_ms", "p90_ms", "p99_ms",
                "max_ms", "meas_mean", "meas_sd%", "seed");
    else if (fmt == SIM_FMT_CSV)
        fprintf(out, "scenario,runtime,proxy,proxy_delay_ms,threads,calls,n,"
                     "mean_ms,stdev_pct,"
                     "p50_ms,p90_ms,p99_ms,max_ms,measured_mean_ms,measured_"
                     "stdev_pct,seed\n");
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
row_herd(FILE *out, int fmt, const struct sim_row *r)
{
    const struct herd_params *h = &r->sc->hp;

    if (fmt == SIM_FMT_TABLE) {
        fprintf(out,
                "%-28s %6lld %5lld %8lld %10.3f %12llu %10llu %10.3f %6lld\n",
                r->sc->p.name, (long long)h->procs, (long long)h->lock,
                (long long)h->requests, r->herd.total_s,
                (unsigned long long)r->herd.wakeups,
                (unsigned long long)r->herd.futile, r->sc->meas_total_s,
                (long long)h->seed);
    } else if (fmt == SIM_FMT_CSV) {
        fprintf(out, "%s,%lld,%lld,%lld,%.4f,%llu,%llu,%.4f,%lld\n",
                r->sc->p.name, (long long)h->procs, (long long)h->lock,
                (long long)h->requests, r->herd.total_s,
                (unsigned long long)r->herd.wakeups,
                (unsigned long long)r->herd.futile, r->sc->meas_total_s,
                (long long)h->seed);
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
        fprintf(out, ",\"seed\":%lld}\n", (long long)h->seed);
    }
}

void
sim_report_row(FILE *out, int fmt, const struct sim_row *r)
{
    const struct sim_params *p = &r->sc->p;
    const struct sim_stats *s = &r->st;

    if (r->sc->model == SIM_MODEL_HERD) {
        row_herd(out, fmt, r);
        return;
    }
    if (fmt == SIM_FMT_TABLE) {
        fprintf(out,
                "%-30s %-13s %-9s %6.3g %7lld %5lld %6zu %8.3f %7.1f %8.3f "
                "%8.3f %8.3f %8.3f %9.3f %9.1f %6lld\n",
                p->name, sim_runtime_name(p->runtime), sim_proxy_name(p->proxy),
                p->proxy_delay_ms, (long long)p->threads, (long long)p->calls,
                s->n, s->mean_ms, s->stdev_pct, s->p50_ms, s->p90_ms, s->p99_ms,
                s->max_ms, r->sc->meas_mean_ms, r->sc->meas_stdev_pct,
                (long long)p->seed);
    } else if (fmt == SIM_FMT_CSV) {
        fprintf(out,
                "%s,%s,%s,%g,%lld,%lld,%zu,%.4f,%.2f,%.4f,%.4f,%.4f,%.4f,%.4f,%"
                ".2f,%lld\n",
                p->name, sim_runtime_name(p->runtime), sim_proxy_name(p->proxy),
                p->proxy_delay_ms, (long long)p->threads, (long long)p->calls,
                s->n, s->mean_ms, s->stdev_pct, s->p50_ms, s->p90_ms, s->p99_ms,
                s->max_ms, r->sc->meas_mean_ms, r->sc->meas_stdev_pct,
                (long long)p->seed);
    } else {
        fputs("{\"scenario\":", out);
        json_str(out, p->name);
        fprintf(out,
                ",\"model\":\"contention\",\"runtime\":\"%s\",\"proxy\":\"%s\"",
                sim_runtime_name(p->runtime), sim_proxy_name(p->proxy));
        json_num(out, "proxy_delay_ms", p->proxy_delay_ms, -1);
        fprintf(out, ",\"threads\":%lld,\"calls\":%lld,\"n\":%zu",
                (long long)p->threads, (long long)p->calls, s->n);
        json_num(out, "mean_ms", s->mean_ms, 4);
        json_num(out, "stdev_pct", s->stdev_pct, 2);
        json_num(out, "p10_ms", s->p10_ms, 4);
        json_num(out, "p50_ms", s->p50_ms, 4);
        json_num(out, "p90_ms", s->p90_ms, 4);
        json_num(out, "p99_ms", s->p99_ms, 4);
        json_num(out, "max_ms", s->max_ms, 4);
        json_num(out, "measured_mean_ms", r->sc->meas_mean_ms, 4);
        json_num(out, "measured_stdev_pct", r->sc->meas_stdev_pct, 2);
        fprintf(out,
                ",\"gil_switches\":%llu,\"gil_drop_requests\":%llu,"
                "\"gil_wakes\":%llu,\"gil_wake_takes\":%llu,"
                "\"gil_futile\":%llu,\"client_blocks\":%llu",
                (unsigned long long)r->res.gil_switches,
                (unsigned long long)r->res.gil_drop_requests,
                (unsigned long long)r->res.gil_wakes,
                (unsigned long long)r->res.gil_wake_takes,
                (unsigned long long)r->res.gil_futile,
                (unsigned long long)r->res.client_blocks);
        json_num(out, "blocks_per_call",
                 (double)r->res.client_blocks /
                     ((double)p->threads * (double)p->calls),
                 3);
        json_num(out, "send_preempts_per_call",
                 (double)r->res.send_preempts /
                     ((double)p->threads * (double)p->calls),
                 3);
        json_num(out, "idle_wakes_per_call",
                 (double)r->res.idle_wakes /
                     ((double)p->threads * (double)p->calls),
                 3);
        json_num(out, "wake_preempts_per_call",
                 (double)r->res.wake_preempts /
                     ((double)p->threads * (double)p->calls),
                 3);
        json_num(out, "gil_mutex_blocks_per_call",
                 (double)r->res.gil_mutex_blocks /
                     ((double)p->threads * (double)p->calls),
                 3);
        json_num(out, "gil_quiesce_per_call",
                 (double)r->res.gil_quiesce /
                     ((double)p->threads * (double)p->calls),
                 3);
        json_num(out, "send_affine_kept_per_call",
                 (double)r->res.send_affine_kept /
                     ((double)p->threads * (double)p->calls),
                 3);
        json_num(out, "gil_switches_per_call",
                 (double)r->res.gil_switches /
                     ((double)p->threads * (double)p->calls),
                 3);
        fputs(",\"handovers_per_release\":[", out);
        for (int64_t k = 0; k < p->releases && k < SIM_HANDOVER_MAX; k++)
            fprintf(out, "%s%.3f", k ? "," : "",
                    (double)r->res.handover[k] /
                        ((double)p->threads * (double)p->calls));
        fputc(']', out);
        json_num(out, "gil_xcore_per_call",
                 (double)r->res.gil_xcore /
                     ((double)p->threads * (double)p->calls),
                 3);
        json_num(out, "py_cold_per_call",
                 (double)r->res.py_cold /
                     ((double)p->threads * (double)p->calls),
                 3);
        json_num(out, "cpu_per_call_us",
                 (double)r->res.client_cpu_ns / 1e3 /
                     ((double)p->threads * (double)p->calls),
                 1);
        fprintf(out, ",\"seed\":%lld}\n", (long long)p->seed);
    }
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
        for (size_t k = 0; k < rows[i].res.n && rc == 0; k++)
            rc = series_add(&ser[nser], (double)rows[i].res.lat_ns[k] / 1e6);
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
