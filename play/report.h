/*
 * report.h -- the comparison of two runs of one workload, command by
 * command: a recorded trace against what `mtrace play` got from a live
 * server, or any two traces (`mtrace stats --compare`).
 *
 * Per command and per side: count, mean, p50, p99 of request->reply
 * latency, errors by code; per command: replies whose shape differs
 * (ok/error, number of documents, cursor exhausted or not).  Latencies go
 * into a log-linear histogram (REPORT_HIST_BUCKETS buckets, relative error
 * under 1/REPORT_HIST_SUB), so memory does not grow with the trace.
 */
#ifndef MT_PLAY_REPORT_H
#define MT_PLAY_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/wire.h"

/* 2^REPORT_HIST_SUB_BITS sub-buckets per power of two, up to 2^63 ns. */
#define REPORT_HIST_SUB_BITS 6
#define REPORT_HIST_SUB (1u << REPORT_HIST_SUB_BITS)
#define REPORT_HIST_BUCKETS (64u * REPORT_HIST_SUB)
#define REPORT_CMD_MAX 128 /* distinct command names; more: "(other)" */
#define REPORT_ERR_MAX 32  /* distinct error codes per command and side */

struct report_hist {
    uint64_t count;
    uint64_t sum_ns;
    uint64_t max_ns;
    uint64_t *b; /* owned: REPORT_HIST_BUCKETS counters, NULL until used */
};

/* Adds one sample.  0 or -ENOMEM (the sample is then lost). */
int report_hist_add(struct report_hist *h, uint64_t ns);
/* The nearest-rank percentile p (0..100); 0 for an empty histogram.  The
 * value is the upper bound of its bucket, clamped to max_ns. */
uint64_t report_hist_pct(const struct report_hist *h, double p);
void report_hist_free(struct report_hist *h);

/* What a reply says, enough to compare two replies to one request. */
struct report_shape {
    bool valid;     /* a reply was seen and parsed */
    bool error;     /* ok != 1, $err, QueryFailure / CursorNotFound */
    int32_t code;   /* the error's code (0 none or unknown) */
    bool cursor;    /* carries a cursor (a reply to find, getMore, ...) */
    bool exhausted; /* its cursor id is 0 */
    int64_t cursor_id;
    uint32_t ndocs; /* firstBatch / nextBatch / OP_REPLY documents */
};

/*
 * Fills sh from a parsed (not compressed) reply: OP_MSG and
 * OP_COMMANDREPLY by walking the top level of the body and of its
 * "cursor" document; OP_REPLY from its header and first document.  Never
 * fails: an unusable body leaves valid false.  Cost: O(top-level fields).
 */
void report_shape_of(const struct wire_msg *reply, struct report_shape *sh);

/* True when a and b differ in ok/error, document count or exhaustion. */
bool report_shape_differs(const struct report_shape *a,
                          const struct report_shape *b);

struct report_err {
    int32_t code;
    uint64_t n;
};

struct report_side {
    struct report_hist lat;
    uint64_t requests; /* sent (played) / seen (recorded) */
    uint64_t replies;
    uint64_t errors;
    struct report_err errs[REPORT_ERR_MAX];
    size_t nerrs;
    uint64_t errs_other;
};

struct report_cmd {
    char name[64];
    struct report_side side[2]; /* 0: A / recorded, 1: B / played */
    uint64_t shape_diff;        /* pairs whose replies differ in shape */
    uint64_t diff_ok, diff_ndocs, diff_exhausted;
};

struct report {
    struct report_cmd *cmds; /* owned: ncmds of REPORT_CMD_MAX */
    size_t ncmds;
    uint64_t pairs;            /* requests compared one to one */
    struct report_hist late;   /* send lateness against the schedule */
    const char *label[2];      /* borrowed: "recorded"/"played", A/B paths */
};

/* 0 or -ENOMEM. */
int report_init(struct report *r, const char *label_a, const char *label_b);
void report_free(struct report *r);

/* The entry for command name (created; "(other)" beyond the maximum). */
struct report_cmd *report_cmd_get(struct report *r, const char *name);

/* One request of side (0/1) to command c; a reply when sh->valid (lat_ns
 * its latency).  0 or -ENOMEM. */
int report_side_add(struct report_cmd *c, int side, bool replied,
                    uint64_t lat_ns, const struct report_shape *sh);

/* Compares the replies to one request on both sides (either invalid:
 * nothing is counted). */
void report_pair(struct report *r, struct report_cmd *c,
                 const struct report_shape *a, const struct report_shape *b);

/* The table (text) and the JSON object ("commands", "pairs",
 * "lateness_ms" when lateness was recorded). */
void report_print_text(FILE *out, const struct report *r);
void report_print_json(FILE *out, const struct report *r);

#endif
