/*
 * trace_read.c -- the streaming trace reader (API in trace.h; format in
 * docs/trace-format.md).
 *
 * The file is a sequence of frames, each starting with a 4-byte LE magic:
 *
 *     0xFD2FB528              zstd frame: whole records (decompressed here
 *                             with ZSTD_decompressStream, no index needed)
 *     0x184D2A50..0x184D2A5F  skippable frame: u32 size, size bytes.
 *                             0x184D2A5E is the seek index: checked against
 *                             the frames read, when no bytes were lost.
 *                             0x184D2A5C right after a zstd frame is its
 *                             checksum frame (CRC-32 of its bytes).
 *
 * A frame's records are handed out only once the whole frame decompressed
 * and its checksum matched: the checksum frame after it (index version
 * 2), else zstd's own XXH64 content checksum if the frame has one
 * (checked by zstd).  Input comes from memory or a FILE * read in
 * chunks; every length from the file is checked against a limit before use.
 * On a bad frame the reader scans forward for the next frame magic
 * (resynchronisation) and counts the bytes it skipped.
 */
#include "trace_read.h"

#include <errno.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "buf.h"
#include "log.h"
#include "mem.h"
#include "rd.h"
#include "trace_rec.h"

#define CHUNK_LEN (128u * 1024)
#define OUT_MIN (128u * 1024) /* free output space per decompress call */
#define SKIP_MAGIC_MASK 0xFFFFFFF0u
#define SKIP_MAGIC_START 0x184D2A50u
#define INDEX_LEN_MAX (64u * 1024 * 1024 + TRACE_FOOTER_LEN)

struct trace_reader {
    const uint8_t *mem; /* borrowed: memory input, or NULL */
    FILE *fp;           /* owned if own_fp, else borrowed; NULL for mem */
    bool own_fp;
    uint8_t *chunk;      /* owned: CHUNK_LEN bytes of file input */
    ZSTD_inBuffer in;    /* the input window: mem, or chunk */
    uint64_t in_base;    /* file offset of in.src[0] */
    int io_errno;        /* fread failed (not EOF): its errno, else 0 */
    ZSTD_DCtx *dctx;     /* owned */
    struct mt_buf frame; /* decompressed records of the current frame */
    size_t frame_pos;    /* next record in frame */
    uint64_t frame_off;  /* file offset of the current frame */
    uint32_t frame_crc;  /* CRC-32 of its compressed bytes */
    bool frame_xxh;      /* it carries zstd's content checksum */
    size_t frame_max;
    struct trace_header header;
    bool header_pending; /* trace_reader_next has not returned it yet */
    bool starting;       /* reader_start is reading the header frame */
    bool header_lost;    /* the header frame was damaged */
    int pend_rc;         /* an error trace_reader_next returns first */
    struct mt_err pend_err;
    bool seen_end; /* the end record was returned */
    bool done;     /* MT_END from now on */
    uint64_t records;
    uint64_t frames;      /* data frames read completely */
    uint64_t frame_bytes; /* their compressed bytes */
    uint64_t frame_recs;  /* records in them (known and unknown) */
    uint64_t lost;        /* bytes skipped as damaged */
};

/* ---- input ---- */

/* The first four bytes of a pcap or pcapng file (read little-endian), a
 * common thing to hand to dump, stats or replay by mistake. */
static bool
is_pcap_magic(uint32_t magic)
{
    return magic == 0xa1b2c3d4u || magic == 0xd4c3b2a1u || /* pcap, us */
           magic == 0xa1b23c4du || magic == 0x4d3cb2a1u || /* pcap, ns */
           magic == 0x0a0d0d0au; /* pcapng section header block */
}

static uint64_t
in_offset(const struct trace_reader *r)
{
    return r->in_base + r->in.pos;
}

static size_t
in_avail(const struct trace_reader *r)
{
    return r->in.size - r->in.pos;
}

/* Makes at least n (<= CHUNK_LEN) bytes contiguous at in.src + in.pos if
 * the input has them; returns how many are available (may be < n at EOF). */
