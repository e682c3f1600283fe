/*
 * bench_trace.c -- trace writer and reader throughput (core/trace).
 *
 * Writes a trace of realistic messages (a find request of ~100 bytes and
 * its reply of ~150 bytes, plus one 16 KiB reply in 50) through the writer
 * into a file in a mktemp directory for S seconds, then reads it back with
 * the streaming reader from the file and from memory.  Prints messages/s,
 * MB/s of wire bytes and the compression ratio (optimistic: the messages
 * repeat, only their requestID changes).  The
 * writer's clock is real, so frames end at 1 MiB or 100 ms, as in capture.
 *
 * Usage: bench_trace [--seconds S]   (default 1 second of writing)
 *
 * bench_trace --levels TRACE [--ref-bytes N] [LEVEL...]: the cost of the
 * writer's zstd level on a real trace (bench_pcap.sh passes the trace of
 * its large capture and the pcap's size).  TRACE is loaded into memory and
 * read once to time the reader alone, then, for each level (default
 * 3 1 -1 -3 -5 -7), read again and every record written through a writer
 * at that level into /dev/null.  Per level: CPU seconds of writing (the
 * pass minus the read-only pass, CLOCK_PROCESS_CPUTIME_ID), MB/s of N per
 * CPU second (N: --ref-bytes, e.g. the pcap's size; default the records'
 * wire bytes), the trace's size and N / size.
 *
 * bench_trace --zparams TRACE [--ref-bytes N] [SPEC...]: zstd's advanced
 * parameters instead of levels, on the same records.  TRACE's records are
 * re-encoded into one raw stream (what the writer compresses), cut into
 * frames as the writer cuts them (a frame ends at the first record that
 * takes it to F bytes), and each frame compressed with ZSTD_compress2 on
 * one reused context.  A SPEC is a comma-separated list of k=v:
 * l (compressionLevel), s (strategy, 1 = ZSTD_fast), w (windowLog),
 * h (hashLog), c (chainLog), m (minMatch), t (targetLength: the fast
 * strategy's acceleration), lit (literalCompressionMode: 0 auto,
 * 1 Huffman, 2 raw; an experimental parameter, passed by number through
 * the stable ZSTD_CCtx_setParameter: a library that refuses it is
 * reported, not a failure) and F (frame bytes, default TRACE_FRAME_TARGET).
 * Per SPEC: CPU seconds of compressing, MB/s of N per CPU second, bytes,
 * N / bytes, CPU seconds of decompressing every frame again (the
 * readers' cost), checked byte for byte.
 *
 * Exit 0, or 1 if a step fails (a benchmark that fails is not a result).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY /* the experimental parameters' numbers */
#include <zstd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/rd.h"
#include "core/trace.h"
#include "core/trace_rec.h"
#include "core/wire.h"

static double seconds = 1.0;

static int
fail(const char *what, int rc)
{
    fprintf(stderr, "bench_trace: %s: %s\n", what, mt_strerror(rc));
    return 1;
}

/* Three encoded messages: request, small reply, 16 KiB reply. */
static int
make_msgs(struct mt_buf m[3])
{
    bson_t *req = BCON_NEW("find", "test_col", "filter", "{", "_id",
                           "test-doc-1", "}", "$db", "benchmark_db");
    bson_t *rep =
        BCON_NEW("cursor", "{", "firstBatch", "[", "{", "_id", "test-doc-1",
                 "value", BCON_INT32(42), "}", "]", "id", BCON_INT64(0), "ns",
                 "benchmark_db.test_col", "}", "ok", BCON_DOUBLE(1));
    bson_t *big = bson_new();
    char key[16], val[64];
    int rc;

    for (int i = 0; i < 256; i++) {
        snprintf(key, sizeof(key), "f%d", i);
        snprintf(val, sizeof(val), "value %d of a larger document %08x", i,
                 (unsigned)(i * 2654435761u));
        BSON_APPEND_UTF8(big, key, val);
    }
    for (int i = 0; i < 3; i++)
        mt_buf_init(&m[i], 1 << 20);
    rc = wire_encode_msg(&m[0], 1, 0, 0, req, NULL, 0);
    if (rc == 0)
        rc = wire_encode_msg(&m[1], 2, 1, 0, rep, NULL, 0);
    if (rc == 0)
        rc = wire_encode_msg(&m[2], 3, 1, 0, big, NULL, 0);
    bson_destroy(req);
    bson_destroy(rep);
    bson_destroy(big);
    return rc;
}

