/*
 * bench_wire.c -- what it costs to find a command in an OP_MSG by walking
 * the top level (core/wire) versus decoding the whole body (seed 004: the
 * Go driver unmarshalled and re-marshalled every document, 30x slower).
 *
 * For a flat (many top-level fields) and a deeply nested document it times:
 *   frame          wire_frame only (header)
 *   shallow+cmd    wire_msg_parse_opts(WIRE_PARSE_SHALLOW) + wire_msg_command
 *                  (the "walk": framing + top-level lookup; "x walk" column)
 *   parse+cmd      wire_msg_parse (full validation, depth walk) + command
 *   decode-json    frame + bson_as_canonical_extended_json + bson_new_from_json
 *                  (a whole materialised form and back)
 *   decode-copy    frame + recursive copy of every value into a new bson_t
 *                  (bson_iter_value + bson_append_value: decode + re-encode)
 * and prints messages/s, ns/message and the allocations per message, counted
 * by an interposed malloc family (every allocation of the process: ours,
 * libbson's, libc's).  Then CRC-32C and decompression throughput.
 *
 * Usage: bench_wire [--seconds S]   (default 1 second per row)
 * Exit 0, or 1 if a step fails (a benchmark that fails is not a result).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/wire.h"
#include "core/wire_crc.h"

/* ---- allocation counting (interposes glibc's malloc family) ---- */

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t c, size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t a, size_t n);
extern void __libc_free(void *p);
void *malloc(size_t n);
void *calloc(size_t c, size_t n);
void *realloc(void *p, size_t n);
void *aligned_alloc(size_t a, size_t n);
int posix_memalign(void **out, size_t a, size_t n);
void free(void *p);

static unsigned long long n_alloc, n_bytes;

void *
malloc(size_t n)
{
    n_alloc++;
    n_bytes += n;
    return __libc_malloc(n);
}

void *
calloc(size_t c, size_t n)
{
    n_alloc++;
    n_bytes += c * n;
    return __libc_calloc(c, n);
}

void *
realloc(void *p, size_t n)
{
    n_alloc++;
    n_bytes += n;
    return __libc_realloc(p, n);
}

void *
aligned_alloc(size_t a, size_t n)
{
    n_alloc++;
    n_bytes += n;
    return __libc_memalign(a, n);
}

int
posix_memalign(void **out, size_t a, size_t n)
{
    n_alloc++;
    n_bytes += n;
    *out = __libc_memalign(a, n);
    return *out ? 0 : 12;
}

void
free(void *p)
{
    __libc_free(p);
}

/* ---- messages ---- */

static bson_t *
flat_body(void)
{
    bson_t *b = BCON_NEW("insert", "test_col");
    char key[16];

    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "f%d", i);
        switch (i % 4) {
        case 0:
            BSON_APPEND_INT32(b, key, i);
            break;
        case 1:
            BSON_APPEND_UTF8(b, key, "some string value");
            break;
        case 2:
            BSON_APPEND_DOUBLE(b, key, i * 1.5);
            break;
        default:
            BSON_APPEND_BOOL(b, key, i & 1);
            break;
        }
    }
    BSON_APPEND_UTF8(b, "$db", "benchmark_db"); /* last, as drivers send */
    return b;
}

/* {find: "test_col", $db: ..., filter: {a: {a: ... depth levels}}}, each
 * level also carrying two scalars. */
static bson_t *
deep_body(int depth)
{
    bson_t *levels = calloc((size_t)depth, sizeof(bson_t));
    bson_t *top = BCON_NEW("find", "test_col");

    bson_append_document_begin(top, "filter", 6, &levels[0]);
    for (int i = 0; i < depth; i++) {
        BSON_APPEND_INT32(&levels[i], "n", i);
        BSON_APPEND_UTF8(&levels[i], "s", "x");
        if (i + 1 < depth)
            bson_append_document_begin(&levels[i], "a", 1, &levels[i + 1]);
    }
    for (int i = depth - 1; i > 0; i--)
        bson_append_document_end(&levels[i - 1], &levels[i]);
    bson_append_document_end(top, &levels[0]);
    BSON_APPEND_UTF8(top, "$db", "benchmark_db");
    free(levels);
    return top;
}

/* ---- methods: each returns 0 or -1 ---- */

static int
m_frame(const uint8_t *p, size_t n)
{
    size_t len;
    return wire_frame(p, n, 0, &len, NULL) == MT_OK ? 0 : -1;
}

