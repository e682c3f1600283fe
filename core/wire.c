/*
 * wire.c -- MongoDB wire protocol framing and parsing (see wire.h).
 *
 * Spec:
 * https://github.com/mongodb/specifications/blob/master/source/message/OP_MSG.md
 * Legacy opcodes: https://www.mongodb.com/docs/manual/legacy-opcodes/
 *
 * Byte layouts handled here (all integers little-endian, offsets from the
 * start of the message; the 16-byte header is described in wire.h):
 *
 *   OP_MSG (2013)        16 uint32 flagBits
 *                        20 sections...: uint8 kind
 *                             kind 0: document body (exactly one)
 *                             kind 1: int32 size (includes itself),
 *                                     cstring identifier, documents
 *                        [last 4: uint32 CRC-32C if checksumPresent]
 *   OP_QUERY (2004)      16 int32 flags, 20 cstring fullCollectionName,
 *                        int32 numberToSkip, int32 numberToReturn,
 *                        document query, [document returnFieldsSelector]
 *   OP_REPLY (1)         16 int32 responseFlags, 20 int64 cursorID,
 *                        28 int32 startingFrom, 32 int32 numberReturned,
 *                        36 documents (exactly numberReturned)
 *   OP_COMMAND (2010)    16 cstring database, cstring commandName,
 *                        document commandArgs, document metadata,
 *                        documents inputDocs
 *   OP_COMMANDREPLY      16 document commandReply, document metadata,
 *   (2011)               documents outputDocs
 *   OP_COMPRESSED (2012) 16 int32 originalOpcode, 20 int32 uncompressedSize,
 *                        24 uint8 compressorId, 25 compressed bytes
 *   OP_UPDATE/INSERT/GET_MORE/DELETE/KILL_CURSORS: framed, fullCollectionName
 *                        read when present, not deep-parsed.
 *
 * Every read goes through core/rd.h; every error names the field and the
 * offset of the first bad byte.  BSON is handed to libbson's iterator.
 */
#include "wire.h"

#include <string.h>

#include "rd.h"

/* ---- names ---- */

const char *
wire_opcode_name(int32_t op_code)
{
    switch (op_code) {
    case WIRE_OP_REPLY:
        return "OP_REPLY";
    case WIRE_OP_UPDATE:
        return "OP_UPDATE";
    case WIRE_OP_INSERT:
        return "OP_INSERT";
    case WIRE_OP_RESERVED:
        return "OP_RESERVED";
    case WIRE_OP_QUERY:
        return "OP_QUERY";
    case WIRE_OP_GET_MORE:
        return "OP_GET_MORE";
    case WIRE_OP_DELETE:
        return "OP_DELETE";
    case WIRE_OP_KILL_CURSORS:
        return "OP_KILL_CURSORS";
    case WIRE_OP_COMMAND:
        return "OP_COMMAND";
    case WIRE_OP_COMMANDREPLY:
        return "OP_COMMANDREPLY";
    case WIRE_OP_COMPRESSED:
        return "OP_COMPRESSED";
    case WIRE_OP_MSG:
        return "OP_MSG";
    default:
        return "OP_UNKNOWN";
    }
}

bool
wire_opcode_known(int32_t op_code)
{
    switch (op_code) {
    case WIRE_OP_REPLY:
    case WIRE_OP_UPDATE:
    case WIRE_OP_INSERT:
    case WIRE_OP_RESERVED:
    case WIRE_OP_QUERY:
    case WIRE_OP_GET_MORE:
    case WIRE_OP_DELETE:
    case WIRE_OP_KILL_CURSORS:
    case WIRE_OP_COMMAND:
    case WIRE_OP_COMMANDREPLY:
    case WIRE_OP_COMPRESSED:
    case WIRE_OP_MSG:
        return true;
    default:
        return false;
    }
}

const char *
wire_compressor_name(uint8_t id)
{
    switch (id) {
    case WIRE_COMPRESSOR_NOOP:
        return "noop";
    case WIRE_COMPRESSOR_SNAPPY:
        return "snappy";
    case WIRE_COMPRESSOR_ZLIB:
        return "zlib";
    case WIRE_COMPRESSOR_ZSTD:
        return "zstd";
    default:
        return "unknown";
    }
}

/* ---- framing ---- */