static size_t
in_peek(struct trace_reader *r, size_t n)
{
    size_t have = in_avail(r), got;

    if (have >= n || r->fp == NULL)
        return have;
    MT_ASSERT(n <= CHUNK_LEN);
    memmove(r->chunk, (const uint8_t *)r->in.src + r->in.pos, have);
    r->in_base += r->in.pos;
    r->in.src = r->chunk;
    r->in.pos = 0;
    r->in.size = have;
    while (r->in.size < CHUNK_LEN) {
        got = fread(r->chunk + r->in.size, 1, CHUNK_LEN - r->in.size, r->fp);
        if (got == 0) {
            if (ferror(r->fp))
                r->io_errno = errno ? errno : EIO;
            break;
        }
        r->in.size += got;
        if (r->in.size >= n)
            break;
    }
    return in_avail(r);
}

/* Refills an exhausted window; false at end of input. */
static bool
in_fill(struct trace_reader *r)
{
    return in_avail(r) > 0 || in_peek(r, 1) > 0;
}

/* Consumes up to n bytes; returns how many were there. */
static uint64_t
in_skip(struct trace_reader *r, uint64_t n)
{
    uint64_t done = 0;

    while (done < n && in_fill(r)) {
        size_t k = in_avail(r);
        if (k > n - done)
            k = (size_t)(n - done);
        r->in.pos += k;
        done += k;
    }
    return done;
}

static uint32_t
le32_at(const void *p)
{
    struct rd rd = rd_init(p, 4);
    uint32_t v = 0;
    rd_le32(&rd, &v);
    return v;
}

static bool
is_frame_magic(uint32_t m)
{
    return m == ZSTD_MAGICNUMBER || m == TRACE_INDEX_FRAME_MAGIC;
}

/*
 * After damage at bad_off: skips to the next zstd frame or index frame
 * magic (or the end), counts the bytes skipped, and fills err.
 */
static int
resync(struct trace_reader *r, uint64_t bad_off, int code, const char *what,
       struct mt_err *err)
{
    uint64_t lost;

    if (in_offset(r) == bad_off)
        in_skip(r, 1);
    while (in_peek(r, 4) >= 4 &&
           !is_frame_magic(le32_at((const uint8_t *)r->in.src + r->in.pos)))
        r->in.pos++;
    if (in_avail(r) < 4)
        in_skip(r, 4); /* fewer than 4 bytes left: no frame fits */
    lost = in_offset(r) - bad_off;
    r->lost += lost;
    mt_buf_reset(&r->frame);
    r->frame_pos = 0;
    if (in_avail(r) == 0 && !in_fill(r))
        return mt_err_set(err, code, bad_off,
                          "%s at offset %llu: %llu bytes lost up to the end "
                          "of the file",
                          what, (unsigned long long)bad_off,
                          (unsigned long long)lost);
    if (r->starting) /* at offset 0: the lost bytes end where it resumes */
        return mt_err_set(err, code, bad_off,
                          "%s: header record lost, resuming at offset %llu",
                          what, (unsigned long long)in_offset(r));
    return mt_err_set(err, code, bad_off,
                      "%s at offset %llu: %llu bytes lost, resuming at "
                      "offset %llu",
                      what, (unsigned long long)bad_off,
                      (unsigned long long)lost,
                      (unsigned long long)in_offset(r));
}

/* ---- frames ---- */

static int
frame_truncated(struct trace_reader *r, uint64_t off, struct mt_err *err)
{
    uint64_t lost = in_offset(r) - off;

    r->lost += lost;
    r->done = true;
    mt_buf_reset(&r->frame);
    r->frame_pos = 0;
    if (r->io_errno)
        return mt_err_set(err, -r->io_errno, off,
                          "read error (%s) in the frame at offset %llu: "
                          "%llu bytes of it lost",
                          strerror(r->io_errno), (unsigned long long)off,
                          (unsigned long long)lost);
    return mt_err_set(err, MT_ETRUNC, off,
                      "truncated zstd frame at offset %llu: %llu bytes of an "
                      "incomplete frame lost (records in it not recoverable)",
                      (unsigned long long)off, (unsigned long long)lost);
}

/* Out of memory mid-frame: final (the input position is lost). */
static int
reader_oom(struct trace_reader *r, uint64_t off, struct mt_err *err)
{
    r->done = true;
    mt_buf_reset(&r->frame);
    r->frame_pos = 0;
    return mt_err_set(err, -ENOMEM, off,
                      "out of memory reading the frame at offset %llu",
                      (unsigned long long)off);
}

/* RFC 8878 3.1.1.1.1: bit 2 of the Frame_Header_Descriptor (the byte after
 * the magic) of the zstd frame at the input position is its
 * Content_Checksum_flag. */
