/*
 * classify.c -- what a recorded message is, for the player (see
 * classify.h).
 */
#include "classify.h"

#include <string.h>

bool
play_cmd_listed(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return true;
    return false;
}

bool
play_cmd_is_auth(const char *name)
{
    static const char *const auth[] = {"saslStart", "saslContinue",
                                       "authenticate", "getnonce", "logout"};
    return play_cmd_listed(name, auth, sizeof(auth) / sizeof(auth[0]));
}

/* A command that writes (--skip-writes); an aggregate writes when its
 * pipeline ends in $out or $merge. */
bool
play_cmd_is_write(const struct wire_msg *m, const char *name)
{
    static const char *const writes[] = {"insert",
                                         "update",
                                         "delete",
                                         "findAndModify",
                                         "findandmodify",
                                         "create",
                                         "drop",
                                         "dropDatabase",
                                         "createIndexes",
                                         "dropIndexes",
                                         "renameCollection",
                                         "collMod",
                                         "commitTransaction",
                                         "bulkWrite",
                                         "applyOps",
                                         "mapReduce",
                                         "mapreduce",
                                         "convertToCapped",
                                         "cloneCollectionAsCapped",
                                         "createUser",
                                         "dropUser",
                                         "updateUser",
                                         "shardCollection",
                                         "compact"};
    bson_t b;
    bson_iter_t it, st;

    if (play_cmd_listed(name, writes, sizeof(writes) / sizeof(writes[0])))
        return true;
    if (strcmp(name, "aggregate") != 0 || m->body == NULL ||
        !bson_init_static(&b, m->body, m->body_len) ||
        !bson_iter_init_find(&it, &b, "pipeline") ||
        !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &st))
        return false;
    while (bson_iter_next(&st)) {
        bson_iter_t stage;
        if (BSON_ITER_HOLDS_DOCUMENT(&st) && bson_iter_recurse(&st, &stage) &&
            bson_iter_next(&stage) &&
            (strcmp(bson_iter_key(&stage), "$out") == 0 ||
             strcmp(bson_iter_key(&stage), "$merge") == 0))
            return true;
    }
    return false;
}

/* The "compression" list of a recorded hello, as "snappy,zstd". */
void
play_hello_offer(const struct wire_msg *m, char *out, size_t cap)
{
    bson_t b;
    bson_iter_t it, a;
    size_t len = 0;

    out[0] = '\0';
    if (m->body == NULL || !bson_init_static(&b, m->body, m->body_len) ||
        !bson_iter_init_find(&it, &b, "compression") ||
        !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &a))
        return;
    while (bson_iter_next(&a))
        if (BSON_ITER_HOLDS_UTF8(&a)) {
            int n = snprintf(out + len, cap - len, "%s%s", len ? "," : "",
                             bson_iter_utf8(&a, NULL));
            if (n < 0 || (size_t)n >= cap - len) {
                out[len] = '\0';
                return;
            }
            len += (size_t)n;
        }
}

/* The plain form of a recorded message (decompressed when needed) parsed
 * into *m; false when it does not parse (counted as skipped). */
bool
play_rec_parse(const struct trace_msg *tm, unsigned opts,
               struct mt_buf *scratch, struct wire_msg *m, bool *compressed)
{
    struct mt_err err;
    size_t used;
    const uint8_t *p = tm->wire;
    size_t len = tm->wire_len;

    *compressed = false;
    if (tm->flags & (TRACE_MSG_PARTIAL | TRACE_MSG_MALFORMED))
        return false;
    if (wire_msg_parse_opts(p, len, opts, m, &used, &err) != MT_OK)
        return false;
    if ((tm->flags & TRACE_MSG_DECOMPRESSED) != 0)
        *compressed = true;
    if (m->h.op_code != WIRE_OP_COMPRESSED)
        return true;
    *compressed = true;
    if (tm->plain != NULL) {
        p = tm->plain;
        len = tm->plain_len;
    } else {
        mt_buf_reset(scratch);
        if (wire_decompress(m, scratch, &err) < 0)
            return false;
        p = scratch->data;
        len = scratch->len;
    }
    return wire_msg_parse_opts(p, len, opts, m, &used, &err) == MT_OK &&
           m->h.op_code != WIRE_OP_COMPRESSED;
}

bool
play_expects_reply(const struct wire_msg *m)
{
    switch (m->h.op_code) {
    case WIRE_OP_MSG:
        return (m->flags & WIRE_MSG_MORE_TO_COME) == 0;
    case WIRE_OP_QUERY:
    case WIRE_OP_GET_MORE:
    case WIRE_OP_COMMAND:
        return true;
    default:
        return false;
    }
}
