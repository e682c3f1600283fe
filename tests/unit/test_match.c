/*
 * test_match.c -- replay/match.c request keys and replay/index.c.
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

/* An OP_MSG request for the JSON command (and one kind-1 sequence). */
static void
msg_from_json(struct mt_buf *out, int32_t rid, const char *json,
              const char *seq_id, const char *seq_json)
{
    bson_error_t e;
    bson_t *b = bson_new_from_json((const uint8_t *)json, -1, &e);
    struct wire_seq seq;
    bson_t *sd = NULL;

    assert_non_null(b);
    if (seq_id != NULL) {
        sd = bson_new_from_json((const uint8_t *)seq_json, -1, &e);
        assert_non_null(sd);
        seq.identifier = seq_id;
        seq.docs = bson_get_data(sd);
        seq.docs_len = sd->len;
    }
    mt_buf_init(out, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_msg(out, rid, 0, 0, b, seq_id ? &seq : NULL,
                                     seq_id ? 1 : 0),
                     0);
    bson_destroy(b);
    if (sd != NULL)
        bson_destroy(sd);
}

/* The key of a JSON command, as a NUL-terminated string in buf. */
static const char *
key_of(const struct match_rules *r, const char *json, struct mt_buf *key)
{
    struct mt_buf m;
    struct wire_msg w;
    struct match_req req;
    size_t used;
    static char out[4096];

    msg_from_json(&m, 1, json, NULL, NULL);
    assert_int_equal(wire_msg_parse(m.data, m.len, &w, &used, NULL), MT_OK);
    assert_int_equal(match_req_from_msg(&w, &req, NULL), 0);
    mt_buf_init(key, MATCH_KEY_LEN_MAX);
    assert_int_equal(match_key_build(r, &req, key, NULL), 0);
    assert_true(key->len < sizeof(out));
    memcpy(out, key->data, key->len);
    out[key->len] = '\0';
    for (char *p = out; *p; p++)
        if (*p == MATCH_SEP)
            *p = ' ';
    mt_buf_free(&m);
    mt_buf_free(key);
    return out;
}

static void
test_match_key_ignores_session_fields(void **state)
{
    struct match_rules r;
    struct mt_buf k;
    char a[4096];

    match_rules_default(&r);
    snprintf(a, sizeof(a), "%s",
             key_of(&r,
                    "{\"find\": \"c\", \"filter\": {\"x\": 1}, \"$db\": "
                    "\"d\", \"lsid\": {\"id\": 1}, \"$clusterTime\": 5, "
                    "\"txnNumber\": {\"$numberLong\": \"3\"}}",
                    &k));
    assert_string_equal(a, "d find=\"c\" filter={\"x\":1}");
    /* other session values and field order: same key */
    assert_string_equal(key_of(&r,
                               "{\"find\": \"c\", \"lsid\": {\"id\": 2}, "
                               "\"$db\": \"d\", \"filter\": {\"x\": 1}}",
                               &k),
                        a);
}

static void
test_match_key_keeps_what_matters(void **state)
{
    struct match_rules r;
    struct mt_buf k;
    char a[4096];

    match_rules_default(&r);
    snprintf(a, sizeof(a), "%s",
             key_of(&r,
                    "{\"find\": \"c\", \"filter\": {\"x\": 1}, \"$db\": \"d\"}",
                    &k));
    assert_string_not_equal(
        key_of(&r, "{\"find\": \"c\", \"filter\": {\"x\": 2}, \"$db\": \"d\"}",
               &k),
        a);
    assert_string_not_equal(
        key_of(&r, "{\"find\": \"c\", \"filter\": {\"x\": 1}, \"$db\": \"e\"}",
               &k),
        a);
    assert_string_not_equal(key_of(&r,
                                   "{\"find\": \"c\", \"filter\": {\"x\": 1}, "
                                   "\"limit\": 1, \"$db\": \"d\"}",
                                   &k),
                            a);
    /* nested order is kept: a sort spec's order matters */
    snprintf(
        a, sizeof(a), "%s",
        key_of(
            &r,
            "{\"find\": \"c\", \"sort\": {\"a\": 1, \"b\": 1}, \"$db\": \"d\"}",
            &k));
    assert_string_not_equal(
        key_of(
            &r,
            "{\"find\": \"c\", \"sort\": {\"b\": 1, \"a\": 1}, \"$db\": \"d\"}",
            &k),
        a);
}

