/*
 * fixedsrv.c -- a minimal MongoDB wire server that answers every request at
 * once with a fixed reply: the upstream of the capture and replay
 * benchmarks (no Python, no per-request work beyond framing).
 *
 *     fixedsrv [--listen HOST:PORT] [--threads N] [--pad BYTES] [--compress]
 *              [--tls-cert PEM [--tls-key PEM]]
 *
 *   --listen    default 127.0.0.1:0 (a free port); prints "READY <port>"
 *               on stdout once listening
 *   --threads   event loops, each with its own SO_REUSEPORT socket (def. 1)
 *   --pad       add a string field of BYTES bytes to the find reply
 *   --compress  answer a hello's "compression" list with the ones of
 *               snappy, zlib, zstd it names (in the client's order), and
 *               accept OP_COMPRESSED requests; the reply to a compressed
 *               request is compressed with the same compressor
 *   --tls-cert  serve TLS (core/tls.h's server context: the certificate
 *               chain, and the key unless --tls-key names it); each
 *               connection's handshake runs on the loop before its first
 *               request (the upstream of the --target-tls benchmark)
 *
 * Answers: hello / isMaster / ismaster (OP_MSG, or legacy OP_QUERY with an
 * OP_REPLY) with a MongoDB 7.0 standalone hello; find with
 * {cursor: {id: Int64 0, ns: "benchmark_db.test_col", firstBatch:
 * [{_id: "test-doc-1", value: 42}]}, ok: 1}; anything else with {ok: 1}.
 * OP_MSG requests with moreToCome get no reply.  Replies are prebuilt; only
 * requestID and responseTo are patched.  Runs until SIGINT/SIGTERM.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "core/addr.h"
#include "core/buf.h"
#include "core/loop.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/tls.h"
#include "core/wire.h"

#define FS_READ 65536
#define FS_THREADS_MAX 16

struct fs_reply {
    struct mt_buf b; /* the whole prebuilt message */
};

static struct fs_reply rep_hello_msg, rep_hello_query, rep_find, rep_ok;
static bson_t fs_hello; /* the hello document, for --compress replies */
static struct loop *fs_loops[FS_THREADS_MAX];
static int fs_nloops;
static volatile sig_atomic_t fs_stopping;
static bool fs_compress;
static struct tls_ctx *fs_tls; /* --tls-cert; NULL: plain TCP */

struct fs_conn {
    int fd;
    struct tls_conn *tls;  /* owned; NULL: plain TCP */
    struct mt_buf in, out; /* owned */
    int32_t next_id;
};

static void
fs_build(void)
{
    bson_t hello = BSON_INITIALIZER, ok = BSON_INITIALIZER, find, cur, arr, doc;
    const bson_t *one[1];
    const char *pad = getenv("FIXEDSRV_PAD");

    BSON_APPEND_BOOL(&hello, "isWritablePrimary", true);
    BSON_APPEND_BOOL(&hello, "ismaster", true);
    BSON_APPEND_INT32(&hello, "maxBsonObjectSize", 16777216);
    BSON_APPEND_INT32(&hello, "maxMessageSizeBytes", 48000000);
    BSON_APPEND_INT32(&hello, "maxWriteBatchSize", 100000);
    BSON_APPEND_INT32(&hello, "logicalSessionTimeoutMinutes", 30);
    BSON_APPEND_INT32(&hello, "minWireVersion", 0);
    BSON_APPEND_INT32(&hello, "maxWireVersion", 21);
    BSON_APPEND_DOUBLE(&hello, "ok", 1.0);
    BSON_APPEND_DOUBLE(&ok, "ok", 1.0);

    bson_init(&find);
    BSON_APPEND_DOCUMENT_BEGIN(&find, "cursor", &cur);
    BSON_APPEND_INT64(&cur, "id", 0);
    BSON_APPEND_UTF8(&cur, "ns", "benchmark_db.test_col");
    BSON_APPEND_ARRAY_BEGIN(&cur, "firstBatch", &arr);
    BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &doc);
    BSON_APPEND_UTF8(&doc, "_id", "test-doc-1");
    BSON_APPEND_INT32(&doc, "value", 42);
    if (pad != NULL && strtol(pad, NULL, 10) > 0) {
        size_t n = (size_t)strtol(pad, NULL, 10);
        char *s = mt_malloc(n + 1);
        memset(s, 'x', n);
        s[n] = 0;
        BSON_APPEND_UTF8(&doc, "pad", s);
        mt_free(s);
    }
    bson_append_document_end(&arr, &doc);
    bson_append_array_end(&cur, &arr);
    bson_append_document_end(&find, &cur);
    BSON_APPEND_DOUBLE(&find, "ok", 1.0);

    mt_buf_init(&rep_hello_msg.b, WIRE_MSG_LEN_MAX);
    mt_buf_init(&rep_hello_query.b, WIRE_MSG_LEN_MAX);
    mt_buf_init(&rep_find.b, WIRE_MSG_LEN_MAX);
    mt_buf_init(&rep_ok.b, WIRE_MSG_LEN_MAX);
    one[0] = &hello;
    if (wire_encode_msg(&rep_hello_msg.b, 0, 0, 0, &hello, NULL, 0) < 0 ||
        wire_encode_reply(&rep_hello_query.b, 0, 0, 8, 0, 0, one, 1) < 0 ||
        wire_encode_msg(&rep_find.b, 0, 0, 0, &find, NULL, 0) < 0 ||
        wire_encode_msg(&rep_ok.b, 0, 0, 0, &ok, NULL, 0) < 0) {
        fprintf(stderr, "fixedsrv: cannot encode the replies\n");
        exit(1);
    }
    bson_copy_to(&hello, &fs_hello);
    bson_destroy(&hello);
    bson_destroy(&ok);
    bson_destroy(&find);
}

