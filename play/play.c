/*
 * play.c -- `mtrace play`'s run: streams the trace into per-connection
 * queues as the schedule approaches, and prints the summary (see play.h;
 * the live side is play_conn.c).
 */
#include "play.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "core/addr.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/pmqos.h"
#include "core/sched.h"
#include "classify.h"
#include "horizon.h"
#include "play_conn.h"
#include "reader.h"

#define RC_BUCKETS 4096u
#define TICK_NS (50u * 1000 * 1000)
/* Records read per turn of the loop: sends and replies are served in
 * between, so reading ahead does not delay a due request much.  On a
 * schedule (not --max-speed) a turn also ends after FEED_BUDGET_NS of
 * reading, so a request due meanwhile waits at most that long for the
 * reader (at the start the reader fills PLAY_LOOKAHEAD_NS of schedule). */
#define FEED_BATCH 64
#define FEED_BUDGET_NS 5000u

/* Reader state of one run over the trace. */
struct feed {
    struct play_reader *rd; /* owned */
    struct trace_rec rec;   /* borrowed from rd: the record held back */
    bool held, eof;
    bool starved; /* rd had no record ready: its thread wakes the loop */
    int err_code;
    char err[160];
    struct play_rconn *rc[RC_BUCKETS]; /* owned */
    struct loop_timer tm;
    uint64_t last_t; /* the time of the last record read */
    uint64_t c2s;    /* client messages read (over every run) */
};

struct run {
    struct player pl;
    struct feed f;
    struct loop_timer tick;
};

static struct run *
run_of(struct player *pl)
{
    return (struct run *)pl; /* pl is the first member */
}

void
play__fail(struct player *pl, const char *fmt, ...)
{
    va_list ap;

    if (!pl->failed) {
        va_start(ap, fmt);
        vsnprintf(pl->why, sizeof(pl->why), fmt, ap);
        va_end(ap);
    }
    pl->failed = pl->stop = true;
    loop_stop(pl->loop);
}

void
play__unblock(struct player *pl)
{
    for (struct play_conn *c = pl->conns;
         c != NULL && !pl->stop && pl->nblocked > 0; c = c->next_all)
        if (c->blocked)
            play_conn_pump(c);
}

static struct play_rconn *
rconn_find(struct feed *f, uint64_t id)
{
    struct play_rconn *rc = f->rc[id % RC_BUCKETS];

    while (rc != NULL && rc->id != id)
        rc = rc->next;
    return rc;
}

static void
rconn_free_all(struct feed *f)
{
    for (size_t i = 0; i < RC_BUCKETS; i++) {
        for (struct play_rconn *rc = f->rc[i], *n; rc != NULL; rc = n) {
            n = rc->next;
            mt_free(rc->copies);
            mt_free(rc);
        }
        f->rc[i] = NULL;
    }
}

static uint64_t
sched_of(const struct player *pl, uint64_t t_ns)
{
    double d = (double)(t_ns > pl->t0_rec ? t_ns - pl->t0_rec : 0);

    if (pl->o->max_speed)
        return pl->t0_live;
    d /= pl->o->speed;
    return d >= 1.8e19 ? UINT64_MAX : pl->t0_live + (uint64_t)d;
}

static int
feed_open(struct player *pl, const struct trace_conn_open *o)
{
    struct feed *f = &run_of(pl)->f;
    struct play_rconn *rc = rconn_find(f, o->conn_id);
    size_t h = o->conn_id % RC_BUCKETS;

    if (rc != NULL)
        return 0; /* a duplicate open: the first one stands */
    rc = mt_calloc(1, sizeof(*rc));
    if (rc == NULL)
        return -ENOMEM;
    rc->copies = mt_calloc(pl->o->copies, sizeof(*rc->copies));
    if (rc->copies == NULL) {
        mt_free(rc);
        return -ENOMEM;
    }
    rc->id = o->conn_id;
    rc->anchor_ns = o->t_ns;
    rc->next = f->rc[h];
    f->rc[h] = rc;
    for (uint32_t k = 0; k < pl->o->copies; k++) {
        rc->copies[k] = play_conn_new(pl, rc, pl->gen * pl->o->copies + k,
                                      sched_of(pl, o->t_ns));
        if (rc->copies[k] == NULL)
            return -ENOMEM;
    }
    return 0;
}

