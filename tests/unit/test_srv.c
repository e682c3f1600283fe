/*
 * test_srv.c -- core/srv.c.  The hand-off queue: FIFO order and peer
 * addresses, the bound (a full queue refuses and the caller keeps the
 * fd), fds still queued are closed by srv_hand_free, and a producer thread
 * against a consumer thread loses and duplicates nothing.  The server on
 * real sockets and loop threads: the probe refuses a port in use, port 0
 * gives every loop one port, connections are spread within one of each
 * other over the loops, the sweep runs, and srv_stop drains every loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/loop.h"
#include "core/srv.h"

static struct sockaddr_storage
peer_port(uint16_t port)
{
    struct sockaddr_storage ss;
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;

    memset(&ss, 0, sizeof(ss));
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    return ss;
}

/* srv_hand_pop into the three values the tests compare. */
static bool
pop(struct srv_hand *h, int *fd, struct sockaddr_storage *ss, uint64_t *t)
{
    struct srv_hand_item it;

    if (!srv_hand_pop(h, &it))
        return false;
    assert_int_equal(it.peer_len, sizeof(*ss));
    *fd = it.fd;
    *ss = it.peer;
    *t = it.accepted_ns;
    return true;
}

static bool
fd_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

/* FIFO order with the peer of each, a full queue refuses without taking
 * the fd, and what is left is closed by srv_hand_free. */
static void
test_srv_hand_fifo_bound_free(void **state)
{
    static struct srv_hand h; /* 37 KB: not on the stack */
    struct sockaddr_storage ss;
    uint64_t t;
    int fds[SRV_HAND_MAX + 1], fd;

    srv_hand_init(&h);
    assert_false(pop(&h, &fd, &ss, &t)); /* empty */
    for (int i = 0; i <= SRV_HAND_MAX; i++) {
        fds[i] = dup(STDERR_FILENO);
        assert_true(fds[i] >= 0);
    }
    for (int i = 0; i < SRV_HAND_MAX; i++) {
        ss = peer_port((uint16_t)(1000 + i));
        assert_true(
            srv_hand_push(&h, fds[i], &ss, sizeof(ss), 5000u + (uint64_t)i));
    }
    ss = peer_port(9);
    assert_false(
        srv_hand_push(&h, fds[SRV_HAND_MAX], &ss, sizeof(ss), 1)); /* full */
    assert_true(fd_open(fds[SRV_HAND_MAX])); /* still ours */
    close(fds[SRV_HAND_MAX]);
    for (int i = 0; i < 3; i++) {
        assert_true(pop(&h, &fd, &ss, &t));
        assert_int_equal(fd, fds[i]);
        assert_int_equal(t, 5000 + i); /* the accept time travels along */
        assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port),
                         1000 + i);
        close(fd);
    }
    ss = peer_port(7); /* wraps around the ring */
    fd = dup(STDERR_FILENO);
    assert_true(srv_hand_push(&h, fd, &ss, sizeof(ss), 7));
    srv_hand_free(&h);
    for (int i = 3; i < SRV_HAND_MAX; i++)
        assert_false(fd_open(fds[i]));
    assert_false(fd_open(fd));
}

struct race {
    struct srv_hand *h;
    int n;
};

static void *
producer(void *arg)
{
    struct race *r = arg;
    struct sockaddr_storage ss;

    for (int i = 0; i < r->n; i++) {
        ss = peer_port((uint16_t)i);
        while (!srv_hand_push(r->h, 100000 + i, &ss, sizeof(ss), (uint64_t)i))
            ; /* full: the consumer is behind */
    }
    return NULL;
}

/* One thread pushes 20 000 entries (fake fd numbers, never closed) while
 * this one pops: every entry arrives once, in order. */
static void
test_srv_hand_threads_in_order(void **state)
{
    static struct srv_hand h;
    struct race r = {&h, 20000};
    struct sockaddr_storage ss;
    uint64_t t;
    pthread_t th;
    int fd, next = 0;

    srv_hand_init(&h);
    assert_int_equal(pthread_create(&th, NULL, producer, &r), 0);
    while (next < r.n) {
        if (!pop(&h, &fd, &ss, &t))
            continue;
        assert_int_equal(fd, 100000 + next);
        assert_int_equal(t, next);
        assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port),
                         (uint16_t)next);
        next++;
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_false(pop(&h, &fd, &ss, &t));
    srv_hand_free(&h);
}

/* The sweep period: a quarter of the shorter timeout, within 10 ms..1 s. */
static void
test_srv_sweep_period_ns(void **state)
{
    (void)state;
    assert_int_equal(srv_sweep_period_ns(0, 0), 0);
    assert_int_equal(srv_sweep_period_ns(8000000000ull, 0), 1000000000ull);
    assert_int_equal(srv_sweep_period_ns(0, 2000000000ull), 500000000ull);
    assert_int_equal(srv_sweep_period_ns(2000000000ull, 400000000ull),
                     100000000ull);
    assert_int_equal(srv_sweep_period_ns(1000000ull, 0), 10000000ull);
}

