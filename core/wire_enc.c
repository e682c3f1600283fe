/*
 * wire_enc.c -- wire message encoders and OP_COMPRESSED (see wire.h for the
 * contracts and wire.c for the byte layouts).
 *
 * OP_COMPRESSED:
 * https://github.com/mongodb/specifications/blob/master/source/compression/OP_COMPRESSED.md
 *
 *   16 int32 originalOpcode   24 uint8 compressorId
 *   20 int32 uncompressedSize 25 compressed bytes (the original message
 *                                without its 16-byte header)
 *
 * Decompression never expands past the declared uncompressedSize: the size
 * is checked against WIRE_MSG_LEN_MAX and the output buffer's maximum before
 * anything is allocated, and each decompressor is given exactly that much
 * room (snappy and zstd also say up front how big their output is; zlib is
 * run through inflate with a bounded output window).
 */
#include "wire_enc.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "mem.h"
#include "rd.h"

/* Writes the 16-byte header at dst. */
static void
put_header(uint8_t *dst, size_t len, int32_t req, int32_t resp, int32_t op)
{
    wr_le32(dst, (uint32_t)len);
    wr_le32(dst + 4, (uint32_t)req);
    wr_le32(dst + 8, (uint32_t)resp);
    wr_le32(dst + 12, (uint32_t)op);
}

static void
put(uint8_t **p, const void *src, size_t n)
{
    memcpy(*p, src, n);
    *p += n;
}

static void
put32(uint8_t **p, uint32_t v)
{
    wr_le32(*p, v);
    *p += 4;
}

/* Reserves total bytes in out after checking the message limit. */
static int
begin(struct mt_buf *out, size_t total, uint8_t **p)
{
    int rc;

    if (total > WIRE_MSG_LEN_MAX)
        return MT_ETOOBIG;
    rc = mt_buf_reserve(out, total);
    if (rc < 0)
        return rc;
    *p = out->data + out->len;
    return 0;
}

int
wire_encode_msg(struct mt_buf *out, int32_t request_id, int32_t response_to,
                uint32_t flags, const bson_t *body, const struct wire_seq *seq,
                size_t nseq)
{
    size_t total = WIRE_HEADER_LEN + 4 + 1 + body->len;
    uint8_t *start, *p;
    int rc;

    if (flags & WIRE_MSG_REQUIRED_MASK &
        ~(WIRE_MSG_CHECKSUM_PRESENT | WIRE_MSG_MORE_TO_COME))
        return MT_EUSAGE;
    for (size_t i = 0; i < nseq; i++) {
        size_t idlen = strlen(seq[i].identifier);
        if (seq[i].docs_len > WIRE_MSG_LEN_MAX || idlen > WIRE_MSG_LEN_MAX)
            return MT_ETOOBIG;
        total += 1 + 4 + idlen + 1 + seq[i].docs_len;
    }
    if (flags & WIRE_MSG_CHECKSUM_PRESENT)
        total += 4;
    rc = begin(out, total, &start);
    if (rc < 0)
        return rc;
    p = start;
    put_header(p, total, request_id, response_to, WIRE_OP_MSG);
    p += WIRE_HEADER_LEN;
    put32(&p, flags);
    *p++ = 0;
    put(&p, bson_get_data(body), body->len);
    for (size_t i = 0; i < nseq; i++) {
        size_t idlen = strlen(seq[i].identifier);
        *p++ = 1;
        put32(&p, (uint32_t)(4 + idlen + 1 + seq[i].docs_len));
        put(&p, seq[i].identifier, idlen + 1);
        put(&p, seq[i].docs, seq[i].docs_len);
    }
    if (flags & WIRE_MSG_CHECKSUM_PRESENT)
        put32(&p, wire_crc32c(0, start, (size_t)(p - start)));
    MT_ASSERT((size_t)(p - start) == total);
    out->len += total;
    return 0;
}

