/*
 * trace_layout.c -- candidate record layouts within a trace frame, for zstd
 * (a measurement, not a format; docs/benchmarks.md "Record layout").
 *
 * Usage: trace_layout TRACE [--ref-bytes N] [LEVEL...]
 *
 * TRACE's frames are decompressed into one record stream (what
 * `zstd -dc` prints), cut into frames as the writer cuts them (a frame
 * ends at the first record that takes it to TRACE_FRAME_TARGET bytes),
 * and each frame is compressed with ZSTD_compress2 at each LEVEL (default
 * -3 -5 -7 -10 -15 -20 -30) either as is (layout 0) or re-laid out:
 *   layout 1: per record its type (u8); per message its conn_id (u64), t_ns
 *     minus the previous message's (u64), dir (u8), flags, wire_len and
 *     plain_len (u32), each field a column of fixed width, little-endian;
 *     then the other records (length + payload); then every message's wire
 *     bytes back to back, then every plain form;
 *   layout 2: layout 1 with the wire header's four fields (messageLength
 *     minus wire_len, requestID minus the previous message's, responseTo
 *     minus the previous message's requestID, opCode) in columns too (the
 *     wire bytes lose their first 16 bytes when wire_len >= 16), and every
 *     column split into byte planes (all first bytes, then all second
 *     bytes, ...: the high bytes become runs);
 *   layout 3: layout 2 with the requests' wire bytes and the replies' in
 *     two runs.
 * The changing fields are thereby grouped apart from the bytes that repeat
 * (zstd's cost is set by its sequences, ~4.5 per record as written).
 * Per layout and level: CPU seconds of re-laying out (this program's copy
 * from the decoded records: an upper bound for a writer that would build
 * the columns directly) and of zstd, MB/s of N per CPU second of both
 * (N: --ref-bytes, e.g. the pcap's size; default the stream's size), the
 * compressed bytes plus 16 per frame (the checksum frames), N / bytes, and
 * CPU seconds of decompressing every frame again (checked byte for byte).
 * LAYOUT_SEQS=1 also prints zstd's sequences per record
 * (ZSTD_generateSequences on a context of its own: an untimed extra pass).
 *
 * Exit 0, 1 if a step fails (a benchmark that fails is not a result), 2 for
 * usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_generateSequences */
#include <zstd.h>

#include "core/buf.h"
#include "core/rd.h"
#include "core/trace.h"
#include "core/trace_rec.h"

#define LAY_COLS 11
/* Re-laid frames (this bench only): twice the writer's frame. */
#define LAY_FRAME_MAX (2u * TRACE_FRAME_TARGET)

/* The record stream and where each record ends. */
struct stream {
    uint8_t *b;
    size_t len;
    size_t *ends;
    size_t n;
};

/* A frame's columns (one value per message; col[0]: per record) and runs. */
struct lay {
    uint64_t col[LAY_COLS][LAY_FRAME_MAX / TRACE_REC_PREFIX_LEN];
    struct mt_buf misc, wire, wire1, plain;
};

static ZSTD_Sequence *seqs; /* LAYOUT_SEQS */
static size_t seqs_cap;

static int
fail(const char *what)
{
    fprintf(stderr, "trace_layout: %s\n", what);
    return 1;
}

static double
cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Cuts s->b into records (prefix checked through rd.h) and notes where each
 * ends. */
static int
stream_cut(struct stream *s)
{
    struct rd r = rd_init(s->b, s->len);
    size_t cap = 0;

    while (r.left > 0) {
        uint8_t type;
        uint32_t len;

        if (!rd_u8(&r, &type) || !rd_le32(&r, &len) || !rd_skip(&r, len))
            return fail("a record runs past the end of the stream");
        if (s->n == cap) {
            size_t *e;
            cap = cap ? cap * 2 : 65536;
            if ((e = realloc(s->ends, cap * sizeof(*e))) == NULL)
                return fail("memory");
            s->ends = e;
        }
        s->ends[s->n++] = s->len - r.left;
    }
    return 0;
}

/* Decompresses the whole trace at path into s (zstd skips the skippable
 * frames: checksums, index). */
