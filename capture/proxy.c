/*
 * proxy.c -- listeners, loop threads, shutdown and summary of the recording
 * proxy (see proxy.h; connections themselves are in pconn.c).
 *
 * Threads: one per event loop, plus the trace-writer thread (recq.c).  The
 * caller's thread only waits; its signal handlers call proxy_stop(), which
 * sets a flag and wakes every loop.  Each loop then, in its before-sleep
 * hook, closes its listener, closes connections as they go quiet (nothing
 * buffered, held or half-received, every request answered) and, one second
 * later, closes what remains with reason "shutdown".
 */
#include "proxy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/sched.h"
#include "core/srv.h"
#include "core/trace.h"
#include "core/wire.h"
#include "pconn.h"
#include "pdelay.h"
#include "ptls.h"
#include "recq.h"

#define PROXY_DRAIN_NS 1000000000u

static struct proxy *_Atomic proxy_running;
static atomic_bool proxy_stop_early;

/* See proxy.h. */
void
proxy_stop(void)
{
    struct proxy *p = atomic_load(&proxy_running);

    atomic_store(&proxy_stop_early, true);
    if (p != NULL)
        srv_stop(p->srv);
}

/* ---- what the scaffold (core/srv.h) calls on each loop ---- */

static void
proxy_on_conn(void *arg, int fd, const struct sockaddr_storage *peer,
              socklen_t peer_len, uint64_t accepted_ns)
{
    (void)accepted_ns;
    pconn_accept(arg, fd, (const struct sockaddr *)peer, peer_len);
}

static void
proxy_on_sweep(void *arg, uint64_t now_ns)
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
proxy_close_all(void *arg)
{
    struct ploop *pl = arg;

    while (pl->conns != NULL)
        pconn_close(pl->conns, TRACE_CLOSE_SHUTDOWN);
}

static void
proxy_before_sleep(struct loop *l, void *arg)
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

static void
proxy_resume(void *arg)
{
    struct proxy *p = arg;
    for (int i = 0; i < p->nloops; i++) {
        atomic_store(&p->loops[i].resume_pending, true);
        loop_wake(p->loops[i].l);
    }
}

static int
proxy_loops_init(struct proxy *p, struct mt_err *err)
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
        loop_set_before_sleep(pl->l, proxy_before_sleep, pl);
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

static void
proxy_loops_free(struct proxy *p)
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

/* ---- summary ---- */

static void
proxy_sum(const struct proxy *p, struct pstats *t, struct delay_hist *h)
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

static void
proxy_stats_record(struct trace_writer *w, const struct pstats *t,
                   uint64_t dropped)
{
    struct trace_stats st;
    const struct {
        const char *name;
        uint64_t v;
    } kv[] = {
        {"connections", t->accepted},
        {"refused", t->refused},
        {"upstream_fail", t->upstream_fail},
        {"not_mongodb", t->garbage},
        {"timeouts", t->timeouts},
        {"too_big", t->too_big},
        {"msgs_c2s", t->msgs[0]},
        {"msgs_s2c", t->msgs[1]},
        {"bytes_c2s", t->read_bytes[0]},
        {"bytes_s2c", t->read_bytes[1]},
        {"fwd_bytes_c2s", t->fwd_bytes[0]},
        {"fwd_bytes_s2c", t->fwd_bytes[1]},
        {"partial", t->partial[0] + t->partial[1]},
        {"tls_handshake_fail", t->tls_fail},
        {"dropped", dropped},
    };

    memset(&st, 0, sizeof(st));
    st.t_ns = mt_now_ns();
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
        snprintf(st.s[i].name, sizeof(st.s[i].name), "%s", kv[i].name);
        st.s[i].value = kv[i].v;
    }
    st.n = sizeof(kv) / sizeof(kv[0]);
    (void)trace_writer_stats(w, &st);
}

