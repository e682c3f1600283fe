/*
 * mktrace.c -- writes a small synthetic trace through core/trace's writer,
 * from real wire messages made by core/wire's encoders, with known
 * timestamps so that `mtrace dump` and `mtrace stats` can be checked
 * exactly (tests/integration/test_dump_stats.sh), and the seed corpus of
 * fuzz_trace.
 *
 * Usage: mktrace OUT.zst            the scenario below
 *        mktrace --tls OUT.zst      the same with TLS handshake records
 *        mktrace --corpus DIR       seed traces for tests/data/corpus/trace
 *
 * Scenario (t relative to the header's start_mono_ns = 1 s):
 *   conn 1  legacy OP_QUERY isMaster -> OP_REPLY (0.2 ms)
 *           saslStart, saslContinue (auth conversation), 1 ms each
 *           100 x find on benchmark_db.test_col; reply i after (i+1) ms
 *   conn 2  insert as OP_COMPRESSED/zlib with a kind-1 "documents" sequence
 *           (decompressed form recorded) -> reply OP_COMPRESSED/snappy
 *           (no decompressed form: dump must inflate it) after 2 ms
 *           ping without a reply; a reply to nothing (responseTo 9999)
 *           insert with moreToCome (no reply expected)
 *           a malformed message (bad length), flagged TRACE_MSG_MALFORMED
 *   stats   packets=1234 gaps=0 dropped=0; conn 1 normal close, conn 2
 *           client reset; end record.
 *   --tls   after each conn open, its TLS records (t = open + handshake):
 *           conn 1 client TLSv1.3 TLS_AES_256_GCM_SHA384 X25519 2 ms,
 *                  target TLSv1.3 TLS_AES_256_GCM_SHA384 3 ms, SNI
 *                  db.example.net, peer certificate verified;
 *           conn 2 client TLSv1.3 TLS_AES_128_GCM_SHA256 4 ms, resumed,
 *                  target failed after 1 ms (certificate verify failed).
 * Frames are flushed after each phase, so the trace has several.
 * Exit 0 on success, 1 on failure (with a message).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/rd.h"
#include "core/trace.h"
#include "core/wire.h"

#define MS 1000000ull
#define T0 1000000000ull

struct gen {
    struct trace_writer *w;
    bool tls;        /* --tls: TLS records after each conn open */
    struct mt_buf b; /* wire bytes */
    struct mt_buf p; /* plain form */
    int failed;
};

static void
check(struct gen *g, int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "mktrace: %s: %s\n", what, mt_strerror(rc));
        g->failed = 1;
    }
}

static void
put_msg(struct gen *g, uint64_t conn, uint64_t t, uint8_t dir, uint32_t flags,
        bool with_plain)
{
    struct trace_msg m = {.conn_id = conn,
                          .t_ns = t,
                          .dir = dir,
                          .flags = flags,
                          .wire = g->b.data,
                          .wire_len = (uint32_t)g->b.len};
    if (with_plain) {
        m.plain = g->p.data;
        m.plain_len = (uint32_t)g->p.len;
    }
    check(g, trace_writer_msg(g->w, &m), "write message");
    mt_buf_reset(&g->b);
    mt_buf_reset(&g->p);
}

static void
op_msg(struct gen *g, int32_t req, int32_t resp, uint32_t flags, bson_t *doc)
{
    check(g, wire_encode_msg(&g->b, req, resp, flags, doc, NULL, 0),
          "encode OP_MSG");
    bson_destroy(doc);
}

static void
tls_rec(struct gen *g, const struct trace_tls *x)
{
    check(g, trace_writer_tls(g->w, x), "write tls");
}

