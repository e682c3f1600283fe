/*
 * fuzz_trace.c -- libFuzzer target for the trace reader (core/trace_read.c)
 * and what `mtrace stats` / `mtrace dump` do with each record
 * (tools/stats.c, tools/msginfo.c), TLS records included.  The input is a trace
 * file, read from memory; or, when it starts with 0x01 (a header record's type
 * byte, which no zstd frame starts with), the decompressed record stream
 * itself, which is compressed here into one zstd frame -- so that mutations
 * reach the record and message parsers instead of dying in zstd's checksum.
 * Invariants checked (abort on failure):
 *   - every record returned passes the writer's validation and re-encodes
 *     to a record that decodes again (pair assertion); a message record
 *     re-encodes to the same bytes through trace__msg_encode (the capture
 *     hot path);
 *   - the reader makes progress: each error skips input bytes, each
 *     record consumes decompressed bytes;
 *   - after MT_ETRUNC or MT_END, it only returns MT_END.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "core/buf.h"
#include "core/trace.h"
#include "core/trace_rec.h"
#include "tools/stats.h"

#define FRAME_MAX (4u << 20) /* keeps decompression bombs cheap */

static void
check(int ok)
{
    if (!ok)
        abort();
}

static void
pair_check(const struct trace_rec *rec, struct mt_buf *b)
{
    struct trace_rec again;
    struct mt_err err;
    uint32_t len;

    check(rec->type >= TRACE_REC_HEADER && rec->type <= TRACE_REC_TYPE_MAX);
    check(trace__rec_check(rec, &err) == 0);
    mt_buf_reset(b);
    check(trace__rec_encode(b, rec, &err) == 0);
    check(b->len >= TRACE_REC_PREFIX_LEN && b->data[0] == rec->type);
    len = (uint32_t)b->data[1] | (uint32_t)b->data[2] << 8 |
          (uint32_t)b->data[3] << 16 | (uint32_t)b->data[4] << 24;
    check(len == b->len - TRACE_REC_PREFIX_LEN);
    check(trace__rec_decode(rec->type, b->data + TRACE_REC_PREFIX_LEN, len,
                            &again, &err) == 0);
    check(trace__rec_time(&again) == trace__rec_time(rec));
    if (rec->type == TRACE_REC_MSG) { /* the hot path writes the same bytes */
        size_t n = b->len;
        check(trace__msg_encode(b, &rec->u.msg, &err) == 0);
        check(b->len == 2 * n && memcmp(b->data, b->data + n, n) == 0);
    }
}

static void read_all(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One compression context and output buffer for the whole process: a
 * fresh ZSTD_compress() context per input (several hundred KiB, zeroed)
 * cost more than the reader itself. */
static ZSTD_CCtx *cctx;
static uint8_t *zbuf;
static size_t zcap;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t bound, n;

    if (size == 0 || data[0] != 0x01) {
        read_all(data, size);
        return 0;
    }
    if (cctx == NULL) {
        cctx = ZSTD_createCCtx();
        check(cctx != NULL);
        check(!ZSTD_isError(
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1)));
    }
    bound = ZSTD_compressBound(size);
    if (bound > zcap) {
        free(zbuf);
        zbuf = malloc(bound);
        check(zbuf != NULL);
        zcap = bound;
    }
    n = ZSTD_compress2(cctx, zbuf, zcap, data, size);
    check(!ZSTD_isError(n));
    read_all(zbuf, n);
    return 0;
}

static void
read_all(const uint8_t *data, size_t size)
{
    struct trace_reader *r;
    struct trace_rec rec;
    struct mt_err err;
    struct mt_buf b;
    struct stats st;
    size_t errors = 0;
    int rc;

    r = trace_reader_open_mem(data, size, &err);
    if (r == NULL) {
        check(err.code < 0);
        return;
    }
    trace_reader_set_frame_max(r, FRAME_MAX);
    mt_buf_init(&b, TRACE_FRAME_LEN_MAX);
    check(stats_init(&st) == 0 && stats_set_top(&st, 4) == 0);
    for (;;) {
        rc = trace_reader_next(r, &rec, &err);
        if (rc == MT_END)
            break;
        if (rc == MT_ETRUNC) {
            check(trace_reader_next(r, &rec, &err) == MT_END);
            break;
        }
        if (rc < 0) {
            /* an error skips at least one input byte */
            check(++errors <= size + 1);
            continue;
        }
        check(rc == MT_OK);
        pair_check(&rec, &b);
        check(stats_add(&st, &rec) == 0);
    }
    check(trace_reader_next(r, &rec, &err) == MT_END);
    stats_finish(&st);
    for (size_t i = 0; i < st.ncmds; i++) {
        struct stats_sum sum;
        stats_summarize(&st.cmds[i], &sum);
        check(sum.p50_ms <= sum.p99_ms && sum.p99_ms <= sum.max_ms);
        check(st.cmds[i].errors + st.cmds[i].write_errors <=
              st.cmds[i].replies);
    }
    for (int leg = 0; leg < 2; leg++) { /* tls records */
        struct stats_tls *l = &st.tls[leg];
        struct stats_sum sum;
        uint64_t nv = 0, nc = 0;
        stats_summarize(&l->time, &sum);
        check(sum.count == l->handshakes);
        check(sum.p50_ms <= sum.p99_ms && sum.p99_ms <= sum.max_ms);
        check(l->peer_verified <= l->handshakes && l->resumed <= l->handshakes);
        check(l->nversions <= STATS_TLS_NAMES &&
              l->nciphers <= STATS_TLS_NAMES);
        for (size_t i = 0; i < l->nversions; i++)
            nv += l->versions[i].n;
        for (size_t i = 0; i < l->nciphers; i++)
            nc += l->ciphers[i].n;
        check(nv == l->handshakes && nc == l->handshakes);
    }
    stats_sort_slow(&st); /* slowest first, at most 4 */
    check(st.nslow <= 4);
    for (size_t i = 1; i < st.nslow; i++)
        check(st.slow[i - 1].lat_ns >= st.slow[i].lat_ns);
    stats_free(&st);
    mt_buf_free(&b);
    trace_reader_free(r);
}