static void
proxy_print_summary(const struct proxy *p, const struct pstats *t,
                    const struct delay_hist *h, const struct recq_stats *qs,
                    uint64_t dropped, double secs, const char *out)
{
    static const char *const dn[2] = {"client->server", "server->client"};
    uint64_t rec = 0, fwd = 0;

    fprintf(stderr,
            "mtrace capture: %.1f s, trace %s: %llu records\n"
            "  connections: %llu accepted, %llu refused (--max-conns), "
            "%llu upstream failures, %llu resets, %llu not MongoDB, "
            "%llu timed out, %llu over --max-msg-bytes\n",
            secs, out, (unsigned long long)qs->records,
            (unsigned long long)t->accepted, (unsigned long long)t->refused,
            (unsigned long long)t->upstream_fail, (unsigned long long)t->resets,
            (unsigned long long)t->garbage, (unsigned long long)t->timeouts,
            (unsigned long long)t->too_big);
    if (p->nloops > 1) {
        fprintf(stderr, "  loops: %d, connections per loop:", p->nloops);
        for (int i = 0; i < p->nloops; i++)
            fprintf(stderr, "%s%llu", i ? " / " : " ",
                    (unsigned long long)p->loops[i].st.accepted);
        fprintf(stderr, " (%llu handed over between loops)\n",
                (unsigned long long)t->handed);
    }
    if (p->tls_accept != NULL || p->tls_connect != NULL) {
        char td[96];
        ptls_desc(p, false, td, sizeof(td));
        fprintf(stderr,
                "  tls: %s; %llu client handshakes failed (target "
                "handshake failures count as upstream failures)\n",
                td, (unsigned long long)t->tls_fail);
    }
    if (qs->redacted > 0)
        fprintf(stderr, "  redacted: %llu messages (--redact)\n",
                (unsigned long long)qs->redacted);
    for (int d = 0; d < 2; d++) {
        uint64_t r = t->rec_bytes[d] + t->partial_bytes[d];
        rec += r;
        fwd += t->fwd_bytes[d];
        fprintf(stderr,
                "  %s: %llu messages (+%llu partial), %llu bytes read, %llu "
                "forwarded, %llu recorded\n",
                dn[d], (unsigned long long)t->msgs[d],
                (unsigned long long)t->partial[d],
                (unsigned long long)t->read_bytes[d],
                (unsigned long long)t->fwd_bytes[d], (unsigned long long)r);
    }
    fprintf(stderr,
            "  record queue: peak %llu bytes, reading paused %llu times "
            "(back-pressure)\n",
            (unsigned long long)qs->max_bytes, (unsigned long long)qs->pauses);
    fprintf(stderr,
            "  recorded %llu bytes %s forwarded %llu bytes (unsent %llu, not "
            "framed %llu); dropped %llu\n",
            (unsigned long long)rec,
            rec == fwd ? "=" : "!=", (unsigned long long)fwd,
            (unsigned long long)(t->unsent[0] + t->unsent[1]),
            (unsigned long long)(t->unframed[0] + t->unframed[1]),
            (unsigned long long)dropped);
    if (p->delay_ns > 0 && h != NULL)
        fprintf(stderr,
                "  delay: requested %.3f ms; achieved p50 %.3f ms, p99 %.3f "
                "ms, max %.3f ms over %llu replies\n",
                (double)p->delay_ns / 1e6,
                (double)delay_hist_quantile(h, 0.5) / 1e6,
                (double)delay_hist_quantile(h, 0.99) / 1e6,
                (double)h->max_ns / 1e6, (unsigned long long)h->n);
}

/* ---- run ---- */

