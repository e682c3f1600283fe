/*
 * keycache.c -- raw-bytes fast path in front of request keys (see
 * keycache.h).
 */
#include "keycache.h"

#include <errno.h>
#include <string.h>

#include "core/mem.h"
#include "matchkey.h"

int
keycache_init(struct keycache *kc)
{
    memset(kc, 0, sizeof(*kc));
    kc->slots = mt_calloc(KEYCACHE_SLOTS, sizeof(*kc->slots));
    if (kc->slots == NULL)
        return -ENOMEM;
    mt_buf_init(&kc->raw, KEYCACHE_RAW_MAX);
    return 0;
}

void
keycache_free(struct keycache *kc)
{
    if (kc->slots != NULL)
        for (size_t i = 0; i < KEYCACHE_SLOTS; i++)
            mt_free(kc->slots[i].raw);
    mt_free(kc->slots);
    mt_buf_free(&kc->raw);
    memset(kc, 0, sizeof(*kc));
}

/* The raw bytes that determine req's key; false if they do not fit or the
 * document is unusable. */
static bool
raw_bytes(struct keycache *kc, const struct match_rules *r,
          const struct match_req *req)
{
    bson_t b;
    bson_iter_t it;
    uint32_t start = 0, n = 0;
    bool keep = false, ok;

    mt_buf_reset(&kc->raw);
    if (req->legacy_query)
        return false; /* its key is made of more than the query's bytes */
    ok = mt_buf_append(&kc->raw, req->db, strlen(req->db) + 1) == 0;
    if (!ok || !bson_init_static(&b, req->cmd, req->cmd_len) ||
        !bson_iter_init(&it, &b))
        return false;
    /* each element runs from its offset to the next one's */
    while (ok && bson_iter_next(&it)) {
        uint32_t off = bson_iter_offset(&it);
        if (keep)
            ok = mt_buf_append(&kc->raw, req->cmd + start, off - start) == 0;
        keep = n++ == 0 || !match_rules_ignored_n(r, bson_iter_key(&it),
                                                  bson_iter_key_len(&it));
        start = off;
    }
    if (ok && keep)
        ok = mt_buf_append(&kc->raw, req->cmd + start,
                           req->cmd_len - 1 - start) == 0;
    for (size_t i = 0; ok && i < req->nseq; i++)
        ok = mt_buf_append(&kc->raw, req->seq[i].identifier,
                           strlen(req->seq[i].identifier) + 1) == 0 &&
             mt_buf_append(&kc->raw, req->seq[i].docs, req->seq[i].docs_len) ==
                 0;
    return ok && n > 0;
}

struct index_group *
keycache_find(struct keycache *kc, const struct match_rules *r,
              const struct match_req *req)
{
    struct keycache_slot *s;

    kc->hash = 0;
    if (!raw_bytes(kc, r, req))
        return NULL;
    kc->hash = match_key_hash(kc->raw.data, kc->raw.len) | 1;
    s = &kc->slots[kc->hash & (KEYCACHE_SLOTS - 1)];
    if (s->raw != NULL && s->hash == kc->hash && s->len == kc->raw.len &&
        memcmp(s->raw, kc->raw.data, s->len) == 0) {
        kc->hits++;
        return s->g;
    }
    kc->misses++;
    return NULL;
}

void
keycache_put(struct keycache *kc, struct index_group *g)
{
    struct keycache_slot *s;
    uint8_t *p;

    if (kc->hash == 0 || g == NULL)
        return;
    s = &kc->slots[kc->hash & (KEYCACHE_SLOTS - 1)];
    p = mt_realloc(s->raw, kc->raw.len ? kc->raw.len : 1);
    if (p == NULL)
        return;
    memcpy(p, kc->raw.data, kc->raw.len);
    s->raw = p;
    s->len = (uint32_t)kc->raw.len;
    s->hash = kc->hash;
    s->g = g;
}
