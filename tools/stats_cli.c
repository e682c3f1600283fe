/*
 * stats_cli.c -- `mtrace stats [--json] [--top N] TRACE`: connections,
 * messages by opcode and by command, request->reply latency per command
 * (count, mean, stdev%, p50, p90, p99, max in ms; nearest-rank
 * percentiles), failed replies by command and code, the N slowest
 * exchanges, unmatched requests and replies, the TLS handshakes of a proxy
 * capture by leg (counts, versions, ciphers, handshake time), and the
 * capture statistics recorded in the trace.
 *
 * Exit status: 0 success; 1 the trace could not be opened or is truncated
 * or damaged (the statistics of every complete record are printed, then
 * one line on stderr says what was lost); 2 bad usage.
 */
#include "stats_cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/trace.h"
#include "core/wire.h"
#include "tools/compare.h"
#include "tools/msginfo.h"
#include "tools/stats.h"
#include "tools/tool_args.h"

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: mtrace stats [--json] [--top N] TRACE.zst\n"
            "       mtrace stats --compare A.zst B.zst [--json]\n"
            "\n"
            "Summarise a trace: connections, messages by opcode and by\n"
            "command, request->reply latency per command in ms (count, mean,\n"
            "stdev as %% of the mean, p50, p90, p99, max; a reply is paired\n"
            "with the request on its connection whose requestID is its\n"
            "responseTo), failed replies by command and error code (ok: 0,\n"
            "$err, QueryFailure; and write errors: writeErrors or a\n"
            "writeConcernError with ok: 1), unmatched requests and replies,\n"
            "the TLS handshakes of a proxy capture by leg (count, failures,\n"
            "versions, ciphers, handshake time) and the capture statistics\n"
            "recorded in the trace.\n"
            "\n"
            "  --json     one JSON object instead of text\n"
            "  --compare A B  per command, A against B: requests,\n"
            "             replies, mean/p50/p99 ms, errors by code,\n"
            "             replies differing in shape (docs/play.md)\n"
            "  --top N    also list the N slowest exchanges (1..1000): time,\n"
            "             connection and requestID, to find them with dump\n"
            "  -h, --help this text\n"
            "\n"
            "TRACE may be '-' for standard input.  Exit status: 0 success,\n"
            "1 unreadable, truncated or damaged trace (what could be read is\n"
            "summarised first), 2 bad usage.\n");
}

static const char *
op_name(int32_t op)
{
    return op == 0 ? "OP_UNKNOWN" : wire_opcode_name(op);
}

static double
duration_s(const struct stats *s)
{
    return s->msgs ? (double)(s->t_last - s->t_first) / 1e9 : 0.0;
}

static void
print_errors(FILE *out, const struct stats *s)
{
    if (s->nerrs == 0) {
        fprintf(out, "\nfailed replies: none\n");
        return;
    }
    fprintf(out, "\nfailed replies by command and code\n");
    fprintf(out, "  %-20s %-6s %8s  %-28s %9s\n", "command", "kind", "code",
            "codeName", "replies");
    for (size_t i = 0; i < s->nerrs; i++) {
        const struct stats_err *e = &s->errs[i];
        fprintf(out, "  %-20s %-6s %8" PRId32 "  %-28s %9" PRIu64 "\n", e->cmd,
                e->write ? "write" : "error", e->code,
                e->code_name[0] ? e->code_name : "-", e->n);
    }
    if (s->errs_other > 0)
        fprintf(out, "  %-20s %-6s %8s  %-28s %9" PRIu64 "\n", "(other)", "",
                "", "", s->errs_other);
}

static void
print_slowest(FILE *out, const struct stats *s)
{
    if (s->top == 0)
        return;
    if (s->nslow == 0) {
        fprintf(out, "\nslowest exchanges: none (no request->reply pair)\n");
        return;
    }
    fprintf(out, "\nslowest %zu exchanges (request->reply)\n", s->nslow);
    fprintf(out, "  %10s %11s %8s %10s  %-20s %-5s %s\n", "latency ms", "at s",
            "conn", "requestID", "command", "error", "namespace");
    for (size_t i = 0; i < s->nslow; i++) {
        const struct stats_slow *x = &s->slow[i];
        fprintf(
            out, "  %10.3f %11.6f %8" PRIu64 " %10" PRId32 "  %-20s %-5s %s\n",
            (double)x->lat_ns / 1e6, (double)(x->t_ns - s->t_first) / 1e9,
            x->conn_id, x->request_id, x->cmd, x->error ? "yes" : "", x->ns);
    }
}