static void
fs_close(struct loop *l, struct fs_conn *c)
{
    loop_fd_del(l, c->fd);
    tls_conn_free(c->tls);
    close(c->fd);
    mt_buf_free(&c->in);
    mt_buf_free(&c->out);
    mt_free(c);
}

static bool fs_hello_compress(struct fs_conn *c, const struct wire_msg *m,
                              int32_t rid);

/* Appends the reply to one complete request; false on a bad request.
 * comp: the request came in OP_COMPRESSED with that compressor (-1: no). */
static bool
fs_answer_plain(struct fs_conn *c, const uint8_t *p, size_t len, int comp)
{
    struct wire_msg m;
    struct wire_cmd cmd;
    struct mt_err err = {0};
    size_t used = 0;
    const struct fs_reply *r = &rep_ok;
    size_t at = c->out.len;
    int32_t rid;

    if (wire_msg_parse_opts(p, len, WIRE_PARSE_SHALLOW | WIRE_PARSE_NO_CHECKSUM,
                            &m, &used, &err) != MT_OK) {
        fprintf(stderr, "fixedsrv: bad request: %s\n", err.msg);
        return false;
    }
    if (m.h.op_code == WIRE_OP_COMPRESSED) {
        struct mt_buf plain;
        bool ok;
        mt_buf_init(&plain, WIRE_MSG_LEN_MAX);
        ok = wire_decompress(&m, &plain, &err) == 0 &&
             fs_answer_plain(c, plain.data, plain.len, m.compressor_id);
        if (!ok)
            fprintf(stderr, "fixedsrv: bad compressed request: %s\n", err.msg);
        mt_buf_free(&plain);
        return ok;
    }
    if (m.h.op_code == WIRE_OP_MSG && (m.flags & WIRE_MSG_MORE_TO_COME))
        return true;
    memset(&cmd, 0, sizeof(cmd));
    (void)wire_msg_command(&m, &cmd);
    if (cmd.is_hello)
        r = m.h.op_code == WIRE_OP_QUERY ? &rep_hello_query : &rep_hello_msg;
    else if (strcmp(cmd.name, "find") == 0)
        r = &rep_find;
    rid = c->next_id++;
    if (cmd.is_hello && fs_compress)
        return fs_hello_compress(c, &m, rid);
    if (comp >= 0) {
        struct mt_buf tmp;
        int rc;
        mt_buf_init(&tmp, WIRE_MSG_LEN_MAX);
        rc = mt_buf_append(&tmp, r->b.data, r->b.len);
        if (rc == 0) {
            wr_le32(tmp.data + 4, (uint32_t)rid);
            wr_le32(tmp.data + 8, (uint32_t)m.h.request_id);
            rc = wire_encode_compressed(&c->out, tmp.data, tmp.len,
                                        (uint8_t)comp, &err);
        }
        mt_buf_free(&tmp);
        return rc == 0;
    }
    if (mt_buf_append(&c->out, r->b.data, r->b.len) < 0)
        return false;
    wr_le32(c->out.data + at + 4, (uint32_t)rid);
    wr_le32(c->out.data + at + 8, (uint32_t)m.h.request_id);
    return true;
}