static int
bench_write(const char *path, struct mt_buf m[3], uint64_t *n_msgs,
            uint64_t *wire_bytes, double *secs, uint64_t *file_bytes)
{
    struct trace_header h = {.source = TRACE_SRC_SYNTH, .ts_precision_ns = 1};
    struct trace_msg msg = {.conn_id = 1};
    struct trace_writer *w;
    struct mt_err err;
    uint64_t t0 = mt_now_ns(), now = t0, n = 0, bytes = 0;
    int rc;

    h.start_mono_ns = t0;
    h.start_wall_ns = mt_wall_ns();
    snprintf(h.source_desc, sizeof(h.source_desc), "bench_trace");
    w = trace_writer_open(path, 0, &h, &err);
    if (w == NULL) {
        fprintf(stderr, "bench_trace: %s\n", err.msg);
        return 1;
    }
    while (now - t0 < (uint64_t)(seconds * 1e9)) {
        for (int k = 0; k < 100; k++, n++) {
            struct mt_buf *b = &m[n % 2 ? (n % 100 == 1 ? 2 : 1) : 0];
            wr_le32(b->data + 4, (uint32_t)n); /* requestID varies */
            if (n % 2) /* a reply answers the request before it */
                wr_le32(b->data + 8, (uint32_t)(n - 1));
            msg.dir = n % 2 ? TRACE_DIR_S2C : TRACE_DIR_C2S;
            msg.t_ns = t0 + n * 1000;
            msg.wire = b->data;
            msg.wire_len = (uint32_t)b->len;
            bytes += b->len;
            rc = trace_writer_msg(w, &msg);
            if (rc < 0)
                return fail("write", rc);
        }
        now = mt_now_ns();
        rc = trace_writer_tick(w, now);
        if (rc < 0)
            return fail("tick", rc);
    }
    *file_bytes = trace_writer_bytes(w);
    rc = trace_writer_close(w);
    if (rc < 0)
        return fail("close", rc);
    *secs = (double)(mt_now_ns() - t0) / 1e9;
    *n_msgs = n;
    *wire_bytes = bytes;
    return 0;
}

static int
bench_read(struct trace_reader *r, uint64_t want, double *secs)
{
    struct trace_rec rec;
    struct mt_err err;
    uint64_t t0 = mt_now_ns(), n = 0;
    int rc;

    if (r == NULL)
        return 1;
    while ((rc = trace_reader_next(r, &rec, &err)) == MT_OK)
        n += rec.type == TRACE_REC_MSG;
    *secs = (double)(mt_now_ns() - t0) / 1e9;
    trace_reader_free(r);
    if (rc != MT_END || n != want) {
        fprintf(stderr, "bench_trace: read %llu of %llu messages: %s\n",
                (unsigned long long)n, (unsigned long long)want, err.msg);
        return 1;
    }
    return 0;
}

static void
row(const char *name, uint64_t n, uint64_t bytes, double secs)
{
    printf("%-22s %12.0f %10.1f %10.3f\n", name, (double)n / secs,
           (double)bytes / secs / 1e6, secs);
}

/* ---- --levels ---- */

