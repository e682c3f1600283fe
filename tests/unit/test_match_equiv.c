/*
 * test_match_equiv.c -- replay/match.c's equivalences (docs/replay.md,
 * "Equivalent requests"): cursor shapes parsed and normalised, which
 * recorded shape answers which request, keys without the server's
 * defaults, and the index picking by shape.  Valid and refused cases in
 * separate tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/wire.h"
#include "replay/index.h"
#include "replay/match.h"
#include "replay/matchkey.h"

/* An OP_MSG for the JSON command (and one kind-1 sequence) in out. */
static void
msg_of(struct mt_buf *out, int32_t rid, const char *json, const char *seq_id,
       const char *seq_json)
{
    bson_t *b = bson_new_from_json((const uint8_t *)json, -1, NULL);
    bson_t *sd = NULL;
    struct wire_seq seq;

    assert_non_null(b);
    if (seq_id != NULL) {
        sd = bson_new_from_json((const uint8_t *)seq_json, -1, NULL);
        assert_non_null(sd);
        seq.identifier = seq_id;
        seq.docs = bson_get_data(sd);
        seq.docs_len = sd->len;
    }
    mt_buf_init(out, WIRE_MSG_LEN_MAX);
    assert_int_equal(
        wire_encode_msg(out, rid, 0, 0, b, sd ? &seq : NULL, sd ? 1 : 0), 0);
    bson_destroy(b);
    if (sd != NULL)
        bson_destroy(sd);
}

/* The key (separators as spaces) and the shape of a JSON command. */
static const char *
key_shape(const struct match_rules *r, const char *json, const char *seq_id,
          const char *seq_json, struct match_shape *s)
{
    static char out[4096];
    struct mt_buf m, k;
    struct wire_msg w;
    struct match_req req;
    size_t used;

    msg_of(&m, 1, json, seq_id, seq_json);
    assert_int_equal(wire_msg_parse(m.data, m.len, &w, &used, NULL), MT_OK);
    assert_int_equal(match_req_from_msg(&w, &req, NULL), 0);
    mt_buf_init(&k, MATCH_KEY_LEN_MAX);
    assert_int_equal(match_key_build(r, &req, &k, NULL), 0);
    assert_true(k.len < sizeof(out));
    memcpy(out, k.data, k.len);
    out[k.len] = '\0';
    for (char *p = out; *p; p++)
        if (*p == MATCH_SEP)
            *p = ' ';
    if (s != NULL)
        match_shape_of(r, &req, s);
    mt_buf_free(&k);
    mt_buf_free(&m);
    return out;
}

static struct match_shape
shape_of(const char *json)
{
    struct match_rules r;
    struct match_shape s;

    match_rules_default(&r);
    (void)key_shape(&r, json, NULL, NULL, &s);
    return s;
}

#define FIND(fields)                                                           \
    "{\"find\": \"c\", \"filter\": {}, " fields "\"$db\": \"d\"}"

/* ---- shapes parsed ---- */

static void
test_match_shape_of_fields(void **state)
{
    struct match_shape s = shape_of(FIND(""));

    assert_true(s.shaped);
    assert_false(s.single);
    assert_int_equal(s.limit, 0);
    assert_int_equal(s.batch, -1);
    s = shape_of(FIND("\"limit\": {\"$numberLong\": \"3\"}, \"batchSize\": "
                      "2.0, \"singleBatch\": true, "));
    assert_true(s.shaped && s.single);
    assert_int_equal(s.limit, 3);
    assert_int_equal(s.batch, 2);
    /* aggregate: cursor {} and cursor {batchSize: N} */
    s = shape_of("{\"aggregate\": \"c\", \"pipeline\": [], \"cursor\": {}, "
                 "\"$db\": \"d\"}");
    assert_true(s.shaped);
    assert_int_equal(s.batch, -1);
    s = shape_of("{\"aggregate\": \"c\", \"pipeline\": [], \"cursor\": "
                 "{\"batchSize\": 0}, \"$db\": \"d\"}");
    assert_true(s.shaped);
    assert_int_equal(s.batch, 0);
}

/* OP_QUERY's numberToReturn < 0 carried into find: singleBatch. */
static void
test_match_shape_of_legacy_negative(void **state)
{
    struct match_shape s = shape_of(FIND("\"limit\": -1, "));

    assert_true(s.shaped && s.single);
    assert_int_equal(s.limit, 1);
    assert_int_equal(s.batch, 1);
    s = shape_of(FIND("\"batchSize\": -5, "));
    assert_true(s.single);
    assert_int_equal(s.limit, 0);
    assert_int_equal(s.batch, 5);
    s = shape_of(FIND("\"limit\": -4, \"batchSize\": 2, "));
    assert_true(s.single);
    assert_int_equal(s.limit, 4);
    assert_int_equal(s.batch, 4);
}