static bool
has_tls(const struct stats *s)
{
    return s->tls[0].handshakes + s->tls[0].failed + s->tls[1].handshakes +
               s->tls[1].failed >
           0;
}

static void
print_tls_names(FILE *out, const char *what, const struct stats_tls_name *tab,
                size_t n)
{
    fprintf(out, "    %-9s", what);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s%s %" PRIu64, i ? ", " : " ", tab[i].name, tab[i].n);
    fputc('\n', out);
}

/* The TLS handshakes by leg; nothing for a trace without TLS records. */
static void
print_tls(FILE *out, struct stats *s)
{
    struct stats_sum sum;

    if (!has_tls(s))
        return;
    fprintf(out, "\nTLS handshakes by leg (ms, from the TCP accept / "
                 "connect to completion)\n");
    fprintf(out, "  %-8s %10s %6s %9s %9s %9s %9s %8s\n", "leg", "handshakes",
            "failed", "mean", "p50", "p99", "max", "verified");
    for (int leg = 0; leg < 2; leg++) {
        struct stats_tls *l = &s->tls[leg];
        if (l->handshakes + l->failed == 0)
            continue;
        stats_summarize(&l->time, &sum);
        fprintf(out, "  %-8s %10" PRIu64 " %6" PRIu64, trace_tls_leg_name(leg),
                l->handshakes, l->failed);
        if (sum.count > 0)
            fprintf(out, " %9.3f %9.3f %9.3f %9.3f", sum.mean_ms, sum.p50_ms,
                    sum.p99_ms, sum.max_ms);
        else
            fprintf(out, " %9s %9s %9s %9s", "-", "-", "-", "-");
        fprintf(out, " %8" PRIu64 "\n", l->peer_verified);
        if (l->handshakes == 0)
            continue;
        print_tls_names(out, "versions", l->versions, l->nversions);
        print_tls_names(out, "ciphers", l->ciphers, l->nciphers);
    }
}

