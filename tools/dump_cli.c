/*
 * dump_cli.c -- `mtrace dump [--json] TRACE`: print a trace, one line (or
 * one JSON object) per record.
 *
 * Exit status: 0 the whole trace was printed; 1 the trace could not be
 * opened, or is truncated or damaged (every complete record was printed
 * first, then one line on stderr says what was lost); 2 bad usage.
 *
 * JSON mode prints relaxed Extended JSON (libbson) of each command or reply
 * document, using the decompressed form of OP_COMPRESSED messages.  Whole
 * documents are converted here and nowhere else (DESIGN.md rule 1).
 */
#include "dump_cli.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/cli.h"
#include "core/pair.h"
#include "core/rd.h"
#include "core/trace.h"
#include "core/wire.h"
#include "tools/msginfo.h"
#include "tools/tool_args.h"

#define PENDING_MAX (1u << 20)

struct dump {
    FILE *out; /* borrowed: stdout */
    bool json;
    struct trace_header hdr;
    struct mt_buf scratch;  /* decompressed messages */
    struct pair_table pend; /* requests awaiting replies: cmd names */
    uint64_t auth_msgs;
    uint64_t bad_msgs;
};

static void
usage(FILE *f)
{
    fprintf(
        f,
        "usage: mtrace dump [--json] TRACE.zst\n"
        "\n"
        "Print every record of a trace: one line per message (time since\n"
        "the start in seconds, connection, direction, opcode, requestID,\n"
        "responseTo, command, db, collection, length, flags).\n"
        "\n"
        "  --json     one JSON object per line (jq-friendly): messages\n"
        "             have \"type\":\"msg\" and the command or reply document\n"
        "             as relaxed Extended JSON in \"body\"; connection,\n"
        "             statistics, TLS handshake, header and end records\n"
        "             have their own \"type\".\n"
        "  -h, --help this text\n"
        "\n"
        "TRACE may be '-' for standard input.  Exit status: 0 success,\n"
        "1 unreadable, truncated or damaged trace (complete records are\n"
        "printed first), 2 bad usage.\n");
}

/* ---- JSON ---- */

static void
json_doc(FILE *out, const uint8_t *data, size_t len, bool *bad)
{
    bson_t b;
    char *j = NULL;

    if (data != NULL && bson_init_static(&b, data, len))
        j = bson_as_relaxed_extended_json(&b, NULL);
    if (j == NULL) {
        fputs("null", out);
        *bad = data != NULL;
        return;
    }
    fputs(j, out);
    bson_free(j);
}

static void
json_sequences(FILE *out, const struct wire_msg *m, bool *bad)
{
    fputs(",\"sequences\":{", out);
    for (size_t i = 0; i < m->nseq; i++) {
        bson_reader_t *rd =
            bson_reader_new_from_data(m->seq[i].docs, m->seq[i].docs_len);
        const bson_t *d;
        bool eof = false, first = true;

        if (i > 0)
            fputc(',', out);
        msginfo_json_str(out, m->seq[i].identifier);
        fputs(":[", out);
        while (rd != NULL && (d = bson_reader_read(rd, &eof)) != NULL) {
            if (!first)
                fputc(',', out);
            json_doc(out, bson_get_data(d), d->len, bad);
            first = false;
        }
        fputc(']', out);
        bson_reader_destroy(rd);
    }
    fputc('}', out);
}

static void
json_opt_str(FILE *out, const char *key, const char *s)
{
    fprintf(out, ",\"%s\":", key);
    if (s == NULL || s[0] == '\0')
        fputs("null", out);
    else
        msginfo_json_str(out, s);
}

static void
json_trace_flags(FILE *out, uint32_t f)
{
    static const char *const names[] = {"partial",  "gap_before",
                                        "resync",   "malformed",
                                        "redacted", "decompressed"};
    bool first = true;

    fputs(",\"trace_flags\":[", out);
    for (unsigned i = 0; i < 32; i++) {
        if (!(f & (1u << i)))
            continue;
        if (!first)
            fputc(',', out);
        if (i < sizeof(names) / sizeof(names[0]))
            fprintf(out, "\"%s\"", names[i]);
        else
            fprintf(out, "\"bit%u\"", i);
        first = false;
    }
    fputc(']', out);
}

