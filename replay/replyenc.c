/*
 * replyenc.c -- reply messages encoded as the request asks (see
 * replyenc.h).
 */
#include "replyenc.h"

#include <string.h>

#include "core/rd.h"
#include "core/wire.h"
#include "cursor.h"

int32_t
replyenc_take_id(int32_t *next)
{
    int32_t id = (*next)++;
    if (*next <= 0)
        *next = 1;
    return id;
}

/*
 * OP_COMMANDREPLY (opCode 2011, MongoDB 3.2-3.6): header, commandReply,
 * metadata (empty), no outputDocs.
 *   0 int32 messageLength | 4 requestID | 8 responseTo | 12 opCode 2011
 *   16 document commandReply | document metadata {}
 */
static int
encode_command_reply(struct mt_buf *out, int32_t rid, int32_t to,
                     const bson_t *body)
{
    static const uint8_t empty_doc[5] = {5, 0, 0, 0, 0};
    size_t len = WIRE_HEADER_LEN + body->len + sizeof(empty_doc);
    uint8_t *p;
    int rc;

    if (len > WIRE_MSG_LEN_MAX)
        return MT_ETOOBIG;
    rc = mt_buf_reserve(out, len);
    if (rc < 0)
        return rc;
    p = out->data + out->len;
    wr_le32(p, (uint32_t)len);
    wr_le32(p + 4, (uint32_t)rid);
    wr_le32(p + 8, (uint32_t)to);
    wr_le32(p + 12, WIRE_OP_COMMANDREPLY);
    memcpy(p + WIRE_HEADER_LEN, bson_get_data(body), body->len);
    memcpy(p + WIRE_HEADER_LEN + body->len, empty_doc, sizeof(empty_doc));
    out->len += len;
    return 0;
}

/*
 * A reply replay builds for a legacy find is an error (a miss, or
 * authentication required): an OP_REPLY with QueryFailure and
 * {$err: errmsg, code: code}, as a legacy server fails a query; an
 * {ok: 0} document would read as a found document.
 */
static int
legacy_find_failure(const struct replyenc_to *to, const bson_t *body,
                    int32_t rid, struct mt_buf *out)
{
    const bson_t *docs[1];
    bson_iter_t it;
    const char *msg = "mtrace replay: query failed";
    int32_t code = 2;
    bson_t doc;
    int rc;

    if (bson_iter_init_find(&it, body, "errmsg") && BSON_ITER_HOLDS_UTF8(&it))
        msg = bson_iter_utf8(&it, NULL);
    if (bson_iter_init_find(&it, body, "code") && BSON_ITER_HOLDS_INT32(&it))
        code = bson_iter_int32(&it);
    bson_init(&doc);
    BSON_APPEND_UTF8(&doc, "$err", msg);
    BSON_APPEND_INT32(&doc, "code", code);
    docs[0] = &doc;
    rc = wire_encode_reply(out, rid, to->request_id, 2 /* QueryFailure */, 0, 0,
                           docs, 1);
    bson_destroy(&doc);
    return rc;
}

int
replyenc_write_doc(const struct replyenc_to *to, const bson_t *body,
                   uint32_t flags, struct mt_buf *out, int32_t *rid)
{
    const bson_t *docs[1] = {body};

    *rid = replyenc_take_id(to->next_id);
    if (to->req->legacy_query)
        return legacy_find_failure(to, body, *rid, out);
    if (to->req->op_command)
        return encode_command_reply(out, *rid, to->request_id, body);
    if (to->req->legacy)
        return wire_encode_reply(out, *rid, to->request_id,
                                 8 /* AwaitCapable */, 0, 0, docs, 1);
    if (to->req->checksum)
        flags |= WIRE_MSG_CHECKSUM_PRESENT;
    return wire_encode_msg(out, *rid, to->request_id, flags, body, NULL, 0);
}

/*
 * The recorded OP_MSG reply with a new header: only the header (and the
 * checksum, which is dropped, or recomputed when the client sent one)
 * changes; the sections are copied as they are.
 */
