/*
 * recdir.c -- the files of a mongod traffic recording (recdir.h): the
 * .bin files of a directory in name order (the server's traffic_reader.cpp
 * sorts them the same way), the layout of the first one, the trace header,
 * and each file's CRC-32C against the checksum.txt the recorder writes
 * beside them; capture/recimport.c converts the records.
 */
#include "recdir.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/trace.h"
#include "core/wire.h"
#include "recimport.h"
#include "recording.h"

#define CHECKSUM_TXT_MAX (16u << 20)
#define FILES_MAX 100000u

static volatile sig_atomic_t g_stop;

/* See recdir.h. */
void
recdir_stop(void)
{
    g_stop = 1;
}

struct rfiles {
    char **path; /* owned */
    size_t n;
    char *sums; /* owned: checksum.txt, or NULL */
    size_t sums_len;
    bool dir; /* the input is a directory */
};

static void
rfiles_free(struct rfiles *f)
{
    for (size_t i = 0; i < f->n; i++)
        mt_free(f->path[i]);
    mt_free(f->path);
    mt_free(f->sums);
}

static int
cmp_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
add_path(struct rfiles *f, const char *dir, const char *name,
         struct mt_err *err)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char **p, *s;

    if (f->n == FILES_MAX)
        return mt_err_set(err, MT_ELIMIT, 0, "%s: more than %u .bin files", dir,
                          FILES_MAX);
    p = mt_realloc(f->path, (f->n + 1) * sizeof(*p));
    s = mt_malloc(n);
    if (p == NULL || s == NULL) {
        mt_free(s);
        if (p != NULL)
            f->path = p;
        return mt_err_set(err, -ENOMEM, 0, "out of memory");
    }
    f->path = p;
    if (dir[0] != '\0')
        snprintf(s, n, "%s/%s", dir, name);
    else
        snprintf(s, n, "%s", name);
    f->path[f->n++] = s;
    return 0;
}

/* checksum.txt of dir, when there is one (bounded). */
static void
read_sums(struct rfiles *f, const char *dir)
{
    char path[4096];
    FILE *fp;
    long n;

    snprintf(path, sizeof(path), "%s/checksum.txt", dir[0] ? dir : ".");
    if ((fp = fopen(path, "rb")) == NULL)
        return;
    if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) > 0 &&
        (unsigned long)n <= CHECKSUM_TXT_MAX && fseek(fp, 0, SEEK_SET) == 0 &&
        (f->sums = mt_malloc((size_t)n)) != NULL) {
        f->sums_len = fread(f->sums, 1, (size_t)n, fp);
    }
    fclose(fp);
}

/* The recording's files: the .bin files of DIR sorted by name, or FILE. */
static int
list_files(const char *in, struct rfiles *f, struct mt_err *err)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    int rc = 0;

    if (stat(in, &st) != 0)
        return mt_err_set(err, -errno, 0, "--recording %s: %s", in,
                          strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        char dir[4096];
        const char *slash = strrchr(in, '/');
        size_t n = slash ? (size_t)(slash - in) : 0;
        snprintf(dir, sizeof(dir), "%.*s", (int)n, in);
        read_sums(f, slash ? (n ? dir : "/") : "");
        return add_path(f, "", in, err);
    }
    f->dir = true;
    if ((d = opendir(in)) == NULL)
        return mt_err_set(err, -errno, 0, "--recording %s: %s", in,
                          strerror(errno));
    while (rc == 0 && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        char p[4096];
        if (n < 5 || strcmp(e->d_name + n - 4, ".bin") != 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", in, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            rc = add_path(f, in, e->d_name, err);
    }
    closedir(d);
    if (rc < 0)
        return rc;
    if (f->n == 0)
        return mt_err_set(err, -ENOENT, 0,
                          "--recording %s: no .bin files in it (a "
                          "recording is <ms>.bin files)",
                          in);
    qsort(f->path, f->n, sizeof(f->path[0]), cmp_path);
    read_sums(f, in);
    return 0;
}

/* The layout of a file's first record; NONE for an empty file. */
static int
file_layout(const char *path, struct mt_err *err)
{
    struct recording_file f;
    struct recording_packet p;
    int layout = RECORDING_LAYOUT_NONE, rc;

    if ((rc = recording_file_open(&f, path, err)) < 0)
        return rc;
    /* Read as the date layout, whose smaller minimum frames any record. */
    rc = recording_file_next(&f, RECORDING_LAYOUT_DATE, &p, err);
    if (rc == MT_OK || rc == MT_ECORRUPT || rc == MT_EUNSUPPORTED)
        layout = recording_detect(f.rec.data, f.rec.len, err);
    recording_file_close(&f);
    if (rc == MT_END)
        return RECORDING_LAYOUT_NONE;
    if (layout != RECORDING_LAYOUT_NONE)
        return layout;
    return err != NULL && err->code < 0 ? err->code : MT_ECORRUPT;
}

