/*
 * wire.h -- MongoDB wire protocol: framing, parsing and encoding.
 *
 * Spec:
 * https://github.com/mongodb/specifications/blob/master/source/message/OP_MSG.md
 * and https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/
 *
 * Every message starts with a 16-byte header, all integers little-endian:
 *
 *     0  int32 messageLength   total, header included
 *     4  int32 requestID
 *     8  int32 responseTo
 *    12  int32 opCode
 *
 * Parsed messages are views into the caller's buffer (picohttpparser's
 * phr_header): every pointer in struct wire_msg is borrowed and valid only
 * while that buffer is.  Nothing here converts a whole document; command
 * name, $db and collection come from walking the top level with libbson's
 * iterator (DESIGN.md rule 1, seed 004).
 *
 * Implemented in wire.c (framing, parsing, command lookup), wire_enc.c
 * (encoders, OP_COMPRESSED) and wire_crc.c (CRC-32C).  Costs measured by
 * bench/bench_wire.c are in docs/benchmarks.md.
 */
#ifndef MT_WIRE_H
#define MT_WIRE_H

/* libbson's headers trip -Wcast-qual (bson-atomic.h); keep our warning
 * set clean for every file that includes this one. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-qual"
#include <bson/bson.h>
#pragma GCC diagnostic pop
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

#define WIRE_HEADER_LEN 16
/* maxMessageSizeBytes default */
#define WIRE_MSG_LEN_MAX 48000000
/* 16 MiB + headroom */
#define WIRE_BSON_LEN_MAX (16 * 1024 * 1024 + 16 * 1024)
#define WIRE_BSON_DEPTH_MAX 100
/* kind-1 sections kept per OP_MSG (more: MT_ELIMIT) */
#define WIRE_SEQ_MAX 16

enum wire_opcode {
    WIRE_OP_REPLY = 1,
    WIRE_OP_UPDATE = 2001,
    WIRE_OP_INSERT = 2002,
    WIRE_OP_RESERVED = 2003,
    WIRE_OP_QUERY = 2004,
    WIRE_OP_GET_MORE = 2005,
    WIRE_OP_DELETE = 2006,
    WIRE_OP_KILL_CURSORS = 2007,
    WIRE_OP_COMMAND = 2010,
    WIRE_OP_COMMANDREPLY = 2011,
    WIRE_OP_COMPRESSED = 2012,
    WIRE_OP_MSG = 2013,
};

/* OP_MSG flagBits. Bits 0-15 are required: unknown ones are rejected. */
#define WIRE_MSG_CHECKSUM_PRESENT (1u << 0)
#define WIRE_MSG_MORE_TO_COME (1u << 1)
#define WIRE_MSG_EXHAUST_ALLOWED (1u << 16)
#define WIRE_MSG_REQUIRED_MASK 0xffffu

/* OP_COMPRESSED compressor ids. */
enum wire_compressor {
    WIRE_COMPRESSOR_NOOP = 0,
    WIRE_COMPRESSOR_SNAPPY = 1,
    WIRE_COMPRESSOR_ZLIB = 2,
    WIRE_COMPRESSOR_ZSTD = 3,
};

struct wire_header {
    int32_t message_length;
    int32_t request_id;
    int32_t response_to;
    int32_t op_code;
};

/* One OP_MSG kind-1 section: identifier plus concatenated BSON documents. */
struct wire_seq {
    const char *identifier; /* borrowed, NUL-terminated in the buffer */
    const uint8_t *docs;    /* borrowed: the documents, back to back */
    size_t docs_len;
};

struct wire_msg {
    struct wire_header h;
    const uint8_t *raw; /* borrowed: the whole message, header included */
    size_t raw_len;

    /*
     * The command or reply document: OP_MSG kind-0 body, OP_QUERY query,
     * OP_REPLY first document (NULL if none), OP_COMMAND commandArgs,
     * OP_COMMANDREPLY commandReply.  Borrowed.
     */
    const uint8_t *body;
    size_t body_len;

    /* OP_MSG */
    uint32_t flags;
    size_t nseq;
    struct wire_seq seq[WIRE_SEQ_MAX];
    bool has_checksum;
    uint32_t checksum;

    /* OP_COMMAND */
    const char *command_db;   /* borrowed: database cstring */
    const char *command_name; /* borrowed: commandName cstring */

    /* OP_QUERY (also OP_GET_MORE, OP_INSERT, ... fullCollectionName) */
    int32_t query_flags;
    const char *full_collection; /* borrowed */
    int32_t number_to_skip;
    int32_t number_to_return;

