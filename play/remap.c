/*
 * remap.c -- cursor, session and cluster-time rewriting of recorded
 * requests (see remap.h).
 */
#include "remap.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "core/mem.h"
#include "core/rd.h"

#define REMAP_BUCKETS 1024u
#define REMAP_SESSIONS_MAX 1000000u

struct cur_ent {
    struct cur_ent *next; /* owned: the bucket's chain */
    uint32_t copy;
    int64_t rec_id, live_id;
    enum remap_cursor_state st;
};

struct sess_ent {
    struct sess_ent *next; /* owned */
    uint32_t copy;
    uint8_t rec[16], live[16];
    int64_t last_rec_txn; /* -1: none yet */
    int64_t live_txn;
};

struct remap {
    struct cur_ent *cur[REMAP_BUCKETS];
    struct sess_ent *sess[REMAP_BUCKETS];
    size_t nsess;
    const char *const *db_from; /* borrowed */
    const char *const *db_to;   /* borrowed */
    size_t ndb;
    bson_t *cluster_time; /* owned: the live $clusterTime, or NULL */
    bool unknown_waits;
    uint32_t op_t, op_i; /* the live operationTime (t 0: none) */
    struct remap_stats st;
};

static size_t
hash64(uint64_t x, uint32_t copy)
{
    x ^= (uint64_t)copy * 0x9e3779b97f4a7c15ull;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)(x % REMAP_BUCKETS);
}

struct remap *
remap_new(const char *const *db_from, const char *const *db_to, size_t ndb)
{
    struct remap *rm = mt_calloc(1, sizeof(*rm));

    if (rm == NULL)
        return NULL;
    rm->db_from = db_from;
    rm->db_to = db_to;
    rm->ndb = ndb;
    return rm;
}

void
remap_free(struct remap *rm)
{
    if (rm == NULL)
        return;
    for (size_t i = 0; i < REMAP_BUCKETS; i++) {
        for (struct cur_ent *c = rm->cur[i], *n; c != NULL; c = n) {
            n = c->next;
            mt_free(c);
        }
        for (struct sess_ent *s = rm->sess[i], *n; s != NULL; s = n) {
            n = s->next;
            mt_free(s);
        }
    }
    if (rm->cluster_time != NULL)
        bson_destroy(rm->cluster_time);
    mt_free(rm);
}

static struct cur_ent *
cur_find(const struct remap *rm, uint32_t copy, int64_t rec_id)
{
    struct cur_ent *c = rm->cur[hash64((uint64_t)rec_id, copy)];

    while (c != NULL && (c->copy != copy || c->rec_id != rec_id))
        c = c->next;
    return c;
}

int
remap_cursor_open(struct remap *rm, uint32_t copy, int64_t rec_id)
{
    struct cur_ent *c = cur_find(rm, copy, rec_id);
    size_t h;

    if (c == NULL) {
        c = mt_calloc(1, sizeof(*c));
        if (c == NULL)
            return -ENOMEM;
        h = hash64((uint64_t)rec_id, copy);
        c->copy = copy;
        c->rec_id = rec_id;
        c->next = rm->cur[h];
        rm->cur[h] = c;
    }
    c->st = REMAP_CURSOR_PENDING;
    c->live_id = 0;
    return 0;
}

void
remap_cursor_set(struct remap *rm, uint32_t copy, int64_t rec_id,
                 int64_t live_id)
{
    struct cur_ent *c = cur_find(rm, copy, rec_id);

    if (c == NULL)
        return;
    c->live_id = live_id;
    c->st = live_id != 0 ? REMAP_CURSOR_LIVE : REMAP_CURSOR_DEAD;
    if (live_id != 0)
        rm->st.cursors++;
}

enum remap_cursor_state
remap_cursor_get(const struct remap *rm, uint32_t copy, int64_t rec_id,
                 int64_t *live_id)
{
    const struct cur_ent *c = cur_find(rm, copy, rec_id);

    *live_id = 0;
    if (c == NULL)
        return REMAP_CURSOR_UNKNOWN;
    *live_id = c->live_id;
    return c->st;
}

