/*
 * index.c -- the index of recorded exchanges (see index.h).
 *
 * Loading pairs each server-to-client message with the pending request of
 * the same connection whose requestID is its responseTo.  A reply with
 * moreToCome (an exhaust stream) leaves its request pending under the
 * reply's own requestID, the responseTo of the stream's next reply (OP_MSG
 * spec), so a streamed getMore's batches become the cursor's next batches.
 * Replies that answer nothing pending (their request was lost) are counted
 * as unpaired; requests with moreToCome expect no reply.
 */
#include "index.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/pair.h"
#include "auth.h"
#include "handshake.h"
#include "matchkey.h"

#define PENDING_MAX 65536

void
index_init(struct index *idx, const struct match_rules *r)
{
    memset(idx, 0, sizeof(*idx));
    idx->rules = *r;
}

void
index_free(struct index *idx)
{
    for (size_t i = 0; i < idx->nex; i++) {
        mt_free(idx->ex[i].req);
        mt_free(idx->ex[i].reply);
        mt_free(idx->ex[i].more);
    }
    for (size_t i = 0; i < idx->ngroups; i++) {
        struct index_group *g = idx->groups[i];
        for (uint32_t c = 0; c < g->ncls; c++)
            mt_free(g->cls[c].ex);
        mt_free(g->cls);
        mt_free(g->key);
        mt_free(g->ex);
        mt_free(g);
    }
    mt_free(idx->ex);
    mt_free(idx->groups);
    mt_free(idx->buckets);
    mt_free(idx->hello);
    mt_free(idx->live);
    memset(idx, 0, sizeof(*idx));
}

