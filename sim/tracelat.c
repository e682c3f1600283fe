/*
 * tracelat.c -- request->reply latencies of a trace (tracelat.h).
 */
#include "tracelat.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/trace.h"

#define PEND_MAX (1u << 22) /* outstanding requests tracked */

struct pend {
    uint64_t key; /* conn_id << 32 | requestID; 0 = empty */
    uint64_t t_ns;
};

struct ptab {
    struct pend *v; /* owned */
    size_t cap, n;
};

static uint64_t
hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int
ptab_grow(struct ptab *t)
{
    size_t ncap = t->cap ? t->cap * 2 : 1024;
    struct pend *nv, *old = t->v;

    if (ncap > PEND_MAX)
        return MT_ELIMIT;
    nv = mt_calloc(ncap, sizeof(*nv));
    if (nv == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < t->cap; i++) {
        if (old[i].key == 0)
            continue;
        size_t j = hash64(old[i].key) & (ncap - 1);
        while (nv[j].key)
            j = (j + 1) & (ncap - 1);
        nv[j] = old[i];
    }
    mt_free(old);
    t->v = nv;
    t->cap = ncap;
    return 0;
}

static int
ptab_put(struct ptab *t, uint64_t key, uint64_t t_ns)
{
    int rc;

    if ((t->n + 1) * 2 > t->cap && (rc = ptab_grow(t)) < 0)
        return rc;
    size_t j = hash64(key) & (t->cap - 1);
    while (t->v[j].key && t->v[j].key != key)
        j = (j + 1) & (t->cap - 1);
    if (t->v[j].key == 0)
        t->n++;
    t->v[j].key = key;
    t->v[j].t_ns = t_ns;
    return 0;
}

/* Removes key; returns its time in *t_ns, false when absent. */
static bool
ptab_take(struct ptab *t, uint64_t key, uint64_t *t_ns)
{
    size_t j, k;

    if (t->cap == 0)
        return false;
    j = hash64(key) & (t->cap - 1);
    while (t->v[j].key && t->v[j].key != key)
        j = (j + 1) & (t->cap - 1);
    if (t->v[j].key == 0)
        return false;
    *t_ns = t->v[j].t_ns;
    /* backward-shift deletion keeps probe chains intact */
    for (;;) {
        t->v[j].key = 0;
        k = j;
        for (;;) {
            k = (k + 1) & (t->cap - 1);
            if (t->v[k].key == 0) {
                t->n--;
                return true;
            }
            size_t h = hash64(t->v[k].key) & (t->cap - 1);
            if ((j < k) ? (h <= j || h > k) : (h <= j && h > k))
                break;
        }
        t->v[j] = t->v[k];
        j = k;
    }
}

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
on_msg(const struct trace_msg *m, struct ptab *pt, struct sim_tracelat *o,
       size_t *cap)
{
    const uint8_t *w = m->plain ? m->plain : m->wire;
    struct rd r = rd_init(w, m->plain ? m->plain_len : m->wire_len);
    uint32_t len, req_id, resp_to;
    uint64_t t0;

    if (!rd_le32(&r, &len) || !rd_le32(&r, &req_id) || !rd_le32(&r, &resp_to))
        return 0; /* too short to pair: ignored */
    if (m->dir == TRACE_DIR_C2S)
        return ptab_put(pt, (m->conn_id << 32 | req_id) | (1ull << 63),
                        m->t_ns);
    if (!ptab_take(pt, (m->conn_id << 32 | resp_to) | (1ull << 63), &t0)) {
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
    struct ptab pt = {0};
    size_t cap = 0, damaged = 0;
    int rc;

    memset(out, 0, sizeof(*out));
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
    mt_free(pt.v);
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
