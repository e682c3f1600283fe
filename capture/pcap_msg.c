/*
 * pcap_msg.c -- message framing of a reassembled TCP direction, with
 * resynchronisation (see pcap_msg.h).
 *
 * Wire format
 * (https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/): 0
 * int32 messageLength  4 requestID  8 responseTo  12 opCode 16  OP_MSG: uint32
 * flagBits, sections (kind 0: BSON; kind 1: int32 size, cstring id, BSON...),
 * optional CRC-32C OP_QUERY: int32 flags, cstring ns, int32 skip, int32
 * nreturn, BSON OP_REPLY: int32 flags, int64 cursorID, int32 from, int32 n,
 * BSON... OP_COMPRESSED: int32 originalOpcode, int32 uncompressedSize, uint8
 * compressorId, bytes
 *
 * Fast path: when nothing is pending, messages are framed straight from
 * the segment bytes; only an incomplete tail is copied.
 */
#include "pcap_msg.h"

#include <string.h>

#include "core/log.h"
#include "core/rd.h"
#include "core/redact.h"
#include "core/trace.h"
#include "core/wire.h"

/* Held bytes: the largest message plus one segment run. */
#define PMSG_BUF_MAX ((size_t)WIRE_MSG_LEN_MAX + 1024 * 1024)
/* Longest OP_QUERY namespace accepted when scanning. */
#define PMSG_NS_MAX 512

void
pmsg_sink_init(struct pmsg_sink *s, struct trace_writer *w)
{
    memset(s, 0, sizeof(*s));
    s->w = w;
    mt_buf_init(&s->plain, WIRE_MSG_LEN_MAX);
    mt_buf_init(&s->redacted, WIRE_MSG_LEN_MAX);
}

void
pmsg_sink_free(struct pmsg_sink *s)
{
    mt_buf_free(&s->plain);
    mt_buf_free(&s->redacted);
}

void
pmsg_dir_init(struct pmsg_dir *d, uint64_t conn_id, uint8_t dir, bool midstream)
{
    memset(d, 0, sizeof(*d));
    mt_buf_init(&d->buf, PMSG_BUF_MAX);
    d->conn_id = conn_id;
    d->dir = dir;
    d->resync = midstream;
}

void
pmsg_dir_free(struct pmsg_dir *d)
{
    mt_buf_free(&d->buf);
}

size_t
pmsg_dir_partial(const struct pmsg_dir *d)
{
    return d->resync ? 0 : d->buf.len;
}

void
pmsg_dir_end(struct pmsg_dir *d, struct pmsg_sink *s)
{
    if (d->resync)
        s->skipped_bytes += d->buf.len; /* a tail that never framed */
    mt_buf_reset(&d->buf);
}

/* The first BSON document at r fits in `room` bytes? 1, 0, -1. */
static int
bson_fits(struct rd r, size_t room)
{
    int32_t blen;

    if (!rd_le32s(&r, &blen))
        return -1;
    return blen >= 5 && (size_t)blen <= room ? 1 : 0;
}

static int
plausible_msg(struct rd r, size_t body)
{
    uint32_t flags;
    uint8_t kind;
    int32_t size;

    if (body < 4 + 1 + 5)
        return 0;
    if (!rd_le32(&r, &flags) || !rd_u8(&r, &kind))
        return -1;
    if (flags & WIRE_MSG_REQUIRED_MASK &
        ~(WIRE_MSG_CHECKSUM_PRESENT | WIRE_MSG_MORE_TO_COME))
        return 0;
    body -= 5 + ((flags & WIRE_MSG_CHECKSUM_PRESENT) ? 4 : 0);
    if (kind == 0)
        return bson_fits(r, body);
    if (kind != 1)
        return 0;
    if (!rd_le32s(&r, &size))
        return -1;
    return size >= 4 + 2 && (size_t)size <= body ? 1 : 0;
}

static int
plausible_query(struct rd r, size_t body)
{
    size_t avail = r.left;
    const char *ns;
    size_t nslen;

    if (body < 4 + 4 + 8 + 5)
        return 0;
    if (!rd_skip(&r, 4))
        return -1;
    if (!rd_cstr(&r, &ns, &nslen))
        return avail < body && avail < PMSG_NS_MAX ? -1 : 0;
    if (nslen < 3 || nslen > PMSG_NS_MAX || memchr(ns, '.', nslen) == NULL)
        return 0;
    for (size_t i = 0; i < nslen; i++)
        if ((unsigned char)ns[i] < 0x20 || (unsigned char)ns[i] >= 0x7f)
            return 0;
    if (body < 4 + nslen + 1 + 8 + 5)
        return 0;
    if (!rd_skip(&r, 8))
        return -1;
    return bson_fits(r, body - (4 + nslen + 1 + 8));
}

