/*
 * index.h -- the index of recorded exchanges a replay answers from.
 *
 * The index maps request keys (match.h) to the recorded exchanges in
 * recorded order, and remembers the getMore batches that continue each
 * recorded cursor and the first recorded hello reply.  It is read-only once
 * loaded, except for each group's atomic round-robin counter, so every loop
 * thread may share it.
 */
#ifndef MT_REPLAY_INDEX_H
#define MT_REPLAY_INDEX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/trace.h"
#include "match.h"

#define INDEX_EXCHANGES_MAX (16u << 20)

/* One recorded request and its reply. */
struct index_exchange {
    uint8_t *req; /* owned: the request message (decompressed) */
    uint32_t req_len;
    uint8_t *reply; /* owned: the reply message (decompressed) */
    uint32_t reply_len;
    uint64_t latency_ns;      /* reply last byte - request last byte */
    int64_t cursor_id;        /* cursor.id of the recorded reply, 0 if none */
    struct match_shape shape; /* the request's cursor shape (match.h) */
    int32_t first_n; /* documents of the reply's firstBatch, -1: none */
    uint32_t *more;  /* owned: getMore exchanges continuing the cursor */
    uint32_t nmore, more_cap;
};

/* The exchanges of a group whose requests had one cursor shape. */
struct index_shape_class {
    struct match_shape shape;
    uint32_t *ex; /* owned: exchange indices in recorded order */
    uint32_t nex, ex_cap;
    _Atomic uint64_t next; /* round-robin position */
};

#define INDEX_SHAPE_CLASSES_MAX 64 /* per group; more shapes: scanned */

struct index_group {
    char *key; /* owned, NUL-terminated */
    size_t key_len;
    uint64_t hash;
    uint32_t *ex; /* owned: exchange indices in recorded order */
    uint32_t nex, ex_cap;
    _Atomic uint64_t next; /* round-robin position */
    /* owned, when the exchanges have more than one cursor shape: one
     * class per shape, in order of first appearance */
    struct index_shape_class *cls;
    uint32_t ncls, cls_cap;
    bool overflow; /* a shape beyond INDEX_SHAPE_CLASSES_MAX has no class */
    struct index_group *chain; /* borrowed: next in the hash bucket */
};

struct index_load_stats {
    uint64_t records, requests, replies, exchanges, groups;
    uint64_t hellos, getmores, unpaired, skipped, malformed;
    uint64_t auth; /* recorded authentication exchanges, not indexed */
};

/* A recorded cursor still open at this point of the loading. */
struct index_live {
    int64_t id;
    uint32_t ex; /* the exchange that opened it */
};

struct index {
    struct match_rules rules;
    struct index_exchange *ex; /* owned */
    size_t nex, ex_cap;
    struct index_group **groups; /* owned: in order of first appearance */
    size_t ngroups, groups_cap;
    struct index_group **buckets; /* owned table; groups owned by groups[] */
    size_t nbuckets;
    uint8_t *hello; /* owned: body of the first recorded hello reply */
    size_t hello_len;
    bool hello_from_msg;     /* hello came from an OP_MSG reply */
    unsigned compressors;    /* every compressor a recorded hello reply
                                agreed to (handshake_compressors) */
    struct index_live *live; /* owned: recorded cursors open while loading */
    size_t nlive, live_cap;
    struct index_load_stats st;
};

void index_init(struct index *idx, const struct match_rules *r);
void index_free(struct index *idx);

/*
 * Loads every complete request/reply exchange from a trace reader.  A
 * truncated trace keeps what was read before the damage and returns 0 with
 * a warning logged; err is filled only on failure to use the trace at all.
 * Returns 0 or a negative code.
 */
int index_load(struct index *idx, struct trace_reader *tr, struct mt_err *err);

/*
 * Adds one exchange from two complete messages (used by the loader and
 * by tests; both are parsed and copied).  A hello reply becomes the hello
 * template (the first one; an OP_MSG one replaces an OP_QUERY one); a
 * getMore continues the recorded cursor its request names; killCursors and
 * authentication commands (saslStart, saslContinue, authenticate,
 * getnonce: their nonces never match again; replay runs its own, auth.h)
 * are not indexed; anything else goes to the group of its key.  Returns 0, or
 * a negative code with err filled (the exchange is then skipped).
 */
int index_add(struct index *idx, const uint8_t *req, size_t req_len,
              const uint8_t *reply, size_t reply_len, uint64_t latency_ns,
              struct mt_err *err);

/* The group with this key, or NULL.  Thread-safe (the group is returned
 * mutable only for its atomic round-robin counter). */
struct index_group *index_find(const struct index *idx, const char *key,
                               size_t len);

/* The next exchange of g in recorded order, cycling.  Thread-safe. */
const struct index_exchange *index_group_pick(const struct index *idx,
                                              struct index_group *g);

/*
 * The exchange of g that answers a request of cursor shape q: the next
 * in recorded order of those of q's shape (cycling, one counter per
 * shape), else the next of the first shape with one that
 * match_shape_serves() accepts; NULL when none does.  Thread-safe.  Cost:
 * O(1) in a group of one shape when q has it; O(shapes of g) to find q's
 * shape; until the first exchange that answers otherwise (O(exchanges of
 * g) at most, a miss).
 */
const struct index_exchange *
index_group_pick_shape(const struct index *idx, struct index_group *g,
                       const struct match_shape *q);

/* The command of g's key (the field after the database) is name. */
bool index_group_command_is(const struct index_group *g, const char *name);

/* The recorded group closest to key (most equal fields, same command
 * preferred), or NULL if the index is empty. */
const struct index_group *index_closest(const struct index *idx,
                                        const char *key, size_t len);

/*
 * The errmsg of a miss: key (len bytes) of a cmd request is not in the
 * index; names the closest recorded key and how it differs (or that the
 * trace has no cmd request).  msg: n bytes, NUL-terminated.  Cost: one
 * key diff per group.
 */
void index_miss_msg(const struct index *idx, const char *key, size_t len,
                    const char *cmd, char *msg, size_t n);

/* The errmsg of a request of shape q whose key is g's but that none of
 * g's exchanges answers (index_group_pick_shape): names both shapes. */
void index_shape_miss_msg(const struct index *idx, const struct index_group *g,
                          const struct match_shape *q, char *msg, size_t n);

#endif
