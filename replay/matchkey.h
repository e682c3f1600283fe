/*
 * matchkey.h -- the key of a request: the text that decides which recorded
 * reply answers it (docs/replay.md, "Matching").
 *
 * A request is reduced to a key that keeps what determines the answer and
 * drops what changes from run to run:
 *
 *     <db>\x1f<cmd>=<value>\x1f<field>=<value>...
 *
 * The command field comes first, the other top-level fields follow sorted
 * by name, minus the ignored ones (match_rules: lsid, $clusterTime,
 * txnNumber, ... by default; changeable).  OP_MSG kind-1 sequences count as
 * fields, sorted with the others.  Unless the rules are strict, the
 * equivalences leave out a find's or aggregate's cursor-shaping fields
 * (match_shape_of; compared by match_shape_serves instead), writes'
 * ordered: true, update statements' multi/upsert: false and
 * findAndModify's remove/new/upsert: false (the server's defaults).  Values are
 * written as compact relaxed JSON by walking that one value with libbson's
 * iterator; numbers are written by value (an int32, an int64 and an integral
 * double holding the same integer give the same text); ObjectId _id fields of
 * inserted documents are masked (drivers generate them); a value whose text is
 * longer than MATCH_VALUE_INLINE_MAX is replaced by a digest of that text.  A
 * legacy find (OP_QUERY on a collection) has a key of its own, made of the
 * message's fields (matchkey.c, legacy_find_key).  Only the top level is walked
 * to find fields (seed 004); a value is expanded only when it is part of the
 * key.
 */
#ifndef MT_REPLAY_MATCHKEY_H
#define MT_REPLAY_MATCHKEY_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "match.h"

#define MATCH_FIELDS_MAX 128         /* top-level fields per command */
#define MATCH_KEY_LEN_MAX (4u << 20) /* a longer key is refused */
/* A top-level value (or kind-1 sequence) whose text is longer is kept in
 * the key as {"$digest":"<128-bit hash of the text>","bytes":N}. */
#define MATCH_VALUE_INLINE_MAX (16u << 10)

/*
 * Appends req's key to key (reset first).  0, MT_ELIMIT (more than
 * MATCH_FIELDS_MAX fields or nesting deeper than WIRE_BSON_DEPTH_MAX),
 * MT_ETOOBIG (key over key->len_max) or MT_EBSON.  Cost: O(size of the
 * fields that are part of the key).
 */
int match_key_build(const struct match_rules *r, const struct match_req *req,
                    struct mt_buf *key, struct mt_err *err);

/* A 64-bit hash of the key bytes (8 bytes per multiply-xorshift step).
 * Pure; cost O(len). */
uint64_t match_key_hash(const void *key, size_t len);

#endif
