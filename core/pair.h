/*
 * pair.h -- request->reply pairing over a trace: a reply answers the
 * request on its connection whose requestID is its responseTo.
 *
 * The table holds the requests still waiting, keyed by (connection id,
 * requestID), each with a caller-defined value of a fixed size (the
 * request's time, its command, a copy of its bytes...).  pair_msg_header
 * reads the keys from a recorded message's plain bytes (trace.h
 * trace_msg_plain).  dump and stats (tools/), replay's index and sim's
 * trace latencies pair through it.
 */
#ifndef MT_PAIR_H
#define MT_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/trace.h"

/* The header fields pairing needs, of the plain form of a message. */
struct pair_hdr {
    int32_t request_id;
    int32_t response_to;
    int32_t op_code;   /* of the plain form (never OP_COMPRESSED when a
                          plain form was recorded) */
    bool more_to_come; /* OP_MSG flag bit 1: no reply follows */
};

/*
 * Fills h from the first bytes of m's plain form (the recorded
 * decompressed form if present, else the wire form).  False when fewer
 * than the 16 header bytes are there.  Reads at most 20 bytes; does not
 * validate the rest of the message.
 */
bool pair_msg_header(const struct trace_msg *m, struct pair_hdr *h);

struct pair_table {
    uint8_t *slots;      /* owned: cap slots of slot_size bytes */
    size_t cap;          /* power of two, or 0 */
    size_t n;            /* entries */
    size_t n_max;        /* pair_table_put beyond this: MT_ELIMIT */
    size_t val_size;     /* bytes of each entry's value */
    size_t slot_size;    /* header and value, rounded up to 8 */
    uint32_t head, tail; /* the entries in insertion order (slot indices) */
};

/* An empty table of at most n_max entries of val_size-byte values.
 * Allocates nothing until the first put. */
void pair_table_init(struct pair_table *t, size_t val_size, size_t n_max);

/* Frees the slots (not what values point to: drop those first with
 * pair_table_foreach).  pair_table_free of a zeroed table is a no-op. */
void pair_table_free(struct pair_table *t);

/*
 * Inserts (conn, req) with a copy of val's val_size bytes, or replaces
 * the value of an entry already there (which keeps its place in the
 * order).  Returns 0, MT_ELIMIT (n_max entries already, or more than
 * 2^32 slots needed) or -ENOMEM.  Amortised O(1).
 */
int pair_table_put(struct pair_table *t, uint64_t conn, int32_t req,
                   const void *val);

/* Removes (conn, req), its value copied into val unless val is NULL;
 * false when absent.  O(1) expected. */
bool pair_table_take(struct pair_table *t, uint64_t conn, int32_t req,
                     void *val);

/* Calls fn for every entry (the requests left unanswered), oldest first;
 * fn must not change the table.  O(entries). */
void pair_table_foreach(const struct pair_table *t,
                        void (*fn)(void *val, void *ctx), void *ctx);

/* Removes every entry of connection conn, calling fn (when not NULL) on
 * each value first, oldest first.  O(entries). */
void pair_table_drop_conn(struct pair_table *t, uint64_t conn,
                          void (*fn)(void *val, void *ctx), void *ctx);

#endif
