/*
 * classify.h -- what `mtrace play` needs to know of a recorded message:
 * its plain form, whether it expects a reply, whether it belongs to an
 * authentication conversation or writes (--skip-writes), and the
 * compressors a recorded hello offered.  No state; cost O(top-level
 * fields) each.
 */
#ifndef MT_PLAY_CLASSIFY_H
#define MT_PLAY_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "core/trace.h"
#include "core/wire.h"

/* True when name is one of list[0..n). */
bool play_cmd_listed(const char *name, const char *const *list, size_t n);

/* saslStart, saslContinue, authenticate, getnonce, logout. */
bool play_cmd_is_auth(const char *name);

/* A command that writes: insert, update, delete, findAndModify, DDL, user
 * management, commitTransaction, bulkWrite, applyOps, mapReduce, ...; an
 * aggregate whose pipeline has $out or $merge (m: its parsed request). */
bool play_cmd_is_write(const struct wire_msg *m, const char *name);

/* The "compression" list of a recorded hello m, as "snappy,zstd" into out
 * (cap bytes; "" when none; names that do not fit are left out). */
void play_hello_offer(const struct wire_msg *m, char *out, size_t cap);

/*
 * The plain form of recorded message tm parsed into *m (wire_msg_parse_opts
 * with opts: 0 validates every document in full, WIRE_PARSE_SHALLOW only
 * their bounds):
 * an OP_COMPRESSED message through its recorded plain form, or
 * decompressed into scratch (whose len_max bounds it); *compressed says
 * whether it was compressed on the wire.  m borrows from tm or scratch.
 * False when it does not parse (a partial or malformed record included).
 */
bool play_rec_parse(const struct trace_msg *tm, unsigned opts,
                    struct mt_buf *scratch, struct wire_msg *m,
                    bool *compressed);

/* OP_MSG without moreToCome, OP_QUERY, OP_GET_MORE, OP_COMMAND. */
bool play_expects_reply(const struct wire_msg *m);

#endif
