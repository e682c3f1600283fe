/*
 * trace.h -- the mtrace trace file: writer and reader.
 *
 * The format is specified in docs/trace-format.md.  In short: a sequence of
 * independent zstd frames, each holding whole records; a header record
 * first, an end record last; a seek index in a zstd skippable frame at the
 * very end (footer magic last).  All integers are little-endian.  A reader
 * needs no index: it streams frames and skips record types it does not
 * know.  A truncated or corrupt file yields every complete record before
 * the damage, then an error that says where (file offset) and how much was
 * lost.
 */
#ifndef MT_TRACE_H
#define MT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

#define TRACE_VERSION 1
/* A frame is closed within this of its first record. */
#define TRACE_FLUSH_NS (100u * 1000 * 1000)

/* The header record's first 8 bytes (docs/trace-format.md). */
#define TRACE_MAGIC "MTRC\r\n\x1a\n"
#define TRACE_MAGIC_LEN 8
/* zstd skippable frame holding the seek index, and the footer magic that
 * ends the file ("MTIX"). */
#define TRACE_INDEX_FRAME_MAGIC 0x184D2A5Eu
#define TRACE_FOOTER_MAGIC 0x5849544Du
#define TRACE_INDEX_ENTRY_LEN 20
#define TRACE_FOOTER_LEN 12
/* Index version 2: an entry's compressed size counts the data frame and
 * the checksum frame after it (version 1: the data frame alone). */
#define TRACE_INDEX_VERSION 2
/* The zstd skippable frame after each data frame: u32 magic, u32 size (8),
 * u32 CRC-32 (zlib's crc32(), ISO-HDLC) of the data frame's compressed
 * bytes, u32 their length.  Data frames carry no XXH64 content checksum:
 * checking 1/16 of the bytes with a CRC costs a tenth of hashing the
 * records (docs/trace-format.md "Data frames"). */
#define TRACE_CRC_FRAME_MAGIC 0x184D2A5Cu
#define TRACE_CRC_FRAME_LEN 16

/* Limits: a message's wire and plain forms each at most maxMessageSizeBytes;
 * a record at most both plus slack; a frame ends once it holds
 * TRACE_FRAME_TARGET bytes, so it never decompresses beyond
 * TRACE_FRAME_LEN_MAX. */
#define TRACE_MSG_LEN_MAX 48000000u
#define TRACE_REC_LEN_MAX (2u * TRACE_MSG_LEN_MAX + 65536u)
#define TRACE_FRAME_TARGET (1024u * 1024u)
#define TRACE_FRAME_LEN_MAX (TRACE_REC_LEN_MAX + TRACE_FRAME_TARGET + 5u)
#define TRACE_REC_PREFIX_LEN 5 /* u8 type + u32 payload length */

enum trace_rec_type {
    TRACE_REC_HEADER = 1,
    TRACE_REC_CONN_OPEN = 2,
    TRACE_REC_MSG = 3,
    TRACE_REC_CONN_CLOSE = 4,
    TRACE_REC_STATS = 5,
    TRACE_REC_END = 6,
    TRACE_REC_TLS = 7,
};
/* The highest record type this reader knows; higher ones are skipped. */
#define TRACE_REC_TYPE_MAX TRACE_REC_TLS

enum trace_dir {
    TRACE_DIR_C2S = 0, /* client to server (requests) */
    TRACE_DIR_S2C = 1, /* server to client (replies) */
};

/* Where the trace came from. */
enum trace_source {
    TRACE_SRC_UNKNOWN = 0,
    TRACE_SRC_PROXY = 1,
    TRACE_SRC_PCAP = 2,
    TRACE_SRC_LIVE = 3,
    TRACE_SRC_SYNTH = 4,     /* written by a tool or test, not captured */
    TRACE_SRC_RECORDING = 5, /* mongod's traffic recorder (docs/recording.md) */
    TRACE_SRC_PLAY = 6,      /* mtrace play: what a live server answered */
};

/*
 * Message flags: PARTIAL the peer vanished mid-message (prefix only);
 * GAP_BEFORE bytes were lost before this message; RESYNC found by
 * resynchronising on a header; MALFORMED framed, but failed to parse.
 */
#define TRACE_MSG_PARTIAL (1u << 0)
#define TRACE_MSG_GAP_BEFORE (1u << 1)
#define TRACE_MSG_RESYNC (1u << 2)
#define TRACE_MSG_MALFORMED (1u << 3)
/* REDACTED: capture --redact removed values (core/redact.h); DECOMPRESSED:
 * an OP_COMPRESSED message is stored in its decompressed form as `wire`
 * (the compressed bytes as seen were dropped, with REDACTED). */
