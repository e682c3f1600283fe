/*
 * wire_peer.c -- a minimal MongoDB-speaking server built only on core/wire,
 * so that real drivers exercise its parser, decompressors and encoders
 * (tests/integration/test_wire_compression.sh).  It negotiates
 * OP_COMPRESSED (snappy, zlib, zstd) in the handshake, answers hello /
 * isMaster (OP_QUERY or OP_MSG), ping, insert, find and a few session
 * commands, and compresses each reply with the compressor of its request.
 *
 * Every request is logged on stdout, one line each:
 *   REQ conn=N op=OP_COMPRESSED/zlib inner=OP_MSG cmd=find db=d coll=c nseq=0
 * and every bad message as "ERR conn=N <mt_err message>" (the connection is
 * then closed).  find answers {_id: 1, value: 42, via: "<compressor>"} so a
 * client can check that its request really travelled compressed.
 *
 * Usage: wire_peer [--port N]   (0 or absent: any free port)
 * Prints "READY <port>" once listening; runs until killed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/wire.h"

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

struct conn {
    int fd;
    int id;
};

static int
write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The compressors the client offered that we support, in its order. */
static void
append_compression(bson_t *reply, const struct wire_msg *m)
{
    bson_iter_t it, arr;
    bson_t list;
    int i = 0;
    char key[16];

    bson_append_array_begin(reply, "compression", -1, &list);
    if (bson_iter_init_from_data(&it, m->body, m->body_len) &&
        bson_iter_find(&it, "compression") && BSON_ITER_HOLDS_ARRAY(&it) &&
        bson_iter_recurse(&it, &arr)) {
        while (bson_iter_next(&arr)) {
            const char *c;
            if (!BSON_ITER_HOLDS_UTF8(&arr))
                continue;
            c = bson_iter_utf8(&arr, NULL);
            if (strcmp(c, "snappy") && strcmp(c, "zlib") && strcmp(c, "zstd"))
                continue;
            snprintf(key, sizeof(key), "%d", i++);
            BSON_APPEND_UTF8(&list, key, c);
        }
    }
    bson_append_array_end(reply, &list);
}

