/*
 * calibrate.c -- `mtrace calibrate`: host facts for mtrace sim.
 *
 *   cores          sched_getaffinity(2) CPU count (what this process may use)
 *   wake_us/_cv    cold wake-up: a thread blocked in read(2) for 200 us (so
 *                  its core may go idle, as for a thread waiting for a reply
 *                  or the GIL) is woken by a write(2) carrying a timestamp;
 *                  write -> reader running: mean and cv of the samples
 *                  less their top 1 % (robust on a busy host).  Impossible
 *                  samples (reader's clock behind the stamp, over 1 s) are
 *                  rejected (sim_calibrate_wake_sample); more than 1 % of
 *                  them fails the run.  The
 * hot figure (pipe ping-pong half round trip minus one write+read) is printed
 * as a comment. ctx_cpu_us     process CPU time (CLOCK_PROCESS_CPUTIME_ID) per
 * hand-off of that ping-pong, minus the write+read pair: the CPU cost of one
 * block/wake cycle sys_us         CPU of one small send(2) or recv(2) on a
 * loopback TCP connection, both done by one thread (nothing blocks)
 *   (comments)     the extra thread CPU of a Python workload when 4
 *                  threads contend for the GIL, and the contended idle gap
 *   gil_handoff_us sim/calibrate/gil_pingpong.py under /usr/bin/python3:
 *                  the cold 2-thread hand-off: a thread blocked 200 us on a
 *                  threading.Lock is released by another, which then blocks
 *                  itself (dropping the GIL); release -> the woken thread
 *                  running Python (mean less the top 1 %).  That is the path
 *                  of a signalled GIL waiter in Python/ceval_gil.h (3.11):
 *                  drop_gil's COND_SIGNAL, a futex wake, the waiter's return
 *                  through pthread_cond_timedwait re-locking gil->mutex and
 *                  its re-check of gil->locked, with nothing else competing.
 *                  The 4-thread contended idle gap (round 1-6's figure) is
 *                  printed as a comment: it also holds the core queueing,
 *                  the other threads' turns (the model adds those
 *                  itself) and probably gaps with no waiter yet (round 7,
 *                  docs/sim-history.md).
 *   gil_wake_cpu_us  gil_pingpong.py contended_cpu(): CPU of one block/wake
 *                  cycle of a GIL waiter (4 and 10 threads spread over the
 *                  cores, Python segment + sendall/recv to an echo process;
 *                  thread CPU of the send+recv part over 1 thread's, per
 *                  extra voluntary context switch)
 *   gil_xcore_cpu_us  gil_pingpong.py xcore_cpu(): extra CPU of a loop
 *                  iteration run on the other core than the previous one
 *   gil_switch_stretch  gil_pingpong.py: mean wall time of a fixed Python
 *                  burst when 3 threads take turns on the GIL (time.sleep
 *                  between bursts) over the same with 1 thread, minus 1
 *                  (median of 7 alternating phases; never below 0)
 *   (comment)      bg_load, other processes' CPU: /proc/stat busy (user, nice,
 *                  system, irq, softirq, steal) of all CPUs over 2 s while
 *                  calibrate sleeps, in cores (a snapshot: the load of a
 *                  shared host changes)
 *   (comment)      /proc/loadavg when calibrating
 *   (comment)      herd.walk_us for the herd model (calibrate_herd.c)
 *   gil_mutex_signal_us  calibrate_gilmutex.c: how long drop_gil's
 *                  COND_SIGNAL holds gil->mutex with a waiter asleep (C
 *                  threads on CPython 3.11's protocol); the share of woken
 *                  waiters that then block re-locking it (comment)
 *   wake_busy_us   calibrate_place.c: a GIL-style hand-over between two C
 *                  threads pinned to one CPU, signal -> wakee running; the
 *                  same pinned to two CPUs (the wakee's idle) as a comment
 *   send_preempt_p, send_preempt_busy_p  calibrate_preempt.c: share of a
 *                  thread's loopback sends during which the echo process it
 *                  woke preempted it (unpinned; both pinned to one CPU)
 *   ft_slowdown    ratio of gil_pingpong.py's cpu_loop_us under python3.13t
 *                  and under python3.13, when both exist
 * Output: a host facts file (scenario format, origin [measured]).
 */