#define TRACE_MSG_REDACTED (1u << 4)
#define TRACE_MSG_DECOMPRESSED (1u << 5)

/* Connection close reasons. */
enum trace_close_reason {
    TRACE_CLOSE_NORMAL = 0, /* FIN / orderly close */
    TRACE_CLOSE_CLIENT_RESET = 1,
    TRACE_CLOSE_SERVER_RESET = 2,
    TRACE_CLOSE_ERROR = 3,         /* protocol error, garbage, limit */
    TRACE_CLOSE_UPSTREAM_FAIL = 4, /* proxy could not reach the target */
    TRACE_CLOSE_SHUTDOWN = 5,      /* tool stopped with the connection open */
    TRACE_CLOSE_IDLE = 6, /* pcap: flow flushed as idle / end of file */
};

struct trace_header {
    char tool_version[32];    /* "mtrace 0.1.0" */
    uint8_t source;           /* enum trace_source */
    char source_desc[256];    /* "proxy 127.0.0.1:28017 -> 127.0.0.1:27017" */
    uint64_t start_wall_ns;   /* Unix epoch ns when capture started */
    uint64_t start_mono_ns;   /* the t_ns clock's value at start_wall_ns */
    uint32_t ts_precision_ns; /* 1 (ns) or 1000 (pcap µs) */
};

struct trace_conn_open {
    uint64_t conn_id;
    uint64_t t_ns;
    char client[64]; /* "127.0.0.1:53412" or "[::1]:53412" */
    char server[64];
};

struct trace_conn_close {
    uint64_t conn_id;
    uint64_t t_ns;
    uint8_t reason;       /* enum trace_close_reason */
    uint32_t partial_c2s; /* bytes of an incomplete message left over */
    uint32_t partial_s2c;
};

struct trace_msg {
    uint64_t conn_id;
    uint64_t t_ns;       /* arrival of the message's last byte */
    uint8_t dir;         /* enum trace_dir */
    uint32_t flags;      /* TRACE_MSG_* */
    const uint8_t *wire; /* borrowed: the bytes as seen (maybe OP_COMPRESSED) */
    uint32_t wire_len;
    const uint8_t *plain; /* borrowed: decompressed form, or NULL */
    uint32_t plain_len;
};

#define TRACE_STATS_MAX 32
struct trace_stat {
    char name[32]; /* "packets", "gaps", "dropped", ... */
    uint64_t value;
};
struct trace_stats {
    uint64_t t_ns;
    size_t n;
    struct trace_stat s[TRACE_STATS_MAX];
};

/* The two TLS legs of a proxied connection (docs/trace-format.md 2.7). */
enum trace_tls_leg {
    TRACE_TLS_CLIENT = 0, /* client <-> proxy: the proxy is the TLS server */
    TRACE_TLS_TARGET = 1, /* proxy <-> target: the proxy is the TLS client */
};

/*
 * TLS record flags: FAILED the handshake failed (error says why; version
 * and cipher are then usually ""); RESUMED an abbreviated handshake
 * (session resumption); PEER_CERT the peer presented a certificate;
 * PEER_VERIFIED its chain (and, toward the target, its name) was verified.
 */
#define TRACE_TLS_FAILED (1u << 0)
#define TRACE_TLS_RESUMED (1u << 1)
#define TRACE_TLS_PEER_CERT (1u << 2)
#define TRACE_TLS_PEER_VERIFIED (1u << 3)

/*
 * One TLS handshake of one leg of a connection.  handshake_ns: from the
 * leg's start -- the accept of the client's TCP connection (leg 0, the
 * conn_open record's t_ns) or the completion of the proxy's TCP connect to
 * the target (leg 1) -- to t_ns, when the proxy's handshake call returned
 * success (or failure).
 */
struct trace_tls {
    uint64_t conn_id;
    uint64_t t_ns;         /* the handshake completed (or failed) */
    uint8_t leg;           /* enum trace_tls_leg */
    uint64_t handshake_ns; /* leg start to t_ns */
    uint8_t flags;         /* TRACE_TLS_* */
    char version[16];      /* "TLSv1.3" */
    char cipher[64];       /* "TLS_AES_256_GCM_SHA384" */
    char group[32];        /* key exchange group, "X25519"; "" unknown */
    char sni[256];         /* server name indication; "" none */
    char error[192];       /* FAILED: OpenSSL's reasons; else "" */
};

