/*
 * loadgen.c -- a closed-loop OP_MSG load generator: the client of the
 * capture and replay benchmarks.  Each connection keeps exactly one find
 * in flight and times it from just before send() to the read that
 * completed the reply (CLOCK_MONOTONIC).
 *
 *     loadgen --target HOST:PORT [--conns N] [--threads T]
 *             [--duration S | --requests N] [--warmup S] [--hello]
 *             [--label TEXT] [--tls-ca FILE | --tls-insecure]
 *
 *   --conns     connections (default 1), spread over --threads event loops
 *               (default 1)
 *   --duration  measure for S seconds (default 3; fractions allowed)
 *   --requests  or stop after N timed requests in total
 *   --warmup    run S seconds untimed first (default 0.5)
 *   --hello     send an OP_MSG hello on each connection before the load
 *   --label     first word of the result line (default "loadgen")
 *   --tls-ca    connect with TLS (core/tls.h's client context), verifying
 *               the server's certificate against FILE (PEM) and its name
 *               against the host of --target
 *   --tls-insecure  TLS without any verification
 *   --ready     print "loadgen: ready" on stderr once every connection is
 *               set up (handshakes done), just before the load starts: a
 *               benchmark samples the proxy's CPU time from there
 *
 * With TLS each connection completes its handshake (and --hello) before
 * the load starts, one connection at a time: handshakes are not in the
 * RTT figures.  The requests then go through SSL_write/SSL_read
 * (tls_send/tls_recv, non-blocking, on the same event loops).
 *
 * The request is {find: "test_col", filter: {_id: "test-doc-1"}, limit: 1,
 * singleBatch: true, $db: "benchmark_db"}; a reply must answer its request
 * (responseTo) or the connection counts an error and stops.  Output, one
 * line on stdout:
 *
 *   LABEL conns=N threads=T requests=R errors=E secs=S rps=X
 *         p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. mean_us=..
 *
 * and with TLS, at the end of that line: tls=PROTOCOL/CIPHER (of the
 * first connection) tls_hs_p50_us=.. tls_hs_max_us=.. (each handshake
 * from tls_conn_new to its completion, the TCP connect excluded, with no
 * other connection handshaking at the same time).
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
#include <poll.h>
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
#include "core/tls.h"
#include "core/wire.h"

#define LG_THREADS_MAX 64
#define LG_SAMPLES_MAX (64u * 1024 * 1024)

struct lg_conn {
    struct lg_thread *t;
    int fd;
    struct tls_conn *tls; /* owned; NULL: plain TCP */
    bool dead;            /* lg_fail ran: no longer watched */
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
static bool lg_hello, lg_ready;
static struct tls_ctx *lg_tls; /* owned; NULL: plain TCP */
static char lg_tls_host[256];  /* --target's host, for the name check */
static uint32_t *lg_hs;        /* owned: handshake ns per connection */
static size_t lg_hs_n;
static char lg_tls_desc[96];

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

/* Waits (up to 10 s) until fd is readable, or writable when out. */
static int
lg_poll(int fd, bool out)
{
    struct pollfd pfd = {.fd = fd, .events = out ? POLLOUT : POLLIN};
    return poll(&pfd, 1, 10000) == 1 ? 0 : -1;
}

/* send() for the set-up phase: plain sockets are blocking then; a TLS
 * socket is non-blocking and waited for with poll(). */
static ssize_t
lg_bsend(int fd, struct tls_conn *tc, const void *p, size_t n)
{
    ssize_t r;

    if (tc == NULL)
        return send(fd, p, n, MSG_NOSIGNAL);
    while ((r = tls_send(tc, p, n)) < 0 && errno == EAGAIN)
        if (lg_poll(fd, true) < 0)
            return -1;
    return r;
}

/* recv() for the set-up phase, as lg_bsend. */
static ssize_t
lg_brecv(int fd, struct tls_conn *tc, void *p, size_t n)
{
    ssize_t r;
    bool more;

    if (tc == NULL)
        return recv(fd, p, n, 0);
    while ((r = tls_recv(tc, p, n, &more)) < 0 && errno == EAGAIN)
        if (lg_poll(fd, tls_wants_write(tc)) < 0)
            return -1;
    return r;
}

