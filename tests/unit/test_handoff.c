/*
 * test_handoff.c -- replay/handoff.c: FIFO order and peer addresses, the
 * bound (a full queue refuses and the caller keeps the fd), fds still
 * queued are closed by handoff_free, and a producer thread against a
 * consumer thread loses and duplicates nothing.
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
#include <string.h>
#include <unistd.h>

#include "replay/handoff.h"

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

static bool
fd_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

/* FIFO order with the peer of each, a full queue refuses without taking
 * the fd, and what is left is closed by handoff_free. */
static void
test_handoff_fifo_bound_free(void **state)
{
    static struct handoff h; /* 35 KB: not on the stack */
    struct sockaddr_storage ss;
    uint64_t t;
    int fds[HANDOFF_MAX + 1], fd;

    handoff_init(&h);
    assert_false(handoff_pop(&h, &fd, &ss, &t)); /* empty */
    for (int i = 0; i <= HANDOFF_MAX; i++) {
        fds[i] = dup(STDERR_FILENO);
        assert_true(fds[i] >= 0);
    }
    for (int i = 0; i < HANDOFF_MAX; i++) {
        ss = peer_port((uint16_t)(1000 + i));
        assert_true(handoff_push(&h, fds[i], &ss, 5000u + (uint64_t)i));
    }
    ss = peer_port(9);
    assert_false(handoff_push(&h, fds[HANDOFF_MAX], &ss, 1)); /* full */
    assert_true(fd_open(fds[HANDOFF_MAX]));                   /* still ours */
    close(fds[HANDOFF_MAX]);
    for (int i = 0; i < 3; i++) {
        assert_true(handoff_pop(&h, &fd, &ss, &t));
        assert_int_equal(fd, fds[i]);
        assert_int_equal(t, 5000 + i); /* the accept time travels along */
        assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port),
                         1000 + i);
        close(fd);
    }
    ss = peer_port(7); /* wraps around the ring */
    fd = dup(STDERR_FILENO);
    assert_true(handoff_push(&h, fd, &ss, 7));
    handoff_free(&h);
    for (int i = 3; i < HANDOFF_MAX; i++)
        assert_false(fd_open(fds[i]));
    assert_false(fd_open(fd));
}

struct race {
    struct handoff *h;
    int n;
};

static void *
producer(void *arg)
{
    struct race *r = arg;
    struct sockaddr_storage ss;

    for (int i = 0; i < r->n; i++) {
        ss = peer_port((uint16_t)i);
        while (!handoff_push(r->h, 100000 + i, &ss, (uint64_t)i))
            ; /* full: the consumer is behind */
    }
    return NULL;
}

/* One thread pushes 20 000 entries (fake fd numbers, never closed) while
 * this one pops: every entry arrives once, in order. */
static void
test_handoff_threads_in_order(void **state)
{
    static struct handoff h;
    struct race r = {&h, 20000};
    struct sockaddr_storage ss;
    uint64_t t;
    pthread_t th;
    int fd, next = 0;

    handoff_init(&h);
    assert_int_equal(pthread_create(&th, NULL, producer, &r), 0);
    while (next < r.n) {
        if (!handoff_pop(&h, &fd, &ss, &t))
            continue;
        assert_int_equal(fd, 100000 + next);
        assert_int_equal(t, next);
        assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port),
                         (uint16_t)next);
        next++;
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_false(handoff_pop(&h, &fd, &ss, &t));
    handoff_free(&h);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handoff_fifo_bound_free),
        cmocka_unit_test(test_handoff_threads_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
