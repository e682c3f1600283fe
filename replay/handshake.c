/*
 * handshake.c -- hello replies, awaitable hello, built-in commands (see
 * handshake.h).
 */
#include "handshake.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const hello_drop[] = {
    "localTime",
    "connectionId",
    "helloOk",
    "isWritablePrimary",
    "ismaster",
    "compression",
    "saslSupportedMechs",
    "speculativeAuthenticate",
    "$clusterTime",
    "operationTime",
    "ok",
};

bool
handshake_is_hello(const char *name)
{
    return strcmp(name, "hello") == 0 || strcasecmp(name, "isMaster") == 0;
}

static int
compressor_id(const char *name, size_t len)
{
    static const char *const names[] = {"snappy", "zlib", "zstd"};
    static const int ids[] = {WIRE_COMPRESSOR_SNAPPY, WIRE_COMPRESSOR_ZLIB,
                              WIRE_COMPRESSOR_ZSTD};

    for (size_t i = 0; i < 3; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
            return ids[i];
    return -1;
}

/* The known compressors of a "compression" array, as a mask. */
static unsigned
compressor_mask(const bson_iter_t *arr)
{
    bson_iter_t el;
    unsigned mask = 0;

    if (!bson_iter_recurse(arr, &el))
        return 0;
    while (bson_iter_next(&el)) {
        uint32_t l;
        const char *n;
        int id;
        if (!BSON_ITER_HOLDS_UTF8(&el))
            continue;
        n = bson_iter_utf8(&el, &l);
        if ((id = compressor_id(n, l)) >= 0)
            mask |= 1u << id;
    }
    return mask;
}

unsigned
handshake_compressors(const uint8_t *body, size_t len)
{
    bson_t b;
    bson_iter_t it;

    if (body == NULL || !bson_init_static(&b, body, len) ||
        !bson_iter_init_find(&it, &b, "compression") ||
        !BSON_ITER_HOLDS_ARRAY(&it))
        return 0;
    return compressor_mask(&it);
}

int
handshake_compress_reply(const struct handshake *hs, uint8_t compressor,
                         const char *cmd, struct mt_buf *out)
{
    struct mt_buf z;
    int rc;

    if (compressor == 0 || compressor > WIRE_COMPRESSOR_ZSTD ||
        (hs->compressors & (1u << compressor)) == 0 || handshake_is_hello(cmd))
        return 0;
    mt_buf_init(&z, WIRE_MSG_LEN_MAX);
    rc = wire_encode_compressed(&z, out->data, out->len, compressor, NULL);
    if (rc < 0) {
        mt_buf_free(&z);
        return rc == MT_ETOOBIG ? 0 : rc;
    }
    mt_buf_free(out);
    *out = z;
    return 1;
}

int
handshake_parse_compressors(const char *s, unsigned *mask, bool *recorded)
{
    *mask = 0;
    *recorded = strcmp(s, "recorded") == 0;
    if (*recorded || strcmp(s, "none") == 0)
        return 0;
    while (*s != '\0') {
        size_t n = strcspn(s, ",");
        int id = compressor_id(s, n);
        if (id < 0)
            return MT_EUSAGE;
        *mask |= 1u << id;
        s += n;
        if (*s == ',' && *++s == '\0')
            return MT_EUSAGE;
    }
    return *mask != 0 ? 0 : MT_EUSAGE;
}

void
handshake_init(struct handshake *hs, const uint8_t *recorded, size_t len)
{
    bson_t b;
    bson_iter_t it;

    memset(hs, 0, sizeof(*hs));
    hs->primary = true;
    if (recorded == NULL || !bson_init_static(&b, recorded, len) ||
        !bson_iter_init(&it, &b))
        return;
    hs->recorded = recorded;
    hs->recorded_len = len;
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (strcmp(k, "ismaster") == 0 || strcmp(k, "isWritablePrimary") == 0)
            hs->primary = bson_iter_as_bool(&it);
        if (strcmp(k, "compression") == 0 && BSON_ITER_HOLDS_ARRAY(&it))
            hs->compressors = compressor_mask(&it);
        if (strcmp(k, "hosts") == 0 && BSON_ITER_HOLDS_ARRAY(&it))
            hs->replset = true;
        if (strcmp(k, "me") == 0)
            hs->has_me = true;
        if (strcmp(k, "topologyVersion") == 0 &&
            BSON_ITER_HOLDS_DOCUMENT(&it)) {
            uint32_t l;
            bson_iter_document(&it, &l, &hs->topology);
            hs->topology_len = l;
            hs->has_topology = true;
        }
    }
}

