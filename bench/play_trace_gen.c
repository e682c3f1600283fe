/*
 * play_trace_gen.c -- writes a large mtrace trace for bench/bench_play.sh's
 * memory benchmark without recording one through the proxy (which writes
 * a 1 GB trace in about ten minutes on two cores).
 *
 *     play_trace_gen OUT.zst MB [CONNS] [REQS_PER_CONN] [REPLY_KB]
 *
 * The trace goes through the project's own writer (core/trace.h, source
 * "synth") and holds what a client recording holds: CONNS connections
 * (default 64) open at a time, each opening with a hello and its reply,
 * then REQS_PER_CONN (default 500) requests, each answered, then a
 * close; a closed connection is followed by a new one with a new id, until
 * the file reaches MB megabytes.  Requests alternate between the
 * connections in time order, 50 us between a request and its reply.
 *
 * The request is loadgen's find (tests/helpers/loadgen.c: {find:
 * "test_col", filter: {_id: "test-doc-1"}, limit: 1, singleBatch: true,
 * $db: "benchmark_db"}, OP_MSG built with libbson), so `mtrace replay
 * traces/sample.zst` answers every one; its recorded reply is
 * {cursor: {firstBatch: [{_id: "test-doc-1", value: 42, blob:
 * BinData(REPLY_KB KiB)}], id: 0, ns: ...}, ok: 1} with blob bytes from a
 * fixed-seed xorshift generator: they do not compress, so the file's size
 * follows the number of messages (identical small messages compress
 * about 20x, and a 1 GB trace of them would take 20 minutes to play).
 * The blob is in the recorded replies only: a player reads them and keeps
 * their shape, and sends the small requests.
 *
 * Prints one line: records, requests, connections, bytes written.
 * Exit 0, 1 on a write error, 2 on bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/buf.h"
#include "core/mem.h"
#include "core/trace.h"
#include "core/wire.h"

#define RTT_NS 50000u
#define GAP_NS 5000u

struct gconn {
    uint64_t id;
    uint32_t done; /* requests answered */
    int32_t rid;   /* next requestID */
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static long
arg_num(const char *s, long lo, long hi)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "play_trace_gen: %s: not a number in [%ld, %ld]\n", s,
                lo, hi);
        exit(2);
    }
    return v;
}

static int
put_msg(struct trace_writer *w, uint64_t conn, uint64_t t, uint8_t dir,
        const struct mt_buf *b)
{
    struct trace_msg m = {.conn_id = conn,
                          .t_ns = t,
                          .dir = dir,
                          .wire = b->data,
                          .wire_len = (uint32_t)b->len};

    return trace_writer_msg(w, &m);
}

static int
put_open(struct trace_writer *w, struct gconn *c, uint64_t t, uint64_t *next_id)
{
    struct trace_conn_open o = {.t_ns = t};

    c->id = (*next_id)++;
    c->done = 0;
    c->rid = 1;
    o.conn_id = c->id;
    snprintf(o.client, sizeof(o.client), "127.0.0.1:%u",
             (unsigned)(20000 + c->id % 40000));
    snprintf(o.server, sizeof(o.server), "127.0.0.1:27017");
    return trace_writer_conn_open(w, &o);
}