/* Grows *arr (elements of size sz) to hold one more; 0 or -ENOMEM. */
static int
grow(void **arr, size_t *cap, size_t n, size_t sz, size_t max)
{
    size_t c;
    void *p;

    if (n < *cap)
        return 0;
    if (n >= max)
        return MT_ELIMIT;
    c = *cap ? *cap * 2 : 16;
    if (c > max)
        c = max;
    p = mt_realloc(*arr, c * sz);
    if (p == NULL)
        return -ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

static int
rehash(struct index *idx)
{
    size_t nb = idx->nbuckets ? idx->nbuckets * 2 : 256;
    struct index_group **b = mt_calloc(nb, sizeof(*b));

    if (b == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < idx->ngroups; i++) {
        struct index_group *g = idx->groups[i];
        g->chain = b[g->hash & (nb - 1)];
        b[g->hash & (nb - 1)] = g;
    }
    mt_free(idx->buckets);
    idx->buckets = b;
    idx->nbuckets = nb;
    return 0;
}

struct index_group *
index_find(const struct index *idx, const char *key, size_t len)
{
    uint64_t h = match_key_hash(key, len);

    if (idx->nbuckets == 0)
        return NULL;
    for (struct index_group *g = idx->buckets[h & (idx->nbuckets - 1)];
         g != NULL; g = g->chain)
        if (g->hash == h && g->key_len == len && memcmp(g->key, key, len) == 0)
            return g;
    return NULL;
}

static struct index_group *
group_get(struct index *idx, const char *key, size_t len)
{
    struct index_group *g = index_find(idx, key, len);
    size_t cap = idx->groups_cap;

    if (g != NULL)
        return g;
    if (grow((void **)&idx->groups, &cap, idx->ngroups, sizeof(*idx->groups),
             INDEX_EXCHANGES_MAX) < 0)
        return NULL;
    idx->groups_cap = cap;
    if (idx->ngroups + 1 > idx->nbuckets && rehash(idx) < 0)
        return NULL;
    g = mt_calloc(1, sizeof(*g));
    if (g == NULL || (g->key = mt_malloc(len + 1)) == NULL) {
        mt_free(g);
        return NULL;
    }
    memcpy(g->key, key, len);
    g->key[len] = '\0';
    g->key_len = len;
    g->hash = match_key_hash(key, len);
    atomic_init(&g->next, 0);
    g->chain = idx->buckets[g->hash & (idx->nbuckets - 1)];
    idx->buckets[g->hash & (idx->nbuckets - 1)] = g;
    idx->groups[idx->ngroups++] = g;
    idx->st.groups++;
    return g;
}

/* Appends exchange index ex to the list *arr of *n (capacity *cap). */
static int
ex_list_push(uint32_t **arr, uint32_t *n, uint32_t *cap, uint32_t ex)
{
    size_t c = *cap;
    int rc = grow((void **)arr, &c, *n, sizeof(**arr), INDEX_EXCHANGES_MAX);

    if (rc < 0)
        return rc;
    *cap = (uint32_t)c;
    (*arr)[(*n)++] = ex;
    return 0;
}

static int
group_push(struct index_group *g, uint32_t ex)
{
    return ex_list_push(&g->ex, &g->nex, &g->ex_cap, ex);
}

/* Appends a copy of the two messages as a new exchange; its index in *out. */
static int
ex_new(struct index *idx, const struct wire_msg *rq, const struct wire_msg *rp,
       uint64_t latency_ns, uint32_t *out)
{
    struct index_exchange *e;
    size_t cap = idx->ex_cap;
    int rc = grow((void **)&idx->ex, &cap, idx->nex, sizeof(*idx->ex),
                  INDEX_EXCHANGES_MAX);

    if (rc < 0)
        return rc;
    idx->ex_cap = cap;
    e = &idx->ex[idx->nex];
    memset(e, 0, sizeof(*e));
    e->req = mt_malloc(rq->raw_len);
    e->reply = mt_malloc(rp->raw_len);
    if (e->req == NULL || e->reply == NULL) {
        mt_free(e->req);
        mt_free(e->reply);
        return -ENOMEM;
    }
    memcpy(e->req, rq->raw, rq->raw_len);
    memcpy(e->reply, rp->raw, rp->raw_len);
    e->req_len = (uint32_t)rq->raw_len;
    e->reply_len = (uint32_t)rp->raw_len;
    e->latency_ns = latency_ns;
    e->cursor_id = match_reply_cursor_id(rp->body, rp->body_len);
    *out = (uint32_t)idx->nex++;
    idx->st.exchanges++;
    return 0;
}

static int
live_add(struct index *idx, int64_t id, uint32_t ex)
{
    size_t cap = idx->live_cap;
    int rc;

    for (size_t i = 0; i < idx->nlive; i++) {
        if (idx->live[i].id == id) { /* id reused: the newer cursor wins */
            idx->live[i].ex = ex;
            return 0;
        }
    }
    rc = grow((void **)&idx->live, &cap, idx->nlive, sizeof(*idx->live),
              PENDING_MAX);
    if (rc < 0)
        return rc;
    idx->live_cap = cap;
    idx->live[idx->nlive].id = id;
    idx->live[idx->nlive].ex = ex;
    idx->nlive++;
    return 0;
}

static struct index_live *
live_find(struct index *idx, int64_t id)
{
    for (size_t i = 0; i < idx->nlive; i++)
        if (idx->live[i].id == id)
            return &idx->live[i];
    return NULL;
}

static int64_t
getmore_id(const struct match_req *req)
{
    bson_t b;
    bson_iter_t it;

    if (!bson_init_static(&b, req->cmd, req->cmd_len) ||
        !bson_iter_init_find(&it, &b, "getMore"))
        return 0;
    if (BSON_ITER_HOLDS_INT64(&it) || BSON_ITER_HOLDS_INT32(&it))
        return bson_iter_as_int64(&it);
    return 0;
}

/* A recorded getMore: append its reply to the cursor it continues. */
static int
add_getmore(struct index *idx, const struct match_req *req,
            const struct wire_msg *rq, const struct wire_msg *rp,
            uint64_t latency_ns, struct mt_err *err)
{
    int64_t id = getmore_id(req);
    struct index_live *lv = live_find(idx, id);
    struct index_exchange *origin;
    uint32_t ex;
    size_t cap;
    int rc;

    idx->st.getmores++;
    if (lv == NULL)
        return mt_err_set(err, MT_ENOMATCH, 0,
                          "getMore on cursor %lld opened before the trace "
                          "started",
                          (long long)id);
    TRY(ex_new(idx, rq, rp, latency_ns, &ex));
    origin = &idx->ex[lv->ex];
    cap = origin->more_cap;
    TRY(grow((void **)&origin->more, &cap, origin->nmore, sizeof(*origin->more),
             INDEX_EXCHANGES_MAX));
    origin->more_cap = (uint32_t)cap;
    origin->more[origin->nmore++] = ex;
    if (idx->ex[ex].cursor_id == 0)
        *lv = idx->live[--idx->nlive];
out:
    return rc < 0 ? mt_err_set(err, rc, 0, "indexing a getMore: %s",
                               mt_strerror(rc))
                  : 0;
}

static int
set_hello(struct index *idx, const struct wire_msg *rp)
{
    bool from_msg = rp->h.op_code == WIRE_OP_MSG;

    if (rp->body == NULL)
        return 0;
    idx->compressors |= handshake_compressors(rp->body, rp->body_len);
    if (idx->hello != NULL && (idx->hello_from_msg || !from_msg))
        return 0;
    mt_free(idx->hello);
    idx->hello = mt_malloc(rp->body_len);
    if (idx->hello == NULL)
        return -ENOMEM;
    memcpy(idx->hello, rp->body, rp->body_len);
    idx->hello_len = rp->body_len;
    idx->hello_from_msg = from_msg;
    return 0;
}

static bool
shape_equal(const struct match_shape *a, const struct match_shape *b)
{
    return a->shaped == b->shaped && a->single == b->single &&
           a->limit == b->limit && a->batch == b->batch;
}

static int
class_push(struct index_shape_class *c, uint32_t ex)
{
    return ex_list_push(&c->ex, &c->nex, &c->ex_cap, ex);
}

/* Adds a new class of shape s holding the exchanges of g listed in ex. */
static int
class_new(struct index_group *g, const struct match_shape *s,
          const uint32_t *ex, uint32_t n)
{
    struct index_shape_class *c;
    size_t cap = g->cls_cap;
    int rc = grow((void **)&g->cls, &cap, g->ncls, sizeof(*g->cls),
                  INDEX_SHAPE_CLASSES_MAX);

    if (rc < 0)
        return rc;
    g->cls_cap = (uint32_t)cap;
    c = &g->cls[g->ncls++];
    memset(c, 0, sizeof(*c));
    c->shape = *s;
    atomic_init(&c->next, 0);
    for (uint32_t i = 0; i < n && rc == 0; i++)
        rc = class_push(c, ex[i]);
    return rc;
}

/*
 * Files exchange ex, just pushed to g, under its shape's class.  A group
 * of one shape has no classes (g->ex is its one class); the first
 * exchange of another shape creates them.
 */
static int
group_classify(struct index *idx, struct index_group *g, uint32_t ex)
{
    const struct match_shape *s = &idx->ex[ex].shape;
    int rc;

    if (g->ncls == 0) {
        if (shape_equal(&idx->ex[g->ex[0]].shape, s))
            return 0;
        TRY(class_new(g, &idx->ex[g->ex[0]].shape, g->ex, g->nex - 1));
    }
    for (uint32_t i = 0; i < g->ncls; i++)
        if (shape_equal(&g->cls[i].shape, s))
            return class_push(&g->cls[i], ex);
    if (g->ncls == INDEX_SHAPE_CLASSES_MAX) {
        g->overflow = true;
        return 0;
    }
    return class_new(g, s, &ex, 1);
out:
    return rc;
}

static int
add_parsed(struct index *idx, const struct wire_msg *rq,
           const struct wire_msg *rp, uint64_t latency_ns, struct mt_err *err)
{
    struct match_req req;
    struct mt_buf key;
    struct index_group *g;
    uint32_t ex;
    int rc;

    TRY(match_req_from_msg(rq, &req, err));
    if (strcmp(req.name, "hello") == 0 ||
        strcasecmp(req.name, "isMaster") == 0) {
        idx->st.hellos++;
        return set_hello(idx, rp);
    }
    if (strcmp(req.name, "getMore") == 0)
        return add_getmore(idx, &req, rq, rp, latency_ns, err);
    if (strcmp(req.name, "killCursors") == 0)
        return 0;
    if (auth_is_auth_cmd(req.name)) {
        idx->st.auth++;
        return 0;
    }
    mt_buf_init(&key, MATCH_KEY_LEN_MAX);
    rc = match_key_build(&idx->rules, &req, &key, err);
    if (rc == 0 &&
        (g = group_get(idx, (const char *)key.data, key.len)) == NULL)
        rc = mt_err_set(err, -ENOMEM, 0, "out of memory indexing a key");
    if (rc == 0)
        rc = ex_new(idx, rq, rp, latency_ns, &ex);
    if (rc == 0 && req.legacy_query)
        idx->ex[ex].cursor_id = 0; /* an OP_REPLY: its documents are sent
                                      as recorded, never a cursor.id */
    if (rc == 0) {
        match_shape_of(&idx->rules, &req, &idx->ex[ex].shape);
        idx->ex[ex].first_n = match_reply_first_n(rp->body, rp->body_len);
        rc = group_push(g, ex);
    }
    if (rc == 0)
        rc = group_classify(idx, g, ex);
    if (rc == 0 && idx->ex[ex].cursor_id != 0)
        rc = live_add(idx, idx->ex[ex].cursor_id, ex);
    mt_buf_free(&key);
out:
    return rc;
}

int
index_add(struct index *idx, const uint8_t *req, size_t req_len,
          const uint8_t *reply, size_t reply_len, uint64_t latency_ns,
          struct mt_err *err)
{
    struct wire_msg rq, rp;
    size_t used;
    int rc;

    rc = wire_msg_parse(req, req_len, &rq, &used, err);
    if (rc == MT_OK)
        rc = wire_msg_parse(reply, reply_len, &rp, &used, err);
    if (rc == MT_PARTIAL)
        rc = mt_err_set(err, MT_ETRUNC, req_len, "truncated message");
    if (rc != 0)
        return rc;
    return add_parsed(idx, &rq, &rp, latency_ns, err);
}

const struct index_exchange *
index_group_pick(const struct index *idx, struct index_group *g)
{
    uint64_t n = atomic_fetch_add_explicit(&g->next, 1, memory_order_relaxed);
    return &idx->ex[g->ex[n % g->nex]];
}

/* From c's round-robin position, the first exchange of c's n that
 * serves q. */
static const struct index_exchange *
pick_serving(const struct index *idx, const uint32_t *ex, uint32_t n,
             _Atomic uint64_t *next, const struct match_shape *q)
{
    uint64_t pos = atomic_fetch_add_explicit(next, 1, memory_order_relaxed);

    for (uint32_t i = 0; i < n; i++) {
        const struct index_exchange *e = &idx->ex[ex[(pos + i) % n]];
        if (match_shape_serves(&e->shape, e->cursor_id, e->first_n, q))
            return e;
    }
    return NULL;
}

const struct index_exchange *
index_group_pick_shape(const struct index *idx, struct index_group *g,
                       const struct match_shape *q)
{
    const struct index_exchange *e;

    if (g->ncls == 0) {
        e = &idx->ex[g->ex[0]];
        if (shape_equal(&e->shape, q))
            return index_group_pick(idx, g);
        return pick_serving(idx, g->ex, g->nex, &g->next, q);
    }
    for (uint32_t i = 0; i < g->ncls; i++) {
        struct index_shape_class *c = &g->cls[i];
        if (shape_equal(&c->shape, q)) {
            uint64_t n =
                atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
            return &idx->ex[c->ex[n % c->nex]];
        }
    }
    for (uint32_t i = 0; g->overflow && i < g->nex; i++) {
        e = &idx->ex[g->ex[i]];
        if (shape_equal(&e->shape, q))
            return e; /* a shape past the classes: its first exchange */
    }
    for (uint32_t i = 0; i < g->ncls; i++) {
        struct index_shape_class *c = &g->cls[i];
        e = pick_serving(idx, c->ex, c->nex, &c->next, q);
        if (e != NULL)
            return e;
    }
    return g->overflow ? pick_serving(idx, g->ex, g->nex, &g->next, q) : NULL;
}

bool
index_group_command_is(const struct index_group *g, const char *name)
{
    const char *sep = memchr(g->key, MATCH_SEP, g->key_len);
    size_t n = strlen(name), left;

    if (sep == NULL)
        return false;
    left = g->key_len - (size_t)(sep + 1 - g->key);
    return left > n && memcmp(sep + 1, name, n) == 0 && sep[1 + n] == '=';
}

const struct index_group *
index_closest(const struct index *idx, const char *key, size_t len)
{
    const struct index_group *best = NULL;
    const char *sep = memchr(key, MATCH_SEP, len);
    int best_score = -1;
    char scratch[8];

    for (size_t i = 0; i < idx->ngroups; i++) {
        const struct index_group *g = idx->groups[i];
        int score = 2 * match_key_diff(key, len, g->key, g->key_len, scratch,
                                       sizeof(scratch));
        const char *gsep = memchr(g->key, MATCH_SEP, g->key_len);
        /* same command name: strongly preferred */
        if (sep != NULL && gsep != NULL) {
            const char *ce =
                memchr(sep + 1, '=', len - (size_t)(sep + 1 - key));
            size_t cn = ce ? (size_t)(ce - sep) : 0;
            if (cn > 0 && (size_t)(g->key + g->key_len - gsep) > cn &&
                memcmp(sep, gsep, cn + 1) == 0)
                score += 1000;
        }
        if (score > best_score) {
            best_score = score;
            best = g;
        }
    }
    return best;
}

/* "limit=1 batchSize=1 singleBatch=true", the fields a shape has. */
static void
shape_text(const struct match_shape *s, char *out, size_t n)
{
    int w = snprintf(out, n, "%s", "");

    if (s->limit != 0)
        w += snprintf(out + w, n - (size_t)w, " limit=%lld",
                      (long long)s->limit);
    if (s->batch >= 0 && (size_t)w < n)
        w += snprintf(out + w, n - (size_t)w, " batchSize=%lld",
                      (long long)s->batch);
    if (s->single && (size_t)w < n)
        w += snprintf(out + w, n - (size_t)w, " singleBatch=true");
    if (w == 0)
        snprintf(out, n, " no limit, batchSize or singleBatch");
}

void
index_shape_miss_msg(const struct index *idx, const struct index_group *g,
                     const struct match_shape *q, char *msg, size_t n)
{
    const struct index_exchange *e = &idx->ex[g->ex[0]];
    char key[320], mine[96], rec[96];

    match_key_display(g->key, g->key_len, key, sizeof(key));
    shape_text(q, mine, sizeof(mine));
    shape_text(&e->shape, rec, sizeof(rec));
    snprintf(msg, n,
             "mtrace replay: no recorded reply for key [%s] with%s: the trace "
             "has it with%s (a first batch of %d, cursor %s), "
             "which a server would not answer alike",
             key, mine, rec, (int)e->first_n,
             e->cursor_id != 0 ? "left open" : "exhausted");
}

void
index_miss_msg(const struct index *idx, const char *k, size_t len,
               const char *cmd, char *msg, size_t n)
{
    const struct index_group *near = index_closest(idx, k, len);
    char key[320], close[320], diff[320];

    match_key_display(k, len, key, sizeof(key));
    if (near != NULL && !index_group_command_is(near, cmd)) {
        match_key_display(near->key, near->key_len, close, sizeof(close));
        snprintf(msg, n,
                 "mtrace replay: no recorded reply for key [%s]; the trace "
                 "has no '%s' request (the closest recorded key is [%s])",
                 key, cmd, close);
    } else if (near != NULL) {
        match_key_display(near->key, near->key_len, close, sizeof(close));
        match_key_diff(k, len, near->key, near->key_len, diff, sizeof(diff));
        snprintf(msg, n,
                 "mtrace replay: no recorded reply for key [%s]; closest "
                 "recorded key [%s] (%s)",
                 key, close, diff);
    } else {
        snprintf(msg, n,
                 "mtrace replay: no recorded reply for key [%s]; the trace "
                 "has no requests to match",
                 key);
    }
}

/* ---- loading a trace ---- */

/* A request waiting for its reply (the value of the pairing table). */
struct index_pending {
    uint64_t t_ns;
    uint8_t *msg; /* owned copy of the request */
    uint32_t len;
};

struct loader {
    struct pair_table pend; /* of struct index_pending */
};

static void
index_free_pending(void *val, void *ctx)
{
    (void)ctx;
    mt_free(((struct index_pending *)val)->msg);
}

static int
on_request(struct index *idx, struct loader *ld, const struct trace_msg *m,
           const uint8_t *bytes, uint32_t len)
{
    struct wire_msg w;
    size_t used;
    struct index_pending pd;
    int rc;

    idx->st.requests++;
    if (wire_msg_parse(bytes, len, &w, &used, NULL) != MT_OK) {
        idx->st.malformed++;
        return 0;
    }
    if (w.h.op_code == WIRE_OP_MSG && (w.flags & WIRE_MSG_MORE_TO_COME))
        return 0; /* unacknowledged: no reply will come */
    if (pair_table_take(&ld->pend, m->conn_id, w.h.request_id, &pd))
        mt_free(pd.msg); /* the requestID again: the later one pairs */
    pd.msg = mt_malloc(len);
    if (pd.msg == NULL)
        return -ENOMEM;
    memcpy(pd.msg, bytes, len);
    pd.len = len;
    pd.t_ns = m->t_ns;
    rc = pair_table_put(&ld->pend, m->conn_id, w.h.request_id, &pd);
    if (rc < 0)
        mt_free(pd.msg);
    if (rc == MT_ELIMIT) { /* a trace of requests without replies */
        idx->st.unpaired++;
        return 0;
    }
    return rc;
}

static int
on_reply(struct index *idx, struct loader *ld, const struct trace_msg *m,
         const uint8_t *bytes, uint32_t len)
{
    struct wire_msg w;
    struct index_pending pd;
    size_t used;
    struct mt_err e = {0};
    int rc;

    idx->st.replies++;
    if (wire_msg_parse(bytes, len, &w, &used, NULL) != MT_OK) {
        idx->st.malformed++;
        return 0;
    }
    if (!pair_table_take(&ld->pend, m->conn_id, w.h.response_to, &pd)) {
        idx->st.unpaired++; /* exhaust stream, or its request was lost */
        return 0;
    }
    rc = index_add(idx, pd.msg, pd.len, bytes, len,
                   m->t_ns >= pd.t_ns ? m->t_ns - pd.t_ns : 0, &e);
    if (rc != -ENOMEM && w.h.op_code == WIRE_OP_MSG &&
        (w.flags & WIRE_MSG_MORE_TO_COME)) {
        /* the stream's next reply answers this one; its latency counts
         * from this reply */
        struct index_pending old;
        if (pair_table_take(&ld->pend, m->conn_id, w.h.request_id, &old))
            mt_free(old.msg);
        pd.t_ns = m->t_ns;
        if (pair_table_put(&ld->pend, m->conn_id, w.h.request_id, &pd) == 0)
            pd.msg = NULL;
    }
    mt_free(pd.msg);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0) {
        /* the request will miss: say why, not only under --verbose */
        if (++idx->st.skipped <= 5)
            mt_warn("replay: recorded exchange %llu skipped (its request "
                    "cannot be served): %s",
                    (unsigned long long)idx->st.replies, e.msg);
    }
    return 0;
}