    /* OP_REPLY; docs also holds OP_COMMAND inputDocs / OP_COMMANDREPLY
     * outputDocs, and OP_QUERY's returnFieldsSelector (NULL: none) */
    int32_t response_flags;
    int64_t cursor_id;
    int32_t starting_from;
    int32_t number_returned;
    const uint8_t *docs; /* borrowed: all returned documents */
    size_t docs_len;

    /* OP_COMPRESSED */
    int32_t original_opcode;
    int32_t uncompressed_size;
    uint8_t compressor_id;
    const uint8_t *compressed; /* borrowed */
    size_t compressed_len;
};

/*
 * Framing only: looks at the header of the message starting at buf.
 * MT_OK: a whole message of *msg_len bytes is in buf.  MT_PARTIAL:
 * *msg_len is the total needed (WIRE_HEADER_LEN while the header itself is
 * incomplete).  MT_EPROTO / MT_ETOOBIG (length < 16, > len_max, unknown
 * opcode), with err->offset set.  A bad messageLength is refused as soon as
 * its 4 bytes are in.  len_max 0 means WIRE_MSG_LEN_MAX, and larger values
 * are clamped to it.  Cost: O(1); this is all the validation a forwarder
 * needs to cut a stream into messages.
 */
int wire_frame(const uint8_t *buf, size_t len, size_t len_max, size_t *msg_len,
               struct mt_err *err);

/*
 * Parses and validates one message at the start of buf (len bytes may hold
 * more than one message).  Checks every length against what is left, BSON
 * documents with bson_validate-level structure checks and nesting at most
 * WIRE_BSON_DEPTH_MAX, OP_MSG required flag bits and the CRC-32C checksum.
 * Returns MT_OK (*consumed = message length), MT_PARTIAL (*consumed = total
 * bytes needed), or a negative code with err->offset at the first bad byte.
 * msg fields borrow from buf.  Cost: O(message length), no allocation.
 */
int wire_msg_parse(const uint8_t *buf, size_t len, struct wire_msg *msg,
                   size_t *consumed, struct mt_err *err);

/*
 * Parse options (wire_msg_parse_opts).  The default (0) is the full check
 * that wire_msg_parse does.  Its cost is one pass of libbson's iterator over
 * every element of every document, recursing into sub-documents and arrays
 * with a depth counter (a few ns per element; no allocation, no decoding of
 * values), plus CRC-32C over the message when a checksum is present.
 *
 * WIRE_PARSE_SHALLOW: check only each document's int32 length prefix
 *   (>= 5, <= WIRE_BSON_LEN_MAX, <= what is left) and trailing NUL, not its
 *   elements or depth.  O(sections), for a hot path that only forwards and
 *   records bytes (capture).  The section/document boundaries are still
 *   exact, so nothing can over-read; wire_msg_command stays safe on such a
 *   message (libbson's iterator bounds-checks every element it visits and
 *   stops at the first corrupt one), but a corrupt or 1000-deep document is
 *   accepted and must be validated again before anything trusts it.
 * WIRE_PARSE_NO_CHECKSUM: read the CRC-32C but do not verify it.
 */
#define WIRE_PARSE_SHALLOW (1u << 0)
#define WIRE_PARSE_NO_CHECKSUM (1u << 1)

/*
 * wire_msg_parse with options (above).  Errors found after framing leave
 * *consumed = the message length so that a caller may skip or forward the
 * bad message; framing errors set *consumed = 0 (the stream is lost).
 * BSON nesting: the top-level document is depth 1; depth
 * WIRE_BSON_DEPTH_MAX is accepted, one more is MT_EBSON.
 */
int wire_msg_parse_opts(const uint8_t *buf, size_t len, unsigned opts,
                        struct wire_msg *msg, size_t *consumed,
                        struct mt_err *err);

/*
 * Decompresses an OP_COMPRESSED message into a complete ordinary message
 * (header rewritten: messageLength = 16 + uncompressedSize, same requestID
 * and responseTo, opCode = originalOpcode) appended to out.  The inner
 * message is not parsed: hand it to wire_msg_parse.
 *
 * Bombs are refused before anything is allocated: uncompressedSize must be
 * >= 0, <= WIRE_MSG_LEN_MAX - 16 and fit in out's room (len_max - len);
 * the decompressor then gets exactly that many bytes of output (snappy's
 * and zstd's own size headers must agree with it; zlib runs through
 * inflate with a bounded window), and producing fewer or more bytes than
 * declared is MT_ECOMPRESS.  Cost: one allocation at most (out's growth).
 *
 * Returns 0; MT_ECOMPRESS (corrupt payload or size mismatch), MT_ETOOBIG
 * (size over a limit), MT_EUNSUPPORTED (unknown compressorId), MT_EPROTO
 * (negative size), MT_EUSAGE (msg is not OP_COMPRESSED) or -ENOMEM, with
 * err set.  On failure out is unchanged (its capacity may have grown).
 */
