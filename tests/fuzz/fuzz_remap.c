/*
 * fuzz_remap.c -- libFuzzer target for play's rewriting of recorded
 * requests (play/remap.c): a live reply's $clusterTime / operationTime
 * taken in, then one recorded request rewritten for the live server.
 *
 * Input: byte 0 chooses the set-up (bit 0: --db test=renamed; bit 1:
 * getMores of unknown cursors wait; bits 2-3: the state of the cursor a
 * getMore names: unknown, pending, live, dead); bytes 1-4 (little-endian)
 * the length of the live reply that follows, a wire message (its body is
 * noted when it parses, as play does with every live reply); the rest, the
 * recorded request, a wire message.  Properties checked (abort when
 * broken), for a request that parses and is not OP_COMPRESSED:
 *   - a REMAP_OK result is one whole message that wire_msg_parse accepts
 *     (full validation, the checksum included), of the request's opcode,
 *     with the requestID given and responseTo 0; an OP_MSG keeps its flag
 *     bits, its document sequences and its command name;
 *   - a getMore goes out with the live id of a live cursor, waits for a
 *     pending one (and an unknown one when told to), and is refused for a
 *     dead one (and an unknown one otherwise);
 *   - an lsid goes out fresh: not the recorded id, and not the id another
 *     copy of the workload gets for the same recorded session;
 *   - $db "test" goes out as "renamed" under --db test=renamed;
 *   - rewriting is a function of the state: the same request again gives
 *     the same bytes (killCursors and endSessions, which change the state,
 *     and a body naming txnNumber twice, aside);
 *   - remap_is_plain's messages go out as remap_plain_copy sends them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/wire.h"
#include "play/remap.h"

#define RID 0x1234567
#define LIVE_XOR 0x5a5a5a5a5a5aLL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(bool ok)
{
    if (!ok)
        abort();
}

/* The 16 bytes of body's lsid.id (a binary), or NULL. */
static const uint8_t *
lsid_of(const uint8_t *body, size_t len)
{
    bson_t b;
    bson_iter_t it, id;
    const uint8_t *p;
    uint32_t n;
    bson_subtype_t st;

    if (body == NULL || !bson_init_static(&b, body, len) ||
        !bson_iter_init_find(&it, &b, "lsid") ||
        !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &id) ||
        !bson_iter_find(&id, "id") || !BSON_ITER_HOLDS_BINARY(&id))
        return NULL;
    bson_iter_binary(&id, &st, &n, &p);
    return n == 16 ? p : NULL;
}

/* How many top-level keys of body are named key. */
static int
count_key(const uint8_t *body, size_t len, const char *key)
{
    bson_t b;
    bson_iter_t it;
    int n = 0;

    if (body == NULL || !bson_init_static(&b, body, len) ||
        !bson_iter_init(&it, &b))
        return 0;
    while (bson_iter_next(&it))
        n += strcmp(bson_iter_key(&it), key) == 0;
    return n;
}

/* body's first key (into dst), its getMore cursor id when it is a number
 * (*gm true), and its $db. */
static void
cmd_of(const uint8_t *body, size_t len, char *dst, size_t cap, bool *gm,
       int64_t *gm_id, char *db, size_t dbcap)
{
    bson_t b;
    bson_iter_t it;

    dst[0] = db[0] = '\0';
    *gm = false;
    if (body == NULL || !bson_init_static(&b, body, len) ||
        !bson_iter_init(&it, &b))
        return;
    if (bson_iter_next(&it)) {
        snprintf(dst, cap, "%s", bson_iter_key(&it));
        if (strcmp(dst, "getMore") == 0 && BSON_ITER_HOLDS_NUMBER(&it)) {
            *gm = true;
            *gm_id = bson_iter_as_int64(&it);
        }
    }
    if (bson_iter_init_find(&it, &b, "$db") && BSON_ITER_HOLDS_UTF8(&it))
        snprintf(db, dbcap, "%s", bson_iter_utf8(&it, NULL));
}

/* Checks out against in; o: out parsed. */
static void
check_out(const struct wire_msg *in, const struct mt_buf *out,
          struct wire_msg *o_out)
{
    struct wire_msg o;
    struct mt_err err;
    size_t used;
    char a[64], b[64], dba[64], dbb[64];
    bool gma, gmb;
    int64_t ida = 0, idb = 0;

    check(wire_msg_parse(out->data, out->len, &o, &used, &err) == MT_OK);
    check(used == out->len);
    *o_out = o;
    check(o.h.op_code == in->h.op_code);
    check(o.h.request_id == RID && o.h.response_to == 0);
    if (in->h.op_code != WIRE_OP_MSG)
        return;
    check(o.flags == in->flags && o.nseq == in->nseq);
    for (size_t i = 0; i < o.nseq; i++)
        check(strcmp(o.seq[i].identifier, in->seq[i].identifier) == 0 &&
              o.seq[i].docs_len == in->seq[i].docs_len &&
              memcmp(o.seq[i].docs, in->seq[i].docs, o.seq[i].docs_len) == 0);
    cmd_of(in->body, in->body_len, a, sizeof(a), &gma, &ida, dba, sizeof(dba));
    cmd_of(o.body, o.body_len, b, sizeof(b), &gmb, &idb, dbb, sizeof(dbb));
    check(strcmp(a, b) == 0);
    if (gma)
        check(gmb && idb == (ida ^ LIVE_XOR));
}

