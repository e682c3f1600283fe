/*
 * calibrate_preempt.c -- wake-up preemption at a send, measured (see
 * calibrate_preempt.h).  Linux: on loopback TCP the data is queued on the
 * receiver inside send(2) and its sk_data_ready (sock_def_readable) wakes
 * the receiver with WF_SYNC.  select_task_rq_fair -> wake_affine ->
 * wake_affine_idle returns the waker's CPU for a sync wake-up when the
 * waker is the only task there; select_idle_sibling then moves the wakee
 * to an idle CPU if it finds one; otherwise it is queued on the waker's CPU
 * and the wake-up preemption check (EEVDF: the wakee is picked first)
 * marks the sender for rescheduling.  The sender is switched out on its way
 * back to user space: still inside the syscall, so a Python thread has
 * released the GIL (Py_BEGIN_ALLOW_THREADS around send()).  Counted with
 * getrusage(RUSAGE_THREAD) ru_nivcsw around each send.
 */
#include "calibrate_preempt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/mem.h"

#define MSG_LEN 100

struct pre_sample {
    double us;   /* wall time of send(2) */
    bool pre;    /* involuntarily switched out during it */
    bool rblock; /* the following recv(2) blocked */
};

static void
echo_child(int s)
{
    char buf[MSG_LEN];

    for (;;) {
        ssize_t n = recv(s, buf, sizeof(buf), MSG_WAITALL);
        if (n <= 0 || send(s, buf, (size_t)n, 0) != n)
            _exit(0);
    }
}

static void
spin_us(double us)
{
    uint64_t end = mt_now_ns() + (uint64_t)(us * 1e3);

    while (mt_now_ns() < end)
        ;
}

