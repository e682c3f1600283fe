/*
 * match.c -- what request keys are made of: the rules (ignored fields), the
 * request as matching sees it, and diffs of keys for diagnostics (see
 * match.h and docs/replay.md).  The key text itself: matchkey.c.
 */
#include "match.h"

#include <bson/bson.h>
#include <stdio.h>
#include <string.h>

static const char *const default_ignore[] = {
    "lsid",
    "$clusterTime",
    "txnNumber",
    "$readPreference",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "client",
    "autocommit",
    "startTransaction",
    "$db",
    /* a causally consistent session's token: the operationTime of the
     * session's previous reply, which depends on the order operations ran
     * in; it makes the server wait, never changes the answer */
    "readConcern.afterClusterTime",
};

void
match_rules_default(struct match_rules *r)
{
    memset(r, 0, sizeof(*r));
    for (size_t i = 0; i < sizeof(default_ignore) / sizeof(default_ignore[0]);
         i++)
        (void)match_rules_ignore(r, default_ignore[i]);
    r->mask_insert_oids = true;
}

int
match_rules_ignore(struct match_rules *r, const char *field)
{
    size_t n = strlen(field);
    const char *dot = memchr(field, '.', n);

    if (n == 0 || n >= sizeof(r->ignore[0]))
        return MT_EUSAGE;
    /* TOP or TOP.SUB: one level down at most, no empty part */
    if (dot != NULL && (dot == field || dot == field + n - 1 ||
                        memchr(dot + 1, '.', n - (size_t)(dot - field) - 1)))
        return MT_EUSAGE;
    if (match_rules_ignored(r, field))
        return 0;
    if (r->nignore >= MATCH_IGNORE_MAX)
        return MT_ELIMIT;
    memcpy(r->ignore[r->nignore], field, n + 1);
    r->ignore_len[r->nignore++] = (uint8_t)n;
    return 0;
}

int
match_rules_keep(struct match_rules *r, const char *field)
{
    for (size_t i = 0; i < r->nignore; i++) {
        if (strcmp(r->ignore[i], field) == 0) {
            memmove(r->ignore[i], r->ignore[i + 1],
                    (r->nignore - i - 1) * sizeof(r->ignore[0]));
            memmove(&r->ignore_len[i], &r->ignore_len[i + 1],
                    r->nignore - i - 1);
            r->nignore--;
            return 0;
        }
    }
    return MT_ENOMATCH;
}

bool
match_rules_ignored_n(const struct match_rules *r, const char *field, size_t n)
{
    for (size_t i = 0; i < r->nignore; i++)
        if (r->ignore_len[i] == n && r->ignore[i][0] == field[0] &&
            memcmp(r->ignore[i], field, n) == 0)
            return true;
    return false;
}

bool
match_rules_ignores_sub(const struct match_rules *r, const char *field,
                        size_t n)
{
    for (size_t i = 0; i < r->nignore; i++)
        if (r->ignore_len[i] > n + 1 && r->ignore[i][n] == '.' &&
            memcmp(r->ignore[i], field, n) == 0)
            return true;
    return false;
}

bool
match_rules_ignored(const struct match_rules *r, const char *field)
{
    return match_rules_ignored_n(r, field, strlen(field));
}

static void
copy_str(char *dst, size_t n, const char *src, size_t len)
{
    if (len >= n)
        len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* First key of the document and its $db, by a top-level walk. */
static int
cmd_scan(struct match_req *req, struct mt_err *err)
{
    bson_t b;
    bson_iter_t it;
    bool first = true;

    if (!bson_init_static(&b, req->cmd, req->cmd_len) ||
        !bson_iter_init(&it, &b))
        return mt_err_set(err, MT_EBSON, 0, "command document is not BSON");
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (first) {
            copy_str(req->name, sizeof(req->name), k, strlen(k));
            first = false;
        }
        if (k[0] == '$' && strcmp(k, "$db") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
            uint32_t l;
            const char *v = bson_iter_utf8(&it, &l);
            copy_str(req->db, sizeof(req->db), v, l);
        }
    }
    if (first)
        return mt_err_set(err, MT_EBSON, 0, "empty command document");
    return 0;
}

/*
 * OP_QUERY on <db>.<collection>: a legacy find (MongoDB's OP_QUERY
 * reference: the query, returnFieldsSelector, numberToSkip,
 * numberToReturn and the flags say what is returned).
 */
