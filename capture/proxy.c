/*
 * proxy.c -- set-up, run, shutdown and summary of the recording proxy (see
 * proxy.h): the trace, the record queue, TLS, the loops (ploop.c, on
 * core/srv.h's scaffold) and the summary.  Connections are pconn.c.
 *
 * Threads: one per event loop, plus the trace-writer thread (recq.c).  The
 * caller's thread only waits; its signal handlers call proxy_stop(), which
 * makes every loop drain (ploop.c) and stop.
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
#include "ploop.h"
#include "ptls.h"
#include "recq.h"

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

/* ---- summary ---- */

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
    ploop_sum(p, &tot, h);
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
    atomic_init(&p->warned_rs, false);
    p->nloops = srv_loops_count((int)o->threads, PROXY_THREADS_MAX);
    p->loops = mt_calloc((size_t)p->nloops, sizeof(*p->loops));
    if (p->loops == NULL)
        return mt_err_set(err, -ENOMEM, 0, "out of memory");
    return 0;
}

/* The listeners (ploop.h); ldesc gets the address bound. */
static int
proxy_listen(struct proxy *p, const struct proxy_opts *o, char *ldesc,
             size_t ldesc_len, struct mt_err *err)
{
    int rc = ploop_listen(p, o, err);

    if (rc == 0)
        snprintf(ldesc, ldesc_len, "%s", srv_desc(p->srv));
    return rc;
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
                   PROXY_QUEUE_COUNT, ploop_resume_all, &p, RECQ_NO_START, err);
    if (p.q == NULL) {
        rc = err->code;
        goto out;
    }
    recq_set_redact(p.q, o->redact);
    TRY(recq_start(p.q, err));
    TRY(ploop_init_all(&p, err));
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
    ploop_free_all(&p);
    ptls_free(&p);
    return rc;
}