#include "calibrate.h"
#include "calibrate_gilmutex.h"
#include "calibrate_idle.h"
#include "calibrate_place.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "calibrate_herd.h"
#include "calibrate_preempt.h"
#include "core/clock.h"
#include "core/mem.h"

#define PP_ROUNDS 20000
#define PP_BATCH 100

struct pp {
    int ab[2], ba[2]; /* pipes a->b, b->a */
    int rounds;
};

static void *
pp_other(void *arg)
{
    struct pp *p = arg;
    char c;

    for (int i = 0; i < p->rounds; i++) {
        if (read(p->ab[0], &c, 1) != 1 || write(p->ba[1], &c, 1) != 1)
            break;
    }
    return NULL;
}

static double
now_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Half-round-trip mean and cv (ns) and CPU per hand-off (ns). */
static int
pingpong(double *half_ns, double *cv, double *cpu_ns)
{
    struct pp p = {.rounds = PP_ROUNDS};
    pthread_t th;
    double sum = 0, ss = 0, cpu0, nb = PP_ROUNDS / PP_BATCH;
    double *b = mt_malloc((size_t)nb * sizeof(*b));
    char c = 'x';

    if (b == NULL || pipe(p.ab) < 0 || pipe(p.ba) < 0) {
        mt_free(b);
        return -1;
    }
    if (pthread_create(&th, NULL, pp_other, &p) != 0)
        return -1;
    cpu0 = now_cpu_ns();
    for (int k = 0; k < (int)nb; k++) {
        uint64_t t0 = mt_now_ns();
        for (int i = 0; i < PP_BATCH; i++)
            if (write(p.ab[1], &c, 1) != 1 || read(p.ba[0], &c, 1) != 1)
                return -1;
        b[k] = (double)(mt_now_ns() - t0) / (2.0 * PP_BATCH);
        sum += b[k];
    }
    *cpu_ns = (now_cpu_ns() - cpu0) / (2.0 * PP_ROUNDS);
    pthread_join(th, NULL);
    *half_ns = sum / nb;
    for (int k = 0; k < (int)nb; k++)
        ss += (b[k] - *half_ns) * (b[k] - *half_ns);
    *cv = sqrt(ss / nb) / *half_ns;
    close(p.ab[0]), close(p.ab[1]), close(p.ba[0]), close(p.ba[1]);
    mt_free(b);
    return 0;
}

#define COLD_ROUNDS 2000
#define COLD_IDLE_NS 200000
/* A mean cold wake-up above this (ns) means the reader waited for a core
 * other processes held: the host is overloaded (warned about). */
#define COLD_OVERLOAD_NS 1000000.0

struct cold {
    int fd[2];
    double v[COLD_ROUNDS]; /* accepted samples, ns */
    int n;
    int rejected; /* impossible samples (sim_calibrate_wake_sample) */
};

bool
sim_calibrate_wake_sample(uint64_t stamp_ns, uint64_t now_ns, double *ns)
{
    if (now_ns <= stamp_ns || now_ns - stamp_ns > SIM_CAL_WAKE_MAX_NS)
        return false;
    *ns = (double)(now_ns - stamp_ns);
    return true;
}

static void *
cold_reader(void *arg)
{
    struct cold *c = arg;
    uint64_t stamp;
    double d;

    for (int i = 0; i < COLD_ROUNDS; i++) {
        if (read(c->fd[0], &stamp, sizeof(stamp)) != (ssize_t)sizeof(stamp))
            break;
        if (sim_calibrate_wake_sample(stamp, mt_now_ns(), &d))
            c->v[c->n++] = d;
        else
            c->rejected++;
    }
    return NULL;
}

static int
cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/*
 * Trimmed mean and cv; see calibrate.h.
 */
void
sim_calibrate_trimmed_stats(double *v, int n, double cv_max, double *mean,
                            double *cv)
{
    double sum = 0, ss = 0;
    int k;

    qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
    k = n - n / 100;
    for (int i = 0; i < k; i++)
        sum += v[i];
    *mean = sum / k;
    for (int i = 0; i < k; i++)
        ss += (v[i] - *mean) * (v[i] - *mean);
    *cv = *mean > 0 ? fmin(sqrt(ss / k) / *mean, cv_max) : 0;
}