static uint32_t
msg_flags(const struct msginfo *mi)
{
    if (!mi->parsed)
        return 0;
    switch (mi->op_code) {
    case WIRE_OP_MSG:
        return mi->msg.flags;
    case WIRE_OP_QUERY:
        return (uint32_t)mi->msg.query_flags;
    case WIRE_OP_REPLY:
        return (uint32_t)mi->msg.response_flags;
    default:
        return 0;
    }
}

static void
json_msg(struct dump *d, const struct trace_msg *m, const struct msginfo *mi,
         const char *cmd)
{
    FILE *out = d->out;
    bool bad = false;

    fprintf(out,
            "{\"type\":\"msg\",\"t_ns\":%" PRIu64 ",\"conn\":%" PRIu64
            ",\"dir\":\"%s\",\"op\":\"%s\"",
            m->t_ns, m->conn_id, trace_dir_name(m->dir),
            mi->has_header ? wire_opcode_name(mi->op_code) : "none");
    if (mi->has_header)
        fprintf(out, ",\"request_id\":%d,\"response_to\":%d",
                (int)mi->request_id, (int)mi->response_to);
    else
        fputs(",\"request_id\":null,\"response_to\":null", out);
    fprintf(out, ",\"flags\":%u", msg_flags(mi));
    json_trace_flags(out, m->flags);
    json_opt_str(out, "cmd", cmd);
    json_opt_str(out, "db", mi->cmd.db);
    json_opt_str(out, "coll", mi->cmd.coll);
    json_opt_str(out, "compressed",
                 mi->compressed ? wire_compressor_name(mi->compressor) : NULL);
    fprintf(out, ",\"len\":%u,\"auth\":%s", m->wire_len,
            mi->auth ? "true" : "false");
    if (mi->parsed && mi->op_code == WIRE_OP_REPLY)
        fprintf(out, ",\"cursor_id\":%" PRId64 ",\"ndocs\":%d",
                mi->msg.cursor_id, (int)mi->msg.number_returned);
    fputs(",\"body\":", out);
    if (mi->parsed)
        json_doc(out, mi->msg.body, mi->msg.body_len, &bad);
    else
        fputs("null", out);
    if (mi->parsed && mi->op_code == WIRE_OP_MSG && mi->msg.nseq > 0)
        json_sequences(out, &mi->msg, &bad);
    if (!mi->parsed)
        json_opt_str(out, "error", mi->error);
    else if (bad)
        json_opt_str(out, "error", "a document cannot be shown as JSON");
    fputs("}\n", out);
}

/* ---- plain text ---- */

/*
 * Text from the trace (command names, addresses, ...) as printable bytes:
 * a hostile trace must not send escape sequences to a terminal.  Returns
 * dst (cap bytes, NUL-terminated, truncated if need be).
 */
static const char *
safe(char *dst, size_t cap, const char *s)
{
    size_t o = 0;

    for (; *s != '\0' && o + 5 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f)
            o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", c);
        else
            dst[o++] = (char)c;
    }
    dst[o] = '\0';
    return dst;
}

static void
plain_time(struct dump *d, uint64_t t_ns)
{
    int64_t rel = (int64_t)(t_ns - d->hdr.start_mono_ns);
    fprintf(d->out, "%12.6f ", (double)rel / 1e9);
}

/* Documents in a kind-1 section (whole ones: wire_msg_parse checked them). */
static size_t
seq_docs(const struct wire_seq *s)
{
    struct rd r = rd_init(s->docs, s->docs_len);
    size_t n = 0;
    uint32_t l;

    while (r.left >= 4) {
        struct rd peek = r;
        if (!rd_le32(&peek, &l) || l < 5 || !rd_skip(&r, l))
            break;
        n++;
    }
    return n;
}

