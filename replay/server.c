/*
 * server.c -- the replay server's loops on core/srv.h's scaffold
 * (listeners, hand-off, threads, sweep): what a loop does with its
 * connections (see server.h); the socket side of each connection is
 * sconn.c.
 */
#include "server.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/srv.h"
#include "sconn.h"

struct sloop {
    struct server *srv; /* borrowed */
    struct loop *l;     /* owned */
    int idx;            /* its index in s->srv */
    struct replay_worker w;
    struct sconn *conns; /* owned list */
    size_t nconns;
};

struct server {
    struct server_opts o;
    struct replay_shared sh;
    struct cursor_table cursors;
    struct sloop *loops; /* owned */
    int nloops;
    struct srv *srv; /* owned: listeners, hand-off, threads, --max-conns
                      * (core/srv.h) */
};

/* sconn_close's last step: c leaves its loop's list and is freed. */
static void
on_closed(struct sconn *c, void *arg)
{
    struct sloop *sl = arg;

    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        sl->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    sl->nconns--;
    srv_conn_done(sl->srv->srv, sl->idx);
    mt_free(c);
}

/* core/srv.h's on_refused: --max-conns. */
static void
refused_one(void *arg, size_t open)
{
    (void)arg;
    mt_warn("replay: connection refused: %zu connections open (limit)", open);
}

/* core/srv.h's on_conn: takes fd as one of sl's connections. */
static void
accept_one(void *arg, int fd, const struct sockaddr_storage *ss,
           socklen_t ss_len, uint64_t accepted_ns)
{
    struct sloop *sl = arg;
    struct sconn *c;

    (void)ss_len;
    if ((c = mt_calloc(1, sizeof(*c))) == NULL) {
        srv_conn_done(sl->srv->srv, sl->idx);
        mt_warn("replay: out of memory accepting a connection; closed");
        close(fd);
        return;
    }
    if (sconn_open(c, sl->l, &sl->w, &sl->srv->o, fd, ss, accepted_ns,
                   on_closed, sl) < 0) {
        srv_conn_done(sl->srv->srv, sl->idx);
        mt_warn("replay: cannot watch connection fd %d; closed", fd);
        close(fd);
        mt_free(c);
        return;
    }
    c->next = sl->conns;
    if (sl->conns != NULL)
        sl->conns->prev = c;
    sl->conns = c;
    sl->nconns++;
}

/* Before the loop sleeps: the connections other loops passed to it, and
 * the stop (core/srv.h). */
static void
on_before_sleep(struct loop *l, void *arg)
{
    struct sloop *sl = arg;

    (void)l;
    (void)srv_loop_tick(sl->srv->srv, sl->idx);
}

/* core/srv.h's sweep: idle and incomplete-message timeouts. */
static void
on_sweep(void *arg, uint64_t now)
{
    struct sloop *sl = arg;
    struct sconn *c, *next;
    char tmp[192];

    for (c = sl->conns; c != NULL; c = next) {
        const char *why = sconn_expired(c, now, tmp, sizeof(tmp));
        next = c->next;
        if (why != NULL) {
            mt_warn("replay: conn %lld from %s: %s; closing it",
                    (long long)c->core.id, c->peer, why);
            sl->w.st.timeouts++;
            sconn_close(c, NULL);
        }
    }
}

/* On the loop's thread once it has run. */
static void
on_loop_exit(void *arg)
{
    struct sloop *sl = arg;

    loop_wake_stats_get(sl->l, &sl->w.st.wake);
}

/* ---- listeners and threads ---- */

static int
sloop_init(struct server *s, struct sloop *sl, uint64_t seed,
           struct mt_err *err)
{
    sl->srv = s;
    sl->idx = (int)(sl - s->loops);
    if (replay_worker_init(&sl->w, &s->sh, seed) < 0)
        return mt_err_set(err, -ENOMEM, 0, "out of memory");
    sl->l = loop_new(NULL, 0, err);
    if (sl->l == NULL)
        return err->code ? err->code : -ENOMEM;
    if (s->o.spin_auto)
        loop_set_timer_spin_auto(sl->l, s->o.spin_ns);
    else
        loop_set_timer_spin(sl->l, s->o.spin_ns);
    loop_set_before_sleep(sl->l, on_before_sleep, sl);
    return srv_loop_attach(s->srv, sl->idx, sl->l, sl, err);
}

