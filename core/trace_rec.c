/*
 * trace_rec.c -- one trace record: check, encode, decode (see trace_rec.h).
 *
 * Every record is   u8 type | u32 payload length | payload,
 * all integers little-endian; a string is u16 length + bytes (no NUL).
 * Payload layouts (docs/trace-format.md has the full tables):
 *
 *   1 header      magic[8] u16 version u8 source u32 ts_precision_ns
 *                 u64 start_wall_ns u64 start_mono_ns str tool str desc
 *   2 conn open   u64 conn_id u64 t_ns str client str server
 *   3 message     u64 conn_id u64 t_ns u8 dir u32 flags
 *                 u32 wire_len wire[wire_len] u32 plain_len plain[plain_len]
 *   4 conn close  u64 conn_id u64 t_ns u8 reason u32 partial_c2s
 *                 u32 partial_s2c
 *   5 stats       u64 t_ns u16 n, n x (str name u64 value)
 *   6 end         u64 t_ns u64 records
 *   7 tls         u64 conn_id u64 t_ns u8 leg u64 handshake_ns u8 flags
 *                 str version str cipher str group str sni str error
 */
#include "trace_rec.h"

#include <errno.h>
#include <string.h>

#include "rd.h"

#define OP_COMPRESSED 2012

/* ---- check ---- */

static int
check_str(const char *s, size_t cap, const char *what, struct mt_err *err)
{
    if (strnlen(s, cap) >= cap)
        return mt_err_set(err, MT_ECORRUPT, 0,
                          "%s is not NUL-terminated within %zu bytes", what,
                          cap);
    return 0;
}

static int
check_msg(const struct trace_msg *m, struct mt_err *err)
{
    uint32_t op;
    struct rd r;

    if (m->dir != TRACE_DIR_C2S && m->dir != TRACE_DIR_S2C)
        return mt_err_set(err, MT_ECORRUPT, 0,
                          "message direction %u is neither 0 (c2s) nor 1 (s2c)",
                          m->dir);
    if (m->wire_len > TRACE_MSG_LEN_MAX || m->plain_len > TRACE_MSG_LEN_MAX)
        return mt_err_set(err, MT_ETOOBIG, 0,
                          "message of %u (plain %u) bytes exceeds %u",
                          m->wire_len, m->plain_len, TRACE_MSG_LEN_MAX);
    if ((m->wire_len > 0 && m->wire == NULL) ||
        (m->plain_len > 0 && m->plain == NULL))
        return mt_err_set(err, MT_ECORRUPT, 0, "message bytes missing");
    if (m->plain_len == 0)
        return 0;
    r = rd_init(m->wire, m->wire_len);
    if (!rd_skip(&r, 12) || !rd_le32(&r, &op) || op != OP_COMPRESSED)
        return mt_err_set(err, MT_ECORRUPT, 0,
                          "decompressed form given for a message that is "
                          "not OP_COMPRESSED");
    return 0;
}

static int
check_tls(const struct trace_tls *t, struct mt_err *err)
{
    if (t->leg != TRACE_TLS_CLIENT && t->leg != TRACE_TLS_TARGET)
        return mt_err_set(err, MT_ECORRUPT, 0,
                          "TLS leg %u is neither 0 (client) nor 1 (target)",
                          t->leg);
    if (check_str(t->version, sizeof(t->version), "TLS version", err) < 0 ||
        check_str(t->cipher, sizeof(t->cipher), "TLS cipher", err) < 0 ||
        check_str(t->group, sizeof(t->group), "TLS group", err) < 0 ||
        check_str(t->sni, sizeof(t->sni), "TLS server name", err) < 0 ||
        check_str(t->error, sizeof(t->error), "TLS error", err) < 0)
        return MT_ECORRUPT;
    return 0;
}

