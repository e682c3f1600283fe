/*
 * test_recording.c -- capture/recording.c (the records of mongod's traffic
 * recorder) and capture/recimport.c (records to trace records): both
 * layouts, layout detection, every prefix, a guard page, bad sizes, unknown
 * event types, checksum.txt lines, and the conversion (connections,
 * directions, the server's made-up exhaust requests dropped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/recimport.h"
#include "capture/recording.h"
#include "core/log.h"
#include "core/trace.h"
#include "core/wire.h"

/* A session start in the event layout (traffic_recorder.cpp
 * serializeHeaderForPacket; 61 bytes). */
static const uint8_t SESSION_START[] = {
    0x3d, 0x00, 0x00, 0x00,                         /* 0  size 61 */
    0x02,                                           /* 4  event: start */
    0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 5  id 7 */
    '{',  ' ',  'r',  'e',  'm',  'o',  't',  'e',  /* 13 session */
    ':',  ' ',  '"',  'a',  ':',  '1',  '"',  ',',  /* 21 */
    ' ',  'l',  'o',  'c',  'a',  'l',  ':',  ' ',  /* 29 */
    '"',  'b',  ':',  '2',  '"',  ' ',  '}',  0x00, /* 37 ... NUL at 44 */
    0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 45 offset 1000 µs */
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 53 order 1 */
};

#define SESSION "{ remote: \"10.0.0.1:5000\", local: \"10.0.0.2:27017\" }"

/* An OP_MSG {ping: 1, $db: "admin"} (core/wire's encoder). */
static void
ping_msg(struct mt_buf *b, int32_t rid, int32_t rto, uint32_t flags)
{
    bson_t *doc = BCON_NEW("ping", BCON_INT32(1), "$db", BCON_UTF8("admin"));
    mt_buf_init(b, 1 << 20);
    assert_int_equal(wire_encode_msg(b, rid, rto, flags, doc, NULL, 0), 0);
    bson_destroy(doc);
}

static void
le(struct mt_buf *b, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        uint8_t x = (uint8_t)(v >> (8 * i));
        assert_int_equal(mt_buf_append(b, &x, 1), 0);
    }
}

/* One record written field by field (layout 1 date, 2 event). */
static void
mk(struct mt_buf *b, int layout, uint8_t ev, uint64_t id, const char *session,
   uint64_t time, uint64_t order, const struct mt_buf *msg)
{
    size_t start = b->len;
    uint32_t size;

    le(b, 0, 4);
    if (layout == RECORDING_LAYOUT_EVENT)
        le(b, ev, 1);
    le(b, id, 8);
    assert_int_equal(mt_buf_append(b, session, strlen(session) + 1), 0);
    le(b, time, 8);
    le(b, order, 8);
    if (msg != NULL)
        assert_int_equal(mt_buf_append(b, msg->data, msg->len), 0);
    size = (uint32_t)(b->len - start);
    for (int i = 0; i < 4; i++)
        b->data[start + (size_t)i] = (uint8_t)(size >> (8 * i));
}

/* ---- valid input ---- */

static void
test_recording_parse_session_start(void **state)
{
    struct recording_packet p;
    char remote[64], local[64];
    size_t used;

    (void)state;
    assert_int_equal(recording_parse(SESSION_START, sizeof(SESSION_START),
                                     RECORDING_LAYOUT_EVENT, &p, &used, NULL),
                     MT_OK);
    assert_int_equal(used, sizeof(SESSION_START));
    assert_int_equal(p.event, RECORDING_EV_SESSION_START);
    assert_int_equal(p.session_id, 7);
    assert_int_equal(p.session_len, 31);
    assert_int_equal(p.time, 1000);
    assert_int_equal(p.order, 1);
    assert_null(p.msg);
    assert_int_equal(p.msg_len, 0);
    recording_session_addrs(p.session, p.session_len, remote, sizeof(remote),
                            local, sizeof(local));
    assert_string_equal(remote, "a:1");
    assert_string_equal(local, "b:2");
    assert_int_equal(
        recording_detect(SESSION_START, sizeof(SESSION_START), NULL),
        RECORDING_LAYOUT_EVENT);
}

