/*
 * test_loop_fd.c -- core/loop.c's fd watching: readiness on socketpairs
 * (add/mod/del, bounds, EOF), stale events of fds deleted during a batch,
 * edge-triggered fds (LOOP_EDGE) reported once per new arrival, and
 * LOOP_RDHUP (a FIN behind data reported only to an fd that asked),
 * LOOP_PRI (TCP urgent data; recv stops short at its mark).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/err.h"
#include "core/loop.h"

struct io_state {
    struct loop *l;
    int fds[4];
    int reads, writes, errors;
    int del_other; /* fd to delete from the callback, -1 none */
    char got[16];
};

static void
on_io(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct io_state *s = arg;
    if (ev & LOOP_READ) {
        ssize_t n = read(fd, s->got, sizeof(s->got) - 1);
        if (n > 0)
            s->got[n] = 0;
        s->reads++;
    }
    if (ev & LOOP_WRITE)
        s->writes++;
    if (ev & LOOP_ERROR)
        s->errors++;
    if (s->del_other >= 0) {
        loop_fd_del(l, s->del_other);
        s->del_other = -1;
    }
}

static void
test_loop_fd_readiness_socketpair(void **state)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 64, &err);
    struct io_state s = {0};
    int sp[2];

    assert_non_null(l);
    s.del_other = -1;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
    assert_int_equal(loop_fd_add(l, sp[0], LOOP_READ, on_io, &s), 0);
    assert_int_equal(loop_fd_add(l, sp[0], LOOP_READ, on_io, &s), -EEXIST);
    assert_int_equal(loop_fd_add(l, 64, LOOP_READ, on_io, &s), MT_ELIMIT);
    assert_int_equal(loop_fd_mod(l, sp[1], LOOP_READ), -ENOENT);

    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(s.reads, 0); /* nothing written yet */
    assert_int_equal(write(sp[1], "ping", 4), 4);
    assert_int_equal(loop_run_once(l, UINT64_MAX), 0); /* wakes on data */
    assert_int_equal(s.reads, 1);
    assert_string_equal(s.got, "ping");

    assert_int_equal(loop_fd_mod(l, sp[0], LOOP_READ | LOOP_WRITE), 0);
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(s.writes, 1); /* socket buffer has room */
    assert_int_equal(s.reads, 1);
    assert_int_equal(loop_fd_mod(l, sp[0], 0), 0);
    assert_int_equal(write(sp[1], "x", 1), 1);
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(s.reads + s.writes, 2); /* nothing watched */

    assert_int_equal(loop_fd_mod(l, sp[0], LOOP_READ), 0);
    close(sp[1]);
    assert_int_equal(loop_run_once(l, UINT64_MAX), 0);
    assert_int_equal(s.reads, 2); /* "x" then EOF on a later read */
    loop_fd_del(l, sp[0]);
    loop_fd_del(l, sp[0]); /* unknown: ignored */
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(s.reads, 2);
    close(sp[0]);
    loop_free(l);
}

static void
on_io_count(struct loop *l, int fd, void *arg, unsigned ev)
{
    int *n = arg;

    (void)l;
    (void)fd;
    if (ev & LOOP_READ)
        (*n)++; /* does not read: the fd stays readable */
}

/* Level-triggered, an undrained fd is reported at every iteration; with
 * LOOP_EDGE only when new data arrives. */
static void
test_loop_fd_edge_triggered(void **state)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 64, &err);
    int lt[2], et[2], nlt = 0, net = 0, i;

    (void)state;
    assert_non_null(l);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, lt), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, et), 0);
    assert_int_equal(loop_fd_add(l, lt[0], LOOP_READ, on_io_count, &nlt), 0);
    assert_int_equal(
        loop_fd_add(l, et[0], LOOP_READ | LOOP_EDGE, on_io_count, &net), 0);
    assert_int_equal(write(lt[1], "a", 1), 1);
    assert_int_equal(write(et[1], "a", 1), 1);
    for (i = 0; i < 3; i++)
        assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(nlt, 3);
    assert_int_equal(net, 1);
    assert_int_equal(write(et[1], "b", 1), 1); /* a new edge */
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(net, 2);
    assert_int_equal(loop_fd_mod(l, et[0], LOOP_READ), 0); /* back to LT */
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(net, 4);
    loop_fd_del(l, lt[0]);
    loop_fd_del(l, et[0]);
    close(lt[0]);
    close(lt[1]);
    close(et[0]);
    close(et[1]);
    loop_free(l);
}

static void
on_io_events(struct loop *l, int fd, void *arg, unsigned ev)
{
    unsigned *seen = arg;
    (void)l;
    (void)fd;
    *seen |= ev;
}

/* LOOP_RDHUP: a FIN behind data is reported (edge-triggered, with the
 * data's LOOP_READ) only to an fd that asked for it. */