int
wire_encode_query(struct mt_buf *out, int32_t request_id, int32_t flags,
                  const char *full_collection, int32_t skip, int32_t n_return,
                  const bson_t *query)
{
    size_t nslen = strlen(full_collection);
    size_t total;
    uint8_t *start, *p;
    int rc;

    if (nslen > WIRE_MSG_LEN_MAX)
        return MT_ETOOBIG;
    total = WIRE_HEADER_LEN + 4 + nslen + 1 + 8 + query->len;
    rc = begin(out, total, &start);
    if (rc < 0)
        return rc;
    p = start;
    put_header(p, total, request_id, 0, WIRE_OP_QUERY);
    p += WIRE_HEADER_LEN;
    put32(&p, (uint32_t)flags);
    put(&p, full_collection, nslen + 1);
    put32(&p, (uint32_t)skip);
    put32(&p, (uint32_t)n_return);
    put(&p, bson_get_data(query), query->len);
    MT_ASSERT((size_t)(p - start) == total);
    out->len += total;
    return 0;
}

int
wire_encode_reply(struct mt_buf *out, int32_t request_id, int32_t response_to,
                  int32_t response_flags, int64_t cursor_id,
                  int32_t starting_from, const bson_t *const *docs,
                  size_t ndocs)
{
    size_t total = WIRE_HEADER_LEN + 20;
    uint8_t *start, *p;
    int rc;

    if (ndocs > INT32_MAX)
        return MT_ETOOBIG;
    for (size_t i = 0; i < ndocs; i++) {
        if (docs[i]->len > WIRE_MSG_LEN_MAX)
            return MT_ETOOBIG;
        total += docs[i]->len;
        if (total > WIRE_MSG_LEN_MAX)
            return MT_ETOOBIG;
    }
    rc = begin(out, total, &start);
    if (rc < 0)
        return rc;
    p = start;
    put_header(p, total, request_id, response_to, WIRE_OP_REPLY);
    p += WIRE_HEADER_LEN;
    put32(&p, (uint32_t)response_flags);
    wr_le64(p, (uint64_t)cursor_id);
    p += 8;
    put32(&p, (uint32_t)starting_from);
    put32(&p, (uint32_t)ndocs);
    for (size_t i = 0; i < ndocs; i++)
        put(&p, bson_get_data(docs[i]), docs[i]->len);
    MT_ASSERT((size_t)(p - start) == total);
    out->len += total;
    return 0;
}

/* ---- compression ---- */

/* Compresses src into a new mt_malloc'ed buffer (*dst, *dst_len). */
static int
compress_payload(uint8_t id, const uint8_t *src, size_t n, uint8_t **dst,
                 size_t *dst_len, struct mt_err *err)
{
    size_t cap;
    uLongf zlen;

    switch (id) {
    case WIRE_COMPRESSOR_NOOP:
        cap = n;
        break;
    case WIRE_COMPRESSOR_SNAPPY:
        cap = snappy_max_compressed_length(n);
        break;
    case WIRE_COMPRESSOR_ZLIB:
        cap = compressBound((uLong)n);
        break;
    case WIRE_COMPRESSOR_ZSTD:
        cap = ZSTD_compressBound(n);
        break;
    default:
        return mt_err_set(err, MT_EUNSUPPORTED, 0, "compressorId %u unknown",
                          (unsigned)id);
    }
    *dst = mt_malloc(cap);
    if (*dst == NULL)
        return mt_err_set(err, -ENOMEM, 0, "out of memory (%zu bytes)", cap);
    *dst_len = cap;
    switch (id) {
    case WIRE_COMPRESSOR_SNAPPY:
        if (snappy_compress((const char *)src, n, (char *)*dst, dst_len) !=
            SNAPPY_OK)
            goto fail;
        break;
    case WIRE_COMPRESSOR_ZLIB:
        zlen = (uLongf)cap;
        if (compress2(*dst, &zlen, src, (uLong)n, Z_DEFAULT_COMPRESSION) !=
            Z_OK)
            goto fail;
        *dst_len = zlen;
        break;
    case WIRE_COMPRESSOR_ZSTD:
        *dst_len = ZSTD_compress(*dst, cap, src, n, ZSTD_CLEVEL_DEFAULT);
        if (ZSTD_isError(*dst_len))
            goto fail;
        break;
    default: /* noop */
        if (n > 0)
            memcpy(*dst, src, n);
        break;
    }
    return 0;
fail:
    mt_free(*dst);
    *dst = NULL;
    return mt_err_set(err, MT_ECOMPRESS, 0, "%s compression failed",
                      wire_compressor_name(id));
}