static int
feed_request(struct player *pl, struct play_rconn *rc,
             const struct trace_msg *tm)
{
    struct wire_msg m;
    struct wire_cmd cmd;
    bool compressed, plain;
    const struct play_opts *o = pl->o;
    struct runcmp_cmd *rcmd;
    size_t nlen;

    run_of(pl)->f.c2s++;
    /* validated in full: its bytes are sent as recorded */
    if (!play_rec_parse(tm, 0, &pl->scratch, &m, &compressed) ||
        wire_msg_command(&m, &cmd) < 0)
        return 0;
    pl->requests_read++;
    if (cmd.is_hello) {
        /* never re-sent: the first one only tells what to offer */
        if (!rc->any)
            for (uint32_t k = 0; k < o->copies; k++)
                play_hello_offer(&m, rc->copies[k]->offer,
                                 sizeof(rc->copies[k]->offer));
        pl->hello_skipped++;
        return 0;
    }
    if (play_cmd_is_auth(cmd.name)) {
        pl->auth_skipped++;
        return 0;
    }
    if ((o->nonly > 0 && !play_cmd_listed(cmd.name, o->only, o->nonly) &&
         strcmp(cmd.name, "getMore") != 0 &&
         strcmp(cmd.name, "killCursors") != 0) ||
        (o->skip_writes && play_cmd_is_write(&m, cmd.name))) {
        pl->filtered++;
        return 0;
    }
    plain = remap_is_plain(pl->rm, &m);
    rcmd = runcmp_cmd_get(&pl->rep, cmd.name);
    nlen = strnlen(cmd.name, sizeof(((struct play_req *)0)->cmd) - 1);
    for (uint32_t k = 0; k < o->copies; k++) {
        /* one allocation: the struct, then the message */
        struct play_req *r = mt_malloc(sizeof(*r) + m.raw_len);
        if (r == NULL)
            return -ENOMEM;
        memset(r, 0, sizeof(*r));
        r->msg = (uint8_t *)(r + 1);
        memcpy(r->msg, m.raw, m.raw_len);
        r->plain = plain;
        r->rcmd = rcmd;
        r->len = m.raw_len;
        r->rec_t_ns = tm->t_ns;
        r->gap_ns = tm->t_ns > rc->anchor_ns ? tm->t_ns - rc->anchor_ns : 0;
        r->first = !rc->any;
        r->after_reply = rc->anchor_reply;
        r->expects_reply = play_expects_reply(&m);
        r->compressed = compressed;
        r->rec_rid = m.h.request_id;
        r->rec_done = !r->expects_reply;
        memcpy(r->cmd, cmd.name, nlen);
        r->cmd[nlen] = '\0';
        play_conn_push(rc->copies[k], r);
        if (pl->stop)
            return 0;
    }
    rc->any = true;
    rc->anchor_ns = tm->t_ns;
    rc->anchor_reply = false;
    rc->last_expects = play_expects_reply(&m);
    rc->last_rid = m.h.request_id;
    return 0;
}

/* The recorded reply for the request of copy c it answers. */
static int
attach_reply(struct player *pl, struct play_conn *c, const struct wire_msg *m,
             uint64_t t_ns)
{
    struct play_req *r;

    /* recorded replies come in order too: start at the oldest waiting */
    r = c->rec_scan != NULL ? c->rec_scan : c->head;
    while (r != NULL && r->rec_done)
        r = r->next;
    c->rec_scan = r;
    for (; r != NULL; r = r->next)
        if (r->rec_rid == m->h.response_to && !r->rec_done)
            break;
    if (r == NULL)
        return 0;
    r->rec_done = r->rec_replied = true;
    r->rec_lat_ns = t_ns > r->rec_t_ns ? t_ns - r->rec_t_ns : 0;
    if (r->live_done && r->live_replied && c->exhaust != r)
        play__note_ahead(pl, t_ns, r->sent_ns + r->live_lat_ns);
    runcmp_shape_of(m, &r->rec_sh);
    if (r->rec_sh.cursor && !r->rec_sh.error && r->rec_sh.cursor_id != 0 &&
        strcmp(r->cmd, "getMore") != 0) {
        int rc = remap_cursor_open(pl->rm, c->copy, r->rec_sh.cursor_id);
        if (rc < 0)
            return rc;
        r->rec_cursor = r->rec_sh.cursor_id;
        if (r->live_replied)
            remap_cursor_set(pl->rm, c->copy, r->rec_cursor,
                             r->live_sh.error ? 0 : r->live_sh.cursor_id);
    }
    play_conn_reap(c, false);
    return 0;
}

