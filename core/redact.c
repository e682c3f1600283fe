/*
 * redact.c -- removing SASL payloads and named fields from messages (see
 * redact.h).
 *
 * The message is parsed with wire_msg_parse (full validation: lengths,
 * BSON structure, depth <= WIRE_BSON_DEPTH_MAX) and each document is
 * walked with libbson's iterator.  A document with nothing to remove is
 * reused as it is; one that changes is copied element by element into a
 * new bson_t (bson_append_iter for untouched values, so nothing is
 * re-encoded by hand) and the message is re-encoded with core/wire_enc.
 */
#include "redact.h"

#include <errno.h>
#include <string.h>

#include "mem.h"
#include "rd.h"
#include "wire.h" /* libbson, without its -Wcast-qual noise */

/* Returns a negative code at once (no cleanup needed). */
#define RTRY(expr)                                                             \
    do {                                                                       \
        int rtry_ = (expr);                                                    \
        if (rtry_ < 0)                                                         \
            return rtry_;                                                      \
    } while (0)

/* Names of the enclosing documents of the element being looked at (array
 * indices are not names). */
struct rstack {
    const char *name[WIRE_BSON_DEPTH_MAX + 2];
    size_t n;
};

struct rctx {
    const struct redact_cfg *cfg;
    bool changed;
    int rc; /* first libbson append failure */
};

/* See redact.h. */
int
redact_cfg_add(struct redact_cfg *cfg, const char *path, struct mt_err *err)
{
    struct redact_path *p;
    size_t n = strlen(path);
    char *s;

    if (cfg->npaths == REDACT_FIELDS_MAX)
        return mt_err_set(err, MT_ELIMIT, 0, "at most %d --redact fields",
                          REDACT_FIELDS_MAX);
    if (n == 0 || n > REDACT_PATH_LEN_MAX)
        return mt_err_set(err, MT_EUSAGE, 0,
                          "--redact wants a field name or dotted path of 1 "
                          "to %d bytes",
                          REDACT_PATH_LEN_MAX);
    p = &cfg->path[cfg->npaths];
    memcpy(p->text, path, n + 1);
    p->nparts = 0;
    for (s = p->text;;) {
        char *dot = strchr(s, '.');
        if (dot != NULL)
            *dot = '\0';
        if (*s == '\0' || p->nparts == REDACT_PATH_PARTS_MAX)
            return mt_err_set(err, MT_EUSAGE, 0,
                              "--redact '%s': empty component or more than "
                              "%d components",
                              path, REDACT_PATH_PARTS_MAX);
        p->part[p->nparts++] = s;
        if (dot == NULL)
            break;
        s = dot + 1;
    }
    cfg->npaths++;
    return 0;
}

/* True when st + key ends with one of the configured paths. */
static bool
redact_path_hit(const struct redact_cfg *cfg, const struct rstack *st,
                const char *key)
{
    for (size_t i = 0; i < cfg->npaths; i++) {
        const struct redact_path *p = &cfg->path[i];
        size_t k = p->nparts;
        if (strcmp(p->part[k - 1], key) != 0 || k - 1 > st->n)
            continue;
        size_t j = 1;
        while (j < k && strcmp(p->part[k - 1 - j], st->name[st->n - j]) == 0)
            j++;
        if (j == k)
            return true;
    }
    return false;
}

static bool
redact_is_sasl_cmd(const char *name)
{
    return strcmp(name, "saslStart") == 0 ||
           strcmp(name, "saslContinue") == 0 ||
           strcmp(name, "authenticate") == 0 ||
           strcmp(name, "copydbsaslstart") == 0;
}

/* A document whose top-level `payload` is a SASL payload. */
static bool
redact_sasl_doc(const uint8_t *doc, size_t len)
{
    bson_iter_t it;
    bool first = true;

    if (!bson_iter_init_from_data(&it, doc, len))
        return false;
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (first && redact_is_sasl_cmd(k))
            return true;
        if (strcmp(k, "conversationId") == 0)
            return true;
        first = false;
    }
    return false;
}

static int redact_walk(struct rctx *x, const uint8_t *doc, size_t len,
                       struct rstack *st, bool is_array, bool sasl, bool top,
                       bson_t *dst);

/* Walks the sub-document or array at it (key k of a document, or an
 * element of an array when in_array), into a child of dst if dst. */