static void
test_match_key_rules_are_changeable(void **state)
{
    struct match_rules r;
    struct mt_buf k;

    match_rules_default(&r);
    assert_int_equal(match_rules_ignore(&r, "comment"), 0);
    assert_string_equal(
        key_of(&r, "{\"ping\": 1, \"comment\": \"x\", \"$db\": \"a\"}", &k),
        "a ping=1");
    assert_int_equal(match_rules_keep(&r, "lsid"), 0);
    assert_string_equal(
        key_of(&r, "{\"ping\": 1, \"lsid\": 7, \"$db\": \"a\"}", &k),
        "a ping=1 lsid=7");
    assert_int_equal(match_rules_keep(&r, "nope"), MT_ENOMATCH);
    assert_int_equal(match_rules_ignore(&r, ""), MT_EUSAGE);
}

static void
test_match_key_masks_inserted_oids(void **state)
{
    struct match_rules r;
    struct mt_buf m1, m2, k1, k2;
    struct wire_msg w1, w2;
    struct match_req q1, q2;
    size_t used;

    match_rules_default(&r);
    msg_from_json(
        &m1, 1, "{\"insert\": \"c\", \"$db\": \"d\"}", "documents",
        "{\"_id\": {\"$oid\": \"5f0000000000000000000001\"}, \"v\": 1}");
    msg_from_json(
        &m2, 2, "{\"insert\": \"c\", \"$db\": \"d\"}", "documents",
        "{\"_id\": {\"$oid\": \"5f0000000000000000000002\"}, \"v\": 1}");
    assert_int_equal(wire_msg_parse(m1.data, m1.len, &w1, &used, NULL), MT_OK);
    assert_int_equal(wire_msg_parse(m2.data, m2.len, &w2, &used, NULL), MT_OK);
    assert_int_equal(match_req_from_msg(&w1, &q1, NULL), 0);
    assert_int_equal(match_req_from_msg(&w2, &q2, NULL), 0);
    mt_buf_init(&k1, MATCH_KEY_LEN_MAX);
    mt_buf_init(&k2, MATCH_KEY_LEN_MAX);
    assert_int_equal(match_key_build(&r, &q1, &k1, NULL), 0);
    assert_int_equal(match_key_build(&r, &q2, &k2, NULL), 0);
    assert_int_equal(k1.len, k2.len);
    assert_memory_equal(k1.data, k2.data, k1.len);
    {
        static const char want[] =
            "documents=[{\"_id\":{\"$oid\":\"*\"},\"v\":1}]";
        assert_non_null(memmem(k1.data, k1.len, want, strlen(want)));
    }
    mt_buf_free(&m1);
    mt_buf_free(&m2);
    mt_buf_free(&k1);
    mt_buf_free(&k2);
    /* an ObjectId in a filter is not masked */
    assert_non_null(
        strstr(key_of(&r,
                      "{\"find\": \"c\", \"filter\": {\"_id\": {\"$oid\": "
                      "\"5f0000000000000000000001\"}}, \"$db\": \"d\"}",
                      &k1),
               "5f0000000000000000000001"));
}

static void
test_match_key_strings_never_hold_the_separator(void **state)
{
    struct match_rules r;
    struct mt_buf k;

    match_rules_default(&r);
    assert_string_equal(
        key_of(&r, "{\"find\": \"a\\u001fb\", \"$db\": \"d\"}", &k),
        "d find=\"a\\u001fb\"");
}

