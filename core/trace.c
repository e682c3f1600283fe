/*
 * trace.c -- the trace writer and the names of trace enums (see trace.h;
 * the reader is in trace_read.c, record encoding in trace_rec.c, the format
 * in docs/trace-format.md).
 *
 * The writer collects records uncompressed in the open frame.  The frame is
 * compressed as one independent zstd frame (content size in its header),
 * followed by a skippable frame with the CRC-32 of its compressed bytes
 * (TRACE_CRC_FRAME_MAGIC), and both are written with one fwrite + fflush
 * when it holds
 * TRACE_FRAME_TARGET bytes, when TRACE_FLUSH_NS passed since its first
 * record (checked on every write and by trace_writer_tick), on
 * trace_writer_flush and on close.  A write error is sticky: later calls
 * return it and close writes nothing more, so the file holds every frame
 * written before the error, then at most one incomplete frame, which a
 * reader reports as lost.
 *
 * trace_writer_set_async: frames are then compressed and written by a
 * thread of the writer's own.  The caller's thread encodes records into
 * the open frame; a full frame is swapped with the thread's (empty) buffer
 * under the mutex and the thread compresses, checksums, writes and indexes
 * it while the caller fills the next one (double buffering: at most one
 * frame in flight; the caller waits for the thread only when it ends a
 * frame before the previous one is written).  The thread alone touches the
 * zstd context, zout, the index and the frame count while it runs; bytes
 * is atomic (trace_writer_bytes); its first error is kept under the mutex
 * and becomes the writer's sticky error at the next frame hand-off, flush
 * or close.
 */
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "mem.h"
#include "rd.h"
#include "trace_rec.h"

#define TRACE_INDEX_LEN_MAX (64u * 1024 * 1024) /* 3.3 million frames */

struct trace_writer {
    FILE *fp; /* owned if own_fp, else borrowed */
    bool own_fp;
    ZSTD_CCtx *cctx;            /* owned */
    const struct mt_clock *clk; /* borrowed: ages the open frame */
    struct mt_buf frame;        /* records of the open frame */
    struct mt_buf zout;         /* the compressed frame being written */
    struct mt_buf index;        /* TRACE_INDEX_ENTRY_LEN per frame written */
    bool index_full;            /* index hit its maximum: none is written */
    uint64_t frame_born_ns;     /* clk time of the open frame's first record */
    uint64_t frame_first_t_ns;  /* t_ns of its first record */
    uint32_t frame_records;
    uint64_t frames;
    uint64_t records;
    uint64_t bytes;
    uint64_t t_max; /* largest t_ns of any record: the end record's t_ns */
    int err;        /* sticky: first write error, 0 if none */
    /* trace_writer_set_async (see the top of the file) */
    bool async;
    bool job_pending; /* under mu: job holds a frame the thread owns */
    bool stop;        /* under mu: the thread exits when idle */
    int async_err;    /* under mu: the thread's first error */
    pthread_t thr;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a job handed over, a job done, stop */
    struct mt_buf job; /* the frame in flight */
    uint32_t job_records;
    uint64_t job_first_t_ns;
};

/*
 * The default clock that ages the open frame: CLOCK_MONOTONIC_COARSE (the
 * same clock as CLOCK_MONOTONIC, updated every tick, a few ms at most
 * behind it).  Reading it is a load from the vDSO page, several times
 * cheaper than CLOCK_MONOTONIC, and it is read once per record; a
 * 100 ms rule needs no better.
 */