static void
plain_msg(struct dump *d, const struct trace_msg *m, const struct msginfo *mi,
          const char *cmd)
{
    FILE *out = d->out;
    char t[1100];

    plain_time(d, m->t_ns);
    fprintf(out, "conn=%" PRIu64 " %s ", m->conn_id, trace_dir_name(m->dir));
    if (!mi->has_header) {
        fprintf(out, "(no header) len=%u error: %s\n", m->wire_len,
                safe(t, sizeof(t), mi->error));
        return;
    }
    fprintf(out, "%s", wire_opcode_name(mi->op_code));
    if (mi->compressed)
        fprintf(out, "(%s)", wire_compressor_name(mi->compressor));
    fprintf(out, " req=%d to=%d", (int)mi->request_id, (int)mi->response_to);
    if (cmd != NULL && cmd[0] != '\0')
        fprintf(out, " %s%s", safe(t, sizeof(t), cmd),
                mi->is_reply ? "-reply" : "");
    if (mi->cmd.db[0] != '\0')
        fprintf(out, " db=%s", safe(t, sizeof(t), mi->cmd.db));
    if (mi->cmd.coll[0] != '\0')
        fprintf(out, " coll=%s", safe(t, sizeof(t), mi->cmd.coll));
    for (size_t i = 0; mi->parsed && i < mi->msg.nseq; i++)
        fprintf(out, " seq=%s:%zu",
                safe(t, sizeof(t), mi->msg.seq[i].identifier),
                seq_docs(&mi->msg.seq[i]));
    fprintf(out, " len=%u flags=0x%x", m->wire_len, msg_flags(mi));
    if (m->flags != 0)
        fprintf(out, " trace_flags=0x%x", m->flags);
    if (mi->auth)
        fputs(" auth", out);
    if (!mi->parsed)
        fprintf(out, " error: %s", safe(t, sizeof(t), mi->error));
    fputc('\n', out);
}

/* ---- records ---- */

/* Pairs requests and replies so that a reply can name its command. */
static const char *
track(struct dump *d, const struct trace_msg *m, struct msginfo *mi,
      struct msginfo_pending *v)
{
    memset(v, 0, sizeof(*v));
    if (!mi->parsed)
        return NULL;
    if (!mi->is_reply) {
        if (!mi->more_to_come) {
            snprintf(v->cmd, sizeof(v->cmd), "%s", mi->cmd.name);
            v->auth = mi->auth;
            v->t_ns = m->t_ns;
            (void)pair_table_put(&d->pend, m->conn_id, mi->request_id, v);
        }
        return mi->cmd.name;
    }
    if (!pair_table_take(&d->pend, m->conn_id, mi->response_to, v))
        return NULL;
    if (mi->more_to_come) /* exhaust: the next reply answers this one */
        (void)pair_table_put(&d->pend, m->conn_id, mi->request_id, v);
    mi->auth = mi->auth || v->auth;
    return v->cmd;
}

static void
dump_msg(struct dump *d, const struct trace_msg *m)
{
    struct msginfo mi;
    struct msginfo_pending v;
    const char *cmd;

    msginfo_decode(m, &d->scratch, &mi);
    cmd = track(d, m, &mi, &v);
    if (mi.auth)
        d->auth_msgs++;
    if (!mi.parsed)
        d->bad_msgs++;
    if (d->json)
        json_msg(d, m, &mi, cmd);
    else
        plain_msg(d, m, &mi, cmd);
}

static void
json_tls(FILE *out, const struct trace_tls *t)
{
    fprintf(out,
            "{\"type\":\"tls\",\"t_ns\":%" PRIu64 ",\"conn\":%" PRIu64
            ",\"leg\":\"%s\",\"handshake_ns\":%" PRIu64
            ",\"ok\":%s,\"version\":",
            t->t_ns, t->conn_id, trace_tls_leg_name(t->leg), t->handshake_ns,
            t->flags & TRACE_TLS_FAILED ? "false" : "true");
    msginfo_json_str(out, t->version);
    fputs(",\"cipher\":", out);
    msginfo_json_str(out, t->cipher);
    json_opt_str(out, "group", t->group);
    json_opt_str(out, "sni", t->sni);
    fprintf(out, ",\"resumed\":%s,\"peer_cert\":%s,\"peer_verified\":%s",
            t->flags & TRACE_TLS_RESUMED ? "true" : "false",
            t->flags & TRACE_TLS_PEER_CERT ? "true" : "false",
            t->flags & TRACE_TLS_PEER_VERIFIED ? "true" : "false");
    json_opt_str(out, "error", t->error);
    fputs("}\n", out);
}

