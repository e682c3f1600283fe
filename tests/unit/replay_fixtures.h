/*
 * replay_fixtures.h -- the connection-core fixture shared by
 * test_replay_conn.c and test_auth.c: an index, a cursor table, the shared
 * part, a worker and one connection whose replies are collected in out[],
 * with JSON-to-BSON and OP_MSG helpers.  Each test file builds its own
 * index in its setup, then calls fixture_start.  Include after <cmocka.h>.
 * static inline: a test file uses what it needs.
 */
#ifndef MT_TEST_REPLAY_FIXTURES_H
#define MT_TEST_REPLAY_FIXTURES_H

#include <stdlib.h>

#include "replay/conn.h"

#define OUT_MAX 64

struct fixture {
    struct index idx;
    struct cursor_table cursors;
    struct replay_shared sh;
    struct auth_cfg auth;   /* test_auth.c: --credentials (sh.auth) */
    struct scram_user user; /* test_auth.c: its one user */
    struct replay_worker w;
    struct replay_conn c;
    struct replay_reply *out[OUT_MAX]; /* owned: the replies emitted */
    size_t nout;
};

/* The connection's emit callback: the reply joins f->out. */
static inline void
on_emit(struct replay_conn *c, struct replay_reply *r, void *arg)
{
    struct fixture *f = arg;

    (void)c;
    assert_true(f->nout < OUT_MAX);
    f->out[f->nout++] = r;
}

/* The document of extended JSON s (the caller destroys it). */
static inline bson_t *
json(const char *s)
{
    bson_error_t e;
    bson_t *b = bson_new_from_json((const uint8_t *)s, -1, &e);

    if (b == NULL)
        fail_msg("bad JSON in test: %s: %s", s, e.message);
    return b;
}

/* An OP_MSG of the JSON command js into m (initialised here). */
static inline void
encode(struct mt_buf *m, int32_t rid, int32_t to, uint32_t flags,
       const char *js)
{
    bson_t *b = json(js);

    mt_buf_init(m, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_msg(m, rid, to, flags, b, NULL, 0), 0);
    bson_destroy(b);
}

/*
 * After the setup filled f->idx (and f->sh.auth, f->auth when it
 * authenticates): the cursor table, the shared part (the hello template
 * from the index, every reply delayed delay_ns, connection ids from
 * first_conn_id), the worker and the connection.
 */
static inline void
fixture_start(struct fixture *f, uint64_t delay_ns, int64_t first_conn_id)
{
    assert_int_equal(cursor_table_init(&f->cursors, 100, 1), 0);
    f->sh.idx = &f->idx;
    f->sh.cursors = &f->cursors;
    handshake_init(&f->sh.hs, f->idx.hello, f->idx.hello_len);
    delay_cfg_init(&f->sh.delay);
    f->sh.delay.delay_ns = delay_ns;
    atomic_init(&f->sh.next_conn_id, first_conn_id);
    assert_int_equal(replay_worker_init(&f->w, &f->sh, 1), 0);
    replay_conn_init(&f->c, &f->w, on_emit, f);
}

/* cmocka teardown: the replies (a stream stays with the conn until it
 * closes), the connection, the worker, the cursor table, the index. */
static inline int
teardown(void **state)
{
    struct fixture *f = *state;

    for (size_t i = 0; i < f->nout; i++)
        if (f->out[i] != NULL &&
            !replay_conn_release(&f->c, f->out[i], f->out[i]->ready_at_ns))
            replay_reply_free(f->out[i]);
    replay_conn_close(&f->c, NULL, NULL);
    replay_worker_free(&f->w);
    cursor_table_free(&f->cursors);
    index_free(&f->idx);
    free(f);
    return 0;
}

/* The value at dotted path in b as an int64 (fails when absent). */
static inline int64_t
i64_at(const bson_t *b, const char *path)
{
    bson_iter_t it;

    assert_true(bson_iter_init(&it, b));
    if (!bson_iter_find_descendant(&it, path, &it))
        fail_msg("no %s", path);
    return bson_iter_as_int64(&it);
}

#endif