/* A replica-set member's names of the set's servers: replaced by the
 * address the client connected to (see handshake.h). */
static const char *const hello_members[] = {"hosts", "me", "primary",
                                            "passives", "arbiters"};

static bool
in_list(const char *k, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(k, list[i]) == 0)
            return true;
    return false;
}

static bool
dropped(const char *k, bool members)
{
    return in_list(k, hello_drop, sizeof(hello_drop) / sizeof(hello_drop[0])) ||
           (members &&
            in_list(k, hello_members,
                    sizeof(hello_members) / sizeof(hello_members[0])));
}

/* hosts: [self], me: self (if recorded), primary: self (if the recorded
 * member was the primary; a secondary's primary is another server). */
static bool
append_members(const struct handshake *hs, const char *self, bson_t *out)
{
    bson_t arr;

    return bson_append_array_begin(out, "hosts", -1, &arr) &&
           BSON_APPEND_UTF8(&arr, "0", self) &&
           bson_append_array_end(out, &arr) &&
           (!hs->has_me || BSON_APPEND_UTF8(out, "me", self)) &&
           (!hs->primary || BSON_APPEND_UTF8(out, "primary", self));
}

static bool
req_flag(const struct match_req *req, const char *field)
{
    bson_t b;
    bson_iter_t it;

    return bson_init_static(&b, req->cmd, req->cmd_len) &&
           bson_iter_init_find(&it, &b, field) && bson_iter_as_bool(&it);
}

/* What a MongoDB 7.0 standalone says, for traces without a hello. */
static bool
default_fields(bson_t *out)
{
    return BSON_APPEND_INT32(out, "maxBsonObjectSize", 16777216) &&
           BSON_APPEND_INT32(out, "maxMessageSizeBytes", 48000000) &&
           BSON_APPEND_INT32(out, "maxWriteBatchSize", 100000) &&
           BSON_APPEND_INT32(out, "logicalSessionTimeoutMinutes", 30) &&
           BSON_APPEND_INT32(out, "minWireVersion", 0) &&
           BSON_APPEND_INT32(out, "maxWireVersion", 21) &&
           BSON_APPEND_BOOL(out, "readOnly", false);
}

/* "compression": the client's compressors (its order) that hs agrees to;
 * absent when there are none (wire compression spec). */
static bool
append_compression(const struct handshake *hs, const struct match_req *req,
                   bson_t *out)
{
    bson_t b, list;
    bson_iter_t it, el;
    char idx[16];
    uint32_t n = 0;
    bool ok = true;

    if (hs->compressors == 0 || !bson_init_static(&b, req->cmd, req->cmd_len) ||
        !bson_iter_init_find(&it, &b, "compression") ||
        !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &el))
        return true;
    while (bson_iter_next(&el)) {
        uint32_t l;
        const char *name;
        int id;
        if (!BSON_ITER_HOLDS_UTF8(&el))
            continue;
        name = bson_iter_utf8(&el, &l);
        id = compressor_id(name, l);
        if (id < 0 || (hs->compressors & (1u << id)) == 0)
            continue;
        if (n == 0)
            ok = bson_append_array_begin(out, "compression", -1, &list);
        snprintf(idx, sizeof(idx), "%u", n++);
        ok = ok && bson_append_utf8(&list, idx, -1, name, (int)l);
    }
    if (n > 0)
        ok = ok && bson_append_array_end(out, &list);
    return ok;
}

int
handshake_hello_reply(const struct handshake *hs, const struct match_req *req,
                      int64_t conn_id, int64_t now_ms, const char *self,
                      bson_t *out)
{
    bool members = hs->replset && self != NULL && self[0] != '\0';
    bson_t b;
    bson_iter_t it;
    bool ok;

    if (strcmp(req->name, "hello") == 0)
        ok = BSON_APPEND_BOOL(out, "isWritablePrimary", hs->primary);
    else
        ok = BSON_APPEND_BOOL(out, "ismaster", hs->primary);
    if (hs->recorded != NULL &&
        bson_init_static(&b, hs->recorded, hs->recorded_len) &&
        bson_iter_init(&it, &b)) {
        while (ok && bson_iter_next(&it))
            if (!dropped(bson_iter_key(&it), members))
                ok = wire_bson_append_iter(out, NULL, 0, &it);
        ok = ok && (!members || append_members(hs, self, out));
    } else {
        ok = ok && default_fields(out);
    }
    ok = ok && BSON_APPEND_DATE_TIME(out, "localTime", now_ms) &&
         BSON_APPEND_INT64(out, "connectionId", conn_id) &&
         append_compression(hs, req, out);
    if (ok && req_flag(req, "helloOk"))
        ok = BSON_APPEND_BOOL(out, "helloOk", true);
    ok = ok && BSON_APPEND_DOUBLE(out, "ok", 1.0);
    return ok ? 0 : MT_EBSON;
}

