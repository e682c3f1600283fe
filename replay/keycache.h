/*
 * keycache.h -- a per-loop fast path in front of request keys.
 *
 * Building a key (match.c) expands values into text and sorts fields; for
 * a benchmark that sends the same command 100 000 times that is most of
 * the per-request work.  The cache keys on the raw bytes that determine
 * the key instead: the database name, then every top-level element that is
 * not ignored, in wire order, then the kind-1 sections.  Equal raw bytes
 * always give the same key, so a hit can skip the key and go straight to
 * the recorded group; the bytes are compared in full, never just hashed.
 * Direct-mapped, KEYCACHE_SLOTS entries of at most KEYCACHE_RAW_MAX bytes;
 * misses and requests with longer raw bytes take the normal path.
 */
#ifndef MT_REPLAY_KEYCACHE_H
#define MT_REPLAY_KEYCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "index.h"
#include "match.h"

#define KEYCACHE_SLOTS 1024
#define KEYCACHE_RAW_MAX 2048

struct keycache_slot {
    uint64_t hash;
    uint32_t len;
    uint8_t *raw;          /* owned, len bytes; NULL when empty */
    struct index_group *g; /* borrowed from the index */
};

struct keycache {
    struct keycache_slot *slots; /* owned, KEYCACHE_SLOTS */
    struct mt_buf raw;           /* scratch: the current request's raw bytes */
    uint64_t hash;               /* of raw, valid after keycache_find */
    uint64_t hits, misses;
};

/* 0 or -ENOMEM. */
int keycache_init(struct keycache *kc);
void keycache_free(struct keycache *kc);

/*
 * The group for req if its raw bytes are cached, else NULL (then
 * keycache_put() may store the group the slow path found).  Cost: one
 * top-level walk, one copy of the kept bytes, one hash, one memcmp.
 */
struct index_group *keycache_find(struct keycache *kc,
                                  const struct match_rules *r,
                                  const struct match_req *req);

/* Remembers g for the raw bytes of the last keycache_find (if it fit). */
void keycache_put(struct keycache *kc, struct index_group *g);

#endif