static int
plausible_reply(struct rd r, size_t body, int32_t response_to)
{
    int32_t flags, from, nret;
    int64_t cursor;

    if (body < 20 || response_to == 0)
        return 0;
    if (!rd_le32s(&r, &flags) || !rd_le64s(&r, &cursor) ||
        !rd_le32s(&r, &from) || !rd_le32s(&r, &nret))
        return -1;
    if ((flags & ~0xf) != 0 || nret < 0 || from < 0)
        return 0;
    if (body == 20)
        return nret == 0 ? 1 : 0;
    return bson_fits(r, body - 20);
}

static int
plausible_compressed(struct rd r, size_t body)
{
    int32_t orig, usize;
    uint8_t cid;

    if (body < 9 + 1)
        return 0;
    if (!rd_le32s(&r, &orig) || !rd_le32s(&r, &usize) || !rd_u8(&r, &cid))
        return -1;
    if (!wire_opcode_known(orig) || orig == WIRE_OP_COMPRESSED ||
        orig == WIRE_OP_RESERVED)
        return 0;
    return usize > 0 && usize <= WIRE_MSG_LEN_MAX && cid <= 3 ? 1 : 0;
}

int
pmsg_plausible(const uint8_t *p, size_t n)
{
    struct rd r = rd_init(p, n);
    int32_t mlen, rid, rto, op;
    size_t body;

    if (!rd_le32s(&r, &mlen) || !rd_le32s(&r, &rid) || !rd_le32s(&r, &rto) ||
        !rd_le32s(&r, &op))
        return -1;
    if (mlen < WIRE_HEADER_LEN || mlen > WIRE_MSG_LEN_MAX ||
        !wire_opcode_known(op) || op == WIRE_OP_RESERVED)
        return 0;
    body = (size_t)mlen - WIRE_HEADER_LEN;
    switch (op) {
    case WIRE_OP_MSG:
        return plausible_msg(r, body);
    case WIRE_OP_QUERY:
        return plausible_query(r, body);
    case WIRE_OP_REPLY:
        return plausible_reply(r, body, rto);
    case WIRE_OP_COMPRESSED:
        return plausible_compressed(r, body);
    case WIRE_OP_COMMANDREPLY:
        return rto != 0 && body >= 10 ? 1 : 0;
    default: /* legacy requests answer nothing */
        return rto == 0 && body >= 4 ? 1 : 0;
    }
}

#define PMSG_REJECTED 1 /* emit(): not a message after all */

/* Writes one framed message.  0, PMSG_REJECTED, or a writer error. */
static int
emit(struct pmsg_dir *d, struct pmsg_sink *s, const uint8_t *m, size_t mlen,
     uint64_t t_ns)
{
    struct trace_msg rec;
    struct wire_msg msg;
    struct mt_err err; /* read only after a failure filled it */
    size_t used;
    int rc;

    err.msg[0] = 0;
    memset(&rec, 0, sizeof(rec));
    rec.conn_id = d->conn_id;
    rec.t_ns = t_ns;
    rec.dir = d->dir;
    rec.flags = d->pending;
    rec.wire = m;
    rec.wire_len = (uint32_t)mlen;
    d->pending = 0;
    rc = wire_msg_parse_opts(m, mlen, WIRE_PARSE_SHALLOW, &msg, &used, &err);
    if (rc < 0 && (rec.flags & TRACE_MSG_RESYNC)) {
        /* A header found by scanning that frames but does not parse was
         * a false positive: keep scanning after its first byte. */
        d->pending = rec.flags & ~TRACE_MSG_RESYNC;
        d->resync = true;
        s->resyncs--;
        return PMSG_REJECTED;
    }
    if (rc < 0) {
        rec.flags |= TRACE_MSG_MALFORMED;
        s->malformed++;
    } else if (msg.h.op_code == WIRE_OP_COMPRESSED) {
        mt_buf_reset(&s->plain);
        rc = wire_decompress(&msg, &s->plain, &err);
        if (rc == 0) {
            rec.plain = s->plain.data;
            rec.plain_len = (uint32_t)s->plain.len;
        } else {
            if (s->decompress_failed++ == 0)
                mt_warn("connection %llu: %s", (unsigned long long)d->conn_id,
                        err.msg);
            rec.flags |= TRACE_MSG_MALFORMED;
            s->malformed++;
        }
    }
    s->messages++;
    if (s->w == NULL)
        return 0;
    if (s->redact != NULL && redact_trace_msg(s->redact, &rec, &s->redacted))
        s->redacted_n++;
    rc = trace_writer_msg(s->w, &rec);
    if (rc < 0 && s->werr == 0)
        s->werr = rc;
    return rc;
}

