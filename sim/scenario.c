/*
 * scenario.c -- scenario and host-facts file parser (format in scenario.h).
 */
#include "scenario.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/mem.h"

void
sim_cal_in_init(struct sim_cal_in *cal)
{
    memset(cal, 0, sizeof(*cal));
    for (size_t i = 0; i < SIM_CAL_MAX; i++)
        cal->mean_ms[i] = cal->stdev_pct[i] = cal->cpu_us[i] = cal->cpu_cv[i] =
            cal->xcore_cpu_us[i] = cal->pinned_cpu_us[i] = NAN;
}

static void
scenario_defaults(struct sim_scenario *sc)
{
    memset(sc, 0, sizeof(*sc));
    sim_params_default(&sc->p);
    sim_cal_in_init(&sc->cal);
    sc->meas_mean_ms = NAN;
    sc->meas_stdev_pct = NAN;
    sc->meas_total_s = NAN;
}

void
sim_scenario_set_init(struct sim_scenario_set *s)
{
    memset(s, 0, sizeof(*s));
    scenario_defaults(&s->base);
}

void
sim_scenario_set_free(struct sim_scenario_set *s)
{
    if (s == NULL)
        return;
    mt_free(s->v);
    s->v = NULL;
    s->n = 0;
}

int
sim_scenario_add(struct sim_scenario_set *s, const struct sim_scenario *sc)
{
    struct sim_scenario *nv;

    if (s->n >= SIM_SCN_MAX)
        return MT_ELIMIT;
    nv = mt_realloc(s->v, (s->n + 1) * sizeof(*nv));
    if (nv == NULL)
        return -ENOMEM;
    s->v = nv;
    s->v[s->n++] = *sc;
    return 0;
}

static int
parse_double(const char *key, const char *v, double *out, struct mt_err *err)
{
    char *end;

    errno = 0;
    *out = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(*out))
        return mt_err_set(err, MT_EUSAGE, 0, "%s: '%s' is not a number", key,
                          v);
    return 0;
}

/* The next comma-separated item of *p into buf (cap bytes), *p past it and
 * its comma; false when it is empty or does not fit. */
static bool
next_item(const char **p, char *buf, size_t cap)
{
    size_t len = strcspn(*p, ",");

    if (len == 0 || len >= cap)
        return false;
    memcpy(buf, *p, len);
    buf[len] = '\0';
    *p += len + ((*p)[len] == ',');
    return true;
}

/* "X[,X2..]": positive numbers, one per sequential repetition. */
int
sim_scenario_parse_list(struct sim_cal_in *cal, const char *key,
                        const char *val, double *out, struct mt_err *err)
{
    const char *p = val;
    size_t n = 0;

    while (*p) {
        char num[64];
        double v;
        int rc;

        if (n == SIM_CAL_MAX || !next_item(&p, num, sizeof(num)))
            return mt_err_set(err, MT_EUSAGE, 0,
                              "%s: '%s' is not a list of at most %d numbers",
                              key, val, SIM_CAL_MAX);
        if ((rc = parse_double(key, num, &v, err)) < 0)
            return rc;
        if (!(v >= 0))
            return mt_err_set(err, MT_EUSAGE, 0, "%s: '%s' is negative", key,
                              num);
        out[n++] = v;
    }
    if (n == 0)
        return mt_err_set(err, MT_EUSAGE, 0, "%s: no value", key);
    for (size_t i = n; i < SIM_CAL_MAX; i++)
        out[i] = NAN;
    if (n > cal->n)
        cal->n = n;
    return 0;
}

/* "D:C[,D:C..]": the CPU per call C us of sequential runs at delays D ms
 * (the idle curve; at most SIM_IDLE_MAX points). */
int
sim_scenario_parse_at(struct sim_cal_in *cal, const char *key, const char *val,
                      struct mt_err *err)
{
    const char *p = val;
    size_t n = 0;