void
remap_forget_copy(struct remap *rm, uint32_t copy)
{
    for (size_t i = 0; i < REMAP_BUCKETS; i++) {
        struct cur_ent **pc = &rm->cur[i];
        while (*pc != NULL) {
            struct cur_ent *c = *pc;
            if (c->copy == copy) {
                *pc = c->next;
                mt_free(c);
            } else {
                pc = &c->next;
            }
        }
        struct sess_ent **ps = &rm->sess[i];
        while (*ps != NULL) {
            struct sess_ent *s = *ps;
            if (s->copy == copy) {
                *ps = s->next;
                mt_free(s);
                rm->nsess--;
            } else {
                ps = &s->next;
            }
        }
    }
}

void
remap_note_reply(struct remap *rm, const uint8_t *body, size_t len)
{
    bson_t b, sub;
    bson_iter_t it;
    const uint8_t *data;
    uint32_t dlen;

    if (body == NULL || !bson_init_static(&b, body, len) ||
        !bson_iter_init(&it, &b))
        return;
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (k[0] == '$' && strcmp(k, "$clusterTime") == 0 &&
            BSON_ITER_HOLDS_DOCUMENT(&it)) {
            bson_iter_document(&it, &dlen, &data);
            /* a copy only when it moved */
            if (rm->cluster_time != NULL && rm->cluster_time->len == dlen &&
                memcmp(bson_get_data(rm->cluster_time), data, dlen) == 0)
                continue;
            if (bson_init_static(&sub, data, dlen)) {
                if (rm->cluster_time != NULL)
                    bson_destroy(rm->cluster_time);
                rm->cluster_time = bson_copy(&sub);
            }
        } else if (k[0] == 'o' && strcmp(k, "operationTime") == 0 &&
                   BSON_ITER_HOLDS_TIMESTAMP(&it)) {
            bson_iter_timestamp(&it, &rm->op_t, &rm->op_i);
        }
    }
}

/* The session of the recorded lsid {id: <uuid>} (created); NULL when the
 * lsid has no 16-byte id, or on -ENOMEM / a full table (*rc). */
static struct sess_ent *
sess_get(struct remap *rm, uint32_t copy, const bson_iter_t *lsid, int *rc)
{
    bson_iter_t it;
    bson_subtype_t sub;
    uint32_t len;
    const uint8_t *id;
    uint64_t key;
    struct sess_ent *s;
    size_t h;

    *rc = 0;
    if (!BSON_ITER_HOLDS_DOCUMENT(lsid) || !bson_iter_recurse(lsid, &it) ||
        !bson_iter_find(&it, "id") || !BSON_ITER_HOLDS_BINARY(&it))
        return NULL;
    bson_iter_binary(&it, &sub, &len, &id);
    if (len != 16)
        return NULL;
    memcpy(&key, id, 8);
    h = hash64(key, copy);
    for (s = rm->sess[h]; s != NULL; s = s->next)
        if (s->copy == copy && memcmp(s->rec, id, 16) == 0)
            return s;
    if (rm->nsess >= REMAP_SESSIONS_MAX) {
        *rc = MT_ELIMIT;
        return NULL;
    }
    s = mt_calloc(1, sizeof(*s));
    if (s == NULL) {
        *rc = -ENOMEM;
        return NULL;
    }
    s->copy = copy;
    memcpy(s->rec, id, 16);
    if (getrandom(s->live, 16, 0) != 16) {
        /* getrandom on 16 bytes does not fail short once the pool is
         * ready; fall back on the clock-free counter rather than fail. */
        memcpy(s->live, &rm->st.sessions, sizeof(rm->st.sessions));
        s->live[15] ^= 0x5a;
    }
    s->live[6] = (uint8_t)((s->live[6] & 0x0f) | 0x40); /* UUID v4 */
    s->live[8] = (uint8_t)((s->live[8] & 0x3f) | 0x80);
    s->last_rec_txn = -1;
    s->next = rm->sess[h];
    rm->sess[h] = s;
    rm->nsess++;
    rm->st.sessions++;
    return s;
}