/* Scans base[*off..len) for a plausible header.  True when found. */
static bool
scan(struct pmsg_dir *d, struct pmsg_sink *s, const uint8_t *base, size_t len,
     size_t *off)
{
    size_t i = *off;

    for (; i < len; i++) {
        int pl = pmsg_plausible(base + i, len - i);
        if (pl < 0)
            break;
        if (pl == 1) {
            s->skipped_bytes += i - *off;
            *off = i;
            d->resync = false;
            d->pending |= TRACE_MSG_RESYNC;
            s->resyncs++;
            return true;
        }
    }
    s->skipped_bytes += i - *off;
    *off = i;
    return false;
}

/* Frames and writes every whole message in base[0..len); *used: bytes done
 * with (the rest must be kept for later). */
static int
frame_loop(struct pmsg_dir *d, struct pmsg_sink *s, const uint8_t *base,
           size_t len, size_t *used, uint64_t t_ns)
{
    size_t off = 0, mlen;
    int rc = 0;

    while (off < len) {
        if (d->resync && !scan(d, s, base, len, &off))
            break;
        rc = wire_frame(base + off, len - off, WIRE_MSG_LEN_MAX, &mlen, NULL);
        if (rc == MT_PARTIAL) {
            rc = 0;
            break;
        }
        if (rc < 0) { /* garbage where a header should be */
            d->resync = true;
            s->skipped_bytes++;
            off++;
            rc = 0;
            continue;
        }
        rc = emit(d, s, base + off, mlen, t_ns);
        if (rc == PMSG_REJECTED) {
            s->skipped_bytes++;
            off++;
            rc = 0;
            continue;
        }
        off += mlen;
        if (rc < 0)
            break;
    }
    *used = off;
    return rc;
}

int
pmsg_dir_data(struct pmsg_dir *d, struct pmsg_sink *s, const uint8_t *p,
              size_t n, uint64_t t_ns)
{
    size_t used = 0, k;
    int rc;

    if (d->skip > 0) {
        k = d->skip < n ? (size_t)d->skip : n;
        d->skip -= k;
        p += k;
        n -= k;
    }
    if (n == 0)
        return 0;
    if (d->buf.len == 0) {
        rc = frame_loop(d, s, p, n, &used, t_ns);
        if (rc < 0)
            return rc;
        p += used;
        n -= used;
        if (n == 0)
            return 0;
    }
    if (mt_buf_append(&d->buf, p, n) != 0) {
        /* Cannot happen for framed messages (<= 48 MB): treat as lost. */
        s->skipped_bytes += d->buf.len + n;
        mt_buf_reset(&d->buf);
        d->resync = true;
        return 0;
    }
    rc = frame_loop(d, s, d->buf.data, d->buf.len, &used, t_ns);
    mt_buf_consume(&d->buf, used);
    return rc;
}

void
pmsg_dir_gap(struct pmsg_dir *d, struct pmsg_sink *s, uint64_t n)
{
    int32_t mlen;
    struct rd r = rd_init(d->buf.data, d->buf.len);

    d->pending |= TRACE_MSG_GAP_BEFORE;
    if (d->skip > 0) {
        if (n <= d->skip) {
            d->skip -= n; /* still inside the lost message */
            return;
        }
        d->skip = 0;
        d->resync = true;
        return;
    }
    if (!d->resync && rd_le32s(&r, &mlen) && mlen >= WIRE_HEADER_LEN &&
        (size_t)mlen > d->buf.len && n <= (size_t)mlen - d->buf.len) {
        /* The hole is inside the message being assembled: drop that
         * message and skip exactly to the next one. */
        d->skip = (size_t)mlen - d->buf.len - n;
        s->skipped_bytes += d->buf.len;
        mt_buf_reset(&d->buf);
        return;
    }
    s->skipped_bytes += d->buf.len;
    mt_buf_reset(&d->buf);
    d->resync = true;
}
