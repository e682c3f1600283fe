/*
 * compare.c -- `mtrace stats --compare A B`: per command, requests,
 * replies, mean / p50 / p99 latency and errors by code of each trace, and
 * the replies whose shape differs (ok/error, number of documents, cursor
 * exhausted or not) between the requests the two traces share.
 *
 * Pairing: a connection of B is paired with the connection of A whose id
 * is B's low 32 bits (`mtrace play -o` keeps the recorded ids; its extra
 * copies carry their number above), else with A's connection of the same
 * rank in order of first request; within a pair, the k-th request of one
 * with the k-th of the other when both are the same command.  Handshakes
 * and authentication are left out (play never re-sends them).  Memory:
 * 16 bytes per request of each trace, for the pairing.
 */
#include "compare.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/trace.h"
#include "core/runcmp.h"
#include "tools/msginfo.h"

#define CMP_OPEN_MAX 256 /* requests awaiting a reply per connection */

/* One request of one trace. */
struct cmp_req {
    uint16_t cmd; /* index in the report */
    bool replied;
    struct runcmp_shape sh;
};

struct cmp_conn {
    uint64_t id;
    uint64_t first_ns;   /* its first request */
    struct cmp_req *req; /* owned */
    size_t n, cap;
    struct {
        int32_t rid;
        uint64_t t_ns;
        size_t idx;
    } open[CMP_OPEN_MAX];
    size_t nopen;
};

struct cmp_trace {
    struct cmp_conn *c; /* owned */
    size_t n, cap;
    struct mt_buf scratch;
};

bool
compare_requested(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--compare") == 0)
            return true;
    return false;
}

static struct cmp_conn *
conn_get(struct cmp_trace *t, uint64_t id)
{
    for (size_t i = t->n; i > 0; i--)
        if (t->c[i - 1].id == id)
            return &t->c[i - 1];
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        struct cmp_conn *g = mt_realloc(t->c, cap * sizeof(*g));
        if (g == NULL)
            return NULL;
        t->c = g;
        t->cap = cap;
    }
    memset(&t->c[t->n], 0, sizeof(t->c[0]));
    t->c[t->n].id = id;
    return &t->c[t->n++];
}

static int
on_request(struct report *r, struct cmp_trace *t, int side,
           const struct trace_msg *m, const struct msginfo *mi)
{
    struct cmp_conn *c;
    struct runcmp_cmd *rc;

    if (!mi->parsed || mi->cmd.is_hello || mi->auth)
        return 0;
    if ((c = conn_get(t, m->conn_id)) == NULL)
        return -ENOMEM;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct cmp_req *g = mt_realloc(c->req, cap * sizeof(*g));
        if (g == NULL)
            return -ENOMEM;
        c->req = g;
        c->cap = cap;
    }
    if (c->n == 0)
        c->first_ns = m->t_ns;
    rc = runcmp_cmd_get(r, mi->cmd.name);
    memset(&c->req[c->n], 0, sizeof(c->req[0]));
    c->req[c->n].cmd = (uint16_t)(rc - r->cmds);
    if (!mi->more_to_come) {
        if (c->nopen == CMP_OPEN_MAX) { /* the oldest: never answered */
            runcmp_side_add(&r->cmds[c->req[c->open[0].idx].cmd], side, false,
                            0, NULL);
            memmove(&c->open[0], &c->open[1],
                    (CMP_OPEN_MAX - 1) * sizeof(c->open[0]));
            c->nopen--;
        }
        c->open[c->nopen].rid = mi->request_id;
        c->open[c->nopen].t_ns = m->t_ns;
        c->open[c->nopen++].idx = c->n;
    } else {
        runcmp_side_add(rc, side, false, 0, NULL);
    }
    c->n++;
    return 0;
}

static int
on_reply(struct report *r, struct cmp_trace *t, int side,
         const struct trace_msg *m, const struct msginfo *mi)
{
    struct cmp_conn *c;
    struct cmp_req *q;

    if ((c = conn_get(t, m->conn_id)) == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < c->nopen; i++) {
        if (c->open[i].rid != mi->response_to)
            continue;
        q = &c->req[c->open[i].idx];
        q->replied = true;
        if (mi->parsed)
            runcmp_shape_of(&mi->msg, &q->sh);
        int rc = runcmp_side_add(
            &r->cmds[q->cmd], side, true,
            m->t_ns > c->open[i].t_ns ? m->t_ns - c->open[i].t_ns : 0, &q->sh);
        memmove(&c->open[i], &c->open[i + 1],
                (c->nopen - i - 1) * sizeof(c->open[0]));
        c->nopen--;
        return rc;
    }
    return 0;
}

