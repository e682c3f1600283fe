/*
 * pdelay.c -- holding replies for --delay-ms (see pdelay.h).
 *
 * A connection's holds form a ring indexed by three monotonic counters:
 * h_done <= h_rel <= h_end.  [h_rel, h_end) wait for their deadline,
 * [h_done, h_rel) are released but not yet fully written (their achieved
 * delay is measured when they are).  The ring doubles up to
 * PCONN_HOLDS_MAX.  The loop counts the holds waiting in all its
 * connections (ploop.held) for pdelay_bound_spin().
 */
#include "pdelay.h"

#include <errno.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/trace.h"

/* See pdelay.h. */
bool
pdelay_on(const struct pconn *c, int d)
{
    return d == TRACE_DIR_S2C && c->pl->p->delay_ns > 0;
}

static int
pdelay_grow(struct pconn *c)
{
    size_t cap = c->holds_cap ? c->holds_cap * 2 : 16;
    struct phold *h;

    if (cap > PCONN_HOLDS_MAX)
        return MT_ELIMIT;
    h = mt_malloc(cap * sizeof(*h));
    if (h == NULL)
        return -ENOMEM;
    for (size_t i = c->h_done; i < c->h_end; i++)
        h[i % cap] = c->holds[i % c->holds_cap];
    mt_free(c->holds);
    c->holds = h;
    c->holds_cap = cap;
    return 0;
}

/* c's timer: releases every hold that is due, re-arms for the next. */
static void
pdelay_on_timer(struct loop *l, struct loop_timer *t, void *arg)
{
    struct pconn *c = arg;
    struct pdir *pd = &c->d[TRACE_DIR_S2C];
    uint64_t now = loop_now_ns(l);

    while (c->h_rel < c->h_end) {
        struct phold *h = &c->holds[c->h_rel % c->holds_cap];
        if (h->ready_ns > now) {
            loop_timer_start(l, t, h->ready_ns, pdelay_on_timer, c);
            break;
        }
        pd->rel_off = h->end_off;
        c->h_rel++;
        c->pl->held--;
    }
    pconn__flush(c, TRACE_DIR_S2C);
    pconn__after(c);
}

/* See pdelay.h. */
void
pdelay_hold_add(struct pconn *c, uint64_t arrival_ns, uint64_t end_off)
{
    struct phold *h;
    uint64_t t = arrival_ns ? arrival_ns : loop_now_ns(c->pl->l);

    if (c->h_end - c->h_done == c->holds_cap && pdelay_grow(c) < 0) {
        mt_error("capture: conn %llu: more than %u replies held; closing",
                 (unsigned long long)c->id, PCONN_HOLDS_MAX);
        pconn__die(c, TRACE_CLOSE_ERROR);
        return;
    }
    h = &c->holds[c->h_end % c->holds_cap];
    h->ready_ns = t + c->pl->p->delay_ns;
    h->end_off = end_off;
    h->arrival_ns = arrival_ns;
    c->h_end++;
    c->pl->held++;
    if (!loop_timer_active(&c->hold_timer))
        loop_timer_start(c->pl->l, &c->hold_timer, h->ready_ns, pdelay_on_timer,
                         c);
}

/* See pdelay.h. */
void
pdelay_written(struct pconn *c, uint64_t t_send)
{
    while (c->h_done < c->h_rel) {
        struct phold *h = &c->holds[c->h_done % c->holds_cap];
        if (h->end_off > c->d[TRACE_DIR_S2C].out_off)
            break;
        if (h->arrival_ns != 0)
            delay_hist_add(&c->pl->hist, t_send - h->arrival_ns);
        c->h_done++;
    }
}

/* See pdelay.h. */
void
pdelay_close(struct pconn *c)
{
    loop_timer_stop(c->pl->l, &c->hold_timer);
    c->pl->held -= c->h_end - c->h_rel;
    mt_free(c->holds);
    c->holds = NULL;
    c->holds_cap = c->h_done = c->h_rel = c->h_end = 0;
}

/* See pdelay.h.  Cost: a division per loop tick, a call into the loop
 * only when the window changes. */
void
pdelay_bound_spin(struct ploop *pl)
{
    const struct proxy *p = pl->p;
    uint64_t w = p->spin_ns;

    if (pl->held > 0 && (p->delay_ns / 2) / pl->held < w)
        w = (p->delay_ns / 2) / pl->held;
    if (w == pl->spin_cur_ns)
        return;
    pl->spin_cur_ns = w;
    if (p->spin_auto)
        loop_set_timer_spin_auto(pl->l, w);
    else
        loop_set_timer_spin(pl->l, w);
}