/* start_wall_ns from "<ms since the epoch>.bin": when the recorder opened
 * the recording's first file, right after the recording started. */
static uint64_t
name_wall_ns(const char *path)
{
    const char *b = strrchr(path, '/');
    uint64_t ms = 0;
    size_t i;

    b = b ? b + 1 : path;
    for (i = 0; b[i] >= '0' && b[i] <= '9' && i < 16; i++)
        ms = ms * 10 + (uint64_t)(b[i] - '0');
    if (i < 10 || strcmp(b + i, ".bin") != 0)
        return 0;
    return ms * 1000000;
}

/* The date layout stamps each record with the wall clock: the header's
 * start is the first record's time. */
static uint64_t
first_date_ns(const char *path)
{
    struct recording_file f;
    struct recording_packet p;
    uint64_t t = 0;

    if (recording_file_open(&f, path, NULL) < 0)
        return 0;
    if (recording_file_next(&f, RECORDING_LAYOUT_DATE, &p, NULL) == MT_OK &&
        p.time <= UINT64_MAX / 1000000)
        t = p.time * 1000000;
    recording_file_close(&f);
    return t;
}

static struct trace_writer *
open_trace(const struct recdir_opts *o, const struct rfiles *f, size_t first,
           int layout, struct mt_err *err)
{
    struct trace_header h;
    struct trace_writer *w;

    memset(&h, 0, sizeof(h));
    snprintf(h.tool_version, sizeof(h.tool_version), "mtrace %s", MT_VERSION);
    h.source = TRACE_SRC_RECORDING;
    snprintf(h.source_desc, sizeof(h.source_desc),
             "recording %.160s (mongod traffic recorder, %s layout, %zu "
             "file%s)",
             o->in_path, layout == RECORDING_LAYOUT_EVENT ? "event" : "date",
             f->n, f->n == 1 ? "" : "s");
    if (layout == RECORDING_LAYOUT_EVENT) {
        h.ts_precision_ns = 1000;
        h.start_wall_ns = name_wall_ns(f->path[first]);
        h.start_mono_ns = 0;
    } else {
        h.ts_precision_ns = 1000000;
        h.start_wall_ns = h.start_mono_ns = first_date_ns(f->path[first]);
    }
    w = trace_writer_open(o->out_path, o->trace_flags, &h, err);
    if (w != NULL &&
        trace_writer_set_level(
            w, o->zstd_level ? o->zstd_level : TRACE_ZSTD_LEVEL_IMPORT) < 0) {
        mt_err_set(err, MT_EUSAGE, 0, "--zstd-level %d refused by zstd",
                   o->zstd_level);
        trace_writer_close(w);
        return NULL;
    }
    return w;
}

/* The rest of a file, into its CRC (after a framing loss). */
static void
drain_crc(struct recording_file *f)
{
    uint8_t b[65536];
    size_t n;

    while ((n = fread(b, 1, sizeof(b), f->fp)) > 0)
        f->crc = wire_crc32c(f->crc, b, n);
}

/* A record the file cannot be framed past, or one that was skipped. */
static bool
file_problem(struct recimport *im, struct recording_file *f, int rc,
             const struct mt_err *e, uint64_t file_records)
{
    struct recimport_stats *st = recimport_stats(im);

    switch (rc) {
    case MT_EUNSUPPORTED:
        st->unknown++;
        recimport_problem(im, "record at offset %zu: %s; skipped", e->offset,
                          e->msg);
        return true;
    case MT_ECORRUPT:
        st->bad_records++;
        recimport_problem(im, "record at offset %zu: %s; skipped", e->offset,
                          e->msg);
        return true;
    case MT_PARTIAL:
        st->truncated++;
        recimport_problem(im,
                          "truncated at offset %zu: %s; the file's %llu "
                          "records before it were imported",
                          e->offset, e->msg, (unsigned long long)file_records);
        return false;
    case MT_ETOOBIG:
    case MT_EPROTO:
        st->bad_size++;
        st->unread_bytes += f->size > e->offset ? f->size - e->offset : 0;
        recimport_problem(im,
                          "bad record at offset %zu: %s; the remaining %llu "
                          "bytes of the file cannot be framed and were not "
                          "imported",
                          e->offset, e->msg,
                          (unsigned long long)(f->size > e->offset
                                                   ? f->size - e->offset
                                                   : 0));
        return false;
    default:
        recimport_problem(im, "at offset %zu: %s", e->offset, e->msg);
        return false;
    }
}

