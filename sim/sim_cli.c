/*
 * sim_cli.c -- `mtrace sim` and `mtrace calibrate` option parsing.
 *
 * Exit status: 0 success, 1 runtime failure, 2 bad usage.
 */
#include "sim_cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "core/mem.h"
#include "fit.h"
#include "model.h"
#include "report.h"
#include "scenario.h"
#include "tracelat.h"

static bool is_setup_key(const char *kv);

#define SWEEP_AXES_MAX 4
#define SWEEP_VALS_MAX 32
#define SETS_MAX 64

static const char sim_usage[] =
    "usage: mtrace sim [options]\n"
    "Predicts client latency (mean, stdev%, percentiles) by discrete-event\n"
    "simulation: client threads under CPython's GIL or free-threaded, a\n"
    "connection pool, shared CPU cores, a proxy and a server "
    "(docs/sim-model.md).\n"
    "\n"
    "  --scenario FILE     run the scenarios of FILE (repeatable; format in\n"
    "                      docs/sim-model.md); without it, one scenario from\n"
    "                      the options below\n"
    "  --host FILE         host facts written by `mtrace calibrate` (origin: "
    "measured)\n"
    "  --trace FILE        trace of the sequential run: the server's service\n"
    "                      times are its request->reply latencies (origin: "
    "trace)\n"
    "  --seq-mean-ms X     measured mean of the sequential run: solve "
    "py_call_us\n"
    "                      from it (threads=1, --seq-calls calls, first "
    "excluded)\n"
    "  --seq-stdev-pct Y   measured stdev% of that run: solve py_cv from it\n"
    "  --seq-calls N       calls of the sequential run (default 1000)\n"
    "  --seq-cpu-us Z      with --seq-mean-ms: the calling thread's CPU per\n"
    "                      call in that run (time.thread_time); py_call_us\n"
    "                      comes from it, not from the mean\n"
    "  --set KEY=VALUE     set a parameter for every scenario (repeatable;\n"
    "                      --list-params shows them)\n"
    "  --sweep KEY=V1,V2   what-if grid over KEY (repeatable, up to 4 axes; "
    "words\n"
    "                      after it of the form KEY=V1,.. are axes too); "
    "'delay' is\n"
    "                      proxy_delay_ms and selects proxy=deadline when "
    "none\n"
    "  --only TEXT         run only scenarios whose name contains TEXT\n"
    "  --seed N            the one seed (default: the scenario's, 1)\n"
    "  --csv               CSV instead of a table\n"
    "  --json              one JSON object per scenario and line\n"
    "  --no-params         leave out the parameter/origin block\n"
    "  --plot FILE.png     draw latency CDFs with gnuplot\n"
    "  --measured FILE     measured latencies to draw too ('LABEL MS' lines)\n"
    "  --list-params       list the parameters with unit and meaning, and "
    "exit\n"
    "  -h, --help          this help\n"
    "\n"
    "The parameter block (stdout for tables, stderr for --csv/--json) prints "
    "each\n"
    "value with its origin: constant, assumption, measured, trace, "
    "calibrated,\n"
    "scenario or cli.  The same inputs give byte-identical output.\n"
    "Exit status: 0 ok, 1 runtime failure, 2 bad usage.\n";

struct sim_opts {
    const char *scenario[8];
    size_t nscenario;
    const char *host, *trace, *plot, *measured, *only;
    double seq_mean_ms, seq_stdev_pct, seq_cpu_us;
    int64_t seq_calls;
    const char *sets[SETS_MAX];
    size_t nsets;
    const char *sweeps[SWEEP_AXES_MAX];
    size_t nsweeps;
    const char *seed;
    int fmt;
    bool no_params;
};

/* --seed's value: the range of the parameter 'seed' (sim/params.c). */
static bool
seed_ok(const char *v)
{
    char *end;
    unsigned long long n;

    if (*v < '0' || *v > '9')
        return false;
    errno = 0;
    n = strtoull(v, &end, 10);
    return errno == 0 && *end == '\0' && n <= 9200000000000000000ull;
}

static int
usage_err(const char *msg, const char *arg)
{
    fprintf(stderr, "mtrace sim: %s%s%s; run 'mtrace sim --help'\n", msg,
            arg ? ": " : "", arg ? arg : "");
    return 2;
}

