/*
 * recording.h -- the files mongod's traffic recorder writes
 * (startTrafficRecording / startRecordingTraffic): one record per
 * message or session event, read with core/rd.h.  The layouts, their
 * source and what each field means are in docs/recording.md and at the top
 * of recording.c; capture/recimport.c turns the records into a trace.
 */
#ifndef MT_RECORDING_H
#define MT_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"
#include "core/err.h"

/* The two record layouts (recording.c has their bytes). */
enum recording_layout {
    RECORDING_LAYOUT_NONE = 0,
    RECORDING_LAYOUT_DATE = 1,  /* no event byte; u64 ms since the epoch */
    RECORDING_LAYOUT_EVENT = 2, /* u8 event; u64 µs since recording start */
};

/* EventType of traffic_recorder_event.h; MESSAGE for the date layout,
 * which does not say a message's direction. */
enum recording_event {
    RECORDING_EV_REQUEST = 0,
    RECORDING_EV_RESPONSE = 1,
    RECORDING_EV_SESSION_START = 2,
    RECORDING_EV_SESSION_END = 3,
    RECORDING_EV_MESSAGE = 255,
};
#define RECORDING_EV_KNOWN_MAX RECORDING_EV_SESSION_END

/* The server's reader refuses a record of MaxMessageSizeBytes or more
 * (traffic_reader.cpp: `len < MaxMessageSizeBytes`). */
#define RECORDING_REC_LEN_MAX 48000000u
/* size, id, the session's NUL, time and order: the smallest record. */
#define RECORDING_REC_LEN_MIN_DATE 29u
#define RECORDING_REC_LEN_MIN_EVENT 30u

struct recording_packet {
    uint8_t event;       /* enum recording_event */
    uint64_t session_id; /* the transport session (connection) id */
    const char *session; /* borrowed: ts.toBSON().toString(), no NUL */
    size_t session_len;
    uint64_t time;      /* date: ms since the epoch; event: µs offset */
    uint64_t order;     /* recording-wide sequence number */
    const uint8_t *msg; /* borrowed: the wire message; NULL when none */
    uint32_t msg_len;   /* its length (0 for session events) */
    uint32_t rec_len;   /* the whole record's length */
};

/*
 * Parses the record at the start of buf[0..len) in the given layout.
 * MT_OK: *p filled (borrowing from buf), *consumed = the record's size.
 * MT_PARTIAL: buf holds a prefix; *consumed = bytes needed (4 while the
 * size field itself is incomplete).
 * MT_ETOOBIG / MT_EPROTO: the size field is out of range (>= 48,000,000 /
 * below the smallest record): nothing after it can be framed, *consumed 0.
 * MT_EUNSUPPORTED: an event type this reader does not know; MT_ECORRUPT:
 * the fields do not fit the size (no NUL in the session string, a message
 * whose messageLength is not the rest of the record, a request or response
 * without a message).  Both set *consumed = the size (the record can be
 * skipped) and fill p->rec_len.  err (may be NULL) says what, offset
 * relative to buf.  Cost: O(session string); nothing is allocated.
 */
int recording_parse(const uint8_t *buf, size_t len, int layout,
                    struct recording_packet *p, size_t *consumed,
                    struct mt_err *err);

/*
 * The layout of the (first) record in buf: the one in which it parses
 * completely and its session string starts with '{' (BSONObj::toString)
 * when both parse; the event layout when that does not decide.  Returns
 * the layout, or RECORDING_LAYOUT_NONE with err saying why (a prefix too
 * short to tell is MT_PARTIAL in err->code).
 */
int recording_detect(const uint8_t *buf, size_t len, struct mt_err *err);

/*
 * The endpoints in a session string: the values of its `remote: "..."`
 * and `local: "..."` fields (CommonAsioSession::appendToBSON), cut to the
 * arrays; "" where absent.
 */
void recording_session_addrs(const char *s, size_t n, char *remote,
                             size_t remote_len, char *local, size_t local_len);

/*
 * checksum.txt: lines of "PATH\tHEX" (the recorder's writeChecksum, one
 * per file it finished).  Looks up the last line whose PATH ends in
 * "/base" (or is base) and parses HEX as a CRC-32C of at most 8 hex
 * digits.  Returns 1 (*crc set), 0 (no line for base), -1 (a line for base
 * whose value is not a CRC-32C).
 */
int recording_checksum_lookup(const char *text, size_t len, const char *base,
                              uint32_t *crc);

/*
 * One recording file read record by record (FILE *), with the CRC-32C of
 * every byte read so far (the recorder's checksum.txt covers the file).
 */
struct recording_file {
    FILE *fp;          /* owned */
    uint64_t off;      /* file offset of the next record */
    uint64_t size;     /* the file's size at open */
    uint32_t crc;      /* CRC-32C of bytes [0, off) */
    struct mt_buf rec; /* owned: the current record's bytes */
};

/* Opens path; -errno with err set on failure. */
int recording_file_open(struct recording_file *f, const char *path,
                        struct mt_err *err);

/*
 * Reads and parses the next record (recording_parse's codes; MT_END at a
 * clean end of the file).  MT_PARTIAL means the file ends inside the
 * record: final.  After MT_ETOOBIG / MT_EPROTO (a bad size) the rest of
 * the file cannot be framed: final too.  err->offset is the record's file
 * offset.  p borrows f->rec until the next call.
 */
int recording_file_next(struct recording_file *f, int layout,
                        struct recording_packet *p, struct mt_err *err);

/* Closes the file; safe on a zeroed or already closed struct. */
void recording_file_close(struct recording_file *f);

#endif
