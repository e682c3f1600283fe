/*
 * mongoc_matrix.c -- the libmongoc side of the cross-driver replay matrix
 * (tests/integration/test_replay_matrix.py): the calls of
 * tests/integration/matrix_workload.py (find_and_modify with
 * mongoc_collection_find_and_modify, delete with
 * mongoc_collection_delete_one), one JSON line each:
 * {"call": NAME, "ok": RESULT} or {"call": NAME, "error": CODE}.
 *
 *     mongoc_matrix URI
 *
 * Exit status: 0 when every call ran (errors are results), 1 when the
 * client could not be created, 2 on bad usage.
 */
/* libbson's headers trip -Wcast-qual (bson-atomic.h) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-qual"
#include <mongoc/mongoc.h>
#pragma GCC diagnostic pop
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void
print_err(const char *call, const bson_error_t *e)
{
    printf("{\"call\": \"%s\", \"error\": %u}\n", call, e->code);
}

/* The documents of a cursor as a JSON array; with field, only that
 * integer field of each. */
static void
print_cursor(const char *call, mongoc_cursor_t *cur, const char *field)
{
    const bson_t *d;
    bson_error_t e;
    bson_iter_t it;
    char *j;
    int n = 0;

    printf("{\"call\": \"%s\", \"ok\": [", call);
    while (mongoc_cursor_next(cur, &d)) {
        printf("%s", n++ ? ", " : "");
        if (field != NULL) {
            if (bson_iter_init_find(&it, d, field))
                printf("%" PRId64, bson_iter_as_int64(&it));
            continue;
        }
        j = bson_as_relaxed_extended_json(d, NULL);
        printf("%s", j);
        bson_free(j);
    }
    if (mongoc_cursor_error(cur, &e)) {
        printf("]}\n");
        print_err(call, &e);
    } else {
        printf("]}\n");
    }
    mongoc_cursor_destroy(cur);
}

static mongoc_cursor_t *
find(mongoc_collection_t *col, const char *filter_json, const char *opts_json)
{
    bson_t *f = bson_new_from_json((const uint8_t *)filter_json, -1, NULL);
    bson_t *o = bson_new_from_json((const uint8_t *)opts_json, -1, NULL);
    mongoc_cursor_t *c = mongoc_collection_find_with_opts(col, f, o, NULL);

    bson_destroy(f);
    bson_destroy(o);
    return c;
}

/* An application's find_one: find with limit 1, the first document. */
static void
find_one(mongoc_collection_t *col)
{
    mongoc_cursor_t *c =
        find(col, "{\"_id\": \"test-doc-1\"}", "{\"limit\": 1}");
    const bson_t *d;
    bson_error_t e;
    char *j;

    if (mongoc_cursor_next(c, &d)) {
        j = bson_as_relaxed_extended_json(d, NULL);
        printf("{\"call\": \"find_one\", \"ok\": %s}\n", j);
        bson_free(j);
    } else if (mongoc_cursor_error(c, &e)) {
        print_err("find_one", &e);
    } else {
        printf("{\"call\": \"find_one\", \"ok\": null}\n");
    }
    mongoc_cursor_destroy(c);
}

/* A write's count: {"call": call, "ok": reply.field} when it ran, else
 * its error. */
static void
print_count(const char *call, bool ran, const bson_t *reply, const char *field,
            const bson_error_t *e)
{
    bson_iter_t it;

    if (ran && bson_iter_init_find(&it, reply, field))
        printf("{\"call\": \"%s\", \"ok\": %" PRId64 "}\n", call,
               bson_iter_as_int64(&it));
    else
        print_err(call, e);
}

/* A document value (or null) as {"call": call, "ok": JSON}. */
static void
print_value(const char *call, const bson_iter_t *it)
{
    const uint8_t *data;
    uint32_t len;
    bson_t d;
    char *j;

    if (!BSON_ITER_HOLDS_DOCUMENT(it)) {
        printf("{\"call\": \"%s\", \"ok\": null}\n", call);
        return;
    }
    bson_iter_document(it, &len, &data);
    if (!bson_init_static(&d, data, len))
        return;
    j = bson_as_relaxed_extended_json(&d, NULL);
    printf("{\"call\": \"%s\", \"ok\": %s}\n", call, j);
    bson_free(j);
}