int
wire_encode_compressed(struct mt_buf *out, const uint8_t *msg, size_t msg_len,
                       uint8_t compressor_id, struct mt_err *err)
{
    struct rd r = rd_init(msg, msg_len);
    struct wire_header h;
    uint8_t *payload = NULL, *p;
    size_t plen = 0, total;
    int rc;

    if (!rd_le32s(&r, &h.message_length) || !rd_le32s(&r, &h.request_id) ||
        !rd_le32s(&r, &h.response_to) || !rd_le32s(&r, &h.op_code) ||
        (size_t)h.message_length != msg_len)
        return mt_err_set(err, MT_EUSAGE, 0,
                          "not one complete message (%zu bytes)", msg_len);
    if (h.op_code == WIRE_OP_COMPRESSED || !wire_opcode_known(h.op_code))
        return mt_err_set(err, MT_EUSAGE, 12, "cannot compress opCode %d",
                          (int)h.op_code);
    rc = compress_payload(compressor_id, r.p, r.left, &payload, &plen, err);
    if (rc < 0)
        return rc;
    total = WIRE_HEADER_LEN + 9 + plen;
    rc = begin(out, total, &p);
    if (rc < 0) {
        mt_err_set(err, rc, 0, "OP_COMPRESSED of %zu bytes does not fit",
                   total);
        goto out;
    }
    put_header(p, total, h.request_id, h.response_to, WIRE_OP_COMPRESSED);
    p += WIRE_HEADER_LEN;
    put32(&p, (uint32_t)h.op_code);
    put32(&p, (uint32_t)(msg_len - WIRE_HEADER_LEN));
    *p++ = compressor_id;
    put(&p, payload, plen);
    out->len += total;
out:
    mt_free(payload);
    return rc;
}

/* ---- decompression ---- */

/* zlib into exactly n bytes at dst; more output than n is a bomb. */
static int
inflate_bounded(const uint8_t *src, size_t src_len, uint8_t *dst, size_t n,
                struct mt_err *err)
{
    z_stream zs;
    int zrc;

    memset(&zs, 0, sizeof(zs));
    if (src_len > UINT_MAX)
        return mt_err_set(err, MT_ETOOBIG, 25, "zlib payload too large");
    if (inflateInit(&zs) != Z_OK)
        return mt_err_set(err, -ENOMEM, 25, "zlib inflateInit failed");
    zs.next_in = (Bytef *)(uintptr_t)src; /* zlib does not write input */
    zs.avail_in = (uInt)src_len;
    zs.next_out = dst;
    zs.avail_out = (uInt)n;
    zrc = inflate(&zs, Z_FINISH);
    if (zrc == Z_STREAM_END && zs.avail_out == 0 && zs.avail_in == 0) {
        inflateEnd(&zs);
        return 0;
    }
    inflateEnd(&zs);
    if (zrc == Z_STREAM_END && zs.avail_out != 0)
        return mt_err_set(err, MT_ECOMPRESS, 20,
                          "zlib output %zu bytes != uncompressedSize %zu",
                          n - zs.avail_out, n);
    if (zrc == Z_STREAM_END)
        return mt_err_set(err, MT_ECOMPRESS, 25 + src_len - zs.avail_in,
                          "zlib: %u bytes after the stream end", zs.avail_in);
    if (zrc == Z_BUF_ERROR && zs.avail_out == 0)
        return mt_err_set(err, MT_ECOMPRESS, 20,
                          "zlib output exceeds uncompressedSize %zu", n);
    return mt_err_set(err, MT_ECOMPRESS, 25 + src_len - zs.avail_in, "zlib: %s",
                      zs.msg ? zs.msg : "truncated stream");
}