static double
cpu_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Copies one record read from a trace into writer w (NULL: read only). */
static int
copy_rec(struct trace_writer *w, const struct trace_rec *rec, uint64_t *wire)
{
    switch (rec->type) {
    case TRACE_REC_MSG:
        *wire += rec->u.msg.wire_len;
        return w ? trace_writer_msg(w, &rec->u.msg) : 0;
    case TRACE_REC_CONN_OPEN:
        return w ? trace_writer_conn_open(w, &rec->u.open) : 0;
    case TRACE_REC_CONN_CLOSE:
        return w ? trace_writer_conn_close(w, &rec->u.close) : 0;
    case TRACE_REC_STATS:
        return w ? trace_writer_stats(w, &rec->u.stats) : 0;
    case TRACE_REC_TLS:
        return w ? trace_writer_tls(w, &rec->u.tls) : 0;
    default: /* header: the writer writes its own; end: written at close */
        return 0;
    }
}

/* A FILE that counts the bytes written to it and keeps none. */
static ssize_t
count_write(void *cookie, const char *buf, size_t n)
{
    (void)buf;
    *(uint64_t *)cookie += n;
    return (ssize_t)n;
}

/* Reads the trace in mem and writes it through a writer at level into a
 * counting FILE (level INT32_MIN: read only).  *secs: CPU seconds of the
 * pass, *out_bytes: the trace's size, *wire: the messages' wire bytes. */
static int
level_pass(const uint8_t *mem, size_t len, int level, double *secs,
           uint64_t *out_bytes, uint64_t *wire)
{
    cookie_io_functions_t io = {.write = count_write};
    struct trace_writer *w = NULL;
    struct trace_reader *r;
    struct trace_rec rec;
    struct mt_err err = {0};
    FILE *out = NULL;
    double t0 = cpu_s();
    int rc, rc2 = 0;

    *wire = *out_bytes = 0;
    r = trace_reader_open_mem(mem, len, &err);
    if (r == NULL)
        return fail(err.msg, MT_ECORRUPT);
    if (level != INT32_MIN) {
        out = fopencookie(out_bytes, "wb", io);
        w = out ? trace_writer_open_fp(out, trace_reader_header(r), &err)
                : NULL;
        if (w == NULL || trace_writer_set_level(w, level) != 0) {
            trace_writer_close(w);
            trace_reader_free(r);
            if (out != NULL)
                fclose(out);
            return fail("writer", MT_EUSAGE);
        }
    }
    while ((rc = trace_reader_next(r, &rec, &err)) == MT_OK)
        if ((rc = copy_rec(w, &rec, wire)) < 0)
            break;
    rc2 = trace_writer_close(w);
    if (out != NULL && fclose(out) != 0 && rc2 == 0)
        rc2 = -EIO;
    *secs = cpu_s() - t0;
    trace_reader_free(r);
    if (rc != MT_END)
        return fail("copy", rc);
    return rc2 < 0 ? fail("close", rc2) : 0;
}

/* The whole file at path in a malloc'd buffer (*len bytes), or NULL with a
 * message on stderr. */
static uint8_t *
load_file(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *mem = NULL;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (*len = ftell(f)) <= 0 ||
        (mem = malloc((size_t)*len)) == NULL || fseek(f, 0, SEEK_SET) != 0 ||
        fread(mem, 1, (size_t)*len, f) != (size_t)*len) {
        fprintf(stderr, "bench_trace: cannot load %s\n", path);
        free(mem);
        mem = NULL;
    }
    if (f != NULL)
        fclose(f);
    return mem;
}