static void
print_text(FILE *out, struct stats *s, const char *path)
{
    struct stats_sum sum;
    char t[sizeof(s->hdr.source_desc)];

    fprintf(out, "trace       %s (%s: %s)\n", path,
            trace_source_name(s->hdr.source),
            msginfo_printable(t, sizeof(t), s->hdr.source_desc));
    fprintf(out, "duration    %.6f s between the first and last message\n",
            duration_s(s));
    fprintf(out, "connections %" PRIu64 " opened, %" PRIu64 " closed\n",
            s->conns_opened, s->conns_closed);
    fprintf(out,
            "messages    %" PRIu64 " (%" PRIu64 " c2s, %" PRIu64
            " s2c), %" PRIu64 " bytes, %" PRIu64 " compressed",
            s->msgs, s->msgs_c2s, s->msgs_s2c, s->bytes, s->compressed);
    for (int i = 0, n = 0; i < 4; i++)
        if (s->by_compressor[i] > 0)
            fprintf(out, "%s%s %" PRIu64, n++ == 0 ? " (" : ", ",
                    wire_compressor_name((uint8_t)i), s->by_compressor[i]);
    fprintf(out, "%s, %" PRIu64 " malformed\n", s->compressed > 0 ? ")" : "",
            s->malformed);
    fprintf(out, "\nby opcode\n");
    for (size_t i = 0; i < s->nops; i++)
        fprintf(out, "  %-16s %10" PRIu64 "\n", op_name(s->ops[i].op_code),
                s->ops[i].n);
    fprintf(out, "\nrequest->reply latency by command (ms)\n");
    fprintf(out, "  %-20s %8s %8s %9s %7s %9s %9s %9s %9s %9s\n", "command",
            "requests", "replies", "unmatched", "mean", "stdev%", "p50", "p90",
            "p99", "max");
    for (size_t i = 0; i < s->ncmds; i++) {
        struct stats_cmd *c = &s->cmds[i];
        stats_summarize(c, &sum);
        fprintf(out, "  %-20s %8" PRIu64 " %8" PRIu64 " %9" PRIu64, c->name,
                c->requests, c->replies, c->unmatched);
        if (sum.count > 0)
            fprintf(out, " %7.3f %9.1f %9.3f %9.3f %9.3f %9.3f\n", sum.mean_ms,
                    sum.stdev_pct, sum.p50_ms, sum.p90_ms, sum.p99_ms,
                    sum.max_ms);
        else
            fprintf(out, " %7s %9s %9s %9s %9s %9s\n", "-", "-", "-", "-", "-",
                    "-");
    }
    print_errors(out, s);
    print_slowest(out, s);
    fprintf(out,
            "\nunmatched   %" PRIu64 " requests without a reply, %" PRIu64
            " replies without a request\n",
            s->unmatched_requests, s->unmatched_replies);
    fprintf(out,
            "other       %" PRIu64 " requests expecting no reply "
            "(moreToCome), %" PRIu64 " exhaust replies\n",
            s->no_reply_expected, s->exhaust_replies);
    if (s->pending_overflow || s->clock_backwards || s->samples_dropped)
        fprintf(out,
                "warnings    %" PRIu64 " requests not tracked (table full), "
                "%" PRIu64 " replies stamped before their request, %" PRIu64
                " latency samples beyond the limit (percentiles from the "
                "rest)\n",
                s->pending_overflow, s->clock_backwards, s->samples_dropped);
    if (s->auth_msgs)
        fprintf(out, "auth        %" PRIu64 " authentication messages\n",
                s->auth_msgs);
    print_tls(out, s);
    fprintf(out, "\ncapture statistics%s\n",
            s->capture.n ? "" : ": none recorded");
    for (size_t i = 0; i < s->capture.n; i++)
        fprintf(out, "  %-20s %" PRIu64 "\n",
                msginfo_printable(t, sizeof(t), s->capture.s[i].name),
                s->capture.s[i].value);
}

static void
json_num(FILE *out, const char *key, double v, bool comma)
{
    fprintf(out, "%s\"%s\":%.6f", comma ? "," : "", key, v);
}

/* {"count":N,"mean":..,"stdev_pct":..,"p50":..,"p90":..,"p99":..,"max":..}:
 * a latency summary in ms (stats --json latency_ms.*, tls.*.handshake_ms). */
static void
json_sum(FILE *out, const struct stats_sum *sum)
{
    fprintf(out, "{\"count\":%" PRIu64, sum->count);
    json_num(out, "mean", sum->mean_ms, true);
    json_num(out, "stdev_pct", sum->stdev_pct, true);
    json_num(out, "p50", sum->p50_ms, true);
    json_num(out, "p90", sum->p90_ms, true);
    json_num(out, "p99", sum->p99_ms, true);
    json_num(out, "max", sum->max_ms, true);
    fputc('}', out);
}

static void
print_json_cmds(FILE *out, struct stats *s)
{
    struct stats_sum sum;

    fputs(",\"by_command\":{", out);
    for (size_t i = 0; i < s->ncmds; i++) {
        struct stats_cmd *c = &s->cmds[i];
        if (i > 0)
            fputc(',', out);
        msginfo_json_str(out, c->name);
        fprintf(out,
                ":{\"requests\":%" PRIu64 ",\"replies\":%" PRIu64
                ",\"unmatched\":%" PRIu64 ",\"errors\":%" PRIu64
                ",\"write_errors\":%" PRIu64 "}",
                c->requests, c->replies, c->unmatched, c->errors,
                c->write_errors);
    }
    fputs("},\"latency_ms\":{", out);
    for (size_t i = 0, k = 0; i < s->ncmds; i++) {
        stats_summarize(&s->cmds[i], &sum);
        if (sum.count == 0)
            continue;
        if (k++ > 0)
            fputc(',', out);
        msginfo_json_str(out, s->cmds[i].name);
        fputc(':', out);
        json_sum(out, &sum);
    }
    fputc('}', out);
}