static int
feed_reply(struct player *pl, struct play_rconn *rc, const struct trace_msg *tm)
{
    struct wire_msg m;
    bool compressed, more;
    int err;

    /* only walked with libbson's bounded iterator (its shape, the
     * requestID it answers): bounds are enough */
    if (!play_rec_parse(tm, WIRE_PARSE_SHALLOW, &pl->scratch, &m, &compressed))
        return 0;
    more = m.h.op_code == WIRE_OP_MSG && (m.flags & WIRE_MSG_MORE_TO_COME) != 0;
    if (rc->any && m.h.response_to == rc->last_rid) {
        if (more) {
            rc->last_rid = m.h.request_id; /* the exhaust stream goes on */
        } else {
            rc->anchor_ns = tm->t_ns;
            rc->anchor_reply = true;
        }
    }
    for (uint32_t k = 0; k < pl->o->copies; k++)
        if ((err = attach_reply(pl, rc->copies[k], &m, tm->t_ns)) < 0)
            return err;
    play__unblock(pl);
    return 0;
}

/* The recorded connection ended: its copies close once their queues are
 * done, and it leaves the table (later records of its id are not
 * played). */
static void
rconn_close(struct player *pl, struct play_rconn *rc)
{
    struct feed *f = &run_of(pl)->f;
    struct play_rconn **pp = &f->rc[rc->id % RC_BUCKETS];

    while (*pp != rc)
        pp = &(*pp)->next;
    *pp = rc->next;
    for (uint32_t k = 0; k < pl->o->copies && !pl->stop; k++) {
        struct play_conn *c = rc->copies[k];
        for (struct play_req *r = c->head; r != NULL; r = r->next)
            r->rec_done = true;
        c->rec_scan = NULL;
        c->rc = NULL;
        play_conn_rec_closed(c);
    }
    mt_free(rc->copies);
    mt_free(rc);
}

/* One record.  0 or a negative code (the run fails). */
static int
feed_record(struct player *pl, const struct trace_rec *rec)
{
    struct feed *f = &run_of(pl)->f;
    struct play_rconn *rc;

    switch (rec->type) {
    case TRACE_REC_CONN_OPEN:
        return feed_open(pl, &rec->u.open);
    case TRACE_REC_MSG:
        rc = rconn_find(f, rec->u.msg.conn_id);
        if (rc == NULL)
            return 0; /* no open record, or closed: not played */
        return rec->u.msg.dir == TRACE_DIR_C2S
                   ? feed_request(pl, rc, &rec->u.msg)
                   : feed_reply(pl, rc, &rec->u.msg);
    case TRACE_REC_CONN_CLOSE:
        rc = rconn_find(f, rec->u.close.conn_id);
        if (rc != NULL)
            rconn_close(pl, rc);
        return 0;
    default:
        return 0;
    }
}

static uint64_t
rec_time(const struct trace_rec *rec)
{
    switch (rec->type) {
    case TRACE_REC_CONN_OPEN:
        return rec->u.open.t_ns;
    case TRACE_REC_MSG:
        return rec->u.msg.t_ns;
    case TRACE_REC_CONN_CLOSE:
        return rec->u.close.t_ns;
    default:
        return 0;
    }
}

static void feed_timer(struct loop *l, struct loop_timer *t, void *arg);
static void run_end(struct player *pl);

static bool
feed_room(const struct player *pl)
{
    return pl->queued_bytes < PLAY_QUEUE_BYTES_MAX &&
           pl->queued_reqs < PLAY_QUEUE_REQS_MAX;
}

bool
play__cursor_may_come(const struct player *pl, uint64_t rec_t_ns)
{
    const struct feed *f = &((const struct run *)pl)->f;

    return !f->eof && feed_room(pl) &&
           f->last_t < rec_t_ns + PLAY_CURSOR_WAIT_NS;
}

void
play__reaped(struct player *pl)
{
    struct feed *f = &run_of(pl)->f;

    if (!f->eof && !pl->stop && feed_room(pl) && !loop_timer_active(&f->tm))
        loop_timer_start(pl->loop, &f->tm, loop_now_ns(pl->loop), feed_timer,
                         pl);
}

