/*
 * msginfo.c -- decoding of recorded messages for dump and stats, what a
 * reply says of its command, JSON strings (see msginfo.h).
 *
 * Recorded bytes are untrusted (a trace may come from anywhere): they go
 * through wire_msg_parse's full validation (lengths, BSON structure, depth)
 * before anything looks inside, and so does a recorded decompressed form.
 */
#include "msginfo.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/mem.h"
#include "core/rd.h"

static bool
is_auth_name(const char *name)
{
    return strcmp(name, "saslStart") == 0 ||
           strcmp(name, "saslContinue") == 0 ||
           strcmp(name, "authenticate") == 0 ||
           strcmp(name, "copydbsaslstart") == 0 ||
           strcmp(name, "getnonce") == 0;
}

/* A hello (request or reply) that carries speculativeAuthenticate. */
static bool
has_speculative_auth(const struct wire_msg *msg)
{
    bson_iter_t it;

    if (msg->body == NULL ||
        !bson_iter_init_from_data(&it, msg->body, msg->body_len))
        return false;
    return bson_iter_find(&it, "speculativeAuthenticate");
}

static void
header_fields(const struct trace_msg *m, struct msginfo *mi)
{
    struct rd r = rd_init(m->wire, m->wire_len);
    int32_t len;

    if (rd_le32s(&r, &len) && rd_le32s(&r, &mi->request_id) &&
        rd_le32s(&r, &mi->response_to) && rd_le32s(&r, &mi->op_code))
        mi->has_header = true;
    mi->is_reply = m->dir == TRACE_DIR_S2C;
}

/* Parses the plain (decompressed) form of an OP_COMPRESSED message. */
static int
decode_compressed(const struct trace_msg *m, const struct wire_msg *outer,
                  struct mt_buf *scratch, struct msginfo *mi)
{
    const uint8_t *p = m->plain;
    size_t n = m->plain_len, consumed;
    struct mt_err err = {0};
    int rc;

    mi->compressed = true;
    mi->compressor = outer->compressor_id;
    mi->op_code = outer->original_opcode;
    if (p == NULL) {
        mt_buf_reset(scratch);
        rc = wire_decompress(outer, scratch, &err);
        if (rc < 0) {
            snprintf(mi->error, sizeof(mi->error), "decompression: %s",
                     err.msg);
            return rc;
        }
        p = scratch->data;
        n = scratch->len;
    }
    rc = wire_msg_parse(p, n, &mi->msg, &consumed, &err);
    if (rc != MT_OK || consumed != n) {
        snprintf(mi->error, sizeof(mi->error), "decompressed message: %s",
                 rc == MT_PARTIAL ? "incomplete"
                 : rc < 0         ? err.msg
                                  : "trailing bytes");
        return rc < 0 ? rc : MT_EPROTO;
    }
    return 0;
}

void
msginfo_decode(const struct trace_msg *m, struct mt_buf *scratch,
               struct msginfo *mi)
{
    struct wire_msg outer;
    struct mt_err err = {0};
    size_t consumed = 0;
    int rc;