static bool
append_lsid(bson_t *out, const char *key, const struct sess_ent *s)
{
    bson_t sub;

    return bson_append_document_begin(out, key, -1, &sub) &&
           bson_append_binary(&sub, "id", 2, BSON_SUBTYPE_UUID, s->live, 16) &&
           bson_append_document_end(out, &sub);
}

/* txnNumber kept monotonic per live session: a new recorded number is the
 * next live one. */
static int64_t
txn_map(struct sess_ent *s, int64_t rec)
{
    if (rec != s->last_rec_txn) {
        s->last_rec_txn = rec;
        s->live_txn++;
    }
    return s->live_txn;
}

static bool
append_read_concern(struct remap *rm, bson_t *out, const bson_iter_t *rc)
{
    bson_iter_t it;
    bson_t sub;

    if (!bson_iter_recurse(rc, &it))
        return wire_bson_append_iter(out, "readConcern", -1, rc);
    if (!bson_append_document_begin(out, "readConcern", -1, &sub))
        return false;
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (strcmp(k, "afterClusterTime") == 0) {
            if (rm->op_t != 0 &&
                !bson_append_timestamp(&sub, k, -1, rm->op_t, rm->op_i))
                return false;
        } else if (!wire_bson_append_iter(&sub, k, -1, &it)) {
            return false;
        }
    }
    return bson_append_document_end(out, &sub);
}

static const char *
db_rename(const struct remap *rm, const char *db)
{
    for (size_t i = 0; i < rm->ndb; i++)
        if (strcmp(rm->db_from[i], db) == 0)
            return rm->db_to[i];
    return db;
}

/* endSessions: [{id: <uuid>}, ...] with the live ids. */
static int
append_end_sessions(struct remap *rm, uint32_t copy, bson_t *out,
                    const char *key, const bson_iter_t *arr)
{
    bson_iter_t it;
    bson_t sub;
    int rc = 0;
    char idx[16];
    uint32_t n = 0;

    if (!bson_iter_recurse(arr, &it) ||
        !bson_append_array_begin(out, key, -1, &sub))
        return -ENOMEM;
    while (bson_iter_next(&it)) {
        struct sess_ent *s = sess_get(rm, copy, &it, &rc);
        if (rc < 0)
            return rc;
        snprintf(idx, sizeof(idx), "%u", n++);
        if (s != NULL ? !append_lsid(&sub, idx, s)
                      : !wire_bson_append_iter(&sub, idx, -1, &it))
            return -ENOMEM;
    }
    return bson_append_array_end(out, &sub) ? 0 : -ENOMEM;
}

/* killCursors' "cursors": the live ids of the live ones; false in *any
 * when none is live. */
static bool
append_kill_ids(struct remap *rm, uint32_t copy, bson_t *out, const char *key,
                const bson_iter_t *arr, bool *any)
{
    bson_iter_t it;
    bson_t sub;
    char idx[16];
    uint32_t n = 0;
    int64_t live;

    *any = false;
    if (!bson_iter_recurse(arr, &it) ||
        !bson_append_array_begin(out, key, -1, &sub))
        return false;
    while (bson_iter_next(&it)) {
        if (!BSON_ITER_HOLDS_NUMBER(&it))
            continue;
        if (remap_cursor_get(rm, copy, bson_iter_as_int64(&it), &live) !=
            REMAP_CURSOR_LIVE)
            continue;
        snprintf(idx, sizeof(idx), "%u", n++);
        if (!bson_append_int64(&sub, idx, -1, live))
            return false;
        remap_cursor_set(rm, copy, bson_iter_as_int64(&it), 0);
        *any = true;
    }
    return bson_append_array_end(out, &sub);
}

