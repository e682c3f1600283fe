/*
 * conn.c -- the socket-free connection core of a replay (see conn.h).
 *
 * For each complete request: parse (full validation), then
 *   hello / isMaster      -> handshake reply (held if awaitable; streamed
 *                            with moreToCome if exhaustAllowed)
 *   getMore / killCursors -> the client cursor table
 *   anything else         -> the recorded reply of its key (round robin),
 *                            else a built-in answer, else a miss error
 * and emit the reply stamped with its release time.
 */
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"
#include "matchkey.h"
#include "replyenc.h"

/* A request being answered. */
struct rq {
    const struct wire_msg *m;
    struct match_req req;
    uint64_t read_at_ns;
    uint8_t compressor; /* the request came in OP_COMPRESSED with it; 0: no */
};

int
replay_worker_init(struct replay_worker *w, struct replay_shared *sh,
                   uint64_t seed)
{
    memset(w, 0, sizeof(*w));
    w->sh = sh;
    mt_rng_seed(&w->rng, seed);
    replay_stats_init(&w->st);
    mt_buf_init(&w->key, MATCH_KEY_LEN_MAX);
    mt_buf_init(&w->scratch, WIRE_MSG_LEN_MAX);
    return keycache_init(&w->kc);
}

void
replay_worker_free(struct replay_worker *w)
{
    mt_buf_free(&w->key);
    mt_buf_free(&w->scratch);
    keycache_free(&w->kc);
}

void
replay_conn_init(struct replay_conn *c, struct replay_worker *w,
                 replay_emit_fn *emit, void *arg)
{
    memset(c, 0, sizeof(*c));
    c->w = w;
    c->id = atomic_fetch_add(&w->sh->next_conn_id, 1);
    c->next_request_id = 1;
    c->emit = emit;
    c->emit_arg = arg;
    w->st.conns++;
}

void
replay_reply_free(struct replay_reply *r)
{
    if (r == NULL)
        return;
    mt_free(r->bytes);
    mt_free(r);
}

/* ---- building reply messages (replyenc.c) ---- */

static int32_t
new_request_id(struct replay_conn *c)
{
    return replyenc_take_id(&c->next_request_id);
}

/* What a reply to q must answer. */
static struct replyenc_to
reply_to(struct replay_conn *c, const struct rq *q)
{
    return (struct replyenc_to){&q->req, q->m->h.request_id,
                                &c->next_request_id};
}

/* Encodes body as the reply to the request: OP_REPLY, OP_COMMANDREPLY or
 * OP_MSG, as the request's opcode asks. */
static int
encode_body(struct replay_conn *c, const struct rq *q, const bson_t *body,
            uint32_t flags, struct mt_buf *out, int32_t *rid)
{
    struct replyenc_to to = reply_to(c, q);

    return replyenc_write_doc(&to, body, flags, out, rid);
}

/* The recorded reply message rec (whole), answering q; cursor_id >= 0
 * replaces cursor.id (-1: keep). */
static int
encode_recorded(struct replay_conn *c, const struct rq *q, const uint8_t *rec,
                size_t rec_len, int64_t cursor_id, struct mt_buf *out)
{
    struct replyenc_to to = reply_to(c, q);

    return replyenc_write_recorded(&to, rec, rec_len, cursor_id, out);
}

/* ---- scheduling ---- */

static struct replay_reply *
reply_new(struct replay_conn *c, const struct rq *q, uint64_t recorded_ns)
{
    struct replay_worker *w = c->w;
    struct replay_reply *r;
    uint64_t d;

    if (c->npending >= REPLAY_REPLIES_MAX)
        return NULL;
    r = mt_calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    loop_timer_init(&r->timer);
    r->conn = c;
    r->read_at_ns = q->read_at_ns;
    d = delay_draw_ns(&w->sh->delay, &w->rng, recorded_ns);
    r->requested_ns = d;
    if (w->sh->delay.mode == DELAY_MODE_SERIAL) {
        uint64_t start = q->read_at_ns > c->serial_free_ns ? q->read_at_ns
                                                           : c->serial_free_ns;
        r->ready_at_ns = start + d;
        c->serial_free_ns = r->ready_at_ns;
        r->requested_ns = r->ready_at_ns - q->read_at_ns;
    } else {
        r->ready_at_ns = q->read_at_ns + d;
    }
    return r;
}