int
trace__rec_check(const struct trace_rec *rec, struct mt_err *err)
{
    switch (rec->type) {
    case TRACE_REC_HEADER:
        if (check_str(rec->u.header.tool_version,
                      sizeof(rec->u.header.tool_version), "tool version",
                      err) < 0 ||
            check_str(rec->u.header.source_desc,
                      sizeof(rec->u.header.source_desc), "source description",
                      err) < 0)
            return MT_ECORRUPT;
        return 0;
    case TRACE_REC_CONN_OPEN:
        if (check_str(rec->u.open.client, sizeof(rec->u.open.client),
                      "client address", err) < 0 ||
            check_str(rec->u.open.server, sizeof(rec->u.open.server),
                      "server address", err) < 0)
            return MT_ECORRUPT;
        return 0;
    case TRACE_REC_MSG:
        return check_msg(&rec->u.msg, err);
    case TRACE_REC_CONN_CLOSE:
    case TRACE_REC_END:
        return 0;
    case TRACE_REC_STATS:
        if (rec->u.stats.n > TRACE_STATS_MAX)
            return mt_err_set(err, MT_ETOOBIG, 0,
                              "%zu capture statistics exceed %d",
                              rec->u.stats.n, TRACE_STATS_MAX);
        for (size_t i = 0; i < rec->u.stats.n; i++)
            if (check_str(rec->u.stats.s[i].name,
                          sizeof(rec->u.stats.s[i].name), "statistic name",
                          err) < 0)
                return MT_ECORRUPT;
        return 0;
    case TRACE_REC_TLS:
        return check_tls(&rec->u.tls, err);
    default:
        return mt_err_set(err, MT_ECORRUPT, 0, "unknown record type %u",
                          rec->type);
    }
}

/* ---- encode ---- */

/* A cursor over reserved space in an mt_buf; sizes are precomputed. */
struct enc {
    uint8_t *p;
};

static void
enc_u8(struct enc *e, uint8_t v)
{
    *e->p++ = v;
}

static void
enc_u16(struct enc *e, uint16_t v)
{
    e->p[0] = (uint8_t)v;
    e->p[1] = (uint8_t)(v >> 8);
    e->p += 2;
}

static void
enc_u32(struct enc *e, uint32_t v)
{
    wr_le32(e->p, v);
    e->p += 4;
}

static void
enc_u64(struct enc *e, uint64_t v)
{
    wr_le64(e->p, v);
    e->p += 8;
}

static void
enc_bytes(struct enc *e, const void *p, size_t n)
{
    if (n > 0)
        memcpy(e->p, p, n);
    e->p += n;
}

static void
enc_str(struct enc *e, const char *s)
{
    size_t n = strlen(s);
    MT_ASSERT(n <= UINT16_MAX);
    enc_u16(e, (uint16_t)n);
    enc_bytes(e, s, n);
}

static size_t
msg_payload_len(const struct trace_msg *m)
{
    return 8 + 8 + 1 + 4 + 4 + (size_t)m->wire_len + 4 + (size_t)m->plain_len;
}

static void
encode_msg(struct enc *e, const struct trace_msg *m)
{
    enc_u64(e, m->conn_id);
    enc_u64(e, m->t_ns);
    enc_u8(e, m->dir);
    enc_u32(e, m->flags);
    enc_u32(e, m->wire_len);
    enc_bytes(e, m->wire, m->wire_len);
    enc_u32(e, m->plain_len);
    enc_bytes(e, m->plain, m->plain_len);
}

static void
encode_tls(struct enc *e, const struct trace_tls *t)
{
    enc_u64(e, t->conn_id);
    enc_u64(e, t->t_ns);
    enc_u8(e, t->leg);
    enc_u64(e, t->handshake_ns);
    enc_u8(e, t->flags);
    enc_str(e, t->version);
    enc_str(e, t->cipher);
    enc_str(e, t->group);
    enc_str(e, t->sni);
    enc_str(e, t->error);
}