/* Ill-typed shaping fields, other commands, strict rules: unshaped, and
 * the fields stay in the key. */
static void
test_match_shape_of_unshaped(void **state)
{
    struct match_rules r;
    struct match_shape s;

    match_rules_default(&r);
    assert_string_equal(
        key_shape(&r, FIND("\"limit\": \"1\", "), NULL, NULL, &s),
        "d find=\"c\" filter={} limit=\"1\"");
    assert_false(s.shaped);
    assert_false(shape_of(FIND("\"limit\": 1.5, ")).shaped);
    assert_false(shape_of(FIND("\"singleBatch\": 1, ")).shaped);
    assert_false(shape_of("{\"aggregate\": \"c\", \"pipeline\": [], "
                          "\"cursor\": {\"batchSize\": 1, \"x\": 1}, "
                          "\"$db\": \"d\"}")
                     .shaped);
    assert_false(
        shape_of("{\"count\": \"c\", \"limit\": 1, \"$db\": \"d\"}").shaped);
    r.strict = true;
    assert_string_equal(key_shape(&r,
                                  FIND("\"limit\": 1, \"singleBatch\": true, "),
                                  NULL, NULL, &s),
                        "d find=\"c\" filter={} limit=1 singleBatch=true");
    assert_false(s.shaped);
}

/* ---- which recorded shape answers which request ---- */

static bool
serves(const char *rec, int64_t cursor_id, int32_t n, const char *q)
{
    struct match_shape a = shape_of(rec), b = shape_of(q);
    return match_shape_serves(&a, cursor_id, n, &b);
}

/* pymongo's find_one, Node's findOne, libmongoc's find with limit 1. */
static void
test_match_shape_serves_find_one(void **state)
{
    const char *py = FIND("\"limit\": 1, \"singleBatch\": true, ");
    const char *node = FIND("\"limit\": 1, \"singleBatch\": true, "
                            "\"batchSize\": 1, ");
    const char *c = FIND("\"limit\": 1, ");
    const char *legacy = FIND("\"limit\": -1, ");

    assert_true(serves(py, 0, 1, node));
    assert_true(serves(py, 0, 1, c));
    assert_true(serves(c, 0, 1, py));
    assert_true(serves(node, 0, 1, legacy));
    assert_true(serves(py, 0, 0, FIND(""))); /* nothing matched: nothing */
    /* equal once normalised: served even from a cursor left open */
    assert_true(serves(legacy, 55, 1, node));
}

static void
test_match_shape_serves_refused_find_one(void **state)
{
    const char *py = FIND("\"limit\": 1, \"singleBatch\": true, ");

    /* one document of possibly more: a request for more gets more */
    assert_false(serves(py, 0, 1, FIND("")));
    assert_false(serves(py, 0, 1, FIND("\"limit\": 2, ")));
    assert_false(serves(py, 0, 1, FIND("\"singleBatch\": true, ")));
    /* a cursor left open (5.0+ when the limit lines up): only equal shapes */
    assert_false(serves(FIND("\"limit\": 1, "), 9, 1, py));
}

/* Every document of the query in the first batch (no limit reached). */
static void
test_match_shape_serves_whole_result(void **state)
{
    const char *all = FIND("");

    assert_true(serves(all, 0, 3, FIND("\"limit\": 3, ")));
    assert_true(serves(all, 0, 3, FIND("\"limit\": 50, ")));
    assert_true(serves(all, 0, 3, FIND("\"batchSize\": 3, ")));
    assert_true(serves(all, 0, 3, FIND("\"singleBatch\": true, ")));
    assert_true(serves(FIND("\"limit\": 10, "), 0, 3, FIND("")));
    assert_true(serves("{\"aggregate\": \"c\", \"cursor\": {}, \"$db\": \"d\"}",
                       0, 1,
                       "{\"aggregate\": \"c\", \"cursor\": {\"batchSize\": 5}, "
                       "\"$db\": \"d\"}"));
}