static void
json_record(struct dump *d, const struct trace_rec *rec)
{
    FILE *out = d->out;

    switch (rec->type) {
    case TRACE_REC_HEADER:
        fprintf(out,
                "{\"type\":\"header\",\"version\":%d,\"tool\":", TRACE_VERSION);
        msginfo_json_str(out, rec->u.header.tool_version);
        fprintf(out, ",\"source\":\"%s\",\"source_desc\":",
                trace_source_name(rec->u.header.source));
        msginfo_json_str(out, rec->u.header.source_desc);
        fprintf(out,
                ",\"start_wall_ns\":%" PRIu64 ",\"start_mono_ns\":%" PRIu64
                ",\"ts_precision_ns\":%u}\n",
                rec->u.header.start_wall_ns, rec->u.header.start_mono_ns,
                rec->u.header.ts_precision_ns);
        break;
    case TRACE_REC_CONN_OPEN:
        fprintf(out,
                "{\"type\":\"conn_open\",\"t_ns\":%" PRIu64 ",\"conn\":%" PRIu64
                ",\"client\":",
                rec->u.open.t_ns, rec->u.open.conn_id);
        msginfo_json_str(out, rec->u.open.client);
        fputs(",\"server\":", out);
        msginfo_json_str(out, rec->u.open.server);
        fputs("}\n", out);
        break;
    case TRACE_REC_CONN_CLOSE:
        fprintf(out,
                "{\"type\":\"conn_close\",\"t_ns\":%" PRIu64
                ",\"conn\":%" PRIu64 ",\"reason\":\"%s\",\"partial_c2s\":%u,"
                "\"partial_s2c\":%u}\n",
                rec->u.close.t_ns, rec->u.close.conn_id,
                trace_close_reason_name(rec->u.close.reason),
                rec->u.close.partial_c2s, rec->u.close.partial_s2c);
        break;
    case TRACE_REC_STATS:
        fprintf(out, "{\"type\":\"stats\",\"t_ns\":%" PRIu64 ",\"stats\":{",
                rec->u.stats.t_ns);
        for (size_t i = 0; i < rec->u.stats.n; i++) {
            if (i > 0)
                fputc(',', out);
            msginfo_json_str(out, rec->u.stats.s[i].name);
            fprintf(out, ":%" PRIu64, rec->u.stats.s[i].value);
        }
        fputs("}}\n", out);
        break;
    case TRACE_REC_END:
        fprintf(out,
                "{\"type\":\"end\",\"t_ns\":%" PRIu64 ",\"records\":%" PRIu64
                "}\n",
                rec->u.end.t_ns, rec->u.end.records);
        break;
    case TRACE_REC_TLS:
        json_tls(out, &rec->u.tls);
        break;
    default:
        break;
    }
}

/* "conn=N tls client TLSv1.3 TLS_AES_256_GCM_SHA384 X25519 sni=h
 * handshake=1.234ms peer-cert verified", or "... tls client FAILED after
 * 1.234ms: why". */
static void
plain_tls(FILE *out, const struct trace_tls *t)
{
    char a[300], b[300];
    double ms = (double)t->handshake_ns / 1e6;

    fprintf(out, "conn=%" PRIu64 " tls %s ", t->conn_id,
            trace_tls_leg_name(t->leg));
    if (t->flags & TRACE_TLS_FAILED) {
        fprintf(out, "FAILED after %.3fms: %s\n", ms,
                safe(a, sizeof(a), t->error));
        return;
    }
    fprintf(out, "%s %s", safe(a, sizeof(a), t->version),
            safe(b, sizeof(b), t->cipher));
    if (t->group[0] != '\0')
        fprintf(out, " %s", safe(a, sizeof(a), t->group));
    if (t->sni[0] != '\0')
        fprintf(out, " sni=%s", safe(a, sizeof(a), t->sni));
    fprintf(out, " handshake=%.3fms%s%s%s\n", ms,
            t->flags & TRACE_TLS_RESUMED ? " resumed" : "",
            t->flags & TRACE_TLS_PEER_CERT ? " peer-cert" : "",
            t->flags & TRACE_TLS_PEER_VERIFIED ? " verified" : "");
}

