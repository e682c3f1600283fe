/*
 * recording.c -- reader of mongod's traffic recordings (recording.h).
 *
 * Source: the server's src/mongo/db/traffic_recorder.cpp (writer) and
 * traffic_reader.cpp (reader), https://github.com/mongodb/mongo.  Two
 * layouts exist; all integers little-endian, `size` counts the whole
 * record, itself included (docs/recording.md has the details):
 *
 * Event layout -- traffic_recorder.cpp at 043fdf26217f
 * (PacketWriter::serializeHeaderForPacket), read by traffic_reader.cpp
 * at 1c287af4e8f1 (readPacket); EventType from traffic_recorder_event.h:
 *
 *     0   u32  size
 *     4   u8   event    0 request, 1 response, 2 session start, 3 end
 *     5   u64  id       transport session id
 *     13  cstr session  "{ remote: \"h:p\", local: \"h:p\" }"
 *     .   u64  offset   µs since the recording started
 *     .   u64  order    recording-wide sequence number, from 1
 *     .   ...  message  the wire message; none for session events
 *
 * Date layout -- traffic_recorder.cpp at 2dcac3cc88eb (Recording::run),
 * read by traffic_reader.cpp at 1252bae97188:
 *
 *     0   u32  size
 *     4   u64  id
 *     12  cstr session
 *     .   u64  date     ms since the Unix epoch
 *     .   u64  order
 *     .   ...  message
 *
 * There is no magic, no version and no per-record checksum; the event
 * layout's recorder writes a CRC-32C of each whole file to checksum.txt
 * beside it ("PATH\tHEX").
 */
#include "recording.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "core/rd.h"
#include "core/wire.h"

/* The message part of a record: none, or exactly one wire message. */
static int
parse_msg(struct rd *r, struct recording_packet *p, size_t size,
          struct mt_err *err)
{
    struct rd m = *r;
    int32_t mlen = -1;

    p->msg = r->left > 0 ? r->p : NULL;
    p->msg_len = (uint32_t)r->left;
    if (r->left == 0) {
        if (p->event == RECORDING_EV_REQUEST ||
            p->event == RECORDING_EV_RESPONSE ||
            p->event == RECORDING_EV_MESSAGE)
            return mt_err_set(err, MT_ECORRUPT, size - r->left,
                              "a %s record without a message",
                              p->event == RECORDING_EV_RESPONSE ? "response"
                                                                : "request");
        return MT_OK;
    }
    if (p->event == RECORDING_EV_SESSION_START ||
        p->event == RECORDING_EV_SESSION_END)
        return MT_OK; /* bytes after a session event: kept, not a message */
    if (!rd_le32s(&m, &mlen) || mlen < WIRE_HEADER_LEN ||
        (size_t)mlen != r->left)
        return mt_err_set(err, MT_ECORRUPT, size - r->left,
                          "its message's messageLength (%d) is not the "
                          "%zu bytes left in the record",
                          r->left >= 4 ? (int)mlen : -1, r->left);
    return MT_OK;
}

/* See recording.h. */
int
recording_parse(const uint8_t *buf, size_t len, int layout,
                struct recording_packet *p, size_t *consumed,
                struct mt_err *err)
{
    struct rd r = rd_init(buf, len);
    uint32_t size, min;
    uint8_t ev = RECORDING_EV_MESSAGE;
    size_t slen;