static size_t
payload_len(const struct trace_rec *rec)
{
    switch (rec->type) {
    case TRACE_REC_HEADER:
        return TRACE_MAGIC_LEN + 2 + 1 + 4 + 8 + 8 + 2 +
               strlen(rec->u.header.tool_version) + 2 +
               strlen(rec->u.header.source_desc);
    case TRACE_REC_CONN_OPEN:
        return 8 + 8 + 2 + strlen(rec->u.open.client) + 2 +
               strlen(rec->u.open.server);
    case TRACE_REC_MSG:
        return msg_payload_len(&rec->u.msg);
    case TRACE_REC_CONN_CLOSE:
        return 8 + 8 + 1 + 4 + 4;
    case TRACE_REC_STATS: {
        size_t n = 8 + 2;
        for (size_t i = 0; i < rec->u.stats.n; i++)
            n += 2 + strlen(rec->u.stats.s[i].name) + 8;
        return n;
    }
    case TRACE_REC_END:
        return 8 + 8;
    case TRACE_REC_TLS:
        return 8 + 8 + 1 + 8 + 1 + 2 + strlen(rec->u.tls.version) + 2 +
               strlen(rec->u.tls.cipher) + 2 + strlen(rec->u.tls.group) + 2 +
               strlen(rec->u.tls.sni) + 2 + strlen(rec->u.tls.error);
    default:
        MT_ASSERT(0 && "record type checked before");
        return 0;
    }
}

static void
encode_payload(struct enc *e, const struct trace_rec *rec)
{
    const struct trace_header *h = &rec->u.header;
    const struct trace_msg *m = &rec->u.msg;

    switch (rec->type) {
    case TRACE_REC_HEADER:
        enc_bytes(e, TRACE_MAGIC, TRACE_MAGIC_LEN);
        enc_u16(e, TRACE_VERSION);
        enc_u8(e, h->source);
        enc_u32(e, h->ts_precision_ns);
        enc_u64(e, h->start_wall_ns);
        enc_u64(e, h->start_mono_ns);
        enc_str(e, h->tool_version);
        enc_str(e, h->source_desc);
        break;
    case TRACE_REC_CONN_OPEN:
        enc_u64(e, rec->u.open.conn_id);
        enc_u64(e, rec->u.open.t_ns);
        enc_str(e, rec->u.open.client);
        enc_str(e, rec->u.open.server);
        break;
    case TRACE_REC_MSG:
        encode_msg(e, m);
        break;
    case TRACE_REC_CONN_CLOSE:
        enc_u64(e, rec->u.close.conn_id);
        enc_u64(e, rec->u.close.t_ns);
        enc_u8(e, rec->u.close.reason);
        enc_u32(e, rec->u.close.partial_c2s);
        enc_u32(e, rec->u.close.partial_s2c);
        break;
    case TRACE_REC_STATS:
        enc_u64(e, rec->u.stats.t_ns);
        enc_u16(e, (uint16_t)rec->u.stats.n);
        for (size_t i = 0; i < rec->u.stats.n; i++) {
            enc_str(e, rec->u.stats.s[i].name);
            enc_u64(e, rec->u.stats.s[i].value);
        }
        break;
    case TRACE_REC_END:
        enc_u64(e, rec->u.end.t_ns);
        enc_u64(e, rec->u.end.records);
        break;
    case TRACE_REC_TLS:
        encode_tls(e, &rec->u.tls);
        break;
    default:
        MT_ASSERT(0 && "record type checked before");
    }
}

/*
 * Reserves room in out for a record of `type` with an n-byte payload and
 * writes its prefix; e then points at the payload.  The caller encodes the
 * payload and calls rec_end.
 */
static int
rec_begin(struct mt_buf *out, uint8_t type, size_t n, struct enc *e,
          struct mt_err *err)
{
    int rc = mt_buf_reserve(out, TRACE_REC_PREFIX_LEN + n);

    if (rc < 0)
        return mt_err_set(err, rc, 0, "no room for a %zu-byte record: %s", n,
                          mt_strerror(rc));
    e->p = out->data + out->len;
    enc_u8(e, type);
    enc_u32(e, (uint32_t)n);
    return 0;
}

/* Commits the record rec_begin started (n: its payload length). */
static void
rec_end(struct mt_buf *out, size_t n)
{
    out->len += TRACE_REC_PREFIX_LEN + n;
}

int
trace__rec_encode(struct mt_buf *out, const struct trace_rec *rec,
                  struct mt_err *err)
{
    struct enc e;
    size_t n;
    int rc;