/* Checks a file read to its end against checksum.txt. */
static void
check_sum(struct recimport *im, const struct rfiles *fs,
          const struct recording_file *f, const char *path, bool clean)
{
    const char *base = strrchr(path, '/');
    uint32_t want;
    int found;

    base = base ? base + 1 : path;
    found = fs->sums
                ? recording_checksum_lookup(fs->sums, fs->sums_len, base, &want)
                : 0;
    if (found <= 0 || !clean) {
        recimport_stats(im)->crc_unchecked++;
        if (found < 0)
            mt_warn("%s: its checksum.txt entry is not a CRC-32C; not "
                    "checked",
                    path);
        return;
    }
    if (want == f->crc) {
        recimport_stats(im)->crc_ok++;
        return;
    }
    recimport_stats(im)->crc_bad++;
    recimport_problem(im,
                      "CRC-32C of the file is 0x%08x, checksum.txt says "
                      "0x%08x: the file changed after mongod wrote it (its "
                      "records were imported; they may be damaged)",
                      f->crc, want);
}

/* Imports one file; 0 or a fatal (writer) error. */
static int
import_file(struct recimport *im, const struct rfiles *fs, size_t i, int layout,
            struct mt_err *err)
{
    struct recording_file f;
    struct recording_packet p;
    struct mt_err e = {0};
    bool clean = true;
    uint64_t records0 = recimport_stats(im)->records;
    int rc;

    recimport_set_where(im, fs->path[i], 0);
    if ((rc = recording_file_open(&f, fs->path[i], &e)) < 0) {
        recimport_problem(im, "%s", e.msg);
        return 0;
    }
    recimport_stats(im)->files++;
    while (!g_stop) {
        recimport_set_where(im, fs->path[i], f.off);
        rc = recording_file_next(&f, layout, &p, &e);
        if (rc == MT_END)
            break;
        if (rc == MT_OK) {
            if ((rc = recimport_packet(im, &p, err)) < 0)
                break;
            continue;
        }
        clean = false;
        if (!file_problem(im, &f, rc, &e,
                          recimport_stats(im)->records - records0))
            break;
    }
    if (g_stop) {
        clean = false; /* not read to its end: its CRC cannot be checked */
        rc = 0;
    }
    if (rc >= 0 || rc == MT_PARTIAL || rc == MT_ETOOBIG || rc == MT_EPROTO ||
        rc == -EIO) {
        drain_crc(&f);
        check_sum(im, fs, &f, fs->path[i], clean);
        rc = 0;
    }
    recording_file_close(&f);
    return rc;
}

/* Whether base names a file of fs. */
static bool
have_file(const struct rfiles *fs, const char *base, size_t n)
{
    for (size_t i = 0; i < fs->n; i++) {
        const char *b = strrchr(fs->path[i], '/');
        b = b ? b + 1 : fs->path[i];
        if (strlen(b) == n && memcmp(b, base, n) == 0)
            return true;
    }
    return false;
}

/* A directory's checksum.txt names every file the recorder finished: one
 * it names that is not there is a missing part of the recording. */
static void
check_listed(struct recimport *im, const struct rfiles *fs, const char *dir)
{
    size_t pos = 0;

    recimport_set_where(im, dir, 0);
    while (fs->sums != NULL && pos < fs->sums_len) {
        const char *line = fs->sums + pos, *nl, *tab, *base;
        size_t n;

        nl = memchr(line, '\n', fs->sums_len - pos);
        n = nl != NULL ? (size_t)(nl - line) : fs->sums_len - pos;
        pos += n + 1;
        tab = memchr(line, '\t', n);
        if (tab == NULL)
            continue;
        for (base = tab; base > line && base[-1] != '/'; base--)
            ;
        if (tab - base > 4 && memcmp(tab - 4, ".bin", 4) == 0 &&
            !have_file(fs, base, (size_t)(tab - base))) {
            recimport_stats(im)->missing_files++;
            recimport_problem(im,
                              "checksum.txt lists %.*s, which is not in the "
                              "directory: that part of the recording is "
                              "missing",
                              (int)(tab - base), base);
        }
    }
}