static void
redact_walk_child(struct rctx *x, bson_iter_t *it, const char *k,
                  struct rstack *st, bool in_array, bool sasl, bool top,
                  bson_t *dst)
{
    const uint8_t *data;
    uint32_t len;
    bson_t child;
    bool is_arr = BSON_ITER_HOLDS_ARRAY(it);

    if (is_arr)
        bson_iter_array(it, &len, &data);
    else
        bson_iter_document(it, &len, &data);
    if (dst != NULL &&
        !(is_arr ? bson_append_array_begin(dst, k, -1, &child)
                 : bson_append_document_begin(dst, k, -1, &child))) {
        x->rc = MT_ETOOBIG;
        return;
    }
    if (!in_array)
        st->name[st->n++] = k;
    (void)redact_walk(x, data, len, st, is_arr, sasl, top,
                      dst != NULL ? &child : NULL);
    if (!in_array)
        st->n--;
    if (dst != NULL && !(is_arr ? bson_append_array_end(dst, &child)
                                : bson_append_document_end(dst, &child)))
        x->rc = MT_ETOOBIG;
}

/* Appends the replacement of the element k; sasl: a SASL payload. */
static void
redact_put_mark(struct rctx *x, const char *k, bool sasl, bson_t *dst)
{
    bool ok;

    x->changed = true;
    if (dst == NULL)
        return;
    if (sasl)
        ok = bson_append_binary(dst, k, -1, BSON_SUBTYPE_BINARY,
                                (const uint8_t *)REDACT_MARK,
                                sizeof(REDACT_MARK) - 1);
    else
        ok = bson_append_utf8(dst, k, -1, REDACT_MARK, -1);
    if (!ok)
        x->rc = MT_ETOOBIG;
}

/*
 * Walks doc (an array when is_array: its keys are indices, not names),
 * copying it into dst with the redactions when dst is not NULL; with dst
 * NULL only x->changed is computed.  sasl: doc's top-level `payload` is a
 * SASL payload; top: doc is a message's command document, whose `$query`
 * wrapper and `speculativeAuthenticate` are looked into.
 */
static int
redact_walk(struct rctx *x, const uint8_t *doc, size_t len, struct rstack *st,
            bool is_array, bool sasl, bool top, bson_t *dst)
{
    bson_iter_t it;

    if (!bson_iter_init_from_data(&it, doc, len))
        return MT_EBSON;
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        bool sub = BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it);
        if (!is_array && sasl && strcmp(k, "payload") == 0) {
            redact_put_mark(x, k, true, dst);
        } else if (!is_array && redact_path_hit(x->cfg, st, k)) {
            redact_put_mark(x, k, false, dst);
        } else if (sub && st->n < WIRE_BSON_DEPTH_MAX) {
            bool child_sasl = false;
            if (top && BSON_ITER_HOLDS_DOCUMENT(&it) &&
                (strcmp(k, "speculativeAuthenticate") == 0 ||
                 strcmp(k, "$query") == 0)) {
                const uint8_t *d;
                uint32_t l;
                bson_iter_document(&it, &l, &d);
                child_sasl = k[0] != '$' || redact_sasl_doc(d, l);
            }
            redact_walk_child(x, &it, k, st, is_array, child_sasl,
                              top && strcmp(k, "$query") == 0, dst);
        } else if (dst != NULL && !bson_append_iter(dst, k, -1, &it)) {
            x->rc = MT_ETOOBIG;
        }
    }
    return 0;
}

/*
 * One document of a message: *changed when something goes; then *out is a
 * new bson_t (caller destroys) with the redactions.  parent: the kind-1
 * identifier the document sits under, or NULL.
 */
static int
redact_doc(const struct redact_cfg *cfg, const uint8_t *doc, size_t len,
           const char *parent, bool top, bool *changed, bson_t *out)
{
    struct rctx x = {cfg, false, 0};
    struct rstack st = {{0}, 0};
    bool sasl = top && redact_sasl_doc(doc, len);

    if (parent != NULL)
        st.name[st.n++] = parent;
    *changed = false;
    RTRY(redact_walk(&x, doc, len, &st, false, sasl, top, NULL));
    if (!x.changed)
        return 0;
    bson_init(out);
    x.changed = false;
    (void)redact_walk(&x, doc, len, &st, false, sasl, top, out);
    if (x.rc < 0) {
        bson_destroy(out);
        return x.rc;
    }
    *changed = true;
    return 0;
}

/* Documents back to back (kind-1 section, OP_REPLY), each redacted or
 * copied, appended to dst; *count documents, *any when one changed.  top:
 * each is a command or reply document (see redact_walk). */