static bool
frame_has_xxh(struct trace_reader *r)
{
    size_t have = in_peek(r, 5);
    struct rd d = rd_init((const uint8_t *)r->in.src + r->in.pos, have);
    uint8_t fhd = 0;

    return rd_skip(&d, 4) && rd_u8(&d, &fhd) && (fhd & 0x04) != 0;
}

/* Decompresses the zstd frame at the current input position into frame. */
static int
frame_decode(struct trace_reader *r, struct mt_err *err)
{
    uint64_t off = in_offset(r);
    char what[96];
    int stalls = 0;

    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->frame_crc = 0;
    r->frame_xxh = frame_has_xxh(r);
    mt_buf_reset(&r->frame);
    r->frame.len_max = r->frame_max + 1;
    r->frame_pos = 0;
    r->frame_off = off;
    for (;;) {
        ZSTD_outBuffer out;
        size_t ret, want, in_before = r->in.pos;

        /* len_max is frame_max + 1: a frame that fills the spare byte is
         * over the limit, and one of exactly frame_max still ends. */
        if (r->frame.len > r->frame_max) {
            snprintf(what, sizeof(what),
                     "zstd frame decompresses beyond the %zu-byte limit",
                     r->frame_max);
            return resync(r, off, MT_ETOOBIG, what, err);
        }
        want = r->frame.len_max - r->frame.len;
        if (want > OUT_MIN)
            want = OUT_MIN;
        if (mt_buf_reserve(&r->frame, want) < 0)
            return reader_oom(r, off, err);
        out.dst = r->frame.data + r->frame.len;
        out.size = r->frame.cap - r->frame.len;
        out.pos = 0;
        ret = ZSTD_decompressStream(r->dctx, &out, &r->in);
        r->frame_crc =
            (uint32_t)crc32(r->frame_crc, (const Bytef *)r->in.src + in_before,
                            (uInt)(r->in.pos - in_before));
        r->frame.len += out.pos;
        if (ZSTD_isError(ret)) {
            snprintf(what, sizeof(what), "corrupt zstd frame (%s)",
                     ZSTD_getErrorName(ret));
            return resync(r, off, MT_ECORRUPT, what, err);
        }
        if (ret == 0)
            break;
        if (out.pos == out.size)
            continue; /* output full: grow and go on */
        if (in_avail(r) > 0) {
            if (out.pos == 0 && r->in.pos == in_before && ++stalls > 4)
                return resync(r, off, MT_ECORRUPT,
                              "zstd frame makes no progress", err);
            continue;
        }
        if (!in_fill(r))
            return frame_truncated(r, off, err);
    }
    return 0;
}

/*
 * After a decoded data frame: checks and passes over its checksum frame.
 * A frame with zstd's own content checksum (XXH64, checked by zstd: the
 * traces of index version 1) needs none.  A bad checksum frame, a data frame
 * that does not match it, or damaged bytes where its checksum frame belongs
 * lose the frame.  A frame with neither checksum that another frame or the
 * end of the file follows is taken as it is (a writer without checksums, or
 * a file cut right after the frame).
 */
static int
frame_check(struct trace_reader *r, struct mt_err *err)
{
    size_t have = in_peek(r, TRACE_CRC_FRAME_LEN);
    const uint8_t *p = (const uint8_t *)r->in.src + r->in.pos;
    uint64_t clen = in_offset(r) - r->frame_off;
    char what[96];

    /* The file ends inside what can only be the start of a checksum
     * frame (magic bytes 5C 2A 4D 18): the frame is incomplete. */
    if (have > 0 && have < 4 && memcmp(p, "\x5c\x2a\x4d\x18", have) == 0)
        return frame_truncated(r, r->frame_off, err);
    if (have < 4 || le32_at(p) != TRACE_CRC_FRAME_MAGIC) {
        uint32_t m = have < 4 ? 0 : le32_at(p);
        if (r->frame_xxh || have < 4 || is_frame_magic(m) ||
            (m & SKIP_MAGIC_MASK) == SKIP_MAGIC_START)
            return 0;
        return resync(r, r->frame_off, MT_ECORRUPT,
                      "corrupt zstd frame (damaged bytes where its checksum "
                      "frame belongs)",
                      err);
    }
    if (have < TRACE_CRC_FRAME_LEN)
        return frame_truncated(r, r->frame_off, err);
    if (le32_at(p + 4) != 8) {
        snprintf(what, sizeof(what),
                 "corrupt zstd frame (its checksum frame's size field is "
                 "%u, not 8)",
                 le32_at(p + 4));
        return resync(r, r->frame_off, MT_ECORRUPT, what, err);
    }
    if (le32_at(p + 8) != r->frame_crc) {
        snprintf(what, sizeof(what),
                 "corrupt zstd frame (CRC-32 0x%08x, its checksum frame "
                 "says 0x%08x)",
                 r->frame_crc, le32_at(p + 8));
        return resync(r, r->frame_off, MT_ECORRUPT, what, err);
    }
    if (le32_at(p + 12) != clen) /* the CRC of its clen bytes matched */
        r->pend_rc = mt_err_set(&r->pend_err, MT_ECORRUPT, in_offset(r),
                                "checksum frame at offset %llu records "
                                "length %u, the frame is %llu bytes (its "
                                "CRC-32 matches: records kept)",
                                (unsigned long long)in_offset(r),
                                le32_at(p + 12), (unsigned long long)clen);
    r->in.pos += TRACE_CRC_FRAME_LEN;
    return 0;
}

