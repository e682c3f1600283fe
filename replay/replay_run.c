/*
 * replay_run.c -- `mtrace replay` after its options: setup, trace loading,
 * signals, serving, the summary (see replay_run.h).
 */
#include "replay_run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/pmqos.h"
#include "core/sched.h"
#include "core/tls.h"
#include "core/trace.h"
#include "index.h"
#include "replay_summary.h"

static int
load(const struct replay_opts *c, struct index *idx)
{
    struct mt_err err = {0};
    struct trace_reader *tr = trace_reader_open_arg(c->trace, &err);
    int rc;

    if (tr == NULL) {
        fprintf(stderr, "mtrace replay: cannot read trace %s: %s\n", c->trace,
                err.msg[0] ? err.msg : mt_strerror(err.code));
        return -1;
    }
    index_init(idx, &c->rules);
    rc = index_load(idx, tr, &err);
    trace_reader_free(tr);
    if (rc < 0) {
        fprintf(stderr, "mtrace replay: %s: %s\n", c->trace, err.msg);
        return -1;
    }
    if (idx->st.exchanges == 0 && idx->hello == NULL) {
        /* a server that misses every command only hides the mistake */
        fprintf(stderr,
                "mtrace replay: %s: no request/reply exchange in its %llu "
                "records (%llu requests, %llu replies): nothing to answer "
                "from; record one with 'mtrace capture'\n",
                c->trace, (unsigned long long)idx->st.records,
                (unsigned long long)idx->st.requests,
                (unsigned long long)idx->st.replies);
        index_free(idx);
        return -1;
    }
    return 0;
}

/* 10 000 connections need more than the usual 1024 descriptors: raise the
 * soft limit to the hard one, and say so when that is not enough. */
static void
raise_fd_limit(size_t conns_max)
{
    struct rlimit rl;
    size_t want = (conns_max ? conns_max : SERVER_CONNS_DEFAULT) + 64;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
        (void)getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
        mt_warn("replay: open files limited to %llu: fewer than --max-conns "
                "connections can be accepted (raise ulimit -n)",
                (unsigned long long)rl.rlim_cur);
}

static int
serve(const struct replay_opts *c, struct index *idx, struct replay_stats *st)
{
    struct mt_err err = {0};
    struct server_opts so;
    struct server *s;
    sigset_t set;
    int sig;

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    /* a shell starts background jobs with SIGINT ignored: an ignored signal
     * never reaches sigwait, so take both back before blocking them */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit(c->so.conns_max);
    so = c->so;
    so.tls = c->tls;
    s = server_start(&so, idx, &err);
    if (s == NULL) {
        fprintf(stderr, "mtrace replay: %s\n", err.msg);
        return -1;
    }
    sched_warn_rt_cores("replay", c->so.rt_prio, server_threads(s),
                        "docs/replay.md");
    /* the address bound, an IPv6 one in brackets as a URI wants it */
    mt_info("replay: listening on %s%s with %d loops%s; %llu "
            "exchanges under %llu keys from %s (%llu getMore batches, hello "
            "%s, %llu skipped)",
            server_desc(s),
            c->tls == NULL      ? ""
            : c->tls_ca != NULL ? " (TLS, client certificates required)"
                                : " (TLS)",
            server_threads(s), c->so.rt_prio > 0 ? " (SCHED_FIFO)" : "",
            (unsigned long long)(idx->st.exchanges - idx->st.getmores),
            (unsigned long long)idx->st.groups, c->trace,
            (unsigned long long)idx->st.getmores,
            idx->hello ? "recorded" : "built-in",
            (unsigned long long)idx->st.skipped);
    if (c->auth.enabled)
        mt_info("replay: authenticating like mongod --auth: %zu user%s of "
                "database %s, SCRAM-SHA-1 (%u iterations) and SCRAM-SHA-256 "
                "(%u iterations)",
                c->auth.creds.n, c->auth.creds.n == 1 ? "" : "s",
                c->auth.creds.users[0].db,
                c->auth.creds.users[0].sec[SCRAM_SHA1].iterations,
                c->auth.creds.users[0].sec[SCRAM_SHA256].iterations);
    if (idx->st.auth > 0)
        mt_info("replay: %llu recorded authentication exchanges (saslStart, "
                "saslContinue, ...) are never served: %s",
                (unsigned long long)idx->st.auth,
                c->auth.enabled ? "replay runs its own SCRAM conversations"
                                : "start replay with --credentials to "
                                  "authenticate clients");
    sigwait(&set, &sig);
    server_stop(s);
    server_stats(s, st);
    server_free(s);
    return 0;
}