static int
m_walk(const uint8_t *p, size_t n, unsigned opts)
{
    struct wire_msg m;
    struct wire_cmd cmd;
    size_t used;

    if (wire_msg_parse_opts(p, n, opts, &m, &used, NULL) != MT_OK)
        return -1;
    return wire_msg_command(&m, &cmd) == 0 && cmd.name[0] ? 0 : -1;
}

static int
m_shallow(const uint8_t *p, size_t n)
{
    return m_walk(p, n, WIRE_PARSE_SHALLOW);
}

static int
m_parse(const uint8_t *p, size_t n)
{
    return m_walk(p, n, 0);
}

static int
m_json(const uint8_t *p, size_t n)
{
    bson_t body, *back;
    char *json;
    size_t jlen;

    if (m_frame(p, n) < 0 || !bson_init_static(&body, p + 21, n - 21))
        return -1;
    json = bson_as_canonical_extended_json(&body, &jlen);
    back = json ? bson_new_from_json((const uint8_t *)json, (ssize_t)jlen, NULL)
                : NULL;
    bson_free(json);
    if (back == NULL)
        return -1;
    bson_destroy(back);
    return 0;
}

static bool
copy_doc(bson_iter_t *it, bson_t *dst)
{
    while (bson_iter_next(it)) {
        const char *k = bson_iter_key(it);
        bson_iter_t sub;
        bson_t child;
        bool ok;

        if (BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) {
            if (!bson_iter_recurse(it, &sub))
                return false;
            if (BSON_ITER_HOLDS_DOCUMENT(it))
                bson_append_document_begin(dst, k, -1, &child);
            else
                bson_append_array_begin(dst, k, -1, &child);
            ok = copy_doc(&sub, &child);
            if (BSON_ITER_HOLDS_DOCUMENT(it))
                bson_append_document_end(dst, &child);
            else
                bson_append_array_end(dst, &child);
            if (!ok)
                return false;
        } else {
            bson_value_t v;
            bson_value_copy(bson_iter_value(it), &v); /* decoded, owned */
            ok = bson_append_value(dst, k, -1, &v);
            bson_value_destroy(&v);
            if (!ok)
                return false;
        }
    }
    return true;
}

static int
m_copy(const uint8_t *p, size_t n)
{
    bson_iter_t it;
    bson_t *dst;
    bool ok;

    if (m_frame(p, n) < 0 || !bson_iter_init_from_data(&it, p + 21, n - 21))
        return -1;
    dst = bson_new();
    ok = copy_doc(&it, dst);
    bson_destroy(dst);
    return ok ? 0 : -1;
}

/* ---- timing ---- */

static double seconds = 1.0;

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct row {
    double ns;
    double allocs;
    double bytes;
};

/* Times fn over `seconds`, split into ROUNDS rounds; reports the fastest
 * round (the least disturbed by other work on a shared machine). */
#define ROUNDS 5

static int
run(int (*fn)(const uint8_t *, size_t), const uint8_t *p, size_t n,
    struct row *r)
{
    unsigned long long iters, batch = 64, a0, b0;
    double t0, t;

    for (int i = 0; i < 100; i++) /* warm up */
        if (fn(p, n) < 0)
            return -1;
    r->ns = 1e300;
    for (int round = 0; round < ROUNDS; round++) {
        iters = 0;
        a0 = n_alloc;
        b0 = n_bytes;
        t0 = now_s();
        do {
            for (unsigned long long i = 0; i < batch; i++)
                if (fn(p, n) < 0)
                    return -1;
            iters += batch;
            t = now_s() - t0;
        } while (t < seconds / ROUNDS);
        if (t * 1e9 / (double)iters < r->ns)
            r->ns = t * 1e9 / (double)iters;
        r->allocs = (double)(n_alloc - a0) / (double)iters;
        r->bytes = (double)(n_bytes - b0) / (double)iters;
    }
    return 0;
}

static int
table(const char *name, const bson_t *body)
{
    static const struct {
        const char *name;
        int (*fn)(const uint8_t *, size_t);
    } methods[] = {{"frame", m_frame},
                   {"shallow+cmd", m_shallow},
                   {"parse+cmd", m_parse},
                   {"decode-json", m_json},
                   {"decode-copy", m_copy}};
    struct mt_buf msg;
    struct row r, base = {0, 0, 0};
    int rc = 0;

    mt_buf_init(&msg, 1 << 20);
    if (wire_encode_msg(&msg, 1, 0, 0, body, NULL, 0) != 0)
        return -1;
    printf("\n%s document: OP_MSG of %zu bytes\n", name, msg.len);
    printf("%-12s %12s %10s %8s %10s %9s\n", "method", "msgs/s", "ns/msg",
           "allocs", "bytes", "x walk");
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        if (run(methods[i].fn, msg.data, msg.len, &r) < 0) {
            fprintf(stderr, "bench_wire: %s failed on %s\n", methods[i].name,
                    name);
            rc = -1;
            break;
        }
        if (i == 1)
            base = r; /* shallow+cmd: the capture/replay hot path */
        printf("%-12s %12.0f %10.1f %8.1f %10.0f", methods[i].name, 1e9 / r.ns,
               r.ns, r.allocs, r.bytes);
        if (i >= 1)
            printf(" %8.1fx", r.ns / base.ns);
        printf("\n");
    }
    mt_buf_free(&msg);
    return rc;
}