static void
test_loop_fd_rdhup(void **state)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 64, &err);
    int a[2], b[2];
    unsigned ea = 0, eb = 0;
    char buf[8];

    (void)state;
    assert_non_null(l);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
    assert_int_equal(loop_fd_add(l, a[0], LOOP_READ | LOOP_EDGE | LOOP_RDHUP,
                                 on_io_events, &ea),
                     0);
    assert_int_equal(
        loop_fd_add(l, b[0], LOOP_READ | LOOP_EDGE, on_io_events, &eb), 0);
    assert_int_equal(write(a[1], "x", 1), 1);
    assert_int_equal(write(b[1], "x", 1), 1);
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(ea, LOOP_READ); /* data, no FIN yet */
    assert_int_equal(eb, LOOP_READ);
    ea = eb = 0;
    assert_int_equal(shutdown(a[1], SHUT_WR), 0);
    assert_int_equal(shutdown(b[1], SHUT_WR), 0);
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(ea, LOOP_READ | LOOP_RDHUP);
    assert_int_equal(eb, LOOP_READ);
    ea = 0;
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(ea, 0); /* edge: not reported again */
    assert_int_equal(read(a[0], buf, sizeof(buf)), 1);
    assert_int_equal(read(a[0], buf, sizeof(buf)), 0);
    assert_int_equal(loop_fd_mod(l, a[0], LOOP_READ), 0); /* LT, no RDHUP */
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(ea, LOOP_READ);
    loop_fd_del(l, a[0]);
    loop_fd_del(l, b[0]);
    close(a[0]);
    close(a[1]);
    close(b[0]);
    close(b[1]);
    loop_free(l);
}

/* A connected TCP pair on 127.0.0.1: fds[0] accepted, fds[1] connected. */
static void
tcp_pair(int fds[2])
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(lfd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(lfd, 1), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    fds[1] = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(fds[1], (struct sockaddr *)&sa, sizeof(sa)), 0);
    fds[0] = accept(lfd, NULL, NULL);
    assert_true(fds[0] >= 0);
    close(lfd);
}

/* LOOP_PRI: TCP urgent data is reported (edge-triggered, with LOOP_READ)
 * only to an fd that asked; and why an edge-triggered reader needs it:
 * recv() stops short at the urgent mark with bytes queued behind it. */
static void
test_loop_fd_pri(void **state)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 64, &err);
    int a[2], b[2], one = 1;
    unsigned ea = 0, eb = 0;
    char buf[8];

    (void)state;
    assert_non_null(l);
    tcp_pair(a);
    tcp_pair(b);
    assert_int_equal(
        setsockopt(a[0], SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)), 0);
    assert_int_equal(loop_fd_add(l, a[0], LOOP_READ | LOOP_EDGE | LOOP_PRI,
                                 on_io_events, &ea),
                     0);
    assert_int_equal(
        loop_fd_add(l, b[0], LOOP_READ | LOOP_EDGE, on_io_events, &eb), 0);
    assert_int_equal(send(a[1], "abc", 3, MSG_OOB), 3); /* mark: 'c' */
    assert_int_equal(send(b[1], "abc", 3, MSG_OOB), 3);
    for (int i = 0; i < 50 && (ea == 0 || eb == 0); i++)
        assert_int_equal(loop_run_once(l, 10000000u), 0);
    assert_int_equal(ea, LOOP_READ | LOOP_PRI);
    assert_int_equal(eb, LOOP_READ);
    /* a short read with a byte still queued (inline, behind the mark) */
    assert_int_equal(recv(a[0], buf, sizeof(buf), 0), 2);
    ea = 0;
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(ea, 0); /* edge: no new event for the queued byte */
    assert_int_equal(recv(a[0], buf, sizeof(buf), MSG_DONTWAIT), 1);
    assert_int_equal(buf[0], 'c');
    loop_fd_del(l, a[0]);
    loop_fd_del(l, b[0]);
    for (int i = 0; i < 2; i++) {
        close(a[i]);
        close(b[i]);
    }
    loop_free(l);
}

static void
test_loop_fd_deleted_in_batch_not_delivered(void **state)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 64, &err);
    struct io_state s1 = {0}, s2 = {0};
    int a[2], b[2];

    assert_non_null(l);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
    s1.del_other = b[0]; /* whichever runs first deletes the other */
    s2.del_other = a[0];
    assert_int_equal(loop_fd_add(l, a[0], LOOP_READ, on_io, &s1), 0);
    assert_int_equal(loop_fd_add(l, b[0], LOOP_READ, on_io, &s2), 0);
    assert_int_equal(write(a[1], "1", 1), 1);
    assert_int_equal(write(b[1], "2", 1), 1);
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(s1.reads + s2.reads, 1);
    loop_fd_del(l, a[0]);
    loop_fd_del(l, b[0]);
    for (int i = 0; i < 2; i++) {
        close(a[i]);
        close(b[i]);
    }
    loop_free(l);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loop_fd_readiness_socketpair),
        cmocka_unit_test(test_loop_fd_deleted_in_batch_not_delivered),
        cmocka_unit_test(test_loop_fd_edge_triggered),
        cmocka_unit_test(test_loop_fd_rdhup),
        cmocka_unit_test(test_loop_fd_pri),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
