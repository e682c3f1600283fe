/*
 * recimport.c -- mongod traffic recordings to an mtrace trace
 * (recimport.h; the mapping is documented in docs/recording.md).
 *
 * Per recorded session: a connection (conn_id = the session id) opened at
 * its session start event, or at its first record when the recording has
 * none (date layout, or a session that began before the recording), and
 * closed at its session end event, or at the end with reason shutdown.
 * Each message keeps its bytes as recorded (the recorder observes
 * requests before decompression and replies after compression, so these
 * are the wire bytes); an OP_COMPRESSED one gets its decompressed form.
 *
 * Exhaust streams: for each reply with moreToCome (OP_MSG) or each OP_REPLY
 * of a legacy exhaust cursor the server makes up the next request itself
 * (session_workflow.cpp makeExhaustMessage, makeLegacyExhaustMessage:
 * requestID and responseTo = that reply's) and the recorder records it like
 * a request from the client.  It never was on the wire, so it is dropped:
 * a request right after such a reply with the reply's requestID and a
 * responseTo other than 0 (a client's requests answer nothing).
 */
#include "recimport.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/redact.h"
#include "core/trace.h"
#include "core/wire.h"

#define SESSIONS_MAX (1u << 22)
#define PROBLEM_LINES_MAX 20
/* Connection ids given to a session id seen again after its end. */
#define REOPEN_ID_BASE (1ull << 62)

struct session {
    uint64_t id;      /* the recording's session id */
    uint64_t conn_id; /* in the trace */
    bool open;
    bool was_closed;     /* closed once: a later record reopens it */
    bool exhaust;        /* the last reply had moreToCome */
    int32_t exhaust_rid; /* ... and this requestID */
};

struct recimport {
    struct trace_writer *w;          /* borrowed */
    const struct redact_cfg *redact; /* borrowed */
    int layout;
    struct session *s; /* owned: in order of appearance */
    size_t ns, cap;
    uint32_t *slot; /* owned: hash of session id -> index + 1 */
    size_t nslot;
    uint64_t next_reopen;
    uint64_t order_n;
    struct mt_buf plain;    /* owned: decompressed form */
    struct mt_buf redacted; /* owned: scratch for redaction */
    const char *where;      /* borrowed: the file, for problem lines */
    uint64_t where_off;     /* the record's offset in it */
    struct recimport_stats st;
};

/* See recimport.h. */
struct recimport *
recimport_new(struct trace_writer *w, int layout,
              const struct redact_cfg *redact)
{
    struct recimport *im = mt_calloc(1, sizeof(*im));

    if (im == NULL)
        return NULL;
    im->w = w;
    im->layout = layout;
    im->redact = redact;
    im->next_reopen = REOPEN_ID_BASE;
    im->where = "recording";
    mt_buf_init(&im->plain, WIRE_MSG_LEN_MAX);
    mt_buf_init(&im->redacted, WIRE_MSG_LEN_MAX);
    return im;
}

/* See recimport.h. */
void
recimport_free(struct recimport *im)
{
    if (im == NULL)
        return;
    mt_free(im->s);
    mt_free(im->slot);
    mt_buf_free(&im->plain);
    mt_buf_free(&im->redacted);
    mt_free(im);
}

/* See recimport.h. */
struct recimport_stats *
recimport_stats(struct recimport *im)
{
    return &im->st;
}

/* See recimport.h. */
void
recimport_set_where(struct recimport *im, const char *file, uint64_t off)
{
    im->where = file;
    im->where_off = off;
}

/* See recimport.h. */
void
recimport_problem(struct recimport *im, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (im->st.problems++ >= PROBLEM_LINES_MAX) {
        if (im->st.problems == PROBLEM_LINES_MAX + 1)
            mt_warn("recording: more problems; counted in the summary");
        return;
    }
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    mt_warn("%s: %s", im->where, line);
}

static size_t
hash_slot(uint64_t id, size_t nslot)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (size_t)id & (nslot - 1);
}