/* Cold wake-up: the reader has been blocked 200 us (its core may idle, as
 * a thread waiting for a reply or for the GIL does) when the writer sends
 * its timestamp; lognormal fit of write -> reader running (ns).  Fails
 * (-1, message on stderr) when more than 1 % of the samples were
 * impossible or the mean is not a plausible wake-up (0 < mean < 1 s). */
static int
cold_wake(double *mean_ns, double *cv, int *rejected)
{
    static struct cold c;
    pthread_t th;
    struct timespec idle = {0, COLD_IDLE_NS};

    if (pipe(c.fd) < 0 || pthread_create(&th, NULL, cold_reader, &c) != 0)
        return -1;
    for (int i = 0; i < COLD_ROUNDS; i++) {
        nanosleep(&idle, NULL);
        uint64_t stamp = mt_now_ns();
        if (write(c.fd[1], &stamp, sizeof(stamp)) != (ssize_t)sizeof(stamp))
            break;
    }
    pthread_join(th, NULL);
    close(c.fd[0]);
    close(c.fd[1]);
    if (c.rejected > COLD_ROUNDS / 100 || c.n < COLD_ROUNDS / 2) {
        fprintf(stderr,
                "mtrace calibrate: cold wake-up: %d of %d samples impossible "
                "(reader's clock behind the writer's stamp, or over 1 s); "
                "%d kept; the host's clocks disagree between CPUs\n",
                c.rejected, c.n + c.rejected, c.n);
        return -1;
    }
    *rejected = c.rejected;
    sim_calibrate_trimmed_stats(c.v, c.n, 10.0, mean_ns, cv);
    if (!(*mean_ns > 0 && *mean_ns < (double)SIM_CAL_WAKE_MAX_NS)) {
        fprintf(stderr,
                "mtrace calibrate: cold wake-up mean %.0f ns is not "
                "a wake-up; not written\n",
                *mean_ns);
        return -1;
    }
    return 0;
}

/* CPU (ns) of one small loopback send or recv. */
static int
syscall_cost(double *ns)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0),
        c = socket(AF_INET, SOCK_STREAM, 0), s = -1, one = 1;
    char buf[128] = {0};
    uint64_t t0;
    int rc = -1, n = 50000;

    if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(l, 1) < 0 || getsockname(l, (struct sockaddr *)&a, &al) < 0 ||
        connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        (s = accept(l, NULL, NULL)) < 0)
        goto out;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    t0 = mt_now_ns();
    for (int i = 0; i < n; i++)
        if (send(c, buf, 100, 0) != 100 ||
            recv(s, buf, 100, MSG_WAITALL) != 100)
            goto out;
    *ns = (double)(mt_now_ns() - t0) / (2.0 * n);
    rc = 0;
out:
    if (s >= 0)
        close(s);
    if (l >= 0)
        close(l);
    if (c >= 0)
        close(c);
    return rc;
}

/* CPU (ns) of one 1-byte pipe write plus read in one thread. */
static int
pipe_cost(double *ns)
{
    int fd[2], n = 50000;
    char c = 'x';
    uint64_t t0;

    if (pipe(fd) < 0)
        return -1;
    t0 = mt_now_ns();
    for (int i = 0; i < n; i++)
        if (write(fd[1], &c, 1) != 1 || read(fd[0], &c, 1) != 1)
            break;
    *ns = (double)(mt_now_ns() - t0) / n;
    close(fd[0]);
    close(fd[1]);
    return 0;
}

/* Runs script under python; fills the values of the keys it prints. */
struct pyfacts {
    double handoff, handoff_cv, cold, cold_cv, cpu_loop, switch_cpu, pp_switch,
        contended, switch_base, stretch, stretch_lo, stretch_hi, wake_cpu,
        wake_lo, wake_hi, take_cpu, take_unpinned, wake_vcsw, xcore, xcore_lo,
        xcore_hi, xcore_fixed;
    char ver[64];
};