    while (*p) {
        char num[64], *colon;
        double d, c;
        int rc;

        if (n == SIM_IDLE_MAX || !next_item(&p, num, sizeof(num)))
            return mt_err_set(err, MT_EUSAGE, 0,
                              "%s: '%s' is not a list of at most %d "
                              "DELAY_MS:CPU_US pairs",
                              key, val, SIM_IDLE_MAX);
        if ((colon = strchr(num, ':')) == NULL)
            return mt_err_set(err, MT_EUSAGE, 0,
                              "%s: '%s' is not DELAY_MS:CPU_US", key, num);
        *colon = '\0';
        if ((rc = parse_double(key, num, &d, err)) < 0 ||
            (rc = parse_double(key, colon + 1, &c, err)) < 0)
            return rc;
        if (!(d >= 0) || !(c > 0))
            return mt_err_set(err, MT_EUSAGE, 0,
                              "%s: delay %s or CPU %s out of range", key, num,
                              colon + 1);
        cal->at_delay_ms[n] = d;
        cal->at_cpu_us[n] = c;
        n++;
    }
    if (n == 0)
        return mt_err_set(err, MT_EUSAGE, 0, "%s: no value", key);
    cal->at_n = n;
    if (cal->n == 0)
        cal->n = 1;
    return 0;
}

#define parse_list sim_scenario_parse_list

int
sim_scenario_apply(struct sim_scenario *sc, const char *key, const char *val,
                   int origin, const char *note, struct mt_err *err)
{
    if (strcmp(key, "model") == 0) {
        if (strcmp(val, "contention") == 0)
            sc->model = SIM_MODEL_CONTENTION;
        else if (strcmp(val, "herd") == 0)
            sc->model = SIM_MODEL_HERD;
        else
            return mt_err_set(err, MT_EUSAGE, 0,
                              "model: '%s' is not contention or herd", val);
        return 0;
    }
    if (strcmp(key, "calibrate.seq_mean_ms") == 0)
        return parse_list(&sc->cal, key, val, sc->cal.mean_ms, err);
    if (strcmp(key, "calibrate.seq_stdev_pct") == 0)
        return parse_list(&sc->cal, key, val, sc->cal.stdev_pct, err);
    if (strcmp(key, "calibrate.seq_cpu_us") == 0)
        return parse_list(&sc->cal, key, val, sc->cal.cpu_us, err);
    if (strcmp(key, "calibrate.seq_cpu_cv") == 0)
        return parse_list(&sc->cal, key, val, sc->cal.cpu_cv, err);
    if (strcmp(key, "calibrate.seq_cpu_at") == 0)
        return sim_scenario_parse_at(&sc->cal, key, val, err);
    if (strcmp(key, "calibrate.seq_xcore_cpu_us") == 0)
        return parse_list(&sc->cal, key, val, sc->cal.xcore_cpu_us, err);
    if (strcmp(key, "calibrate.seq_pinned_cpu_us") == 0)
        return parse_list(&sc->cal, key, val, sc->cal.pinned_cpu_us, err);
    if (strcmp(key, "measured.mean_ms") == 0)
        return parse_double(key, val, &sc->meas_mean_ms, err);
    if (strcmp(key, "measured.stdev_pct") == 0)
        return parse_double(key, val, &sc->meas_stdev_pct, err);
    if (strcmp(key, "measured.total_s") == 0)
        return parse_double(key, val, &sc->meas_total_s, err);
    if (strcmp(key, "calibrate_from") == 0) {
        snprintf(sc->cal_from, sizeof(sc->cal_from), "%s", val);
        return 0;
    }
    if (strcmp(key, "trace") == 0) {
        snprintf(sc->trace, sizeof(sc->trace), "%s", val);
        return 0;
    }
    if (strcmp(key, "delay") == 0) /* sweep alias */
        key = "proxy_delay_ms";
    return sim_params_set(&sc->p, key, val, origin, note, err);
}

static char *
trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* "value [origin] note" -> value, origin, note (in place). */
static int
split_value(char *rhs, char **val, int *origin, char **note, struct mt_err *err)
{
    char *p = rhs, *close;

    *val = p;
    while (*p && !isspace((unsigned char)*p))
        p++;
    if (*p)
        *p++ = '\0';
    p = trim(p);
    *note = p;
    if (*p == '[') {
        close = strchr(p, ']');
        if (close == NULL)
            return mt_err_set(err, MT_EUSAGE, 0, "unclosed '[' in origin");
        *close = '\0';
        *origin = sim_origin_parse(p + 1);
        if (*origin < 0)
            return mt_err_set(err, MT_EUSAGE, 0, "unknown origin '%s'", p + 1);
        *note = trim(close + 1);
    }
    if (**val == '\0')
        return mt_err_set(err, MT_EUSAGE, 0, "missing value");
    return 0;
}