/* Blocking hello round trip on a fresh socket (tc: its TLS, or NULL). */
static int
lg_do_hello(int fd, struct tls_conn *tc)
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
    if (rc < 0 || lg_bsend(fd, tc, b.data, b.len) != (ssize_t)b.len) {
        mt_buf_free(&b);
        return -1;
    }
    mt_buf_free(&b);
    while (got < need) {
        ssize_t n = lg_brecv(fd, tc, rep + got, sizeof(rep) - got);
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

/* lg_send through TLS.  The request (~120 bytes) goes out as one record
 * into an empty socket buffer (one request in flight): EAGAIN is not
 * expected, and is waited out with poll() rather than queued. */
static bool
lg_send_tls(struct lg_conn *c)
{
    size_t off = 0;

    c->req_id++;
    wr_le32(c->req + 4, (uint32_t)c->req_id);
    c->sent_ns = mt_now_ns();
    while (off < lg_req.len) {
        ssize_t n = tls_send(c->tls, c->req + off, lg_req.len - off);
        if (n < 0 && errno == EAGAIN && lg_poll(c->fd, true) == 0)
            continue;
        if (n <= 0)
            return false;
        off += (size_t)n;
    }
    return true;
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
    c->dead = true;
    loop_fd_del(c->t->l, c->fd);
    /* every connection of this thread failed: nothing can end its run
     * (a --requests count would never be reached) */
    for (int i = 0; i < c->t->nconns; i++)
        if (!c->t->conns[i].dead)
            return;
    loop_stop(c->t->l);
}

/* n bytes were appended to c->in at now: when they complete the reply,
 * records its RTT and sends the next request.  Inlined, so that the
 * plain path's machine code stays what it was before TLS (a direct call
 * of lg_send, no extra call). */
static inline __attribute__((always_inline)) void
lg_got(struct lg_conn *c, uint64_t now, bool (*send_fn)(struct lg_conn *))
{
    size_t need = 0;
    struct mt_err err = {0};

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
    if (!send_fn(c))
        lg_fail(c, "send failed");
}

static void
lg_on_conn(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct lg_conn *c = arg;
    ssize_t n;

    if (mt_buf_reserve(&c->in, 65536) < 0)
        return lg_fail(c, "reply too big");
    n = recv(fd, c->in.data + c->in.len, 65536, 0);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        return lg_fail(c, n == 0 ? "server closed" : strerror(errno));
    }
    c->in.len += (size_t)n;
    lg_got(c, mt_now_ns(), lg_send);
}

/* lg_on_conn for a TLS connection: reads until OpenSSL needs the socket
 * (the loop is edge-triggered and decrypted bytes are invisible to it). */
static void
lg_on_conn_tls(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct lg_conn *c = arg;
    ssize_t n;
    bool more = true;

    while (more) {
        if (mt_buf_reserve(&c->in, 65536) < 0)
            return lg_fail(c, "reply too big");
        n = tls_recv(c->tls, c->in.data + c->in.len, 65536, &more);
        if (n <= 0) {
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
            return lg_fail(c, n == 0            ? "server closed"
                              : errno == EPROTO ? tls_conn_why(c->tls)
                                                : strerror(errno));
        }
        c->in.len += (size_t)n;
        lg_got(c, mt_now_ns(), lg_send_tls);
        if (c->dead)
            return;
    }
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

    for (int i = 0; i < t->nconns; i++) {
        struct lg_conn *c = &t->conns[i];
        if (!(c->tls ? lg_send_tls(c) : lg_send(c)))
            lg_fail(c, "send failed");
    }
    loop_update_time(t->l);
    loop_timer_start(t->l, &t->t_warm,
                     loop_deadline_after(t->l, (uint64_t)(lg_warmup * 1e9)),
                     lg_on_warm, t);
    loop_run(t->l);
    return NULL;
}

/* TLS handshake on c's connected socket (made non-blocking), waited
 * for with poll(); its duration goes into lg_hs. */
static int
lg_tls_connect(struct lg_conn *c)
{
    uint64_t t0;
    int rc;

    if (fcntl_nonblock(c->fd) < 0)
        return -1;
    c->tls = tls_conn_new(lg_tls, c->fd, lg_tls_host[0] ? lg_tls_host : NULL);
    if (c->tls == NULL)
        return -1;
    t0 = mt_now_ns();
    while ((rc = tls_handshake(c->tls)) == -EAGAIN)
        if (lg_poll(c->fd, tls_wants_write(c->tls)) < 0)
            break;
    if (rc != 0) {
        fprintf(stderr, "loadgen: TLS handshake failed: %s\n",
                rc == -EAGAIN ? "timed out" : tls_conn_why(c->tls));
        return -1;
    }
    t0 = mt_now_ns() - t0;
    lg_hs[lg_hs_n++] = t0 > UINT32_MAX ? UINT32_MAX : (uint32_t)t0;
    if (lg_tls_desc[0] == 0) {
        tls_conn_desc(c->tls, lg_tls_desc, sizeof(lg_tls_desc));
        for (char *p = lg_tls_desc; *p; p++)
            if (*p == ' ')
                *p = '/';
    }
    return 0;
}