int wire_decompress(const struct wire_msg *msg, struct mt_buf *out,
                    struct mt_err *err);

/* What a request or reply is about, from a top-level walk. */
struct wire_cmd {
    char name[64];  /* first key of the command document ("find", "hello") */
    char db[128];   /* $db, or the database of OP_QUERY's fullCollectionName */
    char coll[256]; /* value of the first key when it is a string, else "" */
    bool is_hello;  /* hello / isMaster / ismaster */
};

/*
 * Fills cmd from msg's body by iterating the top level only, and stops as
 * soon as name and $db (and a getMore's "collection") are known.  Names
 * that do not fit are truncated.  Returns 0, or MT_EBSON if the body is
 * unusable (what was found before the bad element is kept).
 *
 * - OP_MSG: a request has responseTo 0; one with responseTo != 0 is a
 *   reply and, like OP_REPLY / OP_COMMANDREPLY, gets name "" (a reply has
 *   no command key).
 * - OP_QUERY on "<db>.$cmd": the query's first key ({$query: {...}} is
 *   unwrapped); on any other namespace: name "find", db and coll from it.
 * - OP_COMMAND: db from its database field.
 * - OP_INSERT/UPDATE/DELETE/GET_MORE/KILL_CURSORS: name "insert",
 *   "update", "delete", "getMore", "killCursors"; db and coll from
 *   fullCollectionName when present.
 * - OP_COMPRESSED: MT_EUNSUPPORTED (wire_decompress first).
 * Cost: O(top-level elements before $db); no allocation.
 */
int wire_msg_command(const struct wire_msg *msg, struct wire_cmd *cmd);

/* "OP_MSG", "OP_QUERY", ... or "OP_UNKNOWN". Static string. */
const char *wire_opcode_name(int32_t op_code);
/* True for the opcodes listed in enum wire_opcode. */
bool wire_opcode_known(int32_t op_code);
/* "snappy", "zlib", "zstd", "noop", or "unknown". */
const char *wire_compressor_name(uint8_t id);

/* CRC-32C (Castagnoli), as OP_MSG checksums use. crc starts at 0. */
uint32_t wire_crc32c(uint32_t crc, const void *p, size_t n);

/*
 * Encoders append one complete message to out and return 0 or a negative
 * code (out unchanged on failure): MT_ETOOBIG (over WIRE_MSG_LEN_MAX or
 * out->len_max), -ENOMEM, MT_EUSAGE (wire_encode_msg: undefined required
 * flag bits; wire_encode_compressed: msg is not one complete message, or
 * is OP_COMPRESSED already), MT_EUNSUPPORTED (unknown compressor).
 * Documents are copied as they are (the caller's bson_t are trusted).
 */
int wire_encode_msg(struct mt_buf *out, int32_t request_id, int32_t response_to,
                    uint32_t flags, const bson_t *body,
                    const struct wire_seq *seq, size_t nseq);
/* flags & WIRE_MSG_CHECKSUM_PRESENT appends a CRC-32C. */

int wire_encode_query(struct mt_buf *out, int32_t request_id, int32_t flags,
                      const char *full_collection, int32_t skip,
                      int32_t n_return, const bson_t *query);

int wire_encode_reply(struct mt_buf *out, int32_t request_id,
                      int32_t response_to, int32_t response_flags,
                      int64_t cursor_id, int32_t starting_from,
                      const bson_t *const *docs, size_t ndocs);

/*
 * bson_append_iter(dst, key, key_len, it) for values read from a trace: an
 * array whose keys are not "0", "1", ... (a damaged trace, a server's quirk)
 * is appended with its keys renumbered, its elements through this function
 * again, instead of as it is, where libbson prints "invalid array detected"
 * on stderr for every copy.  A well-formed array is copied as it is, and
 * so is anything nested deeper than WIRE_BSON_DEPTH_MAX.  false when dst
 * cannot grow (as bson_append_iter).
 */
bool wire_bson_append_iter(bson_t *dst, const char *key, int key_len,
                           const bson_iter_t *it);

/* Wraps the complete message msg (header included) in OP_COMPRESSED. */
int wire_encode_compressed(struct mt_buf *out, const uint8_t *msg,
                           size_t msg_len, uint8_t compressor_id,
                           struct mt_err *err);

#endif
