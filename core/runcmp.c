/*
 * runcmp.c -- the comparison of two runs by command (see runcmp.h).
 */
#include "runcmp.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "core/mem.h"

int
runcmp_hist_add(struct runcmp_hist *h, uint64_t ns)
{
    if (h->d == NULL) {
        h->d = delay_hist_new();
        if (h->d == NULL)
            return -ENOMEM;
    }
    delay_hist_add(h->d, ns);
    h->count++;
    return 0;
}

uint64_t
runcmp_hist_pct(const struct runcmp_hist *h, double p)
{
    if (h->count == 0 || h->d == NULL)
        return 0;
    return delay_hist_quantile_upper(h->d, p / 100.0);
}

void
runcmp_hist_free(struct runcmp_hist *h)
{
    delay_hist_free(h->d);
    memset(h, 0, sizeof(*h));
}

/* ok, $err, code and the cursor of a reply document. */
static void
shape_doc(const uint8_t *doc, size_t len, struct runcmp_shape *sh)
{
    bson_t b;
    bson_iter_t it, cur, batch;

    if (doc == NULL || !bson_init_static(&b, doc, len) ||
        !bson_iter_init(&it, &b))
        return;
    sh->valid = true;
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (strcmp(k, "ok") == 0) {
            if (!bson_iter_as_bool(&it) || bson_iter_as_double(&it) != 1.0)
                sh->error = true;
        } else if (strcmp(k, "$err") == 0) {
            sh->error = true;
        } else if (strcmp(k, "code") == 0 && BSON_ITER_HOLDS_NUMBER(&it)) {
            sh->code = (int32_t)bson_iter_as_int64(&it);
        } else if (strcmp(k, "cursor") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it) &&
                   bson_iter_recurse(&it, &cur)) {
            sh->cursor = true;
            while (bson_iter_next(&cur)) {
                const char *ck = bson_iter_key(&cur);
                if (strcmp(ck, "id") == 0 && BSON_ITER_HOLDS_NUMBER(&cur)) {
                    sh->cursor_id = bson_iter_as_int64(&cur);
                } else if ((strcmp(ck, "firstBatch") == 0 ||
                            strcmp(ck, "nextBatch") == 0) &&
                           BSON_ITER_HOLDS_ARRAY(&cur) &&
                           bson_iter_recurse(&cur, &batch)) {
                    while (bson_iter_next(&batch))
                        sh->ndocs++;
                }
            }
            sh->exhausted = sh->cursor_id == 0;
        }
    }
    if (!sh->error)
        sh->code = 0;
}

void
runcmp_shape_of(const struct wire_msg *m, struct runcmp_shape *sh)
{
    memset(sh, 0, sizeof(*sh));
    switch (m->h.op_code) {
    case WIRE_OP_MSG:
    case WIRE_OP_COMMANDREPLY:
        shape_doc(m->body, m->body_len, sh);
        break;
    case WIRE_OP_REPLY:
        sh->valid = true;
        /* QueryFailure (2) / CursorNotFound (1) */
        if (m->response_flags & 3)
            sh->error = true;
        if (m->body != NULL && m->number_returned == 1 && m->cursor_id == 0) {
            /* a command reply, or one document */
            struct runcmp_shape d = {0};
            shape_doc(m->body, m->body_len, &d);
            if (d.cursor || d.error) {
                d.error = d.error || sh->error;
                *sh = d;
                return;
            }
        }
        sh->cursor = true;
        sh->cursor_id = m->cursor_id;
        sh->exhausted = m->cursor_id == 0;
        sh->ndocs = m->number_returned > 0 ? (uint32_t)m->number_returned : 0;
        break;
    default:
        break;
    }
}

bool
runcmp_shape_differs(const struct runcmp_shape *a, const struct runcmp_shape *b)
{
    return a->error != b->error || a->ndocs != b->ndocs ||
           a->cursor != b->cursor || a->exhausted != b->exhausted;
}