static int
load_line(struct sim_scenario_set *s, struct sim_scenario **cur, char *line,
          bool host, struct mt_err *err)
{
    char *l = trim(line), *eq, *key, *val, *note;
    int origin = host ? SIM_OR_MEASURED : SIM_OR_SCENARIO, rc;

    if (*l == '\0' || *l == '#')
        return 0;
    if (*l == '[') {
        char *close = strchr(l, ']');
        if (host || close == NULL || close == l + 1)
            return mt_err_set(err, MT_EUSAGE, 0, "bad section header '%s'", l);
        *close = '\0';
        if ((rc = sim_scenario_add(s, &s->base)) < 0)
            return mt_err_set(err, rc, 0, "too many scenarios (max %d)",
                              SIM_SCN_MAX);
        *cur = &s->v[s->n - 1];
        return sim_scenario_apply(*cur, "name", trim(l + 1), SIM_OR_SCENARIO,
                                  "label", err);
    }
    eq = strchr(l, '=');
    if (eq == NULL)
        return mt_err_set(err, MT_EUSAGE, 0, "expected 'key = value', got '%s'",
                          l);
    *eq = '\0';
    key = trim(l);
    if ((rc = split_value(trim(eq + 1), &val, &origin, &note, err)) < 0)
        return rc;
    if (host && sim_params_find(key) < 0) {
        mt_warn("host facts: '%s' is not a parameter of this mtrace "
                "sim (skipped)",
                key);
        return 0;
    }
    return sim_scenario_apply(*cur ? *cur : &s->base, key, val, origin, note,
                              err);
}

/* A directory, or a regular file with a NUL byte in its first 4 KiB (a
 * pcap, a trace), is refused before parsing: exit 1, not a line error. */
static int
check_text(FILE *f, const char *path, struct mt_err *err)
{
    struct stat st;
    char head[4096];
    size_t n;
    const char *nul;

    if (fstat(fileno(f), &st) < 0)
        return mt_err_set(err, -errno, 0, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return mt_err_set(err, -EISDIR, 0, "%s: %s", path, strerror(EISDIR));
    if (!S_ISREG(st.st_mode))
        return 0;
    n = fread(head, 1, sizeof(head), f);
    nul = memchr(head, '\0', n);
    if (nul != NULL)
        return mt_err_set(err, MT_ECORRUPT, 0,
                          "%s: not a text file (a NUL byte at offset %zu): "
                          "expected 'key = value' lines",
                          path, (size_t)(nul - head));
    rewind(f);
    return 0;
}

int
sim_scenario_load(struct sim_scenario_set *s, const char *path, bool host,
                  struct mt_err *err)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    struct sim_scenario *cur = NULL;
    size_t lineno = 0, content = 0;
    int rc = 0;

    if (f == NULL)
        return mt_err_set(err, -errno, 0, "%s: %s", path, strerror(errno));
    if ((rc = check_text(f, path, err)) < 0) {
        fclose(f);
        return rc;
    }
    errno = 0;
    while (fgets(line, sizeof(line), f)) {
        struct mt_err e = {0};
        const char *q = line + strspn(line, " \t\r\n");
        lineno++;
        content += *q != '\0' && *q != '#';
        if (strchr(line, '\n') == NULL && !feof(f)) {
            rc =
                mt_err_set(err, MT_EUSAGE, lineno,
                           "%s:%zu: line longer than 1023 bytes", path, lineno);
            break;
        }
        if ((rc = load_line(s, &cur, line, host, &e)) < 0) {
            mt_err_set(err, rc, lineno, "%s:%zu: %s", path, lineno, e.msg);
            break;
        }
        if (cur != NULL)
            cur = &s->v[s->n - 1]; /* v may have moved */
    }
    if (rc == 0 && ferror(f))
        rc = mt_err_set(err, errno ? -errno : -EIO, 0, "%s: read error (%s)",
                        path, strerror(errno ? errno : EIO));
    else if (rc == 0 && content == 0)
        rc = mt_err_set(err, MT_EUSAGE, 0,
                        "%s: no %s in the file (empty, or only comments)", path,
                        host ? "host facts" : "scenario");
    fclose(f);
    return rc;
}
