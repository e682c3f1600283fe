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
#include "predict.h"
#include "report.h"
#include "scenario.h"
#include "sim_grid.h"
#include "tracelat.h"

#define SETS_MAX 64

static const char sim_usage[] =
    "usage: mtrace sim [options]\n"
    "Predicts client latency (mean, stdev%, p50, p99, each with its range\n"
    "over seeds and calibrations), the operational-law bounds and the\n"
    "resource that binds (gil, cores, lock, pool, delay), by discrete-event\n"
    "simulation: client threads under CPython's GIL or free-threaded, the\n"
    "driver's lock, connection and session pools, CPU cores, a proxy and a\n"
    "server (docs/sim-model.md).\n"
    "\n"
    "One what-if without a scenario file:\n"
    "  mtrace sim --host host.txt --seq-mean-ms 0.25 --threads 20 "
    "--delay-ms 2\n"
    "\n"
    "Setup:\n"
    "  --threads N         client threads (default 1)\n"
    "  --calls N           calls per thread (default 100)\n"
    "  --delay-ms X        delay added to each reply (a deadline, as\n"
    "                      `mtrace replay --delay-ms`, unless --proxy serial)\n"
    "  --runtime RT        gil | free-threaded (default gil)\n"
    "  --proxy MODE        none | deadline | serial\n"
    "  --pool-max N, --pool-initial N, --session-prefill N\n"
    "                      connection pool size, connections and server\n"
    "                      sessions open at the start (100, 1, 1)\n"
    "  --seeds N           runs per prediction (default 10)\n"
    "  --seed N            the first seed (default 1)\n"
    "Facts:\n"
    "  --host FILE         host facts written by `mtrace calibrate` (origin "
    "measured);\n"
    "                      without it the host facts are placeholders\n"
    "  --trace FILE        trace of the sequential run: the server's times\n"
    "                      are its request->reply latencies (origin trace)\n"
    "  --seq-mean-ms M[,M2..]   the sequential run's mean, one value per\n"
    "                      repetition: py_call_us solved from each\n"
    "  --seq-stdev-pct S[,..]   its stdev%: py_cv solved from it\n"
    "  --seq-cpu-us C[,..] its client thread CPU per call (time.thread_time):\n"
    "                      py_call_us from it instead of from the mean\n"
    "  --seq-cpu-cv V[,..] the cv of that CPU over the calls: py_cv\n"
    "  --seq-xcore-cpu-us A[,..]  its CPU per call with the thread moved to\n"
    "                      the other of two CPUs before the call and before\n"
    "                      each receive (every Python segment moved), and\n"
    "  --seq-pinned-cpu-us P[,..] kept on one CPU, in interleaved blocks:\n"
    "                      xcore_frac = A / P - 1 of the Python's CPU\n"
    "  --seq-cpu-at D:C[,D:C..]  the client CPU per call C us of sequential\n"
    "                      runs at delays D ms: py_call_us from the smallest\n"
    "                      delay's, and the idle curve (a step whose core\n"
    "                      idled costs more, as the longer delays' did)\n"
    "  --seq-delay-ms X    the delay the sequential run had (default 0)\n"
    "  --seq-runtime RT    its runtime (default: the row's)\n"
    "  --lock-sections N   driver-lock sections per call (sequential run)\n"
    "  --lock-hold-us H    CPU inside one section (sequential run)\n"
    "  --lock-before N     of those, the sections before the send (default:\n"
    "                      half, rounded up)\n"
    "  --set KEY=VALUE     set a parameter (repeatable; --list-params)\n"
    "  --scenario FILE     run the scenarios of FILE (repeatable; format in\n"
    "                      docs/sim-model.md)\n"
    "Grid and output:\n"
    "  --sweep KEY=V1,V2   what-if grid over KEY (repeatable, up to 4 axes;\n"
    "                      words after it of the form KEY=V1,.. are axes "
    "too);\n"
    "                      'delay' is proxy_delay_ms; without a value list\n"
    "                      (--sweep alone) threads=2,4,10,20 x "
    "delay=0,0.5,1,2\n"
    "  --only TEXT         run only scenarios whose name contains TEXT\n"
    "  --csv               CSV instead of a table\n"
    "  --json              one JSON object per scenario and line\n"
    "  --no-params         leave out the parameter/origin block\n"
    "  --plot FILE.png     draw latency CDFs (first run) with gnuplot\n"
    "  --measured FILE     measured latencies to draw too ('LABEL MS' lines)\n"
    "  --list-params       the parameter table (unit, default, origin,\n"
    "                      meaning, source), and exit\n"
    "  -h, --help          this help\n"
    "\n"
    "The parameter block (stdout for tables, stderr for --csv/--json) prints "
    "each\n"
    "value with its origin: source, assumption, measured, trace, calibrated,\n"
    "scenario or cli.  The same inputs give byte-identical output.\n"
    "Exit status: 0 ok, 1 runtime failure, 2 bad usage.\n";