static void
reply_emit(struct replay_conn *c, struct replay_reply *r, struct mt_buf *out)
{
    /* the buffer's memory moves to the reply */
    r->bytes = out->data;
    r->len = out->len;
    out->data = NULL;
    out->len = out->cap = 0;
    r->next = c->head;
    if (c->head != NULL)
        c->head->prev = r;
    c->head = r;
    c->npending++;
    c->w->st.served++;
    c->emit(c, r, c->emit_arg);
}

/* Emits out (a complete reply) for q; frees out's memory on failure. */
static int
send_reply(struct replay_conn *c, const struct rq *q, struct mt_buf *out,
           uint64_t recorded_ns)
{
    struct replay_reply *r;
    int rc = handshake_compress_reply(&c->w->sh->hs, q->compressor, q->req.name,
                                      out);

    if (rc < 0) {
        mt_buf_free(out);
        return rc;
    }
    c->w->st.compressed += (uint64_t)rc;
    r = reply_new(c, q, recorded_ns);
    if (r == NULL) {
        mt_buf_free(out);
        return MT_ELIMIT;
    }
    reply_emit(c, r, out);
    return 0;
}

static int
send_doc(struct replay_conn *c, const struct rq *q, const bson_t *doc)
{
    struct mt_buf out;
    int32_t rid;
    int rc;

    mt_buf_init(&out, WIRE_MSG_LEN_MAX);
    rc = encode_body(c, q, doc, 0, &out, &rid);
    if (rc < 0) {
        mt_buf_free(&out);
        return rc;
    }
    return send_reply(c, q, &out, 0);
}

/* ok: 0 with code and errmsg. */
static int
send_error(struct replay_conn *c, const struct rq *q, int code,
           const char *code_name, const char *msg)
{
    bson_t doc;
    int rc;

    bson_init(&doc);
    BSON_APPEND_DOUBLE(&doc, "ok", 0.0);
    BSON_APPEND_UTF8(&doc, "errmsg", msg);
    BSON_APPEND_INT32(&doc, "code", code);
    BSON_APPEND_UTF8(&doc, "codeName", code_name);
    rc = send_doc(c, q, &doc);
    bson_destroy(&doc);
    return rc;
}

/* ---- handlers ---- */

#define STREAM_PERIOD_MIN_NS (10u * 1000 * 1000)

static void auth_log(struct replay_conn *c, const char *what, const char *why);

static int
on_hello(struct replay_conn *c, const struct rq *q)
{
    struct replay_shared *sh = c->w->sh;
    uint64_t hold_ms = 0, await_ms = 0;
    bool awaitable = handshake_awaitable(&sh->hs, &q->req, &hold_ms, &await_ms);
    bool stream = awaitable && q->req.exhaust_allowed && !q->req.legacy;
    struct replay_reply *r = NULL;
    enum auth_result ar = AUTH_NONE;
    struct mt_buf out;
    char why[320];
    bson_t doc;
    int32_t rid;
    int rc;

    c->w->st.hello++;
    bson_init(&doc);
    rc =
        handshake_hello_reply(&sh->hs, &q->req, c->id,
                              (int64_t)(mt_wall_ns() / 1000000), c->self, &doc);
    if (rc == 0 && sh->auth != NULL)
        rc = auth_hello_append(sh->auth, &c->auth, &q->req, &doc, &ar, why,
                               sizeof(why));
    c->spec_auth = ar == AUTH_STEP;
    if (ar == AUTH_FAILED)
        auth_log(c, "speculative authentication not answered", why);
    mt_buf_init(&out, WIRE_MSG_LEN_MAX);
    if (rc == 0)
        rc = encode_body(c, q, &doc, stream ? WIRE_MSG_MORE_TO_COME : 0, &out,
                         &rid);
    bson_destroy(&doc);
    if (rc == 0 && (r = reply_new(c, q, 0)) == NULL)
        rc = MT_ELIMIT;
    if (rc < 0) {
        mt_buf_free(&out);
        return rc;
    }
    if (awaitable) {
        r->ready_at_ns += hold_ms * 1000000u;
        r->no_stats = true;
        c->w->st.awaited++;
    }
    if (stream) {
        r->stream = true;
        r->period_ns = await_ms * 1000000u;
        if (r->period_ns < STREAM_PERIOD_MIN_NS)
            r->period_ns = STREAM_PERIOD_MIN_NS;
        r->request_id = rid;
        r->hello_cmd = strcmp(q->req.name, "hello") == 0;
        bson_t b;
        bson_iter_t it;
        r->hello_ok = bson_init_static(&b, q->req.cmd, q->req.cmd_len) &&
                      bson_iter_init_find(&it, &b, "helloOk") &&
                      bson_iter_as_bool(&it);
    }
    reply_emit(c, r, &out);
    return 0;
}

