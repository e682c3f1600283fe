/*
 * calibrate.c -- `mtrace calibrate`: the host and lock facts of mtrace sim,
 * each measured by its own microbenchmark (docs/sim-model.md, "Parameters").
 *
 *   cores          sched_getaffinity(2) CPU count (what this process may use)
 *   sys_us         wall time of one small send(2) or recv(2) on a loopback
 *                  TCP connection, both done by one thread (nothing blocks)
 *   wake_us        cold wake-up: a thread blocked in read(2) for 200 us (its
 *                  core may idle, as a thread waiting for a reply does) is
 *                  woken by a write(2) carrying a timestamp; write -> reader
 *                  running, mean less the top 1 % (robust on a busy host).
 *                  Impossible samples (reader's clock behind the stamp, over
 *                  1 s) are rejected (sim_calibrate_wake_sample); more than
 *                  1 % of them fails the run
 *   ctx_cpu_us     process CPU (CLOCK_PROCESS_CPUTIME_ID) per hand-off of a
 *                  2-thread pipe ping-pong, minus one write+read pair: the
 *                  CPU of one block/wake cycle
 *   switch_interval_us, gil_handoff_us  sim/calibrate/gil_pingpong.py under
 *                  the GIL CPython (default /usr/bin/python3)
 *   lock_block_cpu_us  sim/calibrate/lock_contend.py under the same CPython:
 *                  the convoy without pymongo (uuid4 inside the lock vs
 *                  outside it): its extra CPU per block less its CPU per
 *                  extra switch (sim_calibrate_lock_block_us)
 * Output: a host facts file, one "key = value [measured] method" a line
 * (mtrace sim --host), diagnostics as "#" lines.
 */
#include "calibrate.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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

/* 2-thread pipe ping-pong: half round trip (ns, wall) and process CPU per
 * hand-off (ns).  -1 when a pipe or the thread cannot be made. */
static int
pingpong(double *half_ns, double *cpu_ns)
{
    struct pp p = {.rounds = PP_ROUNDS};
    pthread_t th;
    double cpu0;
    uint64_t t0;
    char c = 'x';
    int rc = 0;

    if (pipe(p.ab) < 0)
        return -1;
    if (pipe(p.ba) < 0) {
        close(p.ab[0]), close(p.ab[1]);
        return -1;
    }
    if (pthread_create(&th, NULL, pp_other, &p) != 0) {
        rc = -1;
        goto out;
    }
    cpu0 = now_cpu_ns();
    t0 = mt_now_ns();
    for (int i = 0; i < PP_ROUNDS && rc == 0; i++)
        if (write(p.ab[1], &c, 1) != 1 || read(p.ba[0], &c, 1) != 1)
            rc = -1;
    *half_ns = (double)(mt_now_ns() - t0) / (2.0 * PP_ROUNDS);
    *cpu_ns = (now_cpu_ns() - cpu0) / (2.0 * PP_ROUNDS);
    if (rc < 0)
        close(p.ab[1]); /* the other thread's read ends */
    pthread_join(th, NULL);
out:
    close(p.ab[0]), close(p.ba[0]), close(p.ba[1]);
    if (rc == 0)
        close(p.ab[1]);
    return rc;
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

/* Cold wake-up (wake_us): mean and cv of write -> reader running (ns), the
 * reader blocked 200 us before each.  Fails (-1, message on stderr) when
 * more than 1 % of the samples were impossible or the mean is not a
 * plausible wake-up (0 < mean < 1 s). */
static int
cold_wake(double *mean_ns, double *cv, int *rejected)
{
    static struct cold c;
    pthread_t th;
    struct timespec idle = {0, COLD_IDLE_NS};

    c.n = c.rejected = 0;
    if (pipe(c.fd) < 0)
        return -1;
    if (pthread_create(&th, NULL, cold_reader, &c) != 0) {
        close(c.fd[0]), close(c.fd[1]);
        return -1;
    }
    for (int i = 0; i < COLD_ROUNDS; i++) {
        nanosleep(&idle, NULL);
        uint64_t stamp = mt_now_ns();
        if (write(c.fd[1], &stamp, sizeof(stamp)) != (ssize_t)sizeof(stamp))
            break;
    }
    close(c.fd[1]); /* a reader still waiting sees EOF */
    pthread_join(th, NULL);
    close(c.fd[0]);
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

/* Wall time (ns) of one small loopback send or recv (sys_us). */
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
    int fd[2], n = 50000, rc = 0;
    char c = 'x';
    uint64_t t0;

    if (pipe(fd) < 0)
        return -1;
    t0 = mt_now_ns();
    for (int i = 0; i < n && rc == 0; i++)
        if (write(fd[1], &c, 1) != 1 || read(fd[0], &c, 1) != 1)
            rc = -1;
    *ns = (double)(mt_now_ns() - t0) / n;
    close(fd[0]);
    close(fd[1]);
    return rc;
}

/* "key value" lines a Python microbenchmark printed. */
#define KV_MAX 96
struct kv {
    int n;
    char key[KV_MAX][48];
    char val[KV_MAX][48];
};

/* The value of key as a number, NAN when it was not printed. */
static double
kv_num(const struct kv *k, const char *key)
{
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->key[i], key) == 0)
            return strtod(k->val[i], NULL);
    return NAN;
}