static uint64_t
coarse_now(const struct mt_clock *clk)
{
    struct timespec ts;

    (void)clk;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
        return mt_now_ns();
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const struct mt_clock coarse_clock = {coarse_now, NULL};

/* One index entry: csize bytes on disk for a frame of raw_len bytes
 * holding records records, the first at first_t. */
static int
frame_index_add(struct trace_writer *w, size_t csize, size_t raw_len,
                uint32_t records, uint64_t first_t)
{
    uint8_t e[TRACE_INDEX_ENTRY_LEN];

    if (w->index_full)
        return 0;
    wr_le32(e, (uint32_t)csize);
    wr_le32(e + 4, (uint32_t)raw_len);
    wr_le64(e + 8, first_t);
    wr_le32(e + 16, records);
    if (mt_buf_append(&w->index, e, sizeof(e)) < 0) {
        mt_warn("trace: seek index %s after %llu frames; the trace will "
                "have no index (readers do not need one)",
                w->index.len + sizeof(e) > w->index.len_max ? "full"
                                                            : "out of memory",
                (unsigned long long)w->frames);
        w->index_full = true;
        mt_buf_free(&w->index);
    }
    return 0;
}

/* Writes n bytes and flushes them to the kernel.  A short write is retried
 * once so that the error is the real one (ENOSPC, EIO), not a guess. */
static int
write_all(struct trace_writer *w, const void *p, size_t n)
{
    const uint8_t *b = p;
    size_t done = 0, k;
    int tries = 0;

    while (done < n) {
        errno = 0;
        k = fwrite(b + done, 1, n - done, w->fp);
        done += k;
        if (k == 0 && ++tries > 1)
            return errno ? -errno : -EIO;
        if (done < n && errno != 0 && errno != EINTR && errno != EAGAIN)
            return -errno;
        clearerr(w->fp);
    }
    errno = 0;
    if (fflush(w->fp) != 0)
        return errno ? -errno : -EIO;
    __atomic_fetch_add(&w->bytes, n, __ATOMIC_RELAXED);
    return 0;
}

/* Appends the checksum frame of the n compressed bytes at p (which
 * TRACE_CRC_FRAME_LEN bytes of room follow). */
static void
crc_frame_put(uint8_t *p, size_t n)
{
    uint8_t *c = p + n;

    wr_le32(c, TRACE_CRC_FRAME_MAGIC);
    wr_le32(c + 4, 8);
    wr_le32(c + 8, (uint32_t)crc32(0, p, (uInt)n));
    wr_le32(c + 12, (uint32_t)n);
}

/* Compresses frame f (records records, the first at first_t) and writes
 * it with its checksum frame after it, in one write; indexes it.
 * *write_failed: the error (if any) came from writing. */
static int
frame_write(struct trace_writer *w, const struct mt_buf *f, uint32_t records,
            uint64_t first_t, bool *write_failed)
{
    size_t bound, n;
    int rc;

    *write_failed = false;
    bound = ZSTD_compressBound(f->len);
    mt_buf_reset(&w->zout);
    rc = mt_buf_reserve(&w->zout, bound + TRACE_CRC_FRAME_LEN);
    if (rc < 0)
        return rc;
    n = ZSTD_compress2(w->cctx, w->zout.data, bound, f->data, f->len);
    if (ZSTD_isError(n)) {
        mt_error("trace: zstd compression failed: %s", ZSTD_getErrorName(n));
        return MT_ECOMPRESS;
    }
    crc_frame_put(w->zout.data, n);
    n += TRACE_CRC_FRAME_LEN;
    rc = write_all(w, w->zout.data, n);
    if (rc < 0) {
        *write_failed = true;
        return rc;
    }
    frame_index_add(w, n, f->len, records, first_t);
    w->frames++;
    return 0;
}

/* The compression thread: writes each frame handed over until stopped. */
static void *
async_main(void *arg)
{
    struct trace_writer *w = arg;
    bool wf;
    int rc;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->job_pending && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->job_pending)
            break;
        pthread_mutex_unlock(&w->mu);
        rc = w->async_err < 0 ? 0 /* frames after an error are dropped */
                              : frame_write(w, &w->job, w->job_records,
                                            w->job_first_t_ns, &wf);
        pthread_mutex_lock(&w->mu);
        if (rc < 0 && w->async_err == 0)
            w->async_err = rc;
        w->job_pending = false;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Waits until no frame is in flight; the thread's error becomes the
 * writer's.  Call with mu held. */
static void
async_wait_locked(struct trace_writer *w)
{
    while (w->job_pending)
        pthread_cond_wait(&w->cv, &w->mu);
    if (w->async_err < 0 && w->err == 0)
        w->err = w->async_err;
}

static int
async_wait(struct trace_writer *w)
{
    pthread_mutex_lock(&w->mu);
    async_wait_locked(w);
    pthread_mutex_unlock(&w->mu);
    return w->err;
}

/* Hands the open frame to the thread (after the previous one is written)
 * and starts an empty one. */
static int
async_hand_off(struct trace_writer *w)
{
    struct mt_buf t;

    pthread_mutex_lock(&w->mu);
    async_wait_locked(w);
    if (w->err < 0) {
        pthread_mutex_unlock(&w->mu);
        return w->err;
    }
    t = w->job;
    w->job = w->frame;
    w->frame = t;
    w->job_records = w->frame_records;
    w->job_first_t_ns = w->frame_first_t_ns;
    w->job_pending = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    w->frame_records = 0;
    mt_buf_reset(&w->frame);
    return 0;
}

/* Writes what is in flight and ends the thread; the writer is synchronous
 * again. */
static void
async_stop(struct trace_writer *w)
{
    if (!w->async)
        return;
    pthread_mutex_lock(&w->mu);
    async_wait_locked(w);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thr, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    mt_buf_free(&w->job);
    w->async = false;
}

/* Ends the open frame (if any): compresses and writes it here, or hands
 * it to the compression thread. */
static int
frame_end(struct trace_writer *w)
{
    bool write_failed;
    int rc;

    if (w->err < 0)
        return w->err;
    if (w->frame.len == 0)
        return 0;
    if (w->async)
        return async_hand_off(w);
    rc = frame_write(w, &w->frame, w->frame_records, w->frame_first_t_ns,
                     &write_failed);
    if (rc < 0) {
        if (write_failed)
            w->err = rc;
        return rc;
    }
    w->frame_records = 0;
    mt_buf_reset(&w->frame);
    return 0;
}

/* Accounts for a record just appended to the open frame (t: its t_ns, now:
 * the writer's clock); ends the frame when it is full or old. */
static int
writer_added(struct trace_writer *w, uint64_t t, uint64_t now)
{
    if (w->frame_records == 0) {
        w->frame_born_ns = now;
        w->frame_first_t_ns = t;
    }
    if (t > w->t_max)
        w->t_max = t;
    w->frame_records++;
    w->records++;
    if (w->frame.len >= TRACE_FRAME_TARGET ||
        now - w->frame_born_ns >= TRACE_FLUSH_NS)
        return frame_end(w);
    return 0;
}

/* Appends one record to the open frame; ends the frame when it is full or
 * old.  The record is validated by trace__rec_encode before anything is
 * written. */
static int
writer_add(struct trace_writer *w, const struct trace_rec *rec)
{
    uint64_t now;
    int rc;

    MT_ASSERT(w != NULL);
    if (w->err < 0)
        return w->err;
    now = w->clk->now_ns(w->clk);
    rc = trace__rec_encode(&w->frame, rec, NULL);
    if (rc < 0)
        return rc;
    return writer_added(w, trace__rec_time(rec), now);
}

static struct trace_writer *
writer_new(FILE *fp, bool own_fp, const struct trace_header *hdr,
           struct mt_err *err)
{
    struct trace_writer *w = mt_calloc(1, sizeof(*w));
    struct trace_rec rec;
    int rc;

    if (w == NULL) {
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        return NULL;
    }
    w->fp = fp;
    w->own_fp = own_fp;
    w->clk = &coarse_clock;
    mt_buf_init(&w->frame, TRACE_FRAME_LEN_MAX);
    mt_buf_init(&w->zout,
                ZSTD_COMPRESSBOUND(TRACE_FRAME_LEN_MAX) + TRACE_CRC_FRAME_LEN);
    mt_buf_init(&w->index, TRACE_INDEX_LEN_MAX);
    w->cctx = ZSTD_createCCtx();
    if (w->cctx == NULL) {
        mt_err_set(err, -ENOMEM, 0, "out of memory (zstd context)");
        goto fail;
    }
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel,
                           TRACE_ZSTD_LEVEL_DEFAULT);
    /* Integrity: the checksum frame after each frame (crc_frame_put). */
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 0);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    memset(&rec, 0, sizeof(rec));
    rec.type = TRACE_REC_HEADER;
    rec.u.header = *hdr;
    rc = trace__rec_encode(&w->frame, &rec, err);
    if (rc < 0)
        goto fail;
    w->frame_first_t_ns = hdr->start_mono_ns;
    w->t_max = hdr->start_mono_ns;
    w->frame_records = 1;
    w->records = 1;
    /* The header gets a frame of its own, on disk at once: a capture that
     * dies before its first message still leaves a readable trace. */
    rc = frame_end(w);
    if (rc < 0) {
        mt_err_set(err, rc, 0, "writing the trace header: %s", mt_strerror(rc));
        goto fail;
    }
    return w;
