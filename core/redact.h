/*
 * redact.h -- removing secrets from recorded MongoDB messages (capture
 * --redact), shared by the proxy and the pcap/live paths.
 *
 * What is removed:
 *  - SASL payloads, always: the top-level `payload` of a saslStart /
 *    saslContinue / authenticate / copydbsaslstart request (also inside a
 *    legacy OP_QUERY `$query` wrapper), the top-level `payload` of any
 *    document with a `conversationId` (the server's SASL replies), and
 *    `speculativeAuthenticate.payload` in hello requests and replies.  The
 *    value becomes BinData subtype 0 holding the 10 bytes "<redacted>".
 *  - The values of fields the user names (redact_cfg_add): a name without
 *    dots matches an element of that name at any depth of any document of
 *    the message (command body, OP_MSG kind-1 documents, OP_REPLY
 *    documents, array elements); a dotted path "a.b.c" matches an element
 *    c whose enclosing names end with a.b (array indices are not names:
 *    "documents.ssn" matches the ssn of each inserted document).  The value
 *    becomes the string "<redacted>".
 *
 * The message is rebuilt with the core/wire encoders (same requestID,
 * responseTo, flags; a checksum is recomputed), so the trace holds a valid
 * message of the right length.  OP_MSG, OP_QUERY and OP_REPLY are
 * rewritten; other legacy opcodes are kept as they are.
 */
#ifndef MT_CORE_REDACT_H
#define MT_CORE_REDACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "trace.h"

#define REDACT_FIELDS_MAX 64
#define REDACT_PATH_LEN_MAX 255 /* bytes of one --redact argument */
#define REDACT_PATH_PARTS_MAX 16
#define REDACT_MARK "<redacted>"

struct redact_path {
    char text[REDACT_PATH_LEN_MAX + 1];
    const char *part[REDACT_PATH_PARTS_MAX]; /* borrowed: into text */
    size_t nparts;
};

/* What to redact.  Zero-initialised: SASL payloads only. */
struct redact_cfg {
    struct redact_path path[REDACT_FIELDS_MAX];
    size_t npaths;
};

/*
 * Adds a field name or dotted path.  0, or MT_EUSAGE (empty, empty
 * component such as "a..b", too long, too many components) / MT_ELIMIT
 * (more than REDACT_FIELDS_MAX), with err set.
 */
int redact_cfg_add(struct redact_cfg *cfg, const char *path,
                   struct mt_err *err);

/*
 * Redacts one complete message (msg, len bytes; not OP_COMPRESSED).
 * Returns 1 when something was removed and out (reset first) holds the
 * rebuilt message; 0 when there is nothing to remove (out then holds
 * nothing useful: use msg as it is); a
 * negative code when the message does not parse (MT_EPROTO, MT_EBSON, ...)
 * or cannot be rebuilt (-ENOMEM, MT_ETOOBIG), with err set.  Cost: one
 * validating parse, plus one copy of each document only when it changes.
 */
int redact_msg(const struct redact_cfg *cfg, const uint8_t *msg, size_t len,
               struct mt_buf *out, struct mt_err *err);

/*
 * The call for capture paths: redacts the record m in place before it is
 * written.  m->wire (and m->plain, the decompressed form of an
 * OP_COMPRESSED message, when set) are examined:
 *  - a plain message with something to remove: m->wire points into out,
 *    wire_len updated, flag TRACE_MSG_REDACTED;
 *  - OP_COMPRESSED with something to remove in its plain form: the
 *    compressed bytes (which hold the secret) are dropped and the redacted
 *    plain message is stored as the wire form (m->plain = NULL), flags
 *    TRACE_MSG_REDACTED | TRACE_MSG_DECOMPRESSED;
 *  - a partial (TRACE_MSG_PARTIAL) or unparseable message: only its 16-byte
 *    header (or what there is of it) is kept, flag TRACE_MSG_REDACTED,
 *    because its body cannot be checked;
 *  - OP_COMPRESSED that was not decompressed (m->plain NULL): likewise.
 * Returns 1 when m changed, 0 when not.  Never fails: on ENOMEM the body
 * is dropped as for an unparseable message.  out must outlive the write
 * of m.
 */
int redact_trace_msg(const struct redact_cfg *cfg, struct trace_msg *m,
                     struct mt_buf *out);

#endif
