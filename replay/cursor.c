/*
 * cursor.c -- per-client cursors (see cursor.h).
 */
#include "cursor.h"

#include <errno.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"

int
cursor_table_init(struct cursor_table *t, size_t max, uint64_t seed)
{
    memset(t, 0, sizeof(*t));
    t->nb = 1024;
    t->b = mt_calloc(t->nb, sizeof(*t->b));
    if (t->b == NULL)
        return -ENOMEM;
    t->max = max;
    mt_rng_seed(&t->rng, seed ^ 0x6375727330ull);
    pthread_mutex_init(&t->mu, NULL);
    return 0;
}

void
cursor_table_free(struct cursor_table *t)
{
    if (t->b == NULL)
        return;
    for (size_t i = 0; i < t->nb; i++) {
        struct cursor_entry *e = t->b[i], *n;
        for (; e != NULL; e = n) {
            n = e->chain;
            mt_free(e);
        }
    }
    mt_free(t->b);
    t->b = NULL;
    pthread_mutex_destroy(&t->mu);
}

static size_t
slot(const struct cursor_table *t, int64_t id)
{
    uint64_t h = (uint64_t)id * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (t->nb - 1);
}

static struct cursor_entry **
lookup(struct cursor_table *t, int64_t id)
{
    struct cursor_entry **pp = &t->b[slot(t, id)];

    while (*pp != NULL && (*pp)->id != id)
        pp = &(*pp)->chain;
    return pp;
}

static void
grow_table(struct cursor_table *t)
{
    size_t nb = t->nb * 2;
    struct cursor_entry **b = mt_calloc(nb, sizeof(*b));
    struct cursor_entry **old = t->b;
    size_t onb = t->nb;

    if (b == NULL)
        return; /* keep the longer chains */
    t->b = b;
    t->nb = nb;
    for (size_t i = 0; i < onb; i++) {
        struct cursor_entry *e = old[i], *n;
        for (; e != NULL; e = n) {
            n = e->chain;
            e->chain = b[slot(t, e->id)];
            b[slot(t, e->id)] = e;
        }
    }
    mt_free(old);
}

