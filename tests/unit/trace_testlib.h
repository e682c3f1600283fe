/*
 * trace_testlib.h -- what test_trace.c and test_trace_recover.c share: a
 * temp dir per group, headers and messages made from a seed, a file read
 * whole, every record of a trace read and tallied, hand-made frames
 * (compressed here with zstd).  Included by one test file each.
 */
#ifndef MT_TEST_TRACE_TESTLIB_H
#define MT_TEST_TRACE_TESTLIB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/trace.h"
#include "core/trace_rec.h"

static char tmpdir[64];

static inline int
setup_dir(void **state)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_trace.XXXXXX");
    return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static inline int
teardown_dir(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static inline void
tmp_path(char *dst, size_t cap, const char *name)
{
    snprintf(dst, cap, "%s/%s", tmpdir, name);
    unlink(dst);
}

static inline void
mk_header(struct trace_header *h)
{
    memset(h, 0, sizeof(*h));
    snprintf(h->tool_version, sizeof(h->tool_version), "mtrace test");
    h->source = TRACE_SRC_SYNTH;
    snprintf(h->source_desc, sizeof(h->source_desc), "test_trace.c");
    h->start_wall_ns = 1700000000123456789ull;
    h->start_mono_ns = 1000;
    h->ts_precision_ns = 1;
}

/* A fake wire message of n bytes (header with opcode op, then pattern). */
static inline uint8_t *
mk_wire(size_t n, int32_t op, uint32_t seed)
{
    uint8_t *p = malloc(n);
    uint32_t x = seed * 2654435761u + 1;
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
    if (n >= 16) {
        wr_le32(p, (uint32_t)n);
        wr_le32(p + 12, (uint32_t)op);
    }
    return p;
}

static inline uint8_t *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p;
    long n;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    p = malloc(n > 0 ? (size_t)n : 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

/* Reads every record of buf; counts per type in cnt[0..7); returns the
 * final code (MT_END or negative), err filled with the first error. */
struct tally {
    unsigned cnt[8];
    unsigned total;
    unsigned errors;
    int first_err;
    struct mt_err err;
    uint64_t wire_sum; /* a hash of every message's bytes, in order */
    uint64_t lost;
};

static inline int
read_all(struct trace_reader *r, const struct mt_err *open_err, struct tally *t,
         bool go_on)
{
    struct mt_err err;
    struct trace_rec rec;
    int rc;

    memset(t, 0, sizeof(*t));
    if (r == NULL) {
        t->err = *open_err;
        t->first_err = open_err->code;
        return open_err->code;
    }
    for (;;) {
        rc = trace_reader_next(r, &rec, &err);
        if (rc == MT_OK) {
            t->cnt[rec.type < 8 ? rec.type : 0]++;
            t->total++;
            if (rec.type == TRACE_REC_MSG)
                for (uint32_t i = 0; i < rec.u.msg.wire_len; i++)
                    t->wire_sum = t->wire_sum * 31 + rec.u.msg.wire[i];
            continue;
        }
        if (rc == MT_END)
            break;
        assert_true(rc < 0);
        if (t->errors++ == 0) {
            t->err = err;
            t->first_err = rc;
        }
        if (!go_on)
            break;
    }
    t->lost = trace_reader_lost_bytes(r);
    trace_reader_free(r);
    return t->errors ? t->first_err : MT_END;
}

static inline int
read_all_mem(const uint8_t *buf, size_t len, struct tally *t, bool go_on)
{
    struct mt_err err;
    struct trace_reader *r = trace_reader_open_mem(buf, len, &err);
    return read_all(r, &err, t, go_on);
}

/* The same bytes through a FILE * (the chunked input path). */
static inline int
read_all_fp(const uint8_t *buf, size_t len, struct tally *t, bool go_on)
{
    struct mt_err err;
    FILE *fp = fmemopen((void *)(uintptr_t)buf, len ? len : 1, "rb");
    struct trace_reader *r;
    int rc;

    assert_non_null(fp);
    if (len == 0)
        fgetc(fp); /* fmemopen needs size >= 1: consume it */
    r = trace_reader_open_fp(fp, &err);
    rc = read_all(r, &err, t, go_on);
    fclose(fp);
    return rc;
}

/* ---- valid: round trips ---- */

/* Writes frame content (records) as one zstd frame appended to out. */
static inline void
append_frame(struct mt_buf *out, const uint8_t *content, size_t n)
{
    size_t bound = ZSTD_compressBound(n), z;
    assert_int_equal(mt_buf_reserve(out, bound), 0);
    z = ZSTD_compress(out->data + out->len, bound, content, n, 3);
    assert_false(ZSTD_isError(z));
    out->len += z;
}

static inline void
append_rec(struct mt_buf *b, uint8_t type, const void *payload, uint32_t n)
{
    uint8_t pre[5];
    pre[0] = type;
    wr_le32(pre + 1, n);
    assert_int_equal(mt_buf_append(b, pre, 5), 0);
    assert_int_equal(mt_buf_append(b, payload, n), 0);
}

static inline void
encode(struct mt_buf *b, const struct trace_rec *rec)
{
    struct mt_err err;
    assert_int_equal(trace__rec_encode(b, rec, &err), 0);
}

/*
 * Writes a trace of nframes data frames of 3 messages each; returns the
 * file and the offsets where each frame starts (offs[nframes+1]: the end
 * frame, offs[nframes+2]: the index).  Each frame's checksum frame is part
 * of it: the last TRACE_CRC_FRAME_LEN bytes before the next offset.
 */
static inline uint8_t *
build_frames(const char *name, int nframes, uint64_t *offs, size_t *len)
{
    char path[128];
    struct trace_header h;
    struct mt_err err;
    struct trace_writer *w;
    struct trace_msg m = {.conn_id = 1, .dir = TRACE_DIR_C2S};
    uint8_t *wire = mk_wire(300, 2013, 4), *file;

    tmp_path(path, sizeof(path), name);
    mk_header(&h);
    w = trace_writer_open(path, 0, &h, &err);
    assert_non_null(w);
    offs[0] = 0;
    m.wire = wire;
    m.wire_len = 300;
    for (int f = 0; f < nframes; f++) {
        offs[f + 1] = trace_writer_bytes(w);
        for (int i = 0; i < 3; i++) {
            m.t_ns = (uint64_t)(f * 10 + i);
            wire[20] = (uint8_t)(f * 3 + i);
            assert_int_equal(trace_writer_msg(w, &m), 0);
        }
        assert_int_equal(trace_writer_flush(w), 0);
    }
    offs[nframes + 1] = trace_writer_bytes(w);
    assert_int_equal(trace_writer_close(w), 0);
    file = slurp(path, len);
    /* the end frame is the last data frame: find the index after it and
     * the end frame's checksum frame */
    offs[nframes + 2] = offs[nframes + 1] +
                        ZSTD_findFrameCompressedSize(file + offs[nframes + 1],
                                                     *len - offs[nframes + 1]) +
                        TRACE_CRC_FRAME_LEN;
    free(wire);
    return file;
}

#endif