static void
test_recording_parse_both_layouts(void **state)
{
    struct mt_buf m, ev, dt;
    struct recording_packet p;
    size_t used;

    (void)state;
    ping_msg(&m, 5, 0, 0);
    mt_buf_init(&ev, 1 << 20);
    mt_buf_init(&dt, 1 << 20);
    mk(&ev, RECORDING_LAYOUT_EVENT, RECORDING_EV_REQUEST, 3, SESSION, 77, 9,
       &m);
    mk(&dt, RECORDING_LAYOUT_DATE, 0, 3, SESSION, 1700000000123ull, 9, &m);
    assert_int_equal(recording_detect(ev.data, ev.len, NULL),
                     RECORDING_LAYOUT_EVENT);
    assert_int_equal(recording_detect(dt.data, dt.len, NULL),
                     RECORDING_LAYOUT_DATE);
    assert_int_equal(recording_parse(ev.data, ev.len, RECORDING_LAYOUT_EVENT,
                                     &p, &used, NULL),
                     MT_OK);
    assert_int_equal(used, ev.len);
    assert_int_equal(p.event, RECORDING_EV_REQUEST);
    assert_int_equal(p.time, 77);
    assert_int_equal(p.msg_len, m.len);
    assert_memory_equal(p.msg, m.data, m.len);
    assert_int_equal(recording_parse(dt.data, dt.len, RECORDING_LAYOUT_DATE, &p,
                                     &used, NULL),
                     MT_OK);
    assert_int_equal(p.event, RECORDING_EV_MESSAGE);
    assert_int_equal(p.time, 1700000000123ull);
    assert_int_equal(p.session_id, 3);
    assert_memory_equal(p.msg, m.data, m.len);
    mt_buf_free(&m);
    mt_buf_free(&ev);
    mt_buf_free(&dt);
}

/* Every prefix of a record needs more bytes, never more than the record. */
static void
test_recording_parse_every_prefix(void **state)
{
    struct mt_buf m, r;
    struct recording_packet p;
    size_t used;

    (void)state;
    ping_msg(&m, 5, 0, 0);
    mt_buf_init(&r, 1 << 20);
    mk(&r, RECORDING_LAYOUT_EVENT, RECORDING_EV_REQUEST, 3, SESSION, 1, 2, &m);
    for (size_t n = 0; n < r.len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, r.data, n);
        assert_int_equal(
            recording_parse(copy, n, RECORDING_LAYOUT_EVENT, &p, &used, NULL),
            MT_PARTIAL);
        assert_int_equal(used, n < 4 ? 4 : r.len);
        free(copy);
    }
    mt_buf_free(&m);
    mt_buf_free(&r);
}

/* The record ends at a page that cannot be read: no byte past it is
 * touched, for every prefix. */
static void
test_recording_parse_guard_page(void **state)
{
    long pg = sysconf(_SC_PAGESIZE);
    struct mt_buf m, r;
    struct recording_packet p;
    uint8_t *map;
    size_t used;

    (void)state;
    ping_msg(&m, 5, 0, 0);
    mt_buf_init(&r, 1 << 20);
    mk(&r, RECORDING_LAYOUT_DATE, 0, 3, SESSION, 1, 2, &m);
    map = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
    for (size_t n = 0; n <= r.len; n++) {
        uint8_t *at = map + pg - n;
        memcpy(at, r.data, n);
        (void)recording_parse(at, n, RECORDING_LAYOUT_DATE, &p, &used, NULL);
        (void)recording_detect(at, n, NULL);
    }
    munmap(map, (size_t)pg * 2);
    mt_buf_free(&m);
    mt_buf_free(&r);
}

