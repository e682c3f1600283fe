/*
 * bench_replay_conn.c -- CPU cost of answering one request in the replay
 * connection core (replay/conn.c), without sockets: parse, key, lookup,
 * reply encoding and release, for seed 000's find_one.  Compare with the
 * kernel's share of a loopback round trip (bench/bench_replay.sh).
 *
 *     bench_replay_conn [--seconds S]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "replay/conn.h"

static uint64_t replies;

static void
on_emit(struct replay_conn *c, struct replay_reply *r, void *arg)
{
    (void)arg;
    if (!replay_conn_release(c, r, r->ready_at_ns))
        replay_reply_free(r);
    replies++;
}

static void
encode(struct mt_buf *m, int32_t rid, int32_t to, const bson_t *b)
{
    mt_buf_init(m, WIRE_MSG_LEN_MAX);
    if (wire_encode_msg(m, rid, to, 0, b, NULL, 0) < 0)
        abort();
}

int
main(int argc, char **argv)
{
    bson_t *req =
        BCON_NEW("find", BCON_UTF8("test_col"), "filter", "{", "_id",
                 BCON_UTF8("test-doc-1"), "}", "limit", BCON_INT32(1),
                 "singleBatch", BCON_BOOL(true), "lsid", "{", "id",
                 BCON_INT32(5), "}", "$db", BCON_UTF8("benchmark_db"));
    bson_t *rep = BCON_NEW(
        "cursor", "{", "firstBatch", "[", "{", "_id", BCON_UTF8("test-doc-1"),
        "value", BCON_INT32(42), "}", "]", "id", BCON_INT64(0), "ns",
        BCON_UTF8("benchmark_db.test_col"), "}", "ok", BCON_DOUBLE(1));
    double secs = argc > 2 && strcmp(argv[1], "--seconds") == 0
                      ? strtod(argv[2], NULL)
                      : 1.0;
    struct match_rules rules;
    struct index idx;
    struct cursor_table cursors;
    struct replay_shared sh;
    struct replay_worker w;
    struct replay_conn c;
    struct mt_buf q, p;
    uint64_t t0, t1, n = 0;
    size_t used;

    mt_log_set_level(MT_LOG_ERROR);
    match_rules_default(&rules);
    index_init(&idx, &rules);
    encode(&q, 1, 0, req);
    encode(&p, 2, 1, rep);
    if (index_add(&idx, q.data, q.len, p.data, p.len, 1000, NULL) < 0 ||
        cursor_table_init(&cursors, 16, 1) < 0)
        abort();
    memset(&sh, 0, sizeof(sh));
    sh.idx = &idx;
    sh.cursors = &cursors;
    delay_cfg_init(&sh.delay);
    handshake_init(&sh.hs, NULL, 0);
    replay_worker_init(&w, &sh, 1);
    replay_conn_init(&c, &w, on_emit, NULL);
    t0 = mt_now_ns();
    do {
        for (int i = 0; i < 1000; i++) {
            if (replay_conn_input(&c, q.data, q.len, 0, &used, NULL) < 0)
                abort();
            n++;
        }
        t1 = mt_now_ns();
    } while (t1 - t0 < (uint64_t)(secs * 1e9));
    printf("replay_conn: %llu requests in %.2f s: %.0f ns per request "
           "(parse + key + lookup + reply + release), %llu replies\n",
           (unsigned long long)n, (t1 - t0) / 1e9, (double)(t1 - t0) / n,
           (unsigned long long)replies);
    replay_conn_close(&c, NULL, NULL);
    replay_worker_free(&w);
    cursor_table_free(&cursors);
    index_free(&idx);
    mt_buf_free(&q);
    mt_buf_free(&p);
    bson_destroy(req);
    bson_destroy(rep);
    return 0;
}