/* --compress: a hello reply naming the compressors both sides know. */
static bool
fs_hello_compress(struct fs_conn *c, const struct wire_msg *m, int32_t rid)
{
    bson_t req, doc = BSON_INITIALIZER, arr;
    bson_iter_t it, ai;
    const bson_t *one[1] = {&doc};
    int n = 0, rc;

    bson_copy_to_excluding_noinit(&fs_hello, &doc, "", NULL);
    BSON_APPEND_ARRAY_BEGIN(&doc, "compression", &arr);
    if (m->body != NULL && bson_init_static(&req, m->body, m->body_len) &&
        bson_iter_init_find(&it, &req, "compression") &&
        BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &ai)) {
        while (bson_iter_next(&ai)) {
            const char *name =
                BSON_ITER_HOLDS_UTF8(&ai) ? bson_iter_utf8(&ai, NULL) : "";
            char key[16];
            if (strcmp(name, "snappy") && strcmp(name, "zlib") &&
                strcmp(name, "zstd"))
                continue;
            snprintf(key, sizeof(key), "%d", n++);
            BSON_APPEND_UTF8(&arr, key, name);
        }
    }
    bson_append_array_end(&doc, &arr);
    if (m->h.op_code == WIRE_OP_QUERY)
        rc = wire_encode_reply(&c->out, rid, m->h.request_id, 8, 0, 0, one, 1);
    else
        rc = wire_encode_msg(&c->out, rid, m->h.request_id, 0, &doc, NULL, 0);
    bson_destroy(&doc);
    return rc == 0;
}

static bool
fs_answer(struct fs_conn *c, const uint8_t *p, size_t len)
{
    return fs_answer_plain(c, p, len, -1);
}

static void fs_on_conn(struct loop *l, int fd, void *arg, unsigned ev);

static bool
fs_flush(struct loop *l, struct fs_conn *c)
{
    bool want_write;

    while (c->out.len > 0) {
        ssize_t w = c->tls != NULL
                        ? tls_send(c->tls, c->out.data, c->out.len)
                        : send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (w < 0)
            return false;
        mt_buf_consume(&c->out, (size_t)w);
    }
    /* a read or handshake step must write first */
    want_write = c->tls != NULL && tls_wants_write(c->tls);
    return loop_fd_mod(l, c->fd,
                       LOOP_READ |
                           (c->out.len || want_write ? LOOP_WRITE : 0)) == 0;
}

/* Reads what is there into c->in: > 0 bytes, 0 nothing now, -1 closed or
 * failed (logged when it is a TLS error).  With TLS, reads until OpenSSL
 * has nothing decrypted left (epoll cannot see those bytes). */
static ssize_t
fs_read(struct fs_conn *c)
{
    ssize_t n, got = 0;
    bool more = true;

    while (more) {
        if (mt_buf_reserve(&c->in, FS_READ) < 0)
            return -1;
        more = false;
        n = c->tls != NULL
                ? tls_recv(c->tls, c->in.data + c->in.len, FS_READ, &more)
                : recv(c->fd, c->in.data + c->in.len, FS_READ, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return got;
        if (n < 0 && errno == EPROTO)
            fprintf(stderr, "fixedsrv: TLS: %s\n", tls_conn_why(c->tls));
        if (n <= 0)
            return -1;
        c->in.len += (size_t)n;
        got += n;
    }
    return got;
}

static void
fs_on_conn(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct fs_conn *c = arg;
    ssize_t n;
    size_t off = 0, need;

    if (c->tls != NULL && !tls_conn_ready(c->tls)) {
        int rc = tls_handshake(c->tls);
        if (rc == -EAGAIN) {
            if (!fs_flush(l, c))
                fs_close(l, c);
            return;
        }
        if (rc < 0) {
            fprintf(stderr, "fixedsrv: TLS handshake: %s\n",
                    tls_conn_why(c->tls));
            fs_close(l, c);
            return;
        }
        ev |= LOOP_READ; /* the client's first request may be in already */
    }
    if (c->tls != NULL && tls_wants_write(c->tls))
        ev |= LOOP_READ; /* the read that wanted the socket writable */
    if (ev & (LOOP_READ | LOOP_ERROR)) {
        n = fs_read(c);
        if (n < 0) {
            fs_close(l, c);
            return;
        }
        for (;;) {
            struct mt_err err = {0};
            int rc = wire_frame(c->in.data + off, c->in.len - off,
                                WIRE_MSG_LEN_MAX, &need, &err);
            if (rc == MT_PARTIAL)
                break;
            if (rc < 0 || !fs_answer(c, c->in.data + off, need)) {
                fs_close(l, c);
                return;
            }
            off += need;
        }
        mt_buf_consume(&c->in, off);
    }
    if (!fs_flush(l, c))
        fs_close(l, c);
}

static void
fs_on_accept(struct loop *l, int lfd, void *arg, unsigned ev)
{
    for (int i = 0; i < 64; i++) {
        int one = 1,
            fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct fs_conn *c;
        if (fd < 0)
            return;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c = mt_calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            return;
        }
        c->fd = fd;
        c->next_id = 1;
        if (fs_tls != NULL &&
            (c->tls = tls_conn_new(fs_tls, fd, NULL)) == NULL) {
            close(fd);
            mt_free(c);
            return;
        }
        mt_buf_init(&c->in, WIRE_MSG_LEN_MAX + FS_READ);
        mt_buf_init(&c->out, 64u * 1024 * 1024);
        if (loop_fd_add(l, fd, LOOP_READ, fs_on_conn, c) < 0) {
            tls_conn_free(c->tls);
            close(fd);
            mt_free(c);
        }
    }
}