/* One zstd decompression context per thread, made on first use and freed
 * at thread exit: ZSTD_decompress would allocate and free ~100 KB on every
 * call, which costs more than decompressing a typical reply. */
static pthread_key_t dctx_key;
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;
static int dctx_key_ok;

static void
dctx_free(void *p)
{
    ZSTD_freeDCtx(p);
}

static void
dctx_key_make(void)
{
    dctx_key_ok = pthread_key_create(&dctx_key, dctx_free) == 0;
}

static size_t
zstd_expand(uint8_t *dst, size_t n, const uint8_t *src, size_t slen)
{
    ZSTD_DCtx *d;

    pthread_once(&dctx_once, dctx_key_make);
    if (!dctx_key_ok)
        return ZSTD_decompress(dst, n, src, slen);
    d = pthread_getspecific(dctx_key);
    if (d == NULL) {
        d = ZSTD_createDCtx();
        if (d == NULL || pthread_setspecific(dctx_key, d) != 0) {
            ZSTD_freeDCtx(d);
            return ZSTD_decompress(dst, n, src, slen);
        }
    }
    return ZSTD_decompressDCtx(d, dst, n, src, slen);
}

/* Decompresses the payload into exactly n bytes at dst. */
static int
expand(const struct wire_msg *m, uint8_t *dst, size_t n, struct mt_err *err)
{
    const uint8_t *src = m->compressed;
    size_t slen = m->compressed_len, got;
    unsigned long long fcs;

    switch (m->compressor_id) {
    case WIRE_COMPRESSOR_NOOP:
        if (slen != n)
            return mt_err_set(err, MT_ECOMPRESS, 20,
                              "noop payload %zu bytes != uncompressedSize %zu",
                              slen, n);
        if (n > 0)
            memcpy(dst, src, n);
        return 0;
    case WIRE_COMPRESSOR_SNAPPY:
        if (snappy_uncompressed_length((const char *)src, slen, &got) !=
            SNAPPY_OK)
            return mt_err_set(err, MT_ECOMPRESS, 25,
                              "snappy length header corrupt at offset 25");
        if (got != n)
            return mt_err_set(err, MT_ECOMPRESS, 20,
                              "snappy length %zu != uncompressedSize %zu", got,
                              n);
        if (snappy_uncompress((const char *)src, slen, (char *)dst, &got) !=
                SNAPPY_OK ||
            got != n)
            return mt_err_set(err, MT_ECOMPRESS, 25,
                              "snappy payload corrupt at offset 25");
        return 0;
    case WIRE_COMPRESSOR_ZLIB:
        return inflate_bounded(src, slen, dst, n, err);
    case WIRE_COMPRESSOR_ZSTD:
        fcs = ZSTD_getFrameContentSize(src, slen);
        if (fcs == ZSTD_CONTENTSIZE_ERROR)
            return mt_err_set(err, MT_ECOMPRESS, 25,
                              "zstd frame header corrupt at offset 25");
        if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != n)
            return mt_err_set(err, MT_ECOMPRESS, 20,
                              "zstd content size %llu != uncompressedSize %zu",
                              fcs, n);
        got = zstd_expand(dst, n, src, slen);
        if (ZSTD_isError(got))
            return mt_err_set(err, MT_ECOMPRESS, 25, "zstd: %s",
                              ZSTD_getErrorName(got));
        if (got != n)
            return mt_err_set(err, MT_ECOMPRESS, 20,
                              "zstd output %zu bytes != uncompressedSize %zu",
                              got, n);
        return 0;
    default:
        return mt_err_set(err, MT_EUNSUPPORTED, 24,
                          "compressorId %u unknown at offset 24",
                          (unsigned)m->compressor_id);
    }
}