static void
test_match_key_diff_names_fields(void **state)
{
    const char a[] = "d\x1f"
                     "find=\"c\"\x1f"
                     "filter={\"x\":1}\x1f"
                     "limit=1";
    const char b[] = "d\x1f"
                     "find=\"c\"\x1f"
                     "filter={\"x\":2}\x1f"
                     "skip=1";
    char out[256], disp[16];

    assert_int_equal(
        match_key_diff(a, strlen(a), b, strlen(b), out, sizeof(out)), 2);
    assert_string_equal(out, "filter differs; limit only in the request; skip "
                             "only in the recording");
    match_key_display(a, strlen(a), disp, sizeof(disp));
    assert_string_equal(disp, "d find=\"c\" f...");
}

static void
test_match_req_legacy_query(void **state)
{
    bson_t *q = BCON_NEW("$query", "{", "isMaster", BCON_INT32(1), "}");
    struct mt_buf m;
    struct wire_msg w;
    struct match_req req;
    size_t used;
    struct mt_err err;

    mt_buf_init(&m, WIRE_MSG_LEN_MAX);
    assert_int_equal(wire_encode_query(&m, 5, 0, "admin.$cmd", 0, -1, q), 0);
    assert_int_equal(wire_msg_parse(m.data, m.len, &w, &used, NULL), MT_OK);
    assert_int_equal(match_req_from_msg(&w, &req, NULL), 0);
    assert_true(req.legacy);
    assert_string_equal(req.name, "isMaster");
    assert_string_equal(req.db, "admin");
    mt_buf_reset(&m);
    assert_int_equal(wire_encode_query(&m, 5, 0, "db.coll", 0, -1, q), 0);
    assert_int_equal(wire_msg_parse(m.data, m.len, &w, &used, NULL), MT_OK);
    assert_int_equal(match_req_from_msg(&w, &req, &err), MT_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "db.coll"));
    mt_buf_free(&m);
    bson_destroy(q);
}

static void
test_match_key_depth_limited(void **state)
{
    struct match_rules r;
    bson_t doc[120];
    bson_t top = BSON_INITIALIZER;
    struct match_req req;
    struct mt_buf key;
    struct mt_err err;

    /* 110 nested documents: refused with MT_ELIMIT, no stack blow-up */
    match_rules_default(&r);
    BSON_APPEND_INT32(&top, "find", 1);
    bson_append_document_begin(&top, "f", -1, &doc[0]);
    for (int i = 1; i < 110; i++)
        bson_append_document_begin(&doc[i - 1], "f", -1, &doc[i]);
    for (int i = 109; i > 0; i--)
        bson_append_document_end(&doc[i - 1], &doc[i]);
    bson_append_document_end(&top, &doc[0]);
    memset(&req, 0, sizeof(req));
    snprintf(req.name, sizeof(req.name), "find");
    req.cmd = bson_get_data(&top);
    req.cmd_len = top.len;
    mt_buf_init(&key, MATCH_KEY_LEN_MAX);
    assert_int_equal(match_key_build(&r, &req, &key, &err), MT_ELIMIT);
    mt_buf_free(&key);
    bson_destroy(&top);
}

/* index: exchanges cycle in recorded order; getMore batches chain. */
static void
add_pair(struct index *idx, int32_t rid, const char *req, const char *reply)
{
    struct mt_buf q, p;
    struct mt_err err;
    bson_t *b = bson_new_from_json((const uint8_t *)reply, -1, NULL);

    msg_from_json(&q, rid, req, NULL, NULL);
    mt_buf_init(&p, WIRE_MSG_LEN_MAX);
    assert_non_null(b);
    assert_int_equal(wire_encode_msg(&p, 100 + rid, rid, 0, b, NULL, 0), 0);
    assert_int_equal(index_add(idx, q.data, q.len, p.data, p.len, 1000, &err),
                     0);
    bson_destroy(b);
    mt_buf_free(&q);
    mt_buf_free(&p);
}