/* Keys a scenario file may set besides the parameters (scenario.c). */
static const char *const scn_keys[][3] = {
    {"model", "", "contention | herd"},
    {"calibrate.seq_mean_ms", "ms",
     "this is a sequential run measured at this mean: py_call_us is solved "
     "from it"},
    {"calibrate.seq_stdev_pct", "", "its stdev%: py_cv is solved from it"},
    {"calibrate.seq_cpu_us", "us",
     "its client CPU per call: py_call_us from it instead of the mean"},
    {"calibrate.seq_cpu_cv", "",
     "the coefficient of variation of that CPU: py_cv from it"},
    {"calibrate_from", "", "NAME: py_call_us and py_cv from scenario NAME"},
    {"measured.mean_ms", "ms",
     "measured mean, printed beside the prediction (never used by the "
     "model)"},
    {"measured.stdev_pct", "", "measured stdev%, likewise"},
    {"measured.total_s", "s", "measured total time (herd), likewise"},
    {"trace", "", "PATH: server service times from a trace (as --trace)"},
    {"delay", "ms", "alias of proxy_delay_ms"},
};

static void
list_params(void)
{
    printf("contention model (default values: mtrace sim --no-params is quiet; "
           "see\n"
           "the parameter block of any run for values and origins)\n");
    for (size_t i = 0; i < sim_param_count; i++)
        printf("  %-20s %-3s %s\n", sim_param_table[i].key,
               sim_param_table[i].unit, sim_param_table[i].help);
    printf("herd model (model = herd; keys take the prefix herd.)\n");
    for (size_t i = 0; i < herd_params_count(); i++) {
        const char *unit = "";
        const char *help = herd_params_help(i, &unit);
        char key[48];

        snprintf(key, sizeof(key), "herd.%s", herd_params_key(i));
        printf("  %-20s %-3s %s\n", key, unit, help);
    }
    printf("scenario files only (docs/sim-model.md, \"Scenario files\")\n");
    for (size_t i = 0; i < sizeof(scn_keys) / sizeof(scn_keys[0]); i++)
        printf("  %-20s %-3s %s\n", scn_keys[i][0], scn_keys[i][1],
               scn_keys[i][2]);
}

enum sim_opt {
    O_HOST = 256,
    O_TRACE,
    O_SEQM,
    O_SEQS,
    O_SEQC,
    O_SEQCPU,
    O_SET,
    O_SWEEP,
    O_ONLY,
    O_SEED,
    O_CSV,
    O_JSON,
    O_NOP,
    O_PLOT,
    O_MEAS,
    O_LIST,
    O_SCN
};

/* One option of `mtrace sim`.  Returns 0 to go on, 1 to exit 0 (help),
 * or 2 (bad usage, message printed). */
static int
handle_opt(int c, struct sim_opts *o, int argc, char **argv)
{
    char *end;

    switch (c) {
    case 'h':
        fputs(sim_usage, stdout);
        return 1;
    case O_LIST:
        list_params();
        return 1;
    case O_SCN:
        if (o->nscenario == 8)
            return usage_err("too many --scenario files (max 8)", NULL);
        o->scenario[o->nscenario++] = optarg;
        break;
    case O_HOST:
        o->host = optarg;
        break;
    case O_TRACE:
        o->trace = optarg;
        break;
    case O_SEQM:
    case O_SEQS:
    case O_SEQCPU: {
        double v = strtod(optarg, &end);
        if (*end || end == optarg || !(v > 0) || !isfinite(v))
            return usage_err("expected a positive number", optarg);
        *(c == O_SEQM   ? &o->seq_mean_ms
          : c == O_SEQS ? &o->seq_stdev_pct
                        : &o->seq_cpu_us) = v;
        break;
    }
    case O_SEQC:
        o->seq_calls = strtoll(optarg, &end, 10);
        if (*end || o->seq_calls < 2 || o->seq_calls > 10000000)
            return usage_err("--seq-calls wants an integer in [2, 10000000]",
                             optarg);
        break;
    case O_SET:
        if (o->nsets == SETS_MAX)
            return usage_err("too many --set", NULL);
        o->sets[o->nsets++] = optarg;
        break;
    case O_SWEEP:
        if (o->nsweeps == SWEEP_AXES_MAX)
            return usage_err("too many --sweep axes (max 4)", NULL);
        o->sweeps[o->nsweeps++] = optarg;
        while (optind < argc && argv[optind][0] != '-' &&
               strchr(argv[optind], '=')) {
            if (o->nsweeps == SWEEP_AXES_MAX)
                return usage_err("too many --sweep axes (max 4)", NULL);
            o->sweeps[o->nsweeps++] = argv[optind++];
        }
        break;
    case O_ONLY:
        o->only = optarg;
        break;
    case O_SEED:
        if (!seed_ok(optarg))
            return usage_err("--seed: expected an integer from 0 to "
                             "9200000000000000000, got",
                             optarg);
        o->seed = optarg;
        break;
    case O_CSV:
        o->fmt = SIM_FMT_CSV;
        break;
    case O_JSON:
        o->fmt = SIM_FMT_JSON;
        break;
    case O_NOP:
        o->no_params = true;
        break;
    case O_PLOT:
        o->plot = optarg;
        break;
    case O_MEAS:
        o->measured = optarg;
        break;
    case ':':
        fprintf(stderr,
                "mtrace sim: option '%s' needs a value; run 'mtrace sim "
                "--help'\n",
                argv[optind - 1]);
        return 2;
    default:
        if (strncmp(argv[optind - 1], "--", 2) == 0)
            fprintf(stderr, "mtrace sim: %s option '%s'",
                    optopt != 0 ? "no value allowed for" : "unknown",
                    argv[optind - 1]);
        else
            fprintf(stderr, "mtrace sim: unknown option '-%c'",
                    optopt > 32 && optopt < 127 ? optopt : '?');
        fputs("; run 'mtrace sim --help'\n", stderr);
        return 2;
    }
    return 0;
}

