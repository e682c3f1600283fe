/*
 * pdelay.c -- the timer of --delay-ms (see pdelay.h).
 *
 * The holds themselves are the server->client stream's (pstream.c); a
 * connection's timer fires at the earliest deadline.  The loop counts the
 * holds waiting in all its connections (ploop.held) for
 * pdelay_bound_spin().
 */
#include "pdelay.h"

#include "core/log.h"
#include "core/mem.h"
#include "core/trace.h"

/* See pdelay.h. */
bool
pdelay_on(const struct pconn *c, int d)
{
    return d == TRACE_DIR_S2C && c->pl->p->delay_ns > 0;
}

/* c's timer: releases every hold that is due, re-arms for the next. */
static void
pdelay_on_timer(struct loop *l, struct loop_timer *t, void *arg)
{
    struct pconn *c = arg;

    (void)t;
    (void)pstream_release(&c->d[TRACE_DIR_S2C].s, loop_now_ns(l));
    pdelay_arm(c);
    pconn__flush(c, TRACE_DIR_S2C);
    pconn__after(c);
}

/* See pdelay.h. */
void
pdelay_arm(struct pconn *c)
{
    const struct pstream *s = &c->d[TRACE_DIR_S2C].s;
    size_t held = pstream_held(s);
    uint64_t next = pstream_next_ready(s);

    c->pl->held += held - c->held;
    c->held = held;
    if (next != 0 && !loop_timer_active(&c->hold_timer))
        loop_timer_start(c->pl->l, &c->hold_timer, next, pdelay_on_timer, c);
}

/* See pdelay.h. */
void
pdelay_eof(struct pconn *c, uint64_t now_ns)
{
    unsigned st = pstream_eof(&c->d[TRACE_DIR_S2C].s, now_ns);

    if (st != PSTREAM_OK)
        pdelay_full(c);
    pdelay_arm(c);
}

/* See pdelay.h. */
void
pdelay_full(struct pconn *c)
{
    mt_error("capture: conn %llu: more than %u replies held; closing",
             (unsigned long long)c->id, PSTREAM_HOLDS_MAX);
    pconn__die(c, TRACE_CLOSE_ERROR);
}

/* See pdelay.h. */
void
pdelay_close(struct pconn *c)
{
    loop_timer_stop(c->pl->l, &c->hold_timer);
    c->pl->held -= c->held;
    c->held = 0;
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