static void
print_json_failed(FILE *out, const struct stats *s)
{
    fputs(",\"failed_replies\":[", out);
    for (size_t i = 0; i < s->nerrs; i++) {
        const struct stats_err *e = &s->errs[i];
        fprintf(out, "%s{\"command\":", i ? "," : "");
        msginfo_json_str(out, e->cmd);
        fprintf(out, ",\"kind\":\"%s\",\"code\":%" PRId32 ",\"codeName\":",
                e->write ? "write" : "error", e->code);
        msginfo_json_str(out, e->code_name);
        fprintf(out, ",\"replies\":%" PRIu64 "}", e->n);
    }
    fprintf(out, "],\"failed_replies_other\":%" PRIu64, s->errs_other);
    if (s->top == 0)
        return;
    fputs(",\"slowest\":[", out);
    for (size_t i = 0; i < s->nslow; i++) {
        const struct stats_slow *x = &s->slow[i];
        fputs(i ? ",{" : "{", out);
        json_num(out, "latency_ms", (double)x->lat_ns / 1e6, false);
        json_num(out, "t_s", (double)(x->t_ns - s->t_first) / 1e9, true);
        fprintf(out,
                ",\"conn\":%" PRIu64 ",\"request_id\":%" PRId32
                ",\"error\":%s,\"command\":",
                x->conn_id, x->request_id, x->error ? "true" : "false");
        msginfo_json_str(out, x->cmd);
        fputs(",\"ns\":", out);
        msginfo_json_str(out, x->ns);
        fputc('}', out);
    }
    fputc(']', out);
}

static void
json_tls_names(FILE *out, const char *key, const struct stats_tls_name *tab,
               size_t n)
{
    fprintf(out, ",\"%s\":{", key);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            fputc(',', out);
        msginfo_json_str(out, tab[i].name);
        fprintf(out, ":%" PRIu64, tab[i].n);
    }
    fputc('}', out);
}

/* "tls": {"client": {...}, "target": {...}}: both legs, always. */
static void
print_json_tls(FILE *out, struct stats *s)
{
    struct stats_sum sum;

    fputs(",\"tls\":{", out);
    for (int leg = 0; leg < 2; leg++) {
        struct stats_tls *l = &s->tls[leg];
        stats_summarize(&l->time, &sum);
        fprintf(out,
                "%s\"%s\":{\"handshakes\":%" PRIu64 ",\"failed\":%" PRIu64
                ",\"resumed\":%" PRIu64 ",\"peer_cert\":%" PRIu64
                ",\"peer_verified\":%" PRIu64,
                leg ? "," : "", trace_tls_leg_name(leg), l->handshakes,
                l->failed, l->resumed, l->peer_cert, l->peer_verified);
        json_tls_names(out, "versions", l->versions, l->nversions);
        json_tls_names(out, "ciphers", l->ciphers, l->nciphers);
        fputs(",\"handshake_ms\":", out);
        json_sum(out, &sum);
        fputc('}', out);
    }
    fputc('}', out);
}

