/*
 * handshake.h -- hello / isMaster replies, the awaitable hello of the
 * server discovery and monitoring spec, and built-in commands.
 *
 * The hello reply is the first hello reply of the trace (or a MongoDB 7.0
 * standalone's when the trace has none) with a fresh localTime, this
 * connection's connectionId, helloOk when the client asked for it, the
 * primary flag under the name the request used (ismaster for isMaster,
 * isWritablePrimary for hello), without the recorded saslSupportedMechs,
 * speculativeAuthenticate (replay's own come from auth.h) or
 * $clusterTime, and as "compression" the compressors of
 * the client's list (in its order) that replay agrees to: by default the
 * ones the recorded server agreed to (wire compression spec:
 * https://github.com/mongodb/specifications/blob/master/source/
 * compression/OP_COMPRESSED.md).
 *
 * Spec: https://github.com/mongodb/specifications/blob/master/source/
 * server-discovery-and-monitoring/server-monitoring.md (streaming protocol).
 */
#ifndef MT_REPLAY_HANDSHAKE_H
#define MT_REPLAY_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/wire.h"
#include "match.h"

#define HANDSHAKE_AWAIT_MAX_MS 600000u /* longer maxAwaitTimeMS is clamped */

struct handshake {
    const uint8_t *recorded; /* borrowed: recorded hello reply body, or NULL */
    size_t recorded_len;
    bool primary;            /* recorded ismaster / isWritablePrimary */
    bool has_topology;       /* the recorded reply has topologyVersion */
    const uint8_t *topology; /* borrowed: its topologyVersion document */
    size_t topology_len;
    unsigned compressors; /* bit (1 << wire compressor id) per one agreed to */
    bool replset;         /* the recorded reply lists "hosts" */
    bool has_me;          /* ... and names "me" */
};

#define HANDSHAKE_COMPRESSORS_ALL                                              \
    ((1u << WIRE_COMPRESSOR_SNAPPY) | (1u << WIRE_COMPRESSOR_ZLIB) |           \
     (1u << WIRE_COMPRESSOR_ZSTD))

/*
 * Parses a --compressors value: "none", "recorded" (*recorded set) or a
 * comma-separated list of snappy, zlib, zstd into *mask.  0 or MT_EUSAGE.
 */
int handshake_parse_compressors(const char *s, unsigned *mask, bool *recorded);

/* The compressors of a hello reply body's "compression" array, as a mask
 * (bit 1 << wire compressor id); 0 when none or not BSON. */
unsigned handshake_compressors(const uint8_t *body, size_t len);

/*
 * A reply to a request that came in OP_COMPRESSED with compressor (0: it
 * did not) is compressed with it, as mongod does, when hs agreed to that
 * compressor and the command (cmd) is not a hello (the spec forbids it):
 * *out is replaced by the OP_COMPRESSED message.  1 if compressed, 0 if
 * left as it is (also when the compressed form would be over the message
 * limit), or a negative code (out unchanged).
 */
int handshake_compress_reply(const struct handshake *hs, uint8_t compressor,
                             const char *cmd, struct mt_buf *out);

/* hello, isMaster or ismaster. */
bool handshake_is_hello(const char *name);

/* recorded may be NULL (then a MongoDB 7.0 standalone is described).
 * hs->compressors starts as the recorded reply's "compression" list; the
 * server sets it to what every recorded hello agreed to, or to
 * --compressors. */
void handshake_init(struct handshake *hs, const uint8_t *recorded, size_t len);

/*
 * Builds the hello reply for req into out (initialised by the caller).
 * conn_id: the connection's connectionId; now_ms: wall clock for
 * localTime.  self: the address the client connected to ("ip:port"), or
 * NULL / "": when the recorded reply is a replica-set member's, its
 * hosts, me and primary are replaced by self and its passives and
 * arbiters left out, so a driver that discovers the set finds replay as
 * its only member, not the recorded (unreachable, or production) servers.
 * 0 or MT_EBSON.
 */
int handshake_hello_reply(const struct handshake *hs,
                          const struct match_req *req, int64_t conn_id,
                          int64_t now_ms, const char *self, bson_t *out);

/*
 * An awaitable hello: the request carries topologyVersion and
 * maxAwaitTimeMS and the server has a topologyVersion.  When the client's
 * topologyVersion equals ours (nothing will change) the reply is held for
 * maxAwaitTimeMS: *hold_ms is set and true returned.  A stale or foreign
 * topologyVersion returns true with *hold_ms = 0 (answer now).  *await_ms
 * is the client's maxAwaitTimeMS (clamped), the period of an exhaust
 * stream.
 */
bool handshake_awaitable(const struct handshake *hs,
                         const struct match_req *req, uint64_t *hold_ms,
                         uint64_t *await_ms);

/*
 * Built-in answers for commands a driver sends on its own (ping,
 * buildInfo, endSessions, getParameter, whatsmyuri, connectionStatus,
 * getFreeMonitoringStatus, logout, refreshSessions) when the trace has
 * none.  True with out filled if req is one of them.
 */
bool handshake_builtin(const struct handshake *hs, const struct match_req *req,
                       bson_t *out);

#endif