/* Reads path into t; 0, or 1 with one line on stderr. */
static int
read_trace(struct report *r, struct cmp_trace *t, int side, const char *path)
{
    struct trace_reader *rd = trace_reader_open(path, NULL);
    struct trace_rec rec;
    struct mt_err err;
    struct msginfo mi;
    int rc, status = 0;

    if (rd == NULL) {
        rd = trace_reader_open(path, &err);
        fprintf(stderr, "mtrace stats: %s: %s\n", path,
                rd == NULL ? err.msg : "cannot open");
        trace_reader_free(rd);
        return 1;
    }
    for (;;) {
        rc = trace_reader_next(rd, &rec, &err);
        if (rc == MT_END)
            break;
        if (rc < 0) {
            fprintf(stderr, "mtrace stats: %s: %s\n", path, err.msg);
            status = 1;
            if (rc == MT_ECORRUPT || rc == MT_ETOOBIG)
                continue;
            break;
        }
        if (rec.type != TRACE_REC_MSG)
            continue;
        msginfo_decode(&rec.u.msg, &t->scratch, &mi);
        rc = rec.u.msg.dir == TRACE_DIR_C2S
                 ? on_request(r, t, side, &rec.u.msg, &mi)
                 : on_reply(r, t, side, &rec.u.msg, &mi);
        if (rc < 0) {
            fprintf(stderr, "mtrace stats: %s: out of memory\n", path);
            status = 1;
            break;
        }
    }
    /* requests still awaiting a reply */
    for (size_t i = 0; i < t->n; i++)
        for (size_t k = 0; k < t->c[i].nopen; k++)
            runcmp_side_add(&r->cmds[t->c[i].req[t->c[i].open[k].idx].cmd],
                            side, false, 0, NULL);
    trace_reader_free(rd);
    return status;
}

static int
by_first(const void *x, const void *y)
{
    const struct cmp_conn *a = x, *b = y;

    return a->first_ns < b->first_ns ? -1 : a->first_ns > b->first_ns;
}

static void
pair_conns(struct report *r, const struct cmp_conn *a, const struct cmp_conn *b)
{
    for (size_t k = 0; k < a->n && k < b->n; k++)
        if (a->req[k].cmd == b->req[k].cmd && a->req[k].replied &&
            b->req[k].replied)
            runcmp_pair(r, &r->cmds[a->req[k].cmd], &a->req[k].sh,
                        &b->req[k].sh);
}

/* Connections without a request (monitoring, handshakes only) have no
 * rank: qsort puts them first (first_ns 0); skip them. */
static size_t
first_ranked(const struct cmp_trace *t)
{
    size_t i = 0;

    while (i < t->n && t->c[i].n == 0)
        i++;
    return i;
}

static void
pair_all(struct report *r, struct cmp_trace *a, struct cmp_trace *b)
{
    size_t a0, b0;

    qsort(a->c, a->n, sizeof(a->c[0]), by_first);
    qsort(b->c, b->n, sizeof(b->c[0]), by_first);
    a0 = first_ranked(a);
    b0 = first_ranked(b);
    for (size_t i = b0; i < b->n; i++) {
        const struct cmp_conn *pa = NULL;
        for (size_t j = a0; j < a->n && pa == NULL; j++)
            if (a->c[j].id == (b->c[i].id & 0xffffffffu))
                pa = &a->c[j];
        if (pa == NULL && a0 + (i - b0) < a->n)
            pa = &a->c[a0 + (i - b0)];
        if (pa != NULL)
            pair_conns(r, pa, &b->c[i]);
    }
}

static void
trace_free(struct cmp_trace *t)
{
    for (size_t i = 0; i < t->n; i++)
        mt_free(t->c[i].req);
    mt_free(t->c);
    mt_buf_free(&t->scratch);
}

int
compare_cli_main(int argc, char **argv)
{
    const char *path[2] = {NULL, NULL};
    struct cmp_trace t[2];
    struct report r;
    bool json = false;
    int status = 0, np = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--compare") == 0)
            continue;
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (argv[i][0] == '-' || np == 2) {
            fprintf(stderr,
                    "mtrace stats: --compare takes two traces and --json "
                    "('%s'); run 'mtrace stats --help'\n",
                    argv[i]);
            return 2;
        } else {
            path[np++] = argv[i];
        }
    }
    if (np != 2) {
        fprintf(stderr, "mtrace stats: --compare takes two traces: mtrace "
                        "stats --compare A.zst B.zst [--json]\n");
        return 2;
    }
    if (runcmp_init(&r, path[0], path[1]) < 0) {
        fprintf(stderr, "mtrace stats: out of memory\n");
        return 1;
    }
    memset(t, 0, sizeof(t));
    for (int s = 0; s < 2; s++) {
        mt_buf_init(&t[s].scratch, WIRE_MSG_LEN_MAX);
        status |= read_trace(&r, &t[s], s, path[s]);
    }
    pair_all(&r, &t[0], &t[1]);
    if (json) {
        runcmp_print_json(stdout, &r);
        fputc('\n', stdout);
    } else {
        printf("a: %s\nb: %s\n", path[0], path[1]);
        r.label[0] = "a";
        r.label[1] = "b";
        runcmp_print_text(stdout, &r);
    }
    fflush(stdout);
    if (ferror(stdout)) {
        fprintf(stderr, "mtrace stats: error writing the output\n");
        status = 1;
    }
    trace_free(&t[0]);
    trace_free(&t[1]);
    runcmp_free(&r);
    return status;
}