static int
stream_load(const char *path, struct stream *s)
{
    int fd = open(path, O_RDONLY);
    unsigned long long want;
    struct stat st;
    void *map;
    size_t k;

    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
        if (fd >= 0)
            close(fd);
        return fail("cannot open the trace");
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return fail("cannot map the trace");
    want = ZSTD_findDecompressedSize(map, (size_t)st.st_size);
    if (want == ZSTD_CONTENTSIZE_ERROR || want == ZSTD_CONTENTSIZE_UNKNOWN ||
        want > ((unsigned long long)16 << 30) ||
        (s->b = malloc(want ? want : 1)) == NULL) {
        munmap(map, (size_t)st.st_size);
        return fail("the trace's decompressed size is unknown or too large");
    }
    k = ZSTD_decompress(s->b, want, map, (size_t)st.st_size);
    munmap(map, (size_t)st.st_size);
    if (ZSTD_isError(k) || k != want)
        return fail("the trace does not decompress (truncated?)");
    s->len = k;
    return stream_cut(s);
}

/* Appends n values of w bytes, little-endian, or as byte planes. */
static void
col_put(struct mt_buf *out, const uint64_t *v, size_t n, unsigned w, int planes)
{
    uint8_t *p = out->data + out->len;

    if (planes)
        for (unsigned b = 0; b < w; b++)
            for (size_t i = 0; i < n; i++)
                *p++ = (uint8_t)(v[i] >> (8 * b));
    else
        for (size_t i = 0; i < n; i++)
            for (unsigned b = 0; b < w; b++)
                *p++ = (uint8_t)(v[i] >> (8 * b));
    out->len += n * w;
}

/* The wire header's four fields into columns 7-10 of message i (layout 2+):
 * *wire and *wl then skip the header.  *prev_req: the previous requestID. */
static void
lay_header(struct lay *L, size_t i, const uint8_t **wire, uint32_t *wl,
           uint32_t *prev_req)
{
    struct rd r = rd_init(*wire, *wl);
    uint32_t len, req, resp, op;

    if (!rd_le32(&r, &len) || !rd_le32(&r, &req) || !rd_le32(&r, &resp) ||
        !rd_le32(&r, &op)) {
        L->col[7][i] = L->col[8][i] = L->col[9][i] = L->col[10][i] = 0;
        return;
    }
    L->col[7][i] = (uint32_t)(len - *wl);
    L->col[8][i] = (uint32_t)(req - *prev_req);
    L->col[9][i] = (uint32_t)(resp - *prev_req);
    L->col[10][i] = op;
    *prev_req = req;
    *wire = r.p;
    *wl -= 16;
}

/* One message record into the columns and runs.  0, or a buffer's
 * error. */
static int
lay_msg(struct lay *L, int layout, size_t i, const struct trace_msg *m,
        uint64_t *prev_t, uint32_t *prev_req)
{
    const uint8_t *wire = m->wire;
    uint32_t wl = m->wire_len;

    L->col[1][i] = m->conn_id;
    L->col[2][i] = m->t_ns - *prev_t;
    *prev_t = m->t_ns;
    L->col[3][i] = m->dir;
    L->col[4][i] = m->flags;
    L->col[5][i] = m->wire_len;
    L->col[6][i] = m->plain_len;
    if (layout >= 2)
        lay_header(L, i, &wire, &wl, prev_req);
    if (mt_buf_append(layout == 3 && m->dir ? &L->wire1 : &L->wire, wire, wl) !=
        0)
        return -1;
    return mt_buf_append(&L->plain, m->plain, m->plain_len);
}

/* Re-lays the whole records p[0..len) (records checked by stream_cut) out
 * into out.  0, or 1 when a record does not decode. */
static int
lay_frame(struct lay *L, int layout, const uint8_t *p, size_t len,
          struct mt_buf *out)
{
    static const uint8_t width[LAY_COLS] = {1, 8, 8, 1, 4, 4, 4, 4, 4, 4, 4};
    size_t ncol = layout == 1 ? 7 : LAY_COLS, nm = 0, nr = 0;
    struct rd r = rd_init(p, len);
    uint64_t prev_t = 0;
    uint32_t prev_req = 0;