int
runcmp_init(struct report *r, const char *label_a, const char *label_b)
{
    memset(r, 0, sizeof(*r));
    r->cmds = mt_calloc(RUNCMP_CMD_MAX, sizeof(*r->cmds));
    if (r->cmds == NULL)
        return -ENOMEM;
    r->label[0] = label_a;
    r->label[1] = label_b;
    return 0;
}

void
runcmp_free(struct report *r)
{
    if (r->cmds != NULL)
        for (size_t i = 0; i < r->ncmds; i++)
            for (int s = 0; s < 2; s++)
                runcmp_hist_free(&r->cmds[i].side[s].lat);
    mt_free(r->cmds);
    runcmp_hist_free(&r->late);
    memset(r, 0, sizeof(*r));
}

struct runcmp_cmd *
runcmp_cmd_get(struct report *r, const char *name)
{
    struct runcmp_cmd *c;

    for (size_t i = 0; i < r->ncmds; i++)
        if (strcmp(r->cmds[i].name, name) == 0)
            return &r->cmds[i];
    if (r->ncmds == RUNCMP_CMD_MAX - 1)
        name = "(other)";
    if (r->ncmds == RUNCMP_CMD_MAX)
        return &r->cmds[RUNCMP_CMD_MAX - 1];
    c = &r->cmds[r->ncmds++];
    snprintf(c->name, sizeof(c->name), "%s", name);
    return c;
}

static void
side_err(struct runcmp_side *s, int32_t code)
{
    for (size_t i = 0; i < s->nerrs; i++)
        if (s->errs[i].code == code) {
            s->errs[i].n++;
            return;
        }
    if (s->nerrs == RUNCMP_ERR_MAX) {
        s->errs_other++;
        return;
    }
    s->errs[s->nerrs].code = code;
    s->errs[s->nerrs++].n = 1;
}

int
runcmp_side_add(struct runcmp_cmd *c, int side, bool replied, uint64_t lat_ns,
                const struct runcmp_shape *sh)
{
    struct runcmp_side *s = &c->side[side];

    MT_ASSERT(side == 0 || side == 1);
    s->requests++;
    if (!replied)
        return 0;
    s->replies++;
    if (sh != NULL && sh->valid && sh->error) {
        s->errors++;
        side_err(s, sh->code);
    }
    return runcmp_hist_add(&s->lat, lat_ns);
}

void
runcmp_pair(struct report *r, struct runcmp_cmd *c,
            const struct runcmp_shape *a, const struct runcmp_shape *b)
{
    if (!a->valid || !b->valid)
        return;
    r->pairs++;
    if (!runcmp_shape_differs(a, b))
        return;
    c->shape_diff++;
    if (a->error != b->error)
        c->diff_ok++;
    if (a->ndocs != b->ndocs)
        c->diff_ndocs++;
    if (a->cursor != b->cursor || a->exhausted != b->exhausted)
        c->diff_exhausted++;
}

static double
ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

static double
mean_ms(const struct runcmp_hist *h)
{
    return h->count ? h->d->sum_ns / (double)h->count / 1e6 : 0.0;
}

static double
max_ms(const struct runcmp_hist *h)
{
    return h->count ? ms(h->d->max_ns) : 0.0;
}

static void
text_errs(FILE *out, const struct runcmp_side *s)
{
    if (s->nerrs == 0 && s->errs_other == 0) {
        fputs("-", out);
        return;
    }
    for (size_t i = 0; i < s->nerrs; i++)
        fprintf(out, "%s%" PRId32 "x%" PRIu64, i ? "," : "", s->errs[i].code,
                s->errs[i].n);
    if (s->errs_other)
        fprintf(out, ",otherx%" PRIu64, s->errs_other);
}

