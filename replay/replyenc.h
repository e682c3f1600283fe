/*
 * replyenc.h -- reply messages of a replay, encoded as the request asks.
 *
 * A reply goes out in the request's own protocol: OP_REPLY for a legacy
 * OP_QUERY command, OP_COMMANDREPLY for OP_COMMAND (MongoDB 3.2-3.6),
 * OP_MSG otherwise (with a CRC-32C checksum when the request carried one).
 * A recorded OP_MSG reply is copied with a new header; other recorded
 * replies are re-encoded from their body, with cursor.id rewritten when
 * the replay opened its own cursor.  Compression is not done here
 * (handshake_compress_reply).
 */
#ifndef MT_REPLAY_REPLYENC_H
#define MT_REPLAY_REPLYENC_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/wire.h" /* bson_t, without libbson's -Wcast-qual noise */
#include "match.h"

/* The request a reply answers. */
struct replyenc_to {
    const struct match_req *req; /* borrowed: its opcode and checksum flags */
    int32_t request_id;          /* its requestID: the reply's responseTo */
    int32_t *next_id; /* borrowed: the connection's requestID counter,
                         advanced by each reply encoded */
};

/* The requestID for the connection's next message: *next, then *next
 * advances (after INT32_MAX it starts again at 1).  Never <= 0. */
int32_t replyenc_take_id(int32_t *next);

/*
 * Appends body as the reply to `to` (OP_REPLY with AwaitCapable,
 * OP_COMMANDREPLY, or OP_MSG with flags, plus checksumPresent when the
 * request had one; to a legacy find, always an error: OP_REPLY with
 * QueryFailure and body's errmsg and code as $err and code).  *rid: the
 * reply's requestID (taken from to->next_id).
 * 0 or MT_ETOOBIG / -ENOMEM (out over its len_max); out may then hold a
 * partial message: the caller discards it.
 */
int replyenc_write_doc(const struct replyenc_to *to, const bson_t *body,
                       uint32_t flags, struct mt_buf *out, int32_t *rid);

/*
 * Appends the recorded reply message rec (rec_len bytes, whole, trusted:
 * it was parsed when the trace was loaded) as the reply to `to`.
 * cursor_id >= 0 replaces its cursor.id; -1 keeps it.  A recorded OP_MSG
 * answering an OP_MSG request without a cursor rewrite is copied section
 * for section (only the header and checksum change), and a recorded
 * OP_REPLY answering a legacy find is copied whole (only the header's
 * requestID and responseTo change).  0, MT_ECORRUPT (rec
 * does not parse), MT_EBSON, MT_ETOOBIG or -ENOMEM.
 */
int replyenc_write_recorded(const struct replyenc_to *to, const uint8_t *rec,
                            size_t rec_len, int64_t cursor_id,
                            struct mt_buf *out);

/* Appends the OP_REPLY with QueryFailure ({$err: msg, code: 2}) that
 * answers a legacy OP_QUERY that is not a command.  0 or a negative code
 * as replyenc_write_doc. */
int replyenc_write_query_failure(const struct replyenc_to *to, const char *msg,
                                 struct mt_buf *out);

#endif
