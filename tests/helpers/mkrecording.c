/*
 * mkrecording.c -- writes a mongod traffic recording (the files
 * startTrafficRecording leaves) from the messages of an mtrace trace, for
 * the tests of `mtrace capture --recording`.  The writer below follows the
 * server's source, not capture/recording.c:
 *
 * Event layout: src/mongo/db/traffic_recorder.cpp at commit
 * 043fdf26217fee0f2795e329814ee51f8994b9ae,
 * PacketWriter::serializeHeaderForPacket (lines 149-162): u32 size (0, then
 * patched to header + message), EventType as one byte
 * (traffic_recorder_event.h: 0 request, 1 response, 2 session start, 3
 * session end), u64 session id, the session string with its NUL
 * (Terminated<'\0'>), u64 offset in µs since the recording started, u64
 * order; then the message's bytes (PacketWriter::writePacket, 126-147;
 * none for session events, whose Message() is empty).  Files are named
 * <Date_t::now() in ms>.bin (openNewRecordingFile in Recording::start);
 * checksum.txt gets "PATH\t{:x}" of the CRC-32C (absl::ExtendCrc32c from
 * 0) of each finished file (writeChecksum).
 *
 * Date layout: traffic_recorder.cpp at commit
 * 2dcac3cc88eb24bb1d72e92a56497e9d235d1199, Recording::run: u32 size, u64
 * id, the session string with its NUL, u64 Date_t in ms since the epoch,
 * u64 order, the message; one file, no session events, no checksum.
 *
 * Mapping: each trace connection is a session (id = conn id; session
 * string "{ remote: \"CLIENT\", local: \"SERVER\" }", as
 * CommonAsioSession::appendToBSON + BSONObj::toString print it); c2s
 * messages are requests, s2c responses, their wire bytes as recorded
 * (OP_COMPRESSED stays compressed: the recorder sees requests before
 * decompression and replies after compression); a session start at the
 * conn open, a session end at its close or, for a connection still open,
 * at the end (Recording stop records one for every open session); order
 * counts records from 1.
 *
 * Usage: mkrecording [--layout event|date] [--files N] [--damage KIND]
 *                    TRACE.zst OUT
 *   OUT is a directory for the event layout (created), a file for date.
 *   --files N   split the records over N files (event layout)
 *   --damage    truncate: the last file ends in the middle of its last
 *                 record, without a checksum.txt entry (mongod died);
 *               badsize: the size field of the middle record of the first
 *                 file says 60,000,000;
 *               badsum: a byte of the first file changes after its
 *                 checksum was written;
 *               msgcrc: the first OP_MSG request carries a CRC-32C
 *                 (checksumPresent) that does not match;
 *               unknown: a record of event type 9 after the first record.
 * Exit 0, or 1 with a message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/trace.h"

#define MSG_FLAGS_OFF 16
#define FILES_MAX 64

struct out {
    int layout; /* 1 date, 2 event */
    const char *damage;
    struct mt_buf file[FILES_MAX];
    int nfiles;
    uint64_t order;
    uint64_t start_wall_ns, start_mono_ns, rec_start_ms;
    bool msgcrc_done;
};

struct conn {
    uint64_t id;
    char session[160];
    bool open;
};

static struct conn conns[4096];
static size_t nconns;
static size_t g_off[1 << 20]; /* record offsets (rec_offsets) */

static void
die(const char *what)
{
    fprintf(stderr, "mkrecording: %s\n", what);
    exit(1);
}

static void
put(struct mt_buf *b, const void *p, size_t n)
{
    if (mt_buf_append(b, p, n) < 0)
        die("out of memory");
}

static void
put_le(struct mt_buf *b, uint64_t v, int n)
{
    uint8_t x[8];
    for (int i = 0; i < n; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, (size_t)n);
}

/* Bitwise CRC-32C (reflected 0x82F63B78), as absl::ExtendCrc32c from 0. */
static uint32_t
crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

static uint64_t
wall_ns(const struct out *o, uint64_t t_ns)
{
    return o->start_wall_ns + (t_ns - o->start_mono_ns);
}

/* One record (serializeHeaderForPacket + the message). */
static void
record(struct out *o, struct mt_buf *b, uint8_t event, const struct conn *c,
       uint64_t t_ns, const uint8_t *msg, size_t msg_len)
{
    size_t start = b->len, slen = strlen(c->session);
    uint64_t w = wall_ns(o, t_ns);
    uint32_t size;

    put_le(b, 0, 4);
    if (o->layout == 2)
        put(b, &event, 1);
    put_le(b, c->id, 8);
    put(b, c->session, slen + 1);
    if (o->layout == 2)
        put_le(b, (w - o->rec_start_ms * 1000000ull) / 1000, 8);
    else
        put_le(b, w / 1000000, 8);
    put_le(b, ++o->order, 8);
    put(b, msg, msg_len);
    size = (uint32_t)(b->len - start);
    for (int i = 0; i < 4; i++)
        b->data[start + i] = (uint8_t)(size >> (8 * i));
}