fail:
    ZSTD_freeCCtx(w->cctx);
    mt_buf_free(&w->frame);
    mt_buf_free(&w->zout);
    mt_buf_free(&w->index);
    mt_free(w);
    return NULL;
}

struct trace_writer *
trace_writer_open(const char *path, unsigned flags,
                  const struct trace_header *hdr, struct mt_err *err)
{
    int oflags = O_WRONLY | O_CREAT | O_CLOEXEC;
    struct trace_writer *w;
    struct stat st;
    bool regular;
    FILE *fp;
    int fd;

    MT_ASSERT(path != NULL && hdr != NULL);
    oflags |= (flags & TRACE_W_FORCE) ? O_TRUNC : O_EXCL;
    fd = open(path, oflags, 0600);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST)
            mt_err_set(err, -e, 0, "%s exists; pass --force to overwrite it",
                       path);
        else
            mt_err_set(err, -e, 0, "cannot create %s: %s", path, strerror(e));
        return NULL;
    }
    /* Only a regular file is ours to chmod or to remove: OUT may be a
     * device (/dev/null, /dev/full), a FIFO or a terminal, and as root a
     * chmod or an unlink of /dev/full would change the machine. */
    regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (regular && (flags & TRACE_W_FORCE) && fchmod(fd, 0600) != 0)
        mt_warn("trace: cannot chmod 0600 %s: %s", path, strerror(errno));
    fp = fdopen(fd, "wb");
    if (fp == NULL) {
        mt_err_set(err, -errno, 0, "cannot open %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    w = writer_new(fp, true, hdr, err);
    if (w == NULL) {
        fclose(fp);
        if (regular)
            unlink(path); /* ours, and holds no complete header: remove it */
    }
    return w;
}

struct trace_writer *
trace_writer_open_fp(FILE *fp, const struct trace_header *hdr,
                     struct mt_err *err)
{
    MT_ASSERT(fp != NULL && hdr != NULL);
    return writer_new(fp, false, hdr, err);
}

int
trace_writer_set_level(struct trace_writer *w, int level)
{
    size_t rc;

    MT_ASSERT(w != NULL);
    if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
        return MT_EUSAGE;
    if (w->async) { /* the thread uses cctx only while a frame is in flight */
        pthread_mutex_lock(&w->mu);
        async_wait_locked(w);
    }
    rc = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    if (w->async)
        pthread_mutex_unlock(&w->mu);
    return ZSTD_isError(rc) ? MT_EUSAGE : 0;
}

int
trace_zstd_level_min(void)
{
    return ZSTD_minCLevel();
}

int
trace_zstd_level_max(void)
{
    return ZSTD_maxCLevel();
}

void
trace_writer_set_clock(struct trace_writer *w, const struct mt_clock *clk)
{
    MT_ASSERT(w != NULL && clk != NULL);
    w->clk = clk;
}

int
trace_writer_conn_open(struct trace_writer *w,
                       const struct trace_conn_open *rec)
{
    struct trace_rec r;
    r.type = TRACE_REC_CONN_OPEN;
    r.u.open = *rec;
    return writer_add(w, &r);
}

int
trace_writer_conn_close(struct trace_writer *w,
                        const struct trace_conn_close *rec)
{
    struct trace_rec r;
    r.type = TRACE_REC_CONN_CLOSE;
    r.u.close = *rec;
    return writer_add(w, &r);
}

int
trace_writer_msg(struct trace_writer *w, const struct trace_msg *rec)
{
    uint64_t now;
    int rc;

    MT_ASSERT(w != NULL && rec != NULL);
    if (w->err < 0)
        return w->err;
    now = w->clk->now_ns(w->clk);
    rc = trace__msg_encode(&w->frame, rec, NULL);
    if (rc < 0)
        return rc;
    return writer_added(w, rec->t_ns, now);
}

int
trace_writer_stats(struct trace_writer *w, const struct trace_stats *rec)
{
    struct trace_rec r;
    r.type = TRACE_REC_STATS;
    r.u.stats = *rec;
    return writer_add(w, &r);
}

int
trace_writer_tls(struct trace_writer *w, const struct trace_tls *rec)
{
    struct trace_rec r;
    r.type = TRACE_REC_TLS;
    r.u.tls = *rec;
    return writer_add(w, &r);
}

int
trace_writer_tick(struct trace_writer *w, uint64_t now_ns)
{
    MT_ASSERT(w != NULL);
    if (w->err < 0)
        return w->err;
    if (w->frame_records == 0 || now_ns - w->frame_born_ns < TRACE_FLUSH_NS)
        return 0;
    return frame_end(w);
}

int
trace_writer_flush(struct trace_writer *w)
{
    int rc;

    MT_ASSERT(w != NULL);
    rc = frame_end(w);
    if (rc == 0 && w->async)
        rc = async_wait(w);
    return rc;
}

int
trace_writer_set_async(struct trace_writer *w)
{
    int rc;

    MT_ASSERT(w != NULL);
    if (w->async)
        return 0;
    mt_buf_init(&w->job, TRACE_FRAME_LEN_MAX);
    w->job_pending = w->stop = false;
    w->async_err = 0;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    rc = pthread_create(&w->thr, NULL, async_main, w);
    if (rc != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        mt_buf_free(&w->job);
        return -rc;
    }
    w->async = true;
    return 0;
}

/* The skippable frame with the seek index, footer last. */
static int
index_write(struct trace_writer *w)
{
    uint8_t head[8], foot[TRACE_FOOTER_LEN];
    size_t n = w->index.len;
    int rc;

    if (w->index_full)
        return 0;
    MT_ASSERT(n == w->frames * TRACE_INDEX_ENTRY_LEN);
    wr_le32(head, TRACE_INDEX_FRAME_MAGIC);
    wr_le32(head + 4, (uint32_t)(n + TRACE_FOOTER_LEN));
    wr_le32(foot, (uint32_t)w->frames);
    wr_le32(foot + 4, TRACE_INDEX_VERSION);
    wr_le32(foot + 8, TRACE_FOOTER_MAGIC);
    errno = 0;
    if (fwrite(head, 1, sizeof(head), w->fp) != sizeof(head) ||
        (n > 0 && fwrite(w->index.data, 1, n, w->fp) != n))
        return errno ? -errno : -EIO;
    rc = write_all(w, foot, sizeof(foot));
    if (rc == 0)
        __atomic_fetch_add(&w->bytes, sizeof(head) + n, __ATOMIC_RELAXED);
    return rc;
}

static int
writer_finish(struct trace_writer *w)
{
    struct trace_rec r;
    int rc;

    if (w->err < 0)
        return w->err;
    memset(&r, 0, sizeof(r));
    r.type = TRACE_REC_END;
    r.u.end.t_ns = w->t_max;
    r.u.end.records = w->records;
    rc = trace__rec_encode(&w->frame, &r, NULL);
    if (rc < 0)
        return rc;
    if (w->frame_records == 0)
        w->frame_first_t_ns = w->t_max;
    w->frame_records++;
    w->records++;
    rc = frame_end(w);
    if (rc < 0)
        return rc;
    async_stop(w); /* the last frame written, the thread gone */
    if (w->err < 0)
        return w->err;
    rc = index_write(w);
    if (rc < 0)
        return rc;
    if (w->own_fp && fsync(fileno(w->fp)) != 0 && errno != EINVAL)
        return -errno;
    return 0;
}

int
trace_writer_close(struct trace_writer *w)
{
    int rc;

    if (w == NULL)
        return 0;
    rc = writer_finish(w);
    async_stop(w); /* after an error: still written what it could, joined */
    if (rc == 0 && w->err < 0)
        rc = w->err;
    if (w->own_fp && fclose(w->fp) != 0 && rc == 0)
        rc = errno ? -errno : -EIO;
    ZSTD_freeCCtx(w->cctx);
    mt_buf_free(&w->frame);
    mt_buf_free(&w->zout);
    mt_buf_free(&w->index);
    mt_free(w);
    return rc;
}

uint64_t
trace_writer_records(const struct trace_writer *w)
{
    return w->records;
}

uint64_t
trace_writer_bytes(const struct trace_writer *w)
{
    return __atomic_load_n(&w->bytes, __ATOMIC_RELAXED);
}

const char *
trace_dir_name(uint8_t dir)
{
    switch (dir) {
    case TRACE_DIR_C2S:
        return "c2s";
    case TRACE_DIR_S2C:
        return "s2c";
    default:
        return "unknown";
    }
}

const uint8_t *
trace_msg_plain(const struct trace_msg *m, uint32_t *len)
{
    *len = m->plain != NULL ? m->plain_len : m->wire_len;
    return m->plain != NULL ? m->plain : m->wire;
}

const char *
trace_source_name(uint8_t source)
{
    switch (source) {
    case TRACE_SRC_PROXY:
        return "proxy";
    case TRACE_SRC_PCAP:
        return "pcap";
    case TRACE_SRC_LIVE:
        return "live";
    case TRACE_SRC_SYNTH:
        return "synthetic";
    case TRACE_SRC_RECORDING:
        return "recording";
    case TRACE_SRC_PLAY:
        return "play";
    case TRACE_SRC_UNKNOWN:
    default:
        return "unknown";
    }
}

const char *
trace_close_reason_name(uint8_t reason)
{
    static const char *const names[] = {
        "normal",        "client-reset", "server-reset", "error",
        "upstream-fail", "shutdown",     "idle",
    };
    if (reason < sizeof(names) / sizeof(names[0]))
        return names[reason];
    return "unknown";
}

const char *
trace_tls_leg_name(uint8_t leg)
{
    switch (leg) {
    case TRACE_TLS_CLIENT:
        return "client";
    case TRACE_TLS_TARGET:
        return "target";
    default:
        return "unknown";
    }
}