static int
parse_args(int argc, char **argv, struct sim_opts *o)
{
    static const struct option lo[] = {{"scenario", 1, 0, O_SCN},
                                       {"host", 1, 0, O_HOST},
                                       {"trace", 1, 0, O_TRACE},
                                       {"seq-mean-ms", 1, 0, O_SEQM},
                                       {"seq-stdev-pct", 1, 0, O_SEQS},
                                       {"seq-calls", 1, 0, O_SEQC},
                                       {"seq-cpu-us", 1, 0, O_SEQCPU},
                                       {"set", 1, 0, O_SET},
                                       {"sweep", 1, 0, O_SWEEP},
                                       {"only", 1, 0, O_ONLY},
                                       {"seed", 1, 0, O_SEED},
                                       {"csv", 0, 0, O_CSV},
                                       {"json", 0, 0, O_JSON},
                                       {"no-params", 0, 0, O_NOP},
                                       {"plot", 1, 0, O_PLOT},
                                       {"measured", 1, 0, O_MEAS},
                                       {"list-params", 0, 0, O_LIST},
                                       {"help", 0, 0, 'h'},
                                       {0, 0, 0, 0}};
    int c, rc;

    memset(o, 0, sizeof(*o));
    o->seq_mean_ms = NAN;
    o->seq_stdev_pct = NAN;
    o->seq_cpu_us = NAN;
    o->seq_calls = 1000;
    optind = 1;
    opterr = 0; /* one line of our own instead of getopt's */
    while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        if ((rc = handle_opt(c, o, argc, argv)) != 0)
            return rc;
    }
    if (optind < argc)
        return usage_err("unexpected argument", argv[optind]);
    return 0;
}

/* "key=value" -> applied with origin cli. */
static int
apply_kv(struct sim_scenario *sc, const char *kv, const char *note,
         struct mt_err *err)
{
    char key[64];
    const char *eq = strchr(kv, '=');

    if (eq == NULL || eq == kv || (size_t)(eq - kv) >= sizeof(key))
        return mt_err_set(err, MT_EUSAGE, 0, "expected KEY=VALUE, got '%s'",
                          kv);
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    if (strcmp(key, "delay") == 0 && sc->p.proxy == SIM_PROXY_NONE &&
        strtod(eq + 1, NULL) > 0) {
        int rc = sim_scenario_apply(sc, "proxy", "deadline", SIM_OR_CLI,
                                    "delay sweep", err);
        if (rc < 0)
            return rc;
    }
    return sim_scenario_apply(sc, key, eq + 1, SIM_OR_CLI, note, err);
}

#define TRACES_MAX 8
static char trace_paths[TRACES_MAX][SIM_PATH_MAX];

/* Sets samples from the scenario's trace (loaded once per path, kept alive
 * in tl[]). */
static int
load_trace(struct sim_scenario *sc, struct sim_tracelat *tl, size_t *ntl,
           struct mt_err *err)
{
    int rc;
    int i = sim_params_find("server_us");
    size_t k;