void
play__note_ahead(struct player *pl, uint64_t rec_t_ns, uint64_t live_ns)
{
    struct feed *f = &run_of(pl)->f;
    uint64_t ahead, wake;

    if (pl->o->max_speed || !pl->t0_set)
        return;
    ahead = play_horizon_note(pl->ahead_ns, sched_of(pl, rec_t_ns), live_ns);
    if (ahead == pl->ahead_ns)
        return;
    pl->ahead_ns = ahead;
    /* the record held back may be due sooner now */
    if (!f->held || f->eof || !loop_timer_active(&f->tm))
        return;
    wake = play_horizon_wake(sched_of(pl, rec_time(&f->rec)), ahead,
                             PLAY_LOOKAHEAD_NS);
    if (wake < f->tm.deadline_ns)
        loop_timer_start(pl->loop, &f->tm, wake > live_ns ? wake : live_ns,
                         feed_timer, pl);
}

/* Reads on while the next record is due within the horizon (horizon.h)
 * and the queues have room; then sets the timer for the next record. */
static void
feed_read(struct player *pl)
{
    struct feed *f = &run_of(pl)->f;
    struct mt_err err;
    uint64_t now, t, wake, start = loop_update_time(pl->loop);
    int rc, n = 0;

    if (f->eof) {
        if (pl->nconns == 0 && !pl->stop)
            run_end(pl);
        return;
    }
    while (!f->eof && !pl->stop) {
        if (n++ == FEED_BATCH ||
            (!pl->o->max_speed && n > 1 &&
             loop_update_time(pl->loop) - start >= FEED_BUDGET_NS)) {
            loop_timer_start(pl->loop, &f->tm, loop_now_ns(pl->loop),
                             feed_timer, pl);
            return;
        }
        if (!f->held) {
            rc = play_reader_next(f->rd, &f->rec, &err);
            if (rc == MT_PARTIAL) {
                f->starved = true; /* feed_hook reads on */
                return;
            }
            if (rc == MT_END) {
                f->eof = true;
                break;
            }
            if (rc < 0) {
                if (f->err_code == 0) {
                    f->err_code = rc;
                    snprintf(f->err, sizeof(f->err), "%s", err.msg);
                }
                if (rc == MT_ECORRUPT || rc == MT_ETOOBIG)
                    continue;
                f->eof = true;
                break;
            }
            f->held = true;
        }
        t = rec_time(&f->rec);
        if (!pl->t0_set && t != 0) {
            pl->t0_set = true;
            pl->t0_rec = t;
            pl->t0_live = loop_update_time(pl->loop);
        }
        if (!feed_room(pl))
            return; /* the queues drain: play__reaped reads on */
        now = loop_now_ns(pl->loop);
        wake =
            play_horizon_wake(sched_of(pl, t), pl->ahead_ns, PLAY_LOOKAHEAD_NS);
        if (t != 0 && wake > now) {
            loop_timer_start(pl->loop, &f->tm, wake, feed_timer, pl);
            return;
        }
        f->held = false;
        if (t > f->last_t)
            f->last_t = t;
        rc = feed_record(pl, &f->rec);
        if (rc < 0)
            play__fail(pl, "%s", mt_strerror(rc));
    }
    if (f->eof && !pl->stop) {
        /* a recorded connection without a close record ends here */
        for (size_t i = 0; i < RC_BUCKETS && !pl->stop; i++)
            while (f->rc[i] != NULL && !pl->stop)
                rconn_close(pl, f->rc[i]);
        play__conn_done(pl);
    }
}

/* feed_read, then a getMore waiting for a cursor the trace may hold
 * tries again. */
static void
feed_pump(struct player *pl)
{
    feed_read(pl);
    play__unblock(pl);
}

static void
feed_timer(struct loop *l, struct loop_timer *t, void *arg)
{
    (void)l;
    (void)t;
    feed_pump(arg);
}

/* Before the loop sleeps: the reader thread queued records the feed
 * waited for (it woke the loop). */
static void
feed_hook(struct loop *l, void *arg)
{
    struct player *pl = arg;
    struct feed *f = &run_of(pl)->f;

    (void)l;
    if (f->starved && !pl->stop) {
        f->starved = false;
        feed_pump(pl);
    }
}