static void
test_srv_loops_count(void **state)
{
    (void)state;
    assert_int_equal(srv_loops_count(3, 64), 3);
    assert_int_equal(srv_loops_count(100, 64), 64);
    assert_true(srv_loops_count(0, 64) >= 1);
    assert_true(srv_loops_count(0, 1) == 1);
}

/* ---- a server on real sockets ---- */

#define NLOOPS 3
#define NCONNS 12

struct tloop {
    struct srv *s;
    int idx;
    struct loop *l;
    int fds[NCONNS]; /* its connections */
    _Atomic int n;
    _Atomic int sweeps;
    _Atomic int exits;
    _Atomic int refused;         /* on_refused calls */
    _Atomic size_t refused_open; /* its last open count */
    _Atomic int drop;            /* the sweep closes this many connections */
};

static void
t_on_conn(void *arg, int fd, const struct sockaddr_storage *peer, socklen_t len,
          uint64_t accepted_ns)
{
    struct tloop *t = arg;
    char txt[64];

    (void)accepted_ns;
    assert_true(len > 0);
    mt_addr_format((const struct sockaddr *)peer, txt, sizeof(txt));
    assert_memory_equal(txt, "127.0.0.1:", 10);
    t->fds[atomic_fetch_add(&t->n, 1)] = fd;
}

static void
t_on_sweep(void *arg, uint64_t now_ns)
{
    struct tloop *t = arg;

    (void)now_ns;
    atomic_fetch_add(&t->sweeps, 1);
    for (; atomic_load(&t->drop) > 0; atomic_fetch_sub(&t->drop, 1))
        for (int i = 0; i < atomic_load(&t->n); i++)
            if (t->fds[i] >= 0) {
                close(t->fds[i]);
                t->fds[i] = -1;
                srv_conn_done(t->s, t->idx);
                break;
            }
}

static void
t_on_refused(void *arg, size_t open)
{
    struct tloop *t = arg;

    atomic_store(&t->refused_open, open);
    atomic_fetch_add(&t->refused, 1);
}

/* The drain: the test's connections are closed at once, so the loop stops
 * on its first tick after srv_stop. */
static void
t_before_sleep(struct loop *l, void *arg)
{
    struct tloop *t = arg;

    if (srv_loop_tick(t->s, t->idx)) {
        for (int i = 0; i < atomic_load(&t->n); i++)
            if (t->fds[i] >= 0) {
                close(t->fds[i]);
                t->fds[i] = -1;
                srv_conn_done(t->s, t->idx);
            }
        loop_stop(l);
    }
}

static void
t_on_exit(void *arg)
{
    struct tloop *t = arg;

    atomic_fetch_add(&t->exits, 1);
}

/* A server of cfg on 127.0.0.1 at a port it picks; cfg's address is then
 * that port, written into want ("127.0.0.1:PORT"). */
static struct srv *
t_srv_new(struct srv_cfg *cfg, char *want, size_t cap)
{
    struct mt_err err = {0};
    struct srv *s;

    cfg->addr_len = sizeof(cfg->addr);
    assert_int_equal(mt_addr_resolve("127.0.0.1:0", &cfg->addr, &cfg->addr_len),
                     0);
    s = srv_new(cfg, &err);
    assert_non_null(s);
    assert_true(srv_port(s) != 0);
    snprintf(want, cap, "127.0.0.1:%u", (unsigned)srv_port(s));
    cfg->addr_len = sizeof(cfg->addr);
    assert_int_equal(mt_addr_resolve(want, &cfg->addr, &cfg->addr_len), 0);
    return s;
}