static int
levels_main(int argc, char **argv)
{
    int levels[32] = {3, 1, -1, -3, -5, -7}, nlevels = 6;
    uint64_t ref = 0, wire = 0, size = 0;
    double read_s, s;
    uint8_t *mem = NULL;
    long len;
    int i = 3, rc = 1;

    if (i + 1 < argc && strcmp(argv[i], "--ref-bytes") == 0) {
        ref = strtoull(argv[i + 1], NULL, 10);
        i += 2;
    }
    if (i < argc)
        nlevels = 0;
    for (; i < argc && nlevels < 32; i++)
        levels[nlevels++] = (int)strtol(argv[i], NULL, 10);
    if ((mem = load_file(argv[2], &len)) == NULL)
        goto out;
    if (level_pass(mem, (size_t)len, INT32_MIN, &read_s, &size, &wire) != 0)
        goto out;
    if (ref == 0)
        ref = wire;
    printf("zstd level of the trace writer (%s: %.1f MB of wire bytes; "
           "reading it alone: %.2f CPU s)\n",
           argv[2], (double)wire / 1e6, read_s);
    printf("%6s %12s %12s %14s %8s\n", "level", "write cpu s", "MB/s (ref)",
           "trace bytes", "ref/size");
    for (i = 0; i < nlevels; i++) {
        if (level_pass(mem, (size_t)len, levels[i], &s, &size, &wire) != 0)
            goto out;
        s -= read_s;
        printf("%6d %12.2f %12.0f %14llu %8.1f\n", levels[i], s,
               s > 0 ? (double)ref / 1e6 / s : 0.0, (unsigned long long)size,
               size ? (double)ref / (double)size : 0.0);
    }
    rc = 0;
out:
    free(mem);
    return rc;
}

/* ---- --zparams ---- */

/* The raw record stream of a trace and where each record ends. */
struct raw {
    struct mt_buf b;
    size_t *ends;
    size_t n, cap;
};

static int
raw_load(const uint8_t *mem, size_t len, struct raw *raw)
{
    struct mt_err err = {0};
    struct trace_reader *r = trace_reader_open_mem(mem, len, &err);
    struct trace_rec rec;
    int rc;

    if (r == NULL)
        return fail(err.msg, MT_ECORRUPT);
    mt_buf_init(&raw->b, (size_t)16 << 30);
    while ((rc = trace_reader_next(r, &rec, &err)) == MT_OK) {
        if (raw->n == raw->cap) {
            size_t *e;
            raw->cap = raw->cap ? raw->cap * 2 : 65536;
            e = realloc(raw->ends, raw->cap * sizeof(*e));
            if (e == NULL) {
                rc = -ENOMEM;
                break;
            }
            raw->ends = e;
        }
        rc = trace__rec_encode(&raw->b, &rec, &err);
        if (rc < 0)
            break;
        raw->ends[raw->n++] = raw->b.len;
    }
    trace_reader_free(r);
    return rc == MT_END ? 0 : fail("re-encoding the records", rc);
}

/* Applies SPEC to c; *frame gets F.  Returns 0, 1 for a parameter the
 * library refuses (printed), -1 for a bad SPEC. */
static int
zspec_apply(ZSTD_CCtx *c, const char *spec, size_t *frame)
{
    static const struct {
        const char *k;
        ZSTD_cParameter p;
    } names[] = {
        {"l", ZSTD_c_compressionLevel}, {"s", ZSTD_c_strategy},
        {"w", ZSTD_c_windowLog},        {"h", ZSTD_c_hashLog},
        {"c", ZSTD_c_chainLog},         {"m", ZSTD_c_minMatch},
        {"t", ZSTD_c_targetLength},     {"lit", ZSTD_c_literalCompressionMode},
    };
    char buf[256], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        char k[8];
        long v;
        size_t i, rc;

        if (sscanf(tok, "%7[^=]=%ld", k, &v) != 2)
            return -1;
        if (strcmp(k, "F") == 0) {
            if (v < 4096 || v > (long)TRACE_FRAME_TARGET * 16)
                return -1;
            *frame = (size_t)v;
            continue;
        }
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strcmp(k, names[i].k) == 0)
                break;
        if (i == sizeof(names) / sizeof(names[0]))
            return -1;
        rc = ZSTD_CCtx_setParameter(c, names[i].p, (int)v);
        if (ZSTD_isError(rc)) {
            printf("%-36s refused by libzstd %s: %s\n", spec,
                   ZSTD_versionString(), ZSTD_getErrorName(rc));
            return 1;
        }
    }
    return 0;
}