int
wire_decompress(const struct wire_msg *msg, struct mt_buf *out,
                struct mt_err *err)
{
    size_t n, total;
    uint8_t *dst;
    int rc;

    if (msg->h.op_code != WIRE_OP_COMPRESSED)
        return mt_err_set(err, MT_EUSAGE, 12, "%s is not OP_COMPRESSED",
                          wire_opcode_name(msg->h.op_code));
    if (msg->uncompressed_size < 0)
        return mt_err_set(err, MT_EPROTO, 20,
                          "OP_COMPRESSED uncompressedSize %d at offset 20",
                          (int)msg->uncompressed_size);
    n = (size_t)msg->uncompressed_size;
    if (n > WIRE_MSG_LEN_MAX - WIRE_HEADER_LEN)
        return mt_err_set(err, MT_ETOOBIG, 20,
                          "OP_COMPRESSED uncompressedSize %zu exceeds maximum "
                          "%d at offset 20",
                          n, WIRE_MSG_LEN_MAX - WIRE_HEADER_LEN);
    total = WIRE_HEADER_LEN + n;
    if (out->len > out->len_max || total > out->len_max - out->len)
        return mt_err_set(
            err, MT_ETOOBIG, 20,
            "OP_COMPRESSED uncompressedSize %zu exceeds buffer "
            "room %zu at offset 20",
            n, out->len < out->len_max ? out->len_max - out->len : 0);
    if (msg->compressor_id > WIRE_COMPRESSOR_ZSTD)
        return mt_err_set(err, MT_EUNSUPPORTED, 24,
                          "compressorId %u unknown at offset 24",
                          (unsigned)msg->compressor_id);
    rc = mt_buf_reserve(out, total);
    if (rc < 0)
        return mt_err_set(err, rc, 20, "cannot reserve %zu bytes", total);
    dst = out->data + out->len;
    put_header(dst, total, msg->h.request_id, msg->h.response_to,
               msg->original_opcode);
    rc = expand(msg, dst + WIRE_HEADER_LEN, n, err);
    if (rc < 0)
        return rc; /* out->len unchanged: nothing appended */
    out->len += total;
    return 0;
}

/* Keys "0", "1", ... in order: what libbson expects of an array. */
static bool
array_keys_in_order(const bson_iter_t *it)
{
    bson_iter_t el;
    char want[16];
    const char *k;
    uint32_t i = 0;

    if (!bson_iter_recurse(it, &el))
        return false;
    while (bson_iter_next(&el)) {
        bson_uint32_to_string(i++, &k, want, sizeof(want));
        if (strcmp(bson_iter_key(&el), k) != 0)
            return false;
    }
    return true;
}

static bool
append_iter_depth(bson_t *dst, const char *key, int key_len,
                  const bson_iter_t *it, int depth)
{
    bson_iter_t el;
    bson_t arr;
    char buf[16];
    const char *k;
    uint32_t i = 0;
    bool ok = true;

    if (!BSON_ITER_HOLDS_ARRAY(it) || depth >= WIRE_BSON_DEPTH_MAX ||
        array_keys_in_order(it))
        return bson_append_iter(dst, key, key_len, it);
    if (key == NULL) {
        key = bson_iter_key(it);
        key_len = -1;
    }
    if (!bson_iter_recurse(it, &el) ||
        !bson_append_array_begin(dst, key, key_len, &arr))
        return false;
    while (ok && bson_iter_next(&el)) {
        bson_uint32_to_string(i++, &k, buf, sizeof(buf));
        ok = append_iter_depth(&arr, k, -1, &el, depth + 1);
    }
    return bson_append_array_end(dst, &arr) && ok;
}

bool
wire_bson_append_iter(bson_t *dst, const char *key, int key_len,
                      const bson_iter_t *it)
{
    return append_iter_depth(dst, key, key_len, it, 0);
}
