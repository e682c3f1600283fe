/*
 * fuzz_recording.c -- libFuzzer target for the reader of mongod's traffic
 * recordings (capture/recording.c) and their conversion to a trace
 * (capture/recimport.c).  The input is one recording file; its layout is
 * detected, or chosen by the first byte's low bit when detection fails.
 * Invariants checked (abort on failure):
 *   - every record the reader accepts re-encodes, field by field in the
 *     recorder's order (an encoder written here, not the reader's), to
 *     exactly the input bytes it was parsed from, and its size is within
 *     the limits;
 *   - a skipped record (unknown event, fields not fitting) consumes its
 *     whole size and at least the smallest record, so reading progresses;
 *   - the trace written from the accepted records reads back completely,
 *     with one message record per accepted message minus the exhaust
 *     requests counted as made up by the server, and as many connection
 *     closes as opens.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/recimport.h"
#include "capture/recording.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/trace.h"

static void
check(int ok)
{
    if (!ok)
        abort();
}

static void
le(struct mt_buf *b, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        uint8_t x = (uint8_t)(v >> (8 * i));
        check(mt_buf_append(b, &x, 1) == 0);
    }
}

/* The record again, as traffic_recorder.cpp writes it. */
static void
encode(struct mt_buf *b, int layout, const struct recording_packet *p)
{
    mt_buf_reset(b);
    le(b, p->rec_len, 4);
    if (layout == RECORDING_LAYOUT_EVENT)
        le(b, p->event, 1);
    le(b, p->session_id, 8);
    check(mt_buf_append(b, p->session, p->session_len) == 0);
    le(b, 0, 1);
    le(b, p->time, 8);
    le(b, p->order, 8);
    if (p->msg_len > 0)
        check(mt_buf_append(b, p->msg, p->msg_len) == 0);
}

/* Reads the trace back; returns message records, checks the rest. */
static uint64_t
read_back(const char *buf, size_t len)
{
    struct mt_err err = {0};
    struct trace_reader *r = trace_reader_open_mem(buf, len, &err);
    struct trace_rec rec;
    uint64_t msgs = 0, opens = 0, closes = 0;
    int rc;

    check(r != NULL);
    while ((rc = trace_reader_next(r, &rec, &err)) == MT_OK) {
        msgs += rec.type == TRACE_REC_MSG;
        opens += rec.type == TRACE_REC_CONN_OPEN;
        closes += rec.type == TRACE_REC_CONN_CLOSE;
    }
    check(rc == MT_END);
    check(opens == closes);
    trace_reader_free(r);
    return msgs;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trace_header h = {.source = TRACE_SRC_RECORDING,
                             .ts_precision_ns = 1000};
    struct recording_packet p;
    struct mt_err err = {0};
    struct mt_buf again;
    struct trace_writer *w;
    struct recimport *im;
    uint64_t msgs = 0;
    char *buf = NULL;
    size_t len = 0, off = 0, used;
    FILE *fp;
    int layout, rc;

    mt_log_set_level(MT_LOG_ERROR);
    layout = recording_detect(data, size, NULL);
    if (layout == RECORDING_LAYOUT_NONE)
        layout = size > 0 && (data[0] & 1) ? RECORDING_LAYOUT_DATE
                                           : RECORDING_LAYOUT_EVENT;
    fp = open_memstream(&buf, &len);
    check(fp != NULL);
    w = trace_writer_open_fp(fp, &h, &err);
    check(w != NULL);
    im = recimport_new(w, layout, NULL);
    check(im != NULL);
    mt_buf_init(&again, RECORDING_REC_LEN_MAX);
    while (off < size) {
        rc = recording_parse(data + off, size - off, layout, &p, &used, &err);
        if (rc == MT_OK) {
            check(used == p.rec_len && used <= size - off &&
                  used < RECORDING_REC_LEN_MAX);
            encode(&again, layout, &p);
            check(again.len == used &&
                  memcmp(again.data, data + off, used) == 0);
            msgs += p.event != RECORDING_EV_SESSION_START &&
                    p.event != RECORDING_EV_SESSION_END;
            check(recimport_packet(im, &p, &err) == 0);
        } else if (rc == MT_EUNSUPPORTED || rc == MT_ECORRUPT) {
            check(used >= RECORDING_REC_LEN_MIN_DATE && used <= size - off);
        } else {
            check(rc == MT_PARTIAL || rc == MT_ETOOBIG || rc == MT_EPROTO);
            break;
        }
        off += used;
    }
    check(recimport_finish(im, &err) == 0);
    msgs -= recimport_stats(im)->synthetic;
    check(recimport_stats(im)->messages == msgs);
    recimport_free(im);
    check(trace_writer_close(w) == 0);
    fclose(fp);
    check(read_back(buf, len) == msgs);
    free(buf);
    mt_buf_free(&again);
    return 0;
}
