/*
 * loadgen.c -- a closed-loop OP_MSG load generator: the client of the
 * capture and replay benchmarks.  Each connection keeps exactly one find
 * in flight and times it from just before send() to the read that
 * completed the reply (CLOCK_MONOTONIC).
 *
 *     loadgen --target HOST:PORT [--conns N] [--threads T]
 *             [--duration S | --requests N] [--warmup S] [--hello]
 *             [--label TEXT]
 *
 *   --conns     connections (default 1), spread over --threads event loops
 *               (default 1)
 *   --duration  measure for S seconds (default 3; fractions allowed)
 *   --requests  or stop after N timed requests in total
 *   --warmup    run S seconds untimed first (default 0.5)
 *   --hello     send an OP_MSG hello on each connection before the load
 *   --label     first word of the result line (default "loadgen")
 *
 * The request is {find: "test_col", filter: {_id: "test-doc-1"}, limit: 1,
 * singleBatch: true, $db: "benchmark_db"}; a reply must answer its request
 * (responseTo) or the connection counts an error and stops.  Output, one
 * line on stdout:
 *
 *   LABEL conns=N threads=T requests=R errors=E secs=S rps=X
 *         p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. mean_us=..
 *
 * Exit status 0, 1 when a connection failed or nothing was measured, 2 on
 * bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/loop.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/wire.h"

#define LG_THREADS_MAX 64
#define LG_SAMPLES_MAX (64u * 1024 * 1024)

struct lg_conn {
    struct lg_thread *t;
    int fd;
    int32_t req_id;
    uint64_t sent_ns;
    uint8_t *req;     /* owned: this connection's copy of the request */
    struct mt_buf in; /* owned */
};

struct lg_thread {
    struct loop *l;
    struct lg_conn *conns; /* owned array */
    int nconns;
    uint32_t *samples; /* owned: RTT ns, capped at UINT32_MAX */
    size_t n, cap;
    uint64_t errors;
    struct loop_timer t_warm, t_end;
    bool timing;
    pthread_t th;
};

static struct sockaddr_storage lg_addr;
static socklen_t lg_addr_len;
static struct mt_buf lg_req; /* the find, requestID patched per send */
static double lg_duration = 3.0, lg_warmup = 0.5;
static uint64_t lg_requests_max;
static _Atomic uint64_t lg_requests;
static bool lg_hello;

static int
lg_resolve(const char *spec)
{
    struct sockaddr_storage ss;
    socklen_t len;

    if (mt_addr_resolve(spec, &ss, &len) < 0)
        return -1;
    memcpy(&lg_addr, &ss, len);
    lg_addr_len = len;
    return 0;
}

static int
lg_build(void)
{
    bson_t find = BSON_INITIALIZER, flt;
    int rc;

    BSON_APPEND_UTF8(&find, "find", "test_col");
    BSON_APPEND_DOCUMENT_BEGIN(&find, "filter", &flt);
    BSON_APPEND_UTF8(&flt, "_id", "test-doc-1");
    bson_append_document_end(&find, &flt);
    BSON_APPEND_INT32(&find, "limit", 1);
    BSON_APPEND_BOOL(&find, "singleBatch", true);
    BSON_APPEND_UTF8(&find, "$db", "benchmark_db");
    mt_buf_init(&lg_req, 1 << 20);
    rc = wire_encode_msg(&lg_req, 0, 0, 0, &find, NULL, 0);
    bson_destroy(&find);
    return rc;
}

/* Blocking hello round trip on a fresh socket. */
static int
lg_do_hello(int fd)
{
    bson_t h = BSON_INITIALIZER;
    struct mt_buf b;
    uint8_t rep[65536];
    size_t got = 0, need = 16;
    int rc;

    BSON_APPEND_INT32(&h, "hello", 1);
    BSON_APPEND_UTF8(&h, "$db", "admin");
    mt_buf_init(&b, 1 << 20);
    rc = wire_encode_msg(&b, 1, 0, 0, &h, NULL, 0);
    bson_destroy(&h);
    if (rc < 0 || send(fd, b.data, b.len, MSG_NOSIGNAL) != (ssize_t)b.len) {
        mt_buf_free(&b);
        return -1;
    }
    mt_buf_free(&b);
    while (got < need) {
        ssize_t n = recv(fd, rep + got, sizeof(rep) - got, 0);
        if (n <= 0)
            return -1;
        got += (size_t)n;
        if (got >= 4) {
            struct rd r = rd_init(rep, got);
            uint32_t len;
            rd_le32(&r, &len);
            if (len < 16 || len > sizeof(rep))
                return -1;
            need = len;
        }
    }
    return 0;
}

static void lg_on_conn(struct loop *l, int fd, void *arg, unsigned ev);