/* The OP_MSG body rebuilt into out (initialised by the caller). */
static int
rebuild_body(struct remap *rm, uint32_t copy, const struct wire_msg *m,
             bson_t *out, enum remap_result *res, int64_t *rec_cursor)
{
    bson_t in;
    bson_iter_t it;
    struct sess_ent *s = NULL;
    const char *cmd = NULL;
    bool ok = true, any;
    int rc = 0;

    if (!bson_init_static(&in, m->body, m->body_len))
        return MT_EBSON;
    if (bson_iter_init_find(&it, &in, "lsid")) {
        s = sess_get(rm, copy, &it, &rc);
        if (rc < 0)
            return rc;
    }
    if (!bson_iter_init(&it, &in))
        return MT_EBSON;
    while (ok && bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (cmd == NULL) {
            cmd = k;
            if (strcmp(k, "getMore") == 0 && BSON_ITER_HOLDS_NUMBER(&it)) {
                int64_t live;
                *rec_cursor = bson_iter_as_int64(&it);
                switch (remap_cursor_get(rm, copy, *rec_cursor, &live)) {
                case REMAP_CURSOR_PENDING:
                    *res = REMAP_WAIT;
                    return 0;
                case REMAP_CURSOR_UNKNOWN:
                    *res = rm->unknown_waits ? REMAP_WAIT : REMAP_NOCURSOR;
                    return 0;
                case REMAP_CURSOR_DEAD:
                    *res = REMAP_NOCURSOR;
                    return 0;
                case REMAP_CURSOR_LIVE:
                    break;
                }
                ok = bson_append_int64(out, k, -1, live);
                continue;
            }
        }
        if (strcmp(k, "lsid") == 0 && s != NULL) {
            ok = append_lsid(out, k, s);
        } else if (strcmp(k, "txnNumber") == 0 && s != NULL &&
                   BSON_ITER_HOLDS_NUMBER(&it)) {
            ok = bson_append_int64(out, k, -1,
                                   txn_map(s, bson_iter_as_int64(&it)));
        } else if (strcmp(k, "$clusterTime") == 0) {
            if (rm->cluster_time != NULL)
                ok = bson_append_document(out, k, -1, rm->cluster_time);
        } else if (strcmp(k, "readConcern") == 0 &&
                   BSON_ITER_HOLDS_DOCUMENT(&it)) {
            ok = append_read_concern(rm, out, &it);
        } else if (strcmp(k, "$db") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
            ok = bson_append_utf8(out, k, -1,
                                  db_rename(rm, bson_iter_utf8(&it, NULL)), -1);
        } else if (strcmp(cmd, "endSessions") == 0 && k == cmd &&
                   BSON_ITER_HOLDS_ARRAY(&it)) {
            if ((rc = append_end_sessions(rm, copy, out, k, &it)) < 0)
                return rc;
        } else if (strcmp(cmd, "killCursors") == 0 &&
                   strcmp(k, "cursors") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
            ok = append_kill_ids(rm, copy, out, k, &it, &any);
            if (ok && !any) {
                *res = REMAP_NOCURSOR;
                return 0;
            }
        } else {
            ok = wire_bson_append_iter(out, k, -1, &it);
        }
    }
    return ok ? 0 : MT_ETOOBIG;
}

/* The --db rename of a legacy message's fullCollectionName ("db.coll",
 * "db.$cmd"): the new database name, or NULL when none applies; *dblen
 * is the length of the recorded one. */
static const char *
legacy_rename_to(const struct remap *rm, const struct wire_msg *m,
                 size_t *dblen)
{
    const char *ns = m->full_collection, *dot;

    if (ns == NULL || rm->ndb == 0)
        return NULL;
    dot = strchr(ns, '.');
    *dblen = dot != NULL ? (size_t)(dot - ns) : strlen(ns);
    for (size_t i = 0; i < rm->ndb; i++)
        if (strlen(rm->db_from[i]) == *dblen &&
            memcmp(rm->db_from[i], ns, *dblen) == 0)
            return rm->db_to[i];
    return NULL;
}

static bool
legacy_renamed(const struct remap *rm, const struct wire_msg *m)
{
    size_t dblen;

    return legacy_rename_to(rm, m, &dblen) != NULL;
}

