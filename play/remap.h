/*
 * remap.h -- what a recorded request needs before a live server takes it:
 * cursor ids from the live replies, fresh logical sessions, the live
 * cluster time, database renames (docs/play.md "Remapping").
 *
 * Tables are keyed by the copy of the workload (--repeat and
 * --connections-per-recorded run independent copies), so two copies never
 * share a live cursor or a session.  Memory: one entry per open cursor and
 * per session in use.
 */
#ifndef MT_PLAY_REMAP_H
#define MT_PLAY_REMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/wire.h"

#define REMAP_DB_MAX 8

enum remap_cursor_state {
    REMAP_CURSOR_PENDING, /* the request that opens it awaits its reply */
    REMAP_CURSOR_LIVE,    /* the live server gave live_id */
    REMAP_CURSOR_DEAD,    /* the live reply had no cursor, or it ended */
    REMAP_CURSOR_UNKNOWN, /* no request opened it (so far) */
};

struct remap;

/* Database renames: from[i] -> to[i] (strings borrowed for the remap's
 * life).  NULL on -ENOMEM. */
struct remap *remap_new(const char *const *db_from, const char *const *db_to,
                        size_t ndb);
void remap_free(struct remap *rm); /* NULL is a no-op */

/* Recorded cursor rec_id of copy opens (state PENDING).  0 or -ENOMEM. */
int remap_cursor_open(struct remap *rm, uint32_t copy, int64_t rec_id);
/* The live outcome: live_id 0 makes it DEAD.  Unknown ids are ignored. */
void remap_cursor_set(struct remap *rm, uint32_t copy, int64_t rec_id,
                      int64_t live_id);
/* State of a recorded cursor. */
enum remap_cursor_state remap_cursor_get(const struct remap *rm, uint32_t copy,
                                         int64_t rec_id, int64_t *live_id);
/*
 * What a getMore of a cursor no request opened yet gets: REMAP_WAIT while
 * wait is true (the caller sets it while the trace may still hold the
 * reply that opens it: a capture with several loops may write a
 * connection's getMore before another connection's reply that opened its
 * cursor), else REMAP_NOCURSOR.  Default false.
 */
void remap_set_unknown_waits(struct remap *rm, bool wait);

/* Forgets the cursors of copy (its run ended). */
void remap_forget_copy(struct remap *rm, uint32_t copy);

/* The live server's latest $clusterTime document and operationTime, from
 * one of its replies (body borrowed, copied). */
void remap_note_reply(struct remap *rm, const uint8_t *body, size_t len);

/* What remap_msg did. */
enum remap_result {
    REMAP_OK,       /* out holds the message to send */
    REMAP_WAIT,     /* a cursor it uses is PENDING: try again later */
    REMAP_NOCURSOR, /* a getMore / killCursors with no live cursor */
};

/*
 * Appends to out the request m (a parsed, not compressed, recorded
 * request of copy) as it is sent live: requestID request_id; OP_MSG body
 * rebuilt with getMore / killCursors cursor ids, lsid, txnNumber,
 * $clusterTime, readConcern.afterClusterTime and $db rewritten
 * (document sequences and flags kept, checksum recomputed), or copied when
 * remap_is_plain; OP_GET_MORE and OP_KILL_CURSORS with their cursor ids
 * patched; legacy fullCollectionNames renamed by --db; other opcodes as
 * recorded.  *rec_cursor is the recorded cursor a getMore reads (0 none).
 * Returns 0 with *res set, or -ENOMEM / MT_ETOOBIG / MT_ELIMIT (session
 * table full) with out unchanged.  Cost: O(top-level fields).
 */
int remap_msg(struct remap *rm, uint32_t copy, const struct wire_msg *m,
              int32_t request_id, struct mt_buf *out, enum remap_result *res,
              int64_t *rec_cursor);

/*
 * True when remap_msg would send m (parsed, not compressed) as recorded
 * but for its header (requestID, responseTo 0) and checksum: an OP_MSG
 * without getMore / killCursors / endSessions, lsid, txnNumber,
 * $clusterTime, readConcern or a $db that --db renames; a legacy message
 * other than OP_GET_MORE / OP_KILL_CURSORS whose fullCollectionName no
 * --db rename matches.  Depends only on m and the renames, so a caller may
 * decide once per recorded request.  Cost: O(top-level fields).
 */
bool remap_is_plain(const struct remap *rm, const struct wire_msg *m);

/*
 * Appends msg (len bytes, a whole message remap_is_plain accepted) to out
 * with requestID request_id, responseTo 0 and an OP_MSG checksum
 * recomputed.  0, or -ENOMEM / MT_ETOOBIG with out unchanged.  Cost: one
 * copy (plus the CRC-32C when a checksum is present).
 */
int remap_plain_copy(const uint8_t *msg, size_t len, int32_t request_id,
                     struct mt_buf *out);

/* Counters for the summary. */
struct remap_stats {
    uint64_t sessions; /* fresh lsids handed out */
    uint64_t cursors;  /* live cursors mapped */
};
void remap_stats_get(const struct remap *rm, struct remap_stats *st);

#endif