/* Rebuilds the hash with twice the slots. */
static int
grow_hash(struct recimport *im)
{
    size_t n = im->nslot ? im->nslot * 2 : 1024;
    uint32_t *slot = mt_calloc(n, sizeof(*slot));

    if (slot == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < im->ns; i++) {
        size_t h = hash_slot(im->s[i].id, n);
        while (slot[h] != 0)
            h = (h + 1) & (n - 1);
        slot[h] = (uint32_t)(i + 1);
    }
    mt_free(im->slot);
    im->slot = slot;
    im->nslot = n;
    return 0;
}

/* The session of id, created (closed, not yet in the trace) when new. */
static int
find_session(struct recimport *im, uint64_t id, struct session **out,
             struct mt_err *err)
{
    size_t h;

    if (im->nslot == 0 && grow_hash(im) < 0)
        return mt_err_set(err, -ENOMEM, 0, "out of memory");
    h = hash_slot(id, im->nslot);
    for (; im->slot[h] != 0; h = (h + 1) & (im->nslot - 1))
        if (im->s[im->slot[h] - 1].id == id) {
            *out = &im->s[im->slot[h] - 1];
            return 0;
        }
    if (im->ns == SESSIONS_MAX)
        return mt_err_set(err, MT_ELIMIT, 0,
                          "more than %u sessions in the recording",
                          SESSIONS_MAX);
    if (im->ns == im->cap) {
        size_t cap = im->cap ? im->cap * 2 : 256;
        struct session *s = mt_realloc(im->s, cap * sizeof(*s));
        if (s == NULL)
            return mt_err_set(err, -ENOMEM, 0, "out of memory");
        im->s = s;
        im->cap = cap;
    }
    memset(&im->s[im->ns], 0, sizeof(im->s[0]));
    im->s[im->ns].id = id;
    im->s[im->ns].conn_id = id;
    im->slot[h] = (uint32_t)(++im->ns);
    if (im->ns * 2 > im->nslot && grow_hash(im) < 0)
        return mt_err_set(err, -ENOMEM, 0, "out of memory");
    *out = &im->s[im->ns - 1];
    return 0;
}

/* A record's time on the trace's clock (saturating). */
static uint64_t
rec_time_ns(const struct recimport *im, uint64_t t)
{
    uint64_t mul = im->layout == RECORDING_LAYOUT_EVENT ? 1000 : 1000000;
    return t > UINT64_MAX / mul ? UINT64_MAX : t * mul;
}

static int
werr(int rc, struct mt_err *err)
{
    return mt_err_set(err, rc, 0, "writing the trace: %s", mt_strerror(rc));
}

static int
open_session(struct recimport *im, struct session *s,
             const struct recording_packet *p, uint64_t t_ns,
             struct mt_err *err)
{
    struct trace_conn_open o;
    int rc;

    memset(&o, 0, sizeof(o));
    if (s->was_closed) /* trace conn ids are unique: give it a new one */
        s->conn_id = im->next_reopen++;
    o.conn_id = s->conn_id;
    o.t_ns = t_ns;
    recording_session_addrs(p->session, p->session_len, o.client,
                            sizeof(o.client), o.server, sizeof(o.server));
    rc = trace_writer_conn_open(im->w, &o);
    if (rc < 0)
        return werr(rc, err);
    s->open = true;
    s->exhaust = false;
    s->exhaust_rid = 0;
    im->st.sessions++;
    return 0;
}

static int
close_session(struct recimport *im, struct session *s, uint64_t t_ns,
              uint8_t reason, struct mt_err *err)
{
    struct trace_conn_close c;
    int rc;

    memset(&c, 0, sizeof(c));
    c.conn_id = s->conn_id;
    c.t_ns = t_ns;
    c.reason = reason;
    rc = trace_writer_conn_close(im->w, &c);
    if (rc < 0)
        return werr(rc, err);
    s->open = false;
    s->was_closed = true;
    return 0;
}

/*
 * The date layout does not say who sent a message: OP_REPLY and
 * OP_COMMANDREPLY come from the server, legacy request opcodes from the
 * client; an OP_MSG is a reply when it answers something (responseTo !=
 * 0) and does not carry exhaustAllowed, which only requests carry (the
 * server's made-up exhaust requests answer a request id too).
 */