    if (sc->trace[0] == '\0')
        return 0;
    for (k = 0; k < *ntl && strcmp(trace_paths[k], sc->trace) != 0; k++)
        ;
    if (k == *ntl) {
        if (*ntl >= TRACES_MAX)
            return mt_err_set(err, MT_ELIMIT, 0,
                              "too many different traces (max %d)", TRACES_MAX);
        if ((rc = sim_tracelat_load(sc->trace, &tl[k], err)) < 0)
            return rc;
        snprintf(trace_paths[k], SIM_PATH_MAX, "%s", sc->trace);
        (*ntl)++;
    }
    sc->p.server_samples_us = tl[k].us;
    sc->p.server_samples_n = tl[k].n;
    sc->p.origin[i] = SIM_OR_TRACE;
    snprintf(sc->p.note[i], SIM_NOTE_MAX,
             "%zu request->reply latencies of %.80s (%zu unmatched)", tl[k].n,
             sc->trace, tl[k].unmatched);
    return 0;
}

/* from == NULL: the source is the scenario itself. */
static void
copy_calibration(struct sim_params *dst, const struct sim_params *src,
                 const char *from)
{
    int ic = sim_params_find("py_call_us"), iv = sim_params_find("py_cv");
    char nc[SIM_NOTE_MAX], nv[SIM_NOTE_MAX];

    snprintf(nc, sizeof(nc), "%s", src->note[ic]);
    snprintf(nv, sizeof(nv), "%s", src->note[iv]);
    dst->py_call_us = src->py_call_us;
    dst->py_cv = src->py_cv;
    dst->origin[ic] = src->origin[ic];
    dst->origin[iv] = src->origin[iv];
    if (from == NULL) {
        snprintf(dst->note[ic], SIM_NOTE_MAX, "%s", nc);
        snprintf(dst->note[iv], SIM_NOTE_MAX, "%s", nv);
        return;
    }
    snprintf(dst->note[ic], SIM_NOTE_MAX, "%.100s (sequential run '%.30s')", nc,
             from);
    snprintf(dst->note[iv], SIM_NOTE_MAX, "%.100s (sequential run '%.30s')", nv,
             from);
}

/* Keys that describe the experiment rather than the host: a --sweep of one
 * of them does not change the setup a calibration was measured in. */
static bool
is_setup_key(const char *kv)
{
    static const char *const keys[] = {
        "name",     "runtime",       "threads",
        "calls",    "exclude_first", "pool_initial",
        "pool_max", "proxy",         "proxy_delay_ms",
        "delay",    "proxy_inline",  "think_us",
        "seed"};
    size_t n = strcspn(kv, "=");

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strlen(keys[i]) == n && strncmp(kv, keys[i], n) == 0)
            return true;
    return false;
}

static int
calibrate_all(struct sim_scenario_set *set, const struct sim_opts *o,
              struct mt_err *err)
{
    int rc;

    if (!isnan(o->seq_mean_ms)) { /* one sequential copy of each scenario */
        for (size_t i = 0; i < set->n; i++) {
            struct sim_scenario seq = set->v[i];
            seq.p = seq.cal_p; /* the measured run's setup */
            seq.p.threads = 1;
            seq.p.calls = o->seq_calls;
            seq.p.exclude_first = 1;
            seq.p.pool_initial = 0;
            rc = isnan(o->seq_cpu_us) ? sim_fit_seq(&seq.p, o->seq_mean_ms,
                                                    o->seq_stdev_pct, err)
                                      : sim_fit_seq_cpu(&seq.p, o->seq_cpu_us,
                                                        o->seq_stdev_pct, err);
            if (rc < 0)
                return rc;
            copy_calibration(&set->v[i].p, &seq.p, "--seq-mean-ms");
        }
    }
    for (size_t i = 0; i < set->n; i++) {
        struct sim_scenario *sc = &set->v[i];
        struct sim_params cp = sc->cal_p; /* the measured run's setup */
        if (isnan(sc->cal_mean_ms))
            continue;
        if (isnan(sc->cal_cpu_us))
            rc = sim_fit_seq(&cp, sc->cal_mean_ms, sc->cal_stdev_pct, err);
        else if (isnan(sc->cal_cpu_cv))
            rc = sim_fit_seq_cpu(&cp, sc->cal_cpu_us, sc->cal_stdev_pct, err);
        else if ((rc = sim_fit_seq_cpu(&cp, sc->cal_cpu_us, NAN, err)) == 0)
            rc = sim_fit_cv_cpu(&cp, sc->cal_cpu_us, sc->cal_cpu_cv, err);
        if (rc < 0) {
            char msg[sizeof(err->msg)];
            snprintf(msg, sizeof(msg), "%s", err->msg);
            return mt_err_set(err, rc, 0, "scenario '%s': %s", sc->p.name, msg);
        }
        copy_calibration(&sc->p, &cp, NULL);
    }
    for (size_t i = 0; i < set->n; i++) {
        struct sim_scenario *sc = &set->v[i];
        size_t k;
        if (sc->cal_from[0] == '\0')
            continue;
        for (k = 0; k < set->n && strcmp(set->v[k].p.name, sc->cal_from) != 0;
             k++)
            ;
        if (k == set->n || isnan(set->v[k].cal_mean_ms))
            return mt_err_set(err, MT_EUSAGE, 0,
                              "scenario '%s': calibrate_from '%s' is not a "
                              "calibrated scenario",
                              sc->p.name, sc->cal_from);
        copy_calibration(&sc->p, &set->v[k].p, sc->cal_from);
    }
    return 0;
}