static int
redact_docs(const struct redact_cfg *cfg, const uint8_t *p, size_t n,
            const char *parent, bool top, struct mt_buf *dst, size_t *count,
            bool *any)
{
    struct rd r = rd_init(p, n);

    *count = 0;
    while (r.left > 0) {
        struct rd peek = r;
        int32_t dl;
        bool ch;
        bson_t b;
        int rc;
        if (!rd_le32s(&peek, &dl) || dl < 5 || (size_t)dl > r.left)
            return MT_EBSON;
        RTRY(redact_doc(cfg, r.p, (size_t)dl, parent, top, &ch, &b));
        if (ch) {
            rc = mt_buf_append(dst, bson_get_data(&b), b.len);
            bson_destroy(&b);
            *any = true;
        } else {
            rc = mt_buf_append(dst, r.p, (size_t)dl);
        }
        if (rc < 0)
            return rc;
        (*count)++;
        (void)rd_skip(&r, (size_t)dl);
    }
    return 0;
}

/* The body document: redacted copy in *nb (changed) or a view. */
static int
redact_body(const struct redact_cfg *cfg, const struct wire_msg *wm, bool *any,
            bson_t *nb)
{
    bool ch = false;

    if (wm->body == NULL) {
        bson_init(nb);
        return 0;
    }
    RTRY(redact_doc(cfg, wm->body, wm->body_len, NULL, true, &ch, nb));
    if (!ch && !bson_init_static(nb, wm->body, wm->body_len))
        return MT_EBSON;
    *any = *any || ch;
    return 0;
}

static int
redact_op_msg(const struct redact_cfg *cfg, const struct wire_msg *wm,
              struct mt_buf *out, struct mt_buf *tmp)
{
    struct wire_seq seq[WIRE_SEQ_MAX];
    size_t off[WIRE_SEQ_MAX + 1], cnt;
    bool any = false;
    bson_t body;
    int rc;

    RTRY(redact_body(cfg, wm, &any, &body));
    for (size_t i = 0; i < wm->nseq; i++) {
        off[i] = tmp->len;
        rc = redact_docs(cfg, wm->seq[i].docs, wm->seq[i].docs_len,
                         wm->seq[i].identifier, false, tmp, &cnt, &any);
        if (rc < 0)
            goto out;
    }
    off[wm->nseq] = tmp->len;
    rc = 0;
    if (!any)
        goto out;
    for (size_t i = 0; i < wm->nseq; i++) {
        seq[i].identifier = wm->seq[i].identifier;
        /* an empty sequence: tmp may have no buffer at all */
        seq[i].docs =
            off[i + 1] > off[i] ? tmp->data + off[i] : (const uint8_t *)"";
        seq[i].docs_len = off[i + 1] - off[i];
    }
    rc = wire_encode_msg(out, wm->h.request_id, wm->h.response_to, wm->flags,
                         &body, seq, wm->nseq);
    if (rc == 0)
        rc = 1;
out:
    bson_destroy(&body);
    return rc;
}

static int
redact_op_reply(const struct redact_cfg *cfg, const struct wire_msg *wm,
                struct mt_buf *out, struct mt_buf *tmp)
{
    bool any = false;
    size_t cnt = 0;
    void *mem = NULL;
    bson_t *docs;
    const bson_t **ptrs = NULL;
    struct rd r;
    int rc;

    /* each OP_REPLY document is a command reply (legacy SASL steps too) */
    RTRY(redact_docs(cfg, wm->docs, wm->docs_len, NULL, true, tmp, &cnt, &any));
    if (!any)
        return 0;
    /* bson_t wants 128-byte alignment: over-allocate and align */
    mem = mt_malloc((cnt + 1) * sizeof(bson_t) + BSON_ALIGNOF(bson_t));
    ptrs = mt_calloc(cnt ? cnt : 1, sizeof(*ptrs));
    rc = -ENOMEM;
    if (mem == NULL || ptrs == NULL)
        goto out;
    docs = (bson_t *)(((uintptr_t)mem + BSON_ALIGNOF(bson_t) - 1) &
                      ~(uintptr_t)(BSON_ALIGNOF(bson_t) - 1));
    r = rd_init(tmp->data, tmp->len);
    for (size_t i = 0; i < cnt; i++) {
        struct rd peek = r;
        int32_t dl = 0;
        (void)rd_le32s(&peek, &dl); /* lengths checked by redact_docs */
        rc = MT_EBSON;
        if (!bson_init_static(&docs[i], r.p, (size_t)dl))
            goto out;
        ptrs[i] = &docs[i];
        (void)rd_skip(&r, (size_t)dl);
    }
    rc = wire_encode_reply(out, wm->h.request_id, wm->h.response_to,
                           wm->response_flags, wm->cursor_id, wm->starting_from,
                           (const bson_t *const *)ptrs, cnt);
    if (rc == 0)
        rc = 1;
out:
    mt_free(mem);
    mt_free(ptrs);
    return rc;
}