static struct conn *
conn_of(uint64_t id)
{
    for (size_t i = 0; i < nconns; i++)
        if (conns[i].id == id)
            return &conns[i];
    if (nconns == sizeof(conns) / sizeof(conns[0]))
        die("too many connections");
    conns[nconns].id = id;
    snprintf(conns[nconns].session, sizeof(conns[0].session),
             "{ remote: \"?\", local: \"?\" }");
    return &conns[nconns++];
}

/* A request OP_MSG with a wrong CRC-32C appended (--damage msgcrc). */
static void
msg_with_bad_crc(const uint8_t *m, size_t n, struct mt_buf *b)
{
    uint32_t len = (uint32_t)n + 4, flags;

    put(b, m, n);
    for (int i = 0; i < 4; i++)
        b->data[i] = (uint8_t)(len >> (8 * i));
    flags = (uint32_t)b->data[MSG_FLAGS_OFF] | 1u;
    b->data[MSG_FLAGS_OFF] = (uint8_t)flags;
    put_le(b, crc32c(0, b->data, b->len) ^ 0x5a5a5a5au, 4);
}

static void
one_msg(struct out *o, struct mt_buf *b, const struct trace_msg *m)
{
    struct conn *c = conn_of(m->conn_id);
    uint8_t ev = m->dir == TRACE_DIR_S2C ? 1 : 0;
    int32_t op = 0;

    if (m->flags & TRACE_MSG_PARTIAL)
        return; /* the recorder sees whole messages only */
    if (m->wire_len >= 16)
        memcpy(&op, m->wire + 12, 4);
    if (o->damage && strcmp(o->damage, "msgcrc") == 0 && !o->msgcrc_done &&
        ev == 0 && op == 2013 && !(m->wire[MSG_FLAGS_OFF] & 1)) {
        struct mt_buf t;
        mt_buf_init(&t, 64u << 20);
        msg_with_bad_crc(m->wire, m->wire_len, &t);
        record(o, b, ev, c, m->t_ns, t.data, t.len);
        mt_buf_free(&t);
        o->msgcrc_done = true;
        return;
    }
    record(o, b, ev, c, m->t_ns, m->wire, m->wire_len);
}

/* Reads the trace and writes every record into o->file[0]. */
static void
convert(struct out *o, const char *path)
{
    struct mt_err err = {0};
    struct trace_reader *r = trace_reader_open(path, &err);
    struct trace_rec rec;
    struct mt_buf *b = &o->file[0];
    uint64_t t_last = 0;
    int rc;

    if (r == NULL)
        die(err.msg);
    o->start_wall_ns = trace_reader_header(r)->start_wall_ns;
    o->start_mono_ns = trace_reader_header(r)->start_mono_ns;
    while ((rc = trace_reader_next(r, &rec, &err)) == MT_OK) {
        struct conn *c;
        if (rec.type == TRACE_REC_CONN_OPEN) {
            if (o->rec_start_ms == 0)
                o->rec_start_ms = wall_ns(o, rec.u.open.t_ns) / 1000000;
            c = conn_of(rec.u.open.conn_id);
            snprintf(c->session, sizeof(c->session),
                     "{ remote: \"%s\", local: \"%s\" }", rec.u.open.client,
                     rec.u.open.server);
            c->open = true;
            if (o->layout == 2)
                record(o, b, 2, c, rec.u.open.t_ns, NULL, 0);
        } else if (rec.type == TRACE_REC_MSG) {
            one_msg(o, b, &rec.u.msg);
        } else if (rec.type == TRACE_REC_CONN_CLOSE) {
            c = conn_of(rec.u.close.conn_id);
            if (o->layout == 2 && c->open)
                record(o, b, 3, c, rec.u.close.t_ns, NULL, 0);
            c->open = false;
        } else if (rec.type == TRACE_REC_END) {
            t_last = rec.u.end.t_ns;
        }
    }
    if (rc != MT_END)
        die(err.msg);
    for (size_t i = 0; o->layout == 2 && i < nconns; i++)
        if (conns[i].open)
            record(o, b, 3, &conns[i], t_last, NULL, 0);
    trace_reader_free(r);
}

/* Offsets of the records of b. */
static size_t
rec_offsets(const struct mt_buf *b, size_t *off, size_t max)
{
    size_t n = 0, pos = 0;

    while (pos + 4 <= b->len && n < max) {
        uint32_t size =
            (uint32_t)b->data[pos] | (uint32_t)b->data[pos + 1] << 8 |
            (uint32_t)b->data[pos + 2] << 16 | (uint32_t)b->data[pos + 3] << 24;
        off[n++] = pos;
        pos += size;
    }
    return n;
}