static int64_t
field_i64(const struct match_req *req, const char *name)
{
    bson_t b;
    bson_iter_t it;

    if (bson_init_static(&b, req->cmd, req->cmd_len) &&
        bson_iter_init_find(&it, &b, name) &&
        (BSON_ITER_HOLDS_INT64(&it) || BSON_ITER_HOLDS_INT32(&it)))
        return bson_iter_as_int64(&it);
    return 0;
}

static int
on_getmore(struct replay_conn *c, const struct rq *q)
{
    struct replay_worker *w = c->w;
    int64_t id = field_i64(&q->req, "getMore");
    const struct index_exchange *batch;
    struct mt_buf out;
    char msg[160];
    bool last;
    int rc;

    w->st.cursor_ops++;
    rc = cursor_next(w->sh->cursors, w->sh->idx, id, &batch, &last);
    if (rc == MT_ENOMATCH) {
        snprintf(msg, sizeof(msg),
                 "cursor id %lld not found (mtrace replay: never opened here, "
                 "killed, or the recording ends before it)",
                 (long long)id);
        return send_error(c, q, 43, "CursorNotFound", msg);
    }
    mt_buf_init(&out, WIRE_MSG_LEN_MAX);
    rc = encode_recorded(c, q, batch->reply, batch->reply_len, last ? 0 : id,
                         &out);
    if (rc < 0) {
        mt_buf_free(&out);
        return rc;
    }
    w->st.matched++;
    return send_reply(c, q, &out, batch->latency_ns);
}

static int
on_killcursors(struct replay_conn *c, const struct rq *q)
{
    bson_t b, doc, killed, missing, empty;
    bson_iter_t it, ids;
    uint32_t nk = 0, nm = 0;
    char k[16];
    int rc;

    c->w->st.cursor_ops++;
    bson_init(&doc);
    bson_init(&killed);
    bson_init(&missing);
    if (bson_init_static(&b, q->req.cmd, q->req.cmd_len) &&
        bson_iter_init_find(&it, &b, "cursors") && BSON_ITER_HOLDS_ARRAY(&it) &&
        bson_iter_recurse(&it, &ids)) {
        while (bson_iter_next(&ids)) {
            int64_t id = bson_iter_as_int64(&ids);
            bool found = cursor_kill(c->w->sh->cursors, id);
            snprintf(k, sizeof(k), "%u", found ? nk++ : nm++);
            BSON_APPEND_INT64(found ? &killed : &missing, k, id);
        }
    }
    bson_append_array(&doc, "cursorsKilled", -1, &killed);
    bson_append_array(&doc, "cursorsNotFound", -1, &missing);
    bson_destroy(&killed);
    bson_destroy(&missing);
    bson_append_array_begin(&doc, "cursorsAlive", -1, &empty);
    bson_append_array_end(&doc, &empty);
    bson_append_array_begin(&doc, "cursorsUnknown", -1, &empty);
    bson_append_array_end(&doc, &empty);
    BSON_APPEND_DOUBLE(&doc, "ok", 1.0);
    rc = send_doc(c, q, &doc);
    bson_destroy(&doc);
    return rc;
}

static int on_miss(struct replay_conn *c, const struct rq *q,
                   const struct index_group *shapes);