static int
count_inserted(const struct wire_msg *m)
{
    bson_iter_t it, arr;
    int n = 0;

    for (size_t i = 0; i < m->nseq; i++) {
        if (strcmp(m->seq[i].identifier, "documents") != 0)
            continue;
        for (size_t off = 0; off + 4 <= m->seq[i].docs_len;) {
            const uint8_t *d = m->seq[i].docs + off;
            uint32_t len = (uint32_t)d[0] | (uint32_t)d[1] << 8 |
                           (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
            off += len; /* lengths were validated by wire_msg_parse */
            n++;
        }
    }
    if (bson_iter_init_from_data(&it, m->body, m->body_len) &&
        bson_iter_find(&it, "documents") && BSON_ITER_HOLDS_ARRAY(&it) &&
        bson_iter_recurse(&it, &arr))
        while (bson_iter_next(&arr))
            n++;
    return n;
}

/* The reply document for the request m (already decompressed). */
static bson_t *
answer(const struct wire_msg *m, const struct wire_cmd *cmd, int conn_id,
       const char *via)
{
    bson_t *r = bson_new();

    if (cmd->is_hello || strcmp(cmd->name, "hello") == 0) {
        BSON_APPEND_BOOL(r, "helloOk", true);
        BSON_APPEND_BOOL(r, "ismaster", true);
        BSON_APPEND_BOOL(r, "isWritablePrimary", true);
        BSON_APPEND_INT32(r, "maxBsonObjectSize", 16 * 1024 * 1024);
        BSON_APPEND_INT32(r, "maxMessageSizeBytes", WIRE_MSG_LEN_MAX);
        BSON_APPEND_INT32(r, "maxWriteBatchSize", 100000);
        BSON_APPEND_DATE_TIME(r, "localTime", 1700000000000LL);
        BSON_APPEND_INT32(r, "logicalSessionTimeoutMinutes", 30);
        BSON_APPEND_INT32(r, "connectionId", conn_id);
        BSON_APPEND_INT32(r, "minWireVersion", 0);
        BSON_APPEND_INT32(r, "maxWireVersion", 17);
        BSON_APPEND_BOOL(r, "readOnly", false);
        append_compression(r, m);
    } else if (strcmp(cmd->name, "insert") == 0) {
        BSON_APPEND_INT32(r, "n", count_inserted(m));
    } else if (strcmp(cmd->name, "find") == 0) {
        bson_t cur, batch, doc;
        char ns[400];
        snprintf(ns, sizeof(ns), "%s.%s", cmd->db, cmd->coll);
        BSON_APPEND_DOCUMENT_BEGIN(r, "cursor", &cur);
        BSON_APPEND_ARRAY_BEGIN(&cur, "firstBatch", &batch);
        BSON_APPEND_DOCUMENT_BEGIN(&batch, "0", &doc);
        BSON_APPEND_INT32(&doc, "_id", 1);
        BSON_APPEND_INT32(&doc, "value", 42);
        BSON_APPEND_UTF8(&doc, "via", via);
        bson_append_document_end(&batch, &doc);
        bson_append_array_end(&cur, &batch);
        BSON_APPEND_INT64(&cur, "id", 0);
        BSON_APPEND_UTF8(&cur, "ns", ns);
        bson_append_document_end(r, &cur);
    } else if (strcmp(cmd->name, "ping") && strcmp(cmd->name, "endSessions") &&
               strcmp(cmd->name, "buildInfo") &&
               strcmp(cmd->name, "buildinfo")) {
        BSON_APPEND_DOUBLE(r, "ok", 0.0);
        BSON_APPEND_UTF8(r, "errmsg", "wire_peer: no such command");
        BSON_APPEND_INT32(r, "code", 59);
        return r;
    }
    BSON_APPEND_DOUBLE(r, "ok", 1.0);
    return r;
}

/* Answers one complete message; -1 closes the connection. */
static int
serve(struct conn *c, const uint8_t *p, size_t n)
{
    struct wire_msg outer, m;
    struct wire_cmd cmd;
    struct mt_err err = {0};
    struct mt_buf plain, reply, wire;
    const char *via = "none";
    size_t used;
    bson_t *doc = NULL;
    int rc = -1;

    mt_buf_init(&plain, WIRE_MSG_LEN_MAX);
    mt_buf_init(&reply, WIRE_MSG_LEN_MAX);
    mt_buf_init(&wire, WIRE_MSG_LEN_MAX);
    if (wire_msg_parse(p, n, &outer, &used, &err) != MT_OK)
        goto bad;
    m = outer;
    if (outer.h.op_code == WIRE_OP_COMPRESSED) {
        via = wire_compressor_name(outer.compressor_id);
        if (wire_decompress(&outer, &plain, &err) < 0 ||
            wire_msg_parse(plain.data, plain.len, &m, &used, &err) != MT_OK)
            goto bad;
    }
    if (wire_msg_command(&m, &cmd) < 0) {
        snprintf(err.msg, sizeof(err.msg), "no command in %s",
                 wire_opcode_name(m.h.op_code));
        goto bad;
    }
    pthread_mutex_lock(&out_mu);
    printf("REQ conn=%d op=%s%s%s inner=%s cmd=%s db=%s coll=%s nseq=%zu\n",
           c->id, wire_opcode_name(outer.h.op_code),
           outer.h.op_code == WIRE_OP_COMPRESSED ? "/" : "",
           outer.h.op_code == WIRE_OP_COMPRESSED ? via : "",
           wire_opcode_name(m.h.op_code), cmd.name, cmd.db, cmd.coll, m.nseq);
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
    doc = answer(&m, &cmd, c->id, via);
    if (m.h.op_code == WIRE_OP_QUERY) {
        const bson_t *docs[1] = {doc};
        rc = wire_encode_reply(&reply, m.h.request_id + 1000000, m.h.request_id,
                               8, 0, 0, docs, 1);
    } else if (m.h.op_code == WIRE_OP_MSG) {
        rc = wire_encode_msg(&reply, m.h.request_id + 1000000, m.h.request_id,
                             0, doc, NULL, 0);
    } else {
        snprintf(err.msg, sizeof(err.msg), "cannot answer %s",
                 wire_opcode_name(m.h.op_code));
        goto bad;
    }
    if (rc == 0 && outer.h.op_code == WIRE_OP_COMPRESSED)
        rc = wire_encode_compressed(&wire, reply.data, reply.len,
                                    outer.compressor_id, &err);
    if (rc == 0 && (m.flags & WIRE_MSG_MORE_TO_COME) == 0) {
        const struct mt_buf *send = wire.len ? &wire : &reply;
        rc = write_all(c->fd, send->data, send->len);
    }
    goto out;
bad:
    pthread_mutex_lock(&out_mu);
    printf("ERR conn=%d %s\n", c->id, err.msg);
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
    rc = -1;
out:
    if (doc)
        bson_destroy(doc);
    mt_buf_free(&plain);
    mt_buf_free(&reply);
    mt_buf_free(&wire);
    return rc;
}

static void *
conn_main(void *arg)
{
    struct conn *c = arg;
    struct mt_buf in;
    uint8_t chunk[64 * 1024];

    mt_buf_init(&in, WIRE_MSG_LEN_MAX + sizeof(chunk));
    for (;;) {
        ssize_t r = read(c->fd, chunk, sizeof(chunk));
        size_t len;
        struct mt_err err = {0};
        int rc;

        if (r <= 0 || mt_buf_append(&in, chunk, (size_t)r) < 0)
            break;
        while ((rc = wire_frame(in.data, in.len, 0, &len, &err)) == MT_OK) {
            if (serve(c, in.data, len) < 0)
                goto done;
            mt_buf_consume(&in, len);
        }
        if (rc < 0) {
            printf("ERR conn=%d %s\n", c->id, err.msg);
            fflush(stdout);
            break;
        }
    }
done:
    close(c->fd);
    mt_buf_free(&in);
    free(c);
    return NULL;
}

int
main(int argc, char **argv)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int port = 0, lfd, one = 1, next_id = 1;

    if (argc == 3 && strcmp(argv[1], "--port") == 0) {
        char *end;
        long v = strtol(argv[2], &end, 10);
        if (*end || v < 0 || v > 65535) {
            fprintf(stderr, "wire_peer: bad port %s\n", argv[2]);
            return 2;
        }
        port = (int)v;
    } else if (argc != 1) {
        fprintf(stderr, "usage: wire_peer [--port N]\n");
        return 2;
    }
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(lfd, 64) < 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
        perror("wire_peer: listen");
        return 1;
    }
    printf("READY %d\n", ntohs(sa.sin_port));
    fflush(stdout);
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        struct conn *c;
        pthread_t t;

        if (fd < 0)
            continue;
        c = malloc(sizeof(*c));
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->id = next_id++;
        if (pthread_create(&t, NULL, conn_main, c) != 0) {
            close(fd);
            free(c);
            continue;
        }
        pthread_detach(t);
    }
}