static uint8_t
infer_dir(const uint8_t *m, size_t len, const struct wire_msg *parsed)
{
    struct rd r = rd_init(m, len);
    int32_t mlen, rid, rto, op;
    uint32_t flags = 0;

    if (!rd_le32s(&r, &mlen) || !rd_le32s(&r, &rid) || !rd_le32s(&r, &rto) ||
        !rd_le32s(&r, &op))
        return TRACE_DIR_C2S;
    if (op == WIRE_OP_REPLY || op == WIRE_OP_COMMANDREPLY)
        return TRACE_DIR_S2C;
    if (op != WIRE_OP_MSG)
        return rto != 0 && !wire_opcode_known(op) ? TRACE_DIR_S2C
                                                  : TRACE_DIR_C2S;
    if (parsed != NULL)
        flags = parsed->flags;
    else
        (void)rd_le32(&r, &flags);
    if (flags & WIRE_MSG_EXHAUST_ALLOWED)
        return TRACE_DIR_C2S;
    return rto != 0 ? TRACE_DIR_S2C : TRACE_DIR_C2S;
}

/* Parses the message and, for OP_COMPRESSED, its decompressed form into
 * im->plain; *inner is the message that says what it is (NULL when it
 * does not parse).  Problems are reported and flagged MALFORMED. */
static void
examine(struct recimport *im, const struct recording_packet *p,
        struct trace_msg *rec, struct wire_msg *wm,
        const struct wire_msg **inner)
{
    struct wire_msg outer;
    struct mt_err e = {0};
    size_t used;
    int rc;

    *inner = NULL;
    mt_buf_reset(&im->plain);
    rc = wire_msg_parse_opts(p->msg, p->msg_len, 0, &outer, &used, &e);
    if (rc == 0 && outer.h.op_code == WIRE_OP_COMPRESSED) {
        rc = wire_decompress(&outer, &im->plain, &e);
        if (rc == 0) {
            rec->plain = im->plain.data;
            rec->plain_len = (uint32_t)im->plain.len;
            rc = wire_msg_parse_opts(im->plain.data, im->plain.len, 0, wm,
                                     &used, &e);
        }
    } else if (rc == 0) {
        *wm = outer;
    }
    if (rc == 0) {
        *inner = wm;
        return;
    }
    rec->flags |= TRACE_MSG_MALFORMED;
    if (rc == MT_ECHECKSUM)
        im->st.msg_crc_errors++;
    else
        im->st.malformed++;
    recimport_problem(im,
                      "record at offset %llu (session %llu, order %llu): %s "
                      "(%s); kept, flagged malformed",
                      (unsigned long long)im->where_off,
                      (unsigned long long)p->session_id,
                      (unsigned long long)p->order,
                      rc == MT_ECHECKSUM ? "its OP_MSG CRC-32C does not match"
                                         : "its message does not parse",
                      e.msg);
}

static int
put_message(struct recimport *im, struct session *s,
            const struct recording_packet *p, uint64_t t_ns, struct mt_err *err)
{
    struct trace_msg rec;
    struct wire_msg wm;
    const struct wire_msg *in;
    int rc;

    memset(&rec, 0, sizeof(rec));
    rec.conn_id = s->conn_id;
    rec.t_ns = t_ns;
    rec.wire = p->msg;
    rec.wire_len = p->msg_len;
    examine(im, p, &rec, &wm, &in);
    if (p->event == RECORDING_EV_MESSAGE)
        rec.dir = infer_dir(rec.plain ? rec.plain : p->msg,
                            rec.plain ? rec.plain_len : p->msg_len, in);
    else
        rec.dir =
            p->event == RECORDING_EV_RESPONSE ? TRACE_DIR_S2C : TRACE_DIR_C2S;
    if (rec.dir == TRACE_DIR_C2S && s->exhaust && in != NULL &&
        in->h.request_id == s->exhaust_rid && in->h.response_to != 0) {
        s->exhaust = false;
        im->st.synthetic++;
        return 0;
    }
    s->exhaust = rec.dir == TRACE_DIR_S2C && in != NULL &&
                 ((in->h.op_code == WIRE_OP_MSG &&
                   (in->flags & WIRE_MSG_MORE_TO_COME)) ||
                  in->h.op_code == WIRE_OP_REPLY);
    s->exhaust_rid = s->exhaust ? in->h.request_id : 0;
    if (im->redact != NULL)
        (void)redact_trace_msg(im->redact, &rec, &im->redacted);
    rc = trace_writer_msg(im->w, &rec);
    if (rc < 0)
        return werr(rc, err);
    im->st.messages++;
    if (rec.dir == TRACE_DIR_S2C)
        im->st.s2c++;
    else
        im->st.c2s++;
    return 0;
}