static int
on_match(struct replay_conn *c, const struct rq *q, struct index_group *g)
{
    struct replay_worker *w = c->w;
    const struct index_exchange *ex;
    struct match_shape shape;
    struct mt_buf out;
    int64_t id = -1;
    int rc;

    match_shape_of(&w->sh->idx->rules, &q->req, &shape);
    ex = index_group_pick_shape(w->sh->idx, g, &shape);
    if (ex == NULL)
        return on_miss(c, q, g);
    w->st.matched++;
    if (ex->cursor_id != 0) {
        rc = cursor_open(w->sh->cursors, (uint32_t)(ex - w->sh->idx->ex), &id);
        if (rc < 0)
            return send_error(c, q, 2, "BadValue",
                              "mtrace replay: too many open cursors");
    }
    mt_buf_init(&out, WIRE_MSG_LEN_MAX);
    rc = encode_recorded(c, q, ex->reply, ex->reply_len, id, &out);
    if (rc < 0) {
        mt_buf_free(&out);
        return rc;
    }
    return send_reply(c, q, &out, ex->latency_ns);
}

/* Authentication log lines: the first REPLAY_MISS_LOG_FIRST, then one
 * per 1000 (a pool retrying a wrong password would flood the log). */
static void
auth_log(struct replay_conn *c, const char *what, const char *why)
{
    static _Atomic uint64_t logged;
    uint64_t n = atomic_fetch_add(&logged, 1);

    if (n < REPLAY_MISS_LOG_FIRST || n % 1000 == 0)
        mt_warn("replay: conn %lld: %s: %s", (long long)c->id, what, why);
}

/* saslStart, saslContinue, authenticate, getnonce (auth.h). */
static int
on_auth(struct replay_conn *c, const struct rq *q)
{
    static const struct auth_cfg none = {.enabled = false};
    const struct auth_cfg *cfg = c->w->sh->auth ? c->w->sh->auth : &none;
    enum auth_result r;
    char why[320];
    bson_t doc;
    int rc;

    if (strcmp(q->req.name, "saslStart") == 0)
        c->spec_auth = false; /* a new conversation, not hello's */
    bson_init(&doc);
    r = auth_command(cfg, &c->auth, &q->req, &doc, why, sizeof(why));
    if (r == AUTH_SUCCEEDED) {
        c->w->st.auth_ok++;
        c->w->st.speculative += c->spec_auth;
    } else if (r == AUTH_FAILED) {
        c->w->st.auth_failed++;
        auth_log(c, "authentication failed", why);
    }
    if (r != AUTH_STEP)
        c->spec_auth = false;
    rc = send_doc(c, q, &doc);
    bson_destroy(&doc);
    return rc;
}

/* mongod --auth: a command that needs an authenticated connection. */
static int
on_unauthorized(struct replay_conn *c, const struct rq *q)
{
    char msg[160];

    c->w->st.unauthorized++;
    if (q->req.more_to_come)
        return 0; /* unacknowledged: refused without a reply */
    snprintf(msg, sizeof(msg), "command %s requires authentication",
             q->req.name);
    return send_error(c, q, AUTH_UNAUTHORIZED_CODE, "Unauthorized", msg);
}

/* shapes: the group of the request's key when only the cursor shapes
 * differ, else NULL. */
static int
on_miss(struct replay_conn *c, const struct rq *q,
        const struct index_group *shapes)
{
    struct replay_worker *w = c->w;
    char msg[1100];
    uint64_t n;

    w->st.missed++;
    if (shapes != NULL) {
        struct match_shape shape;
        match_shape_of(&w->sh->idx->rules, &q->req, &shape);
        index_shape_miss_msg(w->sh->idx, shapes, &shape, msg, sizeof(msg));
    } else {
        index_miss_msg(w->sh->idx, (const char *)w->key.data, w->key.len,
                       q->req.name, msg, sizeof(msg));
    }
    n = atomic_fetch_add(&w->sh->misses_logged, 1);
    if (n < REPLAY_MISS_LOG_FIRST || n % 1000 == 0)
        mt_warn("replay: conn %lld: miss #%llu: %s", (long long)c->id,
                (unsigned long long)n + 1, msg);
    return send_error(c, q, REPLAY_MISS_CODE, REPLAY_MISS_CODENAME, msg);
}

