/*
 * replay_summary.c -- the exit summary, text and JSON (see
 * replay_summary.h).
 */
#include "replay_summary.h"

#include <errno.h>
#include <string.h>

#include "core/log.h"
#include "core/pmqos.h"

static double
ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* The TLS line: handshakes completed (by version, their time), failed
 * (by cause, the causes seen only) and aborted (when any). */
static void
print_tls(FILE *f, const struct tlsstats *t)
{
    const char *sep = " (";

    fprintf(f,
            "mtrace replay: TLS: %llu handshakes completed (TLSv1.2 %llu, "
            "TLSv1.3 %llu",
            (unsigned long long)t->completed,
            (unsigned long long)t->version[TLSSTATS_TLS12],
            (unsigned long long)t->version[TLSSTATS_TLS13]);
    if (t->version[TLSSTATS_VERSION_OTHER] > 0)
        fprintf(f, ", other %llu",
                (unsigned long long)t->version[TLSSTATS_VERSION_OTHER]);
    fprintf(f,
            "; accept to completion p50 %.3f p99 %.3f max %.3f ms), %llu "
            "failed",
            ms(delay_hist_quantile(&t->time, 0.5)),
            ms(delay_hist_quantile(&t->time, 0.99)), ms(t->time.max_ns),
            (unsigned long long)tlsstats_failed(t));
    for (int i = 0; i < TLSSTATS_FAIL_N; i++) {
        if (t->failed[i] == 0)
            continue;
        fprintf(f, "%s%s %llu", sep, tlsstats_fail_text(i),
                (unsigned long long)t->failed[i]);
        sep = ", ";
    }
    if (sep[0] == ',')
        fputc(')', f);
    if (t->aborted > 0)
        fprintf(f, ", %llu aborted when replay stopped",
                (unsigned long long)t->aborted);
    fputc('\n', f);
}

/* Text summary line `line` (REPLAY_STATS_LINE_*): prefix, then the text
 * piece of each counter of that line, in list order. */
static void
print_line(FILE *f, const struct replay_stats *st, int line, const char *prefix)
{
    fputs(prefix, f);
#define XX(field, key, ln, text)                                               \
    if ((ln) == line)                                                          \
        fprintf(f, text, (unsigned long long)st->field);
    REPLAY_STATS_COUNTERS(XX)
#undef XX
    fputc('\n', f);
}

/* See replay_summary.h. */
void
replay_summary_print(FILE *f, const struct replay_stats *st, bool auth,
                     bool tls)
{
    const struct delay_hist *q = &st->requested, *a = &st->achieved,
                            *l = &st->late;

    print_line(f, st, REPLAY_STATS_LINE_COUNTS, "mtrace replay: ");
    if (auth || st->auth_failed > 0)
        print_line(f, st, REPLAY_STATS_LINE_AUTH,
                   "mtrace replay: authentication: ");
    if (tls)
        print_tls(f, &st->tls);
    fprintf(f,
            "mtrace replay: delay (ms, n=%llu) requested p50 %.3f p99 %.3f "
            "max %.3f | achieved p50 %.3f p99 %.3f max %.3f | late p50 %.3f "
            "p99 %.3f max %.3f\n",
            (unsigned long long)a->n, ms(delay_hist_quantile(q, 0.5)),
            ms(delay_hist_quantile(q, 0.99)), ms(q->max_ns),
            ms(delay_hist_quantile(a, 0.5)), ms(delay_hist_quantile(a, 0.99)),
            ms(a->max_ns), ms(delay_hist_quantile(l, 0.5)),
            ms(delay_hist_quantile(l, 0.99)), ms(l->max_ns));
    fprintf(f,
            "mtrace replay: timer wake-ups %llu (lateness p50 %.1f p99 %.1f "
            "max %.1f us), spin window %.1f us, %llu busy polls; reply "
            "write() p50 %.1f p99 %.1f us; request read lag p50 %.1f p99 "
            "%.1f us\n",
            (unsigned long long)st->wake.wakes, st->wake.p50_ns / 1e3,
            st->wake.p99_ns / 1e3, st->wake.max_ns / 1e3,
            st->wake.spin_ns / 1e3, (unsigned long long)st->wake.spins,
            delay_hist_quantile(&st->write, 0.5) / 1e3,
            delay_hist_quantile(&st->write, 0.99) / 1e3,
            delay_hist_quantile(&st->read_lag, 0.5) / 1e3,
            delay_hist_quantile(&st->read_lag, 0.99) / 1e3);
    fprintf(f,
            "mtrace replay: timed releases: first of their batch %llu (late "
            "p99 %.1f us), queued behind others %llu (late p99 %.1f us), "
            "largest batch %llu; connections per loop %llu..%llu\n",
            (unsigned long long)st->late_first.n,
            delay_hist_quantile(&st->late_first, 0.99) / 1e3,
            (unsigned long long)st->late_queued.n,
            delay_hist_quantile(&st->late_queued, 0.99) / 1e3,
            (unsigned long long)st->batch_max,
            (unsigned long long)st->loop_conns_min,
            (unsigned long long)st->loop_conns_max);
}