static void
count_order(struct recimport *im, uint64_t order)
{
    if (im->order_n++ == 0 || order < im->st.order_min)
        im->st.order_min = order;
    if (order > im->st.order_max)
        im->st.order_max = order;
}

/* See recimport.h. */
int
recimport_packet(struct recimport *im, const struct recording_packet *p,
                 struct mt_err *err)
{
    uint64_t t_ns = rec_time_ns(im, p->time);
    struct session *s = NULL;
    int rc;

    im->st.records++;
    count_order(im, p->order);
    if (t_ns > im->st.t_max_ns)
        im->st.t_max_ns = t_ns;
    if ((rc = find_session(im, p->session_id, &s, err)) < 0)
        return rc;
    switch (p->event) {
    case RECORDING_EV_SESSION_START:
        im->st.session_events++;
        if (s->open) {
            im->st.dup_starts++; /* the recorder may report a start twice */
            return 0;
        }
        return open_session(im, s, p, t_ns, err);
    case RECORDING_EV_SESSION_END:
        im->st.session_events++;
        return s->open ? close_session(im, s, t_ns, TRACE_CLOSE_NORMAL, err)
                       : 0;
    default:
        if (!s->open && (rc = open_session(im, s, p, t_ns, err)) < 0)
            return rc;
        return put_message(im, s, p, t_ns, err);
    }
}

static void
stat_put(struct trace_stats *st, const char *name, uint64_t v)
{
    if (st->n == TRACE_STATS_MAX)
        return;
    snprintf(st->s[st->n].name, sizeof(st->s[0].name), "%s", name);
    st->s[st->n++].value = v;
}

/* See recimport.h. */
int
recimport_finish(struct recimport *im, struct mt_err *err)
{
    const struct recimport_stats *x = &im->st;
    struct trace_stats st;
    uint64_t span;
    int rc;

    for (size_t i = 0; i < im->ns; i++)
        if (im->s[i].open &&
            (rc = close_session(im, &im->s[i], x->t_max_ns,
                                TRACE_CLOSE_SHUTDOWN, err)) < 0)
            return rc;
    span = im->order_n ? x->order_max - x->order_min + 1 : 0;
    im->st.order_missing = span > im->order_n ? span - im->order_n : 0;
    memset(&st, 0, sizeof(st));
    st.t_ns = x->t_max_ns;
    stat_put(&st, "recording_files", x->files);
    stat_put(&st, "recording_records", x->records);
    stat_put(&st, "session_events", x->session_events);
    stat_put(&st, "exhaust_synthetic", x->synthetic);
    stat_put(&st, "duplicate_session_starts", x->dup_starts);
    stat_put(&st, "unknown_records", x->unknown);
    stat_put(&st, "bad_records", x->bad_records);
    stat_put(&st, "truncated_files", x->truncated);
    stat_put(&st, "bad_size_files", x->bad_size);
    stat_put(&st, "unread_bytes", x->unread_bytes);
    stat_put(&st, "malformed", x->malformed);
    stat_put(&st, "msg_checksum_errors", x->msg_crc_errors);
    stat_put(&st, "file_checksums_ok", x->crc_ok);
    stat_put(&st, "file_checksums_bad", x->crc_bad);
    stat_put(&st, "file_checksums_absent", x->crc_unchecked);
    stat_put(&st, "missing_files", x->missing_files);
    stat_put(&st, "order_first", x->order_min);
    stat_put(&st, "order_missing", x->order_missing);
    rc = trace_writer_stats(im->w, &st);
    return rc < 0 ? werr(rc, err) : 0;
}