static int
on_record(struct index *idx, struct loader *ld, const struct trace_rec *rec)
{
    const struct trace_msg *m = &rec->u.msg;
    const uint8_t *bytes;
    uint32_t len;

    idx->st.records++;
    if (rec->type == TRACE_REC_CONN_CLOSE) {
        pair_table_drop_conn(&ld->pend, rec->u.close.conn_id,
                             index_free_pending, NULL);
        return 0;
    }
    if (rec->type != TRACE_REC_MSG)
        return 0;
    if (m->flags & (TRACE_MSG_PARTIAL | TRACE_MSG_MALFORMED)) {
        idx->st.malformed++;
        return 0;
    }
    bytes = trace_msg_plain(m, &len);
    if (m->dir == TRACE_DIR_C2S)
        return on_request(idx, ld, m, bytes, len);
    return on_reply(idx, ld, m, bytes, len);
}

int
index_load(struct index *idx, struct trace_reader *tr, struct mt_err *err)
{
    struct loader ld;
    struct trace_rec rec;
    struct mt_err e = {0};
    int rc;

    pair_table_init(&ld.pend, sizeof(struct index_pending), PENDING_MAX);
    for (;;) {
        rc = trace_reader_next(tr, &rec, &e);
        if (rc == MT_END)
            break;
        if (rc < 0) {
            mt_warn("replay: trace damaged (%s); using the %llu records "
                    "before it",
                    e.msg, (unsigned long long)idx->st.records);
            break;
        }
        rc = on_record(idx, &ld, &rec);
        if (rc < 0)
            break;
    }
    pair_table_foreach(&ld.pend, index_free_pending, NULL);
    pair_table_free(&ld.pend);
    if (rc < 0 && rc != MT_END && e.code == 0)
        return mt_err_set(err, rc, 0, "loading the trace: %s", mt_strerror(rc));
    return 0;
}