static void
plain_record(struct dump *d, const struct trace_rec *rec)
{
    FILE *out = d->out;
    char t[1100], t2[300];
    char when[32] = "?";
    time_t secs;
    struct tm tm;

    switch (rec->type) {
    case TRACE_REC_HEADER:
        secs = (time_t)(rec->u.header.start_wall_ns / 1000000000u);
        if (gmtime_r(&secs, &tm) != NULL)
            strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(out, "# mtrace trace v%d, %s (%s), started %s, by %s\n",
                TRACE_VERSION, trace_source_name(rec->u.header.source),
                safe(t, sizeof(t), rec->u.header.source_desc), when,
                safe(t2, sizeof(t2), rec->u.header.tool_version));
        break;
    case TRACE_REC_CONN_OPEN:
        plain_time(d, rec->u.open.t_ns);
        fprintf(out, "conn=%" PRIu64 " open %s -> %s\n", rec->u.open.conn_id,
                safe(t, sizeof(t), rec->u.open.client),
                safe(t2, sizeof(t2), rec->u.open.server));
        break;
    case TRACE_REC_CONN_CLOSE:
        plain_time(d, rec->u.close.t_ns);
        fprintf(out, "conn=%" PRIu64 " close %s", rec->u.close.conn_id,
                trace_close_reason_name(rec->u.close.reason));
        if (rec->u.close.partial_c2s || rec->u.close.partial_s2c)
            fprintf(out, " partial_c2s=%u partial_s2c=%u",
                    rec->u.close.partial_c2s, rec->u.close.partial_s2c);
        fputc('\n', out);
        break;
    case TRACE_REC_STATS:
        plain_time(d, rec->u.stats.t_ns);
        fputs("stats", out);
        for (size_t i = 0; i < rec->u.stats.n; i++)
            fprintf(out, " %s=%" PRIu64,
                    safe(t, sizeof(t), rec->u.stats.s[i].name),
                    rec->u.stats.s[i].value);
        fputc('\n', out);
        break;
    case TRACE_REC_END:
        plain_time(d, rec->u.end.t_ns);
        fprintf(out, "end (%" PRIu64 " records)\n", rec->u.end.records);
        break;
    case TRACE_REC_TLS:
        plain_time(d, rec->u.tls.t_ns);
        plain_tls(out, &rec->u.tls);
        break;
    default:
        break;
    }
}

/* Reads every record; returns the exit status. */
static int
dump_run(struct dump *d, struct trace_reader *r, const char *path)
{
    struct trace_rec rec;
    struct mt_err err;
    int rc, status = 0;

    d->hdr = *trace_reader_header(r);
    for (;;) {
        rc = trace_reader_next(r, &rec, &err);
        if (rc == MT_END)
            break;
        if (rc < 0) {
            fflush(d->out);
            fprintf(stderr, "mtrace dump: %s: %s\n", path, err.msg);
            status = 1;
            if (rc == MT_ETRUNC || (rc != MT_ECORRUPT && rc != MT_ETOOBIG))
                break;
            continue; /* the reader resynchronised: go on */
        }
        if (rec.type == TRACE_REC_MSG)
            dump_msg(d, &rec.u.msg);
        else if (d->json)
            json_record(d, &rec);
        else
            plain_record(d, &rec);
    }
    fflush(d->out);
    if (d->auth_msgs > 0)
        fprintf(stderr,
                "mtrace dump: note: %s holds %" PRIu64 " messages of "
                "authentication conversations (saslStart/saslContinue/"
                "authenticate); treat the trace as sensitive\n",
                path, d->auth_msgs);
    if (ferror(d->out)) {
        fprintf(stderr, "mtrace dump: error writing the output\n");
        status = 1;
    }
    return status;
}

int
dump_cli_main(int argc, char **argv)
{
    struct dump d;
    struct trace_reader *r;
    struct tool_args args;
    int status;

    memset(&d, 0, sizeof(d));
    r = tool_args_open("dump", "mtrace dump [--json] TRACE.zst", usage, 0, argc,
                       argv, &args, &status);
    if (r == NULL)
        return status;
    d.json = args.json;
    d.out = stdout;
    mt_buf_init(&d.scratch, WIRE_MSG_LEN_MAX);
    pair_table_init(&d.pend, sizeof(struct msginfo_pending), PENDING_MAX);
    status = dump_run(&d, r, args.path);
    pair_table_free(&d.pend);
    mt_buf_free(&d.scratch);
    trace_reader_free(r);
    return status;
}