static int
dispatch(struct replay_conn *c, struct rq *q, struct mt_err *err)
{
    struct replay_worker *w = c->w;
    struct index_group *g;
    bson_t doc;
    int rc;

    if (handshake_is_hello(q->req.name))
        return on_hello(c, q);
    if (w->sh->auth != NULL && w->sh->auth->enabled && c->auth.user == NULL &&
        !auth_allowed_unauthenticated(q->req.name))
        return on_unauthorized(c, q);
    if (strcmp(q->req.name, "logout") == 0)
        c->auth.user = NULL; /* then answered as recorded or built in */
    if (q->req.more_to_come) {
        /* unacknowledged (w: 0): nothing to answer, so nothing to match;
         * a trace holds such requests without replies */
        w->st.unacked++;
        return 0;
    }
    if (strcmp(q->req.name, "getMore") == 0)
        return on_getmore(c, q);
    if (strcmp(q->req.name, "killCursors") == 0)
        return on_killcursors(c, q);
    if (auth_is_auth_cmd(q->req.name))
        return on_auth(c, q); /* never a recorded conversation */
    g = keycache_find(&w->kc, &w->sh->idx->rules, &q->req);
    if (g != NULL)
        return on_match(c, q, g);
    rc = match_key_build(&w->sh->idx->rules, &q->req, &w->key, err);
    if (rc < 0) {
        /* no key, so no recorded reply: a miss (counted and logged) */
        w->st.missed++;
        if (atomic_fetch_add(&w->sh->misses_logged, 1) < REPLAY_MISS_LOG_FIRST)
            mt_warn("replay: conn %lld: miss: %s", (long long)c->id, err->msg);
        return send_error(c, q, 2, "BadValue", err->msg);
    }
    g = index_find(w->sh->idx, (const char *)w->key.data, w->key.len);
    if (g != NULL) {
        keycache_put(&w->kc, g);
        return on_match(c, q, g);
    }
    bson_init(&doc);
    if (handshake_builtin(&w->sh->hs, &q->req, &doc)) {
        w->st.builtin++;
        rc = send_doc(c, q, &doc);
        bson_destroy(&doc);
        return rc;
    }
    bson_destroy(&doc);
    return on_miss(c, q, NULL);
}

/* A legacy OP_QUERY that is not a command: OP_REPLY with QueryFailure. */
static int
legacy_failure(struct replay_conn *c, const struct rq *q, const char *msg)
{
    struct replyenc_to to = reply_to(c, q);
    struct mt_buf out;
    int rc;

    mt_buf_init(&out, WIRE_MSG_LEN_MAX);
    rc = replyenc_write_query_failure(&to, msg, &out);
    if (rc < 0) {
        mt_buf_free(&out);
        return rc;
    }
    return send_reply(c, q, &out, 0);
}

static int
handle_msg(struct replay_conn *c, const uint8_t *p, size_t len,
           uint64_t read_at_ns, struct mt_err *err)
{
    struct replay_worker *w = c->w;
    struct wire_msg m;
    struct rq q;
    size_t used;
    int rc;

    uint8_t compressor = 0;

    rc = wire_msg_parse(p, len, &m, &used, err);
    if (rc == MT_OK && m.h.op_code == WIRE_OP_COMPRESSED) {
        compressor = m.compressor_id;
        mt_buf_reset(&w->scratch);
        rc = wire_decompress(&m, &w->scratch, err);
        if (rc == 0)
            rc =
                wire_msg_parse(w->scratch.data, w->scratch.len, &m, &used, err);
    }
    if (rc == MT_PARTIAL)
        rc = mt_err_set(err, MT_EPROTO, 0, "message shorter than its length");
    if (rc < 0)
        return rc;
    w->st.requests++;
    memset(&q, 0, sizeof(q));
    q.m = &m;
    q.read_at_ns = read_at_ns;
    q.compressor = compressor;
    rc = match_req_from_msg(&m, &q.req, err);
    if (rc == MT_EUNSUPPORTED && m.h.op_code == WIRE_OP_QUERY) {
        q.req.legacy = true;
        return legacy_failure(c, &q, err->msg);
    }
    if (rc < 0)
        return rc;
    return dispatch(c, &q, err);
}