/* See the top of this file. */
static void
tls_recs(struct gen *g, uint64_t conn, uint64_t t)
{
    struct trace_tls c = {.conn_id = conn, .leg = TRACE_TLS_CLIENT};
    struct trace_tls s = {.conn_id = conn, .leg = TRACE_TLS_TARGET};

    snprintf(c.version, sizeof(c.version), "TLSv1.3");
    snprintf(c.group, sizeof(c.group), "X25519");
    c.handshake_ns = conn == 1 ? 2 * MS : 4 * MS;
    c.t_ns = t + c.handshake_ns;
    snprintf(c.cipher, sizeof(c.cipher), "%s",
             conn == 1 ? "TLS_AES_256_GCM_SHA384" : "TLS_AES_128_GCM_SHA256");
    c.flags = conn == 1 ? 0 : TRACE_TLS_RESUMED;
    tls_rec(g, &c);
    snprintf(s.sni, sizeof(s.sni), "db.example.net");
    s.handshake_ns = conn == 1 ? 3 * MS : 1 * MS;
    s.t_ns = t + s.handshake_ns;
    if (conn == 1) {
        snprintf(s.version, sizeof(s.version), "TLSv1.3");
        snprintf(s.cipher, sizeof(s.cipher), "TLS_AES_256_GCM_SHA384");
        s.flags = TRACE_TLS_PEER_CERT | TRACE_TLS_PEER_VERIFIED;
    } else {
        s.flags = TRACE_TLS_FAILED;
        snprintf(s.error, sizeof(s.error), "certificate verify failed");
    }
    tls_rec(g, &s);
}

static void
conn_open(struct gen *g, uint64_t conn, uint64_t t, int port)
{
    struct trace_conn_open o = {.conn_id = conn, .t_ns = t};
    snprintf(o.client, sizeof(o.client), "127.0.0.1:%d", port);
    snprintf(o.server, sizeof(o.server), "127.0.0.1:27017");
    check(g, trace_writer_conn_open(g->w, &o), "write conn open");
    if (g->tls)
        tls_recs(g, conn, t);
}

static void
phase_handshake(struct gen *g)
{
    bson_t *q = BCON_NEW("isMaster", BCON_INT32(1), "client", "{", "driver",
                         "{", "name", "mktrace", "}", "}");
    bson_t *r = BCON_NEW("ismaster", BCON_BOOL(true), "maxWireVersion",
                         BCON_INT32(21), "ok", BCON_DOUBLE(1));
    const bson_t *docs[1] = {r};

    conn_open(g, 1, T0, 50001);
    check(g, wire_encode_query(&g->b, 1, 0, "admin.$cmd", 0, -1, q),
          "encode OP_QUERY");
    put_msg(g, 1, T0 + MS / 10, TRACE_DIR_C2S, 0, false);
    check(g, wire_encode_reply(&g->b, 201, 1, 8, 0, 0, docs, 1),
          "encode OP_REPLY");
    put_msg(g, 1, T0 + 3 * MS / 10, TRACE_DIR_S2C, 0, false);
    bson_destroy(q);
    bson_destroy(r);
    op_msg(g, 2, 0, 0,
           BCON_NEW("saslStart", BCON_INT32(1), "mechanism", "SCRAM-SHA-256",
                    "$db", "admin"));
    put_msg(g, 1, T0 + 1 * MS, TRACE_DIR_C2S, 0, false);
    op_msg(g, 202, 2, 0,
           BCON_NEW("conversationId", BCON_INT32(1), "done", BCON_BOOL(false),
                    "ok", BCON_DOUBLE(1)));
    put_msg(g, 1, T0 + 2 * MS, TRACE_DIR_S2C, 0, false);
    op_msg(g, 3, 0, 0,
           BCON_NEW("saslContinue", BCON_INT32(1), "conversationId",
                    BCON_INT32(1), "$db", "admin"));
    put_msg(g, 1, T0 + 3 * MS, TRACE_DIR_C2S, 0, false);
    op_msg(g, 203, 3, 0,
           BCON_NEW("conversationId", BCON_INT32(1), "done", BCON_BOOL(true),
                    "ok", BCON_DOUBLE(1)));
    put_msg(g, 1, T0 + 4 * MS, TRACE_DIR_S2C, 0, false);
}