/* The listeners (core/srv.h). */
static int
server_listen(struct server *s, struct mt_err *err)
{
    struct srv_cfg cfg = {
        .name = "replay",
        .addr = s->o.listen,
        .addr_len = s->o.listen_len,
        .nloops = s->nloops,
        .rt_prio = s->o.rt_prio,
        .pin_loops = s->o.pin_loops,
        .batch_loops = s->o.batch_loops,
        .sweep_ns = srv_sweep_period_ns(s->o.idle_ns, s->o.msg_timeout_ns),
        .drain_ns = 0, /* a stop closes every connection at once */
        .conns_max = s->o.conns_max,
        .on_conn = accept_one,
        .on_refused = refused_one,
        .on_sweep = on_sweep,
        .on_exit = on_loop_exit,
    };

    s->srv = srv_new(&cfg, err);
    return s->srv == NULL ? err->code : 0;
}

struct server *
server_start(const struct server_opts *o, struct index *idx, struct mt_err *err)
{
    struct server *s = mt_calloc(1, sizeof(*s));
    int rc;

    if (s == NULL) {
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        return NULL;
    }
    s->o = *o;
    s->nloops = srv_loops_count(o->threads, SERVER_THREADS_MAX);
    if (s->o.conns_max == 0)
        s->o.conns_max = SERVER_CONNS_DEFAULT;
    if (s->o.msg_max == 0 || s->o.msg_max > WIRE_MSG_LEN_MAX)
        s->o.msg_max = WIRE_MSG_LEN_MAX;
    s->sh.idx = idx;
    s->sh.cursors = &s->cursors;
    s->sh.delay = o->delay;
    s->sh.auth = o->auth;
    atomic_init(&s->sh.next_conn_id, 1);
    handshake_init(&s->sh.hs, idx->hello, idx->hello_len);
    s->sh.hs.compressors =
        o->compress_set ? o->compress_mask : idx->compressors;
    rc = cursor_table_init(&s->cursors, CURSOR_MAX_DEFAULT, o->delay.seed);
    s->loops = mt_calloc((size_t)s->nloops, sizeof(*s->loops));
    if (rc < 0 || s->loops == NULL) {
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        goto fail;
    }
    if (server_listen(s, err) < 0)
        goto fail;
    for (int i = 0; i < s->nloops; i++) {
        rc = sloop_init(s, &s->loops[i], o->delay.seed + 7919u * (uint64_t)i,
                        err);
        if (rc < 0)
            goto fail;
    }
    if (srv_start(s->srv, err) < 0)
        goto fail;
    return s;
fail:
    server_stop(s);
    server_free(s);
    return NULL;
}

/* See server.h. */
const char *
server_desc(const struct server *s)
{
    return srv_desc(s->srv);
}

/* See server.h. */
uint16_t
server_port(const struct server *s)
{
    return srv_port(s->srv);
}

/* See server.h. */
int
server_threads(const struct server *s)
{
    return s->nloops;
}

/* See server.h. */
void
server_stop(struct server *s)
{
    if (s == NULL || s->srv == NULL)
        return;
    srv_stop(s->srv);
    srv_join(s->srv);
    for (int i = 0; i < s->nloops; i++)
        while (s->loops[i].conns != NULL)
            sconn_close(s->loops[i].conns, NULL);
}

/* See server.h. */
void
server_stats(const struct server *s, struct replay_stats *out)
{
    replay_stats_init(out);
    for (int i = 0; i < s->nloops; i++) {
        uint64_t n = s->loops[i].w.st.conns;
        replay_stats_merge(out, &s->loops[i].w.st);
        if (i == 0 || n < out->loop_conns_min)
            out->loop_conns_min = n;
        if (n > out->loop_conns_max)
            out->loop_conns_max = n;
    }
}

/* See server.h. */
void
server_free(struct server *s)
{
    if (s == NULL)
        return;
    srv_free(s->srv); /* before the loops it watches */
    for (int i = 0; s->loops != NULL && i < s->nloops; i++) {
        loop_free(s->loops[i].l);
        replay_worker_free(&s->loops[i].w);
    }
    mt_free(s->loops);
    cursor_table_free(&s->cursors);
    mt_free(s);
}