static const char *
kv_str(const struct kv *k, const char *key)
{
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->key[i], key) == 0)
            return k->val[i];
    return "?";
}

/* Runs `python script` (its stderr passes through) and keeps its "key
 * value" lines.  -1 when it cannot be run or exits non-zero. */
static int
run_py(const char *python, const char *script, struct kv *out)
{
    char cmd[1200], line[256];
    FILE *f;

    if (strchr(python, '\'') || strchr(script, '\''))
        return -1;
    snprintf(cmd, sizeof(cmd), "'%s' '%s'", python, script);
    f = popen(cmd, "r");
    if (f == NULL)
        return -1;
    out->n = 0;
    while (fgets(line, sizeof(line), f))
        if (out->n < KV_MAX &&
            sscanf(line, "%47s %47s", out->key[out->n], out->val[out->n]) == 2)
            out->n++;
    return pclose(f) == 0 ? 0 : -1;
}

/* dir/name, or beside the binary (a source tree's sim/calibrate/ or an
 * installed share/mtrace/), or ./sim/calibrate/name. */
static const char *
find_script(const char *dir, const char *name, char *buf, size_t cap)
{
    char exe[512];
    ssize_t n;

    if (dir) {
        snprintf(buf, cap, "%s/%s", dir, name);
        return access(buf, R_OK) == 0 ? buf : NULL;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(buf, cap, "%s/sim/calibrate/%s", exe, name);
        if (access(buf, R_OK) == 0)
            return buf;
        snprintf(buf, cap, "%s/../share/mtrace/%s", exe, name);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    snprintf(buf, cap, "sim/calibrate/%s", name);
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
    "usage: mtrace calibrate [-o FILE] [--python PATH] [--scripts DIR]\n"
    "Measures the host and lock facts mtrace sim needs, each with its own\n"
    "microbenchmark, and writes them as a host facts file (mtrace sim --host "
    "FILE):\n"
    "cores, loopback syscall CPU (sys_us), the wake-up of a blocked thread\n"
    "(wake_us) and its CPU (ctx_cpu_us), CPython's switch interval and GIL\n"
    "hand-off (gil_handoff_us: a Python ping-pong), and the CPU a block on\n"
    "a contended threading.Lock costs (lock_block_cpu_us: a convoy without\n"
    "pymongo).  Each line says how its value was measured.\n"
    "  -o FILE          write there (default: stdout)\n"
    "  --python PATH    the CPython to measure (default /usr/bin/python3)\n"
    "  --scripts DIR    where gil_pingpong.py and lock_contend.py are\n"
    "                   (default: beside the binary)\n"
    "  -h, --help       this help\n"
    "Takes about 50 seconds.  Exit status: 0 ok, 1 measurement failed, 2 bad "
    "usage.\n";

struct cal_opts {
    const char *out_path, *python, *dir;
    int out_fd;       /* -o, opened before measuring */
    bool out_created; /* by us: removed if nothing is written */
};

struct facts {
    double half_ns, cpu_ns, sys_ns, pipe_ns, cold_ns, cold_cv;
    int cold_rejected;
    char loadavg[128]; /* /proc/loadavg before measuring, "" unknown */
    struct kv gil, lock;
};

/* Returns -1 to go on, or an exit status. */
static int
cal_parse(int argc, char **argv, struct cal_opts *o)
{
    static const struct option lo[] = {{"python", 1, 0, 'p'},
                                       {"scripts", 1, 0, 's'},
                                       {"help", 0, 0, 'h'},
                                       {0, 0, 0, 0}};
    int c;

    o->python = "/usr/bin/python3";
    optind = 1;
    opterr = 0; /* one line of our own instead of getopt's */
    while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
        if (c == 'o')
            o->out_path = optarg;
        else if (c == 'p')
            o->python = optarg;
        else if (c == 's')
            o->dir = optarg;
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

static void
read_loadavg(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/loadavg", "r");

    buf[0] = '\0';
    if (f) {
        if (fgets(buf, (int)cap, f) == NULL)
            buf[0] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        fclose(f);
    }
}

double
sim_calibrate_lock_block_us(double block_cpu_us, double switch_cpu_us)
{
    double v = block_cpu_us - switch_cpu_us;

    return v > 0 ? v : 0.0;
}

/* The C microbenchmarks' lines. */
static void
cal_write_host(FILE *out, const struct facts *f)
{
    fprintf(out,
            "cores = %d [measured] sched_getaffinity(2): the CPUs this "
            "process may run on\n",
            cores_online());
    fprintf(out,
            "sys_us = %.3f [measured] wall time of one 100-byte send(2) or "
            "recv(2) on a loopback TCP connection, both in one thread "
            "(nothing blocks), mean of 50000 pairs\n",
            f->sys_ns / 1e3);
    fprintf(out,
            "wake_us = %.3f [measured] pipe write(2) -> the reader, blocked "
            "%d us in read(2) before, running; mean of %d samples less the "
            "top 1%% (cv %.2f; %d impossible samples rejected)\n",
            f->cold_ns / 1e3, COLD_IDLE_NS / 1000, COLD_ROUNDS, f->cold_cv,
            f->cold_rejected);
    fprintf(out,
            "ctx_cpu_us = %.3f [measured] process CPU "
            "(CLOCK_PROCESS_CPUTIME_ID) per hand-off of a 2-thread pipe "
            "ping-pong (%.3f us, %d rounds) minus one write+read pair "
            "(%.3f us)\n",
            fmax(f->cpu_ns - f->pipe_ns, 0.0) / 1e3, f->cpu_ns / 1e3, PP_ROUNDS,
            f->pipe_ns / 1e3);
    fprintf(out,
            "# hot wake-up (not a model parameter): the ping-pong's half "
            "round trip %.3f us minus one write+read\n",
            fmax(f->half_ns - f->pipe_ns, 0.0) / 1e3);
    if (f->cold_ns > COLD_OVERLOAD_NS)
        fprintf(out,
                "# WARNING: a wake-up of %.0f us on average: the host was "
                "overloaded while calibrating; predictions from this file "
                "are not meaningful; rerun on a quieter host\n",
                f->cold_ns / 1e3);
}

/* The Python microbenchmarks' lines. */
static void
cal_write_py(FILE *out, const struct facts *f, const struct cal_opts *o)
{
    const struct kv *g = &f->gil, *l = &f->lock;
    const char *ver = kv_str(g, "py_version");

    fprintf(out,
            "switch_interval_us = %.1f [measured] sys.getswitchinterval() of "
            "%s %s\n",
            kv_num(g, "switch_interval_us"), o->python, ver);
    fprintf(out,
            "gil_handoff_us = %.3f [measured] %s %s, gil_pingpong.py: thread "
            "A runs Python for 1 ms while thread B, woken, waits in take_gil; "
            "A stamps and blocks on a threading.Lock (drop_gil's signal); "
            "stamp -> B running Python; mean of 1000 less the top 1%% (cv "
            "%.2f)\n",
            kv_num(g, "gil_handoff_us"), o->python, ver,
            kv_num(g, "gil_handoff_cv"));
    if (kv_num(g, "gil_handoff_us") > 100)
        fprintf(out, "# WARNING: a GIL hand-off over 100 us: the host is "
                     "busy (a waiter's wake-up may have outlasted the "
                     "holder's 1 ms of Python); rerun on a quieter host\n");
    fprintf(out,
            "lock_block_cpu_us = %.3f [measured] %s %s, lock_contend.py's "
            "convoy: 10 and 20 threads x calls of 5 threading.Lock sections "
            "(4 before a TCP loopback round trip to an echo process, delay 0 "
            "and 1 ms), uuid.uuid4() inside the first section vs before it "
            "(%.0f row pairs%s): extra CPU per block %.3f us less extra CPU "
            "per voluntary switch %.3f us (%.3f switches per block)\n",
            sim_calibrate_lock_block_us(kv_num(l, "convoy_block_cpu_us"),
                                        kv_num(l, "convoy_switch_cpu_us")),
            o->python, kv_str(l, "py_version"), kv_num(l, "convoy_pairs"),
            kv_num(l, "convoy_weak") > 0 ? ", weak convoy: under 0.5 blocks "
                                           "per call"
                                         : "",
            kv_num(l, "convoy_block_cpu_us"), kv_num(l, "convoy_switch_cpu_us"),
            kv_num(l, "convoy_vcsw_per_block"));
    fprintf(out,
            "# lock diagnostics (not model parameters): CPU per call 1 "
            "thread %.3f us, 20 threads delay 1 ms in/out %.3f/%.3f us with "
            "%.3f/%.3f blocks; a strict 2-thread lock ping-pong, the "
            "releaser blocking at once, %.3f us\n",
            kv_num(l, "convoy_seq_cpu_us"), kv_num(l, "convoy_T20in_d1_cpu_us"),
            kv_num(l, "convoy_T20out_d1_cpu_us"),
            kv_num(l, "convoy_T20in_d1_blocks"),
            kv_num(l, "convoy_T20out_d1_blocks"), kv_num(l, "lock_pp_wake_us"));
    if (kv_num(l, "convoy_pairs") < 1)
        fprintf(out, "# WARNING: no convoy formed (fewer than 0.2 blocks per "
                     "call in every row): lock_block_cpu_us is 0; rerun on a "
                     "quieter host\n");
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

/* Both Python microbenchmarks; -1 (message on stderr) on failure. */
static int
cal_python(const struct cal_opts *o, struct facts *f)
{
    static const char *const names[2] = {"gil_pingpong.py", "lock_contend.py"};
    struct kv *dst[2] = {&f->gil, &f->lock};
    static const char *const need[2] = {"gil_handoff_us",
                                        "convoy_switch_cpu_us"};
    char sbuf[600];

    for (int i = 0; i < 2; i++) {
        const char *script = find_script(o->dir, names[i], sbuf, sizeof(sbuf));
        if (script == NULL || run_py(o->python, script, dst[i]) < 0 ||
            isnan(kv_num(dst[i], need[i]))) {
            fprintf(stderr,
                    "mtrace calibrate: cannot run %s %s (use --python / "
                    "--scripts)\n",
                    o->python, script ? script : names[i]);
            return -1;
        }
    }
    return 0;
}

int
sim_calibrate_main(int argc, char **argv)
{
    struct cal_opts o = {0};
    static struct facts f;
    FILE *out = stdout;
    int rc = cal_parse(argc, argv, &o);

    if (rc >= 0)
        return rc;
    if (o.out_path && (rc = cal_out_open(&o)) >= 0)
        return rc;
    read_loadavg(f.loadavg, sizeof(f.loadavg));
    if (syscall_cost(&f.sys_ns) < 0 || pipe_cost(&f.pipe_ns) < 0 ||
        pingpong(&f.half_ns, &f.cpu_ns) < 0 ||
        cold_wake(&f.cold_ns, &f.cold_cv, &f.cold_rejected) < 0) {
        fprintf(stderr, "mtrace calibrate: loopback measurement failed: %s\n",
                strerror(errno));
        return cal_fail(&o);
    }
    if (cal_python(&o, &f) < 0)
        return cal_fail(&o);
    if (o.out_path &&
        (ftruncate(o.out_fd, 0) < 0 || (out = fdopen(o.out_fd, "w")) == NULL)) {
        fprintf(stderr, "mtrace calibrate: %s: %s\n", o.out_path,
                strerror(errno));
        return cal_fail(&o);
    }
    if (f.cold_ns > COLD_OVERLOAD_NS)
        fprintf(stderr,
                "mtrace calibrate: warning: cold wake-up %.0f us on average: "
                "the host is overloaded; the facts written are not "
                "meaningful for predictions\n",
                f.cold_ns / 1e3);
    fprintf(out, "# mtrace calibrate: host facts for mtrace sim --host "
                 "(measured, so not deterministic)\n");
    fprintf(out, "# load before measuring (/proc/loadavg): %s\n",
            f.loadavg[0] ? f.loadavg : "unknown");
    cal_write_host(out, &f);
    cal_write_py(out, &f, &o);
    if (out != stdout && fclose(out) != 0) {
        fprintf(stderr, "mtrace calibrate: %s: write failed\n", o.out_path);
        return 1;
    }
    return 0;
}