/* 100 finds, strictly one after another: request at t, reply at
 * t + (i+1) ms. */
static void
phase_finds(struct gen *g)
{
    uint64_t t = T0 + 10 * MS;

    for (int i = 0; i < 100; i++) {
        op_msg(g, 10 + i, 0, 0,
               BCON_NEW("find", "test_col", "filter", "{", "_id", "test-doc-1",
                        "}", "$db", "benchmark_db"));
        put_msg(g, 1, t, TRACE_DIR_C2S, 0, false);
        t += (uint64_t)(i + 1) * MS;
        op_msg(g, 1000 + i, 10 + i, 0,
               BCON_NEW("cursor", "{", "firstBatch", "[", "{", "_id",
                        "test-doc-1", "value", BCON_INT32(42), "}", "]", "id",
                        BCON_INT64(0), "ns", "benchmark_db.test_col", "}", "ok",
                        BCON_DOUBLE(1)));
        put_msg(g, 1, t, TRACE_DIR_S2C, 0, false);
        t += MS / 2;
    }
}

static void
compressed(struct gen *g, uint8_t cid, bool keep_plain)
{
    struct mt_err err;
    struct mt_buf plain = g->b;

    /* g->b holds the plain message: move it to g->p, compress into b */
    g->b = g->p;
    g->p = plain;
    mt_buf_reset(&g->b);
    check(g, wire_encode_compressed(&g->b, g->p.data, g->p.len, cid, &err),
          "encode OP_COMPRESSED");
    if (!keep_plain)
        mt_buf_reset(&g->p);
}

static void
phase_conn2(struct gen *g)
{
    uint64_t t = T0 + 6000 * MS;
    bson_t *body = BCON_NEW("insert", "test_col", "ordered", BCON_BOOL(true),
                            "$db", "benchmark_db");
    bson_t *d1 = BCON_NEW("_id", BCON_INT32(1), "x", "one");
    bson_t *d2 = BCON_NEW("_id", BCON_INT32(2), "x", "two");
    struct mt_buf docs;
    struct wire_seq seq;

    mt_buf_init(&docs, 1 << 16);
    mt_buf_append(&docs, bson_get_data(d1), d1->len);
    mt_buf_append(&docs, bson_get_data(d2), d2->len);
    seq.identifier = "documents";
    seq.docs = docs.data;
    seq.docs_len = docs.len;
    conn_open(g, 2, t, 50002);
    check(g, wire_encode_msg(&g->b, 500, 0, 0, body, &seq, 1), "encode");
    compressed(g, WIRE_COMPRESSOR_ZLIB, true);
    put_msg(g, 2, t + MS, TRACE_DIR_C2S, 0, true);
    op_msg(g, 600, 500, 0, BCON_NEW("n", BCON_INT32(2), "ok", BCON_DOUBLE(1)));
    compressed(g, WIRE_COMPRESSOR_SNAPPY, false);
    put_msg(g, 2, t + 3 * MS, TRACE_DIR_S2C, 0, false);
    op_msg(g, 501, 0, 0, BCON_NEW("ping", BCON_INT32(1), "$db", "admin"));
    put_msg(g, 2, t + 4 * MS, TRACE_DIR_C2S, 0, false);
    op_msg(g, 601, 9999, 0, BCON_NEW("ok", BCON_DOUBLE(1)));
    put_msg(g, 2, t + 5 * MS, TRACE_DIR_S2C, 0, false);
    check(g,
          wire_encode_msg(&g->b, 502, 0, WIRE_MSG_MORE_TO_COME, body, &seq, 1),
          "encode");
    put_msg(g, 2, t + 6 * MS, TRACE_DIR_C2S, 0, false);
    /* malformed: messageLength says 10 */
    op_msg(g, 503, 0, 0, BCON_NEW("ping", BCON_INT32(1), "$db", "admin"));
    wr_le32(g->b.data, 10);
    put_msg(g, 2, t + 7 * MS, TRACE_DIR_C2S, TRACE_MSG_MALFORMED, false);
    bson_destroy(body);
    bson_destroy(d1);
    bson_destroy(d2);
    mt_buf_free(&docs);
}