    memset(mi, 0, sizeof(*mi));
    header_fields(m, mi);
    rc = wire_msg_parse(m->wire, m->wire_len, &outer, &consumed, &err);
    if (rc == MT_PARTIAL) {
        snprintf(mi->error, sizeof(mi->error),
                 "incomplete message: %u of %zu bytes", m->wire_len, consumed);
        return;
    }
    if (rc < 0) {
        snprintf(mi->error, sizeof(mi->error), "%s", err.msg);
        return;
    }
    if (consumed != m->wire_len) {
        snprintf(mi->error, sizeof(mi->error),
                 "%zu bytes after the message's %zu", m->wire_len - consumed,
                 consumed);
        return;
    }
    if (outer.h.op_code == WIRE_OP_COMPRESSED) {
        if (decode_compressed(m, &outer, scratch, mi) < 0)
            return;
    } else {
        mi->msg = outer;
    }
    mi->op_code = mi->msg.h.op_code;
    mi->is_reply = mi->is_reply || mi->op_code == WIRE_OP_REPLY ||
                   mi->op_code == WIRE_OP_COMMANDREPLY;
    mi->more_to_come =
        mi->op_code == WIRE_OP_MSG && (mi->msg.flags & WIRE_MSG_MORE_TO_COME);
    rc = wire_msg_command(&mi->msg, &mi->cmd);
    if (rc < 0) {
        snprintf(mi->error, sizeof(mi->error), "command document: %s",
                 mt_strerror(rc));
        return;
    }
    mi->parsed = true;
    mi->auth =
        is_auth_name(mi->cmd.name) ||
        ((mi->cmd.is_hello || mi->is_reply) && has_speculative_auth(&mi->msg));
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t
utf8_len(const unsigned char *s)
{
    size_t n;
    unsigned c = s[0];

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4;
    else
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

void
msginfo_json_str(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    fputc('"', out);
    while (*p) {
        size_t n;
        if (*p == '"' || *p == '\\') {
            fputc('\\', out);
            fputc(*p++, out);
        } else if (*p < 0x20) {
            fprintf(out, "\\u%04x", *p++);
        } else if ((n = utf8_len(p)) > 0) {
            fwrite(p, 1, n, out);
            p += n;
        } else {
            fprintf(out, "\\u%04x", *p++); /* invalid UTF-8 byte */
        }
    }
    fputc('"', out);
}

const char *
msginfo_printable(char *dst, size_t cap, const char *s)
{
    size_t i;

    for (i = 0; s[i] != '\0' && i + 1 < cap; i++)
        dst[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
    dst[i] = '\0';
    return dst;
}

/* ---- pending requests: open addressing, linear probing, backward-shift
 * deletion ---- */

/* Takes it into st when it is an error's code or codeName (in a write
 * error, a write concern error, or the reply itself); false otherwise. */
static bool
code_field(const bson_iter_t *it, struct reply_status *st)
{
    const char *k = bson_iter_key(it);

    if (strcmp(k, "code") == 0 && BSON_ITER_HOLDS_NUMBER(it))
        st->code = (int32_t)bson_iter_as_int64(it);
    else if (strcmp(k, "codeName") == 0 && BSON_ITER_HOLDS_UTF8(it))
        snprintf(st->code_name, sizeof(st->code_name), "%s",
                 bson_iter_utf8(it, NULL));
    else
        return false;
    return true;
}

/* The code and codeName of an error document. */
static void
error_fields(bson_iter_t *it, struct reply_status *st)
{
    while (bson_iter_next(it))
        (void)code_field(it, st);
}

/* The first element of a writeErrors array, or a writeConcernError. */
static void
write_error_fields(bson_iter_t *it, struct reply_status *st)
{
    bson_iter_t c, e;

    if (!bson_iter_recurse(it, &c))
        return;
    if (BSON_ITER_HOLDS_DOCUMENT(it)) {
        st->write_error = true;
        error_fields(&c, st);
    } else if (bson_iter_next(&c) && BSON_ITER_HOLDS_DOCUMENT(&c) &&
               bson_iter_recurse(&c, &e)) {
        st->write_error = true;
        error_fields(&e, st);
    }
}

void
msginfo_reply_status(const struct msginfo *mi, struct reply_status *st)
{
    struct reply_status we;
    bson_iter_t it;
    bool has_ok = false;
    double ok = 0;

    memset(st, 0, sizeof(*st));
    memset(&we, 0, sizeof(we));
    if (!mi->parsed)
        return;
    if (mi->msg.h.op_code == WIRE_OP_REPLY && (mi->msg.response_flags & 3))
        st->error = true; /* CursorNotFound (1), QueryFailure (2) */
    if (mi->msg.body == NULL ||
        !bson_iter_init_from_data(&it, mi->msg.body, mi->msg.body_len))
        return;
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (strcmp(k, "ok") == 0) {
            has_ok = true;
            ok = bson_iter_as_double(&it);
        } else if (strcmp(k, "$err") == 0) {
            st->error = true;
        } else if (code_field(&it, st)) {
            continue;
        } else if ((strcmp(k, "writeErrors") == 0 &&
                    BSON_ITER_HOLDS_ARRAY(&it)) ||
                   (strcmp(k, "writeConcernError") == 0 &&
                    BSON_ITER_HOLDS_DOCUMENT(&it) && !we.write_error)) {
            write_error_fields(&it, &we);
        }
    }
    if (has_ok && ok != 1.0)
        st->error = true;
    if (!st->error) /* a code on a success is not an error's */
        *st = we;
}