static int
run_py(const char *python, const char *script, struct pyfacts *f_out)
{
    char cmd[1200], line[256], key[64], val[64];
    FILE *f;
    int got = 0;

    snprintf(cmd, sizeof(cmd), "'%s' '%s' 2>/dev/null", python, script);
    f = popen(cmd, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%63s %63s", key, val) != 2)
            continue;
        if (strcmp(key, "handoff_us") == 0)
            f_out->handoff = strtod(val, NULL), got++;
        else if (strcmp(key, "handoff_cv") == 0)
            f_out->handoff_cv = strtod(val, NULL);
        else if (strcmp(key, "handoff_cold_us") == 0)
            f_out->cold = strtod(val, NULL), got++;
        else if (strcmp(key, "handoff_cold_cv") == 0)
            f_out->cold_cv = strtod(val, NULL);
        else if (strcmp(key, "switch_cpu_us") == 0)
            f_out->switch_cpu = strtod(val, NULL);
        else if (strcmp(key, "pp_switch_cpu_us") == 0)
            f_out->pp_switch = strtod(val, NULL);
        else if (strcmp(key, "handoff_contended_us") == 0)
            f_out->contended = strtod(val, NULL);
        else if (strcmp(key, "switch_base_us") == 0)
            f_out->switch_base = strtod(val, NULL);
        else if (strcmp(key, "switch_stretch") == 0)
            f_out->stretch = strtod(val, NULL);
        else if (strcmp(key, "switch_stretch_min") == 0)
            f_out->stretch_lo = strtod(val, NULL);
        else if (strcmp(key, "switch_stretch_max") == 0)
            f_out->stretch_hi = strtod(val, NULL);
        else if (strcmp(key, "wake_cpu_us") == 0)
            f_out->wake_cpu = strtod(val, NULL);
        else if (strcmp(key, "wake_cpu_min") == 0)
            f_out->wake_lo = strtod(val, NULL);
        else if (strcmp(key, "wake_cpu_max") == 0)
            f_out->wake_hi = strtod(val, NULL);
        else if (strcmp(key, "take_cpu_us") == 0)
            f_out->take_cpu = strtod(val, NULL);
        else if (strcmp(key, "take_cpu_unpinned_us") == 0)
            f_out->take_unpinned = strtod(val, NULL);
        else if (strcmp(key, "wake_vcsw") == 0)
            f_out->wake_vcsw = strtod(val, NULL);
        else if (strcmp(key, "xcore_cpu_us") == 0)
            f_out->xcore = strtod(val, NULL);
        else if (strcmp(key, "xcore_min") == 0)
            f_out->xcore_lo = strtod(val, NULL);
        else if (strcmp(key, "xcore_max") == 0)
            f_out->xcore_hi = strtod(val, NULL);
        else if (strcmp(key, "xcore_fixed_us") == 0)
            f_out->xcore_fixed = strtod(val, NULL);
        else if (strcmp(key, "cpu_loop_us") == 0)
            f_out->cpu_loop = strtod(val, NULL);
        else if (strcmp(key, "py_version") == 0)
            snprintf(f_out->ver, sizeof(f_out->ver), "%s", val);
    }
    return pclose(f) == 0 && got == 2 ? 0 : -1;
}