static int
feed_start(struct player *pl)
{
    struct feed *f = &run_of(pl)->f;
    struct mt_err err;

    f->rd = play_reader_open(pl->o->trace, pl->loop, !pl->o->max_speed, &err);
    if (f->rd == NULL) {
        play__fail(pl, "%s: %s", pl->o->trace, err.msg);
        return -1;
    }
    f->eof = f->held = f->starved = false;
    pl->t0_set = false;
    pl->ahead_ns = 0;
    return 0;
}

/* Every connection of this run is done: the next run, or the end. */
static void
run_end(struct player *pl)
{
    struct feed *f = &run_of(pl)->f;

    play_reader_free(f->rd);
    f->rd = NULL;
    rconn_free_all(f);
    for (uint32_t k = 0; k < pl->o->copies; k++)
        remap_forget_copy(pl->rm, pl->gen * pl->o->copies + k);
    if (f->err_code != 0 || ++pl->gen >= pl->o->repeat) {
        pl->stop = true;
        loop_stop(pl->loop);
        return;
    }
    if (feed_start(pl) == 0)
        loop_timer_start(pl->loop, &f->tm, loop_now_ns(pl->loop), feed_timer,
                         pl);
}

/* Frees the closed connections of the list. */
static void
conns_sweep(struct player *pl)
{
    struct play_conn **pc = &pl->conns;

    while (*pc != NULL) {
        struct play_conn *c = *pc;
        if (c->st == PLAY_CONN_CLOSED) {
            *pc = c->next_all;
            play_conn_free(c);
        } else {
            pc = &c->next_all;
        }
    }
}

void
play__conn_done(struct player *pl)
{
    struct feed *f = &run_of(pl)->f;

    /* feed_pump reads on, or ends the run once every connection is done */
    if (!pl->stop && !loop_timer_active(&f->tm))
        loop_timer_start(pl->loop, &f->tm, loop_now_ns(pl->loop), feed_timer,
                         pl);
}

/*
 * The queues are full and nothing queued can move: every request is sent
 * and answered, and waits only for its recorded reply, which the trace
 * holds past the queues' room (a connection that pipelined more requests
 * than the queues hold before its first recorded reply).  The reader
 * would wait for ever; the answered requests are reaped without their
 * recorded replies instead (play_conn_reap_unread).
 */
static bool
queues_stuck(const struct player *pl)
{
    if (((const struct run *)pl)->f.eof || feed_room(pl))
        return false;
    for (const struct play_conn *c = pl->conns; c != NULL; c = c->next_all)
        if (c->st != PLAY_CONN_CLOSED &&
            (c->outstanding > 0 || c->exhaust != NULL || c->next != NULL))
            return false;
    return true;
}

static void
tick(struct loop *l, struct loop_timer *t, void *arg)
{
    struct player *pl = arg;
    struct run *run = run_of(pl);
    uint64_t now = loop_now_ns(l);

    if (pl->w != NULL) {
        int rc = trace_writer_tick(pl->w, now);
        if (rc < 0)
            play__fail(pl, "%s: writing the trace: %s", pl->o->out,
                       mt_strerror(rc));
    }
    for (struct play_conn *c = pl->conns; c != NULL && !pl->stop;
         c = c->next_all)
        play_conn_check_timeout(c, now);
    conns_sweep(pl);
    if (!pl->stop && queues_stuck(pl))
        for (struct play_conn *c = pl->conns; c != NULL && !pl->stop;
             c = c->next_all)
            play_conn_reap_unread(c);
    play__unblock(pl);
    if (!run->f.eof && !loop_timer_active(&run->f.tm) && feed_room(pl))
        feed_pump(pl);
    if (!pl->stop)
        loop_timer_start(l, t, now + TICK_NS, tick, pl);
}

/* The counters of text line `line` (PLAY_COUNTERS), in list order. */
static void
summary_line(FILE *out, const struct player *pl, int line)
{
#define XX(field, json, ln, text)                                              \
    if (ln == line)                                                            \
        fprintf(out, text, (unsigned long long)pl->field);
    PLAY_COUNTERS(XX)
#undef XX
}