/* Appends m's bytes with its fullCollectionName renamed (--db), the
 * messageLength set to the new size. */
static int
legacy_append(const struct remap *rm, const struct wire_msg *m,
              struct mt_buf *out)
{
    size_t dblen, start = out->len, off, nslen, tolen, len;
    const char *to = legacy_rename_to(rm, m, &dblen);
    int rc;

    if (to == NULL)
        return mt_buf_append(out, m->raw, m->raw_len);
    /* full_collection points into raw (the parser's view) */
    off = (size_t)((const uint8_t *)m->full_collection - m->raw);
    nslen = strlen(m->full_collection) + 1;
    tolen = strlen(to);
    MT_ASSERT(off + nslen <= m->raw_len && dblen < nslen);
    len = m->raw_len - dblen + tolen;
    if (len > WIRE_MSG_LEN_MAX)
        return MT_ETOOBIG;
    if ((rc = mt_buf_append(out, m->raw, off)) < 0 ||
        (rc = mt_buf_append(out, to, tolen)) < 0 ||
        (rc = mt_buf_append(out, m->full_collection + dblen, nslen - dblen)) <
            0 ||
        (rc = mt_buf_append(out, m->raw + off + nslen,
                            m->raw_len - off - nslen)) < 0) {
        out->len = start;
        return rc;
    }
    wr_le32(out->data + start, (uint32_t)len);
    return 0;
}

/* Legacy messages: the recorded bytes, new requestID, fullCollectionName
 * renamed (--db), cursor ids patched (OP_GET_MORE: its last 8 bytes;
 * OP_KILL_CURSORS: the array after two int32s, live cursors only). */
static int
remap_legacy(struct remap *rm, uint32_t copy, const struct wire_msg *m,
             int32_t request_id, struct mt_buf *out, enum remap_result *res,
             int64_t *rec_cursor)
{
    size_t start = out->len, len;
    uint8_t *p;
    int64_t live;
    int rc = legacy_append(rm, m, out);

    if (rc < 0)
        return rc;
    p = out->data + start;
    len = out->len - start;
    wr_le32(p + 4, (uint32_t)request_id);
    memset(p + 8, 0, 4);
    if (m->h.op_code == WIRE_OP_GET_MORE && len >= 24) {
        memcpy(rec_cursor, p + len - 8, 8);
        enum remap_cursor_state st =
            remap_cursor_get(rm, copy, *rec_cursor, &live);
        if (st != REMAP_CURSOR_LIVE) {
            out->len = start;
            *res = st == REMAP_CURSOR_PENDING ||
                           (st == REMAP_CURSOR_UNKNOWN && rm->unknown_waits)
                       ? REMAP_WAIT
                       : REMAP_NOCURSOR;
            return 0;
        }
        memcpy(p + len - 8, &live, 8);
    } else if (m->h.op_code == WIRE_OP_KILL_CURSORS) {
        /* int32 0, int32 numberOfCursorIDs, int64 ids: the live ids of
         * the live ones go out, the rest are left out (the parser frames
         * legacy bodies only, so a short one has no ids at all) */
        struct rd r =
            rd_init(m->raw + WIRE_HEADER_LEN, m->raw_len - WIRE_HEADER_LEN);
        uint32_t zero;
        int32_t n, k = 0;
        int64_t id;

        if (rd_le32(&r, &zero) && rd_le32s(&r, &n))
            for (int32_t i = 0; i < n && rd_le64s(&r, &id); i++)
                if (remap_cursor_get(rm, copy, id, &live) ==
                    REMAP_CURSOR_LIVE) {
                    remap_cursor_set(rm, copy, id, 0);
                    memcpy(p + 24 + 8 * (size_t)k++, &live, 8);
                }
        if (k == 0) {
            out->len = start;
            *res = REMAP_NOCURSOR;
        } else {
            wr_le32(p + 20, (uint32_t)k);
            out->len = start + 24 + 8 * (size_t)k;
            wr_le32(p, (uint32_t)(24 + 8 * (size_t)k));
        }
    }
    return 0;
}

