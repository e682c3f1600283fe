/*
 * calibrate_herd.c -- the herd model's wake-up walk, measured (see
 * calibrate_herd.h).  Linux: a completed handshake calls the listening
 * socket's sk_data_ready (sock_def_readable), which walks its wait queue:
 * one ep_poll_callback per epoll instance watching it, each waking the
 * process asleep in that instance's epoll_wait.
 */
#include "calibrate_herd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/mem.h"

#define WALK_ROUNDS 1000
#define WALK_P 256

static double
proc_cpu_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* A worker: waits in epoll_wait on its own instance, accepts what it can
 * (non-blocking: the others get EAGAIN), until killed. */
static void
walk_child(int l)
{
    struct epoll_event ev = {.events = EPOLLIN}, out;
    int e = epoll_create1(0);

    if (e < 0 || epoll_ctl(e, EPOLL_CTL_ADD, l, &ev) < 0)
        _exit(1);
    for (;;) {
        if (epoll_wait(e, &out, 1, -1) > 0) {
            int c = accept4(l, NULL, NULL, SOCK_NONBLOCK);
            if (c >= 0)
                close(c);
        }
    }
}

/* Parent CPU per connect (ns) with p waiters; -1 on failure. */
static double
walk_cpu(int l, const struct sockaddr_in *a, int p)
{
    pid_t *pids = mt_calloc((size_t)p, sizeof(*pids));
    struct timespec gap = {0, 500000}, settle = {0, 200000000};
    double c0, cpu = -1;
    int n = 0;

    if (pids == NULL)
        return -1;
    for (; n < p; n++) {
        pids[n] = fork();
        if (pids[n] < 0)
            goto out;
        if (pids[n] == 0)
            walk_child(l);
    }
    nanosleep(&settle, NULL); /* every child asleep in epoll_wait */
    c0 = proc_cpu_ns();
    for (int i = 0; i < WALK_ROUNDS; i++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0 || connect(s, (const struct sockaddr *)a, sizeof(*a)) < 0) {
            if (s >= 0)
                close(s);
            goto out;
        }
        close(s);
        nanosleep(&gap, NULL); /* the woken workers go back to sleep */
    }
    cpu = (proc_cpu_ns() - c0) / WALK_ROUNDS;
out:
    for (int i = 0; i < n; i++)
        kill(pids[i], SIGKILL);
    for (int i = 0; i < n; i++)
        waitpid(pids[i], NULL, 0);
    mt_free(pids);
    return cpu;
}

int
sim_calibrate_walk(double *walk_ns, double *base_ns)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), rc = -1;
    double one, many;

    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(l, 4096) < 0 || getsockname(l, (struct sockaddr *)&a, &al) < 0)
        goto out;
    one = walk_cpu(l, &a, 1);
    many = one < 0 ? -1 : walk_cpu(l, &a, WALK_P);
    if (one < 0 || many < 0)
        goto out;
    *base_ns = one;
    *walk_ns = (many - one) / (WALK_P - 1);
    rc = 0;
out:
    if (l >= 0)
        close(l);
    return rc;
}
