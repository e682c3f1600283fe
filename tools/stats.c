/*
 * stats.c -- aggregation for `mtrace stats` (see stats.h).
 *
 * Pairing: a request (c2s) without moreToCome waits in a table keyed by
 * (connection id, requestID); a reply (s2c) takes the entry keyed by
 * (connection id, responseTo).  A reply with moreToCome (exhaust cursor,
 * streaming hello) puts a continuation keyed by its own requestID, which
 * the next reply of the stream answers; continuations are counted apart
 * and give no latency sample (they measure server-side waits, not
 * request->reply latency).
 */
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/wire.h"

int
stats_init(struct stats *s)
{
    memset(s, 0, sizeof(*s));
    s->cmds = mt_calloc(STATS_CMD_MAX, sizeof(*s->cmds));
    if (s->cmds == NULL)
        return -ENOMEM;
    pair_table_init(&s->pend, sizeof(struct msginfo_pending),
                    STATS_PENDING_MAX);
    mt_buf_init(&s->scratch, WIRE_MSG_LEN_MAX);
    return 0;
}

void
stats_free(struct stats *s)
{
    if (s->cmds != NULL)
        for (size_t i = 0; i < s->ncmds; i++)
            mt_free(s->cmds[i].lat_ns);
    mt_free(s->cmds);
    mt_free(s->tls[0].time.lat_ns);
    mt_free(s->tls[1].time.lat_ns);
    mt_free(s->slow);
    pair_table_free(&s->pend);
    mt_buf_free(&s->scratch);
    memset(s, 0, sizeof(*s));
}

static struct stats_cmd *
cmd_get(struct stats *s, const char *raw)
{
    char buf[sizeof(s->cmds[0].name)];
    const char *name = msginfo_printable(buf, sizeof(buf), raw);

    if (name[0] == '\0')
        name = "(none)";
    for (size_t i = 0; i < s->ncmds; i++)
        if (strcmp(s->cmds[i].name, name) == 0)
            return &s->cmds[i];
    if (s->ncmds == STATS_CMD_MAX - 1)
        name = "(other)";
    if (s->ncmds == STATS_CMD_MAX) /* the last slot is "(other)" */
        return &s->cmds[STATS_CMD_MAX - 1];
    snprintf(s->cmds[s->ncmds].name, sizeof(s->cmds[0].name), "%s", name);
    return &s->cmds[s->ncmds++];
}

static void
op_count(struct stats *s, int32_t op)
{
    size_t i;

    if (!wire_opcode_known(op))
        op = 0;
    for (i = 0; i < s->nops; i++)
        if (s->ops[i].op_code == op)
            break;
    if (i == s->nops) {
        if (s->nops == STATS_OP_MAX)
            return; /* cannot happen: fewer known opcodes than slots */
        s->ops[s->nops++].op_code = op;
    }
    s->ops[i].n++;
}

static int
lat_add(struct stats *s, struct stats_cmd *c, uint64_t ns)
{
    double delta = (double)ns - c->mean_ns;

    c->lat_count++;
    c->mean_ns += delta / (double)c->lat_count;
    c->m2_ns += delta * ((double)ns - c->mean_ns);
    if (ns > c->max_ns)
        c->max_ns = ns;
    if (s->samples >= STATS_SAMPLES_TOTAL_MAX) {
        c->lat_dropped++;
        s->samples_dropped++;
        return 0;
    }
    if (c->lat_n == c->lat_cap) {
        size_t cap = c->lat_cap ? c->lat_cap * 2 : 256;
        uint64_t *p;
        if (cap > STATS_SAMPLES_MAX)
            cap = STATS_SAMPLES_MAX;
        if (cap == c->lat_cap) {
            c->lat_dropped++;
            s->samples_dropped++;
            return 0;
        }
        p = mt_realloc(c->lat_ns, cap * sizeof(*p));
        if (p == NULL)
            return -ENOMEM;
        c->lat_ns = p;
        c->lat_cap = cap;
    }
    c->lat_ns[c->lat_n++] = ns;
    s->samples++;
    return 0;
}

