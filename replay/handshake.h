/*
 * handshake.h -- hello / isMaster replies, the awaitable hello of the
 * server discovery and monitoring spec, and built-in commands.
 *
 * The hello reply is the first hello reply of the trace (or a MongoDB 7.0
 * standalone's when the trace has none) with a fresh localTime, this
 * connection's connectionId, helloOk when the client asked for it, the
 * primary flag under the name the request used (ismaster for isMaster,
 * isWritablePrimary for hello), and no compression, SASL mechanisms,
 * speculative authentication or $clusterTime.
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
};

/* hello, isMaster or ismaster. */
bool handshake_is_hello(const char *name);

/* recorded may be NULL (then a MongoDB 7.0 standalone is described). */
void handshake_init(struct handshake *hs, const uint8_t *recorded, size_t len);

/*
 * Builds the hello reply for req into out (initialised by the caller).
 * conn_id: the connection's connectionId; now_ms: wall clock for
 * localTime.  0 or MT_EBSON.
 */
int handshake_hello_reply(const struct handshake *hs,
                          const struct match_req *req, int64_t conn_id,
                          int64_t now_ms, bson_t *out);

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