    memset(p, 0, sizeof(*p));
    *consumed = 4;
    if (!rd_le32(&r, &size))
        return MT_PARTIAL;
    min = layout == RECORDING_LAYOUT_EVENT ? RECORDING_REC_LEN_MIN_EVENT
                                           : RECORDING_REC_LEN_MIN_DATE;
    *consumed = 0;
    if (size >= RECORDING_REC_LEN_MAX)
        return mt_err_set(err, MT_ETOOBIG, 0,
                          "record size %u is over the recorder's limit "
                          "(%u bytes)",
                          size, RECORDING_REC_LEN_MAX - 1);
    if (size < min)
        return mt_err_set(err, MT_EPROTO, 0,
                          "record size %u is below the smallest record "
                          "(%u bytes)",
                          size, min);
    if (size > len) {
        *consumed = size;
        return MT_PARTIAL;
    }
    *consumed = size;
    p->rec_len = size;
    r = rd_init(buf + 4, size - 4);
    if (layout == RECORDING_LAYOUT_EVENT)
        (void)rd_u8(&r, &ev); /* size >= min: present */
    p->event = ev;
    if (layout == RECORDING_LAYOUT_EVENT && ev > RECORDING_EV_KNOWN_MAX)
        return mt_err_set(err, MT_EUNSUPPORTED, 4,
                          "unknown event type %u (known: 0 request, 1 "
                          "response, 2 session start, 3 session end)",
                          ev);
    (void)rd_le64(&r, &p->session_id);
    if (!rd_cstr(&r, &p->session, &slen) || r.left < 16)
        return mt_err_set(err, MT_ECORRUPT, size - r.left,
                          "its session string has no terminating NUL "
                          "before the time and order fields");
    p->session_len = slen;
    (void)rd_le64(&r, &p->time);
    (void)rd_le64(&r, &p->order);
    return parse_msg(&r, p, size, err);
}

/* 1 when buf's first record parses completely in layout and its session
 * string looks like BSONObj::toString(), 0 when it only parses, -1 not. */
static int
try_layout(const uint8_t *buf, size_t len, int layout, int *code)
{
    struct recording_packet p;
    size_t used;
    int rc = recording_parse(buf, len, layout, &p, &used, NULL);

    if (rc == MT_PARTIAL && *code == 0)
        *code = MT_PARTIAL;
    if (rc != MT_OK)
        return -1;
    return p.session_len > 0 && p.session[0] == '{' ? 1 : 0;
}

/* See recording.h. */
int
recording_detect(const uint8_t *buf, size_t len, struct mt_err *err)
{
    int code = 0;
    int ev = try_layout(buf, len, RECORDING_LAYOUT_EVENT, &code);
    int dt = try_layout(buf, len, RECORDING_LAYOUT_DATE, &code);

    if (ev >= 0 && (dt < 0 || ev >= dt))
        return RECORDING_LAYOUT_EVENT;
    if (dt >= 0)
        return RECORDING_LAYOUT_DATE;
    if (code == MT_PARTIAL)
        mt_err_set(err, MT_PARTIAL, 0,
                   "the first record is incomplete (%zu bytes)", len);
    else
        mt_err_set(err, MT_ECORRUPT, 0,
                   "the first record fits neither record layout of mongod's "
                   "traffic recorder (not a recording?)");
    return RECORDING_LAYOUT_NONE;
}

/* Copies the quoted value after `key: "` in s[0..n) to out. */
static void
addr_field(const char *s, size_t n, const char *key, char *out, size_t out_len)
{
    size_t klen = strlen(key), i, j;

    out[0] = '\0';
    for (i = 0; i + klen + 3 <= n; i++) {
        if ((i > 0 && s[i - 1] != ' ' && s[i - 1] != '{' && s[i - 1] != ',') ||
            memcmp(s + i, key, klen) != 0 || s[i + klen] != ':' ||
            s[i + klen + 1] != ' ' || s[i + klen + 2] != '"')
            continue;
        i += klen + 3;
        for (j = 0; i + j < n && s[i + j] != '"' && j + 1 < out_len; j++)
            out[j] = s[i + j];
        out[j] = '\0';
        return;
    }
}

/* See recording.h. */
void
recording_session_addrs(const char *s, size_t n, char *remote,
                        size_t remote_len, char *local, size_t local_len)
{
    addr_field(s, n, "remote", remote, remote_len);
    addr_field(s, n, "local", local, local_len);
}