    rc = trace__rec_check(rec, err);
    if (rc < 0)
        return rc;
    n = payload_len(rec);
    MT_ASSERT(n <= TRACE_REC_LEN_MAX);
    rc = rec_begin(out, rec->type, n, &e, err);
    if (rc < 0)
        return rc;
    encode_payload(&e, rec);
    MT_ASSERT(e.p == out->data + out->len + TRACE_REC_PREFIX_LEN + n);
    rec_end(out, n);
    return 0;
}

/* The capture hot path (one call per message): the same bytes as
 * rec_begin + encode_msg, with the fixed fields stored at their offsets
 * (docs/trace-format.md 2.3) and mt_buf_reserve called only when the
 * buffer is short (its cap never exceeds its len_max).  Callgrind, pcap
 * import: 215 -> 130 instructions per message, memcpy included. */
int
trace__msg_encode(struct mt_buf *out, const struct trace_msg *m,
                  struct mt_err *err)
{
    size_t n, need;
    uint8_t *p;
    int rc;

    rc = check_msg(m, err);
    if (rc < 0)
        return rc;
    n = msg_payload_len(m);
    need = TRACE_REC_PREFIX_LEN + n;
    if (need > out->cap - out->len) {
        rc = mt_buf_reserve(out, need);
        if (rc < 0)
            return mt_err_set(err, rc, 0, "no room for a %zu-byte record: %s",
                              n, mt_strerror(rc));
    }
    p = out->data + out->len;
    p[0] = TRACE_REC_MSG;
    wr_le32(p + 1, (uint32_t)n);
    wr_le64(p + 5, m->conn_id);
    wr_le64(p + 13, m->t_ns);
    p[21] = m->dir;
    wr_le32(p + 22, m->flags);
    wr_le32(p + 26, m->wire_len);
    if (m->wire_len > 0)
        memcpy(p + 30, m->wire, m->wire_len);
    p += 30 + (size_t)m->wire_len;
    wr_le32(p, m->plain_len);
    if (m->plain_len > 0)
        memcpy(p + 4, m->plain, m->plain_len);
    MT_DASSERT(p + 4 + m->plain_len == out->data + out->len + need);
    out->len += need;
    return 0;
}

/* ---- decode ---- */

/* Reads a u16-length string into dst (cap bytes incl. NUL). */
static bool
dec_str(struct rd *r, char *dst, size_t cap)
{
    uint16_t n;
    const uint8_t *p;

    if (!rd_le16(r, &n) || !rd_bytes(r, n, &p) || n >= cap)
        return false;
    if (memchr(p, 0, n) != NULL)
        return false;
    memcpy(dst, p, n);
    dst[n] = '\0';
    return true;
}

static bool
dec_header(struct rd *r, struct trace_header *h, uint16_t *version)
{
    const uint8_t *magic;

    memset(h, 0, sizeof(*h));
    if (!rd_bytes(r, TRACE_MAGIC_LEN, &magic) ||
        memcmp(magic, TRACE_MAGIC, TRACE_MAGIC_LEN) != 0)
        return false;
    return rd_le16(r, version) && rd_u8(r, &h->source) &&
           rd_le32(r, &h->ts_precision_ns) && rd_le64(r, &h->start_wall_ns) &&
           rd_le64(r, &h->start_mono_ns) &&
           dec_str(r, h->tool_version, sizeof(h->tool_version)) &&
           dec_str(r, h->source_desc, sizeof(h->source_desc));
}

static bool
dec_msg(struct rd *r, struct trace_msg *m)
{
    memset(m, 0, sizeof(*m));
    if (!rd_le64(r, &m->conn_id) || !rd_le64(r, &m->t_ns) ||
        !rd_u8(r, &m->dir) || !rd_le32(r, &m->flags) ||
        !rd_le32(r, &m->wire_len) || !rd_bytes(r, m->wire_len, &m->wire) ||
        !rd_le32(r, &m->plain_len) || !rd_bytes(r, m->plain_len, &m->plain))
        return false;
    if (m->plain_len == 0)
        m->plain = NULL;
    return true;
}

static bool
dec_stats(struct rd *r, struct trace_stats *s)
{
    uint16_t n;

    memset(s, 0, sizeof(*s));
    if (!rd_le64(r, &s->t_ns) || !rd_le16(r, &n) || n > TRACE_STATS_MAX)
        return false;
    for (s->n = 0; s->n < n; s->n++)
        if (!dec_str(r, s->s[s->n].name, sizeof(s->s[s->n].name)) ||
            !rd_le64(r, &s->s[s->n].value))
            return false;
    return true;
}