static int
req_from_legacy_find(const struct wire_msg *m, struct match_req *req,
                     const char *dot, struct mt_err *err)
{
    bson_t b;

    if (!bson_init_static(&b, m->body, m->body_len))
        return mt_err_set(err, MT_EBSON, 0, "OP_QUERY query is not BSON");
    memcpy(req->name, "find", 5);
    req->cmd = m->body;
    req->cmd_len = m->body_len;
    req->legacy = req->legacy_query = true;
    req->coll = dot + 1;
    req->query_flags = m->query_flags;
    req->number_to_skip = m->number_to_skip;
    req->number_to_return = m->number_to_return;
    req->fields = m->docs;
    req->fields_len = m->docs_len;
    return 0;
}

/* OP_QUERY on <db>.$cmd: the query, unwrapped from {$query: ...}; on
 * another namespace, a legacy find. */
static int
req_from_query(const struct wire_msg *m, struct match_req *req,
               struct mt_err *err)
{
    const char *fc = m->full_collection, *dot;
    bson_t b;
    bson_iter_t it;

    if (fc == NULL || (dot = strchr(fc, '.')) == NULL || dot == fc ||
        dot[1] == '\0')
        return mt_err_set(err, MT_EUNSUPPORTED, 0,
                          "legacy OP_QUERY on '%s' (want <db>.<collection>)",
                          fc ? fc : "");
    copy_str(req->db, sizeof(req->db), fc, (size_t)(dot - fc));
    if (strcmp(dot, ".$cmd") != 0)
        return req_from_legacy_find(m, req, dot, err);
    req->cmd = m->body;
    req->cmd_len = m->body_len;
    req->legacy = true;
    if (bson_init_static(&b, m->body, m->body_len) &&
        bson_iter_init_find(&it, &b, "$query") &&
        BSON_ITER_HOLDS_DOCUMENT(&it)) {
        uint32_t l;
        const uint8_t *d;
        bson_iter_document(&it, &l, &d);
        req->cmd = d;
        req->cmd_len = l;
    }
    return cmd_scan(req, err);
}

int
match_req_from_msg(const struct wire_msg *m, struct match_req *req,
                   struct mt_err *err)
{
    memset(req, 0, sizeof(*req));
    if (m->body == NULL || m->body_len < 5)
        return mt_err_set(err, MT_EBSON, 0, "message has no command document");
    if (m->h.op_code == WIRE_OP_QUERY)
        return req_from_query(m, req, err);
    if (m->h.op_code == WIRE_OP_COMMAND) {
        /* the database is a field of the message; commandArgs is the
         * command document (its first key is commandName) */
        copy_str(req->db, sizeof(req->db), m->command_db,
                 strlen(m->command_db));
        req->cmd = m->body;
        req->cmd_len = m->body_len;
        req->op_command = true;
        return cmd_scan(req, err);
    }
    if (m->h.op_code != WIRE_OP_MSG)
        return mt_err_set(err, MT_EUNSUPPORTED, 0, "%s requests are not served",
                          wire_opcode_name(m->h.op_code));
    req->cmd = m->body;
    req->cmd_len = m->body_len;
    req->seq = m->seq;
    req->nseq = m->nseq;
    req->more_to_come = (m->flags & WIRE_MSG_MORE_TO_COME) != 0;
    req->exhaust_allowed = (m->flags & WIRE_MSG_EXHAUST_ALLOWED) != 0;
    req->checksum = (m->flags & WIRE_MSG_CHECKSUM_PRESENT) != 0;
    return cmd_scan(req, err);
}

/* ---- diagnostics ---- */

struct seg {
    const char *p;
    size_t len;  /* whole "name=value" */
    size_t nlen; /* name part */
};

#define DIFF_SEGS 64

static size_t
split(const char *k, size_t len, struct seg *s, size_t max)
{
    size_t n = 0, start = 0;

    if (k == NULL || len == 0)
        return 0;
    for (size_t i = 0; i <= len && n < max; i++) {
        if (i < len && k[i] != MATCH_SEP)
            continue;
        s[n].p = k + start;
        s[n].len = i - start;
        s[n].nlen = s[n].len;
        const char *eq = memchr(s[n].p, '=', s[n].len);
        if (eq != NULL)
            s[n].nlen = (size_t)(eq - s[n].p);
        n++;
        start = i + 1;
    }
    return n;
}

static bool
seg_same(const struct seg *x, const struct seg *y)
{
    return x->len == y->len && memcmp(x->p, y->p, x->len) == 0;
}

static bool
seg_same_name(const struct seg *x, const struct seg *y)
{
    return x->nlen == y->nlen && memcmp(x->p, y->p, x->nlen) == 0;
}

static void
note(char *out, size_t n, size_t *pos, const struct seg *s, const char *what)
{
    int w;

    if (*pos >= n)
        return;
    w = snprintf(out + *pos, n - *pos, "%s%.*s %s", *pos ? "; " : "",
                 (int)(s->nlen > 60 ? 60 : s->nlen), s->p, what);
    if (w > 0)
        *pos += (size_t)w < n - *pos ? (size_t)w : n - *pos - 1;
}