    L->misc.len = L->wire.len = L->wire1.len = L->plain.len = out->len = 0;
    while (r.left > 0) {
        const uint8_t *rec_p = r.p, *payload;
        struct trace_rec rec;
        struct mt_err err;
        uint8_t type;
        uint32_t plen;

        if (!rd_u8(&r, &type) || !rd_le32(&r, &plen) ||
            !rd_bytes(&r, plen, &payload))
            return fail("record prefix");
        L->col[0][nr++] = type;
        if (type != TRACE_REC_MSG) {
            if (mt_buf_append(&L->misc, rec_p + 1, 4 + (size_t)plen) != 0)
                return fail("frame too large");
            continue;
        }
        if (trace__rec_decode(type, payload, plen, &rec, &err) != 0)
            return fail(err.msg);
        if (lay_msg(L, layout, nm++, &rec.u.msg, &prev_t, &prev_req) != 0)
            return fail("frame too large");
    }
    if (mt_buf_reserve(out, nr + nm * 45) != 0) /* the columns' bytes */
        return fail("frame too large");
    col_put(out, L->col[0], nr, 1, 0);
    for (size_t c = 1; c < ncol; c++)
        col_put(out, L->col[c], nm, width[c], layout >= 2);
    if (mt_buf_append(out, L->misc.data, L->misc.len) != 0 ||
        mt_buf_append(out, L->wire.data, L->wire.len) != 0 ||
        mt_buf_append(out, L->wire1.data, L->wire1.len) != 0 ||
        mt_buf_append(out, L->plain.data, L->plain.len) != 0)
        return fail("frame too large");
    return 0;
}

/* zstd's sequences for src at level (LAYOUT_SEQS), on a context of its own:
 * ZSTD_generateSequences changes the context it is given. */
static size_t
seq_count(int level, const uint8_t *src, size_t n)
{
    ZSTD_CCtx *g = ZSTD_createCCtx();
    size_t k = 0;

    if (g != NULL && n <= LAY_FRAME_MAX &&
        !ZSTD_isError(
            ZSTD_CCtx_setParameter(g, ZSTD_c_compressionLevel, level))) {
        k = ZSTD_generateSequences(g, seqs, seqs_cap, src, n);
        if (ZSTD_isError(k))
            k = 0;
    }
    ZSTD_freeCCtx(g);
    return k;
}

/* Per-pass results. */
struct pass {
    double lay_s, z_s, d_s;
    uint64_t bytes, nseq;
};

/* Compresses one frame (src, n) on c and back on d, checked. */
static int
frame_pass(ZSTD_CCtx *c, ZSTD_DCtx *d, const uint8_t *src, size_t n,
           uint8_t *out, size_t cap, uint8_t *back, struct pass *ps)
{
    double t0 = cpu_now();
    size_t k = ZSTD_compress2(c, out, cap, src, n);

    ps->z_s += cpu_now() - t0;
    if (ZSTD_isError(k))
        return fail(ZSTD_getErrorName(k));
    ps->bytes += k + TRACE_CRC_FRAME_LEN;
    t0 = cpu_now();
    k = ZSTD_decompressDCtx(d, back, LAY_FRAME_MAX, out, k);
    ps->d_s += cpu_now() - t0;
    if (ZSTD_isError(k) || k != n || memcmp(back, src, n) != 0)
        return fail("round trip differs");
    return 0;
}

/* One layout at one level over the stream's frames. */
static int
lay_pass(struct lay *L, const struct stream *s, int layout, int level,
         struct pass *ps)
{
    size_t cap = ZSTD_compressBound(LAY_FRAME_MAX), start = 0;
    uint8_t *out = malloc(cap), *back = malloc(LAY_FRAME_MAX);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_DCtx *d = ZSTD_createDCtx();
    struct mt_buf rel;
    int rc = 0;

    memset(ps, 0, sizeof(*ps));
    mt_buf_init(&rel, LAY_FRAME_MAX);
    if (out == NULL || back == NULL || c == NULL || d == NULL ||
        ZSTD_isError(
            ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) ||
        mt_buf_reserve(&rel, LAY_FRAME_MAX) != 0)
        rc = fail("memory or level");
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        const uint8_t *src = s->b + start;
        size_t n = s->ends[i] - start;
        double t0;