static void
phase_end(struct gen *g)
{
    struct trace_stats s = {.t_ns = T0 + 6100 * MS, .n = 3};
    struct trace_conn_close c1 = {
        .conn_id = 1, .t_ns = T0 + 6200 * MS, .reason = TRACE_CLOSE_NORMAL};
    struct trace_conn_close c2 = {.conn_id = 2,
                                  .t_ns = T0 + 6201 * MS,
                                  .reason = TRACE_CLOSE_CLIENT_RESET};

    snprintf(s.s[0].name, sizeof(s.s[0].name), "packets");
    s.s[0].value = 1234;
    snprintf(s.s[1].name, sizeof(s.s[1].name), "gaps");
    snprintf(s.s[2].name, sizeof(s.s[2].name), "dropped");
    check(g, trace_writer_stats(g->w, &s), "write stats");
    check(g, trace_writer_conn_close(g->w, &c1), "write close");
    check(g, trace_writer_conn_close(g->w, &c2), "write close");
}

static int
write_trace(const char *path, int what)
{
    struct gen g = {0};
    struct trace_header h = {.source = TRACE_SRC_SYNTH,
                             .start_wall_ns = 1764460800000000000ull,
                             .start_mono_ns = T0,
                             .ts_precision_ns = 1};
    struct mt_err err;

    snprintf(h.tool_version, sizeof(h.tool_version), "mtrace %s", MT_VERSION);
    snprintf(h.source_desc, sizeof(h.source_desc), "mktrace");
    g.w = trace_writer_open(path, TRACE_W_FORCE, &h, &err);
    if (g.w == NULL) {
        fprintf(stderr, "mktrace: %s\n", err.msg);
        return 1;
    }
    mt_buf_init(&g.b, WIRE_MSG_LEN_MAX);
    mt_buf_init(&g.p, WIRE_MSG_LEN_MAX);
    g.tls = (what & 16) != 0;
    if (what & 1) {
        phase_handshake(&g);
        check(&g, trace_writer_flush(g.w), "flush");
    }
    if (what & 2) {
        phase_finds(&g);
        check(&g, trace_writer_flush(g.w), "flush");
    }
    if (what & 4) {
        phase_conn2(&g);
        check(&g, trace_writer_flush(g.w), "flush");
    }
    if (what & 8)
        phase_end(&g);
    check(&g, trace_writer_close(g.w), "close");
    mt_buf_free(&g.b);
    mt_buf_free(&g.p);
    return g.failed;
}

int
main(int argc, char **argv)
{
    char path[4096];
    static const struct {
        const char *name;
        int what;
    } seeds[] = {
        {"empty.zst", 0},
        {"handshake.zst", 1},
        {"conn2.zst", 4 | 8},
        {"hs_conn2.zst", 1 | 4 | 8},
        {"tls.zst", 1 | 4 | 8 | 16},
    };
    int rc = 0;

    if (argc == 2 && argv[1][0] != '-')
        return write_trace(argv[1], 15);
    if (argc == 3 && strcmp(argv[1], "--tls") == 0)
        return write_trace(argv[2], 15 | 16);
    if (argc == 3 && strcmp(argv[1], "--corpus") == 0) {
        for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
            snprintf(path, sizeof(path), "%s/%s", argv[2], seeds[i].name);
            rc |= write_trace(path, seeds[i].what);
        }
        return rc;
    }
    fprintf(stderr, "usage: mktrace OUT.zst | mktrace --tls OUT.zst | mktrace "
                    "--corpus DIR\n");
    return 2;
}
