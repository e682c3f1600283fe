/*
 * fuzz_replay_index.c -- a recorded reply, as a trace may hold it, through
 * replay's index and the replies replay builds from it: the input is the
 * body of one reply document.  It is recorded as the reply to a hello, a
 * find, a getMore of cursor 9 and a ping (index_add, which parses it
 * deep), so that it becomes the hello template (replay/handshake.c) and a
 * cursor reply replay rewrites (replay/cursor.c, wire_bson_append_iter);
 * then a client sends hello, isMaster over OP_QUERY, find, getMore and
 * ping on one connection (replay/conn.c).  Every reply replay emits must
 * parse as a wire message.  fuzz_replay_conn fuzzes the requests against
 * fixed recordings; this target the recordings against fixed requests.
 *
 * The first four bytes are overwritten with the input's length and the
 * last with 0, so that mutations reach the elements instead of dying at
 * the document's frame.  A fresh index, worker and cursor table per input:
 * nothing recorded by one input is served to the next.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "replay/conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DOC_MAX (1u << 20) /* larger inputs are cut: keeps runs fast */

static uint8_t *doc;
static struct mt_buf req, stream;

static void
check(int ok)
{
    if (!ok)
        abort();
}

/* Appends the OP_MSG of JSON request j (request id rid) to b. */
static void
msg_json(struct mt_buf *b, int32_t rid, const char *j)
{
    bson_t *q = bson_new_from_json((const uint8_t *)j, -1, NULL);

    check(q != NULL && wire_encode_msg(b, rid, 0, 0, q, NULL, 0) == 0);
    bson_destroy(q);
}

/* Records the request j with the input document as its reply. */
static void
record(struct index *idx, int32_t rid, const char *j, const bson_t *reply)
{
    struct mt_buf rep;

    mt_buf_reset(&req);
    msg_json(&req, rid, j);
    mt_buf_init(&rep, WIRE_MSG_LEN_MAX);
    check(wire_encode_msg(&rep, rid + 100, rid, 0, reply, NULL, 0) == 0);
    /* a reply the index refuses (bad BSON, a cursor id that is not a
     * number...) is skipped, as the loader skips it */
    (void)index_add(idx, req.data, req.len, rep.data, rep.len, 1000, NULL);
    mt_buf_free(&rep);
}

static void
on_emit(struct replay_conn *c, struct replay_reply *r, void *arg)
{
    struct wire_msg m;
    size_t used;

    (void)arg;
    check(wire_msg_parse(r->bytes, r->len, &m, &used, NULL) == MT_OK);
    check(used == r->len);
    if (!replay_conn_release(c, r, r->ready_at_ns))
        replay_reply_free(r);
}

static void
init_once(void)
{
    bson_t *ismaster;

    if (doc != NULL)
        return;
    mt_log_set_level(MT_LOG_ERROR); /* misses are expected: quiet */
    doc = malloc(DOC_MAX);
    check(doc != NULL);
    mt_buf_init(&req, WIRE_MSG_LEN_MAX);
    mt_buf_init(&stream, WIRE_MSG_LEN_MAX);
    /* the client's side, the same for every input */
    msg_json(&stream, 1, "{\"hello\": 1, \"$db\": \"admin\"}");
    ismaster = BCON_NEW("isMaster", BCON_INT32(1));
    check(wire_encode_query(&stream, 2, 0, "admin.$cmd", 0, -1, ismaster) == 0);
    bson_destroy(ismaster);
    msg_json(&stream, 3, "{\"find\": \"c\", \"filter\": {}, \"$db\": \"d\"}");
    msg_json(&stream, 4,
             "{\"getMore\": {\"$numberLong\": \"9\"}, \"collection\": \"c\", "
             "\"$db\": \"d\"}");
    msg_json(&stream, 5, "{\"ping\": 1, \"$db\": \"admin\"}");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct index idx;
    struct match_rules rules;
    struct cursor_table cursors;
    struct replay_shared sh;
    struct replay_worker worker;
    struct replay_conn c;
    bson_t reply;
    size_t used;

    init_once();
    if (size < 5)
        return 0;
    if (size > DOC_MAX)
        size = DOC_MAX;
    memcpy(doc, data, size);
    doc[0] = (uint8_t)size;
    doc[1] = (uint8_t)(size >> 8);
    doc[2] = (uint8_t)(size >> 16);
    doc[3] = (uint8_t)(size >> 24);
    doc[size - 1] = 0;
    if (!bson_init_static(&reply, doc, size))
        return 0;

    match_rules_default(&rules);
    index_init(&idx, &rules);
    record(&idx, 1, "{\"hello\": 1, \"$db\": \"admin\"}", &reply);
    record(&idx, 2, "{\"find\": \"c\", \"filter\": {}, \"$db\": \"d\"}",
           &reply);
    record(&idx, 3,
           "{\"getMore\": {\"$numberLong\": \"9\"}, \"collection\": \"c\", "
           "\"$db\": \"d\"}",
           &reply);
    record(&idx, 4, "{\"ping\": 1, \"$db\": \"admin\"}", &reply);

    memset(&sh, 0, sizeof(sh));
    sh.idx = &idx;
    sh.cursors = &cursors;
    handshake_init(&sh.hs, idx.hello, idx.hello_len);
    sh.hs.compressors = HANDSHAKE_COMPRESSORS_ALL;
    delay_cfg_init(&sh.delay);
    atomic_init(&sh.next_conn_id, 1);
    atomic_init(&sh.misses_logged, 0);
    check(cursor_table_init(&cursors, 1000, 1) == 0);
    check(replay_worker_init(&worker, &sh, 1) == 0);
    replay_conn_init(&c, &worker, on_emit, NULL);
    (void)replay_conn_input(&c, stream.data, stream.len, 1000000, &used, NULL);
    replay_conn_close(&c, NULL, NULL);
    replay_worker_free(&worker);
    cursor_table_free(&cursors);
    index_free(&idx);
    return 0;
}