/* --summary-json FILE is created before anything else, so that a path
 * that cannot be written fails at start, not after a long run whose
 * summary would be lost.  0, or 1 (said why). */
static int
open_summary(struct replay_opts *c)
{
    if (c->summary_json == NULL)
        return 0;
    c->summary_fp = fopen(c->summary_json, "w");
    if (c->summary_fp == NULL) {
        fprintf(stderr,
                "mtrace replay: --summary-json %s: cannot create it: %s\n",
                c->summary_json, strerror(errno));
        return 1;
    }
    return 0;
}

/* --cpu-dma-latency: held before the trace is read and the listeners
 * open, so a refusal leaves nothing listening.  0, or 1 on refusal. */
static int
hold_pmqos(const struct replay_opts *c, struct pmqos *q)
{
    struct mt_err err = {0};

    pmqos_init(q);
    if (c->dma_lat_us < 0)
        return 0;
    if (pmqos_hold(q, c->dma_lat_us, &err) < 0) {
        fprintf(stderr,
                "mtrace replay: --cpu-dma-latency %d: %s; run without the "
                "option, or as root\n",
                c->dma_lat_us, err.msg);
        return 1;
    }
    mt_info("replay: holding a CPU wake-up latency request of %d us (%s) "
            "until exit",
            c->dma_lat_us, PMQOS_DEV);
    return 0;
}

/* --tls-cert: the certificate and key are read before the trace is, so a
 * bad file fails at once.  0, 1 (runtime: a file unreadable or refused),
 * or 2 (bad usage). */
static int
tls_setup(struct replay_opts *c)
{
    struct mt_err err = {0};

    if (c->tls_cert == NULL && (c->tls_key != NULL || c->tls_ca != NULL)) {
        fprintf(stderr, "mtrace replay: --tls-key and --tls-ca need "
                        "--tls-cert; run 'mtrace replay --help'\n");
        return 2;
    }
    if (c->tls_cert == NULL)
        return 0;
    c->tls = tls_ctx_server_new(c->tls_cert, c->tls_key, c->tls_ca, &err);
    if (c->tls == NULL) {
        fprintf(stderr, "mtrace replay: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* Serves until SIGINT/SIGTERM with the loaded index; the summary and
 * --summary-json after.  Returns the exit status. */
static int
run(const struct replay_opts *c, struct index *idx, struct pmqos *q)
{
    struct replay_pmqos_seen seen = {.held_us = q->us, .kernel_us = -1};
    struct replay_stats *st = mt_malloc(sizeof(*st));
    int rc = 0;

    if (st == NULL || serve(c, idx, st) < 0) {
        mt_free(st);
        if (c->summary_fp != NULL)
            fclose(c->summary_fp);
        return 1;
    }
    if (pmqos_current(&seen.kernel_us) < 0)
        seen.kernel_us = -1;
    pmqos_release(q);
    replay_summary_print(stderr, st, c->auth.enabled, c->tls != NULL);
    replay_summary_print_pmqos(stderr, &seen);
    if (c->summary_fp != NULL &&
        replay_summary_json(c->summary_fp, c->summary_json, st, c->tls != NULL,
                            &seen) < 0)
        rc = 1;
    if (c->strict && st->missed > 0) {
        fprintf(stderr,
                "mtrace replay: --strict: %llu requests had no "
                "recorded reply\n",
                (unsigned long long)st->missed);
        rc = 1;
    }
    mt_free(st);
    return rc;
}

/* See replay_run.h. */
int
replay_run(struct replay_opts *c)
{
    struct index idx;
    struct pmqos q;
    int rc;

    if ((rc = tls_setup(c)) != 0)
        return rc;
    if (open_summary(c) != 0) {
        tls_ctx_free(c->tls);
        return 1;
    }
    if (hold_pmqos(c, &q) != 0 || load(c, &idx) < 0) {
        pmqos_release(&q);
        if (c->summary_fp != NULL)
            fclose(c->summary_fp);
        tls_ctx_free(c->tls);
        return 1;
    }
    rc = run(c, &idx, &q);
    pmqos_release(&q);
    index_free(&idx);
    tls_ctx_free(c->tls);
    return rc;
}