int
stats_set_top(struct stats *s, size_t n)
{
    if (n > STATS_TOP_MAX)
        n = STATS_TOP_MAX;
    mt_free(s->slow);
    s->slow = NULL;
    s->nslow = s->top = 0;
    if (n == 0)
        return 0;
    s->slow = mt_calloc(n, sizeof(*s->slow));
    if (s->slow == NULL)
        return -ENOMEM;
    s->top = n;
    return 0;
}

static bool
slow_less(const struct stats_slow *a, const struct stats_slow *b)
{
    return a->lat_ns < b->lat_ns ||
           (a->lat_ns == b->lat_ns && a->t_ns > b->t_ns); /* earlier wins */
}

static void
slow_sift_down(struct stats_slow *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        struct stats_slow t;
        if (l < n && slow_less(&h[l], &h[m]))
            m = l;
        if (l + 1 < n && slow_less(&h[l + 1], &h[m]))
            m = l + 1;
        if (m == i)
            return;
        t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Keeps x if it is among the top slowest: a min-heap, its root the
 * fastest kept. */
static void
slow_offer(struct stats *s, const struct stats_slow *x)
{
    size_t i;

    if (s->top == 0)
        return;
    if (s->nslow == s->top) {
        if (!slow_less(&s->slow[0], x))
            return;
        s->slow[0] = *x;
        slow_sift_down(s->slow, s->nslow, 0);
        return;
    }
    i = s->nslow++;
    s->slow[i] = *x;
    while (i > 0 && slow_less(&s->slow[i], &s->slow[(i - 1) / 2])) {
        struct stats_slow t = s->slow[i];
        s->slow[i] = s->slow[(i - 1) / 2];
        s->slow[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static int
cmp_slow(const void *a, const void *b)
{
    const struct stats_slow *x = a, *y = b;
    return slow_less(y, x) ? -1 : slow_less(x, y) ? 1 : 0;
}

void
stats_sort_slow(struct stats *s)
{
    if (s->nslow > 1)
        qsort(s->slow, s->nslow, sizeof(*s->slow), cmp_slow);
}

/* Counts a failed reply of command c by (command, code). */
static void
err_count(struct stats *s, struct stats_cmd *c, const struct reply_status *st)
{
    char name[sizeof(s->errs[0].code_name)];
    size_t i;

    msginfo_printable(name, sizeof(name), st->code_name);
    if (st->error)
        c->errors++;
    else
        c->write_errors++;
    for (i = 0; i < s->nerrs; i++) {
        struct stats_err *e = &s->errs[i];
        if (e->code == st->code && e->write == st->write_error &&
            strcmp(e->cmd, c->name) == 0 && strcmp(e->code_name, name) == 0)
            break;
    }
    if (i == s->nerrs) {
        if (s->nerrs == STATS_ERR_MAX) {
            s->errs_other++;
            return;
        }
        snprintf(s->errs[i].cmd, sizeof(s->errs[i].cmd), "%s", c->name);
        snprintf(s->errs[i].code_name, sizeof(name), "%s", name);
        s->errs[i].code = st->code;
        s->errs[i].write = st->write_error;
        s->nerrs++;
    }
    s->errs[i].n++;
}

static int
on_request(struct stats *s, const struct trace_msg *m, const struct msginfo *mi)
{
    struct msginfo_pending v;
    struct stats_cmd *c = cmd_get(s, mi->parsed ? mi->cmd.name : "(malformed)");

    c->requests++;
    if (mi->more_to_come) {
        s->no_reply_expected++;
        return 0;
    }
    memset(&v, 0, sizeof(v));
    v.t_ns = m->t_ns;
    snprintf(v.cmd, sizeof(v.cmd), "%s", c->name);
    if (mi->parsed && snprintf(v.ns, sizeof(v.ns), "%s%s%s", mi->cmd.db,
                               mi->cmd.coll[0] != '\0' ? "." : "",
                               mi->cmd.coll) >= (int)sizeof(v.ns))
        memcpy(v.ns + sizeof(v.ns) - 4, "...", 4); /* cut: say so */
    v.request_id = mi->request_id;
    v.auth = mi->auth;
    if (pair_table_put(&s->pend, m->conn_id, mi->request_id, &v) < 0)
        s->pending_overflow++;
    return 0;
}

static int
on_reply(struct stats *s, const struct trace_msg *m, struct msginfo *mi)
{
    struct msginfo_pending v;
    struct stats_cmd *c;
    struct reply_status st;
    struct stats_slow x;
    bool exhaust;

    if (!pair_table_take(&s->pend, m->conn_id, mi->response_to, &v)) {
        s->unmatched_replies++;
        return 0;
    }
    exhaust = v.exhaust;
    if (mi->more_to_come) {
        struct msginfo_pending next = v;
        next.t_ns = m->t_ns;
        next.exhaust = true;
        if (pair_table_put(&s->pend, m->conn_id, mi->request_id, &next) < 0)
            s->pending_overflow++;
    }
    if (v.auth && !mi->auth) {
        mi->auth = true;
        s->auth_msgs++;
    }
    if (exhaust) {
        s->exhaust_replies++;
        return 0;
    }
    c = cmd_get(s, v.cmd);
    c->replies++;
    msginfo_reply_status(mi, &st);
    if (st.error || st.write_error)
        err_count(s, c, &st);
    memset(&x, 0, sizeof(x));
    x.t_ns = v.t_ns;
    x.conn_id = m->conn_id;
    x.request_id = v.request_id;
    x.error = st.error || st.write_error;
    memcpy(x.cmd, c->name, sizeof(x.cmd));
    msginfo_printable(x.ns, sizeof(x.ns), v.ns);
    if (m->t_ns < v.t_ns)
        s->clock_backwards++;
    else
        x.lat_ns = m->t_ns - v.t_ns;
    slow_offer(s, &x);
    return lat_add(s, c, x.lat_ns);
}

static int
on_msg(struct stats *s, const struct trace_msg *m)
{
    struct msginfo mi;

    msginfo_decode(m, &s->scratch, &mi);
    if (s->msgs == 0 || m->t_ns < s->t_first)
        s->t_first = m->t_ns;
    if (m->t_ns > s->t_last)
        s->t_last = m->t_ns;
    s->msgs++;
    s->bytes += m->wire_len;
    if (m->dir == TRACE_DIR_C2S)
        s->msgs_c2s++;
    else
        s->msgs_s2c++;
    if (!mi.parsed)
        s->malformed++;
    if (mi.compressed) {
        s->compressed++;
        if (mi.compressor < 4)
            s->by_compressor[mi.compressor]++;
    }
    if (mi.auth)
        s->auth_msgs++;
    if (!mi.has_header)
        return 0;
    op_count(s, mi.op_code);
    if (mi.is_reply)
        return on_reply(s, m, &mi);
    return on_request(s, m, &mi);
}

static void
capture_merge(struct trace_stats *dst, const struct trace_stats *src)
{
    dst->t_ns = src->t_ns;
    for (size_t i = 0; i < src->n; i++) {
        size_t j;
        for (j = 0; j < dst->n; j++)
            if (strcmp(dst->s[j].name, src->s[i].name) == 0)
                break;
        if (j == dst->n) {
            if (dst->n == TRACE_STATS_MAX)
                continue;
            dst->n++;
            memcpy(dst->s[j].name, src->s[i].name, sizeof(dst->s[j].name));
        }
        dst->s[j].value = src->s[i].value;
    }
}

/* Counts name in tab (n used of STATS_TLS_NAMES; the last is "(other)"). */
static void
tls_name_count(struct stats_tls_name *tab, size_t *n, const char *raw)
{
    char buf[sizeof(tab[0].name)];
    const char *name = msginfo_printable(buf, sizeof(buf), raw);
    size_t i;

    if (name[0] == '\0')
        name = "(none)";
    for (i = 0; i < *n && strcmp(tab[i].name, name) != 0; i++)
        ;
    if (i == STATS_TLS_NAMES) {
        i = STATS_TLS_NAMES - 1; /* "(other)" */
    } else if (i == *n) {
        snprintf(tab[i].name, sizeof(tab[0].name), "%s",
                 i == STATS_TLS_NAMES - 1 ? "(other)" : name);
        (*n)++;
    }
    tab[i].n++;
}

static int
on_tls(struct stats *s, const struct trace_tls *t)
{
    struct stats_tls *l = &s->tls[t->leg == TRACE_TLS_TARGET];

    if (t->flags & TRACE_TLS_FAILED) {
        l->failed++;
        return 0;
    }
    l->handshakes++;
    l->resumed += (t->flags & TRACE_TLS_RESUMED) != 0;
    l->peer_cert += (t->flags & TRACE_TLS_PEER_CERT) != 0;
    l->peer_verified += (t->flags & TRACE_TLS_PEER_VERIFIED) != 0;
    tls_name_count(l->versions, &l->nversions, t->version);
    tls_name_count(l->ciphers, &l->nciphers, t->cipher);
    return lat_add(s, &l->time, t->handshake_ns);
}

int
stats_add(struct stats *s, const struct trace_rec *rec)
{
    s->records++;
    switch (rec->type) {
    case TRACE_REC_HEADER:
        s->hdr = rec->u.header;
        return 0;
    case TRACE_REC_CONN_OPEN:
        s->conns_opened++;
        return 0;
    case TRACE_REC_CONN_CLOSE:
        s->conns_closed++;
        s->close_reasons[rec->u.close.reason < STATS_CLOSE_REASONS - 1
                             ? rec->u.close.reason
                             : STATS_CLOSE_REASONS - 1]++;
        return 0;
    case TRACE_REC_MSG:
        return on_msg(s, &rec->u.msg);
    case TRACE_REC_STATS:
        capture_merge(&s->capture, &rec->u.stats);
        return 0;
    case TRACE_REC_END:
        s->ended = true;
        return 0;
    case TRACE_REC_TLS:
        return on_tls(s, &rec->u.tls);
    default:
        return 0;
    }
}

static void
count_unmatched(void *val, void *ctx)
{
    const struct msginfo_pending *v = val;
    struct stats *s = ctx;

    if (v->exhaust)
        return; /* a stream that was still open: not a lost reply */
    s->unmatched_requests++;
    cmd_get(s, v->cmd)->unmatched++;
}

void
stats_finish(struct stats *s)
{
    pair_table_foreach(&s->pend, count_unmatched, s);
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t
stats_percentile(const uint64_t *sorted, size_t n, double p)
{
    size_t rank;

    if (n == 0)
        return 0;
    rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

void
stats_summarize(struct stats_cmd *c, struct stats_sum *sum)
{
    double mean, var;

    memset(sum, 0, sizeof(*sum));
    sum->count = c->lat_count;
    if (sum->count == 0)
        return;
    qsort(c->lat_ns, c->lat_n, sizeof(*c->lat_ns), cmp_u64);
    mean = c->mean_ns;
    var = c->m2_ns / (double)c->lat_count; /* population variance */
    sum->mean_ms = mean / 1e6;
    sum->stdev_pct = mean > 0 && var > 0 ? sqrt(var) / mean * 100.0 : 0;
    sum->p50_ms = (double)stats_percentile(c->lat_ns, c->lat_n, 50) / 1e6;
    sum->p90_ms = (double)stats_percentile(c->lat_ns, c->lat_n, 90) / 1e6;
    sum->p99_ms = (double)stats_percentile(c->lat_ns, c->lat_n, 99) / 1e6;
    sum->max_ms = (double)c->max_ns / 1e6;
}
