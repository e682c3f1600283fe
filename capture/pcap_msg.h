/*
 * pcap_msg.h -- cut one direction of a reassembled TCP stream into MongoDB
 * wire messages and write them to the trace; resynchronise after gaps and
 * mid-stream starts.
 */
#ifndef MT_PCAP_MSG_H
#define MT_PCAP_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct trace_writer;
struct redact_cfg;

/* Shared by every direction of a capture. */
struct pmsg_sink {
    struct trace_writer *w;          /* borrowed; NULL: count only */
    struct mt_buf plain;             /* owned: scratch for decompression */
    const struct redact_cfg *redact; /* borrowed; NULL: no redaction */
    struct mt_buf redacted;          /* owned: scratch for redacted messages */
    uint64_t redacted_n;             /* messages changed by redaction */
    uint64_t messages;               /* messages written */
    uint64_t resyncs;       /* times the stream was found again by scanning */
    uint64_t skipped_bytes; /* bytes discarded while out of sync */
    uint64_t malformed;     /* messages framed but failing to parse */
    uint64_t decompress_failed;
    int werr; /* first trace writer error (0: none) */
};

/* One direction of one connection. */
struct pmsg_dir {
    struct mt_buf buf; /* owned: bytes of a message not yet complete */
    bool resync;       /* scanning for a plausible header */
    uint32_t pending;  /* TRACE_MSG_* flags for the next message */
    uint64_t skip;     /* bytes still to drop of a message known lost */
    uint64_t conn_id;
    uint8_t dir; /* enum trace_dir */
};

void pmsg_sink_init(struct pmsg_sink *s, struct trace_writer *w);
void pmsg_sink_free(struct pmsg_sink *s);

/* midstream: the start of the stream was not captured (resync first). */
void pmsg_dir_init(struct pmsg_dir *d, uint64_t conn_id, uint8_t dir,
                   bool midstream);
void pmsg_dir_free(struct pmsg_dir *d);

/*
 * n more in-order bytes arrived at t_ns.  Every message completed by them
 * is written (t_ns is its timestamp).  Returns 0, or a negative code for a
 * fatal error (trace writer, memory); stream garbage is never fatal.
 */
int pmsg_dir_data(struct pmsg_dir *d, struct pmsg_sink *s, const uint8_t *p,
                  size_t n, uint64_t t_ns);

/* n bytes of the stream are lost: drop the message they belong to and
 * find the stream again. */
void pmsg_dir_gap(struct pmsg_dir *d, struct pmsg_sink *s, uint64_t n);

/* Bytes of an incomplete message held (for the close record). */
size_t pmsg_dir_partial(const struct pmsg_dir *d);

/* The stream ended: bytes still held while scanning count as skipped. */
void pmsg_dir_end(struct pmsg_dir *d, struct pmsg_sink *s);

/*
 * Does p[0..n) start with a plausible message header?  1 yes, 0 no, -1 need
 * more bytes to tell.  Plausible: messageLength in [16+min body, 48 MB], a
 * known opcode, and for OP_MSG valid required flag bits and a first section
 * whose BSON length fits; OP_QUERY a namespace with a dot; OP_REPLY and
 * OP_COMPRESSED sane fixed fields.
 */
int pmsg_plausible(const uint8_t *p, size_t n);

#endif