void
runcmp_print_text(FILE *out, const struct report *r)
{
    fprintf(out, "%-18s %-9s %8s %8s %9s %9s %9s  %-14s %s\n", "command",
            "side", "requests", "replies", "mean ms", "p50 ms", "p99 ms",
            "errors code*n", "shape diffs (ok/docs/cursor)");
    for (size_t i = 0; i < r->ncmds; i++) {
        const struct runcmp_cmd *c = &r->cmds[i];
        for (int s = 0; s < 2; s++) {
            const struct runcmp_side *d = &c->side[s];
            fprintf(out,
                    "%-18s %-9.9s %8" PRIu64 " %8" PRIu64
                    " %9.3f %9.3f %9.3f  ",
                    s == 0 ? c->name : "", r->label[s], d->requests, d->replies,
                    mean_ms(&d->lat), ms(runcmp_hist_pct(&d->lat, 50)),
                    ms(runcmp_hist_pct(&d->lat, 99)));
            text_errs(out, d);
            if (s == 1)
                fprintf(out,
                        "  %" PRIu64 " (%" PRIu64 "/%" PRIu64 "/%" PRIu64 ")",
                        c->shape_diff, c->diff_ok, c->diff_ndocs,
                        c->diff_exhausted);
            fputc('\n', out);
        }
    }
    fprintf(out, "compared %" PRIu64 " request(s) one to one\n", r->pairs);
    if (r->late.count > 0)
        fprintf(out,
                "send lateness against the schedule: p50 %.3f ms, p99 %.3f "
                "ms, max %.3f ms (%" PRIu64 " requests)\n",
                ms(runcmp_hist_pct(&r->late, 50)),
                ms(runcmp_hist_pct(&r->late, 99)), max_ms(&r->late),
                r->late.count);
}

static void
json_side(FILE *out, const struct runcmp_side *d)
{
    fprintf(
        out,
        "{\"requests\":%" PRIu64 ",\"replies\":%" PRIu64
        ",\"mean_ms\":%.6f,\"p50_ms\":%.6f,\"p99_ms\":%.6f,\"errors\":%" PRIu64
        ",\"errors_by_code\":{",
        d->requests, d->replies, mean_ms(&d->lat),
        ms(runcmp_hist_pct(&d->lat, 50)), ms(runcmp_hist_pct(&d->lat, 99)),
        d->errors);
    for (size_t i = 0; i < d->nerrs; i++)
        fprintf(out, "%s\"%" PRId32 "\":%" PRIu64, i ? "," : "",
                d->errs[i].code, d->errs[i].n);
    if (d->errs_other)
        fprintf(out, "%s\"other\":%" PRIu64, d->nerrs ? "," : "",
                d->errs_other);
    fputs("}}", out);
}

/* Command names come from traces: escape what JSON needs. */
static void
json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

void
runcmp_print_json(FILE *out, const struct report *r)
{
    fputs("{\"sides\":[", out);
    json_str(out, r->label[0]);
    fputc(',', out);
    json_str(out, r->label[1]);
    fputs("],\"commands\":{", out);
    for (size_t i = 0; i < r->ncmds; i++) {
        const struct runcmp_cmd *c = &r->cmds[i];
        fputs(i ? "," : "", out);
        json_str(out, c->name);
        fputs(":{\"a\":", out);
        json_side(out, &c->side[0]);
        fputs(",\"b\":", out);
        json_side(out, &c->side[1]);
        fprintf(out,
                ",\"shape_diffs\":%" PRIu64 ",\"diff_ok\":%" PRIu64
                ",\"diff_ndocs\":%" PRIu64 ",\"diff_exhausted\":%" PRIu64 "}",
                c->shape_diff, c->diff_ok, c->diff_ndocs, c->diff_exhausted);
    }
    fprintf(out, "},\"pairs\":%" PRIu64, r->pairs);
    if (r->late.count > 0)
        fprintf(out,
                ",\"lateness_ms\":{\"count\":%" PRIu64
                ",\"p50\":%.6f,\"p99\":%.6f,\"max\":%.6f}",
                r->late.count, ms(runcmp_hist_pct(&r->late, 50)),
                ms(runcmp_hist_pct(&r->late, 99)), max_ms(&r->late));
    fputc('}', out);
}