struct sim_opts {
    const char *scenario[8];
    size_t nscenario;
    const char *host, *trace, *plot, *measured, *only;
    struct sim_seq_in seq; /* --seq-*: the sequential run */
    const char *sets[SETS_MAX];
    size_t nsets;
    const char *sweeps[SWEEP_AXES_MAX];
    size_t nsweeps;
    bool sweep_default;
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
     "X[,X2..]: sequential runs measured at these means: py_call_us solved "
     "from each (one calibration per value)"},
    {"calibrate.seq_stdev_pct", "", "their stdev%: py_cv solved from it"},
    {"calibrate.seq_cpu_us", "us",
     "their client CPU per call: py_call_us from it instead of the mean"},
    {"calibrate.seq_cpu_cv", "",
     "the coefficient of variation of that CPU: py_cv from it"},
    {"calibrate.seq_cpu_at", "ms:us",
     "D:C[,D:C..]: the CPU per call of sequential runs at delays D: "
     "py_call_us from the smallest delay's, and the idle curve"},
    {"calibrate.seq_xcore_cpu_us", "us",
     "their CPU per call with each Python segment on the other of two "
     "CPUs: xcore_frac from it"},
    {"calibrate.seq_pinned_cpu_us", "us",
     "their CPU per call kept on one CPU, interleaved with those: "
     "xcore_frac's base"},
    {"calibrate_from", "", "NAME: the calibrations of scenario NAME"},
    {"measured.mean_ms", "ms",
     "measured mean, printed beside the prediction (never used by the "
     "model)"},
    {"measured.stdev_pct", "", "measured stdev%, likewise"},
    {"measured.total_s", "s", "measured total time (herd), likewise"},
    {"trace", "", "PATH: server service times from a trace (as --trace)"},
    {"delay", "ms", "alias of proxy_delay_ms"},
};

static void
list_class(int pclass, const char *title)
{
    printf("%s\n", title);
    for (size_t i = 0; i < sim_param_count; i++) {
        const struct sim_param_desc *d = &sim_param_table[i];
        if (d->pclass != pclass)
            continue;
        printf("  %-20s %-3s %-8s %-10s %s\n", d->key, d->unit,
               d->def[0] ? d->def : "\"\"", sim_origin_name(d->def_origin),
               d->help);
        printf("  %-20s %-3s %-8s %-10s   set by: %s\n", "", "", "", "",
               d->source);
    }
}

static void
list_params(void)
{
    char title[96];

    printf("  %-20s %-3s %-8s %-10s %s\n", "name", "unit", "default", "origin",
           "meaning / what sets it");
    snprintf(title, sizeof(title), "contention model: %zu parameters",
             sim_params_class_count(SIM_PC_MODEL));
    list_class(SIM_PC_MODEL, title);
    list_class(SIM_PC_SETUP, "setup (the experiment, not model parameters)");
    snprintf(title, sizeof(title), "herd model (model = herd): %zu parameters",
             sim_params_class_count(SIM_PC_HERD_MODEL));
    list_class(SIM_PC_HERD_MODEL, title);
    list_class(SIM_PC_HERD_SETUP, "herd setup");
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
    O_SEQCPU,
    O_SEQCV,
    O_SEQX,
    O_SEQPIN,
    O_SEQAT,
    O_SEQD,
    O_SEQRT,
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
    O_SCN,
    O_KEY /* a setup shortcut: --KEY V is --set key=V (opt_keys) */
};

/* Shortcut options and the key each sets. */
static const char *const opt_keys[][2] = {
    {"threads", "threads"},
    {"calls", "calls"},
    {"delay-ms", "delay"},
    {"runtime", "runtime"},
    {"proxy", "proxy"},
    {"pool-max", "pool_max"},
    {"pool-initial", "pool_initial"},
    {"session-prefill", "session_prefill"},
    {"seeds", "seeds"},
    {"lock-sections", "lock_sections"},
    {"lock-hold-us", "lock_hold_us"},
    {"lock-before", "lock_before"},
};
#define OPT_KEYS_N (sizeof(opt_keys) / sizeof(opt_keys[0]))
static char key_sets[OPT_KEYS_N * 4][96];
static size_t nkey_sets;

static int
add_set(struct sim_opts *o, const char *kv)
{
    if (o->nsets == SETS_MAX)
        return usage_err("too many --set", NULL);
    o->sets[o->nsets++] = kv;
    return 0;
}