/* Compresses raw frame by frame (F bytes) on c: *cs CPU seconds, *bytes;
 * then decompresses each frame and compares: *ds CPU seconds. */
static int
zpass(ZSTD_CCtx *c, ZSTD_DCtx *d, const struct raw *raw, size_t frame,
      double *cs, double *ds, uint64_t *bytes)
{
    size_t cap = ZSTD_compressBound(TRACE_FRAME_LEN_MAX), start = 0, k;
    uint8_t *out = malloc(cap), *back = malloc(TRACE_FRAME_LEN_MAX);
    double t0;
    int rc = 0;

    *cs = *ds = 0;
    *bytes = 0;
    for (size_t i = 0; out != NULL && back != NULL && i < raw->n; i++) {
        size_t end = raw->ends[i], n = end - start;
        if (n < frame && i + 1 < raw->n)
            continue;
        t0 = cpu_s();
        k = ZSTD_compress2(c, out, cap, raw->b.data + start, n);
        *cs += cpu_s() - t0;
        if (ZSTD_isError(k)) {
            rc = fail(ZSTD_getErrorName(k), MT_ECOMPRESS);
            break;
        }
        *bytes += k;
        t0 = cpu_s();
        k = ZSTD_decompressDCtx(d, back, TRACE_FRAME_LEN_MAX, out, k);
        *ds += cpu_s() - t0;
        if (k != n || memcmp(back, raw->b.data + start, n) != 0) {
            rc = fail("round trip differs", MT_ECORRUPT);
            break;
        }
        start = end;
    }
    if (out == NULL || back == NULL)
        rc = fail("memory", -ENOMEM);
    free(out);
    free(back);
    return rc;
}

static int
zparams_run(const struct raw *raw, uint64_t ref, char **specs, int n)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    int rc = 0;

    printf("zstd parameters of the trace writer (libzstd %s; %.1f MB of "
           "records in %zu records)\n",
           ZSTD_versionString(), (double)raw->b.len / 1e6, raw->n);
    printf("%-36s %8s %10s %12s %8s %8s\n", "setting", "cpu s", "MB/s (ref)",
           "trace bytes", "ref/size", "dec s");
    for (int i = 0; i < n && rc == 0 && d != NULL; i++) {
        ZSTD_CCtx *c = ZSTD_createCCtx();
        size_t frame = TRACE_FRAME_TARGET;
        double cs, ds;
        uint64_t bytes;
        int a;

        if (c == NULL)
            return fail("zstd context", -ENOMEM);
        ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
        a = zspec_apply(c, specs[i], &frame);
        if (a < 0) {
            fprintf(stderr, "bench_trace: bad setting '%s'\n", specs[i]);
            rc = 1;
        } else if (a == 0 &&
                   (rc = zpass(c, d, raw, frame, &cs, &ds, &bytes)) == 0) {
            printf("%-36s %8.3f %10.0f %12llu %8.1f %8.3f\n", specs[i], cs,
                   (double)ref / 1e6 / cs, (unsigned long long)bytes,
                   (double)ref / (double)bytes, ds);
            fflush(stdout);
        }
        ZSTD_freeCCtx(c);
    }
    ZSTD_freeDCtx(d);
    return d == NULL ? fail("zstd context", -ENOMEM) : rc;
}