int
wire_frame(const uint8_t *buf, size_t len, size_t len_max, size_t *msg_len,
           struct mt_err *err)
{
    struct rd r = rd_init(buf, len);
    int32_t mlen, op;

    if (len_max == 0 || len_max > WIRE_MSG_LEN_MAX)
        len_max = WIRE_MSG_LEN_MAX;
    *msg_len = WIRE_HEADER_LEN;
    if (!rd_le32s(&r, &mlen))
        return MT_PARTIAL;
    /* Reject a bad length as soon as its 4 bytes are in: garbage is
     * refused without waiting for a header that may never come. */
    if (mlen < WIRE_HEADER_LEN)
        return mt_err_set(err, MT_EPROTO, 0, "messageLength %d at offset 0",
                          (int)mlen);
    if ((size_t)mlen > len_max)
        return mt_err_set(err, MT_ETOOBIG, 0,
                          "messageLength %d exceeds maximum %zu at offset 0",
                          (int)mlen, len_max);
    if (len < WIRE_HEADER_LEN)
        return MT_PARTIAL;
    rd_skip(&r, 8);
    rd_le32s(&r, &op);
    if (!wire_opcode_known(op))
        return mt_err_set(err, MT_EPROTO, 12, "unknown opCode %d at offset 12",
                          (int)op);
    *msg_len = (size_t)mlen;
    return len < (size_t)mlen ? MT_PARTIAL : MT_OK;
}

/* ---- BSON ---- */

/* Offset of p inside the message that starts at base. */
static size_t
off_of(const uint8_t *base, const uint8_t *p)
{
    return (size_t)(p - base);
}

/*
 * Walks one document with libbson's iterator, recursing into documents and
 * arrays with a depth counter.  The iterator checks every element's bounds
 * as it goes; err_off says where it stopped on a corrupt element.  The
 * recursion stops at WIRE_BSON_DEPTH_MAX + 1, so the C stack stays small
 * whatever the input (libbson's own bson_validate recurses without limit).
 */
static int
walk_doc(const uint8_t *base, const uint8_t *doc, size_t doc_len, int depth,
         struct mt_err *err)
{
    bson_iter_t it;
    int rc;

    if (depth > WIRE_BSON_DEPTH_MAX)
        return mt_err_set(err, MT_EBSON, off_of(base, doc),
                          "BSON nesting deeper than %d at offset %zu",
                          WIRE_BSON_DEPTH_MAX, off_of(base, doc));
    if (!bson_iter_init_from_data(&it, doc, doc_len))
        return mt_err_set(err, MT_EBSON, off_of(base, doc),
                          "BSON document header invalid at offset %zu",
                          off_of(base, doc));
    while (bson_iter_next(&it)) {
        bson_type_t t = bson_iter_type(&it);
        const uint8_t *child;
        uint32_t child_len;

        if (t == BSON_TYPE_DOCUMENT) {
            bson_iter_document(&it, &child_len, &child);
        } else if (t == BSON_TYPE_ARRAY) {
            bson_iter_array(&it, &child_len, &child);
        } else if (t == BSON_TYPE_CODEWSCOPE) {
            uint32_t code_len; /* the scope is a document too */
            bson_iter_codewscope(&it, &code_len, &child_len, &child);
        } else {
            continue;
        }
        rc = walk_doc(base, child, child_len, depth + 1, err);
        if (rc < 0)
            return rc;
    }
    if (it.err_off != 0) {
        /* it.type still holds the offset of the bad element's type byte;
         * libbson's err_off points at the field it could not read, which
         * may be past the document's end (a length that runs over). */
        size_t el = it.type < doc_len ? it.type : doc_len - 1;
        size_t o = off_of(base, doc) + el;
        return mt_err_set(err, MT_EBSON, o,
                          "BSON element corrupt at offset %zu (unreadable "
                          "from %zu)",
                          o, off_of(base, doc) + it.err_off);
    }
    return 0;
}

/*
 * Reads one BSON document from r: length prefix against the limits and
 * what is left, trailing NUL, then (deep) the libbson walk.  *doc borrows
 * from the message.
 */