/* See replay_summary.h. */
void
replay_summary_print_pmqos(FILE *f, const struct replay_pmqos_seen *p)
{
    char kern[48] = "unreadable";

    if (p->kernel_us >= 0)
        snprintf(kern, sizeof(kern), "%d us", p->kernel_us);
    if (p->held_us >= 0)
        fprintf(f,
                "mtrace replay: CPU wake-up latency request: held %d us "
                "through %s from start to exit (kernel bound while serving: "
                "%s)\n",
                p->held_us, PMQOS_DEV, kern);
    else
        fprintf(f,
                "mtrace replay: CPU wake-up latency request: none "
                "(--cpu-dma-latency not given; kernel bound while serving: "
                "%s)\n",
                kern);
}

static void
json_hist(FILE *f, const char *name, const struct delay_hist *h)
{
    fprintf(f,
            "\"%s\":{\"n\":%llu,\"mean_ms\":%.6f,\"p50_ms\":%.6f,"
            "\"p90_ms\":%.6f,\"p99_ms\":%.6f,\"max_ms\":%.6f}",
            name, (unsigned long long)h->n,
            h->n ? h->sum_ns / (double)h->n / 1e6 : 0.0,
            ms(delay_hist_quantile(h, 0.5)), ms(delay_hist_quantile(h, 0.9)),
            ms(delay_hist_quantile(h, 0.99)), ms(h->max_ns));
}

/* "tls":{...}, of a replay with --tls-cert (docs/replay.md). */
static void
json_tls(FILE *f, const struct tlsstats *t)
{
    fprintf(f, "\"tls\":{\"completed\":%llu,\"versions\":{",
            (unsigned long long)t->completed);
    for (int i = 0; i < TLSSTATS_VERSION_N; i++)
        fprintf(f, "%s\"%s\":%llu", i ? "," : "", tlsstats_version_name(i),
                (unsigned long long)t->version[i]);
    fprintf(f, "},\"failed\":%llu,\"failed_by\":{",
            (unsigned long long)tlsstats_failed(t));
    for (int i = 0; i < TLSSTATS_FAIL_N; i++)
        fprintf(f, "%s\"%s\":%llu", i ? "," : "", tlsstats_fail_key(i),
                (unsigned long long)t->failed[i]);
    fprintf(f, "},\"aborted\":%llu,", (unsigned long long)t->aborted);
    json_hist(f, "handshake", &t->time);
    fputs("},", f);
}

/* See replay_summary.h. */
int
replay_summary_json(FILE *f, const char *path, const struct replay_stats *st,
                    bool tls, const struct replay_pmqos_seen *p)
{
    const char *sep = "{";

#define XX(field, key, line, text)                                             \
    fprintf(f, "%s\"%s\":%llu", sep, key, (unsigned long long)st->field);      \
    sep = ",";
    REPLAY_STATS_COUNTERS(XX)
#undef XX
    fputc(',', f);
    if (tls)
        json_tls(f, &st->tls);
    else
        fputs("\"tls\":null,", f);
    if (p->held_us >= 0)
        fprintf(f, "\"cpu_dma_latency_us\":%d,", p->held_us);
    else
        fputs("\"cpu_dma_latency_us\":null,", f);
    if (p->kernel_us >= 0)
        fprintf(f, "\"cpu_latency_bound_us\":%d,", p->kernel_us);
    else
        fputs("\"cpu_latency_bound_us\":null,", f);
    sep = "";
#define XH(field, key)                                                         \
    fputs(sep, f);                                                             \
    json_hist(f, key, &st->field);                                             \
    sep = ",";
    REPLAY_STATS_HISTS(XH)
#undef XH
    fprintf(f,
            ",\"batch_max\":%llu,\"loop_conns_min\":%llu,"
            "\"loop_conns_max\":%llu",
            (unsigned long long)st->batch_max,
            (unsigned long long)st->loop_conns_min,
            (unsigned long long)st->loop_conns_max);
    fprintf(f,
            ",\"wake\":{\"wakes\":%llu,\"p50_us\":%.3f,\"p99_us\":%.3f,"
            "\"max_us\":%.3f,\"spin_us\":%.3f,\"spins\":%llu}}\n",
            (unsigned long long)st->wake.wakes, st->wake.p50_ns / 1e3,
            st->wake.p99_ns / 1e3, st->wake.max_ns / 1e3,
            st->wake.spin_ns / 1e3, (unsigned long long)st->wake.spins);
    if (ferror(f) != 0 || fclose(f) != 0) {
        mt_error("replay: cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