/*
 * The fields of a key are a multiset (a command may repeat a field name,
 * a kind-1 sequence may share a field's name), so they are paired in two
 * passes: first each field with an unpaired identical one of the other key
 * (equal), then each field left with the first unpaired one of the same
 * name (differs).  The counts do not depend on which key comes first: per
 * distinct field there are min(count in a, count in b) equal pairs, and per
 * name min(left in a, left in b) differing ones.
 */
int
match_key_diff(const char *a, size_t a_len, const char *b, size_t b_len,
               char *out, size_t n)
{
    struct seg sa[DIFF_SEGS], sb[DIFF_SEGS];
    size_t na = split(a, a_len, sa, DIFF_SEGS),
           nb = split(b, b_len, sb, DIFF_SEGS);
    /* the b field each a field is paired with (-1: none), and whether
     * a b field is paired; segment 0 (the database) stays out */
    int pa[DIFF_SEGS];
    bool ub[DIFF_SEGS] = {false};
    bool same[DIFF_SEGS] = {false};
    size_t pos = 0;
    int equal = 0;

    out[0] = '\0';
    if (na > 0 && nb > 0 && !seg_same(&sa[0], &sb[0]))
        note(out, n, &pos, &(struct seg){"database", 8, 8}, "differs");
    else
        equal++;
    for (size_t i = 0; i < na; i++)
        pa[i] = -1;
    for (size_t i = 1; i < na; i++)
        for (size_t j = 1; j < nb; j++)
            if (!ub[j] && seg_same(&sa[i], &sb[j])) {
                pa[i] = (int)j;
                ub[j] = same[i] = true;
                equal++;
                break;
            }
    for (size_t i = 1; i < na; i++)
        for (size_t j = 1; j < nb && pa[i] < 0; j++)
            if (!ub[j] && seg_same_name(&sa[i], &sb[j])) {
                pa[i] = (int)j;
                ub[j] = true;
            }
    for (size_t i = 1; i < na; i++)
        if (pa[i] < 0)
            note(out, n, &pos, &sa[i], "only in the request");
        else if (!same[i])
            note(out, n, &pos, &sa[i], "differs");
    for (size_t j = 1; j < nb; j++)
        if (!ub[j])
            note(out, n, &pos, &sb[j], "only in the recording");
    return equal;
}

void
match_key_display(const char *key, size_t len, char *out, size_t n)
{
    size_t m = len < n - 1 ? len : n - 1;

    for (size_t i = 0; i < m; i++)
        out[i] = key[i] == MATCH_SEP ? ' ' : key[i];
    out[m] = '\0';
    if (len > n - 1 && n > 4)
        memcpy(out + n - 4, "...", 4);
}

int64_t
match_reply_cursor_id(const uint8_t *body, size_t len)
{
    bson_t b;
    bson_iter_t it, c;

    if (body == NULL || !bson_init_static(&b, body, len) ||
        !bson_iter_init_find(&it, &b, "cursor") ||
        !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &c) ||
        !bson_iter_find(&c, "id"))
        return 0;
    if (BSON_ITER_HOLDS_INT64(&c) || BSON_ITER_HOLDS_INT32(&c))
        return bson_iter_as_int64(&c);
    return 0;
}

/* ---- cursor shapes (docs/replay.md, "Equivalent requests") ---- */

bool
match_shape_field(const char *cmd, const char *key)
{
    if (strcmp(cmd, "find") == 0)
        return strcmp(key, "limit") == 0 || strcmp(key, "batchSize") == 0 ||
               strcmp(key, "singleBatch") == 0;
    return strcmp(cmd, "aggregate") == 0 && strcmp(key, "cursor") == 0;
}

/* An integral number (int32, int64, or a double holding an integer). */
static bool
iter_integer(const bson_iter_t *it, int64_t *v)
{
    double d;

    if (BSON_ITER_HOLDS_INT32(it) || BSON_ITER_HOLDS_INT64(it)) {
        *v = bson_iter_as_int64(it);
        return true;
    }
    if (!BSON_ITER_HOLDS_DOUBLE(it))
        return false;
    d = bson_iter_double(it);
    if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) ||
        d != (double)(int64_t)d)
        return false;
    *v = (int64_t)d;
    return true;
}

/* aggregate's cursor: {} or {batchSize: N}; anything else stays keyed. */
static bool
shape_cursor_doc(const bson_iter_t *it, int64_t *batch, bool *has_batch)
{
    bson_iter_t c;

    if (!BSON_ITER_HOLDS_DOCUMENT(it) || !bson_iter_recurse(it, &c))
        return false;
    while (bson_iter_next(&c)) {
        if (strcmp(bson_iter_key(&c), "batchSize") != 0 ||
            !iter_integer(&c, batch) || *batch < 0)
            return false;
        *has_batch = true;
    }
    return true;
}