static int
read_doc(struct rd *r, const uint8_t *base, bool deep, const char *what,
         const uint8_t **doc, size_t *doc_len, struct mt_err *err)
{
    size_t o = off_of(base, r->p);
    struct rd peek = *r;
    int32_t n;

    if (!rd_le32s(&peek, &n))
        return mt_err_set(err, MT_EPROTO, o,
                          "%s: BSON length truncated (%zu bytes left) at "
                          "offset %zu",
                          what, r->left, o);
    if (n < 5)
        return mt_err_set(err, MT_EBSON, o, "%s: BSON length %d at offset %zu",
                          what, (int)n, o);
    if ((size_t)n > WIRE_BSON_LEN_MAX)
        return mt_err_set(err, MT_ETOOBIG, o,
                          "%s: BSON length %d exceeds maximum %d at offset %zu",
                          what, (int)n, WIRE_BSON_LEN_MAX, o);
    if ((size_t)n > r->left)
        return mt_err_set(err, MT_EBSON, o,
                          "%s: BSON length %d exceeds remaining %zu at offset "
                          "%zu",
                          what, (int)n, r->left, o);
    rd_bytes(r, (size_t)n, doc);
    *doc_len = (size_t)n;
    if ((*doc)[n - 1] != 0)
        return mt_err_set(err, MT_EBSON, o + (size_t)n - 1,
                          "%s: BSON document not NUL-terminated at offset %zu",
                          what, o + (size_t)n - 1);
    if (deep)
        return walk_doc(base, *doc, *doc_len, 1, err);
    return 0;
}

/* Reads documents back to back until r is empty; counts them. */
static int
read_docs(struct rd *r, const uint8_t *base, bool deep, const char *what,
          size_t *count, struct mt_err *err)
{
    const uint8_t *d;
    size_t n;
    int rc;

    *count = 0;
    while (r->left > 0) {
        rc = read_doc(r, base, deep, what, &d, &n, err);
        if (rc < 0)
            return rc;
        (*count)++;
    }
    return 0;
}

/* ---- OP_MSG ---- */

static int
parse_seq(struct rd *r, const uint8_t *base, bool deep, struct wire_msg *m,
          struct mt_err *err)
{
    size_t o = off_of(base, r->p);
    struct rd sec;
    const uint8_t *body;
    const char *id;
    size_t idlen, ndocs;
    int32_t size;
    int rc;

    if (!rd_le32s(r, &size))
        return mt_err_set(err, MT_EPROTO, o,
                          "OP_MSG kind-1 size truncated at offset %zu", o);
    if (size < 5 || (size_t)size - 4 > r->left)
        return mt_err_set(err, MT_EPROTO, o,
                          "OP_MSG kind-1 size %d (remaining %zu) at offset %zu",
                          (int)size, r->left + 4, o);
    rd_bytes(r, (size_t)size - 4, &body);
    sec = rd_init(body, (size_t)size - 4);
    if (!rd_cstr(&sec, &id, &idlen))
        return mt_err_set(err, MT_EPROTO, o + 4,
                          "OP_MSG kind-1 identifier not terminated at offset "
                          "%zu",
                          o + 4);
    if (m->nseq >= WIRE_SEQ_MAX)
        return mt_err_set(err, MT_ELIMIT, o - 1,
                          "OP_MSG has more than %d kind-1 sections at offset "
                          "%zu",
                          WIRE_SEQ_MAX, o - 1);
    m->seq[m->nseq].identifier = id;
    m->seq[m->nseq].docs = sec.p;
    m->seq[m->nseq].docs_len = sec.left;
    m->nseq++;
    rc = read_docs(&sec, base, deep, "OP_MSG kind-1 document", &ndocs, err);
    return rc;
}

static int
parse_msg(struct rd *r, const uint8_t *base, unsigned opts, struct wire_msg *m,
          struct mt_err *err)
{
    bool deep = !(opts & WIRE_PARSE_SHALLOW);
    uint32_t undefined;
    size_t o;
    int nbody = 0, rc;