struct trace_end {
    uint64_t t_ns;
    uint64_t records; /* records written before the end record */
};

struct trace_rec {
    uint8_t type; /* enum trace_rec_type, or an unknown type the reader skips */
    uint64_t offset; /* file offset of the frame holding this record */
    union {
        struct trace_header header;
        struct trace_conn_open open;
        struct trace_conn_close close;
        struct trace_msg msg;
        struct trace_stats stats;
        struct trace_end end;
        struct trace_tls tls;
    } u;
};

/* ---- writer ----
 *
 * A writer is used by one thread at a time (capture gives it a thread of
 * its own); it does no locking.  Each frame is written with one fwrite and
 * fflush, so a crash loses at most the open frame (<= TRACE_FLUSH_NS of
 * records, given ticks).
 */

struct trace_writer;

#define TRACE_W_FORCE (1u << 0) /* overwrite an existing file */

/*
 * Creates path with mode 0600 (O_EXCL unless TRACE_W_FORCE) and writes the
 * header record (in a frame of its own, on disk before this returns).
 * Returns NULL with err filled on failure (-EEXIST, with a message that
 * suggests --force, when the file exists and TRACE_W_FORCE is not set); a
 * file created here whose header could not be written is removed.
 */
struct trace_writer *trace_writer_open(const char *path, unsigned flags,
                                       const struct trace_header *hdr,
                                       struct mt_err *err);

/* The same, on a FILE* the caller owns (not closed by trace_writer_close). */
struct trace_writer *trace_writer_open_fp(FILE *fp,
                                          const struct trace_header *hdr,
                                          struct mt_err *err);

/*
 * Append one record to the open frame.  A frame is ended (compressed and
 * written) when it holds 1 MiB or when TRACE_FLUSH_NS passed since its
 * first record; callers with a quiet stream call trace_writer_tick() at
 * least every TRACE_FLUSH_NS.  Validate-before-write: a record that would
 * not read back is refused and nothing is written: MT_ETOOBIG (wire_len or
 * plain_len > TRACE_MSG_LEN_MAX, more than TRACE_STATS_MAX stats) or
 * MT_ECORRUPT (dir not 0/1, a string without NUL in its array, a plain
 * form for a message that is not OP_COMPRESSED).  Returns 0 or a negative
 * code (-ENOSPC on a full disk: the file stays valid up to the last frame
 * that was written completely; the error is sticky, later calls return it).
 */
int trace_writer_conn_open(struct trace_writer *w,
                           const struct trace_conn_open *rec);
int trace_writer_conn_close(struct trace_writer *w,
                            const struct trace_conn_close *rec);
int trace_writer_msg(struct trace_writer *w, const struct trace_msg *rec);
int trace_writer_stats(struct trace_writer *w, const struct trace_stats *rec);
/* MT_ECORRUPT also for a leg other than 0/1. */
int trace_writer_tls(struct trace_writer *w, const struct trace_tls *rec);

/* Ends the open frame if it is older than TRACE_FLUSH_NS (now_ns is the
 * monotonic clock).  Cheap when nothing is pending. */
int trace_writer_tick(struct trace_writer *w, uint64_t now_ns);

/* Ends the open frame now and fflush()es it (with set_async: returns
 * once the thread has written it). */
int trace_writer_flush(struct trace_writer *w);

/*
 * From now on, frames are compressed and written by a thread of the
 * writer's own while the caller fills the next frame (double buffering,
 * one frame in flight; one more frame buffer of memory).  The writer is
 * still used from one thread only.  A write error of the thread is
 * returned from the call that ends the next frame, from flush and from
 * close, and is sticky; frames ended after it are dropped.  The bytes on
 * disk are the same as without it.  Returns 0 (also when already on) or
 * -errno from pthread_create (the writer stays synchronous).  The thread
 * ends in trace_writer_close.
 */
int trace_writer_set_async(struct trace_writer *w);

/* Writes the end record, the seek index and footer, closes and frees.
 * NULL is a no-op returning 0. */
int trace_writer_close(struct trace_writer *w);

