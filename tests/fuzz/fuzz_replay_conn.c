/*
 * fuzz_replay_conn.c -- bytes in, replies out through the replay
 * connection state machine (replay/conn.c) with no socket: a small index of
 * recorded exchanges and one worker (as one replay thread: its key cache
 * and scratch buffers outlive its connections) are built once; each input
 * gets a fresh cursor table and connection, so that what it allocates is
 * freed before it returns (libFuzzer runs a LeakSanitizer scan after any
 * input whose mallocs and frees do not balance: with the cursor table kept
 * across inputs those scans took ~70% of the time; a worker per input spent
 * ~40% zeroing its histograms and key cache).  The key cache only maps the
 * raw bytes of a request to its index group, so a finding should reproduce
 * from its input alone.  The input is fed in
 * chunks (the first byte picks the chunk size, as a socket would split it);
 * every emitted reply is released and checked to parse.
 *
 * Every input runs twice: on a plain worker, and on a second
 * worker whose replay authenticates like mongod --auth (--credentials):
 * the user "user" of admin with RFC 5802 / RFC 7677's salts, 4096
 * iterations and password "pencil", and the RFC 7677 server nonce, so a
 * stream that replays RFC 7677's conversation (the seed
 * auth-rfc7677-then-find) logs in and reaches the recorded exchanges;
 * anything else meets conn.c's Unauthorized path, saslStart/saslContinue
 * and logout.  The corpus's old inputs keep their meaning in the first
 * pass.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "replay/conn.h"
#include "scram_rfc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct index idx;
static struct cursor_table cursors;
static struct replay_shared sh;
static struct replay_worker worker;
static struct replay_shared sh_auth; /* the same, with --credentials */
static struct replay_worker worker_auth;
static struct scram_user user;
static struct auth_cfg auth = {
    .creds = {&user, 1},
    .enabled = true,
    .test_snonce = SCRAM_RFC7677_SNONCE,
};
static uint8_t *inbuf; /* the connection's input buffer, grown as needed */
static size_t inbuf_cap;

static void
record(int32_t rid, const char *req, const char *reply)
{
    bson_t *q = bson_new_from_json((const uint8_t *)req, -1, NULL);
    bson_t *p = bson_new_from_json((const uint8_t *)reply, -1, NULL);
    struct mt_buf mq, mp;

    mt_buf_init(&mq, WIRE_MSG_LEN_MAX);
    mt_buf_init(&mp, WIRE_MSG_LEN_MAX);
    if (q == NULL || p == NULL || wire_encode_msg(&mq, rid, 0, 0, q, NULL, 0) ||
        wire_encode_msg(&mp, rid + 100, rid, 0, p, NULL, 0) ||
        index_add(&idx, mq.data, mq.len, mp.data, mp.len, 1000, NULL))
        abort();
    bson_destroy(q);
    bson_destroy(p);
    mt_buf_free(&mq);
    mt_buf_free(&mp);
}

/* sh_auth: sh plus the user of RFC 5802 / RFC 7677 ("user", "pencil"). */
static void
init_auth(void)
{
    char hex[33];

    /* SCRAM-SHA-1's keys from MongoDB's digest of the password, as a
     * driver sends it */
    if (scram_mongo_digest("user", "pencil", hex) != 0)
        abort();
    scram_rfc_user(&user, hex);
    sh_auth.idx = &idx;
    sh_auth.cursors = &cursors;
    handshake_init(&sh_auth.hs, idx.hello, idx.hello_len);
    sh_auth.hs.compressors = HANDSHAKE_COMPRESSORS_ALL;
    sh_auth.delay = sh.delay;
    sh_auth.auth = &auth;
    atomic_init(&sh_auth.next_conn_id, 1);
    if (replay_worker_init(&worker_auth, &sh_auth, 1) < 0)
        abort();
}

static void
init_once(void)
{
    struct match_rules r;

    if (sh.idx != NULL)
        return;
    mt_log_set_level(MT_LOG_ERROR);
    match_rules_default(&r);
    index_init(&idx, &r);
    record(1, "{\"hello\": 1, \"$db\": \"admin\"}",
           "{\"isWritablePrimary\": true, \"topologyVersion\": {\"processId\": "
           "{\"$oid\": \"650000000000000000000001\"}, \"counter\": 0}, \"ok\": "
           "1}");
    record(2, "{\"find\": \"c\", \"filter\": {}, \"$db\": \"d\"}",
           "{\"cursor\": {\"id\": {\"$numberLong\": \"9\"}, \"firstBatch\": "
           "[]}, \"ok\": 1}");
    record(3,
           "{\"getMore\": {\"$numberLong\": \"9\"}, \"collection\": \"c\", "
           "\"$db\": \"d\"}",
           "{\"cursor\": {\"id\": {\"$numberLong\": \"0\"}, \"nextBatch\": "
           "[]}, \"ok\": 1}");
    record(4, "{\"ping\": 1, \"$db\": \"admin\"}", "{\"ok\": 1}");
    sh.idx = &idx;
    sh.cursors = &cursors;
    handshake_init(&sh.hs, idx.hello, idx.hello_len);
    sh.hs.compressors = HANDSHAKE_COMPRESSORS_ALL; /* compressed replies */
    delay_cfg_init(&sh.delay);
    sh.delay.delay_ns = 1000;
    atomic_init(&sh.next_conn_id, 1);
    if (replay_worker_init(&worker, &sh, 1) < 0)
        abort();
    init_auth();
}

static void
on_emit(struct replay_conn *c, struct replay_reply *r, void *arg)
{
    struct wire_msg m;
    size_t used;

    (void)arg;
    /* what we send must be a well-formed message */
    if (wire_msg_parse(r->bytes, r->len, &m, &used, NULL) != MT_OK)
        abort();
    if (!replay_conn_release(c, r, r->ready_at_ns))
        replay_reply_free(r);
    /* a streamed hello stays linked; replay_conn_close frees it */
}

/* One connection of w fed data in chunks of chunk bytes. */
static void
feed(struct replay_worker *w, const uint8_t *data, size_t size, size_t chunk)
{
    struct replay_conn c;
    uint8_t *buf;
    size_t have = 0, off, used;

    if (size > inbuf_cap) {
        free(inbuf);
        inbuf = malloc(size);
        if (inbuf == NULL)
            abort();
        inbuf_cap = size;
    }
    buf = inbuf;
    if (cursor_table_init(&cursors, 1000, 1) < 0)
        abort();
    replay_conn_init(&c, w, on_emit, NULL);
    for (off = 0; off < size;) {
        size_t n = size - off < chunk ? size - off : chunk;
        memcpy(buf + have, data + off, n);
        have += n;
        off += n;
        if (replay_conn_input(&c, buf, have, off, &used, NULL) < 0)
            break;
        memmove(buf, buf + used, have - used);
        have -= used;
    }
    replay_conn_close(&c, NULL, NULL);
    cursor_table_free(&cursors);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t chunk;

    init_once();
    if (size < 1)
        return 0;
    chunk = (size_t)data[0] * 7 + 1;
    feed(&worker, data + 1, size - 1, chunk);
    feed(&worker_auth, data + 1, size - 1, chunk);
    return 0;
}