static struct trace_writer *
proxy_open_trace(const struct proxy *p, const struct proxy_opts *o,
                 const char *ldesc, struct mt_err *err)
{
    struct trace_header hdr;
    struct trace_writer *w;
    char td[96];

    memset(&hdr, 0, sizeof(hdr));
    snprintf(hdr.tool_version, sizeof(hdr.tool_version), "mtrace %s",
             MT_VERSION);
    hdr.source = TRACE_SRC_PROXY;
    ptls_desc(p, true, td,
              sizeof(td)); /* which legs were TLS: all connections */
    if (o->delay_ns > 0)
        snprintf(hdr.source_desc, sizeof(hdr.source_desc),
                 "proxy %s -> %s%s, delay %.3f ms", ldesc, o->target_desc, td,
                 (double)o->delay_ns / 1e6);
    else
        snprintf(hdr.source_desc, sizeof(hdr.source_desc), "proxy %s -> %s%s",
                 ldesc, o->target_desc, td);
    hdr.start_wall_ns = mt_wall_ns();
    hdr.start_mono_ns = mt_now_ns();
    hdr.ts_precision_ns = 1;
    w = trace_writer_open(o->out_path, o->trace_flags, &hdr, err);
    if (w != NULL &&
        trace_writer_set_level(w, o->zstd_level ? o->zstd_level
                                                : PROXY_ZSTD_LEVEL) < 0)
        mt_warn("capture: zstd level %d refused; using the default",
                o->zstd_level);
    return w;
}

/* After the loops stopped: drain the queue, close the trace, summarise.
 * Closes w.  Returns rc, or the first trace error when rc is 0. */
static int
proxy_finish(struct proxy *p, struct trace_writer *w,
             const struct proxy_opts *o, int rc, uint64_t t0,
             struct mt_err *err)
{
    struct recq_stats qs;
    struct pstats tot;
    struct delay_hist *h = mt_malloc(sizeof(*h)); /* 229 KB */
    uint64_t dropped;
    int crc;

    memset(&qs, 0, sizeof(qs));
    recq_close(p->q, &qs);
    p->q = NULL;
    if (h != NULL)
        delay_hist_init(h);
    proxy_sum(p, &tot, h);
    dropped = tot.lost_items + qs.write_errors;
    proxy_stats_record(w, &tot, dropped);
    crc = trace_writer_close(w);
    if (qs.first_error < 0 && rc == 0)
        rc = mt_err_set(err, qs.first_error, 0,
                        "writing the trace %s failed: %s; it is readable up "
                        "to its last complete frame",
                        o->out_path, mt_strerror(qs.first_error));
    if (crc < 0 && rc == 0)
        rc = mt_err_set(err, crc, 0, "closing the trace %s failed: %s",
                        o->out_path, mt_strerror(crc));
    if (!o->quiet)
        proxy_print_summary(p, &tot, h, &qs, dropped,
                            (double)(mt_now_ns() - t0) / 1e9, o->out_path);
    mt_free(h);
    return rc;
}

/*
 * --rt-prio: tries SCHED_FIFO on the calling thread and puts it back, so
 * that a refusal (EPERM) is reported before the trace file is created.
 * A caller already under a real-time policy (chrt) is left alone.
 */
static int
proxy_rt_probe(int prio, struct mt_err *err)
{
    int rc;

    if (prio == 0 || sched_is_realtime())
        return 0;
    rc = sched_set_realtime(prio, err);
    if (rc < 0)
        return rc;
    return sched_set_normal();
}

static int
proxy_init(struct proxy *p, const struct proxy_opts *o, struct mt_err *err)
{
    memset(p, 0, sizeof(*p));
    p->target = o->target;
    p->target_len = o->target_len;
    snprintf(p->target_desc, sizeof(p->target_desc), "%s", o->target_desc);
    p->delay_ns = o->delay_ns;
    p->spin_ns = o->spin_ns;
    p->spin_auto = o->spin_auto;
    p->max_conns = o->max_conns;
    p->idle_ns = o->idle_ns;
    p->msg_timeout_ns = o->msg_timeout_ns;
    p->msg_max = o->msg_max ? o->msg_max : WIRE_MSG_LEN_MAX;
    p->rt_prio = o->rt_prio;
    p->pin_loops = o->pin_loops;
    p->batch_loops = o->batch_loops;
    atomic_init(&p->next_id, 1);
    atomic_init(&p->nconns, 0);
    atomic_init(&p->warned_rs, false);
    p->nloops = srv_loops_count((int)o->threads, PROXY_THREADS_MAX);
    p->loops = mt_calloc((size_t)p->nloops, sizeof(*p->loops));
    if (p->loops == NULL)
        return mt_err_set(err, -ENOMEM, 0, "out of memory");
    return 0;
}