/* Expands set by the sweep axes into out. */
static int
expand_sweeps(const struct sim_scenario_set *set, const struct sim_opts *o,
              struct sim_scenario_set *out, struct mt_err *err)
{
    char vals[SWEEP_AXES_MAX][SWEEP_VALS_MAX][32], keys[SWEEP_AXES_MAX][32];
    size_t nv[SWEEP_AXES_MAX], idx[SWEEP_AXES_MAX] = {0};
    int rc;

    for (size_t a = 0; a < o->nsweeps; a++) {
        const char *eq = strchr(o->sweeps[a], '='), *p;
        if (eq == NULL || eq == o->sweeps[a] || eq - o->sweeps[a] >= 32)
            return mt_err_set(err, MT_EUSAGE, 0,
                              "--sweep wants KEY=V1,V2,..: '%s'", o->sweeps[a]);
        snprintf(keys[a], sizeof(keys[a]), "%.*s", (int)(eq - o->sweeps[a]),
                 o->sweeps[a]);
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
            for (size_t a = 0; a < o->nsweeps; a++) {
                snprintf(kv, sizeof(kv), "%s=%s", keys[a], vals[a][idx[a]]);
                if ((rc = apply_kv(&sc, kv, "sweep", err)) < 0)
                    return rc;
                if (!is_setup_key(kv)) { /* a host fact: calibrate with it */
                    struct sim_scenario tmp = sc;
                    tmp.p = sc.cal_p;
                    if ((rc = apply_kv(&tmp, kv, "sweep", err)) < 0)
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
            while (a < o->nsweeps && ++idx[a] == nv[a])
                idx[a++] = 0;
            if (a == o->nsweeps)
                break;
        }
    }
    return 0;
}

static int
build_set(const struct sim_opts *o, struct sim_scenario_set *set,
          struct sim_tracelat *tl, size_t *ntl, struct mt_err *err)
{
    int rc;

    if (o->host && (rc = sim_scenario_load(set, o->host, true, err)) < 0)
        return rc;
    for (size_t i = 0; i < o->nscenario; i++)
        if ((rc = sim_scenario_load(set, o->scenario[i], false, err)) < 0)
            return rc;
    if (set->n == 0) {
        struct sim_scenario sc = set->base;
        if (o->nscenario == 0)
            snprintf(sc.p.name, sizeof(sc.p.name), "sim");
        if ((rc = sim_scenario_add(set, &sc)) < 0)
            return mt_err_set(err, rc, 0, "out of memory");
    }
    for (size_t i = 0; i < set->n; i++) {
        struct sim_scenario *sc = &set->v[i];
        for (size_t k = 0; k < o->nsets; k++)
            if ((rc = apply_kv(sc, o->sets[k], "--set", err)) < 0)
                return rc;
        if (o->seed && (rc = sim_scenario_apply(sc, "seed", o->seed, SIM_OR_CLI,
                                                "--seed", err)) < 0)
            return rc;
        if (o->trace)
            snprintf(sc->trace, sizeof(sc->trace), "%s", o->trace);
        if ((rc = load_trace(sc, tl, ntl, err)) < 0)
            return rc;
        sc->cal_p = sc->p; /* --sweep may change p, not the measured setup */
    }
    return 0;
}

static bool
params_differ(const struct sim_scenario *a, const struct sim_scenario *b)
{
    return a->model != b->model ||
           memcmp(&a->p, &b->p, offsetof(struct sim_params, origin)) != 0;
}

static int
run_all(const struct sim_opts *o, struct sim_scenario_set *run,
        struct mt_err *err)
{
    struct sim_row *rows = mt_calloc(run->n ? run->n : 1, sizeof(*rows));
    FILE *pout = o->fmt == SIM_FMT_TABLE ? stdout : stderr;
    int rc = 0, last_model = -1;