static int
redact_op_query(const struct redact_cfg *cfg, const struct wire_msg *wm,
                struct mt_buf *out)
{
    bool any = false;
    bson_t q;
    int rc;

    RTRY(redact_body(cfg, wm, &any, &q));
    rc = 0;
    if (any) {
        rc = wire_encode_query(out, wm->h.request_id, wm->query_flags,
                               wm->full_collection, wm->number_to_skip,
                               wm->number_to_return, &q);
        if (rc == 0)
            rc = 1;
    }
    bson_destroy(&q);
    return rc;
}

/* See redact.h. */
int
redact_msg(const struct redact_cfg *cfg, const uint8_t *msg, size_t len,
           struct mt_buf *out, struct mt_err *err)
{
    struct wire_msg wm;
    struct mt_buf tmp;
    size_t used = 0;
    int rc;

    rc = wire_msg_parse(msg, len, &wm, &used, err);
    if (rc == MT_PARTIAL || (rc == MT_OK && used != len))
        return mt_err_set(err, MT_EPROTO, 0,
                          "not exactly one message (%zu bytes for %zu)", len,
                          used);
    if (rc != MT_OK)
        return rc;
    mt_buf_init(&tmp, WIRE_MSG_LEN_MAX);
    mt_buf_reset(out);
    switch (wm.h.op_code) {
    case WIRE_OP_MSG:
        rc = redact_op_msg(cfg, &wm, out, &tmp);
        break;
    case WIRE_OP_REPLY:
        rc = redact_op_reply(cfg, &wm, out, &tmp);
        break;
    case WIRE_OP_QUERY:
        rc = redact_op_query(cfg, &wm, out);
        break;
    default:
        rc = 0; /* OP_COMPRESSED: the caller redacts the plain form */
        break;
    }
    mt_buf_free(&tmp);
    if (rc < 0)
        mt_err_set(err, rc, 0, "cannot rebuild the redacted message: %s",
                   mt_strerror(rc));
    return rc;
}

/* Keeps only the header of m (its body cannot be checked). */
static void
redact_keep_header(struct trace_msg *m)
{
    if (m->wire_len > WIRE_HEADER_LEN)
        m->wire_len = WIRE_HEADER_LEN;
    m->plain = NULL;
    m->plain_len = 0;
    m->flags |= TRACE_MSG_REDACTED | TRACE_MSG_PARTIAL;
}

static bool
redact_is_compressed(const struct trace_msg *m)
{
    struct rd r = rd_init(m->wire, m->wire_len);
    int32_t op = 0;

    return rd_skip(&r, 12) && rd_le32s(&r, &op) && op == WIRE_OP_COMPRESSED;
}

/* See redact.h. */
int
redact_trace_msg(const struct redact_cfg *cfg, struct trace_msg *m,
                 struct mt_buf *out)
{
    struct mt_err err = {0};
    bool comp;
    int rc;

    if (m->wire_len < WIRE_HEADER_LEN || (m->flags & TRACE_MSG_PARTIAL)) {
        redact_keep_header(m);
        return 1;
    }
    comp = redact_is_compressed(m);
    if (comp && m->plain == NULL) {
        redact_keep_header(m);
        return 1;
    }
    rc = comp ? redact_msg(cfg, m->plain, m->plain_len, out, &err)
              : redact_msg(cfg, m->wire, m->wire_len, out, &err);
    if (rc == 0)
        return 0;
    if (rc < 0) {
        redact_keep_header(m);
        m->flags |= TRACE_MSG_MALFORMED;
        return 1;
    }
    m->wire = out->data;
    m->wire_len = (uint32_t)out->len;
    m->plain = NULL;
    m->plain_len = 0;
    m->flags |= TRACE_MSG_REDACTED | (comp ? TRACE_MSG_DECOMPRESSED : 0);
    return 1;
}