/* Moves the records of file 0 into n files of about equal counts. */
static void
split(struct out *o, int n)
{
    size_t *off = g_off;
    struct mt_buf all = o->file[0];
    size_t nr = rec_offsets(&all, off, sizeof(g_off) / sizeof(g_off[0]));

    o->nfiles = n;
    for (int i = 0; i < n; i++) {
        size_t a = nr * (size_t)i / (size_t)n,
               z = nr * (size_t)(i + 1) / (size_t)n;
        size_t from = a < nr ? off[a] : all.len, to = z < nr ? off[z] : all.len;
        mt_buf_init(&o->file[i], 1u << 30);
        put(&o->file[i], all.data + from, to - from);
    }
    mt_buf_free(&all);
}

static void
write_file(const char *path, const struct mt_buf *b)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || (b->len && fwrite(b->data, 1, b->len, f) != b->len) ||
        fclose(f) != 0)
        die(path);
}

static void
damage_before_sums(struct out *o)
{
    size_t *off = g_off;
    struct mt_buf *b = &o->file[0];
    size_t n = rec_offsets(b, off, sizeof(g_off) / sizeof(g_off[0]));
    const char *d = o->damage;

    if (d == NULL || n < 3)
        return;
    if (strcmp(d, "badsize") == 0) {
        uint32_t big = 60000000u;
        for (int i = 0; i < 4; i++)
            b->data[off[n / 2] + (size_t)i] = (uint8_t)(big >> (8 * i));
    } else if (strcmp(d, "unknown") == 0) {
        struct mt_buf t;
        struct conn c = {.id = 999999};
        uint8_t ev = 9;
        mt_buf_init(&t, 1u << 30);
        put(&t, b->data, off[1]);
        snprintf(c.session, sizeof(c.session), "{ remote: \"x\" }");
        record(o, &t, 0, &c, o->start_mono_ns, NULL, 0);
        t.data[off[1] + 4] = ev;
        put(&t, b->data + off[1], b->len - off[1]);
        mt_buf_free(b);
        *b = t;
    }
}

int
main(int argc, char **argv)
{
    struct out o;
    const char *in, *outp;
    int files = 1, i = 1;
    char path[4096], cwd[4096];
    FILE *sums = NULL;

    memset(&o, 0, sizeof(o));
    o.layout = 2;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (strcmp(argv[i], "--layout") == 0)
            o.layout = strcmp(argv[i + 1], "date") == 0 ? 1 : 2;
        else if (strcmp(argv[i], "--files") == 0)
            files = (int)strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--damage") == 0)
            o.damage = argv[i + 1];
        else
            die("usage: mkrecording [--layout event|date] [--files N] "
                "[--damage KIND] TRACE OUT");
    }
    if (argc - i != 2 || files < 1 || files > FILES_MAX ||
        (o.layout == 1 && files != 1))
        die("usage: mkrecording [--layout event|date] [--files N] "
            "[--damage KIND] TRACE OUT");
    in = argv[i];
    outp = argv[i + 1];
    mt_buf_init(&o.file[0], 1u << 30);
    o.nfiles = 1;
    convert(&o, in);
    if (files > 1)
        split(&o, files);
    damage_before_sums(&o);
    if (o.layout == 1) {
        write_file(outp, &o.file[0]);
        mt_buf_free(&o.file[0]);
        return 0;
    }
    if (mkdir(outp, 0700) != 0 && errno != EEXIST)
        die(outp);
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        die("getcwd");
    snprintf(path, sizeof(path), "%s/checksum.txt", outp);
    if ((sums = fopen(path, "a")) == NULL)
        die(path);
    for (int f = 0; f < o.nfiles; f++) {
        struct mt_buf *b = &o.file[f];
        bool last = f == o.nfiles - 1;
        uint32_t crc = crc32c(0, b->data, b->len);
        snprintf(path, sizeof(path), "%s/%llu.bin", outp,
                 (unsigned long long)(o.rec_start_ms + (uint64_t)f));
        size_t n = rec_offsets(b, g_off, sizeof(g_off) / sizeof(g_off[0]));
        if (o.damage && strcmp(o.damage, "truncate") == 0 && last) {
            if (n > 0)
                b->len = g_off[n - 1] + (b->len - g_off[n - 1]) / 2;
        } else {
            fprintf(sums, "%s%s%s\t%x\n", outp[0] == '/' ? "" : cwd,
                    outp[0] == '/' ? "" : "/", path, crc);
        }
        /* inside the middle record's session string ("{ remote"): the
         * records still frame, only the file's CRC-32C tells */
        if (o.damage && strcmp(o.damage, "badsum") == 0 && f == 0 && n > 2)
            b->data[g_off[n / 2] + 4 + (o.layout == 2) + 8 + 2] ^= 0x01;
        write_file(path, b);
        mt_buf_free(b);
    }
    fclose(sums);
    return 0;
}