static int
fcntl_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static bool
lg_send(struct lg_conn *c)
{
    c->req_id++;
    wr_le32(c->req + 4, (uint32_t)c->req_id);
    c->sent_ns = mt_now_ns();
    return send(c->fd, c->req, lg_req.len, MSG_NOSIGNAL) == (ssize_t)lg_req.len;
}

static void
lg_record(struct lg_thread *t, uint64_t rtt)
{
    if (!t->timing)
        return;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 65536;
        uint32_t *p;
        if (cap > LG_SAMPLES_MAX)
            return;
        p = mt_realloc(t->samples, cap * sizeof(*p));
        if (p == NULL)
            return;
        t->samples = p;
        t->cap = cap;
    }
    t->samples[t->n++] = rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
    if (lg_requests_max && ++lg_requests >= lg_requests_max)
        loop_stop(t->l);
}

static void
lg_fail(struct lg_conn *c, const char *why)
{
    if (c->t->errors++ < 5)
        fprintf(stderr, "loadgen: connection %d: %s\n", c->fd, why);
    loop_fd_del(c->t->l, c->fd);
}

static void
lg_on_conn(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct lg_conn *c = arg;
    ssize_t n;
    size_t need = 0;
    uint64_t now;
    struct mt_err err = {0};

    if (mt_buf_reserve(&c->in, 65536) < 0)
        return lg_fail(c, "reply too big");
    n = recv(fd, c->in.data + c->in.len, 65536, 0);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        return lg_fail(c, n == 0 ? "server closed" : strerror(errno));
    }
    now = mt_now_ns();
    c->in.len += (size_t)n;
    if (wire_frame(c->in.data, c->in.len, WIRE_MSG_LEN_MAX, &need, &err) !=
        MT_OK)
        return; /* partial (or bad: the next read fails the same way) */
    {
        struct rd r = rd_init(c->in.data + 8, 4);
        uint32_t to;
        rd_le32(&r, &to);
        if ((int32_t)to != c->req_id)
            return lg_fail(c, "reply does not answer the request");
    }
    if (c->in.len != need)
        return lg_fail(c, "unexpected extra bytes");
    mt_buf_reset(&c->in);
    lg_record(c->t, now - c->sent_ns);
    if (!lg_send(c))
        lg_fail(c, "send failed");
}

static void
lg_on_end(struct loop *l, struct loop_timer *tm, void *arg)
{
    loop_stop(l);
}

static void
lg_on_warm(struct loop *l, struct loop_timer *tm, void *arg)
{
    struct lg_thread *t = arg;
    t->timing = true;
    if (!lg_requests_max)
        loop_timer_start(l, &t->t_end,
                         loop_deadline_after(l, (uint64_t)(lg_duration * 1e9)),
                         lg_on_end, NULL);
}

static void *
lg_thread_main(void *arg)
{
    struct lg_thread *t = arg;

    for (int i = 0; i < t->nconns; i++)
        if (!lg_send(&t->conns[i]))
            lg_fail(&t->conns[i], "send failed");
    loop_update_time(t->l);
    loop_timer_start(t->l, &t->t_warm,
                     loop_deadline_after(t->l, (uint64_t)(lg_warmup * 1e9)),
                     lg_on_warm, t);
    loop_run(t->l);
    return NULL;
}

static int
lg_connect(struct lg_thread *t, struct lg_conn *c)
{
    int one = 1;

    c->t = t;
    c->fd = socket(lg_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 ||
        connect(c->fd, (struct sockaddr *)&lg_addr, lg_addr_len) < 0) {
        fprintf(stderr, "loadgen: connect: %s\n", strerror(errno));
        return -1;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (lg_hello && lg_do_hello(c->fd) < 0) {
        fprintf(stderr, "loadgen: hello failed\n");
        return -1;
    }
    if (fcntl_nonblock(c->fd) < 0)
        return -1;
    mt_buf_init(&c->in, WIRE_MSG_LEN_MAX + 65536);
    c->req = mt_malloc(lg_req.len);
    if (c->req == NULL)
        return -1;
    memcpy(c->req, lg_req.data, lg_req.len);
    return loop_fd_add(t->l, c->fd, LOOP_READ, lg_on_conn, c);
}

static int
lg_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double
lg_pct(const uint32_t *s, size_t n, double q)
{
    size_t i = (size_t)ceil(q * (double)n);
    if (i > 0)
        i--;
    if (i >= n)
        i = n - 1;
    return s[i] / 1e3;
}

static bool
lg_arg_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return errno == 0 && *end == 0 && *v >= 0 && isfinite(*v);
}

static bool
lg_arg_int(const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    *v = strtol(s, &end, 10);
    return errno == 0 && *end == 0 && *v >= lo && *v <= hi;
}