/* Checks the seek index (payload of size bytes, already read) against the
 * frames read.  Only meaningful when nothing was lost. */
static int
index_check(struct trace_reader *r, const uint8_t *p, uint32_t size,
            uint64_t off, struct mt_err *err)
{
    struct rd rd = rd_init(p, size);
    uint64_t csum = 0, rsum = 0, t;
    uint32_t n, version, magic, c = 0, d = 0, k = 0;

    if (size < TRACE_FOOTER_LEN)
        return mt_err_set(err, MT_ECORRUPT, off,
                          "seek index at offset %llu too short (%u bytes)",
                          (unsigned long long)off, size);
    n = (size - TRACE_FOOTER_LEN) / TRACE_INDEX_ENTRY_LEN;
    for (uint32_t i = 0; i < n; i++) {
        rd_le32(&rd, &c);
        rd_le32(&rd, &d);
        rd_le64(&rd, &t);
        rd_le32(&rd, &k);
        csum += c;
        rsum += k;
    }
    if (!rd_le32(&rd, &n) || !rd_le32(&rd, &version) || !rd_le32(&rd, &magic) ||
        magic != TRACE_FOOTER_MAGIC || rd.left != 0 ||
        (uint64_t)n * TRACE_INDEX_ENTRY_LEN + TRACE_FOOTER_LEN != size)
        return mt_err_set(err, MT_ECORRUPT, off,
                          "malformed seek index at offset %llu",
                          (unsigned long long)off);
    if (version != 1 && version != TRACE_INDEX_VERSION)
        mt_log(MT_LOG_WARN,
               "seek index at offset %llu has version %u (this mtrace knows "
               "1 and %u): not checked; the records are read without it",
               (unsigned long long)off, version, TRACE_INDEX_VERSION);
    if (r->lost == 0 && (version == 1 || version == TRACE_INDEX_VERSION) &&
        (n != r->frames || csum != r->frame_bytes || rsum != r->frame_recs))
        return mt_err_set(err, MT_ECORRUPT, off,
                          "seek index at offset %llu lists %u frames, %llu "
                          "records; read %llu frames, %llu records",
                          (unsigned long long)off, n, (unsigned long long)rsum,
                          (unsigned long long)r->frames,
                          (unsigned long long)r->frame_recs);
    return 0;
}

/* Reads or skips the skippable frame at the current position. */
static int
frame_skippable(struct trace_reader *r, uint32_t magic, struct mt_err *err)
{
    uint64_t off = in_offset(r);
    struct mt_buf b;
    uint32_t size;
    int rc = 0;

    if (in_peek(r, 8) < 8)
        return frame_truncated(r, off, err);
    size = le32_at((const uint8_t *)r->in.src + r->in.pos + 4);
    r->in.pos += 8;
    if (magic != TRACE_INDEX_FRAME_MAGIC) {
        if (in_skip(r, size) < size)
            return frame_truncated(r, off, err);
        return 0;
    }
    if (size > INDEX_LEN_MAX)
        return resync(r, off, MT_ECORRUPT, "oversized seek index frame", err);
    mt_buf_init(&b, INDEX_LEN_MAX);
    if (size > 0 && mt_buf_reserve(&b, size) < 0) {
        mt_buf_free(&b);
        return reader_oom(r, off, err);
    }
    while (b.len < size && in_fill(r)) {
        size_t k = in_avail(r);
        if (k > size - b.len)
            k = size - b.len;
        memcpy(b.data + b.len, (const uint8_t *)r->in.src + r->in.pos, k);
        b.len += k;
        r->in.pos += k;
    }
    if (b.len < size)
        rc = frame_truncated(r, off, err);
    else
        rc = index_check(r, b.data, size, off, err);
    mt_buf_free(&b);
    return rc;
}

