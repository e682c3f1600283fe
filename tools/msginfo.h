/*
 * msginfo.h -- what `mtrace dump` and `mtrace stats` need to know about one
 * recorded message: header fields, opcode (the original one behind
 * OP_COMPRESSED), command name / db / collection, whether it belongs to an
 * authentication conversation, and a one-line error when it does not parse.
 *
 * Also what dump and stats keep of a request until its reply comes (the
 * pairing itself is core/pair.h's), and JSON string output.
 */
#ifndef MT_MSGINFO_H
#define MT_MSGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"
#include "core/trace.h"
#include "core/wire.h"

struct msginfo {
    bool has_header; /* the 16-byte header was there */
    int32_t request_id;
    int32_t response_to;
    int32_t op_code;     /* original opcode (inside OP_COMPRESSED) */
    bool compressed;     /* seen on the wire as OP_COMPRESSED */
    uint8_t compressor;  /* enum wire_compressor, when compressed */
    bool parsed;         /* msg and cmd are valid */
    struct wire_msg msg; /* borrowed: the plain form (trace record's bytes,
                            or the scratch buffer); valid while both are */
    struct wire_cmd cmd;
    bool is_reply;     /* s2c, or OP_REPLY / OP_COMMANDREPLY */
    bool auth;         /* saslStart / saslContinue / authenticate, or a
                          hello carrying speculativeAuthenticate */
    bool more_to_come; /* OP_MSG moreToCome */
    char error[160];   /* "" when parsed */
};

/*
 * Decodes m: parses the wire bytes (full validation), decompresses
 * OP_COMPRESSED (using the recorded plain form when there is one, else
 * wire_decompress into scratch, whose len_max bounds it) and walks the
 * command's top level.  Never fails: a message that does not parse gets
 * mi->parsed = false and mi->error.  Cost: O(message length).
 */
void msginfo_decode(const struct trace_msg *m, struct mt_buf *scratch,
                    struct msginfo *mi);

/* What a reply says of its command's outcome. */
struct reply_status {
    bool error;         /* ok != 1, a $err field, or an OP_REPLY flagged
                           QueryFailure / CursorNotFound */
    bool write_error;   /* ok: 1, but writeErrors or a writeConcernError */
    int32_t code;       /* the error's code (a write error: the first's) */
    char code_name[48]; /* its codeName; "" when the reply gives none */
};

/*
 * Fills st from a decoded reply (mi from msginfo_decode): walks the top
 * level of the reply document and the first write error only.  A reply
 * that did not parse, or has no document, is neither error.
 */
void msginfo_reply_status(const struct msginfo *mi, struct reply_status *st);

/* Writes s as a JSON string (quotes, escapes, invalid UTF-8 bytes as
 * \u00XX so that output is always valid JSON). */
void msginfo_json_str(FILE *out, const char *s);

/* Copies s into dst (cap bytes, NUL-terminated, truncated) with control
 * bytes replaced by '?', so that text from a hostile trace cannot drive a
 * terminal.  Returns dst. */
const char *msginfo_printable(char *dst, size_t cap, const char *s);

/* What dump and stats keep of a request waiting for its reply: the value
 * of their core/pair.h table. */
struct msginfo_pending {
    uint64_t t_ns; /* when the request (or the previous reply) was seen */
    char cmd[64];  /* command name */
    char ns[64];   /* db.collection (truncated), or the db */
    int32_t request_id;
    bool auth;    /* part of an authentication conversation */
    bool exhaust; /* a moreToCome reply continuing an exhaust stream */
};

#endif