bool
remap_is_plain(const struct remap *rm, const struct wire_msg *m)
{
    bson_t b;
    bson_iter_t it;
    bool first = true;

    if (m->h.op_code != WIRE_OP_MSG)
        return m->h.op_code != WIRE_OP_GET_MORE &&
               m->h.op_code != WIRE_OP_KILL_CURSORS && !legacy_renamed(rm, m);
    if (m->body == NULL || !bson_init_static(&b, m->body, m->body_len) ||
        !bson_iter_init(&it, &b))
        return false;
    /* the keys rebuild_body rewrites; a switch on the first byte keeps
     * this a few compares per field */
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        switch (k[0]) {
        case 'g':
        case 'k':
        case 'e':
            if (first &&
                (strcmp(k, "getMore") == 0 || strcmp(k, "killCursors") == 0 ||
                 strcmp(k, "endSessions") == 0))
                return false;
            break;
        case 'l':
            if (strcmp(k, "lsid") == 0)
                return false;
            break;
        case 't':
            if (strcmp(k, "txnNumber") == 0)
                return false;
            break;
        case 'r':
            if (strcmp(k, "readConcern") == 0)
                return false;
            break;
        case '$':
            if (strcmp(k, "$clusterTime") == 0)
                return false;
            if (rm->ndb > 0 && strcmp(k, "$db") == 0 &&
                BSON_ITER_HOLDS_UTF8(&it) &&
                db_rename(rm, bson_iter_utf8(&it, NULL)) !=
                    bson_iter_utf8(&it, NULL))
                return false;
            break;
        default:
            break;
        }
        first = false;
    }
    return true;
}

int
remap_plain_copy(const uint8_t *msg, size_t len, int32_t request_id,
                 struct mt_buf *out)
{
    size_t start = out->len;
    uint32_t flags, crc;
    int32_t op;
    uint8_t *p;
    int rc;

    MT_ASSERT(len >= WIRE_HEADER_LEN);
    if ((rc = mt_buf_append(out, msg, len)) < 0)
        return rc;
    p = out->data + start;
    wr_le32(p + 4, (uint32_t)request_id);
    memset(p + 8, 0, 4);
    op = (int32_t)(p[12] | p[13] << 8 | p[14] << 16 | (uint32_t)p[15] << 24);
    if (op == WIRE_OP_MSG && len >= WIRE_HEADER_LEN + 4 + 4) {
        flags = p[16] | p[17] << 8 | p[18] << 16 | (uint32_t)p[19] << 24;
        if (flags & WIRE_MSG_CHECKSUM_PRESENT) {
            crc = wire_crc32c(0, p, len - 4);
            wr_le32(p + len - 4, crc);
        }
    }
    return 0;
}

int
remap_msg(struct remap *rm, uint32_t copy, const struct wire_msg *m,
          int32_t request_id, struct mt_buf *out, enum remap_result *res,
          int64_t *rec_cursor)
{
    bson_t body;
    int rc;

    *res = REMAP_OK;
    *rec_cursor = 0;
    if (m->h.op_code == WIRE_OP_MSG && remap_is_plain(rm, m))
        return remap_plain_copy(m->raw, m->raw_len, request_id, out);
    if (m->h.op_code != WIRE_OP_MSG)
        return remap_legacy(rm, copy, m, request_id, out, res, rec_cursor);
    bson_init(&body);
    rc = rebuild_body(rm, copy, m, &body, res, rec_cursor);
    if (rc == 0 && *res == REMAP_OK)
        rc = wire_encode_msg(out, request_id, 0, m->flags, &body, m->seq,
                             m->nseq);
    bson_destroy(&body);
    return rc;
}

void
remap_set_unknown_waits(struct remap *rm, bool wait)
{
    rm->unknown_waits = wait;
}

void
remap_stats_get(const struct remap *rm, struct remap_stats *st)
{
    *st = rm->st;
}