/* One option of `mtrace sim`.  Returns 0 to go on, 1 to exit 0 (help),
 * or 2 (bad usage, message printed). */
static int
handle_opt(int c, int idx, struct sim_opts *o, int argc, char **argv)
{
    struct mt_err e = {0};
    char *end;

    if (c >= O_KEY && c < O_KEY + (int)OPT_KEYS_N) {
        if (nkey_sets == sizeof(key_sets) / sizeof(key_sets[0]))
            return usage_err("too many setup options", NULL);
        snprintf(key_sets[nkey_sets], sizeof(key_sets[0]), "%s=%s",
                 opt_keys[c - O_KEY][1], optarg);
        return add_set(o, key_sets[nkey_sets++]);
    }
    (void)idx;
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
    case O_SEQCPU:
    case O_SEQCV:
    case O_SEQX:
    case O_SEQPIN:
        if (sim_scenario_parse_list(&o->seq.cal, argv[optind - 1], optarg,
                                    c == O_SEQM     ? o->seq.cal.mean_ms
                                    : c == O_SEQS   ? o->seq.cal.stdev_pct
                                    : c == O_SEQCPU ? o->seq.cal.cpu_us
                                    : c == O_SEQCV  ? o->seq.cal.cpu_cv
                                    : c == O_SEQX   ? o->seq.cal.xcore_cpu_us
                                                    : o->seq.cal.pinned_cpu_us,
                                    &e) < 0)
            return usage_err(e.msg, NULL);
        break;
    case O_SEQAT:
        if (sim_scenario_parse_at(&o->seq.cal, argv[optind - 1], optarg, &e) <
            0)
            return usage_err(e.msg, NULL);
        break;
    case O_SEQD:
        o->seq.delay_ms = strtod(optarg, &end);
        if (*end || end == optarg || !(o->seq.delay_ms >= 0) ||
            !isfinite(o->seq.delay_ms))
            return usage_err("--seq-delay-ms wants a number >= 0", optarg);
        break;
    case O_SEQRT:
        if (strcmp(optarg, "gil") != 0 && strcmp(optarg, "free-threaded") != 0)
            return usage_err("--seq-runtime wants gil or free-threaded",
                             optarg);
        o->seq.runtime = optarg;
        break;
    case O_SET:
        return add_set(o, optarg);
    case O_SWEEP:
        if (optarg == NULL && optind < argc && argv[optind][0] != '-' &&
            strchr(argv[optind], '='))
            optarg = argv[optind++]; /* --sweep KEY=V1,.. */
        if (optarg == NULL) {
            o->sweep_default = true;
            break;
        }
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
                                       {"seq-cpu-us", 1, 0, O_SEQCPU},
                                       {"seq-cpu-cv", 1, 0, O_SEQCV},
                                       {"seq-xcore-cpu-us", 1, 0, O_SEQX},
                                       {"seq-pinned-cpu-us", 1, 0, O_SEQPIN},
                                       {"seq-cpu-at", 1, 0, O_SEQAT},
                                       {"seq-delay-ms", 1, 0, O_SEQD},
                                       {"seq-runtime", 1, 0, O_SEQRT},
                                       {"set", 1, 0, O_SET},
                                       {"sweep", 2, 0, O_SWEEP},
                                       {"only", 1, 0, O_ONLY},
                                       {"seed", 1, 0, O_SEED},
                                       {"csv", 0, 0, O_CSV},
                                       {"json", 0, 0, O_JSON},
                                       {"no-params", 0, 0, O_NOP},
                                       {"plot", 1, 0, O_PLOT},
                                       {"measured", 1, 0, O_MEAS},
                                       {"list-params", 0, 0, O_LIST},
                                       {"threads", 1, 0, O_KEY + 0},
                                       {"calls", 1, 0, O_KEY + 1},
                                       {"delay-ms", 1, 0, O_KEY + 2},
                                       {"runtime", 1, 0, O_KEY + 3},
                                       {"proxy", 1, 0, O_KEY + 4},
                                       {"pool-max", 1, 0, O_KEY + 5},
                                       {"pool-initial", 1, 0, O_KEY + 6},
                                       {"session-prefill", 1, 0, O_KEY + 7},
                                       {"seeds", 1, 0, O_KEY + 8},
                                       {"lock-sections", 1, 0, O_KEY + 9},
                                       {"lock-hold-us", 1, 0, O_KEY + 10},
                                       {"lock-before", 1, 0, O_KEY + 11},
                                       {"help", 0, 0, 'h'},
                                       {0, 0, 0, 0}};
    int c, rc, idx = 0;

    memset(o, 0, sizeof(*o));
    nkey_sets = 0;
    sim_cal_in_init(&o->seq.cal);
    optind = 1;
    opterr = 0; /* one line of our own instead of getopt's */
    while ((c = getopt_long(argc, argv, ":h", lo, &idx)) != -1) {
        if ((rc = handle_opt(c, idx, o, argc, argv)) != 0)
            return rc;
    }
    if (optind < argc)
        return usage_err("unexpected argument", argv[optind]);
    if (o->sweep_default && o->nsweeps == 0) {
        o->sweeps[o->nsweeps++] = "threads=2,4,10,20";
        o->sweeps[o->nsweeps++] = "delay=0,0.5,1,2";
    }
    return 0;
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
            if ((rc = sim_grid_apply_kv(sc, o->sets[k], "--set", err)) < 0)
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