/*
 * Loads the next zstd data frame into r->frame, passing over skippable
 * frames.  0, MT_END at a clean end of input, or negative.
 */
static int
frame_next(struct trace_reader *r, struct mt_err *err)
{
    for (;;) {
        uint64_t off = in_offset(r);
        size_t have = in_peek(r, 4);
        uint32_t magic;
        int rc;

        if (have == 0)
            return r->io_errno ? frame_truncated(r, off, err) : MT_END;
        if (have < 4)
            return frame_truncated(r, off, err);
        magic = le32_at((const uint8_t *)r->in.src + r->in.pos);
        if (magic == ZSTD_MAGICNUMBER) {
            rc = frame_decode(r, err);
            if (rc == 0)
                rc = frame_check(r, err);
            if (rc == 0) {
                r->frames++;
                r->frame_bytes += in_offset(r) - off;
            }
            return rc;
        }
        if ((magic & SKIP_MAGIC_MASK) == SKIP_MAGIC_START) {
            rc = frame_skippable(r, magic, err);
            if (rc < 0)
                return rc;
            continue;
        }
        if (off == 0 && is_pcap_magic(magic))
            return mt_err_set(err, MT_ECORRUPT, 0,
                              "a pcap/pcapng capture, not an mtrace trace: "
                              "convert it with 'mtrace capture --pcap FILE "
                              "-o OUT.zst'");
        if (off == 0)
            return mt_err_set(err, MT_ECORRUPT, 0,
                              "not an mtrace trace: no zstd frame magic at "
                              "offset 0 (found 0x%08x)",
                              magic);
        return resync(r, off, MT_ECORRUPT, "no frame magic", err);
    }
}

/* ---- records ---- */

/*
 * Parses the record at frame_pos.  0 (rec filled), TRACE__REC_UNKNOWN
 * (skipped), or negative: the rest of the frame is dropped.
 */
static int
record_next(struct trace_reader *r, struct trace_rec *rec, struct mt_err *err)
{
    struct rd rd =
        rd_init(r->frame.data + r->frame_pos, r->frame.len - r->frame_pos);
    size_t at = r->frame_pos, rest = rd.left;
    const uint8_t *payload;
    uint32_t len;
    uint8_t type;
    int rc;

    if (!rd_u8(&rd, &type) || !rd_le32(&rd, &len) || len > rd.left ||
        len > TRACE_REC_LEN_MAX) {
        r->frame_pos = r->frame.len;
        r->lost += rest;
        return mt_err_set(err, MT_ECORRUPT, r->frame_off,
                          "corrupt record at byte %zu of the frame at offset "
                          "%llu: length exceeds the frame; %zu bytes lost",
                          at, (unsigned long long)r->frame_off, rest);
    }
    rd_bytes(&rd, len, &payload);
    r->frame_pos += TRACE_REC_PREFIX_LEN + (size_t)len;
    r->frame_recs++;
    memset(rec, 0, sizeof(*rec));
    rec->offset = r->frame_off;
    rc = trace__rec_decode(type, payload, len, rec, err);
    if (rc < 0) {
        char msg[sizeof(err->msg)];
        snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
        rest = r->frame.len - at;
        r->frame_pos = r->frame.len;
        r->lost += rest;
        return mt_err_set(err, rc, r->frame_off,
                          "record at byte %zu of the frame at offset %llu: "
                          "%.60s",
                          at, (unsigned long long)r->frame_off, msg);
    }
    if (rc == TRACE__REC_UNKNOWN)
        r->records++;
    return rc;
}

int
trace_reader_next(struct trace_reader *r, struct trace_rec *rec,
                  struct mt_err *err)
{
    int rc;