static void
summary_text(FILE *out, struct player *pl, double secs)
{
    fprintf(out, "played %s -> %s: ", pl->o->trace, pl->o->target);
    summary_line(out, pl, 1);
    fprintf(out, " in %.3f s\nnever re-sent: ", secs);
    summary_line(out, pl, 2);
    fputc('\n', out);
    runcmp_print_text(out, &pl->rep);
}

static void
summary_json(FILE *out, struct player *pl, double secs)
{
    fputc('{', out);
#define XX(field, json, ln, text)                                              \
    fprintf(out, "\"%s\":%llu,", json, (unsigned long long)pl->field);
    PLAY_COUNTERS(XX)
#undef XX
    fprintf(out, "\"seconds\":%.6f,\"failed\":%s,\"report\":", secs,
            pl->failed ? "true" : "false");
    runcmp_print_json(out, &pl->rep);
    fputs("}\n", out);
}

static int
player_init(struct run *run, const struct play_opts *o)
{
    struct player *pl = &run->pl;
    struct mt_err err;
    struct trace_header hdr = {.source = TRACE_SRC_PLAY, .ts_precision_ns = 1};

    pl->o = o;
    mt_buf_init(&pl->scratch, WIRE_MSG_LEN_MAX);
    mt_buf_init(&pl->tmp, WIRE_MSG_LEN_MAX);
    uint16_t port;

    if (mt_addr_split(o->target, pl->host, sizeof(pl->host), &port) < 0 ||
        mt_addr_resolve(o->target, &pl->ss, &pl->sslen) < 0) {
        fprintf(stderr, "mtrace play: cannot resolve --target %s\n", o->target);
        return -1;
    }
    pl->loop = loop_new(NULL, 65536, &err);
    pl->rm = remap_new(o->db_from, o->db_to, o->ndb);
    if (pl->loop == NULL || pl->rm == NULL ||
        runcmp_init(&pl->rep, "recorded", "played") < 0) {
        fprintf(stderr, "mtrace play: out of memory\n");
        return -1;
    }
    if (!o->max_speed)
        loop_set_timer_spin_auto(pl->loop, LOOP_SPIN_AUTO_MAX_NS);
    if (o->tls) {
        pl->tls = tls_ctx_client_new(o->tls_ca, o->tls_insecure, &err);
        if (pl->tls != NULL && o->tls_cert != NULL &&
            tls_ctx_client_cert(pl->tls, o->tls_cert, NULL, &err) < 0) {
            tls_ctx_free(pl->tls);
            pl->tls = NULL;
        }
        if (pl->tls == NULL) {
            fprintf(stderr, "mtrace play: TLS: %s\n", err.msg);
            return -1;
        }
    }
    if (o->out != NULL) {
        snprintf(hdr.tool_version, sizeof(hdr.tool_version), "mtrace %s",
                 MT_VERSION);
        snprintf(hdr.source_desc, sizeof(hdr.source_desc), "play %s -> %s",
                 o->trace, o->target);
        hdr.start_wall_ns = mt_wall_ns();
        hdr.start_mono_ns = mt_now_ns();
        pl->w =
            trace_writer_open(o->out, o->force ? TRACE_W_FORCE : 0, &hdr, &err);
        if (pl->w == NULL) {
            fprintf(stderr, "mtrace play: %s: %s\n", o->out, err.msg);
            return -1;
        }
        /* the writer's thread compresses in bulk: it starts under
         * SCHED_OTHER even when --rt-prio put this thread under FIFO */
        (void)sched_set_normal();
        (void)trace_writer_set_async(pl->w);
        if (sched_set_realtime(o->rt_prio, &err) < 0) {
            fprintf(stderr, "mtrace play: --rt-prio %d: %s\n", o->rt_prio,
                    err.msg);
            return -1;
        }
    }
    return 0;
}

/*
 * --cpu-dma-latency and --rt-prio, before anything is opened: a refusal
 * leaves nothing behind (no -o trace, no connection).  The loop runs on
 * this thread and the reader thread, created later, inherits the policy.
 * 0, or -1 with the reason printed.
 */