static void
test_recording_checksum_lookup(void **state)
{
    const char *txt = "/data/rec/1700000000000.bin\tdeadbeef\n"
                      "/data/rec/11700000000001.bin\t1\n"
                      "/data/rec/1700000000001.bin\t2a\r\n"
                      "/data/rec/1700000000001.bin\tc5ad757\n"
                      "/data/rec/1700000000002.bin\tnot-hex\n"
                      "no tab on this line\n";
    uint32_t crc = 0;

    (void)state;
    assert_int_equal(
        recording_checksum_lookup(txt, strlen(txt), "1700000000000.bin", &crc),
        1);
    assert_int_equal(crc, 0xdeadbeef);
    /* the last line for a file wins; "11700..." is another file */
    assert_int_equal(
        recording_checksum_lookup(txt, strlen(txt), "1700000000001.bin", &crc),
        1);
    assert_int_equal(crc, 0xc5ad757);
    assert_int_equal(
        recording_checksum_lookup(txt, strlen(txt), "1700000000002.bin", &crc),
        -1);
    assert_int_equal(
        recording_checksum_lookup(txt, strlen(txt), "1700000000009.bin", &crc),
        0);
}

static void
test_recording_session_addrs_absent(void **state)
{
    char remote[8], local[64];
    const char *s = "{ id: 4, remote: \"[::1]:54321\" }";

    (void)state;
    recording_session_addrs(s, strlen(s), remote, sizeof(remote), local,
                            sizeof(local));
    assert_string_equal(remote, "[::1]:5"); /* cut to the array */
    assert_string_equal(local, "");
}

/* ---- conversion ---- */

struct conv {
    char *buf; /* the trace, open_memstream */
    size_t len;
    FILE *fp;
    struct trace_writer *w;
    struct recimport *im;
};

static void
conv_open(struct conv *c, int layout)
{
    struct trace_header h = {.source = TRACE_SRC_RECORDING,
                             .ts_precision_ns = 1000};
    struct mt_err err = {0};

    memset(c, 0, sizeof(*c));
    c->fp = open_memstream(&c->buf, &c->len);
    assert_non_null(c->fp);
    c->w = trace_writer_open_fp(c->fp, &h, &err);
    assert_non_null(c->w);
    c->im = recimport_new(c->w, layout, NULL);
    assert_non_null(c->im);
}

static void
conv_put(struct conv *c, const struct mt_buf *rec, int layout)
{
    struct recording_packet p;
    struct mt_err err = {0};
    size_t used;

    assert_int_equal(
        recording_parse(rec->data, rec->len, layout, &p, &used, &err), MT_OK);
    assert_int_equal(recimport_packet(c->im, &p, &err), 0);
}

/* What came out: message directions ("c"/"s" per message), opens, and
 * closes as "reason@conn". */
struct seen {
    char dirs[64];
    int opens, closes;
    char close[4][32];
    uint64_t synthetic;
};

static void
conv_close(struct conv *c, struct seen *s)
{
    struct trace_reader *r;
    struct trace_rec rec;
    struct mt_err err = {0};
    size_t nd = 0;

    assert_int_equal(recimport_finish(c->im, &err), 0);
    recimport_free(c->im);
    assert_int_equal(trace_writer_close(c->w), 0);
    fclose(c->fp);
    memset(s, 0, sizeof(*s));
    r = trace_reader_open_mem(c->buf, c->len, &err);
    assert_non_null(r);
    while (trace_reader_next(r, &rec, &err) == MT_OK) {
        if (rec.type == TRACE_REC_MSG && nd + 1 < sizeof(s->dirs))
            s->dirs[nd++] = rec.u.msg.dir == TRACE_DIR_S2C ? 's' : 'c';
        else if (rec.type == TRACE_REC_CONN_OPEN)
            s->opens++;
        else if (rec.type == TRACE_REC_CONN_CLOSE && s->closes < 4)
            snprintf(s->close[s->closes++], sizeof(s->close[0]), "%s@%llu",
                     trace_close_reason_name(rec.u.close.reason),
                     (unsigned long long)rec.u.close.conn_id);
        else if (rec.type == TRACE_REC_STATS)
            for (size_t i = 0; i < rec.u.stats.n; i++)
                if (strcmp(rec.u.stats.s[i].name, "exhaust_synthetic") == 0)
                    s->synthetic = rec.u.stats.s[i].value;
    }
    trace_reader_free(r);
    free(c->buf);
}