    if (rows == NULL)
        return mt_err_set(err, -ENOMEM, 0, "out of memory");
    for (size_t i = 0; i < run->n && rc == 0; i++) {
        struct sim_row *r = &rows[i];
        r->sc = &run->v[i];
        if (r->sc->model == SIM_MODEL_HERD) {
            rc = herd_run(&r->sc->hp, &r->herd, err);
        } else {
            rc = sim_model_run(&r->sc->p, &r->res, err);
            if (rc == 0 &&
                sim_stats_compute(r->res.lat_ns, r->res.n, &r->st) < 0)
                rc = mt_err_set(err, -ENOMEM, 0, "out of memory");
        }
        if (rc < 0) {
            char msg[sizeof(err->msg)];
            snprintf(msg, sizeof(msg), "%s", err->msg);
            mt_err_set(err, rc, 0, "scenario '%s' (seed %lld): %s",
                       r->sc->p.name, (long long)r->sc->p.seed, msg);
        }
    }
    for (size_t i = 0; i < run->n && rc == 0 && !o->no_params; i++)
        if (i == 0 || params_differ(&run->v[i], &run->v[0]) ||
            run->v[i].model == SIM_MODEL_HERD)
            sim_report_params(pout, &run->v[i]);
    for (size_t i = 0; i < run->n && rc == 0; i++) {
        if (rows[i].sc->model != last_model) {
            if (last_model >= 0 && o->fmt == SIM_FMT_TABLE)
                fputc('\n', stdout);
            sim_report_header(stdout, o->fmt, rows[i].sc->model);
            last_model = rows[i].sc->model;
        }
        sim_report_row(stdout, o->fmt, &rows[i]);
    }
    if (rc == 0 && o->plot)
        rc = sim_report_plot(rows, run->n, o->measured, o->plot, err);
    for (size_t i = 0; i < run->n; i++)
        sim_result_free(&rows[i].res);
    mt_free(rows);
    return rc;
}

int
sim_cli_main(int argc, char **argv)
{
    struct sim_opts o;
    struct sim_scenario_set set, run, sel;
    struct sim_tracelat tl[TRACES_MAX];
    size_t ntl = 0;
    struct mt_err err = {0};
    int rc;

    rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    memset(tl, 0, sizeof(tl));
    sim_scenario_set_init(&set);
    sim_scenario_set_init(&run);
    sim_scenario_set_init(&sel);
    rc = build_set(&o, &set, tl, &ntl, &err);
    if (rc == 0)
        rc = expand_sweeps(&set, &o, &run, &err);
    if (rc == 0) /* after the sweep: each grid point is calibrated for itself */
        rc = calibrate_all(&run, &o, &err);
    for (size_t i = 0; rc == 0 && i < run.n; i++)
        if (o.only == NULL || strstr(run.v[i].p.name, o.only))
            rc = sim_scenario_add(&sel, &run.v[i]);
    if (rc == 0 && sel.n == 0)
        rc = mt_err_set(&err, MT_EUSAGE, 0, "no scenario matches --only '%s'",
                        o.only);
    if (rc == 0)
        rc = run_all(&o, &sel, &err);
    sim_scenario_set_free(&set);
    sim_scenario_set_free(&run);
    sim_scenario_set_free(&sel);
    for (size_t i = 0; i < ntl; i++)
        sim_tracelat_free(&tl[i]);
    if (rc < 0) {
        fprintf(stderr, "mtrace sim: %s\n",
                err.msg[0] ? err.msg : mt_strerror(rc));
        return rc == MT_EUSAGE ? 2 : 1;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "mtrace sim: error writing the output\n");
        return 1;
    }
    return 0;
}

int
sim_calibrate_cli_main(int argc, char **argv)
{
    return sim_calibrate_main(argc, argv);
}
