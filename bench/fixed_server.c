/*
 * fixed_server.c -- the floor for bench/bench_replay.sh: the smallest
 * MongoDB-speaking server we can write.  One epoll thread; every OP_QUERY
 * or OP_MSG hello/isMaster gets a fixed hello reply, every other OP_MSG the
 * fixed find reply {cursor: {id: 0, ns, firstBatch: [{_id: "test-doc-1",
 * value: 42}]}, ok: 1}.  No matching, no delay, no statistics: what replay
 * costs on top of this is replay's overhead.
 *
 *     fixed_server PORT     (prints "READY PORT"; SIGTERM ends it)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/rd.h"
#include "core/wire.h"

#define CONN_BUF (1 << 20)

struct fconn {
    int fd;
    size_t len;
    uint8_t buf[CONN_BUF];
};

static struct mt_buf hello_msg, hello_reply, find_msg;

static void
build(void)
{
    bson_t *hello = BCON_NEW(
        "ismaster", BCON_BOOL(true), "isWritablePrimary", BCON_BOOL(true),
        "maxBsonObjectSize", BCON_INT32(16777216), "maxMessageSizeBytes",
        BCON_INT32(48000000), "maxWriteBatchSize", BCON_INT32(100000),
        "logicalSessionTimeoutMinutes", BCON_INT32(30), "connectionId",
        BCON_INT32(1), "minWireVersion", BCON_INT32(0), "maxWireVersion",
        BCON_INT32(21), "ok", BCON_DOUBLE(1));
    bson_t *find =
        BCON_NEW("cursor", "{", "id", BCON_INT64(0), "ns",
                 BCON_UTF8("benchmark_db.test_col"), "firstBatch", "[", "{",
                 "_id", BCON_UTF8("test-doc-1"), "value", BCON_INT32(42), "}",
                 "]", "}", "ok", BCON_DOUBLE(1));
    const bson_t *docs[1] = {hello};

    mt_buf_init(&hello_msg, 1 << 20);
    mt_buf_init(&hello_reply, 1 << 20);
    mt_buf_init(&find_msg, 1 << 20);
    wire_encode_msg(&hello_msg, 1, 0, 0, hello, NULL, 0);
    wire_encode_reply(&hello_reply, 1, 0, 8, 0, 0, docs, 1);
    wire_encode_msg(&find_msg, 1, 0, 0, find, NULL, 0);
    bson_destroy(hello);
    bson_destroy(find);
}

/* Answers one complete message; false to close. */
static bool
answer(int fd, const uint8_t *m, size_t len)
{
    struct rd r = rd_init(m, len);
    int32_t rid, op;
    uint8_t out[4096];
    const struct mt_buf *tpl;
    const uint8_t *first = NULL;

    if (!rd_skip(&r, 4) || !rd_le32s(&r, &rid) || !rd_skip(&r, 4) ||
        !rd_le32s(&r, &op))
        return false;
    if (op == WIRE_OP_QUERY) {
        tpl = &hello_reply;
    } else if (op == WIRE_OP_MSG) {
        /* flags(4) kind(1) doclen(4) type(1) key... */
        tpl = &find_msg;
        if (rd_skip(&r, 4 + 1 + 4 + 1) && rd_bytes(&r, 1, &first) &&
            (first[0] == 'h' || first[0] == 'i'))
            tpl = &hello_msg;
    } else {
        return false;
    }
    if (tpl->len > sizeof(out))
        return false;
    memcpy(out, tpl->data, tpl->len);
    wr_le32(out + 4, (uint32_t)rid + 1000000u);
    wr_le32(out + 8, (uint32_t)rid);
    return write(fd, out, tpl->len) == (ssize_t)tpl->len;
}

static bool
on_read(struct fconn *c)
{
    ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
    size_t off = 0;

    if (n <= 0)
        return n < 0 && errno == EAGAIN;
    c->len += (size_t)n;
    while (c->len - off >= 4) {
        struct rd r = rd_init(c->buf + off, c->len - off);
        uint32_t ml;
        rd_le32(&r, &ml);
        if (ml < 16 || ml > sizeof(c->buf))
            return false;
        if (ml > c->len - off)
            break;
        if (!answer(c->fd, c->buf + off, ml))
            return false;
        off += ml;
    }
    memmove(c->buf, c->buf + off, c->len - off);
    c->len -= off;
    return true;
}

int
main(int argc, char **argv)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);
    struct epoll_event ev, evs[256];
    int lfd, ep, one = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: fixed_server PORT\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    build();
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)strtoul(argv[1], NULL, 10));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(lfd, 4096) < 0) {
        perror("fixed_server: listen");
        return 1;
    }
    getsockname(lfd, (struct sockaddr *)&a, &alen);
    printf("READY %u\n", ntohs(a.sin_port));
    fflush(stdout);
    ep = epoll_create1(0);
    ev.events = EPOLLIN;
    ev.data.ptr = NULL;
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            struct fconn *c = evs[i].data.ptr;
            if (c == NULL) {
                int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
                if (fd < 0 || (c = calloc(1, sizeof(*c))) == NULL)
                    continue;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                c->fd = fd;
                ev.events = EPOLLIN;
                ev.data.ptr = c;
                epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
            } else if (!on_read(c)) {
                close(c->fd);
                free(c);
            }
        }
    }
}
