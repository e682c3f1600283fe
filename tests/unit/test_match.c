/*
 * test_match.c -- replay/match.c and replay/matchkey.c request keys, and
 * replay/index.c (recorded pairs; a trace with tls records loads as
 * without them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/rd.h"
#include "core/trace.h"
#include "core/wire.h"
#include "replay/index.h"
#include "replay/match.h"
#include "replay/matchkey.h"

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
    static char out[32 << 10];

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
                                   "\"skip\": 1, \"$db\": \"d\"}",
                                   &k),
                            a);
    /* limit is compared by cursor shape, in the key only when strict */
    r.strict = true;
    assert_string_not_equal(key_of(&r,
                                   "{\"find\": \"c\", \"filter\": {\"x\": 1}, "
                                   "\"limit\": 1, \"$db\": \"d\"}",
                                   &k),
                            a);
    r.strict = false;
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

/* A causally consistent session's afterClusterTime is not part of a key:
 * a read served first in a replayed session (no readConcern) matches one
 * recorded later in its session (readConcern {afterClusterTime: T}); the
 * read concern's level stays. */
static void
test_match_key_ignores_after_cluster_time(void **state)
{
    struct match_rules r;
    struct mt_buf k;
    char a[4096];

    match_rules_default(&r);
    assert_string_equal(key_of(&r,
                               "{\"find\": \"c\", \"readConcern\": "
                               "{\"afterClusterTime\": {\"$timestamp\": "
                               "{\"t\": 5, \"i\": 1}}}, \"$db\": \"d\"}",
                               &k),
                        "d find=\"c\"");
    snprintf(a, sizeof(a), "%s",
             key_of(&r,
                    "{\"find\": \"c\", \"readConcern\": {\"level\": "
                    "\"majority\", \"afterClusterTime\": {\"$timestamp\": "
                    "{\"t\": 7, \"i\": 2}}}, \"$db\": \"d\"}",
                    &k));
    assert_string_equal(a, "d find=\"c\" readConcern={\"level\":\"majority\"}");
    assert_string_equal(key_of(&r,
                               "{\"find\": \"c\", \"readConcern\": "
                               "{\"level\": \"majority\"}, \"$db\": \"d\"}",
                               &k),
                        a);
    /* put back, and the same rule form for another field */
    assert_int_equal(match_rules_keep(&r, "readConcern.afterClusterTime"), 0);
    assert_string_equal(key_of(&r,
                               "{\"find\": \"c\", \"readConcern\": "
                               "{\"afterClusterTime\": 3}, \"$db\": \"d\"}",
                               &k),
                        "d find=\"c\" readConcern={\"afterClusterTime\":3}");
    assert_int_equal(match_rules_ignore(&r, "writeConcern.wtimeout"), 0);
    assert_string_equal(key_of(&r,
                               "{\"insert\": \"c\", \"writeConcern\": {\"w\": "
                               "1, \"wtimeout\": 50}, \"$db\": \"d\"}",
                               &k),
                        "d insert=\"c\" writeConcern={\"w\":1}");
    /* a non-document value of that name is kept whole */
    assert_string_equal(key_of(&r,
                               "{\"insert\": \"c\", \"writeConcern\": 1, "
                               "\"$db\": \"d\"}",
                               &k),
                        "d insert=\"c\" writeConcern=1");
    assert_int_equal(match_rules_ignore(&r, "a.b.c"), MT_EUSAGE);
    assert_int_equal(match_rules_ignore(&r, ".b"), MT_EUSAGE);
    assert_int_equal(match_rules_ignore(&r, "a."), MT_EUSAGE);
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

/* A command of JSON {"insert": "c", "pad": "<n x fill, last char last>"}. */
static const char *
big_key(const struct match_rules *r, size_t n, char fill, char last,
        struct mt_buf *key)
{
    static char json[64 << 10];
    int h = snprintf(json, sizeof(json), "{\"insert\": \"c\", \"pad\": \"");

    assert_true(n + (size_t)h + 32 < sizeof(json));
    memset(json + h, fill, n);
    json[h + n - 1] = last;
    snprintf(json + h + n, sizeof(json) - h - n, "\", \"$db\": \"d\"}");
    return key_of(r, json, key);
}

/* Inserted documents over the limit: their ObjectId _id is still masked. */
static void
digest_masks_oids(const struct match_rules *r)
{
    static char doc[2][40 << 10];
    struct mt_buf m[2], k[2];
    struct wire_msg w;
    struct match_req q;
    size_t used;

    for (int i = 0; i < 2; i++) {
        int h = snprintf(doc[i], sizeof(doc[i]),
                         "{\"_id\": {\"$oid\": \"5f000000000000000000000%d\"}, "
                         "\"pad\": \"",
                         i + 1);
        memset(doc[i] + h, 'p', 30000);
        snprintf(doc[i] + h + 30000, 8, "\"}");
        msg_from_json(&m[i], i + 1, "{\"insert\": \"c\", \"$db\": \"d\"}",
                      "documents", doc[i]);
        assert_int_equal(wire_msg_parse(m[i].data, m[i].len, &w, &used, NULL),
                         MT_OK);
        assert_int_equal(match_req_from_msg(&w, &q, NULL), 0);
        mt_buf_init(&k[i], MATCH_KEY_LEN_MAX);
        assert_int_equal(match_key_build(r, &q, &k[i], NULL), 0);
        assert_true(k[i].len < 200);
    }
    assert_int_equal(k[0].len, k[1].len);
    assert_memory_equal(k[0].data, k[1].data, k[0].len);
    for (int i = 0; i < 2; i++) {
        mt_buf_free(&m[i]);
        mt_buf_free(&k[i]);
    }
}

static void
test_match_key_digests_long_values(void **state)
{
    struct match_rules r;
    struct mt_buf k;
    char a[512], b[512];

    match_rules_default(&r);
    /* short values stay readable */
    assert_non_null(strstr(big_key(&r, 100, 'x', 'x', &k), "pad=\"xxxx"));
    /* a long one becomes a digest of its text: same text, same key */
    snprintf(a, sizeof(a), "%s", big_key(&r, 40000, 'x', 'x', &k));
    snprintf(b, sizeof(b), "%s", big_key(&r, 40000, 'x', 'x', &k));
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "pad={\"$digest\":\""));
    assert_non_null(strstr(a, "\"bytes\":40002}"));
    assert_true(strlen(a) < 200);
    /* one byte changed at the end, or one byte more: another key */
    snprintf(b, sizeof(b), "%s", big_key(&r, 40000, 'x', 'y', &k));
    assert_string_not_equal(a, b);
    snprintf(b, sizeof(b), "%s", big_key(&r, 40001, 'x', 'x', &k));
    assert_string_not_equal(a, b);
    /* at the limit it is kept, one past it digested */
    assert_null(strstr(big_key(&r, MATCH_VALUE_INLINE_MAX - 2, 'x', 'x', &k),
                       "$digest"));
    assert_non_null(strstr(
        big_key(&r, MATCH_VALUE_INLINE_MAX - 1, 'x', 'x', &k), "$digest"));
    digest_masks_oids(&r);
}

