/*
 * mongoc_monitor.c -- a libmongoc client pool (whose background monitor
 * uses the streaming hello protocol when the server's hello carries
 * topologyVersion) runs a find_one, stays connected LINGER_MS, runs another
 * find_one, and prints one JSON line:
 *   {"finds": 2, "heartbeats": N, "failed": N, "awaited": N}
 * counting the heartbeats of the LINGER_MS only (the pool's destruction
 * cancels the monitor's held hello, which libmongoc reports as a failed
 * heartbeat); "awaited": those that were awaitable (libmongoc's APM flag).
 * The find is sent as pymongo's find_one sends it, but with limit an int64
 * (as a libmongoc program may give it).
 * tests/integration/test_driver_monitor.sh checks what replay does with
 * the monitor.
 *
 * Usage: mongoc_monitor URI LINGER_MS      exit 0, or 1 on a failed call
 */
/* libbson's headers trip -Wcast-qual (bson-atomic.h). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-qual"
#include <mongoc/mongoc.h>
#pragma GCC diagnostic pop
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct counts {
    int ok, failed, awaited;
    int counting; /* atomic: 1 during LINGER_MS */
};

static int64_t t0_us; /* start, bson_get_monotonic_time() */

/*
 * ThreadSanitizer (make tsan) adds these to tests/sanitizer/tsan.supp's, in
 * this process only.  The pool's monitor threads (mongoc_server_monitor_run,
 * ..._run_as_rtt) and this thread share libmongoc's topology description
 * through a reference-counted pointer (libmongoc 1.23, mongoc-shared.c): a
 * thread copies the description under the topology's modification mutex
 * (mc_tpld_modify_begin -> mongoc_server_description_new_copy) and drops
 * its reference; the thread that drops the last one frees it
 * (bson_destroy).  The happens-before is that decrement, a `lock subl` in
 * mongoc_shared_ptr_reset_null, which TSan cannot see in Debian's
 * uninstrumented library; so it reports the copy's reads against the free
 * (test_driver_monitor.sh: 4 runs of 6), with no frame above libmongoc's
 * but this file's calls into it.  Nothing here shares memory with those
 * threads but struct counts (atomics).  Only bson_destroy's frame is in
 * every such report, and mtrace calls bson_destroy too: hence here, in the
 * one process with a client pool, and not in the shared file.
 */
const char *__tsan_default_suppressions(void);
const char *
__tsan_default_suppressions(void)
{
    return "race:bson_destroy\n";
}

static void
hb_ok(const mongoc_apm_server_heartbeat_succeeded_t *e)
{
    struct counts *c = mongoc_apm_server_heartbeat_succeeded_get_context(e);

    if (!__atomic_load_n(&c->counting, __ATOMIC_RELAXED))
        return;
    __atomic_fetch_add(&c->ok, 1, __ATOMIC_RELAXED);
    if (mongoc_apm_server_heartbeat_succeeded_get_awaited(e))
        __atomic_fetch_add(&c->awaited, 1, __ATOMIC_RELAXED);
}

static void
hb_failed(const mongoc_apm_server_heartbeat_failed_t *e)
{
    struct counts *c = mongoc_apm_server_heartbeat_failed_get_context(e);
    bson_error_t err;

    if (!__atomic_load_n(&c->counting, __ATOMIC_RELAXED))
        return;
    mongoc_apm_server_heartbeat_failed_get_error(e, &err);
    fprintf(stderr, "heartbeat failed at %.3f s: %s\n",
            (double)(bson_get_monotonic_time() - t0_us) / 1e6, err.message);
    __atomic_fetch_add(&c->failed, 1, __ATOMIC_RELAXED);
}

static bool
find_one(mongoc_client_pool_t *pool)
{
    mongoc_client_t *cl = mongoc_client_pool_pop(pool);
    mongoc_collection_t *coll =
        mongoc_client_get_collection(cl, "benchmark_db", "test_col");
    bson_t *filter = BCON_NEW("_id", "test-doc-1");
    /* as pymongo's find_one sends it, so a pymongo trace holds it */
    bson_t *opts =
        BCON_NEW("limit", BCON_INT64(1), "singleBatch", BCON_BOOL(true));
    mongoc_cursor_t *cur =
        mongoc_collection_find_with_opts(coll, filter, opts, NULL);
    const bson_t *doc;
    bson_error_t e;
    bool found = mongoc_cursor_next(cur, &doc);

    if (mongoc_cursor_error(cur, &e)) {
        fprintf(stderr, "find_one: %s\n", e.message);
        found = false;
    }
    mongoc_cursor_destroy(cur);
    bson_destroy(opts);
    bson_destroy(filter);
    mongoc_collection_destroy(coll);
    mongoc_client_pool_push(pool, cl);
    return found;
}

int
main(int argc, char **argv)
{
    struct counts c = {0};
    mongoc_uri_t *uri;
    mongoc_client_pool_t *pool;
    mongoc_apm_callbacks_t *cbs;
    bson_error_t e;
    int finds = 0;

    if (argc != 3) {
        fprintf(stderr, "usage: mongoc_monitor URI LINGER_MS\n");
        return 2;
    }
    mongoc_init();
    t0_us = bson_get_monotonic_time();
    uri = mongoc_uri_new_with_error(argv[1], &e);
    if (uri == NULL) {
        fprintf(stderr, "mongoc_monitor: bad URI %s: %s\n", argv[1], e.message);
        return 2;
    }
    pool = mongoc_client_pool_new(uri);
    cbs = mongoc_apm_callbacks_new();
    mongoc_apm_set_server_heartbeat_succeeded_cb(cbs, hb_ok);
    mongoc_apm_set_server_heartbeat_failed_cb(cbs, hb_failed);
    mongoc_client_pool_set_apm_callbacks(pool, cbs, &c);
    finds += find_one(pool);
    __atomic_store_n(&c.counting, 1, __ATOMIC_RELAXED);
    usleep((useconds_t)strtoul(argv[2], NULL, 10) * 1000u);
    __atomic_store_n(&c.counting, 0, __ATOMIC_RELAXED);
    finds += find_one(pool);
    mongoc_client_pool_destroy(pool);
    mongoc_apm_callbacks_destroy(cbs);
    mongoc_uri_destroy(uri);
    mongoc_cleanup();
    printf("{\"finds\": %d, \"heartbeats\": %d, \"failed\": %d, \"awaited\": "
           "%d}\n",
           finds, __atomic_load_n(&c.ok, __ATOMIC_RELAXED),
           __atomic_load_n(&c.failed, __ATOMIC_RELAXED),
           __atomic_load_n(&c.awaited, __ATOMIC_RELAXED));
    return finds == 2 ? 0 : 1;
}
