/*
 * ploop.c -- one event loop of the recording proxy on core/srv.h's
 * scaffold (see ploop.h).
 *
 * Each loop, in its before-sleep hook, reads again the connections that
 * back-pressure paused or the read budget left readable, takes the
 * connections other loops handed to it, and, once stopping, closes its
 * connections as they go quiet (nothing buffered, held or half-received,
 * every request answered); one second later what remains is closed with
 * reason "shutdown".
 */
#include "ploop.h"

#include <errno.h>
#include <string.h>

#include "core/loop.h"
#include "core/mem.h"
#include "core/srv.h"
#include "core/log.h"
#include "core/trace.h"
#include "pconn.h"
#include "pdelay.h"
#include "proxy.h"

#define PLOOP_DRAIN_NS 1000000000u

static void
ploop_on_conn(void *arg, int fd, const struct sockaddr_storage *peer,
              socklen_t peer_len, uint64_t accepted_ns)
{
    (void)accepted_ns;
    pconn_accept(arg, fd, (const struct sockaddr *)peer, peer_len);
}

/* --max-conns (core/srv.h's on_refused): counted, said once per loop. */
static void
ploop_on_refused(void *arg, size_t open)
{
    struct ploop *pl = arg;

    if (pl->st.refused++ == 0)
        mt_warn("capture: --max-conns %u reached (%zu open); refusing new "
                "connections until some close",
                pl->p->max_conns, open);
}

static void
ploop_on_sweep(void *arg, uint64_t now_ns)
{
    struct ploop *pl = arg;
    struct pconn *c, *next;

    for (c = pl->conns; c != NULL; c = next) {
        next = pconn_next(c);
        (void)pconn_sweep(c, now_ns);
    }
}

/* The drain's second is over (or the loop ended): close what remains. */
static void
ploop_close_all(void *arg)
{
    struct ploop *pl = arg;

    while (pl->conns != NULL)
        pconn_close(pl->conns, TRACE_CLOSE_SHUTDOWN);
}

static void
ploop_before_sleep(struct loop *l, void *arg)
{
    struct ploop *pl = arg;
    struct pconn *c, *next;

    if (atomic_exchange(&pl->resume_pending, false) && pl->paused_any) {
        pl->paused_any = false;
        for (c = pl->conns; c != NULL; c = pconn_next(c))
            pconn_resume(c);
    }
    /* edge-triggered sockets left readable (read budget, back-pressure
     * lifted): read them now */
    (void)pconn_serve_pending(pl);
    /* hand-offs from other loops; once stopping, close the quiet ones */
    if (srv_loop_tick(pl->p->srv, pl->idx)) {
        for (c = pl->conns; c != NULL; c = next) {
            next = pconn_next(c);
            if (pconn_quiet(c))
                pconn_close(c, TRACE_CLOSE_SHUTDOWN);
        }
        if (pl->conns == NULL)
            loop_stop(l);
    }
    /* some still readable (budget spent, or a hand-off just taken): the
     * loop must not block on epoll_wait before reading them */
    if (!ppend_empty(&pl->pend))
        loop_poll_next(l);
    if (pl->p->rt_prio > 0 && pl->p->delay_ns > 0)
        pdelay_bound_spin(pl); /* a FIFO loop must not spin non-stop */
    /* this tick's records, in one hand-off to the writer */
    recq_push_batch(pl->p->q, &pl->batch);
}

/* See ploop.h. */
void
ploop_resume_all(void *arg)
{
    struct proxy *p = arg;
    for (int i = 0; i < p->nloops; i++) {
        atomic_store(&p->loops[i].resume_pending, true);
        loop_wake(p->loops[i].l);
    }
}

/* See ploop.h. */
int
ploop_init_all(struct proxy *p, struct mt_err *err)
{
    for (int i = 0; i < p->nloops; i++) {
        struct ploop *pl = &p->loops[i];
        pl->p = p;
        pl->idx = i;
        atomic_init(&pl->resume_pending, false);
        delay_hist_init(&pl->hist);
        pl->l = loop_new(NULL, 0, err);
        if (pl->l == NULL)
            return err->code;
        pl->scratch = mt_malloc(PCONN_READ_LEN);
        if (pl->scratch == NULL)
            return mt_err_set(err, -ENOMEM, 0, "out of memory");
        loop_set_before_sleep(pl->l, ploop_before_sleep, pl);
        pl->spin_cur_ns = p->spin_ns;
        if (p->delay_ns > 0 && p->spin_auto)
            loop_set_timer_spin_auto(pl->l, p->spin_ns);
        else if (p->delay_ns > 0)
            loop_set_timer_spin(pl->l, p->spin_ns);
        int rc = srv_loop_attach(p->srv, i, pl->l, pl, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* See ploop.h. */
void
ploop_free_all(struct proxy *p)
{
    srv_free(p->srv); /* before the loops it watches */
    p->srv = NULL;
    if (p->loops == NULL)
        return;
    for (int i = 0; i < p->nloops; i++) {
        struct ploop *pl = &p->loops[i];
        recq_batch_free(&pl->batch);
        loop_free(pl->l);
        mt_free(pl->scratch);
    }
    mt_free(p->loops);
    p->loops = NULL;
}

/* See ploop.h. */
int
ploop_listen(struct proxy *p, const struct proxy_opts *o, struct mt_err *err)
{
    struct srv_cfg cfg = {
        .name = "capture",
        .addr = o->listen,
        .addr_len = o->listen_len,
        .nloops = p->nloops,
        .rt_prio = o->rt_prio,
        .pin_loops = o->pin_loops,
        .batch_loops = o->batch_loops,
        .sweep_ns = srv_sweep_period_ns(o->idle_ns, o->msg_timeout_ns),
        .drain_ns = PLOOP_DRAIN_NS,
        .conns_max = o->max_conns,
        .on_conn = ploop_on_conn,
        .on_refused = ploop_on_refused,
        .on_sweep = ploop_on_sweep,
        .on_drain_end = ploop_close_all,
        .on_exit = ploop_close_all,
    };

    p->srv = srv_new(&cfg, err);
    return p->srv == NULL ? err->code : 0;
}

/* See ploop.h. */
void
ploop_sum(const struct proxy *p, struct pstats *t, struct delay_hist *h)
{
    memset(t, 0, sizeof(*t));
    for (int i = 0; i < p->nloops; i++) {
        const struct pstats *s = &p->loops[i].st;
        t->accepted += s->accepted;
        t->refused += s->refused;
        t->upstream_fail += s->upstream_fail;
        t->garbage += s->garbage;
        t->resets += s->resets;
        t->lost_items += s->lost_items;
        t->timeouts += s->timeouts;
        t->too_big += s->too_big;
        t->handed += srv_loop_handed(p->srv, i);
        t->tls_fail += s->tls_fail;
        for (int d = 0; d < 2; d++) {
            t->msgs[d] += s->msgs[d];
            t->rec_bytes[d] += s->rec_bytes[d];
            t->partial[d] += s->partial[d];
            t->partial_bytes[d] += s->partial_bytes[d];
            t->read_bytes[d] += s->read_bytes[d];
            t->fwd_bytes[d] += s->fwd_bytes[d];
            t->unframed[d] += s->unframed[d];
            t->unsent[d] += s->unsent[d];
        }
        if (h != NULL)
            delay_hist_merge(h, &p->loops[i].hist);
    }
}
