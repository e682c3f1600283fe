/*
 * cursor.h -- cursors a replay serves, one per client cursor.
 *
 * A find or aggregate whose recorded reply opened a cursor gets a fresh,
 * random, non-zero cursor id; each getMore on that id gets the next
 * recorded batch of the recorded cursor; the last recorded batch (cursor id
 * 0) closes it; killCursors removes it.  Cursor ids are server-wide (a
 * driver may send getMore on another pooled connection, which may belong to
 * another loop thread), so the table is shared and guarded by a mutex;
 * cursor operations are rare next to plain commands.
 */
#ifndef MT_REPLAY_CURSOR_H
#define MT_REPLAY_CURSOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/wire.h" /* libbson, included the way core/ does */

#include "delay.h"
#include "index.h"

#define CURSOR_MAX_DEFAULT (1u << 20)

struct cursor_entry {
    int64_t id;
    uint32_t ex;  /* the exchange that opened the recorded cursor */
    uint32_t pos; /* next batch: index into ex's more[] */
    struct cursor_entry *chain; /* owned by the table */
};

struct cursor_table {
    pthread_mutex_t mu;
    struct cursor_entry **b; /* owned */
    size_t nb;
    size_t n, max;
    struct mt_rng rng; /* cursor ids; guarded by mu */
    uint64_t opened, exhausted, killed;
};

/* 0 or -ENOMEM.  max bounds the open cursors (MT_ELIMIT beyond it). */
int cursor_table_init(struct cursor_table *t, size_t max, uint64_t seed);
void cursor_table_free(struct cursor_table *t);

/* A new client cursor continuing exchange ex; its id in *id. 0, MT_ELIMIT
 * or -ENOMEM. */
int cursor_open(struct cursor_table *t, uint32_t ex, int64_t *id);

/*
 * The next recorded batch of client cursor id: *batch is a getMore
 * exchange of idx; *last is true when it is the last one (the cursor is
 * then closed and its reply carries id 0).  MT_ENOMATCH: no such cursor,
 * or the recording ended before the cursor did (the cursor is closed).
 */
int cursor_next(struct cursor_table *t, const struct index *idx, int64_t id,
                const struct index_exchange **batch, bool *last);

/* Closes client cursor id; false if it was not open. */
bool cursor_kill(struct cursor_table *t, int64_t id);

/* Open cursors now. */
size_t cursor_count(struct cursor_table *t);

/*
 * Copies reply body (a BSON document with a "cursor" sub-document) into
 * out (initialised and empty) with cursor.id replaced by id as an Int64:
 * the bytes as recorded but for the id's eight.  0, or MT_EBSON when the
 * top level or a cursor document cannot be walked to its end (a reply
 * that is not BSON is refused, never repaired).  Walks the top level and
 * the cursor document only.
 */
int cursor_rewrite_reply(const uint8_t *body, size_t len, int64_t id,
                         bson_t *out);

#endif