static const char *
find_script(const char *dir, char *buf, size_t cap)
{
    char exe[512];
    ssize_t n;

    if (dir) {
        snprintf(buf, cap, "%s/gil_pingpong.py", dir);
        return access(buf, R_OK) == 0 ? buf : NULL;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(buf, cap, "%s/sim/calibrate/gil_pingpong.py", exe);
        if (access(buf, R_OK) == 0)
            return buf;
        snprintf(buf, cap, "%s/../share/mtrace/gil_pingpong.py", exe);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    snprintf(buf, cap, "sim/calibrate/gil_pingpong.py");
    return access(buf, R_OK) == 0 ? buf : NULL;
}

static int
cores_online(void)
{
    cpu_set_t set;

    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        return CPU_COUNT(&set);
    return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

static const char cal_usage[] =
    "usage: mtrace calibrate [-o FILE] [--python PATH] [--python-ft PATH] "
    "[--scripts DIR] [--idle-ab]\n"
    "Measures the host facts mtrace sim needs and writes them as a host facts\n"
    "file (read with mtrace sim --host FILE): cores, wake-up latency and its "
    "CPU,\n"
    "loopback syscall CPU, how often a loopback send is preempted by the "
    "process\n"
    "it wakes, CPython's GIL hand-off and take-over cost by Python\n"
    "microbenchmarks (incl. the CPU a loop iteration pays when it runs on\n"
    "the other core than the previous one: gil_xcore_cpu_us), how long\n"
    "drop_gil holds gil->mutex while it signals a waiter "
    "(gil_mutex_signal_us,\n"
    "C threads on CPython 3.11's mutex/cond protocol), and the CPU\n"
    "other processes take.\n"
    "  -o FILE          write there (default: stdout)\n"
    "  --python PATH    the GIL CPython to measure (default /usr/bin/python3)\n"
    "  --python-ft PATH a free-threaded CPython (default: python3.13t if on "
    "PATH)\n"
    "  --scripts DIR    where gil_pingpong.py is (default: beside the binary)\n"
    "  --idle-ab        also measure idle_wake_cpu_us: a Python loop with a\n"
    "                   blocking round trip, idle CPUs halting vs polling\n"
    "                   (holds a PM QoS request of 0, GLOBAL, ~1 s in all)\n"
    "  -h, --help       this help\n"
    "Takes about 25 seconds.  Exit status: 0 ok, 1 measurement failed, 2 bad "
    "usage.\n";

struct cal_opts {
    const char *out_path, *python, *python_ft, *dir;
    int out_fd;       /* -o, opened before measuring */
    bool out_created; /* by us: removed if nothing is written */
    bool idle_ab;     /* --idle-ab */
};

struct facts {
    double half, cv, cpu, sys_ns, pipe_ns, cold_ns, cold_cv, bg_load;
    double walk_ns, walk_base_ns; /* NAN: not measured */
    double loadavg;               /* 1-minute load average, NAN: unknown */
    int cold_rejected;
    struct pyfacts py, ft;
    struct sim_cal_preempt pre[3]; /* by enum sim_cal_pin; rounds 0: not
                                      measured */
    struct sim_cal_gilmutex gm;    /* rounds 0: not measured */
    struct sim_cal_place place[SIM_CAL_PLACE_N]; /* rounds 0: not measured */
    struct sim_cal_idle idle;                    /* pairs 0: not measured */
};

/* Returns -1 to go on, or an exit status. */
static int
cal_parse(int argc, char **argv, struct cal_opts *o)
{
    static const struct option lo[] = {
        {"python", 1, 0, 'p'}, {"python-ft", 1, 0, 'f'}, {"scripts", 1, 0, 's'},
        {"help", 0, 0, 'h'},   {"idle-ab", 0, 0, 'i'},   {0, 0, 0, 0}};
    int c;

    o->python = "/usr/bin/python3";
    optind = 1;
    opterr = 0; /* one line of our own instead of getopt's */
    while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
        if (c == 'o')
            o->out_path = optarg;
        else if (c == 'p')
            o->python = optarg;
        else if (c == 'f')
            o->python_ft = optarg;
        else if (c == 's')
            o->dir = optarg;
        else if (c == 'i')
            o->idle_ab = true;
        else if (c == 'h')
            return fputs(cal_usage, stdout), 0;
        else
            return fprintf(stderr,
                           c == ':' ? "mtrace calibrate: option '%s' needs a "
                                      "value; run 'mtrace calibrate --help'\n"
                                    : "mtrace calibrate: unknown option '%s'; "
                                      "run 'mtrace calibrate --help'\n",
                           argv[optind - 1]),
                   2;
    }
    if (optind < argc)
        return fprintf(stderr, "mtrace calibrate: unexpected argument '%s'\n",
                       argv[optind]),
               2;
    return -1;
}

/* gil_wake_cpu_us (gil_pingpong.py contended_cpu()). */
static void
cal_write_wake_cpu(FILE *out, const struct facts *f, const struct cal_opts *o)
{
    if (isnan(f->py.wake_cpu))
        return;
    fprintf(out,
            "gil_wake_cpu_us = %.3f [measured] %s %s: CPU per block/wake "
            "cycle of a GIL waiter: 4 and 10 threads spread over the cores, "
            "each looping (~30 us Python, sendall + recv of 100 bytes to an "
            "echo process), send+recv thread CPU per iteration over 1 "
            "thread's / voluntary context switches per iteration over 1 "
            "thread's; median of 10 (range %.1f..%.1f)\n",
            fmax(f->py.wake_cpu, 0.0), o->python, f->py.ver, f->py.wake_lo,
            f->py.wake_hi);
    fprintf(out,
            "# same run, per GIL take: %.3f us CPU, %.2f extra voluntary "
            "switches; 10 threads left where the scheduler puts them: "
            "%.3f us per take\n",
            f->py.take_cpu, f->py.wake_vcsw, f->py.take_unpinned);
    if (isnan(f->py.xcore))
        return;
    fprintf(out,
            "gil_xcore_cpu_us = %.3f [measured] %s %s: extra thread CPU of "
            "an iteration (~%.0f us: Python, sendall + recv of 100 bytes on "
            "loopback TCP to an echo process, Python) run on the other core "
            "than the previous one, over the same on one core; one thread, "
            "median of 5 phase pairs (range %.1f..%.1f); the generic "
            "workload's working set: a driver's can be larger "
            "(docs/sim-model.md)%s\n",
            fmax(f->py.xcore, 0.0), o->python, f->py.ver, f->py.xcore_fixed,
            f->py.xcore_lo, f->py.xcore_hi,
            f->py.xcore < 0 ? "; measured below 0, written as 0" : "");
}

/* gil_switch_stretch and the host's load average (comment). */
static void
cal_write_stretch(FILE *out, const struct facts *f, const struct cal_opts *o)
{
    char la[128] = "";
    FILE *lf = fopen("/proc/loadavg", "r");

    if (lf) {
        if (fgets(la, sizeof(la), lf) == NULL)
            la[0] = '\0';
        la[strcspn(la, "\n")] = '\0';
        fclose(lf);
    }
    if (!isnan(f->py.stretch))
        fprintf(out,
                "gil_switch_stretch = %.4f [measured] %s %s: a ~%.0f us Python "
                "burst between time.sleep(0.0003) calls takes (1 + this) "
                "times as long (wall, mean less top 1%%) when 3 threads take "
                "turns on the GIL as when one runs alone; median of 7 "
                "alternating phases (range %+.3f..%+.3f)%s\n",
                fmax(f->py.stretch, 0.0), o->python, f->py.ver,
                f->py.switch_base, f->py.stretch_lo, f->py.stretch_hi,
                f->py.stretch < 0 ? "; measured below 0, written as 0" : "");
    if (!isnan(f->bg_load))
        fprintf(out,
                "# bg_load %.3f: cores' worth of CPU other processes used "
                "(/proc/stat busy incl. steal, all CPUs, 2 s while calibrate "
                "slept); not applied (docs/sim-model.md: with FIFO cores the "
                "term delays the sequential run too much); --set bg_load=X\n",
                fmin(f->bg_load, (double)cores_online() * 0.95));
    fprintf(out, "# load while calibrating (/proc/loadavg): %s\n",
            la[0] ? la : "unknown");
}

static void
cal_write(FILE *out, const struct facts *f, const struct cal_opts *o)
{
    fprintf(out, "# mtrace calibrate: host facts for mtrace sim --host (not "
                 "deterministic: measured)\n");
    fprintf(out, "cores = %d [measured] sched_getaffinity CPU count\n",
            cores_online());
    fprintf(out,
            "sys_us = %.3f [measured] CPU of one 100-byte loopback TCP send or "
            "recv\n",
            f->sys_ns / 1e3);
    fprintf(out,
            "wake_us = %.3f [measured] pipe write -> reader running, reader "
            "blocked %d us before (cold); mean of %d samples less the top "
            "1%%\n",
            f->cold_ns / 1e3, COLD_IDLE_NS / 1000, COLD_ROUNDS);
    fprintf(out, "wake_cv = %.3f [measured] their coefficient of variation\n",
            f->cold_cv);
    if (f->cold_ns > COLD_OVERLOAD_NS)
        fprintf(out,
                "# WARNING: a wake-up of %.0f us on average: the host was "
                "overloaded while calibrating (load average %.2f); "
                "predictions from this file are not meaningful; rerun on a "
                "quieter host\n",
                f->cold_ns / 1e3, f->loadavg);
    fprintf(out,
            "# cold wake-up: %d impossible samples rejected (reader's clock "
            "behind the stamp, or over 1 s)\n",
            f->cold_rejected);
    fprintf(out,
            "# hot wake-up: pipe ping-pong half round trip %.3f us minus one "
            "pipe write+read %.3f us = %.3f us (cv of %d batch means %.2f)\n",
            f->half / 1e3, f->pipe_ns / 1e3,
            fmax(f->half - f->pipe_ns, 0.0) / 1e3, PP_ROUNDS / PP_BATCH, f->cv);
    fprintf(out,
            "ctx_cpu_us = %.3f [measured] process CPU per ping-pong hand-off "
            "%.3f us minus one pipe write+read\n",
            fmax(f->cpu - f->pipe_ns, 0.0) / 1e3, f->cpu / 1e3);
    fprintf(out,
            "gil_handoff_us = %.3f [measured] %s %s: cold 2-thread GIL "
            "hand-off: lock.release() -> the other thread, blocked 200 us, "
            "running Python (mean less the top 1%%): drop_gil's COND_SIGNAL "
            "-> the waiter re-checking gil->locked, nothing else competing "
            "(the model adds cores and other threads itself)\n",
            f->py.cold, o->python, f->py.ver);
    fprintf(out,
            "# contended GIL idle gap (rounds 1-6's gil_handoff_us; not "
            "applied): 4 threads x (Python workload + time.sleep(0.0002)), "
            "median gap from one holder's end of work to the next holder's "
            "start: %.3f us\n",
            f->py.contended);
    cal_write_stretch(out, f, o);
    cal_write_wake_cpu(out, f, o);
    sim_calibrate_gilmutex_print(out, &f->gm);
    sim_calibrate_place_print(out, f->place);
    sim_calibrate_idle_print(out, &f->idle, o->python);
    sim_calibrate_preempt_print(out, f->pre);
    fprintf(out,
            "# hot GIL hand-off: lock ping-pong half round trip minus loop CPU "
            "%.3f us (cv %.2f); cold cv %.2f\n",
            f->py.handoff, f->py.handoff_cv, f->py.cold_cv);
    fprintf(out,
            "# GIL switch CPU cost: %.3f us (%s: 4 threads x (%.0f us "
            "Python workload + time.sleep(0.0002)): median workload thread "
            "CPU under contention minus alone; not a model term)\n",
            f->py.switch_cpu, o->python, f->py.switch_base);
    fprintf(out, "# strict 2-thread ping-pong CPU penalty %.3f us\n",
            f->py.pp_switch);
    if (!isnan(f->ft.cpu_loop) && f->py.cpu_loop > 0)
        fprintf(out,
                "ft_slowdown = %.3f [measured] cpu_loop %s %s / %s %s (compare "
                "same versions)\n",
                f->ft.cpu_loop / f->py.cpu_loop, o->python_ft, f->ft.ver,
                o->python, f->py.ver);
    else
        fprintf(out, "# ft_slowdown: no free-threaded CPython here "
                     "(python3.13t not found; Debian 12 has none)\n");
    fprintf(out, "# py_cpu_loop_us %s = %.4f\n", f->py.ver, f->py.cpu_loop);
    if (!isnan(f->walk_ns))
        fprintf(out,
                "# herd.walk_us = %.3f (for the herd model, a scenario "
                "setting): connecting process CPU per process asleep in "
                "epoll_wait on the listening socket (256 vs 1 waiter; "
                "%.1f us per loopback connect with 1)\n",
                f->walk_ns / 1e3, f->walk_base_ns / 1e3);
}

/* -o: created (or opened, not yet truncated) before the measurement, so
 * a bad path fails in a second, not after it.  -1 to go on, or 1. */
static int
cal_out_open(struct cal_opts *o)
{
    o->out_fd = open(o->out_path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    o->out_created = o->out_fd >= 0;
    if (o->out_fd < 0 && errno == EEXIST)
        o->out_fd = open(o->out_path, O_WRONLY);
    if (o->out_fd >= 0)
        return -1;
    fprintf(stderr, "mtrace calibrate: %s: %s\n", o->out_path, strerror(errno));
    return 1;
}

/* A failed measurement: the -o file we created is removed again. */
static int
cal_fail(struct cal_opts *o)
{
    if (o->out_path && o->out_created)
        unlink(o->out_path);
    if (o->out_path)
        close(o->out_fd);
    return 1;
}

int
sim_calibrate_main(int argc, char **argv)
{
    struct cal_opts o = {0};
    struct facts f = {
        .py = {.cpu_loop = NAN, .stretch = NAN, .wake_cpu = NAN, .xcore = NAN},
        .ft = {.cpu_loop = NAN, .stretch = NAN, .wake_cpu = NAN, .xcore = NAN}};
    char sbuf[600];
    const char *script;
    FILE *out = stdout;
    int rc = cal_parse(argc, argv, &o);

    if (rc >= 0)
        return rc;
    if (o.out_path && (rc = cal_out_open(&o)) >= 0)
        return rc;
    script = find_script(o.dir, sbuf, sizeof(sbuf));
    f.bg_load = sim_calibrate_bg_load();
    f.loadavg = sim_calibrate_loadavg();
    f.walk_ns = f.walk_base_ns = NAN;
    if (sim_calibrate_walk(&f.walk_ns, &f.walk_base_ns) < 0) {
        fprintf(stderr,
                "mtrace calibrate: herd wake-up walk not measured: "
                "%s\n",
                strerror(errno));
        f.walk_ns = f.walk_base_ns = NAN;
    }
    for (int pin = SIM_CAL_PIN_NONE; pin <= SIM_CAL_PIN_SPLIT; pin++)
        if (sim_calibrate_preempt(pin, SIM_CAL_PREEMPT_ROUNDS,
                                  SIM_CAL_PREEMPT_GAP_US, &f.pre[pin]) < 0)
            fprintf(stderr,
                    "mtrace calibrate: send preemption (pin %d) not "
                    "measured: %s\n",
                    pin, strerror(errno));
    if (sim_calibrate_gilmutex(SIM_CAL_GM_ROUNDS, &f.gm) < 0)
        fprintf(stderr, "mtrace calibrate: gil->mutex signal not measured\n");
    for (int w = 0; w < SIM_CAL_PLACE_N; w++)
        if (sim_calibrate_place(w, SIM_CAL_PLACE_ROUNDS, &f.place[w]) < 0)
            fprintf(stderr,
                    "mtrace calibrate: hand-over placement %d not measured: "
                    "%s\n",
                    w, strerror(errno));
    if (syscall_cost(&f.sys_ns) < 0 || pipe_cost(&f.pipe_ns) < 0 ||
        pingpong(&f.half, &f.cv, &f.cpu) < 0 ||
        cold_wake(&f.cold_ns, &f.cold_cv, &f.cold_rejected) < 0) {
        fprintf(stderr, "mtrace calibrate: loopback measurement failed: %s\n",
                strerror(errno));
        return cal_fail(&o);
    }
    if (script == NULL || run_py(o.python, script, &f.py) < 0) {
        fprintf(
            stderr,
            "mtrace calibrate: cannot run %s %s (use --python / --scripts)\n",
            o.python, script ? script : "gil_pingpong.py (not found)");
        return cal_fail(&o);
    }
    if (o.idle_ab && sim_calibrate_idle(o.python, script, &f.idle) < 0)
        fprintf(stderr, "mtrace calibrate: idle_wake_cpu_us not measured: %s\n",
                f.idle.why);
    if (o.python_ft == NULL &&
        system("command -v python3.13t >/dev/null 2>&1") == 0)
        o.python_ft = "python3.13t";
    if (o.python_ft && run_py(o.python_ft, script, &f.ft) < 0)
        fprintf(stderr,
                "mtrace calibrate: %s failed; no free-threaded figure\n",
                o.python_ft);
    if (o.out_path &&
        (ftruncate(o.out_fd, 0) < 0 || (out = fdopen(o.out_fd, "w")) == NULL)) {
        fprintf(stderr, "mtrace calibrate: %s: %s\n", o.out_path,
                strerror(errno));
        return cal_fail(&o);
    }
    if (f.cold_ns > COLD_OVERLOAD_NS)
        fprintf(stderr,
                "mtrace calibrate: warning: cold wake-up %.0f us on average "
                "(load average %.2f): the host is overloaded; the facts "
                "written are not meaningful for predictions\n",
                f.cold_ns / 1e3, f.loadavg);
    cal_write(out, &f, &o);
    if (out != stdout && fclose(out) != 0) {
        fprintf(stderr, "mtrace calibrate: %s: write failed\n", o.out_path);
        return 1;
    }
    return 0;
}
