/*
 * match.h -- what request keys are made of: the rules that say which
 * top-level fields a key ignores, the request as matching sees it, and
 * diagnostics on keys (how two differ, how one is displayed).
 *
 * A key (matchkey.h builds it) is one line of fields separated by
 * MATCH_SEP:
 *
 *     <db>\x1f<cmd>=<value>\x1f<field>=<value>...
 */
#ifndef MT_REPLAY_MATCH_H
#define MT_REPLAY_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/wire.h"

#define MATCH_IGNORE_MAX 64
#define MATCH_SEP '\x1f' /* between key fields; never in a value */

/* Which top-level fields the key ignores. */
struct match_rules {
    size_t nignore;
    char ignore[MATCH_IGNORE_MAX][64];
    uint8_t ignore_len[MATCH_IGNORE_MAX]; /* strlen of each, for a fast check */
    bool mask_insert_oids; /* mask ObjectId _id of inserted documents */
    bool strict; /* --strict: no equivalences (cursor shapes, defaults) */
};

/*
 * The cursor-shaping fields of a find (limit, batchSize, singleBatch) or
 * an aggregate (cursor.batchSize), left out of the key unless the rules
 * are strict (docs/replay.md, "Equivalent requests").  Stored normalised:
 * a legacy negative limit or batchSize is turned into singleBatch as the
 * find/getMore/killCursors commands spec says drivers must.
 */
struct match_shape {
    bool shaped;   /* the fields are out of the key: compare shapes */
    bool single;   /* singleBatch */
    int64_t limit; /* 0: none */
    int64_t batch; /* batchSize; -1: absent */
};

/* The default first batch of find and aggregate, in documents. */
#define MATCH_FIRST_BATCH_DEFAULT 101

/* A request as matching sees it; every pointer borrowed from the message. */
struct match_req {
    char name[64];      /* command name: first key of the command document */
    char db[128];       /* $db, or the db of OP_QUERY's "<db>.$cmd" */
    const uint8_t *cmd; /* the command document (OP_QUERY $query unwrapped) */
    size_t cmd_len;
    const struct wire_seq *seq; /* OP_MSG kind-1 sections */
    size_t nseq;
    bool legacy;       /* OP_QUERY: the reply must be OP_REPLY */
    bool op_command;   /* OP_COMMAND: the reply must be OP_COMMANDREPLY */
    bool more_to_come; /* unacknowledged: no reply is sent */
    bool exhaust_allowed;
    bool checksum; /* the client sent a checksum: reply with one */
    /* A legacy OP_QUERY on a collection (legacy set too): a find whose
     * key matchkey.c writes from the message's fields; cmd is the query
     * (a filter, or {$query: filter, $orderby: ...}), name "find". */
    bool legacy_query;
    const char *coll; /* its collection; borrowed from the message */
    int32_t query_flags, number_to_skip, number_to_return;
    const uint8_t *fields; /* returnFieldsSelector, NULL if none */
    size_t fields_len;
};

/* Default rules: ignore lsid, $clusterTime, txnNumber, $readPreference,
 * apiVersion, apiStrict, apiDeprecationErrors, client, autocommit,
 * startTransaction, $db (the db is part of the key by itself) and
 * readConcern.afterClusterTime. */
void match_rules_default(struct match_rules *r);
/*
 * Adds a field to ignore: a top-level field, or TOP.SUB for a key of a
 * top-level document (one level down).  0 or MT_ELIMIT / MT_EUSAGE (name
 * too long, empty part, deeper path).
 */
int match_rules_ignore(struct match_rules *r, const char *field);
/* Stops ignoring a field (so it becomes part of the key). 0 or MT_ENOMATCH. */
int match_rules_keep(struct match_rules *r, const char *field);
bool match_rules_ignored(const struct match_rules *r, const char *field);
/* The same for a name of n bytes (not NUL-terminated); the hot path. */
bool match_rules_ignored_n(const struct match_rules *r, const char *field,
                           size_t n);
/* True when some FIELD.SUB rule names a key of top-level field (n bytes). */
bool match_rules_ignores_sub(const struct match_rules *r, const char *field,
                             size_t n);

/*
 * Fills req from a parsed request: OP_MSG, OP_QUERY on "<db>.$cmd" (a
 * command) or on "<db>.<collection>" (a legacy find, legacy_query), or
 * the legacy OP_COMMAND (database field + commandArgs; MongoDB 3.2-3.6).
 * MT_EUNSUPPORTED for other opcodes and an OP_QUERY namespace without a
 * database or collection, MT_EBSON for an unusable document; err says
 * which.
 */
int match_req_from_msg(const struct wire_msg *m, struct match_req *req,
                       struct mt_err *err);

/*
 * Writes a one-line description of how key a differs from key b ("filter
 * differs; limit only in the request") into out (size n, NUL-terminated).
 * Returns the number of fields that are equal in both, the database
 * included: fields are paired as a multiset (a repeated field counts as
 * often as both keys hold it), so the count and the fields named do not
 * depend on which key comes first.  The first 64 fields of each key are
 * compared; cost O(64^2).
 */
int match_key_diff(const char *a, size_t a_len, const char *b, size_t b_len,
                   char *out, size_t n);

/* Copies key into out (size n) for display: separators become spaces,
 * truncated with "..." when longer. */
void match_key_display(const char *key, size_t len, char *out, size_t n);

/*
 * The shape of req under rules r: shaped only for find and aggregate
 * commands (not a legacy find) with rules that are not strict and
 * well-typed shaping fields (any other
 * value keeps the fields in the key, and the shape unshaped).  Walks the
 * top level only.
 */
void match_shape_of(const struct match_rules *r, const struct match_req *req,
                    struct match_shape *s);

/*
 * Whether the recorded exchange whose request had shape rec and whose
 * reply opened cursor rec_cursor_id with rec_n documents in its first
 * batch (-1: no cursor.firstBatch, e.g. an error) answers a request of
 * shape q with the same key as a server would: equal shapes; or a
 * recorded cursor exhausted in its first batch whose documents are what
 * q's first batch would hold and that q would not continue (the rules in
 * docs/replay.md).  Pure, O(1).
 */
bool match_shape_serves(const struct match_shape *rec, int64_t rec_cursor_id,
                        int32_t rec_n, const struct match_shape *q);

/* Whether top-level field key (of a command called cmd) is one of the
 * shaping fields match_shape_of reads. */
bool match_shape_field(const char *cmd, const char *key);

/* The number of documents of cursor.firstBatch of a reply body, -1 if it
 * has none. */
int32_t match_reply_first_n(const uint8_t *body, size_t len);

/* cursor.id of a reply body (top-level "cursor" document), 0 if none. */
int64_t match_reply_cursor_id(const uint8_t *body, size_t len);

#endif