static void
fs_hook(struct loop *l, void *arg)
{
    if (fs_stopping)
        loop_stop(l);
}

static void *
fs_thread(void *arg)
{
    loop_run(arg);
    return NULL;
}

static void
fs_on_signal(int sig)
{
    fs_stopping = 1;
    for (int i = 0; i < fs_nloops; i++)
        loop_wake(fs_loops[i]);
}

static int
fs_listen(const char *spec, int nthreads, int *fds)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1;

    if (mt_addr_resolve(spec, &ss, &len) < 0)
        return -1;
    for (int i = 0; i < nthreads; i++) {
        fds[i] = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
        setsockopt(fds[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        setsockopt(fds[i], SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
        if (bind(fds[i], (struct sockaddr *)&ss, len) < 0 ||
            listen(fds[i], 4096) < 0)
            return -1;
        len = sizeof(ss);
        getsockname(fds[i], (struct sockaddr *)&ss, &len);
    }
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int
main(int argc, char **argv)
{
    const char *listen_spec = "127.0.0.1:0", *tls_cert = NULL, *tls_key = NULL;
    int nthreads = 1, port, fds[FS_THREADS_MAX];
    pthread_t th[FS_THREADS_MAX];
    struct sigaction sa;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen_spec = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            nthreads = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--pad") == 0 && i + 1 < argc)
            setenv("FIXEDSRV_PAD", argv[++i], 1);
        else if (strcmp(argv[i], "--compress") == 0)
            fs_compress = true;
        else if (strcmp(argv[i], "--tls-cert") == 0 && i + 1 < argc)
            tls_cert = argv[++i];
        else if (strcmp(argv[i], "--tls-key") == 0 && i + 1 < argc)
            tls_key = argv[++i];
        else {
            fprintf(stderr, "usage: fixedsrv [--listen HOST:PORT] "
                            "[--threads N] [--pad BYTES] [--compress] "
                            "[--tls-cert PEM [--tls-key PEM]]\n");
            return 2;
        }
    }
    if (tls_cert != NULL) {
        struct mt_err err = {0};
        fs_tls = tls_ctx_server_new(tls_cert, tls_key, NULL, &err);
        if (fs_tls == NULL) {
            fprintf(stderr, "fixedsrv: %s\n", err.msg);
            return 1;
        }
    }
    if (nthreads < 1 || nthreads > FS_THREADS_MAX) {
        fprintf(stderr, "fixedsrv: --threads 1..%d\n", FS_THREADS_MAX);
        return 2;
    }
    fs_build();
    port = fs_listen(listen_spec, nthreads, fds);
    if (port < 0) {
        fprintf(stderr, "fixedsrv: cannot listen on %s: %s\n", listen_spec,
                strerror(errno));
        return 1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fs_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < nthreads; i++) {
        struct mt_err err;
        fs_loops[i] = loop_new(NULL, 0, &err);
        if (fs_loops[i] == NULL || loop_fd_add(fs_loops[i], fds[i], LOOP_READ,
                                               fs_on_accept, NULL) < 0) {
            fprintf(stderr, "fixedsrv: loop: %s\n", err.msg);
            return 1;
        }
        loop_set_before_sleep(fs_loops[i], fs_hook, NULL);
    }
    fs_nloops = nthreads;
    printf("READY %d\n", port);
    fflush(stdout);
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, fs_thread, fs_loops[i]);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    return 0;
}