int
cursor_open(struct cursor_table *t, uint32_t ex, int64_t *id)
{
    struct cursor_entry *e;
    int rc = 0;

    pthread_mutex_lock(&t->mu);
    if (t->n >= t->max) {
        rc = MT_ELIMIT;
        goto out;
    }
    e = mt_calloc(1, sizeof(*e));
    if (e == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    do { /* positive 63-bit ids, never 0, never in use */
        e->id = (int64_t)(mt_rng_next(&t->rng) >> 1);
    } while (e->id == 0 || *lookup(t, e->id) != NULL);
    e->ex = ex;
    if (t->n + 1 > t->nb)
        grow_table(t);
    e->chain = t->b[slot(t, e->id)];
    t->b[slot(t, e->id)] = e;
    t->n++;
    t->opened++;
    *id = e->id;
out:
    pthread_mutex_unlock(&t->mu);
    return rc;
}

static void
unlink_entry(struct cursor_table *t, struct cursor_entry **pp)
{
    struct cursor_entry *e = *pp;

    *pp = e->chain;
    mt_free(e);
    t->n--;
}

int
cursor_next(struct cursor_table *t, const struct index *idx, int64_t id,
            const struct index_exchange **batch, bool *last)
{
    struct cursor_entry **pp;
    const struct index_exchange *origin;
    int rc = 0;

    pthread_mutex_lock(&t->mu);
    pp = lookup(t, id);
    if (*pp == NULL) {
        rc = MT_ENOMATCH;
        goto out;
    }
    origin = &idx->ex[(*pp)->ex];
    if ((*pp)->pos >= origin->nmore) {
        unlink_entry(t, pp);
        t->exhausted++;
        rc = MT_ENOMATCH;
        goto out;
    }
    *batch = &idx->ex[origin->more[(*pp)->pos++]];
    *last = (*batch)->cursor_id == 0;
    if (*last) {
        unlink_entry(t, pp);
        t->exhausted++;
    }
out:
    pthread_mutex_unlock(&t->mu);
    return rc;
}

bool
cursor_kill(struct cursor_table *t, int64_t id)
{
    struct cursor_entry **pp;
    bool found;

    pthread_mutex_lock(&t->mu);
    pp = lookup(t, id);
    found = *pp != NULL;
    if (found) {
        unlink_entry(t, pp);
        t->killed++;
    }
    pthread_mutex_unlock(&t->mu);
    return found;
}

size_t
cursor_count(struct cursor_table *t)
{
    size_t n;

    pthread_mutex_lock(&t->mu);
    n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/*
 * Whether a finished walk of document d (len bytes) ended at its
 * terminator, a zero last byte.  libbson's iterator stops, without telling
 * an error from the end, at the first element it cannot read (off left on
 * it, the last byte too when it is a type with no room for its key) and at
 * the first zero type byte, even one before the last byte.  bson_validate
 * lets such a sub-document through: its visitor skips a sub-document it
 * cannot open.
 */
static bool
walked_to_end(const bson_iter_t *it, const uint8_t *d, uint32_t len)
{
    return it->err_off == 0 && len >= 5 && it->off + 1 == len &&
           d[len - 1] == 0;
}

static bool
rewrite_cursor_doc(bson_iter_t *it, int64_t id, bson_t *out)
{
    bson_iter_t c;
    bson_t sub;
    bool ok = true;
    const uint8_t *d;
    uint32_t dlen;

    bson_iter_document(it, &dlen, &d);
    if (!bson_iter_recurse(it, &c))
        return false;
    bson_append_document_begin(out, "cursor", 6, &sub);
    while (ok && bson_iter_next(&c)) {
        if (strcmp(bson_iter_key(&c), "id") == 0)
            ok = BSON_APPEND_INT64(&sub, "id", id);
        else
            ok = wire_bson_append_iter(&sub, NULL, 0, &c);
    }
    /* an element that cannot be read ends the walk early: the rest of the
     * document would be dropped, not copied */
    return bson_append_document_end(out, &sub) && ok &&
           walked_to_end(&c, d, dlen);
}

/*
 * Every Int64 cursor.id of doc overwritten in place with id: 1; 0 when a
 * cursor.id holds another type (the caller then rebuilds the reply, which
 * makes it an Int64); MT_EBSON when doc or a cursor document cannot be
 * walked to its end.
 */
static int
overwrite_cursor_ids(bson_t *doc, int64_t id)
{
    bson_iter_t it, c;
    const uint8_t *d;
    uint32_t dlen;

    if (!bson_iter_init(&it, doc))
        return MT_EBSON;
    while (bson_iter_next(&it)) {
        if (strcmp(bson_iter_key(&it), "cursor") != 0 ||
            !BSON_ITER_HOLDS_DOCUMENT(&it))
            continue;
        bson_iter_document(&it, &dlen, &d);
        if (!bson_iter_recurse(&it, &c))
            return MT_EBSON;
        while (bson_iter_next(&c)) {
            if (strcmp(bson_iter_key(&c), "id") != 0)
                continue;
            if (!BSON_ITER_HOLDS_INT64(&c))
                return 0;
            bson_iter_overwrite_int64(&c, id);
        }
        if (!walked_to_end(&c, d, dlen))
            return MT_EBSON;
    }
    return walked_to_end(&it, bson_get_data(doc), doc->len) ? 1 : MT_EBSON;
}

/*
 * The reply copied as it is (one memcpy: no element is re-appended, so a
 * recorded array whose keys are not "0", "1", ... reaches the client as
 * recorded, and libbson has nothing to warn about) and its cursor.id
 * overwritten; element by element only when an id must change type.
 */
int
cursor_rewrite_reply(const uint8_t *body, size_t len, int64_t id, bson_t *out)
{
    bson_t b;
    bson_iter_t it;
    int rc;

    if (!bson_init_static(&b, body, len) || !bson_iter_init(&it, &b))
        return MT_EBSON;
    if (bson_concat(out, &b)) {
        rc = overwrite_cursor_ids(out, id);
        if (rc != 0)
            return rc < 0 ? rc : 0;
        bson_reinit(out);
    }
    while (bson_iter_next(&it)) {
        bool ok;
        if (strcmp(bson_iter_key(&it), "cursor") == 0 &&
            BSON_ITER_HOLDS_DOCUMENT(&it))
            ok = rewrite_cursor_doc(&it, id, out);
        else
            ok = wire_bson_append_iter(out, NULL, 0, &it);
        if (!ok)
            return MT_EBSON;
    }
    return walked_to_end(&it, body, b.len) ? 0 : MT_EBSON;
}