/* One shaping field of a find; false when its value is not of its type. */
static bool
shape_find_field(const bson_iter_t *it, const char *k, bool *single,
                 int64_t *limit, int64_t *batch, bool *has_batch)
{
    if (strcmp(k, "singleBatch") == 0) {
        if (!BSON_ITER_HOLDS_BOOL(it))
            return false;
        *single = bson_iter_bool(it);
        return true;
    }
    if (strcmp(k, "limit") == 0)
        return iter_integer(it, limit) && *limit > INT64_MIN;
    *has_batch = true;
    return iter_integer(it, batch) && *batch > INT64_MIN;
}

void
match_shape_of(const struct match_rules *r, const struct match_req *req,
               struct match_shape *s)
{
    bool find = strcmp(req->name, "find") == 0;
    bool ok = true, single = false, has_batch = false;
    int64_t limit = 0, batch = 0;
    bson_t b;
    bson_iter_t it;

    memset(s, 0, sizeof(*s));
    s->batch = -1;
    if (r->strict || req->legacy_query ||
        (!find && strcmp(req->name, "aggregate") != 0) ||
        !bson_init_static(&b, req->cmd, req->cmd_len) ||
        !bson_iter_init(&it, &b))
        return;
    while (ok && bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (!match_shape_field(req->name, k) || match_rules_ignored(r, k))
            continue;
        ok = find
                 ? shape_find_field(&it, k, &single, &limit, &batch, &has_batch)
                 : shape_cursor_doc(&it, &batch, &has_batch);
    }
    if (!ok)
        return; /* unshaped: the fields stay in the key */
    /* the find/getMore/killCursors commands spec, "Mapping OP_QUERY
     * behavior to the find command limit and batchSize fields": a
     * negative limit or batchSize (OP_QUERY's numberToReturn < 0) means
     * singleBatch, with the absolute values, batchSize the limit when
     * there is one */
    if (limit < 0 || (has_batch && batch < 0)) {
        single = true;
        limit = limit < 0 ? -limit : limit;
        batch = limit != 0 ? limit : -batch;
        has_batch = batch != 0;
    }
    s->shaped = true;
    s->single = single;
    s->limit = limit;
    s->batch = has_batch ? batch : -1;
}

/* The documents a first batch holds at most: batchSize (101 when absent)
 * and the limit. */
static int64_t
shape_cap(const struct match_shape *s)
{
    int64_t cap = s->batch >= 0 ? s->batch : MATCH_FIRST_BATCH_DEFAULT;

    return s->limit > 0 && s->limit < cap ? s->limit : cap;
}

bool
match_shape_serves(const struct match_shape *rec, int64_t rec_cursor_id,
                   int32_t rec_n, const struct match_shape *q)
{
    int64_t n = rec_n, qcap = shape_cap(q);
    bool whole;

    if (!rec->shaped || !q->shaped)
        return rec->shaped == q->shaped;
    /* the same first batch, the same total, the same closing */
    if (rec->single == q->single && rec->limit == q->limit &&
        shape_cap(rec) == shape_cap(q))
        return true;
    /* otherwise only a cursor exhausted in its first batch answers */
    if (rec_cursor_id != 0 || rec_n < 0)
        return false;
    /* known to be every document of the query: nothing, or a batch that
     * neither a limit nor singleBatch cut (singleBatch may also have cut
     * it at 16 MiB, at any count) */
    whole = n == 0 || (!rec->single && !(rec->limit > 0 && n >= rec->limit));
    if (whole) /* q's first batch holds them all (its cap has its limit) */
        return qcap >= n;
    /* the first n documents of a query that may have more: q must return
     * exactly those n and close, by its limit or by singleBatch */
    if (q->limit == n && qcap >= n)
        return true;
    if (!q->single)
        return false;
    if (qcap == n)
        return true;
    /* singleBatch cut below its cap only by size: a larger cap cuts at
     * the same document */
    return rec->single && n < shape_cap(rec) &&
           !(rec->limit > 0 && n >= rec->limit) && qcap >= n;
}

int32_t
match_reply_first_n(const uint8_t *body, size_t len)
{
    bson_t b;
    bson_iter_t it, c, a;
    int32_t n = 0;

    if (body == NULL || !bson_init_static(&b, body, len) ||
        !bson_iter_init_find(&it, &b, "cursor") ||
        !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &c) ||
        !bson_iter_find(&c, "firstBatch") || !BSON_ITER_HOLDS_ARRAY(&c) ||
        !bson_iter_recurse(&c, &a))
        return -1;
    while (bson_iter_next(&a) && n < INT32_MAX)
        n++;
    return n;
}