static void
test_match_shape_serves_refused_whole_result(void **state)
{
    const char *all = FIND("");

    /* a limit below the recorded count must not match */
    assert_false(serves(all, 0, 3, FIND("\"limit\": 2, ")));
    /* a batch smaller than the recorded one: another first batch */
    assert_false(serves(all, 0, 3, FIND("\"batchSize\": 2, ")));
    assert_false(
        serves("{\"aggregate\": \"c\", \"cursor\": {}, \"$db\": \"d\"}", 0, 3,
               "{\"aggregate\": \"c\", \"cursor\": {\"batchSize\": 0}, "
               "\"$db\": \"d\"}"));
    /* an error reply (no firstBatch): only equal shapes */
    assert_false(serves(all, 0, -1, FIND("\"limit\": 1, ")));
}

/* A non-exhausted cursor's batchSize matters; equal shapes still serve. */
static void
test_match_shape_serves_open_cursor(void **state)
{
    const char *b100 = FIND("\"batchSize\": 100, ");

    assert_true(serves(b100, 77, 100, FIND("\"batchSize\": 100.0, ")));
    assert_false(serves(b100, 77, 100, FIND("\"batchSize\": 50, ")));
    assert_false(serves(b100, 77, 100, FIND("\"batchSize\": 200, ")));
    assert_false(serves(b100, 77, 100, FIND("")));
    /* limit 50 caps both first batches alike */
    assert_true(serves(FIND("\"batchSize\": 200, \"limit\": 50, "), 77, 50,
                       FIND("\"batchSize\": 300, \"limit\": 50, ")));
}

/* singleBatch below its cap: every document, or a batch cut at 16 MiB. */
static void
test_match_shape_serves_single_batch(void **state)
{
    const char *one = FIND("\"singleBatch\": true, ");

    assert_true(serves(one, 0, 3,
                       FIND("\"singleBatch\": true, "
                            "\"batchSize\": 50, ")));
    assert_true(serves(one, 0, 3, FIND("\"limit\": 3, ")));
    assert_false(serves(one, 0, 3, FIND(""))); /* may have been cut */
    assert_false(serves(one, 0, 3,
                        FIND("\"singleBatch\": true, "
                             "\"batchSize\": 2, ")));
    /* full to its batchSize: more may exist */
    assert_false(serves(FIND("\"singleBatch\": true, \"batchSize\": 3, "), 0, 3,
                        FIND("\"singleBatch\": true, ")));
    assert_true(serves(FIND("\"singleBatch\": true, \"batchSize\": 3, "), 0, 3,
                       FIND("\"limit\": 3, ")));
    /* unshaped meets only unshaped */
    assert_false(serves(FIND("\"limit\": \"x\", "), 0, 0, FIND("")));
}

/* ---- keys without the server's defaults ---- */

static void
test_match_key_write_defaults(void **state)
{
    struct match_rules r;
    char a[1024];

    match_rules_default(&r);
    snprintf(a, sizeof(a), "%s",
             key_shape(&r,
                       "{\"update\": \"c\", \"ordered\": true, \"updates\": "
                       "[{\"q\": {}, \"u\": {\"$set\": {\"v\": 1}}, \"multi\": "
                       "false, \"upsert\": false}], \"$db\": \"d\"}",
                       NULL, NULL, NULL));
    assert_string_equal(a, "d update=\"c\" updates=[{\"q\":{},\"u\":{\"$set\":"
                           "{\"v\":1}}}]");
    /* the same statements as a kind-1 sequence, ordered absent */
    assert_string_equal(
        key_shape(&r, "{\"update\": \"c\", \"$db\": \"d\"}", "updates",
                  "{\"q\": {}, \"u\": {\"$set\": {\"v\": 1}}}", NULL),
        a);
    /* insert's documents in the body or as a sequence: one key */
    snprintf(a, sizeof(a), "%s",
             key_shape(&r,
                       "{\"insert\": \"c\", \"documents\": [{\"v\": 1}], "
                       "\"zz\": 1, \"$db\": \"d\"}",
                       NULL, NULL, NULL));
    assert_string_equal(key_shape(&r,
                                  "{\"insert\": \"c\", \"zz\": 1, \"ordered\": "
                                  "true, \"$db\": \"d\"}",
                                  "documents", "{\"v\": 1}", NULL),
                        a);
}

