/*
 * tracelat.c -- request->reply latencies of a trace (tracelat.h).
 */
#include "tracelat.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/pair.h"
#include "core/trace.h"

#define PEND_MAX (1u << 21) /* outstanding requests tracked */

static int
add_sample(struct sim_tracelat *o, size_t *cap, double us)
{
    if (o->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 1024;
        double *nv;
        if (nc > SIM_TRACE_SAMPLES_MAX)
            return MT_ELIMIT;
        nv = mt_realloc(o->us, nc * sizeof(*nv));
        if (nv == NULL)
            return -ENOMEM;
        o->us = nv;
        *cap = nc;
    }
    o->us[o->n++] = us;
    return 0;
}

static int
on_msg(const struct trace_msg *m, struct pair_table *pt, struct sim_tracelat *o,
       size_t *cap)
{
    struct pair_hdr h;
    uint64_t t0;

    if (!pair_msg_header(m, &h))
        return 0; /* too short to pair: ignored */
    if (m->dir == TRACE_DIR_C2S)
        return pair_table_put(pt, m->conn_id, h.request_id, &m->t_ns);
    if (!pair_table_take(pt, m->conn_id, h.response_to, &t0)) {
        o->unmatched++;
        return 0;
    }
    return add_sample(o, cap,
                      m->t_ns >= t0 ? (double)(m->t_ns - t0) / 1000.0 : 0.0);
}

int
sim_tracelat_load(const char *path, struct sim_tracelat *out,
                  struct mt_err *err)
{
    struct mt_err e = {0};
    struct trace_reader *r;
    struct trace_rec rec;
    struct pair_table pt;
    size_t cap = 0, damaged = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    pair_table_init(&pt, sizeof(uint64_t), PEND_MAX);
    r = trace_reader_open(path, &e);
    if (r == NULL)
        return mt_err_set(err, e.code ? e.code : MT_ECORRUPT, 0, "%s: %s", path,
                          e.msg);
    for (;;) {
        rc = trace_reader_next(r, &rec, &e);
        if (rc == MT_ECORRUPT || rc == MT_ETOOBIG) {
            /* The reader resynchronised after a damaged frame (as dump
             * and stats go on): say so once per frame, keep reading. */
            mt_warn("sim: %s: %s", path, e.msg);
            damaged++;
            continue;
        }
        if (rc != MT_OK)
            break;
        if (rec.type != TRACE_REC_MSG)
            continue;
        if ((rc = on_msg(&rec.u.msg, &pt, out, &cap)) < 0) {
            mt_err_set(&e, rc, 0, "%s",
                       rc == MT_ELIMIT ? "too many requests or samples"
                                       : "out of memory");
            break;
        }
    }
    trace_reader_free(r);
    out->unanswered = pt.n;
    pair_table_free(&pt);
    if (rc == MT_END)
        rc = 0;
    if (rc == MT_ETRUNC && out->n > 0) {
        mt_warn("sim: %s: %s; using the %zu samples before the damage", path,
                e.msg, out->n);
        rc = 0;
    }
    if (rc == 0 && damaged > 0 && out->n > 0)
        mt_warn("sim: %s: %zu damaged frame(s) skipped; using the %zu "
                "samples of the intact ones",
                path, damaged, out->n);
    if (rc < 0) {
        sim_tracelat_free(out);
        return mt_err_set(err, rc, e.offset, "%s: %s", path, e.msg);
    }
    if (out->n == 0) {
        sim_tracelat_free(out);
        return mt_err_set(err, MT_ENOMATCH, 0,
                          "%s: no request/reply pairs in the trace", path);
    }
    return 0;
}

void
sim_tracelat_free(struct sim_tracelat *t)
{
    if (t == NULL)
        return;
    mt_free(t->us);
    t->us = NULL;
    t->n = 0;
}