static int
lg_usage(void)
{
    fprintf(stderr, "usage: loadgen --target HOST:PORT [--conns N] "
                    "[--threads T] [--duration S | --requests N] "
                    "[--warmup S] [--hello] [--label TEXT]\n");
    return 2;
}

static void
lg_report(const char *label, struct lg_thread *th, int nthreads, int conns,
          double secs)
{
    size_t n = 0, k = 0;
    uint64_t errors = 0;
    uint32_t *all;
    double sum = 0;

    for (int i = 0; i < nthreads; i++) {
        n += th[i].n;
        errors += th[i].errors;
    }
    all = mt_malloc((n ? n : 1) * sizeof(*all));
    if (all == NULL) {
        fprintf(stderr, "loadgen: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < nthreads; i++) {
        memcpy(all + k, th[i].samples, th[i].n * sizeof(*all));
        k += th[i].n;
    }
    qsort(all, n, sizeof(*all), lg_cmp);
    for (size_t i = 0; i < n; i++)
        sum += all[i];
    if (n == 0) {
        printf("%s conns=%d threads=%d requests=0 errors=%llu\n", label, conns,
               nthreads, (unsigned long long)errors);
    } else {
        printf("%s conns=%d threads=%d requests=%zu errors=%llu secs=%.3f "
               "rps=%.0f p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f "
               "max_us=%.1f mean_us=%.1f\n",
               label, conns, nthreads, n, (unsigned long long)errors, secs,
               (double)n / secs, lg_pct(all, n, 0.5), lg_pct(all, n, 0.9),
               lg_pct(all, n, 0.99), lg_pct(all, n, 0.999), all[n - 1] / 1e3,
               sum / (double)n / 1e3);
    }
    fflush(stdout);
    mt_free(all);
}

int
main(int argc, char **argv)
{
    const char *target = NULL, *label = "loadgen";
    long conns = 1, nthreads = 1, v;
    struct lg_thread th[LG_THREADS_MAX];
    uint64_t t0, t1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--hello") == 0) {
            lg_hello = true;
            continue;
        }
        if (val == NULL)
            return lg_usage();
        i++;
        if (strcmp(a, "--target") == 0)
            target = val;
        else if (strcmp(a, "--label") == 0)
            label = val;
        else if (strcmp(a, "--conns") == 0 && lg_arg_int(val, 1, 100000, &v))
            conns = v;
        else if (strcmp(a, "--threads") == 0 &&
                 lg_arg_int(val, 1, LG_THREADS_MAX, &v))
            nthreads = v;
        else if (strcmp(a, "--requests") == 0 &&
                 lg_arg_int(val, 1, LG_SAMPLES_MAX, &v))
            lg_requests_max = (uint64_t)v;
        else if (strcmp(a, "--duration") == 0 &&
                 lg_arg_double(val, &lg_duration))
            ;
        else if (strcmp(a, "--warmup") == 0 && lg_arg_double(val, &lg_warmup))
            ;
        else
            return lg_usage();
    }
    if (target == NULL || lg_resolve(target) < 0 || lg_build() < 0)
        return lg_usage();
    if (nthreads > conns)
        nthreads = conns;
    memset(th, 0, sizeof(th));
    for (int i = 0; i < nthreads; i++) {
        struct mt_err err;
        th[i].nconns = (int)(conns / nthreads + (i < conns % nthreads));
        th[i].l = loop_new(NULL, 0, &err);
        th[i].conns = mt_calloc((size_t)th[i].nconns, sizeof(*th[i].conns));
        if (th[i].l == NULL || th[i].conns == NULL)
            return 1;
        loop_timer_init(&th[i].t_warm);
        loop_timer_init(&th[i].t_end);
        for (int k = 0; k < th[i].nconns; k++)
            if (lg_connect(&th[i], &th[i].conns[k]) < 0)
                return 1;
    }
    t0 = mt_now_ns() + (uint64_t)(lg_warmup * 1e9);
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i].th, NULL, lg_thread_main, &th[i]);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i].th, NULL);
    t1 = mt_now_ns();
    lg_report(label, th, (int)nthreads, (int)conns,
              t1 > t0 ? (double)(t1 - t0) / 1e9 : 1e-9);
    for (int i = 0; i < nthreads; i++) {
        for (int k = 0; k < th[i].nconns; k++) {
            close(th[i].conns[k].fd);
            mt_free(th[i].conns[k].req);
            mt_buf_free(&th[i].conns[k].in);
        }
        loop_free(th[i].l);
        mt_free(th[i].conns);
        mt_free(th[i].samples);
        if (th[i].errors)
            return 1;
    }
    return 0;
}