    MT_ASSERT(r != NULL && rec != NULL);
    if (r->header_pending) {
        memset(rec, 0, sizeof(*rec));
        rec->type = TRACE_REC_HEADER;
        rec->u.header = r->header;
        rec->offset = r->frame_off;
        r->header_pending = false;
        r->records++;
        return MT_OK;
    }
    for (;;) {
        if (r->pend_rc < 0) {
            rc = r->pend_rc;
            r->pend_rc = 0;
            if (err != NULL)
                *err = r->pend_err;
            return rc;
        }
        if (r->done)
            return MT_END;
        if (r->frame_pos < r->frame.len) {
            rc = record_next(r, rec, err);
            if (rc == TRACE__REC_UNKNOWN)
                continue;
            if (rc < 0)
                return rc;
            if (rec->type == TRACE_REC_HEADER)
                continue; /* a header after the first: nothing new */
            r->records++;
            if (rec->type == TRACE_REC_END)
                r->seen_end = true;
            return MT_OK;
        }
        rc = frame_next(r, err);
        if (rc == MT_END) {
            r->done = true;
            if (r->seen_end)
                return MT_END;
            return mt_err_set(err, MT_ETRUNC, in_offset(r),
                              "trace ends at offset %llu without an end "
                              "record (writer crashed or still running)",
                              (unsigned long long)in_offset(r));
        }
        if (rc < 0)
            return rc;
        if (r->seen_end && r->frame.len > 0) {
            r->frame_pos = r->frame.len;
            r->lost += in_offset(r) - r->frame_off;
            return mt_err_set(err, MT_ECORRUPT, r->frame_off,
                              "data frame after the end record at offset "
                              "%llu (ignored)",
                              (unsigned long long)r->frame_off);
        }
    }
}

/* ---- open / free ---- */

/*
 * The header frame was damaged and the reader resynchronised (rc and err
 * say how): unless nothing follows, err is kept for trace_reader_next and
 * reading goes on with the next intact data frame, which must start with a
 * record other than a header.  The header's fields read "(header lost)".
 */
static int
header_lost(struct trace_reader *r, int rc, struct mt_err *err)
{
    struct rd rd;
    uint8_t type = 0;

    r->starting = false;
    if (r->done || (in_avail(r) == 0 && !in_fill(r)))
        return rc; /* err says "... lost up to the end of the file" */
    r->pend_rc = rc;
    if (err != NULL)
        r->pend_err = *err;
    else
        mt_err_set(&r->pend_err, rc, 0,
                   "corrupt zstd frame at offset 0: "
                   "header record lost");
    do {
        rc = frame_next(r, err);
    } while ((rc == 0 && r->frame.len == 0) ||
             ((rc == MT_ECORRUPT || rc == MT_ETOOBIG) && !r->done));
    if (rc < 0 || rc == MT_END)
        return mt_err_set(err, MT_ECORRUPT, 0,
                          "corrupt zstd frame at offset 0 (the header) and "
                          "no intact frame after it (%llu bytes lost)",
                          (unsigned long long)r->lost);
    rd = rd_init(r->frame.data, r->frame.len);
    if (!rd_u8(&rd, &type) || type <= TRACE_REC_HEADER ||
        type > TRACE_REC_TYPE_MAX)
        return mt_err_set(err, MT_ECORRUPT, r->frame_off,
                          "not an mtrace trace: corrupt first frame, and the "
                          "frame at offset %llu does not start with a record",
                          (unsigned long long)r->frame_off);
    memset(&r->header, 0, sizeof(r->header));
    snprintf(r->header.tool_version, sizeof(r->header.tool_version),
             "(header lost)");
    snprintf(r->header.source_desc, sizeof(r->header.source_desc),
             "(header lost: the first frame was damaged)");
    r->header.source = TRACE_SRC_UNKNOWN;
    r->header_lost = true;
    return 0;
}