static void
writes(mongoc_collection_t *col)
{
    bson_t *doc = BCON_NEW("_id", BCON_UTF8("ins-1"), "value", BCON_INT32(7));
    bson_t *sel = BCON_NEW("_id", BCON_UTF8("test-doc-1"));
    bson_t *upd = BCON_NEW("$set", "{", "value", BCON_INT32(43), "}");
    bson_t reply;
    bson_iter_t it;
    bson_error_t e;

    if (mongoc_collection_insert_one(col, doc, NULL, &reply, &e))
        printf("{\"call\": \"insert\", \"ok\": true}\n");
    else
        print_err("insert", &e);
    bson_destroy(&reply);
    print_count("update",
                mongoc_collection_update_one(col, sel, upd, NULL, &reply, &e),
                &reply, "modifiedCount", &e);
    bson_destroy(&reply);
    bson_destroy(upd);
    upd = BCON_NEW("$set", "{", "value", BCON_INT32(44), "}");
    /* the document before the change (new: false, the default) */
    if (mongoc_collection_find_and_modify(col, sel, NULL, upd, NULL, false,
                                          false, false, &reply, &e) &&
        bson_iter_init_find(&it, &reply, "value")) {
        print_value("find_and_modify", &it);
    } else {
        print_err("find_and_modify", &e);
    }
    bson_destroy(&reply);
    bson_destroy(sel);
    sel = BCON_NEW("_id", BCON_UTF8("ins-1"));
    print_count("delete",
                mongoc_collection_delete_one(col, sel, NULL, &reply, &e),
                &reply, "deletedCount", &e);
    bson_destroy(&reply);
    bson_destroy(doc);
    bson_destroy(sel);
    bson_destroy(upd);
}

int
main(int argc, char **argv)
{
    mongoc_client_t *client;
    mongoc_database_t *db;
    mongoc_collection_t *col, *many;
    bson_t *pipeline, cmd = BSON_INITIALIZER, reply;
    bson_error_t e;
    int64_t n;

    if (argc != 2) {
        fprintf(stderr, "usage: mongoc_matrix URI\n");
        return 2;
    }
    mongoc_init();
    client = mongoc_client_new(argv[1]);
    if (client == NULL) {
        fprintf(stderr, "mongoc_matrix: bad URI %s\n", argv[1]);
        return 1;
    }
    db = mongoc_client_get_database(client, "benchmark_db");
    col = mongoc_client_get_collection(client, "benchmark_db", "test_col");
    many = mongoc_client_get_collection(client, "benchmark_db", "many");
    find_one(col);
    print_cursor("find_empty", find(col, "{\"_id\": \"nope\"}", "{}"), NULL);
    print_cursor("find_batches", find(many, "{}", "{\"batchSize\": 100}"), "x");
    pipeline =
        BCON_NEW("pipeline", "[", "{", "$count", BCON_UTF8("count"), "}", "]");
    print_cursor("aggregate",
                 mongoc_collection_aggregate(many, MONGOC_QUERY_NONE, pipeline,
                                             NULL, NULL),
                 NULL);
    bson_destroy(pipeline);
    n = mongoc_collection_estimated_document_count(many, NULL, NULL, NULL, &e);
    if (n >= 0)
        printf("{\"call\": \"count\", \"ok\": %" PRId64 "}\n", n);
    else
        print_err("count", &e);
    writes(col);
    BSON_APPEND_INT32(&cmd, "fail_me", 1);
    if (mongoc_database_command_simple(db, &cmd, NULL, &reply, &e))
        printf("{\"call\": \"fail\", \"ok\": true}\n");
    else
        print_err("fail", &e);
    bson_destroy(&reply);
    bson_destroy(&cmd);
    mongoc_collection_destroy(many);
    mongoc_collection_destroy(col);
    mongoc_database_destroy(db);
    mongoc_client_destroy(client);
    mongoc_cleanup();
    return 0;
}