static int
hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* One line's value: 1..8 hex digits, then nothing (a '\r' allowed). */
static int
parse_crc(const char *v, size_t n, uint32_t *crc)
{
    uint32_t x = 0;
    size_t i;

    if (n > 0 && v[n - 1] == '\r')
        n--;
    if (n == 0 || n > 8)
        return -1;
    for (i = 0; i < n; i++) {
        int h = hexval(v[i]);
        if (h < 0)
            return -1;
        x = x << 4 | (uint32_t)h;
    }
    *crc = x;
    return 1;
}

/* See recording.h. */
int
recording_checksum_lookup(const char *text, size_t len, const char *base,
                          uint32_t *crc)
{
    size_t blen = strlen(base), pos = 0;
    int found = 0;

    while (pos < len) {
        const char *line = text + pos, *nl, *tab = NULL;
        size_t n, plen;

        nl = memchr(line, '\n', len - pos);
        n = nl != NULL ? (size_t)(nl - line) : len - pos;
        pos += n + 1;
        for (size_t i = n; i > 0; i--)
            if (line[i - 1] == '\t') {
                tab = line + i - 1;
                break;
            }
        if (tab == NULL)
            continue;
        plen = (size_t)(tab - line);
        if (plen < blen || memcmp(tab - blen, base, blen) != 0 ||
            (plen > blen && tab[-(ptrdiff_t)blen - 1] != '/'))
            continue;
        found = parse_crc(tab + 1, n - plen - 1, crc);
    }
    return found;
}

/* See recording.h. */
int
recording_file_open(struct recording_file *f, const char *path,
                    struct mt_err *err)
{
    struct stat st;

    memset(f, 0, sizeof(*f));
    mt_buf_init(&f->rec, RECORDING_REC_LEN_MAX);
    f->fp = fopen(path, "rb");
    if (f->fp == NULL)
        return mt_err_set(err, -errno, 0, "%s: %s", path, strerror(errno));
    if (fstat(fileno(f->fp), &st) == 0)
        f->size = (uint64_t)st.st_size;
    return 0;
}

/* Reads n more bytes of the record into f->rec; the count actually read. */
static size_t
read_more(struct recording_file *f, size_t n)
{
    size_t got;

    if (mt_buf_reserve(&f->rec, n) < 0)
        return 0;
    got = fread(f->rec.data + f->rec.len, 1, n, f->fp);
    f->crc = wire_crc32c(f->crc, f->rec.data + f->rec.len, got);
    f->rec.len += got;
    return got;
}

/* See recording.h. */
int
recording_file_next(struct recording_file *f, int layout,
                    struct recording_packet *p, struct mt_err *err)
{
    size_t need = 0;
    int rc;

    mt_buf_reset(&f->rec);
    if (read_more(f, 4) == 0 && f->rec.len == 0) {
        if (ferror(f->fp))
            return mt_err_set(err, -EIO, (size_t)f->off, "read error");
        return MT_END;
    }
    for (;;) {
        rc = recording_parse(f->rec.data, f->rec.len, layout, p, &need, err);
        if (rc != MT_PARTIAL || need <= f->rec.len)
            break;
        if (read_more(f, need - f->rec.len) == 0) {
            if (ferror(f->fp))
                return mt_err_set(err, -EIO, (size_t)f->off, "read error");
            break;
        }
    }
    if (rc == MT_PARTIAL)
        mt_err_set(err, MT_PARTIAL, (size_t)f->off,
                   "the file ends inside a record: %zu of its %zu bytes",
                   f->rec.len, need);
    if (err != NULL && rc < 0)
        err->offset = (size_t)f->off;
    f->off += f->rec.len;
    return rc;
}

/* See recording.h. */
void
recording_file_close(struct recording_file *f)
{
    if (f->fp != NULL)
        fclose(f->fp);
    f->fp = NULL;
    mt_buf_free(&f->rec);
}