/*
 * zstd compression level of the frames ended from now on.  Default
 * TRACE_ZSTD_LEVEL_DEFAULT; TRACE_ZSTD_LEVEL_IMPORT is the level pcap
 * imports use (chosen by measurement: docs/benchmarks.md "pcap import").
 * Any level zstd accepts (ZSTD_minCLevel() .. ZSTD_maxCLevel()); the format
 * does not change, every reader reads every level.  Returns 0, or
 * MT_EUSAGE for a level zstd refuses (the level is then unchanged).
 */
#define TRACE_ZSTD_LEVEL_DEFAULT 3
#define TRACE_ZSTD_LEVEL_IMPORT (-3)
int trace_writer_set_level(struct trace_writer *w, int level);

/* The range trace_writer_set_level accepts (zstd's). */
int trace_zstd_level_min(void);
int trace_zstd_level_max(void);

/*
 * Replaces the clock that ages the open frame (default: CLOCK_MONOTONIC_COARSE,
 * the monotonic clock at tick resolution); clk
 * is borrowed and must outlive the writer.  For tests and the simulator.
 */
struct mt_clock;
void trace_writer_set_clock(struct trace_writer *w, const struct mt_clock *clk);

/* Records and compressed bytes written so far. */
uint64_t trace_writer_records(const struct trace_writer *w);
uint64_t trace_writer_bytes(const struct trace_writer *w);

/* ---- reader ---- */

struct trace_reader;

struct trace_reader *trace_reader_open(const char *path, struct mt_err *err);
/* fp borrowed (not closed). */
struct trace_reader *trace_reader_open_fp(FILE *fp, struct mt_err *err);
/* A command line's TRACE operand: the file at path, or standard input
 * (not closed) when path is "-". */
struct trace_reader *trace_reader_open_arg(const char *path,
                                           struct mt_err *err);
/* buf borrowed: valid for the reader's lifetime. */
struct trace_reader *trace_reader_open_mem(const void *buf, size_t len,
                                           struct mt_err *err);

/*
 * Next record.  MT_OK: *rec is filled; pointers in it are borrowed until the
 * next call.  MT_END: the file ended cleanly after the end record (which
 * was returned before; the seek index, if present, was checked).
 * Negative (MT_ETRUNC, MT_ECORRUPT, MT_ETOOBIG, ...): err says what was
 * lost and at which file offset; every complete record before that point
 * was already returned.  MT_ETRUNC is final (later calls return MT_END): a
 * truncated last frame, or a file without an end record (the writer
 * crashed or is still writing); so are -EIO and -ENOMEM.  After MT_ECORRUPT /
 * MT_ETOOBIG the caller may call again: the reader has skipped the bad frame
 * (or the rest of a frame holding a bad record) and resynchronised on the next
 * zstd frame magic, and continues from there.  Unknown record types are skipped
 * silently.
 */
int trace_reader_next(struct trace_reader *r, struct trace_rec *rec,
                      struct mt_err *err);

/* The header record (valid after open succeeded). */
const struct trace_header *trace_reader_header(const struct trace_reader *r);

/*
 * Bytes of the file known lost so far: incomplete or corrupt frames and the
 * garbage skipped to resynchronise on the next frame.
 */
uint64_t trace_reader_lost_bytes(const struct trace_reader *r);

/* Records returned so far (the header included; skipped unknown types
 * included). */
uint64_t trace_reader_records(const struct trace_reader *r);

/*
 * Lowers the limit on one frame's decompressed size (default and maximum
 * TRACE_FRAME_LEN_MAX), e.g. for fuzzers; a frame beyond it is refused
 * (MT_ETOOBIG) and skipped.  Applies to frames read after the call.
 */
void trace_reader_set_frame_max(struct trace_reader *r, size_t len_max);

/* Frees r (NULL is a no-op); closes the file only if trace_reader_open
 * opened it. */
void trace_reader_free(struct trace_reader *r);

/*
 * The plain bytes of m: the recorded decompressed form if present, else
 * the wire form (a message that was not OP_COMPRESSED, or one whose
 * decompression was not recorded).  *len gets their length.  Borrowed:
 * valid as long as m's bytes are.
 */
const uint8_t *trace_msg_plain(const struct trace_msg *m, uint32_t *len);

/* Human names: "c2s"/"s2c", "proxy"/"pcap"/..., "normal"/"client-reset"/...,
 * "client"/"target" (TLS legs; "unknown" for others). */
const char *trace_dir_name(uint8_t dir);
const char *trace_source_name(uint8_t source);
const char *trace_close_reason_name(uint8_t reason);
const char *trace_tls_leg_name(uint8_t leg);

#endif