    if (!rd_le32(r, &m->flags))
        return mt_err_set(err, MT_EPROTO, 16,
                          "OP_MSG flagBits truncated at offset 16");
    undefined = m->flags & WIRE_MSG_REQUIRED_MASK &
                ~(WIRE_MSG_CHECKSUM_PRESENT | WIRE_MSG_MORE_TO_COME);
    if (undefined != 0)
        return mt_err_set(
            err, MT_EPROTO, 16,
            "OP_MSG undefined required flagBits 0x%x at offset 16", undefined);
    if (m->flags & WIRE_MSG_CHECKSUM_PRESENT) {
        struct rd tail = *r;
        uint32_t want;

        if (r->left < 4)
            return mt_err_set(err, MT_EPROTO, 20,
                              "OP_MSG checksum missing at offset 20");
        r->left -= 4; /* sections end before the checksum */
        rd_skip(&tail, r->left);
        rd_le32(&tail, &m->checksum);
        m->has_checksum = true;
        if (!(opts & WIRE_PARSE_NO_CHECKSUM)) {
            want = wire_crc32c(0, base, m->raw_len - 4);
            if (want != m->checksum)
                return mt_err_set(err, MT_ECHECKSUM, m->raw_len - 4,
                                  "checksum 0x%08x != computed 0x%08x at "
                                  "offset %zu",
                                  m->checksum, want, m->raw_len - 4);
        }
    }
    while (r->left > 0) {
        uint8_t kind;

        o = off_of(base, r->p);
        rd_u8(r, &kind);
        if (kind == 0) {
            if (++nbody > 1)
                return mt_err_set(err, MT_EPROTO, o,
                                  "OP_MSG second kind-0 section at offset %zu",
                                  o);
            rc = read_doc(r, base, deep, "OP_MSG body", &m->body, &m->body_len,
                          err);
        } else if (kind == 1) {
            rc = parse_seq(r, base, deep, m, err);
        } else {
            return mt_err_set(err, MT_EPROTO, o,
                              "OP_MSG section kind %u at offset %zu",
                              (unsigned)kind, o);
        }
        if (rc < 0)
            return rc;
    }
    if (nbody == 0)
        return mt_err_set(err, MT_EPROTO, 20,
                          "OP_MSG without a kind-0 body section at offset 20");
    return 0;
}

/* ---- legacy opcodes ---- */

static int
read_i32(struct rd *r, const uint8_t *base, const char *what, int32_t *v,
         struct mt_err *err)
{
    size_t o = off_of(base, r->p);

    if (!rd_le32s(r, v))
        return mt_err_set(err, MT_EPROTO, o, "%s truncated at offset %zu", what,
                          o);
    return 0;
}

static int
read_cstr(struct rd *r, const uint8_t *base, const char *what, const char **s,
          struct mt_err *err)
{
    size_t o = off_of(base, r->p);

    if (!rd_cstr(r, s, NULL))
        return mt_err_set(err, MT_EPROTO, o,
                          "%s not NUL-terminated at offset %zu", what, o);
    return 0;
}

static int
parse_query(struct rd *r, const uint8_t *base, bool deep, struct wire_msg *m,
            struct mt_err *err)
{
    const uint8_t *sel;
    size_t sel_len;
    int rc;

    TRY(read_i32(r, base, "OP_QUERY flags", &m->query_flags, err));
    TRY(read_cstr(r, base, "OP_QUERY fullCollectionName", &m->full_collection,
                  err));
    TRY(read_i32(r, base, "OP_QUERY numberToSkip", &m->number_to_skip, err));
    TRY(read_i32(r, base, "OP_QUERY numberToReturn", &m->number_to_return,
                 err));
    TRY(read_doc(r, base, deep, "OP_QUERY query", &m->body, &m->body_len, err));
    if (r->left > 0) {
        TRY(read_doc(r, base, deep, "OP_QUERY returnFieldsSelector", &sel,
                     &sel_len, err));
        m->docs = sel;
        m->docs_len = sel_len;
    }
    if (r->left > 0) {
        size_t o = off_of(base, r->p);
        rc =
            mt_err_set(err, MT_EPROTO, o,
                       "OP_QUERY %zu trailing bytes at offset %zu", r->left, o);
    }
out:
    return rc;
}

static int
parse_reply(struct rd *r, const uint8_t *base, bool deep, struct wire_msg *m,
            struct mt_err *err)
{
    size_t n;
    int rc;