static bool
dec_tls(struct rd *r, struct trace_tls *t)
{
    memset(t, 0, sizeof(*t));
    return rd_le64(r, &t->conn_id) && rd_le64(r, &t->t_ns) &&
           rd_u8(r, &t->leg) && rd_le64(r, &t->handshake_ns) &&
           rd_u8(r, &t->flags) && dec_str(r, t->version, sizeof(t->version)) &&
           dec_str(r, t->cipher, sizeof(t->cipher)) &&
           dec_str(r, t->group, sizeof(t->group)) &&
           dec_str(r, t->sni, sizeof(t->sni)) &&
           dec_str(r, t->error, sizeof(t->error));
}

static bool
dec_payload(struct rd *r, struct trace_rec *rec, uint16_t *version)
{
    switch (rec->type) {
    case TRACE_REC_HEADER:
        return dec_header(r, &rec->u.header, version);
    case TRACE_REC_CONN_OPEN:
        memset(&rec->u.open, 0, sizeof(rec->u.open));
        return rd_le64(r, &rec->u.open.conn_id) &&
               rd_le64(r, &rec->u.open.t_ns) &&
               dec_str(r, rec->u.open.client, sizeof(rec->u.open.client)) &&
               dec_str(r, rec->u.open.server, sizeof(rec->u.open.server));
    case TRACE_REC_MSG:
        return dec_msg(r, &rec->u.msg);
    case TRACE_REC_CONN_CLOSE:
        memset(&rec->u.close, 0, sizeof(rec->u.close));
        return rd_le64(r, &rec->u.close.conn_id) &&
               rd_le64(r, &rec->u.close.t_ns) &&
               rd_u8(r, &rec->u.close.reason) &&
               rd_le32(r, &rec->u.close.partial_c2s) &&
               rd_le32(r, &rec->u.close.partial_s2c);
    case TRACE_REC_STATS:
        return dec_stats(r, &rec->u.stats);
    case TRACE_REC_END:
        return rd_le64(r, &rec->u.end.t_ns) && rd_le64(r, &rec->u.end.records);
    case TRACE_REC_TLS:
        return dec_tls(r, &rec->u.tls);
    default:
        return false;
    }
}

int
trace__rec_decode(uint8_t type, const uint8_t *payload, size_t len,
                  struct trace_rec *rec, struct mt_err *err)
{
    struct rd r = rd_init(payload, len);
    uint16_t version = TRACE_VERSION;
    bool ok;

    if (type < TRACE_REC_HEADER || type > TRACE_REC_TYPE_MAX)
        return TRACE__REC_UNKNOWN;
    rec->type = type;
    ok = dec_payload(&r, rec, &version);
    /* A newer version may lay out the rest differently: say so first. */
    if (type == TRACE_REC_HEADER && version != TRACE_VERSION)
        return mt_err_set(err, MT_EVERSION, 0,
                          "trace format version %u; this mtrace reads "
                          "version %u",
                          version, TRACE_VERSION);
    if (!ok)
        return mt_err_set(err, MT_ECORRUPT, len - r.left,
                          "malformed record of type %u (%zu-byte payload, "
                          "bad field at byte %zu)",
                          type, len, len - r.left);
    return trace__rec_check(rec, err);
}

uint64_t
trace__rec_time(const struct trace_rec *rec)
{
    switch (rec->type) {
    case TRACE_REC_HEADER:
        return rec->u.header.start_mono_ns;
    case TRACE_REC_CONN_OPEN:
        return rec->u.open.t_ns;
    case TRACE_REC_MSG:
        return rec->u.msg.t_ns;
    case TRACE_REC_CONN_CLOSE:
        return rec->u.close.t_ns;
    case TRACE_REC_STATS:
        return rec->u.stats.t_ns;
    case TRACE_REC_END:
        return rec->u.end.t_ns;
    case TRACE_REC_TLS:
        return rec->u.tls.t_ns;
    default:
        return 0;
    }
}
