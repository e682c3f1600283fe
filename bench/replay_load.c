/*
 * replay_load.c -- closed-loop load generator and latency probe for
 * bench/bench_replay.sh.  N connections, each sending seed 000's find_one
 * as an OP_MSG and the next one as soon as the reply is in; one epoll
 * thread.  Prints one JSON line: throughput and round-trip percentiles.
 *
 *     replay_load PORT CONNS SECONDS [WARMUP_SECONDS] [--busy]
 *
 * --busy: poll (epoll_wait with a zero timeout) instead of sleeping, so the
 * client's own wake-up lateness (tens of us on a VM after a 1 ms sleep) is
 * not part of the round trip; it costs one core.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/wire.h"
#include "replay/delay.h"

struct lconn {
    int fd;
    uint64_t sent_ns;
    size_t len;
    uint8_t buf[65536];
};

static struct mt_buf req;
static struct delay_hist hist;

static int
connect_to(uint16_t port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        perror("replay_load: connect");
        exit(1);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void
send_req(struct lconn *c)
{
    c->sent_ns = mt_now_ns();
    if (write(c->fd, req.data, req.len) != (ssize_t)req.len) {
        perror("replay_load: write");
        exit(1);
    }
}

/* Reads; returns how many whole replies arrived (0 or 1 in a closed loop). */
static int
on_read(struct lconn *c)
{
    ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
    struct rd r;
    uint32_t ml;

    if (n <= 0) {
        fprintf(stderr, "replay_load: server closed the connection\n");
        exit(1);
    }
    c->len += (size_t)n;
    r = rd_init(c->buf, c->len);
    if (!rd_le32(&r, &ml) || ml > c->len)
        return 0;
    memmove(c->buf, c->buf + ml, c->len - ml);
    c->len -= ml;
    return 1;
}

int
main(int argc, char **argv)
{
    bson_t *cmd = BCON_NEW("find", BCON_UTF8("test_col"), "filter", "{", "_id",
                           BCON_UTF8("test-doc-1"), "}", "limit", BCON_INT32(1),
                           "singleBatch", BCON_BOOL(true), "$db",
                           BCON_UTF8("benchmark_db"));
    struct epoll_event ev, evs[512];
    uint16_t port;
    int nconn, ep;
    double secs, warm = 0.5;
    bool busy = false;
    int npos = 0;
    uint64_t start, end, measure_from, ops = 0;
    struct lconn *conns;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--busy") == 0)
            busy = true;
        else
            argv[++npos] = argv[i];
    }
    if (npos < 3) {
        fprintf(stderr, "usage: replay_load PORT CONNS SECONDS "
                        "[WARMUP_SECONDS] [--busy]\n");
        return 2;
    }
    port = (uint16_t)strtoul(argv[1], NULL, 10);
    nconn = (int)strtol(argv[2], NULL, 10);
    secs = strtod(argv[3], NULL);
    if (npos > 3)
        warm = strtod(argv[4], NULL);
    mt_buf_init(&req, 1 << 20);
    wire_encode_msg(&req, 1, 0, 0, cmd, NULL, 0);
    delay_hist_init(&hist);
    conns = calloc((size_t)nconn, sizeof(*conns));
    ep = epoll_create1(0);
    for (int i = 0; i < nconn; i++) {
        conns[i].fd = connect_to(port);
        ev.events = EPOLLIN;
        ev.data.ptr = &conns[i];
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }
    start = mt_now_ns();
    measure_from = start + (uint64_t)(warm * 1e9);
    end = measure_from + (uint64_t)(secs * 1e9);
    for (int i = 0; i < nconn; i++)
        send_req(&conns[i]);
    for (;;) {
        int n = epoll_wait(ep, evs, 512, busy ? 0 : 1000);
        uint64_t now = mt_now_ns();
        for (int i = 0; i < n; i++) {
            struct lconn *c = evs[i].data.ptr;
            if (on_read(c) == 0)
                continue;
            if (c->sent_ns >= measure_from && now <= end) {
                delay_hist_add(&hist, now - c->sent_ns);
                ops++;
            }
            send_req(c);
        }
        if (now > end)
            break;
    }
    printf("{\"conns\": %d, \"busy\": %s, \"seconds\": %.3f, \"ops\": %llu, "
           "\"ops_per_s\": "
           "%.0f, "
           "\"rtt_mean_us\": %.2f, \"rtt_p50_us\": %.2f, \"rtt_p99_us\": %.2f, "
           "\"rtt_max_us\": %.2f}\n",
           nconn, busy ? "true" : "false", secs, (unsigned long long)ops,
           ops / secs, hist.n ? hist.sum_ns / hist.n / 1e3 : 0.0,
           delay_hist_quantile(&hist, 0.5) / 1e3,
           delay_hist_quantile(&hist, 0.99) / 1e3, hist.max_ns / 1e3);
    bson_destroy(cmd);
    return 0;
}