int
replay_conn_input(struct replay_conn *c, const uint8_t *data, size_t len,
                  uint64_t read_at_ns, size_t *consumed, struct mt_err *err)
{
    struct mt_err local;
    size_t off = 0, mlen;
    int rc = 0;

    if (err == NULL) /* handlers report through err->msg */
        err = &local;
    memset(err, 0, sizeof(*err));
    while (off < len) {
        rc = wire_frame(data + off, len - off, WIRE_MSG_LEN_MAX, &mlen, err);
        if (rc == MT_PARTIAL) {
            rc = 0;
            break;
        }
        if (rc == 0)
            rc = handle_msg(c, data + off, mlen, read_at_ns, err);
        if (rc == MT_ELIMIT)
            mt_err_set(err, rc, 0, "more than %d replies pending",
                       REPLAY_REPLIES_MAX);
        if (rc < 0) {
            err->offset += off;
            c->w->st.bad_input++;
            break;
        }
        off += mlen;
    }
    *consumed = off;
    return rc < 0 ? rc : 0;
}

static void
unlink_reply(struct replay_conn *c, struct replay_reply *r)
{
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        c->head = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
    c->npending--;
}

/* Rebuilds r as the next hello of an exhaust stream. */
static bool
stream_next(struct replay_conn *c, struct replay_reply *r, uint64_t now_ns)
{
    struct match_req req;
    struct mt_buf out;
    bson_t cmd, doc;
    int32_t rid = new_request_id(c);
    bool ok;

    bson_init(&cmd);
    BSON_APPEND_INT32(&cmd, r->hello_cmd ? "hello" : "isMaster", 1);
    if (r->hello_ok)
        BSON_APPEND_BOOL(&cmd, "helloOk", true);
    memset(&req, 0, sizeof(req));
    snprintf(req.name, sizeof(req.name), "%s",
             r->hello_cmd ? "hello" : "isMaster");
    req.cmd = bson_get_data(&cmd);
    req.cmd_len = cmd.len;
    bson_init(&doc);
    mt_buf_init(&out, WIRE_MSG_LEN_MAX);
    ok = handshake_hello_reply(&c->w->sh->hs, &req, c->id,
                               (int64_t)(mt_wall_ns() / 1000000), c->self,
                               &doc) == 0 &&
         wire_encode_msg(&out, rid, r->request_id, WIRE_MSG_MORE_TO_COME, &doc,
                         NULL, 0) == 0;
    bson_destroy(&doc);
    bson_destroy(&cmd);
    if (!ok) {
        mt_buf_free(&out);
        return false;
    }
    mt_free(r->bytes);
    r->bytes = out.data;
    r->len = out.len;
    r->request_id = rid;
    r->read_at_ns = now_ns;
    r->ready_at_ns = now_ns + r->period_ns;
    r->next = c->head;
    if (c->head != NULL)
        c->head->prev = r;
    c->head = r;
    c->npending++;
    c->w->st.streamed++;
    return true;
}

bool
replay_conn_release(struct replay_conn *c, struct replay_reply *r,
                    uint64_t now_ns)
{
    struct replay_stats *st = &c->w->st;

    unlink_reply(c, r);
    if (!r->no_stats) {
        uint64_t got = now_ns > r->read_at_ns ? now_ns - r->read_at_ns : 0;
        delay_hist_add(&st->requested, r->requested_ns);
        delay_hist_add(&st->achieved, got);
        if (got >= r->requested_ns) {
            delay_hist_add(&st->late, got - r->requested_ns);
        } else {
            delay_hist_add(&st->late, 0);
            st->early++;
        }
    }
    if (r->stream)
        return stream_next(c, r, now_ns);
    return false;
}

void
replay_conn_close(struct replay_conn *c,
                  void (*cancel)(struct replay_reply *r, void *arg), void *arg)
{
    auth_session_free(&c->auth);
    while (c->head != NULL) {
        struct replay_reply *r = c->head;
        unlink_reply(c, r);
        if (cancel != NULL)
            cancel(r, arg);
        replay_reply_free(r);
    }
}