/* Reads the first frame and its header record. */
static int
reader_start(struct trace_reader *r, struct mt_err *err)
{
    struct trace_rec rec;
    struct rd rd;
    const uint8_t *magic;
    uint8_t type;
    uint32_t len;
    int rc;

    errno = 0;
    if (in_peek(r, 1) == 0 && r->io_errno)
        return mt_err_set(err, -r->io_errno, 0, "cannot read: %s",
                          strerror(r->io_errno));
    if (in_avail(r) == 0)
        return mt_err_set(err, MT_ETRUNC, 0,
                          "empty file (0 bytes): not an mtrace trace");
    r->starting = true;
    do {
        rc = frame_next(r, err);
    } while (rc == 0 && r->frame.len == 0);
    if ((rc == MT_ECORRUPT || rc == MT_ETOOBIG) && r->lost > 0)
        return header_lost(r, rc, err);
    r->starting = false;
    if (rc == MT_END)
        return mt_err_set(err, MT_ETRUNC, 0,
                          "no records in the file: not an mtrace trace");
    if (rc < 0)
        return rc;
    rd = rd_init(r->frame.data, r->frame.len);
    if (!rd_u8(&rd, &type) || !rd_le32(&rd, &len) || type != TRACE_REC_HEADER ||
        !rd_bytes(&rd, TRACE_MAGIC_LEN, &magic) ||
        memcmp(magic, TRACE_MAGIC, TRACE_MAGIC_LEN) != 0)
        return mt_err_set(err, MT_ECORRUPT, 0,
                          "not an mtrace trace: the first record lacks the "
                          "magic \"MTRC\\r\\n\\x1a\\n\"");
    rc = record_next(r, &rec, err);
    if (rc < 0)
        return rc;
    MT_ASSERT(rc == 0 && rec.type == TRACE_REC_HEADER);
    r->header = rec.u.header;
    r->header_pending = true;
    return 0;
}

static struct trace_reader *
reader_new(const void *mem, size_t len, FILE *fp, bool own_fp,
           struct mt_err *err)
{
    struct trace_reader *r = mt_calloc(1, sizeof(*r));

    if (r == NULL) {
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        return NULL;
    }
    r->fp = fp;
    r->own_fp = own_fp;
    r->frame_max = TRACE_FRAME_LEN_MAX;
    mt_buf_init(&r->frame, r->frame_max);
    if (fp != NULL) {
        r->chunk = mt_malloc(CHUNK_LEN);
        r->in.src = r->chunk;
    } else {
        r->mem = mem;
        r->in.src = mem;
        r->in.size = len;
    }
    r->dctx = ZSTD_createDCtx();
    if (r->dctx == NULL || (fp != NULL && r->chunk == NULL)) {
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        goto fail;
    }
    if (reader_start(r, err) < 0)
        goto fail;
    return r;
fail:
    trace_reader_free(r);
    return NULL;
}

struct trace_reader *
trace_reader_open(const char *path, struct mt_err *err)
{
    struct trace_reader *r;
    FILE *fp = fopen(path, "rb");

    if (fp == NULL) {
        mt_err_set(err, -errno, 0, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    r = reader_new(NULL, 0, fp, true, err);
    return r; /* reader_new closed fp on failure */
}

struct trace_reader *
trace_reader_open_fp(FILE *fp, struct mt_err *err)
{
    MT_ASSERT(fp != NULL);
    return reader_new(NULL, 0, fp, false, err);
}

struct trace_reader *
trace_reader_open_arg(const char *path, struct mt_err *err)
{
    return strcmp(path, "-") == 0 ? trace_reader_open_fp(stdin, err)
                                  : trace_reader_open(path, err);
}

struct trace_reader *
trace_reader_open_mem(const void *buf, size_t len, struct mt_err *err)
{
    static const uint8_t empty[1];
    return reader_new(buf != NULL ? buf : empty, buf != NULL ? len : 0, NULL,
                      false, err);
}

const struct trace_header *
trace_reader_header(const struct trace_reader *r)
{
    return &r->header;
}

bool
trace_reader_header_lost(const struct trace_reader *r)
{
    return r->header_lost;
}

uint64_t
trace_reader_lost_bytes(const struct trace_reader *r)
{
    return r->lost;
}

uint64_t
trace_reader_records(const struct trace_reader *r)
{
    return r->records;
}

void
trace_reader_set_frame_max(struct trace_reader *r, size_t len_max)
{
    MT_ASSERT(r != NULL && len_max >= OUT_MIN);
    r->frame_max =
        len_max < TRACE_FRAME_LEN_MAX ? len_max : TRACE_FRAME_LEN_MAX;
}

void
trace_reader_free(struct trace_reader *r)
{
    if (r == NULL)
        return;
    if (r->own_fp && r->fp != NULL)
        fclose(r->fp);
    mt_free(r->chunk);
    ZSTD_freeDCtx(r->dctx);
    mt_buf_free(&r->frame);
    mt_free(r);
}