/* The host part of a HOST:PORT or [V6]:PORT spec, into lg_tls_host. */
static void
lg_tls_set_host(const char *spec)
{
    const char *colon = strrchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);

    if (n >= 2 && spec[0] == '[' && spec[n - 1] == ']') {
        spec++;
        n -= 2;
    }
    if (n < sizeof(lg_tls_host)) {
        memcpy(lg_tls_host, spec, n);
        lg_tls_host[n] = 0;
    }
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
    if (lg_tls != NULL && lg_tls_connect(c) < 0)
        return -1;
    if (lg_hello && lg_do_hello(c->fd, c->tls) < 0) {
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
    return loop_fd_add(t->l, c->fd, LOOP_READ,
                       c->tls ? lg_on_conn_tls : lg_on_conn, c);
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
                    "[--warmup S] [--hello] [--label TEXT] "
                    "[--tls-ca FILE | --tls-insecure] [--ready]\n");
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
        printf("%s conns=%d threads=%d requests=0 errors=%llu", label, conns,
               nthreads, (unsigned long long)errors);
    } else {
        printf("%s conns=%d threads=%d requests=%zu errors=%llu secs=%.3f "
               "rps=%.0f p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f "
               "max_us=%.1f mean_us=%.1f",
               label, conns, nthreads, n, (unsigned long long)errors, secs,
               (double)n / secs, lg_pct(all, n, 0.5), lg_pct(all, n, 0.9),
               lg_pct(all, n, 0.99), lg_pct(all, n, 0.999), all[n - 1] / 1e3,
               sum / (double)n / 1e3);
    }
    if (lg_hs_n > 0) {
        qsort(lg_hs, lg_hs_n, sizeof(*lg_hs), lg_cmp);
        printf(" tls=%s tls_hs_p50_us=%.1f tls_hs_max_us=%.1f",
               lg_tls_desc[0] ? lg_tls_desc : "?", lg_pct(lg_hs, lg_hs_n, 0.5),
               lg_hs[lg_hs_n - 1] / 1e3);
    }
    printf("\n");
    fflush(stdout);
    mt_free(all);
}

int
main(int argc, char **argv)
{
    const char *target = NULL, *label = "loadgen", *tls_ca = NULL;
    bool tls_insecure = false;
    long conns = 1, nthreads = 1, v;
    struct lg_thread th[LG_THREADS_MAX];
    uint64_t t0, t1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--hello") == 0) {
            lg_hello = true;
            continue;
        }
        if (strcmp(a, "--tls-insecure") == 0) {
            tls_insecure = true;
            continue;
        }
        if (strcmp(a, "--ready") == 0) {
            lg_ready = true;
            continue;
        }
        if (val == NULL)
            return lg_usage();
        i++;
        if (strcmp(a, "--target") == 0)
            target = val;
        else if (strcmp(a, "--label") == 0)
            label = val;
        else if (strcmp(a, "--tls-ca") == 0)
            tls_ca = val;
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
    if (tls_ca != NULL && tls_insecure)
        return lg_usage();
    if (tls_ca != NULL || tls_insecure) {
        struct mt_err err = {0};
        lg_tls = tls_ctx_client_new(tls_ca, tls_insecure, &err);
        lg_hs = mt_calloc((size_t)conns, sizeof(*lg_hs));
        if (lg_tls == NULL || lg_hs == NULL) {
            fprintf(stderr, "loadgen: %s\n", err.msg);
            return 1;
        }
        lg_tls_set_host(target);
    }
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
    if (lg_ready) {
        fprintf(stderr, "loadgen: ready\n");
        fflush(stderr);
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
            if (th[i].conns[k].tls != NULL) {
                tls_close_notify(th[i].conns[k].tls);
                tls_conn_free(th[i].conns[k].tls);
            }
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
    tls_ctx_free(lg_tls);
    mt_free(lg_hs);
    return 0;
}