static int
zparams_main(int argc, char **argv)
{
    static char *defaults[] = {
        "l=-3",
        "l=-3,lit=2",
        "l=-3,lit=1",
        "s=1,w=19,h=13,m=6,t=3",
        "s=1,w=19,h=12,m=6,t=3",
        "s=1,w=19,h=14,m=6,t=3",
        "s=1,w=19,h=15,m=6,t=3",
        "s=1,w=19,h=13,m=5,t=3",
        "s=1,w=19,h=13,m=7,t=3",
        "s=1,w=19,h=14,m=7,t=3",
        "s=1,w=19,h=13,m=6,t=1",
        "s=1,w=19,h=13,m=6,t=5",
        "s=1,w=19,h=13,m=6,t=8",
        "s=1,w=17,h=13,m=6,t=3",
        "s=1,w=20,h=13,m=6,t=3",
        "l=-3,F=262144",
        "l=-3,F=524288",
        "l=-3,F=4194304,w=19",
    };
    struct raw raw = {0};
    uint64_t ref = 0;
    uint8_t *mem = NULL;
    long len;
    int i = 3, rc = 1;

    if (i + 1 < argc && strcmp(argv[i], "--ref-bytes") == 0) {
        ref = strtoull(argv[i + 1], NULL, 10);
        i += 2;
    }
    if ((mem = load_file(argv[2], &len)) == NULL)
        goto out;
    if (raw_load(mem, (size_t)len, &raw) != 0)
        goto out;
    if (ref == 0)
        ref = raw.b.len;
    if (i < argc)
        rc = zparams_run(&raw, ref, argv + i, argc - i);
    else
        rc = zparams_run(&raw, ref, defaults,
                         (int)(sizeof(defaults) / sizeof(defaults[0])));
out:
    free(mem);
    free(raw.ends);
    mt_buf_free(&raw.b);
    return rc;
}

int
main(int argc, char **argv)
{
    char dir[] = "/tmp/bench_trace.XXXXXX", path[64];
    struct mt_buf m[3];
    struct mt_err err;
    uint64_t n = 0, bytes = 0, fbytes = 0;
    double ws = 0, rs = 0, ms = 0;
    uint8_t *mem = NULL;
    FILE *f;
    int rc = 1;

    if (argc >= 3 && strcmp(argv[1], "--levels") == 0)
        return levels_main(argc, argv);
    if (argc >= 3 && strcmp(argv[1], "--zparams") == 0)
        return zparams_main(argc, argv);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            char *end;
            seconds = strtod(argv[++i], &end);
            if (*end != 0 || seconds <= 0 || seconds > 60) {
                fprintf(stderr, "bench_trace: --seconds wants 0 < S <= 60\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_trace [--seconds S] | --levels TRACE "
                            "[--ref-bytes N] [LEVEL...] | --zparams TRACE "
                            "[--ref-bytes N] [SPEC...]\n");
            return 2;
        }
    }
    if (make_msgs(m) != 0 || mkdtemp(dir) == NULL)
        return fail("setup", MT_EUSAGE);
    snprintf(path, sizeof(path), "%s/t.zst", dir);
    if (bench_write(path, m, &n, &bytes, &ws, &fbytes) != 0)
        goto out;
    if (bench_read(trace_reader_open(path, &err), n, &rs) != 0)
        goto out;
    f = fopen(path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || ftell(f) <= 0)
        goto out;
    fbytes = (uint64_t)ftell(f); /* the whole file: end, index, footer */
    rewind(f);
    mem = malloc(fbytes);
    if (mem == NULL || fread(mem, 1, fbytes, f) != fbytes) {
        fclose(f);
        goto out;
    }
    fclose(f);
    if (bench_read(trace_reader_open_mem(mem, fbytes, &err), n, &ms) != 0)
        goto out;
    printf("trace: %llu messages, %.1f MB of wire bytes -> %.1f MB file "
           "(ratio %.1f)\n",
           (unsigned long long)n, (double)bytes / 1e6, (double)fbytes / 1e6,
           (double)bytes / (double)fbytes);
    printf("%-22s %12s %10s %10s\n", "step", "msgs/s", "MB/s wire", "seconds");
    row("write (file)", n, bytes, ws);
    row("read (file)", n, bytes, rs);
    row("read (memory)", n, bytes, ms);
    rc = 0;
out:
    free(mem);
    if (getenv("BENCH_TRACE_KEEP") == NULL)
        unlink(path);
    if (getenv("BENCH_TRACE_KEEP") == NULL)
        rmdir(dir);
    for (int i = 0; i < 3; i++)
        mt_buf_free(&m[i]);
    return rc;
}