/* ---- CRC and decompression throughput ---- */

static uint8_t tp_cid;

static int
t_crc_sw(const uint8_t *p, size_t n)
{
    return wire__crc32c_sw(0, p, n) == 1 ? -1 : 0; /* keep the result live */
}

static int
t_crc_hw(const uint8_t *p, size_t n)
{
    return wire__crc32c_hw(0, p, n) == 1 ? -1 : 0;
}

static int
t_decompress(const uint8_t *p, size_t n)
{
    static struct mt_buf out;
    struct wire_msg m;
    size_t used;

    if (out.len_max == 0)
        mt_buf_init(&out, 1 << 20);
    mt_buf_reset(&out);
    if (wire_msg_parse_opts(p, n, WIRE_PARSE_SHALLOW, &m, &used, NULL) != 0)
        return -1;
    return wire_decompress(&m, &out, NULL);
}

static int
throughput(void)
{
    static uint8_t block[64 * 1024];
    struct row r;
    bson_t *doc = flat_body();
    struct mt_buf plain, z;

    for (size_t i = 0; i < sizeof(block); i++)
        block[i] = (uint8_t)(i * 31 + (i >> 7));
    printf("\nCRC-32C over 64 KiB\n%-12s %12s\n", "impl", "MB/s");
    if (run(t_crc_sw, block, sizeof(block), &r) < 0)
        return -1;
    printf("%-12s %12.0f\n", "slice-by-8", sizeof(block) / r.ns * 1e3);
    if (wire__crc32c_hw_ok()) {
        if (run(t_crc_hw, block, sizeof(block), &r) < 0)
            return -1;
        printf("%-12s %12.0f\n", "sse4.2", sizeof(block) / r.ns * 1e3);
    }

    /* A reply-like OP_MSG of ~16 KB: four flat documents in a sequence. */
    mt_buf_init(&plain, 1 << 20);
    {
        uint8_t docs[64 * 1024];
        struct wire_seq seq = {"documents", docs, 4 * doc->len};
        for (int i = 0; i < 4; i++)
            memcpy(docs + i * doc->len, bson_get_data(doc), doc->len);
        if (wire_encode_msg(&plain, 1, 0, 0, doc, &seq, 1) != 0)
            return -1;
    }
    printf("\nOP_COMPRESSED decompress, %zu-byte OP_MSG\n", plain.len);
    printf("%-12s %10s %12s %12s\n", "compressor", "wire bytes", "msgs/s",
           "MB/s out");
    for (tp_cid = 0; tp_cid <= WIRE_COMPRESSOR_ZSTD; tp_cid++) {
        mt_buf_init(&z, 1 << 20);
        if (wire_encode_compressed(&z, plain.data, plain.len, tp_cid, NULL) ||
            run(t_decompress, z.data, z.len, &r) < 0)
            return -1;
        printf("%-12s %10zu %12.0f %12.0f\n", wire_compressor_name(tp_cid),
               z.len, 1e9 / r.ns, plain.len / r.ns * 1e3);
        mt_buf_free(&z);
    }
    mt_buf_free(&plain);
    bson_destroy(doc);
    return 0;
}

int
main(int argc, char **argv)
{
    bson_t *flat, *deep;
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            char *end;
            seconds = strtod(argv[++i], &end);
            if (*end != 0 || seconds <= 0 || seconds > 60) {
                fprintf(stderr, "bench_wire: --seconds wants 0 < S <= 60\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_wire [--seconds S]\n");
            return 2;
        }
    }
    printf("bench_wire: %.2f s per row, best of %d rounds; allocs/bytes = "
           "malloc-family calls and bytes requested per message\n",
           seconds, ROUNDS);
    flat = flat_body();
    deep = deep_body(90);
    if (table("flat (200 top-level fields)", flat) < 0 ||
        table("deep (90 nested levels)", deep) < 0 || throughput() < 0)
        rc = 1;
    bson_destroy(flat);
    bson_destroy(deep);
    return rc;
}