static void
test_match_key_refused_write_defaults(void **state)
{
    struct match_rules r;

    match_rules_default(&r);
    /* values that are not the defaults are kept */
    assert_string_equal(
        key_shape(&r,
                  "{\"update\": \"c\", \"ordered\": false, \"updates\": "
                  "[{\"q\": {}, \"u\": {}, \"multi\": true, \"upsert\": "
                  "false}], \"$db\": \"d\"}",
                  NULL, NULL, NULL),
        "d update=\"c\" ordered=false updates=[{\"q\":{},\"u\":{},"
        "\"multi\":true}]");
    /* only in update statements: a filter's multi: false is data */
    assert_string_equal(key_shape(&r,
                                  "{\"find\": \"c\", \"filter\": {\"multi\": "
                                  "false}, \"$db\": \"d\"}",
                                  NULL, NULL, NULL),
                        "d find=\"c\" filter={\"multi\":false}");
    r.strict = true;
    assert_string_equal(
        key_shape(&r,
                  "{\"update\": \"c\", \"ordered\": true, \"updates\": "
                  "[{\"q\": {}, \"u\": {}, \"upsert\": false}], \"$db\": "
                  "\"d\"}",
                  NULL, NULL, NULL),
        "d update=\"c\" ordered=true updates=[{\"q\":{},\"u\":{},"
        "\"upsert\":false}]");
}

/* findAndModify: remove, new and upsert false are the server's defaults
 * (pymongo sends new and upsert, the Node driver all three, libmongoc
 * none); true values, other types and --strict keep them. */
static void
test_match_key_find_and_modify_defaults(void **state)
{
    struct match_rules r;
    char a[1024];

    match_rules_default(&r);
    snprintf(a, sizeof(a), "%s",
             key_shape(&r,
                       "{\"findAndModify\": \"c\", \"query\": {\"_id\": 1}, "
                       "\"update\": {\"$set\": {\"v\": 1}}, \"$db\": \"d\"}",
                       NULL, NULL, NULL));
    assert_string_equal(a, "d findAndModify=\"c\" query={\"_id\":1} "
                           "update={\"$set\":{\"v\":1}}");
    assert_string_equal(
        key_shape(&r,
                  "{\"findAndModify\": \"c\", \"query\": {\"_id\": 1}, "
                  "\"new\": false, \"update\": {\"$set\": {\"v\": 1}}, "
                  "\"upsert\": false, \"$db\": \"d\"}",
                  NULL, NULL, NULL),
        a);
    assert_string_equal(
        key_shape(&r,
                  "{\"findAndModify\": \"c\", \"query\": {\"_id\": 1}, "
                  "\"update\": {\"$set\": {\"v\": 1}}, \"remove\": false, "
                  "\"new\": false, \"upsert\": false, \"$db\": \"d\"}",
                  NULL, NULL, NULL),
        a);
    /* other values are kept */
    assert_string_equal(
        key_shape(&r,
                  "{\"findAndModify\": \"c\", \"query\": {\"_id\": 1}, "
                  "\"update\": {\"$set\": {\"v\": 1}}, \"new\": true, "
                  "\"upsert\": 0, \"$db\": \"d\"}",
                  NULL, NULL, NULL),
        "d findAndModify=\"c\" new=true query={\"_id\":1} "
        "update={\"$set\":{\"v\":1}} upsert=0");
    /* only findAndModify's: another command's new: false is kept */
    assert_string_equal(key_shape(&r,
                                  "{\"count\": \"c\", \"new\": false, "
                                  "\"$db\": \"d\"}",
                                  NULL, NULL, NULL),
                        "d count=\"c\" new=false");
    r.strict = true;
    assert_string_equal(
        key_shape(&r,
                  "{\"findAndModify\": \"c\", \"query\": {\"_id\": 1}, "
                  "\"remove\": false, \"$db\": \"d\"}",
                  NULL, NULL, NULL),
        "d findAndModify=\"c\" query={\"_id\":1} remove=false");
}

/* ---- the index picks by shape ---- */

static void
add(struct index *idx, int32_t rid, const char *req, const char *reply)
{
    struct mt_buf q, p;
    struct mt_err err;
    bson_t *b = bson_new_from_json((const uint8_t *)reply, -1, NULL);

    assert_non_null(b);
    msg_of(&q, rid, req, NULL, NULL);
    mt_buf_init(&p, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_msg(&p, 100 + rid, rid, 0, b, NULL, 0), 0);
    assert_int_equal(index_add(idx, q.data, q.len, p.data, p.len, 1000, &err),
                     0);
    bson_destroy(b);
    mt_buf_free(&q);
    mt_buf_free(&p);
}