/* Host facts still at the table's placeholder default. */
static size_t
placeholders(const struct sim_scenario *sc, char *buf, size_t cap)
{
    static const char *const facts[] = {"cores",          "sys_us",
                                        "wake_us",        "ctx_cpu_us",
                                        "gil_handoff_us", "lock_block_cpu_us"};
    size_t n = 0, len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
        int k = sim_params_find(facts[i]);
        if (sc->p.origin[k] == sim_param_table[k].def_origin &&
            strcmp(sc->p.note[k], sim_param_table[k].source) == 0) {
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", n ? ", " : "",
                                    facts[i]);
            if (len >= cap)
                len = cap - 1;
            n++;
        }
    }
    return n;
}

static int
run_row(struct sim_row *r, struct mt_err *err)
{
    const struct sim_scenario *sc = r->sc;
    struct sim_params ps[SIM_CAL_MAX];
    const struct sim_params *pp[SIM_CAL_MAX];
    size_t n = sc->ncal ? sc->ncal : 1;

    if (sc->model == SIM_MODEL_HERD) {
        struct herd_params h = sc->p.herd;
        h.seed = sc->p.seed;
        return herd_run(&h, &r->herd, err);
    }
    for (size_t k = 0; k < n; k++) {
        ps[k] = sc->p;
        if (sc->ncal) {
            ps[k].py_call_us = sc->cal_py_us[k];
            ps[k].py_cv = sc->cal_py_cv[k];
            ps[k].xcore_frac = sc->cal_xcore[k];
        }
        pp[k] = &ps[k];
    }
    return sim_predict(pp, n, &r->pr, err);
}

static int
run_all(const struct sim_opts *o, struct sim_scenario_set *run,
        struct mt_err *err)
{
    struct sim_row *rows = mt_calloc(run->n ? run->n : 1, sizeof(*rows));
    FILE *pout = o->fmt == SIM_FMT_TABLE ? stdout : stderr;
    int rc = 0, last_model = -1;
    char ph[160];

    if (rows == NULL)
        return mt_err_set(err, -ENOMEM, 0, "out of memory");
    for (size_t i = 0; i < run->n && rc == 0; i++) {
        struct sim_row *r = &rows[i];
        r->sc = &run->v[i];
        rc = run_row(r, err);
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
    if (rc == 0 && run->n > 0 && run->v[0].model == SIM_MODEL_CONTENTION &&
        placeholders(&run->v[0], ph, sizeof(ph)) > 0)
        fprintf(stderr,
                "mtrace sim: note: %s%s: the host facts %s are placeholders, "
                "not this machine's (mtrace calibrate -o host.txt measures "
                "them)\n",
                o->host ? "not in " : "no --host", o->host ? o->host : "", ph);
    for (size_t i = 0; i < run->n && rc == 0; i++) {
        if (rows[i].sc->model != last_model) {
            if (last_model >= 0 && o->fmt == SIM_FMT_TABLE)
                fputc('\n', stdout);
            sim_report_header(stdout, o->fmt, rows[i].sc->model);
            last_model = rows[i].sc->model;
        }
        sim_report_row(stdout, o->fmt, &rows[i]);
    }
    if (rc == 0 && o->fmt == SIM_FMT_TABLE &&
        last_model == SIM_MODEL_CONTENTION)
        printf("# mean/stdev%%: median [5th-95th percentile] of %lld seeds x "
               "calibrations; binds: the resource of the operational-law "
               "bound (delay: none saturates)\n",
               (long long)run->v[0].p.seeds);
    if (rc == 0 && o->plot)
        rc = sim_report_plot(rows, run->n, o->measured, o->plot, err);
    for (size_t i = 0; i < run->n; i++)
        sim_pred_free(&rows[i].pr);
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
        rc = sim_grid_expand(&set, o.sweeps, o.nsweeps, &run, &err);
    if (rc == 0) /* after the sweep: each grid point is calibrated for itself */
        rc = sim_grid_calibrate(&run, &o.seq, &err);
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
