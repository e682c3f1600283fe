/*
 * mongoc_workload.c -- the libmongoc workload of the replay tests: run
 * against MockupDB through `mtrace capture`, then against `mtrace replay`
 * of that trace.  Prints one line per call: the relaxed extended JSON of
 * what came back, or the error domain and code.
 *
 *     mongoc_workload URI [--miss]
 *
 * --miss adds a query that no trace of this workload holds.
 * Exit status: 0 when every call ran (errors are results, not failures),
 * 1 when the client could not be created.
 */
/* libbson's headers trip -Wcast-qual (bson-atomic.h) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-qual"
#include <mongoc/mongoc.h>
#pragma GCC diagnostic pop
#include <stdio.h>
#include <string.h>

static void
print_doc(const char *call, const bson_t *doc)
{
    char *j = bson_as_relaxed_extended_json(doc, NULL);
    printf("{\"call\": \"%s\", \"ok\": %s}\n", call, j);
    bson_free(j);
}

static void
print_err(const char *call, const bson_error_t *e)
{
    printf("{\"call\": \"%s\", \"error\": %u, \"domain\": %u}\n", call, e->code,
           e->domain);
}

static void
run_command(mongoc_database_t *db, const char *call, const char *name)
{
    bson_t cmd = BSON_INITIALIZER, reply;
    bson_error_t e;

    BSON_APPEND_INT32(&cmd, name, 1);
    if (mongoc_database_command_simple(db, &cmd, NULL, &reply, &e))
        print_doc(call, &reply);
    else
        print_err(call, &e);
    bson_destroy(&reply);
    bson_destroy(&cmd);
}

/* Every document of the cursor (limit: stop after that many, then close). */
static void
drain(const char *call, mongoc_cursor_t *cur, int limit)
{
    const bson_t *d;
    bson_t all = BSON_INITIALIZER;
    bson_error_t e;
    char key[16];
    int n = 0;

    while ((limit == 0 || n < limit) && mongoc_cursor_next(cur, &d)) {
        snprintf(key, sizeof(key), "%d", n++);
        BSON_APPEND_DOCUMENT(&all, key, d);
    }
    if (mongoc_cursor_error(cur, &e))
        print_err(call, &e);
    else
        print_doc(call, &all);
    bson_destroy(&all);
    mongoc_cursor_destroy(cur);
}

static void
find(mongoc_collection_t *col, const char *call, const char *filter_json,
     const char *opts_json, int limit)
{
    bson_t *f = bson_new_from_json((const uint8_t *)filter_json, -1, NULL);
    bson_t *o = bson_new_from_json((const uint8_t *)opts_json, -1, NULL);

    drain(call, mongoc_collection_find_with_opts(col, f, o, NULL), limit);
    bson_destroy(f);
    bson_destroy(o);
}

static void
writes(mongoc_collection_t *col)
{
    bson_t *doc = BCON_NEW("value", BCON_INT32(7));
    bson_t *sel = BCON_NEW("_id", BCON_UTF8("test-doc-1"));
    bson_t *upd = BCON_NEW("$set", "{", "value", BCON_INT32(43), "}");
    bson_t reply;
    bson_error_t e;

    if (mongoc_collection_insert_one(col, doc, NULL, &reply, &e))
        print_doc("insert_one", &reply);
    else
        print_err("insert_one", &e);
    bson_destroy(&reply);
    if (mongoc_collection_update_one(col, sel, upd, NULL, &reply, &e))
        print_doc("update", &reply);
    else
        print_err("update", &e);
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
    bson_t *pipeline;

    if (argc < 2) {
        fprintf(stderr, "usage: mongoc_workload URI [--miss]\n");
        return 2;
    }
    mongoc_init();
    client = mongoc_client_new(argv[1]);
    if (client == NULL) {
        fprintf(stderr, "mongoc_workload: bad URI %s\n", argv[1]);
        return 1;
    }
    db = mongoc_client_get_database(client, "benchmark_db");
    col = mongoc_client_get_collection(client, "benchmark_db", "test_col");
    many = mongoc_client_get_collection(client, "benchmark_db", "many");
    run_command(db, "ping", "ping");
    find(col, "find_one", "{\"_id\": \"test-doc-1\"}", "{\"limit\": 1}", 0);
    find(col, "find_empty", "{\"_id\": \"nope\"}", "{}", 0);
    find(many, "many_3_batches", "{}", "{\"batchSize\": 100}", 0);
    find(many, "many_killed", "{}", "{\"batchSize\": 10}", 1);
    writes(col);
    pipeline =
        BCON_NEW("pipeline", "[", "{", "$count", BCON_UTF8("count"), "}", "]");
    drain("aggregate",
          mongoc_collection_aggregate(many, MONGOC_QUERY_NONE, pipeline, NULL,
                                      NULL),
          0);
    bson_destroy(pipeline);
    run_command(db, "fail_me", "fail_me");
    if (argc > 2 && strcmp(argv[2], "--miss") == 0)
        find(col, "miss", "{\"_id\": \"never-recorded\"}", "{}", 0);
    mongoc_collection_destroy(many);
    mongoc_collection_destroy(col);
    mongoc_database_destroy(db);
    mongoc_client_destroy(client);
    mongoc_cleanup();
    return 0;
}