/* Event layout: a session, an exhaust stream of two replies and the
 * request the server made up between them (dropped), a session end; a
 * second session without a start (opened at its first message, closed at
 * the end). */
static void
test_recimport_event_exhaust(void **state)
{
    struct mt_buf rec, req, r1, synth, r2, other;
    struct conv c;
    struct seen s;
    const int L = RECORDING_LAYOUT_EVENT;

    (void)state;
    ping_msg(&req, 10, 0, WIRE_MSG_EXHAUST_ALLOWED);
    ping_msg(&r1, 500, 10, WIRE_MSG_MORE_TO_COME);
    ping_msg(&synth, 500, 10, WIRE_MSG_EXHAUST_ALLOWED);
    ping_msg(&r2, 501, 500, 0);
    ping_msg(&other, 11, 0, 0);
    mt_buf_init(&rec, 1 << 20);
    conv_open(&c, L);
    mk(&rec, L, RECORDING_EV_SESSION_START, 1, SESSION, 0, 1, NULL);
    conv_put(&c, &rec, L);
    mt_buf_reset(&rec);
    mk(&rec, L, RECORDING_EV_SESSION_START, 1, SESSION, 0, 2, NULL);
    conv_put(&c, &rec, L); /* reported twice: ignored */
    mt_buf_reset(&rec);
    mk(&rec, L, RECORDING_EV_REQUEST, 1, SESSION, 10, 3, &req);
    conv_put(&c, &rec, L);
    mt_buf_reset(&rec);
    mk(&rec, L, RECORDING_EV_RESPONSE, 1, SESSION, 20, 4, &r1);
    conv_put(&c, &rec, L);
    mt_buf_reset(&rec);
    mk(&rec, L, RECORDING_EV_REQUEST, 1, SESSION, 21, 5, &synth);
    conv_put(&c, &rec, L);
    mt_buf_reset(&rec);
    mk(&rec, L, RECORDING_EV_RESPONSE, 1, SESSION, 30, 6, &r2);
    conv_put(&c, &rec, L);
    mt_buf_reset(&rec);
    mk(&rec, L, RECORDING_EV_REQUEST, 2, SESSION, 31, 7, &other);
    conv_put(&c, &rec, L);
    mt_buf_reset(&rec);
    mk(&rec, L, RECORDING_EV_SESSION_END, 1, SESSION, 40, 8, NULL);
    conv_put(&c, &rec, L);
    assert_int_equal(recimport_stats(c.im)->dup_starts, 1);
    conv_close(&c, &s);
    assert_string_equal(s.dirs, "cssc");
    assert_int_equal(s.synthetic, 1);
    assert_int_equal(s.opens, 2);
    assert_int_equal(s.closes, 2);
    assert_string_equal(s.close[0], "normal@1");
    assert_string_equal(s.close[1], "shutdown@2");
    mt_buf_free(&rec);
    mt_buf_free(&req);
    mt_buf_free(&r1);
    mt_buf_free(&synth);
    mt_buf_free(&r2);
    mt_buf_free(&other);
}

/* One date-layout record of session id holding an OP_REPLY (rid, rto). */
static void
put_legacy(struct conv *c, uint64_t id, int32_t rid, int32_t rto)
{
    bson_t *doc = BCON_NEW("ok", BCON_INT32(1));
    const bson_t *docs[] = {doc};
    struct mt_buf m, rec;

    mt_buf_init(&m, 1 << 20);
    mt_buf_init(&rec, 1 << 20);
    assert_int_equal(wire_encode_reply(&m, rid, rto, 0, 5, 0, docs, 1), 0);
    mk(&rec, RECORDING_LAYOUT_DATE, 0, id, SESSION, 1700000000100ull, 50, &m);
    conv_put(c, &rec, RECORDING_LAYOUT_DATE);
    bson_destroy(doc);
    mt_buf_free(&m);
    mt_buf_free(&rec);
}