static int
patch_msg(const struct replyenc_to *to, const struct wire_msg *rec,
          struct mt_buf *out)
{
    size_t len = rec->raw_len - (rec->has_checksum ? 4 : 0);
    uint32_t flags =
        rec->flags & ~(WIRE_MSG_CHECKSUM_PRESENT | WIRE_MSG_MORE_TO_COME |
                       WIRE_MSG_EXHAUST_ALLOWED);
    bool checksum = to->req->checksum;
    uint8_t *p;
    int rc;

    if (checksum)
        flags |= WIRE_MSG_CHECKSUM_PRESENT;
    rc = mt_buf_reserve(out, len + 4);
    if (rc < 0)
        return rc;
    p = out->data + out->len;
    memcpy(p, rec->raw, len);
    wr_le32(p, (uint32_t)(len + (checksum ? 4 : 0)));
    wr_le32(p + 4, (uint32_t)replyenc_take_id(to->next_id));
    wr_le32(p + 8, (uint32_t)to->request_id);
    wr_le32(p + 16, flags);
    if (checksum) {
        wr_le32(p + len, wire_crc32c(0, p, len));
        len += 4;
    }
    out->len += len;
    return 0;
}

/*
 * The recorded OP_REPLY of a legacy find with a new header: its flags,
 * cursorID, startingFrom and documents are sent as recorded.
 */
static int
patch_reply(const struct replyenc_to *to, const struct wire_msg *rec,
            struct mt_buf *out)
{
    uint8_t *p;
    int rc = mt_buf_reserve(out, rec->raw_len);

    if (rc < 0)
        return rc;
    p = out->data + out->len;
    memcpy(p, rec->raw, rec->raw_len);
    wr_le32(p + 4, (uint32_t)replyenc_take_id(to->next_id));
    wr_le32(p + 8, (uint32_t)to->request_id);
    out->len += rec->raw_len;
    return 0;
}

int
replyenc_write_recorded(const struct replyenc_to *to, const uint8_t *rec,
                        size_t rec_len, int64_t cursor_id, struct mt_buf *out)
{
    struct wire_msg m;
    size_t used;
    bson_t body, rw;
    int32_t rid;
    int rc;

    rc = wire_msg_parse_opts(rec, rec_len,
                             WIRE_PARSE_SHALLOW | WIRE_PARSE_NO_CHECKSUM, &m,
                             &used, NULL);
    if (rc == MT_OK && to->req->legacy_query && m.h.op_code == WIRE_OP_REPLY)
        return patch_reply(to, &m, out); /* documents: none or many */
    if (rc != MT_OK || m.body == NULL)
        return MT_ECORRUPT;
    if (cursor_id < 0 && !to->req->legacy && !to->req->op_command &&
        m.h.op_code == WIRE_OP_MSG)
        return patch_msg(to, &m, out);
    if (!bson_init_static(&body, m.body, m.body_len))
        return MT_EBSON;
    if (cursor_id < 0)
        return replyenc_write_doc(to, &body, 0, out, &rid);
    bson_init(&rw);
    rc = cursor_rewrite_reply(m.body, m.body_len, cursor_id, &rw);
    if (rc == 0)
        rc = replyenc_write_doc(to, &rw, 0, out, &rid);
    bson_destroy(&rw);
    return rc;
}

int
replyenc_write_query_failure(const struct replyenc_to *to, const char *msg,
                             struct mt_buf *out)
{
    const bson_t *docs[1];
    bson_t doc;
    int rc;

    bson_init(&doc);
    BSON_APPEND_UTF8(&doc, "$err", msg);
    BSON_APPEND_INT32(&doc, "code", 2);
    docs[0] = &doc;
    rc = wire_encode_reply(out, replyenc_take_id(to->next_id), to->request_id,
                           2 /* QueryFailure */, 0, 0, docs, 1);
    bson_destroy(&doc);
    return rc;
}