static void
summary(const struct recdir_opts *o, const struct recimport_stats *st)
{
    fprintf(stderr,
            "capture: recording %s: %llu files, %llu records: %llu sessions, "
            "%llu messages (%llu requests, %llu replies), %llu exhaust "
            "requests made up by the server dropped; file checksums: %llu "
            "ok, %llu bad, %llu absent; %llu problems; wrote %s\n",
            o->in_path, (unsigned long long)st->files,
            (unsigned long long)st->records, (unsigned long long)st->sessions,
            (unsigned long long)st->messages, (unsigned long long)st->c2s,
            (unsigned long long)st->s2c, (unsigned long long)st->synthetic,
            (unsigned long long)st->crc_ok, (unsigned long long)st->crc_bad,
            (unsigned long long)st->crc_unchecked,
            (unsigned long long)st->problems, o->out_path);
    if (st->messages > 0 && st->s2c == 0)
        mt_warn("the recording holds no replies: mtrace replay cannot "
                "answer from this trace (mtrace play can send it)");
    if (st->order_missing > 0)
        mt_warn("the records' order numbers (%llu..%llu) miss %llu "
                "records: a file of the recording is missing, or the "
                "recorder dropped them",
                (unsigned long long)st->order_min,
                (unsigned long long)st->order_max,
                (unsigned long long)st->order_missing);
}

/* Picks the layout from the first file with a record; *first its index. */
static int
choose_layout(struct rfiles *fs, size_t *first, struct mt_err *err)
{
    struct mt_err e = {0};

    for (size_t i = 0; i < fs->n; i++) {
        int l = file_layout(fs->path[i], &e);
        if (l > 0) {
            *first = i;
            return l;
        }
        if (l < 0)
            return mt_err_set(err, MT_ECORRUPT, 0, "%s: %s", fs->path[i],
                              e.msg);
    }
    return mt_err_set(err, MT_ECORRUPT, 0,
                      "--recording %s: its files hold no records",
                      fs->n == 1 ? fs->path[0] : "directory");
}

/* See recdir.h. */
int
recdir_import(const struct recdir_opts *o, struct mt_err *err)
{
    struct rfiles fs;
    struct trace_writer *w = NULL;
    struct recimport *im = NULL;
    size_t first = 0;
    int layout, rc, rc2;

    memset(&fs, 0, sizeof(fs));
    if ((rc = list_files(o->in_path, &fs, err)) < 0)
        goto out;
    if ((rc = layout = choose_layout(&fs, &first, err)) < 0)
        goto out;
    if ((w = open_trace(o, &fs, first, layout, err)) == NULL) {
        rc = err != NULL && err->code < 0 ? err->code : MT_EUSAGE;
        goto out;
    }
    if ((im = recimport_new(w, layout, o->redact)) == NULL) {
        rc = mt_err_set(err, -ENOMEM, 0, "out of memory");
        goto out;
    }
    g_stop = 0;
    for (size_t i = 0; i < fs.n && !g_stop; i++) {
        struct mt_err e = {0};
        int l = i < first ? RECORDING_LAYOUT_NONE : file_layout(fs.path[i], &e);
        if (l == RECORDING_LAYOUT_NONE) {
            if (i >= first) { /* empty: nothing to read, CRC of nothing */
                recimport_stats(im)->files++;
                recimport_stats(im)->crc_unchecked++;
            }
            continue;
        }
        if (l != layout) {
            recimport_set_where(im, fs.path[i], 0);
            recimport_stats(im)->bad_records++;
            if (l < 0)
                recimport_problem(im, "%s; file skipped", e.msg);
            else
                recimport_problem(
                    im,
                    "the %s layout, not the %s layout of the "
                    "files before it; file skipped",
                    l == RECORDING_LAYOUT_EVENT ? "event" : "date",
                    layout == RECORDING_LAYOUT_EVENT ? "event" : "date");
            continue;
        }
        if ((rc = import_file(im, &fs, i, layout, err)) < 0)
            goto out;
    }
    if (fs.dir && !g_stop)
        check_listed(im, &fs, o->in_path);
    if ((rc = recimport_finish(im, err)) < 0)
        goto out;
    rc = trace_writer_close(w);
    w = NULL;
    if (rc < 0) {
        mt_err_set(err, rc, 0, "closing the trace: %s", mt_strerror(rc));
        goto out;
    }
    if (!o->quiet)
        summary(o, recimport_stats(im));
    if (g_stop)
        rc = mt_err_set(err, MT_ECORRUPT, 0,
                        "interrupted: %s holds the records imported before "
                        "the signal",
                        o->out_path);
    else if (recimport_stats(im)->problems > 0)
        rc = mt_err_set(err, MT_ECORRUPT, 0,
                        "%llu problem%s in the recording (above); %s holds "
                        "every record that could be read",
                        (unsigned long long)recimport_stats(im)->problems,
                        recimport_stats(im)->problems == 1 ? "" : "s",
                        o->out_path);
out:
    rc2 = trace_writer_close(w);
    if (rc == 0 && rc2 < 0)
        rc = mt_err_set(err, rc2, 0, "closing the trace: %s", mt_strerror(rc2));
    recimport_free(im);
    rfiles_free(&fs);
    return rc;
}