/* One holding an OP_GET_MORE of cursor 5 on db.c (rid, rto). */
static void
put_getmore(struct conv *c, uint64_t id, int32_t rid, int32_t rto)
{
    struct mt_buf m, rec;

    mt_buf_init(&m, 1 << 20);
    mt_buf_init(&rec, 1 << 20);
    le(&m, 16 + 4 + 5 + 4 + 8, 4);                     /* messageLength */
    le(&m, (uint32_t)rid, 4);                          /* requestID */
    le(&m, (uint32_t)rto, 4);                          /* responseTo */
    le(&m, WIRE_OP_GET_MORE, 4);                       /* opCode 2005 */
    le(&m, 0, 4);                                      /* ZERO */
    assert_int_equal(mt_buf_append(&m, "db.c", 5), 0); /* namespace */
    le(&m, 0, 4);                                      /* numberToReturn */
    le(&m, 5, 8);                                      /* cursorID */
    mk(&rec, RECORDING_LAYOUT_DATE, 0, id, SESSION, 1700000000100ull, 51, &m);
    conv_put(c, &rec, RECORDING_LAYOUT_DATE);
    mt_buf_free(&m);
    mt_buf_free(&rec);
}

/* Date layout: no direction recorded; inferred from responseTo and
 * exhaustAllowed; the made-up exhaust request recognised too. */
static void
test_recimport_date_directions(void **state)
{
    struct mt_buf rec, m[5];
    struct conv c;
    struct seen s;
    const int L = RECORDING_LAYOUT_DATE;

    (void)state;
    ping_msg(&m[0], 10, 0, 0);                          /* request */
    ping_msg(&m[1], 600, 10, 0);                        /* its reply */
    ping_msg(&m[2], 11, 0, WIRE_MSG_EXHAUST_ALLOWED);   /* exhaust request */
    ping_msg(&m[3], 601, 11, WIRE_MSG_MORE_TO_COME);    /* reply, more */
    ping_msg(&m[4], 601, 11, WIRE_MSG_EXHAUST_ALLOWED); /* made up */
    mt_buf_init(&rec, 1 << 20);
    conv_open(&c, L);
    for (int i = 0; i < 5; i++) {
        mt_buf_reset(&rec);
        mk(&rec, L, 0, 4, SESSION, 1700000000000ull + (uint64_t)i,
           (uint64_t)i + 1, &m[i]);
        conv_put(&c, &rec, L);
        mt_buf_free(&m[i]);
    }
    /* a legacy exhaust cursor: OP_REPLY, then the OP_GET_MORE the server
     * made up (requestID and responseTo of that reply), then the next
     * OP_REPLY; and a client's own OP_GET_MORE (responseTo 0) with the same
     * requestID as a reply before it, which stays */
    put_legacy(&c, 4, 700, 12);  /* OP_REPLY 700 -> 12 */
    put_getmore(&c, 4, 700, 12); /* made up */
    put_legacy(&c, 4, 701, 700); /* OP_REPLY 701 -> 700 */
    put_getmore(&c, 4, 701, 0);  /* a client's */
    conv_close(&c, &s);
    assert_string_equal(s.dirs, "cscsssc");
    assert_int_equal(s.synthetic, 2);
    assert_int_equal(s.opens, 1);
    assert_string_equal(s.close[0], "shutdown@4");
    mt_buf_free(&rec);
}

/* ---- invalid input ---- */

static void
test_recording_parse_bad_size(void **state)
{
    uint8_t r[64];
    struct recording_packet p;
    struct mt_err err = {0};
    size_t used = 99;

    (void)state;
    memcpy(r, SESSION_START, sizeof(SESSION_START));
    r[0] = 0x00, r[1] = 0x6c, r[2] = 0xdc, r[3] = 0x02; /* 48,000,000 */
    assert_int_equal(recording_parse(r, sizeof(SESSION_START),
                                     RECORDING_LAYOUT_EVENT, &p, &used, &err),
                     MT_ETOOBIG);
    assert_int_equal(used, 0);
    assert_non_null(strstr(err.msg, "48000000"));
    r[0] = 29, r[1] = r[2] = r[3] = 0; /* below the event minimum, 30 */
    assert_int_equal(recording_parse(r, sizeof(SESSION_START),
                                     RECORDING_LAYOUT_EVENT, &p, &used, &err),
                     MT_EPROTO);
    assert_int_equal(used, 0);
}