int
main(int argc, char **argv)
{
    struct trace_header h = {.source = TRACE_SRC_SYNTH, .ts_precision_ns = 1};
    struct mt_err err;
    struct trace_writer *w;
    struct mt_buf req, rep, hello, hello_rep;
    bson_t *find, *hcmd, *hrep, reply, cur, batch, doc;
    uint8_t *blob;
    uint64_t target, t = 1000000000ull, next_id = 1, records = 0, reqs = 0;
    uint64_t raw = 0, raw_checked = 0;
    long conns = 64, per = 500, kb = 8;
    struct gconn *cs;
    struct stat st;
    int rc = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: play_trace_gen OUT.zst MB [CONNS] "
                        "[REQS_PER_CONN] [REPLY_KB]\n");
        return 2;
    }
    target = (uint64_t)arg_num(argv[2], 1, 1 << 20) << 20;
    if (argc > 3)
        conns = arg_num(argv[3], 1, 100000);
    if (argc > 4)
        per = arg_num(argv[4], 1, 1L << 30);
    if (argc > 5)
        kb = arg_num(argv[5], 0, 4096);
    snprintf(h.tool_version, sizeof(h.tool_version), "mtrace %s", MT_VERSION);
    snprintf(h.source_desc, sizeof(h.source_desc),
             "play_trace_gen %ld connections x %ld requests, %ld KiB replies",
             conns, per, kb);
    h.start_mono_ns = t;
    w = trace_writer_open(argv[1], TRACE_W_FORCE, &h, &err);
    if (w == NULL) {
        fprintf(stderr, "play_trace_gen: %s: %s\n", argv[1], err.msg);
        return 1;
    }
    mt_buf_init(&req, 1 << 16);
    mt_buf_init(&rep, 8u << 20);
    mt_buf_init(&hello, 1 << 16);
    mt_buf_init(&hello_rep, 1 << 16);
    find = BCON_NEW("find", BCON_UTF8("test_col"), "filter", "{", "_id",
                    BCON_UTF8("test-doc-1"), "}", "limit", BCON_INT32(1),
                    "singleBatch", BCON_BOOL(true), "$db",
                    BCON_UTF8("benchmark_db"));
    hcmd = BCON_NEW("hello", BCON_INT32(1), "$db", BCON_UTF8("admin"));
    hrep = BCON_NEW("isWritablePrimary", BCON_BOOL(true), "maxWireVersion",
                    BCON_INT32(21), "minWireVersion", BCON_INT32(0),
                    "maxBsonObjectSize", BCON_INT32(16777216), "ok",
                    BCON_DOUBLE(1.0));
    blob = mt_malloc((size_t)kb * 1024 + 8);
    cs = mt_calloc((size_t)conns, sizeof(*cs));
    if (blob == NULL || cs == NULL) {
        fprintf(stderr, "play_trace_gen: out of memory\n");
        return 1;
    }
    wire_encode_msg(&hello, 1, 0, 0, hcmd, NULL, 0);
    for (long i = 0; i < conns && rc == 0; i++) {
        rc = put_open(w, &cs[i], t, &next_id);
        records++;
    }
    while (rc == 0) {
        for (long i = 0; i < conns && rc == 0; i++) {
            struct gconn *c = &cs[i];
            t += GAP_NS;
            if (c->done == 0) {
                /* the handshake a driver sends first */
                mt_buf_reset(&hello_rep);
                wire_encode_msg(&hello_rep, c->rid, 1, 0, hrep, NULL, 0);
                if ((rc = put_msg(w, c->id, t, TRACE_DIR_C2S, &hello)) == 0)
                    rc = put_msg(w, c->id, t + RTT_NS, TRACE_DIR_S2C,
                                 &hello_rep);
                c->rid = 2;
                records += 2;
            }
            for (size_t k = 0; k < (size_t)kb * 1024; k += 8) {
                uint64_t v = next_rand();
                memcpy(blob + k, &v, 8);
            }
            bson_init(&reply);
            bson_append_document_begin(&reply, "cursor", -1, &cur);
            bson_append_array_begin(&cur, "firstBatch", -1, &batch);
            bson_append_document_begin(&batch, "0", -1, &doc);
            BSON_APPEND_UTF8(&doc, "_id", "test-doc-1");
            BSON_APPEND_INT32(&doc, "value", 42);
            bson_append_binary(&doc, "blob", -1, BSON_SUBTYPE_BINARY, blob,
                               (uint32_t)kb * 1024);
            bson_append_document_end(&batch, &doc);
            bson_append_array_end(&cur, &batch);
            BSON_APPEND_INT64(&cur, "id", 0);
            BSON_APPEND_UTF8(&cur, "ns", "benchmark_db.test_col");
            bson_append_document_end(&reply, &cur);
            BSON_APPEND_DOUBLE(&reply, "ok", 1.0);
            mt_buf_reset(&req);
            mt_buf_reset(&rep);
            wire_encode_msg(&req, c->rid, 0, 0, find, NULL, 0);
            rc = wire_encode_msg(&rep, c->rid + 1000000, c->rid, 0, &reply,
                                 NULL, 0);
            bson_destroy(&reply);
            if (rc == 0)
                rc = put_msg(w, c->id, t, TRACE_DIR_C2S, &req);
            if (rc == 0)
                rc = put_msg(w, c->id, t + RTT_NS, TRACE_DIR_S2C, &rep);
            records += 2;
            reqs++;
            raw += req.len + rep.len;
            c->rid++;
            if (rc == 0 && ++c->done == (uint32_t)per) {
                struct trace_conn_close cl = {.conn_id = c->id,
                                              .t_ns = t + RTT_NS + 1000};
                rc = trace_writer_conn_close(w, &cl);
                if (rc == 0)
                    rc = put_open(w, c, t + RTT_NS + 2000, &next_id);
                records += 2;
            }
        }
        /* the file's size, once per MiB of messages written */
        if (rc == 0 && raw - raw_checked >= (1u << 20)) {
            raw_checked = raw;
            if ((rc = trace_writer_flush(w)) == 0 && stat(argv[1], &st) == 0 &&
                (uint64_t)st.st_size >= target)
                break;
        }
    }
    for (long i = 0; i < conns && rc == 0; i++) {
        struct trace_conn_close cl = {.conn_id = cs[i].id, .t_ns = t + 1000000};
        rc = trace_writer_conn_close(w, &cl);
        records++;
    }
    if (trace_writer_close(w) < 0 && rc == 0)
        rc = -EIO;
    if (rc < 0) {
        fprintf(stderr, "play_trace_gen: %s: %s\n", argv[1], mt_strerror(rc));
        return 1;
    }
    if (stat(argv[1], &st) < 0) {
        fprintf(stderr, "play_trace_gen: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    printf("records=%llu requests=%llu connections=%llu bytes=%lld\n",
           (unsigned long long)records, (unsigned long long)reqs,
           (unsigned long long)(next_id - 1), (long long)st.st_size);
    bson_destroy(find);
    bson_destroy(hcmd);
    bson_destroy(hrep);
    mt_free(blob);
    mt_free(cs);
    mt_buf_free(&req);
    mt_buf_free(&rep);
    mt_buf_free(&hello);
    mt_buf_free(&hello_rep);
    return 0;
}