static void
test_index_cycles_and_chains(void **state)
{
    struct match_rules r;
    struct index idx;
    struct index_group *g;
    const struct index_exchange *e1, *e2, *e3;
    struct mt_buf k;

    match_rules_default(&r);
    index_init(&idx, &r);
    add_pair(&idx, 1, "{\"count\": \"c\", \"$db\": \"d\"}",
             "{\"n\": 1, \"ok\": 1}");
    add_pair(&idx, 2, "{\"count\": \"c\", \"$db\": \"d\"}",
             "{\"n\": 2, \"ok\": 1}");
    add_pair(&idx, 3, "{\"find\": \"m\", \"$db\": \"d\"}",
             "{\"cursor\": {\"id\": {\"$numberLong\": \"77\"}, \"firstBatch\": "
             "[]}, \"ok\": 1}");
    add_pair(&idx, 4,
             "{\"getMore\": {\"$numberLong\": \"77\"}, \"collection\": \"m\", "
             "\"$db\": \"d\"}",
             "{\"cursor\": {\"id\": {\"$numberLong\": \"77\"}, \"nextBatch\": "
             "[]}, \"ok\": 1}");
    add_pair(&idx, 5,
             "{\"getMore\": {\"$numberLong\": \"77\"}, \"collection\": \"m\", "
             "\"$db\": \"d\"}",
             "{\"cursor\": {\"id\": {\"$numberLong\": \"0\"}, \"nextBatch\": "
             "[]}, \"ok\": 1}");
    add_pair(&idx, 6, "{\"hello\": 1, \"$db\": \"admin\"}",
             "{\"isWritablePrimary\": true, \"ok\": 1}");
    assert_int_equal(idx.st.groups, 2);
    assert_non_null(idx.hello);
    assert_int_equal(idx.nlive, 0); /* the cursor ended in the trace */

    key_of(&r, "{\"count\": \"c\", \"$db\": \"d\"}", &k);
    mt_buf_init(&k, 64);
    assert_int_equal(mt_buf_append(&k,
                                   "d\x1f"
                                   "count=\"c\"",
                                   11),
                     0);
    g = index_find(&idx, (const char *)k.data, k.len);
    assert_non_null(g);
    e1 = index_group_pick(&idx, g);
    e2 = index_group_pick(&idx, g);
    e3 = index_group_pick(&idx, g);
    assert_ptr_not_equal(e1, e2);
    assert_ptr_equal(e1, e3); /* cycles */
    assert_int_equal(e1->latency_ns, 1000);
    mt_buf_reset(&k);
    assert_int_equal(mt_buf_append(&k,
                                   "d\x1f"
                                   "find=\"m\"",
                                   10),
                     0);
    g = index_find(&idx, (const char *)k.data, k.len);
    assert_non_null(g);
    e1 = index_group_pick(&idx, g);
    assert_int_equal(e1->cursor_id, 77);
    assert_int_equal(e1->nmore, 2);
    assert_int_equal(idx.ex[e1->more[1]].cursor_id, 0);
    /* closest key for a miss */
    mt_buf_reset(&k);
    assert_int_equal(mt_buf_append(&k,
                                   "d\x1f"
                                   "find=\"x\"",
                                   10),
                     0);
    assert_ptr_equal(index_closest(&idx, (const char *)k.data, k.len), g);
    mt_buf_free(&k);
    index_free(&idx);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_key_ignores_session_fields),
        cmocka_unit_test(test_match_key_keeps_what_matters),
        cmocka_unit_test(test_match_key_rules_are_changeable),
        cmocka_unit_test(test_match_key_masks_inserted_oids),
        cmocka_unit_test(test_match_key_strings_never_hold_the_separator),
        cmocka_unit_test(test_match_key_diff_names_fields),
        cmocka_unit_test(test_match_req_legacy_query),
        cmocka_unit_test(test_match_key_depth_limited),
        cmocka_unit_test(test_index_cycles_and_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