    TRY(read_i32(r, base, "OP_REPLY responseFlags", &m->response_flags, err));
    if (!rd_le64s(r, &m->cursor_id)) {
        rc = mt_err_set(err, MT_EPROTO, 20,
                        "OP_REPLY cursorID truncated at offset 20");
        goto out;
    }
    TRY(read_i32(r, base, "OP_REPLY startingFrom", &m->starting_from, err));
    TRY(read_i32(r, base, "OP_REPLY numberReturned", &m->number_returned, err));
    if (m->number_returned < 0) {
        rc = mt_err_set(err, MT_EPROTO, 32,
                        "OP_REPLY numberReturned %d at offset 32",
                        (int)m->number_returned);
        goto out;
    }
    m->docs = r->p;
    m->docs_len = r->left;
    TRY(read_docs(r, base, deep, "OP_REPLY document", &n, err));
    if (n != (size_t)m->number_returned) {
        rc = mt_err_set(err, MT_EPROTO, 32,
                        "OP_REPLY numberReturned %d but %zu documents at "
                        "offset 32",
                        (int)m->number_returned, n);
        goto out;
    }
    if (n > 0) {
        struct rd first = rd_init(m->docs, m->docs_len);
        TRY(read_doc(&first, base, false, "OP_REPLY document", &m->body,
                     &m->body_len, err));
    }
out:
    return rc;
}

static int
parse_command(struct rd *r, const uint8_t *base, bool deep, struct wire_msg *m,
              struct mt_err *err)
{
    const uint8_t *meta;
    size_t meta_len, n;
    int rc;

    if (m->h.op_code == WIRE_OP_COMMAND) {
        TRY(read_cstr(r, base, "OP_COMMAND database", &m->command_db, err));
        TRY(read_cstr(r, base, "OP_COMMAND commandName", &m->command_name,
                      err));
        TRY(read_doc(r, base, deep, "OP_COMMAND commandArgs", &m->body,
                     &m->body_len, err));
        TRY(read_doc(r, base, deep, "OP_COMMAND metadata", &meta, &meta_len,
                     err));
        m->docs = r->p;
        m->docs_len = r->left;
        TRY(read_docs(r, base, deep, "OP_COMMAND inputDocs", &n, err));
    } else {
        TRY(read_doc(r, base, deep, "OP_COMMANDREPLY commandReply", &m->body,
                     &m->body_len, err));
        TRY(read_doc(r, base, deep, "OP_COMMANDREPLY metadata", &meta,
                     &meta_len, err));
        m->docs = r->p;
        m->docs_len = r->left;
        TRY(read_docs(r, base, deep, "OP_COMMANDREPLY outputDocs", &n, err));
    }
out:
    return rc;
}

static int
parse_compressed(struct rd *r, const uint8_t *base, struct wire_msg *m,
                 struct mt_err *err)
{
    int rc;

    TRY(read_i32(r, base, "OP_COMPRESSED originalOpcode", &m->original_opcode,
                 err));
    TRY(read_i32(r, base, "OP_COMPRESSED uncompressedSize",
                 &m->uncompressed_size, err));
    if (!rd_u8(r, &m->compressor_id)) {
        rc = mt_err_set(err, MT_EPROTO, 24,
                        "OP_COMPRESSED compressorId truncated at offset 24");
        goto out;
    }
    if (m->original_opcode == WIRE_OP_COMPRESSED ||
        !wire_opcode_known(m->original_opcode)) {
        rc = mt_err_set(err, MT_EPROTO, 16,
                        "OP_COMPRESSED originalOpcode %d at offset 16",
                        (int)m->original_opcode);
        goto out;
    }
    if (m->uncompressed_size < 0) {
        rc = mt_err_set(err, MT_EPROTO, 20,
                        "OP_COMPRESSED uncompressedSize %d at offset 20",
                        (int)m->uncompressed_size);
        goto out;
    }
    if ((size_t)m->uncompressed_size > WIRE_MSG_LEN_MAX - WIRE_HEADER_LEN) {
        rc = mt_err_set(err, MT_ETOOBIG, 20,
                        "OP_COMPRESSED uncompressedSize %d exceeds maximum %d "
                        "at offset 20",
                        (int)m->uncompressed_size,
                        WIRE_MSG_LEN_MAX - WIRE_HEADER_LEN);
        goto out;
    }
    m->compressed = r->p;
    m->compressed_len = r->left;
    rd_skip(r, r->left);
out:
    return rc;
}