static void
test_index_group_pick_shape(void **state)
{
    struct match_rules r;
    struct index idx;
    struct index_group *g;
    struct match_shape q;
    const char *one = "{\"cursor\": {\"id\": {\"$numberLong\": \"0\"}, "
                      "\"firstBatch\": [{\"_id\": 1}]}, \"ok\": 1}";
    char key[256];

    match_rules_default(&r);
    index_init(&idx, &r);
    add(&idx, 1, FIND("\"limit\": 1, \"singleBatch\": true, "), one);
    add(&idx, 2, FIND("\"batchSize\": 5, "),
        "{\"cursor\": {\"id\": {\"$numberLong\": \"0\"}, \"firstBatch\": "
        "[{\"_id\": 1}, {\"_id\": 2}]}, \"ok\": 1}");
    assert_int_equal(idx.st.groups, 1); /* one key, two shapes */
    assert_int_equal(idx.ex[0].first_n, 1);
    snprintf(key, sizeof(key), "d%cfind=\"c\"%cfilter={}", MATCH_SEP,
             MATCH_SEP);
    g = index_find(&idx, key, strlen(key));
    assert_non_null(g);
    assert_int_equal(g->ncls, 2);
    /* equal shapes first, whatever the round-robin position */
    for (int i = 0; i < 3; i++) {
        q = shape_of(FIND("\"batchSize\": 5, "));
        assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[1]);
        q = shape_of(FIND("\"limit\": 1, \"singleBatch\": true, "));
        assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[0]);
    }
    q = shape_of(FIND("\"limit\": 1, "));
    assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[0]);
    q = shape_of(FIND("")); /* the whole result of two documents */
    assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[1]);
    q = shape_of(FIND("\"batchSize\": 1, ")); /* neither */
    assert_null(index_group_pick_shape(&idx, g, &q));
    index_free(&idx);
}

/* Each shape cycles through its own exchanges in recorded order. */
static void
test_index_group_pick_shape_order(void **state)
{
    const char *a = FIND("\"limit\": 1, \"singleBatch\": true, ");
    const char *b = FIND("\"batchSize\": 5, ");
    char reply[160];
    struct match_rules r;
    struct index idx;
    struct index_group *g;
    struct match_shape q;

    match_rules_default(&r);
    index_init(&idx, &r);
    for (int i = 0; i < 4; i++) { /* a0 b1 a2 b3, each reply its own */
        snprintf(reply, sizeof(reply),
                 "{\"cursor\": {\"id\": {\"$numberLong\": \"0\"}, "
                 "\"firstBatch\": [{\"_id\": %d}]}, \"ok\": 1}",
                 i);
        add(&idx, i + 1, i % 2 ? b : a, reply);
    }
    g = idx.groups[0];
    assert_int_equal(idx.st.groups, 1);
    assert_int_equal(g->ncls, 2);
    q = shape_of(a);
    assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[0]);
    assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[2]);
    q = shape_of(b);
    assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[1]);
    q = shape_of(a);
    assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[0]);
    q = shape_of(b);
    assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[3]);
    /* limit 1 alone: served by the first shape's class, in its order */
    q = shape_of(FIND("\"limit\": 1, "));
    assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[2]);
    assert_ptr_equal(index_group_pick_shape(&idx, g, &q), &idx.ex[0]);
    index_free(&idx);
}

int
main(void)
{
    const struct CMUnitTest valid[] = {
        cmocka_unit_test(test_match_shape_of_fields),
        cmocka_unit_test(test_match_shape_of_legacy_negative),
        cmocka_unit_test(test_match_shape_serves_find_one),
        cmocka_unit_test(test_match_shape_serves_whole_result),
        cmocka_unit_test(test_match_shape_serves_open_cursor),
        cmocka_unit_test(test_match_shape_serves_single_batch),
        cmocka_unit_test(test_match_key_write_defaults),
        cmocka_unit_test(test_index_group_pick_shape),
        cmocka_unit_test(test_index_group_pick_shape_order),
    };
    const struct CMUnitTest refused[] = {
        cmocka_unit_test(test_match_shape_of_unshaped),
        cmocka_unit_test(test_match_shape_serves_refused_find_one),
        cmocka_unit_test(test_match_shape_serves_refused_whole_result),
        cmocka_unit_test(test_match_key_refused_write_defaults),
        cmocka_unit_test(test_match_key_find_and_modify_defaults),
    };
    int rc = cmocka_run_group_tests_name("equivalences", valid, NULL, NULL);

    return rc | cmocka_run_group_tests_name("refused", refused, NULL, NULL);
}