static int
sched_setup(const struct play_opts *o, struct pmqos *q)
{
    struct mt_err err = {0};

    pmqos_init(q);
    if (o->dma_lat_us >= 0 && pmqos_hold(q, o->dma_lat_us, &err) < 0) {
        fprintf(stderr,
                "mtrace play: --cpu-dma-latency %d: %s; run without the "
                "option, or as root\n",
                o->dma_lat_us, err.msg);
        return -1;
    }
    if (sched_set_realtime(o->rt_prio, &err) < 0) {
        fprintf(stderr, "mtrace play: --rt-prio %d: %s\n", o->rt_prio, err.msg);
        pmqos_release(q);
        return -1;
    }
    if (o->rt_prio > 0)
        mt_info("play: event loop and trace reader under SCHED_FIFO %d",
                o->rt_prio);
    if (o->dma_lat_us >= 0)
        mt_info("play: holding a CPU wake-up latency request of %d us (%s) "
                "until exit",
                o->dma_lat_us, PMQOS_DEV);
    return 0;
}

static void
player_free(struct run *run)
{
    struct player *pl = &run->pl;

    while (pl->conns != NULL) {
        struct play_conn *c = pl->conns;
        pl->conns = c->next_all;
        play_conn_free(c);
    }
    rconn_free_all(&run->f);
    play_reader_free(run->f.rd);
    remap_free(pl->rm);
    tls_ctx_free(pl->tls);
    runcmp_free(&pl->rep);
    loop_free(pl->loop);
    mt_buf_free(&pl->scratch);
    mt_buf_free(&pl->tmp);
}

int
play_run(const struct play_opts *o)
{
    struct run *run = mt_calloc(1, sizeof(*run));
    struct player *pl;
    struct remap_stats rs;
    struct pmqos qos;
    uint64_t start;
    int status = 0, rc;
    double secs;

    if (run == NULL) {
        fprintf(stderr, "mtrace play: out of memory\n");
        return 1;
    }
    if (sched_setup(o, &qos) < 0) {
        mt_free(run);
        return 1;
    }
    pl = &run->pl;
    loop_timer_init(&run->f.tm);
    loop_timer_init(&run->tick);
    if (player_init(run, o) < 0) {
        trace_writer_close(pl->w);
        player_free(run);
        mt_free(run);
        pmqos_release(&qos);
        return 1;
    }
    start = mt_now_ns();
    loop_set_before_sleep(pl->loop, feed_hook, pl);
    if (feed_start(pl) == 0) {
        loop_timer_start(pl->loop, &run->f.tm, loop_now_ns(pl->loop),
                         feed_timer, pl);
        loop_timer_start(pl->loop, &run->tick, loop_now_ns(pl->loop) + TICK_NS,
                         tick, pl);
        rc = loop_run(pl->loop);
        if (rc < 0 && !pl->failed)
            play__fail(pl, "event loop: %s", mt_strerror(rc));
    }
    /* everything still queued is reported as it stands */
    for (struct play_conn *c = pl->conns; c != NULL; c = c->next_all) {
        play_conn_close(c, pl->failed ? TRACE_CLOSE_ERROR : TRACE_CLOSE_NORMAL);
        play_conn_reap(c, true);
    }
    secs = (double)(mt_now_ns() - start) / 1e9;
    if (pl->w != NULL && (rc = trace_writer_close(pl->w)) < 0 && !pl->failed)
        play__fail(pl, "%s: writing the trace: %s", o->out, mt_strerror(rc));
    pl->w = NULL;
    remap_stats_get(pl->rm, &rs);
    pl->cursors = rs.cursors;
    pl->sessions = rs.sessions;
    if (o->json)
        summary_json(stdout, pl, secs);
    else
        summary_text(stdout, pl, secs);
    fflush(stdout);
    if (pl->failed) {
        fprintf(stderr, "mtrace play: %s\n", pl->why);
        status = 1;
    } else if (run->f.err_code != 0) {
        fprintf(stderr,
                "mtrace play: %s: %s (every complete record before it was "
                "played)\n",
                o->trace, run->f.err);
        status = 1;
    } else if (run->f.c2s == 0) {
        fprintf(stderr,
                "mtrace play: %s: the trace holds no client "
                "request to send\n",
                o->trace);
        status = 1;
    } else if (pl->unanswered > 0 || pl->not_sent > 0) {
        fprintf(stderr,
                "mtrace play: %" PRIu64 " requests unanswered, %" PRIu64
                " not sent\n",
                pl->unanswered, pl->not_sent);
        status = 1;
    }
    player_free(run);
    mt_free(run);
    pmqos_release(&qos);
    return status;
}