static void
test_recording_parse_unknown_event(void **state)
{
    uint8_t r[sizeof(SESSION_START)];
    struct recording_packet p;
    struct mt_err err = {0};
    size_t used;

    (void)state;
    memcpy(r, SESSION_START, sizeof(r));
    r[4] = 4; /* kMax: not an event */
    assert_int_equal(
        recording_parse(r, sizeof(r), RECORDING_LAYOUT_EVENT, &p, &used, &err),
        MT_EUNSUPPORTED);
    assert_int_equal(used, sizeof(r)); /* skippable */
    assert_non_null(strstr(err.msg, "unknown event type 4"));
}

static void
test_recording_parse_bad_fields(void **state)
{
    uint8_t r[sizeof(SESSION_START)];
    struct mt_buf m, b;
    struct recording_packet p;
    struct mt_err err = {0};
    size_t used;

    (void)state;
    memcpy(r, SESSION_START, sizeof(r));
    r[44] = '!'; /* the session's NUL: now the string runs into the time */
    r[45] = r[46] = r[47] = r[48] = r[49] = r[50] = r[51] = r[52] = 'x';
    r[53] = r[54] = r[55] = r[56] = r[57] = r[58] = r[59] = r[60] = 'x';
    assert_int_equal(
        recording_parse(r, sizeof(r), RECORDING_LAYOUT_EVENT, &p, &used, &err),
        MT_ECORRUPT);
    assert_int_equal(used, sizeof(r));
    /* a message whose messageLength is not the rest of the record */
    ping_msg(&m, 1, 0, 0);
    m.data[0]++;
    mt_buf_init(&b, 1 << 20);
    mk(&b, RECORDING_LAYOUT_EVENT, RECORDING_EV_REQUEST, 1, SESSION, 1, 1, &m);
    assert_int_equal(
        recording_parse(b.data, b.len, RECORDING_LAYOUT_EVENT, &p, &used, &err),
        MT_ECORRUPT);
    assert_non_null(strstr(err.msg, "messageLength"));
    /* a response without a message */
    mt_buf_reset(&b);
    mk(&b, RECORDING_LAYOUT_EVENT, RECORDING_EV_RESPONSE, 1, SESSION, 1, 1,
       NULL);
    assert_int_equal(
        recording_parse(b.data, b.len, RECORDING_LAYOUT_EVENT, &p, &used, &err),
        MT_ECORRUPT);
    /* neither layout */
    assert_int_equal(recording_detect((const uint8_t *)"garbage garbage "
                                                       "garbage garbage",
                                      31, &err),
                     RECORDING_LAYOUT_NONE);
    mt_buf_free(&m);
    mt_buf_free(&b);
}

int
main(void)
{
    const struct CMUnitTest valid[] = {
        cmocka_unit_test(test_recording_parse_session_start),
        cmocka_unit_test(test_recording_parse_both_layouts),
        cmocka_unit_test(test_recording_parse_every_prefix),
        cmocka_unit_test(test_recording_parse_guard_page),
        cmocka_unit_test(test_recording_checksum_lookup),
        cmocka_unit_test(test_recording_session_addrs_absent),
        cmocka_unit_test(test_recimport_event_exhaust),
        cmocka_unit_test(test_recimport_date_directions),
    };
    const struct CMUnitTest invalid[] = {
        cmocka_unit_test(test_recording_parse_bad_size),
        cmocka_unit_test(test_recording_parse_unknown_event),
        cmocka_unit_test(test_recording_parse_bad_fields),
    };
    int rc;

    mt_log_set_level(MT_LOG_ERROR);
    rc = cmocka_run_group_tests_name("recording valid", valid, NULL, NULL);
    return rc | cmocka_run_group_tests_name("recording invalid", invalid, NULL,
                                            NULL);
}