static void
test_srv_spread_sweep_stop(void **state)
{
    static struct tloop tl[NLOOPS];
    struct srv_cfg cfg = {
        .name = "test",
        .nloops = NLOOPS,
        .sweep_ns = srv_sweep_period_ns(40000000ull, 0), /* 10 ms */
        .drain_ns = 1000000000ull,
        .on_conn = t_on_conn,
        .on_sweep = t_on_sweep,
        .on_exit = t_on_exit,
    };
    struct mt_err err = {0};
    struct srv *s, *again;
    int cfds[NCONNS], total = 0, lo = NCONNS, hi = 0;
    char want[64];

    (void)state;
    s = t_srv_new(&cfg, want, sizeof(want));
    assert_string_equal(srv_desc(s), want);
    /* the probe: the port is in use, even by SO_REUSEPORT listeners */
    again = srv_new(&cfg, &err);
    assert_null(again);
    assert_non_null(strstr(err.msg, "cannot listen on"));
    assert_non_null(strstr(err.msg, want));
    for (int i = 0; i < NLOOPS; i++) {
        memset(&tl[i], 0, sizeof(tl[i]));
        tl[i].s = s;
        tl[i].idx = i;
        tl[i].l = loop_new(NULL, 0, &err);
        assert_non_null(tl[i].l);
        loop_set_before_sleep(tl[i].l, t_before_sleep, &tl[i]);
        assert_int_equal(srv_loop_attach(s, i, tl[i].l, &tl[i], &err), 0);
    }
    assert_int_equal(srv_start(s, &err), 0);
    for (int i = 0; i < NCONNS; i++) {
        cfds[i] = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(cfds[i] >= 0);
        assert_int_equal(
            connect(cfds[i], (struct sockaddr *)&cfg.addr, cfg.addr_len), 0);
        /* one at a time: each accept sees the loads of the ones before */
        for (int k = 0; k < 2000 && total < i + 1; k++) {
            usleep(1000);
            total = 0;
            for (int j = 0; j < NLOOPS; j++)
                total += atomic_load(&tl[j].n);
        }
        assert_int_equal(total, i + 1);
    }
    for (int j = 0; j < NLOOPS; j++) {
        int n = atomic_load(&tl[j].n);
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
    }
    assert_true(hi - lo <= 1); /* NCONNS / NLOOPS each, give or take one */
    for (int k = 0; k < 2000 && atomic_load(&tl[0].sweeps) < 2; k++)
        usleep(1000);
    assert_true(atomic_load(&tl[0].sweeps) >= 2);
    srv_stop(s);
    assert_true(srv_stopping(s));
    srv_join(s);
    for (int j = 0; j < NLOOPS; j++) {
        assert_int_equal(atomic_load(&tl[j].exits), 1);
        for (int i = 0; i < atomic_load(&tl[j].n); i++)
            assert_int_equal(tl[j].fds[i], -1);
    }
    srv_free(s);
    for (int j = 0; j < NLOOPS; j++)
        loop_free(tl[j].l);
    for (int i = 0; i < NCONNS; i++)
        close(cfds[i]);
}

/* Connects to s's address; the connection's fd. */
static int
t_connect(const struct srv_cfg *cfg)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    assert_int_equal(
        connect(fd, (const struct sockaddr *)&cfg->addr, cfg->addr_len), 0);
    return fd;
}

/* Waits up to 2 s for *v to reach want. */
static void
t_wait_int(_Atomic int *v, int want)
{
    for (int k = 0; k < 2000 && atomic_load(v) < want; k++)
        usleep(1000);
    assert_int_equal(atomic_load(v), want);
}

/* conns_max: the connection over the cap is closed by srv before any
 * on_conn, on_refused hears of it with the count open, and a connection
 * done makes room for the next. */
static void
test_srv_conns_max(void **state)
{
    static struct tloop tl;
    struct srv_cfg cfg = {
        .name = "test",
        .nloops = 1,
        .sweep_ns = srv_sweep_period_ns(40000000ull, 0), /* 10 ms */
        .conns_max = 2,
        .on_conn = t_on_conn,
        .on_refused = t_on_refused,
        .on_sweep = t_on_sweep,
        .on_exit = t_on_exit,
    };
    struct mt_err err = {0};
    struct srv *s;
    int c[4];
    char b, want[64];

    (void)state;
    s = t_srv_new(&cfg, want, sizeof(want));
    memset(&tl, 0, sizeof(tl));
    tl.s = s;
    tl.l = loop_new(NULL, 0, &err);
    assert_non_null(tl.l);
    loop_set_before_sleep(tl.l, t_before_sleep, &tl);
    assert_int_equal(srv_loop_attach(s, 0, tl.l, &tl, &err), 0);
    assert_int_equal(srv_start(s, &err), 0);
    c[0] = t_connect(&cfg);
    t_wait_int(&tl.n, 1);
    c[1] = t_connect(&cfg);
    t_wait_int(&tl.n, 2);
    assert_int_equal(srv_conns_open(s), 2);
    c[2] = t_connect(&cfg);
    t_wait_int(&tl.refused, 1);
    assert_int_equal(atomic_load(&tl.refused_open), 2);
    assert_int_equal(read(c[2], &b, 1), 0); /* closed by srv */
    assert_int_equal(atomic_load(&tl.n), 2);
    assert_int_equal(srv_conns_open(s), 2);
    atomic_store(&tl.drop, 1); /* the sweep closes one: room for one */
    for (int k = 0; k < 2000 && srv_conns_open(s) != 1; k++)
        usleep(1000);
    assert_int_equal(srv_conns_open(s), 1);
    c[3] = t_connect(&cfg);
    t_wait_int(&tl.n, 3);
    assert_int_equal(atomic_load(&tl.refused), 1);
    assert_int_equal(srv_conns_open(s), 2);
    srv_stop(s);
    srv_join(s);
    assert_int_equal(srv_conns_open(s), 0);
    srv_free(s);
    loop_free(tl.l);
    for (int i = 0; i < 4; i++)
        close(c[i]);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_srv_hand_fifo_bound_free),
        cmocka_unit_test(test_srv_hand_threads_in_order),
        cmocka_unit_test(test_srv_sweep_period_ns),
        cmocka_unit_test(test_srv_loops_count),
        cmocka_unit_test(test_srv_spread_sweep_stop),
        cmocka_unit_test(test_srv_conns_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