static void
rewrite(struct remap *rm, uint32_t copy, const struct wire_msg *m,
        struct mt_buf *out, enum remap_result *res)
{
    int64_t rc_id;
    int rc;

    mt_buf_reset(out);
    rc = remap_msg(rm, copy, m, RID, out, res, &rc_id);
    check(rc == 0 || rc == -ENOMEM || rc == MT_ETOOBIG || rc == MT_ELIMIT ||
          rc == MT_EBSON);
    if (rc != 0) {
        check(out->len == 0);
        *res = REMAP_NOCURSOR; /* nothing to compare */
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const from[] = {"test"}, *const to[] = {"renamed"};
    struct remap *rm;
    struct wire_msg rep, m;
    struct mt_buf out, again, plain;
    struct mt_err err;
    enum remap_result res, res2;
    size_t used, rlen;
    uint8_t flags;
    char cmd[64], db[64];
    bool gm;
    int64_t gm_id = 0;
    int cstate;

    if (size < 5)
        return 0;
    flags = data[0];
    rlen = (size_t)data[1] | (size_t)data[2] << 8 | (size_t)data[3] << 16 |
           (size_t)data[4] << 24;
    data += 5;
    size -= 5;
    if (rlen > size)
        rlen = size;
    rm = flags & 1 ? remap_new(from, to, 1) : remap_new(NULL, NULL, 0);
    if (rm == NULL)
        return 0;
    remap_set_unknown_waits(rm, (flags & 2) != 0);
    if (rlen > 0 && wire_msg_parse(data, rlen, &rep, &used, &err) == MT_OK &&
        rep.body != NULL)
        remap_note_reply(rm, rep.body, rep.body_len);
    data += rlen;
    size -= rlen;
    if (wire_msg_parse(data, size, &m, &used, &err) != MT_OK ||
        m.h.op_code == WIRE_OP_COMPRESSED) {
        remap_free(rm);
        return 0;
    }
    cmd_of(m.body, m.body_len, cmd, sizeof(cmd), &gm, &gm_id, db, sizeof(db));
    cstate = (flags >> 2) & 3;
    if (m.h.op_code == WIRE_OP_MSG && gm && cstate != 0) {
        check(remap_cursor_open(rm, 0, gm_id) == 0);
        if (cstate == 2)
            remap_cursor_set(rm, 0, gm_id, gm_id ^ LIVE_XOR);
        else if (cstate == 3)
            remap_cursor_set(rm, 0, gm_id, 0);
        if (cstate == 2 && (gm_id ^ LIVE_XOR) == 0)
            cstate = 3; /* a live id of 0 is a dead cursor */
    }
    mt_buf_init(&out, WIRE_MSG_LEN_MAX);
    mt_buf_init(&again, WIRE_MSG_LEN_MAX);
    mt_buf_init(&plain, WIRE_MSG_LEN_MAX);
    rewrite(rm, 0, &m, &out, &res);
    if (m.h.op_code == WIRE_OP_MSG && gm && out.len > 0) {
        static const enum remap_result want[] = {REMAP_NOCURSOR, REMAP_WAIT,
                                                 REMAP_OK, REMAP_NOCURSOR};
        check(res == (cstate == 0 && (flags & 2) ? REMAP_WAIT : want[cstate]));
    }
    if (res == REMAP_OK && out.len > 0) {
        const uint8_t *rec = lsid_of(m.body, m.body_len);
        struct wire_msg o;

        check_out(&m, &out, &o);
        if (m.h.op_code == WIRE_OP_MSG && rec != NULL &&
            count_key(m.body, m.body_len, "lsid") == 1) {
            const uint8_t *live = lsid_of(o.body, o.body_len);
            uint8_t first[16];
            struct wire_msg o2;

            check(live != NULL && memcmp(live, rec, 16) != 0);
            memcpy(first, live, 16);
            rewrite(rm, 1, &m, &again, &res2);
            if (res2 == REMAP_OK && again.len > 0 &&
                wire_msg_parse(again.data, again.len, &o2, &used, &err) ==
                    MT_OK) {
                const uint8_t *other = lsid_of(o2.body, o2.body_len);
                check(other != NULL && memcmp(other, first, 16) != 0);
            }
        }
        if (m.h.op_code == WIRE_OP_MSG && (flags & 1) &&
            strcmp(db, "test") == 0 &&
            count_key(m.body, m.body_len, "$db") == 1) {
            char c2[64], db2[64];
            bool g2;
            int64_t id2;
            cmd_of(o.body, o.body_len, c2, sizeof(c2), &g2, &id2, db2,
                   sizeof(db2));
            check(strcmp(db2, "renamed") == 0);
        }
        if (strcmp(cmd, "killCursors") != 0 &&
            strcmp(cmd, "endSessions") != 0 &&
            count_key(m.body, m.body_len, "txnNumber") <= 1) {
            rewrite(rm, 0, &m, &again, &res2);
            check(res2 == REMAP_OK && again.len == out.len &&
                  memcmp(again.data, out.data, out.len) == 0);
        }
        if (remap_is_plain(rm, &m)) {
            check(remap_plain_copy(m.raw, m.raw_len, RID, &plain) == 0);
            check(plain.len == out.len &&
                  memcmp(plain.data, out.data, out.len) == 0);
        }
    }
    mt_buf_free(&out);
    mt_buf_free(&again);
    mt_buf_free(&plain);
    remap_free(rm);
    return 0;
}