        if (n < TRACE_FRAME_TARGET && i + 1 < s->n)
            continue;
        if (n > LAY_FRAME_MAX)
            rc = fail("a record too large for this bench");
        t0 = cpu_now();
        if (rc == 0 && layout > 0 &&
            (rc = lay_frame(L, layout, src, n, &rel)) == 0) {
            src = rel.data;
            n = rel.len;
        }
        ps->lay_s += cpu_now() - t0;
        if (rc == 0 && seqs != NULL)
            ps->nseq += seq_count(level, src, n);
        if (rc == 0)
            rc = frame_pass(c, d, src, n, out, cap, back, ps);
        start = s->ends[i];
    }
    ZSTD_freeCCtx(c);
    ZSTD_freeDCtx(d);
    mt_buf_free(&rel);
    free(out);
    free(back);
    return rc;
}

static int
run(const struct stream *s, struct lay *L, uint64_t ref, const int *levels,
    int nlevels)
{
    struct pass ps;

    printf("trace layouts (libzstd %s; %.1f MB of records in %zu records)\n",
           ZSTD_versionString(), (double)s->len / 1e6, s->n);
    printf("%6s %6s %8s %8s %8s %10s %12s %8s %8s\n", "layout", "level",
           "relay s", "zstd s", "sum s", "MB/s (ref)", "trace bytes",
           "ref/size", "dec s");
    for (int li = 0; li < nlevels; li++)
        for (int layout = 0; layout <= 3; layout++) {
            if (lay_pass(L, s, layout, levels[li], &ps) != 0)
                return 1;
            if (seqs != NULL)
                printf("%6d %6d sequences per record %.2f\n", layout,
                       levels[li], (double)ps.nseq / (double)s->n);
            printf("%6d %6d %8.3f %8.3f %8.3f %10.0f %12llu %8.1f %8.3f\n",
                   layout, levels[li], ps.lay_s, ps.z_s, ps.lay_s + ps.z_s,
                   (double)ref / 1e6 / (ps.lay_s + ps.z_s),
                   (unsigned long long)ps.bytes, (double)ref / (double)ps.bytes,
                   ps.d_s);
            fflush(stdout);
        }
    return 0;
}

int
main(int argc, char **argv)
{
    int levels[32] = {-3, -5, -7, -10, -15, -20, -30}, nlevels = 7, i = 2;
    struct stream s = {0};
    struct lay *L = NULL;
    uint64_t ref = 0;
    int rc = 1;

    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: trace_layout TRACE [--ref-bytes N] "
                        "[LEVEL...]\n");
        return 2;
    }
    if (i + 1 < argc && strcmp(argv[i], "--ref-bytes") == 0) {
        ref = strtoull(argv[i + 1], NULL, 10);
        i += 2;
    }
    if (i < argc)
        nlevels = 0;
    for (; i < argc && nlevels < 32; i++)
        levels[nlevels++] = (int)strtol(argv[i], NULL, 10);
    if (getenv("LAYOUT_SEQS") != NULL) {
        seqs_cap = ZSTD_sequenceBound(LAY_FRAME_MAX);
        if ((seqs = malloc(seqs_cap * sizeof(*seqs))) == NULL)
            return fail("memory");
    }
    if (stream_load(argv[1], &s) == 0 && (L = calloc(1, sizeof(*L))) != NULL) {
        mt_buf_init(&L->misc, LAY_FRAME_MAX);
        mt_buf_init(&L->wire, LAY_FRAME_MAX);
        mt_buf_init(&L->wire1, LAY_FRAME_MAX);
        mt_buf_init(&L->plain, LAY_FRAME_MAX);
        rc = run(&s, L, ref ? ref : s.len, levels, nlevels);
        mt_buf_free(&L->misc);
        mt_buf_free(&L->wire);
        mt_buf_free(&L->wire1);
        mt_buf_free(&L->plain);
    }
    free(L);
    free(seqs);
    free(s.b);
    free(s.ends);
    return rc;
}