/* The listeners (core/srv.h); ldesc gets the address bound. */
static int
proxy_listen(struct proxy *p, const struct proxy_opts *o, char *ldesc,
             size_t ldesc_len, struct mt_err *err)
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
        .drain_ns = PROXY_DRAIN_NS,
        .on_conn = proxy_on_conn,
        .on_sweep = proxy_on_sweep,
        .on_drain_end = proxy_close_all,
        .on_exit = proxy_close_all,
    };

    p->srv = srv_new(&cfg, err);
    if (p->srv == NULL)
        return err->code;
    snprintf(ldesc, ldesc_len, "%s", srv_desc(p->srv));
    return 0;
}

/* Runs the loop threads until proxy_stop() and their drain. */
static int
proxy_threads_run(struct proxy *p, struct mt_err *err)
{
    int rc = srv_start(p->srv, err);

    if (rc < 0 || atomic_load(&proxy_stop_early))
        srv_stop(p->srv);
    srv_join(p->srv);
    return rc;
}

/* See proxy.h. */
int
proxy_run(const struct proxy_opts *o, struct mt_err *err)
{
    struct proxy p;
    struct trace_writer *w = NULL;
    char ldesc[64], tdesc[96];
    uint64_t t0;
    int rc;

    TRY(proxy_init(&p, o, err));
    TRY(proxy_rt_probe(o->rt_prio, err));
    TRY(ptls_init(&p, o, err)); /* certificate files: before listening */
    TRY(proxy_listen(&p, o, ldesc, sizeof(ldesc), err));
    w = proxy_open_trace(&p, o, ldesc, err);
    if (w == NULL) {
        rc = err->code;
        goto out;
    }
    p.q = recq_new(w, o->queue_bytes ? o->queue_bytes : PROXY_QUEUE_BYTES,
                   PROXY_QUEUE_COUNT, proxy_resume, &p, RECQ_NO_START, err);
    if (p.q == NULL) {
        rc = err->code;
        goto out;
    }
    recq_set_redact(p.q, o->redact);
    TRY(recq_start(p.q, err));
    TRY(proxy_loops_init(&p, err));
    atomic_store(&proxy_running, &p);
    sched_warn_rt_cores("capture", o->rt_prio, p.nloops, "docs/capture.md");
    ptls_desc(&p, true, tdesc, sizeof(tdesc));
    mt_info("capture: proxy listening on %s -> %s%s with %d loop%s%s%s, "
            "recording to %s",
            ldesc, o->target_desc, tdesc, p.nloops, p.nloops > 1 ? "s" : "",
            o->rt_prio       ? " (SCHED_FIFO)"
            : o->batch_loops ? " (SCHED_BATCH)"
                             : "",
            o->delay_ns ? ", replies delayed" : "", o->out_path);
    t0 = mt_now_ns();
    rc = proxy_threads_run(&p, err);
    atomic_store(&proxy_running, NULL);
    rc = proxy_finish(&p, w, o, rc, t0, err);
    w = NULL;
out:
    atomic_store(&proxy_running, NULL);
    if (p.q != NULL)
        recq_close(p.q, NULL);
    if (w != NULL)
        trace_writer_close(w);
    proxy_loops_free(&p);
    ptls_free(&p);
    return rc;
}