/* Escapes at every position of a word (the scan skips 8 clean bytes at a
 * time): the key text is the same JSON escaping as the input's. */
static void
test_match_key_escapes_at_every_offset(void **state)
{
    static const char *const esc[] = {"\\\"",     "\\\\", "\\u0001", "\\u001f",
                                      "\xc3\xa9", " ",    "~"};
    struct match_rules r;
    struct mt_buf k;
    char content[128], js[256], want[256];

    match_rules_default(&r);
    for (size_t e = 0; e < sizeof(esc) / sizeof(esc[0]); e++) {
        for (int pos = 0; pos <= 20; pos++) {
            snprintf(content, sizeof(content), "%.*s%s%.*s", pos,
                     "abcdefghijklmnopqrstuvwxyz", esc[e], 20 - pos,
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
            snprintf(js, sizeof(js), "{\"find\": \"%s\", \"$db\": \"d\"}",
                     content);
            snprintf(want, sizeof(want), "d find=\"%s\"", content);
            assert_string_equal(key_of(&r, js, &k), want);
        }
    }
}

/* int32, int64 and an integral double of one value give one key. */
static void
test_match_key_numbers_by_value(void **state)
{
    struct match_rules r;
    struct mt_buf k;

    match_rules_default(&r);
    assert_string_equal(
        key_of(&r, "{\"find\": \"c\", \"skip\": 1, \"$db\": \"d\"}", &k),
        "d find=\"c\" skip=1");
    assert_string_equal(key_of(&r,
                               "{\"find\": \"c\", \"skip\": {\"$numberLong\": "
                               "\"1\"}, \"$db\": \"d\"}",
                               &k),
                        "d find=\"c\" skip=1");
    assert_string_equal(
        key_of(&r, "{\"find\": \"c\", \"skip\": 1.0, \"$db\": \"d\"}", &k),
        "d find=\"c\" skip=1");
    assert_string_equal(
        key_of(&r, "{\"find\": \"c\", \"x\": -0.0, \"$db\": \"d\"}", &k),
        "d find=\"c\" x=0");
    assert_string_equal(
        key_of(&r, "{\"find\": \"c\", \"x\": 1.5, \"$db\": \"d\"}", &k),
        "d find=\"c\" x=1.5");
    assert_string_equal(key_of(&r,
                               "{\"find\": \"c\", \"x\": {\"$numberLong\": "
                               "\"1152921504606846977\"}, \"$db\": \"d\"}",
                               &k),
                        "d find=\"c\" x=1152921504606846977");
    assert_string_equal(
        key_of(&r, "{\"find\": \"c\", \"x\": 1e300, \"$db\": \"d\"}", &k),
        "d find=\"c\" x=1.0000000000000001e+300");
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

/* match_key_diff(a, b) counts `equal` fields and says `text`. */
static void
diff_is(const char *a, const char *b, int equal, const char *text)
{
    char out[256];

    assert_int_equal(
        match_key_diff(a, strlen(a), b, strlen(b), out, sizeof(out)), equal);
    assert_string_equal(out, text);
}

/* Repeated fields pair as a multiset: the count and the fields named are
 * the same either way round (the first occurrence is not paired twice). */
static void
test_match_key_diff_repeated_fields_symmetric(void **state)
{
    static const char *const keys[] = {
        "d\x1f"
        "insert=\"c\"\x1f"
        "x=1\x1f"
        "x=1",
        "d\x1f"
        "insert=\"c\"\x1f"
        "x=1",
        "d\x1f"
        "insert=\"c\"\x1f"
        "x=1\x1f"
        "x=2",
        "d\x1f"
        "insert=\"c\"\x1f"
        "x=2",
        "d\x1f"
        "insert=\"c\"\x1f"
        "x=2\x1f"
        "x=1",
        "e\x1f"
        "insert=\"c\"\x1f"
        "x=3\x1f"
        "y=1",
    };
    size_t nk = sizeof(keys) / sizeof(keys[0]);
    char ab[256], ba[256];

    for (size_t i = 0; i < nk; i++)
        for (size_t j = 0; j < nk; j++) {
            const char *a = keys[i], *b = keys[j];
            int x = match_key_diff(a, strlen(a), b, strlen(b), ab, sizeof(ab));
            int y = match_key_diff(b, strlen(b), a, strlen(a), ba, sizeof(ba));
            assert_int_equal(x, y);
            /* the same notes, request and recording swapped */
            assert_int_equal(strlen(ab) == 0, strlen(ba) == 0);
        }
    /* x=1 x=1 against x=1: one pair, one x left in the request */
    diff_is(keys[0], keys[1], 3, "x only in the request");
    diff_is(keys[1], keys[0], 3, "x only in the recording");
    /* x=1 x=2 against x=2: x=2 pairs with x=2, x=1 is left */
    diff_is(keys[2], keys[3], 3, "x only in the request");
    diff_is(keys[3], keys[2], 3, "x only in the recording");
    /* x=1 x=2 against x=2 x=1: all equal, in any order */
    diff_is(keys[2], keys[4], 4, "");
    /* x=1 x=1 against x=1 x=2: one equal, one differing */
    diff_is(keys[0], keys[2], 3, "x differs");
    diff_is(keys[2], keys[0], 3, "x differs");
}

/* The key of a legacy find (OP_QUERY d.c with numberToReturn ntr). */
static void
legacy_key(const struct match_rules *r, int32_t flags, int32_t ntr,
           const char *query, char *out, size_t n)
{
    bson_t *q = bson_new_from_json((const uint8_t *)query, -1, NULL);
    struct mt_buf m, key;
    struct wire_msg w;
    struct match_req req;
    size_t used;

    mt_buf_init(&m, WIRE_MSG_LEN_MAX);
    mt_buf_init(&key, MATCH_KEY_LEN_MAX);
    assert_non_null(q);
    assert_int_equal(wire_encode_query(&m, 5, flags, "d.c", 0, ntr, q), 0);
    assert_int_equal(wire_msg_parse(m.data, m.len, &w, &used, NULL), MT_OK);
    assert_int_equal(match_req_from_msg(&w, &req, NULL), 0);
    assert_int_equal(match_key_build(r, &req, &key, NULL), 0);
    match_key_display((const char *)key.data, key.len, out, n);
    mt_buf_free(&m);
    mt_buf_free(&key);
    bson_destroy(q);
}

/* numberToReturn 1 is -1 (the server's reading) unless strict; SlaveOk and
 * a wrapped $readPreference are left out; the rest is kept. */
static void
test_match_key_legacy_find(void **state)
{
    struct match_rules r, strict;
    char a[256], b[256];

    match_rules_default(&r);
    match_rules_default(&strict);
    strict.strict = true;
    legacy_key(&r, 0, -1, "{\"x\": 1}", a, sizeof(a));
    assert_string_equal(a,
                        "d OP_QUERY=\"c\" numberToReturn=-1 query={\"x\":1}");
    legacy_key(&r, 4, 1, "{\"x\": 1}", b, sizeof(b));
    assert_string_equal(a, b);
    legacy_key(&strict, 0, 1, "{\"x\": 1}", b, sizeof(b));
    assert_string_equal(b, "d OP_QUERY=\"c\" numberToReturn=1 query={\"x\":1}");
    legacy_key(&r, 0, -2, "{\"x\": 1}", b, sizeof(b));
    assert_string_not_equal(a, b);
    legacy_key(&r, 2, -1, "{\"x\": 1}", b, sizeof(b)); /* tailable */
    assert_string_equal(
        b, "d OP_QUERY=\"c\" flags=2 numberToReturn=-1 query={\"x\":1}");
    legacy_key(&r, 0, -1,
               "{\"$query\": {\"x\": 1}, \"$readPreference\": {\"mode\": "
               "\"nearest\"}, \"$orderby\": {\"y\": 1}}",
               b, sizeof(b));
    assert_string_equal(b,
                        "d OP_QUERY=\"c\" numberToReturn=-1 "
                        "query={\"$query\":{\"x\":1},\"$orderby\":{\"y\":1}}");
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
    /* on a collection: a legacy find */
    assert_int_equal(wire_encode_query(&m, 5, 4, "db.coll", 2, -1, q), 0);
    assert_int_equal(wire_msg_parse(m.data, m.len, &w, &used, NULL), MT_OK);
    assert_int_equal(match_req_from_msg(&w, &req, &err), 0);
    assert_true(req.legacy && req.legacy_query);
    assert_string_equal(req.name, "find");
    assert_string_equal(req.db, "db");
    assert_string_equal(req.coll, "coll");
    assert_int_equal(req.number_to_return, -1);
    assert_int_equal(req.number_to_skip, 2);
    assert_int_equal(req.query_flags, 4);
    assert_null(req.fields);
    mt_buf_reset(&m);
    /* no collection or no database: refused */
    assert_int_equal(wire_encode_query(&m, 5, 0, "db.", 0, -1, q), 0);
    assert_int_equal(wire_msg_parse(m.data, m.len, &w, &used, NULL), MT_OK);
    assert_int_equal(match_req_from_msg(&w, &req, &err), MT_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "'db.'"));
    mt_buf_reset(&m);
    assert_int_equal(wire_encode_query(&m, 5, 0, "nodot", 0, -1, q), 0);
    assert_int_equal(wire_msg_parse(m.data, m.len, &w, &used, NULL), MT_OK);
    assert_int_equal(match_req_from_msg(&w, &req, &err), MT_EUNSUPPORTED);
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

/* A TLS proxy trace: tls records of both legs around a find and its
 * reply (and of another connection between them) change nothing that
 * replay loads (replay/index.c reads messages and closes only). */
/* A proxy trace writer on fp with connection 1 opened at t 10. */
static struct trace_writer *
open_with_conn(FILE *fp)
{
    struct trace_header h = {.source = TRACE_SRC_PROXY, .ts_precision_ns = 1};
    struct trace_conn_open o = {.conn_id = 1, .t_ns = 10};
    struct trace_writer *w;
    struct mt_err err;

    assert_non_null(fp);
    snprintf(h.tool_version, sizeof(h.tool_version), "test");
    w = trace_writer_open_fp(fp, &h, &err);
    assert_non_null(w);
    snprintf(o.client, sizeof(o.client), "127.0.0.1:1");
    snprintf(o.server, sizeof(o.server), "127.0.0.1:2");
    assert_int_equal(trace_writer_conn_open(w, &o), 0);
    return w;
}

/* Closes trace writer w (on fp, a memory stream of *buf, *n) and loads the
 * trace into idx (default rules); returns the reader (to free). */
static struct trace_reader *
close_and_index(struct trace_writer *w, FILE *fp, char *const *buf,
                const size_t *n, struct index *idx)
{
    struct match_rules rules;
    struct trace_reader *r;
    struct mt_err err;

    assert_int_equal(trace_writer_close(w), 0);
    assert_int_equal(fclose(fp), 0);
    r = trace_reader_open_mem(*buf, *n, &err);
    assert_non_null(r);
    match_rules_default(&rules);
    index_init(idx, &rules);
    assert_int_equal(index_load(idx, r, &err), 0);
    return r;
}

static void
test_index_load_skips_tls_records(void **state)
{
    struct trace_tls t = {.conn_id = 1, .t_ns = 20, .handshake_ns = 10};
    struct trace_msg m = {.conn_id = 1, .t_ns = 30};
    struct trace_writer *w;
    struct trace_reader *r;
    struct index idx;
    struct mt_buf q, p;
    char *buf = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&buf, &n);

    w = open_with_conn(fp);
    snprintf(t.version, sizeof(t.version), "TLSv1.3");
    assert_int_equal(trace_writer_tls(w, &t), 0);
    t.leg = TRACE_TLS_TARGET;
    assert_int_equal(trace_writer_tls(w, &t), 0);
    msg_from_json(&q, 7, "{\"find\": \"c\", \"$db\": \"d\"}", NULL, NULL);
    m.wire = q.data;
    m.wire_len = (uint32_t)q.len;
    assert_int_equal(trace_writer_msg(w, &m), 0);
    t.conn_id = 2; /* another connection's failed handshake */
    t.flags = TRACE_TLS_FAILED;
    snprintf(t.error, sizeof(t.error), "wrong version number");
    assert_int_equal(trace_writer_tls(w, &t), 0);
    msg_from_json(&p, 8,
                  "{\"cursor\": {\"id\": {\"$numberLong\": \"0\"}, "
                  "\"firstBatch\": []}, \"ok\": 1}",
                  NULL, NULL);
    wr_le32(p.data + 8, 7); /* responseTo */
    m.dir = TRACE_DIR_S2C;
    m.t_ns = 40;
    m.wire = p.data;
    m.wire_len = (uint32_t)p.len;
    assert_int_equal(trace_writer_msg(w, &m), 0);
    r = close_and_index(w, fp, &buf, &n, &idx);
    assert_int_equal(idx.st.records, 8); /* header .. end, 3 tls */
    assert_int_equal(idx.st.requests, 1);
    assert_int_equal(idx.st.replies, 1);
    assert_int_equal(idx.st.exchanges, 1);
    assert_int_equal(idx.st.unpaired + idx.st.malformed + idx.st.skipped, 0);
    assert_int_equal(idx.ex[0].latency_ns, 10);
    index_free(&idx);
    trace_reader_free(r);
    mt_buf_free(&q);
    mt_buf_free(&p);
    free(buf);
}

/* Writes the OP_MSG of json as message rid answering to (0: a request)
 * with OP_MSG flags, at t_ns. */
static void
put_msg(struct trace_writer *w, int32_t rid, int32_t to, uint32_t flags,
        uint64_t t_ns, const char *json)
{
    struct trace_msg m = {.conn_id = 1, .t_ns = t_ns};
    struct mt_buf b;

    msg_from_json(&b, rid, json, NULL, NULL);
    wr_le32(b.data + 8, (uint32_t)to);
    wr_le32(b.data + 16, flags);
    m.dir = to != 0 ? TRACE_DIR_S2C : TRACE_DIR_C2S;
    m.wire = b.data;
    m.wire_len = (uint32_t)b.len;
    assert_int_equal(trace_writer_msg(w, &m), 0);
    mt_buf_free(&b);
}

/* An exhaust getMore (exhaustAllowed) answered by a stream of moreToCome
 * replies, each responseTo the one before: every streamed reply becomes
 * the cursor's next batch, none is unpaired, and each one's latency counts
 * from the reply before it. */
static void
test_index_load_exhaust_stream(void **state)
{
    struct trace_writer *w;
    struct trace_reader *r;
    struct index idx;
    char *buf = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&buf, &n);
    const struct index_exchange *find;

    w = open_with_conn(fp);
    put_msg(w, 7, 0, 0, 100,
            "{\"find\": \"c\", \"batchSize\": 1, \"$db\": \"d\"}");
    put_msg(w, 8, 7, 0, 110,
            "{\"cursor\": {\"id\": {\"$numberLong\": \"55\"}, \"firstBatch\": "
            "[{\"_id\": 1}]}, \"ok\": 1}");
    put_msg(w, 9, 0, WIRE_MSG_EXHAUST_ALLOWED, 200,
            "{\"getMore\": {\"$numberLong\": \"55\"}, \"collection\": \"c\", "
            "\"batchSize\": 1, \"$db\": \"d\"}");
    put_msg(w, 10, 9, WIRE_MSG_MORE_TO_COME, 230,
            "{\"cursor\": {\"id\": {\"$numberLong\": \"55\"}, \"nextBatch\": "
            "[{\"_id\": 2}]}, \"ok\": 1}");
    put_msg(w, 11, 10, WIRE_MSG_MORE_TO_COME, 270,
            "{\"cursor\": {\"id\": {\"$numberLong\": \"55\"}, \"nextBatch\": "
            "[{\"_id\": 3}]}, \"ok\": 1}");
    put_msg(w, 12, 11, 0, 320,
            "{\"cursor\": {\"id\": {\"$numberLong\": \"0\"}, \"nextBatch\": "
            "[{\"_id\": 4}]}, \"ok\": 1}");
    r = close_and_index(w, fp, &buf, &n, &idx);
    assert_int_equal(idx.st.replies, 4);
    assert_int_equal(idx.st.unpaired, 0);
    assert_int_equal(idx.st.getmores, 3);
    find = &idx.ex[0];
    assert_int_equal(find->cursor_id, 55);
    assert_int_equal(find->nmore, 3);
    assert_int_equal(idx.ex[find->more[0]].latency_ns, 30);
    assert_int_equal(idx.ex[find->more[1]].latency_ns, 40);
    assert_int_equal(idx.ex[find->more[2]].latency_ns, 50);
    assert_int_equal(idx.ex[find->more[2]].cursor_id, 0);
    index_free(&idx);
    trace_reader_free(r);
    free(buf);
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
        cmocka_unit_test(test_match_key_digests_long_values),
        cmocka_unit_test(test_match_key_escapes_at_every_offset),
        cmocka_unit_test(test_match_key_numbers_by_value),
        cmocka_unit_test(test_match_key_diff_names_fields),
        cmocka_unit_test(test_match_key_diff_repeated_fields_symmetric),
        cmocka_unit_test(test_match_req_legacy_query),
        cmocka_unit_test(test_match_key_legacy_find),
        cmocka_unit_test(test_match_key_ignores_after_cluster_time),
        cmocka_unit_test(test_match_key_depth_limited),
        cmocka_unit_test(test_index_cycles_and_chains),
        cmocka_unit_test(test_index_load_skips_tls_records),
        cmocka_unit_test(test_index_load_exhaust_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
