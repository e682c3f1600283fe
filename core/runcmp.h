/*
 * runcmp.h -- the comparison of two runs of one workload, command by
 * command: a recorded trace against what `mtrace play` got from a live
 * server, or any two traces (`mtrace stats --compare`).
 *
 * Per command and per side: count, mean, p50, p99 of request->reply
 * latency, errors by code; per command: replies whose shape differs
 * (ok/error, number of documents, cursor exhausted or not).  Latencies go
 * into core/delay_hist.h's histogram (relative error under 0.2 %),
 * allocated at the first sample, so memory does not grow with the trace.
 */
#ifndef MT_RUNCMP_H
#define MT_RUNCMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/delay_hist.h"
#include "core/wire.h"

#define RUNCMP_CMD_MAX 128 /* distinct command names; more: "(other)" */
#define RUNCMP_ERR_MAX 32  /* distinct error codes per command and side */

struct runcmp_hist {
    uint64_t count;
    struct delay_hist *d; /* owned: NULL until the first sample */
};

/* Adds one sample.  0 or -ENOMEM (the sample is then lost). */
int runcmp_hist_add(struct runcmp_hist *h, uint64_t ns);
/* The nearest-rank percentile p (0..100); 0 for an empty histogram.  The
 * value is the upper bound of its bucket, clamped to the largest sample
 * (delay_hist_quantile_upper). */
uint64_t runcmp_hist_pct(const struct runcmp_hist *h, double p);
void runcmp_hist_free(struct runcmp_hist *h);

/* What a reply says, enough to compare two replies to one request. */
struct runcmp_shape {
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
void runcmp_shape_of(const struct wire_msg *reply, struct runcmp_shape *sh);

/* True when a and b differ in ok/error, document count or exhaustion. */
bool runcmp_shape_differs(const struct runcmp_shape *a,
                          const struct runcmp_shape *b);

struct runcmp_err {
    int32_t code;
    uint64_t n;
};

struct runcmp_side {
    struct runcmp_hist lat;
    uint64_t requests; /* sent (played) / seen (recorded) */
    uint64_t replies;
    uint64_t errors;
    struct runcmp_err errs[RUNCMP_ERR_MAX];
    size_t nerrs;
    uint64_t errs_other;
};

struct runcmp_cmd {
    char name[64];
    struct runcmp_side side[2]; /* 0: A / recorded, 1: B / played */
    uint64_t shape_diff;        /* pairs whose replies differ in shape */
    uint64_t diff_ok, diff_ndocs, diff_exhausted;
};

struct report {
    struct runcmp_cmd *cmds; /* owned: ncmds of RUNCMP_CMD_MAX */
    size_t ncmds;
    uint64_t pairs;          /* requests compared one to one */
    struct runcmp_hist late; /* send lateness against the schedule */
    const char *label[2];    /* borrowed: "recorded"/"played", A/B paths */
};

/* 0 or -ENOMEM. */
int runcmp_init(struct report *r, const char *label_a, const char *label_b);
void runcmp_free(struct report *r);

/* The entry for command name (created; "(other)" beyond the maximum). */
struct runcmp_cmd *runcmp_cmd_get(struct report *r, const char *name);

/* One request of side (0/1) to command c; a reply when sh->valid (lat_ns
 * its latency).  0 or -ENOMEM. */
int runcmp_side_add(struct runcmp_cmd *c, int side, bool replied,
                    uint64_t lat_ns, const struct runcmp_shape *sh);

/* Compares the replies to one request on both sides (either invalid:
 * nothing is counted). */
void runcmp_pair(struct report *r, struct runcmp_cmd *c,
                 const struct runcmp_shape *a, const struct runcmp_shape *b);

/* The table (text) and the JSON object ("commands", "pairs",
 * "lateness_ms" when lateness was recorded). */
void runcmp_print_text(FILE *out, const struct report *r);
void runcmp_print_json(FILE *out, const struct report *r);

#endif