/* OP_UPDATE, OP_INSERT, OP_GET_MORE, OP_DELETE: int32 then
 * fullCollectionName.  Framed only; the name is kept when present. */
static void
parse_legacy(struct rd *r, struct wire_msg *m)
{
    int32_t zero;
    const char *ns;

    if (m->h.op_code == WIRE_OP_KILL_CURSORS ||
        m->h.op_code == WIRE_OP_RESERVED)
        return;
    if (rd_le32s(r, &zero) && rd_cstr(r, &ns, NULL))
        m->full_collection = ns;
}

/* ---- parse ---- */

/*
 * Clears msg except seq[]: entries past nseq are never read and parse_msg
 * sets all three fields of each entry it counts, and the array is most of
 * the struct (clearing it was 2 % of a pcap import's instructions).
 */
static void
wire_msg_clear(struct wire_msg *msg)
{
    size_t tail = offsetof(struct wire_msg, has_checksum);

    memset(msg, 0, offsetof(struct wire_msg, seq));
    memset((char *)msg + tail, 0, sizeof(*msg) - tail);
}

int
wire_msg_parse_opts(const uint8_t *buf, size_t len, unsigned opts,
                    struct wire_msg *msg, size_t *consumed, struct mt_err *err)
{
    bool deep = !(opts & WIRE_PARSE_SHALLOW);
    struct rd r = rd_init(buf, len);
    size_t mlen;
    int rc;

    wire_msg_clear(msg);
    rc = wire_frame(buf, len, WIRE_MSG_LEN_MAX, &mlen, err);
    *consumed = rc < 0 ? 0 : mlen;
    if (rc != MT_OK)
        return rc;
    rd_le32s(&r, &msg->h.message_length);
    rd_le32s(&r, &msg->h.request_id);
    rd_le32s(&r, &msg->h.response_to);
    rd_le32s(&r, &msg->h.op_code);
    msg->raw = buf;
    msg->raw_len = mlen;
    r.left = mlen - WIRE_HEADER_LEN; /* this message only */

    switch (msg->h.op_code) {
    case WIRE_OP_MSG:
        rc = parse_msg(&r, buf, opts, msg, err);
        break;
    case WIRE_OP_QUERY:
        rc = parse_query(&r, buf, deep, msg, err);
        break;
    case WIRE_OP_REPLY:
        rc = parse_reply(&r, buf, deep, msg, err);
        break;
    case WIRE_OP_COMMAND:
    case WIRE_OP_COMMANDREPLY:
        rc = parse_command(&r, buf, deep, msg, err);
        break;
    case WIRE_OP_COMPRESSED:
        rc = parse_compressed(&r, buf, msg, err);
        break;
    default:
        parse_legacy(&r, msg);
        break;
    }
    return rc < 0 ? rc : MT_OK;
}

int
wire_msg_parse(const uint8_t *buf, size_t len, struct wire_msg *msg,
               size_t *consumed, struct mt_err *err)
{
    return wire_msg_parse_opts(buf, len, 0, msg, consumed, err);
}

/* ---- command lookup (top level only) ---- */

