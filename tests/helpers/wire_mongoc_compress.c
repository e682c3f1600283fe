/*
 * wire_mongoc_compress.c -- libmongoc client for
 * tests/integration/test_wire_compression.sh: with compressors=C in the
 * URI it runs ping, insert_many (an OP_MSG kind-1 "documents" sequence)
 * and find against tests/helpers/wire_peer, and checks that the server saw
 * the find compressed with C (the document's "via" field).
 *
 * Usage: wire_mongoc_compress PORT COMPRESSOR
 * Prints one line per step; exit 0 on success, 1 on any failure.
 */
/* libbson's headers trip -Wcast-qual (bson-atomic.h). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-qual"
#include <mongoc/mongoc.h>
#pragma GCC diagnostic pop
#include <stdio.h>
#include <string.h>

static int
step(bool ok, const char *what, const bson_error_t *e)
{
    printf("%s: %s%s\n", what, ok ? "ok" : "FAILED ", ok ? "" : e->message);
    return ok ? 0 : 1;
}

int
main(int argc, char **argv)
{
    char uri[256];
    mongoc_client_t *client;
    mongoc_collection_t *coll;
    mongoc_cursor_t *cur;
    bson_error_t e = {0};
    const bson_t *doc;
    bson_t *ping = BCON_NEW("ping", BCON_INT32(1));
    bson_t *d[3], reply, *filter = bson_new();
    const bson_t *cd[3];
    bson_iter_t it;
    int bad = 0, found = 0;

    if (argc != 3) {
        fprintf(stderr, "usage: wire_mongoc_compress PORT COMPRESSOR\n");
        return 2;
    }
    mongoc_init();
    snprintf(uri, sizeof(uri),
             "mongodb://127.0.0.1:%s/?compressors=%s"
             "&serverSelectionTimeoutMS=5000",
             argv[1], argv[2]);
    client = mongoc_client_new(uri);
    if (client == NULL) {
        fprintf(stderr, "bad uri %s\n", uri);
        return 1;
    }
    bad |= step(
        mongoc_client_command_simple(client, "admin", ping, NULL, &reply, &e),
        "ping", &e);
    bson_destroy(&reply);
    coll = mongoc_client_get_collection(client, "wire_db", "wire_col");
    for (int i = 0; i < 3; i++)
        cd[i] = d[i] = BCON_NEW("_id", BCON_INT32(i), "pad", "0123456789ab");
    bad |= step(mongoc_collection_insert_many(coll, cd, 3, NULL, &reply, &e),
                "insert_many", &e);
    if (bson_iter_init_find(&it, &reply, "insertedCount"))
        printf("insertedCount: %d\n", bson_iter_int32(&it));
    bson_destroy(&reply);
    cur = mongoc_collection_find_with_opts(coll, filter, NULL, NULL);
    while (mongoc_cursor_next(cur, &doc)) {
        if (bson_iter_init_find(&it, doc, "via") && BSON_ITER_HOLDS_UTF8(&it)) {
            printf("find via: %s\n", bson_iter_utf8(&it, NULL));
            found += strcmp(bson_iter_utf8(&it, NULL), argv[2]) == 0;
        }
    }
    bad |= step(!mongoc_cursor_error(cur, &e), "find", &e);
    if (found != 1) {
        printf("find: server did not see the request compressed with %s\n",
               argv[2]);
        bad = 1;
    }
    mongoc_cursor_destroy(cur);
    for (int i = 0; i < 3; i++)
        bson_destroy(d[i]);
    bson_destroy(ping);
    bson_destroy(filter);
    mongoc_collection_destroy(coll);
    mongoc_client_destroy(client);
    mongoc_cleanup();
    return bad ? 1 : 0;
}
