/*
 * trace_rec.h -- encoding, decoding and validation of one trace record
 * (internal to core/trace.c and core/trace_read.c; the layout of each record
 * is in docs/trace-format.md).
 *
 * The same check runs before a record is written and after it is read
 * (TigerBeetle's pair assertions, STYLE.md section 8), so a writer never
 * produces what a reader refuses.
 */
#ifndef MT_TRACE_REC_H
#define MT_TRACE_REC_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "trace.h"

/* trace__rec_decode's return for a record type this reader does not know. */
#define TRACE__REC_UNKNOWN 1

/*
 * Checks that rec (of rec->type) is one the reader accepts: dir 0/1, lengths
 * within TRACE_MSG_LEN_MAX, strings NUL-terminated inside their arrays,
 * stats count within TRACE_STATS_MAX, a plain form only for OP_COMPRESSED.
 * Returns 0 or MT_ETOOBIG / MT_ECORRUPT with err set.  Cost: O(strings).
 */
int trace__rec_check(const struct trace_rec *rec, struct mt_err *err);

/*
 * Validates rec and appends its encoding (type, length, payload) to out.
 * out is unchanged on failure.  Returns 0, MT_ETOOBIG / MT_ECORRUPT (invalid
 * record, or out->len_max reached) or -ENOMEM.  Cost: O(record length).
 */
int trace__rec_encode(struct mt_buf *out, const struct trace_rec *rec,
                      struct mt_err *err);

/*
 * trace__rec_encode for a message record, without building a struct
 * trace_rec (the capture hot path: one call per message).  Same checks,
 * same bytes.
 */
int trace__msg_encode(struct mt_buf *out, const struct trace_msg *m,
                      struct mt_err *err);

/*
 * Decodes the payload (len bytes, borrowed) of a record of the given type
 * into rec; pointers in rec borrow from payload.  Bytes after the fields
 * this version knows are ignored (fields appended by newer writers).
 * Returns 0, TRACE__REC_UNKNOWN for a type this reader does not know, or
 * MT_ECORRUPT / MT_ETOOBIG with err set (err->offset relative to payload).
 */
int trace__rec_decode(uint8_t type, const uint8_t *payload, size_t len,
                      struct trace_rec *rec, struct mt_err *err);

/* The t_ns a record carries (start_mono_ns for a header). */
uint64_t trace__rec_time(const struct trace_rec *rec);

#endif