static void
print_json(FILE *out, struct stats *s, const char *path, const char *error)
{
    fputs("{\"trace\":", out);
    msginfo_json_str(out, path);
    fprintf(out, ",\"source\":\"%s\",\"source_desc\":",
            trace_source_name(s->hdr.source));
    msginfo_json_str(out, s->hdr.source_desc);
    json_num(out, "duration_s", duration_s(s), true);
    fprintf(out,
            ",\"connections\":{\"opened\":%" PRIu64 ",\"closed\":%" PRIu64
            "},\"messages\":{\"total\":%" PRIu64 ",\"c2s\":%" PRIu64
            ",\"s2c\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"compressed\":%" PRIu64
            ",\"malformed\":%" PRIu64 ",\"auth\":%" PRIu64,
            s->conns_opened, s->conns_closed, s->msgs, s->msgs_c2s, s->msgs_s2c,
            s->bytes, s->compressed, s->malformed, s->auth_msgs);
    fputs(",\"compressors\":{", out);
    for (int i = 0, n = 0; i < 4; i++)
        if (s->by_compressor[i] > 0)
            fprintf(out, "%s\"%s\":%" PRIu64, n++ == 0 ? "" : ",",
                    wire_compressor_name((uint8_t)i), s->by_compressor[i]);
    fputs("}}", out);
    fputs(",\"by_opcode\":{", out);
    for (size_t i = 0; i < s->nops; i++)
        fprintf(out, "%s\"%s\":%" PRIu64, i ? "," : "",
                op_name(s->ops[i].op_code), s->ops[i].n);
    fputc('}', out);
    print_json_cmds(out, s);
    print_json_failed(out, s);
    fprintf(out,
            ",\"unmatched\":{\"requests\":%" PRIu64 ",\"replies\":%" PRIu64
            "},\"no_reply_expected\":%" PRIu64 ",\"exhaust_replies\":%" PRIu64
            ",\"pending_overflow\":%" PRIu64 ",\"clock_backwards\":%" PRIu64
            ",\"samples_dropped\":%" PRIu64,
            s->unmatched_requests, s->unmatched_replies, s->no_reply_expected,
            s->exhaust_replies, s->pending_overflow, s->clock_backwards,
            s->samples_dropped);
    print_json_tls(out, s);
    fputs(",\"capture_stats\":{", out);
    for (size_t i = 0; i < s->capture.n; i++) {
        if (i > 0)
            fputc(',', out);
        msginfo_json_str(out, s->capture.s[i].name);
        fprintf(out, ":%" PRIu64, s->capture.s[i].value);
    }
    fprintf(out, "},\"complete\":%s,\"error\":", error ? "false" : "true");
    if (error)
        msginfo_json_str(out, error);
    else
        fputs("null", out);
    fputs("}\n", out);
}

/* Reads the whole trace into s; returns 0, or 1 with the first error in
 * err_msg (the reader resynchronises after a corrupt frame). */
static int
stats_read(struct stats *s, struct trace_reader *r, const char *path,
           char *err_msg, size_t cap)
{
    struct trace_rec rec;
    struct mt_err err;
    int rc, status = 0;

    for (;;) {
        rc = trace_reader_next(r, &rec, &err);
        if (rc == MT_END)
            break;
        if (rc < 0) {
            fprintf(stderr, "mtrace stats: %s: %s\n", path, err.msg);
            if (status == 0)
                snprintf(err_msg, cap, "%s", err.msg);
            status = 1;
            if (rc == MT_ECORRUPT || rc == MT_ETOOBIG)
                continue;
            break;
        }
        rc = stats_add(s, &rec);
        if (rc < 0) {
            fprintf(stderr, "mtrace stats: %s: %s\n", path, mt_strerror(rc));
            snprintf(err_msg, cap, "%s", mt_strerror(rc));
            return 1;
        }
    }
    return status;
}

int
stats_cli_main(int argc, char **argv)
{
    struct stats s;
    struct trace_reader *r;
    struct tool_args args;
    struct mt_err err = {0}; /* its msg: what the read lost */
    const char *path;
    int status;

    if (compare_requested(argc, argv))
        return compare_cli_main(argc, argv);
    r = tool_args_open("stats", "mtrace stats [--json] [--top N] TRACE.zst",
                       usage, STATS_TOP_MAX, argc, argv, &args, &status);
    if (r == NULL)
        return status;
    path = args.path;
    if (stats_init(&s) < 0 || stats_set_top(&s, args.top) < 0) {
        fprintf(stderr, "mtrace stats: out of memory\n");
        trace_reader_free(r);
        return 1;
    }
    /* The reader's header: the file's, or, when the first frame was
     * damaged and no header record comes, one that says so. */
    s.hdr = *trace_reader_header(r);
    status = stats_read(&s, r, path, err.msg, sizeof(err.msg));
    stats_finish(&s);
    stats_sort_slow(&s);
    if (args.json)
        print_json(stdout, &s, path, status ? err.msg : NULL);
    else
        print_text(stdout, &s, path);
    fflush(stdout);
    if (ferror(stdout)) {
        fprintf(stderr, "mtrace stats: error writing the output\n");
        status = 1;
    }
    stats_free(&s);
    trace_reader_free(r);
    return status;
}