/* Loopback TCP pair: *c (ours) and *s (the child's). */
static int
tcp_pair(int *c, int *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, rc = -1;

    *c = socket(AF_INET, SOCK_STREAM, 0);
    *s = -1;
    if (l < 0 || *c < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(l, 1) < 0 || getsockname(l, (struct sockaddr *)&a, &al) < 0 ||
        connect(*c, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        (*s = accept(l, NULL, NULL)) < 0)
        goto out;
    setsockopt(*c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(*s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    rc = 0;
out:
    if (l >= 0)
        close(l);
    if (rc < 0 && *c >= 0)
        close(*c);
    return rc;
}

/* The CPUs for the sender and the child; -1: leave alone. */
static int
pick_cpus(int pin, int *mine, int *peer)
{
    cpu_set_t set;
    int first = -1, second = -1;

    *mine = *peer = -1;
    if (pin == SIM_CAL_PIN_NONE)
        return 0;
    if (sched_getaffinity(0, sizeof(set), &set) < 0)
        return -1;
    for (int i = 0; i < CPU_SETSIZE && second < 0; i++)
        if (CPU_ISSET(i, &set)) {
            if (first < 0)
                first = i;
            else
                second = i;
        }
    if (second < 0)
        return errno = EINVAL, -1;
    *mine = first;
    *peer = pin == SIM_CAL_PIN_SAME ? first : second;
    return 0;
}

static int
pin_to(int cpu)
{
    cpu_set_t set;

    if (cpu < 0)
        return 0;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set);
}

/* The sender's loop; fills v[0..rounds).  -1 on a socket error. */
static int
pre_loop(int c, int rounds, double gap_us, struct pre_sample *v)
{
    char buf[MSG_LEN] = {0};
    struct rusage r0, r1, r2;

    for (int i = 0; i < rounds; i++) {
        spin_us(gap_us);
        getrusage(RUSAGE_THREAD, &r0);
        uint64_t t0 = mt_now_ns();
        if (send(c, buf, MSG_LEN, 0) != MSG_LEN)
            return -1;
        uint64_t t1 = mt_now_ns();
        getrusage(RUSAGE_THREAD, &r1);
        if (recv(c, buf, MSG_LEN, MSG_WAITALL) != MSG_LEN)
            return -1;
        getrusage(RUSAGE_THREAD, &r2);
        v[i].us = (double)(t1 - t0) / 1e3;
        v[i].pre = r1.ru_nivcsw != r0.ru_nivcsw;
        v[i].rblock = r2.ru_nvcsw != r1.ru_nvcsw;
    }
    return 0;
}

static int
cmp_sample(const void *a, const void *b)
{
    double x = ((const struct pre_sample *)a)->us,
           y = ((const struct pre_sample *)b)->us;
    return x < y ? -1 : x > y;
}

/* Shares and means of v (sorted here; the top 1 % of each class's times
 * left out of its mean: a shared host's stalls). */
static void
pre_summarise(struct pre_sample *v, int n, struct sim_cal_preempt *out)
{
    double sum[2] = {0, 0};
    int cnt[2] = {0, 0}, blk[2] = {0, 0}, used[2] = {0, 0}, keep[2];

    qsort(v, (size_t)n, sizeof(*v), cmp_sample);
    for (int i = 0; i < n; i++) {
        cnt[v[i].pre]++;
        blk[v[i].pre] += v[i].rblock;
    }
    for (int k = 0; k < 2; k++)
        keep[k] = cnt[k] - cnt[k] / 100;
    for (int i = 0; i < n; i++) { /* ascending: the first `keep` of each */
        int k = v[i].pre;
        if (used[k] < keep[k])
            sum[k] += v[i].us, used[k]++;
    }
    out->p = (double)cnt[1] / n;
    out->recv_block_pre = cnt[1] ? (double)blk[1] / cnt[1] : 0;
    out->recv_block_no = cnt[0] ? (double)blk[0] / cnt[0] : 0;
    out->send_pre_us = used[1] ? sum[1] / used[1] : 0;
    out->send_no_us = used[0] ? sum[0] / used[0] : 0;
}

int
sim_calibrate_preempt(int pin, int rounds, double gap_us,
                      struct sim_cal_preempt *out)
{
    struct pre_sample *v = mt_calloc((size_t)rounds, sizeof(*v));
    cpu_set_t saved;
    struct rusage ru;
    int c = -1, s = -1, mine, peer, rc = -1, st;
    pid_t pid = -1;

    memset(out, 0, sizeof(*out));
    if (v == NULL || rounds < 1)
        return mt_free(v), errno = ENOMEM, -1;
    if (sched_getaffinity(0, sizeof(saved), &saved) < 0 ||
        pick_cpus(pin, &mine, &peer) < 0 || tcp_pair(&c, &s) < 0)
        goto out;
    pid = fork();
    if (pid < 0)
        goto out;
    if (pid == 0) {
        close(c);
        if (pin_to(peer) < 0)
            _exit(1);
        echo_child(s);
    }
    close(s);
    s = -1;
    if (pin_to(mine) < 0)
        goto out;
    /* a few rounds first: the child is running and settled */
    if (pre_loop(c, rounds < 50 ? rounds : 50, gap_us, v) < 0 ||
        pre_loop(c, rounds, gap_us, v) < 0)
        goto out;
    pre_summarise(v, rounds, out);
    out->rounds = rounds;
    rc = 0;
out:
    if (c >= 0)
        close(c); /* the child sees EOF and exits */
    if (s >= 0)
        close(s);
    if (pid > 0 && wait4(pid, &st, 0, &ru) == pid && rc == 0)
        out->peer_cpu_us =
            ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e6 /
                (rounds + (rounds < 50 ? rounds : 50)) +
            ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) /
                (rounds + (rounds < 50 ? rounds : 50));
    sched_setaffinity(0, sizeof(saved), &saved);
    mt_free(v);
    return rc;
}

static void
print_detail(FILE *out, const struct sim_cal_preempt *r)
{
    fprintf(out,
            "; %d sends; a preempted send took %.1f us, another %.1f us; "
            "the echo's CPU per message %.1f us; the next recv blocked after "
            "%.0f %% of the preempted sends, %.0f %% of the others\n",
            r->rounds, r->send_pre_us, r->send_no_us, r->peer_cpu_us,
            100.0 * r->recv_block_pre, 100.0 * r->recv_block_no);
}

void
sim_calibrate_preempt_print(FILE *out, const struct sim_cal_preempt *pre)
{
    const struct sim_cal_preempt *f = &pre[SIM_CAL_PIN_NONE],
                                 *s = &pre[SIM_CAL_PIN_SAME],
                                 *x = &pre[SIM_CAL_PIN_SPLIT];

    if (f->rounds > 0) {
        fprintf(out,
                "send_preempt_p = %.4f [measured] one thread loops (%.0f us "
                "busy spin, send(2) of 100 B on loopback TCP to a forked echo "
                "process, recv(2) of the reply), left where the scheduler "
                "puts it: share of sends during which it was involuntarily "
                "switched out (RUSAGE_THREAD ru_nivcsw)",
                f->p, SIM_CAL_PREEMPT_GAP_US);
        print_detail(out, f);
    } else {
        fprintf(out, "# send_preempt_p: not measured\n");
    }
    if (s->rounds > 0) {
        fprintf(out,
                "send_preempt_busy_p = %.4f [measured] the same loop with "
                "the thread and the echo pinned to one CPU (where a sync "
                "wake-up lands when no CPU is idle): share of sends "
                "preempted",
                s->p);
        print_detail(out, s);
    } else {
        fprintf(out, "# send_preempt_busy_p: not measured (needs 2 CPUs)\n");
    }
    if (x->rounds > 0) {
        fprintf(out,
                "# check, the same loop pinned to two CPUs (remote wake-up): "
                "preempted %.4f",
                x->p);
        print_detail(out, x);
    }
}