static void
copy_str(char *dst, size_t cap, const char *src, size_t n)
{
    if (n >= cap)
        n = cap - 1; /* truncate names that do not fit */
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* db from "db.coll" (everything before the first dot); coll after it. */
static void
split_ns(struct wire_cmd *cmd, const char *ns, bool want_coll)
{
    const char *dot = strchr(ns, '.');
    size_t dblen = dot ? (size_t)(dot - ns) : strlen(ns);

    copy_str(cmd->db, sizeof(cmd->db), ns, dblen);
    if (want_coll && dot != NULL)
        copy_str(cmd->coll, sizeof(cmd->coll), dot + 1, strlen(dot + 1));
}

/*
 * Top-level walk: first key is the name, a UTF-8 first value the
 * collection, "$db" the database; getMore names its collection in
 * "collection".  An OP_QUERY command wrapped as {$query: {...}} is unwrapped.
 */
static int
walk_command(struct wire_cmd *cmd, const uint8_t *body, size_t body_len)
{
    bson_iter_t it, sub;
    bool first = true, getmore = false;
    uint32_t n;
    const char *s;

    if (!bson_iter_init_from_data(&it, body, body_len))
        return MT_EBSON;
    while (bson_iter_next(&it)) {
        const char *key = bson_iter_key(&it);
        bool utf8 = BSON_ITER_HOLDS_UTF8(&it);

        if (first && strcmp(key, "$query") == 0 &&
            BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &sub)) {
            if (bson_iter_next(&sub)) {
                copy_str(cmd->name, sizeof(cmd->name), bson_iter_key(&sub),
                         strlen(bson_iter_key(&sub)));
                if (BSON_ITER_HOLDS_UTF8(&sub)) {
                    s = bson_iter_utf8(&sub, &n);
                    copy_str(cmd->coll, sizeof(cmd->coll), s, n);
                }
            }
        } else if (first) {
            copy_str(cmd->name, sizeof(cmd->name), key, strlen(key));
            if (utf8) {
                s = bson_iter_utf8(&it, &n);
                copy_str(cmd->coll, sizeof(cmd->coll), s, n);
            }
        } else if (!utf8) {
            /* only strings are looked at after the first key */
        } else if (key[0] == '$' && strcmp(key, "$db") == 0) {
            s = bson_iter_utf8(&it, &n);
            copy_str(cmd->db, sizeof(cmd->db), s, n);
        } else if (getmore && strcmp(key, "collection") == 0) {
            s = bson_iter_utf8(&it, &n);
            copy_str(cmd->coll, sizeof(cmd->coll), s, n);
        }
        if (first)
            getmore = strcmp(cmd->name, "getMore") == 0;
        first = false;
        /* Nothing more to learn once the name and $db are known (getMore
         * also needs its collection): stop walking. */
        if (cmd->db[0] != 0 && (cmd->coll[0] != 0 || !getmore))
            return 0;
    }
    return it.err_off != 0 ? MT_EBSON : 0;
}

static const char *
legacy_name(int32_t op_code)
{
    switch (op_code) {
    case WIRE_OP_UPDATE:
        return "update";
    case WIRE_OP_INSERT:
        return "insert";
    case WIRE_OP_GET_MORE:
        return "getMore";
    case WIRE_OP_DELETE:
        return "delete";
    case WIRE_OP_KILL_CURSORS:
        return "killCursors";
    default:
        return "";
    }
}

int
wire_msg_command(const struct wire_msg *msg, struct wire_cmd *cmd)
{
    bool reply = false;
    int rc = 0;

    memset(cmd, 0, sizeof(*cmd));
    switch (msg->h.op_code) {
    case WIRE_OP_MSG:
        reply = msg->h.response_to != 0;
        break;
    case WIRE_OP_REPLY:
    case WIRE_OP_COMMANDREPLY:
        reply = true;
        break;
    case WIRE_OP_QUERY:
        if (msg->full_collection == NULL)
            return MT_EPROTO;
        split_ns(cmd, msg->full_collection, false);
        if (!strstr(msg->full_collection, ".$cmd")) {
            /* A legacy find on db.coll: the query is a filter. */
            split_ns(cmd, msg->full_collection, true);
            copy_str(cmd->name, sizeof(cmd->name), "find", 4);
            return 0;
        }
        break;
    case WIRE_OP_COMMAND:
        if (msg->command_db != NULL)
            copy_str(cmd->db, sizeof(cmd->db), msg->command_db,
                     strlen(msg->command_db));
        break;
    case WIRE_OP_COMPRESSED:
        return MT_EUNSUPPORTED; /* wire_decompress first */
    default:
        copy_str(cmd->name, sizeof(cmd->name), legacy_name(msg->h.op_code),
                 strlen(legacy_name(msg->h.op_code)));
        if (msg->full_collection != NULL)
            split_ns(cmd, msg->full_collection, true);
        return 0;
    }
    if (msg->body == NULL)
        return reply ? 0 : MT_EBSON;
    if (reply) {
        /* Only check that the body is walkable; a reply names nothing. */
        bson_iter_t it;
        if (!bson_iter_init_from_data(&it, msg->body, msg->body_len))
            return MT_EBSON;
        return 0;
    }
    rc = walk_command(cmd, msg->body, msg->body_len);
    cmd->is_hello = strcmp(cmd->name, "hello") == 0 ||
                    strcmp(cmd->name, "isMaster") == 0 ||
                    strcmp(cmd->name, "ismaster") == 0;
    return rc;
}