/* Same processId and counter as ours. */
static bool
same_topology(const struct handshake *hs, const uint8_t *d, size_t len)
{
    bson_t a, b;
    bson_iter_t ia, ib;
    const char *keys[] = {"processId", "counter"};

    if (!bson_init_static(&a, hs->topology, hs->topology_len) ||
        !bson_init_static(&b, d, len))
        return false;
    for (size_t i = 0; i < 2; i++) {
        if (!bson_iter_init_find(&ia, &a, keys[i]) ||
            !bson_iter_init_find(&ib, &b, keys[i]))
            return false;
        if (BSON_ITER_HOLDS_OID(&ia)) {
            if (!BSON_ITER_HOLDS_OID(&ib) ||
                !bson_oid_equal(bson_iter_oid(&ia), bson_iter_oid(&ib)))
                return false;
        } else if (bson_iter_as_int64(&ia) != bson_iter_as_int64(&ib)) {
            return false;
        }
    }
    return true;
}

bool
handshake_awaitable(const struct handshake *hs, const struct match_req *req,
                    uint64_t *hold_ms, uint64_t *await_ms)
{
    bson_t b;
    bson_iter_t it;
    const uint8_t *tv = NULL;
    uint32_t tv_len = 0;
    int64_t wait = -1;

    *hold_ms = 0;
    *await_ms = 0;
    if (!bson_init_static(&b, req->cmd, req->cmd_len) ||
        !bson_iter_init(&it, &b))
        return false;
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        if (strcmp(k, "topologyVersion") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
            bson_iter_document(&it, &tv_len, &tv);
        else if (strcmp(k, "maxAwaitTimeMS") == 0 &&
                 BSON_ITER_HOLDS_NUMBER(&it))
            wait = bson_iter_as_int64(&it);
    }
    if (tv == NULL || wait < 0)
        return false;
    *await_ms = (uint64_t)wait > HANDSHAKE_AWAIT_MAX_MS ? HANDSHAKE_AWAIT_MAX_MS
                                                        : (uint64_t)wait;
    if (hs->has_topology && same_topology(hs, tv, tv_len))
        *hold_ms = *await_ms;
    return true;
}

static bool
build_info(bson_t *out)
{
    bson_t arr;

    return BSON_APPEND_UTF8(out, "version", "7.0.0") &&
           BSON_APPEND_UTF8(out, "gitVersion", "mtrace-replay") &&
           bson_append_array_begin(out, "versionArray", -1, &arr) &&
           BSON_APPEND_INT32(&arr, "0", 7) && BSON_APPEND_INT32(&arr, "1", 0) &&
           BSON_APPEND_INT32(&arr, "2", 0) && BSON_APPEND_INT32(&arr, "3", 0) &&
           bson_append_array_end(out, &arr) &&
           BSON_APPEND_INT32(out, "bits", 64) &&
           BSON_APPEND_INT32(out, "maxBsonObjectSize", 16777216);
}

static bool
conn_status(bson_t *out)
{
    bson_t info, a;

    return bson_append_document_begin(out, "authInfo", -1, &info) &&
           bson_append_array_begin(&info, "authenticatedUsers", -1, &a) &&
           bson_append_array_end(&info, &a) &&
           bson_append_array_begin(&info, "authenticatedUserRoles", -1, &a) &&
           bson_append_array_end(&info, &a) &&
           bson_append_document_end(out, &info);
}

bool
handshake_builtin(const struct handshake *hs, const struct match_req *req,
                  bson_t *out)
{
    const char *n = req->name;
    bool ok = true;

    (void)hs;
    if (strcasecmp(n, "buildInfo") == 0)
        ok = build_info(out);
    else if (strcmp(n, "whatsmyuri") == 0)
        ok = BSON_APPEND_UTF8(out, "you", "127.0.0.1:0");
    else if (strcmp(n, "connectionStatus") == 0)
        ok = conn_status(out);
    else if (strcmp(n, "getFreeMonitoringStatus") == 0)
        ok = BSON_APPEND_UTF8(out, "state", "disabled");
    else if (strcmp(n, "ping") != 0 && strcmp(n, "endSessions") != 0 &&
             strcmp(n, "getParameter") != 0 && strcmp(n, "logout") != 0 &&
             strcmp(n, "refreshSessions") != 0)
        return false;
    return ok && BSON_APPEND_DOUBLE(out, "ok", 1.0);
}
